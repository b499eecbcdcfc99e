"""Typed events (SPEC §8): one class per event kind in reactgraph.events, one
serializer to the SSE wire format, and the payloads read back into the same types. The
wire bytes themselves are held by test_sse_golden.py."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph import events as ev
from reactgraph.events import stream, types
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import parse_sse
from tests.helpers import UNIT_DATA

DATA = UNIT_DATA
RECORDED = ["scripted_run.sse", "scripted_json_run.sse", "scripted_newer_kinds.sse", "scripted_dag_run.sse",
            "scripted_fallback_run.sse"]


def test_every_recorded_event_reads_back_as_its_kind_and_writes_the_same_bytes():
    seen: set[type] = set()
    for name in RECORDED:
        for channel, data in parse_sse((DATA / name).read_text(encoding="utf-8")):
            event = ev.event_from_wire(channel, data)
            assert type(event).__module__ == "reactgraph.events" and event.channel == channel
            assert event.data == data and list(event.data) == list(data)  # members and their order
            assert ev.to_sse(event) == f"event: {channel}\ndata: {ev.wire_json(data)}\n\n"
            seen.add(type(event))
    kinds = {kind for kinds in types._KINDS.values() for kind in kinds}
    assert kinds - seen == set()  # the recordings hold every kind


def test_one_class_per_kind_each_named_by_channel_and_tag():
    keys = [(kind.channel, kind.tag) for kinds in types._KINDS.values() for kind in kinds]
    assert len(keys) == len(set(keys)) == 26
    assert ev.ToolStarted.tag == (("type", "iteration"), ("status", "start"))
    assert isinstance(ev.SelectingTools(total_tools=3), ev.Phase) and ev.Planning(round=1).phase == "planning"


def test_omitted_members_are_absent_not_null():
    done = ev.Done(answer="a", iterations=1, usage={}, elapsed=0.5, finish_reason="final_answer", thread_id="t")
    assert list(done.data) == ["answer", "iterations", "usage", "elapsed", "finish_reason", "thread_id"]
    assert ev.Done(**{**done.data, "limit": None}).data["limit"] is None
    never_ran = ev.DagStepCompleted(round=1, step_id="b", ok=False, error="dependency failed: a", elapsed=0.0,
                                    iterations=0, model_role=None)
    assert "result" not in never_ran.data and ev.event_from_wire("dag_step", never_ran.data) == never_ran


@pytest.mark.parametrize("channel, data, message", [
    ("step", {"type": "thinking", "status": "paused", "iteration": 1}, "no event kind of channel 'step'"),
    ("nope", {}, "no event kind of channel 'nope'"),
    ("stall", {"iteration": 1, "reason": "x", "extra": 1}, "no Stalled"),
    ("answer", {"status": "delta"}, "no AnswerDelta"),
])
def test_a_payload_of_no_kind_is_refused(channel, data, message):
    with pytest.raises(ValueError, match=message):
        ev.event_from_wire(channel, data)


async def test_the_agent_streams_typed_events():
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("echo", {"text": "hi"}, "c1")]), "hi"],
                              synthesis="Said **hi**.")

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    agent = ReActAgent(model, [echo], abilities=ModelAbilities(tool_call=True, json_mode=True),
                       settings=AgentSettings(synthesis="always"))  # the two phases' events
    events = [event async for event in agent.astream_events("say hi")]
    assert [type(event) for event in events] == [
        ev.ThinkingStarted, ev.ThinkingDone, ev.ToolStarted, ev.ToolDone, ev.ThinkingStarted, ev.ThinkingDone,
        ev.AnswerSignalled, ev.AnswerStarted, ev.AnswerDelta, ev.AnswerDelta, ev.AnswerDone, ev.Done,
    ]
    tool_done = events[3]
    assert (tool_done.tool_call_id, tool_done.tool_args, tool_done.observation, tool_done.error) == ("c1", {"text": "hi"}, "hi", None)
    assert "".join(e.content for e in events if isinstance(e, ev.AnswerDelta)) == events[-1].answer == "Said **hi**."


async def test_a_tools_done_waits_only_until_a_plain_checkpointer_holds_its_result(monkeypatch):
    """'s wait before a tool's ``done`` event, on a checkpointer that is not one of
    ``open_persistence`` (read, not answered from memory): once the step's own checkpoint
    is made, the result is a pending write of the checkpoint before it (``steps`` is a
    DeltaChannel, so the newest checkpoint does not carry it) and the wait ends at once —
    not after ``SAVED_WAIT_SECONDS``; a result that was never handed in still waits."""
    from langgraph.checkpoint.memory import InMemorySaver

    monkeypatch.setattr(ev, "SAVED_WAIT_SECONDS", 0.5)

    @tool
    def status(machine: str) -> str:
        """Status of a machine."""
        return f"{machine} runs"

    llm = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("status", {"machine": "CNC-1"}, "c1")]),
                                       "CNC-1 runs."])
    agent = ReActAgent(llm, [status], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "plain", "synthesize": False}}
    async for _ in agent.graph.astream({"messages": [("human", "How is CNC-1?")]}, config,
                                       interrupt_after=[ev.TOOL_NODE]):
        pass
    newest = await agent.checkpointer.aget_tuple(config)
    assert not any(channel == "steps" for _task, channel, _value in newest.pending_writes)  # the step was applied
    loop = asyncio.get_running_loop()
    started = loop.time()
    await stream._result_saved(agent.graph, config, "c1")
    assert loop.time() - started < 0.25
    started = loop.time()
    await stream._result_saved(agent.graph, config, "never-made")
    assert loop.time() - started >= 0.5
