"""Opening a LangGraph checkpointer from a URL or path (SPEC §10).

The CLI and the server keep checkpoints in SQLite by default; a Postgres URL (in the
argument or in ``REACTGRAPH_DATABASE_URL``) selects the Postgres checkpointer (extra
``[postgres]``); ``"memory"`` keeps them in the process. Library users can pass any
LangGraph checkpointer to :class:`~reactgraph.ReActAgent` directly instead.
:func:`open_persistence` opens the checkpointer together with the interrupt queue that
goes with it: shared through the same database for Postgres, in memory otherwise.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from reactgraph.core.paths import data_home
from reactgraph.persistence.interrupts import InMemoryInterruptQueue, InterruptQueue
from reactgraph.persistence.savers import BUSY_TIMEOUT_MS, WalCheckpointer, postgres_saver_class, sqlite_saver_class

# The names the durability protocol, write folding, failure classification and the savers
# had here before they got modules of their own: this import path keeps them.
from reactgraph.persistence.durability import (  # noqa: F401
    commit_held,
    has_pending_work,
    keep_answered_interrupt,
    record_answered_interrupt,
    record_cut_model_calls,
    run_durability,
    settle_saves,
    wait_for_task_checkpoint,
)
from reactgraph.persistence.failures import STORAGE_ERROR, is_storage_failure  # noqa: F401
from reactgraph.persistence.folding import TASKS_WAIT_FOR_CHECKPOINT, WRITE_HOLD_SECONDS  # noqa: F401
from reactgraph.persistence.savers import json_bytes, jsonb_exact  # noqa: F401

logger = logging.getLogger(__name__)

DATABASE_URL_ENV = "REACTGRAPH_DATABASE_URL"

DURABLE_COMMITS_ENV = "REACTGRAPH_DURABLE_COMMITS"
"""Set to ``1`` (or ``true``, ``yes``, ``on``) to make :func:`open_persistence` wait for each
checkpoint commit to reach the disk (``durable_commits=True``) when the caller does not say."""


def durable_commits_default() -> bool:
    """``durable_commits`` when the caller gives none: true when :data:`DURABLE_COMMITS_ENV`
    says so, else false."""
    return os.environ.get(DURABLE_COMMITS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


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
            saver = postgres_saver_class()(pool)
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

    async with aiosqlite.connect(target, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000) as conn:
        saver = sqlite_saver_class()(conn)
        # The saver's WAL journal with synchronous=NORMAL: a commit reaches the operating
        # system before it returns, so it survives the process dying (SIGKILL included),
        # without one fsync per checkpoint (6-7x the time of the whole loop iteration here,
        # bench/checkpoint_overhead.py). An OS crash or power loss can lose the last commits.
        await saver.conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        # The log is copied into the database file on a worker thread, not inside a commit
        # on the event loop's thread (WalCheckpointer).
        await saver.conn.execute("PRAGMA wal_autocheckpoint = 0")
        saver.wal_checkpointer = WalCheckpointer(target)
        try:
            async with _storing_held_at_exit(saver):
                yield Persistence(saver, InMemoryInterruptQueue(), target)
        finally:
            await saver.wal_checkpointer.aclose()


@asynccontextmanager
async def _storing_held_at_exit(saver: Any) -> AsyncIterator[None]:
    """Store the writes ``saver`` still holds when the block ends (:class:`WriteFolding`);
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
