"""A few tools under the strict policy: the values a question names choose the tools offered.

A library's lending desk (not the demo plant): a loan by its barcode (a pattern), a member's
loans by e-mail (a format), a free-text catalogue search and branch hours (an enum).
"""

from __future__ import annotations

import json
from typing import Literal

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import AgentSettings, ReActAgent
from reactgraph.nodes.select_tools import tools_taking_values
from reactgraph.testing import ScriptedChatModel
from reactgraph.tools.ranking import ToolRanker
from tests.helpers import SMALL_SCHEMA


class _Loan(BaseModel):
    barcode: str = Field(description="The item's barcode, like LB-10234.", pattern=r"^LB-\d{5}$")


class _Member(BaseModel):
    member_email: str = Field(description="The member's address.", json_schema_extra={"format": "email"})


class _Search(BaseModel):
    query: str = Field(description="Words of the title or author.")


class _Branch(BaseModel):
    branch: Literal["north", "harbour"] = Field(description="Which branch.")


def library() -> list[StructuredTool]:
    def loan_status(barcode: str) -> str:
        return f"{barcode}: due back 2026-12-19"

    def member_loans(member_email: str) -> str:
        return f"{member_email}: 2 items on loan"

    def search_catalogue(query: str) -> str:
        return f"3 titles match {query}"

    def branch_hours(branch: str) -> str:
        return f"{branch}: 09:00-18:00"

    return [
        StructuredTool.from_function(loan_status, description="Due date of one borrowed item.", args_schema=_Loan),
        StructuredTool.from_function(member_loans, description="Everything a reader has borrowed.",
                                     args_schema=_Member),
        StructuredTool.from_function(search_catalogue, description="Find books by title or author.",
                                     args_schema=_Search),
        StructuredTool.from_function(branch_hours, description="Opening hours of a branch.", args_schema=_Branch),
    ]


def chosen(question: str) -> list[str] | None:
    ranker = ToolRanker(library())
    return tools_taking_values(ranker.values, ranker.rank(question), question)


def test_the_tools_taking_a_named_value_are_chosen_in_any_language():
    assert chosen("Kiedy mam oddać LB-48213?") == ["loan_status"]  # Polish: no word shared
    assert chosen("Quali prestiti ha ada.rossi@biblio.example.it?") == ["member_loans"]
    assert chosen("Wann öffnet die Filiale harbour?") == ["branch_hours"]  # an enum word


def test_an_identifier_outweighs_an_enum_word_and_no_value_chooses_nothing():
    assert chosen("Is LB-48213 at the harbour branch?") == ["loan_status"]
    assert chosen("Do you have books by Ursula Le Guin?") is None
    assert chosen('Cerca "La mano sinistra delle tenebre"') is None  # a quoted title fits any free text


async def test_a_named_value_offers_only_its_tool_asks_for_a_call_and_pins_the_argument():
    model = ScriptedChatModel(responses=[
        json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "loan_status",
                    "tool_args": {"barcode": "LB-48213"}}),
    ])
    result = await ReActAgent(model, library(), abilities=SMALL_SCHEMA).run("Kiedy mam oddać LB-48213?")
    schema = model.call_kwargs[0]["response_format"]["schema"]
    branches = schema.get("anyOf", [schema])
    assert [branch["properties"]["tool_name"]["enum"] for branch in branches] == [["loan_status"]]  # no answer branch
    assert branches[0]["properties"]["tool_args"]["properties"]["barcode"]["enum"] == ["LB-48213"]
    assert [step.tool_name for step in result.steps] == ["loan_status"]


async def test_a_question_naming_no_value_and_sharing_no_word_gets_no_tool():
    model = ScriptedChatModel(responses=[json.dumps({"type": "final_answer", "reasoning": "", "answer": "Hej!"})])
    result = await ReActAgent(model, library(), abilities=SMALL_SCHEMA).run("Hej, tack så mycket!")
    schema = model.call_kwargs[0]["response_format"]["schema"]
    assert [branch["properties"]["type"]["enum"] for branch in schema.get("anyOf", [schema])] == [["final_answer"]]
    assert result.steps == []


async def test_a_question_naming_no_value_gets_its_clear_lexical_winner_and_may_still_be_answered():
    model = ScriptedChatModel(responses=[json.dumps({"type": "final_answer", "reasoning": "", "answer": "ok"})],
                              repeat_last=True)
    await ReActAgent(model, library(), abilities=SMALL_SCHEMA).run("Find books by Le Guin")
    schema = model.call_kwargs[0]["response_format"]["schema"]
    assert [branch["properties"]["type"]["enum"] for branch in schema["anyOf"]] == [["tool_call"], ["final_answer"]]
    assert schema["anyOf"][0]["properties"]["tool_name"]["enum"] == ["search_catalogue"]


async def test_the_tools_the_values_chose_hold_for_the_first_call_only():
    model = ScriptedChatModel(responses=[
        json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "loan_status", "tool_args": {"barcode": "LB-48213"}}),
        json.dumps({"type": "final_answer", "reasoning": "", "answer": "2026-12-19"}),
    ])
    await ReActAgent(model, library(), abilities=SMALL_SCHEMA,
                     settings=AgentSettings(answer_when_covered=False)).run("Wann ist LB-48213 fällig?")
    later = model.call_kwargs[1]["response_format"]["schema"]["anyOf"]
    assert sorted(branch["properties"]["tool_name"]["enum"][0] for branch in later
                  if "tool_name" in branch["properties"]) == ["branch_hours", "loan_status", "member_loans",
                                                              "search_catalogue"]
