"""DAG runs killed with ``SIGKILL`` and resumed in another process (SPEC §10,
R13.5, R13.8), on SQLite and Postgres: during round 1 (step ``a`` done, step ``b`` in its
second tool call, step ``c`` not started) and during the analysis. After one resume the run
answers, no finished tool ran twice (the tools count their runs) and no step's result is lost.
The run is ``tests/dag_crash_run.py``."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from reactgraph import open_persistence
from tests import dag_crash_run
from tests.processes import REPO

pytestmark = pytest.mark.integration


def command(action: str, url: str, thread: str, counter: Path, *, slow: float = 0.0, judge_slow: float = 0.0) -> list[str]:
    return [sys.executable, "-m", "tests.dag_crash_run", action, "--db-url", url, "--thread", thread,
            "--counter", str(counter), "--slow", str(slow), "--judge-slow", str(judge_slow)]


def runs(counter: Path) -> list[tuple[str, str, str, int]]:
    """The tool runs the counter holds: (tool, machine, phase, pid), in order."""
    if not counter.exists():
        return []
    with sqlite3.connect(counter) as db:
        try:
            return db.execute("SELECT tool, machine, phase, pid FROM calls ORDER BY rowid").fetchall()
        except sqlite3.OperationalError:  # no table yet
            return []


async def wait_until(check, what: str, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert process.poll() is None, f"the run ended before {what}: {process.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        await asyncio.sleep(0.05)


TOOL_OUTPUT = {"read": "{machine}: normal", "inspect": "{machine}: inspected, no fault"}
"""What each tool of ``tests.dag_crash_run`` returns."""


async def results_saved(saver, thread: str, rows) -> bool:
    """Whether the output of every tool run ``rows`` records as done is in ``thread``'s
    committed checkpoints or their pending writes (every namespace: the steps' loops too)."""
    saved: list[str] = []
    async for checkpoint in saver.alist({"configurable": {"thread_id": thread}}):
        saved.append(repr(checkpoint.checkpoint["channel_values"]))
        saved.extend(repr(value) for _task, _channel, value in checkpoint.pending_writes or [])
    text = "\n".join(saved)
    return all(TOOL_OUTPUT[tool].format(machine=machine) in text for tool, machine, phase, _ in rows if phase == "done")


async def kill_then_resume(url: str, tmp_path: Path, ready, **slow: float) -> tuple[list[dict], list, int]:
    """Start the run, kill it with SIGKILL once ``ready(snapshot, rows)`` holds, resume it in
    a new process; returns the resumed run's events, the counter's rows and the killed pid."""
    thread, counter = f"dag-kill-{uuid.uuid4().hex[:10]}", tmp_path / "calls.db"
    first = subprocess.Popen(command("start", url, thread, counter, **slow), cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        async with open_persistence(url) as store:
            watcher = dag_crash_run.build_agent(str(tmp_path / "unused.db"), 0, 0, store)

            async def there() -> bool:
                snapshot = await watcher.graph.aget_state({"configurable": {"thread_id": thread}})
                rows = runs(counter)
                # ...and what finished is committed (the savers hold writes for 20 ms at most)
                return bool(ready(snapshot, rows)) and await results_saved(store.checkpointer, thread, rows)

            await wait_until(there, "the point to kill at", first)
            first.send_signal(signal.SIGKILL)
            assert first.wait(timeout=30) == -signal.SIGKILL
            deadline = time.monotonic() + 10
            while (status := await watcher.thread_status(thread)) == "running" and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert status == "interrupted"
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    resumed = subprocess.run(command("resume", url, thread, counter), cwd=REPO, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines() if line.startswith("{")]
    async with open_persistence(url) as store:
        watcher = dag_crash_run.build_agent(str(tmp_path / "unused.db"), 0, 0, store)
        assert await watcher.thread_status(thread) == "idle"
        saved = (await watcher.graph.aget_state({"configurable": {"thread_id": thread}})).values
        assert {k: v["result"] for k, v in saved["results"].items()} == {
            "a": "step a: normal", "b": "step b: normal", "c": "step c: normal"}  # no step's result is lost
    return events, runs(counter), first.pid


def finished(rows) -> Counter:
    return Counter((tool, machine) for tool, machine, phase, _ in rows if phase == "done")


def step_done(snapshot, step_id: str) -> bool:
    """Step ``step_id``'s result is saved (applied, or a pending write of the DAG's checkpoint)."""
    if step_id in (snapshot.values.get("results") or {}):
        return True
    return any(step_id in (getattr(task, "result", None) or {}).get("results", {}) for task in snapshot.tasks)


async def test_sigkill_mid_round_then_resume(checkpoint_url, tmp_path):
    events, rows, killed = await kill_then_resume(
        checkpoint_url, tmp_path,
        lambda snapshot, rows: ("inspect", "B2", "start") in [row[:3] for row in rows] and step_done(snapshot, "a"),
        slow=120)
    assert finished(rows) == {("read", "A1"): 1, ("read", "B1"): 1, ("inspect", "B2"): 1, ("read", "C1"): 1}
    inspections = [(phase, pid) for tool, _, phase, pid in rows if tool == "inspect"]
    assert [phase for phase, _ in inspections] == ["start", "start", "done"]  # in flight when killed: ran again
    assert inspections[0][1] == killed != inspections[1][1]
    started = [e["data"]["step_id"] for e in events if e["channel"] == "dag_step" and e["data"]["status"] == "started"]
    assert started == ["b", "c"]  # step a is not run again
    assert events[-1]["channel"] == "done" and events[-1]["data"]["finish_reason"] == "achieved"
    assert events[-1]["data"]["answer"] == dag_crash_run.SYNTHESIS


async def test_sigkill_during_the_analysis_then_resume(checkpoint_url, tmp_path):
    events, rows, _ = await kill_then_resume(
        checkpoint_url, tmp_path, lambda snapshot, rows: snapshot.next == ("analyze",), judge_slow=120)
    assert finished(rows) == {("read", "A1"): 1, ("read", "B1"): 1, ("inspect", "B2"): 1, ("read", "C1"): 1}
    assert len(rows) == 5  # four reads and inspections done, one inspect start: nothing ran twice
    assert not [e for e in events if e["channel"] == "dag_step"]  # no step ran again
    assert [e["data"]["phase"] for e in events if e["channel"] == "phase"] == ["analyzing"]
    assert events[-1]["channel"] == "done" and events[-1]["data"]["answer"] == dag_crash_run.SYNTHESIS
