"""Test helpers for the HTTP server: a real uvicorn server in the test's event loop, and
a strict parser of the SSE wire format (SPEC §8)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI


@asynccontextmanager
async def running_server(app: FastAPI) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port for the block; yields the base URL.

    The server runs in the current event loop, so scripted models and tests share it."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@contextmanager
def server_thread(app: FastAPI, **config: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread of its own for the block
    (for clients that block: another process, a synchronous client); yields the base URL.
    ``config``: more ``uvicorn.Config`` arguments."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off",
                                           **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server stopped before it listened"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def serve_process(directory: Path, *options: str) -> Iterator[int]:
    """``reactgraph serve`` (the real CLI on a scripted model, ``python -m tests.scripted_cli``;
    memory checkpoints, the demo plant's database in ``directory``) with ``options``, on a free
    port, for the block; yields the port once the server accepts connections. The agent has the
    seed's two phases (``$REACTGRAPH_SYNTHESIS=always``: the script's ``synthesis`` is the answer)."""
    from tests.integration.test_workers import SCRIPT, free_port
    from tests.processes import REPO

    port = free_port()
    env = {**os.environ, "REACTGRAPH_HOME": str(directory / "home"), "PYTHONPATH": str(REPO),
           "REACTGRAPH_SYNTHESIS": "always"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.scripted_cli", json.dumps(SCRIPT), "serve", "--port", str(port),
         "--checkpoints", "memory", "--db", str(directory / "plant.db"), *options],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except ConnectionRefusedError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"serve did not listen: {process.stderr.read() if process.stderr else ''}")
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def parse_frame(frame: str) -> tuple[str, dict[str, Any]] | None:
    """One SSE frame (without its blank line) → ``(channel, data)``; ``None`` for a
    keep-alive comment. Asserts the exact SPEC §8 form ``event: <channel>\\ndata: <json>``."""
    lines = frame.split("\n")
    if all(line.startswith(":") for line in lines):
        return None
    assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
    return lines[0][len("event: "):], json.loads(lines[1][len("data: "):])


def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """A whole SSE body → its ``(channel, data)`` events, in order."""
    assert "\r" not in text, "frames are separated by \\n only"
    assert text.endswith("\n\n"), "the stream ends with a complete frame"
    return [event for frame in text[:-2].split("\n\n") if (event := parse_frame(frame)) is not None]


async def read_events(response: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Events of a streaming httpx response, as they arrive."""
    buffer = ""
    async for text in response.aiter_text():
        buffer += text
        while "\n\n" in buffer:
            frame, buffer = buffer.split("\n\n", 1)
            event = parse_frame(frame)
            if event is not None:
                yield event
