"""Child-process entry point for the embedded model server (not imported by reactgraph).

Run by :class:`reactgraph.models.local.LocalModelServer` as::

    python _llamacpp_boot.py PARENT_PID MODEL_PATH HOST PORT N_CTX N_THREADS ALIAS

It starts llama.cpp's own HTTP server, embedded in the ``xllamacpp`` wheel, on
``HOST:PORT`` with the GGUF file ``MODEL_PATH`` (one slot: requests queue, none is cut
short), then sleeps until it is signalled. A daemon thread exits the process as soon as
its parent is gone, whatever killed the parent (SIGKILL included, where no ``atexit``
hook runs), so no orphan server keeps its port and memory; it also removes the parent's
temporary log directory, named by ``REACTGRAPH_LLAMA_SCRATCH_DIR``.

This file uses only the standard library until it imports ``xllamacpp``; it must not
import ``reactgraph`` (whose package import pulls in the whole engine).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
    del sys.path[0]  # don't let the modules next to this file shadow others

SCRATCH_DIR_ENV = "REACTGRAPH_LLAMA_SCRATCH_DIR"  # removed when the parent dies


def _exit_with_parent(parent: int, scratch_dir: str | None) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    if scratch_dir:  # the parent's temporary log directory, which it can't remove now
        shutil.rmtree(scratch_dir, ignore_errors=True)
    os._exit(0)


def main() -> None:
    parent, model_path, host, port, n_ctx, n_threads, alias = sys.argv[1:8]
    scratch_dir = os.environ.pop(SCRATCH_DIR_ENV, None)
    threading.Thread(target=_exit_with_parent, args=(int(parent), scratch_dir), name="parent-watch", daemon=True).start()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.model_alias = {alias}
    params.hostnames = [host]
    params.port = int(port)
    params.n_ctx = int(n_ctx)
    params.n_parallel = 1
    params.cpuparams.n_threads = int(n_threads)
    params.cpuparams_batch.n_threads = int(n_threads)
    params.use_jinja = True  # the model's own chat template
    server = xllamacpp.Server(params)  # returns once the model is loaded and the port listens
    print(f"reactgraph: serving {alias} on {host}:{port}", flush=True)
    threading.Event().wait()  # serve until signalled; `server` stays referenced meanwhile
    del server


if __name__ == "__main__":
    main()
