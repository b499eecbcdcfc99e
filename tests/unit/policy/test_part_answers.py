"""Every part of a question answered (SPEC R13.1): a part whose words name no tool still gets
one (a tool taking the record it is about that no other part chose, never a tool that changes
something), and the lead of an answer made of observations gives each part its own sentence,
chosen among that part's own results. Non-demo tools, several languages."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import ReActAgent
from reactgraph.nodes.select_tools import words_choose_nothing
from reactgraph.policy.parts import asked_alone
from reactgraph.testing import ScriptedChatModel
from reactgraph.tools.ranking import ToolRanker
from tests.helpers import SMALL_SCHEMA, final, office_tools

SHIPMENT = "Shipment: SHP-4\nState: held at customs\nCarrier: Northwind"
INVOICE = "Invoice of SHP-4: 120.50 EUR\nPayment: unpaid"
HISTORY = "2026-02-01 | SHP-4 | picked up\n2026-02-03 | SHP-4 | arrived at customs"
STOCK = "Item: SKU-12\nQuantity on hand: 14\nReorder point: 20"

Shipment = Literal["SHP-4", "SHP-8"]


def shipping_tools(history: bool = False) -> list[StructuredTool]:
    """Tools that all take a shipment id (one of them changes something and needs approval),
    one about stock, and enough others that selection runs."""
    def shipment_status(shipment_id: Shipment) -> str:
        return SHIPMENT

    def shipment_invoice(shipment_id: Shipment) -> str:
        return INVOICE

    def cancel_shipment(shipment_id: Shipment) -> str:
        return "cancelled"

    def shipment_events(shipment_id: Shipment) -> str:
        return HISTORY

    def stock_level(item_id: Literal["SKU-12", "SKU-30"]) -> str:
        return STOCK

    tools = [
        StructuredTool.from_function(cancel_shipment, name="cancel_shipment",
                                     description="Cancel one shipment (a person must approve it).",
                                     metadata={"approval": "always"}),
        StructuredTool.from_function(shipment_status, name="shipment_status",
                                     description="Current state and carrier of one shipment.",
                                     metadata={"keywords": ["estado", "Zustand", "상태"]}),
        StructuredTool.from_function(shipment_invoice, name="shipment_invoice",
                                     description="Invoice of one shipment: amount and payment.",
                                     metadata={"keywords": ["factura", "Rechnung", "송장", "請求書"]}),
        StructuredTool.from_function(stock_level, name="stock_level",
                                     description="Stock level of one warehouse item: quantity on hand, reorder point.",
                                     metadata={"keywords": ["inventario", "재고", "Lagerbestand"]}),
    ]
    if history:
        tools.append(StructuredTool.from_function(shipment_events, name="shipment_events",
                                                  description="Tracking events of one shipment, oldest first."))
    tools.extend(office_tools())
    return tools


def call(name: str, args: dict) -> str:
    return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": name, "tool_args": args})


def lead_choice(facts: list[str], verdict: str | None = None) -> str:
    return json.dumps({**({"verdict": verdict} if verdict else {}), "facts": facts})


@pytest.mark.parametrize("part, values, expected", [
    ("What's going on with SHP-4", ["SHP-4"], True),  # no word of any tool taking SHP-4
    ("¿Qué pasa con SHP-4?", ["SHP-4"], True),
    ("SHP-4 무슨 일이야?", ["SHP-4"], True),
    ("What is the state of SHP-4", ["SHP-4"], False),  # "state": the status tool's word
    ("¿Cuál es la factura de SHP-4?", ["SHP-4"], False),  # a keyword of the invoice tool
    ("What's going on in the canteen", [], False),  # about no record: ranked by its words as before
])
def test_a_parts_words_choose_nothing_when_no_tool_taking_its_record_shares_one(part, values, expected):
    assert words_choose_nothing(ToolRanker(shipping_tools()), part, values, None) is expected


@pytest.mark.parametrize("question", [
    "What's going on with shipment SHP-4, and what does its invoice say?",
    "¿Qué pasa con SHP-4, y cuál es su factura?",
    "SHP-4 무슨 일이야? 송장도 보여줘",
])
async def test_a_part_whose_words_choose_no_tool_gets_the_tool_taking_its_record_no_other_part_chose(question):
    """The first part shares no word with any tool: ranked on its id alone, the invoice tool (the
    second part's) or the approval-needing cancel tool could win. It gets the one tool left that
    takes the shipment id, the other part's tool is not its, and the cancel tool is never
    offered: both parts get data, with no selection call."""
    model = ScriptedChatModel(responses=[call("shipment_status", {"shipment_id": "SHP-4"}),
                                         call("shipment_invoice", {"shipment_id": "SHP-4"})])
    result = await ReActAgent(model, shipping_tools(), abilities=SMALL_SCHEMA).run(question)
    assert [step.tool_name for step in result.steps] == ["shipment_status", "shipment_invoice"]
    assert result.finish_reason == "covered"
    assert "selection" not in model.kinds
    assert "cancel_shipment" not in json.dumps(model.call_kwargs[0].get("response_format") or {})


async def test_among_several_tools_taking_the_record_the_one_it_is_the_subject_of_comes_first():
    """Several read tools take the shipment id and no word chooses between them: no model call
    (a small model picks by position); a tool whose required argument takes the one id comes
    before one that only filters or lists by it, then registration order; never the other
    part's tool or the tool needing approval."""
    def shipments_by_state(shipment_id: Shipment | None = None) -> str:
        return SHIPMENT

    tools = shipping_tools(history=True)
    tools.insert(0, StructuredTool.from_function(shipments_by_state, name="shipments_by_state",
                                                 description="List shipments, optionally one."))
    model = ScriptedChatModel(responses=[call("shipment_status", {"shipment_id": "SHP-4"}),
                                         call("shipment_invoice", {"shipment_id": "SHP-4"})])
    result = await ReActAgent(model, tools, abilities=SMALL_SCHEMA).run(
        "What's going on with shipment SHP-4, and what does its invoice say?")
    assert "selection" not in model.kinds
    assert [step.tool_name for step in result.steps] == ["shipment_status", "shipment_invoice"]


@pytest.mark.parametrize("question", [
    "What's going on with shipment SHP-4?",
    "Any idea what happened to SHP-4?",
])
async def test_a_one_part_question_whose_words_choose_no_tool_gets_the_tool_its_record_is_the_subject_of(question):
    """Asked alone, the same part is chosen as in a question of several parts: the tool whose
    required argument takes the shipment id, before a list tool that only filters by it and
    never the tool needing approval, then registration order, with no selection call — not
    whichever tool a tie of the ranking or a small model's pick puts first."""
    def shipments_by_state(shipment_id: Shipment | None = None) -> str:
        return SHIPMENT

    tools = shipping_tools(history=True)
    tools.insert(0, StructuredTool.from_function(shipments_by_state, name="shipments_by_state",
                                                 description="List shipments, optionally one."))
    model = ScriptedChatModel(responses=[call("shipment_status", {"shipment_id": "SHP-4"})])
    result = await ReActAgent(model, tools, abilities=SMALL_SCHEMA).run(question)
    assert "selection" not in model.kinds
    offered = json.dumps(model.call_kwargs[0].get("response_format") or {})
    assert "shipment_status" in offered
    assert not any(name in offered for name in ("shipment_events", "shipment_invoice", "shipments_by_state"))
    assert [step.tool_name for step in result.steps] == ["shipment_status"]


def library_tools() -> list[StructuredTool]:
    """A small hub (no selection call): a search, and two tools taking the same card number,
    the loans list documented at more length and with the card's example."""
    class Card(BaseModel):
        member_no: str = Field(pattern=r"^M\d{5}$", description="Card number, like M00042.")

    def get_member(member_no: str) -> str:
        return f"Card {member_no}: valid until 2027-03-31, fines 0.00 EUR"

    def member_loans(member_no: str) -> str:
        return "isbn | title | due\n978-0-00-000000-2 | Solaris | 2026-12-15"

    def search_catalogue(query: str) -> str:
        return "978-0-00-000000-2 | Solaris"

    return [StructuredTool.from_function(search_catalogue, name="search_catalogue",
                                         description="Find books by title or author."),
            StructuredTool.from_function(get_member, name="get_member", args_schema=Card,
                                         description="One library card: holder, expiry, fines."),
            StructuredTool.from_function(member_loans, name="member_loans", args_schema=Card,
                                         description="Books a member has on loan, for member M00042 or any "
                                                     "other member number: one row a loan with the due date.")]


@pytest.mark.parametrize("question", ["What's up with member M00042?", "Tell me about M00042, please."])
async def test_in_a_small_hub_a_record_whose_words_choose_no_tool_gets_the_tool_it_is_the_subject_of(question):
    """Both tools take the card number by their schemas; no word of the question tells them
    apart (\"member\" is in both), so the one registered first for the record is offered, not
    both for a small model to pick by position."""
    model = ScriptedChatModel(responses=[call("get_member", {"member_no": "M00042"})])
    result = await ReActAgent(model, library_tools(), abilities=SMALL_SCHEMA).run(question)
    offered = json.dumps(model.call_kwargs[0].get("response_format") or {})
    assert "get_member" in offered and "member_loans" not in offered
    assert [step.tool_name for step in result.steps] == ["get_member"]


@pytest.mark.parametrize("question", ["M00042さんが今借りている本は？", "Quais livros o sócio M00042 tem emprestados?"])
async def test_a_record_asked_about_in_another_language_than_the_tools_is_the_models_to_place(question):
    """Words no English document holds could not have chosen: both tools taking the card are
    offered and the model chooses (the loans list, here)."""
    model = ScriptedChatModel(responses=[call("member_loans", {"member_no": "M00042"})])
    result = await ReActAgent(model, library_tools(), abilities=SMALL_SCHEMA).run(question)
    offered = json.dumps(model.call_kwargs[0].get("response_format") or {})
    assert "get_member" in offered and "member_loans" in offered
    assert [step.tool_name for step in result.steps] == ["member_loans"]


async def test_in_a_small_hub_a_word_that_tells_the_tools_apart_still_chooses():
    model = ScriptedChatModel(responses=[call("member_loans", {"member_no": "M00042"})])
    await ReActAgent(model, library_tools(), abilities=SMALL_SCHEMA).run("Which books are on loan for M00042?")
    offered = json.dumps(model.call_kwargs[0].get("response_format") or {})
    assert "member_loans" in offered


@pytest.mark.parametrize("part, alone", [
    ("and do we have it in stock?", "do we have it in stock?"),
    ("Also, how much energy did it use?", "how much energy did it use?"),
    ("y cuál es su factura?", "cuál es su factura?"),
    ("그리고 재고도 알려줘", "재고도 알려줘"),
    ("Andrew's shipment", "Andrew's shipment"),  # a word that starts like a joiner is no joiner
])
def test_a_part_is_asked_alone_without_its_joining_word(part, alone):
    assert asked_alone(part) == alone


async def streamed(model: ScriptedChatModel, question: str) -> dict:
    """The ``done`` event of a streamed run (the answer as a user sees it)."""
    agent = ReActAgent(model, shipping_tools(), abilities=SMALL_SCHEMA)
    events = [event async for event in agent.astream_events(question)]
    return events[-1].data


@pytest.mark.parametrize("question", [
    "What is the state of shipment SHP-4, and how many SKU-12 are on hand?",
    "¿Cuál es el estado de SHP-4, y cuánto inventario hay de SKU-12?",
])
async def test_each_part_gets_its_own_lead_sentence_from_its_own_results(question):
    """Two which/what parts: two lead choices, each offered only its own tool's lines, and the
    answer leads with one sentence per part, in the parts' order (not the two results'
    headings joined in one sentence)."""
    model = ScriptedChatModel(responses=[call("shipment_status", {"shipment_id": "SHP-4"}),
                                         call("stock_level", {"item_id": "SKU-12"})],
                              by_kind={"synthesis": [lead_choice(["State: held at customs"]),
                                                     lead_choice(["Quantity on hand: 14"])]})
    done = await streamed(model, question)
    answer = done["answer"]
    # one sentence a part, in order; made of English lines, it follows the engine's sentence
    # in a Spanish answer (the answer opens in the reader's language)
    assert "State: held at customs.\nQuantity on hand: 14.\n" in answer
    assert answer.startswith("State: held at customs.") is question.startswith("What")
    schemas = [kwargs["response_format"]["schema"] for kwargs, kind in zip(model.call_kwargs, model.kinds, strict=True)
               if kind == "synthesis"]
    assert [sorted(schema["properties"]["facts"]["items"]["enum"]) for schema in schemas] == [
        sorted(SHIPMENT.splitlines()), sorted(STOCK.splitlines())]


async def test_a_yes_no_part_gets_its_verdict_in_the_questions_language():
    """A Korean question of a which part and a yes/no part: the yes/no part's sentence is a
    verdict in Korean, the other part's the line chosen; each from its own results."""
    model = ScriptedChatModel(responses=[call("shipment_status", {"shipment_id": "SHP-4"}),
                                         call("shipment_invoice", {"shipment_id": "SHP-4"})],
                              by_kind={"synthesis": [lead_choice(["State: held at customs"]),
                                                     lead_choice(["Payment: unpaid"], "no")]})
    done = await streamed(model, "SHP-4 상태가 어때? 송장은 지불됐어?")
    lines = done["answer"].splitlines()
    assert lines[0] == "SHP-4에 대해 도구가 조회한 결과입니다."  # English lines follow the Korean sentence
    # the which part's line is the tool's own; the verdict frames the English line in Korean
    assert lines[2:4] == ["State: held at customs.", "아니요. 도구 결과에 따르면: Payment: unpaid."]



@pytest.mark.parametrize("question", ["Vous avez « Solaris » ?", 'Do you have "Solaris"?', "「ソラリス」はありますか？"])
async def test_a_quoted_name_is_offered_only_the_tools_that_take_free_text(question):
    """A title in quotes names no card and no ISBN: a small model offered the card tools as well
    makes a card number up; only the search, which takes any text, is offered (not forced)."""
    model = ScriptedChatModel(responses=[call("search_catalogue", {"query": "Solaris"}), final("Solaris")])
    await ReActAgent(model, library_tools(), abilities=SMALL_SCHEMA).run(question)
    offered = json.dumps(model.call_kwargs[0].get("response_format") or {})
    assert "search_catalogue" in offered
    assert "get_member" not in offered and "member_loans" not in offered


def renewing_library_tools() -> list[StructuredTool]:
    """The library hub with a tool that writes: it declares side effects, no approval."""
    def renew_loans(member_no: str) -> str:
        return f"Renewed every loan of {member_no}."

    tools = library_tools()
    tools.insert(1, StructuredTool.from_function(
        renew_loans, name="renew_loans", description="Renew every loan of a member by four weeks.",
        args_schema=tools[1].args_schema, metadata={"side_effects": True}))
    return tools


@pytest.mark.parametrize(("question", "offered", "held_back"), [
    ("Quais livros o sócio M00042 tem emprestados?", ["get_member", "member_loans"], ["renew_loans"]),
    ("M00042 회원 카드 정보", ["get_member", "member_loans"], ["renew_loans"]),
    ("Please renew the loans of M00042.", ["renew_loans"], []),  # its words name the writing tool
    # a vague question's default is the first reading tool its record is the subject of
    ("What's up with member M00042?", ["get_member"], ["renew_loans", "member_loans"]),
])
async def test_a_tool_that_writes_is_offered_only_to_a_question_whose_words_name_it(question, offered, held_back):
    """A question that only names a record the writing tool also takes asks to read it: the
    writing tool is not offered beside the reads, where a small model would call it by its
    place in the list."""
    model = ScriptedChatModel(responses=[call(offered[0], {"member_no": "M00042"})])
    await ReActAgent(model, renewing_library_tools(), abilities=SMALL_SCHEMA).run(question)
    schema = json.dumps(model.call_kwargs[0].get("response_format") or {})
    assert all(name in schema for name in offered) and not any(name in schema for name in held_back)
