"""The lexical gate and the relevance call under the strict policy: a tool that needs a number
shares no subject with a question that writes none; when the gate opens on weak evidence (fewer
than two subject words shared with any tool), the model is asked whether any tool serves the
question, and "none" offers no tool.

A surveyor's office (not the demo plant): a building-cost estimate, a population-growth model
taking numbers, a French land registry, a German tide table.
"""

from __future__ import annotations

import json

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import ReActAgent
from reactgraph.core.language import detect_language
from reactgraph.nodes.select_tools import NO_TOOL, gate_closes, gate_unsure, relevance_schema
from reactgraph.testing import ScriptedChatModel
from reactgraph.tools.ranking import ToolRanker
from reactgraph.tools.values import required_numbers
from tests.helpers import SMALL_SCHEMA


class _Cost(BaseModel):
    building_type: str = Field(description="Kind of building, e.g. warehouse.")
    city: str = Field(description="Where it is built.")


class _Growth(BaseModel):
    current_population: int = Field(description="Animals counted now.")
    birth_rate: float = Field(description="Births per animal and year.")
    years: int = Field(default=1, description="Years ahead.")


class _Parcel(BaseModel):
    commune: str = Field(description="La commune de la parcelle.")


class _Tide(BaseModel):
    hafen: str = Field(description="Der Hafen.")


def office() -> list[StructuredTool]:
    def estimate_construction_cost(building_type: str, city: str) -> str:
        return f"{building_type} in {city}: 1,200 per m2"

    def population_growth(current_population: int, birth_rate: float, years: int = 1) -> str:
        return f"{current_population * (1 + birth_rate) ** years:.0f}"

    return [
        StructuredTool.from_function(estimate_construction_cost, args_schema=_Cost,
                                     description="Estimate the construction cost of a new building."),
        StructuredTool.from_function(population_growth, args_schema=_Growth,
                                     description="Project the population growth of a species from its birth rate."),
    ]


def registry() -> list[StructuredTool]:
    def cadastre(commune: str) -> str:
        return f"{commune}: 412 parcelles"

    return [StructuredTool.from_function(cadastre, args_schema=_Parcel,
                                         description="Donne les parcelles cadastrales et leurs propriétaires d'une commune.")]


def tides() -> list[StructuredTool]:
    def gezeiten(hafen: str) -> str:
        return f"{hafen}: Hochwasser 06:12"

    return [StructuredTool.from_function(gezeiten, args_schema=_Tide,
                                         description="Hochwasser und Niedrigwasser eines Hafens für heute.")]


def reading(tools: list[StructuredTool], question: str) -> str:
    ranker, language = ToolRanker(tools), detect_language(question)
    if gate_closes(ranker, question, language):
        return "closed"
    return "unsure" if gate_unsure(ranker, question, language) else "open"


def test_one_shared_subject_word_leaves_the_gate_unsure_and_more_open_it():
    assert reading(office(), "What's the cost of renting an apartment in Lisbon?") == "unsure"  # only "cost"
    assert reading(office(), "Estimate the construction cost of a warehouse in Porto.") == "open"
    assert reading(registry(), "Quel est le prix d'une baguette dans cette commune ?") == "unsure"  # only "commune"
    assert reading(registry(), "Quelles parcelles cadastrales a la commune de Vannes ?") == "open"
    assert reading(tides(), "Wann fährt die Fähre vom Hafen ab?") == "unsure"  # only "Hafen"
    assert reading(tides(), "Wann ist Hochwasser im Hafen Husum?") == "open"


def test_a_tool_that_needs_a_number_is_not_served_by_a_question_writing_none():
    assert required_numbers(office()[1].args_schema.model_json_schema()) == ["current_population", "birth_rate"]
    assert reading(office(), "How can the population growth of red deer be increased?") == "closed"
    assert reading(office(), "Population growth of 1200 red deer at a birth rate of 0.3?") == "open"
    # a tool that can be called without a number still shares its words
    assert reading(office(), "What would the construction cost and the population growth of a new town be?") == "open"


def test_a_greeting_closes_the_gate_and_another_language_is_left_to_the_model():
    for greeting in ("Bonjour, merci !", "Salut !", "Hallo!"):
        assert reading(registry(), greeting) == "closed"
    # an English question to French tools, naming a value: not decided by words at all
    assert reading(registry(), "How many parcels are registered under 4411?") != "unsure"


def test_the_relevance_schema_offers_the_tools_and_none():
    assert relevance_schema(["cadastre"])["properties"]["tool"]["enum"] == ["cadastre", NO_TOOL]


def _answer(text: str) -> str:
    return json.dumps({"type": "final_answer", "reasoning": "", "answer": text})


async def test_none_from_the_model_offers_no_tool():
    model = ScriptedChatModel(by_kind={"selection": [json.dumps({"tool": NO_TOOL})]},
                              responses=[_answer("Je ne sais pas.")])
    result = await ReActAgent(model, registry(), abilities=SMALL_SCHEMA).run(
        "Quel est le prix d'une baguette dans cette commune ?")
    assert model.kinds[:2] == ["selection", "tool_loop"]
    asked = "\n".join(str(message.content) for message in model.calls[0])
    assert "- cadastre: Donne les parcelles" in asked and "baguette" in asked
    assert model.call_kwargs[0]["response_format"]["schema"]["properties"]["tool"]["enum"] == ["cadastre", NO_TOOL]
    loop = model.call_kwargs[1]["response_format"]["schema"]
    assert [branch["properties"]["type"]["enum"] for branch in loop.get("anyOf", [loop])] == [["final_answer"]]
    assert result.steps == []


async def test_a_tool_named_by_the_model_is_offered_and_called():
    model = ScriptedChatModel(by_kind={"selection": [json.dumps({"tool": "gezeiten"})]}, responses=[
        json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "gezeiten", "tool_args": {"hafen": "Husum"}}),
        _answer("Hochwasser um 06:12."),
    ])
    result = await ReActAgent(model, tides(), abilities=SMALL_SCHEMA).run("Wann fährt die Fähre vom Hafen Husum ab?")
    assert model.kinds[0] == "selection"
    assert [step.tool_name for step in result.steps] == ["gezeiten"]


async def test_an_unparseable_relevance_reply_keeps_the_tools():
    model = ScriptedChatModel(by_kind={"selection": ["not json"] * 6}, responses=[
        json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "gezeiten", "tool_args": {"hafen": "Husum"}}),
        _answer("Hochwasser um 06:12."),
    ])
    result = await ReActAgent(model, tides(), abilities=SMALL_SCHEMA).run("Wann fährt die Fähre vom Hafen Husum ab?")
    assert [step.tool_name for step in result.steps] == ["gezeiten"]


async def test_a_question_the_gate_closes_gets_no_tool_and_no_relevance_call():
    for tools, question in ((office(), "How can the population growth of red deer be increased?"),
                            (registry(), "Bonjour, merci !")):
        model = ScriptedChatModel(responses=[_answer("…")])
        result = await ReActAgent(model, tools, abilities=SMALL_SCHEMA).run(question)
        assert model.kinds == ["tool_loop"]
        loop = model.call_kwargs[0]["response_format"]["schema"]
        assert [branch["properties"]["type"]["enum"] for branch in loop.get("anyOf", [loop])] == [["final_answer"]]
        assert result.steps == []
