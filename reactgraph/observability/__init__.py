"""See what runs do in production (issue 40): OpenTelemetry traces following the GenAI
semantic conventions, Prometheus metrics and structured log lines. ``docs/observability.md``
shows the span tree, every metric and the log fields.

Turn it on for the process with :func:`instrument` (``reactgraph serve`` does for metrics,
and for traces with ``--otel``); :func:`uninstrument` turns it off. While it is off, a run
carries no observer at all: nothing is recorded and nothing is paid.

Example::

    from reactgraph import observability
    observability.instrument(tracer_provider=provider)          # spans, content off
    observability.instrument(tracer_provider=provider, capture_content=True, metrics=True)
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reactgraph.events import AgentEvent
    from reactgraph.observability.observer import Instrumentation, RequestInfo, RunObserver

__all__ = ["active", "current_request", "enable_metrics", "instrument", "observe", "record_event", "run_callbacks",
           "uninstrument"]

active: Instrumentation | None = None
"""What the process observes (:func:`instrument`), ``None`` when nothing is."""

current_request: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar(
    "reactgraph_request", default=None)
"""The server request a run is driven by (set by the server's middleware): its id goes on
the run's span and log line, and the run's ids and figures go on the request's log line."""


def instrument(*, tracer_provider: Any = None, tracing: bool = True, capture_content: bool | None = None,
               metrics: bool = False, node_spans: bool = False) -> Instrumentation:
    """Observe every run of every agent of the process from now on (replacing an earlier
    call's choice).

    Args:
        tracer_provider: The OpenTelemetry ``TracerProvider`` spans go to; ``None``: the
            global one (set it yourself, or with
            :func:`~reactgraph.observability.tracing.configure_otel` from the ``OTEL_*``
            environment variables).
        tracing: Make spans (needs the ``[otel]`` extra).
        capture_content: Spans record messages, tool arguments and results, follow-ups and
            plan steps' tasks; ``None``: only when
            ``$OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true``.
        metrics: Record the Prometheus metrics of
            :mod:`reactgraph.observability.metrics` (needs ``prometheus-client``).
        node_spans: Also a span for each graph node's task (``start_turn``,
            ``llm_call_native``, ``guard_context``, …) between the run and its calls: the
            run's whole path, at about one more span per model call.

    Returns:
        The :class:`~reactgraph.observability.observer.Instrumentation` in force.

    Raises:
        ImportError: ``tracing`` without OpenTelemetry, or ``metrics`` without
            ``prometheus-client``.
    """
    global active
    from reactgraph.observability.metrics import run_metrics
    from reactgraph.observability.observer import Instrumentation
    from reactgraph.observability.tracing import capture_content_default

    tracer = None
    if tracing:
        from opentelemetry import trace

        tracer = trace.get_tracer("reactgraph", tracer_provider=tracer_provider)
    capture = capture_content_default() if capture_content is None else capture_content
    active = Instrumentation(tracer=tracer, capture_content=capture, metrics=run_metrics() if metrics else None,
                             node_spans=node_spans)
    return active


def enable_metrics() -> Instrumentation:
    """Record the Prometheus metrics from now on, keeping what else :func:`instrument` set
    up (the server calls it; its ``/metrics`` serves them).

    Raises:
        ImportError: ``prometheus-client`` is not installed.
    """
    global active
    from reactgraph.observability.metrics import run_metrics
    from reactgraph.observability.observer import Instrumentation

    if active is None:
        active = Instrumentation(metrics=run_metrics())
    elif active.metrics is None:
        active = dataclasses.replace(active, metrics=run_metrics())
    return active


def uninstrument() -> None:
    """Stop observing runs (the runs going on keep their observer to their end)."""
    global active
    active = None


def run_callbacks(thread_id: str | None, *, failure_reason: str = "model_error") -> list[RunObserver]:
    """The callback handlers a run's config gets: one
    :class:`~reactgraph.observability.observer.RunObserver` while :func:`instrument` is on,
    none otherwise. The agents call it for each run; call it for a graph you run yourself:
    ``graph.ainvoke(input, {"callbacks": run_callbacks(thread_id), ...})``.

    Args:
        thread_id: The run's thread.
        failure_reason: The finish reason recorded for a run that raises.
    """
    if active is None:
        return []
    from reactgraph.observability.observer import RunObserver

    return [RunObserver(active, thread_id, failure_reason=failure_reason, request=current_request.get())]


def observe(config: dict[str, Any], thread_id: str | None, *, failure_reason: str = "model_error",
            resumes: Mapping[str, Any] | None = None) -> None:
    """Observe the run about to be started with ``config`` while :func:`instrument` is on
    (nothing otherwise): a :class:`~reactgraph.observability.observer.RunObserver` joins its
    callbacks and, with tracing, the run's ``invoke_agent`` span is opened now and its
    context goes in ``config["metadata"]`` (``reactgraph_trace``), which every checkpoint the
    run writes keeps. The agents call it just before they start the graph; call it for a
    graph you run yourself, passing the thread's checkpoint metadata when you resume it.

    Args:
        config: The run's config, changed in place.
        thread_id: The run's thread.
        failure_reason: The finish reason recorded for a run that raises.
        resumes: The metadata of the checkpoint the run resumes
            (``graph.get_state(config).metadata``): its run's span becomes a link of this
            run's span, whichever process ran it (docs/observability.md, "one trace or
            linked traces").
    """
    handlers = run_callbacks(thread_id, failure_reason=failure_reason)
    if not handlers:
        return
    [observer] = handlers
    given = config.get("callbacks")
    if given is None:
        config["callbacks"] = handlers
    elif isinstance(given, list):
        config["callbacks"] = [*given, observer]
    else:  # a callback manager
        given = given.copy()
        given.add_handler(observer, inherit=True)
        config["callbacks"] = given
    context = observer.open_span(resumes)
    if context is not None:
        from reactgraph.observability.observer import TRACE_METADATA

        config["metadata"] = {**(config.get("metadata") or {}), TRACE_METADATA: context}


_dispatch: Callable[[AgentEvent], None] | None = None


def record_event(event: AgentEvent) -> None:
    """Hand an engine event a node emits to the observer of the run it belongs to (called
    by :func:`reactgraph.events.emit` while :func:`instrument` is on;
    :func:`reactgraph.observability.observer.dispatch_event`)."""
    global _dispatch
    if _dispatch is None:
        from reactgraph.observability.observer import dispatch_event

        _dispatch = dispatch_event
    _dispatch(event)
