"""The page as a newcomer meets it, in headless Chromium at 1280 and 390 px against a real
uvicorn server with scripted models: footers and notices in plain words (the codes only in
a closed details view), every icon the page writes drawn by the fonts ``.ci/run`` installs
(measured against the missing-glyph box), the Resume notice clear of the input bar, the
input's placeholder and the conversations list not cut at 390 px, a thread opened by its
``#id`` named in the list, the served agent's example questions on an empty page, and a
line saying why the mode picker is greyed."""

from __future__ import annotations

import asyncio
import re
import subprocess
import unicodedata
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, DAGAgent, ModelAbilities, ModelRegistry, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.agents.outcome import FINISH_REASONS
from reactgraph.testing import ScriptedChatModel, tool_call
from reactgraph.agents.wording import POLICY_WORDS
from tests.integration.test_browser import artifact_path, ask, browser_page
from tests.serving import running_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

STATIC = Path(__file__).resolve().parents[2] / "reactgraph" / "server" / "static"
WIDTHS = (1280, 390)
CI_FONTS = ("Liberation", "Noto Sans CJK", "Noto Sans Mono CJK")
"""The font families ``.ci/run`` installs (fonts-liberation, fonts-noto-cjk): the page's
font stack names them."""
CODES = sorted({*FINISH_REASONS, *POLICY_WORDS} - {"waiting", "cancelled", "error"})
"""Raw codes no footer or notice may show: every finish reason (``waiting``, ``cancelled`` and
``error`` are plain words) and the safeguard policies' names."""
EXAMPLES = ["How is press P-2 doing?", "Quelles alarmes sont actives sur la ligne 2 ?"]


def page_icons() -> list[str]:
    """Every character the page's own files write that is no letter, digit or mark of a
    script (the icons and punctuation: ✓ × ‖ ⊘ ■ · … →), comments left out."""
    chars: set[str] = set()
    for path in STATIC.glob("*.*"):
        if path.suffix not in (".js", ".html", ".css"):
            continue
        text = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8"), flags=re.S)
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        chars |= {char for char in text if ord(char) > 127 and unicodedata.category(char)[0] not in "LNM"}
    return sorted(chars)


def families_with(char: str) -> set[str]:
    """The installed font families that have a glyph for ``char`` (fontconfig)."""
    listed = subprocess.run(["fc-list", f":charset={ord(char):x}", "family"], capture_output=True, text=True,
                            check=True).stdout
    return {family.strip() for line in listed.splitlines() for family in line.split(",")}


GLYPH_CHECK = """(chars) => {
  const canvas = document.createElement("canvas");
  canvas.width = 48; canvas.height = 48;
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.font = "32px " + getComputedStyle(document.body).fontFamily;
  const draw = (text) => {
    context.clearRect(0, 0, 48, 48);
    context.fillText(text, 4, 36);
    return Array.from(context.getImageData(0, 0, 48, 48).data).join(",");
  };
  const box = draw("\\u{10FFFD}");  // a private-use character no font has: the missing-glyph box
  const blank = draw(" ");
  return { missing: chars.filter((c) => draw(c) === box || draw(c) === blank), boxShown: box !== blank };
}"""


@tool
async def hold_line(line: str) -> str:
    """Hold a production line (waits until the test lets go: never, in these tests)."""
    await asyncio.Event().wait()
    return f"line {line} held"


@tool
def read_counter(line: str) -> str:
    """Read a line's part counter."""
    return f"line {line}: 1,204 parts"


def served_app(responses: list) -> tuple:
    """The ReAct agent on ``responses`` beside a DAG agent (so the mode picker shows), with
    :data:`EXAMPLES` as the example questions."""
    saver = InMemorySaver()
    react = ReActAgent(ScriptedChatModel(responses=responses, synthesis="Line 2 counted **1,204** parts."),
                       [read_counter, hold_line], abilities=ModelAbilities(tool_call=True), checkpointer=saver,
                       settings=AgentSettings(tool_selection=False, max_iterations=2, synthesis="always"))
    dag = DAGAgent(ModelRegistry(ScriptedChatModel(responses=["never"])), [read_counter], checkpointer=saver,
                   interrupt_queue=react.interrupts)
    return create_app(react, ServerSettings(api_key=""), dag_agent=dag, examples=EXAMPLES), react


async def shown_text(page, selector: str) -> str:
    """What a reader sees of every element matching ``selector`` (closed details excluded)."""
    return " ".join([await node.inner_text() for node in await page.locator(selector).all()])


async def test_footers_and_notices_speak_plain_words_and_keep_the_codes_in_details():
    counter = AIMessage(content="", tool_calls=[tool_call("read_counter", {"line": "2"}, "r1")])
    again = AIMessage(content="", tool_calls=[tool_call("read_counter", {"line": "3"}, "r2")])
    app, _ = served_app(["Line 2 is running.", counter, again])  # a final answer, then the step limit
    async with running_server(app) as url, browser_page(url) as page:
        await ask(page, "Is line 2 running?")
        await page.locator(".answer .footer").first.wait_for(timeout=30_000)
        await ask(page, "Wie viele Teile haben Linie 2 und 3 gezählt?")
        await page.locator(".answer .footer").nth(1).wait_for(timeout=30_000)
        footers = page.locator(".answer .footer")
        for width in WIDTHS:
            await page.set_viewport_size({"width": width, "height": 900})
            seen = await shown_text(page, ".footer, .analysis, #notice, #mode-note, .stopped, .divider, .status")
            assert not [code for code in CODES if re.search(rf"\b{code}\b", seen)], seen
            assert "finish:" not in seen and "iterations" not in seen
            await page.screenshot(path=str(artifact_path(f"browser-plain-{width}.png")), full_page=True)
        assert (await footers.nth(0).locator(".footer-text").inner_text()).startswith("Answered in ")
        assert (await footers.nth(1).locator(".footer-text").inner_text()).startswith(
            "Stopped at the step limit and answered with what it had in ")
        codes = footers.nth(1).locator(".footer-codes")  # the codes stay, one click away
        assert not await codes.locator("code").is_visible()
        await codes.locator("summary").click()
        assert "finish_reason: max_iterations" in await codes.locator("code").inner_text()


async def test_every_icon_of_the_page_is_drawn_by_the_fonts_ci_installs():
    icons = page_icons()
    assert {"✓", "×", "‖", "⊘", "■", "·", "…"} <= set(icons)  # the card states and separators are found
    assert "\u23f8" not in icons  # the pause sign no installed font has
    lacking = {icon: families_with(icon) for icon in icons
               if not any(family.startswith(CI_FONTS) for family in families_with(icon))}
    assert lacking == {}, lacking
    app, _ = served_app(["fine"])
    async with running_server(app) as url, browser_page(url) as page:
        result = await page.evaluate(GLYPH_CHECK, [*icons, "\u23f8"])
        assert result["boxShown"]  # the measure tells a box from nothing
        assert [char for char in result["missing"] if char != "\u23f8"] == [], result["missing"]


async def test_layout_at_1280_and_390_px():
    counter = AIMessage(content="", tool_calls=[tool_call("read_counter", {"line": "2"}, "r1")])
    hold = AIMessage(content="", tool_calls=[tool_call("hold_line", {"line": "2"}, "h1")])
    question = "Check the counters of line 2 before the shift"
    app, _ = served_app([counter, "Line 2 counted 1,204 parts.", "Line 2 is fine.", "Line 2 again.", hold])
    async with running_server(app) as url:
        async with browser_page(url) as page:
            examples = page.locator(".examples button.example")  # the empty page offers the agent's examples
            await examples.first.wait_for(timeout=10_000)
            assert [await button.inner_text() for button in await examples.all()] == EXAMPLES
            assert not await page.locator("#mode-note").is_visible()
            await ask(page, question)
            await page.locator(".answer .footer").first.wait_for(timeout=30_000)
            assert await page.locator(".examples").count() == 0
            note = page.locator("#mode-note")  # the greyed picker says why
            assert await page.locator("#mode").is_disabled() and await note.is_visible()
            assert "mode of its first run" in await note.inner_text() and "New conversation" in await note.inner_text()
            for index, text in enumerate(["And the scrap count?", "And yesterday?"], start=2):
                await ask(page, text)
                await page.locator(".answer .footer").nth(index - 1).wait_for(timeout=30_000)
            await ask(page, "Hold line 2 for the shift change")
            await page.locator('details.tool-card[data-status="running"]').wait_for(timeout=30_000)
            await page.click("#stop")
            await page.locator(".stopped").wait_for(timeout=30_000)
            thread = (await page.evaluate("location.hash")).lstrip("#")
        for width in WIDTHS:  # a fresh browser opens the thread by its #id
            async with browser_page(f"{url}/#{thread}") as page:
                await page.set_viewport_size({"width": width, "height": 700})
                resume = page.locator(".stopped button.resume")
                await resume.wait_for(timeout=30_000)
                await page.locator("#mode").wait_for(state="visible")  # the picker shows after the thread
                await page.wait_for_function(
                    "() => { const t = document.getElementById('transcript'); return t.scrollHeight - t.scrollTop - t.clientHeight < 4; }")
                box = await page.locator(".stopped").bounding_box()
                bar = await page.locator("#chat").bounding_box()
                assert box["y"] + box["height"] <= bar["y"], (box, bar)  # the notice is above the input bar
                hit = await page.evaluate("""() => { const r = document.querySelector('.stopped button.resume').getBoundingClientRect();
                    return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2).className; }""")
                assert hit == "resume"
                picker = page.locator("#conversations")  # the dropdown names the thread, uncut
                assert (await picker.locator("option:checked").inner_text()) == question
                fits = await page.evaluate("""() => {
                    const select = document.getElementById('conversations');
                    const context = document.createElement('canvas').getContext('2d');
                    const style = getComputedStyle(select);
                    context.font = style.fontSize + ' ' + style.fontFamily;
                    const text = select.options[select.selectedIndex].text;
                    return [context.measureText(text).width, select.clientWidth]; }""")
                assert fits[0] + 16 <= fits[1], fits
                placeholder = await page.evaluate("""() => {  // the placeholder, as text, fits the box
                    const box = document.getElementById('message');
                    box.value = box.placeholder;
                    const fits = box.scrollHeight <= box.clientHeight + 1 && box.scrollWidth <= box.clientWidth + 1;
                    box.value = '';
                    return fits; }""")
                assert placeholder
                await page.screenshot(path=str(artifact_path(f"browser-layout-{width}.png")))
