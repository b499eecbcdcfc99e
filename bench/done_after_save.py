"""What it costs to send a tool's ``done`` event only once its result is saved.

``ReActAgent.astream_events`` waits, before each tool's ``iteration``/``done`` event, until the
checkpointer holds that tool's result (``reactgraph.events.graph_events``), so a client cut
right after the event never makes the finished tool run again. This times the same event
stream with that wait and with it replaced by nothing (the behaviour before, where a
``kill -9`` right after the event could lose the result), on SQLite and Postgres, for runs
of K iterations with P parallel tool calls each, on the tests' scripted model and a trivial
``add`` tool. Prints the median ms per run and per tool call, and the ratio.

Run from the repository root:  PYTHONPATH=. .venv/bin/python bench/done_after_save.py [--repeats 15] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool

import reactgraph.events as events_module
from reactgraph import AgentSettings, ModelAbilities, ReActAgent, open_persistence
from reactgraph.testing import ScriptedChatModel, tool_call


@tool
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def plan(iterations: int, parallel: int):
    """A scripted move: ``parallel`` ``add`` calls per iteration, ``iterations`` times, then the answer."""

    def move(messages: list[BaseMessage]) -> AIMessage | str:
        done = sum(isinstance(m, ToolMessage) for m in messages) // parallel
        if done >= iterations:
            return "All sums are done."
        return AIMessage(content="", tool_calls=[tool_call("add", {"a": done, "b": i}, f"c{done}-{i}")
                                                 for i in range(parallel)])

    return move


async def timed_run(persistence: Any, iterations: int, parallel: int) -> float:
    model = ScriptedChatModel(responses=[plan(iterations, parallel)], repeat_last=True, synthesis="Done.")
    agent = ReActAgent(model, [add], abilities=ModelAbilities(tool_call=True), settings=AgentSettings(),
                       checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue)
    gc.collect()
    started = time.perf_counter()
    async for _event in agent.astream_events("sums", thread_id=uuid.uuid4().hex):
        pass
    return (time.perf_counter() - started) * 1000


async def main(repeats: int, postgres: str | None) -> None:
    waiting = events_module._result_saved

    async def no_wait(*_args: Any) -> None:
        return None

    targets = {"sqlite": str(Path(tempfile.mkdtemp()) / "checkpoints.db")}
    if postgres:
        targets["postgres"] = postgres
    print(f"repeats {repeats}; median ms per run (and per tool call)\n")
    print("| checkpointer | K x P | without the wait | with the wait | ratio |")
    print("|---|---|---|---|---|")
    for name, target in targets.items():
        async with open_persistence(target) as persistence:
            for iterations, parallel in ((5, 1), (5, 4)):
                times: dict[str, list[float]] = {"without": [], "with": []}
                await timed_run(persistence, iterations, parallel)  # warm-up
                for _ in range(repeats):  # in turns, so a slow moment hits both
                    for variant in ("without", "with"):
                        events_module._result_saved = no_wait if variant == "without" else waiting
                        times[variant].append(await timed_run(persistence, iterations, parallel))
                events_module._result_saved = waiting
                calls = iterations * parallel
                without, with_wait = statistics.median(times["without"]), statistics.median(times["with"])
                print(f"| {name} | {iterations} x {parallel} | {without:.1f} ({without / calls:.2f}) | "
                      f"{with_wait:.1f} ({with_wait / calls:.2f}) | {with_wait / without:.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--postgres", default=os.environ.get("REACTGRAPH_TEST_DATABASE_URL"))
    arguments = parser.parse_args()
    asyncio.run(main(arguments.repeats, arguments.postgres))
