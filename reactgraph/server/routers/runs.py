"""The routes that start, follow up, resume and stop a thread's run (SPEC §7, §8, §9):
``POST /threads/{thread_id}/runs``, ``/inject``, ``/resume`` and ``/cancel``."""

from __future__ import annotations

import asyncio

import anyio
from fastapi import APIRouter, HTTPException, Request, status
from sse_starlette import EventSourceResponse

from reactgraph.core.errors import FollowUpLimitError, NoActiveRunError
from reactgraph.server.runs import (
    CANCEL_WAIT_SECONDS,
    Caller,
    ERRORS,
    NO_THREAD,
    ErrorBody,
    MESSAGE_ERRORS,
    checked_text,
    claimed_thread,
    owned_thread,
    run_agent,
    stream_events,
    thread_agent,
    thread_snapshot,
)
from reactgraph.server.schemas import (
    Accepted,
    Cancelled,
    MessageRequest,
    NOT_YOURS,
    RunRequest,
    SSE_RESPONSE,
    ThreadId,
)

router = APIRouter()

MODE_CONFLICT = "A run is already going on this thread, or the thread holds runs of the other mode."


@router.post(
    "/threads/{thread_id}/runs",
    response_class=EventSourceResponse,
    responses={
        **SSE_RESPONSE,
        404: NOT_YOURS,
        409: {"model": ErrorBody, "description": MODE_CONFLICT},
        **MESSAGE_ERRORS,
        422: {"model": ErrorBody, "description": "The body or the thread id is invalid (a `mode` other than react "
                                                 "or dag), or the server runs no DAG mode."},
    },
    summary="Start a run and stream its events",
)
async def start_run(thread_id: ThreadId, body: RunRequest, principal: Caller, request: Request) -> EventSourceResponse:
    """Run the agent on `message` in the thread and stream every SPEC §8 event, ending
    with `done`; `mode: dag` plans the goal into steps and streams the plan, the steps and
    the analysis (SPEC §9). One run per thread at a time; disconnecting cancels the run.
    The thread's first run makes the caller its owner; another principal's thread is 404."""
    app = request.app
    await owned_thread(app, thread_id, principal)
    message = checked_text(body.message, app.state.settings)
    runner = await run_agent(app, thread_id, body.mode)
    await claimed_thread(app, thread_id, principal, message)
    return await stream_events(app, thread_id, runner.astream_events(message, thread_id=thread_id))


@router.post(
    "/threads/{thread_id}/inject",
    status_code=status.HTTP_202_ACCEPTED,
    responses={404: NOT_YOURS, 409: {"model": ErrorBody, "description": "No run is going on this thread."},
               429: {"model": ErrorBody, "description": "The run has as many follow-ups (or characters of them) "
                                                        "waiting as the server accepts; send it once they are taken in."},
               **MESSAGE_ERRORS},
    summary="Send a follow-up to the running run",
)
async def inject(thread_id: ThreadId, body: MessageRequest, principal: Caller, request: Request) -> Accepted:
    """Queue a follow-up for the run going on the thread (SPEC §7). The run takes it in
    at its next drain point and streams an `inject` event."""
    app = request.app
    await owned_thread(app, thread_id, principal)
    message = checked_text(body.message, app.state.settings)
    try:
        await app.state.agent.inject(thread_id, message)
    except NoActiveRunError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
    except FollowUpLimitError as exc:
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from exc
    return Accepted(thread_id=thread_id)


@router.post(
    "/threads/{thread_id}/resume",
    response_class=EventSourceResponse,
    responses={
        **SSE_RESPONSE,
        **NO_THREAD,
        409: {"model": ErrorBody, "description": "A run is going on this thread, or its last run finished."},
        **ERRORS,
    },
    summary="Finish an interrupted run and stream the rest of its events",
)
async def resume_run(thread_id: ThreadId, principal: Caller, request: Request) -> EventSourceResponse:
    """Continue the thread's interrupted run (its server process died, or its model kept
    failing) from its last checkpoint: tool calls that had finished are not run again.
    Streams the rest of the run's SPEC §8 events, ending with `done`; any server process
    sharing the checkpointer can do it."""
    app = request.app
    await owned_thread(app, thread_id, principal)
    runner = await thread_agent(app, thread_id)
    await thread_snapshot(app, thread_id, runner)
    return await stream_events(app, thread_id, runner.aresume_events(thread_id))


cancel_router = APIRouter()
"""``POST .../cancel``, a router of its own so that its path keeps its place in the OpenAPI
schema (after ``/approvals``)."""


@cancel_router.post(
    "/threads/{thread_id}/cancel",
    responses={404: NOT_YOURS,
               409: {"model": ErrorBody, "description": "No run of this server is going on the thread."}, **ERRORS},
    summary="Stop the run going on the thread",
)
async def cancel_run(thread_id: ThreadId, principal: Caller, request: Request) -> Cancelled:
    """Stop the thread's run as a client disconnect would (its model call or tools are
    cancelled, what finished is kept): its stream ends with an `error` event
    `{kind: "cancelled"}`. Answers once the run has stopped, with the thread's status:
    `interrupted` (POST .../resume finishes it) unless the run had already finished."""
    app = request.app
    await owned_thread(app, thread_id, principal)
    task = app.state.runs.get(thread_id)
    if task is None:
        elsewhere = await app.state.agent.interrupts.is_running(thread_id)
        raise HTTPException(status.HTTP_409_CONFLICT,
                            f"no run of this server is going on thread {thread_id!r}" +
                            ("; it runs in another server process, which must be asked" if elsewhere else ""))
    app.state.stops.add(task)
    task.cancel()
    with anyio.CancelScope(shield=True):
        await asyncio.wait([task], timeout=CANCEL_WAIT_SECONDS)
    state, _snapshot = await (await thread_agent(app, thread_id)).thread_snapshot(thread_id)
    return Cancelled(thread_id=thread_id, status="interrupted" if state == "running" else state)
