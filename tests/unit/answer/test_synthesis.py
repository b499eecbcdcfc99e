"""Answer synthesis and the event stream: SPEC R3.1–R3.3 and §8."""

from __future__ import annotations

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage

from reactgraph import AgentSettings, ReActAgent
from reactgraph.answer.synthesis import RESULT_CLIP_MARK
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE_TOOLS_ONLY

TWO_PHASES = AgentSettings(synthesis="always")
"""The loop, then the synthesis call these tests are about (whatever the model's policy)."""



def _one_tool_script(observation_size: int | None = None):
    return [AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-003"}, "c1")]),
            "CNC-003 is normal."]


async def test_stream_answer_streams_a_separate_synthesis_call(tools):
    model = ScriptedChatModel(responses=_one_tool_script(), synthesis="**CNC-003** is running normally today.")
    agent = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES)
    result = await agent.run("CNC-003 상태 확인해줘")
    chunks = [c async for c in agent.stream_answer("CNC-003 상태 확인해줘", result)]
    assert len(chunks) > 1
    assert "".join(chunks) == "**CNC-003** is running normally today."
    system, user = model.calls[-1]
    assert isinstance(system, SystemMessage) and isinstance(user, HumanMessage)
    for rule in ("markdown", "same language as the question", "based on the tool output"):
        assert rule in system.content
    assert "CNC-003 상태 확인해줘" in user.content
    assert '1. get_status({"equipment_id": "CNC-003"})\nResult:\nCNC-003: normal' in user.content
    assert "tools" not in model.stream_kwargs[-1]  # synthesis is a plain call: no tools bound


async def test_each_tool_result_is_cut_to_2000_characters(tools):
    from langchain_core.tools import tool

    @tool
    def huge() -> str:
        """Returns a lot."""
        return "y" * 5000

    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("huge", {}, "c1")]), "ok"])
    agent = ReActAgent(model, [huge], abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES)
    result = await agent.run("q")
    assert len(result.steps[0].observation) == 5000
    _ = [c async for c in agent.stream_answer("q", result)]
    user = model.calls[-1][1].content
    assert "y" * 2000 + RESULT_CLIP_MARK in user and "y" * 2001 not in user


async def test_synthesis_failure_falls_back_to_the_loop_answer(tools):
    model = ScriptedChatModel(responses=_one_tool_script(), synthesis=ConnectionError("gone"))
    agent = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES)
    result = await agent.run("q")
    assert [c async for c in agent.stream_answer("q", result)] == ["CNC-003 is normal."]
    model2 = ScriptedChatModel(responses=_one_tool_script(), synthesis=ConnectionError("gone"))
    events = [e async for e in ReActAgent(model2, tools, abilities=NATIVE_TOOLS_ONLY,
                                                settings=TWO_PHASES).astream_events("q")]
    deltas = [e.data["content"] for e in events if e.channel == "answer" and e.data["status"] == "delta"]
    assert deltas == ["CNC-003 is normal."]
    assert events[-1].channel == "done" and events[-1].data["answer"] == "CNC-003 is normal."


async def test_synthesis_breaking_midway_still_delivers_the_answer(tools):
    model = ScriptedChatModel(responses=_one_tool_script(), synthesis="one two three four FAIL_MIDWAY")
    agent = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES)
    events = [e async for e in agent.astream_events("q")]
    text = "".join(e.data["content"] for e in events if e.channel == "answer" and e.data["status"] == "delta")
    assert text == "one two \n\nCNC-003 is normal."


async def test_event_order_follows_the_protocol(tools):
    model = ScriptedChatModel(responses=_one_tool_script(), synthesis="A B C")
    agent = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES)
    events = [e async for e in agent.astream_events("q")]
    shape = [(e.channel, e.data.get("type"), e.data.get("status")) for e in events]
    assert shape == [
        ("step", "thinking", "start"), ("step", "thinking", "done"),
        ("step", "iteration", "start"), ("step", "iteration", "done"),
        ("step", "thinking", "start"), ("step", "thinking", "done"),
        ("step", "answer", "start"),
        ("answer", None, "start"), ("answer", None, "delta"), ("answer", None, "delta"), ("answer", None, "delta"),
        ("answer", None, "done"),
        ("done", None, None),
    ]
    start, done = events[2].data, events[3].data
    assert (start["iteration"], start["tool_name"], start["tool_args"]) == (1, "get_status", {"equipment_id": "CNC-003"})
    assert (done["observation"], done["error"]) == ("CNC-003: normal", None) and done["iter_elapsed"] >= 0
    final = events[-1].data
    assert final["answer"] == "A B C" and final["iterations"] == 2
    assert final["usage"]["model_calls"] == 3 and final["usage"]["total_tokens"] == 45 and final["elapsed"] > 0
    assert events[0].to_sse() == 'event: step\ndata: {"type": "thinking", "status": "start", "iteration": 1}\n\n'


async def test_loop_calls_never_leak_into_the_token_stream(tools):
    model = ScriptedChatModel(
        responses=[AIMessage(content="LOOP-TOKENS", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "c1")]),
                   "LOOP-FINAL"],
        synthesis="synth one two",
    )
    graph = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES).graph
    tokens, whole = [], []
    async for chunk, metadata in graph.astream({"messages": [HumanMessage("q")]}, stream_mode="messages"):
        (tokens if isinstance(chunk, AIMessageChunk) else whole).append((metadata["langgraph_node"], chunk.content))
    # token chunks come from synthesis only; the loop's messages appear once, whole, as state updates
    assert tokens and {node for node, _ in tokens} == {"synthesize"}
    assert "".join(text for _, text in tokens) == "synth one two"
    assert ("llm_call_native", "LOOP-TOKENS") in whole


async def test_plain_invoke_returns_answer_and_synthesis(tools):
    model = ScriptedChatModel(responses=_one_tool_script(), synthesis="final words")
    graph = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES).graph
    state = await graph.ainvoke({"messages": [HumanMessage("q")]})
    assert state["answer"] == "CNC-003 is normal." and state["synthesis"] == "final words"
    assert state["finish_reason"] == "final_answer"


async def test_a_streamed_answer_reports_the_usage_of_all_its_chunks():
    """The tokens each streamed chunk reports are summed (as adding the chunks up would sum
    them), without the chunks being added up: a long answer streams in hundreds of chunks."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    from reactgraph.answer.synthesis import stream_messages

    class UsageStreamer(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "usage-streamer"

        chunks: list[tuple[str, dict[str, int] | None]] = [
            ("The ", None), ("answer ", {"input_tokens": 30, "output_tokens": 2, "total_tokens": 32}), ("", None),
            ("is 42.", {"input_tokens": 0, "output_tokens": 5, "total_tokens": 5}),
        ]

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("".join(t for t, _ in self.chunks)))])

        async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
            for text, reported in self.chunks:
                yield ChatGenerationChunk(message=AIMessageChunk(content=text, usage_metadata=reported))

    usage: dict[str, int] = {}
    texts = [text async for text in stream_messages(UsageStreamer(), [HumanMessage("q")], usage_out=usage)]
    assert texts == ["The ", "answer ", "is 42."]
    assert usage == {"input_tokens": 30, "output_tokens": 7, "total_tokens": 37, "model_calls": 1}
