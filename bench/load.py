"""Load on the HTTP server: N concurrent runs against a model with a fixed latency.

The server (``reactgraph.server.create_app`` under uvicorn, one worker) runs in a child
process; this process is the client. Every run is one ticket: the model is scripted off
the messages it is sent (no state between calls) and sleeps ``--latency`` seconds on each
of its three calls per run: the loop asks for ``lookup(ticket)``, then answers, then the
synthesis streams ``"Ticket <id> is open."`` in a few chunks. So each run spends
3 × latency in the model; the rest of its time is the server, the engine and the client.

For N in (10, 50, 200) it starts N runs at once, each on its own thread, and reports (row
``http``), next to the same N runs of the same agent called in this process without HTTP
(row ``direct``, the engine alone):

* throughput: runs finished per second of wall time;
* time to first event (TTFE): from sending the request to receiving the first SSE event,
  p50 and p99 (the first model call starts after the first event, so no model latency
  is in it);
* run time p50/p99 and the server's overhead: run time − 3 × latency, p50 and p99;
* lost runs (no 200 or no ``done``) and cross-wired runs (a stream that carries another
  run's ticket or thread id anywhere, or misses its own). Both must be 0.

Run:  .venv/bin/python bench/load.py [--latency 0.05] [--sizes 10 50 200] [--checkpointer memory|sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

TICKET = re.compile(r"T\d{5}")
MODEL_CALLS_PER_RUN = 3


# --------------------------------------------------------------------------- server side


def build_app(latency: float, checkpointer: Any) -> Any:
    """The app under test: one agent with the fixed-latency model and a ``lookup`` tool."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from reactgraph import ModelAbilities, ReActAgent
    from reactgraph.prompts import SYNTHESIS_SYSTEM
    from reactgraph.server import ServerSettings, create_app

    def ticket_of(messages: Sequence[BaseMessage]) -> str:
        text = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
        return TICKET.findall(text)[-1]

    class FixedLatencyModel(BaseChatModel):
        """Sleeps ``latency`` seconds per call; asks for ``lookup`` once, then answers."""

        latency: float = 0.05

        @property
        def _llm_type(self) -> str:
            return "bench-fixed-latency"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _reply(self, messages: list[BaseMessage]) -> AIMessage:
            ticket = ticket_of(messages)
            usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
            if isinstance(messages[-1], ToolMessage):
                return AIMessage(content=f"Ticket {ticket} is open.", usage_metadata=usage)
            call = {"name": "lookup", "args": {"ticket": ticket}, "id": f"call-{ticket}", "type": "tool_call"}
            return AIMessage(content="", tool_calls=[call], usage_metadata=usage)

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            time.sleep(self.latency)
            return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

        async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                             **kwargs: Any) -> ChatResult:
            await asyncio.sleep(self.latency)
            return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

        async def _astream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                           **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
            await asyncio.sleep(self.latency)
            if messages[0].content != SYNTHESIS_SYSTEM:  # a loop call, streamed when a token handler is attached
                reply = self._reply(messages)
                yield ChatGenerationChunk(message=AIMessageChunk(content=reply.content, tool_call_chunks=[
                    {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i, "type": "tool_call_chunk"}
                    for i, c in enumerate(reply.tool_calls)]))
                return
            ticket = ticket_of(messages)
            for piece in ("Ticket ", f"{ticket} ", "is ", "open."):
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece))

    @tool
    async def lookup(ticket: str) -> str:
        """Look up one support ticket."""
        return f"ticket {ticket}: open, priority 2"

    agent = ReActAgent(FixedLatencyModel(latency=latency), [lookup], abilities=ModelAbilities(tool_call=True),
                       checkpointer=checkpointer)
    return create_app(agent, ServerSettings(api_key=""))


async def serve(port: int, latency: float, checkpoints: str) -> None:
    """Child process: serve the bench app on ``port`` until terminated."""
    import uvicorn

    from reactgraph.checkpointing import open_checkpointer

    async with open_checkpointer(checkpoints) as saver:
        config = uvicorn.Config(build_app(latency, saver), host="127.0.0.1", port=port, log_level="error",
                                lifespan="off", backlog=4096, timeout_keep_alive=30)
        await uvicorn.Server(config).serve()


# --------------------------------------------------------------------------- client side


@dataclass
class RunOutcome:
    """What one client saw of one run (times in seconds from sending the request)."""

    ticket: str
    status: int
    first_event: float | None
    total: float
    events: list[tuple[str, dict[str, Any]]]

    def problem(self, thread_id: str) -> str | None:
        """``"lost"``, ``"cross-wired"`` or ``None`` when the stream is this run's, complete."""
        if self.status != 200 or not self.events or self.events[-1][0] != "done":
            return "lost"
        text = json.dumps([data for _, data in self.events])
        foreign = set(TICKET.findall(text)) - {self.ticket}
        done = self.events[-1][1]
        starts = [d for c, d in self.events if d.get("type") == "iteration" and d.get("status") == "start"]
        if foreign or done.get("thread_id") != thread_id or self.ticket not in done.get("answer", "") \
                or [d["tool_args"] for d in starts] != [{"ticket": self.ticket}]:
            return "cross-wired"
        return None


async def one_run(client: httpx.AsyncClient, index: int, size: int) -> tuple[str, RunOutcome]:
    """One run through the server: ticket ``T<index>`` on thread ``load-<size>-<index>``; returns
    the thread id and what the client saw."""
    ticket = f"T{index:05d}"
    thread_id = f"load-{size}-{index}"
    started = time.perf_counter()
    first: float | None = None
    events: list[tuple[str, dict[str, Any]]] = []
    async with client.stream("POST", f"/threads/{thread_id}/runs", json={"message": f"What is the state of ticket {ticket}?"}) as response:
        buffer = ""
        async for text in response.aiter_text():
            buffer += text
            while "\n\n" in buffer:
                frame, buffer = buffer.split("\n\n", 1)
                lines = frame.split("\n")
                if lines[0].startswith("event: "):
                    if first is None:
                        first = time.perf_counter() - started
                    events.append((lines[0][7:], json.loads(lines[1][6:])))
    return thread_id, RunOutcome(ticket, response.status_code, first, time.perf_counter() - started, events)


async def one_direct_run(agent: Any, index: int, size: int) -> tuple[str, RunOutcome]:
    """The same run without HTTP: ``agent.astream_events`` in this process (the baseline)."""
    ticket = f"T{index:05d}"
    thread_id = f"direct-{size}-{index}"
    started = time.perf_counter()
    first: float | None = None
    events: list[tuple[str, dict[str, Any]]] = []
    async for event in agent.astream_events(f"What is the state of ticket {ticket}?", thread_id=thread_id):
        if first is None:
            first = time.perf_counter() - started
        events.append((event.channel, json.loads(json.dumps(event.data))))
    return thread_id, RunOutcome(ticket, 200, first, time.perf_counter() - started, events)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) of ``values`` by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def summarize(results: Sequence[tuple[str, RunOutcome]], wall: float, latency: float) -> dict[str, Any]:
    """The row of one round: throughput, percentiles of the good runs, lost and cross-wired counts."""
    problems = [outcome.problem(thread_id) for thread_id, outcome in results]
    good = [outcome for (_, outcome), problem in zip(results, problems, strict=True) if problem is None]
    ttfe = [o.first_event for o in good if o.first_event is not None]
    totals = [o.total for o in good]
    model_time = MODEL_CALLS_PER_RUN * latency
    return {
        "runs": len(results),
        "throughput": len(good) / wall,
        "ttfe_p50": percentile(ttfe, 50), "ttfe_p99": percentile(ttfe, 99),
        "run_p50": percentile(totals, 50), "run_p99": percentile(totals, 99),
        "overhead_p50": percentile(totals, 50) - model_time, "overhead_p99": percentile(totals, 99) - model_time,
        "lost": problems.count("lost"), "cross_wired": problems.count("cross-wired"),
    }


async def load(base_url: str, size: int, latency: float) -> dict[str, Any]:
    """N concurrent runs through the HTTP server (after a warm-up of up to 10)."""
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=120) as client:
        await asyncio.gather(*(one_run(client, 90_000 + i, size) for i in range(min(size, 10))))
        started = time.perf_counter()
        results = await asyncio.gather(*(one_run(client, i, size) for i in range(size)))
        return summarize(results, time.perf_counter() - started, latency)


async def load_direct(size: int, latency: float) -> dict[str, Any]:
    """N concurrent runs of the same agent in this process, no HTTP: what the engine alone costs."""
    from langgraph.checkpoint.memory import InMemorySaver

    agent = build_app(latency, InMemorySaver()).state.agent
    await asyncio.gather(*(one_direct_run(agent, 90_000 + i, size) for i in range(min(size, 10))))
    started = time.perf_counter()
    results = await asyncio.gather(*(one_direct_run(agent, i, size) for i in range(size)))
    return summarize(results, time.perf_counter() - started, latency)


def row(label: str, r: dict[str, Any]) -> str:
    """One line of the table for a :func:`summarize` result (times printed in ms)."""
    return (f"{label:<7}{r['runs']:>5} {r['throughput']:>8.1f} {r['ttfe_p50'] * 1000:>7.0f}ms {r['ttfe_p99'] * 1000:>7.0f}ms "
            f"{r['run_p50'] * 1000:>6.0f}ms {r['run_p99'] * 1000:>6.0f}ms {r['overhead_p50'] * 1000:>6.0f}ms "
            f"{r['overhead_p99'] * 1000:>6.0f}ms {r['lost']:>5} {r['cross_wired']:>8}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_ready(base_url: str, child: subprocess.Popen) -> None:
    """Poll ``/healthz`` until the server answers (at most 30 s).

    Raises:
        RuntimeError: The child exited, or did not answer in time.
    """
    async with httpx.AsyncClient(base_url=base_url) as client:
        for _ in range(300):
            if child.poll() is not None:
                raise RuntimeError(f"the server exited with status {child.returncode}")
            try:
                if (await client.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("the server did not start within 30 s")


async def main_async(args: argparse.Namespace) -> int:
    """Start the server, run every round, print the table; 1 when a run was lost or cross-wired."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        checkpoints = "memory" if args.checkpointer == "memory" else os.path.join(tmp, "threads.db")
        child = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--latency", str(args.latency),
                                  "--checkpoints", checkpoints])
        try:
            await wait_ready(base_url, child)
            print(f"server: 1 uvicorn worker, checkpointer {args.checkpointer}; model latency {args.latency * 1000:.0f} ms "
                  f"× {MODEL_CALLS_PER_RUN} calls per run = {MODEL_CALLS_PER_RUN * args.latency * 1000:.0f} ms of model time")
            header = (f"{'path':<7}{'N':>5} {'runs/s':>8} {'TTFE p50':>9} {'TTFE p99':>9} {'run p50':>8} {'run p99':>8} "
                      f"{'ovh p50':>8} {'ovh p99':>8} {'lost':>5} {'x-wired':>8}")
            print(header)
            print("-" * len(header))
            failures = 0
            for size in args.sizes:
                for label, result in (("http", await load(base_url, size, args.latency)),
                                      ("direct", await load_direct(size, args.latency))):
                    failures += result["lost"] + result["cross_wired"]
                    print(row(label, result))
            print("times in ms; ovh = run time − model time; http = through the server (a child process), direct = "
                  "astream_events in this process (no HTTP, memory checkpointer); every run checked for a complete "
                  "stream carrying only its own ticket and thread")
            return 1 if failures else 0
        finally:
            child.terminate()
            child.wait(timeout=30)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry: the bench, or (``--serve PORT``, internal) the server child."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call (default: %(default)s)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200], help="concurrent runs per round")
    parser.add_argument("--checkpointer", choices=["memory", "sqlite"], default="memory")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--checkpoints", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve(args.serve, args.latency, args.checkpoints))
        return 0
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
