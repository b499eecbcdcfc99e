"""The graph adapter of the events: nodes write events to LangGraph's custom stream
(:func:`emit`, only in a run that asks for them: :data:`EVENTS_KEY`), and the one mapping
from a graph's stream to typed events (:func:`graph_events`, :func:`as_agent_event`)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, AsyncIterator
from contextlib import aclosing
from typing import Any

from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER  # how a task sees its checkpointer
from langgraph.config import get_config, get_stream_writer

from reactgraph.engine.state import StepRecord
from reactgraph.events.types import AgentEvent, ToolDone, event_from_wire
from reactgraph.events.wire import OMIT
from reactgraph.graph.names import EXECUTE_TOOLS

_MARK = "reactgraph_event"

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
    except RuntimeError:  # not inside a runnable context
        return
    if (config.get("configurable") or {}).get(EVENTS_KEY):  # the writer looked up only for a run that reads it
        get_stream_writer()({_MARK: event.channel, "data": event.data})


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
            ``tool_args``, ``observation``, ``error``, ``elapsed`` in seconds, ``artifact``,
            ``ran``: ``False`` for a call whose tool never ran).
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
        ran=OMIT if record.get("ran", True) else False,
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
