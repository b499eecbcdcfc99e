"""What the run observer records, apart from the observer itself: the settings of what is
observed (:class:`Instrumentation`) and of an HTTP request (:class:`RequestInfo`), content
attributes cut to :data:`CONTENT_CHARS` (:func:`cut_content`, :func:`content_json`,
:func:`message_parts`), a tool step read from a node's output (:func:`step_record`), the
run's span context as text (:data:`TRACE_METADATA`, :func:`format_span_context`,
:func:`parse_span_context`) and a model's request parameters (:func:`model_params`).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableBinding

from reactgraph.engine.state import StepRecord
from reactgraph.observability.metrics import RunMetrics

try:  # the [otel] extra: spans; without it only metrics and log lines are recorded
    from opentelemetry.trace import SpanContext, TraceFlags
except ImportError:  # pragma: no cover - the unit suite installs the extra
    SpanContext = TraceFlags = None


CONTENT_CHARS = 8_000
"""Most characters of one content attribute (messages, arguments, results) when content is
recorded."""


TRACE_METADATA = "reactgraph_trace"
"""The key, in a run's config ``metadata`` and so in the metadata of every checkpoint the run
writes (LangGraph's savers copy it there), of the run's ``invoke_agent`` span context as
``<trace id, 32 hex>-<span id, 16 hex>``. A run that resumes the thread, in this process or
another, reads it from the checkpoint it resumes and links its own span to it."""


@dataclass(frozen=True)
class Instrumentation:
    """What is observed (:func:`reactgraph.observability.instrument` sets one for the process).

    Attributes:
        tracer: The OpenTelemetry tracer spans are made with; ``None``: no spans.
        capture_content: Spans record messages, tool arguments and results.
        metrics: The Prometheus metric families; ``None``: no metrics.
        node_spans: A span for every graph node's task (the run's path through the graph,
            node by node); otherwise only tool calls, DAG plan rounds and steps have one
            besides the run and its model calls, whose spans say their node.
    """

    tracer: Any = None
    capture_content: bool = False
    metrics: RunMetrics | None = None
    node_spans: bool = False


@dataclass
class RequestInfo:
    """What the server's request log line takes from the run its request drove: set by the
    middleware in a context variable, filled by the run's observer at the run's end."""

    request_id: str
    run_id: str | None = None
    finish_reason: str | None = None
    model_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    trace_id: str | None = None


def cut_content(text: str) -> str:
    return text if len(text) <= CONTENT_CHARS else text[:CONTENT_CHARS] + "…"


def content_json(value: Any) -> str:
    return cut_content(json.dumps(value, ensure_ascii=False, default=str))


def message_parts(message: BaseMessage) -> dict[str, Any]:
    """A message in the GenAI conventions' message shape: ``{role, parts}``."""
    role = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}.get(message.type, message.type)
    parts: list[dict[str, Any]] = []
    text = message.text if isinstance(message.text, str) else str(message.content)
    if text:
        kind = "tool_call_response" if role == "tool" else "text"
        parts.append({"type": kind, "content": text} if kind == "text"
                     else {"type": kind, "id": getattr(message, "tool_call_id", None), "response": text})
    for call in getattr(message, "tool_calls", None) or []:
        parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": call.get("args")})
    return {"role": role, "parts": parts}


def step_record(outputs: Any) -> StepRecord | None:
    """The step record in what ``execute_tools`` returned (a ``Command``, or a list)."""
    for item in outputs if isinstance(outputs, list) else [outputs]:
        update = getattr(item, "update", None)
        if isinstance(update, dict) and update.get("steps"):
            record = update["steps"][0]
            return record if isinstance(record, dict) else None
    return None


def format_span_context(context: Any) -> str:
    """A span context as :data:`TRACE_METADATA` writes it: ``<trace id>-<span id>`` in hex."""
    return f"{context.trace_id:032x}-{context.span_id:016x}"


def parse_span_context(text: Any) -> Any:
    """The (remote, sampled) span context :func:`format_span_context` wrote, ``None`` for
    anything else (no value, another shape, zero ids, no OpenTelemetry)."""
    if SpanContext is None or not isinstance(text, str) or len(text) != 49 or text[32] != "-":
        return None
    try:
        trace_id, span_id = int(text[:32], 16), int(text[33:], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def present(attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` without the ``None`` values (OpenTelemetry takes none)."""
    return {key: value for key, value in attributes.items() if value is not None}


MODEL_PARAMS: dict[int, tuple[Callable[[], Any], dict[str, Any]]] = {}
""":func:`model_params` by the model runnable's ``id``, with a weak reference to the
runnable (a new object at a reused id is read afresh, and the cache keeps no model alive);
cleared when it holds :data:`MODEL_PARAMS_KEPT`."""


MODEL_PARAMS_KEPT = 256


def model_params(runnable: Any) -> dict[str, Any]:
    """LangChain's ``ls_*`` parameters (provider, model name, temperature, max tokens) of
    the chat model under ``runnable`` (through ``bind``/``bind_tools`` bindings, with their
    keyword arguments), ``{}`` when there is no chat model under it. Read once per runnable:
    a model's parameters do not change between its calls."""
    known = MODEL_PARAMS.get(id(runnable))
    if known is not None and known[0]() is runnable:
        return known[1]
    bound: dict[str, Any] = {}
    model = runnable
    while isinstance(model, RunnableBinding):
        bound = {**model.kwargs, **bound}
        model = model.bound
    params: dict[str, Any] = {}
    if isinstance(model, BaseChatModel):
        try:
            params = model._get_ls_params(**bound)
        except Exception:  # a model whose parameters cannot be read is still traced, unnamed
            params = {}
        if not params.get("ls_model_name"):
            params["ls_model_name"] = getattr(model, "model_name", None) or getattr(model, "model", None) \
                or model._llm_type
    try:
        reference: Callable[[], Any] = weakref.ref(runnable)
    except TypeError:  # an object that takes no weak reference is read at each call
        return params
    if len(MODEL_PARAMS) >= MODEL_PARAMS_KEPT:
        MODEL_PARAMS.clear()
    MODEL_PARAMS[id(runnable)] = (reference, params)
    return params
