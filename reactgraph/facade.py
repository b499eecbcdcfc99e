"""What the two agent facades (:class:`~reactgraph.ReActAgent`, :class:`~reactgraph.DAGAgent`)
share, written once: the run config, the result fields every run has, ``stream_answer``
with its fallback (SPEC R3.2), and the error-and-``done`` tail of an event stream (SPEC §8,
R2.7: every stream ends with ``done``)."""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.runnables import RunnableConfig

from reactgraph import observability
from reactgraph.events import AgentEvent, AnswerDelta, AnswerDone, AnswerStarted, Done, RunError
from reactgraph.result import RunResult
from reactgraph.synthesis import with_fallback
from reactgraph.usage import Usage


class AgentFacade(ABC):
    """Base of the agent facades: subclasses build their graph and say how a finished
    run's state becomes their result and how their synthesis is prompted."""

    failure_reason = "model_error"
    """The ``finish_reason`` of a run whose graph raised (observability's metrics and spans say it too)."""

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
        if observability.active is not None:  # issue 40: spans, metrics, the run's log line
            config["callbacks"] = observability.run_callbacks(thread_id, failure_reason=self.failure_reason)
        return config, thread_id

    @staticmethod
    def _run_fields(state: dict[str, Any], started: float, thread_id: str | None) -> dict[str, Any]:
        """The :class:`~reactgraph.result.RunResult` fields read the same way for every
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
    def _synthesis_chunks(self, query: str, result: Any) -> AsyncIterator[str]:
        """The streamed synthesis call for a finished run (no fallback)."""

    async def stream_answer(self, query: str, result: Any) -> AsyncIterator[str]:
        """Stream the synthesized answer for a finished run (SPEC R3.1, R9.4).

        Args:
            query: The user's question (or goal).
            result: The run's result from ``run``.

        Yields:
            Text chunks. If the synthesis call fails or streams nothing, the rest is
            ``result.answer`` (R3.2): the whole of it when nothing was streamed yet, after a
            blank line when it broke off midway.
        """
        async for text in with_fallback(self._synthesis_chunks(query, result), result.answer):
            yield text

    @staticmethod
    def _closing_events(result: RunResult, *, failed: bool, kind: str) -> Iterator[AgentEvent]:
        """The end of a run's event stream: for a failed run an ``error`` event
        ``{message, kind}`` and the fallback answer on the ``answer`` channel (SPEC R2.7,
        R3.2); then ``done`` with the synthesized answer (or the fallback)."""
        shown = result.synthesis if result.synthesis is not None else result.answer
        if failed:
            yield RunError(message=str(result.error), kind=kind)
            yield AnswerStarted()
            yield AnswerDelta(content=result.answer)
            yield AnswerDone()
            shown = result.answer
        yield Done(**result.done_data(shown))
