"""See what runs do in production: OpenTelemetry traces following the GenAI
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
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableBinding
from langchain_core.runnables.config import var_child_runnable_config

from reactgraph.observability.unobserved import UNOBSERVED, Unobserved

from reactgraph import events

if TYPE_CHECKING:
    from reactgraph.events import AgentEvent
    from reactgraph.observability.observer import Instrumentation, ModelCall, RequestInfo, RunObserver

__all__ = ["OBSERVER_KEY", "UNOBSERVED", "Unobserved", "active", "current_request", "enable_metrics", "instrument",
           "model_call", "observe", "observed_node", "observer_of", "observes_own_calls", "record_event", "run_node",
           "run_callbacks", "uninstrument"]

active: Instrumentation | None = None
"""What the process observes (:func:`instrument`), ``None`` when nothing is."""

current_request: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar(
    "reactgraph_request", default=None)
"""The server request a run is driven by (set by the server's middleware): its id goes on
the run's span and log line, and the run's ids and figures go on the request's log line."""


OBSERVER_KEY = "__reactgraph_observer"
"""The key, in a run's config ``configurable``, of the run's
:class:`~reactgraph.observability.observer.RunObserver` (set by :func:`observe`; LangGraph
hands ``configurable`` to every node and subgraph of the run, and keeps keys that begin with
``__`` out of checkpoint metadata)."""


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


_handed_out = False
"""Whether :func:`run_callbacks` gave out an observer, which only a config's callbacks carry:
until then :func:`observer_of` does not look through them."""


def _new_observer(thread_id: str | None, failure_reason: str) -> RunObserver | None:
    if active is None:
        return None
    from reactgraph.observability.observer import RunObserver

    return RunObserver(active, thread_id, failure_reason=failure_reason, request=current_request.get())


def run_callbacks(thread_id: str | None, *, failure_reason: str = "model_error") -> list[RunObserver]:
    """The callback handlers to give a graph you run yourself:
    ``graph.ainvoke(input, {"callbacks": run_callbacks(thread_id), ...})``: one
    :class:`~reactgraph.observability.observer.RunObserver` while :func:`instrument` is on,
    none otherwise. (:func:`observe` does the same and more, for a little less CPU.)

    Args:
        thread_id: The run's thread.
        failure_reason: The finish reason recorded for a run that raises.
    """
    global _handed_out
    observer = _new_observer(thread_id, failure_reason)
    if observer is None:
        return []
    _handed_out = True
    return [observer]


def observe(config: dict[str, Any], thread_id: str | None, *, failure_reason: str = "model_error",
            resumes: Mapping[str, Any] | None = None, reported: bool = False) -> RunObserver | None:
    """Observe the run about to be started with ``config`` while :func:`instrument` is on
    (nothing otherwise). A :class:`~reactgraph.observability.observer.RunObserver` goes in
    ``config["configurable"]``, where the engine's hooks find it (no node, model or tool
    callback event is dispatched to it). With tracing, the run's ``invoke_agent`` span is
    opened now and its context goes in ``config["metadata"]`` (``reactgraph_trace``), which
    every checkpoint the run writes keeps. The agents call it just before they start the
    graph; call it for a graph you run yourself, passing the thread's checkpoint metadata
    when you resume it.

    Args:
        config: The run's config, changed in place.
        thread_id: The run's thread.
        failure_reason: The finish reason recorded for a run that raises.
        resumes: The metadata of the checkpoint the run resumes
            (``graph.get_state(config).metadata``): its run's span becomes a link of this
            run's span, whichever process ran it (docs/observability.md, "one trace or
            linked traces").
        reported: The caller reports the run's start and end itself
            (:meth:`~reactgraph.observability.observer.RunObserver.run_started` and
            :meth:`~reactgraph.observability.observer.RunObserver.run_finished`, as the
            agents do, which also give LangGraph the observer's ``run_id`` as the graph
            run's, ``config["run_id"]``); otherwise the observer is a callback handler of the
            graph's root run (not inherited by its nodes) and learns them from LangChain:
            ``config["callbacks"]`` becomes a callback manager holding the handlers it held
            (inherited by every node, as before) and the observer.

    Returns:
        The run's observer; ``None`` when :func:`instrument` is off.
    """
    observer = _new_observer(thread_id, failure_reason)
    if observer is None:
        return None
    from reactgraph.observability.observer import TRACE_METADATA

    if not reported:
        from langchain_core.callbacks import BaseCallbackManager, CallbackManager

        given = config.get("callbacks")
        if isinstance(given, BaseCallbackManager):
            manager = given.copy()
            manager.add_handler(observer, inherit=False)
        else:  # None or a list of handlers, which every node inherits
            inherited = list(given or [])
            manager = CallbackManager(handlers=[*inherited, observer], inheritable_handlers=inherited)
        config["callbacks"] = manager
    config["configurable"] = {**(config.get("configurable") or {}), OBSERVER_KEY: observer}
    context = observer.open_span(resumes)
    if context is not None:
        config["metadata"] = {**(config.get("metadata") or {}), TRACE_METADATA: context}
    return observer


def observer_of(config: Mapping[str, Any] | None) -> RunObserver | None:
    """The :class:`~reactgraph.observability.observer.RunObserver` of the run ``config``
    (a node's config) belongs to: the one :func:`observe` put in its ``configurable``, or
    one of its callbacks (:func:`run_callbacks`); ``None`` for a run nobody observes."""
    if not config:
        return None
    configurable = config.get("configurable")
    if configurable:
        observer = configurable.get(OBSERVER_KEY)
        if observer is not None:
            return observer
    if not _handed_out:
        return None
    from reactgraph.observability.observer import RunObserver

    callbacks = config.get("callbacks")
    for handler in callbacks if isinstance(callbacks, list) else getattr(callbacks, "handlers", None) or ():
        if isinstance(handler, RunObserver):
            return handler
    return None


def observes_own_calls(runnable: Any) -> bool:
    """Whether ``runnable`` observes (and bounds) each of its models' calls itself: a class
    that says ``observes_calls = True`` (a fallback chain), also under ``with_config``/``bind``
    (a ``RunnableBinding`` answers for what it binds). Read from the class, not the instance:
    a missing attribute of a pydantic model (every chat model and binding) costs a raised and
    caught ``AttributeError``, and the loop asks once per model call."""
    while isinstance(runnable, RunnableBinding):
        runnable = runnable.bound
    return bool(getattr(type(runnable), "observes_calls", False))


def model_call(runnable: Any, model_input: Any, config: Mapping[str, Any] | None) -> ModelCall:
    """The hook around one model call the engine makes (``reactgraph.engine.dualmode.call_model``
    and ``stream_model``, each model of a fallback chain)::

        with observability.model_call(model, messages, config) as call:
            return call.returned(await model.ainvoke(messages, config))

    Args:
        runnable: The model runnable called; one that observes its own calls (a fallback
            chain, ``observes_calls = True``: :func:`observes_own_calls`) is not observed here.
        model_input: Its input (a message list).
        config: The config of the node making the call.

    Returns:
        A :class:`~reactgraph.observability.observer.ModelCall` of the run's observer (its
        ``chat`` span, metrics and token counts), or a stand-in that records nothing when
        no observer watches the run.
    """
    observer = observer_of(config)
    if observer is None or observes_own_calls(runnable):
        return UNOBSERVED  # type: ignore[return-value]
    return observer.model_call(runnable, model_input, config)  # type: ignore[arg-type]


async def run_node(name: str, body: Callable[..., Awaitable[Any]], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """The hook around one graph node's task: ``await body(*args, **kwargs)``, through the
    run's observer when one watches the run
    (:meth:`~reactgraph.observability.observer.RunObserver.run_node`: a tool call's,
    a DAG step's, a plan round's and, with ``node_spans``, any node's span).

    Args:
        name: The node's name.
        body: The node's body (``args[0]`` is its input; ``kwargs["config"]`` its config
            when it takes one, else the config LangGraph runs it with).
        args, kwargs: What LangGraph called the node with.

    Returns:
        What the body returned.
    """
    observer = observer_of(kwargs.get("config") or var_child_runnable_config.get())
    if observer is None:
        return await body(*args, **kwargs)
    return await observer.run_node(name, args[0] if args else None, lambda: body(*args, **kwargs))


def observed_node(body: Callable[..., Awaitable[Any]], name: str) -> Callable[..., Awaitable[Any]]:
    """An async graph node that runs ``body`` through :func:`run_node` (the DAG graph's
    nodes; the ReAct graph's get the same through ``dual_node``). Its signature is the
    body's, so LangGraph injects what the body asks for (``config``…).

    Args:
        body: The node's async body.
        name: The node's name.
    """

    async def node(*args: Any, **kwargs: Any) -> Any:
        return await run_node(name, body, args, kwargs)

    node.__signature__ = inspect.signature(body)  # type: ignore[attr-defined]
    node.__name__ = name
    return node


_observed_events: tuple[type, ...] | None = None
"""The event types the observer records (``observer.OBSERVED_EVENTS``), read at the first event."""


def record_event(event: AgentEvent) -> None:
    """Hand an engine event a node emits to the observer of the run it belongs to (found in
    the node's config, :func:`observer_of`), when it is one the observer records (called by
    :func:`reactgraph.events.emit` while :func:`instrument` is on)."""
    global _observed_events
    if _observed_events is None:
        from reactgraph.observability.observer import OBSERVED_EVENTS

        _observed_events = OBSERVED_EVENTS
    if not isinstance(event, _observed_events):
        return
    observer = observer_of(var_child_runnable_config.get())
    if observer is not None:
        observer.on_agent_event(event)


def _record_if_observed(event: AgentEvent) -> None:
    """The recorder :mod:`reactgraph.events` calls for each emitted event: recorded while
    :func:`instrument` is on, dropped otherwise."""
    if active is not None:
        record_event(event)


events.set_recorder(_record_if_observed)
