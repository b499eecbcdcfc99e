"""Prometheus metrics of runs, model calls, tool calls, checkpoints and HTTP requests
(the list with labels and example queries is in ``docs/observability.md``).

The metrics live in ``prometheus_client``'s default registry, made once per process by
:func:`run_metrics` (``prometheus-client`` is part of the ``[server]`` extra). Several
server processes (``reactgraph serve --workers N``) use Prometheus' multiprocess mode:
:func:`prepare_multiprocess` points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh directory
before the workers are forked, each worker writes its samples there, and
:func:`exposition` (``GET /metrics`` on any worker) adds them all up, so a scrape reads the
counts of the whole server whichever worker answers it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""The environment variable of ``prometheus_client``'s multiprocess mode: the directory the
processes write their samples to."""

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Histogram buckets of run and call durations, in seconds."""

FAST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Histogram buckets of checkpoint writes and HTTP requests that do not stream, in seconds."""


@dataclass(frozen=True)
class RunMetrics:
    """The metric families (names and labels: ``docs/observability.md``).

    Attributes:
        runs_started: ``reactgraph_runs_started_total{kind}``: graph runs started,
            ``kind`` ``start`` (a new turn) or ``resume`` (a paused or interrupted run
            continued).
        runs_finished: ``reactgraph_runs_finished_total{finish_reason}``.
        runs_running: ``reactgraph_runs_running``: runs going now.
        run_duration: ``reactgraph_run_duration_seconds{finish_reason}``.
        first_answer_token: ``reactgraph_time_to_first_answer_token_seconds``: from the
            run's start to the first streamed text of its answer.
        model_calls: ``reactgraph_model_calls_total{phase, outcome}`` (``ok`` / ``error`` / ``cancelled``).
        model_call_duration: ``reactgraph_model_call_duration_seconds{phase}``.
        tokens: ``reactgraph_tokens_total{phase, type}`` (``input`` / ``output``).
        tool_calls: ``reactgraph_tool_calls_total{tool, outcome}`` (``tool``: :func:`tool_label`).
        tool_call_duration: ``reactgraph_tool_call_duration_seconds{tool}``.
        approvals_waiting: ``reactgraph_approvals_waiting``: tool calls paused for a
            person's decision.
        follow_ups: ``reactgraph_follow_ups_total{outcome}``: ``taken`` in by a run,
            ``refused`` by the queue's limits.
        compactions: ``reactgraph_compactions_total``.
        checkpoint_writes: ``reactgraph_checkpoint_write_duration_seconds{operation}``.
        http_requests: ``reactgraph_http_requests_total{method, route, status}``.
        http_duration: ``reactgraph_http_request_duration_seconds{method, route}``:
            until the last byte of the answer (a run's whole stream).
    """

    runs_started: Any
    runs_finished: Any
    runs_running: Any
    run_duration: Any
    first_answer_token: Any
    model_calls: Any
    model_call_duration: Any
    tokens: Any
    tool_calls: Any
    tool_call_duration: Any
    approvals_waiting: Any
    follow_ups: Any
    compactions: Any
    checkpoint_writes: Any
    http_requests: Any
    http_duration: Any


_metrics: RunMetrics | None = None


def run_metrics() -> RunMetrics:
    """The process's metric families, registered in ``prometheus_client``'s default
    registry the first time.

    Raises:
        ImportError: ``prometheus-client`` is not installed (``pip install 'reactgraph[server]'``).
    """
    global _metrics
    if _metrics is None:
        from prometheus_client import Counter, Gauge, Histogram

        _metrics = RunMetrics(
            runs_started=Counter("reactgraph_runs_started", "Graph runs started (kind: start or resume).", ["kind"]),
            runs_finished=Counter("reactgraph_runs_finished", "Graph runs finished, by finish reason.",
                                  ["finish_reason"]),
            runs_running=Gauge("reactgraph_runs_running", "Graph runs going now.", multiprocess_mode="livesum"),
            run_duration=Histogram("reactgraph_run_duration_seconds", "Seconds from a run's start to its end.",
                                   ["finish_reason"], buckets=DURATION_BUCKETS),
            first_answer_token=Histogram("reactgraph_time_to_first_answer_token_seconds",
                                         "Seconds from a run's start to the first streamed text of its answer.",
                                         buckets=DURATION_BUCKETS),
            model_calls=Counter("reactgraph_model_calls", "Model calls, by phase and outcome.", ["phase", "outcome"]),
            model_call_duration=Histogram("reactgraph_model_call_duration_seconds", "Seconds per model call.",
                                          ["phase"], buckets=DURATION_BUCKETS),
            tokens=Counter("reactgraph_tokens", "Tokens the provider reported, by phase and type (input, output).",
                           ["phase", "type"]),
            tool_calls=Counter("reactgraph_tool_calls", "Tool calls, by tool and outcome.", ["tool", "outcome"]),
            tool_call_duration=Histogram("reactgraph_tool_call_duration_seconds", "Seconds per tool call.",
                                         ["tool"], buckets=DURATION_BUCKETS),
            approvals_waiting=Gauge("reactgraph_approvals_waiting", "Tool calls waiting for a person's decision.",
                                    multiprocess_mode="sum"),
            follow_ups=Counter("reactgraph_follow_ups", "Follow-ups taken in by a run, or refused by the queue's limits.",
                               ["outcome"]),
            compactions=Counter("reactgraph_compactions", "Context compactions."),
            checkpoint_writes=Histogram("reactgraph_checkpoint_write_duration_seconds",
                                        "Seconds per checkpoint write as a run waits for it (operation: put, "
                                        "put_writes).", ["operation"], buckets=FAST_BUCKETS),
            http_requests=Counter("reactgraph_http_requests", "HTTP requests, by method, route and status.",
                                  ["method", "route", "status"]),
            http_duration=Histogram("reactgraph_http_request_duration_seconds",
                                    "Seconds per HTTP request, until the last byte of its answer.",
                                    ["method", "route"], buckets=DURATION_BUCKETS),
        )
    return _metrics


_children: dict[tuple[int, tuple[str, ...]], Any] = {}

MAX_TOOL_LABELS = 100
"""Most distinct tool names the ``tool`` label of the tool metrics takes in one process (a
``serve`` worker): each name is a series of its own in every scrape, and the names come
from outside — a model may call tools that do not exist, an MCP server may name its tools
anything. Calls of further tools are counted under :data:`OTHER_TOOLS`."""

OTHER_TOOLS = "(other)"
"""The ``tool`` label of the calls of tools past :data:`MAX_TOOL_LABELS`."""

MAX_TOOL_LABEL_CHARS = 64
"""Longest ``tool`` label; a longer name is cut to it."""

_tool_labels: set[str] = set()


def tool_label(name: str) -> str:
    """The ``tool`` label of a call of tool ``name``: the name (cut to
    :data:`MAX_TOOL_LABEL_CHARS`) while fewer than :data:`MAX_TOOL_LABELS` names were
    labelled in this process, or already was; else :data:`OTHER_TOOLS`. So the series of the
    tool metrics stay bounded, whatever tool names the models and MCP servers bring."""
    label = name[:MAX_TOOL_LABEL_CHARS]
    if label in _tool_labels:
        return label
    if len(_tool_labels) >= MAX_TOOL_LABELS:
        return OTHER_TOOLS
    _tool_labels.add(label)
    return label


def labelled(family: Any, *values: str) -> Any:
    """``family.labels(*values)`` (values in the order of its label names), remembered: a
    run records a few samples per model and tool call, and ``labels()`` validates and locks
    each time (the cost of metrics per run)."""
    key = (id(family), values)
    child = _children.get(key)
    if child is None:
        child = _children[key] = family.labels(*values)
    return child


def prepare_multiprocess() -> str:
    """Turn on Prometheus' multiprocess mode for the processes this one forks next: a new
    empty directory in ``$PROMETHEUS_MULTIPROC_DIR`` (one given there already is emptied).
    Call it in the parent before ``prometheus_client`` is imported (``serve --workers``
    does, before forking).

    Returns:
        The directory.
    """
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory, exist_ok=True)
    else:
        directory = os.environ[MULTIPROC_ENV] = tempfile.mkdtemp(prefix="reactgraph-metrics-")
    return directory


def worker_exited(pid: int) -> None:
    """Forget the ``livesum`` gauges of a worker process that ended (multiprocess mode
    only), so ``reactgraph_runs_running`` does not count its runs any more."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus' text format: this process's, or in multiprocess mode
    every worker's added up.

    Returns:
        ``(body, content type)``.
    """
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess

    run_metrics()
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def time_checkpoint_writes(checkpointer: Any) -> Any:
    """Have ``checkpointer`` observe ``reactgraph_checkpoint_write_duration_seconds`` for
    each ``aput`` (operation ``put``) and ``aput_writes`` (``put_writes``): the time a run
    waits for the call, whatever the saver does in it (a saver of
    :func:`~reactgraph.open_persistence` may hold a write and store it later). Wraps the
    instance's methods once; ``None`` or a checkpointer without them is returned as is.

    Returns:
        ``checkpointer``.
    """
    if checkpointer is None or getattr(checkpointer, "_reactgraph_timed", False):
        return checkpointer
    histogram = run_metrics().checkpoint_writes
    for method, operation in (("aput", "put"), ("aput_writes", "put_writes")):
        original = getattr(checkpointer, method, None)
        if original is not None:
            setattr(checkpointer, method, _timed(original, histogram.labels(operation=operation)))
    checkpointer._reactgraph_timed = True
    return checkpointer


def _timed(method: Callable[..., Any], child: Any) -> Callable[..., Any]:
    @wraps(method)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await method(*args, **kwargs)
        finally:
            child.observe(time.perf_counter() - started)

    return timed
