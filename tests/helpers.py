"""Test helpers shared by several test modules: small tools with known behaviour, a small
plant of four machine tools and JSON actions, the model abilities tests run with, a long
plant log tool, the scripted calls that read it, a small-context model's abilities, a
scripted model with hooks, a tool that waits for the test, and a wait on a condition
where no event exists."""

from __future__ import annotations

from pathlib import Path

import asyncio
import inspect
import json
import time
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import StructuredTool, tool
from pydantic import BaseModel, Field

from reactgraph import Artifact, ModelAbilities
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


# Small tools with known behaviour (the ``tools`` fixture gives them all), for tests of
# general behaviour: a status, slow ones (async, and sync in a worker thread), one that
# always raises, one that never returns in time, one returning a dict, one an artifact.

@tool
def get_status(equipment_id: str) -> str:
    """Return the status of one machine."""
    return f"{equipment_id}: normal"


@tool
async def slow_async(x: int) -> str:
    """Sleep half a second (async), then echo."""
    await asyncio.sleep(0.5)
    return f"async {x}"


@tool
def slow_sync(x: int) -> str:
    """Sleep half a second (in a worker thread), then echo."""
    time.sleep(0.5)
    return f"sync {x}"


@tool
def broken(x: int) -> str:
    """Always raises."""
    raise RuntimeError(f"sensor bus offline for {x}")


@tool
async def hangs(x: int) -> str:
    """Never returns in time."""
    await asyncio.sleep(30)
    return "late"


@tool
def as_dict(x: int) -> dict:
    """Returns a dict, not a string."""
    return {"value": x, "unit": "°C"}


@tool
def report(title: str) -> Artifact:
    """Returns an HTML artifact."""
    return Artifact(f"{title}.html", "<h1>" + "x" * 5000 + "</h1>")


# A small plant of four machine tools (ids in an enum), and JSON actions as a model in JSON
# mode writes them: for the tests of ranking, selection, the ids a question asks about and
# grounding.

MACHINES = ["CNC-001", "CNC-002", "CNC-003", "PRS-001"]  # MachineArgs' enum


class MachineArgs(BaseModel):
    machine_id: Literal["CNC-001", "CNC-002", "CNC-003", "PRS-001"] = Field(description="Machine id")


def make_tool(name: str, description: str, keywords: list[str] | None = None, output: str = "") -> StructuredTool:
    """A tool over one machine id of :data:`MACHINES` (``keywords`` as its metadata) answering
    ``output``, or a status line with a temperature, a vibration and an alarm."""
    def run(machine_id: str) -> str:
        return output or f"{name} of {machine_id}: temperature 48.7 °C, vibration 1.2 mm/s, alarm W-1105"

    return StructuredTool.from_function(run, name=name, description=description, args_schema=MachineArgs,
                                        metadata={"keywords": keywords or []})


def office_tools() -> list[StructuredTool]:
    """Twelve tools of office information no question of a test is about (``payroll_info``,
    ``holiday_info``, …): enough tools beside a test's own that the strict policy selects."""
    topics = ["payroll", "holiday", "parking", "canteen", "badge", "printer", "travel", "expense", "laptop",
              "training", "newsletter", "library"]
    return [StructuredTool.from_function(lambda query="": "nothing", name=f"{topic}_info",
                                         description=f"Office {topic} information.") for topic in topics]


def plant_tools() -> list[StructuredTool]:
    """Four machine tools: a listing, energy, the maintenance log and the status (the last
    three with Korean keywords)."""
    return [
        make_tool("list_machines", "List every machine with its line."),
        make_tool("energy_report", "Electricity use in kWh of a machine.", ["에너지", "전력"]),
        make_tool("maintenance_log", "Past work orders and repairs of a machine.", ["정비", "이력"]),
        make_tool("machine_status", "Current state, readings and alarms of one machine.", ["상태", "현황"]),
    ]


def final(text: str) -> str:
    """A JSON-mode final answer."""
    return json.dumps({"type": "final_answer", "reasoning": "done", "answer": text})


def call_json(name: str, args: dict) -> str:
    """A JSON-mode tool call."""
    return json.dumps({"type": "tool_call", "reasoning": "look", "tool_name": name, "tool_args": args})


# The model abilities tests run with, one name per set of values (a test that needs other
# values says so with its own, named for the reason).
NATIVE = ModelAbilities(tool_call=True, json_mode=True)
"""A capable model: native tool calls, and JSON mode (``response_format``) where a call
falls back to JSON actions or asks for structured output."""
NATIVE_TOOLS_ONLY = ModelAbilities(tool_call=True)
"""Native tool calls and no JSON mode: a fall back to JSON actions is asked for in the
prompt alone, with no ``response_format``."""
JSON_MODE = ModelAbilities(json_mode=True)
"""No tool calling: JSON actions with ``response_format={"type": "json_object"}``."""
JSON_SCHEMA = ModelAbilities(json_mode=True, schema_output="json_object_schema")
"""No tool calling: JSON actions constrained by the action schema (llama.cpp's form)."""
PROMPTED = ModelAbilities()
"""No tool calling, no JSON mode: the JSON actions are asked for in the prompt alone."""
SMALL_NATIVE = ModelAbilities(tool_call=True, json_mode=True, small=True)
""":data:`NATIVE` on a small model: the strict safeguards."""
SMALL_SCHEMA = ModelAbilities(json_mode=True, schema_output="json_object_schema", small=True)
""":data:`JSON_SCHEMA` on a small model (the embedded one's abilities): the strict safeguards."""
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


async def wait_until(condition: Any, what: str, timeout: float = 10.0, every: float = 0.01) -> None:
    """Wait until ``condition()`` (a function, sync or async) returns something true: for
    states no event announces (a model call started, a result handed to a saver). Checks
    every ``every`` seconds.

    Raises:
        AssertionError: ``condition`` did not hold within ``timeout`` seconds (names ``what``).
    """
    deadline = time.monotonic() + timeout
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(every)


REPO = Path(__file__).resolve().parents[1]
"""The repository's root: test files reach the package, docs and benches through it,
whichever folder of ``tests/`` they sit in."""
UNIT_DATA = REPO / "tests" / "unit" / "data"
"""The unit tests' stored data (graph shapes, SSE golden files)."""
