"""The SSE wire format of one scripted run, byte for byte (SPEC §8): tool
selection, a tool call, a failing tool, an artifact, compactions and the streamed
synthesis; and a JSON-mode run with an unparseable reply. Recorded before the issue-17 redesign; a refactor must not change one byte of
it. The newer kinds (stall, answer reset, inject, approval, error, DAG mode's phase, plan,
dag_step, analysis) were recorded before the issue-19 typed events. Only the wall-clock fields (``elapsed``, ``iter_elapsed``) and JSON mode's random
tool call ids are masked."""

from __future__ import annotations

import os
import re

import httpx
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, Artifact, ModelAbilities, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE, UNIT_DATA, HookedModel

DATA = UNIT_DATA
# Every scenario sets ``synthesis="always"``: the bytes were recorded with the seed's two phases,
# before a capable model's policy defaulted to ``"auto"``.
SMALL = ModelAbilities(tool_call=True, json_mode=True, context_window=9_000, max_output_tokens=1_000)
CLOCK = re.compile(rb'"(elapsed|iter_elapsed)": [0-9.e-]+')
RANDOM_ID = re.compile(rb'"call_[0-9a-f]{24}"')
INTERRUPT_ID = re.compile(rb'"interrupt_id": "[0-9a-f]+"')


@tool
def read_log(machine: str) -> str:
    """Return the long maintenance log of a machine."""
    return f"{machine} log:\n" + "CNC spindle 71.5°C, vibration 4.2 mm/s, alarm W-1105. " * 400


@tool
def broken(machine: str) -> str:
    """Always fails."""
    raise RuntimeError(f"sensor bus offline for {machine}")


@tool
def report(title: str) -> Artifact:
    """Returns an HTML report."""
    return Artifact(f"{title}.html", "<h1>report</h1>")


def fillers(count: int) -> list[StructuredTool]:
    def make(i: int) -> StructuredTool:
        return StructuredTool.from_function(lambda machine: f"c{i} {machine}", name=f"connector_{i:02d}",
                                            description=f"Reads connector {i} data for one machine.")
    return [make(i) for i in range(count)]


def calls(*pairs: tuple[str, dict, str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call(name, args, call_id) for name, args, call_id in pairs])


async def post(agent: ReActAgent, message: str) -> bytes:
    app = create_app(agent, ServerSettings(api_key=""))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        response = await client.post("/threads/golden/runs", json={"message": message})
    assert response.status_code == 200
    return RANDOM_ID.sub(b'"call_<random>"', CLOCK.sub(rb'"\1": 0', response.content))


async def native_run() -> bytes:
    model = ScriptedChatModel(responses=[
        AIMessage(content="", tool_calls=[{"name": "select_tools", "args": {"tools": ["read_log", "broken", "report"]},
                                            "id": "s1", "type": "tool_call"}]),
        calls(("read_log", {"machine": "CNC-001"}, "c1")),
        calls(("read_log", {"machine": "CNC-002"}, "c2")),
        calls(("broken", {"machine": "CNC-003"}, "c3")),
        calls(("report", {"title": "weekly"}, "c4")),
        "CNC-001 and CNC-002 logs read; CNC-003 unreachable.",
    ], synthesis="**CNC-001** shows W-1105; CNC-003 could not be read.")
    summarizer = ScriptedChatModel(responses=["summary: CNC-001/2 logs show W-1105."], repeat_last=True)
    agent = ReActAgent(model, [read_log, broken, report, *fillers(12)], abilities=SMALL, compaction_llm=summarizer,
                       checkpointer=InMemorySaver(), settings=AgentSettings(max_iterations=8, synthesis="always", tool_selection=True))
    return await post(agent, "CNC-001, CNC-002, CNC-003 로그 확인해줘")


async def json_run() -> bytes:
    """JSON mode (SPEC R2.3, R2.4): an unparseable reply, a tool call, a final answer."""
    model = ScriptedChatModel(responses=[
        "I will check the log now!",
        '{"type": "tool_call", "reasoning": "need the log", "tool_name": "read_log", "tool_args": {"machine": "CNC-001"}}',
        '```json\n{"type": "final_answer", "reasoning": "done", "answer": "CNC-001 shows W-1105."}\n```',
    ], synthesis="CNC-001 shows **W-1105**.")
    agent = ReActAgent(model, [read_log, broken], abilities=ModelAbilities(tool_call=False, json_mode=False),
                       checkpointer=InMemorySaver(), settings=AgentSettings(max_iterations=8, synthesis="always"))
    return await post(agent, "CNC-001 로그?")


@tool
def create_order(equipment_id: str, task: str) -> str:
    """Create a maintenance work order."""
    return f"WO-1 created for {equipment_id}: {task}"


FAST = AgentSettings(max_iterations=6, retry_initial_delay=0.01, retry_max_delay=0.02)


async def newer_kinds_run() -> bytes:
    """The event kinds added after SPEC §8's table, each from a scripted run on one server:
    ``stall`` and the grounding ``answer`` ``reset`` (R13.1), ``inject`` (§7), ``approval``
    with the approved rest of the run (R13.3), and ``error`` with the fallback answer of a
    model that keeps failing (R2.7). Recorded from the code before the typed-event refactor.
"""
    call = calls(("read_log", {"machine": "CNC-001"}, "k1"))
    agent_holder: list[ReActAgent] = []

    async def follow_up() -> None:
        await agent_holder[0].inject("inject", "and CNC-002?")

    def synthesis(messages):
        return "CNC-001 알람 W-1105, 71.5°C." if "do not write them" in messages[-1].content else "CNC-001 at 93.4 %."

    model = HookedModel(responses=[
        call, call,  # thread stall: a repeated call with the same result, then straight to the answer
        calls(("read_log", {"machine": "CNC-001"}, "i1")), "CNC-001 and CNC-002 read.",  # thread inject
        calls(("read_log", {"machine": "CNC-001"}, "a1"), ("create_order", {"equipment_id": "CNC-001", "task": "bearing"}, "a2")),
        "Order placed.",  # thread wait: the approved calls, then the answer
        *[ConnectionError("model endpoint down")] * 3,  # thread broken
    ], synthesis=synthesis)
    agent = ReActAgent(model, [read_log, create_order], abilities=NATIVE, checkpointer=InMemorySaver(),
                       settings=AgentSettings(max_iterations=6, retry_initial_delay=0.01, retry_max_delay=0.02,
                                              synthesis="always", model_attempts=3, grounding="enforce",
                                              stall_repeats=1,
                                              approval={"create_order": "always"}))
    agent_holder.append(agent)
    app = create_app(agent, ServerSettings(api_key=""))
    body = b""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        for path, payload in [
            ("/threads/stall/runs", {"message": "CNC-001 로그 확인해줘"}),
            ("/threads/inject/runs", {"message": "CNC-001 로그?"}),
            ("/threads/wait/runs", {"message": "CNC-001 주문 넣어줘"}),
            ("/threads/wait/approvals", {"decisions": [{"tool_call_id": "a2", "type": "approve"}]}),
            ("/threads/broken/runs", {"message": "Is CNC-001 running?"}),
        ]:
            if path == "/threads/inject/runs":
                model.hooks[len(model.calls) + 1] = follow_up
            response = await client.post(path, json=payload)
            assert response.status_code == 200, (body + response.content).decode()
            body += response.content
    body = RANDOM_ID.sub(b'"call_<random>"', CLOCK.sub(rb'"\1": 0', body))
    return INTERRUPT_ID.sub(b'"interrupt_id": "<random>"', body)


async def fallback_run() -> bytes:
    """A run whose model fails and whose fallback model answers: the
    ``model_switch`` event, the fallback's steps and ``done`` with ``model`` and
    ``model_usage``."""
    from reactgraph import FallbackModel

    primary = ScriptedChatModel(responses=[ConnectionError("model endpoint down")], repeat_last=True)
    backup = ScriptedChatModel(responses=[calls(("read_log", {"machine": "CNC-001"}, "f1")), "CNC-001 shows W-1105."],
                               synthesis="CNC-001 shows **W-1105**.")
    agent = ReActAgent(primary, [read_log], abilities=NATIVE,
                       settings=AgentSettings(model_attempts=1, synthesis="always"),
                       fallbacks=[FallbackModel(backup, NATIVE, name="backup")])
    text = "".join([event.to_sse() async for event in agent.astream_events("CNC-001 log?", thread_id="fallback")])
    return CLOCK.sub(rb'"\1": 0', text.encode())


async def dag_run() -> bytes:
    """DAG mode's events (SPEC R9.5: ``phase`` planning/analyzing, ``plan``, ``dag_step``,
    ``analysis``) in their SSE form, from ``DAGAgent.astream_events``."""
    from reactgraph import DAGAgent

    final = '{"type": "final_answer", "reasoning": "done", "answer": "%s"}'
    model = ScriptedChatModel(responses=[
        '{"steps": [{"id": "a", "task": "read CNC-001", "dependencies": []},'
        ' {"id": "b", "task": "compare", "dependencies": ["a"]}]}',
        '{"type": "tool_call", "reasoning": "need it", "tool_name": "read_log", "tool_args": {"machine": "CNC-001"}}',
        final % "a read", final % "b compared",
        '{"achieved": true, "confidence": 0.9, "reasoning": "checked", "final_answer": "CNC-001 fine"}',
    ], synthesis="CNC-001 is **fine**.")
    agent = DAGAgent(model, [read_log], settings=FAST)
    text = "".join([event.to_sse() async for event in agent.astream_events("Check CNC-001", thread_id="dag")])
    return RANDOM_ID.sub(b'"call_<random>"', CLOCK.sub(rb'"\1": 0', text.encode()))


@pytest.mark.parametrize("name, run", [
    ("scripted_run.sse", native_run), ("scripted_json_run.sse", json_run),
    ("scripted_newer_kinds.sse", newer_kinds_run), ("scripted_dag_run.sse", dag_run),
    ("scripted_fallback_run.sse", fallback_run),
])
async def test_the_sse_bytes_of_a_scripted_run_are_unchanged(name, run):
    body = await run()
    if os.environ.get("REACTGRAPH_RECORD_SSE"):
        (DATA / name).write_bytes(body)
    assert body == (DATA / name).read_bytes()
    assert body == await run()  # the recording does not depend on the run
