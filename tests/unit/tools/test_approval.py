"""Human approval of tool calls (SPEC R13.3): a call that needs approval pauses
the run with LangGraph's ``interrupt()``; decisions approve, edit or reject it; the pause
is checkpointed and survives a restart; in a parallel batch only that call waits."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from reactgraph import (
    AgentSettings,
    Decision,
    DecisionError,
    NothingToResumeError,
    ReActAgent,
    create_react_graph,
    open_persistence,
)
from reactgraph.persistence import folding
from reactgraph.tools.approval import NO_CHECKPOINTER
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import JSON_MODE, NATIVE_TOOLS_ONLY



class Plant:
    """Tools with a record of every call that ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool
        def stop_line(line: str, minutes: int = 10) -> str:
            """Stop a production line for some minutes."""
            self.ran.append(("stop_line", {"line": line, "minutes": minutes}))
            return f"{line} stopped for {minutes} min"

        @tool
        def read_status(equipment_id: str) -> str:
            """Read a machine's status."""
            self.ran.append(("read_status", {"equipment_id": equipment_id}))
            return f"{equipment_id}: normal"

        self.tools = [stop_line, read_status]


def calls(*items: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call(name, args, call_id) for name, args, call_id in items])


def action(name: str, args: dict[str, Any]) -> str:
    return json.dumps({"type": "tool_call", "reasoning": f"use {name}", "tool_name": name, "tool_args": args})


def final(text: str) -> str:
    return json.dumps({"type": "final_answer", "reasoning": "done", "answer": text})


ALWAYS = AgentSettings(approval={"stop_line": "always"}, synthesis="always")
"""Every ``stop_line`` call approved first; the answer written by a synthesis call (the two phases)."""


def scripted(mode: str, first: tuple[str, dict[str, Any], str], answer: str) -> ScriptedChatModel:
    if mode == "native":
        return ScriptedChatModel(responses=[calls(first), answer], synthesis=f"Synth: {answer}")
    return ScriptedChatModel(responses=[action(first[0], first[1]), final(answer)], synthesis=f"Synth: {answer}")


def observation_seen(model: ScriptedChatModel, mode: str) -> str:
    """What the model was shown for the first tool call (its second loop call's input)."""
    loop = model.calls_except("synthesis")
    if mode == "native":
        return next(m.content for m in loop[1] if isinstance(m, ToolMessage))
    return [m for m in loop[1] if isinstance(m, HumanMessage)][-1].content


async def paused_run(mode: str, args: dict[str, Any], answer: str) -> tuple[Plant, ScriptedChatModel, ReActAgent, Any]:
    """An agent whose model calls ``stop_line(args)`` (approval always), paused on thread ``t``."""
    plant = Plant()
    model = scripted(mode, ("stop_line", args, "c1"), answer)
    agent = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY if mode == "native" else JSON_MODE, settings=ALWAYS,
                       checkpointer=InMemorySaver())
    return plant, model, agent, await agent.run("stop the line", thread_id="t")


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_approve_runs_the_call_once_after_the_pause(mode):
    plant, model, agent, paused = await paused_run(mode, {"line": "Line A"}, "Line A is stopped.")
    assert paused.waiting and paused.finish_reason == "waiting" and paused.answer == ""
    [pending] = paused.pending
    assert (pending.kind, pending.tool_name, pending.tool_args) == ("approval", "stop_line", {"line": "Line A"})
    assert plant.ran == []  # nothing ran before the decision
    assert await agent.thread_status("t") == "waiting"
    assert [p.tool_call_id for p in await agent.pending("t")] == [pending.tool_call_id]

    done = await agent.resume("t", {pending.tool_call_id: Decision.approve()})
    assert plant.ran == [("stop_line", {"line": "Line A", "minutes": 10})]
    assert done.finish_reason == "final_answer" and not done.waiting
    assert done.synthesis == "Synth: Line A is stopped."
    [step] = done.steps
    assert (step.approval, step.observation) == ("approved", "Line A stopped for 10 min")
    assert "Line A stopped for 10 min" in observation_seen(model, mode)
    assert await agent.thread_status("t") == "idle"


class CountingSaver(InMemorySaver):
    """An in-memory checkpointer that counts the checkpoint reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def aget_tuple(self, config: Any) -> Any:
        self.reads += 1
        return await super().aget_tuple(config)


async def test_a_finished_run_reads_no_checkpoint_back_and_a_paused_one_reports_its_calls():
    """Whether a run paused is read back from the checkpoint only when the stream showed an
    interrupt or the run stopped before its end (the read cost a finished run more
    than a checkpoint write)."""
    saver = CountingSaver()
    plant = Plant()
    model = ScriptedChatModel(responses=[calls(("read_status", {"equipment_id": "CNC-001"}, "c0")),
                                         "CNC-001 is normal.", calls(("stop_line", {"line": "Line A"}, "c1"))])
    agent = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=ALWAYS, checkpointer=saver)
    finished = await agent.run("status?", thread_id="t")
    assert finished.finish_reason == "final_answer" and finished.pending == []
    assert saver.reads == 1  # LangGraph loading the thread as the run starts; nothing after the end
    paused = await agent.run("stop the line", thread_id="t")
    assert paused.waiting and [p.tool_name for p in paused.pending] == ["stop_line"] and saver.reads == 3
    assert plant.ran == [("read_status", {"equipment_id": "CNC-001"})]


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_edit_runs_the_call_with_the_persons_arguments(mode):
    plant, model, agent, paused = await paused_run(mode, {"line": "Line A", "minutes": 90}, "Stopped briefly.")
    done = await agent.resume("t", {paused.pending[0].tool_call_id: {"type": "edit", "args": {"line": "Line A", "minutes": 5}}})
    assert plant.ran == [("stop_line", {"line": "Line A", "minutes": 5})]
    [step] = done.steps
    assert (step.approval, step.tool_args) == ("edited", {"line": "Line A", "minutes": 5})
    assert "Line A stopped for 5 min" in observation_seen(model, mode)


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_reject_shows_the_persons_message_as_the_observation(mode):
    plant, model, agent, paused = await paused_run(mode, {"line": "Line B"}, "I did not stop it.")
    done = await agent.resume("t", {paused.pending[0].tool_call_id: Decision.reject("Line B runs a rush order; do not stop it.")})
    assert plant.ran == []
    [step] = done.steps
    assert step.approval == "rejected" and step.error == "Line B runs a rush order; do not stop it."
    assert "Line B runs a rush order; do not stop it." in observation_seen(model, mode)
    assert done.answer == "I did not stop it."


async def test_in_a_parallel_batch_only_the_call_needing_approval_waits():
    plant = Plant()
    model = ScriptedChatModel(responses=[calls(("read_status", {"equipment_id": "CNC-003"}, "r1"),
                                               ("stop_line", {"line": "Line C"}, "s1")), "Both handled."])
    events: list[Any] = []
    agent = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=ALWAYS, checkpointer=InMemorySaver())
    async for event in agent.astream_events("status of CNC-003, and stop Line C", thread_id="t"):
        events.append(event)
    assert plant.ran == [("read_status", {"equipment_id": "CNC-003"})]  # ran during the pause
    approval = [e for e in events if e.channel == "approval"]
    assert len(approval) == 1 and [p["tool_call_id"] for p in approval[0].data["pending"]] == ["s1"]
    done_events = [e for e in events if e.channel == "done"]
    assert done_events[-1].data["finish_reason"] == "waiting" and events[-1].channel == "done"
    assert not [e for e in events if e.channel == "answer"]  # no synthesis while waiting
    started = [e.data["tool_call_id"] for e in events if e.channel == "step" and e.data["type"] == "iteration" and e.data["status"] == "start"]
    assert started == ["r1"]  # the waiting call has no card start until it is decided

    rest = [e async for e in agent.aresume_events("t", {"s1": "approve"})]
    assert plant.ran == [("read_status", {"equipment_id": "CNC-003"}), ("stop_line", {"line": "Line C", "minutes": 10})]
    assert rest[-1].channel == "done" and rest[-1].data["finish_reason"] == "final_answer"
    [second] = model.calls_except("synthesis")[1:]
    answers = {m.tool_call_id: m.content for m in second if isinstance(m, ToolMessage)}
    assert answers == {"r1": "CNC-003: normal", "s1": "Line C stopped for 10 min"}


async def test_a_predicate_decides_per_call():
    plant = Plant()
    long_stops = AgentSettings(approval={"stop_line": lambda call: call["args"].get("minutes", 10) > 30})
    model = ScriptedChatModel(responses=[calls(("stop_line", {"line": "Line A", "minutes": 5}, "a"),
                                               ("stop_line", {"line": "Line B", "minutes": 60}, "b")), "ok"])
    agent = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=long_stops, checkpointer=InMemorySaver())
    paused = await agent.run("stop", thread_id="t")
    assert [p.tool_call_id for p in paused.pending] == ["b"]
    assert plant.ran == [("stop_line", {"line": "Line A", "minutes": 5})]


async def test_a_tool_can_require_approval_by_its_metadata_and_settings_override_it():
    plant = Plant()
    plant.tools[0].metadata = {"approval": "always"}
    model = ScriptedChatModel(responses=[calls(("stop_line", {"line": "Line A"}, "c1")), "ok"])
    agent = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver())
    assert (await agent.run("stop", thread_id="t")).waiting
    model = ScriptedChatModel(responses=[calls(("stop_line", {"line": "Line A"}, "c1")), "ok"])
    trusting = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                          settings=AgentSettings(approval={"stop_line": "never"}))
    assert not (await trusting.run("stop", thread_id="t")).waiting
    assert plant.ran == [("stop_line", {"line": "Line A", "minutes": 10})]


async def test_without_a_checkpointer_the_call_does_not_run_and_the_model_is_told():
    plant = Plant()
    model = ScriptedChatModel(responses=[calls(("stop_line", {"line": "Line A"}, "c1")), "Could not."])
    result = await ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=ALWAYS).run("stop")
    assert plant.ran == [] and not result.waiting
    assert result.steps[0].error == NO_CHECKPOINTER.removeprefix("Error: ")


async def test_bad_decisions_are_refused_before_anything_runs():
    plant, _model, agent, _paused = await paused_run("native", {"line": "Line A"}, "ok")
    with pytest.raises(DecisionError, match="no pending call 'nope'"):
        await agent.resume("t", {"nope": "approve"})
    with pytest.raises(DecisionError, match="needs args"):
        await agent.resume("t", {"c1": {"type": "edit"}})
    with pytest.raises(DecisionError, match="type is one of"):
        await agent.resume("t", {"c1": {"type": "maybe"}})
    # One call decided twice, arguments JSON cannot hold or nested past the bound
    [pending] = await agent.pending("t")
    with pytest.raises(DecisionError, match="two decisions for call 'c1'"):
        await agent.resume("t", {"c1": "approve", pending.interrupt_id: "reject"})
    with pytest.raises(DecisionError, match="NaN or an infinite number"):
        await agent.resume("t", {"c1": {"type": "edit", "args": {"line": "Line A", "limit": [float("inf")]}}})
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    with pytest.raises(DecisionError, match="nest more than 64 levels"):
        await agent.resume("t", {"c1": {"type": "edit", "args": {"line": deep}}})
    assert plant.ran == [] and await agent.thread_status("t") == "waiting"
    again = await agent.resume("t")  # no decisions: it pauses again on the same call
    assert [p.tool_call_id for p in again.pending] == ["c1"] and plant.ran == []
    await agent.resume("t", {"c1": "approve"})
    with pytest.raises(NothingToResumeError):
        await agent.resume("t", {"c1": "approve"})
    assert len(plant.ran) == 1


async def test_graph_users_answer_with_command_resume():
    plant = Plant()
    model = ScriptedChatModel(responses=[calls(("stop_line", {"line": "Line A"}, "c1")), "Stopped."])
    graph = create_react_graph(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=ALWAYS, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "g"}}
    paused = await graph.ainvoke({"messages": [HumanMessage("stop A")]}, config)
    [item] = paused["__interrupt__"]
    assert item.value["type"] == "tool_approval" and item.value["tool_args"] == {"line": "Line A"}
    assert item.value["decisions"] == ["approve", "edit", "reject"]
    done = await graph.ainvoke(Command(resume={"type": "edit", "args": {"line": "Line A", "minutes": 1}}), config)
    assert plant.ran == [("stop_line", {"line": "Line A", "minutes": 1})]
    assert done["messages"][-1].content == "Stopped."


async def test_an_unreadable_resume_value_rejects_the_call():
    plant = Plant()
    model = ScriptedChatModel(responses=[calls(("stop_line", {"line": "Line A"}, "c1")), "Not stopped."])
    graph = create_react_graph(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=ALWAYS, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "g"}}
    await graph.ainvoke({"messages": [HumanMessage("stop A")]}, config)
    done = await graph.ainvoke(Command(resume="sure, why not"), config)
    assert plant.ran == []
    assert "could not be read" in done["steps"][0]["observation"]


async def test_a_pause_survives_a_restart_and_no_tool_runs_twice(checkpoint_url, monkeypatch):
    """Two agents on one checkpoint database, as two processes would be: the first
    pauses, the second (new checkpointer connection) takes the decision. The approved
    call runs from the checkpoint the second process read, known as stored there: it
    does not wait to find it in the database (the wait's poll is made an hour here)."""
    monkeypatch.setattr(folding, "STORED_POLL_SECONDS", 3600.0)
    plant = Plant()
    thread = f"restart-{uuid.uuid4().hex[:8]}"
    first_model = ScriptedChatModel(responses=[calls(("read_status", {"equipment_id": "CNC-001"}, "r1"),
                                                     ("stop_line", {"line": "Line A"}, "s1"))])
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(first_model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=ALWAYS,
                           checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue)
        paused = await agent.run("status and stop", thread_id=thread)
        assert [p.tool_call_id for p in paused.pending] == ["s1"]
    assert plant.ran == [("read_status", {"equipment_id": "CNC-001"})]

    second_model = ScriptedChatModel(responses=["Done."], synthesis="Line A stopped; CNC-001 normal.")
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(second_model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=ALWAYS,
                           checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue)
        assert await agent.thread_status(thread) == "waiting"
        [pending] = await agent.pending(thread)
        assert (pending.tool_name, pending.tool_args) == ("stop_line", {"line": "Line A"})
        done = await asyncio.wait_for(agent.resume(thread, {"s1": "approve"}), 60)
    assert plant.ran == [("read_status", {"equipment_id": "CNC-001"}), ("stop_line", {"line": "Line A", "minutes": 10})]
    assert done.synthesis == "Line A stopped; CNC-001 normal."
    assert sorted(s.tool_call_id for s in done.steps) == ["r1", "s1"]
