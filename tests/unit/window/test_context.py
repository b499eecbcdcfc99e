"""The context guard (SPEC §6): truncation, budget, compaction, pinning, offline counting.

Runs go through the real graph on scripted models; every message list a scripted model is
sent (loop calls and compaction calls) is checked with :func:`reactgraph.check_protocol`.
"""

from __future__ import annotations

import socket

import pytest
import tiktoken
import tiktoken.load
import tiktoken.registry
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from reactgraph import (
    AgentSettings,
    ContextGuard,
    ModelAbilities,
    ReActAgent,
    TokenCounter,
    check_protocol,
    context_budget,
    create_react_graph,
    resolve_abilities,
)
from reactgraph.engine.bindings import Engine
from reactgraph.nodes.guard_context import GuardContext
from reactgraph.protocol.prompts import COMPACTION_HINT_PROMPTS, SYNTHESIS_SYSTEM
from reactgraph.testing import ScriptedChatModel, tool_call
from reactgraph.window import (
    DROPPED_NOTE,
    MIN_BUDGET,
    OFFLINE_ENCODING,
    SUMMARY_HEADER,
    TRUNCATION_MARKER,
    estimate_tokens,
)
from reactgraph.window import tokens as tokens_module
from tests.helpers import BIG_LOG, SMALL, log_calls, read_log

QUERY = "CNC-003 상태 확인해줘"
# about 2,000 tokens of plant log text per call, Korean and English mixed


@tool
def dump(n: int) -> str:
    """Return a 200,000-character dump."""
    return ("sensor reading normal; " * 9000)[:200_000]


def is_compaction(messages) -> bool:
    return isinstance(messages[0], SystemMessage) and messages[0].content.startswith("You compact the history")


def last_loop_call(model: ScriptedChatModel) -> list:
    return [call for call in model.calls if call[0].content != SYNTHESIS_SYSTEM and not is_compaction(call)][-1]


# ------------------------------------------------------------------- step 1: truncation


async def test_huge_tool_result_is_truncated_and_the_run_continues():
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("dump", {"n": 1}, "c1")]), "all normal"])
    agent = ReActAgent(model, [dump], abilities=ModelAbilities(tool_call=True))
    result = await agent.run("dump it")
    assert result.answer == "all normal" and result.finish_reason == "final_answer"
    sent = model.calls[1][-1]
    assert isinstance(sent, ToolMessage) and sent.tool_call_id == "c1"
    assert len(sent.content) <= 50_000
    assert TRUNCATION_MARKER in sent.content and sent.content.startswith("sensor reading normal")
    stored = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert stored[0].content == sent.content  # the cut is written back to state, same id
    assert len(result.steps[0].observation) == 200_000  # the step record keeps the whole result
    assert result.usage.model_calls == 2  # no compaction was needed


def test_truncation_limit_is_configurable():
    guard = ContextGuard(None, budget=10_000, max_message_chars=1_000)
    long, short = HumanMessage("x" * 5_000, id="a"), HumanMessage("y" * 1_000, id="b")
    cut = guard.truncate_message(long)
    assert cut.id == "a" and len(cut.content) <= 1_000 and TRUNCATION_MARKER in cut.content
    assert guard.truncate_message(short) is short
    with pytest.raises(ValueError):
        AgentSettings(max_message_chars=10)


# ----------------------------------------------------------------- steps 2–3: compaction


async def test_over_budget_history_is_compacted_in_the_conversations_language():
    summarizer = ScriptedChatModel(responses=["요약: CNC-001, CNC-002 로그 확인됨, W-1105 진동 증가."], repeat_last=True)
    model = ScriptedChatModel(responses=[*log_calls(4), "CNC-003 정상"])
    agent = ReActAgent(model, [read_log], abilities=SMALL, compaction_llm=summarizer)
    events = [event async for event in agent.astream_events(QUERY)]

    compacts = [e.data for e in events if e.channel == "compact"]
    assert compacts, "the history went over budget, so it was compacted"
    assert set(compacts[0]) == {"original_messages", "kept_messages"}
    assert compacts[0]["kept_messages"] < compacts[0]["original_messages"]
    done = next(e.data for e in events if e.channel == "done")
    assert done["finish_reason"] == "final_answer"
    assert done["usage"]["model_calls"] == 5 + len(compacts) + 1  # loop calls, compactions, synthesis

    prompt = summarizer.calls[0]
    system = prompt[0].content
    assert "in the language of the conversation (Korean)" in system
    assert COMPACTION_HINT_PROMPTS["react_iteration"] in system
    assert QUERY in prompt[1].content and "read_log" in prompt[1].content

    after = last_loop_call(model)  # the loop call after the last compaction
    assert any(isinstance(m, HumanMessage) and m.content.startswith(SUMMARY_HEADER) and "W-1105" in m.content for m in after)
    assert [m.content for m in after if m.content == QUERY] == [QUERY]  # the pinned query is kept
    assert TokenCounter().count_messages(after) <= 8_000  # the system prompt included
    assert isinstance(after[-1], ToolMessage)  # the most recent result is kept verbatim
    # the tool's text whole (the engine's note follows it: no one wrote CNC-004)
    assert after[-1].content.startswith(f"CNC-004 log:\n{BIG_LOG}")


async def test_every_pinned_message_survives_compaction():
    summarizer = ScriptedChatModel(responses=["Earlier: logs of CNC-001 and CNC-002 read."], repeat_last=True)
    model = ScriptedChatModel(responses=[*log_calls(4), "done"])
    graph = create_react_graph(model, [read_log], abilities=SMALL, compaction_llm=summarizer,
                               settings=AgentSettings(keep_recent_messages=2))
    history = [
        HumanMessage("Check the plant."),
        AIMessage("Which machine?"),
        HumanMessage("Always report temperatures in °C.", id="rule"),
        AIMessage("Noted."),
        HumanMessage(QUERY, id="query"),
    ]
    # a caller pins a message by id (SPEC R6.2); the turn's query is pinned by the engine
    state = await graph.ainvoke({"messages": history, "pinned": ["rule"]}, {"configurable": {"synthesize": False}})
    check_protocol(state["messages"])
    assert "pinned" not in state  # bookkeeping stays in the checkpointed state, not the output
    texts = [m.content for m in state["messages"] if m.id in ("rule", "query")]
    assert texts == ["Always report temperatures in °C.", QUERY]
    assert "Check the plant." not in [m.content for m in state["messages"]]  # old, unpinned: summarized
    assert any(str(m.content).startswith(SUMMARY_HEADER) for m in state["messages"])
    assert state["answer"] == "done"


async def test_compaction_uses_the_agents_model_by_default_and_stays_out_of_token_streams():
    loop = iter([*log_calls(4), AIMessage("CNC-003 정상")])

    def respond(messages):
        return AIMessage("SUMMARY-TEXT CNC-001 CNC-002 read") if is_compaction(messages) else next(loop)

    model = ScriptedChatModel(responses=[respond], repeat_last=True)
    graph = create_react_graph(model, [read_log], abilities=SMALL)
    chunks = [chunk async for chunk, _ in graph.astream({"messages": [HumanMessage(QUERY)]},
                                                     {"configurable": {"synthesize": False}}, stream_mode="messages")]
    assert sum(is_compaction(call) for call in model.calls) >= 1
    # SPEC R3.3: the compaction model's output never reaches the stream; only the summary
    # message written to state does, as a user message, like every other state update
    assert not any(isinstance(chunk, AIMessage) and "SUMMARY-TEXT" in str(chunk.content) for chunk in chunks)
    assert any(isinstance(chunk, HumanMessage) and "SUMMARY-TEXT" in str(chunk.content) for chunk in chunks)


async def test_compaction_failure_falls_back_to_truncation_and_the_run_answers():
    loop = iter([*log_calls(4), AIMessage("CNC-003 정상")])

    def respond(messages):
        if is_compaction(messages):
            raise ConnectionError("compaction model unavailable")
        return next(loop)

    model = ScriptedChatModel(responses=[respond], repeat_last=True)
    agent = ReActAgent(model, [read_log], abilities=SMALL)
    events = [event async for event in agent.astream_events(QUERY)]
    done = next(e.data for e in events if e.channel == "done")
    assert done["finish_reason"] == "final_answer" and done["answer"]
    assert any(e.channel == "compact" for e in events)
    last = last_loop_call(model)
    assert last[1].content == QUERY  # the pinned query survived the truncation
    assert any(m.content == DROPPED_NOTE for m in last)
    assert not any(str(m.content).startswith(SUMMARY_HEADER) for m in last)


async def test_guard_without_a_model_truncates_whole_tool_groups():
    guard = ContextGuard(None, budget=600, counter=TokenCounter())
    messages = [HumanMessage(QUERY, id="q")]
    for i in range(6):
        messages += [AIMessage("", id=f"a{i}", tool_calls=[tool_call("read_log", {"machine": str(i)}, f"t{i}a"),
                                                             tool_call("read_log", {"machine": str(i)}, f"t{i}b")]),
                     ToolMessage("result " * 60, tool_call_id=f"t{i}a", id=f"r{i}a"),
                     ToolMessage("result " * 60, tool_call_id=f"t{i}b", id=f"r{i}b")]
    result = await guard.aguard(messages, pinned={"q"})
    assert result.method == "truncation" and result.tokens_after <= 600 < result.tokens_before
    check_protocol(result.messages)
    assert result.messages[0].id == "q" and result.messages[1].content == DROPPED_NOTE
    assert result.messages[-1].id == "r5b"  # walked back from the end


async def test_within_budget_is_a_pass_through():
    guard = ContextGuard(ScriptedChatModel(responses=[]), budget=4_000)
    messages = [HumanMessage("hi", id="h"), AIMessage("hello", id="a")]
    result = await guard.aguard(messages, overhead_tokens=100)
    assert result.messages == messages and not result.compacted and not result.truncated
    assert result.tokens_after == result.tokens_before <= 4_000


# ------------------------------------------------------------------------------ budget


def test_budget_from_the_model_profile():
    model = ScriptedChatModel(profile={"tool_calling": True, "max_input_tokens": 128_000, "max_output_tokens": 16_384})
    assert context_budget(resolve_abilities(model)) == 128_000 - 16_384
    engine = Engine.build(model, [read_log], resolve_abilities(model), AgentSettings(), True)
    assert GuardContext(engine).guard.budget == 111_616


def test_budget_from_explicit_abilities_and_settings():
    model = ScriptedChatModel(profile={"max_input_tokens": 128_000, "max_output_tokens": 16_384})
    explicit = resolve_abilities(model, ModelAbilities(context_window=32_768, max_output_tokens=2_048))
    assert context_budget(explicit) == 30_720
    merged = resolve_abilities(model, {"context_window": 16_000})
    assert context_budget(merged) == MIN_BUDGET  # 16,000 − 16,384 from the profile: the floor
    settings = AgentSettings(context_window=50_000, max_output_tokens=10_000)
    assert context_budget(explicit, settings) == 40_000
    assert context_budget() == 32_768 - 4_096  # nothing known: the documented defaults


def test_budget_floor():
    assert context_budget(ModelAbilities(context_window=6_000, max_output_tokens=4_000)) == MIN_BUDGET == 4_000
    assert context_budget(ModelAbilities(context_window=2_048)) == 4_000
    assert context_budget(ModelAbilities(context_window=8_192, max_output_tokens=512)) == 7_680


# -------------------------------------------------------------------- counting, pinning


def test_counts_are_cached_per_message(monkeypatch):
    counter = TokenCounter()
    history = [HumanMessage(QUERY)] + [ToolMessage(BIG_LOG + str(i), tool_call_id=f"c{i}") for i in range(20)]
    first = counter.count_messages(history)
    tokenized: list[str] = []
    original = counter.count_text
    monkeypatch.setattr(counter, "count_text", lambda text: tokenized.append(text) or original(text))
    grown = [*history, AIMessage("next step")]
    assert counter.count_messages(grown) == first + counter.count_message(AIMessage("next step"))
    assert tokenized == ["next step", ""]  # only the new message was tokenized
    uncached = TokenCounter(cache=False)
    assert uncached.count_messages(history) == first


def test_char_estimate_is_cjk_aware():
    assert estimate_tokens("") == 0
    assert estimate_tokens("a" * 400) == 100
    assert estimate_tokens("상태확인" * 25) == 100  # one token per Hangul syllable
    assert estimate_tokens("温度" * 50) == 100


async def test_queries_are_pinned_by_id_in_checkpointed_state_and_left_as_sent(tmp_path):
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        agent = ReActAgent(ScriptedChatModel(responses=["one", "two"]), [read_log],
                           abilities=ModelAbilities(tool_call=True), checkpointer=saver)
        await agent.run("first question", thread_id="t")
        await agent.run("second question", thread_id="t")
        state = (await agent.graph.aget_state({"configurable": {"thread_id": "t"}})).values
    humans = [m for m in state["messages"] if isinstance(m, HumanMessage)]
    assert [m.content for m in humans] == ["first question", "second question"]
    assert state["pinned"] == [m.id for m in humans]  # SPEC R6.2, kept across runs
    assert all(m.additional_kwargs == {} for m in humans)  # The messages are as sent


# ----------------------------------------------------------------------------- offline


def test_token_counting_works_with_the_download_blocked(monkeypatch, tmp_path):
    attempts: list[str] = []
    read_file = tiktoken.load.read_file

    def blocked_read(path: str) -> bytes:
        if "://" in path:
            attempts.append(path)
            raise ConnectionError(f"network blocked: {path}")
        return read_file(path)

    def blocked_connect(*args, **kwargs):
        raise OSError("network blocked")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache: nothing to reuse
    monkeypatch.setattr(tiktoken.load, "read_file", blocked_read)
    monkeypatch.setattr(socket.socket, "connect", blocked_connect)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # tiktoken's own in-process cache
    monkeypatch.setattr(tokens_module, "_encodings", {})

    counter = TokenCounter("gpt-4o-mini")  # an o200k_base model: its encoding needs a download
    assert counter.count_text(QUERY) > 0
    assert counter.encoding_name == OFFLINE_ENCODING
    assert any("o200k_base" in path for path in attempts)  # tried, blocked, fell back
    assert counter.count_messages([HumanMessage(QUERY), AIMessage("CNC-003 정상")]) > 0
    assert TokenCounter("Qwen/Qwen2.5-7B-Instruct").encoding_name == OFFLINE_ENCODING


def test_char_estimate_is_the_last_resort(monkeypatch):
    def unavailable(name):
        raise ValueError(f"no encoding {name}")

    monkeypatch.setattr(tokens_module, "_encodings", {})
    monkeypatch.setattr(tiktoken, "get_encoding", unavailable)
    counter = TokenCounter("gpt-4o-mini")
    assert counter.encoding_name == "estimate"
    assert counter.count_text("상태확인") == 4


# The window check before each model call ----------------------------------------


class CountingCounter(TokenCounter):
    """A token counter that records how many texts it tokenized."""

    def __init__(self) -> None:
        super().__init__()
        self.tokenized = 0

    def count_text(self, text: str) -> int:
        self.tokenized += 1
        return super().count_text(text)


def conversation(turns: int, text: str = "CNC-003 spindle 71.5 °C, vibration 4.2 mm/s. 온도 정상") -> list:
    messages: list = [HumanMessage("check the plant", id="q")]
    for i in range(turns):
        messages += [AIMessage("", tool_calls=[tool_call("read_log", {"machine": f"M-{i}"}, f"c{i}")], id=f"a{i}"),
                     ToolMessage(text * 3, tool_call_id=f"c{i}", id=f"t{i}")]
    return messages


def test_far_below_the_budget_the_window_check_tokenizes_nothing():
    counter = CountingCounter()
    guard = ContextGuard(None, budget=100_000, counter=counter)
    history = conversation(30)
    for end in range(1, len(history) + 1):
        assert guard.fits(history[:end], overhead_tokens=200, key="t")
    assert counter.tokenized == 0


async def test_a_run_far_below_the_budget_never_loads_the_tokenizer(monkeypatch):
    """The encoding (~0.2 s to load, maybe a download) is loaded only once the byte bound of
    a request comes near the budget; a run that goes over still gets guarded."""
    loads = []
    real_load = TokenCounter.load

    def counted_load(self):
        if not self.loaded:
            loads.append(self.model_name)
        real_load(self)

    monkeypatch.setattr(TokenCounter, "load", counted_load)

    @tool
    def status(machine: str) -> str:
        """The status of a machine."""
        return f"{machine}: normal"

    calls = [AIMessage(content="", tool_calls=[tool_call("status", {"machine": m}, m)]) for m in ("CNC-001", "CNC-002")]
    model = ScriptedChatModel(responses=[*calls, "all normal"])
    result = await ReActAgent(model, [status], abilities=ModelAbilities(tool_call=True)).run(QUERY)
    assert result.answer == "all normal" and len(result.steps) == 2
    assert loads == []

    summarizer = ScriptedChatModel(responses=["요약: CNC-001 로그 확인됨."], repeat_last=True)
    model = ScriptedChatModel(responses=[*log_calls(4), "CNC-003 정상"])
    agent = ReActAgent(model, [read_log], abilities=SMALL, compaction_llm=summarizer)
    events = [event async for event in agent.astream_events(QUERY)]
    assert len(loads) == 1 and any(e.channel == "compact" for e in events)


async def test_the_window_check_agrees_with_the_guard_as_a_conversation_grows_past_the_budget():
    guard = ContextGuard(None, budget=4_000, counter=TokenCounter())
    history = conversation(40)
    answers = []
    for end in range(1, len(history) + 1):
        messages = history[:end]
        result = await guard.aguard(messages, overhead_tokens=300)
        passes = not result.compacted and not result.truncated
        assert guard.fits(messages, overhead_tokens=300, key="t") == passes
        answers.append(passes)
    assert answers[0] and not answers[-1], "the conversation starts within the budget and ends over it"


def test_the_window_check_sends_an_over_long_message_to_the_guard():
    guard = ContextGuard(None, budget=1_000_000, counter=TokenCounter(), max_message_chars=1_000)
    history = conversation(2)
    assert guard.fits(history, key="t")
    assert not guard.fits([*history, HumanMessage("x" * 1_001, id="long")], key="t")


def test_after_the_guard_its_result_is_not_guarded_again_until_a_message_is_added():
    guard = ContextGuard(None, budget=1_000, counter=TokenCounter())
    pinned_alone_over = [HumanMessage("pinned " * 3_000, id="q")]  # pinned messages may be over the budget
    assert not guard.fits(pinned_alone_over, key="t")
    guard.accept(pinned_alone_over, "t")
    assert guard.fits(pinned_alone_over, key="t")
    assert not guard.fits([*pinned_alone_over, HumanMessage("more", id="m")], key="t")


def test_a_conversation_rewritten_in_place_is_counted_again_once_forgotten():
    """The guard node forgets the running total before it rewrites messages (keeping their ids)."""
    guard = ContextGuard(None, budget=4_000, counter=TokenCounter())
    history = conversation(3, text="short")
    assert guard.fits(history, key="t")
    rewritten = [*history[:-1], history[-1].model_copy(update={"content": "long " * 5_000})]  # same id
    guard.forget("t")
    assert not guard.fits(rewritten, key="t")
