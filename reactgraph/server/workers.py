"""Several server processes on one listening socket: ``reactgraph serve --workers N``.

One process runs one event loop, so it uses one core; :func:`run_workers` forks ``N``
worker processes that accept connections on one port (each on a socket of its own on
Linux, :func:`worker_socket`), each with its own agent, checkpointer connections and runs. A thread's runs, follow-ups and resumes go through the
shared database, so whichever worker takes a request can serve it: that needs a
checkpointer every process sees and a shared interrupt queue, i.e. Postgres
(:func:`check_shared`). SQLite or memory keep which runs are going in each process (its
:class:`~reactgraph.InMemoryInterruptQueue`): a follow-up reaching another worker would be
refused, and two workers could run one thread at once.

The parent only supervises: a worker that exits after it started serving (killed, out of
memory) is started again; one that fails before (its database unreachable, say) stops
them all and its exit status is the parent's. ``SIGTERM`` or ``SIGINT`` to the parent
stops the workers and ends it; on Linux the workers also get ``SIGTERM`` when the parent
dies any other way (``SIGKILL``), so none is left serving on its own.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from reactgraph.persistence.checkpointing import checkpoint_target, is_postgres_url
from reactgraph.core.errors import WorkersError
from reactgraph.observability.metrics import worker_exited

logger = logging.getLogger(__name__)

Worker = Callable[[socket.socket, Callable[[], None]], int | None]
"""What a worker process runs: ``worker(sock, ready)`` serves on the listening socket
``sock`` (its own, or one all workers share: :func:`worker_socket`), calls ``ready()``
once it is about to accept connections, and returns its exit status when it stops."""


def check_shared(workers: int, checkpoints: str | os.PathLike[str] | None) -> None:
    """Refuse several workers on a checkpointer they cannot share.

    Args:
        workers: The number of worker processes asked for.
        checkpoints: The checkpoint path or URL as ``serve`` takes it (``None``:
            ``$REACTGRAPH_DATABASE_URL``, then the default SQLite file).

    Raises:
        WorkersError: ``workers`` below 1; or above 1 with SQLite or memory checkpoints
            (their run bookkeeping is per process: a follow-up or a second run could reach
            another worker, which would not know the run); or above 1 where ``fork`` is
            not available (Windows).
    """
    if workers < 1:
        raise WorkersError(f"--workers must be at least 1, got {workers}")
    if workers == 1:
        return
    target = checkpoint_target(checkpoints)
    if not is_postgres_url(target):
        kind = "memory" if target == "memory" else "SQLite"
        raise WorkersError(f"--workers {workers} needs Postgres checkpoints (--checkpoints postgresql://… or "
                           f"$REACTGRAPH_DATABASE_URL): with {kind} each process keeps its own running runs and "
                           "follow-ups, so workers could not share threads")
    if "fork" not in multiprocessing.get_all_start_methods():
        raise WorkersError("--workers above 1 needs the fork start method (Linux, macOS)")


BACKLOG = 2048
"""Length of each listening socket's queue of connections not accepted yet."""


def listening_socket(host: str, port: int, backlog: int = BACKLOG, *, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening.

    Args:
        host, port: The address (port 0: a free one).
        backlog: Length of the queue of connections not accepted yet.
        reuse_port: Join the ``SO_REUSEPORT`` group of the address (Linux spreads the
            connections over the group's listening sockets).

    Raises:
        OSError: The address is in use or not available.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise OSError(f"could not listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def worker_socket(host: str, port: int) -> socket.socket:
    """The socket :func:`run_workers` serves ``host:port`` on.

    On Linux, a port reservation: bound with ``SO_REUSEPORT`` but not listening; each
    worker then listens on a socket of its own on the port and the kernel spreads new
    connections evenly over them. (With one shared listening socket the worker that wakes
    first accepts a whole burst: 70/30 of the CPU time at 200 connections at once with
    two workers, bench/load.py.) Elsewhere, one listening socket every worker accepts from.

    Raises:
        OSError: The address is in use or not available.
    """
    if not (sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")):
        return listening_socket(host, port)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"could not listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def _own_socket(sock: socket.socket) -> socket.socket:
    """The socket a worker accepts on: ``sock`` when it listens (shared by the workers),
    else a listening socket of the worker's own on the port ``sock`` reserves."""
    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        return sock
    host, port = sock.getsockname()[:2]
    own = listening_socket(host, port, reuse_port=True)
    sock.close()
    return own


def _follow_parent(parent: int) -> None:
    """Have this worker receive ``SIGTERM`` when the supervisor ``parent`` dies, even by
    ``SIGKILL`` (Linux ``PR_SET_PDEATHSIG``; elsewhere nothing), so no worker outlives it;
    exit at once if it is already gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # no prctl to call: the worker outlives a killed supervisor
            logger.debug("prctl(PR_SET_PDEATHSIG) unavailable")
    if os.getppid() != parent:
        raise SystemExit(0)


def _worker_main(worker: Worker, sock: socket.socket, ready: Any, parent: int) -> None:
    """The body of a worker process: default signal handling (the parent's handlers are
    inherited through ``fork``), tied to the supervisor's life, then ``worker`` on its
    socket; its return value is the exit status."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _follow_parent(parent)
    raise SystemExit(worker(_own_socket(sock), ready.set) or 0)


def run_workers(worker: Worker, sock: socket.socket, workers: int) -> int:
    """Run ``workers`` forked processes of ``worker`` on ``sock`` until told to stop.

    Call it before any event loop or thread is started in this process (``fork`` copies
    only the calling thread). See the module docstring for restarts and stopping.

    Args:
        worker: What each process runs (:data:`Worker`).
        sock: From :func:`worker_socket`.
        workers: How many processes (at least 1).

    Returns:
        0 when stopped by a signal; the exit status of a worker that failed before it
        was ready (2 when it had none).
    """
    context = multiprocessing.get_context("fork")
    running: dict[int, tuple[Any, Any]] = {}
    stopping = False
    status = 0

    def start(index: int) -> None:
        ready = context.Event()
        process = context.Process(target=_worker_main, args=(worker, sock, ready, os.getpid()),
                                  name=f"reactgraph-worker-{index}", daemon=False)
        process.start()
        running[index] = (process, ready)

    def stop(*_args: Any) -> None:
        nonlocal stopping
        stopping = True
        for process, _ in running.values():
            if process.exitcode is None and process.pid is not None:
                try:
                    os.kill(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for index in range(workers):
            start(index)
        while running:
            multiprocessing.connection.wait([process.sentinel for process, _ in running.values()])
            for index, (process, ready) in list(running.items()):
                if process.exitcode is None:
                    continue
                process.join()
                del running[index]
                worker_exited(process.pid)  # its runs no longer count as running in /metrics
                if stopping:
                    continue
                if not ready.is_set():
                    status = process.exitcode if process.exitcode and process.exitcode > 0 else 2
                    logger.error("worker %d exited with status %s before serving; stopping", index, process.exitcode)
                    stop()
                else:
                    logger.error("worker %d (pid %d) exited with status %s; starting it again", index, process.pid,
                                   process.exitcode)
                    start(index)
        return status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
