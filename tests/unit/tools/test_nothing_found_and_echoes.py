"""What a tool result holds and what a call's text argument repeats, on non-demo tools."""

from __future__ import annotations

import pytest
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph import ReActAgent
from reactgraph.protocol.action_schema import tool_args_schema
from reactgraph.testing import ScriptedChatModel
from reactgraph.tools.runner import holds_no_data
from reactgraph.tools.values import echoes_tool
from tests.helpers import SMALL_SCHEMA, call_json, final


@pytest.mark.parametrize(("observation", "empty"), [
    ("No rooms booked on 2027-02-14.", True),  # none for the one date asked
    ("No loans for ines.moreau@biblio.example.fr.", True),
    ("0 titles match 'Solaris'.", True),
    ("No rooms booked between 2027-02-14 and 2027-02-20.", False),  # an absence over a span is a finding
    ("No members above 3 overdue items.", False),  # under a condition: a finding
    ("No overdue loans.", False),
    ("Room 2.14 | 09:30 | booked by ines.moreau@biblio.example.fr", False),
    ("No loans for ines.moreau@biblio.example.fr.\nLast loan returned 2026-10-01.", False),
    ("I'm sorry, but we could not locate a library card numbered M99999.", True),
    ("Unable to find title 'Solaris'.", True),
    ('{"found": false, "isbn": "978-1-11-111111-1"}', True),  # a JSON reply's own flag
    ('{"found": true, "isbn": "978-3-16-148410-0", "title": "Solaris"}', False),
    ('{"available": false, "isbn": "978-3-16-148410-0"}', False),  # not on the shelf: a finding
    ("Card M00318 has no books on loan.", True),  # none for the one card asked
    ("error=not_found\nappointment_id=APT-2026-09999", True),  # a key=value reply's own code
    ("Line B has no alarms between 2026-01-01 and 2026-01-07.", False),  # over a span: a finding
])
def test_a_one_line_none_for_one_value_holds_no_data(observation, empty):
    assert holds_no_data(observation) is empty


@pytest.mark.parametrize(("observation", "empty"), [
    ("Titel 978-3-16 nicht gefunden.", True),
    ("Livre introuvable : 978-3-16", True),
    ("Libro desconocido: 978-3-16. Libros válidos: 978-0-14, 978-0-15", True),
    ("会員 A-7731 は見つかりません。", True),
    ("未找到会员 A-7731", True),
    ("회원 A-7731을 찾을 수 없습니다.", True),
    ("Читатель A-7731 не найден.", True),
    ("Không tìm thấy bạn đọc A-7731.", True),
    ("Anggota tidak ditemukan: A-7731", True),
    ("Keine Ausleihen zwischen 2027-02-14 und 2027-02-20.", False),  # an absence over a span is a finding
    ("대출 가능 도서 없음", False),  # "none available" is the finding itself
    ("Ausleihe 4411: zurückgegeben am 2027-02-14, unbekanntermaßen beschädigt", False),  # no cue as a whole word
])
def test_a_not_found_reply_in_another_language_holds_no_data(observation, empty):
    assert holds_no_data(observation) is empty


class _Search(BaseModel):
    query: str = Field(description="Words of the title or author.")


def search_catalogue(query: str) -> str:
    """Find books by title or author."""
    return query


def test_a_text_argument_repeating_the_tools_own_words_is_an_echo():
    tool = StructuredTool.from_function(search_catalogue, args_schema=_Search)
    schema = tool_args_schema(tool)
    for value in ("search_catalogue", "Search Catalogue", "find books by title or author.", "query",
                  "Words of the title or author", "SearchCatalogue", "search-catalogue",
                  "Words of the title or the author", "Words in the title or author"):  # one word changed
        assert echoes_tool(value, tool.name, tool.description, schema), value
    for value in ("Le Guin", "catalogue", "search", "", None, 3, "Words of the sea by Le Guin"):
        assert not echoes_tool(value, tool.name, tool.description, schema), value


async def test_a_refused_echo_repeated_in_json_mode_is_refused_again():
    """A JSON-mode model shown the refusal (a user message quoting "Call search_catalogue with …")
    that repeats the call is refused again: the engine's words quoting the tool's name are no
    user's, so the tool never runs with its own name as the search."""
    ran: list[str] = []

    def search(query: str) -> str:
        ran.append(query)
        return "0 titles"

    tool = StructuredTool.from_function(search, name="search_catalogue", description="Find books by title or author.")
    call = call_json("search_catalogue", {"query": "search_catalogue"})
    model = ScriptedChatModel(responses=[call, call, final("I do not know.")])
    result = await ReActAgent(model, [tool], abilities=SMALL_SCHEMA).run("Which books about dance do you have?")
    assert ran == []
    assert len(result.steps) == 2 and all(step.error for step in result.steps)
