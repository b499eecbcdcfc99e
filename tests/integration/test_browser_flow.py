"""The page as a newcomer uses it, in headless Chromium against a real uvicorn
server with scripted models: approval never asks twice, "New conversation" while a call
waits and coming back to decide it, Stop and Resume, the timer while the model thinks, the
finish reason in the footer, a 390 px phone screen, and no request leaving the host."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ReActAgent
from reactgraph.demo.factory import build_factory_hub
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.integration.test_browser import artifact_path, ask, browser_page
from tests.integration.test_browser_approval import orders
from tests.serving import running_server
from tests.helpers import NATIVE_TOOLS_ONLY

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ORDER = {"equipment_id": "CNC-003", "description": "Replace the spindle bearing", "priority": "normal"}
EDITED = {**ORDER, "priority": "urgent"}


def work_order_agent(db: Path, responses: list) -> ReActAgent:
    tools = [t for t in build_factory_hub(db) if t.name == "create_work_order"]  # approval required by default
    def synthesis(messages: list) -> str:
        asked = " ".join(str(message.content) for message in messages)
        return "The plant runs three shifts." if "shifts" in asked else "Handled the work order request."

    model = ScriptedChatModel(responses=responses, synthesis=synthesis)
    return ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                      settings=AgentSettings(tool_selection=False, synthesis="always"))


def asks_twice(first: str, second: str) -> list:
    """The model proposes the work order, then (after the decision) proposes it again as it first wrote it."""
    return [AIMessage("", tool_calls=[tool_call("create_work_order", ORDER, first)]),
            AIMessage("", tool_calls=[tool_call("create_work_order", ORDER, second)]), "Done."]


async def test_approve_edit_and_reject_are_each_asked_once(tmp_path):
    db = tmp_path / "factory.db"
    agent = work_order_agent(db, [*asks_twice("a1", "a2"), *asks_twice("e1", "e2"), *asks_twice("r1", "r2")])
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        for kind in ("approve", "edit", "reject"):
            await page.click("#new-thread")
            await ask(page, "Create a maintenance work order for CNC-003: replace the spindle bearing")
            card = page.locator('details.tool-card[data-status="waiting"]')
            await card.wait_for(timeout=30_000)
            if kind == "edit":
                await card.locator("button.edit").click()
                await card.locator("textarea.approval-args").fill(json.dumps(EDITED))
                await card.locator("button.approve").click()
            else:
                await card.locator(f"button.{kind}").click()
            await page.locator(".answer .footer").wait_for(timeout=30_000)
            cards = page.locator("details.tool-card")
            assert await cards.count() == 2
            assert await page.locator(".approval-buttons").count() == 0  # never asked a second time
            assert await page.locator('details.tool-card[data-status="error"]').count() == 0
            assert await cards.nth(1).get_attribute("data-status") == "repeat"
            repeat = await cards.nth(1).locator(".state").inner_text()
            assert ("rejected before" if kind == "reject" else "earlier result") in repeat
            if kind == "reject":
                assert await cards.nth(0).get_attribute("data-status") == "rejected"
            else:
                assert "Created work order" in await cards.nth(1).locator("pre.observation").text_content()
            if kind == "approve":
                await page.screenshot(path=str(artifact_path("browser-approval-repeat.png")), full_page=True)
    assert [row[:3] for row in orders(db)] == [("WO-R0001", "CNC-003", "normal"), ("WO-R0002", "CNC-003", "urgent")]


async def test_a_new_conversation_while_a_call_waits_and_coming_back_to_decide_it(tmp_path):
    db = tmp_path / "factory.db"
    responses = [AIMessage("", tool_calls=[tool_call("create_work_order", ORDER, "w1")]),  # conversation 1 pauses
                 "No tools needed: the plant runs three shifts.",  # conversation 2
                 "Work order created."]  # conversation 1, after the decision
    agent = work_order_agent(db, responses)
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        await ask(page, "Open a work order for CNC-003")
        await page.locator(".waiting-note").wait_for(timeout=30_000)
        waiting_thread = page.url.split("#", 1)[1]
        await ask(page, "something else")  # not lost silently: the page says what to do
        assert "New conversation" in await page.locator("#notice").inner_text()

        await page.click("#new-thread")
        assert await page.locator("details.tool-card").count() == 0 and not await page.locator("#notice").is_visible()
        await ask(page, "How many shifts does the plant run?")
        footer = page.locator(".answer .footer")
        await footer.wait_for(timeout=30_000)
        assert "three shifts" in await page.locator(".answer .answer-body").inner_text()

        options = await page.locator("#conversations option").evaluate_all("os => os.map(o => o.value)")
        assert waiting_thread in options and len(options) == 2
        await page.select_option("#conversations", waiting_thread)
        card = page.locator('details.tool-card[data-status="waiting"]')
        await card.wait_for(timeout=30_000)
        assert await page.locator(".user").inner_text() == "Open a work order for CNC-003"
        assert json.loads(await card.locator("pre.args").inner_text()) == ORDER
        await card.locator("button.approve").click()
        await page.locator(".answer .footer").wait_for(timeout=30_000)
        assert (await page.locator(".answer .footer").inner_text()).startswith("Answered in ")
        assert [row[:3] for row in orders(db)] == [("WO-R0001", "CNC-003", "normal")]

        await page.reload()  # the conversation is in the address: a reload shows it again, decided
        await page.locator(".answer .answer-body").wait_for()
        assert "Handled the work order request." in await page.locator(".answer .answer-body").inner_text()
        assert "Created work order WO-R0001" in await page.locator("details.tool-card pre.observation").text_content()


async def test_stop_ends_the_run_and_resume_finishes_it():
    release = asyncio.Event()

    @tool
    async def inspect_machine(machine: str) -> str:
        """Inspect one machine (waits until the test lets it finish)."""
        await release.wait()
        return f"{machine}: spindle 71.5°C"

    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("inspect_machine", {"machine": "CNC-001"}, "a")]), "Warm."],
        synthesis="CNC-001's spindle is at **71.5°C**.")
    agent = ReActAgent(model, [inspect_machine], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                       settings=AgentSettings(synthesis="always"))  # the synthesis call writes the answer
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        assert not await page.locator("#stop").is_visible()
        await ask(page, "Inspect CNC-001")
        await page.locator('details.tool-card[data-status="running"]').wait_for(timeout=30_000)
        await page.locator(".status .timer", has_text=" s").wait_for(timeout=30_000)  # the seconds count up
        assert await page.locator("#new-thread").is_disabled()
        await page.click("#stop")
        stopped = page.locator(".stopped")
        await stopped.wait_for(timeout=30_000)
        assert "Stopped" in await stopped.inner_text() and await stopped.locator("button.resume").is_visible()
        assert not await page.locator("#stop").is_visible() and not await page.locator("#new-thread").is_disabled()
        assert await page.locator(".answer").count() == 0
        assert await page.locator("details.tool-card").get_attribute("data-status") == "stopped"

        release.set()
        await stopped.locator("button.resume").click()
        footer = page.locator(".answer .footer")
        await footer.wait_for(timeout=30_000)
        assert "71.5°C" in await page.locator(".answer .answer-body").inner_text()
        assert (await footer.inner_text()).startswith("Answered in ")
        assert await page.locator(".stopped").count() == 0
        assert await page.locator("details.tool-card").get_attribute("data-status") == "ok"  # the call ran on resume


async def test_a_phone_screen_has_no_sideways_scroll_and_nothing_leaves_the_host():
    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("read_log", {"machine": "CNC-003"}, "a")]), "Read."],
        synthesis="| machine | spindle temperature | vibration | active alarm | last maintenance |\n"
                  "|---|---|---|---|---|\n"
                  "| CNC-003 | 71.5 °C | 4.2 mm/s | W-1105 spindle over temperature | 2026-11-02 |\n\n"
                  "CNC-003 상태: **경고** (W-1105). " + "https://example.org/" + "x" * 120)

    @tool
    def read_log(machine: str) -> str:
        """Read a machine's log."""
        return f"{machine}: " + "W-1105/spindle-over-temperature;" * 12

    agent = ReActAgent(model, [read_log], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                       settings=AgentSettings(synthesis="always"))  # the synthesis call writes the answer
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        await page.set_viewport_size({"width": 390, "height": 844})
        await page.reload()
        await page.wait_for_load_state("networkidle")
        assert requests and all(item.startswith(url + "/") for item in requests), requests
        icon = await page.request.get(url + "/favicon.ico")
        assert icon.status == 200 and icon.headers["content-type"].startswith("image/")

        await ask(page, "CNC-003 로그 보여줘")
        await page.locator(".answer .footer").wait_for(timeout=30_000)
        await page.locator("details.tool-card summary").click()
        await page.screenshot(path=str(artifact_path("browser-390px.png")), full_page=True)
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        for selector in ("#new-thread", "#conversations", "#send", "#message"):
            box = await page.locator(selector).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (selector, box)
        korean = await page.evaluate("""() => {
          const probe = document.createElement("span");
          probe.textContent = "경고";
          document.querySelector(".answer-body").appendChild(probe);
          const font = getComputedStyle(probe).fontFamily;
          const ok = document.fonts.check("15px " + font, "경고");
          probe.remove();
          return [font, ok];
        }""")
        assert "Noto Sans CJK KR" in korean[0] and korean[1], korean
        assert all(item.startswith(url + "/") for item in requests), requests
