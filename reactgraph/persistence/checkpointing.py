"""Opening a LangGraph checkpointer from a URL or path (SPEC §10).

The CLI and the server keep checkpoints in SQLite by default; a Postgres URL (in the
argument or in ``REACTGRAPH_DATABASE_URL``) selects the Postgres checkpointer (extra
``[postgres]``); ``"memory"`` keeps them in the process. Library users can pass any
LangGraph checkpointer to :class:`~reactgraph.ReActAgent` directly instead.
:func:`open_persistence` opens the checkpointer together with the interrupt queue that
goes with it: shared through the same database for Postgres, in memory otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import math
import os
import random
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph._internal._constants import (  # how a task sees its checkpointer and checkpoints
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_SEND,
    CONFIG_KEY_TASK_ID,
    INTERRUPT,
    NS_SEP,
    NULL_TASK_ID,
    RESUME,
)
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Interrupt, StateSnapshot

from reactgraph.core.paths import data_home
from reactgraph.core.bounds import store_safe
from reactgraph.persistence.interrupts import InMemoryInterruptQueue, InterruptQueue

try:  # the [postgres] extra brings it (langgraph-checkpoint-postgres needs it too)
    import orjson
except ImportError:  # json_bytes falls back to json.dumps
    orjson = None

logger = logging.getLogger(__name__)

DATABASE_URL_ENV = "REACTGRAPH_DATABASE_URL"

DURABLE_COMMITS_ENV = "REACTGRAPH_DURABLE_COMMITS"
"""Set to ``1`` (or ``true``, ``yes``, ``on``) to make :func:`open_persistence` wait for each
checkpoint commit to reach the disk (``durable_commits=True``) when the caller does not say."""


def durable_commits_default() -> bool:
    """``durable_commits`` when the caller gives none: true when :data:`DURABLE_COMMITS_ENV`
    says so, else false."""
    return os.environ.get(DURABLE_COMMITS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def has_pending_work(snapshot: StateSnapshot) -> bool:
    """Whether the thread's last run has work left that resuming would do (SPEC R13.5).

    Decided from the checkpoint's tasks, not from ``snapshot.next`` alone: LangGraph's
    live snapshot leaves a task out of ``next`` once its write is saved, so a run cut
    after every tool of a fan-out finished (a client disconnect, ``kill -9``) but before
    the step's checkpoint was committed shows ``next == ()`` although the graph still
    has to apply those writes and go on. A finished run's checkpoint has no tasks.

    Args:
        snapshot: ``await graph.aget_state({"configurable": {"thread_id": ...}})``.

    Returns:
        True when there is a task still to run, or a finished task whose step was not
        committed; False for a thread with no checkpoint or whose last run ended.
    """
    return bool(snapshot.values) and bool(snapshot.next or snapshot.tasks)


def default_checkpoint_path() -> Path:
    """Return the default SQLite checkpoint file: ``checkpoints.db`` under
    :func:`reactgraph.core.paths.data_home`."""
    return data_home() / "checkpoints.db"


def checkpoint_target(url: str | os.PathLike[str] | None = None) -> str:
    """Resolve where checkpoints go, without opening anything.

    Args:
        url: ``None`` (then ``$REACTGRAPH_DATABASE_URL``, then the default SQLite file),
            ``"memory"``, a ``postgres://`` / ``postgresql://`` URL, a ``sqlite:///path``
            URL or a plain file path.

    Returns:
        ``"memory"``, the Postgres URL unchanged, or an absolute SQLite file path.
    """
    target = os.fspath(url) if url is not None else os.environ.get(DATABASE_URL_ENV) or ""
    if not target:
        return str(default_checkpoint_path())
    if target == "memory" or is_postgres_url(target):
        return target
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///") :]
    return str(Path(target).expanduser().resolve())


def is_postgres_url(url: str) -> bool:
    """True for ``postgres://`` and ``postgresql://`` URLs (any ``+driver`` suffix)."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    return scheme.split("+", 1)[0] in ("postgres", "postgresql")


@dataclass(frozen=True)
class Persistence:
    """What an agent needs to keep runs across processes, opened together.

    Attributes:
        checkpointer: The LangGraph checkpointer (``AsyncSqliteSaver``,
            ``AsyncPostgresSaver`` or ``InMemorySaver``).
        interrupt_queue: The follow-up queue and run bookkeeping: a
            :class:`~reactgraph.persistence.postgres.PostgresInterruptQueue` on the same database for
            Postgres (shared by every process, SPEC R7.5), else an
            :class:`~reactgraph.InMemoryInterruptQueue` (this process only).
        target: Where the checkpoints are: ``"memory"``, the Postgres URL, or the SQLite
            file path.
    """

    checkpointer: BaseCheckpointSaver
    interrupt_queue: InterruptQueue
    target: str

    @property
    def shared(self) -> bool:
        """True when other processes see this process's runs (Postgres)."""
        return is_postgres_url(self.target)


WRITE_HOLD_SECONDS = 0.02
"""Longest a task's writes wait to ride along with the checkpoint that follows them
(:class:`_WriteFolding`), in seconds, before they are stored on their own."""


@dataclass(frozen=True)
class _HeldWrites:
    """One task's writes, serialized, waiting in :class:`_WriteFolding`.

    Attributes:
        checkpoint_id: The checkpoint the writes belong to (its pending writes).
        task_id, task_path: The task's, as LangGraph passes them to ``aput_writes``.
        replace: Whether the writes replace stored ones with the same index (every
            channel special: errors, interrupts, resumes) or leave them (LangGraph's
            ``WRITES_IDX_MAP`` rule).
        rows: ``(idx, channel, type, blob)`` per write.
        writes: The ``(channel, value)`` pairs as LangGraph handed them (for
            :meth:`_WriteFolding.committed_write`).
    """

    checkpoint_id: str
    task_id: str
    task_path: str
    replace: bool
    rows: list[tuple[int, str, str, bytes]]
    writes: list[tuple[str, Any]]


RECENT_THREADS = 64
"""Threads whose last committed writes :meth:`_WriteFolding.committed_write` remembers."""

RECENT_BATCHES = 8
"""Committed batches of writes it remembers per thread."""

STORED_THREADS = 4096
"""Threads whose last committed checkpoint id :meth:`_WriteFolding.checkpoint_stored`
remembers (a thread forgotten is asked of the database)."""

STORED_POLL_SECONDS = 1.0
"""How often :meth:`_WriteFolding.checkpoint_stored` asks the database while it waits, in
seconds, in case the commit it waits for was made by another saver or forgotten."""

TASKS_WAIT_FOR_CHECKPOINT = "__reactgraph_tasks_wait_for_checkpoint"
"""The ``configurable`` key :func:`run_durability` sets when a run's checkpoints are stored
in the background and its tool tasks and ``start_turn`` wait for theirs
(:func:`wait_for_task_checkpoint`).
Starts with ``__`` so LangGraph does not copy it into checkpoint metadata."""


class _ShortVersions:
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


class _WriteFolding:
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
        self._held: dict[tuple[str, str], list[_HeldWrites]] = {}
        self._held_checkpoints: dict[tuple[str, str], list[tuple[str, Any]]] = {}  # key -> [(id, arguments)]
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._turns: dict[tuple[str, str], list[Any]] = {}  # key -> [lock, users]
        self._flushes: set[asyncio.Task[None]] = set()
        self._recent: OrderedDict[tuple[str, str], deque[_HeldWrites]] = OrderedDict()
        self._stored: OrderedDict[tuple[str, str], str] = OrderedDict()  # key -> last committed checkpoint id
        self._waiters: dict[tuple[str, str], list[tuple[str, asyncio.Future[None]]]] = {}
        self._refused: dict[tuple[str, str], tuple[str, BaseException]] = {}  # key -> (checkpoint id, why)

    _store: Callable[[tuple[str, str], list[_HeldWrites], list[Any]], Awaitable[None]]  # the backend's, see above

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
        held = _HeldWrites(str(configurable["checkpoint_id"]), task_id, task_path,
                           all(channel in WRITES_IDX_MAP for channel, _ in writes), rows, list(writes))
        key = _thread_key(config)
        self._held.setdefault(key, []).append(held)
        self._flush_later(key)

    async def _put(self, config: Any, checkpoint_id: str, checkpoint: Any) -> None:
        """What the backends' ``aput`` does once it has ``checkpoint``'s arguments: hold it
        (a run started with :func:`run_durability`'s entries, no task waiting for it yet) or
        commit it with what the thread holds."""
        key = _thread_key(config)
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
        key = _thread_key(config)
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
        key = _thread_key(config)
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
        key = _thread_key(config)
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
        thread_id = _thread_key(config)[0]
        while True:
            for _ in range(turns):
                await asyncio.sleep(0)
            keys = [key for key in {**self._turns, **self._held, **self._held_checkpoints} if key[0] == thread_id]
            if not keys:
                return
            for key in keys:
                await self._commit(key)  # in turn: after every store already waiting

    def _remember(self, key: tuple[str, str], held: list[_HeldWrites]) -> None:
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

    def _take(self, key: tuple[str, str]) -> tuple[list[_HeldWrites], list[tuple[str, Any]]]:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        return self._held.pop(key, []), self._held_checkpoints.pop(key, [])

    def _hold_again(self, key: tuple[str, str], held: list[_HeldWrites], checkpoints: list[tuple[str, Any]]) -> None:
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
            self._mark_stored(_thread_key(saved.config), str(saved.checkpoint["id"]))
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


async def settle_saves(checkpointer: Any, config: Any) -> None:
    """After a run on ``config``'s thread was cancelled (or its event stream closed): wait,
    shielded from a second cancellation, until ``checkpointer`` has committed what the run
    handed it (``settle_thread`` of the savers of :func:`open_persistence`; any other
    checkpointer: nothing to wait for). A failure to commit is logged; it does not replace
    the cancellation."""
    settle = getattr(checkpointer, "settle_thread", None)
    if settle is None:
        return
    try:
        await asyncio.shield(settle(config))
    except asyncio.CancelledError:
        pass
    except Exception:
        logger.exception("a cancelled run's checkpoint saves could not be committed")


def run_durability(checkpointer: Any, durability: str) -> tuple[str, dict[str, Any]]:
    """How a run keeps ``durability`` (``AgentSettings.durability``) on ``checkpointer``:
    the durability to pass to LangGraph and the entries to add to the run's
    ``configurable``.

    ``"sync"`` promises that no tool starts before the checkpoint it resumes from is
    stored. LangGraph keeps it by waiting for every superstep's checkpoint before the next
    superstep starts, a wait per model step as well as per tool step. On the savers of
    :func:`open_persistence` (which have ``checkpoint_stored``) the run is given LangGraph's
    ``"async"`` instead, and each tool task waits for the checkpoint it runs from
    (:func:`wait_for_task_checkpoint`) before it does anything; the saver holds the
    checkpoint before a model step and commits it with the one the tool step waits for
    (or within :data:`WRITE_HOLD_SECONDS`): one commit per iteration, and no wait before a
    model step. ``start_turn`` waits the same way for the turn's input: one more commit
    per turn, so no event of a turn goes out before its question is stored. A process killed before that commit loses what the held checkpoint carried
    (the last tool step's results: those tools run again on resume, as when it is killed
    just before they end), never a model step's tool calls once a tool has started (issue
    20, docs/checkpoints.md). Other checkpointers and other modes run as asked.

    Returns:
        ``(langgraph_durability, configurable_entries)``.
    """
    if durability == "sync" and hasattr(checkpointer, "checkpoint_stored"):
        return "async", {TASKS_WAIT_FOR_CHECKPOINT: True}
    return durability, {}


async def wait_for_task_checkpoint(config: Any) -> None:
    """In a task of a run started with :func:`run_durability`'s entries: wait until the
    checkpoint the task runs from is stored (``checkpoint_stored`` of the run's saver);
    at once for any other run.

    Args:
        config: The task's ``RunnableConfig`` (LangGraph's: the checkpointer, the task's
            namespace and the checkpoint each enclosing graph's tasks run from).

    Raises:
        Exception: What storing that checkpoint raised.
    """
    configurable = config.get("configurable") or {}
    if not configurable.get(TASKS_WAIT_FOR_CHECKPOINT):  # set only for a saver with checkpoint_stored
        return
    thread, checkpoint_id = _task_checkpoint(configurable)
    if checkpoint_id:
        await configurable[CONFIG_KEY_CHECKPOINTER].checkpoint_stored(thread, checkpoint_id)


def _task_checkpoint(configurable: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``({"configurable": {thread_id, checkpoint_ns}}, checkpoint id)`` of the checkpoint a
    task runs from, read from the task's ``configurable`` (LangGraph's: its namespace and
    the checkpoint each enclosing graph's tasks run from)."""
    task_ns = str(configurable.get(CONFIG_KEY_CHECKPOINT_NS) or "")
    graph_ns = task_ns.rpartition(NS_SEP)[0]  # the task's own part ("node:task_id") dropped
    checkpoint_id = (configurable.get(CONFIG_KEY_CHECKPOINT_MAP) or {}).get(graph_ns)
    return {"configurable": {"thread_id": configurable.get("thread_id"), "checkpoint_ns": graph_ns}}, checkpoint_id


async def record_answered_interrupt(config: Any, answer: Any) -> bool:
    """In a task that paused on ``interrupt()`` and was given ``answer``: store, before the
    task does anything with it, that its interrupt is answered with ``answer`` (
    SPEC R13.3). The task's writes are otherwise stored only when it ends; a process
    killed meanwhile left the interrupt waiting, and the person was asked again for a call
    that had started.

    Written as LangGraph's own task writes, committed now: ``RESUME`` holding ``[answer]``
    (the task run again reads it from its ``interrupt()``) and an empty ``INTERRUPT`` (the
    checkpoint's task no longer waits on a question, so the thread reads as interrupted,
    not waiting). The task's writes at its end replace both. In a subgraph (a DAG plan
    step's loop) the enclosing graphs' tasks hold the interrupt too, as they stored it when
    it paused them: it is taken out of theirs as well (:func:`_forget_enclosing_interrupt`).

    Args:
        config: The task's ``RunnableConfig``.
        answer: What the task's (first) ``interrupt()`` is to return when it runs again.

    Returns:
        True when it was stored; False for a run without a checkpointer.

    Raises:
        Exception: What storing it raised.
    """
    configurable = config.get("configurable") or {}
    saver = configurable.get(CONFIG_KEY_CHECKPOINTER)
    thread, checkpoint_id = _task_checkpoint(configurable)
    if saver is None or not checkpoint_id:
        return False
    target = {"configurable": {**thread["configurable"], "checkpoint_id": checkpoint_id}}
    await saver.aput_writes(target, [(INTERRUPT, []), (RESUME, [answer])], str(configurable[CONFIG_KEY_TASK_ID]))
    await commit_held(saver, target)
    await _forget_enclosing_interrupt(saver, configurable)
    return True


async def _forget_enclosing_interrupt(saver: Any, configurable: dict[str, Any]) -> None:
    """Take the interrupt of the task ``configurable`` describes (its first: the id
    LangGraph gives it, ``Interrupt.from_ns(..., task namespace)``) out of the stored
    ``INTERRUPT`` write of each task that encloses it (a subgraph's parent task keeps the
    interrupts of its subgraph's tasks as one write); the others it holds stay, still
    waiting. Nothing to do for a task of the top graph."""
    task_ns = str(configurable.get(CONFIG_KEY_CHECKPOINT_NS) or "")
    parts = task_ns.split(NS_SEP)
    if len(parts) < 2:
        return
    answered = Interrupt.from_ns(None, task_ns).id
    checkpoints = configurable.get(CONFIG_KEY_CHECKPOINT_MAP) or {}
    for level in range(len(parts) - 1):  # each enclosing task: parts[level] in the graph of parts[:level]
        graph_ns, task_id = NS_SEP.join(parts[:level]), parts[level].rpartition(":")[2]
        checkpoint_id = checkpoints.get(graph_ns)
        if not checkpoint_id or not task_id:
            continue
        target = {"configurable": {"thread_id": configurable.get("thread_id"), "checkpoint_ns": graph_ns,
                                   "checkpoint_id": checkpoint_id}}
        stored = await saver.aget_tuple(target)
        for writer, channel, value in (stored.pending_writes or []) if stored is not None else []:
            if writer == task_id and channel == INTERRUPT and isinstance(value, (list, tuple)):
                left = [item for item in value if getattr(item, "id", None) != answered]
                if len(left) != len(value):
                    await saver.aput_writes(target, [(INTERRUPT, left)], task_id)
                    await commit_held(saver, target)


def keep_answered_interrupt(config: Any, answer: Any) -> None:
    """In a task that stored ``answer`` with :func:`record_answered_interrupt` and is
    ending without a result (cancelled: ``POST /threads/{id}/cancel``, a dropped stream;
    or failed): make the task's own writes carry ``answer`` too (SPEC R13.3).

    LangGraph stores a cancelled or failed task's writes as it ends, and among them the
    resume value its ``interrupt()`` was given (the person's plain decision), which
    replaces the stored ``answer``: the task run again on resume would run the approved
    call a second time. Queued last, ``answer`` is the resume value that stays. Not for a
    task paused by a later ``interrupt()`` of its own: that one runs again from the start.

    Args:
        config: The task's ``RunnableConfig``.
        answer: What :func:`record_answered_interrupt` stored.
    """
    send = (config.get("configurable") or {}).get(CONFIG_KEY_SEND)
    if send is not None:
        send([(RESUME, [answer])])


STORAGE_ERROR = "storage_error"
"""The ``finish_reason`` and ``error`` event ``kind`` of a run whose checkpointer or store
failed (:func:`is_storage_failure`)."""


def is_storage_failure(failure: BaseException) -> bool:
    """Whether a run's ``failure`` came from where its state is kept: a checkpoint saver, a
    LangGraph store or the follow-up queue (:class:`~reactgraph.InterruptQueue`, e.g. the
    Postgres one of :func:`open_persistence`) raised it (one of their methods is on its
    traceback, or on the traceback of an exception it was raised from: a database error, a
    value the serializer or the database refuses, a connection lost), rather than from the
    model. Such a run ends with ``finish_reason`` and ``error`` kind ``storage_error``, not
    ``model_error``.

    Args:
        failure: What the run's graph raised.

    Returns:
        ``True`` for a failure of a saver, a store or the follow-up queue.
    """
    from langgraph.store.base import BaseStore

    seen: set[int] = set()
    current: BaseException | None = failure
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frame = current.__traceback__
        while frame is not None:
            if isinstance(frame.tb_frame.f_locals.get("self"), (BaseCheckpointSaver, BaseStore, InterruptQueue)):
                return True
            frame = frame.tb_next
        current = current.__cause__ or current.__context__
    return False


async def commit_held(checkpointer: Any, config: Any) -> None:
    """After a run on ``config``'s thread ended (returned, paused or failed): commit what
    ``checkpointer`` still holds of it (``commit_held`` of the savers of
    :func:`open_persistence`, which hold the last checkpoint of a run started with
    :func:`run_durability`'s entries; any other checkpointer: nothing to do), so the thread
    reads whole in every process once the run has freed it.

    Raises:
        Exception: What committing raised (what it carried stays held).
    """
    commit = getattr(checkpointer, "commit_held", None)
    if commit is not None:
        await commit(config)


async def record_cut_model_calls(checkpointer: Any, config: Any, calls: int) -> None:
    """After a run on ``config``'s thread was cancelled (its client went away) while
    ``calls`` model calls were in flight, once its saves are settled: add them to the
    turn's ``usage`` (``model_calls``) in its last checkpoint, so the usage limits count
    them when the run is resumed (a disconnect/resume loop made 5 calls under
    ``model_calls=3``; SPEC R13.3). The provider was asked, whatever became of the answer.

    Written as an input write of the checkpoint (LangGraph's ``NULL_TASK_ID``, as a
    ``Command(update=...)`` is): the resumed run, and every read of the thread, applies it
    to the state. Input writes of a checkpoint are indexed from 0 in each batch and a
    write at a taken index is left out, so the batch repeats the ones already there
    (left out again) before the new one.

    Args:
        checkpointer: The run's checkpointer (nothing is done without one).
        config: The run's config (its ``thread_id``).
        calls: Model calls cut (nothing is done for 0).
    """
    if checkpointer is None or calls <= 0:
        return
    thread = {"configurable": {"thread_id": config["configurable"]["thread_id"], "checkpoint_ns": ""}}
    saved = await checkpointer.aget_tuple(thread)
    if saved is None:
        return
    taken = [(channel, value) for task_id, channel, value in saved.pending_writes or () if task_id == NULL_TASK_ID]
    await checkpointer.aput_writes(saved.config, [*taken, ("usage", {"model_calls": calls})], NULL_TASK_ID)
    await commit_held(checkpointer, saved.config)


def _thread_key(config: Any) -> tuple[str, str]:
    configurable = config["configurable"]
    return str(configurable["thread_id"]), str(configurable.get("checkpoint_ns") or "")


def _merged(held: list[_HeldWrites]) -> dict[bool, list[tuple[Any, ...]]]:
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


_CHECKPOINT_SQL = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type,"
    " checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_WRITES_SQL = (
    "INSERT OR {verb} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type,"
    " value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@functools.cache
def _sqlite_saver_class() -> type:
    """:class:`SqliteCheckpointSaver`'s class, made on first use (``langgraph-checkpoint-sqlite``
    is imported only when a SQLite checkpointer is opened)."""
    from langgraph.checkpoint.base import get_checkpoint_metadata
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class SqliteCheckpointSaver(_ShortVersions, _WriteFolding, AsyncSqliteSaver):
        """LangGraph's ``AsyncSqliteSaver`` (same tables, same rows, reads unchanged) whose
        writes are made on the event loop's thread when the database is free, a task's
        writes in the commit of the checkpoint that follows them (:class:`_WriteFolding`;).

        The saver it extends hands every statement, commit and cursor to the connection's
        own thread: three or four thread switches per write, each of which waits for a CPU
        on a busy machine, while the SQLite work of a commit (WAL, ``synchronous=NORMAL``)
        takes about 60 µs (bench/checkpoint_overhead.py, docs/checkpoints.md). Here the
        statements and their commit run at once, with SQLite's busy timeout at zero, under
        the saver's lock (no other call uses the connection meanwhile); when another process
        holds the database's write lock the commit goes to the connection's thread instead,
        in one trip, where it waits with the normal timeout, so the event loop never waits
        on another process. A checkpoint is committed before ``aput`` returns, unless it is
        held (:meth:`_WriteFolding._put`).
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._init_folding()
            self.wal_checkpointer: _WalCheckpointer | None = None  # open_persistence sets one

        async def _store(self, key: tuple[str, str], held: list[_HeldWrites], checkpoints: list[Any]) -> None:
            """Commit ``held`` and the ``checkpoints`` rows together."""
            statements = [(_WRITES_SQL.format(verb="REPLACE" if replace else "IGNORE"), [(*key, *row) for row in rows])
                          for replace, rows in _merged(held).items()]
            if checkpoints:
                statements.append((_CHECKPOINT_SQL, checkpoints))
            await self.setup()
            connection = self.conn
            raw = connection._conn  # the sqlite3 connection (opened with check_same_thread=False)

            def write() -> None:
                for sql, rows in statements:
                    raw.executemany(sql, rows)
                raw.commit()

            async with self.lock:
                if not _try_at_once(raw, write):
                    await connection._execute(write)
            if self.wal_checkpointer is not None:
                self.wal_checkpointer.committed()

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            """Store a checkpoint, as ``AsyncSqliteSaver.aput`` does, with what its thread
            holds, in one commit (or hold it: :meth:`_WriteFolding._put`)."""
            configurable = config["configurable"]
            try:
                type_, serialized = self.serde.dumps_typed(checkpoint)
                meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
            except Exception as exc:
                self._refuse(config, str(configurable.get("checkpoint_id") or ""), exc)
                raise
            row = (str(configurable["thread_id"]), configurable["checkpoint_ns"], checkpoint["id"],
                   configurable.get("checkpoint_id"), type_, serialized, meta)
            await self._put(config, checkpoint["id"], row)
            return {"configurable": {"thread_id": configurable["thread_id"], "checkpoint_ns": configurable["checkpoint_ns"],
                                     "checkpoint_id": checkpoint["id"]}}

    return SqliteCheckpointSaver


_PG_WRITES = """w{n} AS (
    INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, blob)
    SELECT %(thread_id)s, %(checkpoint_ns)s, row->>0, row->>1, row->>2, (row->>3)::int, row->>4, row->>5,
           decode(row->>6, 'base64')
    FROM jsonb_array_elements(%(w{n})s::jsonb) AS new_write(row)
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) {action}
)"""
_PG_REPLACE = "DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob"
_PG_CHECKPOINT = """b{n} AS (
    INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
    SELECT %(thread_id)s, %(checkpoint_ns)s, row->>0, row->>1, row->>2, decode(row->>3, 'base64')
    FROM jsonb_array_elements(%(blobs{n})s::jsonb) AS new_blob(row)
    ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING
),
c{n} AS (
    INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
    VALUES (%(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id{n})s, %(parent_id{n})s, %(checkpoint{n})s, %(metadata{n})s)
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)
    DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata
)"""


JSONB_DEPTH = 8
"""How deep :func:`jsonb_exact` looks into nested lists and dicts before it sends a value
to the blobs instead."""


def jsonb_exact(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` reads back from a Postgres ``jsonb`` column as an equal value of the
    same types: ``None``, a ``bool``, an ``int``, a finite ``float`` written without an
    exponent, a ``str`` without NUL, or a ``list`` / ``dict`` (``str`` keys without NUL) of
    those, at most :data:`JSONB_DEPTH` deep. Exact types only: a subclass (an enum, a
    ``str`` subclass) or a tuple would come back as something else.

    The Postgres saver keeps such channel values in the checkpoint's own ``channel_values``
    and everything else in ``checkpoint_blobs`` (serialized). LangGraph's keeps
    every ``str``, ``int``, ``float`` and ``bool`` inline and everything else in blobs: a
    string holding NUL (``\\u0000``, which ``jsonb`` refuses) or a NaN failed the whole
    store, and a small dict such as the turn's ``usage`` cost a row of its own at every
    model step.
    """
    kind = type(value)
    if value is None or kind is bool or kind is int:
        return True
    if kind is str:
        return "\x00" not in value
    if kind is float:  # jsonb keeps numbers as decimals: 1e+16 would read back as an int
        return math.isfinite(value) and "e" not in repr(value)
    if depth >= JSONB_DEPTH:
        return False
    if kind is list:
        return all(jsonb_exact(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(key) is str and "\x00" not in key and jsonb_exact(item, depth + 1)
                   for key, item in value.items())
    return False


def json_bytes(value: Any) -> bytes:
    """``value`` as UTF-8 JSON text for a Postgres parameter: orjson, several
    times faster than ``json.dumps`` for the checkpoint documents a run stores at every
    superstep; ``json.dumps`` for what orjson refuses (an int past 64 bits, a lone
    surrogate), so nothing ``json.dumps`` encodes fails. Non-string keys become strings
    as ``json.dumps`` makes them. Lone surrogates become ``?`` as in the serializer's
    blobs (:func:`reactgraph.core.bounds.store_safe`): ``jsonb`` refuses their escapes, and
    a write it refuses would fail every later store and read of the thread.

    Raises:
        TypeError, ValueError: Neither encoder can write ``value``.
    """
    if orjson is not None:
        try:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(store_safe(value)).encode("utf-8")


def _pg_rows(rows: list[tuple[Any, ...]]) -> str:
    """Rows for :data:`_PG_WRITES` / :data:`_PG_CHECKPOINT`: a JSON array of arrays, the
    last field (bytes) in base64."""
    return json_bytes([[*row[:-1], base64.b64encode(row[-1]).decode("ascii")] for row in rows]).decode("utf-8")


@functools.cache
def _pg_store_sql(replaces: tuple[bool, ...], checkpoints: int) -> str:
    """One statement storing writes, a part per ``replaces`` entry — whether the part's rows
    replace stored ones (special channels: errors, interrupts) or leave them — and
    ``checkpoints`` checkpoints with their new channel blobs (parameters suffixed ``0``,
    ``1``, …): the rows LangGraph's ``AsyncPostgresSaver`` writes with one statement per
    write and two per checkpoint.
    Rows come as one JSON text per part (:func:`_pg_rows`): the statement's text and its
    handful of parameters stay the same whatever the number of rows, so psycopg parses it
    once (it parses a statement of more than 50 parameters anew every time), and a string
    is dumped in C (psycopg dumps array parameters element by element in Python; both cost
    more than the JSON)."""
    parts = [_PG_WRITES.format(n=n, action=_PG_REPLACE if replace else "DO NOTHING") for n, replace in enumerate(replaces)]
    parts += [_PG_CHECKPOINT.format(n=n) for n in range(checkpoints)]
    return "WITH " + ",\n".join(parts) + "\nSELECT 1"


@functools.cache
def _postgres_saver_class() -> type:
    """:class:`PostgresCheckpointSaver`'s class, made on first use (the ``[postgres]`` extra
    is imported only when a Postgres checkpointer is opened)."""
    from langgraph.checkpoint.base import get_serializable_checkpoint_metadata
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.serde.types import _DeltaSnapshot
    from psycopg.types.json import Jsonb
    from psycopg_pool import AsyncConnectionPool

    class PostgresCheckpointSaver(_ShortVersions, _WriteFolding, AsyncPostgresSaver):
        """LangGraph's ``AsyncPostgresSaver`` (same tables, same rows, reads unchanged)
        with cheaper writes (bench/checkpoint_overhead.py):

        - a checkpoint, its blobs and the writes held for its thread are one statement
          (:class:`_WriteFolding`; ``unnest`` of arrays), atomic; LangGraph's saver sends
          one statement per write and two pipelined ones per checkpoint;
        - on a pool, a store borrows a connection of its own instead of taking the
          saver-wide lock, so concurrent runs write concurrently;
        - values are serialized on the event loop's thread: they are small (the messages
          are a ``DeltaChannel``, only new ones are written), and handing each to a worker
          thread cost more than serializing, waiting for a CPU on a busy machine.
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._init_folding()

        @asynccontextmanager
        async def _write_connection(self) -> AsyncIterator[Any]:
            if isinstance(self.conn, AsyncConnectionPool) and self.pipe is None:
                async with self.conn.connection() as conn:
                    yield conn
            else:  # one shared connection: the saver's lock takes turns on it
                async with self._cursor() as cur:
                    yield cur

        async def _store(self, key: tuple[str, str], held: list[_HeldWrites], checkpoints: list[Any]) -> None:
            """Store ``held`` and the ``checkpoints`` (each its parameters) in one statement."""
            params: dict[str, Any] = {"thread_id": key[0], "checkpoint_ns": key[1]}
            for n, checkpoint in enumerate(checkpoints):
                params.update({f"{name}{n}": value for name, value in checkpoint.items()})
            merged = _merged(held)
            for n, rows in enumerate(merged.values()):
                params[f"w{n}"] = _pg_rows(rows)
            async with self._write_connection() as conn:
                await conn.execute(_pg_store_sql(tuple(merged), len(checkpoints)), params, binary=True)

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            """Store a checkpoint, as ``AsyncPostgresSaver.aput`` does, with what its thread
            holds, in one statement (or hold it: :meth:`_WriteFolding._put`)."""
            configurable = config["configurable"]
            thread_id, checkpoint_ns = configurable["thread_id"], configurable["checkpoint_ns"]
            inline = dict(checkpoint)
            values = inline["channel_values"] = dict(checkpoint["channel_values"])
            blobs: dict[str, Any] = {}
            for key, value in checkpoint["channel_values"].items():
                if isinstance(value, _DeltaSnapshot):
                    blobs[key] = values.pop(key)
                    values[key] = True
                elif not jsonb_exact(value):
                    blobs[key] = values.pop(key)
            try:
                dumped = [(key, str(version), *self.serde.dumps_typed(blobs[key]))
                          for key, version in new_versions.items() if key in blobs]
                row = {"checkpoint_id": checkpoint["id"], "parent_id": configurable.get("checkpoint_id"),
                       "checkpoint": Jsonb(inline, json_bytes),
                       "metadata": Jsonb(get_serializable_checkpoint_metadata(config, metadata), json_bytes),
                       "blobs": _pg_rows(dumped)}
            except Exception as exc:
                self._refuse(config, str(configurable.get("checkpoint_id") or ""), exc)
                raise
            await self._put(config, checkpoint["id"], row)
            return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                     "checkpoint_id": checkpoint["id"]}}

    return PostgresCheckpointSaver

_BUSY_TIMEOUT_MS = 5000
"""SQLite's busy timeout of the checkpoint connection (Python's default): how long a write
made on the connection's thread waits for another process's write lock."""


def _try_at_once(raw: Any, write: Any) -> bool:
    """Run ``write`` on this thread unless the database's write lock is taken by another
    connection: True when it ran; False, with nothing written, when the lock was busy.

    Raises:
        sqlite3.Error: Any other failure of the write (rolled back).
    """
    import sqlite3

    raw.execute("PRAGMA busy_timeout = 0")
    try:
        write()
        return True
    except sqlite3.OperationalError as exc:
        raw.rollback()
        if "locked" in str(exc) or "busy" in str(exc):
            return False
        raise
    except BaseException:
        raw.rollback()
        raise
    finally:
        raw.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")


WAL_CHECKPOINT_COMMITS = 100
"""Commits of a SQLite saver between two copies of its write-ahead log into the database
file (:class:`_WalCheckpointer`); about SQLite's own 1000-page threshold at a few pages per
commit."""


class _WalCheckpointer:
    """Copies a SQLite database's write-ahead log into the database file on a worker thread,
    through a connection of its own (SQLite's ``wal_checkpoint(PASSIVE)``), every:
    data:`WAL_CHECKPOINT_COMMITS` commits of the saver.

    SQLite does that copy itself inside the commit that crosses its threshold, with an
    fsync of the log and of the database file: with the saver committing on the event
    loop's thread, one commit in a hundred held the loop for several milliseconds (up to
    tens on a busy disk), every run of the process waiting. The saver's connection runs
    with ``wal_autocheckpoint = 0`` instead and hands the copy to this class: a passive copy
    does not block commits (they go on appending to the log meanwhile), and a busy one
    (another process copying) is skipped until the next turn. What a commit promises is
    unchanged: it is in the log, which is what survives a crash.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._commits = 0
        self._copying: asyncio.Future[None] | None = None
        self._conn: Any = None

    def committed(self) -> None:
        """Count a commit of the saver; every :data:`WAL_CHECKPOINT_COMMITS`, start a copy
        on a worker thread unless one is still going. Called on the event loop's thread."""
        self._commits += 1
        if self._commits >= WAL_CHECKPOINT_COMMITS and (self._copying is None or self._copying.done()):
            self._commits = 0
            self._copying = asyncio.get_running_loop().run_in_executor(None, self._copy)

    def _copy(self) -> None:
        import sqlite3

        try:
            if self._conn is None:
                self._conn = sqlite3.connect(self._path, timeout=0, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:  # busy or locked: the next turn copies what is left
            logger.debug("copying the write-ahead log of %s: %s", self._path, exc)

    async def aclose(self) -> None:
        """Wait for a copy still going, then close the connection (the saver's own
        connection, closed last, copies what is left and removes the log)."""
        if self._copying is not None:
            await asyncio.gather(self._copying, return_exceptions=True)
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.get_running_loop().run_in_executor(None, conn.close)


@asynccontextmanager
async def open_persistence(
    url: str | os.PathLike[str] | None = None, *, pool_size: int = 10, durable_commits: bool | None = None
) -> AsyncIterator[Persistence]:
    """Open a checkpointer and its interrupt queue for the lifetime of the ``async with`` block.

    Pass both to ``ReActAgent(..., checkpointer=p.checkpointer,
    interrupt_queue=p.interrupt_queue)``.

    Args:
        url: As for :func:`checkpoint_target`. A SQLite file's parent directory is
            created; Postgres tables (LangGraph's and ``reactgraph_interrupts``) are created
            on first use.
        pool_size: Most pooled Postgres connections (checkpoint reads and writes,
            follow-ups); each running thread holds one more of its own. Unused otherwise.
        durable_commits: Whether a commit waits until the data is on disk (SPEC §10;
            docs/checkpoints.md). ``False`` (the default, unless
            ``$REACTGRAPH_DURABLE_COMMITS`` says otherwise): SQLite's WAL journal with
            ``synchronous=NORMAL`` and Postgres sessions with ``synchronous_commit=off`` —
            every commit has reached the operating system (SQLite) or the database server
            (Postgres) when it returns, so a killed agent process loses nothing it
            committed, but an operating-system crash or power loss can lose the last
            commits (never corrupting the database). ``True``: ``synchronous=FULL`` and
            ``synchronous_commit=on``, an fsync or WAL flush per commit (several times the
            cost of a loop iteration, bench/checkpoint_overhead.py).

    Yields:
        A :class:`Persistence`.

    Raises:
        ImportError: A Postgres URL without the ``[postgres]`` extra installed (the
            message names the extra).
        OSError: The SQLite file's directory cannot be created.
        psycopg.OperationalError: The Postgres database cannot be reached (or refuses the
            credentials); raised at once, with the server's reason.
    """
    target = checkpoint_target(url)
    durable = durable_commits_default() if durable_commits is None else durable_commits
    if target == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield Persistence(InMemorySaver(), InMemoryInterruptQueue(), target)
        return
    if is_postgres_url(target):
        try:
            import psycopg
            from psycopg.rows import dict_row
            from psycopg_pool import AsyncConnectionPool

            from reactgraph.persistence.postgres import PostgresInterruptQueue, psycopg_conninfo, schema_setup_lock
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                "a Postgres checkpoint URL needs the postgres extra: pip install 'reactgraph[postgres]'"
            ) from exc
        conninfo = psycopg_conninfo(target)
        # One plain connection first: an unreachable database fails here at once with the
        # server's reason, instead of the pool retrying in the background until its timeout.
        # It holds the schema lock while the tables are set up below.
        probe = await psycopg.AsyncConnection.connect(conninfo, connect_timeout=10, autocommit=True)

        async def configure(conn: Any) -> None:
            # The server acknowledges a commit before its WAL is flushed: a crash of this
            # process loses nothing (the server has the commit), a crash of the database
            # server's machine can lose the last commits (never consistency).
            await conn.execute("SET synchronous_commit TO off")

        pool = AsyncConnectionPool(
            conninfo,
            min_size=1,
            max_size=pool_size,
            open=False,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            configure=None if durable else configure,
        )
        try:
            await pool.open(wait=True, timeout=15)
            saver = _postgres_saver_class()(pool)
            async with schema_setup_lock(probe):  # processes starting at once set up one at a time
                await saver.setup()
            await probe.close()
            queue = PostgresInterruptQueue(pool, conninfo)
            try:
                await queue.setup()
                async with _storing_held_at_exit(saver):
                    yield Persistence(saver, queue, target)
            finally:
                await queue.aclose()
        finally:
            await probe.close()
            await pool.close()
        return
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    import aiosqlite

    async with aiosqlite.connect(target, check_same_thread=False, timeout=_BUSY_TIMEOUT_MS / 1000) as conn:
        saver = _sqlite_saver_class()(conn)
        # The saver's WAL journal with synchronous=NORMAL: a commit reaches the operating
        # system before it returns, so it survives the process dying (SIGKILL included),
        # without one fsync per checkpoint (6-7x the time of the whole loop iteration here,
        # bench/checkpoint_overhead.py). An OS crash or power loss can lose the last commits.
        await saver.conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        # The log is copied into the database file on a worker thread, not inside a commit
        # on the event loop's thread (_WalCheckpointer).
        await saver.conn.execute("PRAGMA wal_autocheckpoint = 0")
        saver.wal_checkpointer = _WalCheckpointer(target)
        try:
            async with _storing_held_at_exit(saver):
                yield Persistence(saver, InMemoryInterruptQueue(), target)
        finally:
            await saver.wal_checkpointer.aclose()


@asynccontextmanager
async def _storing_held_at_exit(saver: Any) -> AsyncIterator[None]:
    """Store the writes ``saver`` still holds when the block ends (:class:`_WriteFolding`);
    a failure is logged, not raised over the block's own outcome."""
    try:
        yield
    finally:
        try:
            await saver.aclose_held()
        except Exception:
            logger.exception("storing the last held checkpoint writes failed")


@asynccontextmanager
async def open_checkpointer(
    url: str | os.PathLike[str] | None = None, *, durable_commits: bool | None = None
) -> AsyncIterator[BaseCheckpointSaver]:
    """Open a checkpointer for the lifetime of the ``async with`` block (the checkpointer
    of :func:`open_persistence`, without its interrupt queue).

    Args:
        url: As for :func:`checkpoint_target`.
        durable_commits: As for :func:`open_persistence`.

    Yields:
        An ``AsyncSqliteSaver``, ``AsyncPostgresSaver`` or ``InMemorySaver``.

    Raises:
        ImportError, OSError, psycopg.OperationalError: As for :func:`open_persistence`.
    """
    async with open_persistence(url, durable_commits=durable_commits) as persistence:
        yield persistence.checkpointer
