"""``POST /threads/{thread_id}/approvals``: the decisions on the tool calls a paused run
waits on (SPEC R13.3), and the rest of the run streamed."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sse_starlette import EventSourceResponse

from reactgraph.server.runs import (
    Caller,
    ERRORS,
    NO_THREAD,
    ErrorBody,
    checked_decisions,
    owned_thread,
    stream_events,
    thread_agent,
)
from reactgraph.server.schemas import ApprovalsRequest, SSE_RESPONSE, ThreadId

router = APIRouter()


@router.post(
    "/threads/{thread_id}/approvals",
    response_class=EventSourceResponse,
    responses={
        **SSE_RESPONSE,
        **NO_THREAD,
        409: {"model": ErrorBody, "description": "The thread waits on no decision, or a run is going on it."},
        **ERRORS,
    },
    summary="Decide on the tool calls a paused run waits on and stream the rest of the run",
)
async def decide(thread_id: ThreadId, body: ApprovalsRequest, principal: Caller,
                 request: Request) -> EventSourceResponse:
    """Approve, edit or reject the tool calls the thread's paused run waits on (SPEC R13.3).
    Calls left out keep waiting. Streams the rest of the run's SPEC §8 events, ending with
    `done` (or with another `approval` when calls still wait)."""
    app = request.app
    await owned_thread(app, thread_id, principal)
    runner = await thread_agent(app, thread_id)
    decisions = await checked_decisions(app, thread_id, [
        (item.tool_call_id, item.model_dump(exclude={"tool_call_id"}, exclude_none=True)) for item in body.decisions],
        runner)
    return await stream_events(app, thread_id, runner.aresume_events(thread_id, decisions))
