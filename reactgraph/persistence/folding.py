"""Write folding: a task's checkpoint writes held for a moment so that they ride along with
the checkpoint that follows them in one transaction (:class:`WriteFolding`, the base of the
SQLite and Postgres savers of :mod:`reactgraph.persistence.savers`), the rows they leave
(:func:`merged_writes`), and the versions the savers store short (:class:`ShortVersions`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any


logger = logging.getLogger(__name__)


WRITE_HOLD_SECONDS = 0.02
"""Longest a task's writes wait to ride along with the checkpoint that follows them
(:class:`WriteFolding`), in seconds, before they are stored on their own."""


@dataclass(frozen=True)
class HeldWrites:
    """One task's writes, serialized, waiting in :class:`WriteFolding`.

    Attributes:
        checkpoint_id: The checkpoint the writes belong to (its pending writes).
        task_id, task_path: The task's, as LangGraph passes them to ``aput_writes``.
        replace: Whether the writes replace stored ones with the same index (every
            channel special: errors, interrupts, resumes) or leave them (LangGraph's
            ``WRITES_IDX_MAP`` rule).
        rows: ``(idx, channel, type, blob)`` per write.
        writes: The ``(channel, value)`` pairs as LangGraph handed them (for
            :meth:`WriteFolding.committed_write`).
    """

    checkpoint_id: str
    task_id: str
    task_path: str
    replace: bool
    rows: list[tuple[int, str, str, bytes]]
    writes: list[tuple[str, Any]]


RECENT_THREADS = 64
"""Threads whose last committed writes :meth:`WriteFolding.committed_write` remembers."""

RECENT_BATCHES = 8
"""Committed batches of writes it remembers per thread."""

STORED_THREADS = 4096
"""Threads whose last committed checkpoint id :meth:`WriteFolding.checkpoint_stored`
remembers (a thread forgotten is asked of the database)."""

STORED_POLL_SECONDS = 1.0
"""How often :meth:`WriteFolding.checkpoint_stored` asks the database while it waits, in
seconds, in case the commit it waits for was made by another saver or forgotten."""

TASKS_WAIT_FOR_CHECKPOINT = "__reactgraph_tasks_wait_for_checkpoint"
"""The ``configurable`` key :func:`run_durability` sets when a run's checkpoints are stored
in the background and its tool tasks and ``start_turn`` wait for theirs
(:func:`wait_for_task_checkpoint`).
Starts with ``__`` so LangGraph does not copy it into checkpoint metadata."""


class ShortVersions:
    """Channel versions of 19 characters (``0000000042.9f3a61c0``: the counter padded to 10
    digits, a dot, 32 random bits in hex) for the SQLite and Postgres savers, where
    LangGraph's are about 50 (the counter padded to 32 digits and a random float); .

    Every checkpoint lists the version of every channel written so far and what each node
    last saw, so the version's length is most of a checkpoint's size: about 1.7 KB of a
    2.5 KB checkpoint of this graph, stored twice per loop iteration
    (bench/checkpoint_overhead.py, ``KiB/iter``). Versions stay strings ordered as their
    counters are (LangGraph compares them with ``<`` and takes their ``max``), and the
    random part keeps a fork's versions apart from the original's (the blobs of a channel
    are keyed by version). Threads written with LangGraph's versions read and continue
    unchanged: a short version sorts after every long one whose counter is below 10^22
    (the long one has at least 22 leading zeros), so a channel's next version is always
    greater than its last.
    """

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """The version after ``current`` (``None`` for a channel not written yet; a short
        or a LangGraph version, or an int): its counter plus one, in the form above
        (``BaseCheckpointSaver.get_next_version``)."""
        if current is None:
            counter = 0
        elif isinstance(current, int):
            counter = current
        else:
            counter = int(current.split(".", 1)[0])
        return f"{counter + 1:010d}.{random.getrandbits(32):08x}"


class WriteFolding:
    """Write batching shared by the SQLite and Postgres savers (SPEC §10):
    a task's writes are held for at most :data:`WRITE_HOLD_SECONDS` and stored in the same
    commit as the checkpoint that follows them, one commit per superstep instead of two
    (a step of one task — every model step, a step of one tool call — is stored with its
    checkpoint a moment after the task ends, as before). In a run whose tool tasks wait
    for their checkpoint (:func:`run_durability`), checkpoints are held the same way, so
    an iteration's two checkpoints and their writes are one commit, made when the tool
    step asks for it.

    - ``aput_writes`` serializes the writes and holds them; a timer stores them on their own
      when no checkpoint of their thread comes first (a tool still running in a fan-out).
    - ``aput`` stores the thread's held writes and the checkpoint in one commit; a caller
      that waits for it (durability ``"sync"``) has both stored when it returns. In a run
      started with :func:`run_durability`'s entries, ``aput`` holds the checkpoint instead
      (the same timer stores it), unless a task already waits for it.
    - :meth:`checkpoint_stored` waits until a given checkpoint of a thread is committed,
      committing it at once when it is held: what a tool task awaits before it starts in
      such a run.
    - Every read of a thread (``aget_tuple``, ``alist``, the message history) first stores
      what the thread holds, so this process reads what it wrote, and a tool's ``done``
      event, which waits until its result reads back, is not delayed by the hold.
    - Stores of one thread take turns, in call order: a checkpoint never lands before
      writes held before it. :meth:`commit_held` stores what a thread holds;
      ``aclose_held`` stores everything still held.
    - :meth:`committed_write` answers "is this write committed?" from memory for the last
      batches of recent threads (committing it when it is held), so the engine's wait
      before a tool's ``done`` event (``reactgraph.events``) reads no checkpoint back.
    - A store that fails raises to whoever made it and leaves what it carried held, for
      the next store of the thread.

    What a killed process loses: what it holds at that moment, at most
    :data:`WRITE_HOLD_SECONDS` old — the tasks whose writes those were run again on
    resume, as when the process dies just before a task's end (docs/checkpoints.md).

    A subclass provides ``_store(key, held, checkpoints)``: store ``held`` and the
    ``checkpoints`` (the backend's arguments of each, in order) in one commit.
    """

    def _init_folding(self) -> None:
        self._held: dict[tuple[str, str], list[HeldWrites]] = {}
        self._held_checkpoints: dict[tuple[str, str], list[tuple[str, Any]]] = {}  # key -> [(id, arguments)]
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._turns: dict[tuple[str, str], list[Any]] = {}  # key -> [lock, users]
        self._flushes: set[asyncio.Task[None]] = set()
        self._recent: OrderedDict[tuple[str, str], deque[HeldWrites]] = OrderedDict()
        self._stored: OrderedDict[tuple[str, str], str] = OrderedDict()  # key -> last committed checkpoint id
        self._waiters: dict[tuple[str, str], list[tuple[str, asyncio.Future[None]]]] = {}
        self._refused: dict[tuple[str, str], tuple[str, BaseException]] = {}  # key -> (checkpoint id, why)

    _store: Callable[[tuple[str, str], list[HeldWrites], list[Any]], Awaitable[None]]  # the backend's, see above

    async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        """Hold a task's writes (``BaseCheckpointSaver.aput_writes``); see the class docstring."""
        from langgraph.checkpoint.base import WRITES_IDX_MAP

        if not writes:
            return
        configurable = config["configurable"]
        try:
            rows = [(WRITES_IDX_MAP.get(channel, index), channel, *self.serde.dumps_typed(value))  # type: ignore[attr-defined]
                    for index, (channel, value) in enumerate(writes)]
        except Exception as exc:
            self._refuse(config, str(configurable["checkpoint_id"]), exc)
            raise
        held = HeldWrites(str(configurable["checkpoint_id"]), task_id, task_path,
                           all(channel in WRITES_IDX_MAP for channel, _ in writes), rows, list(writes))
        key = thread_key(config)
        self._held.setdefault(key, []).append(held)
        self._flush_later(key)

    async def _put(self, config: Any, checkpoint_id: str, checkpoint: Any) -> None:
        """What the backends' ``aput`` does once it has ``checkpoint``'s arguments: hold it
        (a run started with :func:`run_durability`'s entries, no task waiting for it yet) or
        commit it with what the thread holds."""
        key = thread_key(config)
        self._refused.pop(key, None)  # the thread's saves go on
        if config["configurable"].get(TASKS_WAIT_FOR_CHECKPOINT) and not any(
                wanted <= checkpoint_id for wanted, _ in self._waiters.get(key, ())):
            self._held_checkpoints.setdefault(key, []).append((checkpoint_id, checkpoint))
            self._flush_later(key)
            return
        await self._commit(key, (checkpoint_id, checkpoint))

    def _refuse(self, config: Any, after: str, error: BaseException) -> None:
        """A save of ``config``'s thread could not be serialized: the writes of checkpoint
        ``after``, or the checkpoint that follows it (``aput`` / ``aput_writes`` raise
        ``error`` to LangGraph, which saves in the background and makes no later
        checkpoint of the run). Whoever waits in :meth:`checkpoint_stored` for a checkpoint
        after ``after``, now or until the thread's next checkpoint is handed in, gets
        ``error`` instead of waiting for a commit that never comes (a tool task
        waited forever and the run hung)."""
        key = thread_key(config)
        self._refused[key] = (after, error)
        for wanted, future in self._waiters.get(key, ()):
            if wanted > after and not future.done():
                future.set_exception(error)

    async def commit_held(self, config: Any = None) -> None:
        """Store what ``config``'s thread holds (every thread's when ``config`` names none),
        after the thread's stores in progress (what they took is no longer held, and is not
        committed yet).

        Raises:
            Exception: What ``_store`` raised; what it carried stays held.
        """
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        known = {**self._held, **self._held_checkpoints, **self._turns}
        for key in [key for key in known if thread_id is None or key[0] == str(thread_id)]:
            await self._commit(key)

    async def _commit(self, key: tuple[str, str], checkpoint: tuple[str, Any] | None = None) -> None:
        """In the thread's turn: store what it holds and ``checkpoint`` (``(id, the
        backend's arguments)``, when not ``None``) in one commit (nothing to do when there
        is nothing); then :meth:`checkpoint_stored` callers waiting for what it stored go on.
        Raises what ``_store`` raises; what it carried is then held again."""
        async with self._turn(key):
            held, checkpoints = self._take(key)
            if checkpoint is not None:
                checkpoints.append(checkpoint)
            if not held and not checkpoints:
                return
            try:
                await self._store(key, held, [arguments for _id, arguments in checkpoints])
            except BaseException:
                self._hold_again(key, held, checkpoints)
                raise
            self._remember(key, held)
            if checkpoints:
                self._mark_stored(key, max(checkpoint_id for checkpoint_id, _ in checkpoints))

    def _mark_stored(self, key: tuple[str, str], checkpoint_id: str) -> None:
        if self._stored.get(key, "") < checkpoint_id:  # checkpoint ids of a thread sort by time
            self._stored[key] = checkpoint_id
        self._stored.move_to_end(key)
        while len(self._stored) > STORED_THREADS:
            self._stored.popitem(last=False)
        for wanted, future in self._waiters.get(key, ()):
            if wanted <= checkpoint_id and not future.done():
                future.set_result(None)

    async def checkpoint_stored(self, config: Any, checkpoint_id: str) -> None:
        """Return once checkpoint ``checkpoint_id`` of ``config``'s thread (and namespace) is
        committed, or a later one is (checkpoint ids of a thread sort by time); when it is
        held, it is committed now (with what the thread holds), and when it has not been
        handed to the saver yet, it is committed as soon as it is. Answered from memory for
        the :data:`STORED_THREADS` most recent threads; while waiting, the database is asked
        every :data:`STORED_POLL_SECONDS`.

        Raises:
            Exception: What committing it raised (it stays held), or why it could not be
                serialized (:meth:`_refuse`).
        """
        key = thread_key(config)
        loop = asyncio.get_running_loop()
        while self._stored.get(key, "") < checkpoint_id:
            refused = self._refused.get(key)
            if refused is not None and checkpoint_id > refused[0]:
                raise refused[1]
            if any(held_id >= checkpoint_id for held_id, _ in self._held_checkpoints.get(key, ())):
                await self._commit(key)
                continue
            future: asyncio.Future[None] = loop.create_future()
            waiters = self._waiters.setdefault(key, [])
            waiters.append((checkpoint_id, future))
            try:
                await asyncio.wait_for(asyncio.shield(future), STORED_POLL_SECONDS)
                return
            except TimeoutError:
                target = {"configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}}
                if await self.aget_tuple(target) is not None:
                    return
            finally:
                waiters.remove((checkpoint_id, future))
                if not waiters:
                    self._waiters.pop(key, None)

    async def committed_write(self, config: Any, match: Callable[[str, Any], bool]) -> bool:
        """Whether a write of ``config``'s thread for which ``match(channel, value)`` holds
        is committed, answered from memory: when it is held, it is committed now (with
        what the thread holds) and True is returned; True when it is among the thread's
        last :data:`RECENT_BATCHES` committed batches (of the :data:`RECENT_THREADS` most
        recent threads); False otherwise — not handed to the saver yet, being committed
        right now, or committed too long ago to be remembered (then read the thread).

        Raises:
            Exception: What committing the held writes raised (they stay held).
        """
        key = thread_key(config)
        if any(match(channel, value) for held in self._held.get(key, ()) for channel, value in held.writes):
            await self._commit(key)
            return True
        return any(match(channel, value) for held in self._recent.get(key, ()) for channel, value in held.writes)

    async def settle_thread(self, config: Any, *, turns: int = 3) -> None:
        """Wait until everything handed to the saver for ``config``'s thread is committed:
        what it holds stored and its stores in progress ended, including LangGraph's
        checkpoint saves that reach the saver within ``turns`` turns of the event loop (a
        save waits for the one before it, then calls ``aput`` at once). The agent calls it
        when a run is cancelled or its event stream is closed, before it frees the thread:
        LangGraph leaves the last step's saves running then, and a client that reads the
        thread next must see them.

        Every namespace of the thread is settled: a DAG run's step subgraphs write under
        their own (SPEC R13.8).

        Raises:
            Exception: What committing the held writes raised (they stay held).
        """
        thread_id = thread_key(config)[0]
        while True:
            for _ in range(turns):
                await asyncio.sleep(0)
            keys = [key for key in {**self._turns, **self._held, **self._held_checkpoints} if key[0] == thread_id]
            if not keys:
                return
            for key in keys:
                await self._commit(key)  # in turn: after every store already waiting

    def _remember(self, key: tuple[str, str], held: list[HeldWrites]) -> None:
        if not held:
            return
        batches = self._recent.pop(key, None) or deque(maxlen=RECENT_BATCHES)
        batches.extend(held)
        self._recent[key] = batches
        while len(self._recent) > RECENT_THREADS:
            self._recent.popitem(last=False)

    def _flush_later(self, key: tuple[str, str]) -> None:
        """Store what ``key``'s thread holds in :data:`WRITE_HOLD_SECONDS`, unless a store
        takes it first."""
        if key not in self._timers:
            self._timers[key] = asyncio.get_running_loop().call_later(WRITE_HOLD_SECONDS, self._flush_soon, key)

    def _flush_soon(self, key: tuple[str, str]) -> None:
        self._timers.pop(key, None)
        task = asyncio.ensure_future(self._flush(key))
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _flush(self, key: tuple[str, str]) -> None:
        try:
            await self._commit(key)
        except Exception:
            # Kept held: the thread's next store or read stores it, or raises.
            logger.exception("thread %r: storing held checkpoint writes failed", key[0])

    def _take(self, key: tuple[str, str]) -> tuple[list[HeldWrites], list[tuple[str, Any]]]:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        return self._held.pop(key, []), self._held_checkpoints.pop(key, [])

    def _hold_again(self, key: tuple[str, str], held: list[HeldWrites], checkpoints: list[tuple[str, Any]]) -> None:
        if held:
            self._held[key] = held + self._held.get(key, [])
        if checkpoints:
            self._held_checkpoints[key] = checkpoints + self._held_checkpoints.get(key, [])

    @asynccontextmanager
    async def _turn(self, key: tuple[str, str]) -> AsyncIterator[None]:
        """One store of ``key``'s thread at a time, in the order they asked."""
        entry = self._turns.setdefault(key, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                del self._turns[key]

    async def aget_tuple(self, config: Any) -> Any:
        """``aget_tuple`` after storing what the thread holds; the checkpoint read is known
        as stored from then on (:meth:`checkpoint_stored`: a run resumed from it, in a
        process that did not write it, starts its tools at once)."""
        await self.commit_held(config)
        saved = await super().aget_tuple(config)  # type: ignore[misc]
        if saved is not None:
            self._mark_stored(thread_key(saved.config), str(saved.checkpoint["id"]))
        return saved

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """``alist`` after storing what the thread holds (what every thread holds when
        ``config`` names none)."""
        await self.commit_held(config)
        async for item in super().alist(config, **kwargs):  # type: ignore[misc]
            yield item

    async def aget_delta_channel_history(self, *, config: Any, channels: Any) -> Any:
        """``aget_delta_channel_history`` after storing what the thread holds."""
        await self.commit_held(config)
        return await super().aget_delta_channel_history(config=config, channels=channels)  # type: ignore[misc]

    async def adelete_thread(self, thread_id: str) -> None:
        """Drop what the thread holds, then ``adelete_thread``."""
        known = {**self._held, **self._held_checkpoints, **self._recent, **self._stored}
        for key in [key for key in known if key[0] == str(thread_id)]:
            self._take(key)
            self._recent.pop(key, None)
            self._stored.pop(key, None)
        await super().adelete_thread(thread_id)  # type: ignore[misc]

    async def aclose_held(self) -> None:
        """Store everything held now (:func:`open_persistence` calls it before closing).
        Raises what ``_store`` raises."""
        await asyncio.gather(*self._flushes, return_exceptions=True)
        await self.commit_held()



def thread_key(config: Any) -> tuple[str, str]:
    configurable = config["configurable"]
    return str(configurable["thread_id"]), str(configurable.get("checkpoint_ns") or "")


def merged_writes(held: list[HeldWrites]) -> dict[bool, list[tuple[Any, ...]]]:
    """The rows of ``held``, one per (checkpoint, task, index) as storing them in order
    would leave them (a replacing write wins, another leaves what is there), split by
    whether they replace: ``{replace: [(checkpoint_id, task_id, task_path, idx, channel,
    type, blob), ...]}``."""
    rows: dict[tuple[str, str, int], tuple[bool, tuple[Any, ...]]] = {}
    for writes in held:
        for idx, channel, type_, blob in writes.rows:
            slot = (writes.checkpoint_id, writes.task_id, idx)
            if writes.replace or slot not in rows:
                rows[slot] = (writes.replace, (writes.checkpoint_id, writes.task_id, writes.task_path, idx, channel,
                                               type_, blob))
    split: dict[bool, list[tuple[Any, ...]]] = {}
    for replace, row in rows.values():
        split.setdefault(replace, []).append(row)
    return split
