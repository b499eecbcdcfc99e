"""DAG mode on the page, in headless Chromium against a real uvicorn server with
scripted models: the mode picker asks for a DAG run, the plan is drawn as a graph of steps
with arrows from their dependencies, and each step's box shows its state while the run goes
(pending, running, completed, failed), with its tool cards in its section; a reload draws
the finished plan again from ``GET /threads/{id}``."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, DAGAgent, DAGSettings, ModelRegistry, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel
from tests.helpers import GatedScan
from tests.integration.test_browser import artifact_path, ask, browser_page
from tests.server_cases import NATIVE, get_status
from tests.serving import running_server
from tests.unit.dag.test_dag import general_model, kind, plan, step, step_reply, verdict

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

GOAL = "Check CNC-003 and PRS-001, compare them, and read the flaky sensor"
SETTINGS = AgentSettings(max_iterations=3, tool_timeout=60, retry_initial_delay=0.01, retry_max_delay=0.02,
                         model_attempts=1)


def call(tool_name: str, **tool_args: str) -> str:
    return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": tool_name, "tool_args": tool_args})


def steps(messages):
    """Step a scans CNC-003 (the gated tool), step b reads PRS-001's status, then each answers."""
    role = kind(messages)
    if len(messages) == 2 and role == "step:a":
        return call("gated_scan", machine="CNC-003")
    if len(messages) == 2 and role == "step:b":
        return call("get_status", equipment_id="PRS-001")
    if role == "step:b":  # a step's answer in Markdown, as a loop's answer often is
        return json.dumps({"type": "final_answer", "reasoning": "", "answer": "**PRS-001**: running\n\n- no alarms"})
    return step_reply(messages)


async def test_the_plan_view_shows_each_steps_state_during_a_run_and_after_a_reload():
    gate = GatedScan()
    the_plan = plan(step("a", "Scan CNC-003"), step("b", "Read the status of PRS-001"),
                    step("c", "Compare CNC-003 and PRS-001", deps=["a", "b"]),
                    step("d", "Read the flaky sensor", model_hint="flaky"))
    general = general_model([the_plan], [verdict(True, 0.9, "CNC-003 and PRS-001 run; the sensor is offline.")],
                            steps=steps, synthesis="CNC-003 and PRS-001 both run; the flaky sensor could not be read.")
    flaky = ScriptedChatModel(responses=[ConnectionError("sensor gateway down")], repeat_last=True)
    saver = InMemorySaver()
    react = ReActAgent(ScriptedChatModel(responses=["never"]), [get_status], abilities=NATIVE, checkpointer=saver)
    dag = DAGAgent(ModelRegistry(general).register("flaky", flaky), [gate.tool, get_status], settings=SETTINGS,
                   dag_settings=DAGSettings(max_rounds=1), checkpointer=saver, interrupt_queue=react.interrupts)
    app = create_app(react, ServerSettings(api_key=""), dag_agent=dag)
    async with running_server(app) as url, browser_page(url) as page:
        picker = page.locator("#mode")
        await picker.wait_for(state="visible", timeout=10_000)  # the server serves DAG mode: the picker shows
        assert await picker.input_value() == "react"  # the server's default
        await picker.select_option("dag")
        await ask(page, GOAL)

        nodes = page.locator(".plan svg .plan-node")
        await nodes.first.wait_for(timeout=30_000)
        node = {step_id: page.locator(f'.plan-node[data-step="{step_id}"]') for step_id in "abcd"}
        await page.wait_for_function(
            "() => ['b', 'd'].every(id => document.querySelector(`.plan-node[data-step=\"${id}\"]`)"
            ".dataset.state !== 'running' && document.querySelector(`.plan-node[data-step=\"${id}\"]`).dataset.state !== 'pending')",
            timeout=30_000)
        await page.locator('.dag-step[data-step="a"] details.tool-card[data-status="running"]').wait_for(timeout=30_000)
        assert gate.started.is_set() and not gate.release.is_set()
        states = {step_id: await node[step_id].get_attribute("data-state") for step_id in "abcd"}
        assert states == {"a": "running", "b": "completed", "c": "pending", "d": "failed"}  # while step a's tool runs
        assert await nodes.count() == 4
        edges = page.locator(".plan svg .plan-edge")
        assert sorted([await edges.nth(i).get_attribute("data-from") + "→" + await edges.nth(i).get_attribute("data-to")
                       for i in range(await edges.count())]) == ["a→c", "b→c"]
        assert "running" in await node["a"].locator(".node-state").text_content()
        assert "Scan CNC-003" in await node["a"].locator(".node-task").text_content()
        assert await page.locator('.dag-step[data-step="b"] details.tool-card[data-status="ok"]').count() == 1
        assert "sensor gateway down" in await page.locator('.dag-step[data-step="d"] .step-result').inner_text()
        result_b = page.locator('.dag-step[data-step="b"] .step-result')
        assert await result_b.locator("strong").inner_text() == "PRS-001"  # rendered, no raw Markdown
        assert "**" not in await result_b.inner_text() and await result_b.locator("li").count() == 1
        status = await page.locator(".status .status-text").inner_text()
        assert "step a" in status and "gated_scan" in status
        await page.screenshot(path=str(artifact_path("browser-dag-running.png")), full_page=True)

        gate.release.set()
        footer = page.locator(".answer .footer")
        await footer.wait_for(timeout=30_000)
        states = {step_id: await node[step_id].get_attribute("data-state") for step_id in "abcd"}
        assert states == {"a": "completed", "b": "completed", "c": "completed", "d": "failed"}
        card = page.locator('.dag-step[data-step="a"] details.tool-card')
        assert await card.get_attribute("data-status") == "ok"
        assert await card.locator(".tool-name").inner_text() == "gated_scan"
        assert "CNC-003: normal" in await card.locator("pre.observation").text_content()
        assert json.loads(await card.locator("pre.args").text_content()) == {"machine": "CNC-003"}
        assert await page.locator(".dag-step").count() == 4 and await page.locator("details.tool-card").count() == 2
        assert "the goal looks reached (sure)" in await page.locator(".analysis").inner_text()
        answer = await page.locator(".answer .answer-body").inner_text()
        assert answer.strip() == "CNC-003 and PRS-001 both run; the flaky sensor could not be read."
        assert (await footer.locator(".footer-text").inner_text()).startswith("The plan reached its goal in ")
        assert "1 planning round" in await footer.inner_text()
        assert "finish_reason: achieved" in await footer.locator(".footer-codes").text_content()
        assert await picker.is_disabled() and await picker.input_value() == "dag"  # the conversation keeps its mode
        await page.screenshot(path=str(artifact_path("browser-dag.png")), full_page=True)

        await page.reload()  # read back with GET /threads/{id}: the same plan, each step in its end state
        await page.locator(".plan svg .plan-node").first.wait_for(timeout=10_000)
        states = {step_id: await node[step_id].get_attribute("data-state") for step_id in "abcd"}
        assert states == {"a": "completed", "b": "completed", "c": "completed", "d": "failed"}
        assert await page.locator("details.tool-card").count() == 2
        assert (await page.locator(".answer .answer-body").inner_text()).strip().startswith("CNC-003 and PRS-001")
        assert await picker.is_disabled() and await picker.input_value() == "dag"
        await page.set_viewport_size({"width": 390, "height": 844})  # a phone: the graph shrinks, nothing scrolls sideways
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        assert (await page.locator(".plan svg").bounding_box())["width"] <= 390
        await page.screenshot(path=str(artifact_path("browser-dag-390px.png")), full_page=True)

        await page.click("#new-thread")  # a new conversation starts in the server's default mode again
        assert not await picker.is_disabled() and await picker.input_value() == "react"


async def test_a_dag_steps_call_waiting_for_approval_is_decided_on_its_card():
    """a step's call that needs approval pauses the DAG run; the page marks its step
    *awaiting approval* and puts Approve / Edit / Reject on the call's card in the step's
    section (also after a reload); approving it continues the same run to its answer."""
    orders: list[str] = []

    @tool
    def create_work_order(equipment_id: str, task: str) -> str:
        """Open a maintenance work order (a person approves it first)."""
        orders.append(f"{equipment_id}: {task}")
        return f"WO-7 opened for {equipment_id}"

    def order_first(messages):
        if len(messages) == 2 and kind(messages) == "step:order":
            return call("create_work_order", equipment_id="CNC-003", task="replace the spindle bearing")
        if len(messages) == 2 and kind(messages) == "step:status":
            return call("get_status", equipment_id="CNC-003")
        return step_reply(messages)

    general = general_model([plan(step("order", "Open a work order for CNC-003"), step("status", "Read CNC-003"))],
                            [verdict(True, 0.9, "WO-7 is open.")], steps=order_first,
                            synthesis="Work order WO-7 is open for CNC-003, which runs.")
    saver = InMemorySaver()
    react = ReActAgent(ScriptedChatModel(responses=["never"]), [get_status], abilities=NATIVE, checkpointer=saver)
    dag = DAGAgent(general, [create_work_order, get_status], checkpointer=saver, interrupt_queue=react.interrupts,
                   settings=AgentSettings(max_iterations=3, approval={"create_work_order": "always"}))
    app = create_app(react, ServerSettings(api_key="", default_mode="dag"), dag_agent=dag)
    async with running_server(app) as url, browser_page(url) as page:
        await page.locator("#mode").wait_for(state="visible", timeout=10_000)
        assert await page.locator("#mode").input_value() == "dag"  # the server's default
        await ask(page, "Open a work order for CNC-003 and read its status")
        await page.locator(".waiting-note").wait_for(timeout=30_000)
        for _ in range(2):  # as the run paused, then read back after a reload
            order = page.locator('.plan-node[data-step="order"]')
            assert await order.get_attribute("data-state") == "waiting"
            assert await page.locator('.plan-node[data-step="status"]').get_attribute("data-state") == "completed"
            card = page.locator('.dag-step[data-step="order"] details.tool-card[data-status="waiting"]')
            assert await card.count() == 1 and orders == []
            assert "awaiting approval" in await card.locator(".state").inner_text()
            assert json.loads(await card.locator("pre.args").inner_text()) == {
                "equipment_id": "CNC-003", "task": "replace the spindle bearing"}
            if _ == 0:
                await page.screenshot(path=str(artifact_path("browser-dag-approval.png")), full_page=True)
                await page.reload()
                await page.locator(".plan svg .plan-node").first.wait_for(timeout=10_000)
        await card.locator("button.approve").click()
        footer = page.locator(".answer .footer")
        await footer.wait_for(timeout=30_000)
        assert orders == ["CNC-003: replace the spindle bearing"]
        assert await page.locator('.plan-node[data-step="order"]').get_attribute("data-state") == "completed"
        done = page.locator('.dag-step[data-step="order"] details.tool-card')
        assert await done.count() == 1 and await done.get_attribute("data-status") == "ok"
        assert "WO-7 opened for CNC-003" in await done.locator("pre.observation").text_content()
        assert (await footer.inner_text()).startswith("The plan reached its goal in ")
        assert await page.locator(".approval-buttons").count() == 0
