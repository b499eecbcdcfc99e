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

Which tool answers each part is chosen by :mod:`reactgraph.nodes.select_tools`; the loop
counts the question covered only when every part's tool brought data
(:func:`reactgraph.nodes.llm_call.pending_parts`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from reactgraph.core.language import PART_JOINERS, PART_SUFFIXES
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
