"""Engine overhead per loop iteration: reactgraph next to three peers, same model, same tools.

Every peer runs the same scripted chat model (no network, no sleeping) and one trivial
async tool, ``add(a, b)``. For a run of K iterations the model asks for one ``add`` call K
times, then answers in text, so each run makes K + 1 model calls and K tool calls. What
is left of the wall time is the framework: graph supersteps, state reducers, callbacks,
message handling. Peers:

* ``reactgraph``        ``ReActAgent(...).run(query)`` (the loop only, no synthesis)
* ``reactgraph.graph``  ``create_react_graph(...)`` + ``ainvoke`` with ``synthesize=False``
* ``lg.prebuilt``       ``langgraph.prebuilt.create_react_agent`` (deprecated, still works)
* ``lc.create_agent``   ``langchain.agents.create_agent``
* ``bare``              a hand-written loop: ``bind_tools().ainvoke``, ``tool.ainvoke``, repeat
* ``reactgraph.traced`` ``reactgraph`` with tracing on (``reactgraph.observability``):
                        every span to OpenTelemetry's in-memory exporter; its own line at
                        the end gives its time over ``reactgraph``'s (goal: <= 1.1x).
                        The other peers run with tracing off: no observer on the run at all.

For K in (1, 10, 25) it times R runs of every peer (interleaved, after a warm-up, a
``gc.collect()`` before each run, ``time.perf_counter``) and prints the median ms per run,
ms per iteration (run / K), the ratio to the bare loop, and reactgraph's time over the
peer's (the median of the rounds' ratios, each round running every peer once). A separate pass under ``tracemalloc`` gives the median peak memory of one run
(KiB above what was allocated before the run), and reactgraph's over the peer's. Last, a
summary gives reactgraph / ``create_agent`` for time and memory at each K, next to the
goals, the time ratio with a 90 % bootstrap interval of its median (on this
2-core shared machine one round's ratio moves by ±10 % and more, so a median of 1.02 from
30 rounds may be anything from about 0.97 to 1.08). With two K or more, a last line splits
reactgraph's and ``create_agent``'s runs into the cost of one more iteration (the slope of
the median run time between the two largest K, its ratio with a bootstrap interval) and
the rest of a run (what a run costs whatever its K: the entry supersteps, the channels set
up, the result): ms per iteration at one K mixes the two. Nothing is asserted on times.

``--cpu`` times every run with ``time.process_time`` (this process's CPU time) instead of
``time.perf_counter``: on a machine shared with other work, wall time moves with everyone
else's load (one round's ratio by ±30 % and more), CPU time much less; the models and the tool
never sleep, so a run's CPU time is its framework's work.

``--observability`` times only reactgraph's runs, observed four ways, round by round: ``off``
(nothing observed), ``metrics`` (the Prometheus metrics ``reactgraph serve`` records),
``traced`` (spans to the in-memory exporter, as the ``reactgraph.traced`` peer) and
``traced+nodes`` (``node_spans=True``). It reports the median *CPU* time of a run (this process's
``time.process_time``, which other processes on a shared machine move much less than wall time)
and its ratio to ``off``.

Run:  .venv/bin/python bench/overhead.py [--repeats 30] [--quick] [--ks 1 10 25] [--cpu] [--observability]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import sys
import time
import tracemalloc
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import create_react_agent

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reactgraph import ModelAbilities, ReActAgent, create_react_graph, observability

QUERY = "Add the numbers up."


class BenchModel(BaseChatModel):
    """Asks for ``add`` until the conversation holds ``k`` tool results, then answers.

    The script is read off the messages it is sent (it counts ``ToolMessage``s), so the
    model keeps no state between calls: every run of every peer sees the same script."""

    k: int = 1

    @property
    def _llm_type(self) -> str:
        return "bench-scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < self.k:
            call = {"name": "add", "args": {"a": done, "b": 1}, "id": f"call_{done}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call])
        else:
            message = AIMessage(content=f"The total is {done}.")
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                         **kwargs: Any) -> ChatResult:
        return self._generate(messages, stop, None, **kwargs)


@tool
async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


TOOLS: list[BaseTool] = [add]


async def bare_loop(model: BaseChatModel, tools: list[BaseTool], query: str) -> list[BaseMessage]:
    """The least a tool loop can do on LangChain runnables."""
    bound = model.bind_tools(tools)
    by_name = {t.name: t for t in tools}
    messages: list[BaseMessage] = [HumanMessage(query)]
    while True:
        response = await bound.ainvoke(messages)
        messages.append(response)
        if not response.tool_calls:
            return messages
        for call in response.tool_calls:
            output = await by_name[call["name"]].ainvoke(call["args"])
            messages.append(ToolMessage(content=str(output), tool_call_id=call["id"], name=call["name"]))


Runner = Callable[[], Awaitable[int]]  # one run; returns the number of tool results seen


def make_peers(k: int) -> dict[str, Runner]:
    """Every peer built once per K on its own model instance (building is not timed)."""
    limit = {"recursion_limit": 10 * k + 20}
    agent = ReActAgent(BenchModel(k=k), TOOLS, abilities=ModelAbilities(tool_call=True))
    graph = create_react_graph(BenchModel(k=k), TOOLS, abilities=ModelAbilities(tool_call=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated since langgraph 1.0 in favour of create_agent
        prebuilt = create_react_agent(BenchModel(k=k), TOOLS)
    lc_agent = create_agent(BenchModel(k=k), TOOLS)
    bare_model = BenchModel(k=k)
    traced_agent = ReActAgent(BenchModel(k=k), TOOLS, abilities=ModelAbilities(tool_call=True))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = observability.instrument(tracer_provider=provider)
    observability.uninstrument()  # on for the traced peer's runs only

    def tool_results(messages: list[BaseMessage]) -> int:
        return sum(isinstance(m, ToolMessage) for m in messages)

    async def run_agent() -> int:
        result = await agent.run(QUERY)
        return len(result.steps) if result.error is None else -1

    async def run_graph() -> int:
        state = await graph.ainvoke({"messages": [HumanMessage(QUERY)]}, {"configurable": {"synthesize": False}})
        return tool_results(state["messages"])

    async def run_prebuilt() -> int:
        return tool_results((await prebuilt.ainvoke({"messages": [HumanMessage(QUERY)]}, limit))["messages"])

    async def run_lc() -> int:
        return tool_results((await lc_agent.ainvoke({"messages": [HumanMessage(QUERY)]}, limit))["messages"])

    async def run_bare() -> int:
        return tool_results(await bare_loop(bare_model, TOOLS, QUERY))

    async def run_traced() -> int:
        observability.active = tracing
        try:
            result = await traced_agent.run(QUERY)
        finally:
            observability.active = None
        spans = exporter.get_finished_spans()
        exporter.clear()
        if not any(span.name.startswith("execute_tool") for span in spans):
            return -1
        return len(result.steps) if result.error is None else -1

    return {"reactgraph": run_agent, "reactgraph.graph": run_graph, "lg.prebuilt": run_prebuilt,
            "lc.create_agent": run_lc, "bare": run_bare, "reactgraph.traced": run_traced}


async def check(name: str, runner: Runner, k: int) -> None:
    """Warm-up run that also makes sure the peer did the K tool calls (not timed)."""
    seen = await runner()
    if seen != k:
        raise RuntimeError(f"{name} ran {seen} tool calls, expected {k}")


async def time_peers(peers: dict[str, Runner], k: int, repeats: int,
                     clock: Callable[[], float] = time.perf_counter) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Seconds of each peer's timed runs by ``clock`` (wall time, or ``time.process_time``
    with ``--cpu``), and reactgraph's time over each peer's in each round: the peers take
    turns, and a round's runs follow each other, so a slow spell of the shared machine hits
    both sides of a ratio alike."""
    for name, runner in peers.items():
        for _ in range(2):
            await check(name, runner, k)
    samples: dict[str, list[float]] = {name: [] for name in peers}
    for _ in range(repeats):
        for name, runner in peers.items():
            gc.collect()
            started = clock()
            await runner()
            samples[name].append(clock() - started)
    ratios = {name: [ours / theirs for ours, theirs in zip(samples["reactgraph"], values, strict=True)]
              for name, values in samples.items()}
    return samples, ratios


def marginal_cost(short: tuple[int, list[float]], long: tuple[int, list[float]]) -> float:
    """Seconds one more iteration adds to a run: the slope between the median run times
    at two K, ``short`` and ``long`` being ``(K, run times in seconds)``."""
    (k_short, short_times), (k_long, long_times) = short, long
    return (statistics.median(long_times) - statistics.median(short_times)) / (k_long - k_short)


def marginal_ratio_interval(ours: tuple[list[float], list[float]], theirs: tuple[list[float], list[float]],
                            resamples: int = 2000) -> tuple[float, float]:
    """A 90 % bootstrap interval of the ratio of two peers' marginal costs (each given as its
    run times at the shorter and the longer K): every resample redraws the four lists."""
    draw = random.Random(0)

    def slope(short: list[float], long: list[float]) -> float:
        return (statistics.median(draw.choices(long, k=len(long)))
                - statistics.median(draw.choices(short, k=len(short))))

    ratios = sorted(slope(*ours) / slope(*theirs) for _ in range(resamples))
    return ratios[int(0.05 * resamples)], ratios[int(0.95 * resamples) - 1]


def median_interval(values: list[float], resamples: int = 2000) -> tuple[float, float]:
    """A 90 % bootstrap interval of the median of ``values``: the 5th and 95th percentiles
    of the medians of ``resamples`` resamples (drawn with a fixed seed, so a run prints the
    same interval for the same times). How far the machine's noise could have moved the
    printed median."""
    draw = random.Random(0)
    medians = sorted(statistics.median(draw.choices(values, k=len(values))) for _ in range(resamples))
    return medians[int(0.05 * resamples)], medians[int(0.95 * resamples) - 1]


async def peak_memory(peers: dict[str, Runner], repeats: int) -> dict[str, float]:
    """Median peak KiB of one run under tracemalloc (a separate pass: tracing is slow)."""
    peaks: dict[str, list[float]] = {name: [] for name in peers}
    tracemalloc.start()
    try:
        for _ in range(repeats):
            for name, runner in peers.items():
                gc.collect()
                tracemalloc.reset_peak()
                before, _ = tracemalloc.get_traced_memory()
                await runner()
                peaks[name].append((tracemalloc.get_traced_memory()[1] - before) / 1024)
    finally:
        tracemalloc.stop()
    return {name: statistics.median(values) for name, values in peaks.items()}


async def main(ks: list[int], repeats: int, mem_repeats: int, cpu: bool = False) -> None:
    import langchain
    import langchain_core
    import langgraph.version

    print(f"python {sys.version.split()[0]}, langgraph {langgraph.version.__version__}, "
          f"langchain {langchain.__version__}, langchain-core {langchain_core.__version__}; "
          f"repeats {repeats}, memory repeats {mem_repeats}; "
          f"{'CPU time (process_time)' if cpu else 'wall time (perf_counter)'}")
    header = (f"{'peer':<17}{'K':>3}{'ms/run':>10}{'ms/iter':>9}{'x bare':>8}"
              f"{'rg/peer':>9}{'peak KiB':>10}{'x bare':>8}{'rg mem/peer':>12}")
    print(header)
    print("-" * len(header))
    summary: list[tuple[int, float, float]] = []
    traced_summary: list[str] = []
    run_times: dict[int, dict[str, list[float]]] = {}
    for k in ks:
        peers = make_peers(k)
        run_times[k], ratios = await time_peers(peers, k, repeats, time.process_time if cpu else time.perf_counter)
        times = {name: statistics.median(values) for name, values in run_times[k].items()}
        peaks = await peak_memory(peers, mem_repeats)
        for name in peers:
            ms = times[name] * 1000
            print(f"{name:<17}{k:>3}{ms:>10.2f}{ms / k:>9.3f}{times[name] / times['bare']:>8.2f}"
                  f"{statistics.median(ratios[name]):>9.2f}{peaks[name]:>10.1f}"
                  f"{peaks[name] / peaks['bare']:>8.2f}{peaks['reactgraph'] / peaks[name]:>12.2f}")
        print()
        summary.append((k, ratios["lc.create_agent"], peaks["reactgraph"] / peaks["lc.create_agent"]))
        traced = [1 / ratio for ratio in ratios["reactgraph.traced"]]  # traced over untraced, round by round
        low, high = median_interval(traced)
        traced_summary.append(f"  K={k:<3} {statistics.median(traced):5.2f}x [{low:.2f}-{high:.2f}]")
    print("reactgraph / lc.create_agent, measured in this run (goals: time <= 1.5x at K=1, "
          "<= 1.0x at K=10 and 25; memory <= 1.2x); time: the median of the rounds' ratios and its 90% "
          "bootstrap interval")
    for k, round_ratios, memory_ratio in summary:
        goal = 1.5 if k == 1 else 1.0
        low, high = median_interval(round_ratios)
        print(f"  K={k:<3} time {statistics.median(round_ratios):5.2f}x [{low:.2f}-{high:.2f}] (goal <= {goal:.1f}x)   "
              f"peak memory {memory_ratio:5.2f}x (goal <= 1.2x)")
    if len(set(ks)) >= 2:
        print_marginal(run_times, sorted(set(ks))[-2], max(ks))
    print("reactgraph.traced / reactgraph (tracing on, in-memory exporter, over tracing off; goal: <= 1.1x), "
          "the median of the rounds' ratios and its 90% bootstrap interval")
    print("\n".join(traced_summary))


async def observability_costs(ks: list[int], repeats: int) -> None:
    """``--observability``: CPU ms per run of reactgraph, off and observed three ways. Each
    round runs every way once, in a shuffled order (so no way always follows another), and
    each way's ratio over ``off`` is the median of the rounds' ratios, with a 90 % bootstrap
    interval."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ways = {"off": None, "metrics": observability.instrument(tracing=False, metrics=True),
            "traced": observability.instrument(tracer_provider=provider),
            "traced+nodes": observability.instrument(tracer_provider=provider, node_spans=True)}
    observability.uninstrument()
    order = random.Random(0)
    print(f"{'K':>3} {'observed':<14}{'cpu ms/run':>11}{'x off':>8}{'90% interval':>16}  (median of {repeats} rounds' "
          "ratios; goal: traced <= 1.1x)")
    for k in ks:
        agent = ReActAgent(BenchModel(k=k), TOOLS, abilities=ModelAbilities(tool_call=True))
        cpu: dict[str, list[float]] = {name: [] for name in ways}
        for round_ in range(repeats + 3):  # 3 warm-up rounds
            names = list(ways)
            order.shuffle(names)
            for name in names:
                observability.active = ways[name]
                gc.collect()
                started = time.process_time()
                result = await agent.run(QUERY)
                spent = time.process_time() - started
                observability.active = None
                exporter.clear()
                if len(result.steps) != k:
                    raise RuntimeError(f"{name} ran {len(result.steps)} tool calls, expected {k}")
                if round_ >= 3:
                    cpu[name].append(spent)
        for name, values in cpu.items():
            ratios = [value / off for value, off in zip(values, cpu["off"])]
            low, high = median_interval(ratios)
            print(f"{k:>3} {name:<14}{statistics.median(values) * 1000:>11.2f}{statistics.median(ratios):>8.3f}"
                  f"{f'{low:.3f}-{high:.3f}':>16}")


def print_marginal(run_times: dict[int, dict[str, list[float]]], short: int, long: int) -> None:
    """Split each run into what one more iteration costs (the slope between K = ``short``
    and ``long``) and what a run costs whatever its K (the rest of the run at ``short``),
    for reactgraph and ``create_agent``: ms per iteration at one K mixes the two."""
    ours, theirs = run_times[short]["reactgraph"], run_times[short]["lc.create_agent"]
    long_ours, long_theirs = run_times[long]["reactgraph"], run_times[long]["lc.create_agent"]
    slope_ours = marginal_cost((short, ours), (long, long_ours))
    slope_theirs = marginal_cost((short, theirs), (long, long_theirs))
    low, high = marginal_ratio_interval((ours, long_ours), (theirs, long_theirs))
    fixed_ours = statistics.median(ours) - short * slope_ours
    fixed_theirs = statistics.median(theirs) - short * slope_theirs
    print(f"  one more iteration (slope K={short} to K={long}): reactgraph {slope_ours * 1000:.3f} ms, "
          f"lc.create_agent {slope_theirs * 1000:.3f} ms, {slope_ours / slope_theirs:.2f}x [{low:.2f}-{high:.2f}]; "
          f"the rest of a run: reactgraph {fixed_ours * 1000:.2f} ms, lc.create_agent {fixed_theirs * 1000:.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed runs per peer and K (default 30)")
    parser.add_argument("--quick", action="store_true", help="smoke check: 5 repeats")
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 10, 25], help="iterations per run")
    parser.add_argument("--cpu", action="store_true",
                        help="time runs in this process's CPU time, not wall time (a shared machine)")
    parser.add_argument("--observability", action="store_true",
                        help="only reactgraph, off / metrics / traced / traced+nodes: CPU per run")
    args = parser.parse_args()
    repeats = 5 if args.quick else args.repeats
    if args.observability:
        asyncio.run(observability_costs(args.ks, repeats))
    else:
        asyncio.run(main(args.ks, repeats, mem_repeats=min(repeats, 5), cpu=args.cpu))
