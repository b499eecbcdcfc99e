"""Approval never asks twice (SPEC R13.3): a model that repeats a call a person
already decided in this turn gets that decision's outcome — the earlier result of an
approved or edited call, the same rejection of a rejected one — without a second pause
and without running anything again, in native and JSON mode."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, Decision, ReActAgent
from reactgraph.events import ToolDone
from reactgraph.testing import ScriptedChatModel
from tests.unit.tools.test_approval import Plant, action, calls, final
from tests.helpers import JSON_MODE, NATIVE_TOOLS_ONLY

ORIGINAL = {"line": "Line A", "minutes": 90}


def repeating_model(mode: str) -> ScriptedChatModel:
    """Asks for ``stop_line(ORIGINAL)``, asks for it again with the same arguments, then answers."""
    if mode == "native":
        return ScriptedChatModel(responses=[calls(("stop_line", ORIGINAL, "c1")), calls(("stop_line", ORIGINAL, "c2")),
                                            "Handled."], synthesis="Handled.")
    return ScriptedChatModel(responses=[action("stop_line", ORIGINAL), action("stop_line", ORIGINAL),
                                        final("Handled.")], synthesis="Handled.")


def last_observation(model: ScriptedChatModel, mode: str) -> str:
    """What the model was shown for the repeated call (its third loop call's last observation)."""
    third = model.calls_except("synthesis")[2]
    if mode == "native":
        return [m for m in third if isinstance(m, ToolMessage)][-1].content
    last_ai = max(i for i, m in enumerate(third) if isinstance(m, AIMessage))
    return "\n".join(m.content for m in third[last_ai:] if isinstance(m, HumanMessage))


DECISIONS: dict[str, tuple[Any, list[tuple[str, dict[str, Any]]], str]] = {
    # decision, what ran, what the repeated call is shown
    "approve": (Decision.approve(), [("stop_line", {"line": "Line A", "minutes": 90})], "Line A stopped for 90 min"),
    "edit": (Decision.edit({"line": "Line A", "minutes": 5}), [("stop_line", {"line": "Line A", "minutes": 5})],
             "Line A stopped for 5 min"),
    "reject": (Decision.reject("Line A runs a rush order."), [], "Line A runs a rush order."),
}


@pytest.mark.parametrize("refuse_repeats", [True, False])
@pytest.mark.parametrize("kind", list(DECISIONS))
@pytest.mark.parametrize("mode", ["native", "json"])
async def test_a_repeated_decided_call_gets_the_decided_outcome_without_a_second_pause(mode, kind, refuse_repeats):
    decision, ran, shown = DECISIONS[kind]
    plant = Plant()
    model = repeating_model(mode)
    settings = AgentSettings(approval={"stop_line": "always"}, refuse_repeated_calls=refuse_repeats)
    agent = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY if mode == "native" else JSON_MODE, settings=settings,
                       checkpointer=InMemorySaver())
    paused = await agent.run("stop line A", thread_id="t")
    [pending] = paused.pending
    events = [event async for event in agent.aresume_events("t", {pending.tool_call_id: decision})]

    assert [e.channel for e in events if e.channel == "approval"] == []  # not asked a second time
    assert events[-1].channel == "done" and events[-1].data["finish_reason"] != "waiting"
    assert plant.ran == ran  # an approved call ran once; a rejected one never
    first, repeat = [e for e in events if isinstance(e, ToolDone)]
    label = {"approve": "approved", "edit": "edited", "reject": "rejected"}[kind]
    assert (first.approval, repeat.approval) == (label, label)
    assert repeat.repeat_of_decided == first.tool_call_id and "repeat_of_decided" not in first.data
    assert repeat.observation == first.observation and shown in repeat.observation
    assert (repeat.error is None) == (kind != "reject")  # the earlier result is no error; a rejection stays one
    assert shown in last_observation(model, mode)
    state = await agent.graph.aget_state({"configurable": {"thread_id": "t"}})
    assert [s.get("repeat_of_decided") for s in state.values["steps"]] == [None, first.tool_call_id]


async def test_a_repeat_of_the_edited_arguments_gets_the_same_result():
    """The model may also repeat the call with the arguments the person put in."""
    plant = Plant()
    edited = {"line": "Line A", "minutes": 5}
    model = ScriptedChatModel(responses=[calls(("stop_line", ORIGINAL, "c1")), calls(("stop_line", edited, "c2")),
                                         "Handled."], synthesis="Handled.")
    agent = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(approval={"stop_line": "always"}),
                       checkpointer=InMemorySaver())
    await agent.run("stop line A", thread_id="t")
    done = await agent.resume("t", {"c1": Decision.edit(edited)})
    assert not done.waiting and plant.ran == [("stop_line", {"line": "Line A", "minutes": 5})]
    assert [(s.approval, s.observation) for s in done.steps] == [("edited", "Line A stopped for 5 min")] * 2


async def test_other_arguments_and_a_new_turn_are_asked_again():
    """Only an identical call of the same turn counts as decided: other arguments, or the
    same call in the next turn (the person may want it again), are asked."""
    plant = Plant()
    model = ScriptedChatModel(responses=[calls(("stop_line", ORIGINAL, "c1")),
                                         calls(("stop_line", {"line": "Line B"}, "c2")), "Handled.",
                                         calls(("stop_line", ORIGINAL, "c3"))], synthesis="Handled.")
    agent = ReActAgent(model, plant.tools, abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(approval={"stop_line": "always"}),
                       checkpointer=InMemorySaver())
    await agent.run("stop line A", thread_id="t")
    again = await agent.resume("t", {"c1": Decision.reject()})
    assert [p.tool_call_id for p in again.pending] == ["c2"]
    await agent.resume("t", {"c2": Decision.reject()})
    next_turn = await agent.run("stop line A after all", thread_id="t")
    assert [p.tool_call_id for p in next_turn.pending] == ["c3"] and plant.ran == []
