"""The scoring rules of bench/domains.py and the BFCL adapters of bench/bfcl.py (no model).

The benches are the measure of generality beyond the demo plant; these tests keep their rules
from changing silently.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.helpers import REPO

_BENCH = REPO / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, _BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


dm = _load("domains")
bf = _load("bfcl")


def _tools(domain: str) -> dict:
    return {tool.name: tool for tool in dm.build_domain_tools(domain)}


def test_the_question_set_spans_four_domains_twelve_languages_and_every_kind():
    assert len(dm.QUESTIONS) >= 90
    assert {q.domain for q in dm.QUESTIONS} == set(dm.DOMAINS) == {"shop", "helpdesk", "library", "clinic"}
    assert {q.lang for q in dm.QUESTIONS} == set(dm.LANGUAGES) >= {
        "en", "ko", "ja", "zh", "es", "de", "fr", "pt", "it", "ru", "vi", "id"}
    for domain in dm.DOMAINS:
        tools = _tools(domain)
        assert len(tools) == (7 if domain == "clinic" else 5)
        mine = [q for q in dm.QUESTIONS if q.domain == domain]
        assert {q.kind for q in mine} == {"tool", "not_found", "no_tool"}, domain
        assert {q.tool for q in mine if q.tool} == set(tools), domain  # every tool is asked for
        for q in mine:
            assert q.lang in dm.LANGUAGES and dm.detect_language(q.text) == q.lang, q.text
            truth = dm.ground_truth(q, tools)
            if q.kind == "tool":  # every fact is in the right tool's own output
                assert q.facts and all(dm.fact_in_answer(f, truth) for f in q.facts), q.text
            elif q.kind == "not_found":
                assert not q.facts and q.tool in tools and truth


def test_values_keep_a_slash_sku_an_email_a_uuid_and_a_date_whole():
    found = dm.values_of("AB/100 kostet 24,90 EUR; Bestellung 482913 an mina.park@example.com am 2026-11-28 "
                         "um 09:30, Ticket 3f9c2a7e-5b1d-4c8e-9a2f-6d1e8b7c4a01, KB-1042")
    assert found["code"] == {"AB/100", "KB-1042"}
    assert found["email"] == {"mina.park@example.com"} and found["date"] == {"2026-11-28"}
    assert found["uuid"] == {"3f9c2a7e-5b1d-4c8e-9a2f-6d1e8b7c4a01"} and found["time"] == {"09:30"}
    assert found["number"] == {"24.9", "482913"}


def test_a_value_beside_hangul_or_cjk_letters_is_still_whole():
    uuid = "8b2e4d10-7c3a-4f5b-b6e1-2a9d0c5f7e32"
    assert dm.values_of(f"{uuid}에 대해")["uuid"] == {uuid}
    found = dm.values_of(f"以下是关于{uuid}的结果，商品KT/310的库存")
    assert found["uuid"] == {uuid} and found["code"] == {"KT/310"} and found["number"] == set()
    assert dm.invented_values(f"관于{uuid}에", [f"Ticket {uuid}"]) == []


def test_invented_values_and_facts_in_another_notation():
    sources = ["商品KT/310の在庫は？", "KT/310 | Cast iron pan 28 cm | kitchen | 45.50 EUR | 7 in stock | 2026-11-28"]
    assert dm.invented_values("KT/310の在庫は7個、価格は45.5ユーロです。2026年11月28日", sources) == []
    assert dm.invented_values("KT/311: 8 in stock, order 123456", sources) == [
        "code:KT/311", "number:123456", "number:8"]
    assert dm.fact_in_answer("2026-11-28", "発送日は2026年11月28日です")
    assert dm.fact_in_answer("45.50", "Prix : 45,50 EUR") and not dm.fact_in_answer("45.50", "Prix : 54 EUR")
    assert dm.fact_in_answer("j.kim@helpdesk.example", "Zuständig: J.Kim@helpdesk.example")
    # a time of day with or without its leading zero is the same time
    visits = ["09:30 | Room 2.14 | monitor swap"]
    assert dm.invented_values("1. 9:30 | Room 2.14", visits) == [] and dm.fact_in_answer("09:30", "um 9:30 Uhr")
    assert dm.invented_values("10:30 | Room 2.14", visits) == ["time:10:30"] and not dm.fact_in_answer("09:30", "19:30")


def test_the_language_is_read_from_the_prose_not_from_values_or_table_rows():
    assert dm.detect_language("Here is what the tools report about AB/100.") == "en"
    assert dm.detect_language("Der Artikel KT/412 kostet 89,00 EUR.") == "de"
    assert dm.detect_language("商品KT/310の在庫は7個あります。") == "ja"
    assert dm.detect_language("AB/100 | Garden hose | 12\nKT/310 | Pan | 7") is None
    assert dm.lead_line("| a | b |\nLa commande 611480 est expédiée.") == "La commande 611480 est expédiée."


def test_a_run_is_scored_for_call_fact_language_and_nothing_found():
    q = next(q for q in dm.QUESTIONS if q.text == "Was kostet der Artikel KT/412?")
    call = dm.aq.Call("get_product", {"sku": "KT/412"}, dm.get_product("KT/412"))
    good = dm.score_domain_run(q, [call], "Der Artikel KT/412 kostet 89,00 EUR.", "covered")
    assert good.right_call and good.carries_facts and good.lead_language and good.answer_language
    assert not good.invented
    english = dm.score_domain_run(q, [call], "Here is what the tools report about KT/412: 89.00 EUR.", "covered")
    assert english.carries_facts and not english.lead_language
    cut = dm.score_domain_run(q, [dm.aq.Call("get_product", {"sku": "412"}, "")], "Unbekannt.", "covered")
    assert not cut.right_call and not cut.carries_facts  # an id cut to its digits is not the value asked for
    missing = next(q for q in dm.QUESTIONS if q.text == "Où en est la commande 999999 ?")
    reply = dm.get_order_status("999999")
    said = dm.score_domain_run(missing, [dm.aq.Call("get_order_status", {"order_number": "999999"}, reply)],
                               "Aucune commande trouvée avec le numéro 999999.", "not_found")
    assert said.right_call and said.carries_facts and not said.not_found_covered and said.answer_language
    shown = dm.score_domain_run(missing, [dm.aq.Call("get_order_status", {"order_number": "999999"}, reply)],
                                "Here is what the tools report. No order found with number 999999.", "covered")
    assert shown.not_found_covered and not shown.answer_language
    greeting = next(q for q in dm.QUESTIONS if q.text.startswith("Bonjour"))
    searched = dm.score_domain_run(greeting, [dm.aq.Call("search_products", {"query": "search_products"}, "")],
                                   "Bonjour ! Comment puis-je vous aider ?", "covered")
    assert not searched.right_call and searched.answer_language
    row = dm.DomainRow("reactgraph")
    row.add("tool", good, 1, 3.0)
    row.add("not_found", shown, 2, 5.0)
    assert "| reactgraph | 2 | 100% (2) | 100% (2) | 50% (1) | 50% (1) | 0 | 1/1 | 0 | 2 | 4.0 |" in dm.domain_table([row])


def test_bfcl_docs_become_json_schema_and_names_map_back():
    doc = {"type": "dict", "properties": {
        "x": {"type": "float"}, "pair": {"type": "tuple", "items": {"type": "integer"}},
        "meta": {"type": "dict", "properties": {"v": {"type": "any", "description": "anything"}}}},
        "required": ["x"]}
    assert bf.to_json_schema(doc) == {"type": "object", "properties": {
        "x": {"type": "number"}, "pair": {"type": "array", "items": {"type": "integer"}},
        "meta": {"type": "object", "properties": {"v": {"description": "anything"}}}}, "required": ["x"]}
    names = bf.safe_names(["math.factorial", "math_factorial", "get weather"])
    assert names == {"math_factorial": "math.factorial", "math_factorial_2": "math_factorial",
                     "get_weather": "get weather"}
    case = bf.Case("simple_0", "simple_python", [{"role": "user", "content": "5!"}],
                   [{"name": "math.factorial", "description": "Factorial.",
                     "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}},
                                    "required": ["number"]}}], [{"math.factorial": {"number": [5]}}])
    tools, back = bf.case_tools(case)
    assert [t.name for t in tools] == ["math_factorial"] and tools[0].invoke({"number": 5})
    calls = [bf.aq.Call("math_factorial", {"number": 5}), bf.aq.Call("math_factorial", {"number": 5}),
             bf.aq.Call("other", "not a dict")]
    assert bf.model_output(calls, back) == [{"math.factorial": {"number": 5}}, {"other": {}}]


def test_bfcl_irrelevance_is_right_only_without_a_call():
    case = bf.Case("irrelevance_0", "irrelevance", [], [])
    assert bf.check(case, [], None, None) == (True, "")
    assert bf.check(case, [{"f": {}}], None, None)[0] is False
    # a call the engine refused before it started did nothing: it is no output
    refused, ran = bf.aq.Call("f", {"case_id": "1234567890"}, ran=False), bf.aq.Call("g", {"x": 1})
    assert bf.model_output([refused, ran], {}) == [{"g": {"x": 1}}]
    wrong = bf.Case("simple_0", "simple_python", [], [], [])
    assert bf.check(wrong, [], None, None) == (False, "no tool call")


def test_an_email_ends_where_its_ascii_ends_and_saved_runs_can_be_scored_again(tmp_path):
    assert dm.values_of("l.chen@helpdesk.example에 대해")["email"] == {"l.chen@helpdesk.example"}
    q = next(q for q in dm.QUESTIONS if q.text.startswith("l.chen@helpdesk.example"))
    run = {"row": "reactgraph", "question": dm.asdict(q), "finish_reason": "covered", "model_calls": 1,
           "seconds": 2.0, "answer": "l.chen@helpdesk.example에게 배정된 티켓이 없습니다.",
           "calls": [dm.asdict(dm.aq.Call("list_staff_tickets", {"staff_email": "l.chen@helpdesk.example"},
                                          dm.list_staff_tickets("l.chen@helpdesk.example")))]}
    saved = tmp_path / "runs.json"
    saved.write_text(dm.json.dumps({"runs": [run]}), encoding="utf-8")
    assert "| reactgraph | 1 | 100% (1) | 100% (1) | 100% (1) | 100% (1) | 0 | 1/1 | 0 | 1 | 2.0 |" in dm.rescore([saved])


def test_the_answer_language_is_judged_on_the_lines_written_for_the_reader_not_on_the_tools_data():
    q = next(q for q in dm.QUESTIONS if q.text == "Was kostet der Artikel KT/412?")
    call = dm.aq.Call("get_product", {"sku": "KT/412"}, dm.get_product("KT/412"))
    german = "Der Artikel KT/412 kostet 89,00 EUR.\n- KT/412 · Chef knife 21 cm · kitchen · 89.00 EUR · 3 in stock"
    assert dm.engine_lines(german, [call.observation]) == ["Der Artikel KT/412 kostet 89,00 EUR."]
    assert dm.score_domain_run(q, [call], german, "covered").answer_language
    note = german + "\nNote: the price was checked against the catalogue today."
    assert not dm.score_domain_run(q, [call], note, "covered").answer_language  # an English note of the engine
    only_data = "- KT/412 · Chef knife 21 cm · kitchen · 89.00 EUR · 3 in stock"
    assert not dm.score_domain_run(q, [call], only_data, "covered").answer_language  # nothing written for the reader


def test_the_tools_descriptions_quoted_in_an_answer_are_the_tools_text_not_the_engines():
    q = next(q for q in dm.QUESTIONS if q.text == "안녕하세요, 좋은 하루 보내세요!")
    listed = "\n".join(f"- {line.splitlines()[0]}" for line in dm.tool_descriptions("helpdesk"))
    answer = "이 질문에 답할 데이터는 없지만, 다음 내용은 도구로 조회해 드릴 수 있습니다:\n\n" + listed
    assert dm.score_domain_run(q, [], answer, "final_answer").answer_language
    english = "I have no data on that, but I can look up these:\n\n" + listed
    assert not dm.score_domain_run(q, [], english, "final_answer").answer_language  # the engine's own line


def test_bfcl_gate_only_reads_each_case_without_a_model():
    def case(category: str, question: str) -> object:
        return bf.Case(f"{category}_{len(question)}", category, [{"role": "user", "content": question}],
                       [{"name": "calculate_population_growth", "description": "Project the population growth of a species.",
                         "parameters": {"type": "dict", "properties": {"current_population": {"type": "integer"},
                                                                        "birth_rate": {"type": "float"}},
                                        "required": ["current_population", "birth_rate"]}}])

    greeting = case("irrelevance", "Hi there, thanks a lot!")
    deer = case("irrelevance", "How to increase the population of deer in a forest?")
    wolves = case("irrelevance", "Which animals eat wolves?")
    growth = case("simple_python", "Population growth of 1200 deer at a birth rate of 0.3?")
    assert [bf.gate_closed(c) for c in (greeting, deer, wolves, growth)] == [True, True, True, False]
    table = bf.gate_table([greeting, deer, wolves, growth], ["simple_python", "irrelevance"], verbose=True)
    assert "| simple_python | 1 | 0 |" in table and "| irrelevance | 3 | 3 |" in table
    assert table.endswith("| irrelevance | 3 | 3 |")  # nothing wrong to list


def test_the_engines_own_no_data_sentence_counts_as_nothing_found_in_every_bench_language():
    from reactgraph.core.language import phrase

    for language in dm.LANGUAGES:
        said = phrase("no_data_about", language, subject="AB/999").lower()
        assert any(cue in said for cue in dm.NOT_FOUND_CUES), language


def test_the_library_tools_reply_in_json_in_a_table_and_in_a_polite_sentence():
    record = dm.json.loads(dm.get_book("9781402894626"))  # an ISBN typed without dashes is the same title
    assert record["isbn"] == "978-1-4028-9462-6" and record["shelf"] == "551.57 MOR" and record["found"]
    assert dm.json.loads(dm.get_book("978-1-11-111111-1")) == {"isbn": "978-1-11-111111-1", "found": False}
    loans = dm.member_loans("m00042").splitlines()
    assert loans[0] == "isbn | title | due | renewals" and len(loans) == 3 and "2026-12-15" in loans[2]
    assert dm.member_loans("M00318") == "Card M00318 has no books on loan."
    sorry = dm.get_member("M99999")
    assert sorry.startswith("I'm sorry") and "M99999" in sorry and "Card" not in sorry
    assert dm.branch_opening_hours("central", "2026-12-12") == "central on Saturday 2026-12-12: open 10:00-16:00."
    assert dm.branch_opening_hours("harbour", "2026-12-26").endswith("closed.")
    assert "until 2027-01-11" in dm.branch_opening_hours("riverside", "2026-12-14")
    assert dm.search_catalogue("zeppelin") == "No titles match 'zeppelin'."
    assert dm.search_catalogue("Morita").splitlines()[1].startswith("978-1-4028-9462-6 |")


def test_an_isbn_and_a_card_number_are_whole_values_and_a_changed_one_is_invented():
    found = dm.values_of("Karte M00042: 978-3-16-148410-0 fällig am 2026-12-10, geöffnet 10:00-16:00")
    assert found["code"] == {"M00042", "978-3-16-148410-0"} and found["date"] == {"2026-12-10"}
    assert found["time"] == {"10:00", "16:00"} and found["number"] == set()
    sources = ["Welche Bücher hat M00042?", dm.member_loans("M00042")]
    assert dm.invented_values("M00042 : 978-3-16-148410-0, 2026-12-10", sources) == []
    assert dm.invented_values("M00042 : 978-3-16-148410-9 et M00043", sources) == [
        "code:978-3-16-148410-9", "code:M00043"]
    assert dm.detect_language("Il libro 978-1-4028-9462-6 si trova sullo scaffale 551.57 MOR.") == "it"
    assert dm.detect_language("O sócio M00107 tem um livro emprestado até 2026-12-20.") == "pt"


def test_a_polite_not_found_reply_reported_in_portuguese_or_italian_counts_as_nothing_found():
    q = next(q for q in dm.QUESTIONS if q.text == "Quali libri ha in prestito la tessera M00318?")
    call = dm.aq.Call("member_loans", {"member_no": "M00318"}, dm.member_loans("M00318"))
    said = dm.score_domain_run(q, [call], "La tessera M00318 non ha libri in prestito.", "not_found")
    assert said.right_call and said.carries_facts and said.answer_language and not said.not_found_covered
    listed = dm.score_domain_run(q, [call], "Ecco i prestiti della tessera M00318: Card M00318 has no books on loan.",
                                 "covered")
    assert listed.carries_facts and listed.not_found_covered  # the tool's own sentence, but ended covered
    search = next(q for q in dm.QUESTIONS if q.text == "Got anything by Aiko Morita?")
    hit = dm.aq.Call("search_catalogue", {"text": "Aiko Morita"}, dm.search_catalogue("Aiko Morita"))
    assert dm.score_domain_run(search, [hit], "Yes: A Grammar of Clouds (978-1-4028-9462-6), 4 copies free.",
                               "covered").carries_facts


def test_the_clinic_tools_reply_in_key_value_lines_in_csv_and_with_an_optional_day_count():
    record = dict(line.split("=", 1) for line in dm.get_appointment("apt-2026-00417").splitlines())
    assert record["appointment_id"] == "APT-2026-00417" and record["room"] == "R2.14" and record["time"] == "10:30"
    assert dm.get_appointment("APT-2026-09999") == "error=not_found\nappointment_id=APT-2026-09999"
    slots = dm.doctor_free_slots("Okafor", "2026-12-10").splitlines()
    assert slots[0] == "time,room,minutes" and slots[1] == "08:30,R2.14,20" and len(slots) == 4
    assert dm.doctor_free_slots("Nguyen", "2026-12-10") == "time,room,minutes\n"  # the header alone: no slot
    week = dm.upcoming_appointments("P-91-2207").splitlines()
    fortnight = dm.upcoming_appointments("P-91-2207", days_ahead=14).splitlines()
    assert week[0] == fortnight[0] == "appointment,date,time,doctor,room,status"
    assert [row.split(",")[0] for row in week[1:]] == ["APT-2026-00452"]
    assert [row.split(",")[0] for row in fortnight[1:]] == ["APT-2026-00452", "APT-2026-00489"]
    tools = _tools("clinic")
    schema = tools["upcoming_appointments"].args_schema.model_json_schema()
    assert schema["required"] == ["patient_no"] and schema["properties"]["days_ahead"]["default"] == 7
    assert set(tools["doctor_free_slots"].args_schema.model_json_schema()["required"]) == {"doctor", "day"}
    booked = dm.book_appointment("P-88-1043", "Okafor", "2026-12-10")
    assert "APT-2026-00500" in booked and "08:30" in booked
    assert dm.book_appointment("P-88-1043", "Okafor", "2026-12-10") == booked  # it writes nothing: runs stay alike
    assert [name for name, tool in tools.items() if (tool.metadata or {}).get("side_effects")] == ["book_appointment"]
    for call, args in ((tools["get_patient"], {"patient_no": "P-00-0000"}),
                       (tools["book_appointment"], {"patient_no": "P-88-1043", "doctor": "Santos", "day": "2026-12-10"})):
        with pytest.raises(dm.ToolException):  # an unknown patient, a day with no slot: the error text
            call.func(**args)
    assert ":param appointment_id:" in tools["get_appointment"].description
    assert "Example:" in tools["get_patient"].description and "Example:" in tools["find_service"].description
    assert dm.find_service("zeppelin") == "0 services."


def test_a_room_code_and_the_clinics_ids_are_whole_values_and_the_new_languages_are_told_apart():
    found = dm.values_of("Приём APT-2026-00452 в 14:15, кабинет R1.03; пациент P-91-2207, полис HP-30871, 48.00 EUR")
    assert found["code"] == {"APT-2026-00452", "R1.03", "P-91-2207", "HP-30871"}
    assert found["time"] == {"14:15"} and found["number"] == {"48"} and found["date"] == set()
    sources = ["Ruang R3.02 ada di lantai berapa?", dm.room_directions("R3.02")]
    assert dm.invented_values("Ruang R3.02 ada di lantai 3, lift C.", sources) == []
    assert dm.invented_values("Ruang R3.20 ada di lantai 3.", sources) == ["code:R3.20"]
    assert not dm.fact_in_answer("2", "La stanza R2.14.") and dm.fact_in_answer("2", "La stanza R2.14 è al piano 2.")
    assert dm.invented_values("Ecco cosa riportano gli strumenti su R2.14.", [dm.room_directions("R2.14")]) == []
    assert dm.detect_language("Приём APT-2026-00452 назначен на 14:15 в кабинете R1.03.") == "ru"
    assert dm.detect_language("Lịch hẹn APT-2026-00468 của bạn là ngày 2026-12-15.") == "vi"
    assert dm.detect_language("Dokter untuk janji APT-2026-00489 adalah dr. Okafor.") == "id"


def test_nothing_found_said_in_russian_vietnamese_or_indonesian_counts():
    q = next(q for q in dm.QUESTIONS if q.text == "Покажите, пожалуйста, запись APT-2026-09999.")
    call = dm.aq.Call("get_appointment", {"appointment_id": "APT-2026-09999"}, dm.get_appointment("APT-2026-09999"))
    said = dm.score_domain_run(q, [call], "Запись APT-2026-09999 не найдена.", "not_found")
    assert said.right_call and said.carries_facts and said.answer_language and not said.not_found_covered
    shown = dm.score_domain_run(q, [call], "Вот что сообщают инструменты по запросу «APT-2026-09999».\n\n"
                                "- error=not_found\n- appointment_id=APT-2026-09999", "covered")
    assert not shown.carries_facts and shown.not_found_covered  # the tool's raw flag echoed is no "nothing found"
    patient = next(q for q in dm.QUESTIONS if q.text == "Tolong cek data pasien P-00-0000.")
    error = dm.aq.Call("get_patient", {"patient_no": "P-00-0000"}, "", "Patient P-00-0000 is not registered.")
    assert dm.score_domain_run(patient, [error], "Pasien P-00-0000 tidak terdaftar di klinik ini.",
                               "not_found").carries_facts
    greeting = next(q for q in dm.QUESTIONS if q.text.startswith("Xin chào"))
    assert dm.score_domain_run(greeting, [], "Xin chào! Tôi có thể giúp gì cho bạn?", "final_answer").answer_language
