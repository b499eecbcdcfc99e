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

The package keeps one concern per module: :mod:`~reactgraph.events.types` (the event
classes and their SSE form), :mod:`~reactgraph.events.wire` (the wire's JSON) and
:mod:`~reactgraph.events.stream` (the graph adapter: :func:`emit`, :func:`graph_events`);
every name is importable from ``reactgraph.events`` itself.
"""

from __future__ import annotations

from reactgraph.events.stream import (
    as_agent_event,
    emit,
    EVENTS_KEY,
    graph_events,
    INTERRUPT_KEY,
    SAVED_WAIT_SECONDS,
    set_recorder,
    tool_done_event,
    TOOL_NODE,
    with_custom_events,
)
from reactgraph.events.types import (
    AgentEvent,
    Analysis,
    Analyzing,
    AnswerDelta,
    AnswerDone,
    AnswerReset,
    AnswerSignalled,
    AnswerStarted,
    ApprovalWaiting,
    Channel,
    Compacted,
    DagStepCompleted,
    DagStepIteration,
    DagStepStarted,
    DagStepTool,
    DagStepToolStarted,
    Done,
    event_from_wire,
    Injected,
    ModelSwitched,
    Phase,
    PlanMade,
    Planning,
    RunError,
    SelectingTools,
    Stalled,
    ThinkingDone,
    ThinkingStarted,
    to_sse,
    ToolDone,
    ToolStarted,
)
from reactgraph.events.wire import (
    OMIT,
    wire_json,
    wire_safe,
)

for _kind in (AgentEvent, *(value for value in tuple(globals().values())
                            if isinstance(value, type) and issubclass(value, AgentEvent))):
    _kind.__module__ = __name__  # the events' public home, as their reprs and pickles name it
del _kind

__all__ = [
    "AgentEvent",
    "Analysis",
    "Analyzing",
    "AnswerDelta",
    "AnswerDone",
    "AnswerReset",
    "AnswerSignalled",
    "AnswerStarted",
    "ApprovalWaiting",
    "Channel",
    "Compacted",
    "DagStepCompleted",
    "DagStepIteration",
    "DagStepStarted",
    "DagStepTool",
    "DagStepToolStarted",
    "Done",
    "EVENTS_KEY",
    "INTERRUPT_KEY",
    "Injected",
    "ModelSwitched",
    "OMIT",
    "Phase",
    "PlanMade",
    "Planning",
    "RunError",
    "SAVED_WAIT_SECONDS",
    "SelectingTools",
    "Stalled",
    "TOOL_NODE",
    "ThinkingDone",
    "ThinkingStarted",
    "ToolDone",
    "ToolStarted",
    "as_agent_event",
    "emit",
    "event_from_wire",
    "graph_events",
    "set_recorder",
    "to_sse",
    "tool_done_event",
    "wire_json",
    "wire_safe",
    "with_custom_events",
]
