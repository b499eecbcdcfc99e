"""Runs shared between processes through Postgres (point 4, SPEC R7.5): run
bookkeeping and follow-ups in ``PostgresInterruptQueue``, and an inject from one process
reaching a run going in another.

Two ``open_persistence`` calls stand for two processes (each has its own connection
pool); the last test uses a real second process (``tests/crash_run.py``). Needs
``$REACTGRAPH_TEST_DATABASE_URL``; every test uses thread ids of its own.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid

import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from reactgraph import ModelAbilities, NoActiveRunError, ReActAgent, ThreadBusyError, open_persistence
from reactgraph.persistence.checkpointing import DATABASE_URL_ENV
from reactgraph.persistence.postgres import PostgresInterruptQueue, psycopg_conninfo, thread_lock_key
from reactgraph.testing import ScriptedChatModel
from tests import crash_run
from tests.processes import REPO, helper, wait_for_saved_result

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_sqlalchemy_style_urls_are_given_to_psycopg_without_the_driver():
    assert psycopg_conninfo("postgresql+psycopg://u:p@127.0.0.1:5432/db") == "postgresql://u:p@127.0.0.1:5432/db"
    assert psycopg_conninfo("postgres://u@h/db") == "postgres://u@h/db"
    assert thread_lock_key("plant-1") == thread_lock_key("plant-1") != thread_lock_key("plant-2")


async def test_database_url_from_the_environment_selects_postgres(postgres_url, monkeypatch):
    monkeypatch.setenv(DATABASE_URL_ENV, postgres_url)
    async with open_persistence() as persistence:
        assert persistence.shared and persistence.target == postgres_url
        assert isinstance(persistence.checkpointer, AsyncPostgresSaver)
        assert isinstance(persistence.interrupt_queue, PostgresInterruptQueue)


async def test_one_run_per_thread_and_follow_ups_across_processes(postgres_url):
    thread = f"pg-{uuid.uuid4().hex}"
    async with open_persistence(postgres_url) as one, open_persistence(postgres_url) as two:
        a, b = one.interrupt_queue, two.interrupt_queue
        assert not await b.is_running(thread)
        with pytest.raises(NoActiveRunError):
            await b.put(thread, "nobody is running this")
        await a.open(thread)
        assert await b.is_running(thread)
        with pytest.raises(ThreadBusyError):
            await b.open(thread)
        with pytest.raises(ThreadBusyError):
            await a.open(thread)  # the same process is refused as well
        await b.put(thread, "first")
        await b.put(thread, "second")
        assert await a.take(thread) == ["first", "second"]
        assert await a.take(thread) == []
        await b.put(thread, "arrived after the last drain")
        with pytest.raises(ValueError):
            await b.put(thread, "   ")
        await a.close(thread)
        assert not await b.is_running(thread)
        with pytest.raises(NoActiveRunError):
            await b.put(thread, "too late")
        async with b.running(thread):  # the other process may run the thread now
            assert await a.is_running(thread)
            assert await b.take(thread) == ["arrived after the last drain"]  # kept for the next run
        assert not await a.is_running(thread)


async def test_one_process_runs_more_threads_than_postgres_has_connections(postgres_url):
    """the locks of a process's running threads share one connection, so 150 runs at
    once (over the 100 sessions of a default Postgres) take their locks, and free them."""
    threads = [f"pg-many-{i}-{uuid.uuid4().hex}" for i in range(150)]
    async with open_persistence(postgres_url) as one, open_persistence(postgres_url) as two:
        a, b = one.interrupt_queue, two.interrupt_queue
        await asyncio.gather(*(a.open(thread) for thread in threads))
        assert all(await asyncio.gather(*(b.is_running(thread) for thread in threads)))
        busy = await asyncio.gather(*(b.open(thread) for thread in threads[:10]), return_exceptions=True)
        assert all(isinstance(error, ThreadBusyError) for error in busy)
        await asyncio.gather(*(a.close(thread) for thread in threads[1:]))  # threads[0] keeps the connection open
        assert not any(await asyncio.gather(*(b.is_running(thread) for thread in threads[1:])))  # no lock left behind
        assert await b.is_running(threads[0])
        async with b.running(threads[1]):
            assert await a.is_running(threads[1])
        await a.close(threads[0])
        assert not await b.is_running(threads[0])


async def test_a_dead_session_frees_its_thread_at_once(postgres_url):
    thread = f"pg-{uuid.uuid4().hex}"
    async with open_persistence(postgres_url) as one, open_persistence(postgres_url) as two:
        a, b = one.interrupt_queue, two.interrupt_queue
        await a.open(thread)
        holder = a._conn.info.backend_pid  # the process's lock connection
        async with two.checkpointer.conn.connection() as conn:  # what Postgres does when a process dies
            # The timeout (ms) makes Postgres wait until the backend has exited, as a dead
            # process's backend has; without it the signal is only sent.
            await conn.execute("SELECT pg_terminate_backend(%s, 5000)", (holder,))
        assert not await b.is_running(thread)
        async with b.running(thread):
            assert await a.is_running(thread)
        await a.close(thread)  # the broken connection is only closed


async def test_follow_up_sent_from_another_process_reaches_the_running_loop(postgres_url, tmp_path):
    thread = f"pg-{uuid.uuid4().hex}"
    counter = tmp_path / "calls.db"
    running = subprocess.Popen(helper("start", postgres_url, thread, counter, slow=3), cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        async with open_persistence(postgres_url) as persistence:
            agent = ReActAgent(ScriptedChatModel(), crash_run.build_tools(str(counter), 0),
                               abilities=ModelAbilities(tool_call=True), checkpointer=persistence.checkpointer,
                               interrupt_queue=persistence.interrupt_queue)
            await wait_for_saved_result(persistence.checkpointer, thread, "call-fast-2")
            assert await agent.thread_status(thread) == "running"
            with pytest.raises(ThreadBusyError):
                await agent.resume(thread)
            await agent.inject(thread, "also CNC-009")  # while slow_check sleeps in the other process
            stdout, stderr = running.communicate(timeout=120)
            assert running.returncode == 0, stdout + stderr
            events = [json.loads(line) for line in stdout.splitlines()]
            assert {"channel": "inject", "data": {"type": "inject", "content": "also CNC-009"}} in [
                {k: e[k] for k in ("channel", "data")} for e in events]
            started = [e["data"]["tool_call_id"] for e in events
                       if e["channel"] == "step" and e["data"].get("type") == "iteration" and e["data"]["status"] == "start"]
            assert started[-1] == "call-fast-9"  # the loop acted on the follow-up
            assert events[-1]["channel"] == "done" and events[-1]["data"]["answer"] == crash_run.SYNTHESIS
            # And the other process reads the finished run from the shared checkpoints.
            assert await agent.thread_status(thread) == "idle"
            state = (await agent.graph.aget_state({"configurable": {"thread_id": thread}})).values
            assert "[USER INTERRUPT] also CNC-009" in [m.content for m in state["messages"]]
            assert state["synthesis"] == crash_run.SYNTHESIS
    finally:
        if running.poll() is None:
            running.kill()


class _CountingPool:
    """The queue's pool, counting the connections borrowed (one per statement)."""

    def __init__(self, pool) -> None:
        self.pool, self.borrowed = pool, 0

    def connection(self, *args, **kwargs):
        self.borrowed += 1
        return self.pool.connection(*args, **kwargs)


async def _listening(queue: PostgresInterruptQueue) -> None:
    for _ in range(500):
        if queue._listening:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the queue's listening connection did not start")


async def test_a_running_thread_reads_its_follow_ups_only_after_a_put_was_heard(postgres_url):
    """a run asks for follow-ups at every model step; the table is read the first
    time and then only after the listening connection hears a put for the thread."""
    thread = f"pg-{uuid.uuid4().hex}"
    async with open_persistence(postgres_url) as one, open_persistence(postgres_url) as two:
        a, b = one.interrupt_queue, two.interrupt_queue
        reads = a._pool = _CountingPool(a._pool)
        async with a.running(thread):
            await _listening(a)
            assert await a.take(thread) == [] and reads.borrowed == 1  # the run's first take reads
            for _ in range(5):
                assert await a.take(thread) == []
            assert reads.borrowed == 1  # nothing was put: nothing read
            await b.put(thread, "from the other process")
            for _ in range(500):  # the notice arrives a moment after the put's commit
                taken = await a.take(thread)
                if taken:
                    break
                await asyncio.sleep(0.01)
            assert taken == ["from the other process"] and reads.borrowed == 2
            assert await a.take(thread) == [] and reads.borrowed == 2


async def test_follow_ups_still_arrive_when_the_listening_connection_dies(postgres_url):
    thread = f"pg-{uuid.uuid4().hex}"
    async with open_persistence(postgres_url) as one, open_persistence(postgres_url) as two:
        a, b = one.interrupt_queue, two.interrupt_queue
        async with a.running(thread):
            await _listening(a)
            assert await a.take(thread) == []
            async with two.checkpointer.conn.connection() as conn:
                await conn.execute("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
                                   " WHERE query = 'LISTEN reactgraph_interrupts' AND pid <> pg_backend_pid()")
            for _ in range(500):
                if not a._listening:
                    break
                await asyncio.sleep(0.01)
            await b.put(thread, "put while nobody listens")
            assert await a.take(thread) == ["put while nobody listens"]  # read at once: no notices to wait for
        async with a.running(thread):  # the next run listens again
            await _listening(a)


async def test_processes_opening_a_fresh_database_at_once_all_set_it_up(postgres_url):
    """``serve --workers N`` on a fresh database: N processes create the tables at once
    (point 3: "duplicate key … pg_type_typname_nsp_index", "deadlock detected").
    A schema of its own stands for the fresh database; five rounds of four at once."""
    import psycopg

    for _ in range(5):
        schema = f"fresh_{uuid.uuid4().hex[:12]}"
        async with await psycopg.AsyncConnection.connect(psycopg_conninfo(postgres_url), autocommit=True) as admin:
            await admin.execute(f"CREATE SCHEMA {schema}")
        fresh = f"{postgres_url}{'&' if '?' in postgres_url else '?'}options=-csearch_path%3D{schema}"

        async def start() -> bool:
            async with open_persistence(fresh) as persistence:
                return await persistence.checkpointer.aget_tuple({"configurable": {"thread_id": "t"}}) is None

        try:
            assert await asyncio.wait_for(asyncio.gather(*(start() for _ in range(4))), 120) == [True] * 4
        finally:
            async with await psycopg.AsyncConnection.connect(psycopg_conninfo(postgres_url), autocommit=True) as admin:
                await admin.execute(f"DROP SCHEMA {schema} CASCADE")
