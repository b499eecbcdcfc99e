"""Apps, tools and scripted replies shared by the HTTP server tests (unit: ASGI transport;
integration: a loopback uvicorn server)."""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE, get_status

SMALL = ModelAbilities(tool_call=True, json_mode=True, context_window=9_000, max_output_tokens=1_000)  # 8,000-token budget


LOG_LINE = "CNC-003 spindle 온도 71.5°C, vibration 4.2 mm/s, alarm W-1105 진동 증가; operator note: check bearing. "


QUERY = "CNC-001과 CNC-002 로그 확인해줘"


FOLLOW_UP = "also check CNC-003"


@tool
def read_log(machine: str) -> str:
    """Return the long maintenance log of a machine (about 2,000 tokens)."""
    return f"{machine} log:\n{LOG_LINE * 70}"


def filler_tools(count: int) -> list[StructuredTool]:
    def make(i: int) -> StructuredTool:
        return StructuredTool.from_function(lambda machine: f"connector {i}: {machine}", name=f"connector_{i:02d}",
                                            description=f"Reads connector {i} data for one machine.")
    return [make(i) for i in range(count)]


def logs(*machines: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call("read_log", {"machine": m}, f"call-{m}") for m in machines])


def selection(names: list[str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "select_tools", "args": {"tools": names}, "id": "s1", "type": "tool_call"}])


def app_for(model: ScriptedChatModel, tools: list, *, abilities: ModelAbilities = NATIVE,
            settings: ServerSettings | None = None, **agent_kwargs: Any):
    """A server app for a :class:`ReActAgent` of ``model`` with the seed's two phases
    (``synthesis="always"``) and its selection call over many tools (``tool_selection=True``),
    whatever the model's policy: the cases check those calls' events."""
    agent_kwargs.setdefault("checkpointer", InMemorySaver())
    agent = ReActAgent(model, tools, abilities=abilities, settings=AgentSettings(synthesis="always", tool_selection=True),
                       **agent_kwargs)
    return create_app(agent, settings or ServerSettings(api_key=""))


def asgi_client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")


def shape(channel: str, data: dict[str, Any]) -> tuple:
    """An event reduced to what identifies its row of the SPEC §8 table."""
    if channel == "step":
        return channel, data["type"], data["status"]
    if channel == "answer":
        return channel, data["status"]
    return (channel,)
