"""The drain: where follow-up messages join a running loop (SPEC §7).

It is no graph node of its own: the loop's model node
(:mod:`reactgraph.nodes.model_step`) runs it before and after its model call, in the same
superstep. It takes every follow-up queued for the run's thread (``config["configurable"]
["thread_id"]``) from the engine's :class:`~reactgraph.persistence.interrupts.InterruptQueue` and
appends them as one pinned ``[USER INTERRUPT] …`` user message (R7.3), emitting one
``inject`` event ``{type: "inject", content}`` per follow-up.

Where it runs (R7.2), always at a point where a user message keeps the provider protocol
valid:

- at the start of every run, after tool selection, so a follow-up queued before the first
  model call (or left from the thread's previous run) reaches that call;
- JSON mode: right after each assistant message, before its final answer is accepted;
- native mode: after the assistant message's tool results are all in (the superstep
  barrier after the ``execute_tools`` fan-out), and after a final answer; never between a
  tool-call message and its results;
- JSON mode also after each tool result, so a follow-up sent while a tool ran reaches the
  next model call.

When follow-ups arrive while a final answer is pending, the answer is suppressed
(``pending_final``, ``answer`` and ``finish_reason`` cleared) and the loop goes on so the
model answers them (R7.4); the assistant message that held the answer stays in the
conversation. The follow-ups are added to the turn's ``query`` too, so answer synthesis
answers them as well. A drain that finds the loop at ``max_iterations`` takes nothing:
no model call is left to answer, so the follow-ups stay queued for the thread's next run
and the loop ends as it would have. A graph invoked without a ``thread_id`` has no queue
to drain.

The drain is also where the loop's answer is accepted (nothing more can suppress it after
this point): a successful call of a ``return_direct`` tool in the iteration just run makes
its result the answer (``finish_reason="return_direct"``, no model call follows), and an
accepted answer whose conversation does not end with an assistant message gets one
holding the answer (every way the loop ends leaves an assistant message last).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from reactgraph.engine.bindings import Engine
from reactgraph.events import AnswerSignalled, Injected, emit
from reactgraph.engine.history import thread_of
from reactgraph.persistence.interrupts import format_interrupt
from reactgraph.nodes.fallback import iteration_cap_reached
from reactgraph.engine.state import AgentState

logger = logging.getLogger(__name__)


def direct_answer(state: AgentState) -> str | None:
    """The answer given by ``return_direct`` tools in the current iteration: the
    observations of their successful calls, joined by blank lines; ``None`` if none."""
    iteration = state.get("iteration", 0)
    texts: list[str] = []
    for step in reversed(state.get("steps") or []):  # the current iteration's steps are last
        if step.get("iteration") != iteration:
            break
        if step.get("return_direct"):
            texts.insert(0, step["observation"])
    return "\n\n".join(texts) if texts else None


class DrainInterrupts:
    """Drain the thread's follow-ups into the conversation (see the module docstring): the
    model node calls :meth:`drain`, and :meth:`give_back` when its step failed."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def give_back(self, config: RunnableConfig, texts: list[str]) -> None:
        """Queue follow-ups taken by :meth:`drain` again, because the step that took them
        failed before its update was saved (the model call raised; a retry of the step
        takes them anew). A follow-up the queue refuses now (its limits) is logged and
        dropped: delivery stays at most once."""
        thread_id = thread_of(config)
        for text in texts:
            try:
                await self.engine.interrupts.put(str(thread_id), text)
            except Exception as exc:  # the queue's limits, or the run already closed on it
                logger.warning("a follow-up taken by a failed step could not be queued again: %s", exc)

    async def _take(self, state: AgentState, config: RunnableConfig) -> list[str]:
        thread_id = thread_of(config)
        if thread_id is None or iteration_cap_reached(state, self.engine.settings.max_iterations):
            return []
        return await self.engine.interrupts.take(str(thread_id))

    async def drain(self, state: AgentState, config: RunnableConfig) -> tuple[dict[str, Any], list[str]]:
        """Take the thread's follow-ups and accept a ``return_direct`` answer.

        Returns:
            The partial state update, and the follow-ups taken (for :meth:`give_back`).
        """
        update: dict[str, Any] = {}
        pending = state.get("pending_final")
        if pending is None and (direct := direct_answer(state)) is not None:
            pending = direct
            emit(AnswerSignalled())
            update.update(pending_final=direct, answer=direct, finish_reason="return_direct")
        texts = await self._take(state, config)
        if texts:
            for text in texts:
                emit(Injected(content=text))
            content = format_interrupt(texts)
            injected = HumanMessage(content, id=str(uuid.uuid4()))
            update.update(messages=[injected], pinned=[injected.id],
                          query=f"{state.get('query', '')}\n\n{content}".lstrip(),
                          progress_iteration=state.get("iteration", 0))  # a new request is progress (SPEC R13.1)
            if pending is not None:
                update.update(pending_final=None, answer="", finish_reason=None, parse_failures=0)
        elif pending is not None and not isinstance((state.get("messages") or [None])[-1], AIMessage):
            update["messages"] = [AIMessage(pending, name=self.engine.message_name)]
        return update, texts
