"""The web page in headless Chromium (SPEC §8): Debian's ``chromium`` driven by
Playwright's Python API against a real uvicorn server. One test asks the demo question on
the embedded model and saves a screenshot; the others use scripted models so that what
the page must show (tool cards, compaction divider, follow-up as an interrupt, footer,
safe markdown) is checked exactly."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from playwright.async_api import Browser, Page, async_playwright

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.core.paths import data_home
from reactgraph.persistence.checkpointing import open_checkpointer
from reactgraph.models import ResolvedModel
from reactgraph.demo.agent import build_demo_agent
from reactgraph.demo.factory import DEMO_QUESTION, build_factory_hub
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import running_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]


def chromium_path() -> str:
    """``$REACTGRAPH_CHROMIUM``, else Debian's ``chromium`` on the PATH (installed by ``.ci/run``)."""
    path = os.environ.get("REACTGRAPH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("headless Chromium is needed: apt-get install chromium (or set REACTGRAPH_CHROMIUM)")
    return path


@asynccontextmanager
async def browser_page(url: str) -> AsyncIterator[Page]:
    """A page of a fresh headless Chromium opened at ``url``; fails the test on any page script error."""
    async with async_playwright() as playwright:
        browser: Browser = await playwright.chromium.launch(executable_path=chromium_path(), headless=True,
                                                            args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1100, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(url)
            yield page
            assert errors == [], errors
        finally:
            await browser.close()


def artifact_path(name: str) -> Path:
    """Where a test artifact goes: ``$REACTGRAPH_HOME/artifacts`` (``.reactgraph/artifacts`` in CI, git-ignored)."""
    directory = data_home() / "artifacts"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name


async def ask(page: Page, text: str) -> None:
    """Type ``text`` in the chat box and press Enter, as a user would."""
    await page.fill("#message", text)
    await page.press("#message", "Enter")


# ------------------------------------------------------------------ the embedded model


async def test_the_demo_question_on_the_embedded_model(local_server, tmp_path):
    """The page on the agent ``reactgraph serve`` builds on the embedded model (the demo agent
    with the strict safeguards of a small model, SPEC R13.1): the demo question ends with one
    answer — CNC-003's facts under a Korean lead, no draft withdrawn, no loop text — and the
    screenshot shows what a user sees."""
    resolved = ResolvedModel(llm=local_server.chat_model(), abilities=local_server.abilities,
                             description=local_server.description, server=local_server)
    async with open_checkpointer(tmp_path / "threads.db") as saver:
        agent = build_demo_agent(resolved, build_factory_hub(tmp_path / "factory.db"), max_iterations=6,
                                 checkpointer=saver)
        async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
            await ask(page, DEMO_QUESTION)
            footer = page.locator(".answer .footer")
            await footer.wait_for(timeout=600_000)
            screenshot = artifact_path("browser-demo.png")
            await page.screenshot(path=str(screenshot), full_page=True)
            print(f"\nscreenshot: {screenshot}")
            cards = page.locator("details.tool-card")
            assert await cards.count() >= 1
            assert await page.locator("details.tool-card .tool-name").first.inner_text()
            assert await page.locator('details.tool-card[data-status="running"]').count() == 0  # every card finished
            assert await page.locator(".answer").count() == 1  # one answer, never a withdrawn draft
            assert await page.locator(".reasoning").count() == 0  # the small model's loop text is not shown
            answer = (await page.locator(".answer .answer-body").inner_text()).strip()
            for fact in ("warning", "1.2 mm/s", "W-1105"):  # CNC-003's state, vibration and alarm, from the tool
                assert fact in answer, (fact, answer)
            assert answer.splitlines()[0].startswith("CNC-003에 대해")  # a Korean lead for a Korean question
            assert "```" not in answer and "get_equipment_status" not in answer
            assert " step" in await footer.inner_text() and "tokens" in await footer.inner_text()
            assert await page.locator(".user").inner_text() == DEMO_QUESTION


# -------------------------------------------------------------------- scripted models


async def test_the_page_shows_cards_a_compaction_divider_a_follow_up_and_the_footer():
    release = asyncio.Event()

    @tool
    async def inspect_machine(machine: str) -> str:
        """Inspect one machine (waits until the test lets it finish)."""
        await release.wait()
        return f"{machine}: spindle 71.5°C, vibration 4.2 mm/s\n" + "log line. " * 3000

    model = ScriptedChatModel(
        responses=[AIMessage(content="", tool_calls=[tool_call("inspect_machine", {"machine": "CNC-001"}, "a"),
                                                     tool_call("inspect_machine", {"machine": "CNC-003"}, "b")]),
                   AIMessage(content="", tool_calls=[tool_call("inspect_machine", {"machine": "CNC-005"}, "c")]),
                   "All three are running."],
        synthesis="## Status\n\n| machine | state |\n|---|---|\n| CNC-001 | normal |\n| CNC-003 | **warning** |\n\n- follow-up: CNC-005 checked",
    )
    summarizer = ScriptedChatModel(responses=["Summary: CNC-001 and CNC-003 inspected."], repeat_last=True)
    abilities = ModelAbilities(tool_call=True, context_window=11_000, max_output_tokens=1_000)
    agent = ReActAgent(model, [inspect_machine], abilities=abilities, compaction_llm=summarizer,
                       checkpointer=InMemorySaver(), settings=AgentSettings(synthesis="always"))
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        await ask(page, "Check CNC-001 and CNC-003")
        await page.locator("details.tool-card").nth(1).wait_for()
        assert await page.locator('details.tool-card[data-status="running"]').count() == 2
        await ask(page, "also CNC-005")  # a run is going: this goes to /inject
        await page.locator(".interrupt .label", has_text="queued").wait_for()
        release.set()
        footer = page.locator(".answer .footer")
        await footer.wait_for(timeout=30_000)
        await page.screenshot(path=str(artifact_path("browser-scripted.png")), full_page=True)

        cards = page.locator("details.tool-card")
        assert await cards.count() == 3
        assert await page.locator('details.tool-card[data-status="ok"]').count() == 3
        first = cards.first
        assert await first.locator(".tool-name").inner_text() == "inspect_machine"
        await first.locator("summary").click()  # collapsible: opens to arguments and observation
        assert '"machine": "CNC-001"' in await first.locator("pre.args").inner_text()
        assert (await first.locator("pre.observation").inner_text()).startswith("CNC-001: spindle 71.5°C")
        assert (await first.locator(".elapsed").inner_text()).endswith(" s")
        interrupt = page.locator(".interrupt")
        assert await interrupt.count() == 1
        assert "taken in" in await interrupt.locator(".label").inner_text()
        assert "also CNC-005" in await interrupt.inner_text()
        assert "context compacted" in await page.locator(".divider").first.inner_text()
        answer = page.locator(".answer .answer-body")
        assert await answer.locator("h2").inner_text() == "Status"
        assert await answer.locator("table td strong").inner_text() == "warning"
        assert await answer.locator("li").inner_text() == "follow-up: CNC-005 checked"
        footer_text = await footer.locator(".footer-text").inner_text()
        assert footer_text.startswith("Answered in ") and " s · 3 steps · " in footer_text
        codes = await footer.locator(".footer-codes").text_content()  # the codes stay, in the closed details
        assert "finish_reason: final_answer" in codes and "iterations: 3" in codes


async def test_the_page_shows_refusals_and_asks_for_the_api_key():
    model = ScriptedChatModel(responses=["CNC-003 is normal."], synthesis="CNC-003 is *normal*.")
    agent = ReActAgent(model, [], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver(),
                       settings=AgentSettings(synthesis="always"))
    async with running_server(create_app(agent, ServerSettings(api_key="k3y"))) as url, browser_page(url) as page:
        await ask(page, "CNC-003?")
        await page.locator("#auth").wait_for(state="visible")
        await page.fill("#api-key", "k3y")
        await page.click("#save-key")
        await page.locator(".answer .footer").wait_for()
        assert await page.locator(".answer em").inner_text() == "normal"
        assert await page.locator(".failure").count() == 0


async def test_the_markdown_renderer_formats_and_stays_safe():
    agent = ReActAgent(ScriptedChatModel(responses=[]), [], abilities=ModelAbilities(tool_call=True))
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        render = "source => renderMarkdown(source)"
        html = await page.evaluate(render, "# Title\n\n**bold** and *it* and `co*de*`\n\n```py\nx = 1 < 2\n```\n\n"
                                           "1. one\n2. two\n\n- a\n- b\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n\n"
                                           "> quoted\n\n[docs](https://example.org/x?a=1&b=2)")
        assert "<h1>Title</h1>" in html
        assert "<strong>bold</strong> and <em>it</em> and <code>co*de*</code>" in html
        assert '<pre><code class="language-py">x = 1 &lt; 2</code></pre>' in html
        assert "<ol><li>one</li><li>two</li></ol>" in html and "<ul><li>a</li><li>b</li></ul>" in html
        assert "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>" in html
        assert "<blockquote>quoted</blockquote>" in html
        assert '<a href="https://example.org/x?a=1&amp;b=2" target="_blank" rel="noopener noreferrer">docs</a>' in html
        hostile = await page.evaluate(render, '<img src=x onerror="alert(1)"> [click](javascript:alert(1)) '
                                              '[x](JaVaScRiPt:alert(2)) <script>alert(3)</script>')
        assert "<img" not in hostile and "<script" not in hostile and "<a " not in hostile
        assert '&lt;img src=x onerror="alert(1)"&gt;' in hostile  # text: its quotes need no escape
        await page.evaluate("source => { document.getElementById('transcript').innerHTML = renderMarkdown(source); }",
                            "<img src=x onerror=window.pwned=1> [x](javascript:window.pwned=2)")
        await page.click("#transcript")
        assert await page.evaluate("window.pwned === undefined")


# ------------------------------------------------------------------ hostile answers

SCHEMES = ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "vbscript:msgbox(1)", "VBScript:msgbox(1)",
           "data:text/html,<script>alert(1)</script>", "DATA:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
           "javascript://%0aalert(1)", "jav&#x09;ascript:alert(1)", "&#106;avascript:alert(1)",
           "javascript&colon;alert(1)", "%6Aavascript:alert(1)", "java\u0000script:alert(1)", "file:///etc/passwd"]
PREFIXES = ["", "\u0001", "\u0000", "\u001f", "\u000b", "\u000c", "\u0008", "\u007f", "\u00a0", "\ufeff"]
HOSTILE = [f"[x]({prefix}{scheme})" for scheme in SCHEMES for prefix in PREFIXES] + [
    '<img src=x onerror="window.pwned=1">', "<svg onload=window.pwned=2>", "<script>window.pwned=3</script>",
    '<a href="javascript:window.pwned=4">a</a>', "[**bold** label](javascript:window.pwned=5)",
    "| a | [x](\u0001javascript:window.pwned=6) |\n|---|---|\n| [y](javascript:1) | b |",
    "# [h](\u0001javascript:1)\n\n- [l](\u0001javascript:1)\n\n> [q](\u0001javascript:1)",
    '[a_](http://x/_y) and [*b*](http://x/*z*) and [c](http://x/"onmouseover="window.pwned=7)',
    "`code` \u00000\u0000 and \u00001\u0000 `more`", "[x](http://a/b)[y](//evil.example/p)",
    "[" * 3000 + "x](javascript:1)", "![img](javascript:window.pwned=8)", "<iframe src=javascript:window.pwned=9>",
]
SAFE_MARKUP = """
(sources) => {
  const allowed = new Set(["H1","H2","H3","H4","H5","H6","P","BR","STRONG","EM","CODE","PRE","UL","OL","LI",
                           "TABLE","THEAD","TBODY","TR","TH","TD","BLOCKQUOTE","A","HR"]);
  const attributes = {A: ["href", "target", "rel"], CODE: ["class"]};
  const problems = [];
  const links = [];
  const check = (root, source) => {
    for (const node of root.querySelectorAll("*")) {
      if (!allowed.has(node.tagName)) problems.push([source, "tag " + node.tagName]);
      for (const attribute of node.attributes) {
        if (!(attributes[node.tagName] || []).includes(attribute.name)) problems.push([source, "attribute " + attribute.name]);
      }
      if (node.tagName === "A") {
        const protocol = new URL(node.href).protocol;
        links.push([source, node.href, node.getAttribute("target"), node.textContent]);
        if (!["http:", "https:", "mailto:"].includes(protocol)) problems.push([source, "href " + node.href]);
        if (node.getAttribute("target") !== "_blank") problems.push([source, "target " + node.getAttribute("target")]);
      }
    }
  };
  for (const source of sources) {
    const whole = document.createElement("div");
    whole.innerHTML = renderMarkdown(source);
    check(whole, source);
    const streamed = document.createElement("div");
    const view = new MarkdownView(streamed);
    for (let end = 1; end <= source.length; end += 7) view.update(source.slice(0, end));
    view.update(source);
    check(streamed, source);
    if (streamed.innerHTML !== renderMarkdown(source)) problems.push([source, "incremental render differs"]);
    document.getElementById("transcript").appendChild(streamed);
  }
  return {problems, links};
}
"""


async def test_hostile_answers_render_no_executable_link_or_markup():
    agent = ReActAgent(ScriptedChatModel(responses=[]), [], abilities=ModelAbilities(tool_call=True))
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        outcome = await page.evaluate(SAFE_MARKUP, HOSTILE)
        assert outcome["problems"] == []
        await page.wait_for_timeout(300)  # an injected image's onerror would have run by now
        assert await page.evaluate("window.pwned === undefined")
        links = {source: (href, target, text) for source, href, target, text in outcome["links"]}
        assert links['[a_](http://x/_y) and [*b*](http://x/*z*) and [c](http://x/"onmouseover="window.pwned=7)'] == (
            'http://x/%22onmouseover=%22window.pwned=7', "_blank", "c")  # emphasis marks stay in the href
        hrefs = [href for source, href, _, _ in outcome["links"] if source.startswith("[a_]")]
        assert hrefs == ["http://x/_y", "http://x/*z*", 'http://x/%22onmouseover=%22window.pwned=7'] * 2  # whole, streamed
        scheme_links = [href for source, href, _, _ in outcome["links"] if source.startswith("[x](") and ")[y]" not in source]
        assert scheme_links and all(href.startswith(url + "/") for href in scheme_links)  # entity forms: relative paths
        nul = await page.evaluate("s => { const d = document.createElement('div'); new MarkdownView(d).update(s); "
                                  "return [d.textContent, d.querySelectorAll('code').length]; }",
                                  "`code` \u00000\u0000 and `more`")
        assert nul == ["code \u00000\u0000 and more", 2]  # NUL is text, not a placeholder


async def test_the_streamed_answer_renders_incrementally_like_the_whole():
    agent = ReActAgent(ScriptedChatModel(responses=[]), [], abilities=ModelAbilities(tool_call=True))
    source = ("# Plant report\n\nCNC-003 is **normal** at *71.5 °C*; see [docs](https://example.org/a_b).\n\n"
              "```py\nx = 1\n\ny = [x](2)\n```\n\n- one\n- two `code`\n\n1. first\n2. second\n\n"
              "| id | state |\n|---|:-:|\n| CNC-001 | ok |\n\n> quoted\n> twice\n\n---\n\nlast *line* __here__")
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
        mismatches = await page.evaluate("""source => {
          const bad = [];
          for (const step of [1, 3, 17]) {
            const box = document.createElement("div");
            const view = new MarkdownView(box);
            for (let end = step; end < source.length + step; end += step) {
              const prefix = source.slice(0, end);
              view.update(prefix);
              if (box.innerHTML !== renderMarkdown(prefix)) bad.push([step, end]);
            }
          }
          return bad;
        }""", source)
        assert mismatches == []
        kept = await page.evaluate("""source => {
          const box = document.createElement("div");
          const view = new MarkdownView(box);
          view.update(source.slice(0, source.indexOf("- one")));
          const heading = box.querySelector("h1");
          view.update(source);
          return heading === box.querySelector("h1") && box.contains(heading);
        }""", source)
        assert kept  # a finished block is not rendered again


# ------------------------------------------------------------------------------ DAG mode

PLAIN_WORDS_ONLY = ("**", "|---|", "## ", "level 1", "level 2", "level 3", "no JSON object", "JSONDecodeError",
                    "Traceback", "parse_plan")
"""What a DAG view never shows: raw Markdown marks and the structured-output parser's words."""


def scripted_dag_model():
    """A DAG run over a bench question, as a small model writes it: Markdown in the plan's
    tasks, the steps' answers, the analyzer's reasoning and the synthesis; for any other goal,
    a planner reply that is no plan at all."""
    import json as _json

    from tests.unit.dag.test_dag import kind

    def reply(messages):
        role = kind(messages)
        said = " ".join(str(message.content) for message in messages)
        if role == "planner":
            if "spare parts for it" not in said:
                return "Sure! First I will look, then I will answer. **Step 1**: look."
            return _json.dumps({"steps": [
                {"id": "a", "task": "**Check** the status of CMP-002", "dependencies": []},
                {"id": "b", "task": "## Find spare parts for CMP-002", "dependencies": ["a"]}]})
        if role == "analyzer":
            return _json.dumps({"achieved": True, "confidence": 0.9, "reasoning": "**Both** parts have data.",
                                "final_answer": "CMP-002 is running; parts are in stock."})
        if len(messages) == 2:  # a step's first loop call: its tool
            tool, = [name for step_id, name in (("a", "get_equipment_status"), ("b", "find_parts_for_equipment"))
                     if role == f"step:{step_id}"] or ["get_equipment_status"]
            return _json.dumps({"type": "tool_call", "reasoning": "", "tool_name": tool,
                                "tool_args": {"equipment_id": "CMP-002"}})
        answer = ("## Status\n\n**CMP-002** is checked." if role == "step:a"
                  else "| part | stock |\n|---|---|\n| filter | **ok** |")
        return _json.dumps({"type": "final_answer", "reasoning": "", "answer": answer})

    return ScriptedChatModel(responses=[reply], repeat_last=True,
                             synthesis="## CMP-002\n\n| check | result |\n|---|---|\n| status | **see above** |")


async def test_the_dag_view_shows_plain_words_over_a_bench_question(tmp_path):
    """DAG mode on the page over a bench question (scripted models, the demo plant's tools):
    the plan's boxes and step titles, the steps' results, the analysis line and the answer show
    no raw Markdown, and a planner reply that is no plan is said in plain words, without the
    parser's jargon; the screenshot shows what a user sees."""
    from reactgraph import AgentSettings, DAGAgent

    hub = build_factory_hub(tmp_path / "factory.db")
    saver = InMemorySaver()
    react = ReActAgent(ScriptedChatModel(responses=["unused"], repeat_last=True), hub,
                       abilities=ModelAbilities(tool_call=True), checkpointer=saver)
    settings = AgentSettings(max_iterations=3, tool_timeout=5, retry_initial_delay=0.01, retry_max_delay=0.02)
    dag = DAGAgent(scripted_dag_model(), hub, settings=settings, checkpointer=saver, interrupt_queue=react.interrupts)
    app = create_app(react, ServerSettings(api_key="", default_mode="dag"), dag_agent=dag)
    async with running_server(app) as url, browser_page(url) as page:
        await page.locator("#mode").wait_for(state="visible")
        await ask(page, "What's wrong with air compressor CMP-002, and do we have spare parts for it in stock?")
        await page.locator(".answer .footer").wait_for(timeout=60_000)
        assert await page.locator(".plan-node").count() == 2
        assert await page.locator('.dag-step[data-state="completed"]').count() == 2
        assert await page.locator(".dag-step .step-result table").count() == 1  # the step's table, rendered
        assert await page.locator(".answer .answer-body table").count() == 1
        await ask(page, "Tell me about the plant")  # the planner's reply is no plan
        await page.locator(".answer .footer").nth(1).wait_for(timeout=60_000)
        screenshot = artifact_path("browser-dag.png")
        await page.screenshot(path=str(screenshot), full_page=True)
        print(f"\nscreenshot: {screenshot}")
        shown = " ".join([await page.locator(selector).nth(index).inner_text()
                          for selector in (".plan", ".analysis", ".answer .answer-body")
                          for index in range(await page.locator(selector).count())])
        svg_text = " ".join(await page.locator(".plan-node text, .plan-node title").all_text_contents())
        for mark in PLAIN_WORDS_ONLY:
            assert mark not in shown and mark not in svg_text, (mark, shown, svg_text)
        warnings = await page.locator(".plan-warning").all_inner_texts()
        assert len(warnings) == 1 and "plan" in warnings[0].lower()  # said in plain words
