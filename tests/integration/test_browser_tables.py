"""Tables people can read, in headless Chromium (SPEC §8, R13.1): an answer made of a compare
tool's eight-column rows at a phone's width (390 px) scrolls sideways inside its box, no word
is broken letter by letter, and no table has an empty header row (rows whose columns the
output does not name are a list). Scripted model, non-demo tools."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from reactgraph import AgentSettings, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel
from tests.helpers import SMALL_SCHEMA
from tests.integration.test_browser import artifact_path, ask, browser_page
from tests.serving import running_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


ROWS = [f"PMP-00{n} | Booster pump station {n} | running | 4{n}.5 bar | 7{n}.2 m3/h | 6{n}.0 °C | 2026-02-1{n} | "
        f"0{n} alarms" for n in (1, 3)]
NAMED = "\n".join(["2 pump(s) compared:", "id | name | state | pressure | flow | temperature | last service | alarms",
                    *ROWS])
"""Rows under a header row that names their columns (the tool's own output says them)."""
BARE = "\n".join(["2 pump(s) compared:", *ROWS])
"""The same rows with nothing naming their columns: shown as a list."""


class Pair(BaseModel):
    first: str
    second: str


def hub() -> list[StructuredTool]:
    described = StructuredTool.from_function(
        lambda first, second: NAMED, name="compare_pumps", args_schema=Pair, description="Compare two pumps.")
    bare = StructuredTool.from_function(lambda first, second: BARE, name="pump_rows", args_schema=Pair,
                                        description="Rows about two pumps.")
    return [described, bare]


WORDS_WHOLE = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll('.answer td, .answer th')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\\S+/g;
      let match;
      while ((match = re.exec(node.data))) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}"""

EMPTY_HEADERS = """() => Array.from(document.querySelectorAll('.answer table')).filter(table => {
  const heads = Array.from(table.querySelectorAll('th'));
  return heads.length === 0 || heads.some(th => !th.textContent.trim());
}).length"""


@pytest.mark.parametrize("tool_name, table", [("compare_pumps", True), ("pump_rows", False)])
async def test_a_wide_table_at_390_px_keeps_every_word_whole_and_names_its_columns(tool_name, table):
    loop = json.dumps({"type": "tool_call", "reasoning": "", "tool_name": tool_name,
                       "tool_args": {"first": "PMP-001", "second": "PMP-003"}})
    # every tool offered: the subject is how the answer's rows render, not which tool the question ranks first
    agent = ReActAgent(ScriptedChatModel(responses=[loop], repeat_last=True), hub(), abilities=SMALL_SCHEMA,
                       settings=AgentSettings(tool_selection=False))
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        await page.set_viewport_size({"width": 390, "height": 844})
        await ask(page, "Compare PMP-001 and PMP-003")
        await page.locator(".answer .footer").wait_for(timeout=30_000)
        assert await page.evaluate(EMPTY_HEADERS) == 0
        assert await page.locator(".answer table").count() == (1 if table else 0)
        if table:
            heads = await page.locator(".answer th").all_inner_texts()
            assert heads[0] == "id" and heads[-1] == "alarms" and len(heads) == 8
            assert await page.evaluate(WORDS_WHOLE) == []
            box = await page.locator(".answer table").evaluate("t => [t.scrollWidth, t.clientWidth]")
            assert box[0] > box[1]  # wider than its box: it scrolls inside it
            assert await page.evaluate("document.documentElement.scrollWidth") <= 390  # the page does not
            await page.screenshot(path=str(artifact_path("browser-table-390px.png")), full_page=True)
        else:
            assert "PMP-001 · Booster pump station 1 · running" in await page.locator(".answer .answer-body").inner_text()
