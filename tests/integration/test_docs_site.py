"""The documentation site offline (point 7): built with ``mkdocs build --strict``,
served from this machine and opened in headless Chromium with every request to another
host refused, each mermaid drawing of the graph page renders (an SVG with the compiled
graph's nodes) and no request tries to leave the host."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from pathlib import Path

import pytest
from playwright.async_api import Route, async_playwright

from tests.integration.test_browser import CHROMIUM_ARGS, chromium_path

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site_url(tmp_path_factory):
    """The built site, served over HTTP on a loopback port for the module."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    site_dir = tmp_path_factory.mktemp("site")
    build(load_config(str(ROOT / "mkdocs.yml"), strict=True, site_dir=str(site_dir)))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) { return attach.call(this, Object.assign({}, init, {mode: "open"})); };
"""
"""Material draws each diagram into a closed shadow root; opened here so the test can read the SVG."""


async def test_every_mermaid_drawing_renders_offline(site_url):
    shapes = json.loads((ROOT / "tests" / "unit" / "data" / "graph_shapes.json").read_text())
    outside: list[str] = []

    async def only_this_host(route: Route) -> None:
        if route.request.url.startswith(site_url + "/"):
            await route.continue_()
        else:
            outside.append(route.request.url)
            await route.abort()

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.route("**/*", only_this_host)
            await page.add_init_script(OPEN_SHADOW_ROOTS)
            await page.goto(site_url + "/graph/")
            drawings = page.locator("div.mermaid svg")
            await drawings.nth(1).wait_for(timeout=60_000)
            assert await drawings.count() == 2  # the ReAct graph and DAG mode
            for index, name in enumerate(("react", "dag")):
                text = await drawings.nth(index).text_content()
                for node in shapes[name]["nodes"]:
                    if not node.startswith("__"):
                        assert node in text, (name, node)
            assert await page.locator("pre.mermaid code").count() == 0  # no diagram left as source
            assert errors == [] and outside == [], (errors, outside)
        finally:
            await browser.close()
