"""What a model, a tool or a client puts in a thread, against real SQLite and Postgres
checkpointers (points 1 and 2, SPEC R13.5): tool arguments nested past the bound
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

from reactgraph import ReActAgent, open_persistence
from reactgraph.core.bounds import MAX_NESTING_DEPTH
from reactgraph.events import Done, RunError, ToolDone
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import parse_sse, running_server
from tests.helpers import NATIVE_TOOLS_ONLY

pytestmark = pytest.mark.integration

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
        agent = ReActAgent(model, [store], abilities=NATIVE_TOOLS_ONLY, checkpointer=persistence.checkpointer)
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
    the tool step after it waited forever for a checkpoint that never came. The run ends with
    ``storage_error``, the model having done nothing wrong (it was labelled ``model_error``)."""
    thread = f"unsaveable-{uuid.uuid4().hex}"
    response = AIMessage(content="", tool_calls=[tool_call("store", {"document": {}})],
                         additional_kwargs={"provider_trace": nested(300)})
    model = ScriptedChatModel(responses=[response, "Stored."], synthesis="Stored.")
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(model, [store], abilities=NATIVE_TOOLS_ONLY, checkpointer=persistence.checkpointer)
        events = await events_of(agent, "store it", thread)
    assert isinstance(events[-1], Done) and events[-1].finish_reason == "storage_error"
    assert any(isinstance(event, RunError) and event.kind == "storage_error" and "msgpack" in event.message
               for event in events)


async def test_lone_surrogates_in_a_question_and_an_answer_leave_the_thread_usable(checkpoint_url):
    thread = f"surrogate-{uuid.uuid4().hex}"
    model = ScriptedChatModel(responses=["report-\udcff.txt is there", "Still there."],
                              synthesis="The report is report-\udcfe.txt")
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(model, [store], abilities=NATIVE_TOOLS_ONLY, checkpointer=persistence.checkpointer)
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
    assert events[-1][0] == "done" and events[-1][1]["finish_reason"] == "model_error"  # not storage_error


class StuckModel(ScriptedChatModel):
    """A scripted model whose first ``stuck`` loop calls never return (a client goes away
    while each is in flight); later calls answer as scripted."""

    stuck: int = 0

    async def _agenerate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        result = await super()._agenerate(messages, stop, run_manager, **kwargs)
        if len(self.calls_except("synthesis")) <= self.stuck:
            await asyncio.Event().wait()
        return result


async def test_model_calls_cut_by_a_disconnect_count_toward_the_turns_limit(checkpoint_url):
    """point 9: ``model_calls=3``, and a disconnect/resume loop made 5 calls."""
    from reactgraph import AgentSettings, UsageLimits
    from reactgraph.events import ThinkingStarted

    thread = f"cut-{uuid.uuid4().hex}"
    model = StuckModel(responses=["All stored."], repeat_last=True, synthesis="All stored.", stuck=3)
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(model, [store], abilities=NATIVE_TOOLS_ONLY, checkpointer=persistence.checkpointer,
                           settings=AgentSettings(limits=UsageLimits(model_calls=3), synthesis="always"))
        for attempt in range(3):  # the client goes away while the model call is in flight, then resumes
            events = agent.astream_events("store it", thread_id=thread) if attempt == 0 else agent.aresume_events(thread)
            async for event in events:
                if isinstance(event, ThinkingStarted):
                    while len(model.calls_except("synthesis")) <= attempt:
                        await asyncio.sleep(0.01)
                    break  # closes the stream: the run is cancelled
            await events.aclose()
        assert len(model.calls_except("synthesis")) == 3
        resumed = await events_of_resume(agent, thread)
    done = resumed[-1]
    assert isinstance(done, Done) and done.finish_reason == "model_call_limit", done
    assert done.limit["used"] == 3 and len(model.calls_except("synthesis")) == 3  # no fourth loop call


async def events_of_resume(agent: ReActAgent, thread: str) -> list[Any]:
    async def collect() -> list[Any]:
        return [event async for event in agent.aresume_events(thread)]

    return await asyncio.wait_for(collect(), RUN_BOUND_SECONDS)
