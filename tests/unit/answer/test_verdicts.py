"""A yes/no question decided by the observations themselves (SPEC R13.1): a figure against
the limit a tool returned for it, a state line, a presence answered by "none" or a count of
0, a list that holds or leaves out the subject. The engine decides, in the question's
language over lines in any language, and asks no model; where nothing decides, the model's
constrained choice (or "the data does not say") answers."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import StructuredTool

from reactgraph import ReActAgent
from reactgraph.answer.verdicts import affirmed, decided_verdict
from reactgraph.testing import ScriptedChatModel
from tests.helpers import SMALL_SCHEMA, call_json

PUMP = "Pump: P-2\nState: stopped\nPressure: 4.2 bar\nOpen faults: none"
PRESSURE = "P-2 | pressure 6.8 bar vs max 6.0 bar | station North"
READINGS = ("Readings for P-2, 2026-03-01 to 2026-03-03; limits: pressure 6.0 bar, flow 120 m3/h\n"
            "2026-03-01 | pressure 5.1 bar\n2026-03-02 | pressure 5.4 bar\n2026-03-03 | pressure 5.6 bar")
STOCK = "Item: SKU-12\nQuantity on hand: 14 units\nMinimum stock: 20 units"
OVERDUE = ("2 pump(s) overdue for service:\nP-1 | last service 2025-10-01 | OVERDUE by 12 day(s)\n"
           "P-3 | last service 2025-09-20 | OVERDUE by 30 day(s)")
FAULTS = "3 active fault(s):\nF-12 | P-2 | low suction\nF-14 | P-5 | seal leak\nF-15 | P-1 | motor hot"
SHORTAGES = "2 item(s) at or below minimum:\nSKU-3 | Widget | stock 0 | OUT OF STOCK\nSKU-9 | Gasket | stock 2 | LOW"


def step(observation: str, **args: str) -> dict:
    return {"tool_name": "lookup", "tool_args": args, "observation": observation}


FLEET = "P-2 | Pump 2 | running | pressure 5.1 bar\nP-4 | Pump 4 | idle | pressure 0.0 bar"


@pytest.mark.parametrize("question, verdict, line", [
    ("Ist die Pumpe P-2 gerade gestoppt?", "no", FLEET.splitlines()[0]),  # a row's state cell: running
    ("P-4 펌프가 가동 중이야?", "no", FLEET.splitlines()[1]),
    ("Is P-4 stopped?", "yes", FLEET.splitlines()[1]),  # idle is a word of stopped
])
def test_a_table_rows_state_cell_decides_a_state_question(question, verdict, line):
    assert decided_verdict(question, [step(FLEET)]) == (verdict, [line])


@pytest.mark.parametrize("question, observation, args, verdict, facts", [
    # a figure and its limit on one line
    ("Is pump P-2 above its pressure limit?", PRESSURE, {}, "yes", [PRESSURE]),
    ("Liegt der Druck von P-2 über dem Grenzwert?", PRESSURE, {}, "yes", [PRESSURE]),
    ("P-2 압력이 최대치를 넘었어?", PRESSURE, {}, "yes", [PRESSURE]),
    ("Is pump P-2 below its pressure limit?", PRESSURE, {}, "no", [PRESSURE]),
    # the limit in a heading, the figures on the lines below it (same unit, the latest one)
    ("Is P-2's pressure over the limit?", READINGS, {"pump_id": "P-2"}, "no",
     ["2026-03-03 | pressure 5.6 bar", READINGS.splitlines()[0]]),
    ("P-2 압력이 한계치를 초과했어?", READINGS, {"pump_id": "P-2"}, "no",
     ["2026-03-03 | pressure 5.6 bar", READINGS.splitlines()[0]]),
    # a warehouse: below a minimum, in English and Spanish
    ("Is SKU-12 below its minimum stock?", STOCK, {"item_id": "SKU-12"}, "yes",
     ["Quantity on hand: 14 units", "Minimum stock: 20 units"]),
    ("¿Está el stock de SKU-12 por debajo del mínimo?", STOCK, {"item_id": "SKU-12"}, "yes",
     ["Quantity on hand: 14 units", "Minimum stock: 20 units"]),
])
def test_a_comparison_is_decided_by_the_figure_and_the_limit_the_tool_returned(question, observation, args, verdict,
                                                                                facts):
    assert decided_verdict(question, [step(observation, **args)]) == (verdict, facts)


@pytest.mark.parametrize("question, verdict", [
    ("Is pump P-2 running?", "no"),
    ("P-2 펌프가 지금 가동 중이야?", "no"),
    ("Is pump P-2 stopped?", "yes"),
    ("¿Está detenida la bomba P-2?", "yes"),
    ("Est-ce que la pompe P-2 est arrêtée ?", "yes"),
    ("Läuft die Pumpe P-2?", "no"),
])
def test_a_state_question_is_decided_by_the_state_line_in_any_language(question, verdict):
    assert decided_verdict(question, [step(PUMP, pump_id="P-2")]) == (verdict, ["State: stopped"])


@pytest.mark.parametrize("question, observation, args, verdict, facts", [
    ("Does pump P-2 have any open faults?", PUMP, {"pump_id": "P-2"}, "no", ["Open faults: none"]),
    ("Are there any open faults at the North station?", "0 open fault(s) at station North.", {}, "no",
     ["0 open fault(s) at station North."]),
    ("북쪽 스테이션에 열린 고장이 있어?", "0 open fault(s) at station North.", {}, "no",
     ["0 open fault(s) at station North."]),
    ("¿Hay fallas abiertas en la estación Norte?", "No open faults at station North.", {}, "no",
     ["No open faults at station North."]),
    ("Are any items out of stock?", SHORTAGES, {}, "yes", [SHORTAGES.splitlines()[1]]),
])
def test_a_presence_question_is_decided_by_none_a_count_of_zero_or_the_line_asked_for(question, observation, args,
                                                                                       verdict, facts):
    assert decided_verdict(question, [step(observation, **args)]) == (verdict, facts)


@pytest.mark.parametrize("question, observation, verdict, facts", [
    ("Is pump P-3 overdue for service?", OVERDUE, "yes", [OVERDUE.splitlines()[2]]),
    ("P-3 정비 기한이 지났어?", OVERDUE, "yes", [OVERDUE.splitlines()[2]]),
    ("Is pump P-4 overdue for service?", OVERDUE, "no", [OVERDUE.splitlines()[0]]),
    ("P-4 정비 기한이 지났어?", OVERDUE, "no", [OVERDUE.splitlines()[0]]),
    ("Is fault F-12 still active?", FAULTS, "yes", FAULTS.splitlines()[:2]),
    ("고장 F-12가 아직 활성 상태야?", FAULTS, "yes", FAULTS.splitlines()[:2]),
])
def test_a_list_decides_whether_the_subject_is_in_the_asked_state(question, observation, verdict, facts):
    """A list made for no particular thing: the subject's line in it, under a heading naming
    the state, says yes; a list of others in that state, without the subject, says no."""
    assert decided_verdict(question, [step(observation)]) == (verdict, facts)


@pytest.mark.parametrize("question, observation, args", [
    ("Is pump P-2 insured?", PUMP, {"pump_id": "P-2"}),
    ("Is pump P-2 above its pressure limit?", PUMP, {"pump_id": "P-2"}),  # no limit was returned
    ("P-2 펌프가 보험에 들어 있어?", PUMP, {"pump_id": "P-2"}),
    ("Is SKU-12 stocked in Berlin?", STOCK, {"item_id": "SKU-12"}),
    ("Is pump P-2 overdue for service?", PUMP, {"pump_id": "P-2"}),  # stopped says nothing of a schedule
    ("P-2 정비 기한이 지났어?", PUMP, {"pump_id": "P-2"}),
])
def test_what_the_data_does_not_decide_is_left_to_the_choice(question, observation, args):
    assert decided_verdict(question, [step(observation, **args)]) is None
    assert decided_verdict(question, [{**step(observation, **args), "error": "timeout"}]) is None


PUMPS = ("P-1 | pressure 5.1 bar (max 6.0) | flow 90 m3/h (max 120)\n"
         "P-2 | pressure 6.8 bar (max 6.0) | flow 100 m3/h (max 120)\n"
         "Highest pressure relative to max: P-2 (113% of max)")


@pytest.mark.parametrize("question, verdict, line", [
    ("Is P-2's pressure above the max?", "yes", 1),
    ("Is the pressure of P-1 over its maximum?", "no", 0),
    ("Is the flow of P-2 above its max?", "no", 1),
    ("P-1 압력이 최대치를 넘었어?", "no", 0),  # both of P-1's figures are under their limits
])
def test_a_comparison_of_several_things_reads_the_subjects_own_line(question, verdict, line):
    """A call made for two pumps: the other pump's figures and the summary line (a share of
    the limit, no limit) decide nothing; a limit without a unit takes its figure's."""
    assert decided_verdict(question, [step(PUMPS, pump_ids=["P-1", "P-2"])]) == (verdict, [PUMPS.splitlines()[line]])
    # P-2's figures disagree (pressure over, flow under) and the question names neither in their words
    assert decided_verdict("Ist P-2 über dem Maximum?", [step(PUMPS, pump_ids=["P-1", "P-2"])]) is None


def test_a_value_asked_by_name_is_compared_with_the_line():
    order = "Order: ORD-7\nState: shipped\nCarrier: Northwind"
    assert decided_verdict("Is order ORD-7 shipped?", [step(order, order_id="ORD-7")]) == ("yes", ["State: shipped"])
    assert decided_verdict("Is ORD-7 in a delayed state?", [step(order, order_id="ORD-7")]) == ("no", ["State: shipped"])


def pump_tools() -> list[StructuredTool]:
    def pressure_check(pump_id: str) -> str:
        return PRESSURE

    def pump_status(pump_id: str) -> str:
        return PUMP

    tools = [StructuredTool.from_function(pressure_check, name="pressure_check",
                                          description="Pressure of one pump against its maximum."),
             StructuredTool.from_function(pump_status, name="pump_status",
                                          description="State, pressure and open faults of one pump.")]
    for topic in ("payroll", "parking", "canteen", "badge", "printer", "travel", "expense", "laptop"):
        tools.append(StructuredTool.from_function(lambda query="": "nothing", name=f"{topic}_info",
                                                  description=f"Office {topic} information."))
    return tools


@pytest.mark.parametrize("question, tool, lead", [
    ("Is pump P-2 above its pressure limit?", "pressure_check",
     "Yes. P-2 · pressure 6.8 bar vs max 6.0 bar · station North."),
    ("P-2 펌프가 지금 가동 중이야?", "pump_status", "아니요. 도구 결과에 따르면: State: stopped."),
])
async def test_a_decided_verdict_leads_the_answer_without_a_model_call(question, tool, lead):
    """The figure and the limit stand in the lead; the model is asked nothing after the loop
    (a choice scripted for it would say the opposite)."""
    model = ScriptedChatModel(responses=[call_json(tool, {"pump_id": "P-2"})],
                              by_kind={"synthesis": [json.dumps({"facts": ["Pump: P-2"], "verdict": "unknown"})]})
    agent = ReActAgent(model, pump_tools(), abilities=SMALL_SCHEMA)
    done = [event async for event in agent.astream_events(question)][-1].data
    assert done["answer"].splitlines()[0] == lead
    assert model.kinds == ["tool_loop"]
    assert done["grounding"]["ungrounded"] == []


def test_a_models_yes_to_a_question_in_another_script_needs_a_line_of_the_asked_meaning():
    """A Korean question over English lines cannot be checked word by word; when it asks a
    state or a comparison of the language table, a chosen line must state that meaning."""
    assert not affirmed("P-2 펌프가 지금 가동 중이야?", ["2026-03-01 | pressure 5.1 bar"])
    assert affirmed("P-2 펌프가 지금 가동 중이야?", ["Mode: running on the backup motor"])
    assert not affirmed("P-2 압력이 한계를 넘었어?", ["Pump: P-2", "Pressure: 4.2 bar"])
    assert affirmed("P-2 압력이 한계를 넘었어?", ["P-2 | pressure 6.8 bar | EXCEEDED"])
    assert affirmed("P-2 펌프 보험 들었어?", ["Insurer: Acme"])  # no meaning of the table: the model's word stands


async def test_a_yes_over_lines_that_do_not_say_it_becomes_the_data_does_not_say_in_the_questions_language():
    model = ScriptedChatModel(responses=[call_json("pump_status", {"pump_id": "P-2"})],
                              by_kind={"synthesis": [json.dumps({"facts": ["Pressure: 4.2 bar"], "verdict": "yes"})]})
    agent = ReActAgent(model, pump_tools(), abilities=SMALL_SCHEMA)
    done = [event async for event in agent.astream_events("P-2 압력이 최대치를 넘었어?")][-1].data
    assert done["answer"].splitlines()[0] == "데이터로는 알 수 없습니다."
    assert model.kinds == ["tool_loop", "synthesis"]


LOANS = ("2 loan(s) overdue:\nAB/101 | ines.moreau@biblio.example.fr | OVERDUE by 12 day(s)\n"
         "AB/103 | k.tanaka@biblio.example.jp | OVERDUE by 30 day(s)")


@pytest.mark.parametrize("question, verdict, facts", [
    ("Is loan AB/103 overdue?", "yes", [LOANS.splitlines()[2]]),
    ("¿Está vencido el préstamo AB/104?", "no", [LOANS.splitlines()[0]]),
    ("Is ines.moreau@biblio.example.fr overdue?", "yes", [LOANS.splitlines()[1]]),
    ("k.tanaka@biblio.example.jp の貸出は期限切れですか？", "yes", [LOANS.splitlines()[2]]),
])
def test_a_list_decides_for_a_subject_of_any_id_shape(question, verdict, facts):
    """The subject is whatever names one record (a code with a slash, an e-mail address), not
    one id shape: the same list rule decides for it."""
    assert decided_verdict(question, [step(LOANS)]) == (verdict, facts)
