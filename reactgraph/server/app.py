"""The HTTP API and web page of SPEC §8/§10 as a FastAPI app.

:func:`create_app` wraps one :class:`~reactgraph.ReActAgent`. Endpoints:

- ``POST /threads/{thread_id}/runs`` ``{"message": ..., "mode"?: "react" | "dag"}`` streams
  the run as the SSE event protocol of SPEC §8 (``text/event-stream``,
  ``event: <channel>\\ndata: <json>\\n\\n``), ending with ``done``; 409 when the thread
  already has a run going, or holds runs of the other mode. ``mode: "dag"`` runs the app's:
  class:`~reactgraph.DAGAgent` (plan, steps, analysis: SPEC §9); without
  ``mode``, :attr:`ServerSettings.default_mode` decides.
- ``POST /threads/{thread_id}/inject`` ``{"message": ...}`` queues a follow-up for the
  running run (202; SPEC §7), 409 when nothing is running on the thread.
- ``POST /threads/{thread_id}/resume`` finishes the thread's interrupted run (its process
  died, or its model kept failing) from its last checkpoint and streams the rest of it like
  ``/runs``; 404 for a thread the checkpointer does not know, 409 when its last run finished
  or a run is going on it.
- ``POST /threads/{thread_id}/approvals`` ``{"decisions": [{"tool_call_id", "type":
  "approve" | "edit" | "reject", "args"?, "message"?}]}`` answers the tool calls a paused
  run waits on (SPEC R13.3; the run's stream ended with an ``approval`` event) and streams
  the rest of the run like ``/runs``; 404 for an unknown thread, 409 when nothing waits (or
  a run is going), 422 for a decision that names no waiting call or is malformed.
- ``POST /threads/{thread_id}/cancel`` stops the run going on the thread in this server
  (the page's Stop button): its stream ends with an ``error`` event ``{kind: "cancelled"}``
  and the thread is left resumable (``POST .../resume``) or, when the run had already
  finished, idle; a new message starts the next turn either way. 409 when no run of this
  server goes on the thread.
- ``GET /threads/{thread_id}`` returns the thread's status, messages, last result and the
  calls it waits on from the checkpointer; 404 for a thread it does not know.
- ``GET /threads?limit=&offset=`` lists the caller's threads, newest first, each with its
  status and first question; ``DELETE /threads/{thread_id}`` removes a thread with
  everything stored for it (409 while a run goes on it).
- ``POST /agui`` takes an AG-UI ``RunAgentInput`` and streams the run as AG-UI events
  (:mod:`reactgraph.server.agui`, ``docs/agui.md``).
- ``GET /healthz`` (with the circuit breaker of each model when the agent has fallback
  models), the page at ``/`` (static files under ``/static``) and its icon at
  ``/favicon.ico``.
- ``GET /metrics``: Prometheus metrics (behind the API key unless
  ``ServerSettings.public_metrics``; :mod:`reactgraph.server.observability`,
  ``docs/observability.md``).

Every request passes :class:`~reactgraph.server.gate.RequestGate` before its body is read:
when an API key is configured (``REACTGRAPH_API_KEY``), every path but ``/healthz``, the
page, its static files and the OpenAPI documents needs ``Authorization: Bearer <key>``
(401 otherwise, whatever the body; several keys, each a principal, or a ``principal_of``
hook name the caller: a thread belongs to the principal whose request started it, and is
404 to every other, :mod:`reactgraph.server.owners`); without a key, the ``Host`` header must name an
allowed host (400 otherwise: DNS rebinding); a body over the size limit gets 413 without
being read further. Every refusal is a JSON ``{"detail": ...}`` body, and no request
answers 5xx (SPEC R13.5).

A client that disconnects from a run's stream cancels the run; the thread is free for its
next run at once, and its next run answers any tool call the cancelled one left unfinished.

Several server processes serve the same threads when their agents share a Postgres
checkpointer and its :class:`~reactgraph.persistence.postgres.PostgresInterruptQueue`
(:func:`reactgraph.persistence.checkpointing.open_persistence`; ``reactgraph serve`` does this for a
Postgres URL): a follow-up sent to any of them reaches the run wherever it goes, ``GET``
shows it running, and a run interrupted on one is resumed by another.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Sequence
from importlib.resources import files
from typing import Annotated, Any, Literal, get_args

import anyio
from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi import Path as FastAPIPath
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match, Route

from reactgraph.agents import outcome
from reactgraph.engine.pinning import is_pinned, pinned_ids
from reactgraph.protocol.actions import message_text
from reactgraph.demo.factory import DEMO_QUESTION
from reactgraph.agents.react import ReActAgent
from reactgraph.dag.agent import DAGAgent
from reactgraph.tools.approval import pending_calls
from reactgraph.core.errors import FollowUpLimitError, NoActiveRunError, ThreadBusyError
from reactgraph.events import Channel
from reactgraph.server.gate import PrincipalHook, RequestGate, error_response
from reactgraph.server.owners import thread_owners
from reactgraph.server.runs import (
    CANCEL_WAIT_SECONDS,
    Caller,
    ERRORS,
    ErrorBody,
    MESSAGE_ERRORS,
    MODES,
    Mode,
    NOT_BLANK,
    NOT_BLANK_PATTERN,
    ServerSettings,
    THREAD_ID_PATTERN,
    checked_decisions,
    checked_text,
    claimed_thread,
    owned_thread,
    run_agent,
    sse_event_schema,
    stream_events,
    thread_agent,
    thread_snapshot,
)

logger = logging.getLogger(__name__)


def not_blank(text: str) -> str:
    """``text`` when it holds text (:data:`NOT_BLANK_PATTERN`), for a request model's field.

    Raises:
        ValueError: It is only white space ("the message is blank").
    """
    if not NOT_BLANK.search(text):
        raise ValueError("the message is blank")
    return text

STATIC_DIR = files("reactgraph.server") / "static"

Credentials = Annotated[
    HTTPAuthorizationCredentials | None,
    Depends(HTTPBearer(auto_error=False, description="Required when REACTGRAPH_API_KEY is set.")),
]
"""Declares the bearer scheme in the OpenAPI schema; the key is enforced by the gate."""

ThreadId = Annotated[str, FastAPIPath(pattern=THREAD_ID_PATTERN, description="The conversation's id.")]


class MessageRequest(BaseModel):
    """Body of ``POST /threads/{thread_id}/runs`` and ``/inject``: exactly ``message``
    (any other member is refused with 422, so nothing unchecked rides along)."""

    model_config = ConfigDict(extra="forbid")

    message: Annotated[str, AfterValidator(not_blank)] = Field(
        min_length=1, json_schema_extra={"pattern": NOT_BLANK_PATTERN}, examples=[DEMO_QUESTION],
        description="The user's question (runs) or follow-up (inject): text that is not only white space.")


class RunRequest(MessageRequest):
    """Body of ``POST /threads/{thread_id}/runs``: ``message`` and, optionally, ``mode``."""

    mode: Mode | None = Field(
        default=None, description="react: the ReAct loop; dag: plan the goal into steps, run them (in parallel where "
                                  "the plan allows), analyze, re-plan (SPEC §9). Default: the server's "
                                  "(`reactgraph serve --dag` makes it dag). A thread keeps the mode of its first run.",
        examples=["dag"])


class DecisionBody(BaseModel):
    """One decision on a waiting tool call (SPEC R13.3)."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str = Field(min_length=1, description="The waiting call (`pending[].tool_call_id` of the "
                                                        "`approval` event, or its `interrupt_id`).")
    type: Literal["approve", "edit", "reject"]
    args: dict[str, Any] | None = Field(default=None, description="edit: the arguments to run the call with.")
    message: str | None = Field(default=None, description="reject: what the model is told instead of a result.")


class ApprovalsRequest(BaseModel):
    """Body of ``POST /threads/{thread_id}/approvals``."""

    model_config = ConfigDict(extra="forbid")

    decisions: list[DecisionBody] = Field(min_length=1, examples=[[{"tool_call_id": "call_1", "type": "approve"}]])


class Accepted(BaseModel):
    """Answer of ``POST /threads/{thread_id}/inject``: the follow-up is queued."""

    thread_id: str
    queued: bool = True


class Cancelled(BaseModel):
    """Answer of ``POST /threads/{thread_id}/cancel``: the run is stopped."""

    thread_id: str
    cancelled: bool = True
    status: Literal["interrupted", "waiting", "idle", "new"] = Field(
        description="The thread after the stop: interrupted (POST .../resume finishes the run), waiting (it had "
                    "paused for approval), idle (the run had finished) or new (the server keeps no threads).")


class ThreadMessage(BaseModel):
    """One message of a thread, as ``GET /threads/{thread_id}`` returns it."""

    type: str = Field(description="human, ai or tool (the system prompt is not stored).")
    content: str
    pinned: bool = Field(description="Kept by every compaction: the turn's query and follow-ups (SPEC R6.2).")
    tool_calls: list[dict[str, Any]] = Field(default_factory=list, description="ai: [{id, name, args}].")
    tool_call_id: str | None = Field(default=None, description="tool: the call it answers.")
    name: str | None = Field(default=None, description="tool: the tool's name.")


class ThreadResult(BaseModel):
    """The last run's result, as the checkpointer holds it."""

    query: str = Field(description="The question (dag: the goal).")
    answer: str = Field(description="The synthesized answer, or the loop's answer when synthesis did not run.")
    loop_answer: str = Field(description="The tool loop's brief answer (SPEC R2.10; dag: the answer before synthesis).")
    iterations: int = Field(description="Loop model calls (dag: summed over the last round's steps).")
    usage: dict[str, int]
    finish_reason: str | None
    steps: list[dict[str, Any]] = Field(description="The tool calls (dag: every step's, in plan order).")
    plan: list[dict[str, Any]] = Field(
        default_factory=list,
        description="dag: the last round's plan, each step {id, task, dependencies, tool_hint, model_hint, status: "
                    "pending | completed | failed, result, error, model_role, iterations, elapsed, tool_steps}.")
    rounds: int | None = Field(default=None, description="dag: the rounds run.")


class ThreadState(BaseModel):
    """Answer of ``GET /threads/{thread_id}``."""

    thread_id: str
    mode: Mode = Field(description="The mode of the thread's runs (a thread keeps the mode of its first run).")
    running: bool = Field(description="A run is going on the thread: in this server, or with a shared (Postgres) "
                                      "queue in any server process.")
    status: Literal["running", "waiting", "interrupted", "idle"] = Field(
        description="running; waiting: its run is paused on the calls in `pending` (POST .../approvals answers "
                    "them); interrupted: its last run stopped before its end (POST .../resume finishes it); "
                    "idle: its last run finished.")
    messages: list[ThreadMessage]
    result: ThreadResult | None
    pending: list[dict[str, Any]] = Field(
        default_factory=list, description="waiting: the calls the run waits on, "
                                          "[{interrupt_id, tool_call_id, tool_name, tool_args, iteration, kind, value, "
                                          "step_id?}] (step_id: the DAG step whose loop made the call).")
    earlier_turns: list[dict[str, str]] = Field(
        default_factory=list, description="The thread's earlier runs, oldest first (the last few): {question, answer}, "
                                          "each cut (dag: the messages hold only the goals, so the answers are here).")


class ThreadSummary(BaseModel):
    """One thread of ``GET /threads``."""

    thread_id: str
    status: Literal["running", "waiting", "interrupted", "idle", "new"] = Field(
        description="As `GET /threads/{thread_id}` says it; new: its first run stored nothing yet.")
    question: str = Field(description="The thread's first question (dag: goal).")
    created_at: float = Field(description="When its first run started, in seconds since the epoch.")


class ThreadList(BaseModel):
    """Answer of ``GET /threads``: the caller's threads, newest first."""

    threads: list[ThreadSummary]
    next_offset: int | None = Field(description="The `offset` of the next page; null on the last page.")


class Deleted(BaseModel):
    """Answer of ``DELETE /threads/{thread_id}``."""

    thread_id: str
    deleted: bool = True


class ModelStatus(BaseModel):
    """One model of the agent in ``GET /healthz``: its circuit breaker."""

    name: str
    state: Literal["closed", "open", "half_open"] = Field(
        description="closed: calls go to it; open: it is skipped (it kept failing); half_open: the next call tries it.")
    recent_failures: int = Field(description="Failed calls within the breaker's window.")
    times_opened: int
    retry_in: float | None = Field(description="open: seconds until a call tries it again.")


class Health(BaseModel):
    """Answer of ``GET /healthz``."""

    status: str = "ok"
    model_mode: str = Field(description="native or json (SPEC R2.2).")
    tools: int
    checkpoints: bool = Field(description="Threads are kept by a checkpointer.")
    modes: list[Mode] = Field(description="The modes a run may ask for (`mode` of POST .../runs).")
    default_mode: Mode = Field(description="The mode of a run that names none.")
    examples: list[str] = Field(default_factory=list,
                                description="Example questions the page offers on an empty conversation "
                                            "(`create_app(examples=...)`).")
    models: list[ModelStatus] = Field(
        default_factory=list, description="The model and its fallback models in order, each with its circuit breaker "
                                          "; empty without fallback models.")


NOT_YOURS = {"model": ErrorBody, "description": "Another principal's thread (answered as an unknown one)."}
"""The 404 of an endpoint that touches a thread only its owner may touch (:func:`owned_thread`)."""


SSE_DESCRIPTION = (
    "A `text/event-stream` of the SPEC §8 events, `event: <channel>\\ndata: <json>\\n\\n`, in order: "
    "`phase`, `step` (thinking, iteration, answer signal), `compact`, `inject`, `error`, "
    "`answer` (start, delta, done), and last `done` {answer, iterations, usage, elapsed, finish_reason, thread_id}. "
    "A run that pauses for approval sends `approval` {type, status: waiting, thread_id, pending} and then `done` "
    "with finish_reason `waiting` (no `answer` events); POST .../approvals continues it. "
    "A DAG-mode run (`mode: dag`) sends `phase` (planning, analyzing), `plan` {round, steps, warnings}, `dag_step` "
    "(started, iteration, tool_started, tool, completed; each names its step_id and round) and `analysis` instead of "
    "`step` events, then the answer and `done` with rounds, achieved and confidence (docs/sse.md)."
)


SSE_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"description": SSE_DESCRIPTION, "content": {"text/event-stream": {
        "schema": sse_event_schema("One SPEC §8 event: its channel and its JSON payload (docs/sse.md).",
                                   get_args(Channel))}}},
}
"""The 200 answer of the endpoints that stream a run."""


def require_discriminators(schema: Any) -> None:
    """Make the tag of every discriminated union in ``schema`` required, in place.

    Pydantic writes a union discriminated by a member (AG-UI's messages by ``role``, their
    content parts by ``type``) as ``oneOf`` with a ``discriminator``, and leaves the member
    out of ``required`` when the model gives it a default; yet it refuses a value without
    the member (no union member can be chosen). Stating it as required makes the OpenAPI
    schema allow no body the server refuses.
    """
    if isinstance(schema, dict):
        tag = (schema.get("discriminator") or {}).get("propertyName")
        if tag and "oneOf" in schema and tag not in schema.setdefault("required", []):
            schema["required"].append(tag)
        for value in schema.values():
            require_discriminators(value)
    elif isinstance(schema, list):
        for value in schema:
            require_discriminators(value)


def _message_view(message: BaseMessage, pinned: frozenset[str]) -> ThreadMessage:
    tool_calls = [
        {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")}
        for call in (message.tool_calls if isinstance(message, AIMessage) else [])
    ]
    return ThreadMessage(
        type=message.type,
        content=message_text(message),
        pinned=is_pinned(message, pinned),
        tool_calls=tool_calls,
        tool_call_id=message.tool_call_id if isinstance(message, ToolMessage) else None,
        name=message.name if isinstance(message, ToolMessage) else None,
    )


def _answer_fields(values: dict[str, Any]) -> dict[str, Any]:
    """The :class:`ThreadResult` fields both graphs' states hold alike: the answer (the
    synthesis, else the answer before it), the answer before synthesis, usage, finish reason."""
    return {"answer": outcome.answer_shown(values.get("synthesis"), values.get("answer")),
            "loop_answer": values.get("answer", ""), "finish_reason": values.get("finish_reason"),
            "usage": {key: int(value) for key, value in (values.get("usage") or {}).items()}}


def _dag_result_view(values: dict[str, Any]) -> ThreadResult | None:
    """The last DAG run's result: its goal, answer, the last round's plan with each step's
    outcome (``pending`` for a step without one yet) and every step's tool calls."""
    if "goal" not in values:
        return None
    results = values.get("results") or {}
    plan = [{**step, "status": "pending", "result": "", "error": None, "model_role": None, "iterations": 0,
             "elapsed": 0.0, "tool_steps": [], **(results.get(step["id"]) or {})} for step in values.get("plan") or []]
    for step in plan:
        step.pop("finish_reason", None)
    return ThreadResult(query=values.get("goal", ""), iterations=sum(int(step["iterations"]) for step in plan),
                        steps=[record for step in plan for record in step["tool_steps"]], plan=plan,
                        rounds=int(values.get("round", 0)), **_answer_fields(values))


def _result_view(values: dict[str, Any]) -> ThreadResult | None:
    if "query" not in values:
        return None
    return ThreadResult(query=values.get("query", ""), iterations=int(values.get("iteration", 0)),
                        steps=list(values.get("steps") or []), **_answer_fields(values))


def create_app(agent: ReActAgent, settings: ServerSettings | None = None, *,
               dag_agent: DAGAgent | None = None, examples: Sequence[str] = (),
               principal_of: PrincipalHook | None = None) -> FastAPI:
    """Build the FastAPI app that serves ``agent`` (SPEC §8, R10.3).

    Args:
        agent: The agent every run uses. Give it a checkpointer for ``GET /threads/{id}``
            and for threads that continue across runs and server restarts; without one,
            runs still stream but the server keeps no threads (``GET`` answers 404).
        settings: :class:`ServerSettings`; defaults read ``$REACTGRAPH_API_KEY``.
        dag_agent: The agent of DAG-mode runs (``mode: "dag"``, SPEC §9), or
            ``None`` to serve the ReAct mode only. It must share ``agent``'s checkpointer
            (one store of threads; a thread keeps the mode of its first run) and interrupt
            queue (one run per thread whatever its mode; a follow-up reaches the run going).
        examples: Example questions for the served agent's tools: the page offers them on an
            empty conversation (one click asks it), ``GET /healthz`` lists them. Empty: none.
        principal_of: A hook that names each request's principal from its head instead of
            the API keys (:data:`~reactgraph.server.gate.PrincipalHook`: the request, then
            a principal's name or ``None`` for 401; it may be async).

    Returns:
        The app. ``app.state.agent``, ``app.state.dag_agent`` and ``app.state.settings`` hold the arguments;
        ``app.state.runs`` maps the thread id of each run going to its asyncio task
        (``app.state.stops`` holds those the cancel endpoint stopped); ``app.state.owners``
        holds the threads' owners (:func:`~reactgraph.server.owners.thread_owners`). More routes
        can be added to it like to any FastAPI app; the gate guards them as the others
        (key, host, body size), and :func:`stream_events` streams a run.

    Raises:
        ValueError: Invalid settings; ``default_mode="dag"`` without a DAG agent; a DAG
            agent with another checkpointer or interrupt queue than ``agent``'s; an example
            that is blank.
    """
    settings = settings or ServerSettings()
    examples = [str(example) for example in examples]
    if any(not example.strip() for example in examples):
        raise ValueError("an example question is blank")
    if settings.default_mode == "dag" and dag_agent is None:
        raise ValueError("default_mode='dag' needs a dag_agent")
    if dag_agent is not None and (dag_agent.checkpointer is not agent.checkpointer
                                  or dag_agent.interrupts is not agent.interrupts):
        raise ValueError("the DAG agent must share the ReAct agent's checkpointer and interrupt queue "
                         "(one store of threads, one run per thread whatever its mode)")
    api_key = settings.resolved_api_key()
    api_keys = settings.resolved_api_keys()
    authenticated = bool(api_key or api_keys) or principal_of is not None
    app = FastAPI(
        title="reactgraph",
        version="0.1.0",
        summary="A ReAct agent engine: runs streamed as server-sent events (SPEC §8).",
    )
    app.state.agent = agent
    app.state.dag_agent = dag_agent
    app.state.settings = settings
    app.state.examples = examples
    app.state.owners = thread_owners(agent.checkpointer)

    served = [mode for mode in MODES if mode == "react" or dag_agent is not None]

    def openapi() -> dict[str, Any]:
        """FastAPI's schema, made once: :func:`require_discriminators` applied, and a run's
        ``mode`` limited to the modes this app serves (``dag`` only with a DAG agent; 
        the schema must allow no body the server refuses)."""
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            require_discriminators(schema)
            run_request = schema.get("components", {}).get("schemas", {}).get("RunRequest", {})
            for option in run_request.get("properties", {}).get("mode", {}).get("anyOf", []):
                if "enum" in option:
                    option["enum"] = served
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.state.runs = {}
    app.state.stops = weakref.WeakSet()
    app.add_middleware(RequestGate, api_key=api_key, allowed_hosts=settings.allowed_hosts,
                       max_body_bytes=settings.max_body_bytes, body_timeout=settings.body_timeout,
                       body_deadline=settings.body_deadline, api_keys=api_keys, principal_of=principal_of)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        headers = getattr(exc, "headers", None)
        if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:  # every route of the path, not its first one's
            allowed = sorted({method for route in app.router.routes if isinstance(route, Route)
                              and route.matches(request.scope)[0] is not Match.NONE for method in route.methods or ()})
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        return error_response(exc.status_code, exc.detail, headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> Response:
        return error_response(422, jsonable_encoder(exc.errors(), custom_encoder={BaseException: str}))

    async def bearer_scheme(credentials: Credentials) -> None:
        """Declares the bearer scheme on an endpoint in the OpenAPI schema; the gate has
        checked the key before the request got here."""

    # The bearer scheme of every guarded endpoint, declared only when the server has a key:
    # a keyless server's schema asks for no Authorization header.
    guarded = [Depends(bearer_scheme)] if authenticated else []

    def checked_message(body: MessageRequest) -> str:
        return checked_text(body.message, settings)

    mode_conflict = "A run is already going on this thread, or the thread holds runs of the other mode."

    @app.post(
        "/threads/{thread_id}/runs",
        dependencies=guarded,
        response_class=EventSourceResponse,
        responses={
            **SSE_RESPONSE,
            404: NOT_YOURS,
            409: {"model": ErrorBody, "description": mode_conflict},
            **MESSAGE_ERRORS,
            422: {"model": ErrorBody, "description": "The body or the thread id is invalid (a `mode` other than react "
                                                     "or dag), or the server runs no DAG mode."},
        },
        summary="Start a run and stream its events",
    )
    async def start_run(thread_id: ThreadId, body: RunRequest, principal: Caller) -> EventSourceResponse:
        """Run the agent on `message` in the thread and stream every SPEC §8 event, ending
        with `done`; `mode: dag` plans the goal into steps and streams the plan, the steps and
        the analysis (SPEC §9). One run per thread at a time; disconnecting cancels the run.
        The thread's first run makes the caller its owner; another principal's thread is 404."""
        await owned_thread(app, thread_id, principal)
        message = checked_message(body)
        runner = await run_agent(app, thread_id, body.mode)
        await claimed_thread(app, thread_id, principal, message)
        return await stream_events(app, thread_id, runner.astream_events(message, thread_id=thread_id))

    @app.post(
        "/threads/{thread_id}/inject",
        dependencies=guarded,
        status_code=status.HTTP_202_ACCEPTED,
        responses={404: NOT_YOURS, 409: {"model": ErrorBody, "description": "No run is going on this thread."},
                   429: {"model": ErrorBody, "description": "The run has as many follow-ups (or characters of them) "
                                                            "waiting as the server accepts; send it once they are taken in."},
                   **MESSAGE_ERRORS},
        summary="Send a follow-up to the running run",
    )
    async def inject(thread_id: ThreadId, body: MessageRequest, principal: Caller) -> Accepted:
        """Queue a follow-up for the run going on the thread (SPEC §7). The run takes it in
        at its next drain point and streams an `inject` event."""
        await owned_thread(app, thread_id, principal)
        message = checked_message(body)
        try:
            await agent.inject(thread_id, message)
        except NoActiveRunError as exc:
            raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
        except FollowUpLimitError as exc:
            raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from exc
        return Accepted(thread_id=thread_id)

    @app.post(
        "/threads/{thread_id}/resume",
        dependencies=guarded,
        response_class=EventSourceResponse,
        responses={
            **SSE_RESPONSE,
            404: {"model": ErrorBody, "description": "The checkpointer has no such thread (or it is another "
                                                     "principal's)."},
            409: {"model": ErrorBody, "description": "A run is going on this thread, or its last run finished."},
            **ERRORS,
        },
        summary="Finish an interrupted run and stream the rest of its events",
    )
    async def resume_run(thread_id: ThreadId, principal: Caller) -> EventSourceResponse:
        """Continue the thread's interrupted run (its server process died, or its model kept
        failing) from its last checkpoint: tool calls that had finished are not run again.
        Streams the rest of the run's SPEC §8 events, ending with `done`; any server process
        sharing the checkpointer can do it."""
        await owned_thread(app, thread_id, principal)
        runner = await thread_agent(app, thread_id)
        await thread_snapshot(app, thread_id, runner)
        return await stream_events(app, thread_id, runner.aresume_events(thread_id))

    @app.post(
        "/threads/{thread_id}/approvals",
        dependencies=guarded,
        response_class=EventSourceResponse,
        responses={
            **SSE_RESPONSE,
            404: {"model": ErrorBody, "description": "The checkpointer has no such thread (or it is another "
                                                     "principal's)."},
            409: {"model": ErrorBody, "description": "The thread waits on no decision, or a run is going on it."},
            **ERRORS,
        },
        summary="Decide on the tool calls a paused run waits on and stream the rest of the run",
    )
    async def decide(thread_id: ThreadId, body: ApprovalsRequest, principal: Caller) -> EventSourceResponse:
        """Approve, edit or reject the tool calls the thread's paused run waits on (SPEC R13.3).
        Calls left out keep waiting. Streams the rest of the run's SPEC §8 events, ending with
        `done` (or with another `approval` when calls still wait)."""
        await owned_thread(app, thread_id, principal)
        runner = await thread_agent(app, thread_id)
        decisions = await checked_decisions(app, thread_id, [
            (item.tool_call_id, item.model_dump(exclude={"tool_call_id"}, exclude_none=True)) for item in body.decisions],
            runner)
        return await stream_events(app, thread_id, runner.aresume_events(thread_id, decisions))

    @app.post(
        "/threads/{thread_id}/cancel",
        dependencies=guarded,
        responses={404: NOT_YOURS,
                   409: {"model": ErrorBody, "description": "No run of this server is going on the thread."}, **ERRORS},
        summary="Stop the run going on the thread",
    )
    async def cancel_run(thread_id: ThreadId, principal: Caller) -> Cancelled:
        """Stop the thread's run as a client disconnect would (its model call or tools are
        cancelled, what finished is kept): its stream ends with an `error` event
        `{kind: "cancelled"}`. Answers once the run has stopped, with the thread's status:
        `interrupted` (POST .../resume finishes it) unless the run had already finished."""
        await owned_thread(app, thread_id, principal)
        task = app.state.runs.get(thread_id)
        if task is None:
            elsewhere = await agent.interrupts.is_running(thread_id)
            raise HTTPException(status.HTTP_409_CONFLICT,
                                f"no run of this server is going on thread {thread_id!r}" +
                                ("; it runs in another server process, which must be asked" if elsewhere else ""))
        app.state.stops.add(task)
        task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait([task], timeout=CANCEL_WAIT_SECONDS)
        state, _snapshot = await (await thread_agent(app, thread_id)).thread_snapshot(thread_id)
        return Cancelled(thread_id=thread_id, status="interrupted" if state == "running" else state)

    @app.get(
        "/threads/{thread_id}",
        dependencies=guarded,
        responses={404: {"model": ErrorBody, "description": "The checkpointer has no such thread (or it is another "
                                                            "principal's)."}, **ERRORS},
        summary="A thread's messages and last result",
    )
    async def get_thread(thread_id: ThreadId, principal: Caller) -> ThreadState:
        """The thread's messages and its last run's result, from the checkpointer."""
        await owned_thread(app, thread_id, principal)
        runner = await thread_agent(app, thread_id)
        state, snapshot = await thread_snapshot(app, thread_id, runner)
        values = snapshot.values
        pending = pending_calls(snapshot) if state == "waiting" else []
        dag = runner is not agent
        return ThreadState(
            thread_id=thread_id,
            mode="dag" if dag else "react",
            running=state == "running",
            status=state,
            messages=[_message_view(message, pinned_ids(values)) for message in values["messages"]],
            result=_dag_result_view(values) if dag else _result_view(values),
            pending=[call.to_dict() for call in pending],
            earlier_turns=list(values.get("earlier_turns") or []),
        )

    @app.get(
        "/threads",
        dependencies=guarded,
        responses={**ERRORS},
        summary="The caller's threads, newest first",
    )
    async def list_threads(principal: Caller,
                           limit: Annotated[int, Query(ge=1, le=100, description="Threads per page.")] = 20,
                           offset: Annotated[int, Query(ge=0, le=1_000_000, description="Threads to skip.")] = 0,
                           ) -> ThreadList:
        """The threads the caller started, newest first, each with its status and first
        question; `next_offset` pages on."""
        records = await app.state.owners.threads(principal, limit + 1, offset)
        threads = []
        for record in records[:limit]:
            runner = await thread_agent(app, record.thread_id)
            state: str = "new"
            if runner.checkpointer is not None:
                state, snapshot = await runner.thread_snapshot(record.thread_id,
                                                               running_here=app.state.runs.__contains__)
                if snapshot is None or not (snapshot.values or {}).get("messages"):
                    state = "running" if state == "running" else "new"
            threads.append(ThreadSummary(thread_id=record.thread_id, status=state, question=record.question,
                                         created_at=record.created_at))
        return ThreadList(threads=threads, next_offset=offset + limit if len(records) > limit else None)

    @app.delete(
        "/threads/{thread_id}",
        dependencies=guarded,
        responses={404: {"model": ErrorBody, "description": "The server has no such thread (of the caller's)."},
                   409: {"model": ErrorBody, "description": "A run is going on the thread."}, **ERRORS},
        summary="Remove a thread and everything stored for it",
    )
    async def delete_thread(thread_id: ThreadId, principal: Caller) -> Deleted:
        """Remove the thread: its checkpoints and their writes, its queued follow-ups and
        its owner record; `GET` answers 404 afterwards. Refused (409) while a run goes on
        it, in any server process sharing the store."""
        owners = app.state.owners
        owner = await owners.owner(thread_id)
        if owner is not None and owner != principal:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown thread {thread_id!r}")
        if owner is None and agent.checkpointer is not None:
            await thread_snapshot(app, thread_id)  # 404 for a thread that does not exist
        elif owner is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown thread {thread_id!r}")
        if thread_id in app.state.runs:
            raise HTTPException(status.HTTP_409_CONFLICT, f"a run is going on thread {thread_id!r}")
        try:
            async with agent.interrupts.running(thread_id):  # no run starts on it meanwhile
                if agent.checkpointer is not None:
                    await agent.checkpointer.adelete_thread(thread_id)
                await agent.interrupts.take(thread_id)
                await owners.forget(thread_id)
        except ThreadBusyError as exc:
            raise HTTPException(status.HTTP_409_CONFLICT, f"a run is going on thread {thread_id!r}") from exc
        return Deleted(thread_id=thread_id)

    from reactgraph.server.agui import add_agui_route  # agui builds on this module

    add_agui_route(app, [bearer_scheme] if authenticated else [])
    if settings.metrics:  # last middleware added: it sees every request first
        from reactgraph.server.observability import add_observability

        add_observability(app, public_metrics=settings.public_metrics,
                          dependencies=[] if settings.public_metrics else guarded,
                          responses={code: ERRORS[code] for code in (400, 401)})

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> Health:
        """`ok` while the server runs, with the agent's mode and tool count, and the circuit
        breaker of each model when the agent has fallback models."""
        engine = agent.engine
        models = [ModelStatus(name=name, **state) for name, state in engine.breaker_states().items()] \
            if engine.fallbacks else []
        return Health(model_mode=agent.mode, tools=len(agent.tools), checkpoints=agent.checkpointer is not None,
                      models=models, modes=served,
                      default_mode=settings.default_mode, examples=examples)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(str(STATIC_DIR / "index.html"), headers={"Cache-Control": "no-cache"})

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(str(STATIC_DIR / "favicon.svg"), media_type="image/svg+xml",
                            headers={"Cache-Control": "max-age=86400"})

    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
    return app
