"""The event protocol of SPEC §8: one mapping from the graph's stream to events, used
by the agent facade, the CLI and the server.

Nodes report progress with :func:`emit`, which writes to LangGraph's custom stream;
:class:`AgentEvent` is what callers of ``ReActAgent.astream_events`` receive, and
:meth:`AgentEvent.to_sse` its wire form (``event: <channel>\\ndata: <json>\\n\\n``).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.config import get_stream_writer

from reactgraph.jsonparse import safe_json

Channel = Literal[
    "step", "answer", "compact", "phase", "inject", "stall", "error", "done", "plan", "dag_step", "analysis",
    "approval",
]
"""Event channels: the SPEC §8 ones, ``stall`` when the loop is stuck and the next call may
only answer (``{iteration, reason}``, SPEC R13.1), ``error`` for a run that failed (R2.7),
``approval`` for a run paused on tool calls that wait for a person's decision (R13.3), and DAG mode's
``plan``, ``dag_step`` and ``analysis`` (SPEC R9.5; payloads in the README's events table)."""

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


def wire_json(value: Any) -> str:
    """``value`` as one line of standard JSON that is safe on any wire (SSE ``data:``
    lines, HTTP error bodies), whatever strings a tool or model produced (issue 15).

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
    return _LINE_BREAKING.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


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
        """The event in Server-Sent Events wire format; the data is :func:`wire_json`, so
        the frame is two lines and encodes as UTF-8 whatever its strings hold."""
        return f"event: {self.channel}\ndata: {wire_json(self.data)}\n\n"


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


TOOL_NODE = "execute_tools"
"""The graph node that runs one tool call; its saved update carries the call's step record."""


def tool_done_event(record: dict[str, Any], preview_chars: int) -> AgentEvent:
    """The ``step`` ``iteration``/``done`` event of SPEC §8 for one finished tool call.

    It is made from the call's step record as LangGraph streams the tool node's update,
    and :func:`graph_events` sends it once the checkpointer holds that update: a consumer
    that stops right after this event (a client disconnect, a ``kill -9``) cannot make
    the finished tool run again on resume (issue 15, SPEC R13.5).

    Args:
        record: A step record (``iteration``, ``tool_call_id``, ``tool_name``,
            ``tool_args``, ``observation``, ``error``, ``elapsed`` in seconds, ``artifact``).
        preview_chars: Characters of the observation the event carries.

    Returns:
        ``AgentEvent("step", {type: "iteration", status: "done", iteration, tool_name,
        tool_args, observation, error, iter_elapsed, tool_call_id, artifact})``.
    """
    return AgentEvent("step", {
        "type": "iteration", "status": "done", "iteration": record.get("iteration"),
        "tool_name": record.get("tool_name"), "tool_args": record.get("tool_args"),
        "observation": str(record.get("observation") or "")[:preview_chars], "error": record.get("error"),
        "iter_elapsed": round(float(record.get("elapsed") or 0.0), 4), "tool_call_id": record.get("tool_call_id"),
        "artifact": record.get("artifact"),
    })


def as_agent_event(chunk: Any) -> AgentEvent | None:
    """Turn one item of the graph's ``custom`` stream into an :class:`AgentEvent`;
    ``None`` for custom writes that are not engine events (e.g. a user's tool)."""
    if isinstance(chunk, dict) and _MARK in chunk:
        return AgentEvent(chunk[_MARK], dict(chunk.get("data") or {}))
    return None


SAVED_WAIT_SECONDS = 5.0
"""Most seconds :func:`graph_events` waits for a finished tool's result to reach the
checkpointer before it reports the tool ``done`` anyway."""


async def _result_saved(graph: Any, config: Any, tool_call_id: Any) -> None:
    """Wait until the checkpointer holds the result of ``tool_call_id``: among the newest
    checkpoint's pending writes, or in its ``steps`` once the step is committed. LangGraph
    hands a finished task's writes to the checkpointer in the background and streams the
    update at once; a process killed in between would lose a result its client was told
    about. No checkpointer, or no ``thread_id``: returns at once."""
    saver = getattr(graph, "checkpointer", None)
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if not hasattr(saver, "aget_tuple") or thread_id is None:
        return
    target = {"configurable": {"thread_id": thread_id, "checkpoint_ns": configurable.get("checkpoint_ns", "")}}
    deadline = asyncio.get_running_loop().time() + SAVED_WAIT_SECONDS
    while True:
        saved = await saver.aget_tuple(target)
        if saved is not None:
            records = list(saved.checkpoint.get("channel_values", {}).get("steps") or [])
            records += [record for _task, channel, value in saved.pending_writes or [] if channel == "steps"
                        for record in (value or [])]
            if any(isinstance(record, dict) and record.get("tool_call_id") == tool_call_id for record in records):
                return
        if asyncio.get_running_loop().time() > deadline:
            return
        await asyncio.sleep(0.002)


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
            state even when the stream raises.
        preview_chars: Observation characters in each tool's ``done`` event
            (``AgentSettings.observation_preview_chars``).
        options: More ``astream`` options (``stream_mode`` must include ``values``;
            default ``["custom", "updates", "values"]``).

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
    async with aclosing(graph.astream(graph_input, config, **options)) as stream:
        async for mode, chunk in stream:
            if mode == "values":
                state_out.clear()
                state_out.update(chunk)
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
