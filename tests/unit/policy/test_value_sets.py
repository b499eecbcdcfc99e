"""A question that lists several values for one argument of a tool gets one call per value
(SPEC R13.1): "the weather in Lisbon and in Oslo" is two calls of a tool that takes one city.
The lists are read without knowing the domain or the language, anchored on the values the
calls passed; the loop is covered only when every listed value was passed, and each further
call is asked for the question without the values already passed."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool

from reactgraph import AgentSettings, ReActAgent
from reactgraph.policy.value_sets import next_request, pending_items, value_lists
from reactgraph.protocol.prompts import VALUE_SET_REQUEST
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import SMALL_NATIVE, SMALL_SCHEMA


@pytest.mark.parametrize("question, calls, expected", [
    # English "and", the word before each item repeated; read from either item
    ("What's the weather in Lisbon and in Oslo?", [{"city": "Lisbon"}], "What's the weather in Oslo?"),
    ("What's the weather in Lisbon and in Oslo?", [{"city": "Oslo"}], "What's the weather in Lisbon?"),
    # a comma list of numbers: one item at a time, in the question's order
    ("Compound interest on 500 at 3% for 2, 4 and 8 years", [{"principal": 500, "rate": 0.03, "years": 2}],
     "Compound interest on 500 at 3% for 4 and 8 years"),
    ("Compound interest on 500 at 3% for 2, 4 and 8 years", [{"years": 2}, {"years": 4}],
     "Compound interest on 500 at 3% for 8 years"),
    # Spanish "y", German "und", a value the call wrote longer than the question
    ("¿Qué tiempo hace en Madrid y en Lima?", [{"city": "Madrid"}], "¿Qué tiempo hace en Lima?"),
    ("Wie ist das Wetter in Berlin und München?", [{"city": "Berlin, DE"}], "Wie ist das Wetter in München?"),
    # Korean: a word joined by its ending; Japanese: と and 、; Chinese: 和
    ("서울과 부산의 날씨 알려줘", [{"city": "서울"}], "부산의 날씨 알려줘"),
    ("東京、大阪と札幌の天気は？", [{"city": "札幌"}], "東京、大阪の天気は？"),
    ("東京、大阪と札幌の天気は？", [{"city": "東京"}, {"city": "大阪"}], "札幌の天気は？"),
    ("北京和上海的天气怎么样？", [{"city": "北京"}], "上海的天气怎么样？"),
    # names of several words, the last one followed by more words
    ("Show the history of the Ottoman Empire and Mughal Empire with their trade routes.",
     [{"empire": "Ottoman Empire"}], "Show the history of the Mughal Empire with their trade routes."),
])
def test_the_next_call_is_asked_for_the_question_without_the_passed_values(question, calls, expected):
    assert next_request(question, [("lookup", args) for args in calls]) == ("lookup", expected)


@pytest.mark.parametrize("question, calls", [
    ("What's the weather in Lisbon and in Oslo?", [{"city": "Lisbon"}, {"city": "Oslo, NO"}]),
    ("서울과 부산의 날씨 알려줘", [{"city": "서울"}, {"city": "부산"}]),  # "부산" passes "부산의"
    ("Compound interest for 2, 4 and 8 years", [{"years": 8}, {"years": "4"}, {"years": 2.0}]),
])
def test_every_listed_value_passed_leaves_nothing_to_call(question, calls):
    assert next_request(question, [("lookup", args) for args in calls]) is None


@pytest.mark.parametrize("question, args", [
    ("What's the weather in Lisbon?", {"city": "Lisbon"}),  # one value
    ("Weather in Paris, France", {"city": "Paris"}),  # a comma alone makes no list
    ("Compare the climate of Lisbon and Oslo", {"cities": ["Lisbon", "Oslo"]}),  # a list argument
    ("Compare the climate of Lisbon and Oslo", {"first": "Lisbon", "second": "Oslo"}),  # one call, both
    ("Area of a triangle with base 10 and height 5", {"base": 10, "height": 5}),  # numbers of two arguments
    ("Sides 3, 4 and 5: is it a right triangle?", {"a": 3, "b": 4, "c": 5}),
    ("I'm planning a trip to Paris and would like to find a 3-star hotel.", {"location": "Paris"}),  # a request
    ("Find a hotel in Rome, and I'd like it to have a pool.", {"city": "Rome"}),  # ", and": two requests
    ("Book a flight to Tokyo on May 3rd 2022 and another one to Sydney.", {"date": "May 3rd 2022"}),
    ("Directions avoiding highways and toll roads", {"avoid": ["highways", "tolls"]}),
])
def test_a_question_without_several_values_for_one_argument_needs_one_call(question, args):
    assert next_request(question, [("lookup", args)]) is None


@pytest.mark.parametrize("question, calls, expected", [
    # sets of numbers in prose: the sentences of the next set, a shared percentage taken once
    ("A player scores 60% of shots. In 10 shots, what is the chance of exactly 7? In 15 shots, of exactly 9?",
     [{"trials": 10, "successes": 7, "p": 0.6}], "In 15 shots, of exactly 9?"),
    ("A player scores 60% of shots. In 10 shots, what is the chance of exactly 7? In 15 shots, of exactly 9?",
     [{"trials": 10, "successes": 7, "p": 0.6}, {"trials": 15, "successes": 9, "p": 0.6}], None),
    ("Distancia desde el punto (5, 7). Luego desde el punto (10, 15).", [{"x": 5, "y": 7}],
     "Luego desde el punto (10, 15)."),
    # a set taken from the same sentence is left out of the request
    ("What is the greatest common divisor of the pairs (45, 60) and (81, 27)?", [{"a": 45, "b": 60}],
     "What is the greatest common divisor of the pairs () and (81, 27)?"),
    # a list argument takes a set at once
    ("First set: 23, 45, 67. Second set: 12, 34, 56.", [{"numbers": [23, 45, 67]}], "Second set: 12, 34, 56."),
    # numbers before the first set are its context (a version), and a number a text passed is taken
    ("Version 6.3.1 at port 8080: node 12, pod 10.", [{"node": 12, "pod": 10}], None),
    ("Integrate 3x^2 from 1 to 2.", [{"function": "3x**2", "a": 1, "b": 2}], None),
    # one number each: no set
    ("Area of a circle of radius 5 cm, to 2 decimals.", [{"radius": 5}], None),
])
def test_a_further_set_of_numbers_in_prose_gets_its_own_call(question, calls, expected):
    found = next_request(question, [("calc", args) for args in calls])
    assert (found[1] if found else None) == expected


def test_lists_are_read_per_tool_and_only_calls_of_that_tool_pass_them():
    question = "Forecast for Lisbon and Oslo"
    lists = value_lists(question, [("forecast", {"city": "Lisbon"})])
    assert [[item.text for item in found.items] for found in lists] == [["Lisbon", "Oslo"]]
    assert lists[0].tool == "forecast"
    # another tool's call with the second value does not pass the forecast's list
    pending = pending_items(question, [("forecast", {"city": "Lisbon"}), ("news", {"topic": "Oslo"})])
    assert [(found.tool, left) for found, left in pending] == [("forecast", [1])]


def forecast_tool(seen: list[str]) -> StructuredTool:
    def forecast(city: str) -> str:
        seen.append(city)
        return f"{city}: 14 °C, light rain"

    return StructuredTool.from_function(forecast, name="forecast", description="Weather forecast for one city.",
                                        metadata={"keywords": ["clima"]})


def interest_tool() -> StructuredTool:
    def compound_interest(principal: int, rate: float, years: int) -> str:
        return f"{principal} at {rate} for {years} years grows to {round(principal * (1 + rate) ** years, 2)}"

    return StructuredTool.from_function(compound_interest, name="compound_interest",
                                        description="Compound interest on a principal at a yearly rate.")


def call(name: str, args: dict) -> str:
    return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": name, "tool_args": args})


async def test_each_listed_city_gets_its_call_and_the_loop_is_covered_after_the_last():
    seen: list[str] = []
    model = ScriptedChatModel(responses=[call("forecast", {"city": "Lisbon"}), call("forecast", {"city": "Oslo"})])
    result = await ReActAgent(model, [forecast_tool(seen)], abilities=SMALL_SCHEMA).run(
        "What's the weather in Lisbon and in Oslo?")
    assert seen == ["Lisbon", "Oslo"]
    assert result.finish_reason == "covered" and model.kinds == ["tool_loop", "tool_loop"]
    asked = model.calls[1][-1]
    assert isinstance(asked, HumanMessage)
    assert asked.content == VALUE_SET_REQUEST.format(tool_name="forecast", request="What's the weather in Oslo?")


async def test_three_numbers_make_three_calls_each_asked_for_the_next():
    model = ScriptedChatModel(responses=[call("compound_interest", {"principal": 500, "rate": 0.03, "years": y})
                                         for y in (2, 4, 8)])
    result = await ReActAgent(model, [interest_tool()], abilities=SMALL_SCHEMA).run(
        "Compound interest on 500 at 3% for 2, 4 and 8 years?")
    assert [step.tool_args["years"] for step in result.steps] == [2, 4, 8]
    assert result.finish_reason == "covered"
    assert [message.content for message in (calls[-1] for calls in model.calls[1:])] == [
        VALUE_SET_REQUEST.format(tool_name="compound_interest", request=text)
        for text in ("Compound interest on 500 at 3% for 4 and 8 years?", "Compound interest on 500 at 3% for 8 years?")]


async def test_native_mode_requires_the_next_call_too():
    seen: list[str] = []
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("forecast", {"city": city})])
                                         for city in ("Madrid", "Lima")])
    result = await ReActAgent(model, [forecast_tool(seen)], abilities=SMALL_NATIVE).run(
        "¿Cuál es el clima en Madrid y en Lima?")
    assert seen == ["Madrid", "Lima"] and result.finish_reason == "covered"
    assert model.calls[1][-1].content.endswith("¿Cuál es el clima en Lima?")


async def test_a_question_naming_one_value_makes_one_call():
    seen: list[str] = []
    model = ScriptedChatModel(responses=[call("forecast", {"city": "Lisbon"})], repeat_last=True)
    result = await ReActAgent(model, [forecast_tool(seen)], abilities=SMALL_SCHEMA).run("What's the weather in Lisbon?")
    assert seen == ["Lisbon"] and result.finish_reason == "covered" and model.kinds == ["tool_loop"]


async def test_a_model_that_repeats_the_first_value_stalls_instead_of_looping():
    seen: list[str] = []
    model = ScriptedChatModel(responses=[call("forecast", {"city": "Lisbon"})], repeat_last=True)
    result = await ReActAgent(model, [forecast_tool(seen)], abilities=SMALL_SCHEMA).run(
        "What's the weather in Lisbon and in Oslo?")
    assert "Oslo" not in seen and result.finish_reason == "stalled"
    assert len(model.calls) <= 4


async def test_without_answer_when_covered_no_call_is_forced():
    seen: list[str] = []
    model = ScriptedChatModel(responses=[call("forecast", {"city": "Lisbon"}),
                                         json.dumps({"type": "final_answer", "reasoning": "", "answer": "Rain."})])
    result = await ReActAgent(model, [forecast_tool(seen)], abilities=SMALL_SCHEMA,
                              settings=AgentSettings(answer_when_covered=False)).run(
        "What's the weather in Lisbon and in Oslo?")
    assert seen == ["Lisbon"] and result.finish_reason == "final_answer"
    assert not any("again, now for" in str(message.content) for message in model.calls[1])
