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

import weakref
from collections.abc import Sequence
from typing import Any

from fastapi import Depends, FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match, Route

from reactgraph.agents.react import ReActAgent
from reactgraph.dag.agent import DAGAgent
from reactgraph.server.gate import PrincipalHook, RequestGate, error_response
from reactgraph.server.owners import thread_owners
from reactgraph.server.routers import app_routes, approvals, health, runs, threads
from reactgraph.server.routers.page import add_page
from reactgraph.server.runs import ERRORS, MODES, ServerSettings
from reactgraph.server.schemas import bearer_scheme


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



def served_openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema of ``app``, made once: :func:`require_discriminators` applied, and a
    run's ``mode`` limited to the modes the app serves (``app.state.modes``: ``dag`` only
    with a DAG agent; the schema must allow no body the server refuses)."""
    if app.openapi_schema is None:
        schema = FastAPI.openapi(app)
        require_discriminators(schema)
        run_request = schema.get("components", {}).get("schemas", {}).get("RunRequest", {})
        for option in run_request.get("properties", {}).get("mode", {}).get("anyOf", []):
            if "enum" in option:
                option["enum"] = app.state.modes
    return app.openapi_schema


async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """Every HTTP error as a JSON ``{"detail": ...}`` body; a 405 names in ``Allow`` the
    methods of every route of the path, not only its first one's."""
    headers = getattr(exc, "headers", None)
    if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        allowed = sorted({method for route in app_routes(request.app.router.routes) if isinstance(route, Route)
                          and route.matches(request.scope)[0] is not Match.NONE for method in route.methods or ()})
        headers = {**(headers or {}), "Allow": ", ".join(allowed)}
    return error_response(exc.status_code, exc.detail, headers)


async def invalid_request(_request: Request, exc: RequestValidationError) -> Response:
    """A request that fails validation: 422 with the validation errors as ``detail``."""
    return error_response(422, jsonable_encoder(exc.errors(), custom_encoder={BaseException: str}))


def checked_agents(agent: ReActAgent, settings: ServerSettings, dag_agent: DAGAgent | None,
                   examples: Sequence[str]) -> list[str]:
    """The example questions as text, once the arguments of :func:`create_app` are checked.

    Raises:
        ValueError: As :func:`create_app` says.
    """
    examples = [str(example) for example in examples]
    if any(not example.strip() for example in examples):
        raise ValueError("an example question is blank")
    if settings.default_mode == "dag" and dag_agent is None:
        raise ValueError("default_mode='dag' needs a dag_agent")
    if dag_agent is not None and (dag_agent.checkpointer is not agent.checkpointer
                                  or dag_agent.interrupts is not agent.interrupts):
        raise ValueError("the DAG agent must share the ReAct agent's checkpointer and interrupt queue "
                         "(one store of threads, one run per thread whatever its mode)")
    return examples


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
        (key, host, body size), and :func:`~reactgraph.server.runs.stream_events` streams a run.

    Raises:
        ValueError: Invalid settings; ``default_mode="dag"`` without a DAG agent; a DAG
            agent with another checkpointer or interrupt queue than ``agent``'s; an example
            that is blank.
    """
    settings = settings or ServerSettings()
    examples = checked_agents(agent, settings, dag_agent, examples)
    api_key, api_keys = settings.resolved_api_key(), settings.resolved_api_keys()
    authenticated = bool(api_key or api_keys) or principal_of is not None
    app = FastAPI(title="reactgraph", version="0.1.0",
                  summary="A ReAct agent engine: runs streamed as server-sent events (SPEC §8).")
    app.state.agent, app.state.dag_agent, app.state.settings = agent, dag_agent, settings
    app.state.examples = examples
    app.state.modes = [mode for mode in MODES if mode == "react" or dag_agent is not None]
    app.state.owners = thread_owners(agent.checkpointer)
    app.state.runs, app.state.stops = {}, weakref.WeakSet()
    app.openapi = lambda: served_openapi(app)  # type: ignore[method-assign]
    app.add_middleware(RequestGate, api_key=api_key, allowed_hosts=settings.allowed_hosts,
                       max_body_bytes=settings.max_body_bytes, body_timeout=settings.body_timeout,
                       body_deadline=settings.body_deadline, api_keys=api_keys, principal_of=principal_of)
    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, invalid_request)  # type: ignore[arg-type]
    # The bearer scheme of every guarded endpoint, declared only when the server has a key:
    # a keyless server's schema asks for no Authorization header.
    guarded = [Depends(bearer_scheme)] if authenticated else []
    for router in (runs.router, approvals.router, runs.cancel_router, threads.router):
        app.include_router(router, dependencies=guarded)
    from reactgraph.server.agui import add_agui_route  # the AG-UI package loads with the app only

    add_agui_route(app, [bearer_scheme] if authenticated else [])
    if settings.metrics:  # last middleware added: it sees every request first
        from reactgraph.server.observability import add_observability

        add_observability(app, public_metrics=settings.public_metrics,
                          dependencies=[] if settings.public_metrics else guarded,
                          responses={code: ERRORS[code] for code in (400, 401)})
    app.include_router(health.router)
    add_page(app)
    return app
