"""Every language: the question's language told once per turn, every sentence the engine
writes itself from one table, words split for every script, and a lexical gate that reads
no language. The tools here are a shop's and a help desk's, never the demo plant's."""

from __future__ import annotations

import json
import string

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.answer.fitness import answer_problems
from reactgraph.answer.grounding import capabilities_answer, observation_answer
from reactgraph.core.language import LANGUAGES, NEUTRAL, PHRASES, detect_language, language_name, phrase, reads_as
from reactgraph.nodes.select_tools import gate_closes
from reactgraph.tools.ranking import ToolRanker, tokenize
from reactgraph.answer.synthesis import summarize_steps
from reactgraph.testing import ScriptedChatModel
from tests.helpers import SMALL_SCHEMA


QUESTIONS = {
    "en": ["What is the status of order 4411?", "Which invoices are overdue this week?"],
    "ko": ["주문 4411 상태 알려줘", "이번 주 연체된 송장은?"],
    "ja": ["注文4411の状況は？", "東京駅の在庫は？"],
    "zh": ["订单4411的状态是什么？", "本周哪些发票逾期？"],
    "es": ["¿Cuál es el estado del pedido 4411?", "¿Qué facturas vencen esta semana?"],
    "de": ["Wie ist der Status der Bestellung 4411?", "Welche Rechnungen sind diese Woche überfällig?"],
    "fr": ["Quel est le statut de la commande 4411 ?", "Quelles factures sont en retard cette semaine ?"],
    "pt": ["Qual é o status do pedido 4411?", "Quais faturas vencem esta semana?"],
    "it": ["Qual è lo stato dell'ordine 4411?", "Quali fatture scadono questa settimana?"],
    "ru": ["Какой статус заказа 4411?", "Какие счета просрочены на этой неделе?"],
    "vi": ["Trạng thái của đơn hàng 4411 là gì?", "Hóa đơn nào quá hạn tuần này?"],
    "id": ["Apa status pesanan 4411?", "Faktur mana yang jatuh tempo minggu ini?"],
}


def ok(name: str, args: dict, observation: str) -> dict:
    return {"tool_name": name, "tool_args": args, "observation": observation, "error": None}


def shop_tool(name: str, description: str) -> StructuredTool:
    def run(order_id: str) -> str:
        return f"Order {order_id}: shipped"

    return StructuredTool.from_function(run, name=name, description=description)


# detection ---------------------------------------------------------------------------------


@pytest.mark.parametrize("language", sorted(QUESTIONS))
def test_a_short_question_is_told_in_each_language_of_the_table(language):
    assert [detect_language(question) for question in QUESTIONS[language]] == [language, language]


@pytest.mark.parametrize(("question", "language"), [
    ("Tomas Ekberg 작가 책 있어요?", "ko"),  # a Latin name in a Korean question
    ("riverside 分馆 2026-12-14 几点开门？", "zh"),  # an enum word in a Chinese one
    ("Какие книги у Tomas Ekberg?", "ru"),
    ("What does 寿司 mean in English?", "en"),  # a word of another script in an English one
    ("Show me the Tokyo 東京 office hours please", "en"),
])
def test_a_script_that_names_its_language_decides_when_it_outweighs_the_latin_names_in_it(question, language):
    assert detect_language(question) == language


def test_values_tell_no_language_and_an_untold_language_is_none():
    assert detect_language("AB/100?") is None and detect_language("ana@example.com 2026-01-28") is None
    assert detect_language("Was kostet AB/100 und wann kommt PO-7781?") == "de"  # the values are left out
    assert detect_language("Hoe laat gaat de winkel open?") == "nl"  # a language the table lacks
    assert language_name("ja") == "Japanese" and language_name(None) is None


@pytest.mark.parametrize(("text", "language", "reads"), [
    ("PU-7 · Pump 7 · stopped · flow 0.0 m3/h", "en", True),  # a terse English line: English among the likeliest
    ("email: operational", "de", False),
    ("KB-3307 · Free up mailbox space", "fr", False),
    ("State: off", "ko", False),  # another script than the question's
    ("状態: 停止中", "ja", True),
    ("在庫: 14", "en", False),
    ("AB/100 · 14 · 2026-03-05", "de", None),  # bare values: no one's language
])
def test_a_tools_line_reads_as_a_language_or_as_none(text, language, reads):
    assert reads_as(text, language) is reads


def test_a_short_question_close_between_languages_is_taken_in_the_tables():
    # py3langid scores these Dutch first by a small margin; a confident Dutch question stays Dutch
    assert [detect_language(q) for q in ("List open orders", "Rooms in Porto?", "Find customer")] == ["en"] * 3
    assert detect_language("Wat is de status van bestelling 4411?") == "nl"


# the table ---------------------------------------------------------------------------------


def test_every_sentence_of_the_table_is_in_every_language_with_the_same_fields():
    for key, forms in PHRASES.items():
        assert set(forms) == {*LANGUAGES, NEUTRAL}, key
        fields = {name for _, name, _, _ in string.Formatter().parse(forms["en"]) if name}
        for language, template in forms.items():
            assert {name for _, name, _, _ in string.Formatter().parse(template) if name} == fields, (key, language)
            assert template.strip()


def test_a_language_the_table_lacks_gets_the_neutral_form_never_english():
    lead = phrase("report_lead", "nl", subject="AB/100")
    assert lead == phrase("report_lead", None, subject="AB/100") == "→ AB/100"
    assert "tools" not in lead and phrase("no_data", "sw") == "∅"
    with pytest.raises(KeyError):
        phrase("no_such_sentence", "en")


# the engine's own sentences in the question's language ---------------------------------------

STOCK = "Item: AB/100\nWarehouse: Lyon\nOn hand: 4"

LEADS = {
    "en": ("How many AB/100 are in stock?", "Here is what the tools report about AB/100."),
    "ja": ("AB/100の在庫はいくつですか？", "AB/100について、ツールの結果は次のとおりです。"),
    "zh": ("AB/100还有多少库存？", "以下是工具关于AB/100的结果。"),
    "es": ("¿Cuántas unidades de AB/100 quedan en el almacén?", "Esto es lo que indican las herramientas sobre AB/100."),
    "de": ("Wie viele AB/100 haben wir noch auf Lager?", "Das melden die Werkzeuge zu AB/100."),
    "fr": ("Combien de AB/100 reste-t-il en stock ?", "Voici ce que les outils indiquent sur AB/100."),
    "ko": ("AB/100 재고가 몇 개야?", "AB/100에 대해 도구가 조회한 결과입니다."),
}


@pytest.mark.parametrize("language", sorted(LEADS))
def test_the_lead_of_an_observation_answer_is_in_the_questions_language(language):
    question, lead = LEADS[language]
    text = observation_answer(question, [ok("stock_level", {"sku": "AB/100"}, STOCK)])
    assert text.splitlines()[0] == lead
    assert "- **On hand**: 4" in text.splitlines()
    assert "language" not in answer_problems(text, question, ["stock_level"])


@pytest.mark.parametrize("language", ["ja", "de", "en"])
def test_a_lead_of_data_lines_in_another_language_follows_the_engines_sentence(language):
    question, engine_lead = LEADS[language]
    named = "Warehouse: Lyon · On hand: 4 units left in the main store."
    lines = observation_answer(question, [ok("stock_level", {"sku": "AB/100"}, STOCK)], lead=named).splitlines()
    if language == "en":  # the named line is in the reader's language: it answers first
        assert lines[:3] == [named, "", engine_lead]
    else:  # English data, another reader: the answer opens in the reader's language
        assert lines[:3] == [engine_lead, "", named]


def test_an_unknown_language_gets_the_neutral_lead_and_the_turns_language_wins():
    steps = [ok("stock_level", {"sku": "AB/100"}, STOCK)]
    assert observation_answer("Hoeveel AB/100 hebben we nog op voorraad?", steps).startswith("→ AB/100\n")
    assert observation_answer("AB/100?", steps).startswith("→ AB/100\n")
    assert observation_answer("AB/100?", steps, language="fr").startswith("Voici ce que les outils indiquent sur AB/100.")


def test_nothing_found_and_what_can_be_looked_up_are_in_the_questions_language():
    failed = [{"tool_name": "stock_level", "tool_args": {"sku": "ZZ/9"}, "error": "unknown sku", "observation": ""}]
    text = observation_answer("Wie viele ZZ/9 haben wir auf Lager?", failed)
    assert text == "Kein Werkzeug hat Daten zu ZZ/9 geliefert.\n\nAntworten der Werkzeuge:\n- unknown sku"
    descriptions = {"stock_level": "Stock of an item in every warehouse.", "open_tickets": "Open help desk tickets."}
    answer = capabilities_answer("Bonjour, merci beaucoup pour votre aide !", descriptions)
    assert answer.splitlines()[0] == "Je n'ai pas de données à ce sujet, mais voici ce que je peux consulter pour vous :"
    assert "- Open help desk tickets." in answer.splitlines()
    assert capabilities_answer("こんにちは、よろしくお願いします", {}) == "その質問に答えるデータがありません。"


def test_a_stopped_runs_summary_is_in_the_turns_language():
    steps = [{"tool_name": "open_tickets", "tool_args": {}, "error": "timeout"}]
    text = summarize_steps(steps, phrase("stopped", "es", iterations=3), "es")
    assert text.splitlines() == ["Me detuve tras 3 iteraciones sin llegar a una respuesta final.", "Pasos realizados:",
                                 "1. open_tickets({}) — falló: timeout"]


async def test_the_flag_note_is_in_the_questions_language():
    tools = [shop_tool("order_status", "The shipping status of an order.")]
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[
        {"name": "order_status", "args": {"order_id": "4411"}, "id": "c1", "type": "tool_call"}]), "fertig"],
        synthesis="Die Bestellung 4411 wurde am 12. verschickt, 93 Pakete.")
    agent = ReActAgent(model, tools, abilities=ModelAbilities(tool_call=True), settings=AgentSettings(grounding="flag"))
    events = [e async for e in agent.astream_events("Wie ist der Status der Bestellung 4411?")]
    deltas = [e.data["content"] for e in events if e.channel == "answer" and e.data["status"] == "delta"]
    assert deltas[-1] == "\n\n> ⚠ In keinem Werkzeugergebnis gefunden: 12, 93."


# words of every script ----------------------------------------------------------------------


def test_words_are_split_for_every_script():
    assert tokenize("Müller GmbH", "de") == ["mull", "gmbh"]  # one word, accents folded after stemming
    assert tokenize("Café crème", "fr") == tokenize("cafe creme", "fr")
    assert tokenize("東京駅の在庫") == ["東京", "京駅", "駅の", "の在", "在庫"]
    assert tokenize("ｶﾀｶﾅ") == tokenize("カタカナ") == ["カタ", "タカ", "カナ"]  # half-width kana folded
    assert tokenize("주문 상태") == ["주문", "상태"] and tokenize("확인해줘") == ["확인", "인해", "해줘"]
    assert tokenize("订单4411的状态") == ["订单", "4411", "的状", "状态"]  # digits end a Han run
    assert tokenize("Welche Rechnungen", "de") == ["welch", "rechnung"]  # the German stemmer
    assert tokenize("facturas vencidas", "es") == ["factur", "venc"]


def test_a_question_ranks_tools_in_its_own_script_and_across_languages():
    tools = [shop_tool("stock", "在庫数を倉庫ごとに調べる。"), shop_tool("tickets", "Open help desk tickets by customer."),
             shop_tool("invoices", "Rechnungen eines Kunden und ihre Fälligkeit.")]
    ranker = ToolRanker(tools)
    assert ranker.rank("東京駅の在庫は？")[0][0] == "stock"
    assert ranker.rank("Welche Rechnungen sind überfällig?")[0][0] == "invoices"
    assert ranker.rank("Zeig mir die offenen Tickets")[0][0] == "tickets"  # a German question, an English word


# the lexical gate reads no language ---------------------------------------------------------


def test_the_gate_closes_for_a_greeting_in_any_language_and_opens_for_a_value():
    ranker = ToolRanker([shop_tool("order_status", "The shipping status of a customer's order."),
                         shop_tool("open_tickets", "The help desk tickets a customer has open.")])
    for greeting in ("Bonjour !", "こんにちは", "Guten Morgen, danke!", "안녕하세요", "Thanks a lot"):
        assert gate_closes(ranker, greeting, detect_language(greeting))
    question = "注文4411の状況は？"
    assert not gate_closes(ranker, question, detect_language(question))  # a value words cannot place: the model chooses
    assert not gate_closes(ranker, "Status of my order?", "en")


def help_desk(count: int = 14) -> list[StructuredTool]:
    extra = [shop_tool(f"report_{n:02d}", f"Quarterly report number {n} of the finance team.") for n in range(count - 2)]
    return [*extra, shop_tool("order_status", "The shipping status of a customer's order, by order number."),
            shop_tool("open_tickets", "The help desk tickets a customer has open.")]


async def test_a_question_in_another_language_naming_a_value_lets_the_model_choose():
    model = ScriptedChatModel(responses=[json.dumps({"tools": ["order_status"]}),
                                         json.dumps({"type": "final_answer", "reasoning": "r", "answer": "ok"})])
    agent = ReActAgent(model, help_desk(), abilities=SMALL_SCHEMA, settings=AgentSettings(lexical_gate=True))
    await agent.run("注文4411の状況は？")
    assert model.kinds[0] == "selection"  # no word shared, a value named: not decided by the gate
    loop_schema = model.call_kwargs[1]["response_format"]["schema"]
    assert loop_schema["anyOf"][0]["properties"]["tool_name"]["enum"] == ["order_status"]


async def test_a_greeting_gets_no_tool_in_any_language():
    for greeting in ("Bonjour, merci beaucoup !", "こんにちは、ありがとう"):
        model = ScriptedChatModel(responses=[json.dumps({"type": "final_answer", "reasoning": "r", "answer": "Salut"})])
        result = await ReActAgent(model, help_desk(), abilities=SMALL_SCHEMA, settings=AgentSettings(lexical_gate=True)).run(greeting)
        assert model.kinds == ["tool_loop"] and result.steps == []
        schema = model.call_kwargs[0]["response_format"]["schema"]
        assert [branch["properties"]["type"]["enum"] for branch in schema.get("anyOf", [schema])] == [["final_answer"]]


async def test_a_greeting_answered_with_the_prompt_written_back_is_not_shown():
    echo = "你好！\n\nWork log:\n(no tools were called)\n\nDraft answer from the assistant:\nYou are done!"
    model = ScriptedChatModel(responses=[json.dumps({"type": "final_answer", "reasoning": "r", "answer": "你好"})],
                              synthesis=echo)
    agent = ReActAgent(model, help_desk(), abilities=SMALL_SCHEMA)
    result = await agent.run("你好！")
    shown = "".join([piece async for piece in agent.stream_answer("你好！", result)])
    assert "Work log" not in shown and "Draft answer" not in shown
    assert "prompt_echo" in answer_problems(echo, "你好！")


@pytest.mark.parametrize("answer", [
    "안녕하세요!\n\nDraft answer:\n안녕하세요!",  # the heading's first words, as a small model shortens it
    "Hola.\n\n**Work log:**\n(nada)",
])
def test_a_shortened_heading_of_the_prompt_is_the_prompt_written_back(answer):
    assert "prompt_echo" in answer_problems(answer, "안녕하세요, 좋은 하루 보내세요!")


@pytest.mark.parametrize(("answer", "question", "echo"), [
    ("M00042の本は「Solaris」です。\n\nこの回答は、work logで確認した情報を直接引用しています。", "M00042の本は？", True),
    ("Per the Work Log, two repairs were made.", "What did they fix?", True),
    ("The work log of P-2 shows two repairs.", "What does the work log of P-2 say?", False),  # the user's words
])
def test_an_answer_speaking_of_its_prompts_sections_is_the_prompt_written_back(answer, question, echo):
    assert ("prompt_echo" in answer_problems(answer, question)) is echo


def test_a_line_that_only_opens_like_a_heading_is_no_echo():
    assert "prompt_echo" not in answer_problems("Draft answers are kept for 30 days.", "How long are drafts kept?")


def test_a_limit_and_an_empty_plan_are_told_in_the_goals_language():
    from reactgraph.dag.executor import results_answer
    from reactgraph.core.limits import describe_limit

    reached = {"limit": "tool_calls", "max": 2, "used": 2}
    assert describe_limit(reached) == "I stopped because the run reached its limit of 2 tool calls (used 2)."
    assert describe_limit(reached, "ja") == "実行の上限に達したため停止しました（tool_calls: 2/2）。"
    per_tool = {"limit": "tool_calls_per_tool", "tool": "open_tickets", "max": 1, "used": 1}
    assert describe_limit(per_tool, None) == "■ tool_calls_per_tool[open_tickets]: 1/1"
    plan = [{"id": "s1", "description": "Liste les tickets ouverts"}]
    assert results_answer(plan, {}, detect_language("Quels tickets sont encore ouverts ?")) == \
        "Aucune étape du plan n'a produit de résultat."


async def test_the_turns_language_is_told_once_and_kept_in_the_state():
    from langgraph.checkpoint.memory import InMemorySaver

    tools = [shop_tool("order_status", "The shipping status of a customer's order, by order number.")]
    model = ScriptedChatModel(responses=["Ihre Bestellung ist unterwegs.", "お待たせしました。"], repeat_last=True)
    agent = ReActAgent(model, tools, abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "shop"}}
    await agent.run("Wo ist meine Bestellung 4411 gerade?", thread_id="shop")
    assert (await agent.graph.aget_state(config)).values["language"] == "de"
    await agent.run("注文4411はいつ届きますか？", thread_id="shop")  # a new turn tells its own
    assert (await agent.graph.aget_state(config)).values["language"] == "ja"


async def test_a_question_that_tells_no_language_takes_the_threads_then_the_tools():
    from langgraph.checkpoint.memory import InMemorySaver

    tools = [shop_tool("order_status", "Der Versandstatus einer Bestellung, nach Bestellnummer.")]
    model = ScriptedChatModel(responses=["Unterwegs."], repeat_last=True)
    agent = ReActAgent(model, tools, abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "bare"}}
    await agent.run("4411?", thread_id="bare")  # nothing but a value: the tools' language
    assert (await agent.graph.aget_state(config)).values["language"] == "de"
    await agent.run("Où est ma commande 4411 ?", thread_id="bare")
    await agent.run("4412?", thread_id="bare")  # the thread's language wins over the tools'
    assert (await agent.graph.aget_state(config)).values["language"] == "fr"
