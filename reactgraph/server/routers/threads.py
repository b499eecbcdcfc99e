"""The routes that read, list and delete threads: ``GET /threads/{thread_id}`` (messages,
last result, waiting calls, from the checkpointer), ``GET /threads`` (the caller's, newest
first) and ``DELETE /threads/{thread_id}``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, status
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from reactgraph.agents import outcome
from reactgraph.core.errors import ThreadBusyError
from reactgraph.engine.pinning import is_pinned, pinned_ids
from reactgraph.protocol.actions import message_text
from reactgraph.server.runs import NO_THREAD, Caller, ERRORS, ErrorBody, owned_thread, thread_agent, thread_snapshot
from reactgraph.server.schemas import Deleted, ThreadId, ThreadList, ThreadMessage, ThreadResult, ThreadState, ThreadSummary
from reactgraph.tools.approval import pending_calls

router = APIRouter()


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

@router.get(
    "/threads/{thread_id}",
    responses={**NO_THREAD, **ERRORS},
    summary="A thread's messages and last result",
)
async def get_thread(thread_id: ThreadId, principal: Caller, request: Request) -> ThreadState:
    """The thread's messages and its last run's result, from the checkpointer."""
    app = request.app
    await owned_thread(app, thread_id, principal)
    runner = await thread_agent(app, thread_id)
    state, snapshot = await thread_snapshot(app, thread_id, runner)
    values = snapshot.values
    pending = pending_calls(snapshot) if state == "waiting" else []
    dag = runner is not app.state.agent
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


@router.get(
    "/threads",
    responses={**ERRORS},
    summary="The caller's threads, newest first",
)
async def list_threads(principal: Caller, request: Request,
                       limit: Annotated[int, Query(ge=1, le=100, description="Threads per page.")] = 20,
                       offset: Annotated[int, Query(ge=0, le=1_000_000, description="Threads to skip.")] = 0,
                       ) -> ThreadList:
    """The threads the caller started, newest first, each with its status and first
    question; `next_offset` pages on."""
    app = request.app
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


@router.delete(
    "/threads/{thread_id}",
    responses={404: {"model": ErrorBody, "description": "The server has no such thread (of the caller's)."},
               409: {"model": ErrorBody, "description": "A run is going on the thread."}, **ERRORS},
    summary="Remove a thread and everything stored for it",
)
async def delete_thread(thread_id: ThreadId, principal: Caller, request: Request) -> Deleted:
    """Remove the thread: its checkpoints and their writes, its queued follow-ups and
    its owner record; `GET` answers 404 afterwards. Refused (409) while a run goes on
    it, in any server process sharing the store."""
    app = request.app
    agent = app.state.agent
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
