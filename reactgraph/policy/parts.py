"""The parts of a question: a question that asks two or more things gets data for each (SPEC R13.1).

"What is wrong with pump P-2, and do we have spare parts for it?" asks two things; a small
model offered one tool answers one of them. :func:`question_parts` cuts a question into the
parts that ask different things, without knowing the domain or needing the language:

1. *Clauses* (:func:`clauses`): the text is cut after a question mark followed by more text,
   at ``;``, and before a joining word (the language table's
   :data:`~reactgraph.core.language.PART_JOINERS`: "and", "also", "y", "und", "et", ...), with
   the comma before it, and after a word ending in a joining ending
   (:data:`~reactgraph.core.language.PART_SUFFIXES`: a Korean noun joined by its particle).
2. *Parts*: a clause stands as a part of its own only when it asks about something: it has
   at least :data:`PART_MIN_WORDS` search word(s) besides ids and figures, and some tool
   shares a word with it (the caller's ranking). Any other clause ("P-9" of "compare
   P-1 and P-9") is joined back to the part before it. Parts whose tools turn out
   to be the same are merged by the caller (one tool answers both).

3. *Values* (:func:`part_values`): each part's values are the ones it names itself; a part
   that names no record (an id, a date) takes the previous part's too when it refers back to it ("…, and do we have
   spare parts for *it*?": the language table's
   :data:`~reactgraph.core.language.BACK_REFERENCES`), and in a language that leaves that
   unsaid (:data:`~reactgraph.core.language.UNSAID_REFERENCE_LANGUAGES`: Korean, Japanese,
   Chinese) without such a word.

Which tool answers each part is chosen by :mod:`reactgraph.nodes.select_tools`, ranked on the
part's own words and values; the loop calls each part's tool with that part's values
(:func:`reactgraph.nodes.llm_call.current_part`) and counts the question covered only when
every part's tool brought data (:func:`reactgraph.nodes.llm_call.pending_parts`). Several
values a part lists for one argument of its tool ("the weather in Boston and in San
Francisco") are no parts: :mod:`reactgraph.policy.value_sets` gives each its call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from reactgraph.core.language import BACK_REFERENCES, PART_JOINERS, PART_SUFFIXES, UNSAID_REFERENCE_LANGUAGES
from reactgraph.tools.ranking import tokenize
from reactgraph.tools.values import without_values

PART_MIN_WORDS = 1
"""Search words (:func:`~reactgraph.tools.ranking.tokenize`, ids and figures left out) a clause
needs to stand as a part of its own."""

_SPACED = [joiner for joiner in PART_JOINERS if not re.search(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3]", joiner)]
_UNSPACED = [joiner for joiner in PART_JOINERS if joiner not in _SPACED]
_CUT = re.compile(
    r"(?<=[?？])\s*(?=\S)"  # after a question mark followed by more text
    r"|\s*[;；]\s*"
    r"|,?\s*(?<![\w-])(?=(?:" + "|".join(re.escape(word) for word in sorted(_SPACED, key=len, reverse=True))
    + r")\s)"
    r"|[,、，]?\s*(?=(?:" + "|".join(re.escape(word) for word in sorted(_UNSPACED, key=len, reverse=True)) + r"))"
    # an ending after two letters of the word (a short word may end so by chance)
    r"|(?:" + "|".join(rf"(?<=[^\W\d_]{{2}}{re.escape(ending)})" for ending in PART_SUFFIXES) + r")[,、，]?\s+",
    re.IGNORECASE,
)


def clauses(question: str) -> list[str]:
    """``question`` cut at every place a new request may start (step 1 of the module
    docstring): the non-empty pieces, in order, stripped (a joining word stays at the start
    of its piece)."""
    return [piece.strip() for piece in _CUT.split(question) if piece and piece.strip()]


def _content_words(text: str) -> list[str]:
    stripped = without_values(text)
    joiners = {word.lower() for word in PART_JOINERS}
    return [word for word in tokenize(stripped) if word not in joiners]


def asks_something(clause: str, rank: Callable[[str], Sequence[tuple[str, float]]]) -> bool:
    """Whether ``clause`` can stand as a part of its own: :data:`PART_MIN_WORDS` search word(s)
    besides ids and figures, and a tool ranked above 0 for it (``rank``: text → ``(tool name,
    score)`` best first, as :meth:`~reactgraph.tools.ranking.ToolRanker.rank`)."""
    if len(_content_words(clause)) < PART_MIN_WORDS:
        return False
    ranked = rank(clause)
    return bool(ranked) and ranked[0][1] > 0


def question_parts(question: str, rank: Callable[[str], Sequence[tuple[str, float]]]) -> list[str]:
    """The parts of ``question`` that ask different things (see the module docstring).

    Args:
        question: The user's question, in any language.
        rank: Text → the tools ranked for it, ``(name, score)`` best first.

    Returns:
        The parts in the question's order, each the text of its clauses; ``[question]`` when
        it asks one thing (or is empty).
    """
    parts: list[str] = []
    leading = ""  # clauses before the first part of their own
    for clause in clauses(question):
        if asks_something(clause, rank):
            parts.append(f"{leading} {clause}".strip())
            leading = ""
        elif parts:
            parts[-1] = f"{parts[-1]} {clause}"
        else:
            leading = f"{leading} {clause}".strip()
    if leading:
        if not parts:
            return [question]
        parts[-1] = f"{parts[-1]} {leading}"
    return parts or [question]


_LEADING_JOINER = re.compile(
    r"^\W*(?:(?:" + "|".join(re.escape(word) for word in sorted(_SPACED, key=len, reverse=True)) + r")(?![\w-])"
    r"|(?:" + "|".join(re.escape(word) for word in sorted(_UNSPACED, key=len, reverse=True)) + r"))[\s,、，]*",
    re.IGNORECASE,
)


def asked_alone(part: str) -> str:
    """``part`` as a question of its own: without the joining word it starts with (the
    language table's :data:`~reactgraph.core.language.PART_JOINERS`) and the comma after it
    ("and do we have spare parts?" → "do we have spare parts?", "Also, how much …" → "how
    much …", the Korean, Japanese and Chinese joining words too); ``part`` itself when it starts
    with none or is nothing else."""
    alone = _LEADING_JOINER.sub("", part.strip(), count=1)
    return alone if alone.strip() else part.strip()


_UNSPACED_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")


def _reference_pattern(words: Sequence[str]) -> re.Pattern[str]:
    """One pattern for back-reference ``words``: kana and Han ones anywhere, Hangul ones as
    whole words (of two letters or more also at the start of one), any other as whole words."""
    alternatives = []
    for word in sorted(set(words), key=len, reverse=True):
        escaped = re.escape(word)
        if _UNSPACED_SCRIPT.search(word):
            alternatives.append(escaped)
        elif _HANGUL.search(word):
            alternatives.append(rf"(?<!\w){escaped}" + (r"(?!\w)" if len(word) < 2 else ""))
        else:
            alternatives.append(rf"(?<![\w'-]){escaped}(?![\w'-])")
    return re.compile("|".join(alternatives), re.IGNORECASE)


_REFERENCES = {code: _reference_pattern(words) for code, words in BACK_REFERENCES.items()}
_ANY_REFERENCE = _reference_pattern([word for words in BACK_REFERENCES.values() for word in words])


def refers_back(text: str, language: str | None) -> bool:
    """Whether ``text`` (a part of a question) refers back to what an earlier part named: it
    holds one of the language table's :data:`~reactgraph.core.language.BACK_REFERENCES` of
    ``language`` (every language's when it is ``None`` or not in the table)."""
    return bool(_REFERENCES.get(language or "", _ANY_REFERENCE).search(text))


def names_record(value: str) -> bool:
    """Whether a named value singles out a record (an id, a date: it holds a digit) rather
    than filtering by a word (``low``, ``unpaid``)."""
    return any(char.isdigit() for char in value)


def part_values(parts: Sequence[str], named: Callable[[str], Sequence[str]],
                language: str | None) -> list[tuple[str, ...]]:
    """The values each of ``parts`` is about (step 3 of the module docstring): those it names
    itself (``named``: text → the values it names, as
    :meth:`~reactgraph.engine.query_values.QueryValues.named_values`), and, for a part that
    names no record of its own (no value with a digit: an id, a date; a word such as
    ``unpaid`` only filters), the previous part's values too when it refers back
    (:func:`refers_back`) or is written in a language that leaves the reference unsaid
    (:data:`~reactgraph.core.language.UNSAID_REFERENCE_LANGUAGES`).

    Args:
        parts: The question's parts (:func:`question_parts`), in order.
        named: Text → the values it names.
        language: The question's language code, ``None`` when it cannot be told.

    Returns:
        One tuple of values per part, in order: its own first, then those it takes from the
        part before (empty: the part names nothing and takes nothing).
    """
    out: list[tuple[str, ...]] = []
    for index, part in enumerate(parts):
        own = tuple(named(part))
        if (index and out[-1] and not any(names_record(value) for value in own)
                and (language in UNSAID_REFERENCE_LANGUAGES or refers_back(part, language))):
            own = (*own, *(value for value in out[-1] if value not in own))
        out.append(own)
    return out
