"""Threads have owners: several API keys each name a principal (or a ``principal_of`` hook
does), a thread belongs to the principal whose run started it, and every other principal
is answered 404 on each of its endpoints, AG-UI's included. ``GET /threads`` lists the
caller's threads; ``DELETE /threads/{id}`` removes everything stored for one (SQLite and
Postgres, checked by SQL on their tables)."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from reactgraph import AgentSettings, ReActAgent
from reactgraph.persistence.checkpointing import open_persistence
from reactgraph.cli.main import _server_settings
from reactgraph.cli.options import build_parser
from reactgraph.server import ServerSettings, create_app
from reactgraph.server.owners import API_KEYS_ENV, DEFAULT_PRINCIPAL, OWNERS_TABLE, parse_api_keys
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE
from tests.serving import parse_sse

KEYS = {"key-of-ana": "ana", "key-of-bo": "bo@example.org"}
ANA = {"Authorization": "Bearer key-of-ana"}
BO = {"Authorization": "Bearer key-of-bo"}


@tool
def open_valve(valve: str) -> str:
    """Open a valve (needs approval)."""
    return f"{valve} opened"


@tool
def read_gauge(gauge: str) -> str:
    """Read a pressure gauge."""
    return f"{gauge}: 2.1 bar"


def waiting_model() -> ScriptedChatModel:
    """A model that asks to open a valve (the run then waits for approval)."""
    return ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("open_valve", {"valve": "V-2"}, "v1")]),
                                        "V-2 is open."], synthesis="Ventil V-2 ist offen.")


def owners_app(model: ScriptedChatModel, checkpointer: Any, interrupts: Any = None, **settings: Any):
    extra = {"interrupt_queue": interrupts} if interrupts is not None else {}
    agent = ReActAgent(model, [open_valve, read_gauge], abilities=NATIVE, checkpointer=checkpointer,
                       settings=AgentSettings(approval={"open_valve": "always"}), **extra)
    return create_app(agent, ServerSettings(**{"api_key": "", "api_keys": KEYS, **settings}))


def client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")


def agui_input(thread_id: str, **extra: Any) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "¿V-2?"}],
            **extra}


async def bo_touches(http: httpx.AsyncClient, thread: str) -> dict[str, httpx.Response]:
    """Every thread endpoint, asked by bo."""
    decision = {"decisions": [{"tool_call_id": "v1", "type": "approve"}]}
    return {
        "get": await http.get(f"/threads/{thread}", headers=BO),
        "run": await http.post(f"/threads/{thread}/runs", json={"message": "mine now"}, headers=BO),
        "inject": await http.post(f"/threads/{thread}/inject", json={"message": "and V-3"}, headers=BO),
        "approve": await http.post(f"/threads/{thread}/approvals", json=decision, headers=BO),
        "resume": await http.post(f"/threads/{thread}/resume", headers=BO),
        "cancel": await http.post(f"/threads/{thread}/cancel", headers=BO),
        "delete": await http.delete(f"/threads/{thread}", headers=BO),
        "agui run": await http.post("/agui", json=agui_input(thread), headers=BO),
        "agui resume": await http.post("/agui", json=agui_input(
            thread, resume=[{"interruptId": "v1", "status": "resolved", "payload": {"type": "approve"}}]), headers=BO),
    }


async def test_another_principal_gets_404_on_every_endpoint_of_a_thread_it_does_not_own(checkpoint_url):
    thread = f"owned-{uuid.uuid4().hex}"
    async with open_persistence(checkpoint_url) as persistence:
        app = owners_app(waiting_model(), persistence.checkpointer, persistence.interrupt_queue)
        async with client(app) as http:
            first = parse_sse((await http.post(f"/threads/{thread}/runs", json={"message": "öffne V-2"},
                                               headers=ANA)).text)
            assert [channel for channel, _ in first][-2:] == ["approval", "done"]
            before = (await http.get(f"/threads/{thread}", headers=ANA)).json()

            answers = await bo_touches(http, thread)
            assert {name: answer.status_code for name, answer in answers.items()} == dict.fromkeys(answers, 404)
            for answer in answers.values():  # the same answer as for a thread that does not exist
                assert answer.json() == {"detail": f"unknown thread {thread!r}"}
            nowhere = await http.get("/threads/never-made", headers=BO)
            assert nowhere.json() == {"detail": "unknown thread 'never-made'"}

            after = (await http.get(f"/threads/{thread}", headers=ANA)).json()
            assert after == before and after["status"] == "waiting"
            listed = (await http.get("/threads", params={"limit": 100}, headers=BO)).json()["threads"]
            assert thread not in [item["thread_id"] for item in listed]
            assert thread in [item["thread_id"] for item in (await http.get("/threads", headers=ANA)).json()["threads"]]
            approved = await http.post(f"/threads/{thread}/approvals", headers=ANA,
                                       json={"decisions": [{"tool_call_id": "v1", "type": "approve"}]})
            assert approved.status_code == 200 and parse_sse(approved.text)[-1][1]["answer"] == "Ventil V-2 ist offen."


async def test_the_first_run_decides_the_owner_and_bo_may_start_threads_of_his_own():
    from langgraph.checkpoint.memory import InMemorySaver

    model = ScriptedChatModel(responses=["2.1 bar", "1.9 bar"], synthesis="Druck: 2,1 bar · 圧力: 1.9 bar")
    app = owners_app(model, InMemorySaver())
    async with client(app) as http:
        assert (await http.post("/threads/ana-1/runs", json={"message": "Druck?"}, headers=ANA)).status_code == 200
        assert (await http.post("/threads/bo-1/runs", json={"message": "圧力は?"}, headers=BO)).status_code == 200
        assert (await http.post("/threads/bo-1/runs", json={"message": "again"}, headers=ANA)).status_code == 404
        assert (await http.get("/threads/bo-1", headers=BO)).json()["status"] == "idle"
        unknown = await http.get("/threads", headers={"Authorization": "Bearer nobody"})
        assert unknown.status_code == 401


async def test_get_threads_lists_the_callers_threads_newest_first_in_pages():
    from langgraph.checkpoint.memory import InMemorySaver

    questions = ["Druck an G-1?", "¿presión en G-2?", "G-3 の圧力は?"]
    model = ScriptedChatModel(responses=["ok"] * 4, synthesis="ok")
    app = owners_app(model, InMemorySaver())
    async with client(app) as http:
        for number, question in enumerate(questions, 1):
            await http.post(f"/threads/ana-{number}/runs", json={"message": question}, headers=ANA)
        await http.post("/threads/bo-1/runs", json={"message": "pressure at G-9?"}, headers=BO)
        first = (await http.get("/threads", params={"limit": 2}, headers=ANA)).json()
        second = (await http.get("/threads", params={"limit": 2, "offset": first["next_offset"]}, headers=ANA)).json()
        bo = (await http.get("/threads", headers=BO)).json()
        too_many = await http.get("/threads", params={"limit": 1000}, headers=ANA)
    assert [(item["thread_id"], item["question"], item["status"]) for item in first["threads"]] == [
        ("ana-3", questions[2], "idle"), ("ana-2", questions[1], "idle")]
    assert first["next_offset"] == 2
    assert [item["thread_id"] for item in second["threads"]] == ["ana-1"] and second["next_offset"] is None
    assert [(item["thread_id"], item["question"]) for item in bo["threads"]] == [("bo-1", "pressure at G-9?")]
    assert too_many.status_code == 422


def stored_rows(checkpoint_url: str, thread: str) -> dict[str, int]:
    """Rows naming ``thread`` in every table of the store (SQLite file or Postgres)."""
    if checkpoint_url.startswith("postgres"):
        import psycopg

        with psycopg.connect(checkpoint_url) as conn:
            tables = [row[0] for row in conn.execute(
                "SELECT table_name FROM information_schema.columns WHERE column_name = 'thread_id' "
                "AND table_schema = current_schema()")]
            return {table: conn.execute(f"SELECT count(*) FROM {table} WHERE thread_id = %s", (thread,)).fetchone()[0]
                    for table in tables}
    with sqlite3.connect(checkpoint_url) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        counted = {}
        for table in tables:
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            if "thread_id" in columns:
                counted[table] = conn.execute(f"SELECT count(*) FROM {table} WHERE thread_id = ?", (thread,)).fetchone()[0]
        return counted


async def test_delete_leaves_nothing_of_the_thread_in_the_store(checkpoint_url):
    thread = f"gone-{uuid.uuid4().hex}"
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("read_gauge", {"gauge": "G-1"}, "g1")]),
                                         "2.1 bar"], synthesis="Druck 2,1 bar")
    async with open_persistence(checkpoint_url) as persistence:
        app = owners_app(model, persistence.checkpointer, persistence.interrupt_queue)
        async with client(app) as http:
            ran = await http.post(f"/threads/{thread}/runs", json={"message": "Druck an G-1?"}, headers=ANA)
            assert parse_sse(ran.text)[-1][0] == "done"
            async with persistence.interrupt_queue.running(thread):  # a follow-up its run left queued
                await persistence.interrupt_queue.put(thread, "noch V-3 prüfen")
            stored = stored_rows(checkpoint_url, thread)
            assert stored["checkpoints"] > 0 and stored[OWNERS_TABLE] == 1 and sum(stored.values()) > 2

            assert (await http.delete(f"/threads/{thread}", headers=BO)).status_code == 404
            deleted = await http.delete(f"/threads/{thread}", headers=ANA)
            assert deleted.status_code == 200 and deleted.json() == {"thread_id": thread, "deleted": True}
            assert set(stored_rows(checkpoint_url, thread).values()) == {0}
            assert (await http.get(f"/threads/{thread}", headers=ANA)).status_code == 404
            assert (await http.delete(f"/threads/{thread}", headers=ANA)).status_code == 404
            listed = (await http.get("/threads", params={"limit": 100}, headers=ANA)).json()["threads"]
            assert thread not in [item["thread_id"] for item in listed]


async def test_delete_is_refused_while_a_run_goes_on_the_thread():
    from langgraph.checkpoint.memory import InMemorySaver

    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("open_valve", {"valve": "V-1"}, "v1")]),
                                         "V-1 open"], synthesis="V-1 open")
    app = owners_app(model, InMemorySaver())
    async with client(app) as http:
        await http.post("/threads/busy/runs", json={"message": "open V-1"}, headers=ANA)
        async with app.state.agent.interrupts.running("busy"):  # a run of any process holds the thread
            refused = await http.delete("/threads/busy", headers=ANA)
        assert refused.status_code == 409 and "a run is going" in refused.json()["detail"]
        assert (await http.get("/threads/busy", headers=ANA)).status_code == 200


async def test_a_principal_hook_names_the_caller_and_one_key_keeps_the_default_principal():
    from langgraph.checkpoint.memory import InMemorySaver

    async def by_header(request) -> str | None:
        return request.headers.get("x-user")

    agent = ReActAgent(ScriptedChatModel(responses=["ok", "ok"], synthesis="ok"), [read_gauge],
                       abilities=NATIVE, checkpointer=InMemorySaver())
    app = create_app(agent, ServerSettings(api_key=""), principal_of=by_header)
    async with client(app) as http:
        assert (await http.post("/threads/h/runs", json={"message": "G-1?"})).status_code == 401
        assert (await http.post("/threads/h/runs", json={"message": "G-1?"}, headers={"x-user": "kim"})).status_code == 200
        assert (await http.get("/threads/h", headers={"x-user": "lee"})).status_code == 404
        assert (await http.get("/threads/h", headers={"x-user": "kim"})).status_code == 200
        assert (await http.get("/threads/h", headers={"x-user": "no such name!"})).status_code == 401

    single = ReActAgent(ScriptedChatModel(responses=["ok"], synthesis="ok"), [read_gauge], abilities=NATIVE,
                        checkpointer=InMemorySaver())
    app = create_app(single, ServerSettings(api_key="only", api_keys={}))
    async with client(app) as http:
        await http.post("/threads/s/runs", json={"message": "G-1?"}, headers={"Authorization": "Bearer only"})
        assert await app.state.owners.owner("s") == DEFAULT_PRINCIPAL


def test_api_keys_parse_from_a_list_or_a_file_and_bad_entries_are_refused(tmp_path, monkeypatch):
    assert parse_api_keys("k1=ana, k2=bo\n# comment\nk3=ana") == {"k1": "ana", "k2": "bo", "k3": "ana"}
    listing = tmp_path / "keys"
    listing.write_text("# team keys\nsecret-1=ana\nsecret-2=bo@example.org\n", encoding="utf-8")
    assert parse_api_keys(str(listing)) == {"secret-1": "ana", "secret-2": "bo@example.org"}
    monkeypatch.setenv(API_KEYS_ENV, str(listing))
    assert ServerSettings().resolved_api_keys() == {"secret-1": "ana", "secret-2": "bo@example.org"}
    for bad in ("no-principal", "k=", "k=has space", "a b=ana", "k=ana,k=bo"):
        with pytest.raises(ValueError):
            parse_api_keys(bad)
    with pytest.raises(ValueError):
        ServerSettings(api_keys={"k": "not valid!"})
    served = _server_settings(build_parser().parse_args(["serve", "--client-keys", "k1=ana,k2=bo"]))
    assert served.resolved_api_keys() == {"k1": "ana", "k2": "bo"}


async def test_a_method_a_thread_path_does_not_take_gets_405_naming_every_method_it_takes():
    from langgraph.checkpoint.memory import InMemorySaver

    app = owners_app(waiting_model(), InMemorySaver())
    async with client(app) as http:
        thread = await http.request("PATCH", "/threads/t1", headers=ANA)
        listing = await http.put("/threads", headers=ANA)
    assert thread.status_code == 405 and thread.headers["allow"] == "DELETE, GET"
    assert listing.status_code == 405 and listing.headers["allow"] == "GET"
