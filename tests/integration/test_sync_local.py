"""Sync entry points on the real embedded model over HTTP (SPEC R10.1): ``invoke`` and
``stream`` use the chat model's synchronous client, and the same graph and model then still
run under ``ainvoke`` (no event loop was started or bound by the sync runs)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import HumanMessage

from reactgraph import AgentSettings, create_react_graph
from reactgraph.demo.factory import DEMO_QUESTION, DEMO_SYSTEM_PROMPT, build_factory_hub
from reactgraph.events import EVENTS_KEY, as_agent_event

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


def test_sync_then_async_runs_on_the_embedded_model(local_server, tmp_path):
    settings = AgentSettings(max_iterations=2, system_prompt=DEMO_SYSTEM_PROMPT, tool_timeout=30)
    graph = create_react_graph(local_server.chat_model(max_tokens=64), build_factory_hub(tmp_path / "plant.db"),
                               abilities=local_server.abilities, settings=settings)
    question = {"messages": [HumanMessage(DEMO_QUESTION)]}

    state = graph.invoke(question)
    assert state["answer"].strip() and state["synthesis"].strip()
    assert 1 <= state["iteration"] <= 2 and state["usage"]["model_calls"] >= 2

    events = [event for chunk in graph.stream(question, {"configurable": {EVENTS_KEY: True}}, stream_mode="custom") if (event := as_agent_event(chunk))]
    answer = [e.data for e in events if e.channel == "answer"]
    assert answer[0] == {"status": "start"} and answer[-1] == {"status": "done"}
    assert "".join(d.get("content", "") for d in answer).strip()

    again = asyncio.run(graph.ainvoke(question))
    assert again["answer"].strip() and again["synthesis"].strip()
