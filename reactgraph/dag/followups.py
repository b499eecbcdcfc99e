"""Follow-ups during a DAG run (SPEC §7, R13.8): where a message sent with
:meth:`DAGAgent.inject <reactgraph.DAGAgent.inject>` goes.

Every follow-up reaches the plan level: the ``plan``, ``schedule`` and ``analyze`` nodes
drain the thread's queue (:class:`PlanDrain`) and add what they take to the run's goal as
one ``[USER INTERRUPT] …`` block (the planner, the steps started after it, the analyzer and
the synthesis all read the goal), emitting one ``inject`` event ``{type: "inject",
content}`` per follow-up. A follow-up taken after the round's plan was made (while its
steps ran, or before its analysis) makes the run plan another round when rounds remain,
whatever the analyzer says: that plan was made without it (as R7.4 suppresses a final
answer a follow-up arrives with).

A follow-up that names a running step, its id as a whole word (``"alarms: also CNC-005"``,
``"@alarms …"``), also reaches that step's own loop at its next drain point (SPEC R7.2), as
a pinned ``[USER INTERRUPT] …`` message, and the step's ``inject`` event carries its
``step_id``. The steps' loops share one :class:`StepInbox`: whichever step drains first
takes the thread's follow-ups from the queue, hands each to the steps it names, and keeps
it for the plan level's next drain.

Delivery is at most once, as in ReAct mode: a follow-up a step took and the plan level had
not drained yet is lost if the process dies then.
"""

from __future__ import annotations

import contextvars
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig

from reactgraph.events import Injected, emit
from reactgraph.engine.history import thread_of
from reactgraph.persistence.interrupts import InterruptQueue, format_interrupt

CURRENT_STEP: contextvars.ContextVar[str | None] = contextvars.ContextVar("reactgraph_dag_step", default=None)
"""The plan step whose loop runs in this context (set by ``run_step`` around the loop)."""


def names_step(text: str, step_id: str) -> bool:
    """Whether ``text`` names the step ``step_id``: its id as a whole word, any case."""
    return re.search(rf"(?<!\w){re.escape(step_id)}(?!\w)", text, re.IGNORECASE) is not None


class StepInbox(InterruptQueue):
    """The interrupt queue of the steps' loops (see the module docstring).

    Args:
        queue: The run's queue (``DAGAgent.interrupts``): follow-ups are taken from it, and
            opening, closing and putting are its own.
    """

    def __init__(self, queue: InterruptQueue) -> None:
        self.queue = queue
        self._lock = threading.Lock()
        self._running: dict[str, set[str]] = {}  # thread -> running step ids
        self._boxes: dict[tuple[str, str], list[str]] = {}  # (thread, step) -> follow-ups for that step
        self._kept: dict[str, list[str]] = {}  # thread -> follow-ups taken by steps, for the plan level

    @contextmanager
    def step(self, thread_id: str | None, step_id: str) -> Iterator[None]:
        """Mark ``step_id`` as running on ``thread_id`` (and the current step of this
        context) for the block; what is left in its box when it ends is dropped (the plan
        level has it too)."""
        token = CURRENT_STEP.set(step_id)
        if thread_id is not None:
            with self._lock:
                self._running.setdefault(str(thread_id), set()).add(step_id)
        try:
            yield
        finally:
            CURRENT_STEP.reset(token)
            if thread_id is not None:
                with self._lock:
                    running = self._running.get(str(thread_id), set())
                    running.discard(step_id)
                    if not running:
                        self._running.pop(str(thread_id), None)
                    self._boxes.pop((str(thread_id), step_id), None)

    async def take(self, thread_id: str) -> list[str]:
        """The follow-ups for the current step: the thread's new follow-ups are taken from
        the queue, handed to the running steps they name and kept for the plan level; the
        current step's box is emptied and returned."""
        texts = await self.queue.take(thread_id)
        step_id = CURRENT_STEP.get()
        with self._lock:
            if texts:
                self._kept.setdefault(thread_id, []).extend(texts)
                for running in self._running.get(thread_id, ()):
                    named = [text for text in texts if names_step(text, running)]
                    if named:
                        self._boxes.setdefault((thread_id, running), []).extend(named)
            return self._boxes.pop((thread_id, step_id), []) if step_id is not None else []

    def kept(self, thread_id: str) -> list[str]:
        """Remove and return the follow-ups steps took from the queue since the plan
        level's last drain, oldest first."""
        with self._lock:
            return self._kept.pop(thread_id, [])

    async def put(self, thread_id: str, text: str) -> None:
        """A step's loop gives back follow-ups its failed model step took: back in that
        step's box (the plan level has them already); any other put goes to the queue."""
        step_id = CURRENT_STEP.get()
        if step_id is None:
            await self.queue.put(thread_id, text)
            return
        with self._lock:
            self._boxes.setdefault((thread_id, step_id), []).append(text)

    async def open(self, thread_id: str) -> None:
        await self.queue.open(thread_id)

    async def close(self, thread_id: str) -> None:
        await self.queue.close(thread_id)

    async def is_running(self, thread_id: str) -> bool:
        return await self.queue.is_running(thread_id)


class PlanDrain:
    """The plan level's drain (see the module docstring), called by the ``plan``,
    ``schedule`` and ``analyze`` nodes.

    Args:
        inbox: The steps' :class:`StepInbox` (its queue is the run's).
    """

    def __init__(self, inbox: StepInbox) -> None:
        self.inbox = inbox

    async def __call__(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        """Take the thread's follow-ups (those steps took first, then the queue's).

        Returns:
            ``{}`` when there is none; else the update that adds them to ``goal`` (one
            ``[USER INTERRUPT] …`` block) and to ``follow_ups``. One ``inject`` event is
            emitted per follow-up.
        """
        thread_id = thread_of(config)
        if thread_id is None:
            return {}
        texts = self.inbox.kept(str(thread_id)) + await self.inbox.queue.take(str(thread_id))
        if not texts:
            return {}
        for text in texts:
            emit(Injected(content=text))
        goal = f"{state.get('goal', '')}\n\n{format_interrupt(texts)}".lstrip()
        return {"goal": goal, "follow_ups": texts}
