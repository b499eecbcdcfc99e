"""Approval over HTTP (SPEC R13.3): the ``approval`` SSE event, ``GET
/threads/{id}`` showing what waits, ``POST /threads/{id}/approvals`` streaming the rest of
the run, and its 404/409/422 answers. A real uvicorn server, SSE parsed from the wire."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import parse_sse, running_server
from tests.helpers import NATIVE

ran: list[dict[str, Any]] = []


@tool
def create_order(equipment_id: str, task: str) -> str:
    """Create a maintenance work order."""
    ran.append({"equipment_id": equipment_id, "task": task})
    return f"WO-1 created for {equipment_id}: {task}"


@tool
def read_status(equipment_id: str) -> str:
    """Read a machine's status."""
    return f"{equipment_id}: warning"


def batch() -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call("read_status", {"equipment_id": "CNC-003"}, "r1"),
                                             tool_call("create_order", {"equipment_id": "CNC-003", "task": "bearing"}, "w1")])


def server_app(model: ScriptedChatModel):
    agent = ReActAgent(model, [create_order, read_status], abilities=NATIVE, checkpointer=InMemorySaver(),
                       settings=AgentSettings(approval={"create_order": "always"}, synthesis="always"))
    return create_app(agent, ServerSettings(api_key=""))


@pytest.fixture(autouse=True)
def fresh_record():
    ran.clear()


async def test_the_approval_round_trip_over_sse():
    model = ScriptedChatModel(responses=[batch(), "WO-1 was created."], synthesis="Work order **WO-1** created.")
    async with running_server(server_app(model)) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        first = parse_sse((await client.post("/threads/plant-1/runs", json={"message": "check and fix CNC-003"})).text)
        channels = [channel for channel, _ in first]
        assert channels[-2:] == ["approval", "done"] and "answer" not in channels
        approval = first[-2][1]
        assert approval["type"] == "approval" and approval["status"] == "waiting" and approval["thread_id"] == "plant-1"
        [pending] = approval["pending"]
        assert (pending["tool_call_id"], pending["tool_name"], pending["tool_args"], pending["kind"]) == \
            ("w1", "create_order", {"equipment_id": "CNC-003", "task": "bearing"}, "approval")
        assert first[-1][1]["finish_reason"] == "waiting" and first[-1][1]["answer"] == ""
        done_cards = [data["tool_call_id"] for channel, data in first
                      if channel == "step" and data["type"] == "iteration" and data["status"] == "done"]
        assert done_cards == ["r1"] and ran == []

        state = (await client.get("/threads/plant-1")).json()
        assert state["status"] == "waiting" and state["running"] is False
        assert [p["tool_call_id"] for p in state["pending"]] == ["w1"]

        response = await client.post("/threads/plant-1/approvals", json={"decisions": [
            {"tool_call_id": "w1", "type": "edit", "args": {"equipment_id": "CNC-003", "task": "replace bearing"}}]})
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        rest = parse_sse(response.text)
        cards = [(data["status"], data["tool_call_id"]) for channel, data in rest
                 if channel == "step" and data["type"] == "iteration"]
        assert ("start", "w1") in cards and ("done", "w1") in cards and ("start", "r1") not in cards
        assert [channel for channel, _ in rest][-1] == "done"
        assert rest[-1][1]["answer"] == "Work order **WO-1** created." and rest[-1][1]["finish_reason"] == "final_answer"
        assert ran == [{"equipment_id": "CNC-003", "task": "replace bearing"}]
        second_loop_call = model.calls_except("synthesis")[1]
        assert {m.tool_call_id for m in second_loop_call if isinstance(m, ToolMessage)} == {"r1", "w1"}

        after = (await client.get("/threads/plant-1")).json()
        assert after["status"] == "idle" and after["pending"] == []
        again = await client.post("/threads/plant-1/approvals", json={"decisions": [{"tool_call_id": "w1", "type": "approve"}]})
        assert again.status_code == 409 and "waits on no decision" in again.json()["detail"]


async def test_a_rejection_reaches_the_model_over_http():
    model = ScriptedChatModel(responses=[batch(), "No order created."], synthesis="No work order.")
    async with running_server(server_app(model)) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        await client.post("/threads/plant-2/runs", json={"message": "fix CNC-003"})
        rest = parse_sse((await client.post("/threads/plant-2/approvals", json={"decisions": [
            {"tool_call_id": "w1", "type": "reject", "message": "Maintenance already scheduled."}]})).text)
        [done] = [data for channel, data in rest if channel == "step" and data["type"] == "iteration"
                  and data["status"] == "done" and data["tool_call_id"] == "w1"]
        assert done["error"] == "Maintenance already scheduled."
    assert ran == []


@pytest.mark.parametrize(("body", "status", "reason"), [
    ({"decisions": [{"tool_call_id": "nope", "type": "approve"}]}, 422, "no pending call 'nope'"),
    ({"decisions": [{"tool_call_id": "w1", "type": "edit"}]}, 422, "needs args"),
    ({"decisions": [{"tool_call_id": "w1", "type": "perhaps"}]}, 422, None),
    ({"decisions": [{"tool_call_id": "w1", "type": "approve", "extra": 1}]}, 422, None),
    ({"decisions": []}, 422, None),
    ({"decisions": [{"tool_call_id": "w1", "type": "approve"}, {"tool_call_id": "w1", "type": "reject"}]}, 422,
     "two decisions"),
])
async def test_bad_decisions_get_422_and_leave_the_run_waiting(body, status, reason):
    model = ScriptedChatModel(responses=[batch(), "ok"])
    async with running_server(server_app(model)) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        await client.post("/threads/plant-3/runs", json={"message": "fix CNC-003"})
        response = await client.post("/threads/plant-3/approvals", json=body)
        assert response.status_code == status, response.text
        if reason:
            assert reason in response.json()["detail"]
        assert (await client.get("/threads/plant-3")).json()["status"] == "waiting"
    assert ran == []


async def test_approvals_on_unknown_or_idle_threads_get_404_and_409():
    model = ScriptedChatModel(responses=["Nothing to do."])
    decision = {"decisions": [{"tool_call_id": "w1", "type": "approve"}]}
    async with running_server(server_app(model)) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        assert (await client.post("/threads/ghost/approvals", json=decision)).status_code == 404
        await client.post("/threads/plant-4/runs", json={"message": "hello"})
        idle = await client.post("/threads/plant-4/approvals", json=decision)
        assert idle.status_code == 409 and "waits on no decision" in idle.json()["detail"]


async def test_one_call_decided_twice_or_edited_with_what_json_cannot_hold_gets_422():
    """a call named by its tool call id and by its interrupt id in one body (the
    later one used to win), edited arguments holding NaN, an infinity or 1e999 (the event
    showed null, the tool got inf), and arguments nested past the bound."""
    model = ScriptedChatModel(responses=[batch(), "ok"])
    async with running_server(server_app(model)) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        await client.post("/threads/plant-6/runs", json={"message": "fix CNC-003"})
        [pending] = (await client.get("/threads/plant-6")).json()["pending"]
        twice = await client.post("/threads/plant-6/approvals", json={"decisions": [
            {"tool_call_id": "w1", "type": "approve"}, {"tool_call_id": pending["interrupt_id"], "type": "reject"}]})
        assert twice.status_code == 422 and "two decisions for call 'w1'" in twice.json()["detail"]
        for number in ("NaN", "Infinity", "-Infinity", "1e999"):
            body = ('{"decisions": [{"tool_call_id": "w1", "type": "edit", "args": {"equipment_id": "CNC-003", '
                    f'"task": "bearing", "torque": {number}}}}}]}}')
            edited = await client.post("/threads/plant-6/approvals", content=body,
                                       headers={"Content-Type": "application/json"})
            assert edited.status_code == 422 and "NaN or an infinite number" in edited.json()["detail"], body
        deep: Any = "x"
        for _ in range(300):
            deep = {"a": deep}
        nested = await client.post("/threads/plant-6/approvals", json={"decisions": [
            {"tool_call_id": "w1", "type": "edit", "args": {"equipment_id": "CNC-003", "task": deep}}]})
        assert nested.status_code == 422 and "nests more than 64 levels" in nested.json()["detail"]
        assert (await client.get("/threads/plant-6")).json()["status"] == "waiting"
    assert ran == []
