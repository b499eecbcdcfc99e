"""The HTTP server (issue 6, SPEC §8, §7, R3.2): the SSE protocol over a real uvicorn server
and httpx, the error statuses, authentication, disconnects, threads across restarts, the
OpenAPI schema and the page's files. Models are scripted; every message list they are sent
is checked against the provider protocol."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import ModelAbilities, NoActiveRunError, ReActAgent
from reactgraph.checkpointing import open_checkpointer
from reactgraph.cli import _parser, _server_settings, main
from reactgraph.protocol import UNFINISHED_TOOL_RESULT, answer_unfinished_tool_calls
from reactgraph.server import DEFAULT_MAX_BODY_BYTES, ServerSettings, create_app
from tests.scripted import ScriptedChatModel, tool_call
from tests.serving import parse_sse, read_events, running_server
from tests.unit.test_interrupts import HookedModel  # awaits hooks[n] right after its n-th model call

NATIVE = ModelAbilities(tool_call=True, json_mode=True)
SMALL = ModelAbilities(tool_call=True, json_mode=True, context_window=9_000, max_output_tokens=1_000)  # 8,000-token budget
LOG_LINE = "CNC-003 spindle 온도 71.5°C, vibration 4.2 mm/s, alarm W-1105 진동 증가; operator note: check bearing. "
QUERY = "CNC-001과 CNC-002 로그 확인해줘"
FOLLOW_UP = "also check CNC-003"


@tool
def read_log(machine: str) -> str:
    """Return the long maintenance log of a machine (about 2,000 tokens)."""
    return f"{machine} log:\n{LOG_LINE * 70}"


@tool
def get_status(equipment_id: str) -> str:
    """Return the status of one machine."""
    return f"{equipment_id}: normal"


def filler_tools(count: int) -> list[StructuredTool]:
    def make(i: int) -> StructuredTool:
        return StructuredTool.from_function(lambda machine: f"connector {i}: {machine}", name=f"connector_{i:02d}",
                                            description=f"Reads connector {i} data for one machine.")
    return [make(i) for i in range(count)]


def logs(*machines: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call("read_log", {"machine": m}, f"call-{m}") for m in machines])


def selection(names: list[str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "select_tools", "args": {"tools": names}, "id": "s1", "type": "tool_call"}])


def app_for(model: ScriptedChatModel, tools: list, *, abilities: ModelAbilities = NATIVE,
            settings: ServerSettings | None = None, **agent_kwargs: Any):
    agent_kwargs.setdefault("checkpointer", InMemorySaver())
    agent = ReActAgent(model, tools, abilities=abilities, **agent_kwargs)
    return create_app(agent, settings or ServerSettings(api_key=""))


def asgi_client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")


def shape(channel: str, data: dict[str, Any]) -> tuple:
    """An event reduced to what identifies its row of the SPEC §8 table."""
    if channel == "step":
        return channel, data["type"], data["status"]
    if channel == "answer":
        return channel, data["status"]
    return (channel,)


# ------------------------------------------------------------------------ the SSE protocol


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


async def test_synthesis_failure_falls_back_to_the_loops_answer():
    model = ScriptedChatModel(responses=["CNC-003: normal, 71.5°C"], synthesis=ConnectionError("synthesis endpoint down"))
    async with asgi_client(app_for(model, [get_status])) as client:
        response = await client.post("/threads/t/runs", json={"message": "CNC-003?"})
    events = parse_sse(response.text)
    answer = [d for channel, d in events if channel == "answer"]
    assert answer == [{"status": "start"}, {"status": "delta", "content": "CNC-003: normal, 71.5°C"}, {"status": "done"}]
    assert events[-1][0] == "done" and events[-1][1]["answer"] == "CNC-003: normal, 71.5°C"


# --------------------------------------------------------------------- one run per thread


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


# -------------------------------------------------------------------------- disconnects


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

    async def thinks_for_half_a_minute() -> None:
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
            await asyncio.sleep(0.2)  # the model call is in flight
            disconnected_at = time.perf_counter()
        for _ in range(100):
            if cancelled_at and not app.state.runs:
                break
            await asyncio.sleep(0.01)
        assert cancelled_at and cancelled_at[0] - disconnected_at < 1.0 and not app.state.runs
        again = await client.post("/threads/t1/runs", json={"message": "CNC-003 now?"})
        assert parse_sse(again.text)[-1][1]["finish_reason"] == "final_answer"
    assert [m.content for m in model.calls[1][1:]] == ["CNC-003?", "CNC-003 now?"]  # the cancelled call left nothing


async def test_an_event_stream_closed_early_cancels_the_run_at_once():
    cancelled = asyncio.Event()

    @tool
    async def slow_scan(machine: str) -> str:
        """A scan that takes half a minute."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "scanned"

    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("slow_scan", {"machine": "A"}, "s1")])])
    agent = ReActAgent(model, [slow_scan], abilities=NATIVE)
    events = agent.astream_events("scan A", thread_id="t")
    async for event in events:
        if event.data.get("type") == "iteration":
            break
    await events.aclose()
    assert cancelled.is_set()  # closing the library's iterator stopped the tool, no garbage collection needed
    with pytest.raises(NoActiveRunError):
        await agent.inject("t", "the run is over")


def test_unfinished_tool_calls_are_answered_in_order_and_complete_histories_are_left_alone():
    calls = AIMessage(content="", tool_calls=[tool_call("a", {}, "c1"), tool_call("b", {}, "c2")], id="ai1")
    done = ToolMessage("b ok", tool_call_id="c2", id="t2")
    repaired = answer_unfinished_tool_calls([HumanMessage("q", id="h1"), calls, done, HumanMessage("next", id="h2")])
    assert [(m.type, getattr(m, "tool_call_id", None)) for m in repaired] == [
        ("human", None), ("ai", None), ("tool", "c1"), ("tool", "c2"), ("human", None)]
    assert repaired[2].content == UNFINISHED_TOOL_RESULT and repaired[3] is done
    complete = [HumanMessage("q"), calls, ToolMessage("a", tool_call_id="c1"), done]
    assert answer_unfinished_tool_calls(complete) is None


# ------------------------------------------------------------------------- auth and input


async def test_an_api_key_guards_every_endpoint_but_healthz(monkeypatch):
    monkeypatch.setenv("REACTGRAPH_API_KEY", "s3cret")
    model = ScriptedChatModel(responses=["fine"])
    app = app_for(model, [get_status], settings=ServerSettings())
    async with asgi_client(app) as client:
        requests = [("POST", "/threads/t/runs", {"message": "hi"}), ("POST", "/threads/t/inject", {"message": "hi"}),
                    ("GET", "/threads/t", None)]
        for method, path, body in requests:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic czNjcmV0"}):
                response = await client.request(method, path, json=body, headers=headers)
                assert response.status_code == 401, (path, headers)
                assert "API key" in response.json()["detail"] and response.headers["www-authenticate"] == "Bearer"
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/")).status_code == 200
        authorized = {"Authorization": "Bearer s3cret"}
        run = await client.post("/threads/t/runs", json={"message": "hi"}, headers=authorized)
        assert run.status_code == 200 and parse_sse(run.text)[-1][1]["answer"] == "Synthesized answer."
        assert (await client.get("/threads/t", headers=authorized)).status_code == 200
    assert len(model.calls) == 2  # refused requests never reached the model


@pytest.mark.parametrize(("path", "body", "reason"), [
    ("/threads/t/runs", None, "missing"),
    ("/threads/t/runs", {}, "missing"),
    ("/threads/t/runs", {"message": 42}, "string_type"),
    ("/threads/t/runs", {"message": ""}, "string_too_short"),
    ("/threads/t/runs", {"text": "hi"}, "missing"),
    ("/threads/bad%20id/runs", {"message": "hi"}, "string_pattern_mismatch"),
    ("/threads/t/inject", {"message": None}, "string_type"),
])
async def test_invalid_requests_get_422_with_the_reason(path, body, reason):
    model = ScriptedChatModel(responses=[])
    async with asgi_client(app_for(model, [get_status])) as client:
        response = await client.post(path, json=body)
    assert response.status_code == 422
    assert reason in [error["type"] for error in response.json()["detail"]]
    assert model.calls == []


async def test_blank_and_malformed_bodies_get_422_and_oversized_messages_413():
    model = ScriptedChatModel(responses=[])
    app = app_for(model, [get_status], settings=ServerSettings(api_key="", max_message_chars=100))
    async with asgi_client(app) as client:
        blank = await client.post("/threads/t/runs", json={"message": "   \n"})
        assert blank.status_code == 422 and blank.json()["detail"] == "the message is blank"
        broken = await client.post("/threads/t/runs", content=b"{not json", headers={"Content-Type": "application/json"})
        assert broken.status_code == 422 and broken.json()["detail"][0]["type"] == "json_invalid"
        for path in ("/threads/t/runs", "/threads/t/inject"):
            big = await client.post(path, json={"message": "x" * 101})
            assert big.status_code == 413
            assert big.json()["detail"] == "the message has 101 characters; this server accepts at most 100"
        fits = await client.post("/threads/t/inject", json={"message": "x" * 100})
        assert fits.status_code == 409  # within the limit; refused only because nothing runs
    assert model.calls == []
    with pytest.raises(ValueError):
        ServerSettings(max_message_chars=0)


async def test_unknown_threads_get_404():
    async with asgi_client(app_for(ScriptedChatModel(responses=[]), [get_status])) as client:
        response = await client.get("/threads/nobody-here")
    assert response.status_code == 404 and response.json()["detail"] == "unknown thread 'nobody-here'"
    no_checkpoints = app_for(ScriptedChatModel(responses=["ok"]), [get_status], checkpointer=None)
    async with asgi_client(no_checkpoints) as client:
        assert (await client.post("/threads/t/runs", json={"message": "hi"})).status_code == 200
        response = await client.get("/threads/t")
    assert response.status_code == 404 and "no checkpointer" in response.json()["detail"]


# ------------------------------------------------------------------ threads and restarts


async def test_a_thread_survives_a_server_restart_on_the_sqlite_checkpointer(tmp_path):
    database = tmp_path / "threads.db"
    async with open_checkpointer(database) as saver:
        model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-003"}, "c1")]),
                                             "CNC-003 is normal."], synthesis="CNC-003 is **normal**.")
        async with asgi_client(app_for(model, [get_status], checkpointer=saver)) as client:
            first = await client.post("/threads/plant-7/runs", json={"message": "CNC-003?"})
            assert parse_sse(first.text)[-1][1]["answer"] == "CNC-003 is **normal**."
    async with open_checkpointer(f"sqlite:///{database}") as saver:  # a new process would open the same file
        model = ScriptedChatModel(responses=["Still normal."], synthesis="Still normal.")
        async with asgi_client(app_for(model, [get_status], checkpointer=saver)) as client:
            state = (await client.get("/threads/plant-7")).json()
            assert state["thread_id"] == "plant-7" and state["running"] is False and state["status"] == "idle"
            assert [m["type"] for m in state["messages"]] == ["human", "ai", "tool", "ai"]
            assert state["messages"][0] == {"type": "human", "content": "CNC-003?", "pinned": True, "tool_calls": [],
                                            "tool_call_id": None, "name": None}
            assert state["messages"][1]["tool_calls"] == [{"id": "c1", "name": "get_status", "args": {"equipment_id": "CNC-003"}}]
            result = state["result"]
            assert result["answer"] == "CNC-003 is **normal**." and result["loop_answer"] == "CNC-003 is normal."
            assert result["query"] == "CNC-003?" and result["iterations"] == 2 and result["finish_reason"] == "final_answer"
            assert result["usage"]["model_calls"] == 3
            assert [(s["tool_name"], s["observation"]) for s in result["steps"]] == [("get_status", "CNC-003: normal")]
            await client.post("/threads/plant-7/runs", json={"message": "and now?"})
            assert len(model.calls[0]) == 1 + 5  # system prompt + the earlier turn + the new question
            assert (await client.get("/threads/plant-7")).json()["result"]["answer"] == "Still normal."


# ------------------------------------------------------------------------ schema and page


async def test_the_openapi_schema_documents_every_endpoint():
    async with asgi_client(app_for(ScriptedChatModel(responses=[]), [get_status])) as client:
        schema = (await client.get("/openapi.json")).json()
    paths = schema["paths"]
    assert set(paths) == {"/threads/{thread_id}/runs", "/threads/{thread_id}/inject", "/threads/{thread_id}/resume",
                          "/threads/{thread_id}/approvals", "/threads/{thread_id}", "/healthz"}
    approvals = paths["/threads/{thread_id}/approvals"]["post"]
    assert set(approvals["responses"]) == {"200", "400", "401", "404", "409", "422"}
    assert approvals["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/ApprovalsRequest")
    resume = paths["/threads/{thread_id}/resume"]["post"]
    assert set(resume["responses"]) == {"200", "400", "401", "404", "409", "422"} and "requestBody" not in resume
    runs = paths["/threads/{thread_id}/runs"]["post"]
    assert set(runs["responses"]) == {"200", "400", "401", "409", "413", "422"}
    assert "text/event-stream" in runs["responses"]["200"]["content"]
    assert runs["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/MessageRequest")
    assert runs["security"] == [{"HTTPBearer": []}]
    inject = paths["/threads/{thread_id}/inject"]["post"]
    assert set(inject["responses"]) == {"202", "400", "401", "409", "413", "422", "429"}
    assert inject["responses"]["202"]["content"]["application/json"]["schema"]["$ref"].endswith("/Accepted")
    thread = paths["/threads/{thread_id}"]["get"]
    assert set(thread["responses"]) == {"200", "400", "401", "404", "422"}
    assert thread["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/ThreadState")
    assert "security" not in paths["/healthz"]["get"]
    parameter = runs["parameters"][0]
    assert parameter["name"] == "thread_id" and parameter["in"] == "path" and parameter["schema"]["pattern"]
    message = schema["components"]["schemas"]["MessageRequest"]
    assert message["required"] == ["message"] and message["properties"]["message"]["minLength"] == 1


async def test_the_page_and_its_files_are_served_from_the_package_without_external_urls():
    async with asgi_client(app_for(ScriptedChatModel(responses=[]), [get_status])) as client:
        page = await client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        files = {name: await client.get(f"/static/{name}") for name in ("app.js", "markdown.js", "style.css")}
    assert all(response.status_code == 200 for response in files.values())
    assert files["app.js"].headers["content-type"].startswith(("text/javascript", "application/javascript"))
    assert '<script src="/static/app.js">' in page.text and '<form id="chat">' in page.text
    for text in (page.text, *(response.text for response in files.values())):
        assert "http://" not in text and "https://" not in text and "//cdn" not in text


def test_serve_refuses_bad_settings_with_exit_status_2(capsys):
    assert main(["serve", "--max-iterations", "0"]) == 2
    assert main(["serve", "--max-message-chars", "0"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert errors == ["reactgraph: error: --max-iterations must be at least 1",
                      "reactgraph: error: max_message_chars must be at least 1, got 0"]


def test_serve_command_options():
    args = _parser().parse_args(["serve"])
    assert (args.host, args.port, args.checkpoints, args.max_message_chars) == ("127.0.0.1", 8000, None, None)
    args = _parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "9001", "--checkpoints", "memory",
                                 "--max-message-chars", "500", "--max-iterations", "4", "--json-mode"])
    assert (args.host, args.port, args.checkpoints, args.max_message_chars, args.max_iterations, args.json_mode) == (
        "0.0.0.0", 9001, "memory", 500, 4, True)
    settings = _server_settings(args)
    assert (settings.max_message_chars, settings.max_body_bytes) == (500, DEFAULT_MAX_BODY_BYTES)
    assert settings.allowed_hosts == ("localhost", "127.0.0.1", "::1")  # a wildcard address names no host
    lan = _server_settings(_parser().parse_args(["serve", "--host", "192.168.1.5", "--max-body-bytes", "9000"]))
    assert lan.allowed_hosts == ("localhost", "127.0.0.1", "::1", "192.168.1.5") and lan.max_body_bytes == 9000
    named = _parser().parse_args(["serve", "--host", "0.0.0.0", "--allowed-host", "plant.example", "--allowed-host", "*"])
    assert _server_settings(named).allowed_hosts == ("plant.example", "*")



async def test_resume_endpoint_finishes_a_run_whose_model_kept_failing():
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-003"}, "c1")]),
                                         RuntimeError("model endpoint rejected the request"), "CNC-003 is normal."],
                              synthesis="CNC-003 is **normal**.")
    async with asgi_client(app_for(model, [get_status])) as client:
        assert (await client.post("/threads/nope/resume")).status_code == 404
        failed = parse_sse((await client.post("/threads/plant-9/runs", json={"message": "CNC-003?"})).text)
        assert [channel for channel, _ in failed][-5:] == ["error", "answer", "answer", "answer", "done"]
        state = (await client.get("/threads/plant-9")).json()
        assert state["status"] == "interrupted" and state["running"] is False
        resumed = await client.post("/threads/plant-9/resume")
        assert resumed.status_code == 200 and resumed.headers["content-type"].startswith("text/event-stream")
        events = parse_sse(resumed.text)
        assert not any(channel == "step" and data["type"] == "iteration" for channel, data in events)  # c1 is not run again
        assert events[-1] == ("done", {"answer": "CNC-003 is **normal**.", "iterations": 2, "usage": events[-1][1]["usage"],
                                       "elapsed": events[-1][1]["elapsed"], "finish_reason": "final_answer",
                                       "thread_id": "plant-9",
                                       # CNC-003 is the one value in the answer, and the trace holds it (SPEC R13.1)
                                       "grounding": {"mode": "report", "action": "kept", "checked": 1, "cited": 0,
                                                     "ungrounded": []}})
        assert (await client.get("/threads/plant-9")).json()["status"] == "idle"
        again = await client.post("/threads/plant-9/resume")
        assert again.status_code == 409 and "finished" in again.json()["detail"]
