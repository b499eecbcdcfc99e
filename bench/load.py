"""Load on the HTTP server: N concurrent runs against a model with a fixed latency.

The server (``reactgraph.server.create_app`` under uvicorn) runs in a child process; this
process is the client. Every run is one ticket: the model is scripted off the messages it
is sent (no state between calls, so any worker can serve any call) and sleeps
``--latency`` seconds (default 100 ms) on each of its three calls per run: the loop asks
for ``lookup(ticket)``, then answers, then the synthesis streams ``"Ticket <id> is open."``
in a few chunks. So each run spends 3 × latency in the model; the rest of its time is the
server, the engine and the client.

Every server process sets up its garbage collector as ``reactgraph serve`` does
(``reactgraph.server.tune_gc``: the startup heap frozen out of later collections), and
so does this process for the ``direct`` rows.

The client is a minimal HTTP/1.1 client on raw asyncio sockets: while a round is timed it
only writes the request and reads bytes (it shares the machine's cores with the server),
and parses the streams afterwards; its CPU time per run is printed (``cli cpu``).

Rows, each the median of ``--repeats`` rounds (the rounds of rows compared are alternated,
so both see the same machine load):

* ``http``: N runs at once (``--sizes``, default 200), each on its own thread, through one
  server worker with the memory checkpointer (``--checkpointer sqlite``: a SQLite file); ``direct``: the same runs of the same agent
  in this process without HTTP (``astream_events``, the engine alone). The ``×`` columns
  are ``http`` over ``direct`` in the same run.
* ``http traced`` (with ``--tracing``): the ``http`` row for a server with tracing on
  (``reactgraph.observability``, every span to OpenTelemetry's in-memory exporter);
  its ``×`` columns are over ``http`` (tracing off), and a line gives its server CPU per run
  over ``http``'s (goal <= 1.1x).
* ``http base`` (with ``--baseline DIR``): the ``http`` row for the server of another copy
  of the package (e.g. ``git archive <commit> reactgraph | tar -x -C DIR``), each round in a
  fresh server alternated with the others: the same-run comparison of two versions.
* scale-out: the same load (``--scale-size``) through 1 and through 2 worker processes
  (``reactgraph serve --workers``' supervisor) on the Postgres checkpointer and follow-up
  queue of ``--postgres URL`` (default ``$REACTGRAPH_TEST_DATABASE_URL``; skipped with the
  reason printed without one); the ``×`` columns are 2 workers over 1.

Columns: throughput (runs finished per second of wall time); time to first event (TTFE,
from sending the request to the first SSE event; no model latency is in it) p50 and p99;
run time p50/p99; overhead p99 (run time − 3 × latency); CPU ms per run of the server (all
its processes; ``direct``: this process), of the client and of a Postgres server on this
machine (every process named ``postgres``, whoever's work it does); lost runs (no 200 or no
``done``) and cross-wired runs (a stream that carries another run's ticket or thread id
anywhere, or misses its own). Both must be 0: the bench exits 1 otherwise.

Run:  .venv/bin/python bench/load.py [--latency 0.1] [--sizes 200] [--repeats 3] [--postgres URL] [--baseline DIR]
      [--checkpointer memory|sqlite] [--scale-size 200] [--tracing]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any


TICKET = re.compile(r"T\d{5}")
MODEL_CALLS_PER_RUN = 3


# --------------------------------------------------------------------------- server side


def build_app(latency: float, persistence: Any) -> Any:
    """The app under test: one agent with the fixed-latency model and a ``lookup`` tool, on
    ``persistence``'s checkpointer and interrupt queue (``None``: an ``InMemorySaver``)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from reactgraph import ModelAbilities, ReActAgent
    from reactgraph.protocol.prompts import SYNTHESIS_SYSTEM
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

    if persistence is None:
        from langgraph.checkpoint.memory import InMemorySaver

        stores: dict[str, Any] = {"checkpointer": InMemorySaver()}
    else:
        stores = {"checkpointer": persistence.checkpointer, "interrupt_queue": persistence.interrupt_queue}
    agent = ReActAgent(FixedLatencyModel(latency=latency), [lookup], abilities=ModelAbilities(tool_call=True), **stores)
    return create_app(agent, ServerSettings(api_key=""))


async def serve_worker(sock: socket.socket, latency: float, checkpoints: str, ready: Any, traced: bool = False) -> None:
    """One server process: the bench app on the listening ``sock`` until terminated. Its
    checkpointer and interrupt queue come from ``open_persistence`` (shared through Postgres
    between workers). ``traced``: spans on, to an in-memory exporter (cleared every second)."""
    import uvicorn

    from reactgraph.persistence.checkpointing import open_persistence

    if traced:
        asyncio.get_running_loop().create_task(trace_in_memory())

    async with open_persistence(checkpoints) as persistence:
        config = uvicorn.Config(build_app(latency, persistence), log_level="error", lifespan="off",
                                timeout_keep_alive=30)
        tune_serving_gc()
        ready()
        await uvicorn.Server(config).serve(sockets=[sock])


async def trace_in_memory() -> None:
    """Turn tracing on for this server process, every span to an in-memory exporter, and
    drop the spans kept every second (a long bench would otherwise grow without bound)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from reactgraph import observability

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observability.instrument(tracer_provider=provider, metrics=True)
    while True:
        await asyncio.sleep(1.0)
        exporter.clear()


def tune_serving_gc() -> None:
    """The garbage collector set up as ``reactgraph serve`` sets it (``reactgraph.server.tune_gc``);
    left as it is for a ``--baseline`` package from before it existed."""
    try:
        from reactgraph.server import tune_gc
    except ImportError:
        return
    tune_gc()


def serve(port: int, latency: float, checkpoints: str, workers: int, traced: bool = False) -> int:
    """Child process: one server process on ``port`` (as ``reactgraph serve``), or ``workers``
    of them (``reactgraph serve --workers``' supervisor, :mod:`reactgraph.server.workers`),
    until terminated; ``traced``: with tracing on (one process only)."""
    if workers == 1:
        asyncio.run(serve_worker(socket.create_server(("127.0.0.1", port), backlog=4096), latency, checkpoints,
                                 lambda: None, traced))
        return 0
    from reactgraph.server.workers import run_workers, worker_socket

    def worker(sock: socket.socket, ready: Any) -> int:
        asyncio.run(serve_worker(sock, latency, checkpoints, ready))
        return 0

    return run_workers(worker, worker_socket("127.0.0.1", port), workers)


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


def dechunk(body: bytes) -> bytes:
    """The payload of an HTTP/1.1 ``Transfer-Encoding: chunked`` body (trailers ignored).

    Raises:
        ValueError: A malformed chunk size.
    """
    payload = bytearray()
    position = 0
    while True:
        line_end = body.index(b"\r\n", position)
        size = int(body[position:line_end].split(b";", 1)[0], 16)
        if size == 0:
            return bytes(payload)
        payload += body[line_end + 2:line_end + 2 + size]
        position = line_end + 2 + size + 2


def parse_response(raw: bytes) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """A whole raw HTTP response → its status and its SSE events (keep-alive comments
    skipped). A response cut short gives the events of its complete frames."""
    head, _, body = raw.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 "):
        return 0, []
    status = int(head[9:12])
    try:
        text = (dechunk(body) if b"transfer-encoding: chunked" in head.lower() else body).decode()
    except (ValueError, UnicodeDecodeError):
        return status, []
    events = []
    for frame in text.split("\n\n")[:-1]:
        lines = frame.split("\n")
        if lines[0].startswith("event: ") and len(lines) == 2 and lines[1].startswith("data: "):
            events.append((lines[0][7:], json.loads(lines[1][6:])))
    return status, events


async def one_run(port: int, index: int, prefix: str) -> tuple[str, RunOutcome]:
    """One run through the server, by a minimal HTTP/1.1 client on a raw socket (the load
    generator shares the machine's cores with the server: it only reads bytes while the
    round is timed, and parses them afterwards). Ticket ``T<index>``, thread
    ``<prefix>-<index>``; returns the thread id and what the client saw."""
    ticket = f"T{index:05d}"
    thread_id = f"{prefix}-{index}"
    body = json.dumps({"message": f"What is the state of ticket {ticket}?"}).encode()
    request = (f"POST /threads/{thread_id}/runs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    started = time.perf_counter()
    first: float | None = None
    received = bytearray()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        while chunk := await reader.read(65536):
            received += chunk
            if first is None and b"event: " in received:
                first = time.perf_counter() - started
        writer.close()
    except OSError:
        pass
    total = time.perf_counter() - started
    status, events = parse_response(bytes(received))
    return thread_id, RunOutcome(ticket, status, first, total, events)


async def one_direct_run(agent: Any, index: int, prefix: str) -> tuple[str, RunOutcome]:
    """The same run without HTTP: ``agent.astream_events`` in this process (the baseline)."""
    ticket = f"T{index:05d}"
    thread_id = f"{prefix}-{index}"
    started = time.perf_counter()
    first: float | None = None
    events: list[tuple[str, dict[str, Any]]] = []
    async for event in agent.astream_events(f"What is the state of ticket {ticket}?", thread_id=thread_id):
        if first is None:
            first = time.perf_counter() - started
        events.append((event.channel, json.loads(json.dumps(event.data))))
    return thread_id, RunOutcome(ticket, 200, first, time.perf_counter() - started, events)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) of ``values`` by the nearest-rank method (NaN when empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else math.nan


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


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by process ``pid`` and its live descendants
    (the server child and its workers), from ``/proc``; 0 where ``/proc`` is missing."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            kids = [int(kid) for kid in children.read().split()]
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + sum(cpu_seconds(kid) for kid in kids)


def database_cpu_seconds() -> float:
    """CPU time used so far by the processes of a Postgres server on this machine (every
    process named ``postgres``; other users' work on it included); 0 when there is none."""
    total = 0.0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    head, _, rest = stat.read().rpartition(")")
            except OSError:
                continue
            if head.endswith("(postgres"):
                fields = rest.split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def load(port: int, size: int, latency: float, prefix: str, server_pid: int) -> dict[str, Any]:
    """N concurrent runs through the HTTP server (after a warm-up of up to 10), with the CPU
    time the server (all its processes), this client and a local Postgres used per run."""
    await asyncio.gather(*(one_run(port, 90_000 + i, f"{prefix}-warm") for i in range(min(size, 10))))
    started, server_cpu, client_cpu, db_cpu = (time.perf_counter(), cpu_seconds(server_pid), time.process_time(),
                                               database_cpu_seconds())
    results = await asyncio.gather(*(one_run(port, i, prefix) for i in range(size)))
    wall = time.perf_counter() - started
    cpu = {"server_cpu": (cpu_seconds(server_pid) - server_cpu) / size, "client_cpu": (time.process_time() - client_cpu) / size,
           "db_cpu": (database_cpu_seconds() - db_cpu) / size}
    return summarize(results, wall, latency) | cpu


async def load_direct(size: int, latency: float, prefix: str) -> dict[str, Any]:
    """N concurrent runs of the same agent in this process, no HTTP: what the engine alone costs
    (its CPU per run is in the ``server_cpu`` column)."""
    agent = build_app(latency, None).state.agent
    await asyncio.gather(*(one_direct_run(agent, 90_000 + i, f"{prefix}-warm") for i in range(min(size, 10))))
    started, cpu = time.perf_counter(), time.process_time()
    results = await asyncio.gather(*(one_direct_run(agent, i, prefix) for i in range(size)))
    wall = time.perf_counter() - started
    return summarize(results, wall, latency) | {"server_cpu": (time.process_time() - cpu) / size, "client_cpu": 0.0,
                                                "db_cpu": 0.0}


def median_row(rounds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The per-column median of repeated rounds (lost and cross-wired: summed)."""
    row = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    row.update(lost=sum(r["lost"] for r in rounds), cross_wired=sum(r["cross_wired"] for r in rounds),
               runs=sum(r["runs"] for r in rounds))
    return row


def row(label: str, r: dict[str, Any], against: dict[str, Any] | None = None) -> str:
    """One line of the table for a :func:`median_row` (times in ms), with the ratios of its
    throughput, TTFE p50/p99 and overhead p99 to ``against`` when given."""
    line = (f"{label:<11}{r['runs']:>5} {r['throughput']:>8.1f} {r['ttfe_p50'] * 1000:>7.0f}ms "
            f"{r['ttfe_p99'] * 1000:>7.0f}ms {r['run_p50'] * 1000:>6.0f}ms {r['run_p99'] * 1000:>6.0f}ms "
            f"{r['overhead_p99'] * 1000:>6.0f}ms {r['server_cpu'] * 1000:>7.1f} {r['client_cpu'] * 1000:>7.1f} "
            f"{r['db_cpu'] * 1000:>6.1f} "
            f"{r['lost']:>5} {r['cross_wired']:>8}")
    if against is not None:
        line += "   " + " ".join(f"{r[key] / against[key]:>6.2f}" for key in ("throughput", "ttfe_p50", "ttfe_p99",
                                                                              "overhead_p99"))
    return line


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_ready(port: int, child: subprocess.Popen) -> None:
    """Poll ``/healthz`` until the server answers (at most 60 s).

    Raises:
        RuntimeError: The child exited, or did not answer in time.
    """
    request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    for _ in range(600):
        if child.poll() is not None:
            raise RuntimeError(f"the server exited with status {child.returncode}")
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            answer = await reader.read()
            writer.close()
            if answer.startswith(b"HTTP/1.1 200"):
                return
        except OSError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("the server did not start within 60 s")


class Server:
    """The bench server in a child process: ``async with Server(...) as port:``."""

    def __init__(self, latency: float, checkpoints: str, workers: int, source: str | None = None,
                 traced: bool = False) -> None:
        self.args = [sys.executable, __file__, "--serve", "0", "--latency", str(latency), "--checkpoints", checkpoints,
                     "--workers", str(workers), *(["--traced"] if traced else [])]
        self.env = {**os.environ, "PYTHONPATH": source} if source else None
        self.child: subprocess.Popen | None = None

    async def __aenter__(self) -> tuple[int, int]:
        port = free_port()
        self.args[3] = str(port)
        self.child = subprocess.Popen(self.args, env=self.env)
        await wait_ready(port, self.child)
        return port, self.child.pid

    async def __aexit__(self, *exc: Any) -> None:
        assert self.child is not None
        self.child.terminate()
        self.child.wait(timeout=60)


HEADER = (f"{'path':<11}{'N':>5} {'runs/s':>8} {'TTFE p50':>9} {'TTFE p99':>9} {'run p50':>8} {'run p99':>8} "
          f"{'ovh p99':>8} {'srv cpu':>7} {'cli cpu':>7} {'db cpu':>6} {'lost':>5} {'x-wired':>8}   "
          f"{'×runs/s':>6} {'×TTFE50':>6} {'×TTFE99':>6} {'×ovh99':>6}")


async def main_async(args: argparse.Namespace) -> int:
    """Run every round, print the tables; 1 when a run was lost or cross-wired."""
    tag = uuid.uuid4().hex[:8]
    failures = 0
    tune_serving_gc()  # the direct runs (and the client) run with the collector a server has
    model_ms = MODEL_CALLS_PER_RUN * args.latency * 1000
    print(f"model latency {args.latency * 1000:.0f} ms × {MODEL_CALLS_PER_RUN} calls per run = {model_ms:.0f} ms of "
          f"model time; {args.repeats} repeats per row, medians; {os.cpu_count()} cores; event loop of the server and "
          "of this process: asyncio's (as `reactgraph serve`)")
    print(f"\n1 worker, {args.checkpointer} checkpointer; ratios against `direct` (the same runs in this process, no HTTP, "
          "memory checkpointer)")
    print(HEADER)
    print("-" * len(HEADER))
    scratch = tempfile.TemporaryDirectory()
    checkpoints = "memory" if args.checkpointer == "memory" else os.path.join(scratch.name, "threads.db")
    for size in args.sizes:
        http, direct, base, traced = [], [], [], []
        for repeat in range(args.repeats):  # alternated, so all see the same machine load; each on a fresh agent
            async with Server(args.latency, checkpoints, 1) as (port, pid):
                http.append(await load(port, size, args.latency, f"http-{tag}-{size}-{repeat}", pid))
            direct.append(await load_direct(size, args.latency, f"direct-{tag}-{size}-{repeat}"))
            if args.baseline:
                async with Server(args.latency, checkpoints, 1, args.baseline) as (port, pid):
                    base.append(await load(port, size, args.latency, f"base-{tag}-{size}-{repeat}", pid))
            if args.tracing:
                async with Server(args.latency, checkpoints, 1, traced=True) as (port, pid):
                    traced.append(await load(port, size, args.latency, f"traced-{tag}-{size}-{repeat}", pid))
        failures += sum(r["lost"] + r["cross_wired"] for r in http + direct + base + traced)
        print(row("http", median_row(http), median_row(direct)))
        if traced:
            print(row("http traced", median_row(traced), median_row(http)))
        if base:
            print(row("http base", median_row(base), median_row(direct)))
        print(row("direct", median_row(direct)))
        print(f"{'':<11}http/direct runs/s per repeat: "
              + " ".join(f"{h['throughput'] / d['throughput']:.2f}" for h, d in zip(http, direct, strict=True)))
        if traced:
            print(f"{'':<11}traced/http server CPU per run, per repeat: "
                  + " ".join(f"{t['server_cpu'] / h['server_cpu']:.2f}" for t, h in zip(traced, http, strict=True))
                  + f" (median {median_row(traced)['server_cpu'] / median_row(http)['server_cpu']:.2f}; goal "
                  "<= 1.1x)")
    scratch.cleanup()
    print("\nscale-out: Postgres checkpointer and follow-up queue, 1 vs 2 workers; ratios against 1 worker")
    if not args.postgres:
        print("skipped: no Postgres URL (--postgres URL or $REACTGRAPH_TEST_DATABASE_URL)")
    else:
        print(HEADER)
        print("-" * len(HEADER))
        size = args.scale_size
        rounds: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
        for repeat in range(args.repeats):  # alternated, so both see the same machine load
            for workers in (1, 2):
                async with Server(args.latency, args.postgres, workers) as (port, pid):
                    rounds[workers].append(await load(port, size, args.latency, f"pg{workers}-{tag}-{repeat}", pid))
        failures += sum(r["lost"] + r["cross_wired"] for r in rounds[1] + rounds[2])
        print(row("pg 1 worker", median_row(rounds[1])))
        print(row("pg 2 wkrs", median_row(rounds[2]), median_row(rounds[1])))
        print(f"{'':<11}2/1 workers runs/s per repeat: "
              + " ".join(f"{b['throughput'] / a['throughput']:.2f}" for a, b in zip(rounds[1], rounds[2], strict=True)))
    print("\ntimes in ms; ovh = run time − model time; srv cpu, cli cpu, db cpu = CPU ms per run of the server (all its "
          "processes; direct: this process), of this client and of a local Postgres (all its processes); N = runs per round × repeats; every run checked for a complete "
          "stream carrying only its own ticket and thread (lost, x-wired: summed over the repeats)")
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry: the bench, or (``--serve PORT``, internal) the server child."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per model call (default: %(default)s)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200], help="concurrent runs per round (1 worker)")
    parser.add_argument("--checkpointer", choices=["memory", "sqlite"], default="memory",
                        help="the 1-worker server's checkpointer (sqlite: a file, the serve default)")
    parser.add_argument("--scale-size", type=int, default=200, help="concurrent runs per scale-out round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per row (default: %(default)s)")
    parser.add_argument("--postgres", default=os.environ.get("REACTGRAPH_TEST_DATABASE_URL"),
                        help="Postgres URL for the scale-out rows (default: $REACTGRAPH_TEST_DATABASE_URL)")
    parser.add_argument("--baseline", metavar="DIR", help="also measure the server of the reactgraph package in DIR "
                                                          "(e.g. a `git archive` of an older commit), row `http base`")
    parser.add_argument("--tracing", action="store_true", help="also measure a server with tracing on (row `http traced`)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--checkpoints", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args.serve, args.latency, args.checkpoints, args.workers, args.traced)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
