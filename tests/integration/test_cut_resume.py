"""Crash and cut at every event boundary (SPEC R13.5, §1 "a run interrupted by a
crash resumes"): a run with parallel tools (native mode) or one tool per iteration (JSON
mode) is stopped right after its k-th event, for every k, by

- ``cancel``: the library consumer closes ``ReActAgent.astream_events``;
- ``disconnect``: an HTTP client closes the SSE stream of a real uvicorn server;
- ``kill``: ``kill -9`` of a server process (``tests/crash_run.py serve``) right after the
  client read the event,

on SQLite and Postgres. Every thread must then be answered, or resumable and answered after
one resume: no tool reported finished before the cut runs again (a tool cut mid-flight may:
its result was not saved), the query and every tool result are in the history.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from reactgraph import check_protocol, open_persistence
from reactgraph.events import AgentEvent
from reactgraph.server import ServerSettings, create_app
from tests import crash_run
from tests.serving import parse_sse, read_events, running_server

pytestmark = pytest.mark.integration  # runs tests/crash_run.py in other processes

REPO = Path(__file__).resolve().parents[2]
SLOW = 0.05
"""Seconds the slow tool sleeps: long enough for cuts to land inside it, short for the matrix."""
PLAN = {("fast_count", "CNC-001"), ("fast_count", "CNC-002"), ("slow_check", "CNC-003")}


def tool_runs(counter: Path) -> list[tuple[str, str, str]]:
    """(tool, machine, phase) of every recorded tool call, in order."""
    if not counter.exists():
        return []
    with sqlite3.connect(counter) as db:
        return db.execute("SELECT tool, machine, phase FROM calls ORDER BY rowid").fetchall()


async def full_run_channels(mode: str, url: str, tmp_path: Path) -> list[str]:
    """The channels of an uncut run, to know its event boundaries."""
    async with open_persistence(url) as persistence:
        agent = crash_run.build_agent(str(tmp_path / "uncut.db"), SLOW, mode, persistence.checkpointer,
                                      persistence.interrupt_queue)
        channels = [event.channel async for event in agent.astream_events(crash_run.QUERY, thread_id=uuid.uuid4().hex)]
    assert channels[-1] == "done" and "answer" in channels
    if mode == "native":  # two tools in one response: the parallel fan-out
        assert channels.count("step") >= 9
    return channels


def reported_done(events: list[tuple[str, dict[str, Any]]]) -> set[tuple[str, str]]:
    """(tool, machine) of the tool calls whose ``done`` event the client received."""
    return {(data["tool_name"], data["tool_args"]["machine"]) for channel, data in events
            if channel == "step" and data.get("type") == "iteration" and data.get("status") == "done"}


async def finish_and_check(agent: Any, thread: str, counter: Path, seen: list[tuple[str, dict[str, Any]]]) -> str:
    """Resume the cut run if it needs it (once), then check it is answered, that no tool
    reported finished in ``seen`` (the events received before the cut) ran again, and
    that nothing got lost. Returns the status the cut left: ``interrupted`` or ``idle``."""
    deadline = time.monotonic() + 20
    while (status := await agent.thread_status(thread)) == "running":  # a killed Postgres session ends soon
        assert time.monotonic() < deadline, "the cut run still holds its thread"
        await asyncio.sleep(0.02)
    assert status in ("interrupted", "idle"), status
    if status == "interrupted":
        events = [event async for event in agent.aresume_events(thread)]
        assert events[-1].channel == "done" and events[-1].data["answer"] == crash_run.SYNTHESIS
    assert await agent.thread_status(thread) == "idle"
    state = (await agent.graph.aget_state({"configurable": {"thread_id": thread}})).values
    assert state["answer"] == crash_run.ANSWER and state["synthesis"] == crash_run.SYNTHESIS
    assert state["finish_reason"] == "final_answer"
    messages = state["messages"]
    check_protocol(messages)
    assert [m.content for m in messages if isinstance(m, HumanMessage) and m.content == crash_run.QUERY] == [crash_run.QUERY]
    results = [m for m in messages if isinstance(m, ToolMessage) or str(m.content).startswith("Observation from")]
    assert len(results) == 3
    runs = tool_runs(counter)
    finished = Counter((tool, machine) for tool, machine, phase in runs if phase == "done")
    assert set(finished) == PLAN, runs
    for call in reported_done(seen):
        assert finished[call] == 1, (call, runs)  # reported finished: never run again
    return status


async def cut_by_cancel(agent: Any, thread: str, k: int) -> list[tuple[str, dict[str, Any]]]:
    """Consume ``k`` events of a new run, then close its stream; returns those events."""
    events = agent.astream_events(crash_run.QUERY, thread_id=thread)
    seen = []
    for _ in range(k):
        event = await anext(events)
        seen.append((event.channel, event.data))
    await events.aclose()
    return seen


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_a_run_cancelled_at_every_event_boundary_ends_answered(mode, checkpoint_url, tmp_path):
    boundaries = len(await full_run_channels(mode, checkpoint_url, tmp_path))
    statuses = Counter()
    async with open_persistence(checkpoint_url) as persistence:
        for k in range(1, boundaries):
            counter = tmp_path / f"cancel-{k}.db"
            agent = crash_run.build_agent(str(counter), SLOW, mode, persistence.checkpointer, persistence.interrupt_queue)
            thread = f"cancel-{k}-{uuid.uuid4().hex}"
            seen = await cut_by_cancel(agent, thread, k)
            statuses[await finish_and_check(agent, thread, counter, seen)] += 1
    assert statuses["interrupted"] >= boundaries // 2  # most cuts did leave work to resume


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_a_run_whose_client_disconnects_at_every_event_boundary_ends_answered(mode, checkpoint_url, tmp_path):
    boundaries = len(await full_run_channels(mode, checkpoint_url, tmp_path))
    async with open_persistence(checkpoint_url) as persistence:
        for k in range(1, boundaries):
            counter = tmp_path / f"disconnect-{k}.db"
            agent = crash_run.build_agent(str(counter), SLOW, mode, persistence.checkpointer, persistence.interrupt_queue)
            thread = f"disconnect-{k}-{uuid.uuid4().hex}"
            async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
                async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                    async with client.stream("POST", f"/threads/{thread}/runs", json={"message": crash_run.QUERY}) as response:
                        assert response.status_code == 200
                        seen = []
                        async for event in read_events(response):
                            seen.append(event)
                            if len(seen) == k:
                                break
                    deadline = time.monotonic() + 10
                    while (view := (await client.get(f"/threads/{thread}")).json())["running"]:
                        assert time.monotonic() < deadline
                        await asyncio.sleep(0.02)
                    if view["status"] == "interrupted":
                        resumed = await client.post(f"/threads/{thread}/resume")
                        assert resumed.status_code == 200, resumed.text
                        assert parse_sse(resumed.text)[-1][0] == "done"
                    else:
                        assert view["status"] == "idle" and view["result"]["finish_reason"] == "final_answer"
            assert await finish_and_check(agent, thread, counter, seen) == "idle"  # the HTTP resume finished it


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_a_server_killed_at_every_event_boundary_leaves_a_resumable_thread(mode, checkpoint_url, tmp_path):
    boundaries = len(await full_run_channels(mode, checkpoint_url, tmp_path))
    # One process imports everything once and forks a fresh server process per cut.
    forks = subprocess.Popen([sys.executable, "-m", "tests.crash_run", "fork-server", "--db-url", "-", "--thread", "-",
                              "--counter", "-"], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)

    async def line() -> dict[str, Any]:
        return json.loads(await asyncio.wait_for(asyncio.to_thread(forks.stdout.readline), 60))

    try:
        async with open_persistence(checkpoint_url) as persistence:
            for k in range(1, boundaries):
                counter = tmp_path / f"kill-{k}.db"
                thread = f"kill-{k}-{uuid.uuid4().hex}"
                forks.stdin.write(json.dumps(["serve", "--db-url", checkpoint_url, "--thread", thread, "--counter",
                                              str(counter), "--slow", str(SLOW), "--mode", mode]) + "\n")
                forks.stdin.flush()
                server = await line()
                async with httpx.AsyncClient(base_url=server["url"], timeout=30) as client:
                    async with client.stream("POST", f"/threads/{thread}/runs", json={"message": crash_run.QUERY}) as response:
                        seen = []
                        async for event in read_events(response):
                            seen.append(event)
                            if len(seen) == k:
                                os.kill(server["pid"], signal.SIGKILL)
                                break
                assert await line() == {"exited": server["pid"], "signal": signal.SIGKILL}
                agent = crash_run.build_agent(str(counter), SLOW, mode, persistence.checkpointer, persistence.interrupt_queue)
                await finish_and_check(agent, thread, counter, seen)
    finally:
        forks.stdin.close()
        forks.wait(timeout=30)


async def test_a_stream_writer_that_fails_mid_run_leaves_a_resumable_thread(tmp_path, monkeypatch):
    """An exception while writing an event (here: the first tool's ``done`` frame) ends the
    response like a disconnect; the thread is resumable and one resume answers it."""
    counter = tmp_path / "writer.db"
    original = AgentEvent.to_sse

    def failing(event: AgentEvent) -> str:
        if event.data.get("type") == "iteration" and event.data.get("status") == "done":
            raise RuntimeError("the stream writer broke")
        return original(event)

    async with open_persistence(str(tmp_path / "checkpoints.db")) as persistence:
        agent = crash_run.build_agent(str(counter), SLOW, "native", persistence.checkpointer, persistence.interrupt_queue)
        async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                monkeypatch.setattr(AgentEvent, "to_sse", failing)
                seen = []
                with pytest.raises(httpx.HTTPError):  # the response is cut off without its last frame
                    async with client.stream("POST", "/threads/w/runs", json={"message": crash_run.QUERY}) as response:
                        async for event in read_events(response):
                            seen.append(event)
                monkeypatch.setattr(AgentEvent, "to_sse", original)
                assert seen and all(channel != "done" for channel, _ in seen)
                deadline = time.monotonic() + 10
                while (view := (await client.get("/threads/w")).json())["running"]:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.02)
                assert view["status"] == "interrupted"
                resumed = await client.post("/threads/w/resume")
                assert parse_sse(resumed.text)[-1][0] == "done"
        assert await finish_and_check(agent, "w", counter, seen) == "idle"
