"""Approve / edit / reject on the page's tool cards (SPEC R13.3), in headless
Chromium against a real uvicorn server, with a scripted model and the demo plant's real
``create_work_order`` (approval required by default)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.demo.factory import build_factory_hub
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.integration.test_browser import artifact_path, ask, browser_page
from tests.serving import running_server, serve_process

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ORDERS = {
    "w1": {"equipment_id": "CNC-003", "description": "Replace the spindle bearing", "priority": "normal"},
    "w2": {"equipment_id": "PRS-001", "description": "Check the hydraulic seal", "priority": "low"},
}


def orders(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return [tuple(row[:4]) for row in con.execute("SELECT * FROM work_order_requests ORDER BY wo_id")]
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


async def test_the_approval_buttons_on_the_tool_cards(tmp_path):
    db = tmp_path / "factory.db"
    tools = [t for t in build_factory_hub(db) if t.name in ("create_work_order", "get_equipment_status")]
    model = ScriptedChatModel(
        responses=[AIMessage(content="", tool_calls=[tool_call("get_equipment_status", {"equipment_id": "CNC-003"}, "s1"),
                                                     tool_call("create_work_order", ORDERS["w1"], "w1"),
                                                     tool_call("create_work_order", ORDERS["w2"], "w2")]),
                   "One order created, one rejected."],
        synthesis="Work order **WO-R0001** is open for CNC-003; the PRS-001 order was rejected.")
    agent = ReActAgent(model, tools, abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver(),
                       settings=AgentSettings(tool_selection=False, synthesis="always"))
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        await ask(page, "Check CNC-003 and open the two work orders, for CNC-003 and PRS-001")
        waiting = page.locator('details.tool-card[data-status="waiting"]')
        await page.locator(".waiting-note").wait_for(timeout=30_000)
        assert await waiting.count() == 2 and orders(db) == []
        assert await page.locator('details.tool-card[data-status="ok"]').count() == 1  # the status call ran
        assert "awaiting approval" in await waiting.first.locator(".state").inner_text()

        first, second = waiting.nth(0), waiting.nth(1)
        assert json.loads(await first.locator("pre.args").inner_text()) == ORDERS["w1"]  # shown once, read-only
        assert not await first.locator("textarea.approval-args").is_visible()
        await first.locator("button.edit").click()  # Edit turns the arguments into a JSON box
        box = first.locator("textarea.approval-args")
        assert json.loads(await box.input_value()) == ORDERS["w1"] and not await first.locator("pre.args").is_visible()
        await box.fill('{"equipment_id": "CNC-003",')  # checked as it is typed: no click needed to see it
        assert "not JSON" in await first.locator(".approval-problem").inner_text()
        assert await first.locator("button.approve").is_disabled()
        await box.fill(json.dumps({**ORDERS["w1"], "priority": "urgent"}))
        assert await first.locator(".approval-problem").inner_text() == ""
        await first.locator("button.approve").click()  # changed arguments: approved as an edit
        assert "edited" in await first.locator(".approval-decided").inner_text()
        assert orders(db) == []  # nothing is sent until every waiting call is decided
        await second.locator("input.approval-message").fill("PRS-001 is being replaced next month.")
        await second.locator("button.reject").click()

        footer = page.locator(".answer .footer")
        await footer.wait_for(timeout=30_000)
        await page.screenshot(path=str(artifact_path("browser-approval.png")), full_page=True)
        cards = page.locator("details.tool-card")
        assert await cards.count() == 3  # the decided calls finished on their own cards
        assert await page.locator('details.tool-card[data-status="ok"]').count() == 2
        assert await page.locator('details.tool-card[data-status="error"]').count() == 0  # a rejection is no tool error
        assert "Created work order WO-R0001 for CNC-003" in await cards.nth(1).locator("pre.observation").inner_text()
        assert "edited" in await cards.nth(1).locator(".state").inner_text()
        rejected = cards.nth(2)
        assert await rejected.get_attribute("data-status") == "rejected"
        assert "rejected" in await rejected.locator(".state").inner_text()
        assert "PRS-001 is being replaced next month." in await rejected.locator("pre.rejection").inner_text()
        assert (await rejected.inner_text()).count("PRS-001 is being replaced next month.") == 1  # the message once
        assert "WO-R0001" in await page.locator(".answer .answer-body").inner_text()
        assert '"priority": "urgent"' in await cards.nth(1).locator("pre.args").inner_text()  # the arguments it ran with
        assert await page.locator(".waiting-note").count() == 0

    assert orders(db) == [("WO-R0001", "CNC-003", "urgent", "Replace the spindle bearing")]
    second_call = model.calls_except("synthesis")[1]
    assert {m.tool_call_id: m.status for m in second_call if isinstance(m, ToolMessage)} == \
        {"s1": "success", "w1": "success", "w2": "error"}


@pytest.mark.parametrize("how", ["option", "environment"])
async def test_approval_turned_on_from_the_command_line(tmp_path, monkeypatch, how):
    """``reactgraph serve --approve get_equipment_status`` (or ``$REACTGRAPH_APPROVE``) makes a
    read-only tool ask first: the page shows the card, Approve runs it, the answer follows, and
    the footer counts the run's whole time, before the pause and after it (each loop call of
    the scripted model takes a second)."""
    options = ["--approve", "get_equipment_status"] if how == "option" else []
    if how == "environment":
        monkeypatch.setenv("REACTGRAPH_APPROVE", "get_equipment_status")
    with serve_process(tmp_path, *options) as port:
        async with browser_page(f"http://127.0.0.1:{port}/") as page:
            await ask(page, "Check CNC-003")
            card = page.locator('details.tool-card[data-status="waiting"]')
            await card.wait_for(timeout=30_000)
            assert "awaiting approval" in await card.locator(".state").inner_text()
            assert json.loads(await card.locator("pre.args").inner_text()) == {"equipment_id": "CNC-003"}
            await card.locator("button.approve").click()
            footer = page.locator(".answer .footer .footer-text")
            await footer.wait_for(timeout=30_000)
            assert (await page.locator(".answer .answer-body").inner_text()).strip() == "Status of CNC-003."
            assert await page.locator('details.tool-card[data-status="ok"]').count() == 1
            text = await footer.inner_text()
            seconds = float(re.match(r"Answered in (\d+\.\d) s · ", text).group(1))
            assert seconds >= 2.0, text  # not the resumed part alone
            await page.screenshot(path=str(artifact_path(f"browser-approve-{how}.png")), full_page=True)
