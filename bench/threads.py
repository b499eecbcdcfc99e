"""The embedded model's CPU threads: generation speed by thread count, on an idle
machine and with another process busy on one core, to choose ``reactgraph --local-threads``'s
default (:func:`reactgraph.models.local.default_threads`).

For each thread count (1 up to the CPUs this process may use) the embedded server
(:class:`reactgraph.models.LocalModelServer`, the default model) is started and asked for
the same 96-token completion ``--repeats`` times, first alone, then while a child process
spins on the CPU (what another agent, a build or a browser does to a shared machine).
``write tok/s`` is the median of completion tokens per second of wall time (the server's
usage counts).

Usage::

    python bench/threads.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from reactgraph.models import LocalModelServer

PROMPT = "Write a short maintenance note about a CNC lathe whose spindle runs warm."


@contextmanager
def busy_core() -> Iterator[None]:
    """A child process spinning on the CPU for the block."""
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield
    finally:
        child.kill()
        child.wait()


def write_speed(server: LocalModelServer, repeats: int) -> float:
    """Median completion tokens per second of ``repeats`` 96-token completions."""
    speeds = []
    for _ in range(repeats):
        body = json.dumps({"model": server.model_alias, "max_tokens": 96, "temperature": 0,
                           "messages": [{"role": "user", "content": PROMPT}]}).encode()
        request = urllib.request.Request(server.base_url + "/chat/completions", body,
                                         {"Content-Type": "application/json"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=300) as response:
            usage = json.load(response)["usage"]
        speeds.append(usage["completion_tokens"] / (time.perf_counter() - started))
    return statistics.median(speeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0))
    print(f"{cpus} CPUs; median write tok/s of {args.repeats} completions of 96 tokens")
    print(f"{'threads':>7} {'idle':>8} {'1 core busy':>12}")
    for threads in range(1, cpus + 1):
        server = LocalModelServer(n_threads=threads).start()
        try:
            write_speed(server, 1)  # warm-up
            idle = write_speed(server, args.repeats)
            with busy_core():
                busy = write_speed(server, args.repeats)
        finally:
            server.stop()
        print(f"{threads:>7} {idle:>8.1f} {busy:>12.1f}", flush=True)


if __name__ == "__main__":
    main()
