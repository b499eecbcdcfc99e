"""A text argument that repeats the tool's own name or description is no one's value: the strict
policy refuses the call with a reason; the permissive one runs it and tells the model."""

from __future__ import annotations

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.testing import ScriptedChatModel
from tests.helpers import SMALL_SCHEMA, call_json, final


class _Search(BaseModel):
    query: str = Field(description="Words of the recipe's name.")


class _Recipe(BaseModel):
    code: str = Field(description="The recipe code, like RZ-0412.", pattern=r"^RZ-\d{4}$")
    course: str = Field(description="starter, main or dessert", json_schema_extra={"enum": ["starter", "main", "dessert"]})


def kitchen(ran: list[str]) -> list[StructuredTool]:
    def search_recipes(query: str) -> str:
        ran.append(query)
        return f"2 recipes match {query}: RZ-0412 Gazpacho, RZ-0977 Pisto"

    def recipe_card(code: str, course: str = "main") -> str:
        return f"{code}: 4 servings, 35 min"

    return [StructuredTool.from_function(search_recipes, description="Search the recipe book by name.",
                                         args_schema=_Search),
            StructuredTool.from_function(recipe_card, description="One recipe's card.", args_schema=_Recipe)]


async def test_the_strict_policy_refuses_a_query_that_is_the_tools_own_name():
    ran: list[str] = []
    model = ScriptedChatModel(responses=[call_json("search_recipes", {"query": "search_recipes"}),
                                         call_json("search_recipes", {"query": "gazpacho"}),
                                         final("RZ-0412")])
    result = await ReActAgent(model, kitchen(ran), abilities=SMALL_SCHEMA,
                              settings=AgentSettings(answer_when_covered=False)).run("Search the recipe book for gazpacho")
    assert ran == ["gazpacho"]  # the echo never ran
    assert result.steps[0].error and "query" in result.steps[0].error


async def test_a_capable_model_may_run_it_and_is_told_no_one_wrote_it():
    ran: list[str] = []
    call = {"name": "search_recipes", "args": {"query": "Search the recipe book by name"}, "id": "c1"}
    from langchain_core.messages import AIMessage
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[call]), "Es gibt zwei Rezepte."])
    result = await ReActAgent(model, kitchen(ran), abilities=ModelAbilities(tool_call=True)).run(
        "Welche Rezepte gibt es?")
    assert ran == ["Search the recipe book by name"] and not result.steps[0].error
    sent = [message for message in model.calls[1] if getattr(message, "type", "") == "tool"]
    assert "Search the recipe book by name" in sent[0].content.split("\n\n")[-1]
