"""The HTTP server (SPEC §8, §7, R3.2) through httpx's ASGI transport: the SSE
protocol, the error statuses, authentication, early-closed streams, threads across restarts,
the OpenAPI schema and the page's files (the tests that need a real socket are in
``tests/integration/test_server_socket.py``). Models are scripted; every message list they are sent
is checked against the provider protocol."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonschema
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import NoActiveRunError, ReActAgent
from reactgraph.persistence.checkpointing import open_checkpointer
from reactgraph.cli.main import _server_settings, main
from reactgraph.cli.options import build_parser
from reactgraph.protocol.messages import UNFINISHED_TOOL_RESULT, answer_unfinished_tool_calls
from reactgraph.server import DEFAULT_MAX_BODY_BYTES, ServerSettings
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.server_cases import (
    NATIVE,
    app_for,
    asgi_client,
    get_status,
)
from tests.helpers import GatedScan
from tests.serving import parse_sse

# ------------------------------------------------------------------------ the SSE protocol


async def test_synthesis_failure_falls_back_to_the_loops_answer():
    model = ScriptedChatModel(responses=["CNC-003: normal, 71.5°C"], synthesis=ConnectionError("synthesis endpoint down"))
    async with asgi_client(app_for(model, [get_status])) as client:
        response = await client.post("/threads/t/runs", json={"message": "What is the state of CNC-003?"})
    events = parse_sse(response.text)
    answer = [d for channel, d in events if channel == "answer"]
    # The loop's answer stands in for the failed synthesis; no tool returned its figure, so the
    # default (flag) names it under the answer.
    assert answer == [{"status": "start"}, {"status": "delta", "content": "CNC-003: normal, 71.5°C"},
                      {"status": "delta", "content": "\n\n> ⚠ Not found in any tool result: 71.5."}, {"status": "done"}]
    assert events[-1][0] == "done" and events[-1][1]["answer"].startswith("CNC-003: normal, 71.5°C\n\n> ⚠")


# --------------------------------------------------------------------- one run per thread


# -------------------------------------------------------------------------- disconnects


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
        assert blank.status_code == 422 and blank.json()["detail"][0]["msg"] == "Value error, the message is blank"
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


async def test_a_run_ending_while_the_thread_is_read_is_never_shown_as_interrupted():
    # CI found it (test_cut_resume, a client that disconnected): the view read the checkpoint
    # mid-run, the run ended before the view asked whether it was running, and the thread
    # was shown "interrupted"; the client resumed it and got 409 "finished".
    scan = GatedScan()
    app = app_for(ScriptedChatModel(responses=[scan.call("A", "s1"), "A is normal."]), [scan.tool])
    graph = app.state.agent.graph
    read_state = graph.aget_state

    async def read_then_let_the_run_end(config, **kwargs):
        snapshot = await read_state(config, **kwargs)  # mid-run: the tool step is still to commit
        scan.release.set()
        await run  # the run ends and frees the thread before the view goes on
        return snapshot

    async with asgi_client(app) as client:
        run = asyncio.ensure_future(client.post("/threads/t/runs", json={"message": "scan A"}))
        await scan.started.wait()
        graph.aget_state = read_then_let_the_run_end
        view = (await client.get("/threads/t")).json()
        graph.aget_state = read_state
        assert view["running"] is True and view["status"] == "running"  # the client reads again, not resumes
        assert parse_sse((await run).text)[-1][0] == "done"
        after = (await client.get("/threads/t")).json()
    assert (after["running"], after["status"], after["result"]["finish_reason"]) == (False, "idle", "final_answer")


# ------------------------------------------------------------------------ schema and page


async def test_the_openapi_schema_documents_every_endpoint():
    app = app_for(ScriptedChatModel(responses=[]), [get_status], settings=ServerSettings(api_key="k"))
    async with asgi_client(app) as client:
        schema = (await client.get("/openapi.json")).json()
    paths = schema["paths"]
    assert set(paths) == {"/threads/{thread_id}/runs", "/threads/{thread_id}/inject", "/threads/{thread_id}/resume",
                          "/threads/{thread_id}/approvals", "/threads/{thread_id}/cancel", "/threads/{thread_id}",
                          "/healthz", "/agui", "/metrics", "/threads"}
    cancel = paths["/threads/{thread_id}/cancel"]["post"]
    assert set(cancel["responses"]) == {"200", "400", "401", "404", "409", "422"} and "requestBody" not in cancel
    assert cancel["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Cancelled")
    metrics = paths["/metrics"]["get"]
    assert metrics["security"] == [{"HTTPBearer": []}] and set(metrics["responses"]) == {"200", "400", "401"}
    assert "text/plain" in metrics["responses"]["200"]["content"]
    agui = paths["/agui"]["post"]
    assert set(agui["responses"]) == {"200", "400", "401", "404", "409", "413", "422"}
    assert agui["security"] == [{"HTTPBearer": []}] and "text/event-stream" in agui["responses"]["200"]["content"]
    approvals = paths["/threads/{thread_id}/approvals"]["post"]
    assert set(approvals["responses"]) == {"200", "400", "401", "404", "409", "422"}
    assert approvals["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/ApprovalsRequest")
    resume = paths["/threads/{thread_id}/resume"]["post"]
    assert set(resume["responses"]) == {"200", "400", "401", "404", "409", "422"} and "requestBody" not in resume
    runs = paths["/threads/{thread_id}/runs"]["post"]
    assert set(runs["responses"]) == {"200", "400", "401", "404", "409", "413", "422"}
    assert "text/event-stream" in runs["responses"]["200"]["content"]
    assert runs["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/RunRequest")
    assert runs["security"] == [{"HTTPBearer": []}]
    inject = paths["/threads/{thread_id}/inject"]["post"]
    assert set(inject["responses"]) == {"202", "400", "401", "404", "409", "413", "422", "429"}
    assert inject["responses"]["202"]["content"]["application/json"]["schema"]["$ref"].endswith("/Accepted")
    thread = paths["/threads/{thread_id}"]["get"]
    assert set(thread["responses"]) == {"200", "400", "401", "404", "422"}
    removal = paths["/threads/{thread_id}"]["delete"]
    assert set(removal["responses"]) == {"200", "400", "401", "404", "409", "422"}
    assert removal["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Deleted")
    listing = paths["/threads"]["get"]
    assert {parameter["name"] for parameter in listing["parameters"]} == {"limit", "offset"}
    assert listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/ThreadList")
    assert thread["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/ThreadState")
    assert "security" not in paths["/healthz"]["get"]
    parameter = runs["parameters"][0]
    assert parameter["name"] == "thread_id" and parameter["in"] == "path" and parameter["schema"]["pattern"]
    message = schema["components"]["schemas"]["MessageRequest"]
    assert message["required"] == ["message"] and message["properties"]["message"]["minLength"] == 1
    run = schema["components"]["schemas"]["RunRequest"]  # The mode a run asks for
    assert run["required"] == ["message"] and run["additionalProperties"] is False
    assert run["properties"]["mode"]["anyOf"][0] == {"type": "string", "enum": ["react"]}  # no DAG agent here
    assert "SPEC §9" in run["properties"]["mode"]["description"]


def schema_validator(openapi: dict[str, Any], schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """A validator of ``schema`` whose ``$ref``s resolve in the OpenAPI document."""
    return jsonschema.Draft202012Validator({**schema, "components": openapi["components"]})


async def test_the_openapi_schema_allows_exactly_the_bodies_and_headers_the_server_takes():
    """the schema allowed a message of white space (``"\\f"``), an AG-UI body without a
    question or with messages without their ``role``, and asked a keyless server's clients
    for an ``Authorization`` header; the server refused the bodies and ignored the header."""
    async with asgi_client(app_for(ScriptedChatModel(responses=[]), [get_status])) as client:
        openapi = (await client.get("/openapi.json")).json()
        assert not any("security" in operation for methods in openapi["paths"].values()
                       for operation in methods.values())
        message = schema_validator(openapi, {"$ref": "#/components/schemas/MessageRequest"})
        for text in ("\f", " \u3000\n", "\x1f", "\u2028", "a", " x ", "\u200b"):
            refused = (await client.post("/threads/t/inject", json={"message": text})).status_code == 422
            assert message.is_valid({"message": text}) is not refused, repr(text)  # 409 (no run) when taken
        agui = schema_validator(openapi, {"$ref": "#/components/schemas/AguiRunInput"})
        base = {"threadId": "t", "runId": "r", "state": None, "tools": [], "context": [], "forwardedProps": None}
        bodies = [
            {**base, "messages": []},
            {**base, "messages": [{"id": "1", "role": "assistant", "content": "hi"}]},
            {**base, "messages": [{"id": "1", "role": "user", "content": "\f"}]},
            {**base, "messages": [{"id": "1", "content": "no role"}]},
            {**base, "messages": [{"id": "1", "role": "user", "content": [{"text": "no type"}]}]},
            {**base, "messages": [{"id": "1", "role": "user", "content": [{"type": "text", "text": " "}]}]},
            {**base, "messages": [], "resume": []},
        ]
        for body in bodies:
            answer = await client.post("/agui", json=body)
            assert answer.status_code == 422 and not agui.is_valid(body), body
        question = {**base, "messages": [{"id": "1", "role": "user", "content": "hi"},
                                         {"id": "2", "role": "user", "content": [{"type": "text", "text": " "}]}]}
        assert agui.is_valid(question) and agui.is_valid({**base, "messages": [], "resume": [
            {"interruptId": "i", "status": "resolved"}]})


async def test_the_event_streams_schema_describes_every_event_sent():
    """the schema said ``string`` for the streams; each event is an object (OpenAPI
    3.1: the schema of ``text/event-stream`` describes one event), named by its channel on
    ``/runs`` and ``message`` (no ``event:`` line) on ``/agui``."""
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"machine": "CNC-003"})]),
                                         "CNC-003 is normal"], repeat_last=True)
    async with asgi_client(app_for(model, [get_status])) as client:
        openapi = (await client.get("/openapi.json")).json()
        runs = await client.post("/threads/t/runs", json={"message": "CNC-003?"})
        agui = await client.post("/agui", json={"threadId": "u", "runId": "r", "state": None, "tools": [], "context": [],
                                                "forwardedProps": None,
                                                "messages": [{"id": "1", "role": "user", "content": "CNC-003?"}]})
    for path, response, default in (("/threads/{thread_id}/runs", runs, None), ("/agui", agui, "message")):
        content = openapi["paths"][path]["post"]["responses"]["200"]["content"]
        assert set(content) == {"text/event-stream"}
        validator = schema_validator(openapi, content["text/event-stream"]["schema"])
        events = [dict(line.split(": ", 1) for line in frame.splitlines() if not line.startswith(":"))
                  for frame in response.text.split("\n\n") if frame.strip() and not frame.startswith(":")]
        assert len(events) > 4
        for event in events:
            event.setdefault("event", default)
            json.loads(event["data"])
            assert validator.is_valid(event), event


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
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.checkpoints, args.max_message_chars) == ("127.0.0.1", 8000, None, None)
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "9001", "--checkpoints", "memory",
                                 "--max-message-chars", "500", "--max-iterations", "4", "--json-mode"])
    assert (args.host, args.port, args.checkpoints, args.max_message_chars, args.max_iterations, args.json_mode) == (
        "0.0.0.0", 9001, "memory", 500, 4, True)
    settings = _server_settings(args)
    assert (settings.max_message_chars, settings.max_body_bytes) == (500, DEFAULT_MAX_BODY_BYTES)
    assert settings.allowed_hosts == ("localhost", "127.0.0.1", "::1")  # a wildcard address names no host
    lan = _server_settings(build_parser().parse_args(["serve", "--host", "192.168.1.5", "--max-body-bytes", "9000"]))
    assert lan.allowed_hosts == ("localhost", "127.0.0.1", "::1", "192.168.1.5") and lan.max_body_bytes == 9000
    named = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--allowed-host", "plant.example", "--allowed-host", "*"])
    assert _server_settings(named).allowed_hosts == ("plant.example", "*")
    assert settings.default_mode == "react" and args.max_rounds == 3  # Both modes served, react by default
    dag = build_parser().parse_args(["serve", "--dag", "--max-rounds", "2"])
    assert _server_settings(dag).default_mode == "dag" and dag.max_rounds == 2


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
                                       "grounding": {"mode": "flag", "action": "kept", "checked": 1, "cited": 0,
                                                     "ungrounded": []}})
        assert (await client.get("/threads/plant-9")).json()["status"] == "idle"
        again = await client.post("/threads/plant-9/resume")
        assert again.status_code == 409 and "finished" in again.json()["detail"]


def test_a_serving_process_freezes_its_startup_heap():
    """``tune_gc``, in a process of its own: what is alive when serving starts is
    frozen out of every later collection."""
    import subprocess
    import sys

    probe = ("import gc; from reactgraph.server import tune_gc; import reactgraph.server.app; "
             "assert gc.get_freeze_count() == 0; tune_gc(); print(gc.get_freeze_count() > 10000)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["True"]


async def test_serve_tunes_the_collector_before_it_listens(monkeypatch):
    import importlib

    serve_module = importlib.import_module("reactgraph.server.serve")  # the package's ``serve`` is the function

    calls: list[str] = []

    class FakeServer:
        def __init__(self, config):
            self.config = config

        async def serve(self, sockets=None):
            calls.append("listen")

    monkeypatch.setattr(serve_module, "tune_gc", lambda: calls.append("tune_gc"))
    monkeypatch.setattr(serve_module.uvicorn, "Server", FakeServer)
    await serve_module.serve(object(), port=0)
    assert calls == ["tune_gc", "listen"]
