"""Tool calls written in the content (SPEC R13.2): every format, one call, several
calls, a mention that is not a call, an unknown tool, malformed JSON inside the wrapper; and
the native-mode loop running what a scripted model wrote that way."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.nodes.llm_call import action_from_content_call
from reactgraph.providers.content_calls import RECOVERED_KEY, find_content_tool_calls, recover_content_tool_calls
from reactgraph.testing import ScriptedChatModel
from tests.fakeproviders import PLANT_TOOLS

NAMES = {"get_equipment_status", "list_alarms"}
CNC3 = {"equipment_id": "CNC-003"}
CNC1 = {"equipment_id": "CNC-001"}


def _call(name: str, args: dict, key: str = "arguments") -> str:
    return json.dumps({"name": name, key: args})


ONE_CALL = {
    "tool_call_tag": f"<tool_call>{_call('get_equipment_status', CNC3)}</tool_call>",
    "bare_json": _call("get_equipment_status", CNC3),
    "bare_json_parameters": _call("get_equipment_status", CNC3, "parameters"),
    "fenced_json": f"```json\n{_call('get_equipment_status', CNC3)}\n```",
    "openai_shape": json.dumps({"type": "function", "function": {"name": "get_equipment_status",
                                                                  "arguments": json.dumps(CNC3)}}),
    "mistral": f"[TOOL_CALLS][{_call('get_equipment_status', CNC3)}]",
    "mistral_v11": f"[TOOL_CALLS]get_equipment_status[ARGS]{json.dumps(CNC3)}",
    "python_tag": f"<|python_tag|>{_call('get_equipment_status', CNC3, 'parameters')}<|eom_id|>",
    "function_tag": f"<function=get_equipment_status>{json.dumps(CNC3)}</function>",
    "function_parameters": "<tool_call>\n<function=get_equipment_status>\n<parameter=equipment_id>\nCNC-003\n"
                           "</parameter>\n</function>\n</tool_call>",
    "arguments_as_string": f"<tool_call>{json.dumps({'name': 'get_equipment_status', 'arguments': json.dumps(CNC3)})}"
                           "</tool_call>",
    "functions_prefix": f"<tool_call>{_call('functions.get_equipment_status', CNC3)}</tool_call>",
}


@pytest.mark.parametrize("text", ONE_CALL.values(), ids=ONE_CALL.keys())
def test_one_call_in_every_format(text):
    found = find_content_tool_calls(text, NAMES)
    assert found is not None
    assert found.calls == [{"name": "get_equipment_status", "args": CNC3}]
    assert found.invalid == [] and found.text == ""


SEVERAL = {
    "tool_call_tags": f"<tool_call>{_call('get_equipment_status', CNC1)}</tool_call>\n"
                      f"<tool_call>{_call('get_equipment_status', CNC3)}</tool_call>",
    "bare_json_list": json.dumps([{"name": "get_equipment_status", "arguments": CNC1},
                                  {"name": "get_equipment_status", "arguments": CNC3}]),
    "mistral": f"[TOOL_CALLS][{_call('get_equipment_status', CNC1)}, {_call('get_equipment_status', CNC3)}]",
    "mistral_v11": f"[TOOL_CALLS]get_equipment_status[ARGS]{json.dumps(CNC1)}"
                   f"[TOOL_CALLS]get_equipment_status[ARGS]{json.dumps(CNC3)}",
    "python_tag": f"<|python_tag|>{_call('get_equipment_status', CNC1, 'parameters')}; "
                  f"{_call('get_equipment_status', CNC3, 'parameters')}<|eom_id|>",
    "function_tags": f"<function=get_equipment_status>{json.dumps(CNC1)}</function>"
                     f"<function=get_equipment_status>{json.dumps(CNC3)}</function>",
    "openai_tool_calls": json.dumps({"tool_calls": [
        {"type": "function", "function": {"name": "get_equipment_status", "arguments": json.dumps(CNC1)}},
        {"type": "function", "function": {"name": "get_equipment_status", "arguments": json.dumps(CNC3)}}]}),
}


@pytest.mark.parametrize("text", SEVERAL.values(), ids=SEVERAL.keys())
def test_several_calls_are_kept_in_order(text):
    found = find_content_tool_calls(text, NAMES)
    assert found is not None
    assert [call["args"] for call in found.calls] == [CNC1, CNC3]


NOT_CALLS = {
    "mention": "I will call get_equipment_status for CNC-003 next, then tell you the result.",
    "mention_with_name_key": 'The tool {"name": "get_equipment_status"} tells you the state of a machine.',
    "answer_json_data": json.dumps({"name": "CNC-003", "status": "warning", "temperature": 71.2}),
    "final_action": json.dumps({"type": "final_answer", "reasoning": "done", "answer": "CNC-003 is fine."}),
    "json_inside_prose": f"To check it I would send {_call('get_equipment_status', CNC3)} to the server.",
    "mixed_list": json.dumps([{"name": "get_equipment_status", "arguments": CNC3}, {"name": "x", "score": 1}]),
    "empty": "",
}


@pytest.mark.parametrize("text", NOT_CALLS.values(), ids=NOT_CALLS.keys())
def test_text_that_is_not_a_call_stays_an_answer(text):
    assert find_content_tool_calls(text, NAMES) is None


UNKNOWN = {
    "tool_call_tag": f"<tool_call>{_call('delete_everything', {})}</tool_call>",
    "bare_json": _call("delete_everything", {"all": True}),
    "mistral": f"[TOOL_CALLS][{_call('delete_everything', {})}]",
    "python_tag": f"<|python_tag|>{_call('delete_everything', {}, 'parameters')}",
    "function_tag": "<function=delete_everything>{}</function>",
}


@pytest.mark.parametrize("text", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_a_call_to_a_tool_not_offered_is_not_a_call(text):
    assert find_content_tool_calls(text, NAMES) is None


MALFORMED = {
    "tool_call_tag": '<tool_call>{"name": "get_equipment_status", "arguments": {equipment_id: CNC-003 ]}</tool_call>',
    "function_tag": "<function=get_equipment_status>{equipment_id: [CNC-003}</function>",
    "mistral_v11": "[TOOL_CALLS]get_equipment_status[ARGS]{equipment_id: [CNC-003}",
    "arguments_not_an_object": f"<tool_call>{_call('get_equipment_status', [1, 2])}</tool_call>",
}


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_json_inside_the_wrapper_is_an_invalid_call(text):
    found = find_content_tool_calls(text, NAMES)
    assert found is not None and found.calls == []
    assert [bad["name"] for bad in found.invalid] == ["get_equipment_status"]
    assert "not a JSON object" in found.invalid[0]["error"]


def test_a_truncated_wrapper_is_closed_and_read():
    found = find_content_tool_calls('<tool_call>{"name": "get_equipment_status", "arguments": {"equipment_id": '
                                    '"CNC-003"', NAMES)
    assert found is not None and found.calls == [{"name": "get_equipment_status", "args": CNC3}]


def test_text_around_a_marked_call_is_kept_as_content():
    found = find_content_tool_calls(f"Let me check.\n<tool_call>{_call('list_alarms', {})}</tool_call>", NAMES)
    assert found is not None and found.text == "Let me check." and found.calls == [{"name": "list_alarms", "args": {}}]


def test_recovered_message_is_a_normal_tool_call_message():
    ids = iter(["call_a", "call_b", "call_c"])
    text = (f"<tool_call>{_call('get_equipment_status', CNC1)}</tool_call>"
            '<tool_call>{"name": "list_alarms", "arguments": {broken</tool_call>')
    message = recover_content_tool_calls(AIMessage(content=text, id="m1"), NAMES, lambda: next(ids))
    assert message.content == "" and message.id == "m1"
    assert message.tool_calls == [{"name": "get_equipment_status", "args": CNC1, "id": "call_a", "type": "tool_call"}]
    assert [(c["name"], c["id"]) for c in message.invalid_tool_calls] == [("list_alarms", "call_b")]
    assert message.response_metadata[RECOVERED_KEY] == "tool_call_tag"
    untouched = AIMessage(content=text, tool_calls=[{"name": "list_alarms", "args": {}, "id": "x"}])
    assert recover_content_tool_calls(untouched, NAMES, lambda: "y") is untouched


def test_json_mode_reads_a_native_call_format():
    @tool
    def get_equipment_status(equipment_id: str) -> str:
        """Status of one machine."""
        return equipment_id

    action = action_from_content_call(f"<function=get_equipment_status>{json.dumps(CNC3)}</function>",
                                      [get_equipment_status])
    assert action is not None and (action.type, action.tool_name, action.tool_args) == ("tool_call",
                                                                                      "get_equipment_status", CNC3)
    assert action_from_content_call("CNC-003 is running.", [get_equipment_status]) is None


def test_nesting_too_deep_to_read_is_not_a_call():
    assert find_content_tool_calls("<tool_call>" + "[" * 100_000, NAMES) is None
    assert find_content_tool_calls("[" * 100_000 + "]" * 100_000, NAMES) is None


# the loop -----------------------------------------------------------------------------------


def _agent(model: ScriptedChatModel) -> ReActAgent:
    return ReActAgent(model, PLANT_TOOLS, abilities=ModelAbilities(tool_call=True),
                      settings=AgentSettings(synthesize=False))


@pytest.mark.parametrize("text", [ONE_CALL["tool_call_tag"], ONE_CALL["mistral"], ONE_CALL["python_tag"],
                                  ONE_CALL["function_tag"], ONE_CALL["bare_json"]],
                         ids=["tool_call_tag", "mistral", "python_tag", "function_tag", "bare_json"])
async def test_native_loop_runs_a_call_written_in_the_content(text):
    model = ScriptedChatModel(responses=[AIMessage(content=text), AIMessage(content="CNC-003 has alarm W-1105.")])
    result = await _agent(model).run("CNC-003 상태 확인해줘")
    assert [(s.tool_name, s.tool_args) for s in result.steps] == [("get_equipment_status", CNC3)]
    assert "W-1105" in result.steps[0].observation
    second = model.calls[1]  # the protocol checker of ScriptedChatModel ran on it too
    call_message = next(m for m in second if isinstance(m, AIMessage) and m.tool_calls)
    result_message = second[second.index(call_message) + 1]
    assert isinstance(result_message, ToolMessage)
    assert result_message.tool_call_id == call_message.tool_calls[0]["id"]
    assert result.answer == "CNC-003 has alarm W-1105."


async def test_native_loop_runs_parallel_calls_written_in_the_content():
    model = ScriptedChatModel(responses=[AIMessage(content=SEVERAL["tool_call_tags"]), AIMessage(content="Compared.")])
    result = await _agent(model).run("Compare CNC-001 and CNC-003")
    assert sorted(s.tool_args["equipment_id"] for s in result.steps) == ["CNC-001", "CNC-003"]
    assert len(model.calls) == 2


async def test_a_mention_or_unknown_tool_in_the_content_is_the_final_answer():
    for text in (NOT_CALLS["mention"], UNKNOWN["tool_call_tag"]):
        model = ScriptedChatModel(responses=[AIMessage(content=text)])
        result = await _agent(model).run("What would you do?")
        assert result.steps == [] and result.answer == text and len(model.calls) == 1


async def test_malformed_content_call_becomes_an_error_observation_the_model_sees():
    model = ScriptedChatModel(responses=[AIMessage(content=MALFORMED["tool_call_tag"]),
                                         AIMessage(content=ONE_CALL["tool_call_tag"]), AIMessage(content="Done.")])
    result = await _agent(model).run("CNC-003?")
    assert result.steps[0].error and "not valid JSON" in result.steps[0].observation
    assert result.steps[1].tool_args == CNC3 and not result.steps[1].error
