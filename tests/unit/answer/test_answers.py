"""What a user sees of an answer and which calls a run makes for it: the answer made
of observations, the checks that withdraw an answer before it is shown (grounding: the check
itself, and its report, re-ask and fall back on runs of a small model), a synthesis cut
where it starts to loop, the calls the small model's policy skips, and the per-tool
side-effect declarations."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.answer.fitness import answer_problems, begins_mid_sentence
from reactgraph.answer.grounding import (
    capabilities_answer,
    check_grounding,
    derivable,
    extract_values,
    observation_answer,
    row_header,
)
from reactgraph.models import ResolvedModel
from reactgraph.policy.safeguards import PERMISSIVE, STRICT, SAFEGUARD_FIELDS, policy_for, resolve_settings
from reactgraph.answer.synthesis import looping_tail, until_repetition
from reactgraph.testing import ScriptedChatModel, tool_call
from reactgraph.tools.runner import has_side_effects
from tests.helpers import SMALL_NATIVE, SMALL_SCHEMA, call_json, final, plant_tools

STATUS = """Equipment ID: CNC-003
Name: CNC Lathe #1
State: warning
Vibration: 1.2 mm/s
Active alarms: W-1105: vibration rising"""

ALARMS = """2 active alarm(s):
E-3301 | critical | CMP-002 (Air Compressor #2) | raised 2026-01-27 03:12
W-1105 | warning | CNC-003 (CNC Lathe #1) | raised 2026-01-22 10:15"""



def ok(name: str, args: dict, observation: str) -> dict:
    return {"tool_name": name, "tool_args": args, "observation": observation, "error": None}


# the answer made of observations ---------------------------------------------------------


def test_key_value_output_is_a_list_under_a_lead_naming_the_subject():
    text = observation_answer("CNC-003 상태 확인해줘", [ok("get_equipment_status", {"equipment_id": "CNC-003"}, STATUS)])
    lines = text.splitlines()
    assert lines[0] == "CNC-003에 대해 도구가 조회한 결과입니다."
    assert "- **State**: warning" in lines and "- **Vibration**: 1.2 mm/s" in lines
    assert "- **Active alarms**: W-1105: vibration rising" in lines
    assert "```" not in text and "get_equipment_status" not in text and "equipment_id" not in text
    english = observation_answer("What is the state of CNC-003?", [ok("s", {"equipment_id": "CNC-003"}, STATUS)])
    assert english.startswith("Here is what the tools report about CNC-003.")


def test_the_lead_names_what_the_question_and_the_calls_share():
    line = observation_answer("Line C에는 어떤 설비가 있어?", [ok("list_machines", {"line": "Line C"}, STATUS)])
    assert line.startswith("Line C에 대해 도구가 조회한 결과입니다.")  # a Korean particle follows the name
    failed = observation_answer("Show the inspections that failed.", [ok("inspections", {"result": "fail"}, STATUS)])
    assert failed.startswith("Here is what the tools report.")  # "fail" is no whole word of "failed"
    pair = observation_answer("Compare the machines cnc-003 and CNC-001", [ok("compare", {"ids": ["CNC-001", "CNC-003"]}, STATUS)])
    assert pair.startswith("Here is what the tools report about CNC-003, CNC-001.")  # question order, call spelling


def test_rows_without_column_names_become_a_list_and_a_title_line_stays_a_sentence():
    text = observation_answer("List the active alarms", [ok("list_active_alarms", {}, ALARMS)])
    assert text.startswith("Here is what the tools report.")
    assert "2 active alarm(s):" in text.splitlines()
    assert "- E-3301 · critical · CMP-002 (Air Compressor #2) · raised 2026-01-27 03:12" in text.splitlines()
    assert "|" not in text  # the output names no columns: no table with an empty header row


def test_a_table_takes_its_column_names_from_the_tools_own_output():
    named = "sku | title | stock\nAB/100 | Ventil | 4\nAB/220 | Dichtung | 0"
    text = observation_answer("Welche Artikel sind auf Lager?", [ok("lager", {}, named)])
    lines = text.splitlines()
    assert lines[0] == "Das melden die Werkzeuge."
    assert "| sku | title | stock |" in lines and "| AB/100 | Ventil | 4 |" in lines
    assert "| sku | title | stock |" == lines[lines.index("|---|---|---|") - 1]
    markdown = "| 駅 | 在庫 |\n|---|---|\n| 東京駅 | 12 |\n| 大阪駅 | 3 |"
    text = observation_answer("東京駅の在庫は？", [ok("stock", {"station": "東京駅"}, markdown)])
    assert text.splitlines()[0] == "東京駅について、ツールの結果は次のとおりです。"
    assert "| 駅 | 在庫 |" in text.splitlines() and "| 東京駅 | 12 |" in text.splitlines()
    assert row_header([["a", "b"], ["1", "2"]]) is None  # two rows: nothing tells a header from data
    # … but three columns of names over one row of data do (a loans list of one loan)
    assert row_header([["isbn", "title", "due"], ["978-3-16-148410-0", "Solaris", "2026-12-10"]]) == [
        "isbn", "title", "due"]
    assert row_header([["id", "name"], ["x1", "a"], ["x2", "b"]]) == ["id", "name"]


def test_what_the_agent_can_look_up_answers_in_the_questions_language():
    descriptions = {f"tool_{n}": f"Look up thing {chr(65 + n)}.\n\nDetails." for n in range(10)}
    descriptions["compare"] = "Compare 2-6 machines."  # a summary with a figure is not listed
    korean = capabilities_answer("안녕하세요! 고마워요, 오늘은 여기까지예요.", descriptions)
    lines = korean.splitlines()
    assert lines[0].startswith("이 질문에 답할 데이터는 없지만") and "- Look up thing A." in lines
    assert lines[-1] == "- 그 밖의 조회도 할 수 있습니다." and "tool_0" not in korean and "Compare" not in korean and "Details." not in korean
    assert not answer_problems(korean, "안녕하세요! 고마워요, 오늘은 여기까지예요.", descriptions)
    assert capabilities_answer("Hi there, how are you?", {}) == "I have no data to answer that."


def test_two_tools_are_answered_together_without_a_line_twice():
    steps = [ok("get_equipment_status", {"equipment_id": "CNC-003"}, STATUS),
             ok("get_alarm_details", {"alarm_code": "W-1105"}, "Equipment ID: CNC-003\nRaised: 2026-01-22")]
    text = observation_answer("CNC-003 and its alarm W-1105?", steps)
    assert text.startswith("Here is what the tools report about CNC-003, W-1105.")
    assert text.count("CNC-003") == 2  # the lead and the one Equipment ID line (the second tool's is not repeated)
    assert "- **Raised**: 2026-01-22" in text
    assert not answer_problems(text, "CNC-003 and its alarm W-1105?", ["get_equipment_status", "get_alarm_details"])


def test_an_error_is_answered_with_what_the_tool_said():
    failed = [{"tool_name": "get_equipment_status", "tool_args": {"equipment_id": "CNC-009"},
               "error": "'CNC-009' is not a valid value — Input should be 'CNC-001' or 'CNC-003'"}]
    text = observation_answer("CNC-009 상태?", failed)
    assert text.startswith("CNC-009에 대해 도구가 데이터를 반환하지 않았습니다.")
    assert "- 'CNC-009' is not a valid value — Input should be 'CNC-001' or 'CNC-003'" in text
    assert "get_equipment_status" not in text


# the checks -----------------------------------------------------------------------------


def test_answer_problems_find_what_a_person_would_not_call_an_answer():
    tools = ["get_equipment_status"]
    assert answer_problems("1. Get_equipment_status({\"equipment_id\": \"CNC-003\"})", "CNC-003?", tools) == ["tool_call"]
    assert answer_problems("Here:\n```\nState: warning\n```", "CNC-003?", tools) == ["code_fence"]
    assert answer_problems("The answer is: warning.\nThe answer is: warning.", "CNC-003?", tools) == ["repeated_line"]
    # a phrase said over and over within one line: a small model's loop
    assert "repeated_line" in answer_problems("내일 서울 날씨 어때요? " + "어때요? " * 12, "내일 서울 날씨 어때요?", tools)
    assert answer_problems("Lines A, B, C, D, E and F run at 100 %.", "Which lines run?", tools) == []
    assert answer_problems("CNC-003 is in warning.", "CNC-003 상태 확인해줘", tools) == ["language"]
    assert answer_problems("CNC-003은 경고 상태입니다.", "CNC-003 상태 확인해줘", tools) == []
    assert answer_problems("  ", "q", tools) == ["empty"]
    assert "raw_data" in answer_problems('{"availability": 96.2, "oee": 92.7}', "OEE of line B?", tools)
    assert "raw_data" in answer_problems('[{"part": "P-1102", "stock": 2}]', "Low stock?", tools)
    assert answer_problems("Set {mode} to [auto], then restart.", "How do I restart?", tools) == []
    assert answer_problems("{not json}", "q", tools) == []


@pytest.mark.parametrize(("answer", "question"), [
    ("is rising.", "Is the water level of the Rhine at Köln rising?"),
    ("und steigt weiter.", "Steigt der Pegel des Rheins in Köln?"),
    ("растёт.", "Уровень воды в Неве растёт?"),
    ("ανεβαίνει ακόμα.", "Ανεβαίνει η στάθμη του νερού;"),
    ("**est en hausse.**", "Le niveau de la Seine monte-t-il ?"),
    ("> ¿sigue subiendo?", "¿Sube el nivel del Ebro?"),
])
def test_an_answer_that_begins_mid_sentence_is_a_fragment_in_any_cased_script(answer, question):
    """A JSON-mode model may finish in ``answer`` a sentence it began in ``reasoning``: the
    answer then starts with a lowercase letter of a script that capitalises sentences."""
    assert answer_problems(answer, question, ["river_gauge"]) == ["fragment"]
    assert begins_mid_sentence(answer)


@pytest.mark.parametrize(("answer", "question"), [
    ("Yes, it is still rising: 4.2 m at Köln.", "Is the Rhine at Köln rising?"),
    ("42 orders are still open.", "How many orders are open?"),
    ("iPhone 15 is in stock in Graz.", "Is the iPhone 15 in stock in Graz?"),
    ("pH 7.2 at the inlet.", "What is the pH at the inlet?"),
    ("a.b@example.org has 3 open orders.", "Open orders of a.b@example.org?"),
    ("https://status.example.org reports no outage.", "Any outage?"),
    ("ab12-x is the ticket's id.", "Which ticket id?"),
    ("`rsync -a` copies the folder.", "How do I copy the folder?"),
    ("- level: 4.2 m\n- trend: rising", "Rhine level at Köln?"),
    ("温度は上昇中です。", "温度は上昇していますか？"),
    ("수위가 계속 오르고 있습니다.", "수위가 오르고 있나요?"),
    ("المستوى يرتفع.", "هل يرتفع المستوى؟"),
    ("წყლის დონე იზრდება.", "იზრდება წყლის დონე?"),
])
def test_a_lowercase_value_or_a_caseless_script_is_no_fragment(answer, question):
    """Values written in lowercase (ids, addresses, code, ``iPhone``), list items, scripts
    without case and Georgian (whose sentences begin in lowercase) are whole answers."""
    assert "fragment" not in answer_problems(answer, question, ["river_gauge"])


def test_derived_figures_count_only_when_allowed():
    steps = [ok("t", {}, "CNC-001 48.7 °C, CNC-003 42.1 °C, limit 60.0 °C")]
    assert derivable("6.6", ["48.7", "42.1"]) and derivable("81.2", ["48.7", "60"]) and derivable("49", ["48.7"])
    assert not derivable("93.4", ["48.7", "42.1", "60"]) and not derivable("CNC-004", ["48.7"])
    answer = "CNC-001 is 6.6 °C warmer, at 81.2 % of its limit."
    assert check_grounding(answer, steps, "q").ungrounded == ["6.6", "81.2"]
    assert check_grounding(answer, steps, "q", derived=True).ungrounded == []


# what the policy decides ------------------------------------------------------------------


def test_one_place_decides_the_safeguards_and_a_callers_value_wins():
    assert policy_for(None) is PERMISSIVE and policy_for(ModelAbilities(small=True)) is STRICT
    assert set(SAFEGUARD_FIELDS) == set(PERMISSIVE.settings)
    assert all(getattr(AgentSettings(), name) is None for name in SAFEGUARD_FIELDS)  # left to the policy
    strict = resolve_settings(AgentSettings(grounding="report"), ModelAbilities(small=True))
    assert (strict.grounding, strict.refuse_unasked_ids, strict.stall_repeats) == ("report", True, 1)
    agent = ReActAgent(ScriptedChatModel(responses=["hi"]), [], abilities=ModelAbilities(tool_call=True))
    assert agent.settings.grounding == "flag" and agent.settings.stall_repeats == 3
    resolved = ResolvedModel(llm=ScriptedChatModel(), abilities=SMALL_SCHEMA, description="small")
    assert resolved.safeguards["policy"] == "strict" and resolved.safeguards["grounding"] == "enforce"


def test_side_effects_are_read_from_metadata_and_mcp_annotations():
    def make(metadata: dict | None) -> StructuredTool:
        return StructuredTool.from_function(lambda: "x", name="t", description="t", metadata=metadata)

    assert has_side_effects(make({"side_effects": True})) is True
    assert has_side_effects(make({"side_effects": False, "destructiveHint": True})) is False  # ours wins
    assert has_side_effects(make({"readOnlyHint": True})) is False
    assert has_side_effects(make({"readOnlyHint": False, "idempotentHint": True})) is False  # a repeat changes nothing
    assert has_side_effects(make({"destructiveHint": True})) is True
    assert has_side_effects(make({"readOnlyHint": False})) is True
    assert has_side_effects(make(None)) is None and has_side_effects(None) is None


async def test_an_undeclared_tool_that_needs_approval_is_not_run_twice():
    """An undeclared tool counts as having side effects only when its call needs approval;
    without a checkpointer such a call is not run at all, so its repeat is refused unseen."""
    class Order(BaseModel):
        task: str

    ran = []
    order = StructuredTool.from_function(lambda task: ran.append(task) or f"order for {task}", name="order",
                                         description="Place a work order.", args_schema=Order)
    call = AIMessage("", tool_calls=[tool_call("order", {"task": "bearing"})])
    agent = ReActAgent(ScriptedChatModel(responses=[call, call, "placed"]), [order],
                       abilities=ModelAbilities(tool_call=True), settings=AgentSettings(approval={"order": "never"}))
    result = await agent.run("Order a bearing")
    assert ran == ["bearing", "bearing"] and result.steps[1].unchanged  # needs no approval: a repeat runs
    assert agent.engine.repeat_changes_something({"name": "order", "args": {"task": "bearing"}}) is False
    gated = ReActAgent(ScriptedChatModel(responses=["x"]), [order], abilities=ModelAbilities(tool_call=True),
                       settings=AgentSettings(approval={"order": "always"}))
    assert gated.engine.repeat_changes_something({"name": "order", "args": {"task": "bearing"}}) is True


# the calls the small model's policy makes -------------------------------------------------


def machine_tool() -> StructuredTool:
    class Args(BaseModel):
        equipment_id: str

    return StructuredTool.from_function(lambda equipment_id: STATUS, name="get_equipment_status",
                                        description="State of one machine.", args_schema=Args)


async def test_a_covered_question_goes_straight_to_the_answer():
    """Strict policy: once the observation covers the question's id, no further loop call is
    made and the answer is built from the observation with no synthesis call — one model call
    in all here (no selection with one tool). With ``answer_from_observations`` off, the model's
    answer is written, checked before it is shown, and replaced when it fails."""
    loop_call = json.dumps({"type": "tool_call", "reasoning": "This tool is a tool for the other machines",
                            "tool_name": "get_equipment_status", "tool_args": {"equipment_id": "CNC-003"}})
    model = ScriptedChatModel(responses=[loop_call], repeat_last=True)
    events = [e async for e in ReActAgent(model, [machine_tool()], abilities=SMALL_SCHEMA).astream_events("CNC-003 상태 확인해줘")]
    assert model.kinds == ["tool_loop"]
    thinking = [e.data for e in events if e.channel == "step" and e.data.get("type") == "thinking"
                and e.data["status"] == "done"]
    assert thinking == [{"type": "thinking", "status": "done", "iteration": 1, "reasoning": ""}]  # no noise shown
    done = events[-1].data
    assert done["finish_reason"] == "covered" and done["grounding"]["action"] == "observations"
    assert done["answer"].startswith("CNC-003에 대해 도구가 조회한 결과입니다.") and done["usage"]["model_calls"] == 1

    model = ScriptedChatModel(responses=[loop_call], repeat_last=True,
                              synthesis="1. Get_equipment_status({...})\nThe answer is: 1.")
    agent = ReActAgent(model, [machine_tool()], abilities=SMALL_SCHEMA, settings=AgentSettings(answer_from_observations=False))
    events = [e async for e in agent.astream_events("CNC-003 상태 확인해줘")]
    assert model.kinds == ["tool_loop", "synthesis"]
    assert [e.data["status"] for e in events if e.channel == "answer"] == ["start", "delta", "done"]  # no draft
    done = events[-1].data
    assert done["grounding"]["action"] == "fallback" and done["grounding"]["problems"] == ["language", "tool_call"]
    assert done["answer"].startswith("CNC-003에 대해 도구가 조회한 결과입니다.")


async def test_a_no_tool_answer_unfit_to_show_is_replaced_by_what_the_agent_can_look_up():
    """Strict policy, no tool ran: an English reply to a Korean farewell fails the language
    check before it is shown; the answer is what the agent can look up, in Korean. A fit reply
    stands."""
    farewell = "안녕하세요! 고마워요, 오늘은 여기까지예요."
    model = ScriptedChatModel(responses=[final("The answer to the question was not found.")],
                              synthesis="The answer to the question was not found.")
    events = [e async for e in ReActAgent(model, [machine_tool()], abilities=SMALL_SCHEMA).astream_events(farewell)]
    done = events[-1].data
    assert [e.data["status"] for e in events if e.channel == "answer"] == ["start", "delta", "done"]
    assert done["grounding"]["action"] == "fallback" and done["grounding"]["problems"] == ["language"]
    assert done["answer"].startswith("이 질문에 답할 데이터는 없지만") and "- State of one machine." in done["answer"]

    model = ScriptedChatModel(responses=[final("천만에요! 또 오세요.")], synthesis="천만에요! 또 오세요.")
    done = (await ReActAgent(model, [machine_tool()], abilities=SMALL_SCHEMA).run(farewell))
    assert done.answer == "천만에요! 또 오세요."


async def test_a_stalled_loop_with_synthesis_makes_no_answer_only_call():
    call = AIMessage("", tool_calls=[tool_call("get_equipment_status", {"equipment_id": "CNC-003"})])
    model = ScriptedChatModel(responses=[call], repeat_last=True, synthesis="CNC-003 is in warning at 1.2 mm/s.")
    agent = ReActAgent(model, [machine_tool()], abilities=ModelAbilities(tool_call=True),
                       settings=AgentSettings(stall_repeats=1))
    events = [e async for e in agent.astream_events("What is the state of CNC-003?")]
    assert model.kinds == ["tool_loop", "tool_loop", "synthesis"]
    assert events[-1].data["finish_reason"] == "stalled"
    assert events[-1].data["answer"] == "CNC-003 is in warning at 1.2 mm/s."


def test_each_safeguard_can_be_turned_off_alone_for_the_bench():
    """``bench/answer_quality.py --without NAME`` rows: every policy field belongs to
    exactly one named safeguard, and turning one off changes only its fields."""
    from reactgraph.policy.safeguards import SAFEGUARDS, without

    fields = [field for group in SAFEGUARDS.values() for field in group]
    assert sorted(fields) == sorted(SAFEGUARD_FIELDS)
    stall_off = without(["stall"])
    assert stall_off["stall_repeats"] == PERMISSIVE.settings["stall_repeats"] == 3
    assert stall_off["stall_failures"] == PERMISSIVE.settings["stall_failures"]
    assert {k: v for k, v in stall_off.items() if k not in SAFEGUARDS["stall"]} == \
        {k: v for k, v in STRICT.settings.items() if k not in SAFEGUARDS["stall"]}
    assert without([]) == dict(STRICT.settings)


async def test_stream_answer_after_run_gives_the_answer_a_streamed_run_gives():
    """``run`` then ``stream_answer`` (SPEC R3.1, the library's two phases) goes through the same
    answer phase as ``astream_events``: the strict policy's answer made of observations, and a
    capable model's made-up figure flagged under its answer."""
    loop_call = json.dumps({"type": "tool_call", "reasoning": "look", "tool_name": "get_equipment_status",
                            "tool_args": {"equipment_id": "CNC-003"}})
    model = ScriptedChatModel(responses=[loop_call], repeat_last=True, synthesis="1. Get_equipment_status({...})")
    agent = ReActAgent(model, [machine_tool()], abilities=SMALL_SCHEMA)
    result = await agent.run("CNC-003 상태 확인해줘")
    text = "".join([chunk async for chunk in agent.stream_answer("CNC-003 상태 확인해줘", result)])
    assert text.startswith("CNC-003에 대해 도구가 조회한 결과입니다.") and "- **State**: warning" in text
    assert "synthesis" not in model.kinds  # the answer made of observations needs no model call

    call = AIMessage("", tool_calls=[tool_call("get_equipment_status", {"equipment_id": "CNC-003"})])
    model = ScriptedChatModel(responses=[call, AIMessage("done")], synthesis="CNC-003 is in warning at 9.9 mm/s.")
    agent = ReActAgent(model, [machine_tool()], abilities=ModelAbilities(tool_call=True))
    result = await agent.run("What is the state of CNC-003?")
    text = "".join([chunk async for chunk in agent.stream_answer("What is the state of CNC-003?", result)])
    assert text.startswith("CNC-003 is in warning at 9.9 mm/s.") and "9.9" in text.split("\n", 1)[1]  # the flag note


def test_a_word_filter_no_called_tool_takes_does_not_keep_the_question_open():
    """``covered``: ids and dates the question names must be passed; a word value
    (``low``) only when a tool that ran could take it."""
    from reactgraph.nodes.llm_call import covered

    takes = {"low_stock": frozenset(), "parts": frozenset({"low", "ok"}), "status": frozenset({"CNC-003"})}.get
    assert covered([ok("low_stock", {}, "2 parts low")], ("low",), takes)
    assert not covered([ok("parts", {}, "P-1 ok")], ("low",), takes)  # it has the filter and was not given it
    assert not covered([ok("low_stock", {}, "2 parts low")], ("CNC-003",), takes)  # an id is always needed
    assert covered([ok("status", {"id": "CNC-003"}, "warning")], ("CNC-003",), takes)
    assert not covered([ok("low_stock", {}, "2 parts low")], ("low",))  # without ``takes``: every value


# grounding checks on runs of a small model ------------------------------------------------

STEPS = [{"tool_name": "machine_status", "tool_args": {"machine_id": "CNC-003"}, "error": None,
          "observation": "State: warning\nTemperature: 48.70°C\nVibration: 1.2 mm/s\nActive alarms: W-1105"}]


def test_values_are_normalized():
    assert extract_values("1. CNC-003의 온도 48.70°C, 1,250.50 kWh\n2. cnc-3", skip_list_markers=True) == \
        ["CNC-003", "48.7", "1250.5", "CNC-3"]


def test_a_fabricated_number_is_caught_and_trace_numbers_pass():
    good = check_grounding("**CNC-003**: warning, 48.7 °C, vibration 1.2 mm/s, alarm W-1105.", STEPS, "CNC-003?")
    assert good.grounded and good.ungrounded == [] and not good.factless and "W-1105" in good.cited
    bad = check_grounding("CNC-003 runs at 93.4 % and 48.7 °C.", STEPS, "CNC-003?")
    assert bad.ungrounded == ["93.4"]
    empty = check_grounding("CNC-003 is fine.", STEPS, "CNC-003?")
    assert empty.grounded and empty.factless  # passes on nothing the tool said


def test_single_digits_and_the_questions_own_ids_are_not_facts_passed_on():
    steps = [{"tool_name": "history", "tool_args": {"machine_id": "RBT-002"}, "error": None,
              "observation": "Handling Robot #2\n2026-01-12 WO-5521 grease, 45 min\n2026-01-03 WO-5410 cable, 30 min"}]
    vague = check_grounding("1. RBT-002 (Robot #2) had 2 jobs.", steps, "RBT-002 정비 이력 보여줘")
    assert vague.grounded and vague.cited == [] and vague.factless and vague.facts_available == 6
    one = check_grounding("RBT-002 was serviced on 2026-01-12.", steps, "RBT-002 정비 이력", min_facts=2)
    assert one.cited == ["2026-01-12"] and one.factless  # fewer than the two asked for
    two = check_grounding("RBT-002: WO-5521 on 2026-01-12.", steps, "RBT-002 정비 이력", min_facts=2)
    assert not two.factless
    few = [{**steps[0], "observation": "Last service 2026-01-12"}]
    assert not check_grounding("Serviced 2026-01-12.", few, "RBT-002?", min_facts=2).factless  # only one exists


async def test_enforce_with_two_facts_withdraws_a_one_fact_answer():
    async def done_of(settings: AgentSettings) -> dict:
        model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("machine_status", {"machine_id": "CNC-003"})]),
                                             "done"], synthesis="CNC-003 is at 48.7 °C.")
        events = [e async for e in ReActAgent(model, plant_tools(), abilities=SMALL_NATIVE, settings=settings).astream_events("CNC-003 상태")]
        return events[-1].data

    strict = await done_of(AgentSettings(grounding="enforce", grounding_min_facts=2, answer_when_covered=False,
                                         answer_from_observations=False))
    assert strict["grounding"]["action"] == "fallback"
    assert "vibration 1.2 mm/s, alarm W-1105" in strict["answer"]
    one = await done_of(AgentSettings(grounding="enforce", grounding_min_facts=1, answer_when_covered=False,
                                      answer_from_observations=False))
    assert one["grounding"]["action"] == "fallback" and one["grounding"]["problems"] == ["language"]
    english = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("machine_status", {"machine_id": "CNC-003"})]),
                                           "done"], synthesis="CNC-003 is at 48.7 °C.")
    agent = ReActAgent(english, plant_tools(), abilities=SMALL_NATIVE,
                       settings=AgentSettings(grounding="enforce", grounding_min_facts=1, answer_when_covered=False,
                                              answer_from_observations=False))
    kept = [e async for e in agent.astream_events("CNC-003 status")][-1].data
    assert kept["grounding"]["action"] == "kept" and kept["answer"] == "CNC-003 is at 48.7 °C."  # one fact is enough


def grounding_agent(synthesis, mode: str, **settings: object) -> tuple[ReActAgent, ScriptedChatModel]:
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("machine_status", {"machine_id": "CNC-003"})]),
                                         "CNC-003 is in warning."], synthesis=synthesis)
    settings = {"answer_when_covered": False, "answer_from_observations": False, **settings}
    return ReActAgent(model, plant_tools(), abilities=SMALL_NATIVE, settings=AgentSettings(grounding=mode, **settings)), model


async def test_report_mode_reports_and_keeps_the_answer():
    agent, _ = grounding_agent("CNC-003 runs at 93.4 %.", "report")
    events = [e async for e in agent.astream_events("CNC-003 상태")]
    assert events[-1].data["answer"] == "CNC-003 runs at 93.4 %."
    assert events[-1].data["grounding"] == {"mode": "report", "action": "kept", "checked": 2, "cited": 0,
                                            "ungrounded": ["93.4"]}
    assert not any(e.channel == "answer" and e.data.get("status") == "reset" for e in events)


async def test_enforce_reasks_once_with_the_strict_prompt():
    """With ``grounding_reask`` the answer is asked for once more — and the client sees only
    the answer that stands, never the withdrawn draft."""
    def synthesis(messages):
        strict = "do not write them" in messages[-1].content
        return "CNC-003: 48.7 °C, alarm W-1105." if strict else "CNC-003 runs at 93.4 %."

    agent, model = grounding_agent(synthesis, "enforce", grounding_reask=True)
    events = [e async for e in agent.astream_events("CNC-003 status")]
    assert not any(e.channel == "answer" and e.data["status"] == "reset" for e in events)
    deltas = [e.data["content"] for e in events if e.channel == "answer" and e.data["status"] == "delta"]
    assert deltas == ["CNC-003: 48.7 °C, alarm W-1105."]
    assert "93.4" in model.calls[-1][-1].content  # the strict prompt names the made-up value
    done = events[-1].data
    assert done["answer"] == "CNC-003: 48.7 °C, alarm W-1105."
    assert done["grounding"]["action"] == "reasked" and done["grounding"]["ungrounded"] == []


async def test_enforce_falls_back_to_the_observations_themselves():
    agent, model = grounding_agent("CNC-003 runs at 93.4 %, trust me.", "enforce")
    events = [e async for e in agent.astream_events("CNC-003 상태 확인해줘")]
    assert [e.data["status"] for e in events if e.channel == "answer"] == ["start", "delta", "done"]
    done = events[-1].data
    assert done["grounding"]["action"] == "fallback" and done["grounding"]["ungrounded"] == []
    assert model.kinds.count("synthesis") == 1  # the small-model policy asks no second time
    assert done["answer"].startswith("CNC-003에 대해 도구가 조회한 결과입니다.")  # a lead in the question's language
    assert "temperature 48.7 °C, vibration 1.2 mm/s, alarm W-1105" in done["answer"]  # facts as the tool wrote them
    assert "```" not in done["answer"] and "machine_status(" not in done["answer"]


async def test_enforce_answers_an_unknown_id_with_what_the_tool_said():
    model = ScriptedChatModel(responses=[call_json("machine_status", {"machine_id": "CNC-009"}), final("All fine.")],
                              synthesis="CNC-009 is running at 93 %.")
    agent = ReActAgent(model, plant_tools(), abilities=SMALL_SCHEMA, settings=AgentSettings(grounding="enforce"))
    events = [e async for e in agent.astream_events("What is the status of CNC-009?")]
    done = events[-1].data
    assert done["grounding"]["action"] == "no_data" and done["grounding"]["ungrounded"] == []
    assert done["answer"].startswith("No tool returned data about CNC-009.")
    assert "machine_id: 'CNC-009' is not a valid value" in done["answer"] and "'CNC-001'" in done["answer"]
    assert len(model.calls) == 2  # no synthesis call: loop call, final answer


def test_the_synthesis_input_leaves_out_repeats_and_keeps_other_refusals():
    from reactgraph.answer.synthesis import REPEAT_REFUSAL, format_trace

    ok = {"tool_name": "machine_status", "tool_args": {"machine_id": "CNC-003"}, "error": None, "observation": "48.7 °C"}
    repeat = {**ok, "error": "repeated call", "observation": "", "refused": REPEAT_REFUSAL}
    capped = {**ok, "tool_name": "energy_report", "error": "tool call limit reached", "refused": "limit"}
    trace = format_trace([ok, repeat, capped], "")
    assert trace.count("machine_status") == 1 and "48.7 °C" in trace
    assert '- energy_report({"machine_id": "CNC-003"}): failed (tool call limit reached)' in trace


def test_observation_answer_without_results():
    failed = [{"tool_name": "x", "error": "boom", "observation": "Error: boom"}]
    assert observation_answer("What is the status?", failed) == \
        "No tool returned data that answers this question.\n\nWhat the tools said:\n- boom"
    assert observation_answer("상태?", []) == "도구에서 이 질문에 답할 데이터를 얻지 못했습니다."


async def test_synthesis_never_sees_a_step_summary():
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("ghost_tool", {})])], repeat_last=True)
    agent = ReActAgent(model, plant_tools(), abilities=SMALL_NATIVE, settings=AgentSettings(max_iterations=2, stall_detection=False,
                                                                                grounding="report"))
    [e async for e in agent.astream_events("q")]
    user = model.calls[-1][-1].content
    assert "Steps taken" not in user and "Draft answer" not in user
    assert "Failed attempts (no data):\n- ghost_tool({}): failed (unknown tool 'ghost_tool'" in user


async def test_a_looping_synthesis_is_cut_and_then_checked():
    looping = "CNC-003 status:\n" + "".join(f"{i}. get_status(CNC-003): failed, repeated call\n" for i in range(1, 40))
    agent, model = grounding_agent(looping, "report")
    events = [e async for e in agent.astream_events("CNC-003 상태")]
    answer = events[-1].data["answer"]
    assert answer.startswith("CNC-003 status:") and answer.count("repeated call") == 2
    assert len(model.calls) == 3  # two loop calls and one synthesis: the stream was cut, nothing more asked


def test_looping_tail_rules():
    assert looping_tail("CNC-003: " + "normal | " * 5)
    assert looping_tail("status: " + "ok, " * 12 + "o")  # the stream may stop mid-unit
    assert not looping_tail("CNC-003: " + "normal | " * 4)  # four times is not a loop yet
    assert not looping_tail("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")  # no letters
    assert not looping_tail("CNC-001 normal, CNC-002 warning, CNC-003 normal, CNC-004 alarm, PRS-001 normal")


@pytest.mark.parametrize(("synthesis", "start", "unit", "least", "most"), [
    # a loop inside one line
    ("CNC-003 is " + "normal | " * 60, "CNC-003 is normal | ", "normal", 3, 5),
    # SmolLM2's re-asked synthesis on the demo question: "[19] " line after line until the
    # output cap (84 lines), too short for the 12-character repeated-line rule
    ("The work log is:\n\n" + "[19] \n" * 80, "The work log is:", "[19]", 1, 5),
])
async def test_a_looping_synthesis_is_cut_where_it_starts_to_loop(synthesis, start, unit, least, most):
    agent, model = grounding_agent(synthesis, "report")
    events = [e async for e in agent.astream_events("CNC-003 상태")]
    answer = events[-1].data["answer"]
    assert answer.startswith(start) and least <= answer.count(unit) <= most
    assert len(model.calls) == 3  # two loop calls and one synthesis: the stream was cut


async def test_short_lines_that_repeat_apart_or_hold_no_letter_are_kept():
    table = "| a | b |\n|---|---|\n" + "| x | 1 |\n| y | 2 |\n" * 4 + "\n\n\n\n\n\n" + "---\n" * 6 + "done"
    async def line_by_line():
        for line in table.splitlines(keepends=True):
            yield line

    kept = [chunk async for chunk in until_repetition(line_by_line())]
    assert "".join(kept) == table


def test_a_json_tool_result_reads_as_rows_and_key_value_lines_in_the_observation_answer():
    """A tool that answers in JSON: an array of objects is a table headed by the objects' own
    keys, one object its ``key: value`` lines; no JSON punctuation reaches the reader."""
    from reactgraph.answer.grounding import observation_answer

    orders = [{"order": "615932", "status": "processing", "total": "59.00 EUR"},
              {"order": "615933", "status": "shipped", "total": "12.50 EUR"}]
    steps = [{"tool_name": "orders_of", "tool_args": {"email": "wang.lei@example.cn"}, "observation": json.dumps(orders)}]
    answer = observation_answer("wang.lei@example.cn の注文を見せてください。", steps)
    assert answer.splitlines()[0] == "wang.lei@example.cnについて、ツールの結果は次のとおりです。"
    assert "| order | status | total |" in answer and "| 615933 | shipped | 12.50 EUR |" in answer
    assert '{"' not in answer and "[{" not in answer

    steps[0]["observation"] = json.dumps(orders[:1])
    answer = observation_answer("¿Qué pedidos tiene wang.lei@example.cn?", steps)
    assert "- **status**: processing" in answer and "- **total**: 59.00 EUR" in answer
    assert '{"' not in answer
