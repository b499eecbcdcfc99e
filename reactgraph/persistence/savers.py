"""The SQL savers: a SQLite saver and a Postgres saver that store each checkpoint with the
writes folded into it in one transaction (:class:`~reactgraph.persistence.folding.WriteFolding`),
the JSON the Postgres one stores (:func:`json_bytes`, :func:`jsonb_exact`), and SQLite's WAL
kept short (:class:`WalCheckpointer`)."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from reactgraph.core.bounds import store_safe
from reactgraph.persistence.folding import HeldWrites, ShortVersions, WriteFolding, merged_writes

try:  # the [postgres] extra brings it (langgraph-checkpoint-postgres needs it too)
    import orjson
except ImportError:  # json_bytes falls back to json.dumps
    orjson = None

logger = logging.getLogger(__name__)


_CHECKPOINT_SQL = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type,"
    " checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_WRITES_SQL = (
    "INSERT OR {verb} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type,"
    " value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@functools.cache
def sqlite_saver_class() -> type:
    """:class:`SqliteCheckpointSaver`'s class, made on first use (``langgraph-checkpoint-sqlite``
    is imported only when a SQLite checkpointer is opened)."""
    from langgraph.checkpoint.base import get_checkpoint_metadata
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class SqliteCheckpointSaver(ShortVersions, WriteFolding, AsyncSqliteSaver):
        """LangGraph's ``AsyncSqliteSaver`` (same tables, same rows, reads unchanged) whose
        writes are made on the event loop's thread when the database is free, a task's
        writes in the commit of the checkpoint that follows them (:class:`WriteFolding`;).

        The saver it extends hands every statement, commit and cursor to the connection's
        own thread: three or four thread switches per write, each of which waits for a CPU
        on a busy machine, while the SQLite work of a commit (WAL, ``synchronous=NORMAL``)
        takes about 60 µs (bench/checkpoint_overhead.py, docs/checkpoints.md). Here the
        statements and their commit run at once, with SQLite's busy timeout at zero, under
        the saver's lock (no other call uses the connection meanwhile); when another process
        holds the database's write lock the commit goes to the connection's thread instead,
        in one trip, where it waits with the normal timeout, so the event loop never waits
        on another process. A checkpoint is committed before ``aput`` returns, unless it is
        held (:meth:`WriteFolding._put`).
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._init_folding()
            self.wal_checkpointer: WalCheckpointer | None = None  # open_persistence sets one

        async def _store(self, key: tuple[str, str], held: list[HeldWrites], checkpoints: list[Any]) -> None:
            """Commit ``held`` and the ``checkpoints`` rows together."""
            statements = [(_WRITES_SQL.format(verb="REPLACE" if replace else "IGNORE"), [(*key, *row) for row in rows])
                          for replace, rows in merged_writes(held).items()]
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
                if not try_at_once(raw, write):
                    await connection._execute(write)
            if self.wal_checkpointer is not None:
                self.wal_checkpointer.committed()

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            """Store a checkpoint, as ``AsyncSqliteSaver.aput`` does, with what its thread
            holds, in one commit (or hold it: :meth:`WriteFolding._put`)."""
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
def postgres_saver_class() -> type:
    """:class:`PostgresCheckpointSaver`'s class, made on first use (the ``[postgres]`` extra
    is imported only when a Postgres checkpointer is opened)."""
    from langgraph.checkpoint.base import get_serializable_checkpoint_metadata
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.serde.types import _DeltaSnapshot
    from psycopg.types.json import Jsonb
    from psycopg_pool import AsyncConnectionPool

    class PostgresCheckpointSaver(ShortVersions, WriteFolding, AsyncPostgresSaver):
        """LangGraph's ``AsyncPostgresSaver`` (same tables, same rows, reads unchanged)
        with cheaper writes (bench/checkpoint_overhead.py):

        - a checkpoint, its blobs and the writes held for its thread are one statement
          (:class:`WriteFolding`; ``unnest`` of arrays), atomic; LangGraph's saver sends
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

        async def _store(self, key: tuple[str, str], held: list[HeldWrites], checkpoints: list[Any]) -> None:
            """Store ``held`` and the ``checkpoints`` (each its parameters) in one statement."""
            params: dict[str, Any] = {"thread_id": key[0], "checkpoint_ns": key[1]}
            for n, checkpoint in enumerate(checkpoints):
                params.update({f"{name}{n}": value for name, value in checkpoint.items()})
            merged = merged_writes(held)
            for n, rows in enumerate(merged.values()):
                params[f"w{n}"] = _pg_rows(rows)
            async with self._write_connection() as conn:
                await conn.execute(_pg_store_sql(tuple(merged), len(checkpoints)), params, binary=True)

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            """Store a checkpoint, as ``AsyncPostgresSaver.aput`` does, with what its thread
            holds, in one statement (or hold it: :meth:`WriteFolding._put`)."""
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

BUSY_TIMEOUT_MS = 5000
"""SQLite's busy timeout of the checkpoint connection (Python's default): how long a write
made on the connection's thread waits for another process's write lock."""


def try_at_once(raw: Any, write: Any) -> bool:
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
        raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


WAL_CHECKPOINT_COMMITS = 100
"""Commits of a SQLite saver between two copies of its write-ahead log into the database
file (:class:`WalCheckpointer`); about SQLite's own 1000-page threshold at a few pages per
commit."""


class WalCheckpointer:
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
