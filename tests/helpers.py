"""Test helpers shared by several test modules: a long plant log tool, the scripted calls
that read it, a small-context model's abilities, a scripted model with hooks, and a tool
that waits for the test."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from pydantic import Field

from reactgraph import ModelAbilities
from reactgraph.testing import ScriptedChatModel, call_kind, tool_call

LOG_LINE = "CNC-003 spindle 온도 71.5°C, vibration 4.2 mm/s, alarm W-1105 진동 증가; operator note: check bearing. "


BIG_LOG = LOG_LINE * 70


@tool
def read_log(machine: str) -> str:
    """Return the long maintenance log of a machine."""
    return f"{machine} log:\n{BIG_LOG}"


def log_calls(count: int) -> list[AIMessage]:
    return [AIMessage(content="", tool_calls=[tool_call("read_log", {"machine": f"CNC-00{i}"}, f"c{i}")])
            for i in range(1, count + 1)]


SMALL = ModelAbilities(tool_call=True, context_window=9_000, max_output_tokens=1_000)  # budget 8,000 tokens


class GatedScan:
    """A ``gated_scan(machine)`` tool that sets ``started`` when called and returns
    ``"<machine>: normal"`` once the test sets ``release``."""

    def __init__(self) -> None:
        self.started, self.release = asyncio.Event(), asyncio.Event()

        @tool
        async def gated_scan(machine: str) -> str:
            """A scan that waits for the test."""
            self.started.set()
            await self.release.wait()
            return f"{machine}: normal"

        self.tool = gated_scan

    @staticmethod
    def call(machine: str, call_id: str) -> AIMessage:
        """A model turn calling the tool on ``machine``."""
        return AIMessage(content="", tool_calls=[tool_call("gated_scan", {"machine": machine}, call_id)])


class HookedModel(ScriptedChatModel):
    """A scripted model that awaits ``hooks[n]`` right after its n-th loop call (1-based)
    has produced its response, and ``synthesis_hook`` before synthesis streams: a
    follow-up injected there arrives while that model call is in flight."""

    hooks: dict[int, Any] = Field(default_factory=dict)
    synthesis_hook: Any = None

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                         **kwargs: Any) -> Any:
        result = await super()._agenerate(messages, stop, run_manager, **kwargs)
        hook = self.hooks.pop(len(self.calls), None)
        if hook is not None:
            await hook()
        return result

    async def _astream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                       **kwargs: Any) -> Any:
        if call_kind(run_manager) == "synthesis" and self.synthesis_hook is not None:
            await self.synthesis_hook()
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk
