"""A request's head has a time bound on a real ``reactgraph serve`` (SPEC R13.5):
200 connections that sent part of a head, or nothing, stayed open more than 30 s. With
``--head-timeout 1`` every such connection is closed within the bound, one that sent part of a
head with a 408 answer, one that dribbles its head a byte at a time as well, while complete
requests (on fresh and kept-alive connections) are served. Raw sockets, the real CLI on a
scripted model (``python -m tests.scripted_cli``)."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest

from reactgraph import ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.server.protocols import H11HeadTimeout, HttpToolsHeadTimeout
from reactgraph.testing import ScriptedChatModel
from tests.serving import serve_process, server_thread

pytestmark = pytest.mark.integration

HEAD_TIMEOUT = 1.0
SLACK = 4.0
"""Seconds past the bound a closed connection may take to be seen closed (a shared CPU)."""

PARTIAL_HEAD = b"POST /threads/t/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl"
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``reactgraph serve --head-timeout 1`` on a free port; yields the port."""
    with serve_process(tmp_path_factory.mktemp("serve"), "--head-timeout", str(HEAD_TIMEOUT)) as port:
        yield port


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.settimeout(HEAD_TIMEOUT + SLACK + 30)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a reset, when the client
    sent more after the server closed, ends it too)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def test_partial_and_empty_request_heads_are_closed_within_the_bound(server):
    port = server
    partial = [connect(port) for _ in range(100)]
    silent = [connect(port) for _ in range(100)]
    started = time.monotonic()
    for sock in partial:
        sock.sendall(PARTIAL_HEAD)
    answers = [read_until_closed(sock) for sock in partial]
    silences = [read_until_closed(sock) for sock in silent]
    assert time.monotonic() - started < HEAD_TIMEOUT + SLACK  # every one closed, none waited for
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert answer.endswith(b'{"detail": "the request head did not arrive within 1 seconds"}'), answer[-200:]
        assert b"connection: close" in answer.lower()
    assert silences == [b""] * len(silent)  # nothing asked, nothing answered: closed
    for sock in (*partial, *silent):
        sock.close()


def test_a_head_dribbled_a_byte_at_a_time_is_cut_off_at_the_bound(server):
    """Never idle for long, never done: the bound runs from the head's start, not from its
    last byte."""
    sock = connect(server)
    started = time.monotonic()
    try:
        for byte in PARTIAL_HEAD:  # 70 bytes, 14 s at this pace
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered (or closed)
            sock.sendall(bytes([byte]))
            time.sleep(0.2)
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = read_until_closed(sock)
    assert time.monotonic() - started < HEAD_TIMEOUT + SLACK
    # the 408 answer, unless a byte sent just after the server closed reset the connection first
    assert answer.startswith(b"HTTP/1.1 408 ") or answer == b"", answer[:200]
    sock.close()


def test_whole_requests_are_served_and_a_kept_alive_connection_is_bound_again(server):
    port = server
    sock = connect(port)
    sock.sendall(HEALTHZ)
    time.sleep(HEAD_TIMEOUT + 0.5)  # past the bound since the connection opened: the head was whole in time
    first = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200 ") and b'"status":"ok"' in first
    sock.sendall(HEALTHZ[:20])  # the next request's head on the same connection stalls
    started = time.monotonic()
    second = read_until_closed(sock)
    assert second.startswith(b"HTTP/1.1 408 ") and time.monotonic() - started < HEAD_TIMEOUT + SLACK
    sock.close()
    # A head that arrives in pieces but whole within the bound is served.
    slow = connect(port)
    for piece in (HEALTHZ[:10], HEALTHZ[10:30], HEALTHZ[30:]):
        slow.sendall(piece)
        time.sleep(HEAD_TIMEOUT / 4)
    assert slow.recv(65536).startswith(b"HTTP/1.1 200 ")
    slow.close()


@pytest.mark.parametrize("protocol", [H11HeadTimeout, HttpToolsHeadTimeout], ids=["h11", "httptools"])
def test_both_of_uvicorns_protocols_bound_the_head(protocol):
    """``reactgraph serve`` takes httptools when it is installed, h11 otherwise: both are bound."""
    app = create_app(ReActAgent(ScriptedChatModel(responses=["unused"]), []), ServerSettings(api_key=""))
    bounded = type(protocol.__name__, (protocol,), {"head_timeout": HEAD_TIMEOUT})
    with server_thread(app, http=bounded) as url:
        port = int(url.rsplit(":", 1)[1])
        whole, partial = connect(port), connect(port)
        whole.sendall(HEALTHZ)
        partial.sendall(PARTIAL_HEAD)
        started = time.monotonic()
        assert read_until_closed(partial).startswith(b"HTTP/1.1 408 ")
        assert time.monotonic() - started < HEAD_TIMEOUT + SLACK
        assert whole.recv(65536).startswith(b"HTTP/1.1 200 ")
        whole.close()
        partial.close()
