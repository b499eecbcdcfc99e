"""Whether a written answer is fit to show, whatever its values (SPEC R13.1).

:func:`answer_problems` finds what makes an answer unfit to show: not in the question's
language, a code fence, a tool call written out, a line twice or a phrase repeated over and
over, the prompt written back or spoken of, the whole answer one JSON value, an answer that
begins mid-sentence. Enforce mode withdraws such an answer before it is shown; under
``synthesis="auto"`` the loop's answer is withdrawn and the synthesis call writes it. Whether
its values are grounded is :mod:`reactgraph.answer.grounding`'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from reactgraph.core.language import answer_in_language, detect_language
from reactgraph.engine.state import StepRecord
from reactgraph.protocol.prompts import prompt_heading, speaks_of_prompt


_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)
_CALL_DUMP = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*\{")
_REPEATED_LINE_MIN_CHARS = 8
_LOOP = re.compile(r"([^\W\d_][^\n]{0,79}?)\1{4,}")
"""A unit of text (beginning with a letter, at most 80 characters) said five times or more in
a row: a small model's loop within one line (the streamed synthesis is cut at such a loop,
:func:`~reactgraph.answer.synthesis.looping_tail`; a loop answer is not streamed through it)."""


def answer_problems(answer: str, question: str, tool_names: Iterable[str] = (),
                    steps: Sequence[StepRecord] = ()) -> list[str]:
    """What makes ``answer`` unfit to show to the asker, whatever its values.

    Args:
        answer: The written answer.
        question: The user's question.
        tool_names: The registered tools' names.
        steps: The turn's step records: the words of their results are left out when the
            answer's language is told.

    Returns:
        Short labels, in this order, of what was found: ``"empty"``; ``"language"`` (the
        answer is in another language than the question,
        :func:`~reactgraph.core.language.answer_in_language`); ``"code_fence"``; ``"tool_call"`` (a call written out, ``name({...``, or a
        tool's name); ``"repeated_line"`` (a line of 8+ characters twice, or a phrase said five times in a row
        within a line, :data:`_LOOP`: "wie geht es? wie geht es? …"); ``"prompt_echo"`` (a line that is a
        heading of the prompt, :func:`~reactgraph.protocol.prompts.prompt_heading`, a first line opening
        with the whole question (8+ characters), or the prompt spoken of, :func:`~reactgraph.protocol.prompts.speaks_of_prompt`); ``"raw_data"`` (the whole answer is one JSON object or array:
        a tool's figures handed on as data, not said to the asker — a JSON-mode model may put
        them in its ``answer`` field); ``"fragment"`` (the answer begins mid-sentence,
        :func:`begins_mid_sentence`: a JSON-mode model may put the end of a sentence it began
        in its ``reasoning`` field in its ``answer`` field). ``[]`` when none.
    """
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    if not lines:
        return ["empty"]
    problems: list[str] = []
    language = detect_language(question)
    data = "\n".join(str(step.get("observation") or "") for step in steps if not step.get("error"))
    if language is not None and not answer_in_language(answer, language, data):
        problems.append("language")
    if _FENCE.search(answer):
        problems.append("code_fence")
    names = {name.lower() for name in tool_names if name}
    if _CALL_DUMP.search(answer) or any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", answer, re.I)
                                        for name in names):
        problems.append("tool_call")
    counted = [line for line in lines if len(line) >= _REPEATED_LINE_MIN_CHARS]
    if len(counted) != len(set(counted)) or any(_LOOP.search(line) for line in lines):
        problems.append("repeated_line")
    asked, first_words = (" ".join(re.findall(r"[^\W_]+", text.lower())) for text in (question, lines[0]))
    if (any(prompt_heading(line) for line in lines) or len(asked) >= 8 and first_words.startswith(asked)
            or speaks_of_prompt(answer, f"{question}\n{data}")):
        problems.append("prompt_echo")  # a heading of the prompt, the question, or the prompt's own words written back
    if _is_json_container(answer.strip()):
        problems.append("raw_data")
    if begins_mid_sentence(lines[0]):
        problems.append("fragment")
    return problems


_OPENING_MARKS = "#>*_~ \t\"'([\u201c\u2018\u201e\u00ab\u2039\u00bf\u00a1\u300c"
_LIST_ITEM = re.compile(r"^\s*(?:[-+*]|\d+[.)])\s")
_WORD_END = ".,;:!?\u2026)]\"'\u201d\u2019\u00bb\u203a"
_VALUE_MARKS = frozenset("@/\\._:#=()<>[]{}")


def begins_mid_sentence(line: str) -> bool:
    """Whether ``line``, an answer's first line, is the end of a sentence rather than a whole one.

    The rule, for any language whose script has letter case: after leading Markdown marks
    (heading, quote, emphasis) and opening quotes or brackets, the line begins with a
    lowercase letter that would be capitalised at the start of a sentence (``str.islower`` and
    a title case of its own: Latin, Cyrillic, Greek, Armenian…; Georgian Mkhedruli, whose
    sentences begin in lowercase, and scripts without case — CJK, Hangul, Arabic, Hebrew,
    Devanagari… — never count). A first word that is a value written in lowercase is no
    fragment: a code span, an e-mail address, a URL or path, an id (a digit, ``_``, ``.``,
    ``/`` or another mark inside the word), or a name with a capital after its first letter
    (``iPhone``, ``pH``). A list item (``- ``, ``1. ``) is no sentence and never counts.

    Args:
        line: The answer's first non-blank line.

    Returns:
        ``True`` for a line such as ``is rising.``, ``und steigt weiter.`` or ``растёт.``.
    """
    if _LIST_ITEM.match(line):
        return False
    text = line.lstrip(_OPENING_MARKS)
    if not text or text[0] == "`":
        return False
    first = text[0]
    if not first.islower() or first.title() == first:
        return False
    word = text.split(maxsplit=1)[0].rstrip(_WORD_END)
    return not any(char.isdigit() or char.isupper() or char in _VALUE_MARKS for char in word)


def _is_json_container(text: str) -> bool:
    """Whether ``text`` is one JSON object or array, and nothing else."""
    if not text or text[0] not in "{[" or text[-1] not in "}]":
        return False
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False
