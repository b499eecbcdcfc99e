"""Hostile inputs against a real uvicorn server (SPEC R13.5): bodies refused
before they are read (key first, then size), one JSON error path that never answers 5xx,
strings no tool output can use to break the SSE wire, the Host check of an unauthenticated
server, follow-up limits, and the demo database's read-only connection."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import (
    AgentSettings,
    FollowUpLimitError,
    FollowUpLimits,
    InMemoryInterruptQueue,
    ReActAgent,
    open_persistence,
)
from reactgraph.demo.factory import connect_readonly, ensure_database
from reactgraph.persistence.interrupts import format_interrupt
from reactgraph.server import ServerSettings, create_app
from reactgraph.server.gate import host_name
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import parse_sse, running_server
from tests.helpers import NATIVE_TOOLS_ONLY

pytestmark = pytest.mark.integration  # a real uvicorn server on a loopback socket

KEY = "s3cret"
HUGE = 200 * 1024 * 1024
"""A declared body size (200 MB) no test ever sends: the server must answer before it."""


@tool
def list_reports(folder: str) -> str:
    """File names of a folder's reports (decoded with surrogateescape, as os.listdir does)."""
    return f"{folder}: report-\udcff.txt\u2028second line\u2029third\u0085fourth"


def agent_with(responses: list[Any], **kwargs: Any) -> ReActAgent:
    model = ScriptedChatModel(responses=responses, synthesis=kwargs.pop("synthesis", "Done."))
    return ReActAgent(model, [list_reports], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(), **kwargs)


async def raw_request(url: str, head: str, body: bytes = b"", *, wait: float = 5.0) -> tuple[int, bytes]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` over
    a plain socket; returns the status and the response bytes. The answer must come within
    ``wait`` seconds, before the client sends anything more (it never sends the rest of a
    body it declared)."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(head.encode("latin-1") + b"\r\n\r\n" + body)
        await writer.drain()
        response = await asyncio.wait_for(reader.read(65536), wait)
    finally:
        writer.close()
    status = int(response.split(b" ", 2)[1])
    return status, response


def post_head(port_url: str, path: str, length: int, *, key: str | None = None, host: str | None = None) -> str:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host or port_url.removeprefix('http://')}",
             "Content-Type: application/json", f"Content-Length: {length}"]
    if key is not None:
        lines.append(f"Authorization: Bearer {key}")
    return "\r\n".join(lines)


# Bodies: the key before anything, the size before reading -----------------------------------


async def test_a_huge_body_without_the_key_is_refused_401_before_a_byte_of_it_is_read():
    agent = agent_with([])
    async with running_server(create_app(agent, ServerSettings(api_key=KEY))) as url:
        for path in ("/threads/t/runs", "/threads/t/inject", "/threads/t/resume"):
            status, response = await raw_request(url, post_head(url, path, HUGE), b'{"message": "')
            assert status == 401 and b"WWW-Authenticate: Bearer" in response.replace(b"www-authenticate", b"WWW-Authenticate")
            assert json.loads(response.split(b"\r\n\r\n", 1)[1])["detail"].startswith("missing or wrong API key")
        async with httpx.AsyncClient(base_url=url) as client:  # malformed and without the key: still 401, not 422
            malformed = await client.post("/threads/t/runs", content=b"{not json", headers={"Content-Type": "application/json"})
            assert malformed.status_code == 401
            assert (await client.get("/healthz")).status_code == 200  # open paths stay open


async def test_a_body_over_the_limit_gets_413_at_once_whether_declared_or_streamed():
    agent = agent_with([])
    settings = ServerSettings(api_key=KEY, max_body_bytes=4096)
    async with running_server(create_app(agent, settings)) as url:
        status, response = await raw_request(url, post_head(url, "/threads/t/runs", HUGE, key=KEY), b"{")
        assert status == 413 and b"4096 bytes" in response
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as client:
            padded = await client.post("/threads/t/runs", json={"message": "hi", "pad": "x" * 5000})
            assert padded.status_code == 413  # the limit covers the whole body, not only `message`
            extra = await client.post("/threads/t/runs", json={"message": "hi", "pad": "x"})
            assert extra.status_code == 422 and extra.json()["detail"][0]["type"] == "extra_forbidden"

            async def chunks():  # no Content-Length: the gate counts while it reads
                for _ in range(100):
                    yield b"x" * 1024

            streamed = await client.post("/threads/t/runs", content=chunks(), headers={"Content-Type": "application/json"})
            assert streamed.status_code == 413
            fits = await client.post("/threads/t/runs", json={"message": "hi " + "x" * 3000})
            assert fits.status_code == 200 and parse_sse(fits.text)[-1][0] == "done"
    with pytest.raises(ValueError, match="max_body_bytes"):
        ServerSettings(max_body_bytes=10)


# One JSON error path ---------------------------------------------------------------------


@pytest.mark.parametrize(("body", "status"), [
    (b'{"message": NaN}', 422), (b'{"message": Infinity}', 422), (b'{"message": -Infinity}', 422),
    (b'{"message": 1e999}', 422), (b'{"message": "\\ud800"}', 422), (b'{"message": "report-\\udcff.txt"}', 422),
    (b'{"message": "ok", "x": NaN}', 422), (b'[NaN]', 422), (b'"\\udfff"', 422), (b'{"message": {"\\ud800": 1}}', 422),
    (b'{"message": "\xff\xfe"}', 400), (b'{"message": "\xed\xa0\x80"}', 422),  # not UTF-8
])
async def test_non_standard_json_gets_4xx_with_a_json_reason_never_500(body, status):
    agent = agent_with(["unused"])
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            for path in ("/threads/t/runs", "/threads/t/inject"):
                response = await client.post(path, content=body, headers={"Content-Type": "application/json"})
                assert response.status_code == status, (path, response.text)
                assert response.headers["content-type"] == "application/json"
                assert json.loads(response.content)["detail"]
    assert agent.llm.calls == []


# The wire: any string a tool produces --------------------------------------------------------


async def test_a_tool_output_with_lone_surrogates_and_line_separators_streams_to_done():
    agent = agent_with([AIMessage(content="", tool_calls=[tool_call("list_reports", {"folder": "/srv/\udcfe"}, "c1")]),
                        "Found report-\udcff.txt\u2028ok"], synthesis="The report is report-\udcff.txt\u2029done",
                       settings=AgentSettings(synthesis="always"))  # both the loop's and the synthesis' text go out
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            async with client.stream("POST", "/threads/t/runs", json={"message": "which reports?"}) as response:
                assert response.status_code == 200
                lines = [line async for line in response.aiter_lines()]  # a line-splitting client
            state = (await client.get("/threads/t")).json()
    data = [json.loads(line[len("data: "):]) for line in lines if line.startswith("data: ")]
    events = [line[len("event: "):] for line in lines if line.startswith("event: ")]
    assert len(data) == len(events) and events[-1] == "done"  # every frame whole: no data line was split
    done_tool = next(d for d in data if d.get("type") == "iteration" and d.get("status") == "done")
    assert done_tool["observation"] == "/srv/\udcfe: report-\udcff.txt\u2028second line\u2029third\u0085fourth"
    assert data[-1]["answer"] == "The report is report-\udcff.txt\u2029done"
    assert state["status"] == "idle" and state["result"]["finish_reason"] == "final_answer"


class LosingQueue(InMemoryInterruptQueue):
    """A queue whose database goes away: ``close`` (at the end of every run) fails."""

    async def close(self, thread_id: str) -> None:
        await super().close(thread_id)
        raise OSError("the queue's database went away")


async def test_a_failure_outside_the_run_still_ends_the_stream_with_an_error_event():
    agent = agent_with(["CNC-003 is normal."], interrupt_queue=LosingQueue())
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            response = await client.post("/threads/t/runs", json={"message": "CNC-003?"})
    events = parse_sse(response.text)
    assert events[-1] == ("error", {"message": "OSError: the queue's database went away", "kind": "server_error"})


# Host check (DNS rebinding) --------------------------------------------------------------------


async def test_an_unauthenticated_server_answers_only_its_allowed_hosts():
    agent = agent_with(["hi"])
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
        port = url.rsplit(":", 1)[1]
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "", f"attacker:{port}"):
            status, response = await raw_request(url, f"GET /threads/t HTTP/1.1\r\nHost: {host}")
            assert status == 400 and b"is not allowed" in response, host
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", "localhost"):
            status, _ = await raw_request(url, f"GET /healthz HTTP/1.1\r\nHost: {host}")
            assert status == 200, host
    settings = ServerSettings(api_key="", allowed_hosts=("plant.example",))
    async with running_server(create_app(agent, settings)) as url:
        status, _ = await raw_request(url, "GET /healthz HTTP/1.1\r\nHost: plant.example:8000")
        assert status == 200
    async with running_server(create_app(agent, ServerSettings(api_key=KEY))) as url:  # a key: any host, with the key
        status, _ = await raw_request(url, "GET /healthz HTTP/1.1\r\nHost: plant.example")
        assert status == 200
    assert [host_name(h) for h in ("[::1]:8000", "Example.COM:80", "::1", "localhost")] == ["::1", "example.com", "::1", "localhost"]


# Follow-up limits ---------------------------------------------------------------------------------


async def test_follow_ups_past_the_limits_get_429_and_fit_again_once_taken():
    queue = InMemoryInterruptQueue(FollowUpLimits(max_count=3, max_chars=100))
    agent = agent_with(["unused"], interrupt_queue=queue)
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
        async with httpx.AsyncClient(base_url=url) as client, queue.running("t"):
            statuses = [(await client.post("/threads/t/inject", json={"message": f"check CNC-00{i}"})).status_code
                        for i in range(5)]
            assert statuses == [202, 202, 202, 429, 429]
            refused = await client.post("/threads/t/inject", json={"message": "x"})
            assert "3 follow-ups waiting" in refused.json()["detail"]
            assert await queue.take("t") == ["check CNC-000", "check CNC-001", "check CNC-002"]
            assert (await client.post("/threads/t/inject", json={"message": "y" * 60})).status_code == 202
            too_long = await client.post("/threads/t/inject", json={"message": "z" * 50})
            assert too_long.status_code == 429 and "limit of 100" in too_long.json()["detail"]
    with pytest.raises(ValueError):
        FollowUpLimits(max_count=0)


async def test_the_drained_follow_ups_fit_the_guards_cut_exactly():
    agent = agent_with(["unused"], settings=AgentSettings(max_message_chars=1_000))
    queue = agent.interrupts
    assert queue.limits == FollowUpLimits(max_count=20, max_chars=1_000)  # the agent's own cut
    async with queue.running("t"):
        await agent.inject("t", "a" * 500)
        room = 1_000 - len(format_interrupt(["a" * 500, ""]))
        with pytest.raises(FollowUpLimitError, match="past the limit of 1000"):
            await agent.inject("t", "b" * (room + 1))
        await agent.inject("t", "b" * room)
        assert len(format_interrupt(await queue.take("t"))) == 1_000  # never over: the guard cuts nothing


@pytest.mark.postgres
async def test_the_postgres_queue_keeps_the_limits_across_concurrent_puts(postgres_url):
    async with open_persistence(postgres_url) as persistence:
        queue = persistence.interrupt_queue
        queue.limits = FollowUpLimits(max_count=5, max_chars=1000)
        thread = f"limits-{time.time_ns()}"
        async with queue.running(thread):
            results = await asyncio.gather(*(queue.put(thread, f"follow-up {i}") for i in range(12)),
                                           return_exceptions=True)
            assert sum(r is None for r in results) == 5
            assert all(isinstance(r, FollowUpLimitError) for r in results if r is not None)
            assert len(await queue.take(thread)) == 5
            await queue.put(thread, "fits again")
            assert await queue.take(thread) == ["fits again"]


# The demo database ---------------------------------------------------------------------------------


def test_the_read_only_demo_connection_cannot_attach_a_file_to_write_there(tmp_path):
    db = ensure_database(tmp_path / "factory.db")
    con = connect_readonly(db)
    target = tmp_path / "written.db"
    try:
        for statement in (f"ATTACH DATABASE '{target}' AS w", f"ATTACH '{target}' AS w",
                          "ATTACH DATABASE ':memory:' AS m", f"ATTACH 'file:{target}?mode=rwc' AS w"):
            with pytest.raises(sqlite3.OperationalError):
                con.execute(statement)
        with pytest.raises(sqlite3.OperationalError):
            con.execute("CREATE TABLE x (a)")
        assert con.execute("SELECT count(*) FROM equipment").fetchone()[0] > 0
    finally:
        con.close()
    assert not target.exists()


async def test_a_body_that_stops_arriving_gets_408_and_its_connection_closed():
    """stalled partial requests stayed open (> 30 s for 200 of them)."""
    agent = agent_with(["unused"])
    async with running_server(create_app(agent, ServerSettings(api_key="", body_timeout=0.5))) as url:
        head = post_head(url, "/threads/t/runs", 100)
        status, response = await raw_request(url, head, b'{"message": "part of it', wait=30)
    assert status == 408 and b"no part of the request body came for 0.5 seconds" in response
    assert b"connection: close" in response.lower()
    assert agent.llm.calls == []


async def test_a_body_dripped_a_byte_at_a_time_gets_408_at_its_total_deadline():
    """A body under the size limit sent one byte every 0.1 s never stalls for
    ``body_timeout``; its reading ends at ``body_deadline`` with 408 and the connection
    closed, long before its last byte, and the agent never runs."""
    agent = agent_with(["unused"])
    body = json.dumps({"message": "Bonjour, état de la ligne 3 ? " * 3}).encode()
    settings = ServerSettings(api_key="", body_timeout=5, body_deadline=1.0)
    async with running_server(create_app(agent, settings)) as url:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        sent = 0
        try:
            writer.write(post_head(url, "/threads/t/runs", len(body)).encode("latin-1") + b"\r\n\r\n")
            answer = asyncio.ensure_future(reader.read(65536))
            while not answer.done() and sent < len(body):
                writer.write(body[sent:sent + 1])
                await writer.drain()
                sent += 1
                await asyncio.wait([answer], timeout=0.1)  # the drip's pace, or the answer
            response = await asyncio.wait_for(answer, 30)
        finally:
            writer.close()
    assert sent < len(body)  # refused while it still dripped
    assert int(response.split(b" ", 2)[1]) == 408, response
    assert b"the request body did not arrive within 1 seconds" in response
    assert b"connection: close" in response.lower()
    assert agent.llm.calls == []
