"""Tool call ids on the page (point 8), in headless Chromium against a real
uvicorn server: a provider chooses the ids, and ``__proto__``, ``constructor``,
``toString`` or ``hasOwnProperty`` as keys of plain objects broke the stream ("the
stream broke off: TypeError") or merged cards — in the stream, and in the thread drawn
again from ``GET /threads/{id}`` after a reload, while calls wait and once the run ended."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.demo.factory import build_factory_hub
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.integration.test_browser import ask, browser_page
from tests.integration.test_browser_approval import ORDERS, orders
from tests.serving import running_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CALLS = [("get_equipment_status", {"equipment_id": "CNC-003"}, "toString"),
         ("get_equipment_status", {"equipment_id": "PRS-001"}, "hasOwnProperty"),
         ("create_work_order", ORDERS["w1"], "__proto__"),
         ("create_work_order", ORDERS["w2"], "constructor")]


async def test_tool_call_ids_named_like_object_members_keep_their_own_cards(tmp_path):
    db = tmp_path / "factory.db"
    hub = {t.name: t for t in build_factory_hub(db)}
    batch = AIMessage(content="", tool_calls=[tool_call(name, args, call_id) for name, args, call_id in CALLS])
    agent = ReActAgent(ScriptedChatModel(responses=[batch, "Both orders created."], synthesis="Both orders are open."),
                       [hub["get_equipment_status"], hub["create_work_order"]], abilities=ModelAbilities(tool_call=True),
                       checkpointer=InMemorySaver(), settings=AgentSettings(tool_selection=False, synthesis="always"))
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        await ask(page, "Check CNC-003 and PRS-001 and open a work order for each")
        await page.locator(".waiting-note").wait_for(timeout=30_000)
        waiting = page.locator('details.tool-card[data-status="waiting"]')
        assert await waiting.count() == 2
        await page.reload()  # drawn again from GET /threads/{id}: the waiting calls keyed by those ids
        await page.locator(".waiting-note").wait_for(timeout=30_000)
        assert "broke off" not in await page.locator("body").inner_text()
        assert await waiting.count() == 2
        assert await page.locator('details.tool-card[data-status="ok"]').count() == 2
        await waiting.nth(0).locator("button.approve").click()
        assert orders(db) == []  # one decision of two: nothing sent yet
        await waiting.nth(1).locator("button.approve").click()
        await page.locator(".answer .footer").wait_for(timeout=30_000)
        assert "broke off" not in await page.locator("body").inner_text()
        assert await page.locator("details.tool-card").count() == 4
        assert await page.locator('details.tool-card[data-status="ok"]').count() == 4
        await page.reload()  # the finished thread read back: still four cards of their own
        await page.locator(".answer .answer-body").wait_for(timeout=30_000)
        assert "broke off" not in await page.locator("body").inner_text()
        assert await page.locator('details.tool-card[data-status="ok"]').count() == 4
    assert sorted(row[1] for row in orders(db)) == ["CNC-003", "PRS-001"]  # both ran, once each
