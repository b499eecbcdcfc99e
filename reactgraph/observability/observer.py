"""The run observer: one LangChain callback handler per run that turns what LangGraph and
LangChain report about the run (its graph, node, model and tool runs) and the engine's own
events into spans, metrics and the run's log line (issue 40).

It rides beside any other callback handler (LangSmith's tracer, a user's), reading what
they read: the graph's run is the root, each graph node's task is a run whose name is the
node's (``langgraph_node`` metadata), model calls are chat model runs whose node says their
phase (:func:`reactgraph.testing.call_kind_of`). Nothing of it changes what a run does; a
failure inside it is logged by LangChain and the run goes on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.errors import GraphInterrupt

from reactgraph.events import AgentEvent, AnswerDelta, Compacted, Injected, Stalled
from reactgraph.observability import tracing as names
from reactgraph.observability.logs import RUN_LOGGER, log_fields
from reactgraph.observability.metrics import RunMetrics, labelled
from reactgraph.testing import call_kind_of

try:  # the [otel] extra: spans; without it only metrics and log lines are recorded
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
    from opentelemetry.trace import set_span_in_context as _in_context
except ImportError:  # pragma: no cover - the unit suite installs the extra
    Link = SpanContext = SpanKind = Status = StatusCode = TraceFlags = _in_context = None

TOOL_NODE = "execute_tools"
"""The graph node that runs one tool call: its task is the ``execute_tool`` span."""

STEP_NODE = "run_step"
"""DAG mode's node that runs one plan step: its task is the ``dag_step`` span."""

PLAN_NODE = "plan"
"""DAG mode's planner: each of its runs opens a ``plan_round`` span that holds the round's
nodes (schedule, steps, analysis) as children."""

ROUND_NODES = frozenset({PLAN_NODE, "schedule", STEP_NODE, "analyze"})
"""The DAG nodes of one plan round; the next top-level node of another kind ends the round."""

LOOP_NODE_MODES = {"llm_call_native": "native", "llm_call_json": "json"}
"""The loop nodes and the mode (SPEC R2.2) of their calls."""

CONTENT_CHARS = 8_000
"""Most characters of one content attribute (messages, arguments, results) when content is
recorded."""

TRACE_METADATA = "reactgraph_trace"
"""The key, in a run's config ``metadata`` and so in the metadata of every checkpoint the run
writes (LangGraph's savers copy it there), of the run's ``invoke_agent`` span context as
``<trace id, 32 hex>-<span id, 16 hex>``. A run that resumes the thread, in this process or
another, reads it from the checkpoint it resumes and links its own span to it."""

_approvals_waiting: set[tuple[str | None, str]] = set()
"""``(thread id, tool call id)`` of the calls this process saw pause for a decision, so a
paused run resumed without that decision does not count its call twice."""


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


@dataclass
class _Chat:
    phase: str
    started: float
    span: Any = None


@dataclass
class _Tool:
    name: str
    call_id: str
    span: Any = None


@dataclass
class _RunState:
    """The bookkeeping of one graph run (cleared at its end)."""

    run_id: UUID
    started: float
    kind: str
    span: Any = None
    context: Any = None
    attributes: dict[str, Any] = field(default_factory=dict)
    parents: dict[UUID, UUID | None] = field(default_factory=dict)
    spans: dict[UUID, Any] = field(default_factory=dict)
    chats: dict[UUID, _Chat] = field(default_factory=dict)
    tools: dict[UUID, _Tool] = field(default_factory=dict)
    round_span: Any = None
    rounds: int = 0
    mode: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    answered: bool = False
    paused: bool = False


def _cut(text: str) -> str:
    return text if len(text) <= CONTENT_CHARS else text[:CONTENT_CHARS] + "…"


def _json(value: Any) -> str:
    return _cut(json.dumps(value, ensure_ascii=False, default=str))


def _message_parts(message: BaseMessage) -> dict[str, Any]:
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


def _step_record(outputs: Any) -> dict[str, Any] | None:
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


OBSERVED_EVENTS = (AnswerDelta, Compacted, Injected, Stalled)
"""The engine events the observer records (:meth:`RunObserver.on_agent_event`); the others
are not looked at."""


def dispatch_event(event: AgentEvent) -> None:
    """Hand ``event``, emitted by a node, to the :class:`RunObserver` of the run it is emitted
    in (found in the node's callbacks), when it is one the observer records."""
    if not isinstance(event, OBSERVED_EVENTS):
        return
    manager = (var_child_runnable_config.get() or {}).get("callbacks")
    for handler in getattr(manager, "handlers", None) or ():
        if isinstance(handler, RunObserver):
            handler.on_agent_event(event, getattr(manager, "parent_run_id", None))
            return


def _present(attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` without the ``None`` values (OpenTelemetry takes none)."""
    return {key: value for key, value in attributes.items() if value is not None}


def _is_task(name: str | None, metadata: Mapping[str, Any] | None, tags: Sequence[str] | None) -> bool:
    """A graph node's task: its run bears the node's name and a ``graph:step:N`` tag."""
    return name is not None and (metadata or {}).get("langgraph_node") == name and any(
        tag.startswith("graph:step:") for tag in tags or ())


class RunObserver(BaseCallbackHandler):
    """Spans, metrics and the ``run_end`` log line of one run (issue 40).

    Give one per run in the run's config callbacks (the agents do it while
    :func:`~reactgraph.observability.instrument` is on); for a graph of
    :func:`~reactgraph.create_react_graph` run directly, pass
    :func:`~reactgraph.observability.run_callbacks` as ``config["callbacks"]``. It follows
    the first graph run it is given (the root); later runs with the same handler start
    their own bookkeeping.

    Args:
        instrumentation: What to record.
        thread_id: The run's thread (``gen_ai.conversation.id``, the log line's ``thread_id``).
        failure_reason: The finish reason of a run that raised (ReAct: ``model_error``,
            as its result says).
        request: The server request driving the run, filled at its end.
    """

    run_inline = True
    """Called in the run's own task (no thread hop), which is also what makes it cheap."""

    ignore_agent = ignore_retriever = ignore_retry = ignore_custom_event = True
    """LangChain skips these events for this handler: tool runs (``ignore_agent`` covers
    them; the tool *task* is the span), retrievers, retries, custom events."""

    def __init__(self, instrumentation: Instrumentation, thread_id: str | None = None, *,
                 failure_reason: str = "model_error", request: RequestInfo | None = None) -> None:
        super().__init__()
        self.instrumentation = instrumentation
        self.thread_id = thread_id
        self.failure_reason = failure_reason
        self.request = request
        self.state: _RunState | None = None
        self._opened: Any = None

    # spans --------------------------------------------------------------------------------

    def open_span(self, resumes: Mapping[str, Any] | None = None) -> str | None:
        """Start the span of the run this observer is given next (its graph run adopts it
        when it starts) and say its context, to be written in the run's config ``metadata``
        under :data:`TRACE_METADATA`, so every checkpoint of the run carries it.

        Args:
            resumes: The metadata of the checkpoint the run continues (a resume): a span
                context it holds under :data:`TRACE_METADATA` becomes a link
                (``reactgraph.link=resumes``) of the new span, whichever process wrote it.

        Returns:
            The span context as :func:`format_span_context` writes it; ``None`` without
            tracing.
        """
        tracer = self.instrumentation.tracer
        if tracer is None:
            return None
        earlier = parse_span_context((resumes or {}).get(TRACE_METADATA))
        links = [Link(earlier, {"reactgraph.link": "resumes"})] if earlier is not None else None
        attributes = {names.OPERATION: "invoke_agent"}
        if self.thread_id is not None:
            attributes[names.CONVERSATION_ID] = self.thread_id
        if self.request is not None:
            attributes["reactgraph.request.id"] = self.request.request_id
        self._opened = tracer.start_span("invoke_agent", kind=SpanKind.INTERNAL, links=links, attributes=attributes)
        return format_span_context(self._opened.get_span_context())

    def _start_span(self, name: str, context: Any, attributes: dict[str, Any], kind: Any = None) -> Any:
        """A span under ``context`` (a parent's context, ``None``: the current one);
        ``attributes`` hold no ``None``."""
        return self.instrumentation.tracer.start_span(name, context=context, kind=kind or SpanKind.INTERNAL,
                                                      attributes=attributes)

    @staticmethod
    def _context(state: _RunState, span: Any) -> Any:
        """The context whose current span is ``span`` (the run's is made once)."""
        if span is state.span:
            if state.context is None:
                state.context = _in_context(span)
            return state.context
        return _in_context(span)

    def _parent_span(self, state: _RunState, run_id: UUID | None) -> Any:
        """The span of ``run_id`` or of its nearest ancestor that has one; below the root,
        the open plan round's span (DAG mode)."""
        seen = 0
        while run_id is not None and seen < 10_000:
            span = state.spans.get(run_id)
            if span is not None:
                return state.round_span if span is state.span and state.round_span is not None else span
            run_id = state.parents.get(run_id)
            seen += 1
        return state.round_span or state.span

    @staticmethod
    def _error(span: Any, error: BaseException | str, error_type: str | None = None) -> None:
        if isinstance(error, BaseException):
            span.record_exception(error)
            error_type = error_type or type(error).__name__
            error = f"{type(error).__name__}: {error}"
        span.set_attribute(names.ERROR_TYPE, error_type or "error")
        span.set_status(Status(StatusCode.ERROR, _cut(str(error))[:500]))

    # the run ------------------------------------------------------------------------------

    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, tags: list[str] | None = None,
                       metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """A graph run (the root), a node's task, or any runnable inside one."""
        state = self.state
        if parent_run_id is None:
            self._run_started(run_id, kwargs.get("name") or "agent", inputs)
            return
        if state is None:
            return
        state.parents[run_id] = parent_run_id
        name = kwargs.get("name")
        if not _is_task(name, metadata, tags):
            return
        tool = None
        if name == TOOL_NODE and isinstance(inputs, dict) and isinstance(inputs.get("call"), dict):
            call = inputs["call"]
            tool = state.tools[run_id] = _Tool(str(call.get("name") or "unknown"), str(call.get("id") or ""))
        if self.instrumentation.tracer is None:
            return
        if tool is None and state.round_span is None and name not in ROUND_NODES and not self.instrumentation.node_spans:
            return  # a node without a span of its own, outside a plan round: its calls go to the span above it
        parent = self._parent_span(state, parent_run_id)
        if parent is state.round_span and (name == PLAN_NODE or name not in ROUND_NODES):  # the round is over
            state.round_span.end()
            state.round_span, parent = None, state.span
        if name == PLAN_NODE and parent is state.span:
            state.rounds += 1
            state.round_span = self._start_span(f"plan_round {state.rounds}", self._context(state, state.span),
                                                {"reactgraph.dag.round": state.rounds})
            parent = state.round_span
        if tool is not None:
            span_name = f"execute_tool {tool.name}"
            attributes: dict[str, Any] = {names.OPERATION: "execute_tool", names.TOOL_NAME: tool.name,
                                          names.TOOL_CALL_ID: tool.call_id, names.TOOL_TYPE: "function"}
            if inputs.get("iteration") is not None:
                attributes["reactgraph.iteration"] = inputs["iteration"]
            if self.instrumentation.capture_content:
                attributes[names.TOOL_ARGUMENTS] = _json(inputs["call"].get("args"))
        elif name == STEP_NODE and isinstance(inputs, dict) and isinstance(inputs.get("step"), dict):
            step = inputs["step"]
            span_name = f"dag_step {step.get('id')}"
            attributes = _present({"reactgraph.dag.step_id": step.get("id"), "reactgraph.dag.round": inputs.get("round"),
                                   "reactgraph.dag.dependencies": [str(dep) for dep in step.get("dependencies") or []]})
            if self.instrumentation.capture_content:
                attributes["reactgraph.dag.task"] = _cut(str(step.get("task")))
        elif self.instrumentation.node_spans:
            span_name = name
            attributes = _present({"langgraph.node": name, "langgraph.step": (metadata or {}).get("langgraph_step")})
        else:  # the node's model calls and events go to the span above it
            return
        span = self._start_span(span_name, self._context(state, parent), attributes)
        state.spans[run_id] = span
        if tool is not None:
            tool.span = span

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A run ended: the graph's (the run's end), a node's task, or an inner runnable."""
        state = self.state
        if state is None:
            return
        if run_id == state.run_id:
            self._run_ended(state, outputs if isinstance(outputs, dict) else {}, None)
            return
        if state.mode is None and isinstance(outputs, dict) and outputs.get("mode") in ("native", "json"):
            state.mode = outputs["mode"]
            if state.span is not None:
                state.attributes["reactgraph.mode"] = state.mode
        tool = state.tools.pop(run_id, None)
        if tool is not None:
            self._tool_ended(state, tool, _step_record(outputs))
        span = state.spans.pop(run_id, None)
        if span is not None:
            span.end()

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A run raised: an interrupt (a call waits for approval), a cancel, a failure."""
        state = self.state
        if state is None:
            return
        if run_id == state.run_id:
            self._run_ended(state, {}, error)
            return
        tool = state.tools.pop(run_id, None)
        span = state.spans.pop(run_id, None)
        if isinstance(error, GraphInterrupt):
            state.paused = True
            if tool is not None:
                self._tool_waiting(tool)
            if span is not None:
                span.set_attribute("reactgraph.interrupted", True)
        elif span is not None:
            self._error(span, error)
        if span is not None:
            span.end()

    def _run_started(self, run_id: UUID, name: str, inputs: Any) -> None:
        kind = "start" if isinstance(inputs, dict) and inputs.get("messages") else "resume"
        self.state = state = _RunState(run_id, time.perf_counter(), kind)
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.runs_started, kind).inc()
            metrics.runs_running.inc()
        if self.instrumentation.tracer is None:
            return
        attributes: dict[str, Any] = {names.AGENT_NAME: name, "reactgraph.run.id": str(run_id),
                                      "reactgraph.run.kind": kind}
        if self.instrumentation.capture_content and kind == "start":
            attributes[names.INPUT_MESSAGES] = _json([_message_parts(message) for message in inputs["messages"]
                                                      if isinstance(message, BaseMessage)])
        span, self._opened = self._opened, None
        if span is None:  # no open_span: a graph run given run_callbacks, or this handler's next run
            self.open_span()
            span, self._opened = self._opened, None
        span.update_name(f"invoke_agent {name}")
        state.attributes = attributes  # set with the run's end, in one call
        state.span = state.spans[run_id] = span

    def _run_ended(self, state: _RunState, outputs: dict[str, Any], error: BaseException | None) -> None:
        seconds = time.perf_counter() - state.started
        if isinstance(error, GraphInterrupt) or (error is None and (state.paused or "__interrupt__" in outputs)):
            finish = "waiting"
        elif error is not None:
            finish = "cancelled" if isinstance(error, (GeneratorExit, KeyboardInterrupt)) or type(
                error).__name__ == "CancelledError" else self.failure_reason
        else:
            finish = str(outputs.get("finish_reason") or "unknown")
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.runs_finished, finish).inc()
            metrics.runs_running.dec()
            labelled(metrics.run_duration, finish).observe(seconds)
        trace_id = span_id = None
        span = state.span
        if span is not None:
            for left in [*state.spans.values(), state.round_span]:  # a cancelled run's tasks never reported their end
                if left is not None and left is not span:
                    left.end()
            trace_id, span_id = format_span_context(span.get_span_context()).split("-")
            ending = state.attributes
            ending.update({"reactgraph.finish_reason": finish, names.INPUT_TOKENS: state.input_tokens,
                           names.OUTPUT_TOKENS: state.output_tokens, "reactgraph.model_calls": state.model_calls})
            if "iteration" in outputs:
                ending["reactgraph.iterations"] = int(outputs.get("iteration") or 0)
            if self.instrumentation.capture_content and isinstance(outputs.get("answer"), str):
                ending[names.OUTPUT_MESSAGES] = _json([{"role": "assistant", "parts": [
                    {"type": "text", "content": outputs.get("synthesis") or outputs["answer"]}]}])
            span.set_attributes(ending)
            if error is not None and finish == self.failure_reason:
                self._error(span, error)
            span.end()
        if self.request is not None:
            self.request.run_id, self.request.finish_reason, self.request.trace_id = str(state.run_id), finish, trace_id
            self.request.model_calls = state.model_calls
            self.request.input_tokens, self.request.output_tokens = state.input_tokens, state.output_tokens
        log_fields(RUN_LOGGER, "run_end", {
            "thread_id": self.thread_id, "run_id": str(state.run_id), "kind": state.kind, "finish_reason": finish,
            "model_calls": state.model_calls, "input_tokens": state.input_tokens,
            "output_tokens": state.output_tokens, "seconds": round(seconds, 3),
            "request_id": self.request.request_id if self.request is not None else None,
            "trace_id": trace_id, "span_id": span_id,
        })
        self.state = None

    # tools --------------------------------------------------------------------------------

    def _tool_waiting(self, tool: _Tool) -> None:
        if tool.span is not None:
            tool.span.set_attribute("reactgraph.tool.approval", "waiting")
        key = (self.thread_id, tool.call_id)
        if key not in _approvals_waiting:
            _approvals_waiting.add(key)
            if self.instrumentation.metrics is not None:
                self.instrumentation.metrics.approvals_waiting.inc()

    def _tool_ended(self, state: _RunState, tool: _Tool, record: dict[str, Any] | None) -> None:
        record = record or {}
        approval, error = record.get("approval"), record.get("error")
        outcome = "rejected" if approval == "rejected" else "error" if error else "ok"
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.tool_calls, tool.name, outcome).inc()
            labelled(metrics.tool_call_duration, tool.name).observe(float(record.get("elapsed") or 0.0))
        if approval is not None:
            _approvals_waiting.discard((self.thread_id, tool.call_id))
            if metrics is not None:
                metrics.approvals_waiting.dec()
        span = tool.span
        if span is None:
            return
        ending = {"reactgraph.tool.outcome": outcome}
        if approval is not None:
            ending["reactgraph.tool.approval"] = approval
        if self.instrumentation.capture_content and "observation" in record:
            ending[names.TOOL_RESULT] = _cut(str(record["observation"]))
        span.set_attributes(ending)
        if error:
            self._error(span, str(error), "tool_error")

    # model calls --------------------------------------------------------------------------

    def on_chat_model_start(self, serialized: dict[str, Any] | None, messages: list[list[BaseMessage]], *,
                            run_id: UUID, parent_run_id: UUID | None = None, tags: list[str] | None = None,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """A model call starts: a ``chat`` span under its node's."""
        state = self.state
        if state is None:
            return
        state.parents[run_id] = parent_run_id
        metadata = metadata or {}
        chat = state.chats[run_id] = _Chat(call_kind_of(metadata, tags), time.perf_counter())
        if self.instrumentation.tracer is None:
            return
        model = metadata.get("ls_model_name")
        if not model:
            params = kwargs.get("invocation_params") or {}
            model = params.get("model") or params.get("model_name") or params.get("_type")
        attributes: dict[str, Any] = {names.OPERATION: "chat", "reactgraph.phase": chat.phase}
        for key, value in ((names.PROVIDER, metadata.get("ls_provider")), (names.REQUEST_MODEL, model),
                           (names.REQUEST_TEMPERATURE, metadata.get("ls_temperature")),
                           (names.REQUEST_MAX_TOKENS, metadata.get("ls_max_tokens")),
                           ("reactgraph.mode", LOOP_NODE_MODES.get(metadata.get("langgraph_node"), state.mode))):
            if value is not None:
                attributes[key] = value
        if self.instrumentation.capture_content and messages:
            attributes[names.INPUT_MESSAGES] = _json([_message_parts(message) for message in messages[0]])
        parent = self._context(state, self._parent_span(state, parent_run_id))
        chat.span = self._start_span(f"chat {model}" if model else "chat", parent, attributes, SpanKind.CLIENT)
        state.spans[run_id] = chat.span

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call answered: its usage and finish reason."""
        state = self.state
        chat = state.chats.pop(run_id, None) if state is not None else None
        if state is None or chat is None:
            return
        state.spans.pop(run_id, None)
        batch = response.generations[0] if response.generations else None
        generation = batch[0] if batch else None
        message = getattr(generation, "message", None)
        usage = getattr(message, "usage_metadata", None) or {}
        input_tokens, output_tokens = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        state.input_tokens += input_tokens
        state.output_tokens += output_tokens
        state.model_calls += 1
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.model_calls, chat.phase, "ok").inc()
            labelled(metrics.model_call_duration, chat.phase).observe(time.perf_counter() - chat.started)
            labelled(metrics.tokens, chat.phase, "input").inc(input_tokens)
            labelled(metrics.tokens, chat.phase, "output").inc(output_tokens)
        span = chat.span
        if span is None:
            return
        reported = getattr(message, "response_metadata", None) or {}
        finish = reported.get("finish_reason") or reported.get("stop_reason")
        if finish is None and generation is not None:
            finish = (getattr(generation, "generation_info", None) or {}).get("finish_reason")
        if finish is None and message is not None:
            finish = "tool_calls" if getattr(message, "tool_calls", None) else "stop"
        ending: dict[str, Any] = {names.INPUT_TOKENS: input_tokens, names.OUTPUT_TOKENS: output_tokens}
        if finish is not None:
            ending[names.FINISH_REASONS] = [str(finish)]
        model = reported.get("model_name") or reported.get("model")
        if model is not None:
            ending[names.RESPONSE_MODEL] = model
        if reported.get("id") is not None:
            ending[names.RESPONSE_ID] = reported["id"]
        span.set_attributes(ending)
        if self.instrumentation.capture_content and isinstance(message, BaseMessage):
            span.set_attribute(names.OUTPUT_MESSAGES, _json([_message_parts(message)]))
        span.end()

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call failed (the loop may retry it; SPEC R2.7)."""
        state = self.state
        chat = state.chats.pop(run_id, None) if state is not None else None
        if state is None or chat is None:
            return
        state.spans.pop(run_id, None)
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.model_calls, chat.phase, "error").inc()
            labelled(metrics.model_call_duration, chat.phase).observe(time.perf_counter() - chat.started)
        if chat.span is not None:
            self._error(chat.span, error)
            chat.span.end()

    # engine events ------------------------------------------------------------------------

    def on_agent_event(self, event: AgentEvent, run_id: UUID | None) -> None:
        """An engine event a node emitted (:func:`reactgraph.events.emit`) inside the run
        ``run_id``: compaction, follow-ups taken in and stalls become span events of the
        node's span; the answer's first text is the time to the first answer token."""
        state = self.state
        if state is None:
            return
        metrics = self.instrumentation.metrics
        if isinstance(event, AnswerDelta):
            if not state.answered and event.content:
                state.answered = True
                seconds = time.perf_counter() - state.started
                if metrics is not None:
                    metrics.first_answer_token.observe(seconds)
                if state.span is not None:
                    state.attributes["reactgraph.time_to_first_answer_token"] = round(seconds, 6)
            return
        if isinstance(event, Compacted) and metrics is not None:
            metrics.compactions.inc()
        if isinstance(event, Injected) and metrics is not None:
            labelled(metrics.follow_ups, "taken").inc()
        if self.instrumentation.tracer is None or not isinstance(event, (Compacted, Injected, Stalled)):
            return
        span = self._parent_span(state, run_id)
        if isinstance(event, Compacted):
            span.add_event("compaction", {"reactgraph.compaction.original_messages": event.original_messages,
                                          "reactgraph.compaction.kept_messages": event.kept_messages})
        elif isinstance(event, Injected):
            attributes = {"reactgraph.follow_up.chars": len(event.content)}
            if self.instrumentation.capture_content:
                attributes["reactgraph.follow_up.content"] = _cut(event.content)
            span.add_event("follow_up", attributes)
        else:
            span.add_event("stall", {"reactgraph.iteration": event.iteration, "reactgraph.stall.reason": event.reason})
