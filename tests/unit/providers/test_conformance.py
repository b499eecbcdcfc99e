"""Provider conformance (SPEC R13.2): reactgraph driven through ``ChatOpenAI``, as
users drive it, against a strict fake server of every provider family (real HTTP over
loopback, :mod:`tests.fakeproviders`). Each server first proves it is strict; then the whole
loop in both modes, parallel tools, the synthesis stream and ``structured_llm_call`` at each
level run against it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from reactgraph import AgentSettings, ReActAgent, resolve_abilities, structured_llm_call
from reactgraph.providers import PROFILES
from tests.fakeproviders import PLANT_TOOLS, FakeProvider, fake_provider

CNC1 = {"equipment_id": "CNC-001"}
CNC3 = {"equipment_id": "CNC-003"}
PLAN = [[("get_equipment_status", CNC1), ("get_equipment_status", CNC3)], [("list_alarms", {})],
        "CNC-003 is in warning with alarm W-1105; CNC-001 runs normally."]
SYNTHESIS = "**CNC-003** is in warning (W-1105: vibration rising); CNC-001 is normal."

# How each family is reached: the model name that identifies it, or an explicit choice.
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("gpt-4o-mini", {"provider": "openai"}),
    "deepseek": ("deepseek-reasoner", {}),
    "vllm": ("Qwen/Qwen3-8B", {}),
    "ollama": ("llama3.1:8b", {}),
    "lmstudio": ("mistral-nemo-instruct", {"provider": "lmstudio"}),
    "llamacpp": ("qwen2.5-7b-instruct-q4_k_m.gguf", {"tool_call": True}),
    "openai_compatible": ("my-model", {"tool_call": True, "json_mode": True}),
}


def _client(url: str, profile: str, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(model=MODELS[profile][0], base_url=url, api_key="k", max_retries=0, max_tokens=256,
                      http_async_client=httpx.AsyncClient(trust_env=False), **kwargs)


def _agent(llm: ChatOpenAI, profile: str, *, native: bool = True) -> ReActAgent:
    return ReActAgent(llm, PLANT_TOOLS, use_native_tools=native,
                      abilities=MODELS[profile][1] or None,
                      settings=AgentSettings(model_attempts=1, synthesis="always"))  # the two phases


def test_every_profile_has_a_fake_server():
    assert set(MODELS) == set(PROFILES)


# every server is strict -------------------------------------------------------------------

_CALL = {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "list_alarms", "arguments": "{}"}}]}
_RESULT = {"role": "tool", "tool_call_id": "c1", "content": "W-1105"}
_USER = {"role": "user", "content": "alarms?"}
BROKEN: dict[str, dict[str, Any]] = {
    "openai": {"messages": [_USER, {**_CALL, "reasoning_content": "think"}, _RESULT]},
    "deepseek": {"messages": [_USER, _CALL, _RESULT]},
    "vllm": {"messages": [_USER, _CALL, _USER, _RESULT]},
    "ollama": {"messages": [_USER, _CALL, _RESULT]},
    "lmstudio": {"messages": [_USER], "response_format": {"type": "json_object"}},
    "llamacpp": {"messages": [_USER], "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
    "openai_compatible": {"messages": [_USER, _RESULT]},
}


@pytest.mark.parametrize("profile", list(MODELS))
async def test_each_strict_server_refuses_a_request_that_breaks_its_rule(profile):
    server = fake_provider(profile, plan=["ok"])
    async with server.serving() as url, httpx.AsyncClient(trust_env=False) as client:
        refused = await client.post(f"{url}/chat/completions", json={"model": "m", **BROKEN[profile]})
        fine = await client.post(f"{url}/chat/completions", json={"model": "m", "messages": [_USER]})
    assert refused.status_code in (400, 500) and refused.json()["error"]["message"] == server.refused[0]
    assert fine.status_code == 200
    assert fine.json()["choices"][0]["message"]["content"] == ("" if server.empty_final else "ok")


# the profile is chosen as documented -------------------------------------------------------


@pytest.mark.parametrize("profile", list(MODELS))
def test_the_profile_is_chosen_from_the_model_name_or_the_setting(profile):
    llm = ChatOpenAI(model=MODELS[profile][0], base_url="http://127.0.0.1:9/v1", api_key="k")
    assert resolve_abilities(llm, MODELS[profile][1] or None).provider == profile


# the whole loop ---------------------------------------------------------------------------


async def _events(agent: ReActAgent, query: str) -> list[Any]:
    return [event async for event in agent.astream_events(query)]


def _tool_requests(server: FakeProvider) -> list[dict[str, Any]]:
    return [body for body in server.requests if body.get("tools")]


@pytest.mark.parametrize("profile", list(MODELS))
async def test_native_loop_with_parallel_tools_and_streamed_synthesis(profile):
    server = fake_provider(profile, plan=PLAN, synthesis=SYNTHESIS)
    async with server.serving() as url:
        agent = _agent(_client(url, profile), profile)
        assert agent.mode == "native"
        events = await _events(agent, "Compare CNC-001 and CNC-003, and list the alarms")
    assert server.refused == []
    done = [e for e in events if e.channel == "step" and e.data.get("type") == "iteration"
            and e.data.get("status") == "done"]
    assert sorted((e.data["tool_name"], str(e.data["observation"])[:7]) for e in done) == [
        ("get_equipment_status", "CNC-001"), ("get_equipment_status", "CNC-003"), ("list_alarms", "W-1105 ")]
    deltas = "".join(e.data["content"] for e in events if e.channel == "answer" and e.data.get("status") == "delta")
    assert deltas == SYNTHESIS  # the answer stream holds the answer only, never reasoning
    final = events[-1]
    assert final.channel == "done" and final.data["answer"] == SYNTHESIS and final.data["iterations"] == 3
    assert final.data["usage"]["input_tokens"] >= 4 * 20  # three loop calls and the synthesis, usage read
    assert len(_tool_requests(server)) == 3


@pytest.mark.parametrize("profile", list(MODELS))
async def test_json_mode_loop(profile):
    server = fake_provider(profile, plan=PLAN, synthesis=SYNTHESIS)
    async with server.serving() as url:
        agent = _agent(_client(url, profile), profile, native=False)
        result = await agent.run("Compare CNC-001 and CNC-003, and list the alarms")
        answer = "".join([chunk async for chunk in agent.stream_answer("Compare CNC-001 and CNC-003", result)])
    assert server.refused == [] and _tool_requests(server) == []
    assert [(s.tool_name, s.tool_args) for s in result.steps] == [("get_equipment_status", CNC1),
                                                                  ("list_alarms", {})]
    assert result.answer == PLAN[-1] and answer == SYNTHESIS


@pytest.mark.parametrize("profile", list(MODELS))
async def test_streaming_client_reads_tool_calls_streamed_in_pieces(profile):
    server = fake_provider(profile, plan=PLAN, synthesis=SYNTHESIS)
    async with server.serving() as url:
        result = await _agent(_client(url, profile, streaming=True), profile).run("Compare CNC-001 and CNC-003")
    assert server.refused == [] and all(body.get("stream") for body in server.requests)
    assert [s.tool_name for s in result.steps] == ["get_equipment_status", "get_equipment_status", "list_alarms"]
    assert result.usage.input_tokens == 3 * 20  # usage came only in each stream's last chunk


# structured_llm_call at each level ---------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
          "required": ["tools"]}
LEVELS = {1: {"tool_call": True}, 2: {"tool_call": False}, 3: {"tool_call": False, "json_mode": False,
                                                                  "schema_output": "none"}}


@pytest.mark.parametrize("level", [1, 2, 3])
@pytest.mark.parametrize("profile", list(MODELS))
async def test_structured_call_at_each_level(profile, level):
    server = fake_provider(profile, plan=["unused"], structured={"tools": ["list_alarms"]})
    abilities = {**MODELS[profile][1], **LEVELS[level]}
    async with server.serving() as url:
        result = await structured_llm_call(_client(url, profile), [HumanMessage("Which tools?")], SCHEMA,
                                           abilities=abilities)
    assert (result.value, result.level, result.calls) == ({"tools": ["list_alarms"]}, level, 1)
    assert server.refused == []


async def test_a_llamacpp_500_to_a_schema_format_is_a_refusal_for_the_rest_of_the_run():
    server = fake_provider("llamacpp", plan=PLAN)
    async with server.serving() as url:
        agent = ReActAgent(_client(url, "llamacpp"), PLANT_TOOLS, use_native_tools=False,
                           abilities={"schema_output": "json_schema"}, settings=AgentSettings(model_attempts=1))
        result = await agent.run("Compare CNC-001 and CNC-003")
    assert len(server.refused) == 1 and "json_schema" in server.refused[0]  # asked once, then plain JSON mode
    assert [s.tool_name for s in result.steps] == ["get_equipment_status", "list_alarms"]
    assert result.answer == PLAN[-1]
