"""``kill -9`` of a server running a DAG-mode run (SPEC R13.5, R13.8), on SQLite
and Postgres: the server process (``tests/crash_dag.py``: the app ``reactgraph serve --dag``
makes, over scripted models and counting tools) is killed during round 1 — while a step's
tool runs, or between the first wave of steps and the next — or during the analysis. One
``POST /threads/{id}/resume`` on a new server then answers the run: no tool that had
finished runs again (the tools count their calls; "finished" as for ReAct runs: its end was
streamed, which happens once its result is stored), no step's result is lost, and the plan
is the one the killed process made."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from reactgraph import open_persistence
from reactgraph.server import ServerSettings, create_app
from tests import crash_dag, crash_run
from tests.integration.test_cut_resume import tool_runs
from tests.serving import parse_sse, read_events, running_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
SLOW = 3.0
"""Seconds ``slow_check`` takes: the mid-step kill lands inside it."""
ANALYSIS = 5.0
"""Seconds the analyzer's model call takes: the analysis kill lands inside it."""
ALL_TOOLS = {("fast_count", "CNC-001"), ("fast_count", "CNC-002"), ("slow_check", "CNC-003")}


def cut_here(cut: str, seen: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether the client kills the server now, having read ``seen``."""
    channel, data = seen[-1]
    if cut == "mid_step":  # step a's slow tool has started and sleeps
        return channel == "dag_step" and data["status"] == "tool_started" and data["tool_name"] == "slow_check"
    if cut == "between_steps":  # the first wave (a, b) has ended; c is next
        done = {d["step_id"] for c, d in seen if c == "dag_step" and d["status"] == "completed"}
        return channel == "dag_step" and data["status"] == "completed" and done == {"a", "b"}
    return channel == "phase" and data["phase"] == "analyzing"


async def killed_run(url: str, counter: Path, thread: str, cut: str) -> list[tuple[str, dict[str, Any]]]:
    """Start the DAG server, stream a run on ``thread`` and ``kill -9`` the server at ``cut``;
    returns the events the client read."""
    server = subprocess.Popen([sys.executable, "-m", "tests.crash_dag", "--db-url", url, "--counter", str(counter),
                               "--slow", str(SLOW), "--analysis", str(ANALYSIS)],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready = json.loads(await asyncio.wait_for(asyncio.to_thread(server.stdout.readline), 120))
        seen: list[tuple[str, dict[str, Any]]] = []
        async with httpx.AsyncClient(base_url=ready["url"], timeout=60) as client:
            async with client.stream("POST", f"/threads/{thread}/runs", json={"message": crash_dag.GOAL}) as response:
                assert response.status_code == 200
                async for event in read_events(response):
                    seen.append(event)
                    if cut_here(cut, seen):
                        os.kill(ready["pid"], signal.SIGKILL)
                        break
        assert await asyncio.to_thread(server.wait, 30) == -signal.SIGKILL
        return seen
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)


@pytest.mark.parametrize("cut", ["mid_step", "between_steps", "analysis"])
async def test_a_dag_run_killed_in_round_1_or_in_the_analysis_answers_after_one_resume(cut, checkpoint_url, tmp_path):
    counter = tmp_path / "calls.db"
    thread = f"dag-kill-{cut}-{uuid.uuid4().hex}"
    seen = await killed_run(checkpoint_url, counter, thread, cut)
    assert seen[-1][0] != "done" and "plan" in [channel for channel, _ in seen]
    before = tool_runs(counter)
    reported = {(d["tool_name"], d["tool_args"]["machine"]) for c, d in seen if c == "dag_step" and d["status"] == "tool"}

    async with open_persistence(checkpoint_url) as persistence:
        react = crash_run.build_agent(str(counter), SLOW, "native", persistence.checkpointer, persistence.interrupt_queue)
        dag = crash_dag.build_dag_agent(str(counter), 0.01, 0.0, persistence.checkpointer, persistence.interrupt_queue)
        app = create_app(react, ServerSettings(api_key="", default_mode="dag"), dag_agent=dag)
        async with running_server(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
            deadline = time.monotonic() + 20
            while (view := (await client.get(f"/threads/{thread}")).json())["running"]:  # a killed session ends soon
                assert time.monotonic() < deadline, "the killed run still holds its thread"
                await asyncio.sleep(0.05)
            assert view["mode"] == "dag" and view["status"] == "interrupted", view["status"]
            resumed = await client.post(f"/threads/{thread}/resume")
            assert resumed.status_code == 200, resumed.text
            events = parse_sse(resumed.text)
            after = (await client.get(f"/threads/{thread}")).json()
            again = await client.post(f"/threads/{thread}/resume")

    assert events[-1][0] == "done" and events[-1][1]["answer"] == crash_dag.SYNTHESIS
    assert events[-1][1]["finish_reason"] == "achieved" and events[-1][1]["rounds"] == 1
    assert "plan" not in [channel for channel, _ in events]  # the killed process's plan goes on, not a new one
    assert again.status_code == 409  # one resume finished it
    assert after["status"] == "idle" and after["result"]["answer"] == crash_dag.SYNTHESIS
    plan = after["result"]["plan"]
    assert [(s["id"], s["status"], s["result"]) for s in plan] == [
        ("a", "completed", "done a"), ("b", "completed", "done b"), ("c", "completed", "done c")]  # no result lost

    runs = tool_runs(counter)
    finished = Counter((tool, machine) for tool, machine, phase in runs if phase == "done")
    assert set(finished) == ALL_TOOLS, runs
    for call in reported:  # a tool whose end the client was told of never runs again (SPEC R13.5); one that
        assert finished[call] == 1, (call, runs)  # ended in the last milliseconds, its result not yet stored, may
    if cut == "mid_step":  # the kill landed inside slow_check: cut mid-flight, it ran again (once) to its end
        assert ("slow_check", "CNC-003", "start") in before and ("slow_check", "CNC-003", "done") not in before
        assert runs.count(("slow_check", "CNC-003", "start")) == 2
        assert ("fast_count", "CNC-001", "done") in before  # step a's first tool is not run again
    else:  # every tool had finished before the kill: the resume ran none
        assert runs == before and set(reported) == ALL_TOOLS
