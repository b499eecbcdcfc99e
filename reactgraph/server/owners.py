"""Who owns each thread of a server: principals and thread owners.

A server with several credentials (:attr:`~reactgraph.server.ServerSettings.api_keys`, or a
``principal_of`` hook given to :func:`~reactgraph.server.create_app`) knows which principal
sends each request. The first run on a thread records the caller as the thread's owner, in
the same store as the thread's checkpoints (:func:`thread_owners`): a table
``reactgraph_threads`` in the SQLite file or the Postgres database, so every process of
``serve --workers`` reads the same owners, or a dictionary for in-memory checkpoints (one
process only, as the checkpoints themselves). Every other principal is answered as if the
thread did not exist.

A server with one key (or none) has one principal, :data:`DEFAULT_PRINCIPAL`: it owns
every thread, so such a server behaves as it did before owners existed.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_PRINCIPAL = "default"
"""The principal of the single API key (and of every request to a server without a key)."""

API_KEYS_ENV = "REACTGRAPH_API_KEYS"
"""Environment variable naming several keys, each a principal: a ``key=principal`` list
(comma-separated) or the path of a file of ``key=principal`` lines (:func:`parse_api_keys`)."""

PRINCIPAL_PATTERN = re.compile(r"[A-Za-z0-9._@:+-]{1,128}")
"""A principal's name: 1–128 letters, digits, ``.``, ``_``, ``@``, ``:``, ``+`` or ``-``
(it is stored with each thread it owns and written in log lines)."""

OWNERS_TABLE = "reactgraph_threads"
"""The table of thread owners in a SQLite or Postgres store."""

_SETUP_SQL = (f"CREATE TABLE IF NOT EXISTS {OWNERS_TABLE} (thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
              "created_at DOUBLE PRECISION NOT NULL, question TEXT NOT NULL)")
_SETUP_LOCK = 0x52474F574E  # "RGOWN": the advisory lock Postgres processes make the table under
_INDEX_SQL = f"CREATE INDEX IF NOT EXISTS {OWNERS_TABLE}_owner ON {OWNERS_TABLE} (owner, created_at)"


def checked_principal(name: Any) -> str:
    """``name`` when it is a principal's name (:data:`PRINCIPAL_PATTERN`).

    Raises:
        ValueError: It is not a string of that shape.
    """
    if not isinstance(name, str) or not PRINCIPAL_PATTERN.fullmatch(name):
        raise ValueError(f"a principal is 1-128 letters, digits or . _ @ : + -, got {name!r}")
    return name


def parse_api_keys(text: str) -> dict[str, str]:
    """The ``{key: principal}`` of a keys list: ``key=principal`` entries separated by
    commas or new lines; a line starting with ``#`` and blank entries are skipped. When
    ``text`` names an existing file (no ``=`` in it), the file's text is read instead.

    Raises:
        ValueError: An entry without ``=``, an empty or space-holding key, an invalid
            principal (:func:`checked_principal`), or one key given twice.
        OSError: The file cannot be read.
    """
    source = text.strip()
    if source and "=" not in source and Path(source).is_file():
        source = Path(source).read_text(encoding="utf-8")
    keys: dict[str, str] = {}
    for line in source.splitlines():
        if line.strip().startswith("#"):
            continue
        for entry in line.split(","):
            if not entry.strip():
                continue
            key, sep, principal = entry.strip().rpartition("=")
            if not sep or not key or any(char.isspace() for char in key):
                raise ValueError(f"an API key entry is 'key=principal' with a key of no spaces, got {entry.strip()!r}")
            if key in keys:
                raise ValueError("an API key is given twice")
            keys[key] = checked_principal(principal)
    return keys


def env_api_keys() -> dict[str, str]:
    """:func:`parse_api_keys` of ``$REACTGRAPH_API_KEYS`` (``{}`` when unset)."""
    return parse_api_keys(os.environ.get(API_KEYS_ENV, ""))


@dataclass(frozen=True)
class ThreadRecord:
    """One thread as its owner record holds it."""

    thread_id: str
    owner: str
    created_at: float
    question: str


class ThreadOwners(ABC):
    """The owner record of each thread (see the module docstring)."""

    @abstractmethod
    async def claim(self, thread_id: str, principal: str, question: str) -> str:
        """Record ``principal`` as the thread's owner unless it has one, atomically (two
        principals starting the same new thread at once: one wins). Returns the owner."""

    @abstractmethod
    async def owner(self, thread_id: str) -> str | None:
        """The thread's owner, ``None`` when it has none recorded."""

    @abstractmethod
    async def threads(self, principal: str, limit: int, offset: int) -> list[ThreadRecord]:
        """The principal's threads, newest first, ``limit`` of them after the first ``offset``."""

    @abstractmethod
    async def forget(self, thread_id: str) -> None:
        """Drop the thread's owner record (nothing when it has none)."""


class MemoryOwners(ThreadOwners):
    """Owners in this process (for in-memory checkpoints, or an agent without any)."""

    def __init__(self) -> None:
        self._records: dict[str, ThreadRecord] = {}

    async def claim(self, thread_id: str, principal: str, question: str) -> str:
        record = self._records.setdefault(thread_id, ThreadRecord(thread_id, principal, time.time(), question))
        return record.owner

    async def owner(self, thread_id: str) -> str | None:
        record = self._records.get(thread_id)
        return None if record is None else record.owner

    async def threads(self, principal: str, limit: int, offset: int) -> list[ThreadRecord]:
        mine = [record for record in reversed(self._records.values()) if record.owner == principal]
        return mine[offset:offset + limit]

    async def forget(self, thread_id: str) -> None:
        self._records.pop(thread_id, None)


def _row(row: Any) -> ThreadRecord:
    values = list(row.values()) if isinstance(row, Mapping) else list(row)
    return ThreadRecord(str(values[0]), str(values[1]), float(values[2]), str(values[3]))


class _SqlOwners(ThreadOwners):
    """Owners in a table of the checkpoints' database; the table is made on first use."""

    placeholder = "?"

    def __init__(self) -> None:
        self._ready = False
        self._setup_lock = asyncio.Lock()

    @abstractmethod
    async def _run(self, sql: str, params: tuple[Any, ...] = (), *, rows: bool = False, setup: bool = False) -> list[Any]:
        """Run one statement (committed), returning its rows when ``rows``."""

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self.placeholder)

    async def _setup(self) -> None:
        if self._ready:
            return
        async with self._setup_lock:
            if not self._ready:
                await self._run(_SETUP_SQL, setup=True)
                await self._run(_INDEX_SQL, setup=True)
                self._ready = True

    async def claim(self, thread_id: str, principal: str, question: str) -> str:
        await self._setup()
        await self._run(self._sql(f"INSERT INTO {OWNERS_TABLE} (thread_id, owner, created_at, question) "
                                  "VALUES (?, ?, ?, ?) ON CONFLICT (thread_id) DO NOTHING"),
                        (thread_id, principal, time.time(), question))
        return await self.owner(thread_id) or principal

    async def owner(self, thread_id: str) -> str | None:
        await self._setup()
        found = await self._run(self._sql(f"SELECT owner FROM {OWNERS_TABLE} WHERE thread_id = ?"), (thread_id,),
                                rows=True)
        if not found:
            return None
        row = found[0]
        return str(next(iter(row.values())) if isinstance(row, Mapping) else row[0])

    async def threads(self, principal: str, limit: int, offset: int) -> list[ThreadRecord]:
        await self._setup()
        found = await self._run(self._sql(
            f"SELECT thread_id, owner, created_at, question FROM {OWNERS_TABLE} WHERE owner = ? "
            "ORDER BY created_at DESC, thread_id DESC LIMIT ? OFFSET ?"), (principal, limit, offset), rows=True)
        return [_row(row) for row in found]

    async def forget(self, thread_id: str) -> None:
        await self._setup()
        await self._run(self._sql(f"DELETE FROM {OWNERS_TABLE} WHERE thread_id = ?"), (thread_id,))


class SqliteOwners(_SqlOwners):
    """Owners in the SQLite file of an ``AsyncSqliteSaver``, on its connection under its lock."""

    def __init__(self, saver: Any) -> None:
        super().__init__()
        self._saver = saver

    async def _run(self, sql: str, params: tuple[Any, ...] = (), *, rows: bool = False, setup: bool = False) -> list[Any]:
        async with self._saver.lock:
            cursor = await self._saver.conn.execute(sql, params)
            found = list(await cursor.fetchall()) if rows else []
            await cursor.close()
            await self._saver.conn.commit()
        return found


class PostgresOwners(_SqlOwners):
    """Owners in the Postgres database of an ``AsyncPostgresSaver`` on its pool (autocommit)."""

    placeholder = "%s"

    def __init__(self, saver: Any) -> None:
        super().__init__()
        self._saver = saver

    async def _run(self, sql: str, params: tuple[Any, ...] = (), *, rows: bool = False, setup: bool = False) -> list[Any]:
        target = self._saver.conn  # a pool (open_persistence's) or one autocommit connection
        if hasattr(target, "connection"):
            async with target.connection() as conn:
                return await self._on(conn, sql, params, rows=rows, setup=setup)
        return await self._on(target, sql, params, rows=rows, setup=setup)

    @staticmethod
    async def _on(conn: Any, sql: str, params: tuple[Any, ...], *, rows: bool, setup: bool) -> list[Any]:
        if setup:  # processes starting at once make the table one after the other
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
                await conn.execute(sql, params)
            return []
        cursor = await conn.execute(sql, params)
        return list(await cursor.fetchall()) if rows else []


def thread_owners(checkpointer: Any) -> ThreadOwners:
    """The owner records kept with ``checkpointer``'s threads: in its SQLite file or
    Postgres database, else (in-memory checkpoints, none, or another saver) in this process."""
    try:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    except ImportError:  # the sqlite extra is not installed
        AsyncSqliteSaver = None  # type: ignore[assignment,misc]  # noqa: N806
    if AsyncSqliteSaver is not None and isinstance(checkpointer, AsyncSqliteSaver):
        return SqliteOwners(checkpointer)
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:  # the postgres extra is not installed
        AsyncPostgresSaver = None  # type: ignore[assignment,misc]  # noqa: N806
    if AsyncPostgresSaver is not None and isinstance(checkpointer, AsyncPostgresSaver):
        return PostgresOwners(checkpointer)
    return MemoryOwners()
