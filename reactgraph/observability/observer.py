"""The run observer: spans, metrics and the run's log line of one run, made from
the engine's own code, not from LangChain's callbacks.

One :class:`RunObserver` per run. The run's start and end reach it as a LangChain callback
handler given to the graph's root run alone (not inherited by the graph's nodes, so no node,
model or tool callback event is dispatched to it); everything inside the run reaches it
through hooks in the engine, which find it in the node's config (``configurable``
:data:`OBSERVER_KEY`, or among the config's callbacks for a graph run with
:func:`reactgraph.observability.run_callbacks`):

- each graph node's body runs through :meth:`RunObserver.run_node` (``dual_node`` for the
  ReAct and DAG nodes): the tool call of ``execute_tools``, a DAG step, a plan round, and with
  ``node_spans`` every node get their span there;
- each model call runs through :func:`model_call` (``call_model``, ``stream_model`` and each
  model of a fallback chain): its ``chat`` span, usage and finish reason, its phase from the
  node that makes it (:func:`reactgraph.engine.calls.call_kind_of`);
- the engine's events (:func:`reactgraph.events.emit`) reach :meth:`RunObserver.on_agent_event`.

Beside it any other callback handler (LangSmith's tracer, a user's) sees the run as before.
Nothing of it changes what a run does.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from uuid import UUID, uuid4

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.errors import GraphInterrupt

from reactgraph.agents import outcome
from reactgraph.events import AgentEvent, AnswerDelta, Compacted, Injected, Stalled
from reactgraph.graph.names import ANALYZE, EXECUTE_TOOLS, LOOP_NODE_MODES, PLAN, RUN_STEP, SCHEDULE
from reactgraph.observability.unobserved import UNOBSERVED, Unobserved
from reactgraph.observability import tracing as names
from reactgraph.observability.logs import RUN_LOGGER, log_fields
from reactgraph.observability.metrics import labelled, tool_label
from reactgraph.observability.records import (
    TRACE_METADATA,
    Instrumentation,
    RequestInfo,
    content_json,
    cut_content,
    format_span_context,
    message_parts,
    model_params,
    parse_span_context,
    present,
    step_record,
)
from reactgraph.agents.outcome import cancelled
from reactgraph.engine.state import StepRecord
from reactgraph.core.usage import reported_tokens
from reactgraph.engine.calls import call_kind_of
from reactgraph.observability.spans import TASK_SPAN, SpanBookkeeping, RunState, ToolSpan

try:  # the [otel] extra: spans; without it only metrics and log lines are recorded
    from opentelemetry.trace import Link, SpanKind
except ImportError:  # pragma: no cover - the unit suite installs the extra
    Link = SpanKind = None

ROUND_NODES = frozenset({PLAN, SCHEDULE, RUN_STEP, ANALYZE})
"""The DAG nodes of one plan round; the next top-level node of another kind ends the round.
Each run of the planner (``PLAN``) opens a ``plan_round`` span that holds the round's nodes
as children; a ``RUN_STEP`` task is a ``dag_step`` span, an ``EXECUTE_TOOLS`` task an
``execute_tool`` span."""


_approvals_waiting: set[tuple[str | None, str]] = set()
"""``(thread id, tool call id)`` of the calls this process saw pause for a decision, so a
paused run resumed without that decision does not count its call twice."""


OBSERVED_EVENTS = (AnswerDelta, Compacted, Injected, Stalled)
"""The engine events the observer records (:meth:`RunObserver.on_agent_event`); the others
are not looked at (:func:`reactgraph.observability.record_event`)."""


class ModelCall:
    """One model call of an observed run, from its start to its end (:func:`model_call`):
    its ``chat`` span, metrics and the run's token counts. Use as a context manager around
    the call; hand it the result (:meth:`returned`) or each streamed chunk (:meth:`chunk`).
    Leaving the block with an exception records a failed call."""

    __slots__ = ("observer", "phase", "started", "leaf", "input_tokens", "output_tokens", "metadata", "tool_calls",
                 "message", "chunks")

    def __init__(self, observer: RunObserver, phase: str) -> None:
        self.observer, self.phase, self.leaf = observer, phase, None
        self.started = time.perf_counter()
        self.input_tokens = self.output_tokens = 0
        self.metadata: dict[str, Any] = {}
        self.tool_calls = False
        self.message: Any = None
        self.chunks: Any = None

    def __enter__(self) -> ModelCall:
        return self

    def returned(self, result: Any) -> Any:
        """Record the call's result (an ``AIMessage``; a structured output's ``{"raw": …}``)
        and give it back unchanged."""
        message = result.get("raw") if isinstance(result, dict) else result
        if isinstance(message, BaseMessage):
            self._read(message)
            self.message = message
        return result

    def chunk(self, chunk: Any) -> None:
        """Record one chunk of a streamed call (its usage, finish reason, tool calls)."""
        if not isinstance(chunk, BaseMessage):
            return
        self._read(chunk)
        if self.observer.instrumentation.capture_content:
            self.chunks = chunk if self.chunks is None else self.chunks + chunk

    def _read(self, message: BaseMessage) -> None:
        tokens = reported_tokens(message)
        self.input_tokens += tokens["input_tokens"]
        self.output_tokens += tokens["output_tokens"]
        if message.response_metadata:
            self.metadata.update(message.response_metadata)
        if getattr(message, "tool_calls", None) or getattr(message, "tool_call_chunks", None):
            self.tool_calls = True

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        if error is None:
            self.observer._chat_ended(self)
        else:
            self.observer._chat_failed(self, error)


class RunObserver(SpanBookkeeping, BaseCallbackHandler):
    """Spans, metrics and the ``run_end`` log line of one run.

    :func:`~reactgraph.observability.observe` gives one to each run of the agents while
    :func:`~reactgraph.observability.instrument` is on; the engine's hooks find it in the
    run's config, and the agents report the run's start and end to it
    (:meth:`run_started`, :meth:`run_finished`). For a graph you run yourself it is a callback
    handler of the graph's own run instead (``observe``, or
    :func:`~reactgraph.observability.run_callbacks` as ``config["callbacks"]``): it follows
    the first graph run it is given (the root); later runs with the same handler start their
    own bookkeeping.

    Args:
        instrumentation: What to record.
        thread_id: The run's thread (``gen_ai.conversation.id``, the log line's ``thread_id``).
        failure_reason: The finish reason of a run that raised (ReAct: ``model_error``,
            as its result says); one its checkpointer, store or follow-up queue raised ends
            with ``storage_error`` (:func:`reactgraph.persistence.checkpointing.is_storage_failure`).
        request: The server request driving the run, filled at its end.
    """

    run_inline = True
    """Called in the run's own task (no thread hop)."""

    ignore_llm = ignore_chat_model = ignore_agent = ignore_retriever = ignore_retry = ignore_custom_event = True
    """LangChain skips these events for this handler (given through ``run_callbacks``, it is
    inherited by the graph's nodes): model, tool, retriever, retry and custom events reach
    it through the engine's hooks or not at all; only the graph's own start and end count."""

    def __init__(self, instrumentation: Instrumentation, thread_id: str | None = None, *,
                 failure_reason: str = "model_error", request: RequestInfo | None = None) -> None:
        super().__init__()
        self.instrumentation = instrumentation
        self.thread_id = thread_id
        self.failure_reason = failure_reason
        self.request = request
        self.state: RunState | None = None
        self._opened: Any = None
        self.run_id: UUID = uuid4()
        """The run's id (``reactgraph.run.id``, the log line's ``run_id``): given to LangGraph
        as the graph run's id when the caller reports the run; LangChain's id of the graph
        run otherwise."""

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

    # the run: reported by the agents, or LangChain callbacks of the graph's root run -------

    def run_started(self, name: str, inputs: Any, *, kind: str | None = None) -> None:
        """The run starts (the caller reports it: ``observe(..., reported=True)``).

        Args:
            name: The graph's name (the span is ``invoke_agent <name>``).
            inputs: The graph's input: a new turn's ``{"messages": [...]}``; anything else
                (``None``, a ``Command``) resumes the thread.
            kind: The run's kind when it is neither (``answer``: ``stream_answer``'s
                synthesis of a finished run).
        """
        self._run_started(self.run_id, name, inputs, kind)

    def run_finished(self, outputs: Mapping[str, Any] | None, error: BaseException | None = None) -> None:
        """The run ended (the caller reports it): ends its span, records its metrics and
        writes its log line.

        Args:
            outputs: The graph's last state values (``finish_reason``, ``iteration``, …).
            error: What the run raised: an interrupt, a cancel (``CancelledError``,
                ``GeneratorExit``) or a failure; ``None`` when it returned.
        """
        state = self.state
        if state is not None:
            self._run_ended(state, dict(outputs or {}), error)

    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        """The graph run starts (a run inside it, given ``run_callbacks``, is not looked at)."""
        if parent_run_id is None:
            self._run_started(run_id, kwargs.get("name") or "agent", inputs)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """The graph run ended."""
        state = self.state
        if state is not None and run_id == state.run_id:
            self._run_ended(state, outputs if isinstance(outputs, dict) else {}, None)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """The graph run raised: an interrupt (a call waits for approval), a cancel, a failure."""
        state = self.state
        if state is not None and run_id == state.run_id:
            self._run_ended(state, {}, error)

    def _run_started(self, run_id: UUID, name: str, inputs: Any, kind: str | None = None) -> None:
        kind = kind or ("start" if isinstance(inputs, dict) and inputs.get("messages") else "resume")
        self.run_id = run_id
        self.state = state = RunState(run_id, time.perf_counter(), kind)
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.runs_started, kind).inc()
            metrics.runs_running.inc()
        if self.instrumentation.tracer is None:
            return
        attributes: dict[str, Any] = {names.AGENT_NAME: name, "reactgraph.run.id": str(run_id),
                                      "reactgraph.run.kind": kind}
        if self.instrumentation.capture_content and kind == "start":
            attributes[names.INPUT_MESSAGES] = content_json([message_parts(message) for message in inputs["messages"]
                                                      if isinstance(message, BaseMessage)])
        span, self._opened = self._opened, None
        if span is None:  # no open_span: a graph run given run_callbacks, or this handler's next run
            self.open_span()
            span, self._opened = self._opened, None
        span.update_name(f"invoke_agent {name}")
        state.attributes = attributes  # set with the run's end, in one call
        state.span = span

    def _run_ended(self, state: RunState, outputs: dict[str, Any], error: BaseException | None) -> None:
        seconds = time.perf_counter() - state.started
        waiting = isinstance(error, GraphInterrupt) or (error is None and (state.paused or "__interrupt__" in outputs))
        finish = outcome.finish_reason(outputs.get("finish_reason"), error=None if waiting else error, waiting=waiting,
                                       failure_reason=self.failure_reason) or outcome.UNRECORDED
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.runs_finished, finish).inc()
            metrics.runs_running.dec()
            labelled(metrics.run_duration, finish).observe(seconds)
        trace_id = span_id = None
        span = state.span
        if span is not None:
            self._make_leaves(state)
            for left in list(state.open.values()):  # a cancelled run's tasks never reported their end
                left.end()
            state.open.clear()
            trace_id, span_id = format_span_context(span.get_span_context()).split("-")
            ending = state.attributes
            mode = state.mode or outputs.get("mode")
            if mode in ("native", "json"):
                ending["reactgraph.mode"] = mode
            ending.update({"reactgraph.finish_reason": finish, names.INPUT_TOKENS: state.input_tokens,
                           names.OUTPUT_TOKENS: state.output_tokens, "reactgraph.model_calls": state.model_calls})
            if "iteration" in outputs:
                ending["reactgraph.iterations"] = int(outputs.get("iteration") or 0)
            if self.instrumentation.capture_content and isinstance(outputs.get("answer"), str):
                ending[names.OUTPUT_MESSAGES] = content_json([{"role": "assistant", "parts": [
                    {"type": "text", "content": outcome.answer_shown(outputs.get("synthesis"), outputs["answer"])}]}])
            span.set_attributes(ending)
            if error is not None and outcome.is_failure(finish, self.failure_reason):
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

    # graph nodes (the engine's hook: dual_node) -------------------------------------------

    async def run_node(self, name: str, task_input: Any, body: Callable[[], Awaitable[Any]]) -> Any:
        """Run one graph node's task (``body()``) of this run, observed: a tool call's
        ``execute_tool`` span and metrics, a DAG step's ``dag_step`` span, the plan round a
        DAG node belongs to, and with ``node_spans`` a span for any node. Model calls and
        events inside the task go under its span.

        Args:
            name: The node's name.
            task_input: What the node was given (a tool call's task, a step's, the state).
            body: Runs the node's body.

        Returns:
            What ``body()`` returned.

        Raises:
            BaseException: What ``body()`` raised (an interrupt marks the run as paused).
        """
        state = self.state
        if state is None:
            return await body()
        tool = None
        if name == EXECUTE_TOOLS and isinstance(task_input, dict) and isinstance(task_input.get("call"), dict):
            call = task_input["call"]
            tool = ToolSpan(str(call.get("name") or "unknown"), str(call.get("id") or ""))
        span = self._node_span(state, name, task_input, tool) if self.instrumentation.tracer is not None else None
        token = TASK_SPAN.set((self, span)) if span is not None else None
        try:
            outputs = await body()
        except BaseException as error:
            interrupted, cut = isinstance(error, GraphInterrupt), cancelled(error)
            if interrupted:
                state.paused = True
                if tool is not None:
                    self._tool_waiting(tool)
            elif cut and tool is not None:
                self._tool_cancelled(tool)
            if tool is not None and tool.leaf is not None:
                if interrupted:
                    self._end_leaf(tool.leaf, {"reactgraph.interrupted": True})
                elif not cut:
                    self._end_leaf(tool.leaf, error=error)
            if span is not None:
                if interrupted or cut:
                    span.set_attribute("reactgraph.interrupted" if interrupted else "reactgraph.cancelled", True)
                else:
                    self._error(span, error)
                self._end_span(state, span)
            raise
        finally:
            if token is not None:
                TASK_SPAN.reset(token)
        if tool is not None:
            self._tool_ended(state, tool, step_record(outputs))
        if span is not None:
            self._end_span(state, span)
        return outputs

    def _node_span(self, state: RunState, name: str, task_input: Any, tool: ToolSpan | None) -> Any:
        """The span a node's task opens (``None``: its calls go to the span above it), after
        closing or opening the DAG plan round the node ends or starts."""
        inside = self._task_span()
        if inside is None:  # a node of the run's own graph (not of a step's subgraph)
            if state.round_span is not None and (name == PLAN or name not in ROUND_NODES):  # the round is over
                self._end_span(state, state.round_span)
                state.round_span = None
            if name == PLAN:
                state.rounds += 1
                state.round_span = self._start_span(state, f"plan_round {state.rounds}", state.span,
                                                    {"reactgraph.dag.round": state.rounds})
        parent = inside or state.round_span or state.span
        if tool is not None:
            attributes: dict[str, Any] = {names.OPERATION: "execute_tool", names.TOOL_NAME: tool.name,
                                          names.TOOL_CALL_ID: tool.call_id, names.TOOL_TYPE: "function"}
            if task_input.get("iteration") is not None:
                attributes["reactgraph.iteration"] = task_input["iteration"]
            if self.instrumentation.capture_content:
                attributes[names.TOOL_ARGUMENTS] = content_json(task_input["call"].get("args"))
            tool.leaf = self._leaf(state, f"execute_tool {tool.name}", parent, attributes)
            return None  # nothing inside a tool call is observed under it: its span is a leaf
        if name == RUN_STEP and isinstance(task_input, dict) and isinstance(task_input.get("step"), dict):
            step = task_input["step"]
            attributes = present({"reactgraph.dag.step_id": step.get("id"), "reactgraph.dag.round": task_input.get("round"),
                                   "reactgraph.dag.dependencies": [str(dep) for dep in step.get("dependencies") or []]})
            if self.instrumentation.capture_content:
                attributes["reactgraph.dag.task"] = cut_content(str(step.get("task")))
            return self._start_span(state, f"dag_step {step.get('id')}", parent, attributes)
        if self.instrumentation.node_spans:
            config = var_child_runnable_config.get() or {}
            return self._start_span(state, name, parent, present({
                "langgraph.node": name, "langgraph.step": (config.get("metadata") or {}).get("langgraph_step")}))
        return None

    # tools --------------------------------------------------------------------------------

    def _tool_waiting(self, tool: ToolSpan) -> None:
        if tool.leaf is not None:
            tool.leaf.attributes["reactgraph.tool.approval"] = "waiting"
        key = (self.thread_id, tool.call_id)
        if key not in _approvals_waiting:
            _approvals_waiting.add(key)
            if self.instrumentation.metrics is not None:
                self.instrumentation.metrics.approvals_waiting.inc()

    def _tool_cancelled(self, tool: ToolSpan) -> None:
        """A tool call stopped because its run was cancelled: outcome ``cancelled``, no error."""
        if self.instrumentation.metrics is not None:
            labelled(self.instrumentation.metrics.tool_calls, tool_label(tool.name), "cancelled").inc()
        if tool.leaf is not None:
            self._end_leaf(tool.leaf, {"reactgraph.tool.outcome": "cancelled"})

    def _tool_ended(self, state: RunState, tool: ToolSpan, record: StepRecord | None) -> None:
        record = record or {}
        approval, error = record.get("approval"), record.get("error")
        outcome = "rejected" if approval == "rejected" else "error" if error else "ok"
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.tool_calls, tool_label(tool.name), outcome).inc()
            labelled(metrics.tool_call_duration, tool_label(tool.name)).observe(float(record.get("elapsed") or 0.0))
        if approval is not None:
            _approvals_waiting.discard((self.thread_id, tool.call_id))
            if metrics is not None:
                metrics.approvals_waiting.dec()
        if tool.leaf is None:
            return
        ending = {"reactgraph.tool.outcome": outcome}
        if approval is not None:
            ending["reactgraph.tool.approval"] = approval
        if self.instrumentation.capture_content and "observation" in record:
            ending[names.TOOL_RESULT] = cut_content(str(record["observation"]))
        self._end_leaf(tool.leaf, ending, str(error) if error else None, "tool_error")

    # model calls (the engine's hook: reactgraph.observability.model_call) ------------------

    def model_call(self, runnable: Any, model_input: Any, config: Mapping[str, Any]) -> ModelCall | Unobserved:
        """A model call of this run starts: its phase from the node that makes it, its
        ``chat`` span under the node task's span (or the round's, or the run's).

        Args:
            runnable: The model runnable called (a chat model, or one bound with tools).
            model_input: What it is called with (a message list).
            config: The config of the node that makes the call.

        Returns:
            The :class:`ModelCall` to end with the call (:data:`UNOBSERVED` after the run's end).
        """
        state = self.state
        if state is None:
            return UNOBSERVED
        metadata = config.get("metadata") or {}
        mode = LOOP_NODE_MODES.get(metadata.get("langgraph_node"))
        if mode is not None and state.mode is None:
            state.mode = mode
        call = ModelCall(self, call_kind_of(metadata, config.get("tags")))
        if self.instrumentation.tracer is None:
            return call
        params = model_params(runnable)
        model = params.get("ls_model_name")
        attributes: dict[str, Any] = {names.OPERATION: "chat", "reactgraph.phase": call.phase}
        for key, value in ((names.PROVIDER, params.get("ls_provider")), (names.REQUEST_MODEL, model),
                           (names.REQUEST_TEMPERATURE, params.get("ls_temperature")),
                           (names.REQUEST_MAX_TOKENS, params.get("ls_max_tokens")),
                           ("reactgraph.mode", mode or state.mode)):
            if value is not None:
                attributes[key] = value
        if self.instrumentation.capture_content and isinstance(model_input, list):
            attributes[names.INPUT_MESSAGES] = content_json([message_parts(message) for message in model_input
                                                      if isinstance(message, BaseMessage)])
        call.leaf = self._leaf(state, f"chat {model}" if model else "chat", self._parent(state), attributes,
                               SpanKind.CLIENT)
        return call

    def _chat_ended(self, call: ModelCall) -> None:
        state = self.state
        if state is None:
            return
        state.input_tokens += call.input_tokens
        state.output_tokens += call.output_tokens
        state.model_calls += 1
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.model_calls, call.phase, "ok").inc()
            labelled(metrics.model_call_duration, call.phase).observe(time.perf_counter() - call.started)
            labelled(metrics.tokens, call.phase, "input").inc(call.input_tokens)
            labelled(metrics.tokens, call.phase, "output").inc(call.output_tokens)
        if call.leaf is None:
            return
        reported = call.metadata
        stopped = reported.get("finish_reason") or reported.get("stop_reason") or (  # the provider's, not a run's
            "tool_calls" if call.tool_calls else "stop")
        ending: dict[str, Any] = {names.INPUT_TOKENS: call.input_tokens, names.OUTPUT_TOKENS: call.output_tokens,
                                  names.FINISH_REASONS: [str(stopped)]}
        model = reported.get("model_name") or reported.get("model")
        if model is not None:
            ending[names.RESPONSE_MODEL] = model
        if reported.get("id") is not None:
            ending[names.RESPONSE_ID] = reported["id"]
        message = call.message if call.message is not None else call.chunks
        if self.instrumentation.capture_content and isinstance(message, BaseMessage):
            ending[names.OUTPUT_MESSAGES] = content_json([message_parts(message)])
        self._end_leaf(call.leaf, ending)

    def _chat_failed(self, call: ModelCall, error: BaseException) -> None:
        """A model call raised (the loop may retry it; SPEC R2.7), or was cancelled (its run
        was, or its stream's consumer went away: outcome ``cancelled``, no error). Either is
        one of the run's model calls: the provider was asked."""
        state = self.state
        if state is None:
            return
        cut = cancelled(error)
        state.model_calls += 1
        state.input_tokens += call.input_tokens
        state.output_tokens += call.output_tokens
        metrics = self.instrumentation.metrics
        if metrics is not None:
            labelled(metrics.model_calls, call.phase, "cancelled" if cut else "error").inc()
            labelled(metrics.model_call_duration, call.phase).observe(time.perf_counter() - call.started)
        if call.leaf is not None:
            if cut:
                self._end_leaf(call.leaf, {"reactgraph.cancelled": True})
            else:
                self._end_leaf(call.leaf, error=error)

    # engine events ------------------------------------------------------------------------

    def on_agent_event(self, event: AgentEvent) -> None:
        """An engine event a node of this run emitted (:func:`reactgraph.events.emit`):
        compaction, follow-ups taken in and stalls become span events of the node task's span
        (or the run's); the answer's first text is the time to the first answer token."""
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
        span = self._parent(state)
        if isinstance(event, Compacted):
            span.add_event("compaction", {"reactgraph.compaction.original_messages": event.original_messages,
                                          "reactgraph.compaction.kept_messages": event.kept_messages})
        elif isinstance(event, Injected):
            attributes = {"reactgraph.follow_up.chars": len(event.content)}
            if self.instrumentation.capture_content:
                attributes["reactgraph.follow_up.content"] = cut_content(event.content)
            span.add_event("follow_up", attributes)
        else:
            span.add_event("stall", {"reactgraph.iteration": event.iteration, "reactgraph.stall.reason": event.reason})
