"""The lexical gate under the strict policy reads what a tool needs: a tool that cannot be called
without a number shares no subject with a question that writes none, and a number a question
shares with a description names no subject.

A surveyor's office (not the demo plant): a building-cost estimate, a population-growth model
taking numbers, a French land registry, a German tide table.
"""

from __future__ import annotations

import json

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import ReActAgent
from reactgraph.core.language import detect_language
from reactgraph.nodes.select_tools import gate_closes
from reactgraph.testing import ScriptedChatModel
from reactgraph.tools.ranking import ToolRanker
from reactgraph.tools.values import ValueReader, required_numbers
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
    tage: int = Field(description="Wie viele Tage.")


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
    def gezeiten(hafen: str, tage: int) -> str:
        return f"{hafen}, {tage} Tage: Hochwasser 06:12"

    return [StructuredTool.from_function(gezeiten, args_schema=_Tide,
                                         description="Hochwasser und Niedrigwasser eines Hafens für einige Tage.")]


def closes(tools: list[StructuredTool], question: str) -> bool:
    return gate_closes(ToolRanker(tools), question, detect_language(question))


def test_the_required_numbers_of_a_schema():
    growth = office()[1].args_schema.model_json_schema()
    assert required_numbers(growth) == ["current_population", "birth_rate"]  # "years" has a default
    assert required_numbers({"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                                                              "s": {"type": ["string", "number"]}},
                             "required": ["n", "s"]}) == ["n"]
    reader = ValueReader({tool.name: tool.args_schema.model_json_schema() for tool in office()})
    assert reader.needs_number("population_growth") and not reader.needs_number("estimate_construction_cost")


def test_a_tool_that_needs_a_number_is_not_served_by_a_question_writing_none():
    assert closes(office(), "How can the population growth of red deer be increased?")
    assert not closes(office(), "Population growth of 1200 red deer at a birth rate of 0.3?")
    assert not closes(office(), "What will the construction cost and the population growth of a new town be?")
    assert closes(tides(), "Wie entsteht Hochwasser in einem Hafen?")  # German: the tool needs a number of days
    assert not closes(tides(), "Hochwasser im Hafen Husum für 3 Tage?")
    assert not closes(tides(), "Hochwasser im Hafen Husum am 12.05.2026?")  # a date is written too


def test_one_shared_subject_word_still_opens_the_gate_and_a_greeting_closes_it():
    assert not closes(office(), "What's the cost of renting an apartment in Lisbon?")  # the model decides
    assert not closes(registry(), "Quel est le prix d'une baguette dans cette commune ?")
    for greeting in ("Bonjour, merci !", "Salut !", "Hallo!", "Merci beaucoup, bonne journée."):
        assert closes(registry(), greeting)


def _answer(text: str) -> str:
    return json.dumps({"type": "final_answer", "reasoning": "", "answer": text})


async def test_a_closed_gate_offers_no_tool_in_any_language():
    for tools, question in ((office(), "How can the population growth of red deer be increased?"),
                            (registry(), "Bonjour, merci !"),
                            (tides(), "Wie entsteht Hochwasser in einem Hafen?")):
        model = ScriptedChatModel(responses=[_answer("…")])
        result = await ReActAgent(model, tools, abilities=SMALL_SCHEMA).run(question)
        assert model.kinds == ["tool_loop"]
        loop = model.call_kwargs[0]["response_format"]["schema"]
        assert [branch["properties"]["type"]["enum"] for branch in loop.get("anyOf", [loop])] == [["final_answer"]]
        assert result.steps == []


async def test_a_question_writing_the_numbers_gets_the_tool():
    model = ScriptedChatModel(responses=[
        json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "population_growth",
                    "tool_args": {"current_population": 1200, "birth_rate": 0.3}}),
        _answer("1560 red deer."),
    ])
    result = await ReActAgent(model, office(), abilities=SMALL_SCHEMA).run(
        "Population growth of 1200 red deer at a birth rate of 0.3?")
    assert [step.tool_name for step in result.steps] == ["population_growth"]
