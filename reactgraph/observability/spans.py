"""The span bookkeeping of the run observer: one run's state (``RunState``), the leaf spans of its model and tool calls noted while they run and made with
the run's end (``_Leaf``), the node task's span in the running context (``TASK_SPAN``), and
the span methods :class:`~reactgraph.observability.observer.RunObserver` inherits
(:class:`SpanBookkeeping`)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from reactgraph.observability import tracing as names
from reactgraph.observability.records import cut_content

try:  # the [otel] extra: spans; without it only metrics and log lines are recorded
    from opentelemetry.trace import SpanKind, Status, StatusCode
    from opentelemetry.trace import set_span_in_context as _in_context
except ImportError:  # pragma: no cover - the unit suite installs the extra
    SpanKind = Status = StatusCode = _in_context = None


@dataclass
class _Leaf:
    """A span with no children (a model call's, a tool call's), noted while its call runs
    and made whole with the run's end: one ``start_span`` with every attribute at the noted
    start time, then ``end`` at the noted end time. Made together, a run's leaves cost
    OpenTelemetry's SDK about half the CPU that spans made one by one between the run's
    other work cost (bench/README); the run's own span, which every leaf's
    parent chain ends in, is exported with its end in either case."""

    name: str
    context: Any
    attributes: dict[str, Any]
    kind: Any
    started: int = field(default_factory=time.time_ns)
    ended: int | None = None
    error: BaseException | str | None = None
    error_type: str | None = None


@dataclass
class ToolSpan:
    name: str
    call_id: str
    leaf: _Leaf | None = None


@dataclass
class RunState:
    """The bookkeeping of one graph run (cleared at its end)."""

    run_id: UUID
    started: float
    kind: str
    span: Any = None
    context: Any = None
    attributes: dict[str, Any] = field(default_factory=dict)
    open: dict[int, Any] = field(default_factory=dict)
    leaves: list[_Leaf] = field(default_factory=list)
    round_span: Any = None
    rounds: int = 0
    mode: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    answered: bool = False
    paused: bool = False


TASK_SPAN: ContextVar[tuple[SpanBookkeeping, Any] | None] = ContextVar("reactgraph_task_span", default=None)
"""The observer and span of the node task running in this context (a tool call, a DAG step,
a node with ``node_spans``): model calls, events and nested nodes (a step's subgraph) made
inside it go under that span. Each node task of LangGraph runs in its own copy of the
context, so parallel tasks each see their own."""


class SpanBookkeeping:
    """The span methods of :class:`~reactgraph.observability.observer.RunObserver`: spans that
    hold others (kept open in the run's state), leaf spans made with the run's end, where a
    span made now goes, and a failed span's error. The observer gives ``instrumentation``."""

    instrumentation: Any

    @staticmethod
    def _context(state: RunState, parent: Any) -> Any:
        """The context whose current span is ``parent`` (the run span's is made once)."""
        if parent is not state.span:
            return _in_context(parent)
        if state.context is None:
            state.context = _in_context(parent)
        return state.context

    def _start_span(self, state: RunState, name: str, parent: Any, attributes: dict[str, Any]) -> Any:
        """A span under ``parent`` (a span of this run) that holds others (a DAG plan round
        or step, a node's task), kept open in ``state`` until it ends; ``attributes`` hold
        no ``None``."""
        span = self.instrumentation.tracer.start_span(name, context=self._context(state, parent),
                                                      kind=SpanKind.INTERNAL, attributes=attributes)
        state.open[id(span)] = span
        return span

    @staticmethod
    def _end_span(state: RunState, span: Any) -> None:
        state.open.pop(id(span), None)
        span.end()

    def _leaf(self, state: RunState, name: str, parent: Any, attributes: dict[str, Any], kind: Any = None) -> _Leaf:
        """A leaf span starting now under ``parent``, made with the run's end."""
        leaf = _Leaf(name, self._context(state, parent), attributes, kind or SpanKind.INTERNAL)
        state.leaves.append(leaf)
        return leaf

    @staticmethod
    def _end_leaf(leaf: _Leaf, ending: Mapping[str, Any] | None = None, error: BaseException | str | None = None,
                  error_type: str | None = None) -> None:
        """The leaf's call ended now, adding ``ending``'s attributes, failed with ``error``."""
        leaf.ended = time.time_ns()
        if ending:
            leaf.attributes.update(ending)
        leaf.error, leaf.error_type = error, error_type

    def _make_leaves(self, state: RunState) -> None:
        """Make the run's leaf spans (a call the run was cut in ends now)."""
        tracer = self.instrumentation.tracer
        for leaf in state.leaves:
            span = tracer.start_span(leaf.name, context=leaf.context, kind=leaf.kind, attributes=leaf.attributes,
                                     start_time=leaf.started)
            if leaf.error is not None:
                self._error(span, leaf.error, leaf.error_type, leaf.ended)
            span.end(end_time=leaf.ended)
        state.leaves.clear()

    def _task_span(self) -> Any:
        """The span of the node task this code runs in, when it is one of this run's."""
        current = TASK_SPAN.get()
        return current[1] if current is not None and current[0] is self else None

    def _parent(self, state: RunState) -> Any:
        """Where a span or event made here goes: the node task's span, else the open plan
        round's (DAG mode), else the run's."""
        return self._task_span() or state.round_span or state.span

    @staticmethod
    def _error(span: Any, error: BaseException | str, error_type: str | None = None, at: int | None = None) -> None:
        """Mark ``span`` failed with ``error`` (an exception is recorded as an event at
        ``at``, ns since the epoch; now when ``None``)."""
        if isinstance(error, BaseException):
            span.record_exception(error, timestamp=at)
            error_type = error_type or type(error).__name__
            error = f"{type(error).__name__}: {error}"
        span.set_attribute(names.ERROR_TYPE, error_type or "error")
        span.set_status(Status(StatusCode.ERROR, cut_content(str(error))[:500]))
