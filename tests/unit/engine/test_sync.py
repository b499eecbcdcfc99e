"""Sync and async runs of the same scripted scenarios (SPEC R10.1, :mod:`reactgraph.engine.dualmode`).

Each scenario runs twice through the compiled graph: with ``stream`` (sync) and with
``astream`` (async), both with ``stream_mode=["custom", "values"]``. The two runs must give
the same events and the same final state, and each must reach the model only through its
own API family (``invoke``/``stream`` in sync runs, ``ainvoke``/``astream`` in async runs).
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.config import get_config

from reactgraph import AgentSettings, InMemoryInterruptQueue, create_react_graph
from reactgraph.engine.dualmode import SyncRunError, run_sync
from reactgraph.events import EVENTS_KEY, as_agent_event
from reactgraph.protocol.prompts import REFORMAT_REQUEST
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import JSON_MODE, NATIVE, SMALL, log_calls, read_log

SYNC_APIS = {"generate", "stream"}
ASYNC_APIS = {"agenerate", "astream"}


def run_graph(graph, mode: str, messages, config=None):
    """Run ``graph`` sync or async, asking for the engine's events on the custom stream;
    return (events as (channel, data), final state)."""
    events, state = [], {}
    config = {**(config or {}), "configurable": {**((config or {}).get("configurable") or {}), EVENTS_KEY: True}}

    def take(kind, chunk):
        nonlocal state
        if kind == "values":
            state = chunk
        elif (event := as_agent_event(chunk)) is not None:
            events.append((event.channel, event.data))

    if mode == "sync":
        for kind, chunk in graph.stream({"messages": messages}, config, stream_mode=["custom", "values"]):
            take(kind, chunk)
    else:
        async def consume():
            async for kind, chunk in graph.astream({"messages": messages}, config, stream_mode=["custom", "values"]):
                take(kind, chunk)

        asyncio.run(consume())
    return events, state


def without_timing(events):
    """Events without what differs between any two runs: elapsed time, generated call ids."""
    return [(channel, {k: v for k, v in data.items() if k not in ("iter_elapsed", "tool_call_id")}) for channel, data in events]


def both_modes(make_model, tools, messages, **graph_kwargs):
    """Run the scenario in both modes on fresh models; check they agree; return the async
    run's (events, state, model). The graph has the seed's two phases (``synthesis="always"``)
    unless ``graph_kwargs`` set ``settings``."""
    graph_kwargs.setdefault("settings", AgentSettings(synthesis="always"))
    runs = {}
    for mode in ("sync", "async"):
        model = make_model()
        graph = create_react_graph(model, tools, **graph_kwargs)
        events, state = run_graph(graph, mode, messages)
        assert set(model.apis) <= (SYNC_APIS if mode == "sync" else ASYNC_APIS), model.apis
        runs[mode] = (events, state, model)
    sync_events, sync_state, _ = runs["sync"]
    async_events, async_state, _ = runs["async"]
    assert sorted(map(json.dumps, without_timing(sync_events))) == sorted(map(json.dumps, without_timing(async_events)))
    for key in ("answer", "synthesis", "finish_reason", "iteration", "usage", "mode", "selected_tools"):
        assert sync_state.get(key) == async_state.get(key), key
    assert [(m.type, m.content) for m in sync_state["messages"]] == [(m.type, m.content) for m in async_state["messages"]]
    return runs["async"]


def test_native_parallel_calls_errors_and_timeouts_agree(tools, fast_settings):
    def make():
        return ScriptedChatModel(
            responses=[AIMessage(content="", tool_calls=[
                tool_call("get_status", {"equipment_id": "CNC-003"}, "c1"),
                tool_call("broken", {"x": 1}, "c2"),
                tool_call("hangs", {"x": 2}, "c3"),       # async-only tool, past the timeout
                tool_call("slow_sync", {"x": 3}, "c4"),   # sync tool, past the timeout
                tool_call("nope", {}, "c5"),
            ]), "CNC-003 is normal."],
            synthesis="CNC-003 runs normally.",
        )

    events, state, _ = both_modes(make, tools, [HumanMessage("q")], abilities=NATIVE, settings=fast_settings)
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == ["c1", "c2", "c3", "c4", "c5"]
    errors = {step["tool_name"]: step["error"] for step in state["steps"]}
    assert errors["get_status"] is None
    assert errors["broken"] == "RuntimeError: sensor bus offline for 1"
    assert errors["hangs"] == errors["slow_sync"].replace("slow_sync", "hangs") == "tool 'hangs' timed out after 0.3 seconds"
    assert errors["nope"].startswith("unknown tool 'nope'")
    assert state["answer"] == "CNC-003 is normal." and state["synthesis"] == "CNC-003 runs normally."
    deltas = [data["content"] for channel, data in events if channel == "answer" and data["status"] == "delta"]
    assert "".join(deltas) == "CNC-003 runs normally." and len(deltas) == 3


def test_json_mode_tool_call_reformat_and_final_agree(tools):
    def make():
        return ScriptedChatModel(responses=[
            json.dumps({"type": "tool_call", "reasoning": "look", "tool_name": "get_status", "tool_args": {"equipment_id": "A"}}),
            "no json here",
            json.dumps({"type": "final_answer", "reasoning": "done", "answer": "A is normal."}),
        ], synthesis="A runs normally.")

    events, state, model = both_modes(make, tools, [HumanMessage("q")], abilities=JSON_MODE)
    assert state["mode"] == "json" and state["iteration"] == 3
    assert state["answer"] == "A is normal." and state["synthesis"] == "A runs normally."
    assert state["steps"][0]["observation"] == "A: normal"
    assert any(isinstance(m, HumanMessage) and m.content == REFORMAT_REQUEST for m in state["messages"])
    assert model.call_kwargs[0]["response_format"] == {"type": "json_object"}


def test_synthesis_failure_midway_falls_back_in_both_modes(tools):
    def make():
        return ScriptedChatModel(responses=["Loop answer."], synthesis="one two three FAIL_MIDWAY four")

    events, state, _ = both_modes(make, tools, [HumanMessage("q")], abilities=NATIVE)
    assert state["synthesis"] == "one two \n\nLoop answer."
    assert events[-1] == ("answer", {"status": "done"})


def test_tool_selection_and_compaction_run_sync():
    many = [StructuredTool.from_function(lambda machine_id, i=i: f"{i} {machine_id}", name=f"tool_{i:02d}",
                                         description=f"Reads connector {i}.") for i in range(13)]

    def make_selecting():
        selection = AIMessage(content="", tool_calls=[{"name": "select_tools", "args": {"tools": ["tool_03"]},
                                                       "id": "s1", "type": "tool_call"}])
        return ScriptedChatModel(responses=[selection, "done"])

    events, state, _ = both_modes(make_selecting, many, [HumanMessage("q")], abilities=NATIVE,
                                  settings=AgentSettings(synthesis="always", tool_selection=True))
    assert state["selected_tools"] == ["tool_03"]
    assert ("phase", {"phase": "selecting_tools", "total_tools": 13}) in events

    def make_compacting():
        return ScriptedChatModel(responses=[*log_calls(4), "CNC-003 정상"])

    summarizer_calls = {}
    for mode in ("sync", "async"):
        summarizer = ScriptedChatModel(responses=["요약: 로그 확인됨."], repeat_last=True)
        graph = create_react_graph(make_compacting(), [read_log], abilities=SMALL, compaction_llm=summarizer)
        events, state = run_graph(graph, mode, [HumanMessage("CNC-003 상태 확인해줘")])
        assert any(channel == "compact" for channel, _ in events)
        assert state["finish_reason"] == "final_answer"
        summarizer_calls[mode] = set(summarizer.apis)
    assert summarizer_calls == {"sync": {"generate"}, "async": {"agenerate"}}


def test_sync_invoke_and_batch_use_only_sync_model_calls(tools):
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "c1")]),
                                         "A is fine."], synthesis="A is fine indeed.")
    graph = create_react_graph(model, tools, abilities=NATIVE, settings=AgentSettings(synthesis="always"))
    state = graph.invoke({"messages": [HumanMessage("q")]})
    assert state["synthesis"] == "A is fine indeed." and state["steps"][0]["observation"] == "A: normal"
    assert model.apis == ["generate", "generate", "stream"]
    batch_model = ScriptedChatModel(responses=["first", "second"])
    batch_graph = create_react_graph(batch_model, tools, abilities=NATIVE, settings=AgentSettings(synthesis="always"))
    outputs = batch_graph.batch(
        [{"messages": [HumanMessage("a")]}, {"messages": [HumanMessage("b")]}], {"configurable": {"synthesize": False}},
    )
    assert sorted(out["answer"] for out in outputs) == ["first", "second"]
    assert set(batch_model.apis) == {"generate"}


def test_a_sync_tool_runs_in_a_worker_thread_and_sees_the_run_config():
    seen = {}

    @tool
    def where(x: int) -> str:
        """Report the thread."""
        seen["thread"] = threading.current_thread()
        seen["thread_id"] = get_config()["configurable"].get("thread_id")
        return "here"

    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("where", {"x": 1}, "c1")]), "ok"])
    create_react_graph(model, [where], abilities=NATIVE).invoke(
        {"messages": [HumanMessage("q")]}, {"configurable": {"synthesize": False, "thread_id": "t-sync"}})
    assert seen["thread"] is not threading.main_thread()  # off the caller's thread, under the tool timeout
    assert seen["thread_id"] == "t-sync"


class SuspendingQueue(InMemoryInterruptQueue):
    """A queue whose ``take`` really awaits (as one on a network database would)."""

    async def take(self, thread_id: str) -> list[str]:
        await asyncio.sleep(0)
        return await super().take(thread_id)


def test_a_node_that_really_awaits_fails_clearly_in_a_sync_run(tools):
    config = {"configurable": {"thread_id": "t1", "synthesize": False}}
    graph = create_react_graph(ScriptedChatModel(responses=["ok"]), tools, abilities=NATIVE, interrupt_queue=SuspendingQueue())
    with pytest.raises(SyncRunError, match="llm_call_native awaited"):
        graph.invoke({"messages": [HumanMessage("q")]}, config)
    graph = create_react_graph(ScriptedChatModel(responses=["ok"]), tools, abilities=NATIVE, interrupt_queue=SuspendingQueue())
    assert asyncio.run(graph.ainvoke({"messages": [HumanMessage("q")]}, config))["answer"] == "ok"


def test_run_sync_returns_the_value_of_a_coroutine_that_never_suspends():
    async def add(a, b):
        return a + b

    assert run_sync(add(2, 3)) == 5

    async def sleeps():
        await asyncio.sleep(0)

    with pytest.raises(SyncRunError, match="sleeper awaited"):
        run_sync(sleeps(), "sleeper")


def test_settings_are_shared_by_both_modes():
    settings = AgentSettings(max_iterations=2)
    for mode in ("sync", "async"):
        model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("read_log", {"machine": "M"}, "c")])],
                                  repeat_last=True)
        _, state = run_graph(create_react_graph(model, [read_log], abilities=NATIVE, settings=settings), mode,
                             [HumanMessage("q")])
        assert state["finish_reason"] == "max_iterations" and state["iteration"] == 2


def test_transient_model_failures_are_retried_in_both_modes(tools, fast_settings):
    def make():
        return ScriptedChatModel(responses=[ConnectionError("reset"), "recovered"], synthesis="fine")

    _, state, model = both_modes(make, tools, [HumanMessage("q")], abilities=NATIVE, settings=fast_settings)
    assert state["answer"] == "recovered" and state["synthesis"] == "fine"
    assert model.cursor == 2  # the failed call, then the retry
