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
every test process; issue 20 asks for nothing done at import that can be done later.
Nothing is asserted.

Run:  .venv/bin/python bench/import_time.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
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


def sample(command: list[str]) -> tuple[float, float]:
    """Run ``command`` once; return its wall seconds and its peak resident MiB.

    Raises:
        RuntimeError: The command exited with an error (its stderr is in the message).
    """
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {child.returncode}: {errors.decode(errors='replace')[-500:]}")
    return elapsed, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def main(repeats: int) -> None:
    names = list(TARGETS)
    for name in names:  # warm the file cache and the bytecode caches, not timed
        sample(TARGETS[name])
    times: dict[str, list[float]] = {name: [] for name in names}
    memory: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(repeats):
        for name in names if round_index % 2 == 0 else names[::-1]:
            seconds, mib = sample(TARGETS[name])
            times[name].append(seconds)
            memory[name].append(mib)
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10, help="rounds, each starting every target once (default 10)")
    main(parser.parse_args().repeats)
