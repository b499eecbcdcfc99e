"""``reactgraph serve --workers 2`` on Postgres (SPEC R7.5): two worker processes
accept from one port, and a thread's run, its follow-up, its state and its resume work
whichever worker takes each request.

The command is the real CLI (``python -m tests.scripted_cli``: the demo plant's tools, a
scripted model that replies from the messages alone, so both workers' models play the
same script). Which worker takes a connection is up to the kernel; the test steers it by
stopping the other worker (``SIGSTOP``: a stopped process accepts nothing, its runs wait)
and lets it go on (``SIGCONT``) afterwards. For that the workers share one listening socket
(``$SCRIPTED_SHARED_SOCKET``): with a socket each (``SO_REUSEPORT``, the default on Linux) a
connection can be queued at the stopped worker. Needs ``$REACTGRAPH_TEST_DATABASE_URL``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.processes import REPO
from tests.serving import parse_sse, read_events

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

SCRIPT = {"by_message": {"tool": "get_equipment_status", "arg": "equipment_id"}, "delay": 1.0}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def workers_of(pid: int) -> list[int]:
    """The worker processes of the ``serve`` process ``pid`` (its children)."""
    with open(f"/proc/{pid}/task/{pid}/children") as children:
        return [int(child) for child in children.read().split()]


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """The worker ``pid`` is stopped for the block: connections go to the other one."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def client(base_url: str) -> httpx.AsyncClient:
    """A client that opens a new connection per request, so no pooled connection ties a
    request to the worker that accepted an earlier one."""
    return httpx.AsyncClient(base_url=base_url, timeout=60, limits=httpx.Limits(max_keepalive_connections=0))


def tool_calls(events: list[tuple[str, dict]]) -> list[str]:
    return [data["tool_call_id"] for channel, data in events
            if channel == "step" and data.get("type") == "iteration" and data["status"] == "start"]


def start_serve(postgres_url: str, tmp_path, port: int, *options: str) -> subprocess.Popen:
    """``reactgraph serve --workers 2`` (and ``options``) on the scripted model; returns once
    both workers printed their page line (each does so just before it serves)."""
    # the seed's two phases: the script's synthesis ("Status of …") is the answer
    env = {**os.environ, "REACTGRAPH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO), "SCRIPTED_SHARED_SOCKET": "1",
           "REACTGRAPH_SYNTHESIS": "always"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.scripted_cli", json.dumps(SCRIPT), "serve", "--workers", "2", "--port", str(port),
         "--checkpoints", postgres_url, "--db", str(tmp_path / "plant.db"), *options],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    pages = 0
    while pages < 2:
        line = process.stdout.readline()
        if not line:
            process.wait(timeout=30)
            raise AssertionError(f"serve --workers 2 did not start: {process.stderr.read() if process.stderr else ''}")
        pages += line.startswith("page: ")
    return process


async def test_two_workers_share_runs_follow_ups_state_and_resumes(postgres_url, tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = start_serve(postgres_url, tmp_path, port)
    try:
        one, two = workers_of(serve.pid)

        # 1. A run on worker one; while it goes, worker two shows it running, refuses a
        #    second run on the thread and takes a follow-up that worker one's loop acts on.
        thread = f"workers-{uuid.uuid4().hex}"
        events: list[tuple[str, dict]] = []
        async with client(base) as http:
            with stopped(two):
                run = http.stream("POST", f"/threads/{thread}/runs", json={"message": "CNC-003 status?"})
                response = await run.__aenter__()
            try:
                assert response.status_code == 200
                async for channel, data in read_events(response):
                    events.append((channel, data))
                    if channel == "step" and data.get("type") == "iteration" and data["status"] == "start" \
                            and data["tool_call_id"] == "call-CNC-003-0":
                        with stopped(one):  # these go to worker two
                            async with client(base) as other:
                                seen = (await other.get(f"/threads/{thread}")).json()
                                assert seen["status"] == "running" and seen["running"] is True
                                assert seen["messages"][0]["content"] == "CNC-003 status?"
                                busy = await other.post(f"/threads/{thread}/runs", json={"message": "again"})
                                assert busy.status_code == 409
                                sent = await other.post(f"/threads/{thread}/inject", json={"message": "also CNC-001"})
                                assert sent.status_code == 202
            finally:
                await run.__aexit__(None, None, None)
        assert ("inject", {"type": "inject", "content": "also CNC-001"}) in events
        assert tool_calls(events)[-1].startswith("call-CNC-001-")  # worker one's loop acted on it
        assert events[-1][0] == "done" and events[-1][1]["answer"] == "Status of CNC-001, CNC-003."
        async with client(base) as http:
            with stopped(one):
                final = (await http.get(f"/threads/{thread}")).json()
        assert final["status"] == "idle" and final["result"]["answer"] == "Status of CNC-001, CNC-003."
        assert "[USER INTERRUPT] also CNC-001" in [message["content"] for message in final["messages"]]

        # 2. A run whose worker is killed after its tool call finished is resumed by another
        #    worker; the supervisor starts a new worker in place of the dead one.
        thread = f"workers-{uuid.uuid4().hex}"
        async with client(base) as http:
            with stopped(two):
                async with http.stream("POST", f"/threads/{thread}/runs", json={"message": "CNC-004 status?"}) as cut:
                    assert cut.status_code == 200
                    with pytest.raises(httpx.HTTPError):  # the stream breaks off with its worker
                        async for channel, data in read_events(cut):
                            if channel == "step" and data.get("type") == "iteration" and data["status"] == "done":
                                os.kill(one, signal.SIGKILL)
            state = (await http.get(f"/threads/{thread}")).json()
            assert state["status"] == "interrupted" and state["running"] is False
            resumed = await http.post(f"/threads/{thread}/resume")
        assert resumed.status_code == 200
        events = parse_sse(resumed.text)
        assert tool_calls(events) == []  # the finished call is not run again
        assert events[-1][0] == "done" and events[-1][1]["answer"] == "Status of CNC-004."
        assert events[-1][1]["thread_id"] == thread

        deadline = time.monotonic() + 60
        while (len(workers := workers_of(serve.pid)) < 2 or one in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(workers) == 2 and one not in workers and two in workers
        serve.terminate()  # stops every worker
        assert serve.wait(timeout=30) == 0
        assert not alive(*workers)
    finally:
        if serve.poll() is None:
            serve.terminate()
            try:
                serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                serve.kill()  # its workers follow it (PR_SET_PDEATHSIG)
                serve.wait(timeout=30)


async def test_a_thread_is_404_to_another_principal_on_the_other_worker(postgres_url, tmp_path):
    """The owner recorded by the worker that started the thread holds on the other one: the
    owner lives in the database, not in a worker's memory."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = start_serve(postgres_url, tmp_path, port, "--client-keys", "key-ana=ana,key-bo=bo")
    ana, bo = {"Authorization": "Bearer key-ana"}, {"Authorization": "Bearer key-bo"}
    thread = f"owned-{uuid.uuid4().hex}"
    try:
        one, two = workers_of(serve.pid)
        async with client(base) as http:
            with stopped(two):
                ran = await http.post(f"/threads/{thread}/runs", json={"message": "CNC-003 status?"}, headers=ana)
            assert parse_sse(ran.text)[-1][0] == "done"
            with stopped(one):  # every request below goes to worker two
                answers = [
                    await http.get(f"/threads/{thread}", headers=bo),
                    await http.post(f"/threads/{thread}/runs", json={"message": "mine?"}, headers=bo),
                    await http.post(f"/threads/{thread}/inject", json={"message": "also CNC-001"}, headers=bo),
                    await http.post(f"/threads/{thread}/resume", headers=bo),
                    await http.post(f"/threads/{thread}/cancel", headers=bo),
                    await http.post(f"/threads/{thread}/approvals", headers=bo,
                                    json={"decisions": [{"tool_call_id": "x", "type": "approve"}]}),
                    await http.delete(f"/threads/{thread}", headers=bo),
                    await http.post("/agui", headers=bo, json={"threadId": thread, "runId": "r1", "messages": [
                        {"id": "u1", "role": "user", "content": "CNC-003?"}]}),
                ]
                listed_bo = (await http.get("/threads", params={"limit": 100}, headers=bo)).json()["threads"]
                listed_ana = (await http.get("/threads", params={"limit": 100}, headers=ana)).json()["threads"]
                own = await http.get(f"/threads/{thread}", headers=ana)
        assert [answer.status_code for answer in answers] == [404] * len(answers)
        assert {json.dumps(answer.json()) for answer in answers} == {json.dumps({"detail": f"unknown thread {thread!r}"})}
        assert thread not in [item["thread_id"] for item in listed_bo]
        assert [item for item in listed_ana if item["thread_id"] == thread][0]["question"] == "CNC-003 status?"
        assert own.status_code == 200 and own.json()["status"] == "idle"
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(timeout=30)


def alive(*pids: int) -> list[int]:
    """Those of ``pids`` still running."""
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
    return alive


async def test_no_worker_outlives_a_killed_supervisor(postgres_url, tmp_path):
    serve = start_serve(postgres_url, tmp_path, free_port())
    workers = workers_of(serve.pid)
    assert len(workers) == 2
    serve.kill()  # no chance to stop its workers itself
    serve.wait(timeout=30)
    deadline = time.monotonic() + 30
    while alive(*workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert not alive(*workers)
    finally:
        for pid in alive(*workers):
            os.kill(pid, signal.SIGKILL)
