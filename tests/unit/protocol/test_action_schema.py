"""Constrained decoding: the action schema, the request shape per provider kind,
the ability, and the fallback when a provider refuses the schema."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from reactgraph import AgentSettings, ModelAbilities, ReActAgent, resolve_abilities, structured_llm_call
from reactgraph.protocol.action_schema import (
    ACTION_SCHEMA_NAME,
    action_response_format,
    action_schema,
    schema_response_format,
    strict_json_schema,
    tool_args_schema,
)
from reactgraph.protocol.actions import parse_action
from reactgraph.demo.factory import build_factory_hub
from reactgraph.demo.factory.db import EQUIPMENT
from reactgraph.models.env import abilities_from_env
from reactgraph.providers import GENERIC, get_profile
from reactgraph.testing import ScriptedChatModel

LLAMA = ModelAbilities(json_mode=True, schema_output="json_object_schema")
OPENAI = ModelAbilities(json_mode=True, schema_output="json_schema")


class Refused(Exception):
    """What an HTTP client raises for a request the provider refuses."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.status_code = status_code


def final(text="done"):
    return json.dumps({"type": "final_answer", "reasoning": "enough", "answer": text})


def call_json(name, args):
    return json.dumps({"type": "tool_call", "reasoning": f"use {name}", "tool_name": name, "tool_args": args})


# the action schema ---------------------------------------------------------------------


def test_action_schema_has_one_branch_per_tool_and_a_final_answer(tools):
    offered = tools[:3]
    schema = action_schema(offered)
    branches = schema["anyOf"]
    assert len(branches) == len(offered) + 1
    for tool, branch in zip(offered, branches, strict=False):
        props = branch["properties"]
        assert list(props) == ["type", "reasoning", "tool_name", "tool_args"]
        assert props["type"] == {"type": "string", "enum": ["tool_call"]}
        assert props["tool_name"] == {"type": "string", "enum": [tool.name]}
        assert props["tool_args"] == tool_args_schema(tool)
        assert branch["required"] == ["type", "reasoning", "tool_name", "tool_args"]
        assert branch["additionalProperties"] is False
    last = branches[-1]
    assert list(last["properties"]) == ["type", "reasoning", "answer"]
    assert last["properties"]["type"] == {"type": "string", "enum": ["final_answer"]}
    assert last["required"] == ["type", "reasoning", "answer"] and last["additionalProperties"] is False


def test_argument_schemas_are_carried_over(tools):
    get_status = next(t for t in tools if t.name == "get_status")
    branch = action_schema([get_status])["anyOf"][0]
    assert branch["properties"]["tool_args"] == {
        "type": "object", "properties": {"equipment_id": {"type": "string"}}, "required": ["equipment_id"],
    }


def test_demo_hub_branches_carry_the_known_equipment_ids(tmp_path):
    hub = build_factory_hub(tmp_path / "plant.db")
    schema = action_schema([t for t in hub if t.name in ("get_equipment_status", "get_shift_output")])
    status_args, shift_args = (b["properties"]["tool_args"]["properties"] for b in schema["anyOf"][:2])
    assert status_args["equipment_id"]["enum"] == [row[0] for row in EQUIPMENT]
    assert shift_args["line"]["enum"] == ["Line A", "Line B", "Line C"]
    assert shift_args["day"]["format"] == "date"


def test_a_tool_without_arguments_gets_an_empty_object(tmp_path):
    hub = {t.name: t for t in build_factory_hub(tmp_path / "plant.db")}
    args = tool_args_schema(hub["check_threshold_violations"])
    assert args["type"] == "object" and set(args["properties"]) == {"line"} and "required" not in args


def test_text_bound_splits_between_reasoning_and_answer(tools):
    schema = action_schema(tools[:1], max_text_chars=384)
    assert schema["anyOf"][0]["properties"]["reasoning"]["maxLength"] == 128
    assert schema["anyOf"][-1]["properties"]["answer"]["maxLength"] == 256
    assert "maxLength" not in action_schema(tools[:1])["anyOf"][-1]["properties"]["answer"]


# request shapes --------------------------------------------------------------------------


def test_llama_cpp_shape_is_json_object_with_the_schema(tools):
    fmt = action_response_format("json_object_schema", tools[:2], max_output_tokens=512)
    assert fmt["type"] == "json_object"
    assert fmt["schema"] == action_schema(tools[:2], max_text_chars=384)


def test_openai_shape_is_strict_json_schema_under_an_object_root(tools):
    fmt = action_response_format("json_schema", tools[:2], max_output_tokens=512)
    assert fmt["type"] == "json_schema"
    spec = fmt["json_schema"]
    assert spec["name"] == ACTION_SCHEMA_NAME and spec["strict"] is True
    root = spec["schema"]
    assert root["type"] == "object" and root["required"] == ["action"] and root["additionalProperties"] is False
    assert root["properties"]["action"] == strict_json_schema(action_schema(tools[:2]))  # no maxLength for OpenAI


def test_no_schema_output_sends_nothing(tools):
    assert action_response_format("none", tools) is None
    assert schema_response_format("none", {"type": "object"}, name="x") is None
    with pytest.raises(ValueError, match="unknown schema_output"):
        schema_response_format("grammar", {"type": "object"}, name="x")


def test_strict_schema_closes_objects_and_makes_optional_keys_nullable():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "default": "x"},
            "b": {"type": "integer"},
            "c": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "default": {"type": "array", "items": {"type": "object", "properties": {"d": {"oneOf": [{"type": "string"}]}}}},
        },
        "required": ["b"],
    }
    before = json.dumps(schema, sort_keys=True)
    strict = strict_json_schema(schema)
    assert json.dumps(schema, sort_keys=True) == before  # the input is not modified
    assert strict["required"] == ["a", "b", "c", "default"] and strict["additionalProperties"] is False
    props = strict["properties"]
    assert props["a"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["b"] == {"type": "integer"}
    assert props["c"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    item = props["default"]["anyOf"][0]["items"]  # a property named "default" is kept
    assert item["required"] == ["d"] and item["additionalProperties"] is False
    assert item["properties"]["d"] == {"anyOf": [{"anyOf": [{"type": "string"}]}, {"type": "null"}]}


@pytest.mark.parametrize(
    ("status", "refused"),
    [(400, True), (422, True), (500, True), (429, False), (408, False), (503, False), (None, False)],
)
def test_only_a_provider_refusal_counts_as_rejection(status, refused):
    exc = Refused("x", status) if status is not None else TimeoutError("slow")
    assert GENERIC.refuses_schema(exc) is refused
    # a 500 is llama.cpp's refusal; OpenAI's service refuses with 4xx only (SPEC R13.2)
    assert get_profile("llamacpp").refuses_schema(exc) is refused
    assert get_profile("openai").refuses_schema(exc) is (refused and status != 500)


def test_openai_wrapped_action_is_unwrapped():
    action = parse_action(json.dumps({"action": {"type": "tool_call", "reasoning": "r", "tool_name": "t", "tool_args": {"a": 1}}}))
    assert (action.type, action.tool_name, action.tool_args) == ("tool_call", "t", {"a": 1})


# the ability ---------------------------------------------------------------------------


def test_openai_service_profile_gives_json_schema_and_unknown_servers_nothing():
    assert resolve_abilities(ChatOpenAI(model="gpt-4o-mini", api_key="k")).schema_output == "json_schema"
    assert resolve_abilities(ChatOpenAI(model="gpt-4o-mini", api_key="k").bind(temperature=0)).schema_output == "json_schema"
    local = ChatOpenAI(model="gpt-4o-mini", api_key="k", base_url="http://127.0.0.1:8000/v1")
    assert resolve_abilities(local).schema_output == "none"
    other = ScriptedChatModel(profile={"tool_calling": True, "structured_output": True})
    assert resolve_abilities(other).schema_output == "none"
    assert resolve_abilities(other, {"schema_output": "json_object_schema"}).schema_output == "json_object_schema"


def test_unknown_schema_output_is_refused():
    with pytest.raises(ValueError, match="schema_output"):
        ModelAbilities(schema_output="grammar")


def test_schema_output_from_the_environment():
    assert abilities_from_env({"REACTGRAPH_SCHEMA_OUTPUT": " JSON_Object_Schema "}) == {"schema_output": "json_object_schema"}
    assert abilities_from_env({"REACTGRAPH_SCHEMA_OUTPUT": "none"}) == {"schema_output": "none"}
    with pytest.raises(ValueError, match="REACTGRAPH_SCHEMA_OUTPUT"):
        abilities_from_env({"REACTGRAPH_SCHEMA_OUTPUT": "yes"})


# the loop ------------------------------------------------------------------------------


async def test_json_mode_sends_the_action_schema_of_the_offered_tools(tools):
    model = ScriptedChatModel(responses=[call_json("get_status", {"equipment_id": "CNC-003"}), final("normal")])
    abilities = ModelAbilities(json_mode=True, schema_output="json_object_schema", max_output_tokens=256)
    result = await ReActAgent(model, tools, abilities=abilities).run("status of CNC-003?")
    assert result.answer == "normal" and [s.tool_name for s in result.steps] == ["get_status"]
    expected = action_response_format("json_object_schema", tools, max_output_tokens=256)
    assert [kw["response_format"] for kw in model.call_kwargs] == [expected, expected]


def test_a_synchronous_run_sends_the_action_schema_too(tools):
    """graph.invoke (no event loop) takes the constrained path through the sync model API."""
    from langchain_core.messages import HumanMessage

    from reactgraph import AgentSettings, create_react_graph

    model = ScriptedChatModel(responses=[call_json("get_status", {"equipment_id": "CNC-003"}), final("normal")])
    graph = create_react_graph(model, tools, abilities=LLAMA, settings=AgentSettings(synthesis="always"))
    state = graph.invoke({"messages": [HumanMessage("status of CNC-003?")]})
    assert state["answer"] == "normal" and [s["tool_name"] for s in state["steps"]] == ["get_status"]
    expected = action_response_format("json_object_schema", tools)
    assert [kw["response_format"] for kw in model.call_kwargs] == [expected, expected]
    assert model.apis[:2] == ["generate", "generate"]  # the sync API (async calls record "agenerate")


async def test_the_schema_follows_tool_selection(tools):
    settings = AgentSettings(tool_selection=True, tool_selection_threshold=2, tool_selection_max=2)
    selection = json.dumps({"tools": ["get_status", "broken"]})
    model = ScriptedChatModel(responses=[selection, final("ok")])
    await ReActAgent(model, tools, abilities=LLAMA, settings=settings).run("q")
    offered = [t for t in tools if t.name in ("get_status", "broken")]
    assert model.call_kwargs[-1]["response_format"] == action_response_format("json_object_schema", offered)


async def test_openai_shape_reply_runs_the_tool(tools):
    wrapped = json.dumps({"action": json.loads(call_json("get_status", {"equipment_id": "CNC-001"}))})
    model = ScriptedChatModel(responses=[wrapped, json.dumps({"action": json.loads(final("fine"))})])
    result = await ReActAgent(model, tools, abilities=OPENAI).run("q")
    assert result.answer == "fine"
    assert [(s.tool_name, s.tool_args, s.ok) for s in result.steps] == [("get_status", {"equipment_id": "CNC-001"}, True)]
    assert model.call_kwargs[0]["response_format"]["json_schema"]["strict"] is True


async def test_a_refused_schema_falls_back_to_plain_json_for_the_rest_of_the_run(tools):
    model = ScriptedChatModel(responses=[
        Refused("json_schema is not supported"), call_json("get_status", {"equipment_id": "CNC-003"}), final("normal"),
        call_json("get_status", {"equipment_id": "CNC-001"}), final("also normal"),
    ])
    agent = ReActAgent(model, tools, abilities=LLAMA)
    result = await agent.run("status?")
    assert result.answer == "normal"
    assert result.iterations == 2  # the refused request used no iteration
    assert [s.tool_name for s in result.steps] == ["get_status"] and result.steps[0].ok
    formats = [kw.get("response_format") for kw in model.call_kwargs]
    assert formats[0]["schema"] == action_schema(tools)  # refused
    assert formats[1:] == [{"type": "json_object"}, {"type": "json_object"}]  # same iteration, then the next one
    await agent.run("and CNC-001?")  # the next run starts constrained again: the fallback was per run
    assert model.call_kwargs[3]["response_format"]["schema"] == action_schema(tools)


async def test_a_failure_that_is_no_refusal_keeps_the_schema(tools):
    model = ScriptedChatModel(responses=[
        TimeoutError("read timed out"), call_json("get_status", {"equipment_id": "CNC-003"}), final("normal"),
    ])
    result = await ReActAgent(model, tools, abilities=LLAMA).run("status?")
    assert result.answer == "normal" and result.iterations == 2
    formats = [kw.get("response_format") for kw in model.call_kwargs]
    assert formats[1] == {"type": "json_object"}  # this call asked again without the schema
    assert formats[2]["type"] == "json_object" and "schema" in formats[2]  # the next iteration is constrained


async def test_a_refusal_without_json_mode_falls_back_to_no_response_format(tools):
    model = ScriptedChatModel(responses=[Refused("no"), final("ok")])
    result = await ReActAgent(model, tools, abilities=ModelAbilities(schema_output="json_object_schema")).run("q")
    assert result.answer == "ok"
    assert "response_format" not in model.call_kwargs[1]


# structured_llm_call level 2 ------------------------------------------------------------

SCHEMA = {"title": "pick", "type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
          "required": ["tools"]}
ASK = [HumanMessage("Which tools?")]


async def test_level_2_sends_the_callers_schema_in_the_llama_cpp_shape():
    model = ScriptedChatModel(responses=['{"tools": ["a"]}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=LLAMA)
    assert (result.value, result.level, result.calls) == ({"tools": ["a"]}, 2, 1)
    assert model.call_kwargs[0]["response_format"] == {"type": "json_object", "schema": SCHEMA}


async def test_level_2_sends_the_callers_schema_in_the_openai_shape():
    model = ScriptedChatModel(responses=['{"tools": ["a"]}'])
    await structured_llm_call(model, ASK, SCHEMA, abilities=OPENAI)
    assert model.call_kwargs[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "pick", "schema": strict_json_schema(SCHEMA), "strict": True},
    }


async def test_level_2_refused_schema_retries_as_plain_json_within_the_level():
    model = ScriptedChatModel(responses=[Refused("bad schema"), '{"tools": ["b"]}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=LLAMA)
    assert (result.value, result.level, result.calls) == ({"tools": ["b"]}, 2, 2)
    assert model.call_kwargs[1]["response_format"] == {"type": "json_object"}
    assert model.calls[1] == model.calls[0]  # the same prompt, no reformat request


async def test_level_2_refused_schema_without_json_mode_goes_to_level_3():
    model = ScriptedChatModel(responses=[Refused("bad schema"), '{"tools": ["c"]}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=ModelAbilities(schema_output="json_object_schema"))
    assert (result.value, result.level, result.calls) == ({"tools": ["c"]}, 3, 2)
    assert "response_format" not in model.call_kwargs[1]


async def test_level_2_with_a_schema_stays_within_two_calls():
    model = ScriptedChatModel(responses=["nope", "still nope", '{"tools": []}'])
    result = await structured_llm_call(model, ASK, SCHEMA, abilities=LLAMA)
    assert (result.level, result.calls) == (3, 3)
    assert [kw.get("response_format", {}).get("schema") for kw in model.call_kwargs] == [SCHEMA, SCHEMA, None]
