"""The scoring rules of bench/answer_quality.py, on hand-made traces (no model).

The bench is the measure; these tests keep its rules from changing silently.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from reactgraph.demo.factory import build_factory_hub
from tests.helpers import REPO

_PATH = REPO / "bench" / "answer_quality.py"
_SPEC = importlib.util.spec_from_file_location("bench_answer_quality", _PATH)
aq = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = aq
_SPEC.loader.exec_module(aq)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    return {tool.name: tool for tool in build_factory_hub(tmp_path_factory.mktemp("plant") / "factory.db")}


def _question(text: str) -> aq.Question:
    return next(q for q in aq.QUESTIONS if q.text == text)


def _call(hub, tool: str, **args) -> aq.Call:
    """A successful call whose observation is the tool's real output."""
    return aq.Call(tool, args, str(hub[tool].invoke(args)))


def test_the_question_set_is_big_enough_and_covers_every_kind(hub):
    assert len(aq.QUESTIONS) >= 30
    assert {q.kind for q in aq.QUESTIONS} == {"tool", "unknown_id", "no_tool"}
    assert any(any("\uac00" <= ch <= "\ud7a3" for ch in q.text) for q in aq.QUESTIONS)  # Korean ones
    for q in aq.QUESTIONS:  # every expected call names a hub tool; tool questions have ground truth with facts
        assert all(e.tool in hub for plan in q.plans for e in plan)
        if q.kind == "tool":
            assert aq.key_facts(aq.ground_truth(q, hub), q.text, given=aq.DEMO_SYSTEM_PROMPT)


def test_numbers_are_normalized_and_list_numbering_ids_and_dates_are_not_numbers():
    text = "1. CNC-003 at 72.30 %\n2) vibration 1,234.50 mm/s on 2026-01-10, alarm W-1105, +0.85"
    assert aq.extract_numbers(text) == {"72.3", "1234.5", "0.85"}
    assert aq.extract_ids("CNC-003의 알람 W-1105, cnc003, WO-260031, P-1001, QI-A-0123") == {
        "CNC-003", "W-1105", "WO-260031", "P-1001", "QI-A-0123"}
    assert aq.extract_dates(text) == {"2026-01-10"}


def test_a_fabricated_number_or_id_is_ungrounded_and_trace_numbers_pass():
    sources = ["CNC-003 상태 확인해줘", aq.DEMO_SYSTEM_PROMPT,
               "Utilization: 72.3%\nTemperature: 48.7°C\nVibration: 1.2 mm/s\nLast inspection: 2026-01-10"]
    assert aq.ungrounded("CNC-003: utilization 72.30%, 48.7 °C, vibration 1.2 mm/s, inspected 2026-01-10.", sources) == []
    assert aq.ungrounded("1. Utilization is about 72%\n2. Last inspected 1월 10일", sources) == []
    assert aq.ungrounded("CNC-003 runs at 91.5% with alarm E-9999 since 2026-02-30.", sources) == [
        "date:2026-02-30", "id:E-9999", "num:91.5"]
    assert aq.ungrounded("Temperature 48.8°C", sources) == ["num:48.8"]  # a near miss is not the trace's number
    assert aq.ungrounded("Vibration about 1 mm/s", ["Vibration: 1.2 mm/s"]) == ["num:1"]  # rounding off by > 1 %


def test_grounded_needs_two_facts_of_the_right_observation_one_of_them_hard(hub):
    q = _question("CNC-003 상태 확인해줘")
    truth = aq.ground_truth(q, hub)
    calls = [_call(hub, "get_equipment_status", equipment_id="CNC-003")]
    good = aq.score_run(q, calls, "CNC-003은 **경고** 상태입니다. 진동 1.2 mm/s, 알람 W-1105.", truth, hub)
    assert good.grounded and good.right_tool and good.first_call and not good.ungrounded
    assert {"word:warning", "num:1.2", "id:W-1105"} <= set(good.facts_found)
    assert not aq.score_run(q, calls, "CNC-003 상태를 확인했습니다.", truth, hub).grounded  # only the question's id
    assert not aq.score_run(q, calls, "CNC-003 is in warning, alarm active.", truth, hub).grounded  # words only
    assert not aq.score_run(q, calls, "", truth, hub).grounded


def test_first_call_and_right_tool_rules(hub):
    q = _question("CNC-003 상태 확인해줘")
    truth = aq.ground_truth(q, hub)
    late = [_call(hub, "list_equipment"), _call(hub, "get_equipment_status", equipment_id="CNC-003")]
    score = aq.score_run(q, late, "", truth, hub)
    assert score.right_tool and not score.first_call
    wrong_id = [_call(hub, "get_equipment_status", equipment_id="CNC-001")]
    score = aq.score_run(q, wrong_id, "", truth, hub)
    assert not score.right_tool and not score.first_call
    loose = [aq.Call("get_equipment_status", {"equipment_id": "cnc 003"}, "")]  # read as the tool reads it
    assert aq.score_run(q, loose, "", truth, hub).first_call


def test_a_comparison_is_right_with_compare_or_with_one_status_call_per_machine(hub):
    q = _question("Compare CNC-001 and CNC-003")
    truth = aq.ground_truth(q, hub)
    both = [aq.Call("compare_equipment", {"equipment_ids": ["CNC-003", "CNC-001", "CNC-002"]}, "")]
    assert aq.score_run(q, both, "", truth, hub).right_tool
    one = [aq.Call("compare_equipment", {"equipment_ids": ["CNC-003", "CNC-002"]}, "")]
    assert not aq.score_run(q, one, "", truth, hub).right_tool
    statuses = [aq.Call("get_equipment_status", {"equipment_id": "CNC-001"}, ""),
                aq.Call("get_equipment_status", {"equipment_id": "CNC-003"}, "")]
    score = aq.score_run(q, statuses, "", truth, hub)
    assert score.right_tool and score.first_call
    assert not aq.score_run(q, statuses[:1], "", truth, hub).right_tool


def test_unknown_id_rules(hub):
    q = _question("What is the status of CNC-009?")
    truth = aq.ground_truth(q, hub)
    none = aq.score_run(q, [], "There is no machine CNC-009 in the plant.", truth, hub)
    assert none.right_tool and none.first_call and none.grounded
    asked = [aq.Call("get_equipment_status", {"equipment_id": "CNC-009"}, "", error=truth)]
    score = aq.score_run(q, asked, "CNC-009 does not exist; valid ids include CNC-001 and CNC-003.", truth, hub)
    assert score.right_tool and score.first_call and score.grounded
    other = [_call(hub, "get_equipment_status", equipment_id="CNC-001")]
    score = aq.score_run(q, other, "CNC-009 is normal at 85.4% utilization.", truth, hub)
    assert not score.right_tool and not score.first_call and not score.grounded
    invented = aq.score_run(q, [], "CNC-009 is unknown; it ran at 55.5% yesterday.", truth, hub)
    assert not invented.grounded and invented.ungrounded == ["num:55.5"]


def test_no_tool_rules(hub):
    q = _question("Hello! What kinds of questions can you help me with?")
    score = aq.score_run(q, [], "I can look up machine status, alarms, maintenance and more.", "", hub)
    assert score.right_tool and score.first_call and score.grounded
    called = aq.score_run(q, [_call(hub, "list_active_alarms")], "Hello!", "", hub)
    assert not called.right_tool and not called.first_call and called.grounded
    assert not aq.score_run(q, [], "There are 7 machines.", "", hub).grounded


def test_ended_by_model_counts_every_answer_of_the_model_and_not_the_cap_or_errors():
    assert aq.ended_by_model("final_answer") and aq.ended_by_model("raw_content") and aq.ended_by_model("stalled")
    for reason in ("max_iterations", "model_error", None, "error:GraphRecursionError"):
        assert not aq.ended_by_model(reason)


def test_table_has_ratios_vs_create_agent_and_n_a_for_a_zero_base():
    rows = [aq.RowSummary("json", "json"), aq.RowSummary("create_agent", "-")]
    score = aq.Score(True, True, True, [], [], [])
    rows[0].add(aq.RunRecord("json", "q", "tool", [], "a", "final_answer", 3, 3, 10.0, score=score))
    rows[1].add(aq.RunRecord("create_agent", "q", "tool", [], "", "error:GraphRecursionError", 13, None, 5.0,
                             score=aq.Score(False, True, False, [], [], [])))
    text = aq.table(rows)
    assert ("| json | json | 1 | 100% (1) | 100% (1) | 100% (1) | 100% (1) | 100% (1) | 100% (1) | 100% (1) | 0 | 0 "
            "| 3.0 | 3 | 10.0 | 10.0 |") in text
    assert "| json | n/a | 1.00x | n/a | 1.00x | n/a | 1.00x | 1.00x | 0.23x | 2.00x | 2.00x |" in text


def test_answers_are_scored_for_shape_language_and_tool_free_figures():
    """'s columns: a code fence or a line twice is not a clean answer; a Korean
    question wants a Korean first line; an answer to a data question with no tool call is
    counted."""
    assert aq.clean_answer("**CNC-003**: warning\n- vibration 1.2 mm/s")
    assert not aq.clean_answer("Here:\n```\nState: warning\n```")
    assert not aq.clean_answer("The answer is: warning.\nThe answer is: warning.")
    assert not aq.clean_answer("   ")
    assert aq.lead_in_language("CNC-003 상태 확인해줘", "CNC-003은 경고 상태입니다.\n- 1.2 mm/s")
    assert not aq.lead_in_language("CNC-003 상태 확인해줘", "CNC-003 is in warning.")
    assert aq.lead_in_language("Status of CNC-003?", "CNC-003 is in warning.")
    question = aq.QUESTIONS[0]
    made_up = aq.score_run(question, [], "CNC-003: normal, 22 °C", "State: warning", {})
    assert made_up.tool_free_answer and not made_up.lead_language


def test_the_multi_part_and_yes_no_sections_are_big_enough_and_in_english_and_korean(hub):
    for section, least in (("multi", 12), ("yesno", 8)):
        questions = aq.SECTIONS[section]
        assert len(questions) >= least and all(q.section == section for q in questions)
        assert {bool(aq._KOREAN.search(q.text)) for q in questions} == {True, False}
        assert all(e.tool in hub for q in questions for plan in q.plans for e in plan)
    verdicts = {aq.expected_verdict(q, aq.ground_truth(q, hub)) for q in aq.YESNO_QUESTIONS}
    assert verdicts == {"yes", "no"}  # both answers occur, so always saying one cannot pass


def test_a_yes_no_verdict_comes_from_the_plant_data_and_is_read_from_the_lead_sentence(hub):
    hotter = next(q for q in aq.YESNO_QUESTIONS if q.text.startswith("Is CNC-003 vibrating"))
    truth = aq.ground_truth(hotter, hub)
    assert aq.expected_verdict(hotter, truth) == "yes"  # CNC-003's vibration line says EXCEEDED
    calls = [_call(hub, "check_threshold_violations")]
    right = aq.score_run(hotter, calls, "Yes. CNC-003 vibrates at 1.2 mm/s, over its 0.5 mm/s limit.", truth, hub)
    assert right.right_verdict and right.verdict == "yes"
    wrong = aq.score_run(hotter, calls, "No, CNC-003 is fine.\nYes it is 1.2 mm/s.", truth, hub)
    assert not wrong.right_verdict  # the lead decides, not a later line
    template = aq.score_run(hotter, calls, "Here is what the tools report about CNC-003.", truth, hub)
    assert template.lead_verdict == "" and not template.right_verdict
    stopped = next(q for q in aq.YESNO_QUESTIONS if q.text.startswith("CMP-002가"))
    status = aq.ground_truth(stopped, hub)
    assert aq.expected_verdict(stopped, status) == "no"
    korean = aq.score_run(stopped, [_call(hub, "get_equipment_status", equipment_id="CMP-002")],
                          "아니요, CMP-002는 정지 상태입니다 (알람 E-3301).", status, hub)
    assert korean.right_verdict
    english_lead = aq.score_run(stopped, [], "No, CMP-002 is stopped.", status, hub)
    assert english_lead.lead_verdict == ""  # a Korean question wants the verdict in Korean
    assert not aq.score_run(aq.QUESTIONS[0], [], "Yes.", "", hub).right_verdict  # not a yes/no question


def test_every_part_needs_its_call_and_a_fact_of_its_own(hub):
    q = next(q for q in aq.MULTI_QUESTIONS if q.text.startswith("What's wrong with air compressor"))
    truth = aq.ground_truth(q, hub)
    status = _call(hub, "get_equipment_status", equipment_id="CMP-002")
    parts = _call(hub, "find_parts_for_equipment", equipment_id="CMP-002")
    both = aq.score_run(q, [status, parts], "CMP-002 is stopped (alarm E-3301). Spare part P-7002 is LOW.", truth, hub)
    assert both.right_tool and both.parts == 2 and both.parts_answered == 2 and both.all_parts
    half = aq.score_run(q, [status], "CMP-002 is stopped (alarm E-3301).", truth, hub)
    assert not half.right_tool and half.parts_answered == 1 and not half.all_parts
    unsaid = aq.score_run(q, [status, parts], "CMP-002 is stopped (alarm E-3301).", truth, hub)
    assert unsaid.right_tool and unsaid.parts_answered == 1  # the parts were fetched but not told
    row = aq.RowSummary("json · multi", "json")
    row.add(aq.RunRecord("json · multi", q.text, "tool", [], "", "covered", 1, 1, 2.0, score=both))
    row.add(aq.RunRecord("json · multi", q.text, "tool", [], "", "covered", 1, 1, 2.0, score=half))
    assert "| 50% (1) | - |" in aq.table([row]) and row.rates()["all_parts"] == 0.5


def test_a_run_past_its_bound_is_a_timeout_record_not_the_end_of_the_bench():
    import asyncio

    async def slow():
        await asyncio.Event().wait()

    record = asyncio.run(aq.run_bounded(slow(), 0.01, "json", "q"))
    assert record.finish_reason == "timeout" and record.error.startswith("timeout") and not record.calls
    assert not aq.ended_by_model(record.finish_reason)
