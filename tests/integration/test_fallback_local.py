"""The embedded model as the last fallback of a hosted model, as a user sets it up:
``REACTGRAPH_FALLBACK_MODELS=embedded`` with a hosted endpoint that fails (a strict fake
OpenAI server answering 503), the demo agent ``reactgraph serve`` builds, its page in a real
Chromium. The run answers offline on the embedded model; the page shows the switch and, in
the footer, the model that served the run; ``/healthz`` shows the hosted model's breaker opened."""

from __future__ import annotations

import httpx
import pytest

from reactgraph.demo.agent import build_demo_agent
from reactgraph.demo.factory import DEMO_QUESTION, build_factory_hub
from reactgraph.models import LOCAL_MODEL_NAME, open_model
from reactgraph.server import ServerSettings, create_app
from tests.fakeproviders import fake_provider
from tests.integration.test_browser import artifact_path, ask, browser_page
from tests.serving import running_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


async def test_the_embedded_model_answers_when_the_hosted_model_is_down(tmp_path):
    hosted = fake_provider("openai", plan=["never answered"], fail="503")
    async with hosted.serving() as hosted_url:
        env = {"OPENAI_BASE_URL": hosted_url, "OPENAI_API_KEY": "sk-test", "REACTGRAPH_MODEL": "gpt-4o-mini",
               "REACTGRAPH_FALLBACK_MODELS": "embedded"}
        async with open_model(environ=env) as resolved:
            assert resolved.server is None and len(resolved.fallbacks) == 1
            tools = [t for t in build_factory_hub(tmp_path / "factory.db") if t.name == "get_equipment_status"]
            agent = build_demo_agent(resolved, tools, max_iterations=3)  # one tool: a short prompt for the 135M model
            assert agent.mode == "native" and agent.engine.fallbacks[0].mode == "json"  # the fallback runs JSON mode
            async with running_server(create_app(agent, ServerSettings(api_key=""))) as url, browser_page(url) as page:
                await ask(page, DEMO_QUESTION)
                footer = page.locator(".answer .footer")
                await footer.wait_for(timeout=600_000)
                await page.screenshot(path=str(artifact_path("browser-fallback.png")), full_page=True)
                assert f"answered by {LOCAL_MODEL_NAME}" in await footer.inner_text()
                switch = await page.locator(".model-switch").first.inner_text()
                assert switch == f"gpt-4o-mini failed (transient): loop goes on with {LOCAL_MODEL_NAME}"
                answer = (await page.locator(".answer .answer-body").inner_text()).strip()
                assert answer and "model error" not in await page.content()
                async with httpx.AsyncClient(trust_env=False) as client:
                    health = (await client.get(f"{url}/healthz")).json()
    hosted_breaker, local_breaker = health["models"]
    assert (hosted_breaker["name"], hosted_breaker["times_opened"]) == ("gpt-4o-mini", 1)  # opened by its failures
    assert hosted_breaker["state"] != "closed"  # open, or half open once the cool-down passed during the run
    assert (local_breaker["name"], local_breaker["state"]) == (LOCAL_MODEL_NAME, "closed")
    assert hosted.requests and hosted.refused == []  # it was asked (and failed); nothing sent was malformed
