"""Claims an answer ties to a record (SPEC R13.1): a figure or a state written next to one
record must come from that record's own lines, not another's; an answer that pins record B's
figure on record A is withdrawn under ``enforce``, and the observation answer that stands
instead keeps the engine's lead, so a yes/no question keeps its verdict."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import StructuredTool

from reactgraph import ModelAbilities, ReActAgent
from reactgraph.answer.claims import claim_problems, misattributed_claims, records_of
from reactgraph.testing import ScriptedChatModel

PUMPS = ("PU-7 | Pump 7 | stopped | flow 0.0 m3/h | pressure 1.8 bar | last service 2026-02-11\n"
         "PU-9 | Pump 9 | running | flow 42.5 m3/h | pressure 3.4 bar | last service 2026-01-30")
STATIONS = json.dumps([
    {"station": "WS-101", "city": "Lyon", "temperature": 21.4, "condition": "sunny"},
    {"station": "WS-202", "city": "Oslo", "temperature": -3.5, "condition": "snow"},
])
TICKET = "Ticket: TCK-4412\nState: open\nPriority: high\nOpened: 2026-03-05\nLinked: TCK-4390 (closed 2026-02-27)"


def steps(observation: str, **args) -> list[dict]:
    return [{"tool": "lookup", "tool_args": args, "observation": observation}]


@pytest.mark.parametrize("answer", [
    "PU-7 delivers 42.5 m3/h at 3.4 bar.",
    "PU-9 has 0.0 flow, PU-7 runs at 42.5 m3/h.",  # each clause: its own record
    "Die Pumpe PU-7 fördert 42,5 m3/h.",  # a decimal comma reads as the same figure
    "PU-7 のポンプは 42.5 m3/h で稼働しています。",
    "PU-7 펌프의 유량은 42.5 m3/h입니다.",
])
def test_another_records_figure_tied_to_a_record_is_misattributed(answer):
    claims = misattributed_claims(answer, steps(PUMPS, site="north"), "How are the pumps?")
    assert claims and claims[0].record == "PU-7" and claims[0].owners == ("PU-9",)
    assert claim_problems(answer, steps(PUMPS, site="north"), "How are the pumps?") == ["misattributed"]


@pytest.mark.parametrize("answer", [
    "PU-7 is stopped (flow 0.0 m3/h); PU-9 delivers 42.5 m3/h at 3.4 bar.",
    "PU-9 runs at 42.5 m3/h, while PU-7 is stopped.",
    "Flow of 42.5 m3/h on PU-9. PU-7 was last serviced on 2026-02-11.",
    "Die Pumpe PU-9 fördert 42,5 m3/h, PU-7 steht still.",
    "PU-9 펌프는 42.5 m3/h로 가동 중이고, PU-7은 정지 상태입니다.",
    "PU-7 has 44.3 m3/h less flow than PU-9.",  # a derived figure no record holds is grounding's
])
def test_each_records_own_figures_pass(answer):
    assert misattributed_claims(answer, steps(PUMPS, site="north"), "How are the pumps?") == []


@pytest.mark.parametrize("answer, record, claim", [
    ("PU-7 is running.", "PU-7", "running"),  # the tool's own word cell of another record
    ("PU-9 and PU-7 are running.", "PU-7", "running"),  # listed with one it is true of
    ("La bomba PU-7 está funcionando.", "PU-7", "running"),  # the state in another language
    ("PU-9は停止しています。", "PU-9", "stopped"),
    ("PU-9는 정지 상태입니다.", "PU-9", "stopped"),
])
def test_another_records_state_tied_to_a_record_is_misattributed(answer, record, claim):
    claims = misattributed_claims(answer, steps(PUMPS, site="north"), "Which pumps run?")
    assert [(found.record, found.claim) for found in claims][:1] == [(record, claim)]


def test_json_rows_are_records_too():
    observation = steps(STATIONS, region="europe")
    assert set(records_of(observation)) == {"WS-101", "WS-202"}
    assert misattributed_claims("WS-101 (Lyon) reports 21.4 °C and sunny weather.", observation, "Weather?") == []
    wrong = misattributed_claims("In Lyon, WS-101, there is snow at 3.5 °C.", observation, "Weather?")
    assert {(claim.record, claim.claim) for claim in wrong} == {("WS-101", "3.5"), ("WS-101", "snow")}


def test_the_lines_under_a_record_are_its_own_and_a_record_it_links_shares_them():
    observation = steps(TICKET, ticket_id="TCK-4412")
    records = records_of(observation)
    assert "2026-03-05" in records["TCK-4412"].values and "2026-02-27" in records["TCK-4390"].values
    assert misattributed_claims("TCK-4412 is open since 2026-03-05 (high priority).", observation, "TCK-4412?") == []
    # the linked ticket's own line holds its close date; the subject's lines hold it too (it is listed there)
    assert misattributed_claims("TCK-4390 was closed on 2026-02-27.", observation, "TCK-4412?") == []
    assert [claim.claim for claim in misattributed_claims("TCK-4390 was opened on 2026-03-05.", observation,
                                                          "TCK-4412?")] == ["2026-03-05"]


def test_a_heading_line_passes_its_record_to_the_lines_below():
    answer = "**PU-9**\n- flow 42.5 m3/h\n- pressure 3.4 bar\n\n**PU-7**\n- pressure 3.4 bar"
    claims = misattributed_claims(answer, steps(PUMPS, site="north"), "Pumps?")
    assert [(claim.record, claim.claim) for claim in claims] == [("PU-7", "3.4")]


def test_nothing_to_confuse_with_one_record_or_none_and_the_askers_figures_stand():
    assert misattributed_claims("TCK-4412 is open.", steps("State: open\nPriority: high", ticket_id="TCK-4412"),
                                "TCK-4412?") == []
    assert misattributed_claims("PU-7 is 42.5.", [{"tool": "lookup", "tool_args": {}, "observation": PUMPS,
                                                   "error": "timeout"}], "Pumps?") == []
    # a figure the question wrote is the asker's
    assert misattributed_claims("PU-7 is below 42.5 m3/h.", steps(PUMPS, site="north"),
                                "Is PU-7 below 42.5 m3/h?") == []


# the check under enforce, and the lead of the answer that stands instead -----------------------

WRITER = ModelAbilities(json_mode=True, schema_output="json_object_schema", small=True, writes_answers=True)


def pump_tools() -> list[StructuredTool]:
    def pump_overview(site: str) -> str:
        return PUMPS

    def site_contacts(site: str) -> str:
        return "Contact: duty desk"

    return [StructuredTool.from_function(pump_overview, name="pump_overview",
                                         description="Every pump of a site: state, flow, pressure, last service."),
            StructuredTool.from_function(site_contacts, name="site_contacts", description="Who to call at a site.")]


def call(name: str, args: dict) -> str:
    return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": name, "tool_args": args})


@pytest.mark.parametrize("question, written, lead", [
    ("Is pump PU-7 stopped at site north?", "No, PU-7 is running at 42.5 m3/h.", "Yes. PU-7 · Pump 7 · stopped"),
    ("북쪽 사이트 PU-7 펌프가 정지했어?", "아니요, PU-7은 42.5 m3/h로 가동 중입니다.", "네. 도구 결과에 따르면: PU-7 · Pump 7 · stopped"),
])
async def test_a_misattributing_answer_is_withdrawn_and_the_fallback_keeps_the_verdict(question, written, lead):
    model = ScriptedChatModel(responses=[call("pump_overview", {"site": "north"})], synthesis=written)
    events = [event async for event in ReActAgent(model, pump_tools(), abilities=WRITER).astream_events(question)]
    done = events[-1].data
    assert done["grounding"]["action"] == "fallback" and "misattributed" in done["grounding"]["problems"]
    assert done["answer"].startswith(lead) and written not in done["answer"]
    assert "42.5 m3/h" in done["answer"]  # the observations still follow the lead


async def test_a_right_answer_of_two_records_is_kept():
    written = "Yes. PU-7 is stopped (0.0 m3/h); PU-9 runs at 42.5 m3/h."
    model = ScriptedChatModel(responses=[call("pump_overview", {"site": "north"})], synthesis=written)
    agent = ReActAgent(model, pump_tools(), abilities=WRITER)
    done = [event async for event in agent.astream_events("Is pump PU-7 stopped at site north?")][-1].data
    assert done["answer"] == written and done["grounding"]["action"] == "kept"


@pytest.mark.parametrize("answer, question", [
    ("PU-7 상태 확인해줘 Result: State: stopped", "PU-7 상태 확인해줘"),
    ("Is pump PU-7 stopped? Yes, it is stopped.", "Is pump PU-7 stopped?"),
    ("**¿Está parada la bomba PU-7?** Sí.", "¿Está parada la bomba PU-7?"),
])
def test_an_answer_that_opens_with_the_question_is_the_prompt_written_back(answer, question):
    from reactgraph.answer.fitness import answer_problems

    assert "prompt_echo" in answer_problems(answer, question)
    assert "prompt_echo" not in answer_problems("PU-7 is stopped.", question)


ITEMS = ("Items in aisle 4:\n"
         "SK-10 | Ceramic coffee mug | stock 12 | price 8.50 EUR\n"
         "SK-22 | Steel water bottle | stock 0 | price 19.90 EUR")


@pytest.mark.parametrize("answer, wrong", [
    ("The coffee mug costs 19.90 EUR.", ("SK-10", "19.90")),  # a row named by its name, less its first word
    ("Steel water bottle は 8.50 ユーロです。", ("SK-22", "8.50")),
    ("La Ceramic coffee mug coûte 8,50 EUR ; la Steel water bottle 19,90 EUR.", None),
    ("Ceramic coffee mug: 12 in stock, 8.50 EUR.", None),
])
def test_a_row_named_by_its_name_is_that_record(answer, wrong):
    claims = misattributed_claims(answer, steps(ITEMS, aisle="4"), "What do the items cost?")
    assert [(claim.record, claim.claim) for claim in claims][:1] == ([wrong] if wrong else [])


STOCK = ("3 item(s) at or below reorder level:\n"
         "SK-10 | Ceramic coffee mug | stock 0 | OUT OF STOCK\n"
         "SK-22 | Steel water bottle | stock 1 | LOW\n"
         "SK-31 | Bamboo lunch box | stock 2 | LOW")


@pytest.mark.parametrize("answer, wrong", [
    # a list's intro states what most listed records are not
    ("Yes, these items are out of stock:\n- SK-10\n- SK-22\n- SK-31", {"SK-22", "SK-31"}),
    ("Items out of stock:\n\n1. Steel water bottle\n2. Bamboo lunch box", {"SK-22", "SK-31"}),
    # an intro most of them match describes the list, loosely
    ("The items low on stock are:\n- Ceramic coffee mug (0)\n- Steel water bottle (1)\n- Bamboo lunch box (2)", set()),
    # items listed in a sentence that ends share no later statement
    ("Listed: SK-10, SK-22. SK-31 is low.", set()),
])
def test_a_lists_intro_is_a_claim_about_each_item(answer, wrong):
    claims = misattributed_claims(answer, steps(STOCK, aisle="4"), "Are any items out of stock?")
    assert {claim.record for claim in claims} == wrong


PARTS_OF = ("Spare parts for DV-3 (gateway):\n"
            "SK-10 | Ceramic coffee mug | stock 0 | LOW\n"
            "SK-22 | Steel water bottle | stock 4 | ok\n"
            "SK-31 | Bamboo lunch box | stock 8 | ok")


@pytest.mark.parametrize("answer, wrong", [
    # an intro that names its subject, over records run together on the next line
    ("DV-3's spare parts are low, namely:\nSK-10 (Ceramic coffee mug) | SK-22 (Steel water bottle) | SK-31",
     {"SK-22", "SK-31"}),
    ("DV-3 の部品は low です：\nSK-10、SK-22、SK-31", {"SK-22", "SK-31"}),
    ("DV-3's spare parts:\nSK-10 (LOW) | SK-22 (ok) | SK-31 (ok)", set()),
    ("DV-3's low spare part:\n- SK-10 (Ceramic coffee mug)", set()),
    # the intro is the line's last sentence: the state before it is its subject's
    ("DV-3 is low on parts. Its spare parts are:\n- SK-10 (stock 0)\n- SK-22 (stock 4)\n- SK-31 (stock 8)", set()),
    # the tools' own title line is no intro of the answer's
    ("Spare parts for DV-3 (gateway):\n- SK-10 · Ceramic coffee mug · stock 0 · LOW\n- SK-22 · stock 4 · ok", set()),
])
def test_an_intro_naming_its_subject_is_a_claim_about_the_records_listed_under_it(answer, wrong):
    claims = misattributed_claims(answer, steps(PARTS_OF, device="DV-3"), "Are DV-3's spare parts low?")
    assert {claim.record for claim in claims} == wrong


def test_a_line_copied_from_the_tools_output_is_no_claim():
    observation = "Alert: AL-17 (minor)\nDevice: DV-3 (gateway)\nRaised: 2026-04-02 09:30"
    assert misattributed_claims("Alert AL-17 on DV-3.\nDevice: DV-3 (gateway)\nRaised: 2026-04-02 09:30",
                                steps(observation, alert_id="AL-17"), "Explain AL-17") == []


async def test_the_dag_withdraws_a_misattributing_answer_and_keeps_the_verdict():
    from reactgraph import AgentSettings, DAGAgent, ModelRegistry
    from tests.unit.dag.test_dag import kind, plan, step, verdict

    def reply(messages):
        role = kind(messages)
        if role == "planner":
            return plan(step("a", "look up the pumps of site north"))
        if role == "analyzer":
            return verdict(True, 1.0, "PU-7 is stopped.")
        if role == "step:a" and not any("PU-9 |" in str(message.content) for message in messages):
            return call("pump_overview", {"site": "north"})
        return json.dumps({"type": "final_answer", "reasoning": "", "answer": "Done."})

    written = "No, PU-7 is running at 42.5 m3/h."
    model = ScriptedChatModel(responses=[reply], repeat_last=True, synthesis=written)
    agent = DAGAgent(ModelRegistry(model, abilities=WRITER), pump_tools(),
                     settings=AgentSettings(max_iterations=3, tool_timeout=1))
    done = [event async for event in agent.astream_events("Is pump PU-7 stopped at site north?")][-1].data
    # the other verdict than the lines decide, too (reactgraph.answer.written)
    assert done["grounding"]["action"] == "fallback" and done["grounding"]["problems"] == ["misattributed", "verdict"]
    assert done["answer"].startswith("Yes. PU-7 · Pump 7 · stopped") and written not in done["answer"]


TREND = ("Boiler BL-2 readings, 2026-05-01 to 2026-05-03; limits: pressure 12.0 bar, temperature 95.0°C\n"
         "2026-05-01 | pressure 10.4 bar | temperature 81.3°C\n"
         "2026-05-03 | pressure 6.2 bar | temperature 40.8°C")


@pytest.mark.parametrize("answer, wrong", [
    ("BL-2's temperature dropped from 95.0°C to 40.8°C.", "95.0"),  # the limit passed off as a reading
    ("Die Temperatur von BL-2 fiel von 95,0 °C auf 40,8 °C.", "95,0"),
    ("BL-2 の温度は 95.0°C から 40.8°C に下がりました。", "95.0"),
    ("BL-2's temperature fell from 81.3°C to 40.8°C, well under its 95.0°C limit.", None),
    ("BL-2 의 온도는 81.3°C에서 40.8°C로 내려갔고, 한계는 95.0°C입니다.", None),
    ("Limits: pressure 12.0 bar, temperature 95.0°C.", None),  # a list after a limit word, past its commas
])
def test_a_figure_the_tools_give_only_as_a_limit_is_no_reading(answer, wrong):
    claims = misattributed_claims(answer, steps(TREND, boiler_id="BL-2"), "How is boiler BL-2?")
    assert [claim.claim for claim in claims] == ([wrong] if wrong else [])
