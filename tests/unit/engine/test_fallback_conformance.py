"""Fallback models against the strict fake providers: a primary that starts
failing (503, 429, a cut connection, a 400 context-length error) at the 1st, 2nd or 3rd call
of a run; the run finishes on the fallback, whose strict server accepts every request it
gets (so the converted history is protocol-valid), in native→native, native→JSON and
JSON→native; usage split by model; the breaker skips a dead primary on the next run and
tries it again after the cool-down."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langchain_openai import ChatOpenAI

from reactgraph import AgentSettings, FallbackModel, ReActAgent
from reactgraph.server import ServerSettings, create_app
from tests.fakeproviders import PLANT_TOOLS, FakeProvider, fake_provider
from tests.server_cases import asgi_client
from tests.serving import parse_sse

CNC1 = {"equipment_id": "CNC-001"}
PLAN = [[("get_equipment_status", CNC1)], [("list_alarms", {})], "CNC-001 runs normally; W-1105 is active."]
SYNTHESIS = "**CNC-001** is normal; alarm W-1105 on CNC-003."
SETTINGS = AgentSettings(model_attempts=2, retry_initial_delay=0.01, retry_max_delay=0.02, synthesis="always")
"""The loop, then a synthesis call (whatever the models' policy): a fallback is checked in both phases."""

# (primary abilities, fallback abilities): the loop mode each model runs in
MODES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "native->native": ({"tool_call": True}, {"tool_call": True}),
    "native->json": ({"tool_call": True}, {"tool_call": False}),
    "json->native": ({"tool_call": False}, {"tool_call": True}),
}


def _client(url: str, model: str) -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=url, api_key="k", max_retries=0, max_tokens=256,
                      http_async_client=httpx.AsyncClient(trust_env=False))


def _loop_requests(server: FakeProvider) -> list[dict[str, Any]]:
    return [body for body in server.requests if "synthesiz" not in str(body["messages"][0].get("content", ""))[:200]]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("fail_from", [1, 2, 3])
@pytest.mark.parametrize("failure", ["503", "429", "reset", "context"])
async def test_the_run_finishes_on_the_fallback(failure, fail_from, mode):
    primary = fake_provider("openai", plan=PLAN, synthesis=SYNTHESIS, fail=failure, fail_from=fail_from)
    backup = fake_provider("vllm", plan=PLAN, synthesis=SYNTHESIS)
    first, second = MODES[mode]
    async with primary.serving() as primary_url, backup.serving() as backup_url:
        agent = ReActAgent(_client(primary_url, "gpt-4o-mini"), PLANT_TOOLS, abilities={"provider": "openai", **first},
                           settings=SETTINGS,
                           fallbacks=[FallbackModel(_client(backup_url, "Qwen/Qwen3-8B"), second)])
        events = [event async for event in agent.astream_events("CNC-001 status and the alarms?")]
    done = events[-1]
    assert done.channel == "done" and done.data["answer"] == SYNTHESIS, [e.data for e in events]
    assert done.data["finish_reason"] == "final_answer"
    assert primary.refused == [] and backup.refused == []  # every request either server got was valid
    switches = [e.data for e in events if e.channel == "model_switch"]
    assert switches and switches[0]["previous"] == "gpt-4o-mini" and switches[0]["model"] == "Qwen/Qwen3-8B"
    assert switches[0]["reason"] == ("permanent" if failure == "context" else "transient")
    assert switches[0]["call"] == "loop"
    attempts = 1 if failure == "context" else SETTINGS.model_attempts  # a permanent error is not retried
    assert len(primary.requests) >= fail_from - 1 + attempts
    # usage split by model: the primary answered the calls before it failed, the fallback the rest
    usage = done.data["model_usage"]
    assert usage["Qwen/Qwen3-8B"]["model_calls"] == len(PLAN) - (fail_from - 1) + 1  # the rest of the loop, synthesis
    assert usage.get("gpt-4o-mini", {}).get("model_calls", 0) == fail_from - 1
    assert sum(u["model_calls"] for u in usage.values()) == done.data["usage"]["model_calls"]
    assert done.data["model"] == "Qwen/Qwen3-8B"
    # the tool calls each model asked for are in the step records
    steps = [e.data for e in events if e.channel == "step" and e.data.get("type") == "iteration"
             and e.data.get("status") == "done"]
    assert [s["tool_name"] for s in steps] == ["get_equipment_status", "list_alarms"]


async def test_the_breaker_skips_a_dead_primary_and_tries_it_again_after_the_cool_down():
    now = [1000.0]
    primary = fake_provider("openai", plan=PLAN, synthesis=SYNTHESIS, fail="503")
    backup = fake_provider("vllm", plan=PLAN, synthesis=SYNTHESIS)
    settings = AgentSettings(model_attempts=3, retry_initial_delay=0.01, retry_max_delay=0.02, breaker_failures=3,
                             breaker_cooldown=30.0)
    async with primary.serving() as primary_url, backup.serving() as backup_url:
        agent = ReActAgent(_client(primary_url, "gpt-4o-mini"), PLANT_TOOLS, abilities={"provider": "openai"},
                           settings=settings, fallbacks=[_client(backup_url, "Qwen/Qwen3-8B")])
        for model in agent.engine.models:
            model.breaker.clock = lambda: now[0]
        first = await agent.run("CNC-001 status and the alarms?")
        assert first.model == "Qwen/Qwen3-8B" and len(primary.requests) == 3  # its retries, then the fallback
        assert agent.engine.breaker_states()["gpt-4o-mini"]["state"] == "open"

        now[0] += 10  # within the cool-down: the next run does not call the primary at all
        second = await agent.run("CNC-001 status and the alarms?")
        assert second.answer == PLAN[-1] and len(primary.requests) == 3
        assert set(second.model_usage) == {"Qwen/Qwen3-8B"}

        now[0] += 30  # after it: one call tries the primary again; it fails, the breaker opens again
        third = await agent.run("CNC-001 status and the alarms?")
        assert third.answer == PLAN[-1] and len(primary.requests) == 4
        assert agent.engine.breaker_states()["gpt-4o-mini"]["state"] == "open"

        primary.fail = None  # the provider is back: after the next cool-down the primary serves again
        now[0] += 31
        fourth = await agent.run("CNC-001 status and the alarms?")
        assert fourth.model == "gpt-4o-mini" and set(fourth.model_usage) == {"gpt-4o-mini"}
        assert agent.engine.breaker_states()["gpt-4o-mini"]["state"] == "closed"
    assert primary.refused == [] and backup.refused == []


async def test_a_primary_that_never_answers_hands_over_at_its_deadline_and_its_breaker_opens_then_closes():
    """A primary that accepts each request and never answers: each loop call gives up at
    ``model_timeout``, a transient failure, so the run switches to the fallback (whose
    answer it is), the primary's breaker opens (``/healthz``), later runs skip it, and once
    it answers again it serves after the cool-down and its breaker closes."""
    now = [1000.0]
    primary = fake_provider("openai", plan=PLAN, synthesis=SYNTHESIS, fail="hang")
    backup = fake_provider("vllm", plan=PLAN, synthesis=SYNTHESIS)
    settings = AgentSettings(model_attempts=2, model_timeout=0.5, retry_initial_delay=0.01, retry_max_delay=0.02,
                             breaker_failures=2, breaker_cooldown=30.0, synthesis="always")
    async with primary.serving() as primary_url, backup.serving() as backup_url:
        agent = ReActAgent(_client(primary_url, "gpt-4o-mini"), PLANT_TOOLS, abilities={"provider": "openai"},
                           settings=settings, fallbacks=[_client(backup_url, "Qwen/Qwen3-8B")])
        for model in agent.engine.models:
            model.breaker.clock = lambda: now[0]
        async with asgi_client(create_app(agent, ServerSettings(api_key=""))) as client:
            response = await asyncio.wait_for(client.post("/threads/h1/runs", json={"message": "CNC-001 und Alarme?"}),
                                              30)  # today's hang: never
            events = parse_sse(response.text)
            [switch] = [data for channel, data in events if channel == "model_switch"]
            assert (switch["previous"], switch["model"], switch["reason"], switch["call"]) == (
                "gpt-4o-mini", "Qwen/Qwen3-8B", "transient", "loop")
            assert switch["error"].startswith("ModelTimeoutError") and "0.5 s" in switch["error"]
            assert events[-1][0] == "done" and events[-1][1]["answer"] == SYNTHESIS
            assert len(primary.requests) == 2  # its two attempts, each given up at the deadline
            health = {m["name"]: m for m in (await client.get("/healthz")).json()["models"]}
            assert health["gpt-4o-mini"]["state"] == "open" and health["Qwen/Qwen3-8B"]["state"] == "closed"

            second = parse_sse((await client.post("/threads/h2/runs", json={"message": "¿CNC-001?"})).text)
            assert second[-1][1]["answer"] == SYNTHESIS and len(primary.requests) == 2  # skipped while open

            primary.fail = None  # it answers again: after the cool-down it serves, and its breaker closes
            now[0] += 31
            third = parse_sse((await client.post("/threads/h3/runs", json={"message": "CNC-001?"})).text)
            assert third[-1][1]["answer"] == SYNTHESIS and not [c for c, _ in third if c == "model_switch"]
            health = {m["name"]: m for m in (await client.get("/healthz")).json()["models"]}
            assert health["gpt-4o-mini"]["state"] == "closed"
    assert primary.refused == [] and backup.refused == []


async def test_a_synthesis_stream_without_a_first_token_hands_over_at_the_first_token_deadline():
    """The primary answers the loop, then the synthesis stream's headers come and no chunk:
    past ``model_first_token_timeout`` the synthesis goes to the fallback, whose answer
    streams; ``model_timeout`` is far longer, so the first-token limit decided."""
    primary = fake_provider("openai", plan=PLAN, synthesis=SYNTHESIS, fail="stall", fail_from=4)  # 3 loop calls
    backup = fake_provider("vllm", plan=PLAN, synthesis="Die Anlage läuft; Alarm W-1105.")
    settings = AgentSettings(model_first_token_timeout=0.5, model_timeout=600, retry_initial_delay=0.01,
                             retry_max_delay=0.02, synthesis="always")
    async with primary.serving() as primary_url, backup.serving() as backup_url:
        agent = ReActAgent(_client(primary_url, "gpt-4o-mini"), PLANT_TOOLS, abilities={"provider": "openai"},
                           settings=settings, fallbacks=[_client(backup_url, "Qwen/Qwen3-8B")])
        events = await asyncio.wait_for(_events(agent, "CNC-001 status and the alarms?"), 30)
    [switch] = [e.data for e in events if e.channel == "model_switch"]
    assert (switch["call"], switch["reason"]) == ("synthesis", "transient") and "first token" in switch["error"]
    assert events[-1].data["answer"] == "Die Anlage läuft; Alarm W-1105."
    assert len(backup.requests) == 1  # only the synthesis


async def _events(agent: ReActAgent, question: str) -> list[Any]:
    return [event async for event in agent.astream_events(question)]
