"""How many LangGraph supersteps a run takes: one loop iteration is two, the model
node and the tool calls, in every mode and with every feature on. The supersteps are read
from the thread's checkpoints (each checkpoint's ``next`` is the tasks of the superstep that
follows it), so a node added to the loop, or a pass-through step, changes these lists."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ReActAgent
from reactgraph.nodes.start_turn import TURN_BOOKKEEPING
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import JSON_MODE, NATIVE_TOOLS_ONLY, SMALL, HookedModel, get_status, log_calls, read_log

ENTRY = [("start_turn",)]  # select_tools only runs with more tools than tool_selection_threshold


def native_calls(*ids: str) -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("get_status", {"equipment_id": f"M-{i}"}, i) for i in ids])


def json_call(machine: str) -> str:
    return json.dumps({"type": "tool_call", "reasoning": "look", "tool_name": "get_status",
                       "tool_args": {"equipment_id": machine}})


def json_final(text: str) -> str:
    return json.dumps({"type": "final_answer", "reasoning": "done", "answer": text})


async def supersteps(agent: ReActAgent, thread_id: str) -> list[tuple[str, ...]]:
    """The tasks of each superstep the thread ran, oldest first."""
    history = [snapshot async for snapshot in agent.graph.aget_state_history({"configurable": {"thread_id": thread_id}})]
    return [tuple(sorted(snapshot.next)) for snapshot in reversed(history) if snapshot.next and snapshot.next != ("__start__",)]


async def test_native_mode_takes_two_supersteps_per_iteration():
    model = ScriptedChatModel(responses=[native_calls("a", "b"), native_calls("c"), "done"])
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver())
    result = await agent.run("check", thread_id="t")
    assert result.answer == "done" and len(result.steps) == 3
    model_step, tools = ("llm_call_native",), ("execute_tools",)
    # ReActAgent.run skips synthesis: the accepted answer ends the graph
    assert await supersteps(agent, "t") == [*ENTRY, model_step, tools * 2, model_step, tools, model_step]


async def test_json_mode_takes_two_supersteps_per_iteration_with_events_streamed():
    model = ScriptedChatModel(responses=[json_call("M-1"), json_call("M-2"), json_final("done")], synthesis="Done.")
    agent = ReActAgent(model, [get_status], abilities=JSON_MODE, checkpointer=InMemorySaver())
    events = [event async for event in agent.astream_events("check", thread_id="t")]
    assert next(e.data for e in events if e.channel == "done")["answer"] == "Done."
    model_step, tools = ("llm_call_json",), ("execute_tools",)
    assert await supersteps(agent, "t") == [*ENTRY, model_step, tools, model_step, tools, model_step, ("synthesize",)]


async def test_an_approval_pause_adds_no_superstep():
    model = ScriptedChatModel(responses=[native_calls("a"), "done"])
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                       settings=AgentSettings(approval={"get_status": "always"}))
    paused = await agent.run("check", thread_id="t")
    assert [call.tool_call_id for call in paused.pending] == ["a"]
    result = await agent.resume("t", decisions={"a": "approve"})
    assert result.steps[0].approval == "approved"
    model_step, tools = ("llm_call_native",), ("execute_tools",)
    # the paused tool task is the same superstep, run again on resume from the same checkpoint
    # (resume synthesizes the answer)
    assert await supersteps(agent, "t") == [*ENTRY, model_step, tools, model_step, ("synthesize",)]


async def test_a_follow_up_that_suppresses_an_answer_costs_one_model_step():
    model = HookedModel(responses=["premature", "answered both"])
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver())
    model.hooks[1] = lambda: agent.inject("t", "also M-2")
    result = await agent.run("check", thread_id="t")
    assert result.answer == "answered both"
    model_step = ("llm_call_native",)
    assert await supersteps(agent, "t") == [*ENTRY, model_step, model_step]


async def test_the_guard_is_a_superstep_only_when_the_window_needs_it():
    def respond(messages: list[Any]) -> AIMessage:
        if isinstance(messages[0], SystemMessage) and messages[0].content.startswith("You compact the history"):
            return AIMessage("SUMMARY of the logs")
        return next(loop)

    loop = iter([*log_calls(4), AIMessage("CNC-003 is fine")])
    model = ScriptedChatModel(responses=[respond], repeat_last=True)
    agent = ReActAgent(model, [read_log], abilities=SMALL, checkpointer=InMemorySaver())
    result = await agent.run("check CNC-003", thread_id="t")
    assert result.answer == "CNC-003 is fine"
    steps = await supersteps(agent, "t")
    guarded = steps.count(("guard_context",))
    assert guarded >= 1, "four big logs go over the 8,000-token budget"
    model_step, tools = ("llm_call_native",), ("execute_tools",)
    assert steps.count(model_step) == 5 + guarded and steps.count(tools) == 4  # 5 model calls, 4 tool calls
    assert len(steps) == len(ENTRY) + 2 * 4 + 1 + guarded * 2
    for index, step in enumerate(steps):
        if step == ("guard_context",):
            assert steps[index - 1] == model_step and steps[index + 1] == model_step


async def test_the_iteration_cap_goes_to_the_fallback_from_the_model_step():
    model = ScriptedChatModel(responses=[native_calls("a"), native_calls("b"), native_calls("c")])
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                       settings=AgentSettings(max_iterations=2))
    result = await agent.run("check", thread_id="t")
    assert result.finish_reason == "max_iterations"
    model_step, tools = ("llm_call_native",), ("execute_tools",)
    assert await supersteps(agent, "t") == [*ENTRY, model_step, tools, model_step, tools, model_step, ("fallback",),
                                            ("synthesize",)]


async def test_tool_selection_is_one_superstep_per_turn():
    hub = [StructuredTool.from_function(lambda equipment_id: f"{equipment_id}: ok", name=f"tool_{i:02d}",
                                        description=f"Status report number {i} of a machine.") for i in range(14)]
    pick = AIMessage("", tool_calls=[tool_call("select_tools", {"tools": ["tool_03"]}, "s")])
    model = ScriptedChatModel(by_kind={"selection": [pick]},
                              responses=[AIMessage("", tool_calls=[tool_call("tool_03", {"equipment_id": "A"}, "a")]), "ok"])
    agent = ReActAgent(model, hub, abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver())
    result = await agent.run("status report 3 of A", thread_id="t")
    assert result.answer == "ok" and result.steps[0].tool_name == "tool_03"
    model_step, tools = ("llm_call_native",), ("execute_tools",)
    assert await supersteps(agent, "t") == [("start_turn",), ("select_tools",), model_step, tools, model_step]


async def written_channels(agent: ReActAgent, thread_id: str) -> list[tuple[str, ...]]:
    """The state channels each superstep wrote, oldest first: the channels whose version
    changed from one checkpoint to the next (LangGraph's own ``branch:``/``__`` channels
    left out)."""
    config = {"configurable": {"thread_id": thread_id}}
    versions = [t.checkpoint["channel_versions"] async for t in agent.graph.checkpointer.alist(config)][::-1]
    return [tuple(sorted(key for key, version in after.items()
                         if before.get(key) != version and not key.startswith(("branch:", "__"))))
            for before, after in zip(versions, versions[1:])]


async def test_an_iteration_writes_only_what_it_changes():
    """Per iteration the model step writes the message, the iteration and the usage, and each
    tool task its message and step record: the tool calls go out as ``Send``s and are not
    state, so no checkpoint stores them twice (every channel written is a row and
    a version more in each checkpoint)."""
    model = ScriptedChatModel(responses=[native_calls("a", "b"), native_calls("c"), "done"])
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver())
    await agent.run("check", thread_id="t")
    model_step, tools = ("iteration", "messages", "usage"), ("messages", "steps")
    written = await written_channels(agent, "t")
    assert written[2:] == [model_step, tools, model_step, tools, written[-1]]
    assert {"answer", "draft_answer", "finish_reason"} <= set(written[-1]) and "steps" not in written[-1]
    assert "pending_tool_calls" not in {key for step in written for key in step}
    # a first turn leaves the loop's bookkeeping unwritten until the loop sets it
    assert not set(TURN_BOOKKEEPING) & {key for step in written[:-1] for key in step}
    assert set(TURN_BOOKKEEPING) - {"pending_final", "draft_answer"} == set(TURN_BOOKKEEPING) - set(written[-1])


async def test_a_new_turn_resets_only_the_bookkeeping_the_last_one_left_set():
    """JSON mode: a parse failure sets ``parse_failures``; the parsed action after it sets it
    back to 0, and the parsed actions after that write nothing to it; the next turn's
    ``start_turn`` resets the final answer the last turn left, not the fields already at
    their reset value."""
    model = ScriptedChatModel(responses=["not json", json_call("M-1"), json_call("M-2"), json_final("one"),
                                         json_final("two")])
    agent = ReActAgent(model, [get_status], abilities=JSON_MODE, checkpointer=InMemorySaver())
    assert (await agent.run("check", thread_id="t")).answer == "one"
    first = await written_channels(agent, "t")
    touched = [step for step in first if "parse_failures" in step]
    assert len(touched) == 2, first  # the failure, then the action after it
    assert (await agent.run("again", thread_id="t")).answer == "two"
    start = next(step for step in (await written_channels(agent, "t"))[len(first):] if "query" in step)
    assert {"pending_final", "draft_answer"} <= set(start)
    assert not {"parse_failures", "schema_rejected", "progress_iteration"} & set(start)
