"""The AG-UI adapter: the mapping of typed events to AG-UI events
(:class:`reactgraph.server.agui.AguiEncoding`) and ``POST /agui``'s refusals, in process
(the real client over a socket is tests/integration/test_agui_client.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from ag_ui.core import EventType
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ReActAgent
from reactgraph import events as ev
from reactgraph.server import ServerSettings, create_app
from reactgraph.server.agui import AguiEncoding
from reactgraph.server.runs import THREAD_ID_PATTERN
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE



def mapped(*events: ev.AgentEvent, encoding: AguiEncoding | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(type, fields) of the AG-UI events ``events`` map to, through the encoder's wire form."""
    encoding = encoding or AguiEncoding("t1", "r1")
    text = "".join(encoding.frame(event) for event in events) + encoding.end()
    frames = [json.loads(frame[len("data: "):]) for frame in text.split("\n\n") if frame]
    return [(frame.pop("type"), frame) for frame in frames]


def tool_done(call_id: str, **fields: Any) -> ev.ToolDone:
    base = {"iteration": 1, "tool_name": "status", "tool_args": {"id": "A"}, "observation": "A: ok", "error": None,
            "iter_elapsed": 0.1, "tool_call_id": call_id, "artifact": None}
    return ev.ToolDone(**{**base, **fields})


DONE = ev.Done(answer="A ok.", iterations=2, usage={"input_tokens": 3, "output_tokens": 2, "total_tokens": 5, "model_calls": 2},
               elapsed=0.2, finish_reason="final_answer", thread_id="t1", grounding=None)


def test_a_run_maps_to_steps_tool_calls_a_text_message_and_run_finished():
    out = mapped(
        ev.SelectingTools(total_tools=12),
        ev.ThinkingStarted(iteration=1), ev.ThinkingStarted(iteration=1),  # a retried call starts once
        ev.ThinkingDone(iteration=1, reasoning="two machines"),
        ev.ToolStarted(iteration=1, tool_name="status", tool_args={"id": "A"}, tool_call_id="c1"),
        ev.ToolStarted(iteration=1, tool_name="status", tool_args={"id": "B"}, tool_call_id="c2"),
        tool_done("c2", tool_args={"id": "B"}, observation="", error="Error: B offline"), tool_done("c1"),
        ev.Compacted(original_messages=9, kept_messages=4), ev.Injected(content="and C?"),
        ev.Stalled(iteration=2, reason="no_progress"),
        ev.ThinkingStarted(iteration=2), ev.ThinkingDone(iteration=2, reasoning=""), ev.AnswerSignalled(),
        ev.AnswerStarted(), ev.AnswerDelta(content="A "), ev.AnswerDelta(content=""), ev.AnswerDelta(content="ok."),
        ev.AnswerDone(), DONE,
    )
    assert [kind for kind, _ in out] == [
        "RUN_STARTED", "CUSTOM", "STEP_STARTED", "STEP_FINISHED",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TOOL_CALL_RESULT", "TOOL_CALL_RESULT", "CUSTOM", "CUSTOM", "CUSTOM", "STEP_STARTED", "STEP_FINISHED",
        "STEP_STARTED", "STEP_FINISHED",  # writing the answer (progress while it is written and checked)
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]
    assert [fields["stepName"] for kind, fields in out if kind == "STEP_STARTED"][-1] == "writing_answer"
    assert out[0][1] == {"threadId": "t1", "runId": "r1"}
    customs = [fields for kind, fields in out if kind == "CUSTOM"]
    assert customs == [
        {"name": "phase", "value": {"phase": "selecting_tools", "total_tools": 12}},
        {"name": "compact", "value": {"original_messages": 9, "kept_messages": 4}},
        {"name": "inject", "value": {"type": "inject", "content": "and C?"}},
        {"name": "stall", "value": {"iteration": 2, "reason": "no_progress"}},
    ]
    assert out[4][1] == {"toolCallId": "c1", "toolCallName": "status", "parentMessageId": "r1:model_call_1"}
    assert out[5][1] == {"toolCallId": "c1", "delta": '{"id": "A"}'}
    assert out[10][1] == {"messageId": "c2:result", "toolCallId": "c2", "content": "Error: B offline", "role": "tool"}
    assert out[11][1]["content"] == "A: ok"
    assert [fields for kind, fields in out if kind.startswith("TEXT_MESSAGE")] == [
        {"messageId": "r1:answer:1", "role": "assistant"}, {"messageId": "r1:answer:1", "delta": "A "},
        {"messageId": "r1:answer:1", "delta": "ok."}, {"messageId": "r1:answer:1"}]
    finished = out[-1][1]
    assert (finished["threadId"], finished["runId"], finished["result"]) == ("t1", "r1", DONE.data)
    assert finished["usage"] == [{"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}] and "outcome" not in finished


def test_a_withdrawn_answer_is_a_custom_event_and_the_new_answer_a_new_message():
    out = mapped(ev.AnswerStarted(), ev.AnswerDelta(content="93.4 %"), ev.AnswerDone(),
                 ev.AnswerReset(ungrounded=["93.4"], factless=True), ev.AnswerStarted(), ev.AnswerDelta(content="48.7"),
                 ev.AnswerDone(), DONE)
    assert [kind for kind, _ in out][4:6] == ["CUSTOM", "TEXT_MESSAGE_START"]
    assert out[4][1] == {"name": "answer_reset", "value": {"status": "reset", "ungrounded": ["93.4"], "factless": True}}
    assert {fields["messageId"] for kind, fields in out if kind == "TEXT_MESSAGE_START"} == {"r1:answer:1", "r1:answer:2"}


def test_a_model_failure_streams_its_fallback_answer_then_ends_in_run_error():
    out = mapped(ev.ThinkingStarted(iteration=1), ev.RunError(message="ConnectionError: down", kind="model_error"),
                 ev.AnswerStarted(), ev.AnswerDelta(content="The model call failed."), ev.AnswerDone(),
                 ev.Done(**{**DONE.data, "finish_reason": "model_error"}))
    assert [kind for kind, _ in out] == ["RUN_STARTED", "STEP_STARTED", "STEP_FINISHED", "CUSTOM", "TEXT_MESSAGE_START",
                                         "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_ERROR"]
    assert out[-1][1]["message"] == "ConnectionError: down" and out[-1][1]["code"] == "model_error"


def test_a_lost_run_and_a_stream_without_done_end_in_run_error_and_nothing_follows():
    encoding = AguiEncoding("t1", "r1")
    out = mapped(ev.AnswerStarted(), ev.RunError(message="OperationalError: gone", kind="server_error"), DONE,
                 encoding=encoding)
    assert [kind for kind, _ in out] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_ERROR"]
    assert encoding.frame(ev.AnswerStarted()) == "" and encoding.end() == ""
    cut = mapped(ev.ThinkingStarted(iteration=1))
    assert [kind for kind, _ in cut] == ["RUN_STARTED", "STEP_STARTED", "STEP_FINISHED", "RUN_ERROR"]
    assert cut[-1][1]["code"] == "server_error"
    assert [kind for kind, _ in mapped()] == ["RUN_STARTED", "RUN_ERROR"]


def test_approval_is_a_custom_event_and_an_interrupt_outcome():
    pending = [{"interrupt_id": "i9", "tool_call_id": "o1", "tool_name": "create_order", "tool_args": {"id": "A"},
                "iteration": 1, "kind": "approval", "value": {}}]
    out = mapped(ev.ApprovalWaiting(thread_id="t1", pending=pending),
                 ev.Done(**{**DONE.data, "answer": "", "finish_reason": "waiting"}))
    assert out[1] == ("CUSTOM", {"name": "approval", "value": {"type": "approval", "status": "waiting",
                                                               "thread_id": "t1", "pending": pending}})
    assert out[-1][1]["outcome"] == {"type": "interrupt", "interrupts": [
        {"id": "i9", "reason": "approval", "toolCallId": "o1", "message": 'approve create_order({"id": "A"})'}]}


def test_a_result_reported_again_on_resume_opens_its_tool_call_first():
    out = mapped(tool_done("c7", iteration=3))
    assert [kind for kind, _ in out] == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                                         "TOOL_CALL_RESULT", "RUN_ERROR"]
    assert out[1][1]["parentMessageId"] == "r1:model_call_3"


def dag_tool(status: str, step_id: str, call_id: str, **fields: Any) -> ev.AgentEvent:
    if status == "tool_started":
        return ev.DagStepToolStarted(round=1, step_id=step_id, iteration=1, tool_name="status",
                                     tool_args={"id": step_id}, tool_call_id=call_id)
    done = {"observation": f"{step_id}: ok", "error": None, **fields}
    return ev.DagStepTool(round=1, step_id=step_id, iteration=1, tool_name="status", iter_elapsed=0.1,
                          tool_call_id=call_id, tool_args={"id": step_id}, **done)


def test_a_dag_run_maps_planning_analysis_and_parallel_steps_to_steps_with_their_tool_calls():
    """DAG mode's plan and steps are AG-UI steps; two steps run at once (both open),
    each step's tool calls hang under it, with ids unique across steps (both loops said c1)."""
    plan = ev.PlanMade(round=1, steps=[{"id": "a", "task": "A", "dependencies": [], "tool_hint": None, "model_hint": None},
                                       {"id": "b", "task": "B", "dependencies": [], "tool_hint": None, "model_hint": None},
                                       {"id": "c", "task": "C", "dependencies": ["b"], "tool_hint": None,
                                        "model_hint": None}], warnings=[])
    completed = {"elapsed": 0.2, "iterations": 2, "model_role": "general"}
    out = mapped(
        ev.Planning(round=1), plan,
        ev.DagStepStarted(round=1, step_id="a", task="A", model_role="general", dependencies=[]),
        ev.DagStepStarted(round=1, step_id="b", task="B", model_role="fast", dependencies=[]),
        ev.DagStepIteration(round=1, step_id="a", iteration=1),
        dag_tool("tool_started", "a", "c1"), dag_tool("tool_started", "b", "c1"),
        dag_tool("tool", "b", "c1", observation="", error="Error: B offline"), dag_tool("tool", "a", "c1"),
        ev.DagStepCompleted(round=1, step_id="a", ok=True, error=None, result="A ok", **completed),
        ev.DagStepCompleted(round=1, step_id="b", ok=False, error="boom", **completed),
        ev.DagStepCompleted(round=1, step_id="c", ok=False, error="dependency failed: b", elapsed=0.0, iterations=0,
                            model_role=None),
        ev.Analyzing(round=1),
        ev.Analysis(round=1, achieved=True, confidence=0.9, reasoning="enough", final_answer="A ok", replan=False),
        ev.AnswerStarted(), ev.AnswerDelta(content="A ok."), ev.AnswerDone(),
        ev.Done(**{**DONE.data, "finish_reason": "achieved", "rounds": 1, "achieved": True, "confidence": 0.9}),
    )
    steps = [(kind, fields["stepName"]) for kind, fields in out if kind.startswith("STEP_")]
    assert steps == [("STEP_STARTED", "planning:1"), ("STEP_FINISHED", "planning:1"),
                     ("STEP_STARTED", "step:1:a"), ("STEP_STARTED", "step:1:b"),  # parallel: both open
                     ("STEP_FINISHED", "step:1:a"), ("STEP_FINISHED", "step:1:b"),  # c never started: no step
                     ("STEP_STARTED", "analyzing:1"), ("STEP_FINISHED", "analyzing:1")]
    starts = [fields for kind, fields in out if kind == "TOOL_CALL_START"]
    assert [(f["toolCallId"], f["parentMessageId"]) for f in starts] == [("1:a:c1", "r1:step:1:a"), ("1:b:c1", "r1:step:1:b")]
    results = {f["toolCallId"]: f["content"] for kind, f in out if kind == "TOOL_CALL_RESULT"}
    assert results == {"1:b:c1": "Error: B offline", "1:a:c1": "a: ok"}
    args = [json.loads(f["delta"]) for kind, f in out if kind == "TOOL_CALL_ARGS"]
    assert args == [{"id": "a"}, {"id": "b"}]
    custom = [(f["name"], f["value"].get("status")) for kind, f in out if kind == "CUSTOM"]
    assert custom == [("phase", None), ("plan", None), ("dag_step", "started"), ("dag_step", "started"),
                      ("dag_step", "iteration"), ("dag_step", "completed"), ("dag_step", "completed"),
                      ("dag_step", "completed"), ("phase", None), ("analysis", None)]
    assert out[-1][0] == "RUN_FINISHED" and out[-1][1]["result"]["rounds"] == 1
    assert [kind for kind, _ in out[-5:-1]] == ["CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                                "TEXT_MESSAGE_END"]  # the analysis, then the answer


def test_steps_still_open_when_a_dag_stream_breaks_off_are_finished_before_run_error():
    out = mapped(ev.Planning(round=2),
                 ev.DagStepStarted(round=1, step_id="a", task="A", model_role="general", dependencies=[]))
    assert [(kind, fields.get("stepName")) for kind, fields in out[-3:]] == [
        ("STEP_FINISHED", "planning:2"), ("STEP_FINISHED", "step:1:a"), ("RUN_ERROR", None)]


def test_a_lone_surrogate_from_a_tool_is_escaped_not_a_broken_stream():
    out = mapped(ev.ToolStarted(iteration=1, tool_name="t", tool_args={}, tool_call_id="c1"),
                 tool_done("c1", observation="bad \ud800 byte"))
    assert out[-2][1]["content"] == "bad \ud800 byte"  # JSON's \ud800 escape reads back as the same string


# The endpoint ---------------------------------------------------------------------------------


@tool
def create_order(machine_id: str) -> str:
    """Create a work order."""
    return f"WO-1 for {machine_id}"


def app_for(responses: list[Any], *, key: str = "", **settings: Any):
    """An AG-UI app whose agent has the seed's two phases unless ``settings`` say otherwise."""
    model = ScriptedChatModel(responses=responses, synthesis="Done.")
    agent = ReActAgent(model, [create_order], abilities=NATIVE, checkpointer=InMemorySaver(),
                       settings=AgentSettings(**{"synthesis": "always", **settings}))
    return create_app(agent, ServerSettings(api_key=key, max_message_chars=50)), model


def run_input(thread_id: str = "t1", messages: Any = None, **extra: Any) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "CNC-001?"}]
            if messages is None else messages, **extra}


async def post(app, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        # json.dumps writes \\uXXXX escapes: a lone surrogate arrives as a client would send it
        return await client.post("/agui", content=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **(headers or {})})


@pytest.mark.parametrize("body, status, detail", [
    ({"threadId": "t1"}, 422, None),
    (run_input(messages="hello"), 422, None),
    (run_input(messages=[{"id": "u1", "role": "wizard", "content": "x"}]), 422, None),
    (run_input(thread_id="a b/c"), 422, None),
    (run_input(thread_id="abc\n"), 422, None),  # Python's re.match took it; no path can name it
    (run_input(thread_id="t" * 129), 422, None),
    ({**run_input(), "runId": "r" * 129}, 422, None),  # repeated in every event: bounded like an id
    ({**run_input(), "runId": "r1\u2028"}, 422, None),
    (run_input(messages=[{"id": "u1", "role": "user", "content": "CNC-\udcff?"}]), 422, "lone surrogate"),
    (run_input(messages=[{"id": "a1", "role": "assistant", "content": "hi"}]), 422, "no user message with text"),
    (run_input(messages=[{"id": "u1", "role": "user", "content": "   "}]), 422, "no user message with text"),
    (run_input(messages=[{"id": "u1", "role": "user", "content": "x" * 51}]), 413, "at most 50"),
    (run_input(resume=[{"interruptId": "i1", "status": "resolved"}]), 404, "unknown thread"),
])
async def test_bad_input_gets_a_4xx_with_its_reason(body, status, detail):
    app, model = app_for(["never"])
    response = await post(app, body)
    assert response.status_code == status, response.text
    if detail is not None:
        assert detail in response.json()["detail"]
    assert model.calls == []


async def test_the_key_is_required_like_on_every_endpoint():
    app, model = app_for(["CNC-001 is fine."], key="k")
    assert (await post(app, run_input())).status_code == 401
    assert (await post(app, run_input(), {"Authorization": "Bearer nope"})).status_code == 401
    ok = await post(app, run_input(), {"Authorization": "Bearer k"})
    assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/event-stream")
    assert '"type":"RUN_FINISHED"' in ok.text and model.kinds == ["tool_loop", "synthesis"]


async def test_the_last_user_message_is_the_question_and_the_thread_keeps_the_history():
    app, model = app_for(["first answer", "second answer"])
    await post(app, run_input(messages=[{"id": "u1", "role": "user", "content": [{"type": "text", "text": "CNC-"},
                                                                                 {"type": "text", "text": "001?"}]}]))
    history = [{"id": "u1", "role": "user", "content": "CNC-001?"}, {"id": "a1", "role": "assistant", "content": "Done."},
               {"id": "u2", "role": "user", "content": "and CNC-002?"}]
    second = await post(app, run_input(messages=history))
    assert second.status_code == 200
    assert model.kinds == ["tool_loop", "synthesis"] * 2
    sent = [message.content for message in model.calls[2] if message.type == "human"]
    assert sent == ["CNC-001?", "and CNC-002?"]  # the first turn from the checkpointer, the new question once


async def test_resume_decides_the_waiting_calls_and_refuses_what_does_not_fit():
    order = AIMessage(content="", tool_calls=[tool_call("create_order", {"machine_id": "CNC-001"}, "o1")])
    app, _ = app_for([order, "Ordered."], approval={"create_order": "always"})
    paused = await post(app, run_input())
    interrupt_id = json.loads([line for line in paused.text.splitlines() if '"RUN_FINISHED"' in line][0][6:])[
        "outcome"]["interrupts"][0]["id"]
    bad = await post(app, run_input(resume=[{"interruptId": interrupt_id, "status": "resolved", "payload": "yes"}]))
    assert bad.status_code == 422 and "must be a decision" in bad.json()["detail"]
    unknown = await post(app, run_input(resume=[{"interruptId": "nope", "status": "resolved"}]))
    assert unknown.status_code == 422 and "nope" in unknown.json()["detail"]
    rejected = await post(app, run_input(resume=[{"interruptId": interrupt_id, "status": "cancelled"}]))
    assert rejected.status_code == 200 and '"toolCallId":"o1"' in rejected.text and "WO-1" not in rejected.text
    again = await post(app, run_input(resume=[{"interruptId": interrupt_id, "status": "resolved"}]))
    assert again.status_code == 409 and "waits on no decision" in again.json()["detail"]


async def test_the_openapi_document_lists_the_endpoint():
    app, _ = app_for([])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
        schema = (await client.get("/openapi.json")).json()
    assert "AguiRunInput" in json.dumps(schema["paths"]["/agui"]["post"]["requestBody"])
    body = schema["components"]["schemas"]["AguiRunInput"]
    assert body["properties"]["threadId"]["pattern"] == body["properties"]["runId"]["pattern"] == THREAD_ID_PATTERN
    assert EventType.RUN_FINISHED.value in schema["paths"]["/agui"]["post"]["responses"]["200"]["description"]


def test_line_separators_are_escaped_in_every_frame_like_on_the_runs_stream():
    """U+2028, U+2029 and U+0085 end a line for line-splitting clients (httpx ``iter_lines``,
    ``httpx-sse``): the AG-UI frames escape them as the SPEC §8 frames do."""
    odd = "a\u2028b\u2029c\u0085d"
    encoding = AguiEncoding("t1", "r1")
    text = "".join(encoding.frame(event) for event in [
        ev.ToolStarted(iteration=1, tool_name="t", tool_args={"q": odd}, tool_call_id="c1"),
        tool_done("c1", observation=odd), ev.AnswerStarted(), ev.AnswerDelta(content=odd), ev.AnswerDone(),
        ev.Done(**{**DONE.data, "answer": odd}),
    ]) + encoding.end()
    lines = text.splitlines()  # str.splitlines splits at each of them, as those clients do
    assert all(line == "" or line.startswith("data: ") for line in lines)
    frames = [json.loads(line[len("data: "):]) for line in lines if line]
    assert len(frames) == text.count("data: ")
    assert json.loads(next(f["delta"] for f in frames if f["type"] == "TOOL_CALL_ARGS")) == {"q": odd}
    assert [f["content"] for f in frames if f["type"] == "TOOL_CALL_RESULT"] == [odd]
    assert [f["delta"] for f in frames if f["type"] == "TEXT_MESSAGE_CONTENT"] == [odd]
    assert frames[-1]["result"]["answer"] == odd
