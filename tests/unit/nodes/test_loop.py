"""The tool loop: SPEC R2.2–R2.10 and §12, on scripted models."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import PARSE_FAILURE_SENTINEL, AgentSettings, ReActAgent, check_protocol
from reactgraph.tools.artifacts import ARTIFACT_NOTE
from reactgraph.protocol.prompts import REFORMAT_REQUEST
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE



def final(text="done"):
    return json.dumps({"type": "final_answer", "reasoning": "enough", "answer": text})


def call_json(name, args):
    return json.dumps({"type": "tool_call", "reasoning": f"use {name}", "tool_name": name, "tool_args": args})


# R2.2 ---------------------------------------------------------------------------------


async def test_native_mode_binds_tools(tools):
    model = ScriptedChatModel(responses=["hello"])
    agent = ReActAgent(model, tools, abilities=NATIVE)
    assert agent.mode == "native"
    await agent.run("hi")
    names = [t["function"]["name"] for t in model.call_kwargs[0]["tools"]]
    assert names == [t.name for t in tools]
    assert "tool_call" not in model.calls[0][0].content  # no JSON protocol in the prompt


@pytest.mark.parametrize(
    ("kwargs", "profile"),
    [({"use_native_tools": False, "abilities": NATIVE}, None),
     ({}, None),  # no abilities, no profile: safe default
     ({}, {"tool_calling": False, "structured_output": True})],
)
async def test_json_mode_when_native_is_off_or_unsupported(tools, kwargs, profile):
    model = ScriptedChatModel(responses=[final("ok")], profile=profile)
    agent = ReActAgent(model, tools, **kwargs)
    assert agent.mode == "json"
    result = await agent.run("hi")
    assert result.answer == "ok"
    assert "tools" not in model.call_kwargs[0]
    system = model.calls[0][0]
    assert isinstance(system, SystemMessage)
    for tool in tools:  # R2.3: name, description and argument schema of every tool
        assert tool.name in system.content
        assert tool.description in system.content
    assert '"equipment_id": {"type": "string"' in system.content  # the argument JSON schema


async def test_profile_decides_when_no_explicit_abilities(tools):
    model = ScriptedChatModel(responses=["hi"], profile={"tool_calling": True, "max_input_tokens": 1000})
    agent = ReActAgent(model, tools)
    assert agent.mode == "native"
    assert agent.abilities.context_window == 1000


# R2.3 / R2.4 --------------------------------------------------------------------------


async def test_json_mode_runs_one_tool_and_appends_a_user_observation(tools):
    model = ScriptedChatModel(responses=[call_json("get_status", {"equipment_id": "CNC-003"}), final("CNC-003 is normal")])
    result = await ReActAgent(model, tools, abilities={"json_mode": True}).run("status of CNC-003?")
    assert result.answer == "CNC-003 is normal"
    assert model.call_kwargs[0]["response_format"] == {"type": "json_object"}
    second = model.calls[1]
    assert isinstance(second[-1], HumanMessage)
    assert second[-1].content == "Observation from get_status:\nCNC-003: normal"
    assert isinstance(second[-2], AIMessage) and not second[-2].tool_calls
    assert [s.tool_name for s in result.steps] == ["get_status"]


async def test_json_mode_survives_a_provider_that_rejects_response_format(tools):
    class Rejected(Exception):
        status_code = 400

    def reply(messages):
        return final("fine")

    model = ScriptedChatModel(responses=[Rejected("response_format not supported"), reply])
    result = await ReActAgent(model, tools, abilities={"json_mode": True}).run("q")
    assert result.answer == "fine"
    assert "response_format" not in model.call_kwargs[1]


async def test_one_parse_failure_gets_a_reformat_request(tools):
    model = ScriptedChatModel(responses=["I think the answer is 4", final("4")])
    result = await ReActAgent(model, tools).run("2+2?")
    assert result.answer == "4"
    assert result.iterations == 2  # the retry counts toward max_iterations
    retry = model.calls[1]
    assert retry[-2].content == "I think the answer is 4"
    assert retry[-1].content == REFORMAT_REQUEST


async def test_garbage_twice_makes_the_raw_content_the_answer(tools):
    model = ScriptedChatModel(responses=["garbage one", "garbage two"])
    agent = ReActAgent(model, tools)
    events = [e async for e in agent.astream_events("q")]
    thinking = [e.data for e in events if e.data.get("type") == "thinking" and e.data["status"] == "done"]
    assert [t["reasoning"] for t in thinking] == [PARSE_FAILURE_SENTINEL, PARSE_FAILURE_SENTINEL]
    result = await ReActAgent(ScriptedChatModel(responses=["garbage one", "garbage two"]), tools).run("q")
    assert result.answer == "garbage two"
    assert result.finish_reason == "raw_content"


@pytest.mark.parametrize("retries", [0, 1, 3])
async def test_parse_retries_sets_how_many_reformat_requests_come_before_the_raw_content(tools, retries):
    """The one bad-output policy: ``parse_retries`` reformat requests, then the
    raw content is the answer (SPEC R2.4 with the default 1)."""
    replies = [f"garbage {i}" for i in range(retries + 1)]
    model = ScriptedChatModel(responses=list(replies))
    result = await ReActAgent(model, tools, settings=AgentSettings(parse_retries=retries, stall_detection=False)).run("q")
    assert result.answer == replies[-1] and result.finish_reason == "raw_content"
    assert len(model.calls) == retries + 1
    assert [m.content for m in model.calls[-1] if m.content == REFORMAT_REQUEST] == [REFORMAT_REQUEST] * retries


async def test_parse_failure_counter_resets_after_a_good_action(tools):
    model = ScriptedChatModel(responses=["bad", call_json("get_status", {"equipment_id": "A"}), "bad again", final("ok")])
    result = await ReActAgent(model, tools).run("q")
    assert result.answer == "ok"


# R2.5 ---------------------------------------------------------------------------------


async def test_parallel_tool_calls_run_concurrently_and_answer_in_order():
    """Two calls of one model step run at the same time: each starts before the other ends
    (an async tool and a sync one in a worker thread), whatever the machine's load; their
    observations come back in the calls' order."""
    spans: dict[str, list[float]] = {}

    @tool
    async def wait_async(x: int) -> str:
        """Wait (async), then echo."""
        spans["async"] = [time.perf_counter()]
        await asyncio.sleep(0.3)
        spans["async"].append(time.perf_counter())
        return f"async {x}"

    @tool
    def wait_sync(x: int) -> str:
        """Wait (in a worker thread), then echo."""
        spans["sync"] = [time.perf_counter()]
        time.sleep(0.3)
        spans["sync"].append(time.perf_counter())
        return f"sync {x}"

    calls = [tool_call("wait_async", {"x": 1}, "c1"), tool_call("wait_sync", {"x": 2}, "c2")]
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=calls), "both done"])
    result = await ReActAgent(model, [wait_async, wait_sync], abilities=NATIVE).run("q")
    (async_start, async_end), (sync_start, sync_end) = spans["async"], spans["sync"]
    assert async_start < sync_end and sync_start < async_end, f"not concurrent: {spans}"
    sent = model.calls[1]
    assert isinstance(sent[-3], AIMessage) and [c["id"] for c in sent[-3].tool_calls] == ["c1", "c2"]
    assert [(m.tool_call_id, m.content) for m in sent[-2:]] == [("c1", "async 1"), ("c2", "sync 2")]
    assert result.answer == "both done"


async def test_a_response_without_tool_calls_is_the_final_answer(tools):
    model = ScriptedChatModel(responses=[AIMessage(content="Direct answer.")])
    result = await ReActAgent(model, tools, abilities=NATIVE).run("q")
    assert (result.answer, result.iterations, result.steps, result.finish_reason) == ("Direct answer.", 1, [], "final_answer")


# R2.6 ---------------------------------------------------------------------------------


async def test_endless_model_stops_at_max_iterations_with_a_step_summary(tools):
    model = ScriptedChatModel(
        responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "X"})])], repeat_last=True
    )
    # The cap itself, with stall detection (which would end this loop at once) off.
    result = await ReActAgent(model, tools, abilities=NATIVE, settings=AgentSettings(stall_detection=False)).run("loop forever")
    assert result.iterations == 50
    assert result.finish_reason == "max_iterations"
    assert result.answer.startswith("I stopped after 50 iterations")
    assert "get_status" in result.answer and "succeeded" in result.answer
    assert len(model.calls) == 50


async def test_endless_json_model_with_broken_tools_reports_failures(tools):
    model = ScriptedChatModel(responses=[call_json("broken", {"x": 1})], repeat_last=True)
    result = await ReActAgent(model, tools, settings=AgentSettings(max_iterations=3, stall_detection=False)).run(
        "Read the sensors and tell me what you find")
    assert result.iterations == 3
    assert result.answer.count("failed: RuntimeError: sensor bus offline for 1") == 3


# R2.7 and §12 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "expected_error"),
    [
        ("broken", {"x": 1}, "RuntimeError: sensor bus offline for 1"),
        ("hangs", {"x": 1}, "tool 'hangs' timed out after 0.3 seconds"),
        ("nope", {}, "unknown tool 'nope'. Available tools: get_status, slow_async"),
        ("slow_sync", {"x": "not a number"}, "invalid arguments — x:"),
        ("slow_sync", {}, "invalid arguments — x: Field required"),
    ],
)
@pytest.mark.parametrize("native", [True, False])
async def test_tool_failures_become_observations(tools, fast_settings, name, args, expected_error, native):
    if native:
        first = AIMessage(content="", tool_calls=[tool_call(name, args, "c1")])
        agent_kwargs = {"abilities": NATIVE}
    else:
        first = call_json(name, args)
        agent_kwargs = {}
    model = ScriptedChatModel(responses=[first, final("recovered") if not native else "recovered"])
    result = await ReActAgent(model, tools, settings=fast_settings, **agent_kwargs).run("q")
    assert result.answer == "recovered"
    (step,) = result.steps
    assert expected_error in step.error
    assert step.observation.startswith("Error: ")
    observation = model.calls[1][-1]
    assert expected_error in observation.content
    if native:
        assert isinstance(observation, ToolMessage) and observation.status == "error"


async def test_dict_results_are_serialized_to_strings(tools):
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("as_dict", {"x": 5}, "c1")]), "ok"])
    await ReActAgent(model, tools, abilities=NATIVE).run("q")
    message = model.calls[1][-1]
    assert isinstance(message.content, str)
    assert json.loads(message.content) == {"value": 5, "unit": "°C"}


async def test_arguments_that_are_not_json_become_an_error_observation(tools):
    bad = AIMessage(content="", invalid_tool_calls=[
        {"name": "get_status", "args": "{equipment_id: CNC", "id": "c9", "error": None, "type": "invalid_tool_call"}])
    model = ScriptedChatModel(responses=[bad, "ok"])
    result = await ReActAgent(model, tools, abilities=NATIVE).run("q")
    sent = model.calls[1]
    assert [c["id"] for c in sent[-2].tool_calls] == ["c9"]
    assert sent[-1].tool_call_id == "c9" and "not valid JSON" in sent[-1].content
    assert result.answer == "ok"


async def test_missing_and_duplicate_call_ids_are_repaired(tools):
    calls = [tool_call("get_status", {"equipment_id": "A"}, "same"), tool_call("get_status", {"equipment_id": "B"}, "same"),
             {"name": "get_status", "args": {"equipment_id": "C"}, "id": None, "type": "tool_call"}]
    model = ScriptedChatModel(responses=[AIMessage(content=None or "", tool_calls=calls), "ok"])
    result = await ReActAgent(model, tools, abilities=NATIVE).run("q")
    ids = [c["id"] for c in model.calls[1][-4].tool_calls]
    assert len(set(ids)) == 3 and all(ids)
    assert [s.observation for s in result.steps] == ["A: normal", "B: normal", "C: normal"]


async def test_non_string_arguments_in_json_mode_become_an_error(tools):
    model = ScriptedChatModel(responses=[json.dumps({"type": "tool_call", "tool_name": "get_status", "tool_args": "CNC-1"}), final()])
    result = await ReActAgent(model, tools).run("q")
    assert "arguments must be a JSON object, got str" in result.steps[0].error


async def test_transient_model_failures_are_retried(tools, fast_settings):
    model = ScriptedChatModel(responses=[ConnectionError("reset"), TimeoutError("slow"), "finally"])
    result = await ReActAgent(model, tools, abilities=NATIVE, settings=fast_settings).run("q")
    assert result.answer == "finally"
    assert len(model.calls) == 3


async def test_a_model_that_keeps_failing_ends_with_an_error_event_and_fallback(tools, fast_settings):
    responses = [AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "c1")])]
    responses += [ConnectionError("down")] * 10
    model = ScriptedChatModel(responses=responses)
    events = [e async for e in ReActAgent(model, tools, abilities=NATIVE, settings=fast_settings).astream_events(
        "Check the status of the pump")]
    channels = [e.channel for e in events]
    assert "error" in channels and channels[-1] == "done"
    error = next(e for e in events if e.channel == "error")
    assert error.data["kind"] == "model_error" and "down" in error.data["message"]
    done = events[-1].data
    assert done["finish_reason"] == "model_error"
    assert "get_status" in done["answer"] and "succeeded" in done["answer"]
    assert len(model.calls) == 1 + fast_settings.model_attempts


async def test_a_rejected_request_is_not_retried(tools, fast_settings):
    class BadRequest(Exception):
        status_code = 400

    model = ScriptedChatModel(responses=[BadRequest("context too long")] * 5)
    result = await ReActAgent(model, tools, abilities=NATIVE, settings=fast_settings).run("q")
    assert len(model.calls) == 1
    assert result.finish_reason == "model_error" and "context too long" in result.error
    assert result.answer.strip()


# R2.8 ---------------------------------------------------------------------------------


async def test_native_reasoning_content_reaches_the_thinking_event(tools):
    msg = AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "c1")],
                    additional_kwargs={"reasoning_content": "I should check A first."})
    model = ScriptedChatModel(responses=[msg, "done"])
    events = [e async for e in ReActAgent(model, tools, abilities=NATIVE).astream_events("q")]
    done = [e.data for e in events if e.data.get("type") == "thinking" and e.data["status"] == "done"]
    assert done[0]["reasoning"] == "I should check A first."


# R2.9 ---------------------------------------------------------------------------------


async def test_artifacts_go_to_the_result_and_events_not_the_model(tools):
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("report", {"title": "oee"}, "c1")]), "see report"])
    agent = ReActAgent(model, tools, abilities=NATIVE)
    events = [e async for e in agent.astream_events("q")]
    sent = model.calls[1][-1]
    assert sent.content == ARTIFACT_NOTE.format(filename="oee.html")
    assert "xxxx" not in sent.content
    done_card = next(e.data for e in events if e.data.get("type") == "iteration" and e.data["status"] == "done")
    assert done_card["artifact"]["filename"] == "oee.html" and done_card["artifact"]["content"].startswith("<h1>")
    model2 = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("report", {"title": "oee"}, "c1")]), "ok"])
    result = await ReActAgent(model2, tools, abilities=NATIVE).run("q")
    assert [a.filename for a in result.artifacts] == ["oee.html"]


# R2.10 --------------------------------------------------------------------------------


async def test_agent_result_has_the_whole_trace(tools):
    model = ScriptedChatModel(
        responses=[AIMessage(content="checking", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "c1")]),
                   "A is normal"],
        usage={"input_tokens": 100, "output_tokens": 7, "total_tokens": 107},
    )
    result = await ReActAgent(model, tools, abilities=NATIVE).run("how is A?")
    assert [type(m).__name__ for m in result.messages] == ["SystemMessage", "HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    check_protocol(result.messages)
    assert result.usage.input_tokens == 200 and result.usage.output_tokens == 14 and result.usage.total_tokens == 214
    assert result.usage.model_calls == 2
    assert result.iterations == 2
    assert result.elapsed > 0
    (step,) = result.steps
    assert (step.tool_name, step.tool_args, step.observation, step.error, step.iteration) == ("get_status", {"equipment_id": "A"}, "A: normal", None, 1)
    assert step.elapsed >= 0


async def test_a_thread_continues_the_conversation(tools):
    from langgraph.checkpoint.memory import InMemorySaver

    model = ScriptedChatModel(responses=["first answer", "second answer"])
    agent = ReActAgent(model, tools, abilities=NATIVE, checkpointer=InMemorySaver())
    first = await agent.run("first question", thread_id="t1")
    second = await agent.run("second question", thread_id="t1")
    assert first.thread_id == "t1"
    assert [m.content for m in model.calls[1][1:]] == ["first question", "first answer", "second question"]
    assert second.iterations == 1 and second.steps == []


@pytest.mark.parametrize("native", [True, False])
async def test_a_repeated_call_runs_and_the_model_is_told_it_did_not_change(tools, native):
    """a repeat of a tool without declared side effects runs; when its observation
    is the same as last time, the model's next input says so, and the step is marked."""
    if native:
        same = AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "A"})])
        script, kwargs = [same, same, "A is normal"], {"abilities": NATIVE}
    else:
        script, kwargs = [call_json("get_status", {"equipment_id": "A"})] * 2 + [final("A is normal")], {}
    model = ScriptedChatModel(responses=script)
    result = await ReActAgent(model, tools, **kwargs).run("q")
    first, second = result.steps
    assert first.ok and second.ok and second.observation == "A: normal"
    assert not first.unchanged and second.unchanged
    assert "(Unchanged: this is the same result as this call returned in iteration 1.)" in str(model.calls[2][-1].content)
    assert result.answer == "A is normal"
