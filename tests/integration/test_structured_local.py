"""structured_llm_call and tool selection on the real embedded model."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from reactgraph import AgentSettings, ModelAbilities, ReActAgent, check_protocol, structured_llm_call
from reactgraph.demo.factory import DEMO_SYSTEM_PROMPT, build_factory_hub

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

SCHEMA = {"title": "person", "type": "object",
          "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}
ASK = [HumanMessage("Ann is 31 years old. Give her name and age as JSON with keys name and age.")]


@pytest.mark.parametrize(("abilities", "ceiling"), [(ModelAbilities(tool_call=True, json_mode=True), 5),
                                                    (ModelAbilities(json_mode=True), 4)], ids=["all-levels", "json-only"])
async def test_structured_call_returns_within_the_ceiling(local_server, abilities, ceiling):
    sentinel = {"name": "default", "age": -1}
    result = await structured_llm_call(local_server.chat_model(), ASK, SCHEMA, abilities=abilities, default_value=sentinel)
    assert 1 <= result.calls <= ceiling
    assert result.usage["model_calls"] == result.calls
    if result.level is None:
        assert result.value == sentinel
    else:
        assert set(result.value) >= {"name", "age"}
    if not abilities.tool_call:  # JSON mode really went through the server: the reply is JSON text
        assert result.level in (2, 3, None)
        if result.level == 2:
            json.loads(result.raw)


async def test_demo_hub_run_with_selection_completes(local_server, tmp_path):
    hub = build_factory_hub(tmp_path / "factory.db")
    assert len(hub) > 12
    # three tools to keep: with the small model's one, a clear lexical winner settles the
    # selection without a call, and this test is about the call
    agent = ReActAgent(local_server.chat_model(), hub, abilities=local_server.abilities,
                       settings=AgentSettings(max_iterations=3, system_prompt=DEMO_SYSTEM_PROMPT, tool_timeout=30,
                                              tool_selection_max=3))
    events = [event async for event in agent.astream_events("CNC-003 상태 확인해줘")]
    assert events[0].channel == "phase" and events[0].data == {"phase": "selecting_tools", "total_tools": len(hub)}
    assert events[-1].channel == "done" and events[-1].data["answer"].strip()
    result = await agent.run("Compare CNC-001 and CNC-003")
    check_protocol(result.messages)
    assert result.answer.strip()


class MachineState(BaseModel):
    """The state of one machine of the plant."""

    equipment_id: str
    state: Literal["normal", "warning", "stopped"]


async def test_response_format_on_the_embedded_model_returns_a_validated_object(local_server, tmp_path):
    """``response_format`` goes through ``structured_llm_call`` (SPEC §4), so even
    the embedded model returns an object that passed the pydantic model's validation."""
    agent = ReActAgent(local_server.chat_model(), build_factory_hub(tmp_path / "factory.db"),
                       abilities=local_server.abilities, response_format=MachineState,
                       settings=AgentSettings(max_iterations=3, system_prompt=DEMO_SYSTEM_PROMPT, tool_timeout=30))
    result = await agent.run("What is the state of CNC-003?")
    check_protocol(result.messages)
    assert isinstance(result.structured_response, MachineState)
    assert result.structured_response.equipment_id.strip()
