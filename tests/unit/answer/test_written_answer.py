"""An answer the model writes (``answer_from_observations`` off, ``grounding="enforce"``) answers
in the question's language and answers every part of it (SPEC R13.1): the synthesis prompt names
the language to write in and lists the question's parts; a written answer in another language,
or one that leaves a part's data out, is withdrawn before it is shown and the observation answer,
which holds every part's lines, is streamed instead."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import StructuredTool

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.answer.written import left_out_parts
from reactgraph.testing import ScriptedChatModel
from tests.helpers import final, office_tools

WRITER = ModelAbilities(json_mode=True, schema_output="json_object_schema", small=True, writes_answers=True)

ORDER = "Order: ORD-7\nState: shipped\nCarrier: Northwind\nDelivery date: 2026-03-02"
STOCK = "Item: SKU-12\nQuantity on hand: 14\nReorder point: 20"
PUMP = "Pump: PU-7\nState: stopped\nPressure: 1.8 bar\nLast service: 2026-02-11"


def shop_tools() -> list[StructuredTool]:
    def order_status(order_id: str) -> str:
        return ORDER

    def stock_level(item_id: str) -> str:
        return STOCK

    def pump_status(pump_id: str) -> str:
        return PUMP

    def place_order(item_id: str, quantity: int) -> str:
        return f"Purchase order PO-5521 placed: {quantity} x {item_id}"

    return [
        *office_tools(),  # enough tools that the strict policy selects, one tool a part
        StructuredTool.from_function(order_status, name="order_status",
                                     description="Status of one customer order: state, carrier and delivery date.",
                                     metadata={"keywords": ["Bestellung", "注文", "주문", "commande"]}),
        StructuredTool.from_function(stock_level, name="stock_level",
                                     description="Stock level of one warehouse item: quantity on hand, reorder point.",
                                     metadata={"keywords": ["Lagerbestand", "在庫", "재고", "stock"]}),
        StructuredTool.from_function(pump_status, name="pump_status",
                                     description="State, pressure and last service of one pump.",
                                     metadata={"keywords": ["Pumpe", "ポンプ", "펌프"]}),
        StructuredTool.from_function(place_order, name="place_order",
                                     description="Place a purchase order for a warehouse item.",
                                     metadata={"keywords": ["nachbestellen", "発注", "발주"]}),
    ]


def call(name: str, args: dict) -> str:
    return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": name, "tool_args": args})


class Writer:
    """A synthesis that records each prompt and writes the next of ``texts``."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.prompts: list[str] = []

    def __call__(self, messages) -> str:
        self.prompts.append(messages[-1].content)
        return self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]


async def run(model: ScriptedChatModel, question: str, **settings) -> tuple[dict, list[str]]:
    agent = ReActAgent(model, shop_tools(), abilities=WRITER, settings=AgentSettings(**settings))
    events = [event async for event in agent.astream_events(question)]
    deltas = [event.data["content"] for event in events
              if event.channel == "answer" and event.data.get("status") == "delta"]
    return events[-1].data, deltas


@pytest.mark.parametrize("question, language, written", [
    ("Wie ist der Status der Bestellung ORD-7?", "German", "ORD-7 wurde versandt (Northwind, 2026-03-02)."),
    ("注文ORD-7の状況はどうですか？", "Japanese", "ORD-7は発送済みです（Northwind、2026-03-02）。"),
    ("ORD-7 주문 상태가 어때?", "Korean", "ORD-7 주문은 발송되었습니다 (Northwind, 2026-03-02)."),
])
async def test_the_synthesis_prompt_names_the_questions_language(question, language, written):
    writer = Writer(written)
    model = ScriptedChatModel(responses=[call("order_status", {"order_id": "ORD-7"})], synthesis=writer)
    done, deltas = await run(model, question)
    assert writer.prompts[0].endswith(f"Write the answer in {language}, the language of the question.")
    assert done["answer"] == written and "".join(deltas) == written
    assert done["grounding"]["action"] == "kept"


@pytest.mark.parametrize("question, written", [
    ("ORD-7 주문 상태가 어때?", "Order ORD-7 has shipped with Northwind, delivery on 2026-03-02."),
    ("Wie ist der Status der Bestellung ORD-7?", "注文ORD-7は発送済みです。配送日は2026-03-02です。"),
])
async def test_an_answer_in_another_language_is_withdrawn_for_the_observation_answer(question, written):
    model = ScriptedChatModel(responses=[call("order_status", {"order_id": "ORD-7"})], synthesis=Writer(written))
    done, deltas = await run(model, question)
    assert done["grounding"]["action"] == "fallback" and "language" in done["grounding"]["problems"]
    streamed = "".join(deltas)
    assert written not in streamed and streamed == done["answer"]  # checked before anything was shown
    assert "shipped" in streamed and "2026-03-02" in streamed  # the tool's lines stand instead


@pytest.mark.parametrize("text, language, expected", [
    ("PRS-002 (Stamping Press 250t)의 상태는 normal입니다.", "ko", True),  # the tool's words kept
    ("ORD-7は発送済みです（Northwind、2026-03-02）。", "ja", True),
    ("The state of PRS-002 is normal.", "ko", False),
    ("The state of PRS-002 is normal (정상).", "ko", False),
    ("ORD-7 wurde mit Northwind versandt.", "de", True),
    ("ORD-7 has shipped with Northwind.", "de", False),
])
def test_an_answer_is_in_its_language_though_it_keeps_the_tools_words(text, language, expected):
    from reactgraph.core.language import sentence_in

    assert sentence_in(text, language) is expected


PARTS_LIST = ("SKU-12 | Ceramic coffee mug, large | stock 0 | OUT OF STOCK\n"
              "SKU-31 | Bamboo lunch box with lid | stock 2 | LOW")


@pytest.mark.parametrize("answer, question, fits", [
    # mostly the tools' own names, in a Korean or a Japanese sentence: in the question's language
    ("재고 부족 품목은 SKU-12 (Ceramic coffee mug, large, OUT OF STOCK), SKU-31 (Bamboo lunch box with lid, LOW)입니다.",
     "재고 부족한 품목이 뭐야?", True),
    ("在庫不足はSKU-12（Ceramic coffee mug, large）とSKU-31（Bamboo lunch box with lid）です。",
     "在庫不足の品目は？", True),
    # the same names in an English sentence: not
    ("The items low on stock are SKU-12 (Ceramic coffee mug, large) and SKU-31 (Bamboo lunch box with lid).",
     "재고 부족한 품목이 뭐야?", False),
    ("SKU-12 | Ceramic coffee mug, large | stock 0 | OUT OF STOCK", "재고 부족한 품목이 뭐야?", False),
])
def test_the_tools_own_words_tell_no_language(answer, question, fits):
    from reactgraph.answer.fitness import answer_problems

    steps = [{"tool_name": "low_stock", "tool_args": {}, "observation": PARTS_LIST}]
    assert ("language" not in answer_problems(answer, question, (), steps)) is fits


async def test_a_korean_answer_that_keeps_the_tools_english_words_stands():
    written = "ORD-7 주문은 shipped 상태이며, carrier는 Northwind, delivery date는 2026-03-02입니다."
    model = ScriptedChatModel(responses=[call("order_status", {"order_id": "ORD-7"})], synthesis=Writer(written))
    done, deltas = await run(model, "ORD-7 주문 상태가 어때?")
    assert done["grounding"]["action"] == "kept" and "".join(deltas) == written


TWO_PARTS = [
    ("What is the state of order ORD-7, and how much stock is on hand for SKU-12?",
     "ORD-7 has shipped with Northwind.", "ORD-7 has shipped with Northwind; SKU-12 has 14 on hand (reorder point 20)."),
    ("Wie ist der Status der Bestellung ORD-7, und wie hoch ist der Lagerbestand von SKU-12?",
     "ORD-7 wurde mit Northwind versandt (shipped).",
     "ORD-7 wurde mit Northwind versandt (shipped, Lieferung am 2026-03-02); von SKU-12 sind 14 Stück am Lager."),
]


@pytest.mark.parametrize("question, one_part, both_parts", TWO_PARTS)
async def test_a_written_answer_that_leaves_a_part_out_is_withdrawn(question, one_part, both_parts):
    writer = Writer(one_part)
    model = ScriptedChatModel(responses=[call("order_status", {"order_id": "ORD-7"}),
                                         call("stock_level", {"item_id": "SKU-12"})], synthesis=writer)
    done, deltas = await run(model, question)
    assert done["grounding"]["action"] == "fallback" and done["grounding"]["problems"] == ["part_left_out"]
    streamed = "".join(deltas)
    assert one_part not in streamed and "shipped" in streamed and "14" in streamed  # every part's lines
    # the prompt listed both parts to answer
    assert "The question asks 2 things; answer each of them:\n- " in writer.prompts[0]


@pytest.mark.parametrize("question, one_part, both_parts", TWO_PARTS)
async def test_a_written_answer_of_every_part_stands(question, one_part, both_parts):
    model = ScriptedChatModel(responses=[call("order_status", {"order_id": "ORD-7"}),
                                         call("stock_level", {"item_id": "SKU-12"})], synthesis=Writer(both_parts))
    done, deltas = await run(model, question)
    assert done["grounding"]["action"] == "kept" and done["answer"] == both_parts == "".join(deltas)


def steps(*pairs: tuple[str, str]) -> list[dict]:
    return [{"tool_name": name, "tool_args": {}, "observation": observation} for name, observation in pairs]


def test_the_parts_data_is_looked_for_in_each_parts_own_facts():
    both = steps(("order_status", ORDER), ("stock_level", STOCK))
    question = "State of ORD-7 and stock of SKU-12?"
    assert left_out_parts("ORD-7: shipped. SKU-12: 14.", both, question, ["order_status", "stock_level"]) == []
    assert left_out_parts("ORD-7: shipped.", both, question, ["order_status", "stock_level"]) == ["stock_level"]
    # a figure written in another notation is the same fact
    assert left_out_parts("ORD-7 est expédiée le 02/03/2026 ; SKU-12 : 14,0.", both, question,
                          ["order_status", "stock_level"]) == []
    # a tool's word kept in a sentence of another script, a particle right after it
    both_words = steps(("order_status", "Order: ORD-7\nState: shipped"), ("stock_level", STOCK))
    assert left_out_parts("ORD-7은 shipped입니다. SKU-12 재고는 14개입니다.", both_words, question,
                          ["order_status", "stock_level"]) == []
    assert left_out_parts("ORD-7は未発送です。SKU-12の在庫は14個です。", both_words, question,
                          ["order_status", "stock_level"]) == ["order_status"]
    # one part: nothing to leave out; a part whose tool brought no data: nothing to pass on
    assert left_out_parts("ORD-7: shipped.", both, question, ["order_status"]) == []
    empty = steps(("order_status", ORDER), ("stock_level", ""))
    assert left_out_parts("ORD-7: shipped.", empty, question, ["order_status", "stock_level"]) == []
    failed = [*steps(("order_status", ORDER)), {"tool_name": "stock_level", "tool_args": {}, "observation": STOCK,
                                                "error": "timeout"}]
    assert left_out_parts("ORD-7: shipped.", failed, question, ["order_status", "stock_level"]) == []


async def test_a_confirmation_of_a_part_that_changes_something_is_no_data_left_out():
    """A part served by a tool whose calls may need a person's approval (it changes something)
    is not looked for: its confirmation is no data the question asked for."""
    writer = Writer("SKU-12 has 14 on hand, below its reorder point of 20.")
    model = ScriptedChatModel(responses=[call("stock_level", {"item_id": "SKU-12"}),
                                         call("place_order", {"item_id": "SKU-12", "quantity": 6})], synthesis=writer)
    done, _ = await run(model, "How much stock is on hand for SKU-12, and nachbestellen 6 of SKU-12",
                        approval={"place_order": lambda tool_call: False})  # asked about, never paused here
    assert "The question asks 2 things" in writer.prompts[0]  # two parts, the second one an order placed
    assert done["grounding"]["action"] == "kept" and done["answer"] == writer.texts[0]


# the verdict of a yes/no question ------------------------------------------------------------


@pytest.mark.parametrize("question, written, lead", [
    ("Is pump PU-7 stopped?", "Yes, PU-7 is stopped (pressure 1.8 bar, last service 2026-02-11).", None),
    ("PU-7 펌프가 정지했어?", "네, PU-7은 정지 상태입니다 (압력 1.8 bar, 마지막 점검 2026-02-11).", None),
    ("Ist die Pumpe PU-7 gestoppt?", "Ja, PU-7 ist gestoppt (1.8 bar, letzte Wartung 2026-02-11).", None),
    # the other verdict, or none, is withdrawn: the engine's lead stands
    ("Is pump PU-7 stopped?", "No, PU-7 is running at 1.8 bar since 2026-02-11.", "Yes."),
    ("PU-7 펌프가 정지했어?", "PU-7은 1.8 bar이며 2026-02-11에 점검했습니다.", "네."),
])
async def test_a_written_yes_no_answer_stands_only_with_the_verdict_the_observations_decide(question, written, lead):
    model = ScriptedChatModel(responses=[call("pump_status", {"pump_id": "PU-7"})], synthesis=Writer(written))
    done, deltas = await run(model, question)
    if lead is None:
        assert done["grounding"]["action"] == "kept" and "".join(deltas) == written
    else:
        assert done["grounding"]["action"] == "fallback" and done["grounding"]["problems"] == ["verdict"]
        assert "".join(deltas).startswith(lead) and written not in "".join(deltas)


async def test_a_written_verdict_no_rule_decides_is_not_shown():
    """"Was PU-7 serviced this year?" — no rule of the engine reads a verdict from the lines, so
    a written "yes" cannot be checked: the observation answer stands."""
    written = "Yes, PU-7 was serviced on 2026-02-11 and runs at 1.8 bar."
    model = ScriptedChatModel(responses=[call("pump_status", {"pump_id": "PU-7"})], synthesis=Writer(written),
                              repeat_last=True)
    done, deltas = await run(model, "Was pump PU-7 serviced this year?")
    assert done["grounding"]["action"] == "fallback" and done["grounding"]["problems"] == ["verdict"]
    assert written not in "".join(deltas) and "2026-02-11" in "".join(deltas)


def test_the_verdict_is_read_in_the_words_of_the_engines_own_lead():
    from reactgraph.answer.written import written_verdict

    assert written_verdict("Yes, it is.", "en") == "yes" and written_verdict("**No** — it runs.", "en") == "no"
    assert written_verdict("네, 정지 상태입니다.", "ko") == "yes" and written_verdict("いいえ、稼働中です。", "ja") == "no"
    assert written_verdict("Nein, sie läuft.", "de") == "no" and written_verdict("Nothing was found.", "en") is None
    assert written_verdict("PU-7 is stopped.", "en") is None


@pytest.mark.parametrize("question, nothing_found", [
    ("Où en est la commande ORD-404 ?", "Aucune donnée trouvée"),
    ("注文ORD-404の状況は？", "データ"),
])
async def test_a_writer_does_not_write_about_nothing_found(question, nothing_found):
    """Every result holds no data: no synthesis call, the engine says nothing was found."""

    def order_status(order_id: str) -> str:
        return f"No order found {order_id}."

    writer = Writer("La commande ORD-404 n'est pas en cours d'exécution.")  # what a 1.5B wrote for it
    model = ScriptedChatModel(responses=[call("order_status", {"order_id": "ORD-404"}), final("ORD-404: none")],
                              synthesis=writer, repeat_last=True)
    tools = [*office_tools(), StructuredTool.from_function(
        order_status, name="order_status", description="Status of one customer order.",
        metadata={"keywords": ["commande", "注文"]})]
    agent = ReActAgent(model, tools, abilities=WRITER)
    events = [event async for event in agent.astream_events(question)]
    done = events[-1].data
    assert writer.prompts == [] and done["grounding"]["action"] == "observations"
    assert "ORD-404" in done["answer"] and "n'est pas en cours" not in done["answer"]
    from reactgraph.core.language import detect_language, phrase
    assert done["answer"].startswith(phrase("no_data_about", detect_language(question), subject="ORD-404").split("ORD-404")[0])


SHIPPED = ("Order 611480: shipped (placed 2026-12-02) · 1 x KT/310 · total 45.50 EUR · tracking TRK77135566")


@pytest.mark.parametrize("answer, language, restated", [
    # the record re-listed in Japanese, keys and values translated (wrongly): no better than the record
    ("注文番号611480の配送状況は、以下の通りです。\n\n- 注文番号: 611480\n- 配送状況: シャッフル (2026年12月02日)\n"
     "- 合計: 45.50 EUR\n- チェッカー: TRK77135566", "ja", True),
    # a sentence in Japanese that states the facts: not a restated record
    ("注文611480は2026年12月02日に発送済みで、追跡番号はTRK77135566です。", "ja", False),
    # the tool's own line under a Japanese heading: the record as the tool wrote it
    (f"注文611480の状況：\n\n- {SHIPPED}", "ja", False),
    # an English question over English data: a list is no translation
    ("Order 611480:\n- status: shipped on 2026-12-02\n- total: 45.50 EUR", "en", False),
])
def test_a_record_restated_in_another_language_is_no_better_than_the_record(answer, language, restated):
    from reactgraph.answer.written import restated_record

    assert restated_record(answer, [{"tool_name": "order_status", "observation": SHIPPED}], language) is restated
