"""What a model, a tool or a client puts in a thread, against real SQLite and Postgres
checkpointers (issue 37 points 1 and 2, SPEC R13.5): tool arguments nested past the bound
become an error observation instead of a run that hangs; a save the checkpointer cannot
serialize ends the run instead of leaving it waiting; lone surrogates in a question or an
answer never reach a store, so the thread stays readable and usable."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import ModelAbilities, ReActAgent, open_persistence
from reactgraph.bounds import MAX_NESTING_DEPTH
from reactgraph.events import Done, RunError, ToolDone
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import parse_sse, running_server

pytestmark = pytest.mark.integration

NATIVE = ModelAbilities(tool_call=True)
RUN_BOUND_SECONDS = 60
"""Longer than any of these runs takes on a loaded machine: a run still going then hangs."""


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@tool
def store(document: dict) -> str:
    """Store a document."""
    return "stored"


async def events_of(agent: ReActAgent, question: str, thread: str) -> list[Any]:
    async def collect() -> list[Any]:
        return [event async for event in agent.astream_events(question, thread_id=thread)]

    return await asyncio.wait_for(collect(), RUN_BOUND_SECONDS)


async def test_tool_arguments_nested_past_the_bound_become_an_error_observation(checkpoint_url):
    thread = f"deep-{uuid.uuid4().hex}"
    calls = [tool_call("store", {"document": nested(300)}, "c1"),
             tool_call("store", {"document": nested(MAX_NESTING_DEPTH - 1)}, "c2")]
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=calls), "Stored one."], synthesis="One stored.")
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(model, [store], abilities=NATIVE, checkpointer=persistence.checkpointer)
        events = await events_of(agent, "store these", thread)
        done = {event.tool_call_id: event for event in events if isinstance(event, ToolDone)}
        assert "nest more than 64 levels" in done["c1"].observation and done["c1"].tool_args == {}
        assert done["c2"].observation == "stored"
        assert isinstance(events[-1], Done) and events[-1].finish_reason == "final_answer"
        snapshot = await agent.graph.aget_state({"configurable": {"thread_id": thread}})
        stored_calls = snapshot.values["messages"][1].tool_calls
        assert [call["args"] for call in stored_calls][0] == {}
        assert isinstance(snapshot.values["messages"][2], ToolMessage)
        # the model saw the reason as the call's observation
        assert "nest more than 64 levels" in model.calls[1][-2].content


async def test_a_save_the_checkpointer_cannot_serialize_ends_the_run(checkpoint_url):
    """A model step whose message no serializer keeps (provider metadata 300 levels deep):
    the tool step after it waited forever for a checkpoint that never came."""
    thread = f"unsaveable-{uuid.uuid4().hex}"
    response = AIMessage(content="", tool_calls=[tool_call("store", {"document": {}})],
                         additional_kwargs={"provider_trace": nested(300)})
    model = ScriptedChatModel(responses=[response, "Stored."], synthesis="Stored.")
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(model, [store], abilities=NATIVE, checkpointer=persistence.checkpointer)
        events = await events_of(agent, "store it", thread)
    assert isinstance(events[-1], Done) and events[-1].finish_reason == "model_error"
    assert any(isinstance(event, RunError) and "msgpack" in event.message for event in events)


async def test_lone_surrogates_in_a_question_and_an_answer_leave_the_thread_usable(checkpoint_url):
    thread = f"surrogate-{uuid.uuid4().hex}"
    model = ScriptedChatModel(responses=["report-\udcff.txt is there", "Still there."],
                              synthesis="The report is report-\udcfe.txt")
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(model, [store], abilities=NATIVE, checkpointer=persistence.checkpointer)
        first = await agent.run("where is report-\udcff.txt?", thread_id=thread)
        assert first.finish_reason == "final_answer" and first.error is None
        second = await agent.run("and now?", thread_id=thread)  # before: every later store of the thread failed
        assert second.finish_reason == "final_answer" and second.error is None
        async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                state = await client.get(f"/threads/{thread}")
                events = parse_sse((await client.post(f"/threads/{thread}/runs", json={"message": "once more"})).text)
        # (the scripted model has no third answer: its failure is a model error, not a store's)
    assert state.status_code == 200
    body = state.json()
    assert body["result"]["query"] == "and now?"
    assert body["messages"][0]["content"] == "where is report-?.txt?"  # what every store keeps
    assert events[-1][0] == "done"
