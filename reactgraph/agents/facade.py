"""What the two agent facades (:class:`~reactgraph.ReActAgent`, :class:`~reactgraph.DAGAgent`)
share, written once: the run config, the result fields every run has, ``stream_answer``
with its fallback (SPEC R3.2), the error-and-``done`` tail of an event stream (SPEC §8,
R2.7: every stream ends with ``done``), and the thread's run bookkeeping: one run per
thread, follow-ups (``inject``), approvals and crash resume from the checkpoint
(``resume``, ``aresume_events``, ``pending``, ``thread_status``, ``thread_snapshot``;
SPEC §7, §10, R13.3, R13.5, R13.8: DAG runs keep the guarantees of ReAct runs)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from reactgraph import observability
from reactgraph.agents import outcome
from reactgraph.protocol.actions import message_text
from reactgraph.tools.approval import PendingCall, pending_calls, resume_command
from reactgraph.persistence.checkpointing import (
    STORAGE_ERROR,
    commit_held,
    has_pending_work,
    record_cut_model_calls,
    run_durability,
    settle_saves,
)
from reactgraph.core.errors import NothingToResumeError
from reactgraph.events import (
    INTERRUPT_KEY,
    AgentEvent,
    AnswerDelta,
    AnswerDone,
    AnswerStarted,
    ApprovalWaiting,
    Done,
    RunError,
    ThinkingDone,
    ThinkingStarted,
    graph_events,
)
from reactgraph.persistence.interrupts import InterruptQueue
from reactgraph.agents.result import RunResult
from reactgraph.answer.synthesis import with_fallback
from reactgraph.core.usage import Usage

if TYPE_CHECKING:
    from reactgraph.observability.observer import RunObserver

logger = logging.getLogger(__name__)

ThreadStatus = Literal["running", "waiting", "interrupted", "idle", "new"]
"""Where a conversation stands (:meth:`AgentFacade.thread_status`)."""


async def _record_cut_call(checkpointer: Any, config: dict[str, Any]) -> None:
    """:func:`~reactgraph.persistence.checkpointing.record_cut_model_calls` of one call; a failure is
    logged (it does not replace the cancellation)."""
    try:
        await record_cut_model_calls(checkpointer, config, 1)
    except Exception:
        logger.exception("a cancelled run's model call could not be counted")


ResultT = TypeVar("ResultT", bound=RunResult)
"""The result type of a facade's runs."""


class AgentFacade(ABC, Generic[ResultT]):
    """Base of the agent facades: subclasses build their graph (``graph``) with their
    ``checkpointer`` and ``interrupts`` queue and ``settings`` (:class:`~reactgraph.AgentSettings`),
    and say how a run's state becomes their result and how their synthesis is prompted."""

    failure_reason = "model_error"
    """The ``finish_reason`` of a run whose graph raised (observability's metrics and spans say it too)."""

    failure_kind = "model_error"
    """The ``kind`` of the ``error`` event of a run whose graph raised."""

    graph: Any
    checkpointer: Any
    interrupts: InterruptQueue
    settings: Any

    @property
    @abstractmethod
    def recursion_limit(self) -> int:
        """The graph's ``recursion_limit`` per run (derived from the agent's settings)."""

    def _config(self, thread_id: str | None, *, synthesize: bool) -> tuple[RunnableConfig, str]:
        """The run's config and thread id; every run gets a ``thread_id`` (generated when
        none is given) so follow-ups can be sent to it with or without a checkpointer."""
        thread_id = thread_id if thread_id is not None else uuid.uuid4().hex
        configurable: dict[str, Any] = {"synthesize": synthesize, "thread_id": thread_id}
        config: RunnableConfig = {"configurable": configurable, "recursion_limit": self.recursion_limit}
        return config, thread_id

    def _observe(self, config: RunnableConfig, thread_id: str, run_input: Any,
                 resumes: Mapping[str, Any] | None = None) -> RunObserver | None:
        """Just before the graph starts on ``config`` with ``run_input``: the run's observer,
        started, while observability is on (SPEC R13.9: spans, metrics, the run's
        log line; the span's context in the metadata of the run's checkpoints, and a link to
        the run that wrote ``resumes``, the metadata of the checkpoint a resume continues).
        The caller reports the run's end to it. ``None`` when observability is off."""
        if observability.active is None:
            return None
        observer = observability.observe(config, thread_id, failure_reason=self.failure_reason, resumes=resumes,
                                         reported=True)
        if observer is not None:
            config["run_id"] = observer.run_id  # the graph run LangChain's callbacks (LangSmith) see has the span's id
            observer.run_started(self.graph.get_name(), run_input)
        return observer

    @staticmethod
    def _run_fields(state: dict[str, Any], started: float, thread_id: str | None) -> dict[str, Any]:
        """The :class:`~reactgraph.agents.result.RunResult` fields read the same way for every
        agent: ``usage``, ``elapsed`` (since ``started``, a ``perf_counter`` reading),
        ``thread_id`` and ``synthesis``."""
        return {
            "usage": Usage.from_dict(state.get("usage")),
            "elapsed": time.perf_counter() - started,
            "thread_id": thread_id,
            "synthesis": state.get("synthesis"),
        }

    @staticmethod
    def _error_text(failure: BaseException) -> str:
        """How a run failure reads in ``result.error`` and the ``error`` event."""
        return f"{type(failure).__name__}: {failure}"

    @abstractmethod
    def _synthesis_chunks(self, query: str, result: Any, config: RunnableConfig) -> AsyncIterator[str]:
        """The streamed synthesis call for a finished run (no fallback), made with ``config``
        (its observer's, while observability is on)."""

    @abstractmethod
    def _result(self, state: dict[str, Any], started: float, thread_id: str | None,
                error: BaseException | None = None, pending: list[PendingCall] | None = None) -> ResultT:
        """The run's result from its last state: waiting on ``pending`` when given, failed
        with ``error`` when given."""

    async def stream_answer(self, query: str, result: Any) -> AsyncIterator[str]:
        """Stream the synthesized answer for a finished run (SPEC R3.1, R9.4).

        Args:
            query: The user's question (or goal).
            result: The run's result from ``run``.

        Yields:
            Text chunks. If the synthesis call fails or streams nothing, the rest is
            ``result.answer`` (R3.2): the whole of it when nothing was streamed yet, after a
            blank line when it broke off midway.

        While observability is on, the synthesis is a run of its own on the result's thread
        (``reactgraph.run.kind`` ``answer``): its model call is traced and counted.
        """
        config: RunnableConfig = {"configurable": {}}
        observer = None
        if observability.active is not None:
            observer = observability.observe(config, result.thread_id, failure_reason=self.failure_reason,
                                             reported=True)
            if observer is not None:
                observer.run_started(self.graph.get_name(), None, kind="answer")
        cut: BaseException | None = None
        try:
            async for text in with_fallback(self._synthesis_chunks(query, result, config), result.answer):
                yield text
        except BaseException as exc:  # the consumer went away (GeneratorExit) or the task was cancelled
            cut = exc
            raise
        finally:
            if observer is not None:
                observer.run_finished({"finish_reason": result.finish_reason}, cut)

    @staticmethod
    def _closing_events(result: RunResult, *, failed: bool, kind: str) -> Iterator[AgentEvent]:
        """The end of a run's event stream: for a failed run an ``error`` event
        ``{message, kind}`` and the fallback answer on the ``answer`` channel (SPEC R2.7,
        R3.2); then ``done`` with the synthesized answer (or the fallback)."""
        shown = outcome.answer_shown(result.synthesis, result.answer)
        if failed:
            yield RunError(message=str(result.error), kind=kind)
            yield AnswerStarted()
            yield AnswerDelta(content=result.answer)
            yield AnswerDone()
            shown = result.answer
        yield Done(**result.done_data(shown))

    async def inject(self, thread_id: str, text: str) -> None:
        """Send a follow-up message to the run going on ``thread_id`` (SPEC §7).

        The loop takes it at its next drain point (R7.2) as a pinned ``[USER INTERRUPT] …``
        message; follow-ups arriving together become one message (R7.3); a final answer
        the model just gave is suppressed so the follow-up gets answered (R7.4). A
        follow-up that arrives after the loop's answer is final (during synthesis, or
        with ``max_iterations`` reached) waits for the thread's next run. In DAG mode the
        plan level takes it, and the running steps it names (:mod:`reactgraph.dag.followups`).

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

    async def _drive(
        self, graph_input: dict[str, Any] | None, thread_id: str | None, *, synthesize: bool, events: bool,
        decisions: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[AgentEvent | RunResult]:
        """Run the graph on ``thread_id`` inside the thread's run bookkeeping.

        ``graph_input`` ``None`` resumes the thread's interrupted run, answering the calls
        it waits on with ``decisions`` when given. Yields the run's :class:`AgentEvent`
        items when ``events``, and last the run's result (waiting, with its
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
            resumes = None
            if graph_input is None:
                snapshot = await self._interrupted_state(thread_id)
                state, resumes = dict(snapshot.values), snapshot.metadata
                if decisions is not None:
                    waiting = await self.pending(thread_id)
                    if not waiting:
                        raise NothingToResumeError(f"the run on thread {thread_id!r} waits on no decision")
                    run_input = resume_command(waiting, decisions)
            observer = self._observe(config, thread_id, run_input, resumes)
            thinking = False  # a loop model call is in flight (its start seen, not its end)
            cut: BaseException | None = None
            try:
                try:
                    async with aclosing(graph_events(self.graph, run_input, config, state, **options)) as stream:
                        async for event in stream:
                            if isinstance(event, (ThinkingStarted, ThinkingDone)):
                                thinking = isinstance(event, ThinkingStarted)
                            yield event
                except (asyncio.CancelledError, GeneratorExit) as exc:  # the caller went away: the thread is freed once its saves are in
                    cut = exc
                    await settle_saves(self.checkpointer, config)
                    if thinking:  # the limits count it when the run is resumed
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
            except BaseException as exc:  # cancelled while its saves settle or its checkpoint is committed
                cut = cut or exc
                raise
            finally:  # the observer hears the run's end however it ended
                if observer is not None:
                    observer.run_finished(state, cut or failure)
            # A pause is read back from the checkpoint only when the run may have paused: a
            # task's interrupt() showed in the stream, or the run stopped before its end (an
            # interrupt_before/after); a finished run costs no read.
            if failure is None and self.checkpointer is not None and (INTERRUPT_KEY in state or not state.get("finish_reason")):
                pending = await self.pending(thread_id)
        if failure is not None and graph_input is not None and not state.get("query"):
            # The run failed before its first step stored anything: its answer still speaks the
            # question's language (the result reads the turn's language from the query).
            state["query"] = message_text(graph_input["messages"][-1])
        yield self._result(state, started, thread_id, failure, pending)

    async def pending(self, thread_id: str) -> list[PendingCall]:
        """The calls the thread's paused run waits on (SPEC R13.3): tool calls that need a
        person's approval, and interrupts tools raised themselves. Empty when the thread
        is not paused, or the agent has no checkpointer."""
        if self.checkpointer is None:
            return []
        return pending_calls(await self.graph.aget_state({"configurable": {"thread_id": thread_id}}))

    async def _interrupted_state(self, thread_id: str) -> StateSnapshot:
        """The checkpoint of the thread's interrupted run (its values, and its metadata: the
        span context of the run that wrote it, for the resume's span link).

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
        return snapshot


    async def resume(self, thread_id: str, decisions: Mapping[str, Any] | None = None) -> ResultT:
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
            The result of the whole turn (:class:`~reactgraph.AgentResult`, :class:`~reactgraph.DAGResult`): ``steps`` and
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
    async def _final(items: AsyncIterator[AgentEvent | RunResult]) -> Any:
        result: ResultT | None = None
        async for item in items:
            if isinstance(item, RunResult):
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


    async def _turn(self, text: str, thread_id: str | None, *, synthesize: bool) -> ResultT:
        """A new run (turn) on ``text``: its result (``run`` of the subclass)."""
        return await self._final(self._drive({"messages": [HumanMessage(text)]}, thread_id, synthesize=synthesize,
                                             events=False))

    async def _turn_events(self, text: str, thread_id: str | None) -> AsyncIterator[AgentEvent]:
        """A new run (turn) on ``text`` with synthesis, as events (``astream_events`` of the subclass)."""
        # aclosing, here and below: a consumer that stops early (a disconnected client)
        # closes the graph's stream at once, which cancels the run's model call or tools.
        async with aclosing(self._events(self._drive({"messages": [HumanMessage(text)]}, thread_id,
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

    async def _events(self, items: AsyncIterator[AgentEvent | RunResult]) -> AsyncIterator[AgentEvent]:
        """The run's events, then the ``error`` tail of a failed run and ``done``."""
        result: RunResult | None = None
        async with aclosing(items):
            async for item in items:
                if isinstance(item, AgentEvent):
                    yield item
                else:
                    result = item
        assert result is not None  # _drive always ends with the result
        if result.waiting:
            yield ApprovalWaiting(thread_id=result.thread_id, pending=[call.to_dict() for call in result.pending])
        failed = result.error is not None and outcome.is_failure(result.finish_reason, self.failure_reason)
        kind = STORAGE_ERROR if result.finish_reason == STORAGE_ERROR else self.failure_kind
        for event in self._closing_events(result, failed=failed, kind=kind):
            yield event
