"""Argument values read from the tools' own schemas (SPEC R13.1): which parts of a question are
values (formats, patterns, examples, enums), each one whole value; and the checks that use
that one notion — ranking, ``require_tool_data``, the unasked-value check, ``covered``,
grounding — on tools of other trades (a shop with SKUs like ``AB/100``, an e-mail directory,
a ticketing tool with six-digit numbers, devices by UUID), asked in several languages."""

from __future__ import annotations

import json
from typing import Literal
from uuid import UUID

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import AgentSettings, ReActAgent
from reactgraph.protocol.action_schema import offered_args_schema, tool_args_schema, value_schema
from reactgraph.answer.grounding import check_grounding, observation_answer
from reactgraph.core.language import detect_language, phrase
from reactgraph.nodes.llm_call import covered
from reactgraph.tools.ranking import ToolRanker, stem
from reactgraph.testing import ScriptedChatModel, tool_call
from reactgraph.tools.runner import holds_no_data
from reactgraph.tools.values import (
    ValueReader, description_examples, echoes_schema, find_dates, number_readings, value_tokens, written_in,
)
from tests.helpers import NATIVE, SMALL_NATIVE

STRICT = SMALL_NATIVE  # the strict safeguards
PERMISSIVE = NATIVE  # the permissive ones
DEVICE = "123e4567-e89b-12d3-a456-426614174000"

PRODUCTS = {"AB/100": "AB/100 | Desk lamp | 14 in stock | 29.90 EUR", "AB/101": "AB/101 | Floor lamp | 0 in stock | 89.00 EUR"}
PEOPLE = {"anna.mueller@example.de": "Anna Müller, purchasing, room 3.12, phone 4711"}
TICKETS = {104233: "Ticket 104233: printer jammed, opened 2026-03-05, state open"}


class ProductArgs(BaseModel):
    sku: str = Field(description="The product's SKU, like AB/123")


class PersonArgs(BaseModel):
    email: str = Field(description="The person's e-mail address", json_schema_extra={"format": "email"})


class TicketArgs(BaseModel):
    number: int = Field(description="Ticket number, e.g. 481516")
    since: str | None = Field(None, description="Only changes since this day", json_schema_extra={"format": "date"})


class DeviceArgs(BaseModel):
    device_id: UUID = Field(description="The device")


class OrderArgs(BaseModel):
    line: Literal["Line A", "Line B"] = Field(description="Packing line")
    priority: Literal["high", "low"] = Field(description="Order priority")


def _product(sku: str) -> str:
    return PRODUCTS.get(sku.upper(), f"No product {sku} found.")


def _person(email: str) -> str:
    return PEOPLE.get(email.lower(), f"Unknown e-mail address {email}.")


def _ticket(number: int, since: str | None = None) -> str:
    return TICKETS.get(number, f"Ticket {number} not found.")


def _device(device_id: UUID) -> str:
    return f"Device {device_id}: online, firmware 2.4.1"


def _orders(line: str, priority: str) -> str:
    return f"{line}, {priority}: orders 5512, 5513"


def shop_tools() -> list[StructuredTool]:
    return [
        StructuredTool.from_function(_product, name="get_product", description="Stock and price of one product.",
                                     args_schema=ProductArgs),
        StructuredTool.from_function(_person, name="find_person", description="A colleague's department and phone.",
                                     args_schema=PersonArgs),
        StructuredTool.from_function(_ticket, name="get_ticket", description="One support ticket and its state.",
                                     args_schema=TicketArgs),
        StructuredTool.from_function(_device, name="device_state", description="Whether a device is online.",
                                     args_schema=DeviceArgs),
        StructuredTool.from_function(_orders, name="open_orders", description="Open orders of a packing line.",
                                     args_schema=OrderArgs),
    ]


def reader() -> ValueReader:
    return ValueReader({tool.name: value_schema(tool) for tool in shop_tools()}, stem)


# values by schema -------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "values"), [
    ("ab/100 の在庫はありますか?", ["AB/100"]),  # Japanese; an example's shape, spelled as the example
    ("¿Cuánto cuesta el AB/100?", ["AB/100"]),
    ("Wer ist anna.mueller@example.de?", ["anna.mueller@example.de"]),
    ("Ticket 104233 seit 5. März 2026?", ["104233", "2026-03-05"]),
    ("工单 104233 从2026年3月5日以来的变化", ["104233", "2026-03-05"]),
    ("Le ticket 104233 depuis le 05/03/2026", ["104233", "2026-03-05"]),
    (f"Is device {DEVICE.upper()} online?", [DEVICE]),
    ("라인 B 주문", ["Line B"]),  # the enum's distinguishing word after a word in another script
    ("high priority orders on line a", ["high", "Line A"]),
    ("Quels sont les ordres 高 de la ligne A ?", []),  # "高" and "ligne A" are not matched: nothing is guessed
])
def test_each_value_is_one_whole_value_in_the_form_its_argument_takes(question, values):
    assert reader().named(question) == values


def test_a_name_written_in_another_alphabet_names_its_enum_value_by_transliteration():
    doctors = ValueReader({"free_slots": {"type": "object", "properties": {
        "doctor": {"type": "string", "enum": ["Okafor", "Santos", "Lindqvist"]}}}})
    assert doctors.named("Есть ли у доктора Окафор свободное время?") == ["Okafor"]
    assert doctors.named("Η γιατρός Σάντος έχει ελεύθερο ραντεβού;") == ["Santos"]
    assert doctors.named("Линдквист завтра?") == []  # "Lindkvist": spelled otherwise, not guessed
    assert doctors.named("高 priority") == []


def test_a_sku_with_a_slash_is_not_cut_to_its_digits_and_ranks_its_tool_first():
    found = reader().find("Está disponible AB/100?")
    assert [(item.text, item.value, item.identifier) for item in found] == [("AB/100", "AB/100", True)]
    ranker = ToolRanker(shop_tools())
    assert ranker.rank("AB/100 の在庫は?")[0][0] == "get_product"
    assert ranker.rank("anna.mueller@example.de の電話番号")[0][0] == "find_person"
    assert ranker.rank("工单 104233")[0][0] == "get_ticket"


def test_examples_patterns_and_formats_are_read_from_the_schema():
    assert description_examples("The SKU, like AB/123 or AB/124.") == ["AB/123", "AB/124"]
    assert description_examples("Day, e.g. 2024-01-31") == ["2024-01-31"]
    assert description_examples("A name like 'Berlin'") == []  # a word example says nothing of a shape
    patterned = ValueReader({"order": {"type": "object", "properties": {
        "ref": {"type": "string", "pattern": "^PO#[0-9]{4}$"}, "note": {"type": "string", "pattern": "^\\S+$"}}}})
    assert patterned.named("Bestellung PO#2231 und PO#22") == ["PO#2231"]  # a pattern any word fits is no shape
    quoted = ValueReader({"search": {"type": "object", "properties": {"text": {"type": "string"}}}})
    assert quoted.named("Suche nach „Müller & Söhne GmbH“ bitte") == ["Müller & Söhne GmbH"]


@pytest.mark.parametrize(("text", "iso"), [
    ("2026-03-05T10:00:00Z", "2026-03-05"), ("2026/3/5", "2026-03-05"), ("2026年3月5日", "2026-03-05"),
    ("5. März 2026", "2026-03-05"), ("5 de marzo de 2026", "2026-03-05"), ("March 5, 2026", "2026-03-05"),
    ("05.03.2026", "2026-03-05"), ("13/03/2026", "2026-03-13"), ("03/13/2026", "2026-03-13"), ("3月5日", "--03-05"),
])
def test_dates_in_the_texts_own_notation_become_iso(text, iso):
    assert [found for _, _, found in find_dates(text)] == [iso]


def test_numbers_have_every_reading_of_their_separators():
    assert number_readings("1.234,5") == ["1234.5"]
    assert number_readings("1,250") == ["1250", "1.25"]
    assert number_readings("1.250") == ["1.25", "1250"]
    assert number_readings("29,90") == ["29.9"]
    assert [token.value for token in value_tokens("AB/100 costs 29,90 € since 2026年3月5日")] == \
        ["AB/100", "29.9", "2026-03-05"]


def test_optional_arguments_are_offered_when_the_question_names_their_value():
    ticket = shop_tools()[2]
    named = reader().named("Änderungen an 104233 seit dem 5. März 2026")
    assert set(offered_args_schema(ticket, named, named_optionals_only=True)["properties"]) == {"number", "since"}
    assert set(offered_args_schema(ticket, ["104233"], named_optionals_only=True)["properties"]) == {"number"}


# nothing found, schema echoes -------------------------------------------------------------


@pytest.mark.parametrize(("observation", "empty"), [
    ("", True), ("[]", True), ("No product AB/999 found.", True), ("Unknown e-mail address x@y.de.", True),
    ("Ticket 999999 not found.", True), ("AB/100 | Desk lamp | 14 in stock", False),
    ("No orders were late between 2026-03-01 and 2026-03-05.", False),  # an absence found is data
])
def test_an_observation_that_only_says_nothing_was_found_holds_no_data(observation, empty):
    assert holds_no_data(observation) is empty


def test_a_nothing_found_result_does_not_cover_and_its_answer_says_so():
    miss = {"tool_name": "get_product", "tool_args": {"sku": "AB/999"}, "error": None,
            "observation": "No product AB/999 found."}
    hit = {**miss, "tool_args": {"sku": "AB/100"}, "observation": PRODUCTS["AB/100"]}
    assert not covered([miss], ("AB/999",))
    assert covered([hit], ("AB/100",))
    answer = observation_answer("¿Hay AB/999 en stock?", [miss])
    assert answer.startswith(phrase("no_data_about", "es", subject="AB/999")) and "No product AB/999 found." in answer
    assert phrase("report_lead", "es", subject="AB/999") not in answer


def test_a_call_passing_an_enum_value_the_question_did_not_give_answers_no_question():
    """Covered only by calls whose enum values the question named or someone wrote."""
    step = {"tool_name": "open_orders", "tool_args": {"line": "Line B", "priority": "high"}, "error": None,
            "observation": "Line B, high: orders 5512, 5513"}
    takes = reader().arguments
    values = {name: {value for argument in arguments for value in argument.enum} for name, arguments in takes.items()}
    named = tuple(reader().named("라인 B의 高 주문"))  # "高" is not read as "high"
    assert named == ("Line B",)
    assert covered([step], named, values.__getitem__)  # without ``answers``: the old rule
    agent = ReActAgent(ScriptedChatModel(responses=["unused"]), shop_tools(), abilities=STRICT)
    question = [HumanMessage("라인 B의 高 주문")]

    def answers(record: dict) -> bool:
        return agent.engine.answers_question(record, "라인 B의 高 주문", question)

    assert not covered([step], named, values.__getitem__, answers)
    earlier = [HumanMessage("Only high priority orders from now on"), AIMessage("OK"), *question]
    assert covered([step], named, values.__getitem__, lambda record: agent.engine.answers_question(
        record, "라인 B의 高 주문", earlier))  # the user wrote it in an earlier turn


def test_arguments_that_repeat_a_schema_are_recognised():
    schema = tool_args_schema(shop_tools()[0])
    assert echoes_schema({"type": "object", "properties": {"sku": {"type": "string"}}}, schema)
    assert echoes_schema({"sku": {"type": "string", "description": "The product's SKU"}}, schema)
    assert not echoes_schema({"sku": "AB/100"}, schema)


# the loop ---------------------------------------------------------------------------------


def _agent(responses, abilities=STRICT, **settings) -> tuple[ReActAgent, ScriptedChatModel]:
    model = ScriptedChatModel(responses=responses, synthesis="AB/100: 14 in stock.")
    return ReActAgent(model, shop_tools(), abilities=abilities,
                      settings=AgentSettings(tool_selection=False, **settings)), model


async def test_a_bare_answer_to_a_question_naming_a_value_is_sent_back_for_a_tool_call():
    """Native tool calling: "Yes" to a question naming a SKU is not the answer."""
    agent, model = _agent(["Yes", AIMessage("", tool_calls=[tool_call("get_product", {"sku": "AB/100"}, "a")]), "done"],
                          abilities=PERMISSIVE)
    result = await agent.run("Gibt es AB/100 noch?")
    assert [step.tool_args for step in result.steps] == [{"sku": "AB/100"}]
    assert any(isinstance(message, HumanMessage) for message in model.calls[1][-1:])  # asked for a tool call


async def test_an_invented_email_is_refused_under_strict_and_marked_under_permissive():
    invented = AIMessage("", tool_calls=[tool_call("find_person", {"email": "example@example.com"}, "a")])
    right = AIMessage("", tool_calls=[tool_call("find_person", {"email": "anna.mueller@example.de"}, "b")])
    strict, model = _agent([invented, right, "done"], answer_when_covered=False)
    result = await strict.run("Quel est le téléphone d'Anna Müller (anna.mueller@example.de) ?")
    first, second = result.steps
    assert first.error and "that email was not written by the user" in first.error
    assert "example@example.com" not in first.error  # a tool result that named it would make it written
    assert second.error is None and "phone 4711" in second.observation
    told = [m for m in model.calls[1] if isinstance(m, ToolMessage)][-1].content
    assert "was not written by the user" in told

    permissive, model = _agent([invented, "done"], abilities=PERMISSIVE)
    result = await permissive.run("Quel est le téléphone d'Anna ?")
    assert result.steps[0].error is None  # it ran
    told = [m for m in model.calls[1] if isinstance(m, ToolMessage)][-1].content
    assert "no one wrote 'example@example.com'" in told
    assert "no one wrote" not in result.steps[0].observation  # the record keeps the tool's own words


async def test_a_value_a_tool_returned_may_be_passed():
    listing = AIMessage("", tool_calls=[tool_call("get_ticket", {"number": 104233}, "a")])
    agent, _ = _agent([listing, "done"], answer_when_covered=False)
    result = await agent.run("チケット 104233 の状態は?")
    assert result.steps[0].error is None and "printer jammed" in result.steps[0].observation


async def test_a_schema_echo_is_answered_with_an_error_the_model_can_act_on():
    echo = AIMessage("", tool_calls=[tool_call("get_product", {"type": "object", "properties": {"sku": {"type": "string"}}}, "a")])
    fixed = AIMessage("", tool_calls=[tool_call("get_product", {"sku": "AB/100"}, "b")])
    agent, model = _agent([echo, fixed, "done"], abilities=PERMISSIVE)
    result = await agent.run("Stock of AB/100?")
    assert result.steps[0].error and 'repeat the tool\'s parameter schema' in result.steps[0].error
    assert '{"sku": "..."}' in result.steps[0].error
    assert result.steps[1].error is None and result.finish_reason != "stalled"


async def test_nothing_found_does_not_end_the_loop_and_a_corrected_argument_is_tried():
    """Strict policy (``answer_when_covered`` on): a "not found" result is no cover; the model
    is asked again, corrects the SKU, and that result covers the question."""
    wrong = AIMessage("", tool_calls=[tool_call("get_product", {"sku": "AB/10"}, "a")])
    right = AIMessage("", tool_calls=[tool_call("get_product", {"sku": "AB/100"}, "b")])
    agent, model = _agent([wrong, right, "unused"])
    result = await agent.run("AB/100 還有庫存嗎?")
    assert [step.tool_args["sku"] for step in result.steps] == ["AB/10", "AB/100"]
    assert result.finish_reason == "covered" and len(model.calls) >= 2


async def test_an_answer_from_a_miss_says_nothing_was_found():
    """After a "not found" result the model is asked again (the loop is not covered); its
    made-up price is withdrawn (strict grounding) and the answer made of the observations
    says plainly that nothing was found, not "here is what the tools report"."""
    miss = AIMessage("", tool_calls=[tool_call("get_product", {"sku": "AB/999"}, "a")])
    agent, model = _agent([miss, "AB/999 costs 12 EUR."])
    events = [event async for event in agent.astream_events("Preis von AB/999?")]
    done = events[-1].data
    assert done["finish_reason"] == "final_answer" and done["iterations"] == 2
    lead = phrase("no_data_about", detect_language("Preis von AB/999?"), subject="AB/999")
    assert done["answer"].startswith(lead) and "12 EUR" not in done["answer"]
    assert "No product AB/999 found." in done["answer"]


# grounding --------------------------------------------------------------------------------


def test_dates_and_numbers_in_the_questions_notation_are_grounded():
    steps = [{"tool_name": "get_ticket", "tool_args": {"number": 104233}, "error": None,
              "observation": TICKETS[104233] + ", cost 1234.5 EUR"}]
    japanese = check_grounding("チケット104233は2026年3月5日に開かれました。", steps, "104233?")
    assert japanese.grounded and japanese.checked == ["104233", "2026-03-05"] and "2026-03-05" in japanese.cited
    german = check_grounding("Kosten: 1.234,5 EUR, seit 5. März 2026.", steps, "104233?")
    assert german.grounded
    korean_day = check_grounding("3월 5일에 열렸습니다.", steps, "104233?")
    assert korean_day.grounded
    invented = check_grounding("Ticket 104233 kostet 1.299,0 EUR.", steps, "104233?")
    assert invented.ungrounded == ["1299"]


def test_ids_of_other_shapes_are_checked_whole():
    steps = [{"tool_name": "get_product", "tool_args": {"sku": "AB/100"}, "error": None, "observation": PRODUCTS["AB/100"]}]
    assert check_grounding("AB/100 kostet 29,90 EUR.", steps, "AB/100?").grounded
    made_up = check_grounding("Siehe auch AB/105 und ops@example.com.", steps, "AB/100?")
    assert made_up.ungrounded == ["AB/105", "ops@example.com"]
    assert json.dumps(made_up.to_dict("report", "kept"))


def test_the_lead_names_the_value_asked_about_in_any_notation_and_the_work_log_says_nothing_was_found():
    from reactgraph.answer.synthesis import format_trace

    miss = {"tool_name": "get_ticket", "tool_args": {"number": 999999, "since": "2026-03-05"}, "error": None,
            "observation": "Ticket 999999 not found."}
    assert observation_answer("Ticket 999999 depuis le 5 mars 2026 ?", [miss]).startswith(
        phrase("no_data_about", "fr", subject="999999, 2026-03-05"))
    trace = format_trace([miss], "")
    assert "(no tool returned a result)" in trace
    assert '- get_ticket({"number": 999999, "since": "2026-03-05"}): found nothing (Ticket 999999 not found.)' in trace


def test_a_date_without_a_year_is_covered_by_a_call_for_that_day_of_any_year():
    step = {"tool_name": "get_ticket", "tool_args": {"number": 104233, "since": "2026-03-05"}, "error": None,
            "observation": TICKETS[104233]}
    named = tuple(reader().named("104233 3月5日以降の変更"))
    assert named == ("104233", "--03-05")
    assert covered([step], named)
    assert not covered([{**step, "tool_args": {"number": 104233, "since": "2026-03-06"}}], named)


def test_a_short_example_is_a_count_not_an_identifier():
    limits = ValueReader({"top": {"type": "object", "properties": {
        "limit": {"type": "integer", "description": "Rows to return, e.g. 10"},
        "code": {"type": "string", "description": "Reason code like R7"}}}})
    assert limits.named("Top 20 rows for code R7") == []
    assert not any(argument.identifier for argument in limits.arguments["top"])


async def test_a_call_with_a_value_no_one_gave_is_not_shown_as_the_answer():
    """The model answers a price question with an unrelated enum call; the loop goes on, and
    the answer made of observations does not show that call's result as the answer."""
    wrong = AIMessage("", tool_calls=[tool_call("open_orders", {"line": "Line A", "priority": "high"}, "a")])
    agent, _ = _agent([wrong, wrong])
    events = [event async for event in agent.astream_events("¿Cuánto cuesta el AB/100?")]
    done = events[-1].data
    assert done["finish_reason"] != "covered"
    assert "5512" not in done["answer"] and done["answer"].startswith(phrase("no_data", detect_language("¿Cuánto cuesta el AB/100?")))


def test_an_argument_named_for_an_email_takes_one_and_a_refused_value_stays_refused():
    directory = ValueReader({"orders": {"type": "object", "properties": {"customer_email": {"type": "string"}}}})
    assert directory.named("nobody@example.org の注文") == ["nobody@example.org"]


async def test_a_value_refused_once_is_refused_again():
    invented = AIMessage("", tool_calls=[tool_call("get_ticket", {"number": 482913}, "a")])
    again = AIMessage("", tool_calls=[tool_call("get_ticket", {"number": 482913}, "b")])
    agent, _ = _agent([invented, again, "done"], answer_when_covered=False, refuse_repeated_calls=False)
    result = await agent.run("注文番号104233の状況は?")
    assert [bool(step.error) and "was not written" in step.error for step in result.steps] == [True, True]


def test_a_time_of_day_is_one_value_grounded_by_its_clock_reading_alone():
    tokens = value_tokens("Der Zug fährt um 9:05 ab, 2026-12-06T10:15:00 gemeldet, Stand 12:30:45")
    assert [(token.kind, token.value) for token in tokens] == [
        ("time", "09:05"), ("date", "2026-12-06"), ("time", "12:30:45")]
    steps = [{"tool": "departures", "args": {"station": "Köln"},
              "observation": json.dumps({"reported": "2026-12-06T10:15:00", "platform": 7, "checked": "12:30:45"})}]
    assert check_grounding("Gemeldet um 10:15, geprüft 12:30, Gleis 7.", steps, "Wann?").ungrounded == []
    # a time the trace does not hold is not grounded by a 10 or a 45 standing alone in it
    assert check_grounding("Abfahrt 10:45.", steps + [{"tool": "x", "args": {"n": 45}, "observation": "10"}],
                           "Wann?").ungrounded == ["10:45"]


def test_an_hour_argument_is_written_by_the_time_the_question_gives():
    reader = ValueReader({"set_alarm": {"type": "object", "properties": {
        "hour": {"type": "integer"}, "minute": {"type": "integer"}}, "required": ["hour", "minute"]}})
    written = reader.written("Réveille-moi à 7:30 demain")
    assert {"7", "30", "07:30"} <= written
    assert written_in(7, written) and written_in("07:30", written) and not written_in(8, written)
    # a time passed with its 12-hour clock's marker is the time the user wrote
    assert written_in("7:30 AM", written) and written_in("7:30a.m.", written) and not written_in("8:30 AM", written)
    assert written_in("07:00", reader.written("Réveille-moi à 7h demain"))  # a time written by its hour


# values of any argument that no one wrote ---------------------------------------------------


def _records_tools(ran: list[tuple[str, dict]]) -> list[StructuredTool]:
    """Three tools of no demo's trade whose arguments are free text: no enum, format or
    pattern says what their values look like."""

    def find_case(case_id: str, year: str) -> str:
        """Look up a court case by its case number."""
        ran.append(("find_case", {"case_id": case_id, "year": year}))
        return f"case {case_id} ({year}): settled"

    def match_schedule(date: str, sport: str) -> str:
        """The matches of a sport on a day."""
        ran.append(("match_schedule", {"date": date, "sport": sport}))
        return f"{sport} on {date}: no matches"

    def draw_polygon(vertices: list[str], closed: bool) -> str:
        """Draw a polygon through its vertices."""
        ran.append(("draw_polygon", {"vertices": vertices, "closed": closed}))
        return "drawn"

    def league_table(date: str) -> str:
        """The league table as it stood on a day (data from 2025-08-01 to 2026-05-31)."""
        ran.append(("league_table", {"date": date}))
        return f"table on {date}"

    return [StructuredTool.from_function(f) for f in (find_case, match_schedule, draw_polygon, league_table)]


@pytest.mark.parametrize(("question", "tool", "args", "unwritten"), [
    # a whole number or id in a text argument: copied from someone, or made up
    ("Quels dossiers le cabinet ABC a-t-il traités en 2020 ?", "find_case",
     {"case_id": "1234567890", "year": "2020"}, [("case_id", "1234567890")]),
    ("Wie steht es um Akte 88123 aus 2021?", "find_case", {"case_id": "88123", "year": "2021"}, []),
    ("2024年の事件 KX-7/24 の状況は?", "find_case", {"case_id": "KX-7/24", "year": "2024"}, []),
    # a day when no one wrote any figure: the model cannot know which day "today" is
    ("¿Quién juega al críquet hoy?", "match_schedule", {"date": "2022-01-01", "sport": "críquet"},
     [("date", "2022-01-01")]),
    ("Wer spielt am 3. März 2026 Cricket?", "match_schedule", {"date": "2026-03-03", "sport": "Cricket"}, []),
    # a date written as its format's letters is a description's placeholder, whatever is written
    ("Wer spielt am 3. März 2026 Cricket?", "match_schedule", {"date": "YYYY-MM-DD", "sport": "Cricket"},
     [("date", "YYYY-MM-DD")]),
    ("Cricket am 2026-03-03, Tempo in m/s?", "match_schedule", {"date": "2026-03-03", "sport": "m/s"}, []),  # no mask
    # a time with its 12-hour clock's marker is one whole time: made up where no figure is written
    ("What time is it in Lima?", "match_schedule", {"date": "12:30 AM", "sport": "cricket"}, [("date", "12:30 AM")]),
    ("Who plays cricket at 7:15 p.m. on 2026-03-06?", "match_schedule", {"date": "7:15 p.m.", "sport": "cricket"}, []),
    # a figure written: a day named in words is the model's to compute
    ("Who plays cricket on the Friday after 2026-03-01?", "match_schedule",
     {"date": "2026-03-06", "sport": "cricket"}, []),
    # or the tool writes one: its data's days to count from
    ("Wie stand die Tabelle gestern?", "league_table", {"date": "2026-05-30"}, []),
    # an empty value of a required argument gives nothing to act on; a boolean is a choice
    ("Trace un polygone fermé", "draw_polygon", {"vertices": [], "closed": True}, [("vertices", "[]")]),
    ("Draw a closed polygon through A, B and C", "draw_polygon",
     {"vertices": ["A", "B", "C"], "closed": True}, []),
    # text in words is not judged: a model may name a city or a sport as the user meant it
    ("¿Quién juega hoy?", "match_schedule", {"date": "hoy", "sport": "fútbol"}, []),
])
def test_a_made_up_value_of_any_argument_is_found(question, tool, args, unwritten):
    agent = ReActAgent(ScriptedChatModel(), _records_tools([]), abilities=STRICT)
    assert agent.engine.unwritten_values(tool, args, [HumanMessage(question)]) == unwritten


def test_a_value_the_agents_instructions_write_is_no_ones_invention():
    """A capable model told the day by the developer's prompt computes "today" rightly: no note."""
    question = [HumanMessage("Who plays cricket today?")]
    told = ReActAgent(ScriptedChatModel(), _records_tools([]), abilities=PERMISSIVE,
                      settings=AgentSettings(system_prompt="Today is 2026-12-06. Default case year: 2026."))
    assert told.engine.unwritten_values("match_schedule", {"date": "2026-12-06", "sport": "cricket"}, question) == []
    assert told.engine.unwritten_values("find_case", {"case_id": "2026", "year": "2026"}, question) == []
    untold = ReActAgent(ScriptedChatModel(), _records_tools([]), abilities=PERMISSIVE)
    assert untold.engine.unwritten_values("match_schedule", {"date": "2026-12-06", "sport": "cricket"}, question) == [
        ("date", "2026-12-06")]


async def test_a_made_up_case_number_is_not_run_under_strict_and_its_done_event_says_so():
    ran: list[tuple[str, dict]] = []
    invented = AIMessage("", tool_calls=[tool_call("find_case", {"case_id": "1234567890", "year": "2020"}, "a")])
    model = ScriptedChatModel(responses=[invented, "Je ne trouve pas ce dossier."])
    agent = ReActAgent(model, _records_tools(ran), abilities=STRICT,
                       settings=AgentSettings(tool_selection=False, answer_when_covered=False))
    events = [event async for event in agent.astream_events("Quels dossiers le cabinet ABC a-t-il traités en 2020 ?")]
    [done] = [e for e in events if e.channel == "step" and e.data.get("type") == "iteration" and e.data["status"] == "done"]
    assert ran == [] and done.data["ran"] is False
    assert "case_id was not written by the user" in done.data["error"]

    ran.clear()
    model = ScriptedChatModel(responses=[invented, "Le dossier est clos."])
    agent = ReActAgent(model, _records_tools(ran), abilities=PERMISSIVE, settings=AgentSettings(tool_selection=False))
    events = [event async for event in agent.astream_events("Quels dossiers le cabinet ABC a-t-il traités en 2020 ?")]
    [done] = [e for e in events if e.channel == "step" and e.data.get("type") == "iteration" and e.data["status"] == "done"]
    assert ran == [("find_case", {"case_id": "1234567890", "year": "2020"})] and "ran" not in done.data
    told = [m for m in model.calls[1] if isinstance(m, ToolMessage)][-1].content
    assert "no one wrote '1234567890'" in told


async def test_the_cli_shows_a_refused_call_as_not_run():
    from rich.console import Console

    from reactgraph.cli.view import print_events
    from reactgraph.events import ToolDone

    async def events():
        yield ToolDone(iteration=1, tool_name="find_case", tool_args={"case_id": "1234567890"},
                       observation="Error: that case_id was not written by the user", iter_elapsed=0.0,
                       error="that case_id was not written by the user", tool_call_id="a", artifact=None, ran=False)
        yield ToolDone(iteration=2, tool_name="find_case", tool_args={"case_id": "88123"}, observation="case 88123: settled",
                       error=None, iter_elapsed=0.1, tool_call_id="b", artifact=None)

    console = Console(record=True, width=200)
    await print_events(console, events())
    text = console.export_text()
    assert "⊘ find_case not run" in text and "that case_id was not written by the user" in text
    assert "✓ find_case" in text and "case 88123: settled" in text
