"""No stdio MCP server outlives what started it: a server that ignores SIGTERM (and
the end of its input) and has a child of its own, given up after its start timeout or still
starting, is ended with its whole process group (SIGTERM, then SIGKILL after a grace period)
when the tools' block closes, promptly, and when ``reactgraph serve`` is stopped with SIGTERM
while it starts. The server is ``tests/stubborn_mcp_server.py``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from reactgraph.tools.mcp import KILL_GRACE_SECONDS, load_mcp_tools
from tests.integration.test_mcp import processes_with
from tests.processes import REPO

pytestmark = pytest.mark.integration

STUBBORN = str(REPO / "tests" / "stubborn_mcp_server.py")


def stubborn(marker: str, *options: str) -> dict:
    return {"mcpServers": {"stubborn": {"command": sys.executable, "args": [STUBBORN, marker, *options]}}}


async def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def test_a_server_given_up_after_its_start_timeout_is_ended_with_its_children():
    """The block ends right after the start timeout, while the server's stopping is under way.
    The server exits when its input ends (the ``mcp`` SDK's polite stop) but leaves its child,
    which ignores SIGTERM: the process group sweep ends it too. Before, it was left running."""
    marker = f"stubborn-{uuid.uuid4().hex}"
    async with load_mcp_tools(stubborn(marker, "exit-on-eof"), startup_timeout=1) as tools:
        assert tools.failures == {"stubborn": "did not start within 1 seconds (stderr: stubborn server: starting, slowly)"}
        assert await wait_for(lambda: len(processes_with(marker)) == 2, 10)  # the server and its child
    assert await wait_for(lambda: processes_with(marker) == [], 2), processes_with(marker)


async def test_a_server_still_starting_is_ended_with_its_children_when_the_block_is_left():
    marker = f"stubborn-{uuid.uuid4().hex}"

    async def open_and_wait() -> None:
        async with load_mcp_tools(stubborn(marker), startup_timeout=60):
            pass

    opening = asyncio.create_task(open_and_wait())
    assert await wait_for(lambda: len(processes_with(marker)) == 2, 10)
    started = time.monotonic()
    opening.cancel()  # what stopping a server in its start-up does
    with contextlib.suppress(asyncio.CancelledError):
        await opening
    assert processes_with(marker) == [] and time.monotonic() - started < 2 * KILL_GRACE_SECONDS + 3


def test_reactgraph_serve_stopped_while_an_mcp_server_starts_leaves_no_process(tmp_path: Path):
    """SIGTERM to ``reactgraph serve`` while its MCP server starts: before, Python ended at once
    (SIGTERM's default action) and the server and its child were left running."""
    marker = f"stubborn-{uuid.uuid4().hex}"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(stubborn(marker)))
    script = {"responses": ["unused"]}
    env = {**os.environ, "REACTGRAPH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    serve = subprocess.Popen([sys.executable, "-m", "tests.scripted_cli", json.dumps(script), "serve", "--port", "0",
                              "--checkpoints", "memory", "--db", str(tmp_path / "plant.db"), "--mcp", str(config)],
                             cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while len(processes_with(marker)) < 2:
            assert time.monotonic() < deadline and serve.poll() is None, serve.communicate(timeout=10)
            time.sleep(0.05)
        serve.send_signal(signal.SIGTERM)
        _out, err = serve.communicate(timeout=30)
        assert serve.returncode == 0, err
        remaining = processes_with(marker)
        assert remaining == [], remaining
    finally:
        if serve.poll() is None:
            serve.kill()
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_reactgraph_serve_stopped_while_it_serves_closes_its_mcp_servers_and_exits_0(tmp_path: Path):
    """uvicorn shuts down on SIGTERM and then raises it again: the process ended there, before
    its MCP sessions were closed (status -15). Now the shutdown goes on and closes them."""
    marker = f"serving-{uuid.uuid4().hex}"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"plant": {
        "command": sys.executable, "args": ["-m", "tests.mcp_server", "stdio", marker], "cwd": str(REPO)}}}))
    env = {**os.environ, "REACTGRAPH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    serve = subprocess.Popen([sys.executable, "-m", "tests.scripted_cli", json.dumps({"responses": ["unused"]}),
                              "serve", "--port", "0", "--checkpoints", "memory", "--db", str(tmp_path / "plant.db"),
                              "--mcp", str(config)],
                             cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert serve.stdout is not None
        for line in serve.stdout:
            if line.startswith("page: "):
                break
        time.sleep(1.0)  # so the signal comes while uvicorn serves
        assert len(processes_with(marker)) == 1
        serve.send_signal(signal.SIGTERM)
        _out, err = serve.communicate(timeout=30)
        assert serve.returncode == 0, err
        assert processes_with(marker) == []
    finally:
        if serve.poll() is None:
            serve.kill()
