"""Property-based tests: the tool loop survives whatever the model writes (SPEC R2.3–R2.7, §8, §12).

Hypothesis plays scripted models that answer with arbitrary output, in both loop modes:
random text, truncated or mistyped JSON, unknown tools, wrong argument types, empty
content, huge strings, broken native tool calls. Whatever the script, every run must end
with a non-empty answer and a message trace that passes :func:`reactgraph.check_protocol`
(the scripted model also checks every message list it is sent), and a streamed run must
end with one well-formed ``answer`` stream and a ``done`` event.

Each example runs its own event loop (``asyncio.run``) inside a synchronous ``@given``
test, so Hypothesis controls the examples and pytest-asyncio stays out of the way.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import AgentResult, AgentSettings, Artifact, ModelAbilities, ReActAgent, check_protocol, parse_action
from reactgraph.protocol.prompts import REFORMAT_REQUEST
from reactgraph.testing import ScriptedChatModel

MAX_ITERATIONS = 6
TOOL_TIMEOUT = 1.0
FINISH_REASONS = {"final_answer", "stalled", "raw_content", "max_iterations", "model_error"}
HUGE = 100_000

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,  # no .hypothesis directory in the work tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


# ------------------------------------------------------------------------------- the tools


@tool
def lookup(key: str) -> str:
    """Look up the value stored under a key."""
    return f"value of {key!r}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str = "boom") -> str:
    """Always fails."""
    raise RuntimeError(f"tool failed: {reason}")


@tool
def as_record(n: int = 1) -> dict:
    """Return a record as a dict, not a string."""
    return {"n": n, "items": list(range(max(0, min(n, 3)))), "unit": "°C"}


@tool
def nothing() -> None:
    """Return None."""
    return None


@tool
async def slow(seconds: float = 0.0) -> str:
    """Sleep for some seconds (past the tool timeout it becomes a timeout observation)."""
    await asyncio.sleep(min(max(seconds, 0.0), 3.0))
    return f"slept {seconds}"


@tool
def make_report(title: str) -> Artifact:
    """Return an HTML artifact."""
    return Artifact(f"{title}.html", f"<h1>{title}</h1>")


TOOLS = [lookup, add, explode, as_record, nothing, slow, make_report]
TOOL_NAMES = [t.name for t in TOOLS]


# ------------------------------------------------------------------------ value strategies


def rarely(draw: st.DrawFn, one_in: int) -> bool:
    """True about once in ``one_in`` draws (plain ``integers(...) == 0`` is biased towards 0)."""
    return draw(st.sampled_from([False] * (one_in - 1) + [True]))


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)

# mostly instant; about one call in fifty sleeps past the tool timeout
slow_seconds = st.integers(0, 49).map(lambda i: TOOL_TIMEOUT + 0.5 if i == 37 else i / 10_000)

GOOD_ARGS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "lookup": st.fixed_dictionaries({"key": st.text(max_size=20)}),
    "add": st.fixed_dictionaries({"a": st.integers(-10**6, 10**6), "b": st.integers(-10**6, 10**6)}),
    "explode": st.one_of(st.just({}), st.fixed_dictionaries({"reason": st.text(max_size=10)})),
    "as_record": st.one_of(st.just({}), st.fixed_dictionaries({"n": st.integers(-2, 5)})),
    "nothing": st.just({}),
    "slow": st.one_of(st.just({}), st.fixed_dictionaries({"seconds": slow_seconds})),
    "make_report": st.fixed_dictionaries({"title": st.text("abcxyz_", min_size=1, max_size=8)}),
}

int_lists = st.lists(st.integers(), max_size=2)
int_dicts = st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
WRONG_TYPED_ARGS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "lookup": st.fixed_dictionaries({"key": st.one_of(int_lists, int_dicts)}),
    "add": st.fixed_dictionaries({"a": st.text(max_size=5), "b": st.one_of(st.floats(), int_lists, st.none())}),
    "explode": st.fixed_dictionaries({"reason": int_lists}),
    "as_record": st.fixed_dictionaries({"n": st.one_of(st.text(max_size=5), st.floats(0.1, 0.9), int_dicts)}),
    "nothing": st.dictionaries(st.text(max_size=6), json_scalars, min_size=1, max_size=3),  # it takes none
    "slow": st.fixed_dictionaries({"seconds": st.one_of(st.text(max_size=5), st.lists(st.floats(0, 0.01)))}),
    "make_report": st.fixed_dictionaries({"title": st.one_of(st.integers(), st.none(), st.lists(st.text(max_size=3)))}),
}

unknown_tool_names = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["Lookup", "lookup ", " add", "add()", "functions.add", "final_answer", "tool_call", "search"]),
)


@st.composite
def tool_request(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A (tool name, dict arguments) pair: real tools with good, wrong-typed, missing or
    arbitrary arguments, or a tool that does not exist."""
    kind = draw(st.sampled_from(["good", "good", "wrong", "missing", "arbitrary", "unknown"]))
    if kind == "unknown":
        return draw(unknown_tool_names), draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3))
    name = draw(st.sampled_from(TOOL_NAMES))
    if kind == "good":
        return name, draw(GOOD_ARGS[name])
    if kind == "wrong":
        return name, draw(WRONG_TYPED_ARGS[name])
    if kind == "missing":
        return name, {}
    return name, draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3))


non_object_args = st.one_of(
    st.text(max_size=30),  # a string that is (usually) not a JSON object
    st.lists(json_scalars, max_size=3),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.just("{not json"),
    st.just('["a", "b"]'),
)


# -------------------------------------------------------------------- JSON-mode strategies


@st.composite
def tool_call_object(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-mode tool call in the wire format or one of the variants real models write."""
    name, args = draw(tool_request())
    if rarely(draw, 5):
        args = draw(non_object_args)  # tool_args as a string, list, number, ...
    reasoning = draw(st.one_of(st.just(""), st.text(max_size=30)))
    shape = draw(st.sampled_from(["wire", "wire", "wire", "aliases", "action_input", "openai", "args_as_string"]))
    if shape == "aliases":
        return {"action": "tool_call", "thought": reasoning, "name": name, "arguments": args}
    if shape == "action_input":
        return {"action": name, "action_input": args}
    if shape == "openai":
        return {"function": {"name": name, "arguments": json.dumps(args)}}
    if shape == "args_as_string":
        return {"type": "tool_call", "reasoning": reasoning, "tool_name": name, "tool_args": json.dumps(args)}
    return {"type": "tool_call", "reasoning": reasoning, "tool_name": name, "tool_args": args}


answer_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "\n\t", "   \n"]),  # empty answers
    st.none(),
    st.integers(),
    st.lists(st.text(max_size=5), max_size=2),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
)


@st.composite
def final_answer_object(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-mode final answer, including empty, missing and non-string answers."""
    obj: dict[str, Any] = {"type": draw(st.sampled_from(["final_answer", "final", "answer", "finish"]))}
    if draw(st.booleans()):
        obj["reasoning"] = draw(st.one_of(st.just(""), st.text(max_size=20)))
    if not rarely(draw, 6):
        obj[draw(st.sampled_from(["answer", "answer", "final_answer", "response", "content"]))] = draw(answer_values)
    return obj


action_objects = st.one_of(
    tool_call_object(),
    final_answer_object(),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),  # objects that are neither
)


def _with_trailing_comma(text: str) -> str:
    return text[:-1] + ",}" if text.endswith("}") else text + ","


@st.composite
def rendered_action(draw: st.DrawFn) -> str:
    """An action object as text: clean JSON or the ways models mistype it."""
    obj = draw(action_objects)
    style = draw(st.sampled_from(
        ["json", "json", "indent", "python", "trailing_comma", "fenced", "prose", "tagged", "two_objects", "truncated"]
    ))
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    if style == "indent":
        return json.dumps(obj, indent=2)
    if style == "python":  # single quotes, True/None
        return repr(obj)
    if style == "trailing_comma":
        return _with_trailing_comma(text)
    if style == "fenced":
        return f"```json\n{text}\n```"
    if style == "prose":
        return f"{draw(st.text(max_size=30))}\n{text}\n{draw(st.text(max_size=30))}"
    if style == "tagged":
        return f"<tool_call>{text}</tool_call>"
    if style == "two_objects":
        return text + "\n" + json.dumps(draw(action_objects))
    if style == "truncated":
        return text[: draw(st.integers(0, len(text)))]
    return text


huge_json_contents = st.sampled_from([
    "a" * HUGE,
    "{" * HUGE,
    "}" * HUGE + "{",
    '"' * HUGE,
    json.dumps({"type": "final_answer", "answer": "x" * HUGE}),
    json.dumps({"type": "tool_call", "tool_name": "lookup", "tool_args": {"key": "k" * HUGE}}),
    json.dumps({"type": "tool_call", "tool_name": "t" * HUGE, "tool_args": {}}),
    '{"type": "final_answer", "answer": "' + "x" * HUGE,  # truncated, never closed
])

# Output a lenient parser can turn into values JSON cannot serialize, and nesting deep
# enough to exhaust the recursion limit of a recursive parser.
hostile_json_contents = st.sampled_from([
    "[" * HUGE,
    '{"type": "final_answer", "answer": ' + "[" * HUGE + "]" * HUGE + "}",
    "{'type': 'final_answer', 'answer': {1, 2}}",
    "{'type': 'final_answer', 'reasoning': b'bytes', 'answer': 'ok'}",
    "{'type': 'final_answer', 'answer': 1j}",
    "{'type': 'tool_call', 'tool_name': 'lookup', 'tool_args': {1, 2}}",
    "{'type': 'tool_call', 'tool_name': 'lookup', 'tool_args': 0x" + "f" * 4000 + "}",
    '{"type": "final_answer", "answer": "\\ud800"}',
    "null",
    "[]",
    "[1, 2]",
    "{}",
    "true",
])


@st.composite
def clean_tool_call(draw: st.DrawFn) -> str:
    """A well-formed wire-format tool call (so that runs get past the first iterations)."""
    name, args = draw(tool_request())
    return json.dumps({"type": "tool_call", "reasoning": "need data", "tool_name": name, "tool_args": args})


json_noise = st.one_of(
    st.text(),
    st.sampled_from(["", " ", "\n", "```json\n```", "<tool_call></tool_call>"]),
    huge_json_contents,
    hostile_json_contents,
)
# weighted towards readable actions, so that runs get past the first iterations
json_texts = st.one_of(
    clean_tool_call(), clean_tool_call(), clean_tool_call(), rendered_action(), rendered_action(), json_noise
)


@st.composite
def json_response(draw: st.DrawFn) -> AIMessage | str:
    """A JSON-mode response: usually the text alone; sometimes as content blocks, or
    with native tool calls the model made although none were offered."""
    text = draw(json_texts)
    wrapper = draw(st.sampled_from(["plain", "plain", "plain", "plain", "blocks", "stray_tool_calls"]))
    if wrapper == "blocks":
        return AIMessage(content=[{"type": "text", "text": text}])
    if wrapper == "stray_tool_calls":
        return AIMessage(content=text, tool_calls=draw(st.lists(native_tool_call(), min_size=1, max_size=2)))
    return text


json_contents = json_response()


def final_json(answer: str) -> str:
    return json.dumps({"type": "final_answer", "reasoning": "done", "answer": answer})


# ------------------------------------------------------------------ native-mode strategies

call_ids = st.one_of(
    st.none(),
    st.just(""),
    st.sampled_from(["call_0", "call_1", "dup"]),  # reused within and across responses
    st.text("abcdef0123456789_", min_size=1, max_size=12),
)

broken_argument_strings = st.one_of(
    st.text(max_size=30),
    st.sampled_from(['{"key": ', "{'a': 1}", '{"a": 1,}', "[1, 2", "null", "", "{" * 50]),
)


@st.composite
def native_tool_call(draw: st.DrawFn) -> dict[str, Any]:
    name, args = draw(tool_request())
    return {"name": name, "args": args, "id": draw(call_ids), "type": "tool_call"}


@st.composite
def invalid_tool_call(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "type": "invalid_tool_call",
        "name": draw(st.one_of(st.none(), st.sampled_from(TOOL_NAMES), unknown_tool_names)),
        "args": draw(st.one_of(st.none(), broken_argument_strings)),
        "id": draw(call_ids),
        "error": draw(st.one_of(st.none(), st.text(max_size=20))),
    }


native_contents = st.one_of(
    st.just(""),
    st.text(max_size=60),
    st.sampled_from(["a" * HUGE, "{" * HUGE, "\ud800 lone surrogate", '{"type": "tool_call", "tool_name": "lookup"}']),
    st.lists(st.text(max_size=20).map(lambda t: {"type": "text", "text": t}), max_size=2),  # content blocks
    st.just([{"type": "reasoning", "reasoning": "thinking only, no text"}]),
)


@st.composite
def native_response(draw: st.DrawFn) -> AIMessage | str:
    """A native-mode response: 0–3 tool calls, maybe invalid ones, any content; or plain text."""
    if rarely(draw, 6):
        return draw(st.one_of(st.text(max_size=40), st.just("")))  # a plain text final answer
    calls = [] if rarely(draw, 8) else draw(st.lists(native_tool_call(), min_size=1, max_size=3))
    invalid = draw(st.lists(invalid_tool_call(), min_size=1, max_size=2)) if rarely(draw, 4) else []
    extra = {"reasoning_content": draw(st.text(max_size=20))} if rarely(draw, 6) else {}
    content = draw(native_contents)
    return AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid, additional_kwargs=extra)


# ------------------------------------------------------------------------------ the cases


@dataclass
class Case:
    """One scripted run.

    ``mode`` is ``native``, ``json_off`` (native tools turned off by the caller) or
    ``json_unsupported`` (the model cannot call tools); ``json_format`` is the model's
    ``json_mode`` ability; ``stream`` consumes ``astream_events`` instead of ``run``.
    """

    mode: str
    responses: list[Any]
    repeat_last: bool
    json_format: bool = False
    stream: bool = False
    synthesis: Any = "Synthesized answer."
    model_attempts: int = 2

    @property
    def raises(self) -> bool:
        """The script makes the model fail at least once."""
        return any(isinstance(r, BaseException) for r in self.responses)

    def __repr__(self) -> str:  # keep Hypothesis' report readable with 100k-char strings
        def short(value: Any) -> str:
            text = repr(value)
            return text if len(text) <= 300 else f"{text[:200]}…<{len(text)} chars>…{text[-60:]}"

        responses = ", ".join(short(r) for r in self.responses)
        return (
            f"Case(mode={self.mode!r}, repeat_last={self.repeat_last}, json_format={self.json_format}, "
            f"stream={self.stream}, synthesis={short(self.synthesis)}, model_attempts={self.model_attempts}, "
            f"responses=[{responses}])"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis' printer, for falsifying examples
        printer.text(repr(self))


synthesis_outputs = st.one_of(
    st.just("Synthesized answer."),
    st.text(max_size=40),  # may be empty or whitespace: the loop's answer must fill in
    st.just("x" * HUGE),
    st.just("one two FAIL_MIDWAY three four"),  # the stream breaks after two chunks
    st.just(ConnectionError("synthesis unavailable")),
)


@st.composite
def scripted_case(draw: st.DrawFn, mode: str) -> Case:
    """A script of 1–8 responses that either repeats its last response or ends with a
    final answer (so a well-behaved engine never runs the script dry)."""
    json_mode = mode != "native"
    responses: list[Any] = draw(st.lists(json_contents if json_mode else native_response(), min_size=1, max_size=8))
    repeat_last = draw(st.booleans())
    if not repeat_last:
        responses[-1] = final_json(draw(st.text(max_size=20))) if json_mode else draw(st.text(min_size=1, max_size=20))
    return Case(
        mode=mode,
        responses=responses,
        repeat_last=repeat_last,
        json_format=draw(st.booleans()),
        stream=rarely(draw, 3),
        synthesis=draw(synthesis_outputs),
    )


model_failures = st.sampled_from([
    ValueError("400 bad request: the model rejected the input"),
    RuntimeError("provider crashed"),
    ConnectionError("connection reset"),  # transient: retried
    TimeoutError("read timed out"),  # transient: retried
    AssertionError("not a provider error at all"),
])


@st.composite
def failing_case(draw: st.DrawFn) -> Case:
    """Scripts that mix model exceptions (transient and not) with arbitrary output."""
    mode = draw(st.sampled_from(["native", "json_off", "json_unsupported"]))
    output = native_response() if mode == "native" else json_contents
    responses = draw(st.lists(st.one_of(output, model_failures), min_size=1, max_size=8))
    if not any(isinstance(r, BaseException) for r in responses):
        responses[draw(st.integers(0, len(responses) - 1))] = draw(model_failures)
    return Case(
        mode=mode,
        responses=responses,
        repeat_last=draw(st.booleans()),
        json_format=draw(st.booleans()),
        stream=draw(st.booleans()),
        synthesis=draw(synthesis_outputs),
        model_attempts=draw(st.sampled_from([1, 2])),
    )


# ------------------------------------------------------------------------- running a case


@dataclass
class Outcome:
    model: ScriptedChatModel
    result: AgentResult | None = None
    events: list[Any] = field(default_factory=list)


def build(case: Case) -> tuple[ReActAgent, ScriptedChatModel]:
    model = ScriptedChatModel(responses=list(case.responses), repeat_last=case.repeat_last, synthesis=case.synthesis)
    agent_settings = AgentSettings(
        max_iterations=MAX_ITERATIONS,
        tool_timeout=TOOL_TIMEOUT,
        model_attempts=case.model_attempts,
        retry_initial_delay=0.001,
        retry_max_delay=0.005,
        # These properties are about the loop: a window no script can fill keeps context
        # compaction (its own model calls) out of them; tests/unit/window/test_context*.py cover it.
        context_window=1_000_000,
        # The stream properties below are the two phases' (no loop event once the answer
        # started, no withdrawn answer): the synthesis call writes every answer.
        synthesis="always",
    )
    if case.mode == "native":
        abilities = ModelAbilities(tool_call=True, json_mode=case.json_format)
        agent = ReActAgent(model, TOOLS, abilities=abilities, settings=agent_settings)
    elif case.mode == "json_off":
        abilities = ModelAbilities(tool_call=True, json_mode=case.json_format)
        agent = ReActAgent(model, TOOLS, use_native_tools=False, abilities=abilities, settings=agent_settings)
    else:
        abilities = ModelAbilities(tool_call=False, json_mode=case.json_format)
        agent = ReActAgent(model, TOOLS, abilities=abilities, settings=agent_settings)
    assert agent.mode == ("native" if case.mode == "native" else "json")
    return agent, model


def play(case: Case) -> Outcome:
    agent, model = build(case)

    async def go() -> Outcome:
        if case.stream:
            return Outcome(model, events=[event async for event in agent.astream_events("What is the state?")])
        return Outcome(model, result=await agent.run("What is the state?"))

    return asyncio.run(asyncio.wait_for(go(), timeout=60))


# ------------------------------------------------------------------------------ properties


def check_run(case: Case, outcome: Outcome) -> None:
    """The properties of a result from ``ReActAgent.run``."""
    result = outcome.result
    assert result is not None
    assert isinstance(result.answer, str) and result.answer.strip(), f"empty answer ({result.finish_reason})"
    check_protocol(result.messages)
    assert isinstance(result.messages[0], SystemMessage)
    assert isinstance(result.messages[1], HumanMessage)
    assert not any(isinstance(m, SystemMessage) for m in result.messages[1:])
    assert 0 <= result.iterations <= MAX_ITERATIONS
    assert result.finish_reason in FINISH_REASONS
    assert (result.finish_reason == "model_error") == (result.error is not None)
    if not case.raises:  # nothing the model *wrote* may crash the loop (R2.7)
        assert result.finish_reason != "model_error", f"the run crashed: {result.error}"
        assert result.usage.model_calls == result.iterations
        assert 1 <= result.iterations
    for step in result.steps:
        assert isinstance(step.observation, str) and step.observation.strip()
        assert step.error is None or (isinstance(step.error, str) and step.error)
        assert 1 <= step.iteration <= max(result.iterations, 1)
    assert len({step.tool_call_id for step in result.steps}) == len(result.steps)
    tool_messages = [m for m in result.messages if isinstance(m, ToolMessage)]
    if case.mode == "native":
        assert len(tool_messages) == len(result.steps)
        assert [m.tool_call_id for m in tool_messages] == [s.tool_call_id for s in result.steps]
        for message in result.messages:
            if isinstance(message, AIMessage):
                assert not message.invalid_tool_calls  # repaired before they were stored
    else:
        assert not tool_messages
        assert not any(isinstance(m, AIMessage) and m.tool_calls for m in result.messages)
        observations = [m for m in result.messages
                        if isinstance(m, HumanMessage) and str(m.content).startswith("Observation from ")]
        assert len(observations) == len(result.steps)


def check_events(case: Case, outcome: Outcome) -> None:
    """The properties of an ``astream_events`` stream (SPEC §8)."""
    events = outcome.events
    channels = [event.channel for event in events]
    assert channels and channels[-1] == "done", channels[-5:]
    assert channels.count("done") == 1
    done = events[-1].data
    assert isinstance(done["answer"], str) and done["answer"].strip()
    assert 0 <= done["iterations"] <= MAX_ITERATIONS
    assert done["finish_reason"] in FINISH_REASONS

    answer = [event.data for event in events if event.channel == "answer"]
    statuses = [data["status"] for data in answer]
    assert statuses[:1] == ["start"] and statuses[-1:] == ["done"], statuses
    assert statuses.count("start") == 1 and statuses.count("done") == 1
    assert set(statuses[1:-1]) <= {"delta"}
    deltas = [data["content"] for data in answer if data["status"] == "delta"]
    assert all(isinstance(d, str) for d in deltas)
    assert "".join(deltas) == done["answer"]

    first_answer = channels.index("answer")
    assert "step" not in channels[first_answer:], "loop events after the answer started"
    errors = [event.data for event in events if event.channel == "error"]
    if done["finish_reason"] == "model_error":
        assert len(errors) == 1 and errors[0]["kind"] == "model_error" and errors[0]["message"]
        assert channels.index("error") < first_answer
    else:
        assert not errors
    if not case.raises:
        assert done["finish_reason"] != "model_error", errors

    # every tool call that started finished, once, with a string observation
    started: Counter[str] = Counter()
    finished: Counter[str] = Counter()
    for ev in events:
        if ev.channel == "step" and ev.data.get("type") == "iteration":
            if ev.data["status"] == "start":
                started[ev.data["tool_call_id"]] += 1
            else:
                assert isinstance(ev.data["observation"], str)
                assert started[ev.data["tool_call_id"]] == 1
                finished[ev.data["tool_call_id"]] += 1
    assert started == finished and set(started.values()) <= {1}
    if not case.raises:  # thinking start/done alternate, one pair per model call
        thinking = [(e.data["status"], e.data["iteration"]) for e in events
                    if e.channel == "step" and e.data.get("type") == "thinking"]
        expected = [(status, i) for i in range(1, done["iterations"] + 1) for status in ("start", "done")]
        assert thinking == expected


def check_model_calls(outcome: Outcome) -> None:
    # the scripted model checked each list when it was sent; check what it recorded too
    for messages in outcome.model.calls:
        check_protocol(messages)


ERROR_KINDS = {
    "unknown tool": "unknown tool",
    "invalid arguments": "invalid arguments",
    "timed out": "timeout",
    "not valid JSON": "broken native arguments",
    "must be a JSON object": "non-object arguments",
    "tool failed": "tool raised",
}


def record_coverage(case: Case, outcome: Outcome) -> None:
    """Hypothesis statistics (``--hypothesis-show-statistics``): which paths the examples took."""
    if outcome.result is not None:
        finish_reason = outcome.result.finish_reason
        errors = [step.error or "" for step in outcome.result.steps]
    else:
        finish_reason = outcome.events[-1].data["finish_reason"]
        errors = [e.data.get("error") or "" for e in outcome.events
                  if e.channel == "step" and e.data.get("type") == "iteration" and e.data["status"] == "done"]
    event(f"{case.mode} {'stream' if case.stream else 'run'}: {finish_reason}")
    event(f"tool calls: {min(len(errors), 4)}{'+' if len(errors) >= 4 else ''}")
    for error in errors:
        kinds = [kind for marker, kind in ERROR_KINDS.items() if marker in error]
        event(f"tool outcome: {kinds[0] if kinds else ('ok' if not error else 'other error')}")
    if any(REFORMAT_REQUEST == m.content for messages in outcome.model.calls for m in messages):
        event("reformat request sent")


def check(case: Case, outcome: Outcome) -> None:
    check_model_calls(outcome)
    if case.stream:
        check_events(case, outcome)
    else:
        check_run(case, outcome)


# ----------------------------------------------------------------------------------- tests

EMPTY = AIMessage(content="")
HUGE_CONTENT = "y" * 200_000


@PROPERTY_SETTINGS
@given(case=scripted_case("json_off") | scripted_case("json_unsupported"))
@example(case=Case("json_off", [""], repeat_last=True))
@example(case=Case("json_unsupported", [EMPTY], repeat_last=True, stream=True))
@example(case=Case("json_off", [HUGE_CONTENT], repeat_last=True))
@example(case=Case("json_unsupported", [HUGE_CONTENT, final_json(HUGE_CONTENT)], repeat_last=False, stream=True))
@example(case=Case("json_off", [final_json(""), final_json("   ")], repeat_last=True, json_format=True))
def test_json_mode_survives_arbitrary_model_output(case: Case) -> None:
    outcome = play(case)
    record_coverage(case, outcome)
    check(case, outcome)


@PROPERTY_SETTINGS
@given(case=scripted_case("native"))
@example(case=Case("native", [EMPTY], repeat_last=True))
@example(case=Case("native", [EMPTY], repeat_last=True, stream=True, synthesis=""))
@example(case=Case("native", [AIMessage(content=HUGE_CONTENT)], repeat_last=True, stream=True))
@example(case=Case("native", [AIMessage(content=HUGE_CONTENT, tool_calls=[
    {"name": "lookup", "args": {"key": HUGE_CONTENT}, "id": "call_0", "type": "tool_call"},
    {"name": "lookup", "args": {"key": "b"}, "id": "call_0", "type": "tool_call"},
])], repeat_last=True))
@example(case=Case("native", [AIMessage(content="", tool_calls=[  # one call times out, the others do not wait
    {"name": "slow", "args": {"seconds": TOOL_TIMEOUT + 0.5}, "id": "call_slow", "type": "tool_call"},
    {"name": "slow", "args": {"seconds": 0.0}, "id": "call_fast", "type": "tool_call"},
    {"name": "as_record", "args": {"n": 2}, "id": "call_record", "type": "tool_call"},
]), "done"], repeat_last=False, stream=True))
@example(case=Case("native", [AIMessage(content="", tool_calls=[
    {"name": "nothing", "args": {}, "id": None, "type": "tool_call"},
], invalid_tool_calls=[
    {"name": None, "args": '{"key": ', "id": None, "error": None, "type": "invalid_tool_call"},
])], repeat_last=True, stream=True))
def test_native_mode_survives_arbitrary_model_output(case: Case) -> None:
    outcome = play(case)
    record_coverage(case, outcome)
    check(case, outcome)


@PROPERTY_SETTINGS
@given(case=failing_case())
@example(case=Case("native", [ValueError("400 bad request")], repeat_last=True, model_attempts=1))
@example(case=Case("json_off", [ValueError("400 bad request")], repeat_last=True, model_attempts=1, stream=True))
@example(case=Case("json_unsupported", [ValueError("400 bad request")], repeat_last=True, json_format=True,
                   model_attempts=1))
def test_a_failing_model_still_ends_with_an_answer(case: Case) -> None:
    outcome = play(case)
    record_coverage(case, outcome)
    check(case, outcome)
    if set(map(type, case.responses)) == {ValueError} and case.repeat_last:  # fails every time, not transiently
        if case.stream:
            assert outcome.events[-1].data["finish_reason"] == "model_error"
        else:
            assert outcome.result is not None
            assert outcome.result.finish_reason == "model_error"
            assert outcome.result.error and "400 bad request" in outcome.result.error


# ---------------------------------------------------------- regressions found by the above
# Minimal reproducers of the engine bugs the properties found (each is the same property
# on one input, so a failure here names the bug directly), and one neighbouring input
# that the engine already handles.


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("[" * 10_000 + "]" * 10_000, id="deeply-nested-json"),
        pytest.param("{'type': 'final_answer', 'answer': {1, 2}}", id="python-set-answer"),
        pytest.param("{'type': 'final_answer', 'reasoning': b'x', 'answer': 'ok'}", id="python-bytes-reasoning"),
    ],
)
def test_parse_action_never_raises(content: str) -> None:
    action = parse_action(content)  # documented: "Never raises"
    assert action.type in ("tool_call", "final_answer")


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("[" * 10_000 + "]" * 10_000, id="deeply-nested-json"),
        pytest.param("{'type': 'final_answer', 'answer': {1, 2}}", id="python-set-answer"),
        pytest.param("{'type': 'tool_call', 'tool_name': 'lookup', 'tool_args': 0x" + "f" * 4000 + "}",
                     id="huge-int-tool-args"),
    ],
)
def test_json_mode_output_never_ends_the_run_as_a_model_error(content: str) -> None:
    case = Case("json_off", [content, final_json("fine")], repeat_last=False)
    check(case, play(case))


@pytest.mark.parametrize("stream", [False, True], ids=["run", "astream_events"])
def test_arguments_that_cannot_be_printed_do_not_crash_the_fallback(stream: bool) -> None:
    # a step whose arguments hold an int too long for str(): the max-iterations summary
    # (and the model-error summary built after it fails) must still be written
    content = "{'type': 'tool_call', 'tool_name': 'lookup', 'tool_args': {'key': 0x" + "f" * 4000 + "}}"
    case = Case("json_off", [content], repeat_last=True, stream=stream)
    outcome = play(case)  # raised ValueError out of ReActAgent.run / astream_events
    check(case, outcome)


@tool
def big_number(digits: int) -> int:
    """Return an integer with this many digits."""
    return 10 ** (digits - 1)


def test_a_tool_result_that_cannot_be_printed_is_still_an_observation() -> None:
    # a result too long for str(): LangChain stringifies it inside the tool call, so it
    # must come back as an error observation, not end the run
    call = {"name": "big_number", "args": {"digits": 5000}, "id": "call_big", "type": "tool_call"}
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[call]), "done"])
    agent = ReActAgent(model, [big_number], abilities=ModelAbilities(tool_call=True),
                       settings=AgentSettings(max_iterations=MAX_ITERATIONS, model_attempts=1))
    result = asyncio.run(agent.run("How big?"))
    check_run(Case("native", [], repeat_last=False), Outcome(model, result=result))
    assert result.steps and result.steps[0].observation
