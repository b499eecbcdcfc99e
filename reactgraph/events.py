"""The event protocol of SPEC §8: one mapping from the graph's stream to events, used
by the agent facade, the CLI and the server.

Nodes report progress with :func:`emit`, which writes to LangGraph's custom stream;
:class:`AgentEvent` is what callers of ``ReActAgent.astream_events`` receive, and
:meth:`AgentEvent.to_sse` its wire form (``event: <channel>\\ndata: <json>\\n\\n``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.config import get_stream_writer

from reactgraph.jsonparse import safe_json

Channel = Literal[
    "step", "answer", "compact", "phase", "inject", "stall", "error", "done", "plan", "dag_step", "analysis"
]
"""Event channels: the SPEC §8 ones, ``stall`` when the loop is stuck and the next call may
only answer (``{iteration, reason}``, SPEC R13.1), ``error`` for a run that failed (R2.7), and DAG mode's
``plan``, ``dag_step`` and ``analysis`` (SPEC R9.5; payloads in the README's events table)."""

_MARK = "reactgraph_event"


@dataclass(frozen=True)
class AgentEvent:
    """One event of a run.

    Attributes:
        channel: The SSE channel (``step``, ``answer``, ``compact``, ``phase``, ``inject``,
            ``error``, ``done``; in DAG mode also ``plan``, ``dag_step``, ``analysis``).
        data: The JSON payload, exactly as SPEC §8 gives it for the channel.
    """

    channel: Channel
    data: dict[str, Any] = field(default_factory=dict)

    def to_sse(self) -> str:
        """The event in Server-Sent Events wire format (non-ASCII text kept as is)."""
        return f"event: {self.channel}\ndata: {safe_json(self.data)}\n\n"


def emit(channel: Channel, **data: Any) -> None:
    """Send an event from inside a graph node through LangGraph's custom stream.

    Outside a streaming run (plain ``invoke``) the write is dropped; outside any run it
    is a no-op as well, so nodes can call it unconditionally.
    """
    try:
        writer = get_stream_writer()
    except RuntimeError:  # not inside a runnable context
        return
    writer({_MARK: channel, "data": data})


def as_agent_event(chunk: Any) -> AgentEvent | None:
    """Turn one item of the graph's ``custom`` stream into an :class:`AgentEvent`;
    ``None`` for custom writes that are not engine events (e.g. a user's tool)."""
    if isinstance(chunk, dict) and _MARK in chunk:
        return AgentEvent(chunk[_MARK], dict(chunk.get("data") or {}))
    return None


async def graph_events(
    graph: Any, graph_input: Any, config: Any, state_out: dict[str, Any], **options: Any
) -> AsyncIterator[AgentEvent]:
    """Run ``graph.astream`` and yield its engine events, keeping its latest state.

    Args:
        graph: A compiled graph.
        graph_input: Its input (``None`` resumes from the checkpoint).
        config: The run's RunnableConfig.
        state_out: Updated in place with each ``values`` chunk, so the caller has the last
            state even when the stream raises.
        options: More ``astream`` options (``stream_mode`` must include ``values``;
            default ``["custom", "values"]``).

    Yields:
        The :class:`AgentEvent` of each engine write to the custom stream.

    Raises:
        Whatever the graph raises. The stream is closed when the consumer stops early (a
        client disconnect), which cancels the run at once.
    """
    options.setdefault("stream_mode", ["custom", "values"])
    async with aclosing(graph.astream(graph_input, config, **options)) as stream:
        async for mode, chunk in stream:
            if mode == "values":
                state_out.clear()
                state_out.update(chunk)
                continue
            event = as_agent_event(chunk)
            if event is not None:
                yield event
