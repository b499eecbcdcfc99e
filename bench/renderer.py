"""The page's markdown renderer: time per streamed update against answer size.

Loads ``reactgraph/server/static/markdown.js`` into headless Chromium (``$REACTGRAPH_CHROMIUM``
or ``chromium`` on the PATH, through Playwright) and streams answers into a ``MarkdownView``
as the page does, one ``update`` per frame with the whole text so far. Each answer is
``size`` characters; the last 50 updates (each adding 20 characters) are timed, and a
whole-answer ``renderMarkdown`` call for comparison. Answers:

- ``[`` × n: every ``[`` starts a possible link with no ``]`` to close it (the case that
  was quadratic: 40,000 of them took 1.5 s per render);
- ``[a](`` × n/4: links whose target never closes;
- ``*_`` × n/2: emphasis marks with no closing partner;
- a plant report: paragraphs, tables and lists separated by blank lines (blocks closed
  by a blank line are kept, so an update renders only the open last block).

Linear rendering shows as a 40,000/4,000 time ratio near 10 for the single-block answers
(the whole answer is one open block) and a flat time for the report.

Run: ``.venv/bin/python bench/renderer.py [--sizes 4000 40000]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
from pathlib import Path

from playwright.async_api import async_playwright

MARKDOWN_JS = Path(__file__).resolve().parents[1] / "reactgraph" / "server" / "static" / "markdown.js"
REPORT_BLOCK = ("CNC-003 runs **normal** at *71.5 °C*, see [the log](https://plant.example/log/3).\n\n"
                "| id | state |\n|---|---|\n| CNC-001 | ok |\n\n- vibration 4.2 mm/s\n- alarm `W-1105`\n\n")
ANSWERS = {
    "[ x n": lambda n: "[" * n,
    "[a]( x n/4": lambda n: "[a](" * (n // 4),
    "*_ x n/2": lambda n: "*_" * (n // 2),
    "report": lambda n: (REPORT_BLOCK * (n // len(REPORT_BLOCK) + 1))[:n],
}

TIMING = """
([text, updates, step]) => {
  const box = document.createElement("div");
  document.body.appendChild(box);
  const view = new MarkdownView(box);
  const start = text.length - updates * step;
  view.update(text.slice(0, start));
  const times = [];
  for (let i = 1; i <= updates; i++) {
    const t0 = performance.now();
    view.update(text.slice(0, start + i * step));
    times.push(performance.now() - t0);
  }
  box.remove();
  times.sort((a, b) => a - b);
  const t0 = performance.now();
  renderMarkdown(text);
  const whole = performance.now() - t0;
  return {median: times[Math.floor(times.length / 2)], max: times[times.length - 1], whole};
}
"""


async def main(sizes: list[int], updates: int, step: int) -> None:
    chromium = os.environ.get("REACTGRAPH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("needs headless Chromium: apt-get install chromium (or set REACTGRAPH_CHROMIUM)")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, headless=True,
                                                   args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = await browser.new_page()
        await page.set_content("<!doctype html><body></body>")
        await page.add_script_tag(content=MARKDOWN_JS.read_text(encoding="utf-8"))
        print(f"{updates} timed updates of {step} characters each, Chromium {browser.version}\n")
        print("| answer | characters | ms per update (median) | ms per update (max) | whole render ms |")
        print("|---|---|---|---|---|")
        results: dict[tuple[str, int], float] = {}
        for name, make in ANSWERS.items():
            for size in sizes:
                timing = await page.evaluate(TIMING, [make(size), updates, step])
                results[name, size] = timing["median"]
                print(f"| {name} | {size:,} | {timing['median']:.2f} | {timing['max']:.2f} | {timing['whole']:.2f} |")
        await browser.close()
    small, large = min(sizes), max(sizes)
    print(f"\nratio of median update time, {large:,} vs {small:,} characters ({large / small:.0f}x the text):")
    for name in ANSWERS:
        print(f"  {name}: {results[name, large] / max(results[name, small], 1e-3):.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4_000, 40_000])
    parser.add_argument("--updates", type=int, default=50)
    parser.add_argument("--step", type=int, default=20)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.sizes, arguments.updates, arguments.step))
