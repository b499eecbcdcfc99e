"""Opening a LangGraph checkpointer from a URL or path (SPEC §10).

The CLI and the server keep checkpoints in SQLite by default; a Postgres URL (in the
argument or in ``REACTGRAPH_DATABASE_URL``) selects the Postgres checkpointer (extra
``[postgres]``); ``"memory"`` keeps them in the process. Library users can pass any
LangGraph checkpointer to :class:`~reactgraph.ReActAgent` directly instead.
:func:`open_persistence` opens the checkpointer together with the interrupt queue that
goes with it: shared through the same database for Postgres, in memory otherwise.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StateSnapshot

from reactgraph._paths import data_home
from reactgraph.interrupts import InMemoryInterruptQueue, InterruptQueue

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
    from langgraph.checkpoint.base import WRITES_IDX_MAP, get_checkpoint_metadata
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class SqliteCheckpointSaver(AsyncSqliteSaver):
        """LangGraph's ``AsyncSqliteSaver`` (same tables, same rows, reads unchanged) whose
        two writes, a checkpoint and a task's writes, are made on the event loop's thread
        when the database is free (issue 20).

        The saver it extends hands every statement, commit and cursor to the connection's
        own thread: three or four thread switches per write, each of which waits for a CPU
        on a busy machine, while the SQLite work of a commit (WAL, ``synchronous=NORMAL``)
        takes about 60 µs (bench/checkpoint_overhead.py, docs/checkpoints.md). Here the
        statement and its commit run at once, with SQLite's busy timeout at zero, under the
        saver's lock (no other call uses the connection meanwhile); when another process
        holds the database's write lock the write goes to the connection's thread instead,
        in one trip, where it waits with the normal timeout, so the event loop never waits
        on another process. Each write is committed before the call returns, so what a
        killed process had saved is there on resume.
        """

        async def _commit_rows(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
            """Run ``sql`` for ``rows`` and commit (see the class docstring)."""
            await self.setup()
            connection = self.conn
            raw = connection._conn  # the sqlite3 connection (opened with check_same_thread=False)

            def write() -> None:
                raw.executemany(sql, rows)
                raw.commit()

            async with self.lock:
                if _try_at_once(raw, write):
                    return
                await connection._execute(write)

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            """Store a checkpoint, as ``AsyncSqliteSaver.aput`` does, in one trip."""
            configurable = config["configurable"]
            type_, serialized = self.serde.dumps_typed(checkpoint)
            meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
            row = (str(configurable["thread_id"]), configurable["checkpoint_ns"], checkpoint["id"],
                   configurable.get("checkpoint_id"), type_, serialized, meta)
            await self._commit_rows(_CHECKPOINT_SQL, [row])
            return {"configurable": {"thread_id": configurable["thread_id"], "checkpoint_ns": configurable["checkpoint_ns"],
                                     "checkpoint_id": checkpoint["id"]}}

        async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            """Store a task's writes, as ``AsyncSqliteSaver.aput_writes`` does, in one trip."""
            configurable = config["configurable"]
            verb = "REPLACE" if all(channel in WRITES_IDX_MAP for channel, _ in writes) else "IGNORE"
            rows = [
                (str(configurable["thread_id"]), str(configurable["checkpoint_ns"]), str(configurable["checkpoint_id"]),
                 task_id, task_path, WRITES_IDX_MAP.get(channel, index), channel, *self.serde.dumps_typed(value))
                for index, (channel, value) in enumerate(writes)
            ]
            await self._commit_rows(_WRITES_SQL.format(verb=verb), rows)

    return SqliteCheckpointSaver


_PG_CHECKPOINT_SQL = """
WITH blobs AS (
    INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
    SELECT %(thread_id)s, %(checkpoint_ns)s, channel, version, type, blob
    FROM unnest(%(channels)s::text[], %(versions)s::text[], %(types)s::text[], %(blobs)s::bytea[])
        AS new_blob(channel, version, type, blob)
    ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING
)
INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
VALUES (%(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(parent_id)s, %(checkpoint)s, %(metadata)s)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)
DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata
"""
"""A checkpoint and its new channel blobs in one statement (rows as LangGraph's
``AsyncPostgresSaver.aput`` writes them with two statements in a pipeline)."""

_PG_WRITES_SQL = """
INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, blob)
SELECT %(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(task_id)s, %(task_path)s, idx, channel, type, blob
FROM unnest(%(idx)s::int[], %(channels)s::text[], %(types)s::text[], %(blobs)s::bytea[]) AS new_write(idx, channel, type, blob)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) {action}
"""
"""A task's writes in one statement (LangGraph's saver sends one statement per write);
``{action}`` is ``DO NOTHING``, or an update for the special channels (errors, interrupts)."""


@functools.cache
def _postgres_saver_class() -> type:
    """:class:`PostgresCheckpointSaver`'s class, made on first use (the ``[postgres]`` extra
    is imported only when a Postgres checkpointer is opened)."""
    from langgraph.checkpoint.base import WRITES_IDX_MAP, get_serializable_checkpoint_metadata
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.serde.types import _DeltaSnapshot
    from psycopg.types.json import Jsonb
    from psycopg_pool import AsyncConnectionPool

    class PostgresCheckpointSaver(AsyncPostgresSaver):
        """LangGraph's ``AsyncPostgresSaver`` (same tables, same rows, reads unchanged)
        with cheaper writes (issue 20, bench/checkpoint_overhead.py):

        - a checkpoint and its blobs are one statement, a task's writes are one statement
          (``unnest`` of arrays), each atomic on its own; LangGraph's pipelined statements
          cost the client about twice the CPU;
        - on a pool, a write borrows a connection of its own instead of taking the
          saver-wide lock, so concurrent runs write concurrently;
        - values are serialized on the event loop's thread: they are small (the messages
          are a ``DeltaChannel``, only new ones are written), and handing each to a worker
          thread cost more than serializing, waiting for a CPU on a busy machine.
        """

        @asynccontextmanager
        async def _write_connection(self) -> AsyncIterator[Any]:
            if isinstance(self.conn, AsyncConnectionPool) and self.pipe is None:
                async with self.conn.connection() as conn:
                    yield conn
            else:  # one shared connection: the saver's lock takes turns on it
                async with self._cursor() as cur:
                    yield cur

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            """Store a checkpoint, as ``AsyncPostgresSaver.aput`` does, in one statement."""
            configurable = config["configurable"]
            thread_id, checkpoint_ns = configurable["thread_id"], configurable["checkpoint_ns"]
            inline = dict(checkpoint)
            values = inline["channel_values"] = dict(checkpoint["channel_values"])
            blobs: dict[str, Any] = {}
            for key, value in checkpoint["channel_values"].items():
                if isinstance(value, _DeltaSnapshot):
                    blobs[key] = values.pop(key)
                    values[key] = True
                elif value is not None and not isinstance(value, (str, int, float, bool)):
                    blobs[key] = values.pop(key)
            dumped = [(key, str(version), *self.serde.dumps_typed(blobs[key]))
                      for key, version in new_versions.items() if key in blobs]
            params = {
                "thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint["id"],
                "parent_id": configurable.get("checkpoint_id"), "checkpoint": Jsonb(inline),
                "metadata": Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
                "channels": [row[0] for row in dumped], "versions": [row[1] for row in dumped],
                "types": [row[2] for row in dumped], "blobs": [row[3] for row in dumped],
            }
            async with self._write_connection() as conn:
                await conn.execute(_PG_CHECKPOINT_SQL, params, binary=True)
            return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                     "checkpoint_id": checkpoint["id"]}}

        async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            """Store a task's writes, as ``AsyncPostgresSaver.aput_writes`` does, in one statement."""
            if not writes:
                return
            special = all(channel in WRITES_IDX_MAP for channel, _ in writes)
            action = ("DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob"
                      if special else "DO NOTHING")
            configurable = config["configurable"]
            dumped = [(WRITES_IDX_MAP.get(channel, index), channel, *self.serde.dumps_typed(value))
                      for index, (channel, value) in enumerate(writes)]
            params = {
                "thread_id": configurable["thread_id"], "checkpoint_ns": configurable["checkpoint_ns"],
                "checkpoint_id": configurable["checkpoint_id"], "task_id": task_id, "task_path": task_path,
                "idx": [row[0] for row in dumped], "channels": [row[1] for row in dumped],
                "types": [row[2] for row in dumped], "blobs": [row[3] for row in dumped],
            }
            async with self._write_connection() as conn:
                await conn.execute(_PG_WRITES_SQL.format(action=action), params, binary=True)

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
            issue 20, docs/checkpoints.md). ``False`` (the default, unless
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
        await pool.open(wait=True, timeout=15)
        try:
            saver = _postgres_saver_class()(pool)
            await saver.setup()
            queue = PostgresInterruptQueue(pool, conninfo)
            try:
                await queue.setup()
                yield Persistence(saver, queue, target)
            finally:
                await queue.aclose()
        finally:
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
        yield Persistence(saver, InMemoryInterruptQueue(), target)


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
