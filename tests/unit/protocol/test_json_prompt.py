"""The JSON-mode system prompt keeps what is the same for every question before what is not,
so a prefix cache (llama.cpp's, a provider's) serves the reply protocol too."""

from __future__ import annotations

import os.path

from langchain_core.tools import StructuredTool

from reactgraph import AgentSettings, ReActAgent
from reactgraph.protocol.prompts import json_mode_system_prompt
from reactgraph.testing import ScriptedChatModel
from tests.helpers import SMALL_SCHEMA


def _tool(name: str, description: str) -> StructuredTool:
    def run(code: str) -> str:
        return f"{name}: {code}"

    return StructuredTool.from_function(run, name=name, description=description)


TOOLS = [
    _tool("train_departures", "Departure time and platform of a train, by its number."),
    _tool("hotel_rooms", "Free rooms of a hotel tonight, by the hotel's code."),
    _tool("weather_now", "Current weather of a city, by its airport code."),
]


def _loop_system_prompt(model: ScriptedChatModel) -> str:
    """The system prompt of the model's first loop call."""
    return str(model.calls[model.kinds.index("tool_loop")][0].content)


async def test_a_small_models_prompts_share_the_reply_protocol_before_their_ranked_tools():
    """A small model's tools are ranked per question (SPEC R13.1), so two questions' loop
    prompts differ from the first tool on: the whole reply protocol comes before it."""
    prompts = []
    for question in ("Which platform does train ICE 578 depart from?", "What is the weather in the city of CDG now?"):
        model = ScriptedChatModel(responses=['{"type": "final_answer", "reasoning": "", "answer": "-"}'])
        agent = ReActAgent(model, TOOLS, use_native_tools=False, abilities=SMALL_SCHEMA,
                           settings=AgentSettings(system_prompt="You help travellers.", tool_selection=False,
                                                  lexical_gate=False))
        await agent.run(question)
        prompts.append(_loop_system_prompt(model))
    shared = os.path.commonprefix(prompts)
    assert prompts[0] != prompts[1]
    assert shared.startswith("You help travellers.")
    assert "Reply with exactly ONE JSON object" in shared and '"final_answer"' in shared
    assert not any(tool.name in shared for tool in TOOLS)  # the first difference is the first tool


def test_the_prompt_names_every_tool_with_its_arguments_after_the_protocol():
    prompt = json_mode_system_prompt("Base.", TOOLS)
    protocol_end = prompt.index("You can call these tools:")
    assert prompt.startswith("Base.\n\n") and prompt.index("Reply with exactly ONE JSON object") < protocol_end
    for tool in TOOLS:
        line = next(line for line in prompt.splitlines() if line.startswith(f"- {tool.name}: "))
        assert prompt.index(line) > protocol_end and tool.description in line
    assert prompt.count('"required": ["code"]') == len(TOOLS)  # each tool's argument schema
