"""What every run endpoint shares (the plain SSE one and AG-UI): the server's settings, the
request fields and their checks, the error bodies, the decisions on waiting calls, running the
agent and streaming its events with a ``StreamEncoding``."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

import anyio
from fastapi import Depends, FastAPI, HTTPException, Request, status
from langgraph.types import StateSnapshot
from pydantic import BaseModel, Field, StringConstraints
from sse_starlette import EventSourceResponse

from reactgraph.agents.react import ThreadStatus
from reactgraph.core.bounds import has_lone_surrogate
from reactgraph.core.errors import NothingToResumeError, ThreadBusyError
from reactgraph.dag.graph import DAG_GRAPH, GRAPH_KIND_KEY
from reactgraph.events import AgentEvent, RunError
from reactgraph.server.gate import LOOPBACK_HOSTS
from reactgraph.server.owners import DEFAULT_PRINCIPAL, checked_principal, env_api_keys
from reactgraph.tools.approval import DecisionError, pending_calls, resume_command


logger = logging.getLogger(__name__)


API_KEY_ENV = "REACTGRAPH_API_KEY"
"""Environment variable holding the bearer token the API requires, when set."""


DEFAULT_MAX_MESSAGE_CHARS = 20_000
"""Default limit on a message's length, in characters (runs and follow-ups)."""


DEFAULT_MAX_BODY_BYTES = 256 * 1024
"""Default limit on a request body, in bytes: room for a message at its default length
however it is escaped, and no more."""


MAX_BODY_BYTES_CEILING = 512 * 1024
"""The most ``ServerSettings.max_body_bytes`` may be: a body is read, scanned and validated on
the event loop (C code that holds the GIL: a worker thread would stall the loop all the same),
which answers nothing else meanwhile, so the size of a body bounds that stall. At 512 KiB of the
costliest shape (an AG-UI body of tiny messages) it is 0.15 to 0.3 s on one busy core; a 21 MB body
stalled every other request for 1.6 s. A larger body gets 413."""


CANCEL_WAIT_SECONDS = 5.0
"""Most seconds a stream whose client went away waits for its cancelled run to end."""


THREAD_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
"""Accepted ids (threads, AG-UI runs): 1–128 letters, digits, ``.``, ``_``, ``:`` or ``-``.
Checked by pydantic (Rust regex: ``$`` is the end of the text, so ``"abc\\n"`` is refused;
Python's ``re.match`` would take it) wherever an id enters: :data:`ThreadId` in a path,:
data:`IdText` in a body."""


NOT_BLANK_PATTERN = r"[^\t\n\u000b\f\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
"""A message holds text: a character that is not white space (the characters ``str.isspace``
names, written as escapes that the JSON Schema (ECMA-262), Rust and Python regex dialects read
alike). The one rule for a blank message: the request schema states it as ``pattern`` (so the
OpenAPI schema allows no body the server refuses) and :func:`checked_text` applies it
to every user text, AG-UI's included."""


NOT_BLANK = re.compile(NOT_BLANK_PATTERN)


IdText = Annotated[str, StringConstraints(pattern=THREAD_ID_PATTERN)]
"""An id in a request body, checked as :data:`ThreadId` is in a path."""


Mode = Literal["react", "dag"]
"""How a run answers: ``react`` (the ReAct loop, SPEC §2) or ``dag`` (plan, one ReAct loop
per step, analysis, re-plan: SPEC §9)."""


MODES: tuple[Mode, ...] = ("react", "dag")


@dataclass(frozen=True)
class ServerSettings:
    """Settings of one app made by :func:`create_app`.

    Attributes:
        api_key: Bearer token every path but the open ones requires; ``None`` (the default)
            reads ``$REACTGRAPH_API_KEY`` when the app is created; an empty string turns
            authentication off. Its principal is
            :data:`~reactgraph.server.owners.DEFAULT_PRINCIPAL`.
        api_keys: More keys, ``{key: principal}``: each request's key names its principal,
            and a thread is 404 to every principal but the one that started it
            (:mod:`reactgraph.server.owners`). ``None`` (the default) reads
            ``$REACTGRAPH_API_KEYS`` (a ``key=principal`` list or a file of them); ``{}``: none.
        max_message_chars: Longest accepted ``message``, in characters; a longer one gets
            413 (default :data:`DEFAULT_MAX_MESSAGE_CHARS`).
        max_body_bytes: Most bytes of a request body; a larger one gets 413 before it is
            read further (default :data:`DEFAULT_MAX_BODY_BYTES`, at most
            :data:`MAX_BODY_BYTES_CEILING`).
        allowed_hosts: Host names (no port) a request's ``Host`` header may name while the
            server has no API key; others get 400 (DNS rebinding). ``"*"`` allows any host.
            Default: the loopback names. Not checked with an API key.
        ping_seconds: Seconds between SSE keep-alive comments on an idle stream.
        metrics: Serve ``GET /metrics`` and record the run and HTTP metrics
            (docs/observability.md).
        public_metrics: ``/metrics`` needs no API key (for a scraper inside a trusted network).
        body_timeout: Most seconds the server waits for the next part of a request body
            before it answers 408 and closes the connection (default 30).
        body_deadline: Most seconds reading a whole request body may take, however its
            bytes are spread (a body dripped a byte at a time): past it, 408 and the
            connection closed (default 60).
        default_mode: The :data:`Mode` of a run whose request names none (``/runs``
            without ``mode``, ``/agui`` without ``forwardedProps.mode``); ``"dag"`` needs
            an app with a DAG agent (``reactgraph serve --dag``).
        head_timeout: Most seconds a request's head (request line and headers) may take,
            from the connection's opening or the head's first byte: past it the connection
            is answered 408 and closed (default 10; applied by :func:`~reactgraph.server.serve`'s
            protocol, :mod:`reactgraph.server.protocols`: the head never reaches the app).
    """

    api_key: str | None = None
    api_keys: Mapping[str, str] | None = None
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    ping_seconds: float = 15.0
    metrics: bool = True
    public_metrics: bool = False
    body_timeout: float = 30.0
    body_deadline: float = 60.0
    default_mode: Mode = "react"
    head_timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.max_message_chars < 1:
            raise ValueError(f"max_message_chars must be at least 1, got {self.max_message_chars}")
        if not 64 <= self.max_body_bytes <= MAX_BODY_BYTES_CEILING:
            raise ValueError(f"max_body_bytes must be between 64 and {MAX_BODY_BYTES_CEILING} (a body is parsed on "
                             f"the event loop, which answers nothing else meanwhile), got {self.max_body_bytes}")
        if isinstance(self.allowed_hosts, str) or not all(isinstance(host, str) and host for host in self.allowed_hosts):
            raise ValueError(f"allowed_hosts must be a tuple of host names, got {self.allowed_hosts!r}")
        if self.ping_seconds <= 0:
            raise ValueError(f"ping_seconds must be positive, got {self.ping_seconds}")
        if self.body_timeout <= 0:
            raise ValueError(f"body_timeout must be positive, got {self.body_timeout}")
        if not self.body_deadline > 0:
            raise ValueError(f"body_deadline must be positive, got {self.body_deadline}")
        if self.default_mode not in MODES:
            raise ValueError(f"default_mode must be one of {', '.join(MODES)}, got {self.default_mode!r}")
        if self.head_timeout <= 0:
            raise ValueError(f"head_timeout must be positive, got {self.head_timeout}")
        for key, principal in (self.api_keys or {}).items():
            if not isinstance(key, str) or not key or any(char.isspace() for char in key):
                raise ValueError("api_keys must map keys (non-empty, no spaces) to principals")
            checked_principal(principal)

    def resolved_api_key(self) -> str:
        """The key in force: :attr:`api_key`, else ``$REACTGRAPH_API_KEY``, else ``""`` (open)."""
        return self.api_key if self.api_key is not None else os.environ.get(API_KEY_ENV, "")

    def resolved_api_keys(self) -> dict[str, str]:
        """The keys beyond :meth:`resolved_api_key`, ``{key: principal}``: :attr:`api_keys`,
        else ``$REACTGRAPH_API_KEYS`` (:func:`~reactgraph.server.owners.parse_api_keys`).

        Raises:
            ValueError: The environment variable holds no valid list.
        """
        return dict(self.api_keys) if self.api_keys is not None else env_api_keys()


class ErrorBody(BaseModel):
    """Body of every 4xx answer: why the request was refused."""

    detail: Any = Field(description="The reason (a string), or the list of validation errors (422).")


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "An API key is configured and the request has no valid bearer token."},
    400: {"model": ErrorBody, "description": "No API key is set and the Host header names a host that is not allowed."},
    422: {"model": ErrorBody, "description": "The body or the thread id is invalid."},
}


NO_THREAD: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "The checkpointer has no such thread (or it is another principal's)."},
}
"""The 404 of a route that reads one thread (documented once for every such route)."""


MESSAGE_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    413: {"model": ErrorBody, "description": "The message or the body is larger than the server's limit."},
}


def sse_event_schema(description: str, channels: Sequence[str]) -> dict[str, Any]:
    """The OpenAPI schema of one event of a ``text/event-stream`` answer (the schema
    said ``string``).

    OpenAPI 3.1 has the ``schema`` of an event-stream media type describe each event as a
    parser of the stream reads it (its ``event``, ``data``, ``id`` and ``retry`` fields; the
    keep-alive comments are no events), so a schema checker (schemathesis) validates every
    event the server sends against it.

    Args:
        description: What the events are.
        channels: The ``event:`` names the stream uses (``("message",)``, the name a parser
            gives an event without one, for a stream of ``data`` lines only: AG-UI).

    Returns:
        The JSON schema: ``event`` one of ``channels`` and ``data`` a JSON text.
    """
    data = {"type": "string", "contentMediaType": "application/json", "description": "The event's JSON payload."}
    return {"type": "object", "description": description, "required": ["event", "data"],
            "properties": {"event": {"type": "string", "enum": list(channels)}, "data": data}}


def checked_text(text: str, settings: ServerSettings) -> str:
    """A user's message as the run endpoints accept it.

    The one check of a user's text on every endpoint that takes one (``/runs``,
    ``/inject``, ``/agui``).

    Raises:
        HTTPException: 422 for a blank message or one holding a lone surrogate (a
            ``\\udXXX`` escape: no store can keep it), 413 for one longer than
            ``settings.max_message_chars``.
    """
    if not NOT_BLANK.search(text):
        raise HTTPException(422, "the message is blank")
    if has_lone_surrogate(text):
        raise HTTPException(422, "the message is not valid Unicode text (it holds a lone surrogate)")
    if len(text) > settings.max_message_chars:
        raise HTTPException(413, f"the message has {len(text)} "
                            f"characters; this server accepts at most {settings.max_message_chars}")
    return text


def served_agent(app: FastAPI, mode: Mode) -> Any:
    """The app's agent for runs of ``mode``: its :class:`~reactgraph.ReActAgent`, or its:
    class:`~reactgraph.DAGAgent` for ``"dag"``.

    Raises:
        HTTPException: 422 for ``"dag"`` when the app has no DAG agent.
    """
    if mode == "dag":
        if app.state.dag_agent is None:
            raise HTTPException(422, "this server runs no DAG mode (it was made without a DAG agent)")
        return app.state.dag_agent
    return app.state.agent


async def thread_mode(app: FastAPI, thread_id: str) -> Mode | None:
    """The mode of the thread's runs, told by its last checkpoint: the DAG graph marks each of
    its checkpoints (:data:`~reactgraph.dag.graph.GRAPH_KIND_KEY`), the ReAct graph none. ``None``
    for a thread without a checkpoint, and for an app that serves one mode only (no read
    then: ``react``'s threads cost nothing more)."""
    checkpointer = app.state.agent.checkpointer
    if app.state.dag_agent is None or checkpointer is None:
        return None
    saved = await checkpointer.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if saved is None:
        return None
    return "dag" if (saved.metadata or {}).get(GRAPH_KIND_KEY) == DAG_GRAPH else "react"


async def run_agent(app: FastAPI, thread_id: str, mode: Mode | None) -> Any:
    """The agent that starts a new run of ``mode`` (``None``: the server's default) on the
    thread: a thread keeps the mode of its first run, so its checkpoints are always read by
    the graph that wrote them (the two graphs' states differ).

    Raises:
        HTTPException: 422 for a mode the app does not serve; 409 when the thread holds
            runs of the other mode.
    """
    mode = mode or app.state.settings.default_mode
    agent = served_agent(app, mode)
    held = await thread_mode(app, thread_id)
    if held is not None and held != mode:
        raise HTTPException(status.HTTP_409_CONFLICT,
                            f"thread {thread_id!r} holds {held} runs; a thread keeps the mode of its first run: "
                            f"continue it in {held} mode, or start another thread for {mode} mode")
    return agent


async def thread_agent(app: FastAPI, thread_id: str) -> Any:
    """The agent whose graph holds the thread's runs: the DAG agent for a DAG thread, else
    the ReAct agent (for a thread it does not know too)."""
    return app.state.dag_agent if await thread_mode(app, thread_id) == "dag" else app.state.agent


async def thread_snapshot(app: FastAPI, thread_id: str, agent: Any = None) -> tuple[ThreadStatus, StateSnapshot]:
    """The thread's :meth:`~reactgraph.ReActAgent.thread_snapshot`, a run of this app's
    streams counting as going (its last events may still be on their way).

    Args:
        app: An app made by :func:`create_app`.
        thread_id: The thread.
        agent: The agent whose graph holds the thread (:func:`thread_agent`, which is
            asked when ``None``).

    Raises:
        HTTPException: 404 when the app's agent keeps no threads or has none by this id.
    """
    agent = agent or await thread_agent(app, thread_id)
    if agent.checkpointer is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "this server keeps no threads (its agent has no checkpointer)")
    state, snapshot = await agent.thread_snapshot(thread_id, running_here=app.state.runs.__contains__)
    if state == "new" or snapshot is None or not (snapshot.values or {}).get("messages"):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown thread {thread_id!r}")
    return state, snapshot


def caller(request: Request) -> str:
    """The principal of ``request``, as the gate named it
    (:class:`~reactgraph.server.gate.RequestGate`; the default one without authentication)."""
    return getattr(request.state, "principal", DEFAULT_PRINCIPAL)


Caller = Annotated[str, Depends(caller)]
"""An endpoint's argument: the principal of the request."""


async def owned_thread(app: FastAPI, thread_id: str, principal: str) -> None:
    """Let ``principal`` touch the thread: it owns it, or nobody does yet (a thread not
    started, or one started before owners were recorded).

    Raises:
        HTTPException: 404, as for a thread that does not exist, when another principal
            owns it (no existence leak).
    """
    owner = await app.state.owners.owner(thread_id)
    if owner is not None and owner != principal:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown thread {thread_id!r}")


async def claimed_thread(app: FastAPI, thread_id: str, principal: str, question: str) -> None:
    """Record ``principal`` as the owner of the thread a run starts on, unless it has one
    (atomically: of two principals starting one new thread at once, one owns it).

    Raises:
        HTTPException: 404 when another principal owns it.
    """
    if await app.state.owners.claim(thread_id, principal, question) != principal:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown thread {thread_id!r}")


async def checked_decisions(app: FastAPI, thread_id: str, decisions: list[tuple[str, dict[str, Any]]]
                            | Callable[[], list[tuple[str, dict[str, Any]]]], agent: Any = None) -> dict[str, Any]:
    """Decisions on the calls a paused run waits on (SPEC R13.3), checked before the run
    resumes: by tool call id (or interrupt id), as ``agent.aresume_events`` takes them.

    Args:
        app: An app made by :func:`create_app`.
        thread_id: The paused run's thread.
        decisions: ``(call id, {"type": "approve" | "edit" | "reject", "args"?, "message"?})``
            pairs, or a function that reads them (called once the thread is known to wait, so
            an unknown or idle thread is 404/409 whatever the request's decisions hold).
        agent: The agent whose graph holds the thread (:func:`thread_agent` when ``None``).

    Raises:
        HTTPException: 404 for an unknown thread, 409 when a run is going on it or it
            waits on no decision, 422 for two decisions on one call, a decision that names
            no waiting call, or one that is no decision.
    """
    state, snapshot = await thread_snapshot(app, thread_id, agent)
    if state == "running":
        raise HTTPException(status.HTTP_409_CONFLICT, f"a run is going on thread {thread_id!r}")
    pending = pending_calls(snapshot)
    if not pending:
        raise HTTPException(status.HTTP_409_CONFLICT, f"thread {thread_id!r} waits on no decision")
    checked: dict[str, Any] = {}
    for call_id, decision in decisions() if callable(decisions) else decisions:
        if call_id in checked:
            raise HTTPException(422, f"two decisions for call {call_id!r}")
        checked[call_id] = decision
    try:
        resume_command(pending, checked)
    except DecisionError as exc:
        raise HTTPException(422, str(exc)) from exc
    return checked


CANCELLED = "cancelled"
"""The ``kind`` of the ``error`` event that ends the stream of a run stopped with
``POST /threads/{thread_id}/cancel``."""


def cancelled_event(thread_id: str) -> RunError:
    """The last event of a stopped run's stream: what happened and how to go on."""
    return RunError(kind=CANCELLED, message=f"the run was stopped; POST /threads/{thread_id}/resume finishes it "
                                            "from its last checkpoint, or a new message starts the next turn")


async def _produce(events: AsyncIterator[AgentEvent],
                   queue: asyncio.Queue[AgentEvent | ThreadBusyError | NothingToResumeError | None],
                   stopped: RunError | None = None, stops: Container[asyncio.Task[None]] = ()) -> None:
    """Put the run's events on ``queue``, then ``None`` (also when the run stops early);
    a busy thread puts the :class:`ThreadBusyError` first, a resume with nothing to resume
    the :class:`NothingToResumeError`; any other failure (its checkpointer or queue lost
    their database) an ``error`` event ``{message, kind: "server_error"}``. Runs as its own task, so that a
    disconnect cancels it with a plain ``Task.cancel()`` and its clean-up (closing the
    graph's stream, freeing the thread) is not cut short by the response's cancel scope.
    A task in ``stops`` (cancelled by the cancel endpoint) puts ``stopped`` before ``None``."""
    try:
        async for event in events:
            queue.put_nowait(event)
    except asyncio.CancelledError:
        if stopped is not None and asyncio.current_task() in stops:
            queue.put_nowait(stopped)
        raise
    except (ThreadBusyError, NothingToResumeError) as exc:
        queue.put_nowait(exc)
    except Exception as exc:  # R13.5: a stream ends with `done` or `error`, whatever failed
        logger.exception("run stream failed")
        queue.put_nowait(RunError(message=f"{type(exc).__name__}: {exc}", kind="server_error"))
    finally:
        queue.put_nowait(None)


class StreamEncoding(Protocol):
    """How :func:`stream_events` writes a run's events: ``frame`` for each event (all the
    frames it stands for, as one string), ``end`` once the run's stream has ended (not
    called when the client went away)."""

    def frame(self, event: AgentEvent) -> str:
        """The SSE text for ``event``."""

    def end(self) -> str:
        """The SSE text after the last event."""


class SpecEncoding:
    """The SSE protocol of SPEC §8: each event's :meth:`~reactgraph.events.AgentEvent.to_sse`."""

    def frame(self, event: AgentEvent) -> str:
        """``event.to_sse()``."""
        return event.to_sse()

    def end(self) -> str:
        """Nothing: ``done`` (or ``error``) was the last frame."""
        return ""


def queued_frames(event: AgentEvent, queue: asyncio.Queue[Any], encoding: StreamEncoding) -> tuple[str, bool]:
    """The SSE text of ``event`` and of every event already waiting in ``queue`` behind it,
    for one write to the client (under load a run's events pile up between two
    turns of its response; one write per batch costs the server and the client one send,
    one chunk and one wake-up instead of one per event). The bytes are those of the events
    written one by one (SPEC §8): the frames are only concatenated. Nothing waits for more
    events: a batch is what is already queued.

    Args:
        event: The event to write first.
        queue: The run's queue (:func:`_produce`): its events, then ``None`` at its end.
        encoding: How each event is written; its ``end`` closes the text when the end
            marker is reached.

    Returns:
        ``(text, ended)``: the frames, and whether the queue's end marker was taken
        (``text`` then ends with ``encoding.end()``); otherwise the queue ran empty and
        the run goes on.
    """
    frames = [encoding.frame(event)]
    while not queue.empty():
        item = queue.get_nowait()
        if not isinstance(item, AgentEvent):
            frames.append(encoding.end())
            return "".join(frames), True
        frames.append(encoding.frame(item))
    return "".join(frames), False


async def stream_events(app: FastAPI, thread_id: str, events: AsyncIterator[AgentEvent],
                        encoding: StreamEncoding | None = None) -> EventSourceResponse:
    """Stream one run's events as the SSE response of SPEC §8; the building block of
    ``POST /threads/{thread_id}/runs``, for any endpoint that streams a run of the app's agent.

    The run is consumed in its own task, registered in ``app.state.runs[thread_id]`` while it
    goes. When the client disconnects, the task is cancelled (the agent closes the graph's
    stream, which cancels its model call or tools) and the response waits up to
    :data:`CANCEL_WAIT_SECONDS` for it to end, so the thread is free when the response is done.
    The events waiting when the response writes go out in one write (:func:`queued_frames`),
    byte for byte as one write each would send them.

    Args:
        app: An app made by :func:`create_app`.
        thread_id: The run's thread.
        events: The run, not started yet: e.g. ``agent.astream_events(message, thread_id=...)``.
            It must open the thread (raising :class:`ThreadBusyError` for a busy one, or
            :class:`NothingToResumeError` for a resume with nothing to resume) before its
            first event.
        encoding: How the events are written (default :class:`SpecEncoding`, SPEC §8; the
            AG-UI endpoint passes its own).

    Returns:
        The ``text/event-stream`` response, its first event already produced.

    Raises:
        HTTPException: 409 when the thread already has a run going, or has nothing to resume.
    """
    runs: dict[str, asyncio.Task[None]] = app.state.runs
    queue: asyncio.Queue[AgentEvent | ThreadBusyError | NothingToResumeError | None] = asyncio.Queue()
    task = asyncio.create_task(_produce(events, queue, cancelled_event(thread_id), app.state.stops),
                               name=f"reactgraph-run-{thread_id}")
    first = await queue.get()  # the run opens its thread first: a busy one fails here, before any byte is sent
    if isinstance(first, (ThreadBusyError, NothingToResumeError)):
        raise HTTPException(status.HTTP_409_CONFLICT, str(first))
    runs[thread_id] = task
    task.add_done_callback(lambda done: runs.pop(thread_id) if runs.get(thread_id) is done else None)

    writer = encoding or SpecEncoding()

    async def stream() -> AsyncIterator[bytes]:
        item: AgentEvent | ThreadBusyError | NothingToResumeError | None = first
        try:
            while isinstance(item, AgentEvent):
                text, ended = queued_frames(item, queue, writer)
                yield text.encode()
                if ended:
                    return
                item = await queue.get()
            if tail := writer.end():
                yield tail.encode()
        finally:  # the stream ended, or the client went away: stop the run and wait until it has
            task.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait([task], timeout=CANCEL_WAIT_SECONDS)

    return EventSourceResponse(stream(), ping=app.state.settings.ping_seconds, sep="\n",
                               headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
