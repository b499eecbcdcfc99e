"""What a question costs beyond the answer: the selection call only where it pays
(``tool_selection="auto"``), and a loop prompt whose prefix stays the same across questions
for a model not marked small (prefix caches serve it)."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE



class Where(BaseModel):
    city: str = Field(description="City name.")
    kind: Literal["cheap", "mid", "luxury"] = Field("mid", description="Price class.")


TOPICS = ["weather", "flights", "hotels", "trains", "museums", "restaurants", "currency", "visas", "events",
          "parking", "ferries", "buses", "bikes", "taxis", "pharmacies", "libraries"]


def topic_tools(count: int) -> list[StructuredTool]:
    def make(topic: str) -> StructuredTool:
        def run(city: str, kind: str = "mid") -> str:
            return f"{topic} in {city} ({kind}): 2 found"
        return StructuredTool.from_function(run, name=f"find_{topic}", args_schema=Where,
                                            description=f"Find {topic} in a city.")
    return [make(topic) for topic in TOPICS[:count]]


def bound_tools(model: ScriptedChatModel, call: int) -> list[str]:
    return [tool["function"]["name"] for tool in model.call_kwargs[call].get("tools", [])]


async def test_auto_selection_makes_no_call_and_offers_a_native_model_every_tool():
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("find_hotels", {"city": "Oslo"}, "c1")]),
                                         "Two hotels in Oslo."])
    result = await ReActAgent(model, topic_tools(16), abilities=NATIVE,
                              settings=AgentSettings(tool_selection="auto")).run("Find hotels and trains in Oslo")
    assert model.kinds == ["tool_loop", "tool_loop"]
    assert bound_tools(model, 0) == [f"find_{topic}" for topic in TOPICS]
    assert result.steps[0].ok


async def test_auto_selection_lets_the_ranking_choose_when_the_tools_do_not_fit():
    model = ScriptedChatModel(responses=["Nothing to look up."])
    abilities = ModelAbilities(tool_call=True, context_window=4_500, max_output_tokens=500)
    await ReActAgent(model, topic_tools(16), abilities=abilities,
                     settings=AgentSettings(tool_selection="auto", require_tool_data=False)).run("Find ferries in Bergen")
    assert model.kinds == ["tool_loop"]
    assert bound_tools(model, 0) == ["find_ferries"]  # the lexical ranking alone: the one tool that matches


async def test_a_small_model_still_gets_the_selection_call_under_auto():
    model = ScriptedChatModel(responses=["ok"], by_kind={"selection": [
        AIMessage("", tool_calls=[tool_call("select_tools", {"tools": ["find_hotels"]}, "s1")])]})
    small = ModelAbilities(tool_call=True, json_mode=True, small=True)
    await ReActAgent(model, topic_tools(16), abilities=small,
                     settings=AgentSettings(tool_selection="auto", tool_selection_max=2,
                                            require_tool_data=False, grounding="off")).run("Find hotels or trains")
    assert model.kinds[0] == "selection"


def test_tool_selection_takes_only_true_false_or_auto():
    with pytest.raises(ValueError, match="tool_selection must be None \\(the policy decides\\), True, False or 'auto'"):
        AgentSettings(tool_selection="sometimes")


@pytest.mark.parametrize("native", [True, False])
async def test_the_loop_prompt_of_a_capable_model_is_the_same_for_every_question(native):
    """Nothing per question before the tools: two questions naming other tools and other
    enum values get the same system prompt, tools and schemas, so a prefix cache serves them."""
    abilities = NATIVE if native else ModelAbilities(json_mode=True)
    questions = ["Luxury hotels in Rome?", "Cheap trains from Lyon, s'il vous plaît"]
    prompts, tools = [], []
    for text in questions:
        reply = "ok" if native else json.dumps({"type": "final_answer", "reasoning": "", "answer": "ok"})
        model = ScriptedChatModel(responses=[reply])
        await ReActAgent(model, topic_tools(5), abilities=abilities,
                         settings=AgentSettings(require_tool_data=False)).run(text)
        prompts.append(model.calls[0][0].content)
        tools.append(json.dumps(model.call_kwargs[0].get("tools"), sort_keys=True))
    assert prompts[0] == prompts[1] and tools[0] == tools[1]


async def test_a_small_model_still_gets_the_tools_ranked_for_the_question():
    small = ModelAbilities(tool_call=True, small=True)
    model = ScriptedChatModel(responses=["ok"])
    await ReActAgent(model, topic_tools(5), abilities=small,
                     settings=AgentSettings(require_tool_data=False, grounding="off", lexical_gate=False)).run(
        "Trains in Lyon?")
    assert bound_tools(model, 0)[0] == "find_trains"


def test_the_selection_call_is_the_small_models_default_only():
    """Selection only where it pays: the strict policy keeps the call, a model not marked small
    gets ``"auto"``; a value the caller sets wins."""
    from reactgraph.policy.safeguards import resolve_settings

    assert AgentSettings().tool_selection is None
    assert resolve_settings(AgentSettings(), ModelAbilities(small=True)).tool_selection is True
    assert resolve_settings(AgentSettings(), ModelAbilities(tool_call=True)).tool_selection == "auto"
    assert resolve_settings(AgentSettings(tool_selection=True), ModelAbilities()).tool_selection is True
    assert resolve_settings(AgentSettings(tool_selection=False), ModelAbilities(small=True)).tool_selection is False
