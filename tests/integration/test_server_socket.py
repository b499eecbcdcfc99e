"""The HTTP server over a real uvicorn server on a loopback socket (SPEC §8, §7, R3.2): the
full event sequence with a follow-up injected over HTTP mid-run, one run per thread, and
client disconnects cancelling the run. The rest of the server is tested in
``tests/unit/server/test_server.py`` through the ASGI transport."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph.protocol.messages import UNFINISHED_TOOL_RESULT
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import HookedModel
from tests.server_cases import (
    FOLLOW_UP,
    QUERY,
    SMALL,
    app_for,
    filler_tools,
    get_status,
    logs,
    read_log,
    selection,
    shape,
)
from tests.serving import parse_sse, read_events, running_server

pytestmark = pytest.mark.integration


async def test_a_run_streams_every_spec_event_in_order_with_every_field():
    """Tool selection, two parallel tool calls, a follow-up injected over HTTP while the
    model is thinking, a compaction, the final answer and the streamed synthesis."""
    summarizer = ScriptedChatModel(responses=["요약: CNC-001, CNC-002 로그 확인됨, W-1105 진동 증가."], repeat_last=True)
    model = HookedModel(
        responses=[selection(["read_log"]), logs("CNC-001", "CNC-002"), logs("CNC-003", "CNC-004"), "CNC-003 정상"],
        synthesis="**CNC-003** is normal; CNC-001 and CNC-002 logs show W-1105.",
    )
    app = app_for(model, [read_log, *filler_tools(12)], abilities=SMALL, compaction_llm=summarizer)
    async with running_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        injected: list[httpx.Response] = []

        async def inject() -> None:
            injected.append(await client.post("/threads/chat-1/inject", json={"message": FOLLOW_UP}))

        model.hooks[2] = inject  # while the first loop call (two parallel tool calls) is in flight
        async with client.stream("POST", "/threads/chat-1/runs", json={"message": QUERY}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            body = (await response.aread()).decode()
    assert [r.status_code for r in injected] == [202] and injected[0].json() == {"thread_id": "chat-1", "queued": True}
    events = parse_sse(body)

    assert [shape(*event) for event in events] == [
        ("phase",),
        ("step", "thinking", "start"), ("step", "thinking", "done"),
        ("step", "iteration", "start"), ("step", "iteration", "start"),
        ("step", "iteration", "done"), ("step", "iteration", "done"),
        ("inject",),
        ("step", "thinking", "start"), ("step", "thinking", "done"),
        ("step", "iteration", "start"), ("step", "iteration", "start"),
        ("step", "iteration", "done"), ("step", "iteration", "done"),
        ("compact",),
        ("step", "thinking", "start"), ("step", "thinking", "done"),
        ("step", "answer", "start"),
        ("answer", "start"), *[("answer", "delta")] * len(model.synthesis.split(" ")), ("answer", "done"),
        ("done",),
    ]
    data = [payload for _, payload in events]
    assert data[0] == {"phase": "selecting_tools", "total_tools": 13}
    thinking = [d for d in data if d.get("type") == "thinking"]
    assert [(d["status"], d["iteration"]) for d in thinking] == [
        ("start", 1), ("done", 1), ("start", 2), ("done", 2), ("start", 3), ("done", 3)]
    assert all(set(d) >= {"type", "status", "iteration", "reasoning"} and isinstance(d["reasoning"], str)
               for d in thinking if d["status"] == "done")
    starts = [d for d in data if d.get("type") == "iteration" and d["status"] == "start"]
    assert [(d["iteration"], d["tool_name"], d["tool_args"]) for d in starts] == [
        (1, "read_log", {"machine": "CNC-001"}), (1, "read_log", {"machine": "CNC-002"}),
        (2, "read_log", {"machine": "CNC-003"}), (2, "read_log", {"machine": "CNC-004"})]
    finished = [d for d in data if d.get("type") == "iteration" and d["status"] == "done"]
    assert sorted((d["iteration"], d["tool_name"], d["tool_call_id"]) for d in finished) == [
        (1, "read_log", "call-CNC-001"), (1, "read_log", "call-CNC-002"),
        (2, "read_log", "call-CNC-003"), (2, "read_log", "call-CNC-004")]
    for d in finished:
        assert d["observation"].startswith(d["tool_call_id"].removeprefix("call-") + " log:")
        assert d["error"] is None and isinstance(d["iter_elapsed"], float) and 0 <= d["iter_elapsed"] < 5
    assert data[7] == {"type": "inject", "content": FOLLOW_UP}
    compact = data[14]
    assert set(compact) == {"original_messages", "kept_messages"} and compact["kept_messages"] < compact["original_messages"]
    assert data[17] == {"type": "answer", "status": "start"}
    assert data[18] == {"status": "start"} and data[-2] == {"status": "done"}
    deltas = [d["content"] for d in data[19:-2]]
    assert all(set(d) == {"status", "content"} and d["status"] == "delta" for d in data[19:-2])
    done = data[-1]
    assert done["answer"] == "".join(deltas) == model.synthesis
    assert done["iterations"] == 3 and done["finish_reason"] == "final_answer" and done["thread_id"] == "chat-1"
    assert done["usage"]["model_calls"] == 1 + 3 + len(summarizer.calls) + 1  # selection, loop, compaction, synthesis
    assert set(done["usage"]) == {"input_tokens", "output_tokens", "total_tokens", "model_calls"}
    assert isinstance(done["elapsed"], float) and done["elapsed"] > 0
    # the follow-up reached the model as one pinned [USER INTERRUPT] message after the tool results
    second_call = model.calls[2]
    assert isinstance(second_call[-1], HumanMessage) and second_call[-1].content == f"[USER INTERRUPT] {FOLLOW_UP}"
    assert isinstance(second_call[-2], ToolMessage)


async def test_a_second_run_on_a_busy_thread_gets_409_and_inject_needs_a_running_run():
    release = asyncio.Event()

    @tool
    async def wait_for_release(x: int) -> str:
        """Block until the test releases it."""
        await release.wait()
        return "released"

    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("wait_for_release", {"x": 1}, "w1")]), "ok"],
                              repeat_last=True)
    app = app_for(model, [wait_for_release])
    async with running_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        idle = await client.post("/threads/t1/inject", json={"message": "anyone there?"})
        assert idle.status_code == 409 and "no run is going" in idle.json()["detail"]
        async with client.stream("POST", "/threads/t1/runs", json={"message": "first"}) as first:
            events = read_events(first)  # one iterator for the whole stream: closing it would disconnect
            async for channel, data in events:
                if data.get("type") == "iteration":
                    break
            busy = await client.post("/threads/t1/runs", json={"message": "second"})
            assert busy.status_code == 409 and "already going" in busy.json()["detail"]
            other = await client.post("/threads/t2/runs", json={"message": "other thread"})
            assert other.status_code == 200 and parse_sse(other.text)[-1][0] == "done"
            assert (await client.get("/threads/t1")).json()["running"] is True
            release.set()
            rest = [event async for event in events]
        assert rest[-1][0] == "done" and rest[-1][1]["answer"] == "Synthesized answer."
        assert (await client.get("/threads/t1")).json()["running"] is False
        again = await client.post("/threads/t1/runs", json={"message": "third"})
        assert again.status_code == 200


async def test_a_disconnect_cancels_the_run_within_a_second_and_the_thread_stays_usable():
    cancelled_at: list[float] = []

    @tool
    async def slow_scan(machine: str) -> str:
        """A scan that takes half a minute."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled_at.append(time.perf_counter())
            raise
        return "scanned"

    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("slow_scan", {"machine": "CNC-003"}, "s1")]),
                                         "The previous scan was stopped; CNC-003 is fine."])
    app = app_for(model, [slow_scan])
    async with running_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        async with client.stream("POST", "/threads/t1/runs", json={"message": "scan CNC-003"}) as response:
            async for channel, data in read_events(response):
                if data.get("type") == "iteration" and data["status"] == "start":
                    break
            disconnected_at = time.perf_counter()
        for _ in range(100):
            if cancelled_at and not app.state.runs:
                break
            await asyncio.sleep(0.01)
        assert cancelled_at and cancelled_at[0] - disconnected_at < 1.0
        assert "t1" not in app.state.runs

        again = await client.post("/threads/t1/runs", json={"message": "is CNC-003 ok?"})
        assert again.status_code == 200
        done = parse_sse(again.text)[-1]
        assert done[0] == "done" and done[1]["finish_reason"] == "final_answer"
        history = (await client.get("/threads/t1")).json()["messages"]
    tool_messages = [m for m in history if m["type"] == "tool"]
    assert tool_messages == [{"type": "tool", "content": UNFINISHED_TOOL_RESULT, "pinned": False, "tool_calls": [],
                              "tool_call_id": "s1", "name": "slow_scan"}]
    assert [m["type"] for m in history] == ["human", "ai", "tool", "human", "ai"]


async def test_a_disconnect_during_a_model_call_cancels_it_within_a_second():
    cancelled_at: list[float] = []
    thinking = asyncio.Event()

    async def thinks_for_half_a_minute() -> None:
        thinking.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled_at.append(time.perf_counter())
            raise

    model = HookedModel(responses=["never delivered", "CNC-003 is fine."], hooks={1: thinks_for_half_a_minute})
    app = app_for(model, [get_status])
    async with running_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        async with client.stream("POST", "/threads/t1/runs", json={"message": "CNC-003?"}) as response:
            async for channel, data in read_events(response):
                assert (channel, data) == ("step", {"type": "thinking", "status": "start", "iteration": 1})
                break
            await asyncio.wait_for(thinking.wait(), 5)  # the model call is in flight
            disconnected_at = time.perf_counter()
        for _ in range(100):
            if cancelled_at and not app.state.runs:
                break
            await asyncio.sleep(0.01)
        assert cancelled_at and cancelled_at[0] - disconnected_at < 1.0 and not app.state.runs
        again = await client.post("/threads/t1/runs", json={"message": "CNC-003 now?"})
        assert parse_sse(again.text)[-1][1]["finish_reason"] == "final_answer"
    assert [m.content for m in model.calls[1][1:]] == ["CNC-003?", "CNC-003 now?"]  # the cancelled call left nothing
