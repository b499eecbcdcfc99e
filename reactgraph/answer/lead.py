"""The lead of an answer made of observations: the sentence that answers the question (SPEC R13.1).

An answer made of the tools' lines (:func:`~reactgraph.answer.grounding.observation_answer`) is
grounded by construction but, left alone, answers nothing: "Here is what the tools report".
A model too small to write an answer can still *choose*: :func:`choose_lead` asks it, in one
schema-constrained call, for the verdict of a yes/no question (``yes``, ``no`` or
``unknown``) and the observation lines that decide it, or for the line that names what a
which/what question asks for. The schema's enums are the observations' own lines, so the
model can pick nothing that no tool returned; the engine then writes the sentence
(:func:`lead_sentence`) in the question's language (the language table's ``verdict_*``
phrases, :func:`reactgraph.core.language.phrase`).

What kind of question it is (:func:`question_kind`) is read from the language table's
:data:`~reactgraph.core.language.QUESTION_WORDS`: no domain word.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from reactgraph.answer.grounding import readable_observation
from reactgraph.core.language import (
    QUESTION_WORDS, SCRIPT_LANGUAGES, STATE_FAMILIES, STATE_MEANINGS, VERDICT_WORDS, detect_language, phrase, reads_as,
)
from reactgraph.core.usage import sum_usage
from reactgraph.policy.parts import asked_alone
from reactgraph.protocol.prompts import LEAD_CHOICE_SYSTEM, LEAD_CHOICE_USER
from reactgraph.protocol.structured import structured_llm_call
from reactgraph.tools.ranking import tokenize
from reactgraph.tools.runner import holds_no_data
from reactgraph.tools.values import IDENTIFIER_KINDS, value_tokens, without_values

logger = logging.getLogger(__name__)

QuestionKind = Literal["yes_no", "which", "other"]

_UNSPACED_LANGUAGES = ("ko", "ja", "zh")

LEAD_LINES = 40
"""Most observation lines offered to choose from (the first ones of the turn)."""

LEAD_LINE_CHARS = 200
"""Observation lines longer than this are not offered (a choice names a line whole)."""

LEAD_FACTS = 2
"""Most lines a lead states: the deciding figure and, when a tool returned one, the limit
it is compared with."""


def _words(text: str) -> list[str]:
    return re.findall(r"[^\s,.;:!?？'’]+", text.lower())


def question_kind(question: str) -> QuestionKind:
    """What the question asks for (see :data:`~reactgraph.core.language.QUESTION_WORDS`).

    Returns:
        ``"yes_no"`` for a question a yes or a no answers ("Is X over its limit?"),
        ``"which"`` for one that asks for a thing or a figure ("Which machines ...",
        "What is ..."), ``"other"`` for the rest (a request such as "Show ...").
    """
    text = question.strip()
    if not text:
        return "other"
    language = detect_language(text)
    if language in _UNSPACED_LANGUAGES:
        if any(word in text for word in QUESTION_WORDS[language]["which"]):
            return "which"
        return "yes_no" if re.search(r"[?？]\s*$|か\s*$|吗", text) else "other"
    words = _words(text)
    if not words:
        return "other"
    openers = {word for table in QUESTION_WORDS.values() for word in table["yes_no"]}
    asks = {word for code, table in QUESTION_WORDS.items() if code not in _UNSPACED_LANGUAGES for word in table["which"]}
    first = words[0].lstrip("¿")
    if words[0] in openers or first in openers:
        return "which" if any(word.lstrip("¿") in asks for word in words[1:]) else "yes_no"
    return "which" if any(word.lstrip("¿") in asks for word in words) else "other"


def observation_lines(steps: Iterable[dict[str, Any]]) -> list[str]:
    """The lines the successful observations hold, each once, in trace order, at most
    :data:`LEAD_LINES`, none longer than :data:`LEAD_LINE_CHARS`: what a lead may state."""
    lines: list[str] = []
    for step in steps:
        if step.get("error"):
            continue
        for line in fact_lines(str(step.get("observation") or "")):
            if len(line) <= LEAD_LINE_CHARS and line not in lines:
                lines.append(line)
    return lines[:LEAD_LINES]


def fact_lines(observation: str) -> list[str]:
    """An observation's facts as lines a lead may state
    (:func:`~reactgraph.answer.grounding.readable_observation`: JSON as ``key: value`` lines or
    a table), a Markdown table's rows each as ``column: cell; column: cell`` (a header row or a
    rule row states nothing by itself)."""
    lines = [line.strip() for line in readable_observation(observation).splitlines() if line.strip()]
    if len(lines) >= 3 and lines[0].startswith("|") and set(lines[1]) <= set("|-: "):
        header = [cell.strip() for cell in lines[0].strip("|").split("|")]
        rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
        return ["; ".join(f"{name}: {cell}" for name, cell in zip(header, row) if cell) for row in rows]
    return [line for line in lines if not set(line) <= set("|-: ")]


def by_relevance(question: str, lines: Sequence[str]) -> list[str]:
    """``lines`` with those sharing the most search words with ``question`` first (stable
    otherwise): a small model choosing under a schema tends to take the first options, so the
    line about what was asked ("OEE: 81.2 %" for "What is the OEE …") comes before the rest.
    A line that only repeats what the question says ("ID: AB/100", "Name: Pump 2" for "What's
    wrong with pump AB/100?") tells nothing and goes after every line that does."""
    language = detect_language(question)
    asked = set(tokenize(question, language))

    def says_something(line: str) -> bool:
        stated = {word for cell in line.split("; ") for word in tokenize(_value(cell), language)}
        return any(len(word) > 1 and word not in asked for word in stated)

    return sorted(lines, key=lambda line: (not says_something(line), -len(asked & set(tokenize(line, language)))))


def _value(line: str) -> str:
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
        return any(asked & _meanings(_value(fact), ["exceeded", *STATE_MEANINGS]) for fact in facts)
    asked = set(tokenize(without_values(question), language))
    return any(asked & set(tokenize(_value(fact), language)) for fact in facts)


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
       ("CNC-003 | Lathe | warning" for "Is CNC-003 stopped?"); a subject line
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


def lead_schema(kind: QuestionKind, lines: Sequence[str]) -> dict[str, Any]:
    """The choice a model makes for the lead: ``facts`` (1 to :data:`LEAD_FACTS` of
    ``lines``, an enum) and, for a yes/no question, ``verdict`` (``yes``/``no``/``unknown``)."""
    properties: dict[str, Any] = {
        "facts": {"type": "array", "items": {"type": "string", "enum": list(lines)}, "minItems": 1,
                  "maxItems": LEAD_FACTS},
    }
    if kind == "yes_no":  # after the facts: the verdict is decided on the lines chosen
        properties = {**properties, "verdict": {"type": "string", "enum": ["yes", "no", "unknown"]}}
    return {"title": "answer_lead", "description": "The answer to the question, chosen from the data lines.",
            "type": "object", "properties": properties, "required": list(properties)}


def lead_sentence(question: str, kind: QuestionKind, verdict: str | None, facts: Sequence[str],
                  language: str | None = None, frame: bool = True) -> str:
    """The lead the engine writes from a choice, in the question's language (the language
    table's ``verdict_yes``/``verdict_no``/``verdict_unknown``, :func:`~reactgraph.core.language.phrase`).

    Args:
        question: The user's question (its language picks the sentence when ``language``
            is not given).
        kind: :func:`question_kind` of it.
        verdict: ``yes``, ``no`` or ``unknown`` (yes/no questions), else ignored.
        facts: The chosen observation lines, as the tools wrote them (a row's cells joined
            by " · ", as an answer's list shows rows).
        language: The question's language (a part of a question may be too short to tell it).
        frame: Whether a verdict's facts not in the question's language are framed (below);
            ``False`` once an earlier sentence of the answer was framed (one attribution is enough).

    The facts stand as the tools wrote them. After a verdict, facts that are not in the
    question's language (:func:`~reactgraph.core.language.reads_as`: an English tool's line
    under a German question; bare values are no one's language and stand alone) are framed by
    the language table's ``per_tools`` ("Nein. Laut den Werkzeugen: email: operational."), so
    the verdict's sentence reads in the reader's language and says whose words follow. A
    which/what lead of such lines is the tools' text alone: an answer puts it after the
    engine's sentence in the reader's language
    (:func:`~reactgraph.answer.grounding.observation_answer`).

    Returns:
        The sentence; ``""`` when there is nothing to say (no facts for a which question).
    """
    joined = "; ".join(" · ".join(cell.strip() for cell in fact.rstrip(".:").split(" | ")) for fact in facts)
    language = language or detect_language(question)
    stated = joined + "." if joined else ""
    if kind == "yes_no" and verdict in ("yes", "no", "unknown"):
        if verdict != "unknown" and not joined:
            verdict = "unknown"
        if frame and stated and language is not None and reads_as(joined, language) is False:
            stated = phrase("per_tools", language, facts=stated)  # the tools' words, framed in the reader's language
        return phrase(f"verdict_{verdict}", language, facts=stated).strip()
    return stated


async def choose_lead(llm: Any, abilities: Any, question: str, steps: Sequence[dict[str, Any]], *,
                      config: RunnableConfig | None = None, fallbacks: Sequence[Any] = (),
                      usage_out: dict[str, int] | None = None, parts: Sequence[tuple[str, str]] = (),
                      language: str | None = None, frame: bool = True) -> str | None:
    """The lead of an observation answer, chosen by the model and written by the engine.

    Args:
        llm: The model (it only chooses; a schema-constrained call when it can take one).
        abilities: Its abilities.
        question: The user's question.
        steps: The turn's step records.
        config: RunnableConfig for the call.
        fallbacks: Fallback models, as :func:`~reactgraph.protocol.structured.structured_llm_call` takes them.
        usage_out: Receives the call's usage (of every call, added up).
        parts: For a question of several parts, ``(part's text, its tool's name)`` for each
            (``AgentState.part_questions`` and ``part_tools``): each part gets its own
            sentence, chosen among the lines of its own tool's results
            (:func:`part_leads`).
        language: The question's language (``None``: told from ``question``).
        frame: As for :func:`lead_sentence`.

    Returns:
        The lead sentence (:func:`lead_sentence`), or ``None`` — no call made — when the
        question is neither yes/no nor which/what, the observations hold no line, or the
        choice failed or named no line. Never raises.
    """
    if len(parts) > 1:
        return await part_leads(llm, abilities, steps, parts, config=config, fallbacks=fallbacks,
                                usage_out=usage_out, language=language or detect_language(question))
    kind = question_kind(question)
    lines = by_relevance(question, observation_lines(steps))
    if kind == "other" or not lines:
        return None
    if kind == "yes_no":
        decided = decided_verdict(question, steps)
        if decided:  # the observations decide it: no model call
            return lead_sentence(question, kind, decided[0], decided[1][:LEAD_FACTS], language, frame) or None
    catalog = "\n".join(f"- {line}" for line in lines)
    messages = [SystemMessage(LEAD_CHOICE_SYSTEM), HumanMessage(LEAD_CHOICE_USER.format(question=question, lines=catalog))]
    try:
        result = await structured_llm_call(llm, messages, lead_schema(kind, lines), abilities=abilities,
                                           default_value=None, config=config, fallbacks=fallbacks)
    except Exception as exc:  # the lead is a help: the answer stands without it
        logger.warning("the answer's lead could not be chosen: %s", exc)
        return None
    if usage_out is not None:
        usage_out.update(result.usage)
    value = result.value if isinstance(result.value, dict) else {}
    picked = value.get("facts")
    facts = [line for line in dict.fromkeys(picked if isinstance(picked, list) else []) if line in lines][:LEAD_FACTS]
    verdict = value.get("verdict") if kind == "yes_no" else None
    if kind == "which" and not facts:
        return None
    if kind == "yes_no" and verdict not in ("yes", "no", "unknown"):
        return None
    if verdict == "yes" and not affirmed(question, facts):
        verdict = "unknown"  # a yes the chosen lines do not say is not stated
    return lead_sentence(question, kind, verdict, facts, language, frame) or None


async def part_leads(llm: Any, abilities: Any, steps: Sequence[dict[str, Any]], parts: Sequence[tuple[str, str]], *,
                     config: RunnableConfig | None = None, fallbacks: Sequence[Any] = (),
                     usage_out: dict[str, int] | None = None, language: str | None = None) -> str | None:
    """The lead of a question of several parts: one sentence per part, each answering that
    part (asked alone, without its joining word: :func:`~reactgraph.policy.parts.asked_alone`)
    from its own tool's successful results (:func:`choose_lead` on them), one a line, in the
    parts' order (a verdict's tool lines framed as the tools' words once, :func:`lead_sentence`), so "What is wrong with P-2, and are its spare parts in stock?" leads with the
    state line, then the verdict on the stock, not with the two results' headings joined.

    Args:
        llm, abilities, config, fallbacks: As for :func:`choose_lead`.
        steps: The turn's step records.
        parts: ``(part's text, its tool's name)`` in the question's order.
        usage_out: Receives the calls' usage, added up.
        language: The question's language (the verdict phrases' language).

    Returns:
        The sentences, one a line; ``None`` when no part got one.
    """
    sentences: list[str] = []
    total: dict[str, int] = {}
    attribution = phrase("per_tools", language, facts="").strip() if language else ""
    for text, tool in parts:
        own = [step for step in steps if step.get("tool_name") == tool and not step.get("error")]
        if not own:
            continue
        part_usage: dict[str, int] = {}
        framed = any(attribution and attribution in earlier for earlier in sentences)
        sentence = await choose_lead(llm, abilities, asked_alone(text), own, config=config, fallbacks=fallbacks,
                                     usage_out=part_usage, language=language, frame=not framed)
        total = sum_usage(total, part_usage) if part_usage else total
        if sentence and sentence not in sentences:
            sentences.append(sentence)
    if usage_out is not None and total:
        usage_out.update(total)
    return "\n".join(sentences) or None


def state_meanings(text: str) -> set[str]:
    """The state meanings (:data:`~reactgraph.core.language.STATE_MEANINGS`) ``text`` states in
    any of the language table's languages: whole words in spaced scripts, anywhere in the
    others ("PU-7 is stopped" and "PU-7は停止" both state ``stopped``)."""
    return _meanings(text)
