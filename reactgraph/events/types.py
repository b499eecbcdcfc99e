"""The typed events of a run (SPEC §8): :class:`AgentEvent` and one frozen dataclass per
kind (the table is in ``docs/events.md``), their channels (:data:`Channel`), their one
serializer to the SSE wire (:func:`to_sse`) and its reader (:func:`event_from_wire`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from reactgraph.events.wire import OMIT, wire_json

Channel = Literal[
    "step", "answer", "compact", "phase", "inject", "stall", "error", "done", "plan", "dag_step", "analysis",
    "approval", "model_switch",
]
"""Event channels: the SPEC §8 ones, ``stall`` when the loop is stuck and the next call may
only answer (``{iteration, reason}``, SPEC R13.1), ``error`` for a run that failed (R2.7),
``approval`` for a run paused on tool calls that wait for a person's decision (R13.3),
``model_switch`` when a call is handed to a fallback model, and DAG mode's
``plan``, ``dag_step`` and ``analysis`` (SPEC R9.5; payloads in ``docs/events.md``)."""

_KINDS: dict[str, list[type[AgentEvent]]] = {}
"""Every concrete event class, by channel (filled by :meth:`AgentEvent.__init_subclass__`)."""

_FIELD_NAMES: dict[type[AgentEvent], tuple[str, ...]] = {}
"""Each event class's dataclass field names, in order (filled by ``AgentEvent.data``)."""


@dataclass(frozen=True, kw_only=True)
class AgentEvent:
    """One event of a run: the base of the typed events, one subclass per event kind
    (SPEC §8; the table of ``docs/events.md``).

    A subclass names its SSE ``channel`` and its ``tag``: the members that tell it apart
    from the other kinds of its channel (``type``/``status`` of ``step`` events, ``status``
    of ``answer`` and ``dag_step`` events, ``phase`` of ``phase`` events), written first
    in its payload; its dataclass fields follow, in their order. A field left at
    :data:`OMIT` is not in the payload.

    Attributes:
        channel: The SSE channel (class attribute).
        tag: The payload members fixed for the kind (class attribute).
        data: The JSON payload, exactly as SPEC §8 gives it for the kind (a property:
            ``tag`` members, then the fields that are not :data:`OMIT`).
    """

    channel: ClassVar[Channel]
    tag: ClassVar[tuple[tuple[str, str], ...]] = ()

    def __init_subclass__(cls, kind: bool = True, **kwargs: Any) -> None:
        """Register a concrete kind (``kind=False`` for an intermediate base like :class:`Phase`)."""
        super().__init_subclass__(**kwargs)
        if kind:
            _KINDS.setdefault(cls.channel, []).append(cls)

    @property
    def data(self) -> dict[str, Any]:
        """The payload: ``tag`` members first, then each field that is not :data:`OMIT`."""
        payload: dict[str, Any] = dict(self.tag)
        names = _FIELD_NAMES.get(type(self))
        if names is None:  # once per kind: dataclasses.fields() is slow for a per-event call
            names = _FIELD_NAMES[type(self)] = tuple(item.name for item in fields(self))
        for name in names:
            value = getattr(self, name)
            if value is not OMIT:
                payload[name] = value
        return payload

    def to_sse(self) -> str:
        """The event in Server-Sent Events wire format (:func:`to_sse`)."""
        return to_sse(self)


def to_sse(event: AgentEvent) -> str:
    """The one serializer of events to the SSE wire format of SPEC §8:
    ``event: <channel>\ndata: <json>\n\n``, the data :func:`wire_json` of
    ``event.data``, so the frame is two lines and encodes as UTF-8 whatever its strings hold.

    Args:
        event: Any typed event.

    Returns:
        The frame, ending with its blank line.
    """
    return f"event: {event.channel}\ndata: {wire_json(event.data)}\n\n"


def event_from_wire(channel: str, data: dict[str, Any]) -> AgentEvent:
    """Read an event back from its channel and payload: the kind of ``channel`` whose
    ``tag`` members ``data`` holds, built from the other members.

    Args:
        channel: An SSE channel.
        data: Its payload, as :attr:`AgentEvent.data` gives it.

    Returns:
        The typed event; ``event_from_wire(e.channel, e.data) == e`` for every event ``e``.

    Raises:
        ValueError: No kind of ``channel`` has these tag members, or the payload has a
            member the kind does not (or lacks a required one).
    """
    candidates = [kind for kind in _KINDS.get(channel, []) if all(data.get(key) == value for key, value in kind.tag)]
    if not candidates:
        raise ValueError(f"no event kind of channel {channel!r} matches {wire_json(data)[:200]}")
    kind = max(candidates, key=lambda candidate: len(candidate.tag))
    tagged = dict(kind.tag)
    try:
        return kind(**{key: value for key, value in data.items() if key not in tagged})
    except TypeError as exc:
        raise ValueError(f"a {channel!r} payload that is no {kind.__name__}: {exc}") from exc


# step channel (SPEC §8) ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ThinkingStarted(AgentEvent):
    """``step`` ``{type: "thinking", status: "start", iteration}``: a loop model call starts
    (sent again for each retry of the call)."""

    channel: ClassVar[Channel] = "step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("type", "thinking"), ("status", "start"))
    iteration: int


@dataclass(frozen=True, kw_only=True)
class ThinkingDone(AgentEvent):
    """``step`` ``{type: "thinking", status: "done", iteration, reasoning}``: the model
    answered, before any tool runs; ``reasoning`` is its stated reasoning (``""`` if none)."""

    channel: ClassVar[Channel] = "step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("type", "thinking"), ("status", "done"))
    iteration: int
    reasoning: Any


@dataclass(frozen=True, kw_only=True)
class ToolStarted(AgentEvent):
    """``step`` ``{type: "iteration", status: "start", iteration, tool_name, tool_args,
    tool_call_id}``: a tool call starts (SPEC §8 calls a tool run an iteration). Not sent for
    a call that does not run because of a person's decision (a rejection, or a repeat of a
    decided call, SPEC R13.3): only its :class:`ToolDone` is."""

    channel: ClassVar[Channel] = "step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("type", "iteration"), ("status", "start"))
    iteration: int
    tool_name: str
    tool_args: Any
    tool_call_id: str


@dataclass(frozen=True, kw_only=True)
class ToolDone(AgentEvent):
    """``step`` ``{type: "iteration", status: "done", iteration, tool_name, tool_args,
    observation, error, iter_elapsed, tool_call_id, artifact}``: a tool call finished
    (sent once the checkpointer holds its result; :func:`tool_done_event`).

    ``observation`` is cut to ``AgentSettings.observation_preview_chars``; ``error`` is
    ``None`` for a success; ``iter_elapsed`` in seconds; ``artifact`` the
    :meth:`~reactgraph.Artifact.to_dict` of a returned artifact, else ``None``. A tool
    that hands control to another graph sends it without ``tool_args``.

    A call a person decided (SPEC R13.3) also carries ``approval`` (``approved``,
    ``edited`` or ``rejected``; a rejected call's ``error`` is the person's message, not a
    tool failure), and a call that repeated one already decided this turn, answered with
    that call's outcome without asking again, ``repeat_of_decided``: the decided call's id.

    A call whose tool never ran carries ``ran: false`` (absent when it ran): the engine refused
    it before it started (an unknown tool, arguments that are not an object or repeat the
    schema, a value no one wrote under the strict policy, a repeat), a person rejected it, or
    a ``before_tool`` hook answered for it. Its ``error`` says why; nothing the tool does
    happened (SPEC R13.1)."""

    channel: ClassVar[Channel] = "step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("type", "iteration"), ("status", "done"))
    iteration: int
    tool_name: str
    tool_args: Any = OMIT
    observation: str
    error: str | None
    iter_elapsed: float
    tool_call_id: str
    artifact: dict[str, Any] | None
    approval: Any = OMIT
    repeat_of_decided: Any = OMIT
    ran: Any = OMIT


@dataclass(frozen=True, kw_only=True)
class AnswerSignalled(AgentEvent):
    """``step`` ``{type: "answer", status: "start"}``: the loop has its final answer."""

    channel: ClassVar[Channel] = "step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("type", "answer"), ("status", "start"))


# answer channel ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AnswerStarted(AgentEvent):
    """``answer`` ``{status: "start"}``: the synthesized answer starts streaming (SPEC R3.1)."""

    channel: ClassVar[Channel] = "answer"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "start"),)


@dataclass(frozen=True, kw_only=True)
class AnswerDelta(AgentEvent):
    """``answer`` ``{status: "delta", content}``: the next streamed text of the answer."""

    channel: ClassVar[Channel] = "answer"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "delta"),)
    content: str


@dataclass(frozen=True, kw_only=True)
class AnswerDone(AgentEvent):
    """``answer`` ``{status: "done"}``: the streamed answer is complete."""

    channel: ClassVar[Channel] = "answer"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "done"),)


@dataclass(frozen=True, kw_only=True)
class AnswerReset(AgentEvent):
    """``answer`` ``{status: "reset", ungrounded, factless[, problems]}``: the answer just
    streamed is withdrawn by the grounding check (``grounding="enforce"`` without
    ``grounding_check_first``) and written again: a front end clears it. ``ungrounded`` lists
    the values the tool results do not hold; ``factless`` is true when it passed on none of
    them; ``problems`` (only when there are some) what else made it unfit to show
    (:func:`reactgraph.answer.fitness.answer_problems`: ``language``, ``code_fence``,
    ``raw_data``, ``fragment``, …; :func:`reactgraph.answer.claims.claim_problems`:
    ``misattributed``)."""

    channel: ClassVar[Channel] = "answer"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "reset"),)
    ungrounded: list[str]
    factless: bool
    problems: Any = OMIT


# single-kind channels --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Compacted(AgentEvent):
    """``compact`` ``{original_messages, kept_messages}``: the context was compacted (SPEC §6)."""

    channel: ClassVar[Channel] = "compact"
    original_messages: int
    kept_messages: int


@dataclass(frozen=True, kw_only=True)
class Phase(AgentEvent, kind=False):
    """``phase`` events: a stage of the run starts. :attr:`phase` names it; the subclasses
    are its kinds."""

    channel: ClassVar[Channel] = "phase"

    @property
    def phase(self) -> str:
        """The stage: ``selecting_tools``, ``planning`` or ``analyzing``."""
        return dict(self.tag)["phase"]


@dataclass(frozen=True, kw_only=True)
class SelectingTools(Phase):
    """``phase`` ``{phase: "selecting_tools", total_tools}``: tool selection runs (SPEC §5)."""

    tag: ClassVar[tuple[tuple[str, str], ...]] = (("phase", "selecting_tools"),)
    total_tools: int


@dataclass(frozen=True, kw_only=True)
class Planning(Phase):
    """``phase`` ``{phase: "planning", round}``: DAG mode's planner runs (SPEC R9.1)."""

    tag: ClassVar[tuple[tuple[str, str], ...]] = (("phase", "planning"),)
    round: int


@dataclass(frozen=True, kw_only=True)
class Analyzing(Phase):
    """``phase`` ``{phase: "analyzing", round}``: DAG mode's analyzer runs (SPEC R9.4)."""

    tag: ClassVar[tuple[tuple[str, str], ...]] = (("phase", "analyzing"),)
    round: int


@dataclass(frozen=True, kw_only=True)
class Injected(AgentEvent):
    """``inject`` ``{type: "inject", content}``: the loop took in a follow-up (SPEC §7). In
    DAG mode also ``step_id`` when a step's own loop took it (a follow-up that names the
    step, :mod:`reactgraph.dag.followups`); without it, the plan level did."""

    channel: ClassVar[Channel] = "inject"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("type", "inject"),)
    content: str
    step_id: str = OMIT


@dataclass(frozen=True, kw_only=True)
class Stalled(AgentEvent):
    """``stall`` ``{iteration, reason}``: the loop is stuck (``repeated_call`` or
    ``no_progress``) and loop call ``iteration`` may only answer (SPEC R13.1)."""

    channel: ClassVar[Channel] = "stall"
    iteration: int
    reason: str


@dataclass(frozen=True, kw_only=True)
class RunError(AgentEvent):
    """``error`` ``{message, kind}``: the run failed (SPEC R2.7). ``kind`` is
    ``model_error`` (the model kept failing; the fallback answer and ``done`` follow),
    ``storage_error`` (the checkpointer or store failed: a database error, a value it
    refused; the fallback answer and ``done`` follow),
    ``plan_error`` (DAG mode's planner gave no usable plan), ``cancelled`` (the server's
    cancel endpoint stopped the run; the stream ends) or ``server_error`` (the
    server lost its run; the stream ends)."""

    channel: ClassVar[Channel] = "error"
    message: str
    kind: str


@dataclass(frozen=True, kw_only=True)
class ModelSwitched(AgentEvent):
    """``model_switch`` ``{previous, model, reason, call, error}``: a model call failed and
    is handed to the next fallback model (:mod:`reactgraph.engine.fallbacks`).

    Attributes:
        previous: The model that failed (its name, :func:`~reactgraph.engine.fallbacks.model_label`).
        model: The model that takes the call over.
        reason: ``transient`` (its retries spent on 429, 5xx, a timeout or a connection
            error), ``permanent`` (an error its profile marks permanent: context length,
            no such model), ``unparseable`` (JSON-mode outputs that could not be read) or
            ``breaker_open`` (its circuit breaker opened: it is skipped).
        call: The call handed over: ``loop``, ``synthesis``, ``compaction`` or ``structured``
            (tool selection, ``structured_response``).
        error: The failure, ``Type: message`` (at most 300 characters).
    """

    channel: ClassVar[Channel] = "model_switch"
    previous: str
    model: str
    reason: str
    call: str
    error: str


@dataclass(frozen=True, kw_only=True)
class ApprovalWaiting(AgentEvent):
    """``approval`` ``{type: "approval", status: "waiting", thread_id, pending}``: the run
    paused on tool calls that wait for a person's decision (SPEC R13.3); ``done`` with
    ``finish_reason: "waiting"`` follows. ``pending`` holds
    :meth:`~reactgraph.PendingCall.to_dict` of each waiting call."""

    channel: ClassVar[Channel] = "approval"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("type", "approval"), ("status", "waiting"))
    thread_id: str | None
    pending: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class Done(AgentEvent):
    """``done``: the last event of every run's stream (SPEC §8, R2.7).

    Attributes:
        answer: The answer shown (the synthesized one, or the fallback).
        iterations: Loop model calls (DAG mode: of all steps).
        usage: ``Usage.to_dict()``: input, output, total tokens and model calls.
        elapsed: Seconds, rounded to milliseconds.
        finish_reason: Why the run ended (``final_answer``, ``waiting``, ``model_error``, …).
        thread_id: The run's thread.
        grounding: ReAct mode: the grounding report, or ``None``.
        limit: ReAct mode, when a usage limit ended the loop: its figures.
        model: ReAct mode, when the agent has fallback models: the model that
            served the loop last.
        model_usage: With ``model``: usage per model (``Usage.to_dict()`` by model name),
            every model call of the run counted under the model that answered it.
        rounds, achieved, confidence: DAG mode: plan rounds and the analyzer's verdict.
        answer_source: ReAct mode under ``AgentSettings.synthesis="auto"``: which call
            wrote the answer (``loop``, ``synthesis``, ``observations``).
    """

    channel: ClassVar[Channel] = "done"
    answer: str
    iterations: int
    usage: dict[str, int]
    elapsed: float
    finish_reason: str | None
    thread_id: str | None
    grounding: Any = OMIT
    limit: Any = OMIT
    model: Any = OMIT
    model_usage: Any = OMIT
    answer_source: Any = OMIT
    rounds: Any = OMIT
    achieved: Any = OMIT
    confidence: Any = OMIT


# DAG mode (SPEC R9.5) ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PlanMade(AgentEvent):
    """``plan`` ``{round, steps, warnings}``: the planner's accepted plan of a round
    (``steps``: ``{id, task, dependencies, tool_hint, model_hint}`` each)."""

    channel: ClassVar[Channel] = "plan"
    round: int
    steps: list[dict[str, Any]]
    warnings: list[str]


@dataclass(frozen=True, kw_only=True)
class DagStepStarted(AgentEvent):
    """``dag_step`` ``{status: "started", round, step_id, task, model_role, dependencies}``."""

    channel: ClassVar[Channel] = "dag_step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "started"),)
    round: int
    step_id: str
    task: str
    model_role: str
    dependencies: list[str]


@dataclass(frozen=True, kw_only=True)
class DagStepIteration(AgentEvent):
    """``dag_step`` ``{status: "iteration", round, step_id, iteration}``: a step's loop
    makes a model call."""

    channel: ClassVar[Channel] = "dag_step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "iteration"),)
    round: int
    step_id: str
    iteration: int | None


@dataclass(frozen=True, kw_only=True)
class DagStepToolStarted(AgentEvent):
    """``dag_step`` ``{status: "tool_started", round, step_id, iteration, tool_name,
    tool_args, tool_call_id}``: a step's tool call starts (its loop's:
    class:`ToolStarted`, named by its step; The page's and AG-UI's tool cards
    per step). ``tool_call_id`` is the step loop's own: unique within the step, not
    across steps (steps on one model may reuse a provider's ids)."""

    channel: ClassVar[Channel] = "dag_step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "tool_started"),)
    round: int
    step_id: str
    iteration: int | None
    tool_name: str | None
    tool_args: Any
    tool_call_id: str | None


@dataclass(frozen=True, kw_only=True)
class DagStepTool(AgentEvent):
    """``dag_step`` ``{status: "tool", round, step_id, iteration, tool_name, observation,
    error, iter_elapsed, tool_call_id?, tool_args?}``: a step's tool call finished
    (``tool_call_id`` and ``tool_args`` as in its :class:`DagStepToolStarted`)."""

    channel: ClassVar[Channel] = "dag_step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "tool"),)
    round: int
    step_id: str
    iteration: int | None
    tool_name: str | None
    observation: str | None
    error: str | None
    iter_elapsed: float | None
    tool_call_id: Any = OMIT
    tool_args: Any = OMIT


@dataclass(frozen=True, kw_only=True)
class DagStepCompleted(AgentEvent):
    """``dag_step`` ``{status: "completed", round, step_id, ok, error, elapsed, iterations,
    model_role, result}``: a step ended; ``result`` (cut) is left out for a step that
    never ran because a dependency failed."""

    channel: ClassVar[Channel] = "dag_step"
    tag: ClassVar[tuple[tuple[str, str], ...]] = (("status", "completed"),)
    round: int
    step_id: str
    ok: bool
    error: str | None
    elapsed: float
    iterations: int
    model_role: str | None
    result: str = OMIT


@dataclass(frozen=True, kw_only=True)
class Analysis(AgentEvent):
    """``analysis`` ``{round, achieved, confidence, reasoning, final_answer, replan}``: the
    analyzer's verdict on a round (SPEC R9.4)."""

    channel: ClassVar[Channel] = "analysis"
    round: int
    achieved: bool
    confidence: float
    reasoning: str
    final_answer: str
    replan: bool
