"""Yes/no verdicts the observations decide without a model, and what their lines state
(SPEC R13.1): :func:`decided_verdict` (a figure against the limit a tool returned, a state,
presence, a value asked by name), :func:`affirmed` (whether chosen lines say the yes a model
gave) and :func:`state_meanings`. The words are the language table's
:data:`~reactgraph.core.language.VERDICT_WORDS`, so a question in one language is decided over
lines in another; no domain word. The lead of an answer (:mod:`reactgraph.answer.lead`) and
the check of a written answer (:mod:`reactgraph.answer.written`) use them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from reactgraph.answer.grounding import readable_observation, row_header
from reactgraph.core.language import (
    QUESTION_WORDS, SCRIPT_LANGUAGES, STATE_FAMILIES, STATE_MEANINGS, VERDICT_WORDS, detect_language,
)
from reactgraph.tools.ranking import tokenize
from reactgraph.tools.runner import holds_no_data
from reactgraph.tools.values import IDENTIFIER_KINDS, value_tokens, without_values

LEAD_FACTS = 2
"""Most lines a lead states: the deciding figure and, when a tool returned one, the limit
it is compared with."""


LEAD_LINE_CHARS = 200
"""Observation lines longer than this are not offered (a choice names a line whole)."""


def fact_lines(observation: str) -> list[str]:
    """An observation's facts as lines a lead may state
    (:func:`~reactgraph.answer.grounding.readable_observation`: JSON as ``key: value`` lines or
    a table), a table's rows each as ``column: cell; column: cell`` — a Markdown table's, or
    rows of ``a | b`` or ``a,b`` under a header row the tool writes itself
    (:func:`~reactgraph.answer.grounding.row_header`: ``isbn | title | due``): a header row or
    a rule row states nothing by itself."""
    lines = [line.strip() for line in readable_observation(observation).splitlines() if line.strip()]
    if len(lines) >= 3 and lines[0].startswith("|") and set(lines[1]) <= set("|-: "):
        header = [cell.strip() for cell in lines[0].strip("|").split("|")]
        rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
        return ["; ".join(f"{name}: {cell}" for name, cell in zip(header, row) if cell) for row in rows]
    for separator in ("|", ","):  # a table of `a | b` rows, or of comma-separated ones
        lead = next((index for index, line in enumerate(lines) if separator in line), len(lines))
        rows = [[cell.strip() for cell in line.split(separator)] for line in lines[lead:]]
        header = row_header(rows) if rows and all(len(row) == len(rows[0]) for row in rows) else None
        if header is not None:  # the heading lines before the table stay as they are
            return lines[:lead] + ["; ".join(f"{name}: {cell}" for name, cell in zip(header, row) if cell)
                                   for row in rows[1:]]
    return [line for line in lines if not set(line) <= set("|-: ")]


def stated_value_of(line: str) -> str:
    """What a line states: the value of a ``key: value`` line, else the whole line."""
    key, colon, value = line.partition(": ")
    return value if colon and len(key) <= 40 else line


def affirmed(question: str, facts: Sequence[str]) -> bool:
    """Whether the chosen ``facts`` say what a yes/no ``question`` asks about: some search word
    of the question (ids and figures left out) is in what one of them states (the value of a
    ``key: value`` line, else the line). "Is P-2 stopped?" is affirmed by "State: stopped", not
    by "State: normal" or "Name: Pump 2": a small model's "yes" without such a line is not
    stated (measured: SmolLM2-135M answers "yes" whatever the lines say). A question in a
    script the lines are not written in (a Korean question, English tool output) cannot be
    checked word by word: when it asks a state or a comparison of the language table
    (:data:`~reactgraph.core.language.VERDICT_WORDS`: "running", "over the limit"), a fact
    must state that meaning in some language ("State: running", "EXCEEDED"); else it counts
    as affirmed."""
    language = detect_language(question)
    if language in SCRIPT_LANGUAGES and detect_language(" ".join(facts)) != language:
        asked = {"exceeded"} if _said(question, "above") else _meanings(question)
        if not asked:
            return True  # no word of the question can be looked for in the lines
        return any(asked & _meanings(stated_value_of(fact), ["exceeded", *STATE_MEANINGS]) for fact in facts)
    asked = set(tokenize(without_values(question), language))
    return any(asked & set(tokenize(stated_value_of(fact), language)) for fact in facts)


_RECORD_KINDS = frozenset(IDENTIFIER_KINDS) & {"id", "email", "uuid", "uri"}


def _identifiers(text: str) -> list[str]:
    """The values of ``text`` that name one record (an id of letters and digits, an e-mail
    address, a UUID, a URI: :func:`~reactgraph.tools.values.value_tokens`), as written."""
    return [text[token.start:token.end] for token in value_tokens(text) if token.kind in _RECORD_KINDS]


def _is_identifier(value: str) -> bool:
    """Whether ``value`` is one whole record name (:func:`_identifiers`)."""
    return _identifiers(value.strip()) == [value.strip()] if value.strip() else False


_UNSPACED_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3]")
_UNIT = r"%|°\s?[CF]|[A-Za-zµ]+\d?(?:/[A-Za-z]+\d?)?"
_FIGURE = re.compile(rf"(?<![\w.\-:])[-+]?(\d+(?:\.\d+)?)\s?({_UNIT})(?![\w])")
_LETTERS = re.compile(r"[^\W\d_]{3,}")


def _compact(text: str) -> str:
    return re.sub(r"[\W_]", "", text).lower()


def _said(text: str, meaning: str) -> bool:
    """Whether ``text`` holds a word of ``meaning`` (:data:`~reactgraph.core.language.VERDICT_WORDS`)
    in any of the table's languages: whole words in spaced scripts, anywhere in the others."""
    lowered = text.lower()
    for words in VERDICT_WORDS[meaning].values():
        for word in words:
            if _UNSPACED_WORD.search(word):
                if word in lowered:
                    return True
            elif re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", lowered):
                return True
    return False


def _meanings(text: str, among: Iterable[str] = STATE_MEANINGS) -> set[str]:
    return {meaning for meaning in among if _said(text, meaning)}


def _cells(line: str) -> list[tuple[str, str]]:
    """A line's cells (cut at " | ") as ``(key, value)``: ``key: value`` cells split, other
    cells with an empty key."""
    cells = []
    for cell in line.split(" | "):
        key, colon, value = cell.partition(": ")
        cells.append((key.strip(), value.strip()) if colon and len(key) <= 40 else ("", cell.strip()))
    return cells


def _none_first(text: str) -> bool:
    """Whether ``text`` opens with a word saying there is nothing ("0 open faults", "No orders", "none")."""
    first = text.split()[0].lower().strip(".,:;") if text.split() else ""
    return first in {word for words in VERDICT_WORDS["none"].values() for word in words}


def _opening(value: str, words: int = 3) -> str:
    return " ".join(value.split()[:words])


class _Observation:
    """One successful tool result, read for a verdict: its lines, whether its call named the
    question's subject, and which of its lines do."""

    def __init__(self, step: dict[str, Any], subjects: set[str]):
        text = str(step.get("observation") or "")
        self.empty = holds_no_data(text)
        self.lines = [line for line in fact_lines(text) if len(line) <= LEAD_LINE_CHARS]
        called_for = _compact(str(step.get("tool_args") or ""))
        self.about = not subjects or any(subject in called_for for subject in subjects)
        naming = [line for line in self.lines if any(subject in _compact(line) for subject in subjects)]
        # a call made for the subject: its lines, but not those about another thing it was made for
        self.subject_lines = [line for line in self.lines if line in naming or not _identifiers(line)] \
            if self.about and naming else self.lines if self.about else naming
        self.says_none = self.empty or bool(self.lines) and _none_first(self.lines[0])


def _figures(text: str) -> list[tuple[float, str, str, int]]:
    """The figures of ``text`` that carry a unit: ``(number, unit, quantity word before it, position)``."""
    found = []
    for match in _FIGURE.finditer(text):
        before = _LETTERS.findall(text[:match.start()])
        number = float(match.group(1)) * (-1 if match.group(0).startswith("-") else 1)
        found.append((number, re.sub(r"\s", "", match.group(2)).lower(), before[-1].lower() if before else "",
                      match.start()))
    return found


def _limit_position(line: str) -> int | None:
    lowered = line.lower()
    positions = [match.end() for words in VERDICT_WORDS["limit"].values() for word in words
                 for match in re.finditer(rf"(?<![\w-]){re.escape(word)}(?![\w-])", lowered)]
    return min(positions) if positions else None


def _same_word(one: str, other: str) -> bool:
    """Whether two words name the same quantity: one starts the other ("vib", "vibration";
    "temp", "temperature") or they share their first five letters ("vibrating", "vibration")."""
    shorter, longer = sorted((one.lower(), other.lower()), key=len)
    return len(shorter) >= 3 and (longer.startswith(shorter) or len(shorter) >= 5 and longer[:5] == shorter[:5])


_LIMIT_NUMBER = re.compile(rf"\s*:?\s*[-+]?(\d+(?:\.\d+)?)\s?({_UNIT})?")


_NAMED_FIGURE = rf"(?:[^\W\d_]+:?\s+)?[-+]?\d+(?:\.\d+)?\s?(?:{_UNIT})"
_LIMIT_LIST = re.compile(rf"\s*:?\s*{_NAMED_FIGURE}(?:\s*,\s*{_NAMED_FIGURE})*")


def _inline_pairs(line: str) -> list[tuple[float, float, str]]:
    """The figures of ``line`` each followed by its limit: ``(figure, limit, quantity word)``
    for "vibration 1.2 mm/s vs limit 0.5 mm/s" and "temp 48.7°C (limit 60.0)": the number right
    after a ``limit`` word is the limit (in the figure's unit when it names none), the last
    figure with a unit before that word is what it limits."""
    lowered = line.lower()
    found = sorted({(match.start(), match.end()) for words in VERDICT_WORDS["limit"].values() for word in words
                    for match in re.finditer(rf"(?<![\w-]){re.escape(word)}(?![\w-])", lowered)})
    pairs = []
    taken = 0  # where the last pair ended: a figure limits only once
    for start, end in found:
        number = _LIMIT_NUMBER.match(line, end)
        before = [figure for figure in _figures(line[:start]) if figure[3] >= taken]
        if not number or not before:
            continue
        figure, unit, quantity, _ = before[-1]
        limit_unit = re.sub(r"\s", "", number.group(2) or "").lower()
        if limit_unit and limit_unit != unit:
            continue
        pairs.append((figure, float(number.group(1)), quantity))
        taken = number.end()
    return pairs


def _compared(question: str, direction: str, lines: Sequence[str]) -> tuple[str, list[str]] | None:
    """The verdict of a comparison question from a figure and the limit a tool returned for
    the same quantity (same unit): ``(verdict, [figure line, limit line])``, or ``None``."""
    asked = re.findall(r"[^\W\d_]{3,}", question.lower())
    pairs: list[tuple[float, float, str, list[str]]] = []  # figure, limit, quantity, lines
    figures_by_line = [(line, _figures(line)) for line in lines if _limit_position(line) is None]
    for line in lines:
        start = _limit_position(line)
        if start is None:
            continue
        inline = _inline_pairs(line)
        if inline:
            pairs.extend((figure, limit, quantity, [line]) for figure, limit, quantity in inline)
            continue
        listed = _LIMIT_LIST.match(line, start)  # "limits: vibration 0.5 mm/s, temperature 60.0°C"
        limits = [figure for figure in _figures(line) if listed and start <= figure[3] < listed.end()]
        for number, unit, quantity, _ in limits:
            same_unit = [(other, value) for other, found in figures_by_line for value in found if value[1] == unit]
            alone = sum(1 for limit in limits if limit[1] == unit) == 1  # the line's one limit in this unit
            elsewhere = [(other, value) for other, value in same_unit if value[2] == quantity] or (
                same_unit if alone else [])
            if elsewhere:
                other, value = elsewhere[-1]
                pairs.append((value[0], number, quantity, [other, line]))
    if not pairs:
        return None
    named = [pair for pair in pairs if pair[2] and any(_same_word(pair[2], word) for word in asked)]
    chosen = named or pairs
    verdicts = {("yes" if (figure > limit if direction == "above" else figure < limit) else "no")
                for figure, limit, _, _ in chosen}
    if len(verdicts) != 1:
        return None
    return verdicts.pop(), chosen[-1][3]


def _phrases(question: str) -> set[str]:
    """Runs of two or three words of ``question`` with at least two words of three letters or
    more that are no question word ("out of stock", not "is there" or "out of")."""
    plain = re.findall(r"[^\W\d_]+", question.lower())
    asking = {word for table in QUESTION_WORDS.values() for word in table["yes_no"]} | {
        word for words in VERDICT_WORDS["presence"].values() for word in words}
    found = set()
    for size in (2, 3):
        for start in range(len(plain) - size + 1):
            run = plain[start:start + size]
            if sum(1 for word in run if len(word) >= 3 and word not in asking) >= 2:
                found.add(" ".join(run))
    return found


def _stated_value(question: str, lines: Sequence[str]) -> tuple[str, list[str]] | None:
    """A ``key: value`` line that answers "Is X <value>?": its value (a word or two of
    letters) written in the question says yes ("State: shipped" for "Is ORD-7 shipped?");
    its key named in the question with another value says no ("Is ORD-7 in a delayed state?")."""
    asked = " ".join(re.findall(r"[^\W\d_]+", question.lower()))
    for line in lines:
        for key, value in _cells(line):
            words = re.findall(r"[^\W\d_]+", value.lower())
            if not key or not words or len(words) > 2 or re.search(r"\d", value):
                continue
            if re.search(rf"(?<!\w){re.escape(' '.join(words))}(?!\w)", asked):
                return "yes", [line]
            if re.search(rf"(?<!\w){re.escape(key.lower())}(?!\w)", asked):
                return "no", [line]
    return None


def decided_verdict(question: str, steps: Iterable[dict[str, Any]]) -> tuple[str, list[str]] | None:
    """The verdict of a yes/no question when the observations decide it without a model
    (the words are the language table's :data:`~reactgraph.core.language.VERDICT_WORDS`, so
    a question in one language is decided over lines in another).

    The rules, in order (the *subject* is the ids the question names; its lines are those of
    a call made for it, or lines naming it; with no id, every line):

    1. *Comparison* ("above"/"below" words: "over", "hotter than", "über"): a figure and a
       limit the tools returned for the same quantity (same unit; a limit is the figure after
       a ``limit`` word) decide it; else a subject line saying its limit is passed
       ("EXCEEDED") says yes; else a list of other things whose limits are passed, without
       the subject, says no.
    2. *Presence* ("any", "hay", "gibt es"): a subject ``key: value`` whose key shares a word
       with the question and whose value says none ("Active alarms: none") says no, another
       value yes; a result that holds nothing ("0 open orders", "No ...") says no; a line
       holding a state the question asks or two of its words in a row ("out of stock") says yes.
    3. *State* ("Is P-2 stopped?", "¿Está detenida P-2?"): a subject cell stating a state of the same
       meaning says yes, a ``key: value`` cell stating another state of its family
       (:data:`~reactgraph.core.language.STATE_FAMILIES`: running is not stopped, but may be
       overdue) says no, as does a table row's cell that is such a state word alone
       ("P-4 | Pump 4 | idle" for "Is P-4 running?"); a subject line
       listed under a first line naming the asked state says yes; a list of other things in
       the asked state, without the subject, says no.
    4. *A value asked by name* (:func:`_stated_value`): "Is ORD-7 shipped?" over "State:
       shipped" says yes; "Is ORD-7 in a delayed state?" over it says no.

    Args:
        question: The user's yes/no question.
        steps: The turn's step records (failed ones are skipped).

    Returns:
        ``(verdict, facts)``: ``"yes"`` or ``"no"`` and the deciding lines (at most
        :data:`LEAD_FACTS`, as the tools wrote them); ``None`` when no rule decides.
    """
    subjects = {_compact(match) for match in _identifiers(question)}
    observations = [_Observation(step, subjects) for step in steps if not step.get("error")]
    if not observations:
        return None
    subject_lines = [line for seen in observations for line in seen.subject_lines]
    direction = "above" if _said(question, "above") else "below" if _said(question, "below") else None
    if direction:
        compared = _compared(question, direction, subject_lines)
        if compared:
            return compared
        asked = {"exceeded"} if direction == "above" else set()
    else:
        asked = _meanings(question)
    passed = ["exceeded"] if asked == {"exceeded"} else STATE_MEANINGS
    for line in subject_lines:  # a value (not a key: "Active alarms: none") in the asked state
        if any(asked & _meanings(_opening(value) if key else value, passed) and not _none_first(value)
               for key, value in _cells(line)):
            return "yes", [line]
    if not direction and _said(question, "presence"):
        words = set(tokenize(question, detect_language(question)))
        keyed = [(len(words & set(tokenize(key))), line, value) for line in subject_lines
                 for key, value in _cells(line) if key and value and not _is_identifier(value)]
        if keyed and max(keyed)[0]:  # the value whose key shares the most words with the question
            _, line, value = max(keyed, key=lambda found: found[0])
            return ("no" if _said(_opening(value, 2), "none") else "yes"), [line]
        if all(seen.says_none for seen in observations):
            return "no", [seen.lines[0] for seen in observations if seen.lines][:LEAD_FACTS]
        phrases = _phrases(question)
        for line in subject_lines:
            lowered = " ".join(re.findall(r"[^\W\d_]+", line.lower()))
            if any(re.search(rf"(?<!\w){re.escape(words_)}(?!\w)", lowered) for words_ in phrases):
                return "yes", [line]
        return None
    if not direction and asked:
        for seen in observations:
            heading = seen.lines[0] if seen.lines else ""
            if seen.subject_lines and heading not in seen.subject_lines and asked & _meanings(heading, passed) \
                    and (heading.rstrip().endswith(":") or not _identifiers(heading)):  # a heading, not another row
                return "yes", [seen.lines[0], seen.subject_lines[0]][:LEAD_FACTS]
        rivals = {meaning for family in STATE_FAMILIES if asked & set(family) for meaning in family} - asked
        for line in subject_lines:  # a state of the asked one's family, not the asked one
            # a keyed cell ("State: warning"), or a table row's cell that is a state word alone
            stated = [_meanings(_opening(value)) for key, value in _cells(line)
                      if key or len(value.split()) == 1]
            if any(meanings & rivals and not meanings & asked for meanings in stated):
                return "no", [line]
    if not direction:
        named = _stated_value(question, subject_lines)
        if named:
            return named
    if subjects and asked:
        for seen in observations:
            if seen.about or seen.subject_lines:
                continue
            listed = [line for line in seen.lines if _identifiers(line) and asked & _meanings(line, passed)]
            if listed:
                return "no", [seen.lines[0]] if seen.lines[0] not in listed else [listed[0]]
    return None


def state_meanings(text: str) -> set[str]:
    """The state meanings (:data:`~reactgraph.core.language.STATE_MEANINGS`) ``text`` states in
    any of the language table's languages: whole words in spaced scripts, anywhere in the
    others ("PU-7 is stopped" and "PU-7は停止" both state ``stopped``)."""
    return _meanings(text)
