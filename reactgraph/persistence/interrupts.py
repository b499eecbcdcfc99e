"""Follow-up messages sent while a run is going (SPEC §7).

A user may send a follow-up while the agent is still working ("also check PO-101"). The
follow-up goes into the conversation's queue (:class:`InterruptQueue`, keyed by
``thread_id``, R7.1); the graph's ``drain_interrupts`` node takes everything queued at the
points where a user message keeps the provider protocol valid (R7.2) and turns it into one
pinned ``[USER INTERRUPT] …`` user message (R7.3).

Lifecycle of a thread's queue:

- A run *opens* its thread for the whole run (loop and synthesis) and closes it at the end,
  whatever the outcome. ``ReActAgent`` does this itself; a plain graph user wraps the call in
  ``async with queue.running(thread_id):``. Only one run per thread at a time:
  opening a thread that is already open raises :class:`ThreadBusyError`.
- :meth:`InterruptQueue.put` is accepted while the thread is open and refused with
  :class:`NoActiveRunError` otherwise: a follow-up for a conversation that is not running
  has no run to join, and the caller should start a run with it instead (refusing also
  catches a mistyped ``thread_id`` instead of holding its text forever).
- A follow-up accepted after the run's last drain point stays queued and joins the
  thread's *next* run, before that run's first model call. This happens when it arrives
  during answer synthesis (the loop's answer is already final), when the loop has
  reached ``max_iterations`` and has no model call left to answer it, or when the run
  fails before its next drain.

:class:`InMemoryInterruptQueue` is the default and serves one process. A deployment with
several server processes (R7.5) uses :class:`reactgraph.persistence.postgres.PostgresInterruptQueue`
(opened with the checkpointer by :func:`reactgraph.persistence.checkpointing.open_persistence` when
the database is Postgres) or implements :class:`InterruptQueue` on other shared storage,
and passes it as ``interrupt_queue=`` to ``ReActAgent`` or ``create_react_graph``.
Delivery is at most once: :meth:`InterruptQueue.take` removes the follow-ups before the
drain's write is checkpointed, so a crash in between loses them.

Each thread's waiting follow-ups are bounded (:class:`FollowUpLimits`: how many, and how many
characters together): one more is refused with :class:`FollowUpLimitError` (the server
answers 429) until the run takes them in, so the one message they become at the next
drain is never cut by the context guard without notice.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from reactgraph.core.errors import FollowUpLimitError, NoActiveRunError, ThreadBusyError

INTERRUPT_PREFIX = "[USER INTERRUPT] "
"""Start of the user message that carries drained follow-ups (SPEC R7.3)."""

_SEPARATOR = "\n\n"
"""Between two follow-ups of one drained message."""


@dataclass(frozen=True)
class FollowUpLimits:
    """How much may wait in one thread's queue.

    Attributes:
        max_count: Most follow-ups waiting at once (default 20).
        max_chars: Most characters of the one ``[USER INTERRUPT] …`` message the waiting
            follow-ups become at the next drain (:func:`format_interrupt`: the prefix, the
            follow-ups and the blank lines between them). Default 50,000: the context
            guard's default cut of one message (SPEC R6.1, ``AgentSettings.max_message_chars``),
            so the message is never cut without notice. ``ReActAgent``'s own default queue
            uses its settings' ``max_message_chars``.
    """

    max_count: int = 20
    max_chars: int = 50_000

    def __post_init__(self) -> None:
        if self.max_count < 1 or self.max_chars < 1:
            raise ValueError(f"follow-up limits must be at least 1, got {self.max_count} and {self.max_chars}")

    def check(self, thread_id: str, count: int, chars: int, text: str) -> None:
        """Refuse ``text`` when ``count`` follow-ups of ``chars`` characters (together)
        already wait on ``thread_id``.

        Raises:
            FollowUpLimitError: One more would pass :attr:`max_count`, or would make the
                drained message longer than :attr:`max_chars`.
        """
        if count + 1 > self.max_count:
            raise FollowUpLimitError(f"thread {thread_id!r} already has {count} follow-ups waiting, the most this "
                                     "server accepts; send this one after the run has taken them in")
        message_chars = len(INTERRUPT_PREFIX) + chars + len(text) + len(_SEPARATOR) * count
        if message_chars > self.max_chars:
            raise FollowUpLimitError(f"thread {thread_id!r} has {chars} characters of follow-ups waiting; with this "
                                     f"one ({len(text)}) they would make a message of {message_chars} characters, "
                                     f"past the limit of {self.max_chars}")


def format_interrupt(texts: Sequence[str]) -> str:
    """The content of the one user message that carries the follow-ups of one drain.

    Args:
        texts: The follow-ups, oldest first (at least one).

    Returns:
        :data:`INTERRUPT_PREFIX` followed by the follow-ups, separated by blank lines
        (SPEC R7.3: several injections in one drain become one message).
    """
    return INTERRUPT_PREFIX + _SEPARATOR.join(texts)


def check_text(text: str) -> str:
    """A follow-up's ``text``, checked (every follow-up queue's rule).

    Raises:
        TypeError: ``text`` is not a string.
        ValueError: ``text`` is empty or blank.
    """
    if not isinstance(text, str):
        raise TypeError(f"a follow-up must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("a follow-up must not be empty")
    return text


class InterruptQueue(ABC):
    """Per-conversation queues of follow-up messages (SPEC R7.1, R7.5).

    Every method takes the conversation's ``thread_id`` (a string). Implementations must
    be safe to call from concurrent runs: one instance serves every thread of an agent.
    """

    @abstractmethod
    async def open(self, thread_id: str) -> None:
        """Mark a run as going on ``thread_id``; follow-ups are accepted until :meth:`close`.

        Follow-ups still queued from an earlier run are kept (the new run takes them at its
        first drain).

        Raises:
            ThreadBusyError: A run is already going on ``thread_id``.
        """

    @abstractmethod
    async def close(self, thread_id: str) -> None:
        """Mark the run on ``thread_id`` as ended. Follow-ups it did not take stay queued
        for the thread's next run. Closing a thread that is not open does nothing."""

    @abstractmethod
    async def put(self, thread_id: str, text: str) -> None:
        """Queue one follow-up for the run going on ``thread_id``.

        Raises:
            NoActiveRunError: No run is going on ``thread_id``.
            FollowUpLimitError: The thread's waiting follow-ups are at the queue's
                :class:`FollowUpLimits`.
            TypeError: ``text`` is not a string.
            ValueError: ``text`` is empty or only whitespace.
        """

    @abstractmethod
    async def take(self, thread_id: str) -> list[str]:
        """Remove and return every follow-up queued for ``thread_id``, oldest first
        (an empty list when there is none)."""

    @abstractmethod
    async def is_running(self, thread_id: str) -> bool:
        """Whether a run is going on ``thread_id`` (opened and not closed yet), as far as
        this queue can see: in this process for an in-memory queue, anywhere for a
        shared one."""

    @asynccontextmanager
    async def running(self, thread_id: str) -> AsyncIterator[None]:
        """``async with queue.running(thread_id):`` opens the thread for the block and
        closes it on the way out, also when the block raises.

        Raises:
            ThreadBusyError: A run is already going on ``thread_id``.
        """
        await self.open(thread_id)
        try:
            yield
        finally:
            await self.close(thread_id)


class InMemoryInterruptQueue(InterruptQueue):
    """The default :class:`InterruptQueue`: dictionaries in this process (SPEC R7.5).

    Methods do no I/O and never wait: a follow-up put from one task is visible to the
    next drain of any other task, also across event loops in other threads (a lock
    guards the dictionaries). A thread takes memory only while it has a run going or
    follow-ups queued.

    Args:
        limits: How much may wait per thread (:class:`FollowUpLimits`; defaults when ``None``).
    """

    def __init__(self, limits: FollowUpLimits | None = None) -> None:
        self.limits = limits or FollowUpLimits()
        self._queues: dict[str, list[str]] = {}
        self._open: set[str] = set()
        self._lock = threading.Lock()

    async def open(self, thread_id: str) -> None:
        with self._lock:
            if thread_id in self._open:
                raise ThreadBusyError(
                    f"a run is already going on thread {thread_id!r}; wait for it to end, or send "
                    "this message to it as a follow-up with inject()"
                )
            self._open.add(thread_id)

    async def close(self, thread_id: str) -> None:
        with self._lock:
            self._open.discard(thread_id)

    async def put(self, thread_id: str, text: str) -> None:
        check_text(text)
        with self._lock:
            if thread_id not in self._open:
                raise NoActiveRunError(
                    f"no run is going on thread {thread_id!r}, so there is nothing to send a "
                    "follow-up to; start a run with this message as its query instead"
                )
            waiting = self._queues.setdefault(thread_id, [])
            self.limits.check(thread_id, len(waiting), sum(map(len, waiting)), text)
            waiting.append(text)

    async def take(self, thread_id: str) -> list[str]:
        with self._lock:
            return self._queues.pop(thread_id, [])

    async def is_running(self, thread_id: str) -> bool:
        with self._lock:
            return thread_id in self._open
