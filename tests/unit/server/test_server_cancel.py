"""Stopping a run: ``POST /threads/{id}/cancel`` stops the run going on the
thread, its stream ends with ``error`` ``{kind: "cancelled"}``, and the thread is left
resumable: ``POST .../resume`` finishes it. A real uvicorn server, SSE read from the wire."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import parse_sse, read_events, running_server

started = asyncio.Event()
release = asyncio.Event()
runs: list[str] = []


@tool
async def slow_check(equipment_id: str) -> str:
    """Check a machine (waits until the test lets it finish)."""
    runs.append(equipment_id)
    started.set()
    await release.wait()
    return f"{equipment_id}: normal"


async def test_cancel_stops_the_run_and_leaves_the_thread_resumable():
    started.clear(), release.clear(), runs.clear()
    call = tool_call("slow_check", {"equipment_id": "CNC-003"}, "c1")
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[call]), "CNC-003 is normal."],
                              synthesis="CNC-003 is **normal**.")
    agent = ReActAgent(model, [slow_check], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver(),
                       settings=AgentSettings(synthesis="always"))
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as base, \
            httpx.AsyncClient(base_url=base, timeout=30) as client:
        assert (await client.post("/threads/t1/cancel")).status_code == 409  # nothing runs yet
        events: list[tuple[str, dict]] = []

        async def consume() -> None:
            async with client.stream("POST", "/threads/t1/runs", json={"message": "CNC-003?"}) as response:
                async for item in read_events(response):
                    events.append(item)

        reading = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 30)
        stopped = await client.post("/threads/t1/cancel")
        assert stopped.status_code == 200, stopped.text
        assert stopped.json() == {"thread_id": "t1", "cancelled": True, "status": "interrupted"}
        await asyncio.wait_for(reading, 30)
        channel, data = events[-1]
        assert channel == "error" and data["kind"] == "cancelled" and "/threads/t1/resume" in data["message"]
        assert "done" not in [c for c, _ in events]
        assert (await client.get("/threads/t1")).json()["status"] == "interrupted"
        assert (await client.post("/threads/t1/cancel")).status_code == 409  # stopped already

        release.set()
        async with client.stream("POST", "/threads/t1/resume") as response:
            rest = [item async for item in read_events(response)]
        assert rest[-1][0] == "done" and rest[-1][1]["answer"] == "CNC-003 is **normal**."
        assert runs == ["CNC-003", "CNC-003"]  # the stopped call ran again on resume
        assert (await client.get("/threads/t1")).json()["status"] == "idle"


@pytest.mark.parametrize("how", ["cancel", "disconnect"])
async def test_an_approved_call_stopped_while_it_runs_is_not_run_again_by_resume(how):
    """SPEC R13.3: ``/cancel`` or a dropped ``/approvals`` stream while the approved call
    runs, then ``/resume``: the call started once; the resume tells the model its effect is
    unknown, and asks nothing."""
    started, release, runs = asyncio.Event(), asyncio.Event(), []

    @tool
    async def reset_line(line: str) -> str:
        """Reset a production line's counters (waits until the test lets it finish)."""
        runs.append(line)
        started.set()
        await release.wait()
        return f"{line}: zerada"

    call = tool_call("reset_line", {"line": "Linha 4"}, "c1")
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[call]), "A linha 4 foi zerada."],
                              synthesis="A linha 4 foi zerada.")
    agent = ReActAgent(model, [reset_line], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver(),
                       settings=AgentSettings(approval={"reset_line": "always"}))
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as base, \
            httpx.AsyncClient(base_url=base, timeout=30) as client:
        paused = parse_sse((await client.post("/threads/a1/runs", json={"message": "Zere a linha 4"})).text)
        assert paused[-1][1]["finish_reason"] == "waiting"

        async def approve() -> None:
            async with client.stream("POST", "/threads/a1/approvals",
                                     json={"decisions": [{"tool_call_id": "c1", "type": "approve"}]}) as response:
                async for _ in read_events(response):
                    pass

        reading = asyncio.create_task(approve())
        await asyncio.wait_for(started.wait(), 30)
        if how == "cancel":
            assert (await client.post("/threads/a1/cancel")).json()["status"] == "interrupted"
            await asyncio.wait_for(reading, 30)
        else:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
            while (state := (await client.get("/threads/a1")).json())["running"]:
                await asyncio.sleep(0.01)
            assert state["status"] == "interrupted"
        assert (await client.get("/threads/a1")).json()["pending"] == []
        release.set()
        async with client.stream("POST", "/threads/a1/resume") as response:
            rest = [item async for item in read_events(response)]
    assert runs == ["Linha 4"]  # started once; never again
    [done] = [data for channel, data in rest if channel == "step" and data["type"] == "iteration" and data["status"] == "done"]
    assert done["tool_call_id"] == "c1" and "was not run again" in done["error"]
    assert rest[-1][0] == "done" and rest[-1][1]["finish_reason"] == "final_answer"
