"""The model node of the tool loop: one iteration's model side in one graph step.

``llm_call_native`` and ``llm_call_json`` are each a :class:`ModelStep` around the mode's
model call (:class:`~reactgraph.nodes.llm_call.LLMCallNative`,
:class:`~reactgraph.nodes.llm_call.LLMCallJSON`). An iteration is two LangGraph supersteps,
as in LangGraph's prebuilt agents: this node, then the tool calls (``execute_tools``, one
task per call). What used to take pass-through nodes of its own is done here, in order:

1. **drain before the call** (SPEC R7.2: at the start of every run and after tool results;
   not when the node comes back to itself, its last step drained already): the thread's
   follow-ups join the conversation, and a ``return_direct`` tool's result of the iteration
   just run is accepted as the answer (then: ``synthesize``, no model call);
2. **the iteration cap and usage limits** (R2.6, R13.3): reached, the run goes to ``fallback``;
3. **the window check** (R6.1): unless :meth:`~reactgraph.nodes.guard_context.GuardContext.fits`,
   the run goes to ``guard_context`` first, which comes back here;
4. **the model call**, whose tool calls are bounded before anything of them is stored
   (:func:`bound_tool_calls`: arguments no store can keep become an error observation);
5. **drain after the call** (R7.2): JSON mode after every assistant message, native mode
   after a final answer only (never between a tool-call message and its results); a
   follow-up suppresses a pending final answer (R7.4).

With fallback models (:mod:`reactgraph.engine.fallbacks`) the call goes to the model
serving the turn (``model``; at the turn's start the first one whose breaker lets calls
through). A failure the policy hands on — after the node's retries for a transient one, at
once for a permanent one, or ``fallback_parse_failures`` unparseable JSON outputs — sends
the run, with nothing of the failed step saved, to the next model's mode node, which then
serves the rest of the turn (a ``model_switch`` event says so).

The node returns one ``Command``: everything it changed and where the run goes next (the
tool calls as ``Send``\\ s; ``synthesize``, or the end when the run skips synthesis; or this
node again after a JSON reformat request or a suppressed answer). Update and route are
written together, so a run cancelled between them cannot leave one without the other
(SPEC R13.5).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Literal

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Send

from reactgraph.engine.bindings import Engine
from reactgraph.engine.pinning import merge_pinned
from reactgraph.core.bounds import storable_problem
from reactgraph.events import AnswerReset, emit
from reactgraph.engine.fallbacks import RETRY_MARK, node_attempt, switch
from reactgraph.graph.names import FALLBACK, GUARD_CONTEXT, LLM_CALL_JSON, LLM_CALL_NATIVE
from reactgraph.nodes.drain_interrupts import DrainInterrupts
from reactgraph.nodes.fallback import iteration_cap_reached
from reactgraph.nodes.guard_context import GuardContext, ServingGuard
from reactgraph.engine.state import AgentState
from reactgraph.core.usage import sum_usage


def model_node(state: dict[str, Any]) -> Literal["llm_call_native", "llm_call_json"]:
    """The mode's model node (R2.2): where the loop goes after tool selection, the tools
    and the guard. Reads only ``mode``."""
    return LLM_CALL_NATIVE if state.get("mode") == "native" else LLM_CALL_JSON


def merge_updates(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two partial updates of one node as one: ``messages`` and ``pinned`` appended,
    ``usage`` summed (the state's reducers would do the same with two writes), every other
    key taken from ``second``."""
    merged = {**first, **second}
    for key in ("messages", "pinned"):
        if key in first and key in second:
            merged[key] = [*first[key], *second[key]]
    if "usage" in first and "usage" in second:
        merged["usage"] = sum_usage(first["usage"], second["usage"])
    return merged


def apply_update(state: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``state`` as the next step would see it after ``update`` (a new dict; ``state`` is
    left as it is). Only for the updates this node makes: new messages are appended (never
    removals), ``pinned`` merged, ``usage`` summed, other keys replaced."""
    view = {**state, **update}
    if "messages" in update:
        view["messages"] = [*(state.get("messages") or []), *update["messages"]]
    if "pinned" in update:
        view["pinned"] = merge_pinned(state.get("pinned"), update["pinned"])
    if "usage" in update:
        view["usage"] = sum_usage(state.get("usage"), update["usage"])
    return view


def bound_tool_calls(update: dict[str, Any]) -> dict[str, Any]:
    """A model call's ``update`` with every tool call whose arguments no store can keep
    (:func:`~reactgraph.core.bounds.storable_problem`: nested past
    :data:`~reactgraph.core.bounds.MAX_NESTING_DEPTH`, an integer past 64 bits) made harmless
    before it is stored or sent (SPEC R13.5): its request gets empty arguments
    and the reason as its ``error`` (the model sees it as the call's observation), and
    the assistant message keeps the call with empty arguments. The model chooses the
    arguments, so a prompt injection can choose them; the run goes on instead.

    Returns:
        ``update`` itself when every call can be stored, else a new dict.
    """
    requests = update.get("pending_tool_calls") or []
    problems = {request["id"]: problem for request in requests
                if (problem := storable_problem(request.get("args"), "the arguments")) is not None}
    if not problems:
        return update
    deep = set(problems)
    bounded = [{**request, "args": {}, "error": f"{problems[request['id']]}; call the tool again with other arguments"}
               if request["id"] in deep else request for request in requests]
    messages = [
        message.model_copy(update={"tool_calls": [{**call, "args": {}} if call.get("id") in deep else call
                                                  for call in message.tool_calls]})
        if isinstance(message, AIMessage) and message.tool_calls else message
        for message in update.get("messages", [])
    ]
    return {**update, "pending_tool_calls": bounded, **({"messages": messages} if "messages" in update else {})}


class ModelStep:
    """One model node of the loop (see the module docstring).

    Args:
        engine: The shared engine.
        calls: The mode's model call for each model of ``engine.models``, ``async
            (state, config) -> update``; the update carries the tool calls to run under
            ``pending_tool_calls``, which this node sends to ``execute_tools`` and does not
            write to the state (the checkpoint holds the ``Send``\\ s until their
            tasks end).
        node: This node's name (``llm_call_native`` or ``llm_call_json``), where the run
            comes back to.
        drain: The follow-up drain, shared with nothing else.
        guard: The ``guard_context`` node, asked whether the window needs it.
        tool_sends: ``(view) -> list[Send]``, one per tool call in ``pending_tool_calls``.
        answer: ``(config) -> node``: where an accepted answer goes (``synthesize``, or the
            graph's end when the run skips synthesis).
    """

    def __init__(self, engine: Engine, calls: list[Any], node: str, drain: DrainInterrupts,
                 guard: GuardContext | ServingGuard,
                 tool_sends: Callable[[AgentState], list[Send]], answer: Callable[[RunnableConfig], str]) -> None:
        self.engine = engine
        self.calls = calls
        self.node = node
        self.drain = drain
        self.guard = guard
        self.tool_sends = tool_sends
        self.answer = answer

    def _next_model(self, index: int) -> int | None:
        """The position of the model after ``index`` whose breaker lets calls through."""
        models = self.engine.models
        return next((i for i in range(index + 1, len(models)) if models[i].breaker.allows()), None)

    def _hand_over(self, index: int, update: dict[str, Any] | None = None) -> Command:
        """The run sent to model ``index``, at its mode's node, with ``update``."""
        target = self.engine.models[index]
        return Command(update={**(update or {}), "model": target.label, "mode": target.mode},
                       goto=model_node({"mode": target.mode}))

    def _after_failure(self, index: int, exc: Exception, config: RunnableConfig) -> int | None:
        """The model the failed call of model ``index`` goes to (see the module docstring),
        or ``None``: the node raises ``exc``, retried by the node's policy when its
        :data:`~reactgraph.engine.fallbacks.RETRY_MARK` says so."""
        serving = self.engine.models[index]
        profile = serving.profile
        transient = profile.is_transient(exc)
        if not profile.falls_back(exc):
            return None
        serving.breaker.record_failure()
        nxt = self._next_model(index)
        retry = (transient and not profile.is_permanent(exc)
                 and node_attempt(config) < self.engine.settings.model_attempts)
        if nxt is None or (retry and serving.breaker.allows()):
            with contextlib.suppress(AttributeError):  # an exception type without attributes keeps its default
                setattr(exc, RETRY_MARK, retry)
            return None
        switch(serving.label, self.engine.models[nxt].label, exc, "loop", profile)
        return nxt

    async def __call__(self, state: AgentState, config: RunnableConfig) -> Command:
        index = self.engine.model_index(state.get("model"))
        if index is None:  # the turn's first loop call: the first model its breaker lets through
            index = self.engine.first_model()
        serving = self.engine.models[index]
        if serving.mode != state.get("mode", self.engine.mode):  # a turn starting on a model of the other mode
            return self._hand_over(index)
        failures, most = state.get("parse_failures", 0), self.engine.settings.fallback_parse_failures
        nxt = self._next_model(index) if most is not None and failures >= most else None
        if nxt is not None:  # unparseable JSON outputs: the next model takes the loop over
            switch(serving.label, self.engine.models[nxt].label, ValueError(f"{failures} unparseable outputs"), "loop",
                   serving.profile, "unparseable")
            return self._hand_over(nxt, {"parse_failures": 0})
        update: dict[str, Any] = {}
        taken: list[str] = []
        steps = state.get("steps") or []
        iteration = state.get("iteration", 0)
        if iteration == 0 or (steps and steps[-1].get("iteration") == iteration):  # run start, or after tools
            update, taken = await self.drain.drain(state, config)
        view: dict[str, Any] = apply_update(state, update) if update else state  # read-only below
        if view.get("pending_final") is not None:  # a return_direct result is the answer
            return Command(update=update, goto=self.answer(config))
        if iteration_cap_reached(view, self.engine.settings.max_iterations) or self.engine.limit_reached(view):
            return Command(update=update, goto=FALLBACK)
        if not await self.guard.fits(view, config):
            return Command(update=update, goto=GUARD_CONTEXT)
        try:
            called = await self.calls[index](view, config)
        except Exception as exc:  # nothing of this step is saved: the follow-ups it took go back to the queue
            if taken:
                await self.drain.give_back(config, taken)
            nxt = self._after_failure(index, exc, config) if self.engine.fallbacks else None
            if nxt is None:
                raise
            return self._hand_over(nxt)
        if self.engine.fallbacks:  # which model answered
            serving.breaker.record_success()
            called = {**called, "model": serving.label, "model_usage": {serving.label: called.get("usage") or {}}}
        called = bound_tool_calls(called)
        update = merge_updates(update, called)
        view = apply_update(view, called)
        if view.get("mode") == "json" or not view.get("pending_tool_calls"):
            drained, _ = await self.drain.drain(view, config)
            if drained:
                update = merge_updates(update, drained)
                view = apply_update(view, drained)
        if view.get("answer_streamed") and view.get("pending_final") is None:  # a follow-up suppressed it (R7.4)
            emit(AnswerReset(ungrounded=[], factless=False, problems=["follow_up"]))
            update["answer_streamed"] = False
        update.pop("pending_tool_calls", None)  # they leave as Sends, not as state
        if view.get("pending_final") is not None:
            return Command(update=update, goto=self.answer(config))
        return Command(update=update, goto=self.tool_sends(view) or self.node)
