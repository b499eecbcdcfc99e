"""in the unit suite: the SSE path writes the events already queued in one write
with the bytes unchanged, keeps an idle stream alive with pings, and ``reactgraph serve
--workers`` refuses checkpointers the workers could not share. (Several workers on
Postgres: ``tests/integration/test_workers.py``; the speed: ``bench/load.py``.)"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from reactgraph.persistence.checkpointing import DATABASE_URL_ENV
from reactgraph.cli.main import main
from reactgraph.events import AgentEvent, AnswerDelta, AnswerDone, AnswerStarted, ThinkingDone, ThinkingStarted
from reactgraph.server import ServerSettings, stream_events
from reactgraph.core.errors import WorkersError
from reactgraph.server.workers import _own_socket, check_shared, listening_socket, worker_socket
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.server_cases import app_for, asgi_client, get_status
from tests.serving import parse_sse

EVENTS: list[AgentEvent] = [
    ThinkingStarted(iteration=1), ThinkingDone(iteration=1, reasoning="line one\u2028line two"), AnswerStarted(),
    *(AnswerDelta(content=piece) for piece in ("CNC-003 ", "runs ", "at 71.5°C.")), AnswerDone(),
]


async def writes_of(events: AsyncIterator[AgentEvent], written: asyncio.Event | None = None) -> list[bytes]:
    """The body writes the response of :func:`stream_events` makes for ``events`` (a client
    that stays connected), the empty closing one left out; ``written`` is set at each write."""
    app = app_for(ScriptedChatModel(), [get_status])
    response = await stream_events(app, "t", events)
    writes: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message["body"]:
            writes.append(message["body"])
            if written is not None:
                written.set()

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client never leaves
        return {"type": "http.disconnect"}

    await response({"type": "http", "method": "POST", "headers": []}, receive, send)
    return writes


async def test_events_already_queued_go_out_in_one_write_with_the_bytes_of_one_write_each():
    async def at_once() -> AsyncIterator[AgentEvent]:  # every event is queued before the response writes
        for event in EVENTS:
            yield event

    writes = await writes_of(at_once())
    assert writes == ["".join(event.to_sse() for event in EVENTS).encode()]
    assert parse_sse(writes[0].decode()) == [(event.channel, event.data) for event in EVENTS]


async def test_events_that_come_one_by_one_are_written_one_by_one():
    written = asyncio.Event()

    async def one_by_one() -> AsyncIterator[AgentEvent]:
        for n, event in enumerate(EVENTS):
            if n:  # the next event exists only once the response has written the one before
                await asyncio.wait_for(written.wait(), 5)  # a response waiting to fill a batch times out here
                written.clear()
            yield event

    writes = await writes_of(one_by_one(), written)
    assert writes == [event.to_sse().encode() for event in EVENTS]  # nothing waits to fill a batch


async def test_an_idle_stream_gets_keep_alive_comments_and_still_ends_with_done():
    @tool
    async def slow_check(equipment_id: str) -> str:
        """A check that takes a while."""
        await asyncio.sleep(0.5)
        return f"{equipment_id}: normal"

    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("slow_check", {"equipment_id": "CNC-3"}, "c1")]),
                                         "CNC-3 is normal."])
    app = app_for(model, [slow_check])
    app.state.settings = ServerSettings(api_key="", ping_seconds=0.05)
    async with asgi_client(app) as client:
        response = await client.post("/threads/t/runs", json={"message": "CNC-3?"})
    assert "\n: ping - " in response.text or response.text.startswith(": ping - ")
    events = parse_sse(response.text)  # comments are skipped; every frame is whole
    assert events[-1][0] == "done" and events[-1][1]["answer"] == "Synthesized answer."


@pytest.mark.parametrize("checkpoints", ["memory", "threads.db", "sqlite:///threads.db", None])
def test_serve_refuses_several_workers_without_postgres_in_one_line(checkpoints, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.setenv("REACTGRAPH_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    option = ["--checkpoints", checkpoints] if checkpoints else []
    assert main(["serve", "--workers", "2", *option]) == 2
    error = capsys.readouterr().err
    kind = "memory" if checkpoints == "memory" else "SQLite"
    assert error.count("\n") == 1 and error.startswith("reactgraph: error: --workers 2 needs Postgres checkpoints")
    assert f"with {kind} each process keeps its own running runs" in error
    assert not list(tmp_path.glob("*.db"))  # refused before anything was opened


def test_the_workers_check_takes_one_worker_on_anything_and_several_only_on_postgres(monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    check_shared(1, "memory")
    check_shared(1, None)
    check_shared(4, "postgresql://u:p@db.example/plant")
    check_shared(2, "postgresql+psycopg://u@db.example/plant")
    monkeypatch.setenv(DATABASE_URL_ENV, "postgres://u@db.example/plant")
    check_shared(2, None)  # the environment names Postgres
    for workers, checkpoints in ((0, "postgresql://u@h/db"), (2, "memory"), (3, "/tmp/threads.db")):
        with pytest.raises(WorkersError):
            check_shared(workers, checkpoints)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_REUSEPORT spreading is Linux's")
def test_on_linux_each_worker_listens_on_a_socket_of_its_own_on_the_reserved_port():
    reserved = worker_socket("127.0.0.1", 0)
    port = reserved.getsockname()[1]
    assert not reserved.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)  # the parent accepts nothing
    one, two = _own_socket(reserved.dup()), _own_socket(reserved.dup())  # what each forked worker does
    try:
        assert one.fileno() != two.fileno()
        assert one.getsockname() == two.getsockname() == ("127.0.0.1", port)
        assert one.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) and two.getsockopt(socket.SOL_SOCKET,
                                                                                          socket.SO_ACCEPTCONN)
        with pytest.raises(OSError):
            listening_socket("127.0.0.1", port)  # a server without SO_REUSEPORT cannot take the port
    finally:
        for sock in (reserved, one, two):
            sock.close()
