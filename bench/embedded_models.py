"""The embedded models of the catalogue side by side: size, start, memory, speed.

For each model of :data:`reactgraph.models.EMBEDDED_MODELS` (or those named) and each thread
count, through :class:`reactgraph.models.LocalModelServer` exactly as ``reactgraph run
--local-model NAME --local-threads N`` starts it:

* ``fetch s``: :func:`reactgraph.models.find_gguf` (0 when the file is already in the model
  cache; a first fetch downloads ``download`` and checks the pinned hash);
* ``start s``: from launching the server until ``GET /v1/models`` answers;
* ``RSS MB``: resident memory of the server process once it has answered the requests below;
* ``read tok/s`` and ``write tok/s``: llama.cpp's own prompt and generation speeds
  (``timings`` of the reply) for a 128-token completion of a short prompt;
* ``chat`` and ``json_object_schema``: one plain question, and one request constrained by a
  schema in llama.cpp's ``json_object`` + ``schema`` shape (the embedded profile's), whose reply
  must parse and carry the two required fields.

The machine's 1-minute load average before and after each row is printed beside it: llama.cpp's
threads wait for each other at every step, so its speed on cores busy with other work says
little about an idle machine's.

Usage::

    python bench/embedded_models.py                                  # every model, 1 and 2 threads
    python bench/embedded_models.py --models qwen2.5-coder-1.5b --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from typing import Any

from reactgraph.models import EMBEDDED_MODELS, LocalModelServer, find_gguf

SCHEMA = {
    "type": "object",
    "properties": {"machine": {"type": "string"}, "temperature_c": {"type": "number"}},
    "required": ["machine", "temperature_c"],
}
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _rss_mb(pid: int) -> int:
    """Resident memory of ``pid`` and its children, MB."""
    children = open(f"/proc/{pid}/task/{pid}/children").read().split()
    total_kb = 0
    for process in [pid, *map(int, children)]:
        with open(f"/proc/{process}/status") as status:
            total_kb += next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
    return round(total_kb / 1024)


def _complete(server: LocalModelServer, **body: Any) -> tuple[str, dict[str, float]]:
    """One chat completion: the reply's text and llama.cpp's ``timings``."""
    payload = json.dumps({"model": server.model_name, "temperature": 0, **body}).encode()
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=payload,
                                     headers={"Content-Type": "application/json"})
    with _OPENER.open(request, timeout=900) as response:
        reply = json.load(response)
    return reply["choices"][0]["message"]["content"], reply.get("timings", {})


def measure(name: str, threads: int) -> dict[str, Any]:
    """One row: the model ``name`` served on ``threads`` CPU threads."""
    entry = EMBEDDED_MODELS[name]
    row: dict[str, Any] = {"model": name, "threads": threads, "download": entry.download_size,
                           "load before": round(os.getloadavg()[0], 1)}
    began = time.monotonic()
    path = find_gguf(name)
    row["fetch s"] = round(time.monotonic() - began, 1)
    with LocalModelServer(model=name, model_path=path, n_threads=threads) as server:
        row["start s"] = round(server.startup_seconds or 0.0, 1)
        chat, _ = _complete(server, max_tokens=64,
                            messages=[{"role": "user", "content": "In one sentence: what does a CNC lathe do?"}])
        row["chat"] = " ".join(chat.split())[:80]
        constrained, _ = _complete(
            server, max_tokens=64, response_format={"type": "json_object", "schema": SCHEMA},
            messages=[{"role": "user", "content": "CNC-003 runs at 41.2 degrees C. Give its id and temperature as JSON."}])
        try:
            parsed = json.loads(constrained)
            row["json_object_schema"] = "obeyed" if set(SCHEMA["required"]) <= set(parsed) else "fields missing"
        except json.JSONDecodeError:
            row["json_object_schema"] = "not JSON"
        _, timings = _complete(server, max_tokens=128,
                               messages=[{"role": "user", "content": "Write a 200-word story about a factory."}])
        row["read tok/s"] = round(timings.get("prompt_per_second", 0.0), 1)
        row["write tok/s"] = round(timings.get("predicted_per_second", 0.0), 1)
        assert server.pid is not None
        row["RSS MB"] = _rss_mb(server.pid)
    row["load after"] = round(os.getloadavg()[0], 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(EMBEDDED_MODELS), default=list(EMBEDDED_MODELS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    args = parser.parse_args()
    columns = ["model", "threads", "download", "fetch s", "start s", "RSS MB", "read tok/s", "write tok/s",
               "json_object_schema", "load before", "load after", "chat"]
    print(f"Measured {time.strftime('%Y-%m-%d %H:%M')}, {len(os.sched_getaffinity(0))} CPUs\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for name in args.models:
        for threads in args.threads:
            row = measure(name, threads)
            print("| " + " | ".join(str(row[column]) for column in columns) + " |", flush=True)


if __name__ == "__main__":
    main()
