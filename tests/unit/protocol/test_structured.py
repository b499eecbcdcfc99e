"""structured_llm_call: the three levels and their call ceilings (SPEC §4)."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, Field

from reactgraph import ModelAbilities, StructuredOutputError, structured_llm_call
from reactgraph.testing import ScriptedChatModel
from tests.helpers import JSON_MODE, NATIVE, PROMPTED

SCHEMA = {"title": "pick", "type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
          "required": ["tools"]}
ASK = [HumanMessage("Which tools?")]


def fn_call(args):
    return AIMessage(content="", tool_calls=[{"name": "pick", "args": args, "id": "c1", "type": "tool_call"}])


class Rejected(Exception):
    status_code = 400


async def test_level_1_succeeds_in_one_call():
    model = ScriptedChatModel(responses=[fn_call({"tools": ["a"]})])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=NATIVE)
    assert (result.value, result.level, result.calls, result.error) == ({"tools": ["a"]}, 1, 1, None)
    assert model.call_kwargs[0]["tool_choice"] == "pick"
    assert model.call_kwargs[0]["tools"][0]["function"]["parameters"]["required"] == ["tools"]
    assert result.usage["model_calls"] == 1 and result.usage["total_tokens"] == 15


async def test_level_1_failure_falls_to_level_2():
    model = ScriptedChatModel(responses=[AIMessage(content="no call"), '{"tools": ["b"]}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=NATIVE)
    assert (result.value, result.level, result.calls) == ({"tools": ["b"]}, 2, 2)
    assert model.call_kwargs[1]["response_format"] == {"type": "json_object"}


async def test_a_provider_rejecting_tool_choice_drops_to_the_next_level():
    model = ScriptedChatModel(responses=[Rejected("tool_choice not supported"), '{"tools": []}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=NATIVE)
    assert (result.level, result.calls) == (2, 2)


async def test_level_2_bad_json_gets_one_reformat_retry():
    model = ScriptedChatModel(responses=["not json at all", '{"tools": ["x"]}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=JSON_MODE)
    assert (result.value, result.level, result.calls) == ({"tools": ["x"]}, 2, 2)
    retry = model.calls[1]
    assert retry[-2].content == "not json at all"
    assert retry[-1].content.startswith("Your previous response could not be parsed as valid JSON")


@pytest.mark.parametrize(("abilities", "ceiling"), [(NATIVE, 5), (JSON_MODE, 4), (PROMPTED, 2),
                                                    (ModelAbilities(tool_call=True), 3)])
async def test_everything_failing_stays_within_the_ceiling_and_returns_the_default(abilities, ceiling):
    model = ScriptedChatModel(responses=["garbage"], repeat_last=True)
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=abilities, default_value={"tools": []})
    assert result.calls == ceiling == len(model.calls)
    assert (result.value, result.level) == ({"tools": []}, None)
    assert result.raw == "garbage" and result.error


async def test_everything_failing_without_a_default_raises_with_the_details():
    model = ScriptedChatModel(responses=["garbage"], repeat_last=True)
    with pytest.raises(StructuredOutputError) as info:
        await structured_llm_call(model, ASK, SCHEMA, abilities=PROMPTED)
    assert info.value.result.calls == 2 and info.value.result.raw == "garbage"


async def test_regex_fallback_rescues_level_3():
    def fallback(text):
        names = re.findall(r"tool:(\w+)", text)
        return {"tools": names} if names else None

    model = ScriptedChatModel(responses=["I pick tool:alpha and tool:beta"])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=PROMPTED, regex_fallback=fallback)
    assert (result.value, result.level, result.calls) == ({"tools": ["alpha", "beta"]}, 3, 1)


async def test_parse_fn_raising_fails_that_level():
    def parse(value):
        if not value["tools"]:
            raise ValueError("empty selection")
        return tuple(value["tools"])

    model = ScriptedChatModel(responses=[fn_call({"tools": []}), '{"tools": ["z"]}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=NATIVE, parse_fn=parse)
    assert (result.value, result.level, result.calls) == (("z",), 2, 2)


class Plan(BaseModel):
    """A plan."""

    steps: list[str] = Field(min_length=1)
    confidence: float = Field(ge=0, le=1)


async def test_pydantic_schemas_validate():
    model = ScriptedChatModel(responses=[
        AIMessage(content="", tool_calls=[{"name": "Plan", "args": {"steps": [], "confidence": 3}, "id": "c", "type": "tool_call"}]),
        '{"steps": ["a"], "confidence": 0.5}',
    ])
    result = await structured_llm_call(model, ASK, Plan, abilities=NATIVE)
    assert isinstance(result.value, Plan) and result.value.steps == ["a"] and result.level == 2
    assert model.call_kwargs[0]["tools"][0]["function"]["name"] == "Plan"


async def test_missing_required_keys_fail_a_dict_schema():
    model = ScriptedChatModel(responses=['{"other": 1}', '{"tools": ["ok"]}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=PROMPTED)
    assert (result.value, result.level, result.calls) == ({"tools": ["ok"]}, 3, 2)
    assert "missing required keys: tools" in model.calls[1][-1].content


async def test_a_raising_regex_fallback_is_a_failed_attempt():
    def broken(text):
        raise RuntimeError("bad pattern")

    model = ScriptedChatModel(responses=["no json"], repeat_last=True)
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=PROMPTED, regex_fallback=broken, default_value=None)
    assert (result.value, result.level, result.calls) == (None, None, 2)
    assert result.error == "level 3: regex_fallback raised RuntimeError: bad pattern"


@pytest.mark.parametrize("retries, calls", [(0, 1), (1, 2), (2, 3)])
async def test_reformat_retries_sets_the_calls_of_a_text_level(retries, calls):
    """Plain text only: one call plus ``reformat_retries`` reformat requests, each with the
    shared reformat prompt ('s one bad-output policy)."""
    model = ScriptedChatModel(responses=["no json here"], repeat_last=True)
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=PROMPTED, default_value=None, reformat_retries=retries)
    assert result.value is None and result.calls == calls
    reformats = [m for m in model.calls[-1] if isinstance(m, HumanMessage) and "could not be parsed as valid JSON" in m.content]
    assert len(reformats) == retries
