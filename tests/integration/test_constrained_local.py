"""Constrained JSON mode on the real embedded model: every loop reply is a
parseable action naming an offered tool, because the server is given the action schema."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from reactgraph import AgentSettings, ReActAgent
from reactgraph.protocol.actions import parse_action
from reactgraph.demo.factory import build_factory_hub

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

OFFERED = ("get_equipment_status", "compare_equipment", "list_active_alarms", "get_alarm_details", "get_line_oee")


async def test_constrained_json_mode_writes_only_valid_actions(local_server, tmp_path):
    tools = [t for t in build_factory_hub(tmp_path / "factory.db") if t.name in OFFERED]
    assert local_server.abilities.schema_output == "json_object_schema"
    agent = ReActAgent(local_server.chat_model(), tools, use_native_tools=False, abilities=local_server.abilities,
                       settings=AgentSettings(max_iterations=2, tool_selection=False))
    result = await agent.run("What is the current status of INJ-002?")
    assistant = [m for m in result.messages if isinstance(m, AIMessage)]
    # A loop that ends without the model's own answer — at the cap, or once the observation covers
    # the question (the small model's policy) — closes with one more assistant message.
    closing = 1 if result.finish_reason in ("max_iterations", "covered") else 0
    assert len(assistant) == result.iterations + closing and result.iterations >= 1
    replies = assistant[: result.iterations]
    for reply in replies:
        action = parse_action(reply.content)
        assert not action.parse_failed, reply.content
        assert action.type == "final_answer" or action.tool_name in OFFERED, reply.content
    assert result.steps and result.steps[0].tool_name in OFFERED
