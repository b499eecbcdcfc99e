"""DAG answers under the ReAct answer rules (SPEC R9.4, R13.1): the synthesis model's safeguard
policy decides the DAG answer's grounding, the evidence is what the steps' tools returned,
and an answer citing an id no step returned is withdrawn (enforce), flagged (flag) or never
written (the strict policy answers from the observations). Non-demo tools, several languages."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import StructuredTool

from reactgraph import AgentSettings, DAGAgent, ModelAbilities, ModelRegistry, create_dag_graph
from reactgraph.dag.synthesize import dag_observation_answer
from reactgraph.testing import ScriptedChatModel
from tests.unit.dag.test_dag import kind, plan, step, verdict

ORDER = "Order: ORD-7\nState: shipped\nCarrier: Northwind"
INVENTED = "ORD-7 was shipped by Northwind; ORD-99 is late too."


def order_status(order_id: str) -> str:
    """Status of one customer order: state and carrier."""
    return ORDER if order_id == "ORD-7" else f"Unknown order {order_id}."


TOOLS = [StructuredTool.from_function(order_status)]
FAST = dict(max_iterations=3, tool_timeout=1, retry_initial_delay=0.01, retry_max_delay=0.02)


def dag_model(goal_steps, synthesis=INVENTED):
    """Plans ``goal_steps``; step ``a`` looks the order up, any other step answers in words
    without a tool; the analyzer calls the goal achieved with the invented answer."""
    def reply(messages):
        role = kind(messages)
        if role == "planner":
            return plan(*goal_steps)
        if role == "analyzer":
            return verdict(True, 1.0, INVENTED)
        if role == "step:a" and not any("State: shipped" in str(message.content) for message in messages):
            return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "order_status",
                               "tool_args": {"order_id": "ORD-7"}})
        return json.dumps({"type": "final_answer", "reasoning": "", "answer": "I could not find that."})

    return ScriptedChatModel(responses=[reply], repeat_last=True, synthesis=synthesis)


STEPS = [step("a", "look up order ORD-7"), step("b", "find the courier's phone number")]


async def done_of(agent, goal):
    events = [event async for event in agent.astream_events(goal)]
    return events[-1].data, events


async def test_enforce_withdraws_an_answer_citing_an_id_no_step_returned():
    model = dag_model(STEPS)
    settings = AgentSettings(grounding="enforce", answer_from_observations=False, **FAST)
    agent = DAGAgent(model, TOOLS, settings=settings)
    done, events = await done_of(agent, "Compare order ORD-7 with the courier's phone")
    answer = done["answer"]
    assert "ORD-99" not in answer  # never shown: checked before it is sent
    assert all("ORD-99" not in e.data.get("content", "") for e in events if e.channel == "answer")
    assert "- **State**: shipped" in answer.splitlines()
    assert answer.endswith("What could not be found:\n- find the courier's phone number")


async def test_the_check_is_recorded_with_the_withdrawn_values():
    graph = create_dag_graph(dag_model(STEPS), TOOLS,
                             settings=AgentSettings(grounding="enforce", answer_from_observations=False, **FAST))
    state = await graph.ainvoke({"messages": [("user", "Compare order ORD-7 with the courier's phone")]})
    assert state["grounding"]["action"] == "fallback" and state["grounding"]["withdrawn"] == ["ORD-99"]
    assert state["grounding"]["ungrounded"] == []


async def test_a_capable_models_dag_answer_is_flagged_not_withdrawn():
    agent = DAGAgent(dag_model(STEPS), TOOLS, settings=AgentSettings(**FAST))
    done, _ = await done_of(agent, "Compare order ORD-7 with the courier's phone")
    assert done["answer"].startswith(INVENTED)
    assert "ORD-99" in done["answer"].split(INVENTED, 1)[1]  # named in the note under it


@pytest.mark.parametrize("goal, not_found", [
    ("Compare order ORD-7 with the courier's phone", "What could not be found:"),
    ("ORD-7 주문과 배송 기사 연락처를 비교해줘", "찾지 못한 내용:"),
])
async def test_the_embedded_models_policy_answers_from_what_the_steps_tools_returned(goal, not_found):
    """The strict policy (a small synthesis model): no synthesis call; the answer holds only
    the tools' values, then what could not be found, in the goal's language."""
    model = dag_model(STEPS)
    registry = ModelRegistry(model, abilities=ModelAbilities(small=True))
    done, _ = await done_of(DAGAgent(registry, TOOLS, settings=AgentSettings(**FAST)), goal)
    assert "synthesis" not in [kind(messages) for messages in model.calls]
    assert "ORD-99" not in done["answer"] and "Northwind" in done["answer"]
    assert not_found + "\n- find the courier's phone number" in done["answer"]


def test_an_answer_with_no_tool_data_says_so():
    results = {"a": {"id": "a", "status": "failed", "result": "", "error": "timed out", "model_role": "general",
                     "iterations": 1, "elapsed": 1.0, "finish_reason": None, "tool_steps": []}}
    text = dag_observation_answer("What is ORD-7's state?", [step("a", "look up order ORD-7")], results)
    assert text == ("No tool returned data that answers this question.\n\n"
                    "What could not be found:\n- look up order ORD-7 (timed out)")


# the embedded model's strict policy when its synthesis writes the answer ----------------------

WRITER = ModelAbilities(json_mode=True, small=True, writes_answers=True)
"""A small model whose own answers are written by synthesis and checked under ``enforce``
(the strict policy with ``answer_from_observations`` off)."""


@pytest.mark.parametrize("goal, synthesis, invented, not_found", [
    ("Compare order ORD-7 with the courier's phone", INVENTED, "ORD-99", "What could not be found:"),
    ("Compare order ORD-7 with the courier's phone", "ORD-7 was shipped by Northwind for 48.20 EUR.", "48.20",
     "What could not be found:"),
    ("ORD-7 주문과 배송 기사 연락처를 비교해줘", "ORD-7은 Northwind로 배송되었고 ORD-99도 늦었습니다.", "ORD-99",
     "찾지 못한 내용:"),
])
async def test_a_small_models_dag_synthesis_that_invents_a_value_is_never_shown(goal, synthesis, invented, not_found):
    """Strict policy, synthesis written by the model: an answer stating an id or a figure no
    step's tool returned is withdrawn before it is sent and replaced by the steps'
    observations and what could not be found; ``done`` carries the check as ReAct's does."""
    model = dag_model(STEPS, synthesis=synthesis)
    registry = ModelRegistry(model, abilities=WRITER)
    done, events = await done_of(DAGAgent(registry, TOOLS, settings=AgentSettings(**FAST)), goal)
    assert "synthesis" in [kind(messages) for messages in model.calls]  # the model wrote one
    shown = "".join(event.data.get("content", "") for event in events if event.channel == "answer")
    assert invented not in shown and invented not in done["answer"]
    assert "Northwind" in done["answer"] and not_found + "\n- find the courier's phone number" in done["answer"]
    grounding = done["grounding"]
    assert grounding["mode"] == "enforce" and grounding["action"] == "fallback"
    assert any(value in invented for value in grounding["withdrawn"]) and grounding["ungrounded"] == []


async def test_a_small_models_grounded_dag_synthesis_stands_and_done_says_it_was_kept():
    model = dag_model(STEPS, synthesis="ORD-7 was shipped by Northwind. The courier's phone was not found.")
    done, _ = await done_of(DAGAgent(ModelRegistry(model, abilities=WRITER), TOOLS, settings=AgentSettings(**FAST)),
                            "Compare order ORD-7 with the courier's phone")
    assert done["answer"] == "ORD-7 was shipped by Northwind. The courier's phone was not found."
    assert done["grounding"]["action"] == "kept" and done["grounding"]["ungrounded"] == []


async def test_a_run_without_synthesis_records_no_check():
    """``run`` does not synthesize: no answer was checked, so none is recorded — not the
    check of an earlier run on the same thread."""
    agent = DAGAgent(ModelRegistry(dag_model(STEPS), abilities=WRITER), TOOLS, settings=AgentSettings(**FAST))
    result = await agent.run("Compare order ORD-7 with the courier's phone")
    assert result.grounding is None
