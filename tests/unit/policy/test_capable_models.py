"""Capable-model scenarios: scripted as strong models behave in real traces, on the
default settings of a model that is not marked small (the permissive safeguard policy). Each
ends with the model's own final answer and the right tools run the right number of times.

The polling, self-correction, follow-up and fabrication scenarios failed on the engine before
the policy was scoped by model (the repeat was refused, two errors were a stall, the answer
call saw only the turn's work log, a made-up answer was accepted).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, Field

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.protocol.prompts import TOOL_REQUIRED_REQUEST
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import JSON_SCHEMA, NATIVE

MODES = ["native", "json"]
MACHINES = Literal["CNC-001", "CNC-002", "CNC-003", "PRS-001"]


class Machine(BaseModel):
    equipment_id: MACHINES = Field(description="Machine id.")


class Job(BaseModel):
    job_id: str = Field(description="Diagnostic job id.")


class NoArgs(BaseModel):
    """No arguments."""


class Setpoint(BaseModel):
    equipment_id: MACHINES
    celsius: int = Field(description="Coolant setpoint, °C.")


class Plant:
    """A small plant whose tools count their runs; a diagnostic job finishes on its third poll."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.flaky_failures = 1

    def _tool(self, name: str, description: str, schema: type[BaseModel], fn: Any, side_effects: bool) -> StructuredTool:
        def run(**kwargs: Any) -> str:
            self.runs[name] += 1
            return fn(**kwargs)

        return StructuredTool.from_function(run, name=name, description=description, args_schema=schema,
                                            metadata={"side_effects": side_effects})

    def tools(self) -> list[StructuredTool]:
        def status(job_id: str) -> str:
            return "J-77: done — spindle bearing wear 0.8 mm" if self.runs["diagnostic_status"] >= 3 else "J-77: running"

        def setpoint(equipment_id: str, celsius: int) -> str:
            if celsius > 30:
                raise ValueError(f"celsius {celsius} is above the coolant limit of 30")
            return f"{equipment_id} coolant setpoint is now {celsius} °C"

        def flaky(equipment_id: str) -> str:
            if self.flaky_failures:
                self.flaky_failures -= 1
                raise ConnectionError("sensor gateway timed out")
            return f"{equipment_id}: vibration 1.2 mm/s"

        table = {
            "start_diagnostic": ("Start a diagnostic job on a machine.", Machine,
                                 lambda equipment_id: f"diagnostic job J-77 started on {equipment_id}", True),
            "diagnostic_status": ("Status and result of a diagnostic job.", Job, status, False),
            "set_setpoint": ("Set a machine's coolant setpoint.", Setpoint, setpoint, True),
            "list_machines": ("Machines with their latest vibration.", NoArgs,
                              lambda: "CNC-001 0.3 mm/s, CNC-003 1.2 mm/s (highest), PRS-001 0.4 mm/s", False),
            "maintenance_history": ("Past maintenance of a machine.", Machine,
                                    lambda equipment_id: f"{equipment_id}: last maintained 2026-01-10 (spindle)", False),
            "check_limits": ("Whether a machine is over its temperature or vibration limits.", Machine,
                             lambda equipment_id: f"{equipment_id}: vibration 1.2 mm/s over the 0.5 mm/s limit", False),
            "temperatures": ("Current temperature of each machine.", NoArgs,
                             lambda: "CNC-001 48.7 °C, CNC-003 42.1 °C", False),
            "vibration": ("Vibration of one machine (the gateway is flaky).", Machine, flaky, False),
            "energy": ("Energy use of a machine this week.", Machine, lambda equipment_id: f"{equipment_id}: 412 kWh", False),
            "alarms": ("Active alarms of a machine.", Machine, lambda equipment_id: f"{equipment_id}: W-1105", False),
            "status": ("State of a machine.", Machine,
                       lambda equipment_id: f"{equipment_id}: warning, 72.3 %, 48.7 °C, 1.2 mm/s, alarm W-1105", False),
        }
        return [self._tool(name, *spec) for name, spec in table.items()]


def step(mode: str, *calls: tuple[str, dict[str, Any]]) -> Any:
    """One model turn of tool calls in the mode's wire form (JSON mode: the first call only)."""
    if mode == "native":
        return AIMessage("", tool_calls=[tool_call(name, args) for name, args in calls])
    name, args = calls[0]
    return json.dumps({"type": "tool_call", "reasoning": f"calling {name}", "tool_name": name, "tool_args": args})


def answer(mode: str, text: str) -> Any:
    return text if mode == "native" else json.dumps({"type": "final_answer", "reasoning": "done", "answer": text})


def agent_for(mode: str, script: list[Any], plant: Plant, **kwargs: Any) -> tuple[ReActAgent, ScriptedChatModel]:
    model = ScriptedChatModel(responses=script, synthesis=kwargs.pop("synthesis", "Synthesized answer."))
    abilities = NATIVE if mode == "native" else JSON_SCHEMA
    return ReActAgent(model, plant.tools(), abilities=abilities, use_native_tools=mode == "native", **kwargs), model


@pytest.mark.parametrize("mode", MODES)
async def test_polling_a_job_until_it_is_done(mode):
    plant = Plant()
    poll = ("diagnostic_status", {"job_id": "J-77"})
    agent, _ = agent_for(mode, [step(mode, ("start_diagnostic", {"equipment_id": "CNC-003"})), step(mode, poll),
                                step(mode, poll), step(mode, poll),
                                answer(mode, "The diagnostic found spindle bearing wear of 0.8 mm.")], plant)
    result = await agent.run("Run a diagnostic on CNC-003 and tell me the result.")
    assert plant.runs == {"start_diagnostic": 1, "diagnostic_status": 3}
    assert result.finish_reason == "final_answer"
    assert result.answer == "The diagnostic found spindle bearing wear of 0.8 mm."
    assert [s.unchanged for s in result.steps] == [False, False, True, False]  # the second "running" was the same


@pytest.mark.parametrize("mode", MODES)
async def test_two_wrong_arguments_then_a_right_one(mode):
    plant = Plant()
    tries = [step(mode, ("set_setpoint", {"equipment_id": "CNC-003", "celsius": c})) for c in (45, 35, 28)]
    agent, _ = agent_for(mode, [*tries, answer(mode, "CNC-003's coolant setpoint is now 28 °C.")], plant)
    result = await agent.run("Lower the coolant setpoint of CNC-003 as far as it may go above 25 °C.")
    assert [s.tool_args["celsius"] for s in result.steps] == [45, 35, 28]
    assert [s.ok for s in result.steps] == [False, False, True]
    assert plant.runs == {"set_setpoint": 3} and result.finish_reason == "final_answer"


@pytest.mark.parametrize("mode", MODES)
async def test_ids_chained_from_a_tools_output(mode):
    plant = Plant()
    agent, _ = agent_for(mode, [step(mode, ("list_machines", {})),
                                step(mode, ("maintenance_history", {"equipment_id": "CNC-003"})),
                                answer(mode, "CNC-003 vibrates most; it was last maintained on 2026-01-10.")], plant)
    result = await agent.run("Which machine vibrates most, and when was it last maintained?")
    assert plant.runs == {"list_machines": 1, "maintenance_history": 1} and result.finish_reason == "final_answer"


@pytest.mark.parametrize("mode", MODES)
async def test_a_follow_up_with_a_pronoun_uses_the_earlier_turns_id_and_its_answer_sees_the_earlier_turn(mode):
    """Turn 2 says "that machine": the call with the id of turn 1 runs (not refused), and the
    answer-writing call is shown the earlier turn, so it knows which machine is meant."""
    plant = Plant()
    agent, model = agent_for(mode, [step(mode, ("maintenance_history", {"equipment_id": "CNC-003"})),
                                    answer(mode, "CNC-003 was last maintained on 2026-01-10."),
                                    step(mode, ("check_limits", {"equipment_id": "CNC-003"})),
                                    answer(mode, "Yes: its vibration is over the limit.")], plant,
                             checkpointer=InMemorySaver(), synthesis="CNC-003 was last maintained on 2026-01-10.")
    first = [e async for e in agent.astream_events("When was CNC-003 last maintained?", thread_id="t")]
    model.synthesis = "Yes — CNC-003's vibration, 1.2 mm/s, is over its 0.5 mm/s limit."
    second = [e async for e in agent.astream_events("Is that machine over any limit?", thread_id="t")]
    assert first[-1].data["finish_reason"] == second[-1].data["finish_reason"] == "final_answer"
    assert plant.runs == {"maintenance_history": 1, "check_limits": 1}
    prompt = model.calls[-1][-1].content  # the second turn's synthesis call
    assert "User: When was CNC-003 last maintained?" in prompt
    assert "Assistant: CNC-003 was last maintained on 2026-01-10." in prompt
    assert prompt.index("When was CNC-003") < prompt.index("Question:\nIs that machine over any limit?")
    assert second[-1].data["grounding"]["ungrounded"] == []


async def test_a_derived_figure_is_kept_and_a_made_up_one_is_flagged_under_the_default_grounding():
    plant = Plant()
    agent, _ = agent_for("native", [step("native", ("temperatures", {})), "done"], plant,
                         synthesis="CNC-001 runs 6.6 °C hotter than CNC-003 (48.7 °C against 42.1 °C).")
    events = [e async for e in agent.astream_events("How much hotter is CNC-001 than CNC-003?")]
    done = events[-1].data
    assert done["grounding"] == {"mode": "flag", "action": "kept", "checked": 5, "cited": 2, "ungrounded": []}
    assert done["answer"] == "CNC-001 runs 6.6 °C hotter than CNC-003 (48.7 °C against 42.1 °C)."
    agent, _ = agent_for("native", [step("native", ("temperatures", {})), "done"], plant,
                         synthesis="CNC-001 is at 48.7 °C and 93.4 % utilization.")
    events = [e async for e in agent.astream_events("How warm is CNC-001?")]
    deltas = [e.data["content"] for e in events if e.channel == "answer" and e.data["status"] == "delta"]
    assert deltas[-1] == "\n\n> ⚠ Not found in any tool result: 93.4."  # streamed first, then named, never as fact
    assert events[-1].data["grounding"]["action"] == "flagged"


async def test_a_plan_of_six_iterations_over_eight_tools():
    plant = Plant()
    plan = [("status", {"equipment_id": "CNC-003"}), ("alarms", {"equipment_id": "CNC-003"}),
            ("temperatures", {}), ("maintenance_history", {"equipment_id": "CNC-003"}),
            ("energy", {"equipment_id": "CNC-003"}), ("check_limits", {"equipment_id": "CNC-003"})]
    agent, _ = agent_for("native", [*(step("native", call) for call in plan),
                                    "CNC-003 needs a bearing: warning, W-1105, over its vibration limit."], plant)
    result = await agent.run("Give me a full health report of CNC-003 with a recommendation.")
    assert [s.tool_name for s in result.steps] == [name for name, _ in plan]
    assert set(plant.runs.values()) == {1} and result.finish_reason == "final_answer" and result.iterations == 7


async def test_a_parallel_batch_where_one_call_fails_and_is_retried():
    plant = Plant()
    batch = step("native", ("status", {"equipment_id": "CNC-001"}), ("vibration", {"equipment_id": "CNC-003"}),
                 ("energy", {"equipment_id": "CNC-003"}))
    agent, _ = agent_for("native", [batch, step("native", ("vibration", {"equipment_id": "CNC-003"})),
                                    "CNC-001 is in warning; CNC-003 vibrates at 1.2 mm/s and used 412 kWh."], plant)
    result = await agent.run("Status of CNC-001, and vibration and energy of CNC-003?")
    assert plant.runs == {"status": 1, "vibration": 2, "energy": 1}
    assert [s.ok for s in result.steps if s.tool_name == "vibration"] == [False, True]
    assert result.finish_reason == "final_answer"


@pytest.mark.parametrize("mode", MODES)
async def test_a_made_up_answer_before_any_tool_call_is_asked_again_with_a_tool_call_required(mode):
    """The mid-size model's failure: asked about CNC-003, it answered with invented figures and
    no tool call. The engine asks once more with a tool call required (native: tool_choice;
    JSON: only the tool branches), and the answer carries the tool's figures."""
    plant = Plant()
    made_up = answer(mode, "CNC-003 is in a normal state: utilization 90 %, 22 °C, 15 mm/s, no active alarms.")
    agent, model = agent_for(mode, [made_up, step(mode, ("status", {"equipment_id": "CNC-003"})),
                                    answer(mode, "CNC-003 is in warning: 72.3 %, 48.7 °C, 1.2 mm/s, alarm W-1105.")],
                             plant, synthesis="CNC-003 is in **warning**: 72.3 %, 48.7 °C, 1.2 mm/s, alarm W-1105.",
                             settings=AgentSettings(synthesis="always"))  # the loop's calls read from call_kwargs
    events = [e async for e in agent.astream_events("CNC-003 상태 확인해줘")]
    assert plant.runs == {"status": 1}
    assert TOOL_REQUIRED_REQUEST in str(model.calls[1][-1].content)
    if mode == "native":
        assert model.call_kwargs[1]["tool_choice"] == "any"
    else:
        branches = model.call_kwargs[1]["response_format"]["schema"]["anyOf"]
        assert {b["properties"]["type"]["enum"][0] for b in branches} == {"tool_call"}
    done = events[-1].data
    assert done["finish_reason"] == "final_answer"
    assert all(fact in done["answer"] for fact in ("warning", "72.3", "48.7", "1.2", "W-1105"))
    assert "90 %" not in done["answer"] and done["grounding"]["ungrounded"] == []


async def test_the_re_ask_is_made_once_and_not_for_questions_outside_the_tools_data():
    plant = Plant()
    stubborn = ScriptedChatModel(responses=["CNC-003 is at 22 °C."], repeat_last=True)
    result = await ReActAgent(stubborn, plant.tools(), abilities=NATIVE).run("How warm is CNC-003?")
    assert len(stubborn.calls) == 2 and result.answer == "CNC-003 is at 22 °C."  # asked once, then accepted
    chat = ScriptedChatModel(responses=["Paris has about 2.1 million people."])
    result = await ReActAgent(chat, plant.tools(), abilities=NATIVE).run("Tell me a fun fact about Paris")
    assert len(chat.calls) == 1 and result.finish_reason == "final_answer"
    vague = ScriptedChatModel(responses=["RBT-002 had routine checks and no major issues.",
                                         AIMessage("", tool_calls=[tool_call("maintenance_history", {"equipment_id": "CNC-003"})]),
                                         "CNC-003 was last maintained on 2026-01-10."])
    result = await ReActAgent(vague, plant.tools(), abilities=NATIVE).run("Show the maintenance history of CNC-003")
    assert vague.call_kwargs[1]["tool_choice"] == "any"  # a question naming an id: no answer without the tool
    assert result.answer == "CNC-003 was last maintained on 2026-01-10." and plant.runs["maintenance_history"] == 1
    off = ScriptedChatModel(responses=["CNC-003 is at 22 °C."])
    await ReActAgent(off, plant.tools(), abilities=NATIVE, settings=AgentSettings(require_tool_data=False)).run(
        "How warm is CNC-003?")
    assert len(off.calls) == 1


async def test_the_small_models_policy_still_stops_a_repeat_at_once():
    """The same polling script on a model marked small: its strict policy counts one unchanged
    repeat as a stall (the embedded model repeats its first call every time)."""
    plant = Plant()
    poll = ("diagnostic_status", {"job_id": "J-77"})
    model = ScriptedChatModel(responses=[step("native", ("start_diagnostic", {"equipment_id": "CNC-003"})),
                                         step("native", poll), step("native", poll), "It is still running."])
    result = await ReActAgent(model, plant.tools(), abilities=ModelAbilities(tool_call=True, small=True),
                              settings=AgentSettings(answer_when_covered=False)).run(
        "Run a diagnostic on CNC-003 and tell me the result.")
    assert result.finish_reason == "stalled" and plant.runs["diagnostic_status"] == 2


async def test_a_provider_that_refuses_the_forced_tool_choice_is_asked_again_without_it():
    """llama.cpp's server answered 400 to a forced tool choice it does not take: the re-ask is
    made again without forcing (its message still asks for a tool call), not a failed run."""
    plant = Plant()
    model = ScriptedChatModel(responses=[
        "CNC-003 is fine at 22 °C.", RuntimeError("Error code: 400 - Invalid tool_choice: any"),
        step("native", ("status", {"equipment_id": "CNC-003"})), "CNC-003 is in warning at 48.7 °C."])
    result = await ReActAgent(model, plant.tools(), abilities=NATIVE).run("How warm is CNC-003?")
    assert model.call_kwargs[1]["tool_choice"] == "any" and "tool_choice" not in model.call_kwargs[2]
    assert plant.runs == {"status": 1} and result.answer == "CNC-003 is in warning at 48.7 °C."
    assert result.error is None and result.finish_reason == "final_answer"


async def test_a_model_whose_bind_tools_cannot_force_a_call_is_asked_in_words():
    """A chat model class whose ``bind_tools`` refuses ``tool_choice`` (it raises at bind time)
    still gets the re-ask: the tools bound without forcing, the message asking for a call."""

    class NoForcing(ScriptedChatModel):
        def bind_tools(self, tools, **kwargs):
            if "tool_choice" in kwargs:
                raise NotImplementedError("tool_choice is not supported")
            return super().bind_tools(tools, **kwargs)

    plant = Plant()
    model = NoForcing(responses=["CNC-003 is fine at 22 °C.", step("native", ("status", {"equipment_id": "CNC-003"})),
                                 "CNC-003 is in warning at 48.7 °C."])
    result = await ReActAgent(model, plant.tools(), abilities=NATIVE).run("How warm is CNC-003?")
    assert "tool_choice" not in model.call_kwargs[1] and model.call_kwargs[1].get("tools")
    assert model.calls[1][-1].content == TOOL_REQUIRED_REQUEST  # the re-ask says what it wants in words
    assert plant.runs == {"status": 1} and result.answer == "CNC-003 is in warning at 48.7 °C."
