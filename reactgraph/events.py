"""The event protocol of SPEC §8: the typed events of a run, their one serializer to the
SSE wire format, and the one mapping from the graph's stream to events, used by the agent
facades, the CLI, the server and its AG-UI adapter.

Each kind of event is a frozen dataclass here, a subclass of :class:`AgentEvent` (one per
kind: :class:`ToolStarted`, :class:`AnswerDelta`, :class:`Done`, …; the table is in
``docs/events.md``). Nodes report progress with :func:`emit`, which writes an event to
LangGraph's custom stream; ``ReActAgent.astream_events`` and ``DAGAgent.astream_events``
yield the typed events; :func:`to_sse` (``event.to_sse()``) is their wire form
``event: <channel>\\ndata: <json>\\n\\n``, byte for byte as SPEC §8 gives it, and
:func:`event_from_wire` reads a payload back.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
from collections.abc import Callable, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER  # how a task sees its checkpointer
from langgraph.config import get_config, get_stream_writer

from reactgraph.graph.names import EXECUTE_TOOLS
from reactgraph.protocol.jsonparse import safe_json
from reactgraph.engine.state import StepRecord

Channel = Literal[
    "step", "answer", "compact", "phase", "inject", "stall", "error", "done", "plan", "dag_step", "analysis",
    "approval", "model_switch",
]
"""Event channels: the SPEC §8 ones, ``stall`` when the loop is stuck and the next call may
only answer (``{iteration, reason}``, SPEC R13.1), ``error`` for a run that failed (R2.7),
``approval`` for a run paused on tool calls that wait for a person's decision (R13.3),
``model_switch`` when a call is handed to a fallback model, and DAG mode's
``plan``, ``dag_step`` and ``analysis`` (SPEC R9.5; payloads in ``docs/events.md``)."""

_MARK = "reactgraph_event"

_LINE_BREAKING = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")
"""Characters JSON may leave raw that break a wire: U+0085, U+2028 and U+2029 end a line
for line-splitting clients (Python's ``str.splitlines``, httpx ``iter_lines``), and lone
surrogates cannot be encoded as UTF-8 at all."""


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float (nested in dicts and lists) made ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def wire_safe(json_text: str) -> str:
    """JSON text with every U+0085, U+2028, U+2029 and lone surrogate written as a
    ``\\uXXXX`` escape: the one escaping rule of every event encoder (this module's SSE
    frames, the AG-UI endpoint's). These characters can only stand inside JSON
    strings, where the escape reads back as the same string; the result is one line for
    every line-splitting client and always encodes as UTF-8.

    Args:
        json_text: JSON text, as any encoder wrote it.

    Returns:
        The same JSON value, safe on any wire.
    """
    return _LINE_BREAKING.sub(lambda match: f"\\u{ord(match.group()):04x}", json_text)


def wire_json(value: Any) -> str:
    """``value`` as one line of standard JSON that is safe on any wire (SSE ``data:``
    lines, HTTP error bodies), whatever strings a tool or model produced.

    Non-ASCII text is kept as is, except U+0085, U+2028, U+2029 and lone surrogates,
    which are written as ``\\uXXXX`` escapes (a JSON parser reads back the same string;
    the UTF-8 encoding of the result never fails). NaN and infinities become ``null``;
    objects JSON cannot encode go through ``str``. Never raises.

    Args:
        value: Any JSON-like value.

    Returns:
        The JSON text, without line breaks.
    """
    dumps = {"ensure_ascii": False, "allow_nan": False, "default": str}
    try:
        text = json.dumps(value, **dumps)
    except (ValueError, TypeError, RecursionError, OverflowError):
        try:
            text = json.dumps(_finite(value), **dumps)
        except (ValueError, TypeError, RecursionError, OverflowError):
            text = json.dumps(safe_json(value), **dumps)
    return wire_safe(text)


class _Omitted:
    """The type of :data:`OMIT`."""

    _instance: _Omitted | None = None

    def __new__(cls) -> _Omitted:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OMIT"

    def __bool__(self) -> bool:
        return False


OMIT: Any = _Omitted()
"""The default of an event field that a payload leaves out when it is not given (e.g.
``Done.limit`` of a run no limit stopped, ``DagStepCompleted.result`` of a step that never
ran): the wire form has no such member at all, which is not the same as ``null``."""

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
    that call's outcome without asking again, ``repeat_of_decided``: the decided call's id."""

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
    (:func:`reactgraph.answer.grounding.answer_problems`: ``language``, ``code_fence``, …)."""

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


EVENTS_KEY = "reactgraph_events"
"""The ``configurable`` key that puts the engine's events on a run's custom stream.

LangGraph's ``stream_mode="custom"`` belongs to the user: what their tools write with
``get_stream_writer()`` is all it yields by default, as under LangGraph's prebuilt agent.
The engine's own events (SPEC §8) go there, each as ``{"reactgraph_event": channel, "data":
payload}``, only in a run whose config says ``{"configurable": {"reactgraph_events": True}}``:
:func:`graph_events` (so the agents' ``astream_events``, the server's SSE and AG-UI streams
and the command line) sets it for its runs; a graph user asks with
``create_react_graph(..., custom_events=True)`` (:func:`with_custom_events`) or per run."""


def with_custom_events(graph: Any) -> Any:
    """``graph`` (a compiled graph) with the engine's events on the custom stream of every
    run (:data:`EVENTS_KEY`), a copy: the graph itself is unchanged."""
    return graph.with_config(configurable={EVENTS_KEY: True})


_recorder: Callable[[AgentEvent], None] | None = None
"""Who hears every emitted event besides the run's stream: the observability layer sets it
(:func:`set_recorder`) when it is imported, so this module imports nothing above it."""


def set_recorder(recorder: Callable[[AgentEvent], None] | None) -> None:
    """Hand every event :func:`emit` sends to ``recorder`` too (``None``: to nobody).
    :mod:`reactgraph.observability` sets its recorder, which records an event only while
    :func:`~reactgraph.observability.instrument` is on."""
    global _recorder
    _recorder = recorder


def emit(event: AgentEvent) -> None:
    """Send an event from inside a graph node through LangGraph's custom stream (as its
    channel and payload, so the stream stays plain JSON for any consumer; :func:`as_agent_event`
    reads it back), in a run that asked for the engine's events (:data:`EVENTS_KEY`); the
    observer (observability) hears every event either way.

    Outside a streaming run (plain ``invoke``) the write is dropped; outside any run it
    is a no-op as well, so nodes can call it unconditionally.
    """
    if _recorder is not None:
        _recorder(event)
    try:
        config = get_config()
        writer = get_stream_writer()
    except RuntimeError:  # not inside a runnable context
        return
    if (config.get("configurable") or {}).get(EVENTS_KEY):
        writer({_MARK: event.channel, "data": event.data})


INTERRUPT_KEY = "__interrupt__"
"""The key of the interrupts a paused run's ``values``/``updates`` chunk and ``invoke``
result carry (LangGraph's stream protocol)."""

TOOL_NODE = EXECUTE_TOOLS
"""The graph node that runs one tool call; its saved update carries the call's step record."""


def tool_done_event(record: StepRecord, preview_chars: int) -> ToolDone:
    """The ``step`` ``iteration``/``done`` event of SPEC §8 for one finished tool call.

    It is made from the call's step record as LangGraph streams the tool node's update,
    and :func:`graph_events` sends it once the checkpointer holds that update: a consumer
    that stops right after this event (a client disconnect, a ``kill -9``) cannot make
    the finished tool run again on resume (SPEC R13.5).

    Args:
        record: A step record (``iteration``, ``tool_call_id``, ``tool_name``,
            ``tool_args``, ``observation``, ``error``, ``elapsed`` in seconds, ``artifact``).
        preview_chars: Characters of the observation the event carries.

    Returns:
        The :class:`ToolDone` event.
    """
    return ToolDone(
        iteration=record.get("iteration"), tool_name=record.get("tool_name"), tool_args=record.get("tool_args"),
        observation=str(record.get("observation") or "")[:preview_chars], error=record.get("error"),
        iter_elapsed=round(float(record.get("elapsed") or 0.0), 4), tool_call_id=record.get("tool_call_id"),
        artifact=record.get("artifact"), approval=record.get("approval") or OMIT,
        repeat_of_decided=record.get("repeat_of_decided") or OMIT,
    )


def as_agent_event(chunk: Any) -> AgentEvent | None:
    """Turn one item of the graph's ``custom`` stream into an :class:`AgentEvent`;
    ``None`` for custom writes that are not engine events (e.g. a user's tool)."""
    if isinstance(chunk, dict) and _MARK in chunk:
        return event_from_wire(chunk[_MARK], dict(chunk.get("data") or {}))
    return None


SAVED_WAIT_SECONDS = 5.0
"""Most seconds :func:`graph_events` waits for a finished tool's result to reach the
checkpointer before it reports the tool ``done`` anyway."""


async def _result_saved(graph: Any, config: Any, tool_call_id: Any) -> None:
    """Wait until the checkpointer holds the result of ``tool_call_id``: among the pending
    writes of the newest checkpoint or of the one before it (once the step's checkpoint
    is made). LangGraph hands a finished task's writes to the checkpointer in the
    background and streams the update at once; a process killed in between would lose a
    result its client was told about. A checkpointer of
    :func:`~reactgraph.open_persistence` answers from memory (``committed_write``; it
    commits the result then if it was holding it); another, or one that no longer
    remembers, is read. No checkpointer, or no ``thread_id``: returns at once.

    A graph compiled without a checkpointer that runs as a subgraph (a DAG step's loop) uses
    its parent's, which LangGraph hands it in the config: that one is asked (the
    step's tool results were reported before they were stored, and a kill right after a
    step's end ran its last tool again on resume)."""
    saver = getattr(graph, "checkpointer", None)
    configurable = (config or {}).get("configurable") or {}
    if not hasattr(saver, "aget_tuple"):
        saver = configurable.get(CONFIG_KEY_CHECKPOINTER)
    thread_id = configurable.get("thread_id")
    if not hasattr(saver, "aget_tuple") or thread_id is None:
        return
    target = {"configurable": {"thread_id": thread_id, "checkpoint_ns": configurable.get("checkpoint_ns", "")}}
    committed = getattr(saver, "committed_write", None)

    def carries(channel: str, value: Any) -> bool:
        return channel == "steps" and any(isinstance(record, dict) and record.get("tool_call_id") == tool_call_id
                                          for record in value or [])

    deadline = asyncio.get_running_loop().time() + SAVED_WAIT_SECONDS
    for attempt in itertools.count():
        if committed is not None and await committed(target, carries):
            return
        if committed is None or attempt > 0:  # a saver that remembers gets one turn of the loop to be handed it
            # The record is a pending write of the checkpoint the tool ran from: the newest,
            # or the one before it once the step's own checkpoint is made (``steps`` is a
            # DeltaChannel: a checkpoint does not carry the records themselves).
            saved = await saver.aget_tuple(target)
            for _ in range(2):
                if saved is None:
                    break
                if any(carries(channel, value) for _task, channel, value in saved.pending_writes or ()):
                    return
                saved = None if saved.parent_config is None else await saver.aget_tuple(saved.parent_config)
        if asyncio.get_running_loop().time() > deadline:
            return
        await asyncio.sleep(0.002 if attempt else 0)


async def graph_events(
    graph: Any, graph_input: Any, config: Any, state_out: dict[str, Any], *, preview_chars: int = 4000,
    **options: Any
) -> AsyncIterator[AgentEvent]:
    """Run ``graph.astream`` and yield its engine events, keeping its latest state.

    Args:
        graph: A compiled graph.
        graph_input: Its input (``None`` resumes from the checkpoint).
        config: The run's RunnableConfig.
        state_out: Updated in place with each ``values`` chunk, so the caller has the last
            state even when the stream raises; once a chunk carried ``__interrupt__`` (a
            task called ``interrupt()``), the key stays.
        preview_chars: Observation characters in each tool's ``done`` event
            (``AgentSettings.observation_preview_chars``).
        options: More ``astream`` options (``stream_mode`` must include ``values``;
            default ``["custom", "updates", "values"]``). The run's config asks for the
            engine's events (:data:`EVENTS_KEY`).

    Yields:
        The :class:`AgentEvent` of each engine write to the custom stream, and a tool's
        ``iteration``/``done`` event (:func:`tool_done_event`) from the tool node's
        update when ``updates`` is streamed, once the checkpointer (if any) holds it (at
        most :data:`SAVED_WAIT_SECONDS` later). On resume, the tool calls whose results the
        interrupted run had saved get their ``done`` event again (without ``start``).

    Raises:
        Whatever the graph raises. The stream is closed when the consumer stops early (a
        client disconnect), which cancels the run at once.
    """
    options.setdefault("stream_mode", ["custom", "updates", "values"])
    config = {**(config or {}), "configurable": {**((config or {}).get("configurable") or {}), EVENTS_KEY: True}}
    async with aclosing(graph.astream(graph_input, config, **options)) as stream:
        async for mode, chunk in stream:
            if mode == "values":
                interrupted = state_out.get(INTERRUPT_KEY)
                state_out.clear()
                state_out.update(chunk)
                if interrupted is not None:
                    state_out.setdefault(INTERRUPT_KEY, interrupted)
                continue
            if mode == "updates":
                update = chunk.get(TOOL_NODE) if isinstance(chunk, dict) else None
                parts = update if isinstance(update, list) else [update]  # a tool's Commands: one part each
                records = [record for part in parts if isinstance(part, dict) for record in part.get("steps") or []]
                for record in records:
                    if options.get("durability") != "exit":
                        await _result_saved(graph, config, record.get("tool_call_id"))
                    yield tool_done_event(record, preview_chars)
                continue
            event = as_agent_event(chunk)
            if event is not None:
                yield event
