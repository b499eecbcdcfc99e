"""DAG mode served (SPEC §9, §8): ``POST /threads/{id}/runs`` with ``mode: "dag"``,
the server's default mode, a thread that keeps the mode of its first run, ``/healthz``'s
modes and AG-UI's ``forwardedProps.mode``, through httpx's ASGI transport. The models are
scripted (the planner, steps and analyzer replies of tests/unit/dag/test_dag.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, DAGAgent, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel
from tests.helpers import GatedScan
from tests.serving import parse_sse
from tests.server_cases import NATIVE, asgi_client, get_status
from tests.unit.dag.test_dag import SETTINGS, general_model, kind, plan, step, step_reply, verdict

GOAL = "Compare CNC-001 and CNC-003"


def status_first(messages):
    """A step's loop: step a reads CNC-001's status first (JSON mode), then every step answers."""
    if kind(messages) == "step:a" and len(messages) == 2:
        return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "get_status",
                           "tool_args": {"equipment_id": "CNC-001"}})
    return step_reply(messages)


def dag_app(*, default_mode: str = "react", rounds: int = 1, **settings):
    """An app serving both modes on one checkpointer: the ReAct agent answers "react said so.",
    the DAG agent plans steps a and b (b after a) ``rounds`` times, the analyzer saying yes."""
    saver = InMemorySaver()
    react = ReActAgent(ScriptedChatModel(responses=["react said so."], repeat_last=True), [get_status],
                       abilities=NATIVE, checkpointer=saver)
    general = general_model([plan(step("a", "read CNC-001"), step("b", "compare", deps=["a"]))] * rounds,
                            [verdict(True, 0.95, "CNC-001 and CNC-003 run.")] * rounds,
                            steps=status_first, synthesis="Both machines run.")
    dag = DAGAgent(general, [get_status], settings=SETTINGS, checkpointer=saver, interrupt_queue=react.interrupts)
    app = create_app(react, ServerSettings(api_key="", default_mode=default_mode, **settings), dag_agent=dag)
    return app, general


async def test_a_dag_run_streams_the_plan_the_steps_the_analysis_and_the_answer():
    app, general = dag_app()
    async with asgi_client(app) as client:
        response = await client.post("/threads/d1/runs", json={"message": GOAL, "mode": "dag"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    shapes = [(channel, data.get("status") or data.get("phase")) for channel, data in events]
    assert shapes[:3] == [("phase", "planning"), ("plan", None), ("dag_step", "started")]
    assert shapes.index(("dag_step", "completed")) < shapes.index(("phase", "analyzing")) < shapes.index(("analysis", None))
    [planned] = [data for channel, data in events if channel == "plan"]
    assert [(s["id"], s["dependencies"]) for s in planned["steps"]] == [("a", []), ("b", ["a"])]
    steps = [(data["status"], data["step_id"]) for channel, data in events if channel == "dag_step"
             and data["status"] in ("started", "completed")]
    assert steps == [("started", "a"), ("completed", "a"), ("started", "b"), ("completed", "b")]
    tools = [data for channel, data in events if channel == "dag_step" and data["status"] in ("tool_started", "tool")]
    assert [(t["status"], t["step_id"], t["tool_name"], t["tool_args"]) for t in tools] == [
        ("tool_started", "a", "get_status", {"equipment_id": "CNC-001"}),
        ("tool", "a", "get_status", {"equipment_id": "CNC-001"})]
    assert tools[1]["observation"] == "CNC-001: normal" and tools[0]["tool_call_id"] == tools[1]["tool_call_id"]
    assert "".join(data.get("content", "") for channel, data in events if channel == "answer") == "Both machines run."
    channel, done = events[-1]
    assert channel == "done" and done["thread_id"] == "d1" and done["finish_reason"] == "achieved"
    assert done["rounds"] == 1 and done["achieved"] is True and done["answer"] == "Both machines run."
    assert not [c for c, _ in events if c == "step"]  # no ReAct loop ran the run itself


async def test_dag_is_the_default_mode_of_a_server_that_says_so_and_react_can_still_be_asked_for():
    app, _ = dag_app(default_mode="dag")
    async with asgi_client(app) as client:
        dag = parse_sse((await client.post("/threads/d2/runs", json={"message": GOAL})).text)
        react = parse_sse((await client.post("/threads/r2/runs", json={"message": "CNC-001?", "mode": "react"})).text)
        health = (await client.get("/healthz")).json()
    assert "plan" in [channel for channel, _ in dag] and dag[-1][1]["finish_reason"] == "achieved"
    assert "plan" not in [channel for channel, _ in react] and react[-1][1]["answer"] == "Synthesized answer."
    assert health["modes"] == ["react", "dag"] and health["default_mode"] == "dag"


@pytest.mark.parametrize("mode, reason", [("graph", "Input should be 'react' or 'dag'"), ("", "Input should be"),
                                          (1, "Input should be"), ("DAG", "Input should be 'react' or 'dag'")])
async def test_an_invalid_mode_is_422_with_the_reason(mode, reason):
    app, general = dag_app()
    async with asgi_client(app) as client:
        response = await client.post("/threads/t/runs", json={"message": GOAL, "mode": mode})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "mode"] and reason in error["msg"]
    assert general.calls == []


async def test_dag_mode_on_a_server_without_a_dag_agent_is_422_and_its_health_lists_react_only():
    agent = ReActAgent(ScriptedChatModel(responses=["never"]), [get_status], abilities=NATIVE,
                       checkpointer=InMemorySaver())
    async with asgi_client(create_app(agent, ServerSettings(api_key=""))) as client:
        response = await client.post("/threads/t/runs", json={"message": GOAL, "mode": "dag"})
        health = (await client.get("/healthz")).json()
        schema = (await client.get("/openapi.json")).json()
    assert response.status_code == 422 and "runs no DAG mode" in response.json()["detail"]
    assert health["modes"] == ["react"] and health["default_mode"] == "react"
    # the schema allows no body the server refuses: its modes are the served ones
    assert schema["components"]["schemas"]["RunRequest"]["properties"]["mode"]["anyOf"][0]["enum"] == ["react"]
    async with asgi_client(dag_app()[0]) as client:
        schema = (await client.get("/openapi.json")).json()
    assert schema["components"]["schemas"]["RunRequest"]["properties"]["mode"]["anyOf"][0]["enum"] == ["react", "dag"]


async def test_a_thread_keeps_the_mode_of_its_first_run():
    app, general = dag_app(rounds=2)
    async with asgi_client(app) as client:
        first = await client.post("/threads/d3/runs", json={"message": GOAL, "mode": "dag"})
        other = await client.post("/threads/d3/runs", json={"message": "CNC-001?", "mode": "react"})
        default = await client.post("/threads/d3/runs", json={"message": "CNC-001?"})  # the default is react
        again = await client.post("/threads/d3/runs", json={"message": "And CNC-002?", "mode": "dag"})
        react = await client.post("/threads/r3/runs", json={"message": "CNC-001?"})
        refused = await client.post("/threads/r3/runs", json={"message": GOAL, "mode": "dag"})
    assert first.status_code == 200 and again.status_code == 200
    assert parse_sse(again.text)[-1][1]["finish_reason"] == "achieved"
    for response, held in ((other, "dag"), (default, "dag"), (refused, "react")):
        assert response.status_code == 409
        assert f"holds {held} runs" in response.json()["detail"] and "start another thread" in response.json()["detail"]
    assert react.status_code == 200
    assert sum("Your task (step" in str(call) for call in general.calls) == 6  # two runs: a (tool, answer), b; none refused


def test_the_app_refuses_a_dag_default_without_a_dag_agent_and_a_dag_agent_on_another_store_or_queue():
    react = ReActAgent(ScriptedChatModel(responses=["x"]), [get_status], abilities=NATIVE, checkpointer=InMemorySaver())
    with pytest.raises(ValueError, match="needs a dag_agent"):
        create_app(react, ServerSettings(api_key="", default_mode="dag"))
    for elsewhere in (DAGAgent(ScriptedChatModel(responses=["x"]), [get_status], checkpointer=InMemorySaver(),
                               interrupt_queue=react.interrupts),
                      DAGAgent(ScriptedChatModel(responses=["x"]), [get_status], checkpointer=react.checkpointer)):
        with pytest.raises(ValueError, match="share the ReAct agent's checkpointer and interrupt queue"):
            create_app(react, ServerSettings(api_key=""), dag_agent=elsewhere)
    with pytest.raises(ValueError, match="default_mode"):
        ServerSettings(default_mode="graph")


async def test_agui_runs_dag_mode_when_forwarded_props_ask_for_it():
    app, _ = dag_app()
    body = {"threadId": "ag1", "runId": "run-1", "messages": [{"id": "u1", "role": "user", "content": GOAL}],
            "forwardedProps": {"mode": "dag"}}
    async with asgi_client(app) as client:
        response = await client.post("/agui", json=body)
        refused = await client.post("/agui", json={**body, "threadId": "ag2", "forwardedProps": {"mode": "plan"}})
    events = [json.loads(line[len("data: "):]) for line in response.text.splitlines() if line.startswith("data: ")]
    steps = [(e["type"], e["stepName"]) for e in events if e["type"].startswith("STEP_")]
    assert steps == [("STEP_STARTED", "planning:1"), ("STEP_FINISHED", "planning:1"),
                     ("STEP_STARTED", "step:1:a"), ("STEP_FINISHED", "step:1:a"),
                     ("STEP_STARTED", "step:1:b"), ("STEP_FINISHED", "step:1:b"),
                     ("STEP_STARTED", "analyzing:1"), ("STEP_FINISHED", "analyzing:1")]
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["result"]["finish_reason"] == "achieved"
    assert refused.status_code == 422 and "forwardedProps.mode must be one of react, dag" in refused.json()["detail"]


async def test_a_dag_thread_reads_back_with_its_plan_step_outcomes_and_earlier_turns():
    app, _ = dag_app(rounds=2)
    async with asgi_client(app) as client:
        await client.post("/threads/d4/runs", json={"message": GOAL, "mode": "dag"})
        first = (await client.get("/threads/d4")).json()
        await client.post("/threads/d4/runs", json={"message": "And now?", "mode": "dag"})
        second = (await client.get("/threads/d4")).json()
    assert first["mode"] == "dag" and first["status"] == "idle" and not first["running"]
    result = first["result"]
    assert (result["query"], result["answer"], result["finish_reason"], result["rounds"]) == (
        GOAL, "Both machines run.", "achieved", 1)
    assert [(s["id"], s["status"], s["result"], s["dependencies"]) for s in result["plan"]] == [
        ("a", "completed", "result a", []), ("b", "completed", "result b", ["a"])]
    assert [(r["tool_name"], r["tool_args"], r["observation"]) for r in result["steps"]] == [
        ("get_status", {"equipment_id": "CNC-001"}, "CNC-001: normal")]
    assert result["iterations"] == 3 and result["usage"]["model_calls"] >= 5
    assert [(m["type"], m["content"]) for m in first["messages"]] == [("human", GOAL), ("ai", "Both machines run.")]
    assert second["result"]["query"] == "And now?"
    assert second["earlier_turns"] == [{"question": GOAL, "answer": "Both machines run."}]
    assert [m["content"] for m in second["messages"]] == [GOAL, "Both machines run.", "And now?", "Both machines run."]


async def test_an_approval_round_trip_in_a_dag_run_through_the_server():
    """a step's call that needs approval pauses the DAG run (its stream ends with
    ``approval``, the call naming its step); ``GET`` shows it waiting; ``/approvals`` with the
    decision streams the rest of the same run, the approved call running once and the
    parallel step that had finished not running again."""
    ran: list[str] = []

    @tool
    def create_order(machine: str) -> str:
        """Create a maintenance work order (a person approves it first)."""
        ran.append(f"order {machine}")
        return f"WO-1 for {machine}"

    @tool
    def read_status(machine: str) -> str:
        """Read a machine's status."""
        ran.append(f"status {machine}")
        return f"{machine}: normal"

    def orders_first(messages):
        role = kind(messages)
        if len(messages) == 2 and role == "step:a":
            return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "create_order",
                               "tool_args": {"machine": "CNC-003"}})
        if len(messages) == 2 and role == "step:b":
            return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "read_status",
                               "tool_args": {"machine": "PRS-001"}})
        return step_reply(messages)

    saver = InMemorySaver()
    react = ReActAgent(ScriptedChatModel(responses=["never"]), [read_status], abilities=NATIVE, checkpointer=saver)
    general = general_model([plan(step("a", "Open a work order for CNC-003"), step("b", "Read PRS-001"),
                                  step("c", "Summarize", deps=["a", "b"]))],
                            [verdict(True, 0.9, "WO-1 is open; PRS-001 runs.")], steps=orders_first,
                            synthesis="Work order WO-1 is open for CNC-003; PRS-001 runs normally.")
    dag = DAGAgent(general, [create_order, read_status], checkpointer=saver, interrupt_queue=react.interrupts,
                   settings=AgentSettings(max_iterations=3, approval={"create_order": "always"}))
    app = create_app(react, ServerSettings(api_key=""), dag_agent=dag)
    async with asgi_client(app) as client:
        paused = parse_sse((await client.post("/threads/ap1/runs", json={"message": GOAL, "mode": "dag"})).text)
        waiting = (await client.get("/threads/ap1")).json()
        [approval] = [data for channel, data in paused if channel == "approval"]
        [call] = approval["pending"]
        wrong = await client.post("/threads/ap1/approvals",
                                  json={"decisions": [{"tool_call_id": "nope", "type": "approve"}]})
        resumed = parse_sse((await client.post("/threads/ap1/approvals", json={
            "decisions": [{"tool_call_id": call["interrupt_id"], "type": "approve"}]})).text)
        after = (await client.get("/threads/ap1")).json()
    assert paused[-1] == ("done", {**paused[-1][1], "finish_reason": "waiting", "answer": ""})
    assert (call["step_id"], call["tool_name"], call["tool_args"], call["kind"]) == (
        "a", "create_order", {"machine": "CNC-003"}, "approval")
    assert not [data for channel, data in paused if channel == "answer"]
    assert waiting["status"] == "waiting" and waiting["mode"] == "dag"
    assert [(p["step_id"], p["interrupt_id"]) for p in waiting["pending"]] == [("a", call["interrupt_id"])]
    assert wrong.status_code == 422
    assert ran == ["status PRS-001", "order CNC-003"]  # b ran before the pause, a's order only once approved
    done_tools = [(d["step_id"], d["tool_name"]) for c, d in resumed if c == "dag_step" and d["status"] == "tool"]
    assert ("a", "create_order") in done_tools and ("b", "read_status") not in done_tools
    completed = [d["step_id"] for c, d in resumed if c == "dag_step" and d["status"] == "completed"]
    assert completed[-1] == "c" and "a" in completed
    assert resumed[-1][0] == "done" and resumed[-1][1]["finish_reason"] == "achieved"
    assert resumed[-1][1]["answer"] == "Work order WO-1 is open for CNC-003; PRS-001 runs normally."
    assert after["status"] == "idle" and [s["status"] for s in after["result"]["plan"]] == ["completed"] * 3


async def test_a_follow_up_sent_to_a_running_dag_run_reaches_its_next_round():
    """``/inject`` during a DAG run (one queue for both modes) is taken in at the
    plan level (an ``inject`` event) and the next round is planned with it."""
    gate = GatedScan()

    def scan_first(messages):
        if kind(messages) == "step:a" and len(messages) == 2:
            return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "gated_scan",
                               "tool_args": {"machine": "CNC-003"}})
        return step_reply(messages)

    saver = InMemorySaver()
    react = ReActAgent(ScriptedChatModel(responses=["never"]), [get_status], abilities=NATIVE, checkpointer=saver)
    general = general_model([plan(step("a", "Scan CNC-003")), plan(step("b", "Read PRS-001"))],
                            [verdict(True, 0.9, "CNC-003 is fine."), verdict(True, 0.9, "Both are fine.")],
                            steps=scan_first, synthesis="CNC-003 and PRS-001 are fine.")
    dag = DAGAgent(general, [gate.tool, get_status], checkpointer=saver, interrupt_queue=react.interrupts,
                   settings=AgentSettings(max_iterations=3, tool_timeout=30))
    app = create_app(react, ServerSettings(api_key=""), dag_agent=dag)
    async with asgi_client(app) as client:
        run = asyncio.ensure_future(client.post("/threads/f1/runs", json={"message": "Scan CNC-003", "mode": "dag"}))
        await asyncio.wait_for(gate.started.wait(), 10)  # step a's tool runs
        queued = await client.post("/threads/f1/inject", json={"message": "also check PRS-001"})
        gate.release.set()
        events = parse_sse((await run).text)
        idle = await client.post("/threads/f1/inject", json={"message": "too late"})
    assert queued.status_code == 202 and idle.status_code == 409
    assert ("inject", {"type": "inject", "content": "also check PRS-001"}) in events
    plans = [data for channel, data in events if channel == "plan"]
    assert [(p["round"], [s["id"] for s in p["steps"]]) for p in plans] == [(1, ["a"]), (2, ["b"])]
    second_planner = [call for call in general.calls if kind(call) == "planner"][1]
    assert "also check PRS-001" in " ".join(str(m.content) for m in second_planner)
    assert events[-1][0] == "done" and events[-1][1]["rounds"] == 2
