"""The page's conversation list is the server's ``GET /threads`` for the principal of the key
the page holds (headless Chromium, a real uvicorn server, a scripted model): empty without a
key or for a principal with no threads (the page still starts a conversation), the caller's
threads only, newest first, and one of them reopens from the list."""

from __future__ import annotations

import httpx
import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel
from tests.integration.test_browser import ask, browser_page
from tests.serving import running_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@tool
def read_gauge(gauge: str) -> str:
    """Read a pressure gauge."""
    return f"{gauge}: 2.1 bar"


async def options(page) -> list[tuple[str, str]]:
    return await page.locator("#conversations option").evaluate_all("os => os.map(o => [o.value, o.textContent])")


async def test_the_conversation_list_is_the_callers_threads_from_the_server():
    model = ScriptedChatModel(responses=["2.1 bar"], repeat_last=True, synthesis="Der Druck ist 2,1 bar.")
    agent = ReActAgent(model, [read_gauge], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver(),
                       settings=AgentSettings(tool_selection=False, synthesis="always"))
    app = create_app(agent, ServerSettings(api_key="", api_keys={"key-ana": "ana", "key-bo": "bo"}))
    async with running_server(app) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            for thread, question in (("ana-old", "Druck an G-1?"), ("ana-new", "¿presión en G-2?")):
                ran = await http.post(f"/threads/{thread}/runs", json={"message": question},
                                      headers={"Authorization": "Bearer key-ana"})
                assert ran.status_code == 200
        async with browser_page(url) as page:
            listed = await options(page)  # no key yet: the list is empty, the page still works
            assert len(listed) == 1 and listed[0][1] == "new conversation"

            await page.evaluate("sessionStorage.setItem('reactgraph.key', 'key-bo')")
            await page.reload()
            await page.wait_for_load_state("networkidle")
            assert [text for _, text in await options(page)] == ["new conversation"]  # bo has none
            await ask(page, "G-3 の圧力は?")
            await page.locator(".answer .footer").wait_for(timeout=30_000)
            assert [text for _, text in await options(page)] == ["G-3 の圧力は?"]

            await page.evaluate("sessionStorage.setItem('reactgraph.key', 'key-ana')")
            await page.goto(url)
            await page.wait_for_load_state("networkidle")
            listed = await options(page)
            assert [value for value, _ in listed][1:] == ["ana-new", "ana-old"]
            assert [text for _, text in listed][1:] == ["¿presión en G-2?", "Druck an G-1?"]
            await page.select_option("#conversations", "ana-old")
            await page.locator(".user").first.wait_for(timeout=10_000)
            assert await page.locator(".user").first.inner_text() == "Druck an G-1?"
