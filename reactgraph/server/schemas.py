"""The HTTP API's request and answer bodies and its OpenAPI declarations (SPEC §8): what
the routers of :mod:`reactgraph.server.routers` take and answer, each field described as
the OpenAPI schema shows it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from fastapi import Depends
from fastapi import Path as FastAPIPath
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from reactgraph.demo.factory import DEMO_QUESTION
from reactgraph.events import Channel
from reactgraph.server.runs import (
    ErrorBody,
    Mode,
    NOT_BLANK,
    NOT_BLANK_PATTERN,
    THREAD_ID_PATTERN,
    sse_event_schema,
)


def not_blank(text: str) -> str:
    """``text`` when it holds text (:data:`NOT_BLANK_PATTERN`), for a request model's field.

    Raises:
        ValueError: It is only white space ("the message is blank").
    """
    if not NOT_BLANK.search(text):
        raise ValueError("the message is blank")
    return text


Credentials = Annotated[
    HTTPAuthorizationCredentials | None,
    Depends(HTTPBearer(auto_error=False, description="Required when REACTGRAPH_API_KEY is set.")),
]
"""Declares the bearer scheme in the OpenAPI schema; the key is enforced by the gate."""


async def bearer_scheme(credentials: Credentials) -> None:
    """Declares the bearer scheme on an endpoint in the OpenAPI schema; the gate
    (:class:`~reactgraph.server.gate.RequestGate`) has checked the key before the request
    got here."""


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
