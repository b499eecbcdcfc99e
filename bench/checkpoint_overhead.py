"""Checkpoint overhead per loop iteration: no checkpointer, in-memory, SQLite, Postgres.

The same ``ReActAgent.run`` (loop only, no synthesis) on the scripted model and trivial
``add`` tool of ``overhead.py``: K tool calls, one per iteration, then a text answer. Every
run uses a new ``thread_id``, so each starts from an empty thread. Variants:

* ``none``            no checkpointer
* ``memory``          ``InMemorySaver``
* ``sqlite``          ``open_persistence`` on a file in a temporary directory (LangGraph's
                      ``AsyncSqliteSaver``, writing on the event loop's thread)
* ``postgres``        ``open_persistence`` on the URL (LangGraph's ``AsyncPostgresSaver``,
                      ``synchronous_commit=off``, + ``PostgresInterruptQueue``)

each persistent one with ``durability="sync"`` (the agent's default: every superstep's
checkpoint is stored before the next starts) and ``"async"`` (stored while the next step
runs). Postgres runs only with a URL (``--postgres URL``, else
``$REACTGRAPH_TEST_DATABASE_URL``). Prints the median ms per run, ms per iteration (run /
K) and the ratio to ``none`` (the median of the rounds' ratios); times are taken in turns,
each round running every variant once (after warm-up, ``gc.collect()`` before each run), so
a slow moment hits every variant. ``KiB/iter`` is what one more run of each persistent
variant left in its database (checkpoint documents, metadata, channel blobs and writes) per
iteration: a figure the machine's speed does not move. ``cpu ms/iter`` is the CPU time this
process and a Postgres server on this machine (every process named ``postgres``, from
``/proc``) spent per iteration over the timed runs, and ``cpu x none`` its ratio to
``none``'s: the work a checkpointer adds, which waiting for a CPU on a shared machine does
not inflate the way it inflates wall time. Last, a summary gives memory,
SQLite and Postgres over ``none`` (durability ``sync``) at each K, with a 90 % bootstrap
interval of each wall-time median (``overhead.median_interval``), next to the goals of
Nothing is asserted.

Run:  .venv/bin/python bench/checkpoint_overhead.py [--repeats 20] [--quick] [--ks 10 25]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

from load import database_cpu_seconds
from overhead import QUERY, TOOLS, BenchModel, median_interval

from reactgraph import AgentSettings, ModelAbilities, ReActAgent, open_persistence


async def build_agents(stack: AsyncExitStack, k: int, tmp: Path, postgres: str | None) -> dict[str, ReActAgent]:
    """One agent per variant, each on its own model instance (building is not timed)."""
    abilities = ModelAbilities(tool_call=True)
    agents = {"none": ReActAgent(BenchModel(k=k), TOOLS, abilities=abilities)}
    targets = {"memory": "memory", "sqlite": str(tmp / f"bench-{k}.db")}
    if postgres:
        targets["postgres"] = postgres
    for name, url in targets.items():
        persistence = await stack.enter_async_context(open_persistence(url))
        modes = ("sync",) if name == "memory" else ("sync", "async")
        for mode in modes:
            label = name if name == "memory" else f"{name}/{mode}"
            agents[label] = ReActAgent(BenchModel(k=k), TOOLS, abilities=abilities,
                                       settings=AgentSettings(durability=mode), checkpointer=persistence.checkpointer,
                                       interrupt_queue=persistence.interrupt_queue)
    return agents


async def one_run(agent: ReActAgent, k: int, thread_id: str | None = None) -> tuple[float, float]:
    """One run on a new thread: its wall seconds, and the CPU seconds this process and the
    local Postgres server (if any) spent meanwhile."""
    gc.collect()
    database = database_cpu_seconds()
    cpu = time.process_time()
    started = time.perf_counter()
    result = await agent.run(QUERY, thread_id=thread_id or uuid.uuid4().hex)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu + database_cpu_seconds() - database
    if result.error is not None or len(result.steps) != k:
        raise RuntimeError(f"run failed or made {len(result.steps)} tool calls, expected {k}: {result.error}")
    return elapsed, cpu


_STORED_SQL = {
    "sqlite": ("SELECT (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints"
               " WHERE thread_id = ?) + (SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?)"),
    "postgres": ("SELECT (SELECT coalesce(sum(pg_column_size(checkpoint) + pg_column_size(metadata)), 0)"
                 " FROM checkpoints WHERE thread_id = %(t)s)"
                 " + (SELECT coalesce(sum(length(blob)), 0) FROM checkpoint_blobs WHERE thread_id = %(t)s)"
                 " + (SELECT coalesce(sum(length(blob)), 0) FROM checkpoint_writes WHERE thread_id = %(t)s)"),
}


async def stored_bytes(agent: ReActAgent, backend: str, thread_id: str) -> int:
    """Bytes a run's thread left in the database: checkpoint documents and metadata, channel
    blobs (Postgres) and writes — what the run serialized and sent, a figure that does not
    depend on the machine's speed."""
    saver = agent.checkpointer
    await saver.aclose_held()
    if backend == "sqlite":
        async with saver.conn.execute(_STORED_SQL["sqlite"], (thread_id, thread_id)) as cursor:
            (size,) = await cursor.fetchone()
    else:
        async with saver.conn.connection() as conn:
            cursor = await conn.execute(_STORED_SQL["postgres"], {"t": thread_id})
            row = await cursor.fetchone()
            size = next(iter(row.values())) if isinstance(row, dict) else row[0]
    return int(size)


async def main(ks: list[int], repeats: int, postgres: str | None) -> None:
    import langgraph.version

    print(f"python {sys.version.split()[0]}, langgraph {langgraph.version.__version__}; repeats {repeats}; "
          f"postgres: {'yes' if postgres else 'skipped (no URL)'}")
    header = (f"{'checkpointer':<16}{'K':>4}{'ms/run':>10}{'ms/iter':>9}{'x none':>8}{'KiB/iter':>11}"
              f"{'cpu ms/iter':>13}{'cpu x none':>12}")
    print(header)
    print("-" * len(header))
    summary: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in ks:
            async with AsyncExitStack() as stack:
                agents = await build_agents(stack, k, Path(tmp), postgres)
                for agent in agents.values():
                    for _ in range(2):
                        await one_run(agent, k)
                samples: dict[str, list[float]] = {name: [] for name in agents}
                cpu = dict.fromkeys(agents, 0.0)
                for _ in range(repeats):
                    for name, agent in agents.items():
                        elapsed, spent = await one_run(agent, k)
                        samples[name].append(elapsed)
                        cpu[name] += spent / (repeats * k)
                medians = {name: statistics.median(values) for name, values in samples.items()}
                round_ratios = {name: [ours / none for ours, none in zip(values, samples["none"], strict=True)]
                                for name, values in samples.items()}
                ratios = {name: statistics.median(values) for name, values in round_ratios.items()}
                stored = {}
                for name, agent in agents.items():
                    backend = name.split("/")[0]
                    if backend in _STORED_SQL:
                        thread_id = uuid.uuid4().hex
                        await one_run(agent, k, thread_id)
                        stored[name] = await stored_bytes(agent, backend, thread_id) / k / 1024
                for name, seconds in medians.items():
                    ms = seconds * 1000
                    kib = f"{stored[name]:>11.2f}" if name in stored else f"{'':>11}"
                    print(f"{name:<16}{k:>4}{ms:>10.2f}{ms / k:>9.3f}{ratios[name]:>8.2f}{kib}"
                          f"{cpu[name] * 1000:>13.3f}{cpu[name] / cpu['none']:>12.2f}")
                print()
                summary[k] = {name: (ratios[name], median_interval(round_ratios[name]), cpu[name] / cpu["none"])
                              for name in ratios}
    print("checkpointer / none, measured in this run, durability sync, wall time [90% bootstrap interval of its "
          "median] (and CPU) (goals: SQLite <= 1.5x, Postgres <= 2x)")
    for k, ratios in summary.items():
        figures = [f"{label} {ratios[name][0]:.2f}x [{ratios[name][1][0]:.2f}-{ratios[name][1][1]:.2f}] "
                   f"(cpu {ratios[name][2]:.2f}x)"
                   for label, name in (("memory", "memory"), ("SQLite", "sqlite/sync"), ("Postgres", "postgres/sync"))
                   if name in ratios]
        print(f"  K={k:<3} " + "   ".join(figures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per variant and K (default 20)")
    parser.add_argument("--quick", action="store_true", help="smoke check: 3 repeats")
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 25], help="iterations per run")
    parser.add_argument("--postgres", default=os.environ.get("REACTGRAPH_TEST_DATABASE_URL"),
                        help="Postgres URL (default: $REACTGRAPH_TEST_DATABASE_URL; none: Postgres skipped)")
    args = parser.parse_args()
    asyncio.run(main(args.ks, 3 if args.quick else args.repeats, args.postgres))
