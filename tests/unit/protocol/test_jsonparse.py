"""extract_json and parse_action (SPEC R2.3, R2.4, R2.8)."""

import pytest
from langchain_core.messages import AIMessage

from reactgraph import PARSE_FAILURE_SENTINEL, extract_json, parse_action
from reactgraph.providers.reasoning import separate_reasoning


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure!\n```json\n{"a": 1}\n```\nHope that helps.', {"a": 1}),
        ("```\n{'a': 'x'}\n```", {"a": "x"}),
        ('Here is my action: {"a": [1, 2,],} as requested', {"a": [1, 2]}),
        ("{'type': 'final_answer', 'answer': 'ok', 'done': True, 'x': None}",
         {"type": "final_answer", "answer": "ok", "done": True, "x": None}),
        ('<tool_call>{"name": "f", "arguments": {"k": 1}}</tool_call>', {"name": "f", "arguments": {"k": 1}}),
        ('{"a": "brace } inside"} trailing', {"a": "brace } inside"}),
        ("I don't know {\"a\": \"it's\"}", {"a": "it's"}),
        ('{"a": 1, "b": {"c": 2', {"a": 1, "b": {"c": 2}}),
        ('[{"a": 1}]', {"a": 1}),
    ],
)
def test_extract_json_reads_what_real_models_write(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", [None, "", "   ", "no json here", "[1, 2, 3]", 42])
def test_extract_json_returns_none_without_an_object(text):
    assert extract_json(text) is None


def test_parse_action_wire_format():
    action = parse_action('{"type": "tool_call", "reasoning": "need data", "tool_name": "get", "tool_args": {"id": 3}}')
    assert (action.type, action.reasoning, action.tool_name, action.tool_args) == ("tool_call", "need data", "get", {"id": 3})
    final = parse_action('{"type": "final_answer", "reasoning": "done", "answer": "42"}')
    assert (final.type, final.answer, final.parse_failed) == ("final_answer", "42", False)


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ('{"action": "tool_call", "name": "get", "arguments": {"id": 1}}', "get", {"id": 1}),
        ('{"type": "tool_call", "tool_name": "get", "tool_args": "{\\"id\\": 1}"}', "get", {"id": 1}),
        ('<tool_call>{"name": "get", "arguments": {"id": 1}}</tool_call>', "get", {"id": 1}),
        ('{"function": {"name": "get", "arguments": "{\\"id\\": 1}"}}', "get", {"id": 1}),
        ('{"action": "get", "action_input": {"id": 1}}', "get", {"id": 1}),
        ('{"tool_calls": [{"function": {"name": "get", "arguments": "{}"}}]}', "get", {}),
    ],
)
def test_parse_action_accepts_common_variants(text, name, args):
    action = parse_action(text)
    assert action.type == "tool_call"
    assert (action.tool_name, action.tool_args) == (name, args)


@pytest.mark.parametrize("text", ["garbage", "", None, '{"foo": 1}', '{"type": "tool_call"}'])
def test_unparseable_output_is_the_sentinel_final_answer(text):
    action = parse_action(text)
    assert action.type == "final_answer"
    assert action.reasoning == PARSE_FAILURE_SENTINEL
    assert action.parse_failed
    assert action.answer == (text or "")


def test_non_object_arguments_are_kept_for_an_error_observation():
    assert parse_action('{"type": "tool_call", "tool_name": "f", "tool_args": "oops"}').tool_args == "oops"
    assert parse_action('{"type": "tool_call", "tool_name": "f", "tool_args": [1]}').tool_args == [1]


def test_reasoning_falls_back_to_the_separate_field():  # R2.8
    message = AIMessage(content='{"type": "final_answer", "reasoning": "", "answer": "x"}',
                        additional_kwargs={"reasoning_content": "thought hard"})
    action = parse_action(str(message.content), separate_reasoning_text=separate_reasoning(message))
    assert action.reasoning == "thought hard"
    own = parse_action('{"type": "final_answer", "reasoning": "mine", "answer": "x"}', separate_reasoning_text="other")
    assert own.reasoning == "mine"


def test_separate_reasoning_reads_content_blocks():
    message = AIMessage(content=[{"type": "reasoning", "reasoning": "step by step"}, {"type": "text", "text": "hi"}])
    assert separate_reasoning(message) == "step by step"
    assert separate_reasoning(AIMessage(content="plain")) == ""


def test_langchain_react_final_answer_format():
    action = parse_action('{"action": "Final Answer", "action_input": "CNC-003 is running"}')
    assert (action.type, action.answer) == ("final_answer", "CNC-003 is running")
