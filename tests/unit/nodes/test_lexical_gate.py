"""The lexical gate under the strict policy: a question opens it with a word that can name its
subject or a value a tool takes, never with a common word or a bare year alone.

A naturalist's field kit (not the demo plant): a fauna guide, a currency converter taking an
amount, tide times by harbour and date; a German weather archive; an order desk.
"""

from __future__ import annotations

import json

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import ReActAgent
from reactgraph.core.language import common_words, detect_language
from reactgraph.nodes.select_tools import gate_closes
from reactgraph.testing import ScriptedChatModel
from reactgraph.tools.ranking import ToolRanker, specific_tokens
from tests.helpers import SMALL_SCHEMA


class _Fauna(BaseModel):
    region: str = Field(description="The region, e.g. a national park.")


class _Money(BaseModel):
    amount: float = Field(description="How much money.")
    currency: str = Field(description="The currency to convert into.")


class _Tides(BaseModel):
    harbour: str = Field(description="The harbour's name.")
    day: str = Field(description="The day.", json_schema_extra={"format": "date"})


def field_kit() -> list[StructuredTool]:
    def local_fauna(region: str) -> str:
        return f"{region}: red deer, otters"

    def convert_currency(amount: float, currency: str) -> str:
        return f"{amount} = {amount * 2} {currency}"

    def tide_times(harbour: str, day: str) -> str:
        return f"{harbour} {day}: high water 06:12"

    return [
        StructuredTool.from_function(local_fauna, description="Find information about the animals living in a region.",
                                     args_schema=_Fauna),
        StructuredTool.from_function(convert_currency, description="Convert an amount of money into another currency.",
                                     args_schema=_Money),
        StructuredTool.from_function(tide_times, description="High and low water at a harbour on one day.",
                                     args_schema=_Tides),
    ]


def tool(name: str, description: str) -> StructuredTool:
    def run(key: str) -> str:
        return f"{name}: {key}"

    return StructuredTool.from_function(run, name=name, description=description)


def closes(tools: list[StructuredTool], question: str) -> bool:
    return gate_closes(ToolRanker(tools), question, detect_language(question))


def test_a_common_word_alone_does_not_open_the_gate():
    kit = field_kit()
    assert closes(kit, "Find a picnic spot in Lyon.")  # "find" is the fauna guide's word, but a common one
    assert not closes(kit, "Which animals live in the Cévennes?")  # "animals": its subject
    # German tools, a German question: "Jahr" and "wo" are common German words
    archive = [tool("wetter_archiv", "Liefert die Wetterdaten eines Ortes für ein Jahr.")]
    assert closes(archive, "Wo warst du letztes Jahr?")
    assert not closes(archive, "Wie war das Wetter in Bonn?")


def test_a_common_word_the_tools_name_and_description_both_carry_opens_it():
    desk = [tool("order_lookup", "Look up an order by its number."), tool("open_tickets", "Open help desk tickets.")]
    assert "order" in common_words("en")
    assert not closes(desk, "Where is my order?")
    assert closes(desk, "Where can I get some help for my garden?")  # "help": only the description's


def test_a_bare_year_is_no_value_but_an_amount_for_a_tool_taking_numbers_is():
    kit = field_kit()
    assert closes(kit, "Who won the football world cup in 2014?")
    assert not closes(kit, "What is 250 plus 17?")  # a number the converter's amount could take: the model decides
    words_only = [tool("local_fauna", "Animals of a region.")]
    assert closes(words_only, "What is 250 plus 17?")  # no tool takes a number
    assert not closes(kit, "Wer hat 2014 gewonnen?")  # German to English tools: words cannot place the number


def test_a_value_a_schema_takes_opens_it_in_any_language():
    kit = field_kit()
    assert not closes(kit, "12月19日の潮は？")  # a date, and the tide tool takes one
    assert not closes(kit, "¿Me escribes a ana@example.org?")  # an e-mail address names a record whatever the schemas
    for greeting in ("你好！", "こんにちは！", "안녕하세요", "Bonjour !", "¡Hola!"):
        assert closes(kit, greeting)


def test_common_words_and_one_letter_words_name_no_subject():
    assert specific_tokens("What's the best way to find it?", "en") == set()
    assert "picnic" in specific_tokens("Find a picnic spot", "en")
    assert specific_tokens("这是一些", "zh") == {"这是", "是一"}  # the bigram "一些" is a common word of the list


async def test_a_question_sharing_only_a_common_word_is_answered_without_tools():
    model = ScriptedChatModel(responses=[json.dumps({"type": "final_answer", "reasoning": "", "answer": "Try the park."})])
    result = await ReActAgent(model, field_kit(), abilities=SMALL_SCHEMA).run("Find a picnic spot in Lyon.")
    schema = model.call_kwargs[0]["response_format"]["schema"]
    assert [branch["properties"]["type"]["enum"] for branch in schema.get("anyOf", [schema])] == [["final_answer"]]
    assert result.steps == []
