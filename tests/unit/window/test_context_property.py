"""Property-based test of the context guard (SPEC R6.1–R6.4).

Hypothesis draws conversations (user turns, pinned follow-ups, plain assistant replies,
assistant messages with one to three tool calls and their results, texts from empty to
several thousand characters, English and Korean), budgets, system-prompt overheads and a
compaction model that answers, answers at length, answers nothing or raises. Whatever it
draws, the guard's output must pass :func:`reactgraph.check_protocol`, keep every pinned
message, and fit the budget whenever the system and pinned messages alone fit.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from reactgraph import ContextGuard, TokenCounter, check_protocol
from reactgraph.testing import ScriptedChatModel

COUNTER = TokenCounter()  # shared, so its per-message cache is exercised across examples

WORDS = ["CNC-003", "spindle", "온도", "71.5°C", "진동", "alarm", "W-1105", "normal", "상태", "확인", "ok", "{", "}", "\n"]

texts = st.one_of(
    st.just(""),
    st.lists(st.sampled_from(WORDS), max_size=40).map(" ".join),
    st.tuples(st.sampled_from(WORDS), st.integers(50, 1_500)).map(lambda pair: (pair[0] + " ") * pair[1]),
)


@st.composite
def conversations(draw: st.DrawFn) -> list[BaseMessage]:
    """A valid conversation: optional system message, a first user message, then turns.
    Pinned user messages have ids starting with ``p`` (see :func:`pinned_of`)."""
    counter = iter(range(10_000))

    def new_id(prefix: str) -> str:
        return f"{prefix}{next(counter)}"

    messages: list[BaseMessage] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(draw(texts), id=new_id("s")))
    messages.append(HumanMessage(draw(texts) or "question", id=new_id("p" if draw(st.booleans()) else "h")))
    for kind in draw(st.lists(st.sampled_from(["user", "pinned", "reply", "tools"]), max_size=14)):
        if kind in ("user", "pinned"):
            messages.append(HumanMessage(draw(texts), id=new_id("p" if kind == "pinned" else "h")))
        elif kind == "reply":
            messages.append(AIMessage(draw(texts), id=new_id("a")))
        else:
            calls = [{"name": "read_log", "args": {"machine": draw(st.sampled_from(WORDS))}, "id": new_id("call"),
                      "type": "tool_call"} for _ in range(draw(st.integers(1, 3)))]
            messages.append(AIMessage(draw(texts), tool_calls=calls, id=new_id("a")))
            messages.extend(ToolMessage(draw(texts), tool_call_id=call["id"], name="read_log", id=new_id("t"))
                            for call in calls)
    return messages


summaries = st.one_of(
    st.just("Summary: CNC-003 normal, W-1105 vibration rising."),
    st.just("요약 " * 3_000),  # far longer than the summary allowance
    st.just(""),  # an empty summary counts as a failure
    st.just(RuntimeError("compaction model down")),
    st.none(),  # no compaction model: heuristic truncation only
)


def pinned_of(messages: list[BaseMessage]) -> frozenset[str]:
    """The pinned ids of a drawn conversation (SPEC R6.2: pins live in the state, by id)."""
    return frozenset(m.id for m in messages if m.id and m.id.startswith("p"))


def pinned_alone_tokens(guard: ContextGuard, messages: list[BaseMessage], overhead: int) -> int:
    kept = [guard.truncate_message(m) for m in messages if isinstance(m, SystemMessage) or m.id in pinned_of(messages)]
    return overhead + COUNTER.count_messages(kept)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    messages=conversations(),
    budget=st.integers(50, 6_000),
    overhead=st.integers(0, 800),
    summary=summaries,
    keep_recent=st.integers(0, 8),
    max_chars=st.integers(100, 8_000),
)
def test_guard_output_is_valid_keeps_pinned_and_fits(
    messages: list[BaseMessage], budget: int, overhead: int, summary: Any, keep_recent: int, max_chars: int
) -> None:
    check_protocol(messages)
    model = None if summary is None else ScriptedChatModel(responses=[summary], repeat_last=True)
    guard = ContextGuard(model, budget=budget, counter=COUNTER, max_message_chars=max_chars,
                         keep_recent_messages=keep_recent)
    result = asyncio.run(guard.aguard(messages, overhead_tokens=overhead, pinned=pinned_of(messages)))

    event(f"method: {result.method}")
    event(f"pinned alone fit: {pinned_alone_tokens(guard, messages, overhead) <= budget}")
    check_protocol(result.messages)
    out = {m.id: m for m in result.messages}
    for message in messages:
        if message.id in pinned_of(messages) or isinstance(message, SystemMessage):
            assert message.id in out, f"pinned/system message {message.id} was dropped"
            assert out[message.id].content == guard.truncate_message(message).content
    assert result.tokens_after == overhead + COUNTER.count_messages(result.messages)
    if pinned_alone_tokens(guard, messages, overhead) <= budget:
        assert result.tokens_after <= budget, (result.method, result.error)
    if result.method is None:
        assert [m.id for m in result.messages] == [m.id for m in messages]
    original_ids = {m.id for m in messages}
    for message in result.messages:  # step 1 cut every original message to the limit
        if message.id in original_ids:
            assert len(message.content) <= max_chars
