"""The AG-UI protocol on the server: ``POST /agui`` takes an AG-UI
``RunAgentInput`` and streams the run as AG-UI events, for front ends that speak AG-UI
(CopilotKit, ``@ag-ui/client``) instead of the SSE protocol of SPEC §8.

The types and the SSE encoder are the ``ag-ui-protocol`` package's (extra ``[server]``).
:class:`AguiEncoding` maps reactgraph's typed events (:mod:`reactgraph.events`) to AG-UI
events, one run at a time; :func:`add_agui_route` adds the endpoint to an app made by
:func:`~reactgraph.server.create_app` (which does it itself). The mapping table is in
``docs/agui.md``:

- the run: ``RUN_STARTED`` first; ``RUN_FINISHED`` with the ``done`` payload as ``result``
  (and an ``interrupt`` outcome for a run that waits for approval), or ``RUN_ERROR`` for a
  run whose model kept failing (after its fallback answer) or that the server lost;
- each loop model call: ``STEP_STARTED`` / ``STEP_FINISHED`` named ``model_call_<n>``;
- each tool call: ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` (the arguments as JSON),
  ``TOOL_CALL_END`` when it starts, ``TOOL_CALL_RESULT`` when it finishes;
- the synthesized answer: ``TEXT_MESSAGE_START`` / ``CONTENT`` / ``END``, an assistant message;
- ``phase``, ``compact``, ``inject``, ``stall``, ``approval``, an answer ``reset`` and DAG
  mode's events: ``CUSTOM`` events named by their SSE channel (``answer_reset`` for the
  reset) whose value is the SPEC §8 payload;
- DAG mode besides: each round's planning and analysis and each plan step as a
  step (``STEP_STARTED`` / ``STEP_FINISHED`` named ``planning:<round>``,
  ``analyzing:<round>``, ``step:<round>:<step id>``; steps that run in parallel are open
  together), and each step's tool calls as tool call events whose parent message is its step.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from fastapi import Depends, FastAPI, HTTPException
from pydantic import ConfigDict
from pydantic_core import PydanticSerializationError
from sse_starlette import EventSourceResponse

from reactgraph.events import (
    OMIT,
    AgentEvent,
    Analysis,
    Analyzing,
    AnswerDelta,
    AnswerDone,
    AnswerReset,
    AnswerSignalled,
    AnswerStarted,
    ApprovalWaiting,
    DagStepCompleted,
    DagStepStarted,
    DagStepTool,
    DagStepToolStarted,
    Done,
    PlanMade,
    Planning,
    RunError,
    ThinkingDone,
    ThinkingStarted,
    ToolDone,
    ToolStarted,
    wire_json,
    wire_safe,
)
from reactgraph.server.runs import (
    CANCELLED,
    ERRORS,
    MESSAGE_ERRORS,
    MODES,
    Caller,
    ErrorBody,
    NOT_BLANK,
    NOT_BLANK_PATTERN,
    IdText,
    Mode,
    checked_decisions,
    checked_text,
    claimed_thread,
    owned_thread,
    run_agent,
    sse_event_schema,
    stream_events,
    thread_agent,
)

AGUI_PATH = "/agui"
"""Where :func:`add_agui_route` serves the AG-UI endpoint."""

CUSTOM_NAMES = {AnswerReset: "answer_reset"}
"""``CUSTOM`` event names that are not the event's SSE channel."""


def _text(content: Any) -> str:
    """The text of an AG-UI message's content: the string, or its text parts joined."""
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content or [])


def question_of(run_input: RunAgentInput) -> str:
    """The question of a run: the text of the last ``user`` message of ``run_input.messages``
    that holds text (:data:`~reactgraph.server.runs.NOT_BLANK_PATTERN`; earlier turns are the
    thread's own history, kept by the checkpointer). The request schema states the same
    rule (:data:`QUESTION_SCHEMA`).

    Raises:
        HTTPException: 422 when no user message holds text.
    """
    for message in reversed(run_input.messages):
        if getattr(message, "role", None) == "user" and NOT_BLANK.search(text := _text(message.content)):
            return text
    raise HTTPException(422, "RunAgentInput.messages holds no user message with text: the last one is the question "
                             "(or send `resume` entries)")


USER_TEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {
        "role": {"const": "user"},
        "content": {"anyOf": [
            {"type": "string", "pattern": NOT_BLANK_PATTERN},
            {"type": "array", "contains": {"type": "object", "required": ["type", "text"], "properties": {
                "type": {"const": "text"}, "text": {"type": "string", "pattern": NOT_BLANK_PATTERN}}}},
        ]},
    },
}
"""A user message that holds text: its content a string, or parts one of which is a text part,
that is not only white space."""

QUESTION_SCHEMA: dict[str, Any] = {"anyOf": [
    {"required": ["resume"], "properties": {"resume": {"type": "array", "minItems": 1}}},
    {"required": ["messages"], "properties": {"messages": {"contains": USER_TEXT_SCHEMA}}},
]}
"""What ``POST /agui`` needs besides a ``RunAgentInput``, in its OpenAPI schema (the
schema allowed a body without a question, which the server refuses): ``resume`` entries, or a
user message that holds text (:func:`question_of`)."""


def mode_of(run_input: RunAgentInput) -> Mode | None:
    """The mode a run asks for: ``forwardedProps.mode`` (``"react"`` or ``"dag"``),
    ``None`` (the server's default) when it names none.

    Raises:
        HTTPException: 422 for a ``mode`` that is not one of :data:`~reactgraph.server.runs.MODES`.
    """
    props = run_input.forwarded_props
    mode = props.get("mode") if isinstance(props, dict) else None
    if mode is not None and mode not in MODES:
        raise HTTPException(422, f"forwardedProps.mode must be one of {', '.join(MODES)}, got {wire_json(mode)[:100]}")
    return mode


def resume_decisions(run_input: RunAgentInput) -> list[tuple[str, dict[str, Any]]]:
    """The decisions an AG-UI ``resume`` carries for a run paused on approval (SPEC R13.3),
    by interrupt id: a ``cancelled`` entry rejects its call; a ``resolved`` one approves
    it, or applies its ``payload`` when that is a decision
    (``{"type": "approve" | "edit" | "reject", "args"?, "message"?}``).

    Raises:
        HTTPException: 422 for a payload that is neither absent nor such an object.
    """
    decisions = []
    for entry in run_input.resume or []:
        if entry.status == "cancelled":
            decision: Any = {"type": "reject"}
        elif entry.payload is None:
            decision = {"type": "approve"}
        elif isinstance(entry.payload, dict) and "type" in entry.payload:
            decision = dict(entry.payload)
        else:
            raise HTTPException(422, f"resume entry {entry.interrupt_id!r}: its payload must be a decision "
                                     '{"type": "approve" | "edit" | "reject", "args"?, "message"?} or absent')
        decisions.append((entry.interrupt_id, decision))
    return decisions


class AguiEncoding:
    """Writes one run's typed events as AG-UI events over SSE (``EventEncoder``).

    Stateful: it opens the run before the first event, tracks the open step, tool calls and
    text message, and closes them before the run's terminal event (``RUN_FINISHED`` or
    ``RUN_ERROR``, after which nothing is written). :meth:`events` gives the AG-UI event
    objects of one typed event, :meth:`frame` their encoded form (the :class:`~reactgraph.server.runs.StreamEncoding`
    of :func:`~reactgraph.server.stream_events`).

    Args:
        thread_id: The AG-UI ``threadId`` (the reactgraph thread).
        run_id: The AG-UI ``runId``.
    """

    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.encoder = EventEncoder()
        self.started = False
        self.finished = False
        self.step: str | None = None
        self.message_id: str | None = None
        self.tool_calls: set[str] = set()
        self.failure: RunError | None = None
        self.pending: list[dict[str, Any]] = []
        self.answers = 0
        self.dag_steps: list[str] = []  # DAG mode's open steps (several run at once)

    def events(self, event: AgentEvent) -> list[BaseEvent]:
        """The AG-UI events that stand for ``event`` (the module docstring's table),
        preceded by ``RUN_STARTED`` for the run's first event; none after the terminal event."""
        if self.finished:
            return []
        out: list[BaseEvent] = []
        if not self.started:
            self.started = True
            out.append(RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id))
        match event:
            case ThinkingStarted():
                name = f"model_call_{event.iteration}"
                if self.step != name:  # a retried call sends its start again
                    out += self._close_step()
                    self.step = name
                    out.append(StepStartedEvent(step_name=name))
            case ThinkingDone():
                out += self._close_step()
            case ToolStarted() | ToolDone() if event.tool_call_id not in self.tool_calls:
                # (a ToolDone without its start: saved before an interruption, reported on resume)
                out += self._tool_call(event)
                if isinstance(event, ToolDone):
                    out += self.events(event)
            case ToolStarted():
                pass
            case ToolDone():
                out.append(ToolCallResultEvent(message_id=f"{event.tool_call_id}:result", tool_call_id=event.tool_call_id,
                                               content=event.observation or event.error or "", role="tool"))
            case AnswerSignalled():  # the loop has its answer: the synthesis that follows is the message,
                out += self._close_step()  # shown as a step while it is written (and checked)
                self.step = "writing_answer"
                out.append(StepStartedEvent(step_name=self.step))
            case AnswerStarted():
                out += self._close_step()
                out += self._close_message()
                self.answers += 1
                self.message_id = f"{self.run_id}:answer:{self.answers}"
                out.append(TextMessageStartEvent(message_id=self.message_id, role="assistant"))
            case AnswerDelta():
                if event.content:
                    if self.message_id is None:
                        out += self.events(AnswerStarted())
                    out.append(TextMessageContentEvent(message_id=self.message_id, delta=event.content))
            case AnswerDone():
                out += self._close_message()
            case RunError() if event.kind not in ("server_error", CANCELLED):
                self.failure = event  # the fallback answer and `done` follow; the run ends in RUN_ERROR
                out += self._close_step()
                out.append(CustomEvent(name="error", value=event.data))
            case RunError():
                out += self._finish(RunErrorEvent(message=event.message, code=event.kind))
            case ApprovalWaiting():
                self.pending = list(event.pending)
                out.append(CustomEvent(name=event.channel, value=event.data))
            case Planning() | Analyzing() | PlanMade() | Analysis() | DagStepStarted() | DagStepCompleted() \
                    | DagStepToolStarted() | DagStepTool():
                out += self._dag_events(event)
            case Done():
                out += self._finish(self._terminal(event))
            case _:
                out.append(CustomEvent(name=CUSTOM_NAMES.get(type(event), event.channel), value=event.data))
        return out

    def frame(self, event: AgentEvent) -> str:
        """The encoded AG-UI events of ``event`` (SSE ``data:`` frames)."""
        return "".join(self._encode(item) for item in self.events(event))

    def end(self) -> str:
        """``RUN_ERROR`` for a stream that ended without its terminal event (never for a
        complete run)."""
        if self.finished:
            return ""
        opening = [] if self.started else [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]
        self.started = True
        closing = self._finish(RunErrorEvent(message="the run ended without a result", code="server_error"))
        return "".join(self._encode(item) for item in opening + closing)

    def _encode(self, event: BaseEvent) -> str:
        """``EventEncoder.encode`` with the escaping of every event encoder
        (:func:`~reactgraph.events.wire_safe`: U+0085, U+2028, U+2029 escaped, so a
        line-splitting client reads every ``data:`` line whole); a payload it
        cannot write as UTF-8 (a lone surrogate a tool returned) goes through
        :func:`~reactgraph.events.wire_json` instead."""
        try:
            return wire_safe(self.encoder.encode(event))
        except (PydanticSerializationError, UnicodeError):
            return f"data: {wire_json(event.model_dump(mode='python', by_alias=True))}\n\n"

    def _tool_call(self, event: ToolStarted | ToolDone) -> list[BaseEvent]:
        """START, ARGS (the arguments as JSON), END of one tool call; the calls one model call
        asked for share their parent message ``<runId>:model_call_<n>``."""
        self.tool_calls.add(event.tool_call_id)
        return self._call_events(event.tool_call_id, event.tool_name, event.tool_args,
                                 f"{self.run_id}:model_call_{event.iteration}")

    @staticmethod
    def _call_events(call_id: str, tool_name: str | None, tool_args: Any, parent: str) -> list[BaseEvent]:
        """START (under the ``parent`` message), ARGS (the arguments as JSON), END of one tool call."""
        args = tool_args if tool_args is not OMIT and tool_args is not None else {}
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
        return [ToolCallStartEvent(tool_call_id=call_id, tool_call_name=tool_name or "unknown", parent_message_id=parent),
                ToolCallArgsEvent(tool_call_id=call_id, delta=arguments),
                ToolCallEndEvent(tool_call_id=call_id)]

    def _dag_events(self, event: AgentEvent) -> list[BaseEvent]:
        """DAG mode's events: planning, analysis and each plan step as AG-UI
        steps, a step's tool calls as tool call events under its step, and the SPEC §8
        payloads of the phases, the plan, the steps and the analysis as ``CUSTOM`` events."""
        custom = CustomEvent(name=event.channel, value=event.data)
        match event:
            case Planning() | Analyzing():
                return [custom, self._open_dag_step(f"{event.phase}:{event.round}")]
            case PlanMade():
                return self._close_dag_step(f"planning:{event.round}") + [custom]
            case Analysis():
                return self._close_dag_step(f"analyzing:{event.round}") + [custom]
            case DagStepStarted():
                return [self._open_dag_step(f"step:{event.round}:{event.step_id}"), custom]
            case DagStepCompleted():  # a step whose dependency failed never started: its payload only
                return [custom, *self._close_dag_step(f"step:{event.round}:{event.step_id}")]
            case DagStepToolStarted() | DagStepTool():
                call_id = f"{event.round}:{event.step_id}:{event.tool_call_id or event.iteration}"
                out: list[BaseEvent] = []
                if call_id not in self.tool_calls:
                    self.tool_calls.add(call_id)
                    out += self._call_events(call_id, event.tool_name, event.tool_args,
                                             f"{self.run_id}:step:{event.round}:{event.step_id}")
                if isinstance(event, DagStepTool):
                    out.append(ToolCallResultEvent(message_id=f"{call_id}:result", tool_call_id=call_id,
                                                   content=event.observation or event.error or "", role="tool"))
                return out
        return [custom]

    def _open_dag_step(self, name: str) -> BaseEvent:
        self.dag_steps.append(name)
        return StepStartedEvent(step_name=name)

    def _close_dag_step(self, name: str) -> list[BaseEvent]:
        if name not in self.dag_steps:
            return []
        self.dag_steps.remove(name)
        return [StepFinishedEvent(step_name=name)]

    def _close_step(self) -> list[BaseEvent]:
        if self.step is None:
            return []
        name, self.step = self.step, None
        return [StepFinishedEvent(step_name=name)]

    def _close_message(self) -> list[BaseEvent]:
        if self.message_id is None:
            return []
        message_id, self.message_id = self.message_id, None
        return [TextMessageEndEvent(message_id=message_id)]

    def _finish(self, terminal: BaseEvent) -> list[BaseEvent]:
        closing = self._close_step() + self._close_message()
        closing += [StepFinishedEvent(step_name=name) for name in self.dag_steps]
        self.dag_steps = []
        self.finished = True
        return [*closing, terminal]

    def _terminal(self, done: Done) -> BaseEvent:
        """``RUN_ERROR`` after a failure, else ``RUN_FINISHED`` with ``done``'s payload, its
        token usage and, for a run paused on approval, the waiting calls as interrupts."""
        usage = [TokenUsage(input_tokens=done.usage.get("input_tokens"), output_tokens=done.usage.get("output_tokens"),
                            total_tokens=done.usage.get("total_tokens"))]
        if self.failure is not None:
            return RunErrorEvent(message=self.failure.message, code=self.failure.kind, usage=usage)
        outcome = None
        if done.finish_reason == "waiting" and self.pending:
            outcome = RunFinishedInterruptOutcome(interrupts=[
                Interrupt(id=call["interrupt_id"], reason=str(call.get("kind") or "approval"),
                          tool_call_id=call.get("tool_call_id"),
                          message=f"approve {call.get('tool_name')}({wire_json(call.get('tool_args'))})")
                for call in self.pending])
        return RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, result=done.data, outcome=outcome,
                                usage=usage)


class AguiRunInput(RunAgentInput):
    """An AG-UI ``RunAgentInput`` as ``POST /agui`` takes it: ``threadId`` and ``runId``
    are ids as ``/threads/{thread_id}`` takes them (:data:`~reactgraph.server.runs.IdText`,
    the same pattern; ``"abc\\n"`` made a thread no path could reach, and a
    megabyte ``runId`` was repeated in every event). Its schema also asks for a question or
``resume`` entries (:data:`QUESTION_SCHEMA`)."""

    model_config = ConfigDict(json_schema_extra=QUESTION_SCHEMA)

    thread_id: IdText
    run_id: IdText



def add_agui_route(app: FastAPI, dependencies: list[Any]) -> None:
    """Add ``POST /agui`` to an app made by :func:`~reactgraph.server.create_app`.

    The body is an AG-UI ``RunAgentInput`` (camelCase members; 422 when it is not one).
    ``threadId`` is the reactgraph thread, ``runId`` the run's id (both the pattern of
    ``/threads/{thread_id}``, 422 otherwise: :class:`AguiRunInput`): a checkpointer keeps its history, so only the last user message is
    sent to the agent as the question (422 when there is none, 413 when it is longer than
    the server's limit). With ``resume`` entries, the thread's run paused on approval
    continues with those decisions instead (404/409/422 as ``POST
    /threads/{id}/approvals``). One run per thread: 409 while one is going. The request
    passes the same gate as every endpoint (API key, host, body size), and the thread has
    the same owner (404 for another principal's).

    Args:
        app: The app.
        dependencies: The route's dependencies (the bearer scheme, for the OpenAPI schema).
    """

    @app.post(
        AGUI_PATH,
        dependencies=[Depends(dependency) for dependency in dependencies],
        response_class=EventSourceResponse,
        responses={
            200: {"description": "A `text/event-stream` of AG-UI events (`data: <json>\\n\\n`): RUN_STARTED, "
                                 "STEP_*, TOOL_CALL_*, TEXT_MESSAGE_* for the answer, CUSTOM for phase, compact, "
                                 "inject, stall, approval and answer_reset, then RUN_FINISHED or RUN_ERROR "
                                 "(docs/agui.md).",
                  "content": {"text/event-stream": {"schema": sse_event_schema(
                      "One AG-UI event: its JSON in `data` (`type` names the event); it has no `event:` line, so a "
                      "parser names it `message`.", ("message",))}}},
            404: {"model": ErrorBody, "description": "Another principal's thread; resume: the checkpointer has no "
                                                     "such thread."},
            409: {"model": ErrorBody, "description": "A run is going on this thread (resume: or it waits on nothing)."},
            **MESSAGE_ERRORS,
            **ERRORS,
        },
        summary="Run the agent for an AG-UI client",
    )
    async def agui_run(body: AguiRunInput, principal: Caller) -> EventSourceResponse:
        """Run the agent on the AG-UI input's last user message in thread `threadId` (in DAG
        mode with `forwardedProps: {"mode": "dag"}`), or resume its paused run with the input's
        `resume` decisions, and stream AG-UI events. Another principal's thread is 404."""
        encoding = AguiEncoding(body.thread_id, body.run_id)
        await owned_thread(app, body.thread_id, principal)
        if body.resume:
            agent = await thread_agent(app, body.thread_id)
            decisions = await checked_decisions(app, body.thread_id, lambda: resume_decisions(body), agent)
            return await stream_events(app, body.thread_id, agent.aresume_events(body.thread_id, decisions), encoding)
        mode = mode_of(body)
        question = checked_text(question_of(body), app.state.settings)
        agent = await run_agent(app, body.thread_id, mode)
        await claimed_thread(app, body.thread_id, principal, question)
        return await stream_events(app, body.thread_id, agent.astream_events(question, thread_id=body.thread_id),
                                   encoding)


