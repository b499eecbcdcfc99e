"""Opening a LangGraph checkpointer from a URL or path (SPEC §10).

The CLI and the server keep checkpoints in SQLite by default; a Postgres URL (in the
argument or in ``REACTGRAPH_DATABASE_URL``) selects the Postgres checkpointer (extra
``[postgres]``); ``"memory"`` keeps them in the process. Library users can pass any
LangGraph checkpointer to :class:`~reactgraph.ReActAgent` directly instead.
:func:`open_persistence` opens the checkpointer together with the interrupt queue that
goes with it: shared through the same database for Postgres, in memory otherwise.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StateSnapshot

from reactgraph._paths import data_home
from reactgraph.interrupts import InMemoryInterruptQueue, InterruptQueue

DATABASE_URL_ENV = "REACTGRAPH_DATABASE_URL"


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
    :func:`reactgraph._paths.data_home`."""
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
            :class:`~reactgraph.postgres.PostgresInterruptQueue` on the same database for
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
    url: str | os.PathLike[str] | None = None, *, pool_size: int = 10
) -> AsyncIterator[Persistence]:
    """Open a checkpointer and its interrupt queue for the lifetime of the ``async with`` block.

    Pass both to ``ReActAgent(..., checkpointer=p.checkpointer,
    interrupt_queue=p.interrupt_queue)``.

    Args:
        url: As for :func:`checkpoint_target`. A SQLite file's parent directory is
            created, and its connection uses ``synchronous=NORMAL`` (with LangGraph's WAL
            journal: durable when the process dies, not when the machine does); Postgres
            tables (LangGraph's and ``reactgraph_interrupts``) are created on first use.
        pool_size: Most pooled Postgres connections (checkpoint reads and writes,
            follow-ups); each running thread holds one more of its own. Unused otherwise.

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
    if target == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield Persistence(InMemorySaver(), InMemoryInterruptQueue(), target)
        return
    if is_postgres_url(target):
        try:
            import psycopg
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            from psycopg.rows import dict_row
            from psycopg_pool import AsyncConnectionPool

            from reactgraph.postgres import PostgresInterruptQueue, psycopg_conninfo
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                "a Postgres checkpoint URL needs the postgres extra: pip install 'reactgraph[postgres]'"
            ) from exc
        conninfo = psycopg_conninfo(target)
        # One plain connection first: an unreachable database fails here at once with the
        # server's reason, instead of the pool retrying in the background until its timeout.
        probe = await psycopg.AsyncConnection.connect(conninfo, connect_timeout=10)
        await probe.close()
        pool = AsyncConnectionPool(
            conninfo,
            min_size=1,
            max_size=pool_size,
            open=False,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        await pool.open(wait=True, timeout=15)
        try:
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
            queue = PostgresInterruptQueue(pool, conninfo)
            await queue.setup()
            yield Persistence(saver, queue, target)
        finally:
            await pool.close()
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    Path(target).parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(target) as saver:
        # The saver's WAL journal with synchronous=NORMAL: a commit reaches the operating
        # system before it returns, so it survives the process dying (SIGKILL included),
        # without one fsync per checkpoint (6-7x the time of the whole loop iteration here,
        # bench/checkpoint_overhead.py). An OS crash or power loss can lose the last commits.
        await saver.conn.execute("PRAGMA synchronous=NORMAL")
        yield Persistence(saver, InMemoryInterruptQueue(), target)


@asynccontextmanager
async def open_checkpointer(url: str | os.PathLike[str] | None = None) -> AsyncIterator[BaseCheckpointSaver]:
    """Open a checkpointer for the lifetime of the ``async with`` block (the checkpointer
    of :func:`open_persistence`, without its interrupt queue).

    Args:
        url: As for :func:`checkpoint_target`.

    Yields:
        An ``AsyncSqliteSaver``, ``AsyncPostgresSaver`` or ``InMemorySaver``.

    Raises:
        ImportError, OSError, psycopg.OperationalError: As for :func:`open_persistence`.
    """
    async with open_persistence(url) as persistence:
        yield persistence.checkpointer
