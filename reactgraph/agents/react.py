"""The agent facade (SPEC R10.1): ``run``, ``stream_answer``, ``astream_events`` and, with
a checkpointer, ``resume`` over the compiled ReAct graph (the thread bookkeeping it shares
with :class:`~reactgraph.DAGAgent` is in :mod:`reactgraph.agents.facade`)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as create_tool
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode

from reactgraph.agents import outcome
from reactgraph.engine.bindings import Engine, split_prompt
from reactgraph.engine.state import selection_in_force
from reactgraph.providers.abilities import ModelAbilities, resolve_abilities
from reactgraph.tools.approval import PendingCall
from reactgraph.persistence.checkpointing import STORAGE_ERROR
from reactgraph.core.config import AgentSettings
from reactgraph.events import AgentEvent
from reactgraph.agents.facade import AgentFacade, ThreadStatus
from reactgraph.engine.fallbacks import unpack_fallbacks
from reactgraph.graph.answer import answer_chunks, answer_graph
from reactgraph.graph.react import compile_react_graph
from reactgraph.persistence.interrupts import FollowUpLimits, InMemoryInterruptQueue, InterruptQueue
from reactgraph.core.language import phrase, turn_language
from reactgraph.agents.result import AgentResult, Step
from reactgraph.answer.synthesis import summarize_steps
from reactgraph.tools.runner import ToolErrorPolicy, tool_source
from reactgraph.core.usage import Usage

logger = logging.getLogger(__name__)

__all__ = ["ReActAgent", "ThreadStatus"]


class ReActAgent(AgentFacade[AgentResult]):
    """A ReAct agent: a tool loop on one chat model, then a streamed answer.

    Args:
        llm: Any LangChain chat model. Every call of a run uses this instance (SPEC R2.1);
            a different model means a new agent.
        tools: LangChain tools.
        use_native_tools: Use native tool calling when the model supports it (SPEC R2.2).
        abilities: Explicit :class:`~reactgraph.ModelAbilities` (or a dict of some of
            them); unset ones come from the model's profile, then safe defaults.
        settings: :class:`~reactgraph.AgentSettings`.
        checkpointer: Any LangGraph checkpointer. With one, runs that share a
            ``thread_id`` continue one conversation and a failed run stays resumable.
        interrupt_queue: Where follow-ups sent with :meth:`inject` wait for the running
            loop (SPEC §7); ``None`` means a new in-memory queue whose
            :class:`~reactgraph.FollowUpLimits` keep the drained message within
            ``settings.max_message_chars``. Give several server processes one shared
            :class:`~reactgraph.InterruptQueue` (R7.5).
        compaction_llm: A separate, cheaper chat model for context compaction (SPEC §6);
            ``None`` compacts with ``llm``.
        prompt: The loop's instructions: a string or ``SystemMessage`` (the system
            prompt), or a callable / Runnable building the loop's messages from the state.
        store: A LangGraph store, for tools with ``InjectedStore`` / ``ToolRuntime.store``.
        response_format: A schema for ``AgentResult.structured_response`` (pydantic model,
            JSON schema dict, TypedDict, or ``(prompt, schema)``), filled through
            :func:`~reactgraph.structured_llm_call` after the loop.
        handle_tool_errors: What tool exceptions become (LangGraph ``ToolNode``'s
            argument); default an ``Error: …`` observation (SPEC R2.7).
        fallbacks: Fallback models, tried in order when the model fails (
            :mod:`reactgraph.engine.fallbacks`): chat models, ``(model, abilities)`` pairs or
            :class:`~reactgraph.FallbackModel`\\ s, each with its own abilities and
            provider profile (a fallback may run the loop in the other mode). A LangChain
            ``llm.with_fallbacks([...])`` chain given as ``llm`` is taken apart the same way.
        name: The graph's name and the ``name`` of its assistant messages.

        ``llm`` may be pre-bound and ``tools`` may hold functions and provider tool dicts,
        as for :func:`~reactgraph.create_react_graph`.

    Raises:
        TypeError, ValueError: Invalid tools, prompt or schema (see
            :func:`~reactgraph.create_react_graph`).
    """

    def __init__(
        self,
        llm: BaseChatModel,
        tools: Sequence[BaseTool] | ToolNode,
        *,
        use_native_tools: bool = True,
        abilities: ModelAbilities | dict[str, Any] | None = None,
        settings: AgentSettings | None = None,
        checkpointer: Any = None,
        interrupt_queue: InterruptQueue | None = None,
        compaction_llm: BaseChatModel | None = None,
        prompt: Any = None,
        store: Any = None,
        response_format: Any = None,
        handle_tool_errors: ToolErrorPolicy | None = None,
        name: str | None = None,
        fallbacks: Sequence[Any] = (),
    ) -> None:
        source = tool_source(tools, handle_tool_errors)  # a ToolNode: its tools, error policy and wrap hooks
        self.tools = [t if isinstance(t, (BaseTool, dict)) else create_tool(t) for t in source.tools]
        self.use_native_tools = use_native_tools
        self.checkpointer = checkpointer
        settings, prompt = split_prompt(settings or AgentSettings(), prompt)
        self.interrupts: InterruptQueue = (
            interrupt_queue if interrupt_queue is not None
            else InMemoryInterruptQueue(FollowUpLimits(max_chars=settings.max_message_chars)))
        llm, chained = unpack_fallbacks(llm)
        self.engine = Engine.build(
            llm, dataclasses.replace(source, tools=self.tools), resolve_abilities(llm, abilities), settings, use_native_tools, self.interrupts,
            compaction_llm=compaction_llm, handle_tool_errors=source.handle_tool_errors, prompt=prompt, message_name=name,
            fallbacks=[*chained, *fallbacks],
        )
        self.graph: CompiledStateGraph = compile_react_graph(
            self.engine, checkpointer=checkpointer, name=name, store=store, response_format=response_format,
        )
        self._answer_graph: CompiledStateGraph | None = None  # stream_answer's, built on first use

    @property
    def llm(self) -> BaseChatModel:
        """The chat model (without a pre-bound model's bindings); every call uses it (SPEC R2.1)."""
        return self.engine.llm

    @property
    def settings(self) -> AgentSettings:
        """The agent's settings (a string ``prompt`` is their ``system_prompt``)."""
        return self.engine.settings

    @property
    def abilities(self) -> ModelAbilities:
        """What the model can do, as resolved (SPEC R2.2)."""
        return self.engine.abilities

    @property
    def mode(self) -> str:
        """``"native"`` or ``"json"``: the loop protocol this agent uses (SPEC R2.2)."""
        return self.engine.mode

    @property
    def recursion_limit(self) -> int:
        """The graph's ``recursion_limit``, derived from ``max_iterations`` (SPEC R2.6)."""
        return self.settings.recursion_limit

    def _result(
        self, state: dict[str, Any], started: float, thread_id: str | None, error: BaseException | None = None,
        pending: list[PendingCall] | None = None,
    ) -> AgentResult:
        steps = state.get("steps") or []
        answer = state.get("answer") or ""
        finish_reason = outcome.finish_reason(state.get("finish_reason"), error=error, waiting=bool(pending),
                                              failure_reason=self.failure_reason)
        error_text = None
        if pending:
            answer = ""
        elif error is not None:
            error_text = self._error_text(error)
            language = turn_language(state)
            if finish_reason == STORAGE_ERROR:  # the checkpointer or store, not the model
                answer = summarize_steps(steps, phrase("storage_failed", language, error=error_text), language)
            else:
                answer = summarize_steps(steps, phrase("model_failed", language, error=error_text), language)
        system = SystemMessage(self.engine.loop_system_prompt(selection_in_force(state), state.get("query", ""),
                                                              state.get("messages", []), thread_id))
        return AgentResult(
            answer=answer,
            messages=[system, *state.get("messages", [])],
            steps=[Step.from_record(record) for record in steps],
            iterations=int(state.get("iteration", 0)),
            finish_reason=finish_reason,
            error=error_text,
            grounding=state.get("grounding"),
            structured_response=state.get("structured_response"),
            pending=list(pending or []),
            limit=state.get("limit"),
            model=state.get("model"),
            model_usage={name: Usage.from_dict(counts) for name, counts in (state.get("model_usage") or {}).items()},
            answer_source=state.get("answer_source"),
            source_in_done=self.engine.settings.synthesis == "auto",
            **self._run_fields(state, started, thread_id),
        )

    async def run(self, query: str, *, thread_id: str | None = None) -> AgentResult:
        """Run the tool loop on ``query`` and return its result, without synthesis.

        Args:
            query: The user's question.
            thread_id: Conversation id; with a checkpointer, earlier turns of the thread
                are the history. Generated when none is given. While the run is going,
                :meth:`inject` sends follow-ups to it.

        Returns:
            The :class:`~reactgraph.AgentResult`. Never raises for what the model or a
            tool does: a model that keeps failing gives ``finish_reason="model_error"``,
            ``error`` set and a fallback answer (SPEC R2.7); with a checkpointer the run
            stays resumable (:meth:`resume`).

        Raises:
            ThreadBusyError: Another run is going on ``thread_id`` (one run per thread).
        """
        return await self._turn(query, thread_id, synthesize=False)

    async def _synthesis_chunks(self, query: str, result: AgentResult, config: RunnableConfig) -> AsyncIterator[str]:
        """The answer synthesis of SPEC R3.1 over the loop's steps, by the graph's own
        ``synthesize`` node (:func:`~reactgraph.graph.answer.answer_graph`): grounding,
        the answer made of observations, the checks and the thread's earlier turns apply as
        in a streamed run. With a checkpointer, the thread's saved state is
        the input; else the result's steps and answer."""
        state: dict[str, Any] = {}
        if self.checkpointer is not None and result.thread_id is not None:
            snapshot = await self.graph.aget_state({"configurable": {"thread_id": result.thread_id}})
            state = {key: snapshot.values[key] for key in ("steps", "draft_answer", "earlier_turns")
                     if key in (snapshot.values or {})}
        state.setdefault("steps", [{"iteration": s.iteration, "tool_call_id": s.tool_call_id, "tool_name": s.tool_name,
                                    "tool_args": s.tool_args, "observation": s.observation, "error": s.error}
                                   for s in result.steps])
        state.setdefault("draft_answer", result.answer)
        state.update(query=query, answer=result.answer, finish_reason=result.finish_reason)
        if self._answer_graph is None:
            self._answer_graph = answer_graph(self.engine)
        async for text in answer_chunks(self._answer_graph, self.engine, state, config):
            yield text

    def astream_events(self, query: str, *, thread_id: str | None = None) -> AsyncIterator[AgentEvent]:
        """Run the loop and the synthesis, yielding the events of SPEC §8 in order.

        Args:
            query: The user's question.
            thread_id: Conversation id (see :meth:`run`).

        Yields:
            :class:`~reactgraph.AgentEvent` items: ``step`` (thinking, iteration, answer
            signal), ``answer`` (start, deltas, done), and last ``done`` with
            ``{answer, iterations, usage, elapsed}`` (``answer`` is the synthesized text).
            A run whose model kept failing yields an ``error`` event
            ``{message, kind: "model_error"}`` and the fallback answer on the ``answer``
            channel before ``done`` (SPEC R2.7, R3.2). A follow-up sent with
            :meth:`inject` yields an ``inject`` event ``{type: "inject", content}`` when
            the loop takes it in. A run that pauses for approval (SPEC R13.3) yields an
            ``approval`` event ``{type: "approval", status: "waiting", thread_id,
            pending: [{interrupt_id, tool_call_id, tool_name, tool_args, iteration, kind,
            value}]}`` and ``done`` with ``finish_reason: "waiting"`` and an empty
            answer; :meth:`aresume_events` with decisions streams the rest. A usage limit
            that ended the loop puts ``limit`` (its figures) in ``done``. Every event stream ends with ``done``, unless the
            consumer stops iterating; the run takes follow-ups until just before ``done``
            (a consumer that stops early should ``aclose()`` the iterator to end the run).

        Raises:
            ThreadBusyError: Another run is going on ``thread_id`` (one run per thread).
        """
        return self._turn_events(query, thread_id)
