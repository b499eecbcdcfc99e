"""uvicorn's HTTP/1.1 protocols with a bound on the time a request's head may take (
SPEC R13.5).

uvicorn bounds the time a connection may stay idle between two requests (``timeout_keep_alive``)
but not the time the head of a request (its request line and headers) takes to arrive: a client
that opens a connection and sends nothing, or part of a head and then stalls, holds it open for
as long as it likes (200 such connections stayed open more than 30 s). The body is bounded by the
gate (:class:`~reactgraph.server.gate.RequestGate`, ``body_timeout``); the head never reaches the
app, so its bound lives here, in the protocol:

- the clock starts when a connection opens and when the first byte of a next request's head
  arrives on a kept-alive connection, and stops when the head is complete;
- past ``head_timeout`` seconds, a connection that had sent part of a head is answered ``408``
  (a JSON ``{"detail": ...}`` like every refusal) and closed; one that had sent nothing is closed.

:func:`http_protocol` gives the class for ``uvicorn.Config(http=...)``, for the implementation
uvicorn would pick itself (httptools when installed, else h11).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from reactgraph.events import wire_json

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is optional for uvicorn
    HttpToolsProtocol = None


def timeout_answer(head_timeout: float) -> bytes:
    """The ``408`` response written to a connection whose request head did not arrive in time."""
    body = wire_json({"detail": f"the request head did not arrive within {head_timeout:g} seconds"}).encode()
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


class HeadTimer:
    """The clock of one connection's request head: a mixin of a uvicorn HTTP protocol class,
    whose subclass calls :meth:`head_started` when a head starts (or may start) and
    :meth:`head_complete` when it is whole. ``head_timeout`` is set on the class
    (:func:`http_protocol`)."""

    head_timeout: float = 10.0
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    _head_timer: asyncio.TimerHandle | None = None
    _head_bytes = False

    def head_started(self, *, bytes_came: bool) -> None:
        """Start the clock unless it runs; ``bytes_came``: part of a head has arrived."""
        self._head_bytes = self._head_bytes or bytes_came
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def head_complete(self) -> None:
        """Stop the clock: the head is whole (or the connection is gone)."""
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._head_bytes = False

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self._head_bytes:
            self.transport.write(timeout_answer(self.head_timeout))
        self.transport.close()


def http_protocol(head_timeout: float) -> type[asyncio.Protocol]:
    """The HTTP protocol class for ``uvicorn.Config(http=...)`` that bounds a request head's
    arrival by ``head_timeout`` seconds (module docstring): uvicorn's httptools protocol when
    ``httptools`` is installed (what ``http="auto"`` picks), else its h11 protocol.

    Args:
        head_timeout: Most seconds from a connection's opening, or from the first byte of a
            request's head, until the head is complete.

    Raises:
        ValueError: ``head_timeout`` is not positive.
    """
    if head_timeout <= 0:
        raise ValueError(f"head_timeout must be positive, got {head_timeout}")
    base = H11HeadTimeout if HttpToolsHeadTimeout is None else HttpToolsHeadTimeout
    return type(base.__name__, (base,), {"head_timeout": head_timeout})


class H11HeadTimeout(HeadTimer, H11Protocol):
    """uvicorn's h11 protocol with the head clock: a head is awaited while h11 waits on the
    client's next request (``their_state`` IDLE)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_started(bytes_came=False)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            if data:
                self.head_started(bytes_came=True)
        else:
            self.head_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self.head_complete()
        super().connection_lost(exc)


HttpToolsHeadTimeout: type[asyncio.Protocol] | None = None
"""uvicorn's httptools protocol with the head clock (``None`` without ``httptools``): the
parser's message-begin and headers-complete callbacks start and stop it."""

if HttpToolsProtocol is not None:

    class HttpToolsHeadTimeout(HeadTimer, HttpToolsProtocol):  # type: ignore[no-redef]
        """uvicorn's httptools protocol with the head clock."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.head_started(bytes_came=False)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.head_started(bytes_came=True)

        def on_headers_complete(self) -> None:
            self.head_complete()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self.head_complete()
            super().connection_lost(exc)
