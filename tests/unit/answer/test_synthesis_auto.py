"""``AgentSettings(synthesis="auto")``: the loop's own final answer is the streamed answer,
and the synthesis call runs only where it adds something; ``done`` says who wrote it."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.demo.agent import SYNTHESIS_ENV, demo_settings
from reactgraph.answer.loop_answer import LoopAnswer, json_answer_so_far
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE_TOOLS_ONLY

AUTO = AgentSettings(synthesis="auto")


@tool
def lookup_train(number: str) -> str:
    """Timetable of a train by its number."""
    return f"train {number}: departs 08:15 from platform 4"


@tool
def lookup_hotel(city: str) -> str:
    """Free rooms of the hotels in a city."""
    return f"{city}: 3 rooms free"


TOOLS = [lookup_train, lookup_hotel]


def shape(events):
    """(channel, type, status) of each event."""
    return [(e.channel, e.data.get("type"), e.data.get("status")) for e in events]


def deltas(events):
    return [e.data["content"] for e in events if e.channel == "answer" and e.data["status"] == "delta"]


async def run(model, settings=AUTO, abilities=NATIVE_TOOLS_ONLY, query="hi", **agent_args):
    agent = ReActAgent(model, TOOLS, abilities=abilities, settings=settings, **agent_args)
    return [e async for e in agent.astream_events(query)]


async def test_a_native_reply_without_tool_calls_streams_as_the_answer_in_one_call():
    model = ScriptedChatModel(responses=["Bonjour ! Je peux chercher des trains et des hôtels."],
                              synthesis=AssertionError("no synthesis under auto"))
    events = await run(model, query="Bonjour")
    assert model.kinds == ["tool_loop"] and model.apis == ["astream"]
    assert deltas(events) == ["Bonjour ", "! ", "Je ", "peux ", "chercher ", "des ", "trains ", "et ", "des ",
                              "hôtels."]
    # the deltas come while the call is decoded: before its thinking ``done``
    order = shape(events)
    assert order.index(("answer", None, "delta")) < order.index(("step", "thinking", "done"))
    assert order[:3] == [("step", "thinking", "start"), ("step", "answer", "start"), ("answer", None, "start")]
    assert order.count(("step", "answer", "start")) == 1
    assert order[-2:] == [("answer", None, "done"), ("done", None, None)]
    done = events[-1].data
    assert done["answer"] == "Bonjour ! Je peux chercher des trains et des hôtels."
    assert done["answer_source"] == "loop" and done["usage"]["model_calls"] == 1


async def test_a_one_tool_question_takes_two_model_calls():
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_train", {"number": "ICE 578"}, "c1")]),
                                         "Der ICE 578 fährt um 08:15 von Gleis 4."])
    events = await run(model, query="Wann fährt der ICE 578?")
    assert model.kinds == ["tool_loop", "tool_loop"]
    assert "".join(deltas(events)) == "Der ICE 578 fährt um 08:15 von Gleis 4."
    assert events[-1].data["answer_source"] == "loop" and events[-1].data["usage"]["model_calls"] == 2
    assert events[-1].data["grounding"]["ungrounded"] == []


async def test_always_keeps_the_synthesis_call_and_done_as_it_was():
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_train", {"number": "ICE 578"}, "c1")]),
                                         "ICE 578: 08:15."], synthesis="ICE 578 departs at 08:15 from platform 4.")
    events = await run(model, settings=AgentSettings(synthesis="always"), query="When does ICE 578 leave?")
    assert model.kinds == ["tool_loop", "tool_loop", "synthesis"]
    assert "tool_loop" in model.kinds and model.apis[:2] == ["agenerate", "agenerate"]
    assert "answer_source" not in events[-1].data
    assert "".join(deltas(events)) == "ICE 578 departs at 08:15 from platform 4."


async def test_json_mode_streams_the_final_answer_field_as_it_is_decoded():
    action = {"type": "final_answer", "reasoning": "found it", "answer": "Hay 3 habitaciones libres en Sevilla."}
    model = ScriptedChatModel(responses=[
        json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "lookup_hotel", "tool_args": {"city": "Sevilla"}}),
        json.dumps(action, ensure_ascii=False)])
    events = await run(model, abilities=ModelAbilities(tool_call=False), query="¿Habitaciones libres en Sevilla?")
    assert model.kinds == ["tool_loop", "tool_loop"]
    pieces = deltas(events)
    assert len(pieces) > 3 and "".join(pieces) == action["answer"]
    order = shape(events)
    first_delta = order.index(("answer", None, "delta"))
    assert first_delta < len(order) - 1 - order[::-1].index(("step", "thinking", "done"))
    assert events[-1].data["answer_source"] == "loop"


def test_the_partial_json_answer_reads_only_a_final_answer():
    assert json_answer_so_far('{"type": "final_answer", "answer": "Guten Ta') == "Guten Ta"
    assert json_answer_so_far('{"action": {"type": "final_answer", "answer": "ok') == "ok"
    assert json_answer_so_far('{"type": "tool_call", "answer": "no') is None
    assert json_answer_so_far('{"answer": "type comes later", "ty') is None
    assert json_answer_so_far("plain text") is None


async def test_text_beside_a_tool_call_is_never_shown_and_the_loop_goes_on():
    model = ScriptedChatModel(responses=[
        AIMessage("Let me check that train.", tool_calls=[tool_call("lookup_train", {"number": "TGV 6201"}, "c1")]),
        "TGV 6201 leaves at 08:15."])

    events = await run(model, settings=AgentSettings(synthesis="auto", require_tool_data=False),
                       query="Is there a train?")
    assert model.kinds == ["tool_loop", "tool_loop"]
    assert "".join(deltas(events)) == "TGV 6201 leaves at 08:15."
    assert events[-1].data["answer_source"] == "loop"


def test_a_streamed_text_that_turns_into_a_tool_call_is_reset(monkeypatch):
    import reactgraph.answer.loop_answer as module

    sent: list = []
    monkeypatch.setattr(module, "emit", sent.append)
    answer = module.LoopAnswer()
    answer.offer("Let me")
    answer.offer("Let me look")
    module.settle(answer, {"pending_tool_calls": [{"id": "c1", "name": "lookup_train", "args": {}}]})
    assert [type(event).__name__ for event in sent] == ["AnswerSignalled", "AnswerStarted", "AnswerDelta",
                                                         "AnswerDelta", "AnswerReset"]
    assert [getattr(event, "content", None) for event in sent[2:4]] == ["Let me", " look"]
    assert sent[-1].problems == ["not_final"]


def test_a_reply_that_may_be_a_call_written_in_the_text_is_held_until_it_ends(monkeypatch):
    import reactgraph.answer.loop_answer as module

    sent: list = []
    monkeypatch.setattr(module, "emit", sent.append)
    answer = LoopAnswer()
    answer.offer('<tool_call>{"name": "lookup_train"')
    answer.offer("{")
    assert sent == []
    assert answer.finish("Kein Zug gefunden.")
    assert [type(event).__name__ for event in sent] == ["AnswerStarted", "AnswerDelta"]
    assert sent[1].content == "Kein Zug gefunden."


async def test_an_answer_the_checks_refuse_is_reset_and_synthesized():
    model = ScriptedChatModel(responses=["The hotel has rooms."], synthesis="호텔에 빈 방이 있습니다.")
    events = await run(model, settings=AgentSettings(synthesis="auto", require_tool_data=False),
                       query="호텔에 빈 방이 있나요?")
    assert model.kinds == ["tool_loop", "synthesis"]
    resets = [e for e in events if e.channel == "answer" and e.data["status"] == "reset"]
    assert len(resets) == 1 and resets[0].data["problems"] == ["language"]
    assert events[-1].data["answer"] == "호텔에 빈 방이 있습니다." and events[-1].data["answer_source"] == "synthesis"


async def test_the_flag_note_follows_the_loop_answer():
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": "Porto"}, "c1")]),
                                         "Porto has 7 rooms free."])
    events = await run(model, query="How many rooms are free in Porto?")
    pieces = deltas(events)
    assert "".join(pieces[:-1]) == "Porto has 7 rooms free." and "7" in pieces[-1]
    assert events[-1].data["grounding"]["action"] == "flagged" and events[-1].data["answer_source"] == "loop"
    assert model.kinds == ["tool_loop", "tool_loop"]


async def test_synthesis_still_runs_after_the_iteration_cap():
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": "Graz"}, "c1")])],
                              synthesis="Graz: 3 rooms free.")
    events = await run(model, settings=AgentSettings(synthesis="auto", max_iterations=1), query="Rooms in Graz?")
    assert model.kinds == ["tool_loop", "synthesis"]
    assert events[-1].data["finish_reason"] == "max_iterations" and events[-1].data["answer_source"] == "synthesis"


async def test_synthesis_still_runs_after_a_stall():
    call = AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": "Graz"}, "c1")])
    model = ScriptedChatModel(responses=[call], repeat_last=True, synthesis="Graz: 3 rooms free.")
    events = await run(model, settings=AgentSettings(synthesis="auto", stall_repeats=1, refuse_repeated_calls=False),
                       query="Rooms in Graz?")
    assert model.kinds[-1] == "synthesis" and model.kinds.count("synthesis") == 1
    assert events[-1].data["finish_reason"] == "stalled" and events[-1].data["answer_source"] == "synthesis"


async def test_synthesis_still_runs_for_a_structured_response_format():
    class Rooms(BaseModel):
        city: str
        free: int

    structured = AIMessage("", tool_calls=[tool_call("Rooms", {"city": "Graz", "free": 3}, "s1")])
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": "Graz"}, "c1")]),
                                         "Graz: 3 rooms.", structured], synthesis="Graz has 3 rooms free.")
    events = await run(model, query="Rooms in Graz?", response_format=Rooms)
    assert model.kinds[:3] == ["tool_loop", "tool_loop", "synthesis"] and model.apis[1] == "agenerate"
    assert events[-1].data["answer_source"] == "synthesis"


async def test_synthesis_still_runs_under_enforce():
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": "Graz"}, "c1")]),
                                         "Graz: 3 rooms."], synthesis="Graz has 3 rooms free.")
    settings = AgentSettings(synthesis="auto", grounding="enforce", grounding_check_first=True,
                             answer_from_observations=False, grounding_min_facts=0)
    events = await run(model, settings=settings, query="Rooms in Graz?")
    assert model.kinds == ["tool_loop", "tool_loop", "synthesis"] and model.apis[1] == "agenerate"
    assert events[-1].data["answer_source"] == "synthesis"


async def test_answers_made_of_observations_say_so():
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": "Graz"}, "c1")]),
                                         "whatever"])
    settings = AgentSettings(synthesis="auto", answer_from_observations=True)
    events = await run(model, settings=settings, query="Rooms in Graz?")
    assert "synthesis" not in model.kinds and events[-1].data["answer_source"] == "observations"
    assert "3 rooms free" in events[-1].data["answer"]


async def test_a_long_trace_gets_the_synthesis_call():
    from reactgraph.core.config import AUTO_SYNTHESIS_STEPS

    calls = [AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": city}, f"c{i}")])
             for i, city in enumerate(["Graz", "Linz", "Wels", "Enns", "Ybbs"][:AUTO_SYNTHESIS_STEPS])]
    model = ScriptedChatModel(responses=[*calls, "All have 3 rooms."], synthesis="Each city has 3 rooms free.")
    events = await run(model, settings=AgentSettings(synthesis="auto", stall_failures=10), query="Rooms?")
    assert model.kinds == ["tool_loop"] * (AUTO_SYNTHESIS_STEPS + 1) + ["synthesis"]
    assert events[-1].data["answer_source"] == "synthesis"


async def test_run_without_streaming_is_unchanged_under_auto():
    model = ScriptedChatModel(responses=["Hola, ¿en qué puedo ayudarte?"])
    result = await ReActAgent(model, TOOLS, abilities=NATIVE_TOOLS_ONLY, settings=AUTO).run("Hola")
    assert result.answer == "Hola, ¿en qué puedo ayudarte?" and result.answer_source is None
    assert model.apis == ["agenerate"]


def test_the_setting_is_checked_and_read_from_the_environment(monkeypatch):
    with pytest.raises(ValueError, match="synthesis must be one of always, auto"):
        AgentSettings(synthesis="sometimes")
    monkeypatch.setenv(SYNTHESIS_ENV, "auto")
    assert demo_settings().synthesis == "auto"
    assert demo_settings(synthesis="always").synthesis == "always"
    monkeypatch.delenv(SYNTHESIS_ENV)
    assert demo_settings().synthesis is None  # the model's policy decides


@pytest.mark.parametrize(("abilities", "expected"), [
    (NATIVE_TOOLS_ONLY, "auto"),  # a capable model: the permissive policy
    (ModelAbilities(tool_call=True, small=True), "always"),  # a small model: the strict policy
])
def test_the_policy_decides_synthesis_unless_the_caller_sets_it(abilities, expected):
    agent = ReActAgent(ScriptedChatModel(responses=["Hallo!"]), TOOLS, abilities=abilities)
    assert AgentSettings().synthesis is None and agent.engine.settings.synthesis == expected
    for chosen in ("always", "auto"):
        set_by_caller = ReActAgent(ScriptedChatModel(responses=["Hallo!"]), TOOLS, abilities=abilities,
                                   settings=AgentSettings(synthesis=chosen))
        assert set_by_caller.engine.settings.synthesis == chosen


async def test_a_capable_model_writes_its_own_answer_by_default():
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": "Porto"}, "c1")]),
                                         "Há 3 quartos livres no Porto."],
                              synthesis=AssertionError("no synthesis under the permissive default"))
    events = await run(model, settings=AgentSettings(), query="Quantos quartos livres há no Porto?")
    assert model.kinds == ["tool_loop", "tool_loop"]
    assert events[-1].data["answer"] == "Há 3 quartos livres no Porto."
    assert events[-1].data["answer_source"] == "loop" and events[-1].data["usage"]["model_calls"] == 2


def test_a_synchronous_run_streams_the_loop_answer_too():
    from langchain_core.messages import HumanMessage

    from reactgraph import create_react_graph

    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("lookup_hotel", {"city": "Graz"}, "c1")]),
                                         "In Graz sind 3 Zimmer frei."])
    graph = create_react_graph(model, TOOLS, abilities=NATIVE_TOOLS_ONLY, settings=AUTO, custom_events=True)  # the engine's events
    chunks = list(graph.stream({"messages": [HumanMessage("Zimmer in Graz?")]}, stream_mode=["custom", "values"]))
    written = [data["data"]["content"] for mode, data in chunks if mode == "custom" and "content" in data.get("data", {})]
    assert written == ["In ", "Graz ", "sind ", "3 ", "Zimmer ", "frei."]
    final = chunks[-1][1]
    assert model.apis == ["stream", "stream"] and final["answer_source"] == "loop"
    assert final["synthesis"] == "In Graz sind 3 Zimmer frei."


async def test_a_json_mode_answer_that_is_a_json_object_is_withdrawn_and_synthesized():
    """A JSON-mode model may hand a tool's figures on as an object in its ``answer`` field
    (measured on Qwen2.5-Coder-1.5B); that is data, not an answer: synthesis writes it."""
    figures = {"availability": 96.2, "oee": 92.7}
    model = ScriptedChatModel(
        responses=[json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "lookup_hotel",
                               "tool_args": {"city": "Lyon"}}),
                   json.dumps({"type": "final_answer", "reasoning": "", "answer": json.dumps(figures)})],
        synthesis="Lyon: 3 rooms free.")
    events = await run(model, abilities=ModelAbilities(json_mode=True), query="How many rooms are free in Lyon?")
    assert model.kinds == ["tool_loop", "tool_loop", "synthesis"]
    resets = [e for e in events if e.channel == "answer" and e.data["status"] == "reset"]
    assert [e.data["problems"] for e in resets] == [["raw_data"]]
    assert events[-1].data["answer"] == "Lyon: 3 rooms free." and events[-1].data["answer_source"] == "synthesis"


async def test_a_json_mode_answer_that_begins_mid_sentence_is_withdrawn_and_synthesized():
    """A JSON-mode model may begin its sentence in ``reasoning`` and end it in ``answer``
    (measured on Qwen2.5-Coder-1.5B: ``is rising.``); a fragment is no answer: synthesis
    writes it, in the question's language."""
    model = ScriptedChatModel(
        responses=[json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "lookup_train",
                               "tool_args": {"number": "ICE 578"}}),
                   json.dumps({"type": "final_answer", "reasoning": "Der ICE 578 fährt um 08:15",
                               "answer": "und zwar von Gleis 4."})],
        synthesis="Der ICE 578 fährt um 08:15 von Gleis 4.")
    events = await run(model, abilities=ModelAbilities(json_mode=True), query="Wann fährt der ICE 578?")
    assert model.kinds == ["tool_loop", "tool_loop", "synthesis"]
    resets = [e for e in events if e.channel == "answer" and e.data["status"] == "reset"]
    assert [e.data["problems"] for e in resets] == [["fragment"]]
    assert events[-1].data["answer"] == "Der ICE 578 fährt um 08:15 von Gleis 4."
    assert events[-1].data["answer_source"] == "synthesis"
