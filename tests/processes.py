"""Helpers of the tests that run ``tests/crash_run.py`` in other processes (kill, resume,
two servers): the command line, the tool-call counter and waiting for a saved result."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def helper(command: str, db_url: str, thread: str, counter: Path, *, slow: float = 0.0, text: str = "",
           approve: str = "") -> list[str]:
    return [sys.executable, "-m", "tests.crash_run", command, "--db-url", db_url, "--thread", thread,
            "--counter", str(counter), "--slow", str(slow), "--text", text, "--approve", approve]


def calls(counter: Path) -> list[tuple[str, str, str, int]]:
    with sqlite3.connect(counter) as db:
        return db.execute("SELECT tool, tool_call_id, phase, pid FROM calls ORDER BY rowid").fetchall()


async def wait_for_saved_result(saver: Any, thread_id: str, tool_call_id: str, timeout: float = 60) -> None:
    """Wait until a finished tool task's result is in the checkpoint's pending writes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        saved = await saver.aget_tuple({"configurable": {"thread_id": thread_id}})
        for _task, channel, value in (saved.pending_writes or []) if saved else []:
            if channel == "messages" and any(getattr(m, "tool_call_id", None) == tool_call_id for m in value):
                return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no saved result for {tool_call_id} within {timeout} s")
