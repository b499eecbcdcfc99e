"""Follow-ups and run bookkeeping shared through Postgres (SPEC R7.5; extra ``[postgres]``).

Several server processes on one Postgres database serve the same conversations: a run
started by one process must refuse a second run on its thread in another process, take
the follow-ups another process accepted for it, and let any process resume it after a
crash. :class:`PostgresInterruptQueue` does this with two pieces of the database that
holds the checkpoints:

- **Which thread has a run going**: a Postgres session-level advisory lock per thread,
  held for the whole run on the process's one lock connection (shared by all its running
  threads and kept open between runs until :meth:`PostgresInterruptQueue.aclose`; 
  a connection per run made 200 concurrent runs need 200 Postgres sessions, over the
  default ``max_connections``, and a new session per run cost a backend start each time). Taking it fails
  while another session holds it (:class:`~reactgraph.ThreadBusyError`); a second run
  on a thread in the same process is refused before asking Postgres (a session may take
  its own advisory lock twice). It needs no lease and no heartbeat: when the process
  holding it dies, even by ``SIGKILL``, the kernel closes its socket, Postgres ends the
  session and the locks are gone, so the threads can be resumed at once. (A host that
  vanishes without closing its socket holds them until Postgres notices the dead
  connection: TCP keepalive, ``tcp_keepalives_*`` settings.) If the lock connection
  breaks, the next ``open`` reconnects and takes the locks of the runs still going again.
- **The follow-ups**: the table ``reactgraph_interrupts`` (id, thread_id, content,
  created_at). ``put`` inserts a row only while the thread's lock is held by some session
  (it reads ``pg_locks``), ``take`` deletes the thread's rows and returns them oldest
  first. Delivery is at most once, as for every :class:`~reactgraph.InterruptQueue`.
  ``put`` also sends ``NOTIFY reactgraph_interrupts`` with the thread id; each process
  listens on one more connection, and ``take`` reads the table only when it has to: the
  first time in a run, and after a notice for the thread (a run asks at every
  model step, and almost always there is nothing). While the listening connection is
  down, every ``take`` reads the table.

A thread's lock key is two 32-bit integers from the BLAKE2b hash of its ``thread_id``
(the same in every process); two thread ids sharing all 64 bits would block each other.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from reactgraph.core.errors import NoActiveRunError, ThreadBusyError
from reactgraph.persistence.interrupts import FollowUpLimits, InterruptQueue, check_text

logger = logging.getLogger(__name__)

_SETUP = (
    "CREATE TABLE IF NOT EXISTS reactgraph_interrupts ("
    " id BIGSERIAL PRIMARY KEY,"
    " thread_id TEXT NOT NULL,"
    " content TEXT NOT NULL,"
    " created_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    "CREATE INDEX IF NOT EXISTS reactgraph_interrupts_thread ON reactgraph_interrupts (thread_id, id)",
)
_CHANNEL = "reactgraph_interrupts"
"""The ``LISTEN``/``NOTIFY`` channel of follow-ups; the payload is the thread id."""

_SETUP_LOCK = 0x52470001
"""Advisory transaction lock serializing ``setup`` between processes (concurrent
``CREATE TABLE IF NOT EXISTS`` can fail on the type catalog)."""

_SCHEMA_LOCK = 0x52470002
"""Session advisory lock :func:`schema_setup_lock` holds while LangGraph's checkpoint
tables are created or migrated (``serve --workers N`` on a fresh database ran N
setups at once: "duplicate key … pg_type_typname_nsp_index", "deadlock detected")."""

SCHEMA_LOCK_POLL_SECONDS = 0.05
"""How often :func:`schema_setup_lock` asks for the lock while another process sets up."""

_LOCK_HELD = (
    "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = %(high)s::int8::oid AND objid = %(low)s::int8::oid"
)


def psycopg_conninfo(url: str) -> str:
    """A ``postgres(ql)[+driver]://`` URL in the form psycopg accepts (the ``+driver``
    suffix of SQLAlchemy-style URLs dropped; anything else unchanged)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    return f"{scheme.split('+', 1)[0]}://{rest}"


def thread_lock_key(thread_id: str) -> tuple[int, int]:
    """The advisory lock key of a thread: two signed 32-bit integers (the first and last
    four bytes of the BLAKE2b-64 digest of the UTF-8 ``thread_id``)."""
    digest = hashlib.blake2b(thread_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest[:4], "big", signed=True), int.from_bytes(digest[4:], "big", signed=True)


def _lock_params(thread_id: str) -> dict[str, int]:
    high, low = thread_lock_key(thread_id)
    return {"high": high & 0xFFFFFFFF, "low": low & 0xFFFFFFFF}


@asynccontextmanager
async def schema_setup_lock(conn: Any) -> AsyncIterator[None]:
    """Hold :data:`_SCHEMA_LOCK` on ``conn`` (an autocommit connection of its own, not one
    the setup uses) for the block: the checkpoint tables' setup of every process that
    opens the database at the same time runs one after the other, and each one after the
    first finds its tables made (LangGraph's ``setup`` is idempotent, not concurrent-safe).

    Raises:
        psycopg.Error: The database refused the lock.
    """
    # Asked for without waiting in the server: a session waiting there is a transaction
    # the setup's CREATE INDEX CONCURRENTLY waits for in turn (a deadlock Postgres does not see).
    while not (await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (_SCHEMA_LOCK,))).fetchone())[0]:
        await asyncio.sleep(SCHEMA_LOCK_POLL_SECONDS)
    try:
        yield
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))


class PostgresInterruptQueue(InterruptQueue):
    """An :class:`~reactgraph.InterruptQueue` shared by every process using one Postgres
    database (see the module docstring for how).

    Args:
        pool: A ``psycopg_pool.AsyncConnectionPool`` in autocommit mode (the one the
            checkpointer uses, see :func:`reactgraph.persistence.checkpointing.open_persistence`);
            ``put``, ``take`` and ``is_running`` borrow a connection for one statement.
        conninfo: The database URL or conninfo string; the lock connection (one per
            queue, opened by the first run, closed by :meth:`aclose`) is opened with it.
        limits: How much may wait per thread (:class:`~reactgraph.FollowUpLimits`;
            defaults when ``None``), counted over every process.

    Call :meth:`setup` once before use (it creates the table if missing) and :meth:`aclose`
    when done (:func:`~reactgraph.open_persistence` does both). A process holds one lock
    connection for all its running threads and one listening connection (opened by the
    first run), besides the pool.
    """

    def __init__(self, pool: Any, conninfo: str, limits: FollowUpLimits | None = None) -> None:
        self.limits = limits or FollowUpLimits()
        self._pool = pool
        self._conninfo = psycopg_conninfo(conninfo)
        self._held: set[str] = set()  # open here, or being opened
        self._locked: set[str] = set()  # their locks the lock connection holds
        self._conn: Any = None
        self._guard = asyncio.Lock()
        self._listener: asyncio.Task[None] | None = None
        self._listening = False  # the listening connection hears every put from now on
        self._to_read: set[str] = set()  # threads whose next take reads the table

    async def setup(self) -> None:
        """Create ``reactgraph_interrupts`` and its index if they do not exist.

        Raises:
            psycopg.Error: The database refused (e.g. no ``CREATE`` privilege).
        """
        async with self._pool.connection() as conn:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
                for statement in _SETUP:
                    await conn.execute(statement)

    async def open(self, thread_id: str) -> None:
        """Take the thread's lock on the lock connection, held until :meth:`close`.

        Raises:
            ThreadBusyError: A run is going on ``thread_id`` in this or another process.
            psycopg.OperationalError: The database cannot be reached.
        """
        if thread_id in self._held:
            raise self._busy(thread_id)
        self._held.add(thread_id)  # before any await: a second open here is refused at once
        attempt = asyncio.ensure_future(self._lock(thread_id))
        try:
            taken = await asyncio.shield(attempt)  # a cancelled caller must not leave a lock behind
        except asyncio.CancelledError:
            attempt.add_done_callback(lambda done: self._undo(thread_id, done))
            raise
        except BaseException:
            self._held.discard(thread_id)
            raise
        if not taken:
            self._held.discard(thread_id)
            raise self._busy(thread_id)
        self._to_read.add(thread_id)  # follow-ups a previous run left
        if self._listener is None or self._listener.done():
            self._listener = asyncio.ensure_future(self._listen())

    async def close(self, thread_id: str) -> None:
        """Release the thread's lock (nothing when not open here). Queued follow-ups stay
        for the thread's next run."""
        import psycopg

        if thread_id not in self._held:
            return
        self._held.discard(thread_id)
        self._to_read.discard(thread_id)
        async with self._guard:
            conn = self._conn
            if thread_id in self._locked:
                self._locked.discard(thread_id)
                try:
                    await conn.execute("SELECT pg_advisory_unlock(%s::int4, %s::int4)", thread_lock_key(thread_id))
                except psycopg.Error as exc:  # the session is gone already, and its locks with it
                    logger.debug("thread %r: lock connection already broken: %s", thread_id, exc)
                    await conn.close()

    async def aclose(self) -> None:
        """Close the lock and listening connections; ending the session releases every
        lock it still holds (the runs of this queue that are still going lose their
        thread's lock)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
        async with self._guard:
            conn, self._conn = self._conn, None
            self._locked.clear()
            if conn is not None:
                await conn.close()

    async def _lock(self, thread_id: str) -> bool:
        """``pg_try_advisory_lock`` for ``thread_id`` on the lock connection, (re)connecting
        it first when needed: then the runs still going here whose locks went with the old
        connection take them again."""
        import psycopg

        async with self._guard:
            if self._conn is None or self._conn.closed or self._conn.broken:
                lost, self._locked = self._locked & self._held, set()
                self._conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
                for other in lost:
                    if await self._try_lock(other):
                        self._locked.add(other)
                    else:
                        logger.warning("thread %r: its lock went with a broken connection and is held elsewhere now",
                                       other)
            if not await self._try_lock(thread_id):
                return False
            self._locked.add(thread_id)
            return True

    async def _listen(self) -> None:
        """Hear ``NOTIFY`` of puts on a connection of its own; until it listens, and after
        it breaks (logged; the next run's ``open`` listens again), ``take`` reads the table
        every time."""
        import psycopg

        try:
            async with await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True) as conn:
                await conn.execute(f"LISTEN {_CHANNEL}")
                self._to_read |= self._held  # a put made before LISTEN sent no notice here
                self._listening = True
                async for notice in conn.notifies():
                    if notice.payload in self._held:
                        self._to_read.add(notice.payload)
        except psycopg.Error as exc:
            logger.warning("follow-up notices lost (%s); every take reads the table until the next run listens", exc)
        finally:
            self._listening = False

    async def _try_lock(self, thread_id: str) -> bool:
        cursor = await self._conn.execute("SELECT pg_try_advisory_lock(%s::int4, %s::int4)", thread_lock_key(thread_id))
        return bool(_first(await cursor.fetchone()))

    def _undo(self, thread_id: str, attempt: asyncio.Future[bool]) -> None:
        """After a cancelled :meth:`open`: forget the thread, and release its lock if the
        attempt took it after all."""
        if not attempt.cancelled() and attempt.exception() is None and attempt.result():
            asyncio.ensure_future(self.close(thread_id))
        else:
            self._held.discard(thread_id)

    @staticmethod
    def _busy(thread_id: str) -> ThreadBusyError:
        return ThreadBusyError(
            f"a run is already going on thread {thread_id!r} (in this or another process); wait for it "
            "to end, or send this message to it as a follow-up with inject()"
        )

    async def put(self, thread_id: str, text: str) -> None:
        """Queue one follow-up, if some process is running ``thread_id``.

        Raises:
            NoActiveRunError: No process holds the thread's lock.
            FollowUpLimitError: The thread's waiting follow-ups are at :attr:`limits`.
            TypeError, ValueError: ``text`` is not a string, or is blank.
            psycopg.Error: The database failed.
        """
        check_text(text)
        params: dict[str, Any] = {"thread_id": thread_id, "content": text, **_lock_params(thread_id)}
        async with self._pool.connection() as conn, conn.transaction():
            # Puts on one thread from any process take turns, so the limits hold across them.
            # (The one-bigint key space: the run's own two-int4 lock on the thread is apart.)
            high, low = thread_lock_key(thread_id)
            await conn.execute("SELECT pg_advisory_xact_lock(%s::int8)", ((high << 32) | (low & 0xFFFFFFFF),))
            cursor = await conn.execute(
                "SELECT count(*), coalesce(sum(length(content)), 0) FROM reactgraph_interrupts WHERE thread_id = %s",
                (thread_id,))
            row = await cursor.fetchone()
            values = list(row.values()) if isinstance(row, dict) else list(row or (0, 0))
            self.limits.check(thread_id, int(values[0]), int(values[1]), text)
            cursor = await conn.execute(
                "INSERT INTO reactgraph_interrupts (thread_id, content)"
                f" SELECT %(thread_id)s, %(content)s WHERE EXISTS ({_LOCK_HELD})",
                params,
            )
            inserted = cursor.rowcount
            if inserted == 1:  # heard by the running process's listener once this commits
                await conn.execute("SELECT pg_notify(%s, %s)", (_CHANNEL, thread_id))
        if inserted == 1 and thread_id in self._held:
            self._to_read.add(thread_id)  # the run is here: no need to wait for the notice
        if inserted != 1:
            raise NoActiveRunError(
                f"no run is going on thread {thread_id!r}, so there is nothing to send a "
                "follow-up to; start a run with this message as its query instead"
            )

    async def take(self, thread_id: str) -> list[str]:
        """Delete and return the thread's queued follow-ups, oldest first: for a thread
        running here, ``[]`` without asking the database when the listening connection
        heard no put for it since the last read (see the module docstring)."""
        if self._listening and thread_id in self._held and thread_id not in self._to_read:
            return []
        self._to_read.discard(thread_id)  # a notice arriving from now on asks for another read
        async with self._pool.connection() as conn:
            cursor = await conn.execute(
                "DELETE FROM reactgraph_interrupts WHERE thread_id = %s RETURNING id, content", (thread_id,)
            )
            rows = await cursor.fetchall()
        return [_content(row) for row in sorted(rows, key=_row_id)]

    async def is_running(self, thread_id: str) -> bool:
        """Whether any process holds the thread's lock (a run is going on it)."""
        async with self._pool.connection() as conn:
            cursor = await conn.execute(f"SELECT EXISTS ({_LOCK_HELD})", _lock_params(thread_id))
            row = await cursor.fetchone()
        return bool(_first(row))


def _first(row: Any) -> Any:
    """The first column of a tuple row or a dict row (the checkpointer's pool uses dict rows)."""
    if row is None:
        return None
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


def _row_id(row: Any) -> int:
    return int(row["id"] if isinstance(row, dict) else row[0])


def _content(row: Any) -> str:
    return str(row["content"] if isinstance(row, dict) else row[1])
