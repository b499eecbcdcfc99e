"""The agent facade (SPEC R10.1): ``run``, ``stream_answer``, ``astream_events`` and, with
a checkpointer, ``resume`` over the compiled ReAct graph."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as create_tool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

from reactgraph._engine import Engine, split_prompt
from reactgraph.abilities import ModelAbilities, resolve_abilities
from reactgraph.approval import PendingCall, pending_calls, resume_command
from reactgraph.checkpointing import commit_held, has_pending_work, record_cut_model_calls, run_durability, settle_saves
from reactgraph.config import AgentSettings
from reactgraph.errors import NothingToResumeError
from reactgraph.events import INTERRUPT_KEY, AgentEvent, ApprovalWaiting, ThinkingDone, ThinkingStarted, graph_events
from reactgraph.facade import AgentFacade
from reactgraph.fallbacks import unpack_fallbacks
from reactgraph.graph.answer import answer_chunks, answer_graph
from reactgraph.graph.react import compile_react_graph
from reactgraph.interrupts import FollowUpLimits, InMemoryInterruptQueue, InterruptQueue
from reactgraph.result import AgentResult, Step
from reactgraph.synthesis import summarize_steps
from reactgraph.tooling import ToolErrorPolicy
from reactgraph.usage import Usage

logger = logging.getLogger(__name__)

ThreadStatus = Literal["running", "waiting", "interrupted", "idle", "new"]
"""Where a conversation stands (:meth:`ReActAgent.thread_status`)."""



async def _record_cut_call(checkpointer: Any, config: dict[str, Any]) -> None:
    """:func:`~reactgraph.checkpointing.record_cut_model_calls` of one call; a failure is
    logged (it does not replace the cancellation)."""
    try:
        await record_cut_model_calls(checkpointer, config, 1)
    except Exception:
        logger.exception("a cancelled run's model call could not be counted")


class ReActAgent(AgentFacade):
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
        fallbacks: Fallback models, tried in order when the model fails (issue 41,
            :mod:`reactgraph.fallbacks`): chat models, ``(model, abilities)`` pairs or
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
        tools: Sequence[BaseTool],
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
        self.tools = [t if isinstance(t, (BaseTool, dict)) else create_tool(t) for t in tools]
        self.use_native_tools = use_native_tools
        self.checkpointer = checkpointer
        settings, prompt = split_prompt(settings or AgentSettings(), prompt)
        self.interrupts: InterruptQueue = (
            interrupt_queue if interrupt_queue is not None
            else InMemoryInterruptQueue(FollowUpLimits(max_chars=settings.max_message_chars)))
        llm, chained = unpack_fallbacks(llm)
        self.engine = Engine.build(
            llm, self.tools, resolve_abilities(llm, abilities), settings, use_native_tools, self.interrupts,
            compaction_llm=compaction_llm, handle_tool_errors=handle_tool_errors, prompt=prompt, message_name=name,
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

    async def inject(self, thread_id: str, text: str) -> None:
        """Send a follow-up message to the run going on ``thread_id`` (SPEC §7).

        The loop takes it at its next drain point (R7.2) as a pinned ``[USER INTERRUPT] …``
        message; follow-ups arriving together become one message (R7.3); a final answer
        the model just gave is suppressed so the follow-up gets answered (R7.4). A
        follow-up that arrives after the loop's answer is final (during synthesis, or
        with ``max_iterations`` reached) waits for the thread's next run.

        Args:
            thread_id: The running conversation: the ``thread_id`` given to :meth:`run` or
                :meth:`astream_events`, or the one they generated (in the result and in
                the ``done`` event).
            text: The user's follow-up, as written.

        Raises:
            NoActiveRunError: No run is going on ``thread_id``; start a run with ``text``
                as its query instead.
            FollowUpLimitError: The run already has as many follow-ups (or characters of
                them) waiting as the queue's :class:`~reactgraph.FollowUpLimits` allow.
            TypeError, ValueError: ``text`` is not a string, or is blank.
        """
        await self.interrupts.put(thread_id, text)

    def _result(
        self, state: dict[str, Any], started: float, thread_id: str | None, error: BaseException | None = None,
        pending: list[PendingCall] | None = None,
    ) -> AgentResult:
        steps = state.get("steps") or []
        answer = state.get("answer") or ""
        finish_reason = state.get("finish_reason")
        error_text = None
        if pending:
            answer, finish_reason = "", "waiting"
        elif error is not None:
            error_text = self._error_text(error)
            answer = summarize_steps(steps, f"The model call failed, so the run stopped early ({error_text}).")
            finish_reason = "model_error"
        system = SystemMessage(self.engine.loop_system_prompt(state.get("selected_tools"), state.get("query", ""),
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
            **self._run_fields(state, started, thread_id),
        )

    async def _drive(
        self, graph_input: dict[str, Any] | None, thread_id: str | None, *, synthesize: bool, events: bool,
        decisions: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[AgentEvent | AgentResult]:
        """Run the graph on ``thread_id`` inside the thread's run bookkeeping.

        ``graph_input`` ``None`` resumes the thread's interrupted run, answering the calls
        it waits on with ``decisions`` when given. Yields the run's :class:`AgentEvent`
        items when ``events``, and last the :class:`AgentResult` (waiting, with its
        pending calls, when the run paused on an interrupt).

        Raises:
            ThreadBusyError: Another run is going on the thread.
            NothingToResumeError: Resuming, and the thread has no interrupted run; or
                ``decisions`` and the run waits on nothing.
            DecisionError: A decision names no pending call or is no decision.
        """
        started = time.perf_counter()
        config, thread_id = self._config(thread_id, synthesize=synthesize)
        state: dict[str, Any] = {}
        failure: BaseException | None = None
        options: dict[str, Any] = {"stream_mode": ["custom", "updates", "values"] if events else ["values"],
                                   "preview_chars": self.settings.observation_preview_chars}
        if self.checkpointer is not None:
            options["durability"], entries = run_durability(self.checkpointer, self.settings.durability)
            config["configurable"].update(entries)
        pending: list[PendingCall] = []
        run_input: Any = graph_input
        async with self.interrupts.running(thread_id):
            if graph_input is None:
                state = await self._interrupted_state(thread_id)
                if decisions is not None:
                    waiting = await self.pending(thread_id)
                    if not waiting:
                        raise NothingToResumeError(f"the run on thread {thread_id!r} waits on no decision")
                    run_input = resume_command(waiting, decisions)
            thinking = False  # a loop model call is in flight (its start seen, not its end)
            try:
                async with aclosing(graph_events(self.graph, run_input, config, state, **options)) as stream:
                    async for event in stream:
                        if isinstance(event, (ThinkingStarted, ThinkingDone)):
                            thinking = isinstance(event, ThinkingStarted)
                        yield event
            except (asyncio.CancelledError, GeneratorExit):  # the caller went away: the thread is freed once its saves are in
                await settle_saves(self.checkpointer, config)
                if thinking:  # the limits count it when the run is resumed (issue 37)
                    await asyncio.shield(_record_cut_call(self.checkpointer, config))
                raise
            except Exception as exc:  # R2.7: the run ends with a fallback answer, not a crash
                logger.warning("run failed: %s", exc)
                failure = exc
            try:  # before the thread is freed: its last checkpoint may be held (run_durability)
                await commit_held(self.checkpointer, config)
            except Exception as exc:
                logger.warning("the run's last checkpoint could not be stored: %s", exc)
                failure = failure or exc
            # A pause is read back from the checkpoint only when the run may have paused: a
            # task's interrupt() showed in the stream, or the run stopped before its end (an
            # interrupt_before/after); a finished run costs no read (issue 20).
            if failure is None and self.checkpointer is not None and (INTERRUPT_KEY in state or not state.get("finish_reason")):
                pending = await self.pending(thread_id)
        yield self._result(state, started, thread_id, failure, pending)

    async def pending(self, thread_id: str) -> list[PendingCall]:
        """The calls the thread's paused run waits on (SPEC R13.3): tool calls that need a
        person's approval, and interrupts tools raised themselves. Empty when the thread
        is not paused, or the agent has no checkpointer."""
        if self.checkpointer is None:
            return []
        return pending_calls(await self.graph.aget_state({"configurable": {"thread_id": thread_id}}))

    async def _interrupted_state(self, thread_id: str) -> dict[str, Any]:
        """The checkpointed state of the thread's interrupted run.

        Raises:
            NothingToResumeError: No checkpointer, no checkpoint, or the last run finished.
        """
        if self.checkpointer is None:
            raise NothingToResumeError("this agent has no checkpointer, so no run can be resumed")
        snapshot = await self.graph.aget_state({"configurable": {"thread_id": thread_id}})
        if not snapshot.values:
            raise NothingToResumeError(f"thread {thread_id!r} has no checkpoint")
        if not has_pending_work(snapshot):
            raise NothingToResumeError(f"the last run on thread {thread_id!r} finished; start a new run instead")
        return dict(snapshot.values)

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
        return await self._final(self._drive({"messages": [HumanMessage(query)]}, thread_id, synthesize=False, events=False))

    async def resume(self, thread_id: str, decisions: Mapping[str, Any] | None = None) -> AgentResult:
        """Continue the thread's interrupted run from its last checkpoint to the
        synthesized answer (SPEC §1: crash resume; R13.3: approvals).

        A run is interrupted when its process died (crash, ``SIGKILL``, Ctrl-C) or its
        model kept failing, or it is paused waiting for decisions (``result.waiting``).
        Tool results that finished tasks of the interrupted fan-out wrote are reused;
        only tool calls that had not finished run (again).

        Args:
            thread_id: The interrupted run's thread.
            decisions: For a paused run: by tool call id (``result.pending[i].tool_call_id``,
                or the interrupt id), a :class:`~reactgraph.Decision` (or
                ``{"type": "approve" | "edit" | "reject", "args"?, "message"?}``); any
                value for an interrupt a tool raised itself. Calls left out keep waiting
                (the result is waiting again). ``None`` resumes without answering: a
                paused run pauses again on the same calls.

        Returns:
            The :class:`~reactgraph.AgentResult` of the whole turn: ``steps`` and
            ``usage`` include the part before the interruption, ``synthesis`` holds the
            synthesized answer, ``elapsed`` counts this call only.

        Raises:
            NothingToResumeError: No checkpointer, no checkpoint for ``thread_id``, or its
                last run finished; ``decisions`` for a run that waits on none.
            DecisionError: A decision names no pending call, or is no decision.
            ThreadBusyError: A run is going on ``thread_id`` (with a shared queue: in any
                process).
        """
        return await self._final(self._drive(None, thread_id, synthesize=True, events=False, decisions=decisions))

    @staticmethod
    async def _final(items: AsyncIterator[AgentEvent | AgentResult]) -> AgentResult:
        result: AgentResult | None = None
        async for item in items:
            if isinstance(item, AgentResult):
                result = item
        assert result is not None  # _drive always ends with the result
        return result

    async def thread_status(self, thread_id: str) -> ThreadStatus:
        """Where a conversation stands.

        Returns:
            ``"running"`` (a run is going; with a shared queue, in any process),
            ``"waiting"`` (its run is paused on decisions: :meth:`pending` lists them,
            :meth:`resume` with decisions continues it),
            ``"interrupted"`` (its last run stopped before the end: :meth:`resume` it),
            ``"idle"`` (its last run finished) or ``"new"`` (no checkpoint, or no
            checkpointer).
        """
        return (await self.thread_snapshot(thread_id))[0]

    async def thread_snapshot(
        self, thread_id: str, *, running_here: Callable[[str], bool] | None = None
    ) -> tuple[ThreadStatus, StateSnapshot | None]:
        """:meth:`thread_status` and the checkpoint it was read from, consistent with each
        other: whether a run goes is asked before the checkpoint is read, and again after
        it when the checkpoint shows work left — a run that ended during the read would
        otherwise leave a mid-run checkpoint that reads ``"interrupted"`` (resuming it is
        then refused: the run finished), and one that started during it a mid-run
        checkpoint of a thread said to be idle.

        Args:
            thread_id: The thread.
            running_here: Also counts as a run going on a thread (the server passes its
                streams: a run is theirs until its last event is written).

        Returns:
            ``(status, snapshot)``: the snapshot of ``graph.aget_state`` (``None`` without
            a checkpointer); with ``"running"`` it may be mid-run.
        """

        async def going() -> bool:
            return (running_here is not None and running_here(thread_id)) or await self.interrupts.is_running(thread_id)

        was_going = await going()
        if self.checkpointer is None:
            return ("running" if was_going else "new"), None
        snapshot = await self.graph.aget_state({"configurable": {"thread_id": thread_id}})
        if was_going:
            return "running", snapshot
        if not snapshot.values:
            return "new", snapshot
        if snapshot.interrupts:
            return "waiting", snapshot
        if not has_pending_work(snapshot):
            return "idle", snapshot
        return ("running" if await going() else "interrupted"), snapshot

    async def _synthesis_chunks(self, query: str, result: AgentResult) -> AsyncIterator[str]:
        """The answer synthesis of SPEC R3.1 over the loop's steps, by the graph's own
        ``synthesize`` node (:func:`~reactgraph.graph.answer.answer_graph`): grounding,
        the answer made of observations, the checks and the thread's earlier turns apply as
        in a streamed run (issues 35, 36). With a checkpointer, the thread's saved state is
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
        async for text in answer_chunks(self._answer_graph, self.engine, state):
            yield text

    async def astream_events(self, query: str, *, thread_id: str | None = None) -> AsyncIterator[AgentEvent]:
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
        # aclosing, here and below: a consumer that stops early (a disconnected client)
        # closes the graph's stream at once, which cancels the run's model call or tools.
        async with aclosing(self._events(self._drive({"messages": [HumanMessage(query)]}, thread_id,
                                                     synthesize=True, events=True))) as events:
            async for event in events:
                yield event

    async def aresume_events(self, thread_id: str, decisions: Mapping[str, Any] | None = None) -> AsyncIterator[AgentEvent]:
        """:meth:`resume` as events: the events of the rest of the interrupted run, as
        :meth:`astream_events` yields them, ending with ``done`` (its ``iterations`` and
        ``usage`` cover the whole turn, ``elapsed`` the resumed part).

        Args:
            thread_id: The interrupted run's thread.
            decisions: As for :meth:`resume`.

        Raises:
            NothingToResumeError, DecisionError, ThreadBusyError: As for :meth:`resume`,
                before any event.
        """
        async with aclosing(self._events(self._drive(None, thread_id, synthesize=True, events=True,
                                                     decisions=decisions))) as events:
            async for event in events:
                yield event

    @staticmethod
    async def _events(items: AsyncIterator[AgentEvent | AgentResult]) -> AsyncIterator[AgentEvent]:
        """The run's events, then the ``error`` tail of a failed run and ``done``."""
        result: AgentResult | None = None
        async with aclosing(items):
            async for item in items:
                if isinstance(item, AgentEvent):
                    yield item
                else:
                    result = item
        assert result is not None  # _drive always ends with the result
        if result.waiting:
            yield ApprovalWaiting(thread_id=result.thread_id, pending=[call.to_dict() for call in result.pending])
        failed = result.error is not None and not result.waiting
        for event in AgentFacade._closing_events(result, failed=failed, kind="model_error"):
            yield event
