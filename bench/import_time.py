"""Start-up cost: the time and memory of importing reactgraph next to importing its peers.

Every sample is a fresh interpreter (``sys.executable -c ...``, or the CLI's ``--help``),
started, waited for and measured by this process: wall time from the start to the exit
(``time.perf_counter``) and the child's peak resident memory (``os.wait4``'s
``ru_maxrss``). Targets:

* ``python``              ``pass``: the interpreter alone, the floor
* ``reactgraph``          ``import reactgraph``
* ``lc.create_agent``     ``from langchain.agents import create_agent``
* ``lg.prebuilt``         ``from langgraph.prebuilt import create_react_agent``
* ``reactgraph --help``   ``python -m reactgraph --help``: what a CLI user waits for first

The targets take turns in every round (the order reversed every other round), so a slow
moment of the shared machine hits them all. Prints the median ms and MiB of each, the time
above the floor, and reactgraph's over each peer's (medians of the rounds' ratios of the time
above the floor). A library import is paid by every CLI command, every server worker and
every test process; asks for nothing done at import that can be done later.

A second table times what a fresh process does after its imports: build the agent and run
it once (one tool call, then the answer: ``overhead.py``'s scripted model and ``add`` tool,
K = 1), timed inside the child after importing everything both peers need, for
``ReActAgent.run`` (loop only) and ``create_agent``'s ``ainvoke``. What is paid once per
process or per agent (a tokenizer loaded, schemas built, a provider package imported)
shows here and not in ``overhead.py``, which times warm runs. Nothing is asserted.

Run:  .venv/bin/python bench/import_time.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGETS: dict[str, list[str]] = {
    "python": [sys.executable, "-c", "pass"],
    "reactgraph": [sys.executable, "-c", "import reactgraph"],
    "lc.create_agent": [sys.executable, "-c", "from langchain.agents import create_agent"],
    "lg.prebuilt": [sys.executable, "-c", "from langgraph.prebuilt import create_react_agent"],
    "reactgraph --help": [sys.executable, "-m", "reactgraph", "--help"],
}
"""What each target runs, in a fresh interpreter."""

PEERS = ("lc.create_agent", "lg.prebuilt")
"""The targets reactgraph's import is compared with."""

_FIRST_RUN = """
import asyncio, sys, time
sys.path.insert(0, {bench!r})
import overhead
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from reactgraph import ModelAbilities, ReActAgent
started = time.perf_counter()
if {peer!r} == "reactgraph":
    agent = ReActAgent(overhead.BenchModel(k=1), overhead.TOOLS, abilities=ModelAbilities(tool_call=True))
    asyncio.run(agent.run(overhead.QUERY))
else:
    agent = create_agent(overhead.BenchModel(k=1), overhead.TOOLS)
    asyncio.run(agent.ainvoke({{"messages": [HumanMessage(overhead.QUERY)]}}))
print(time.perf_counter() - started)
"""
FIRST_RUN: dict[str, list[str]] = {
    peer: [sys.executable, "-c", _FIRST_RUN.format(bench=os.path.dirname(os.path.abspath(__file__)), peer=peer)]
    for peer in ("reactgraph", "lc.create_agent")
}
"""Build an agent and run it once in a fresh process; the child prints the seconds it took."""


def sample(command: list[str]) -> tuple[float, float, str]:
    """Run ``command`` once; return its wall seconds, its peak resident MiB and its output.

    Raises:
        RuntimeError: The command exited with an error (its stderr is in the message).
    """
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
        assert child.stdout is not None
        output = child.stdout.read()  # to its end: the child has exited or closed it
        _, status, usage = os.wait4(child.pid, 0)  # reaped here, for its own rusage
        elapsed = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        child.stdout.close()
        if child.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace")[-500:]
            raise RuntimeError(f"{command[:2]} exited {child.returncode}: {message}")
    return elapsed, usage.ru_maxrss / 1024, output.decode()  # ru_maxrss is in KiB on Linux


def main(repeats: int) -> None:
    names = list(TARGETS)
    for command in [*TARGETS.values(), *FIRST_RUN.values()]:  # warm the file and bytecode caches, not timed
        sample(command)
    times: dict[str, list[float]] = {name: [] for name in names}
    memory: dict[str, list[float]] = {name: [] for name in names}
    first_run: dict[str, list[float]] = {peer: [] for peer in FIRST_RUN}
    for round_index in range(repeats):
        for name in names if round_index % 2 == 0 else names[::-1]:
            seconds, mib, _ = sample(TARGETS[name])
            times[name].append(seconds)
            memory[name].append(mib)
        for peer in FIRST_RUN if round_index % 2 == 0 else list(FIRST_RUN)[::-1]:
            first_run[peer].append(float(sample(FIRST_RUN[peer])[2]))
    floor = times["python"]
    above = {name: [t - f for t, f in zip(values, floor, strict=True)] for name, values in times.items()}
    print(f"python {sys.version.split()[0]}; {repeats} rounds; medians; 'above python': the target's time "
          "less the bare interpreter's in the same round")
    header = f"{'target':<19}{'ms':>8}{'above python':>14}{'peak MiB':>10}" + "".join(f"{'rg/' + p:>20}" for p in PEERS)
    print(header)
    print("-" * len(header))
    for name in names:
        ratios = "".join(
            f"{statistics.median(r / p for r, p in zip(above['reactgraph'], above[peer], strict=True)):>20.2f}"
            if name == "reactgraph" else f"{'':>20}"
            for peer in PEERS
        )
        print(f"{name:<19}{statistics.median(times[name]) * 1000:>8.0f}{statistics.median(above[name]) * 1000:>14.0f}"
              f"{statistics.median(memory[name]):>10.1f}{ratios}")
    ours, theirs = first_run["reactgraph"], first_run["lc.create_agent"]
    print(f"\nfirst run in a fresh process, after the imports (build the agent, one tool call, the answer): "
          f"reactgraph {statistics.median(ours) * 1000:.1f} ms, "
          f"lc.create_agent {statistics.median(theirs) * 1000:.1f} ms, "
          f"{statistics.median(o / t for o, t in zip(ours, theirs, strict=True)):.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10, help="rounds, each starting every target once (default 10)")
    main(parser.parse_args().repeats)
