"""Claims an answer ties to a record: each figure or state must be that record's own (SPEC R13.1).

Grounding (:func:`~reactgraph.answer.grounding.check_grounding`) asks whether each value of
an answer is somewhere in the trace. A model that writes the answer can still state a wrong
fact made only of real values: "CNC-A has the higher vibration (240 % of limit)" when the
240 % is CNC-B's. :func:`misattributed_claims` finds such claims.

The rule, for any tool output and any language:

* *Records.* A record is one value that names one thing (an id of letters and digits, an
  e-mail address, a UUID, a URI: the ``id`` kinds of
  :func:`~reactgraph.tools.values.value_tokens`; a unit right after a figure, ``42.5 m3/h``,
  names none). A line of a successful observation (a row,
  a ``key: value`` line, a JSON object's key/value lines —
  :func:`~reactgraph.answer.grounding.readable_observation`) belongs to the records it names.
  An observation's *subjects* are the records its call's arguments name, the records its
  first line names when that line is a title (not a row), or its one record when it names
  only one. A line naming no record belongs to the subjects (the ``key: value`` lines under
  "ID: AB-1"); a line naming only other records belongs to them and to the subjects (the
  rows of "Parts for AB-1:"); a line naming a subject belongs to the records it names alone
  (each row of a comparison of two subjects is its own record's).
* *Names.* A row whose cell after a record's own cell is a name of two words or more
  ("P-7 | Intake air filter | stock 6") gives that record the name: an answer that writes the
  name (or the name less its first word, when two words or more remain) names the record.
* *What an answer ties to a record.* The answer is cut into lines, sentences (after ``.``
  ``!`` ``?`` ``。`` and their full-width forms followed by a space or the end) and clauses
  (at ``,`` and ``;`` not inside a number, ``、`` ``，`` and the language table's joining words,
  :data:`~reactgraph.core.language.PART_JOINERS`). In a clause, a record governs the text
  from where it is named to the next record named; text before the first one is the first
  one's. A clause naming no record is the last record named before it in the same line
  (a line that names records and no other value — a heading — passes its last one on to the
  lines below it). Records listed alone in clauses ("AB-1, AB-2 and AB-3 are late") govern the
  statement that follows them too.
* *Lists.* A line that ends in ``:`` (not a line of the tools' output) — its last sentence —
  introduces the list items under it, or the records run together on the one line right under it (the records the intro
  names itself are its subject, not its list):
  a word or state of the intro that most of the listed records' lines do not hold is a claim
  misattributed to each listed record lacking it ("These parts are out of stock:" over parts
  the tools call ``LOW``); one most of them hold describes the list, loosely, and stands.
  Records listed in a sentence that ends share no statement after it. A line of the answer that
  is a line of the tools' output (list marks and emphasis aside) states nothing new.
* *The check.* A figure (a date, a number other than a bare digit, not in the question)
  governed by record A is *misattributed* when some records' lines hold it and none of A's
  does. A state word governed by A is misattributed when it is a word cell of another
  record's lines (a short cell of letters only: "LOW", "warning", "OUT OF STOCK") that A's
  lines do not hold, or when it means a state (:data:`~reactgraph.core.language.STATE_FAMILIES`,
  in any of the table's languages) another record's lines state while A's lines state
  another state of that family and not this one.

*Limits.* A figure the observations write only as a limit — after a ``limit`` word of the
language table (:data:`~reactgraph.core.language.VERDICT_WORDS`: "limit", "threshold",
and their kin in every language) up to the end of its cell or bracket, and nowhere else — is misattributed when the
answer states it in a clause with no limit word, outside such a list: "the temperature dropped
from 90.0°C" when 90.0°C is the limit. This holds with one record or none too.

A figure no record holds (a derived figure, a total) and a record no observation names are
left to grounding. An answer that gives several records their figures in one run after naming
them all ("AB-1 and AB-2: 1.8 and 3.4 bar") is read as tying every figure to the last one
named and is withdrawn: the observation answer stands instead, which is never wrong in words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reactgraph.answer.grounding import argument_strings, informative, readable_observation
from reactgraph.answer.verdicts import state_meanings
from reactgraph.core.language import PART_JOINERS, STATE_FAMILIES, VERDICT_WORDS
from reactgraph.tools.runner import holds_no_data
from reactgraph.tools.values import value_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_SENTENCE_CLOSE = re.compile(r"[.!?。！？]\s*$")
_CLAUSE_MARK = re.compile(r"[,;](?!\d)|[、，；]")
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3]")
_WORD_CELL = re.compile(r"^[^\W\d_]+(?:[ '’-][^\W\d_]+){0,2}$")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s+")
_ROW_SEPARATOR = " | "


def _joiners() -> re.Pattern[str]:
    spaced = sorted((word for word in PART_JOINERS if not _UNSPACED.search(word)), key=len, reverse=True)
    unspaced = [word for word in PART_JOINERS if _UNSPACED.search(word)]
    parts = [rf"(?<![\w-]){re.escape(word)}(?![\w-])" for word in spaced] + [re.escape(word) for word in unspaced]
    return re.compile("|".join(parts), re.IGNORECASE)


_JOINER = _joiners()


RECORD_KINDS = frozenset({"id", "email", "uuid", "uri"})
"""The kinds of :func:`~reactgraph.tools.values.value_tokens` whose value names one record."""

_AFTER_FIGURE = re.compile(r"\d\s?$")


def _record_names(text: str) -> list[tuple[str, int, int]]:
    """The record names of ``text``: ``(normal form, start, end)`` (:data:`RECORD_KINDS`),
    without a unit written right after a figure (``42.5 m3/h``: no record)."""
    return [(token.value.upper(), token.start, token.end) for token in value_tokens(text)
            if token.kind in RECORD_KINDS and not _AFTER_FIGURE.search(text[:token.start])]


def line_cells(line: str) -> list[str]:
    """A line's cells: cut at " | " (or a Markdown row's bars), each ``key: value`` cell's value."""
    stripped = line.strip()
    if stripped.startswith("|") and stripped.endswith("|"):
        parts = stripped.strip("|").split("|")
    else:
        parts = stripped.split(_ROW_SEPARATOR)
    cells = []
    for part in parts:
        key, colon, value = part.partition(": ")
        cells.append((value if colon and len(key) <= 40 else part).strip())
    return cells


def word_cells(line: str) -> set[str]:
    """The cells of ``line`` that are one to three words of letters only, lower-cased
    (a state or a kind the tool wrote: "LOW", "out of stock", "warning")."""
    return {cell.lower() for cell in line_cells(line) if _WORD_CELL.match(cell) and len(cell) >= 3}


@dataclass
class _Record:
    """What the observations say of one record: its lines' values (every reading), word
    cells, state meanings and text."""

    values: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)
    states: set[str] = field(default_factory=set)
    text: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)

    def add(self, line: str) -> None:
        self.values.update(reading for token in value_tokens(line) for reading in token.readings)
        self.words.update(word_cells(line))
        self.states.update(state_meanings(" ".join(line_cells(line))))
        self.text.append(line.lower())

    def says(self, word: str) -> bool:
        """Whether one of the record's lines holds ``word`` (a whole word or phrase)."""
        pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)")
        return word in self.words or any(pattern.search(line) for line in self.text)


def records_of(steps: Iterable[dict[str, Any]]) -> dict[str, _Record]:
    """Every record the successful observations name, with what its own lines say (module
    docstring: subjects, and which lines belong to which record).

    Args:
        steps: The turn's step records (``tool_args``, ``observation``, ``error``).

    Returns:
        Record name (normal form, an id upper-cased) → what its lines hold.
    """
    records: dict[str, _Record] = {}
    for step in steps:
        observation = str(step.get("observation") or "")
        if step.get("error") or holds_no_data(observation):
            continue
        lines = [line.strip() for line in readable_observation(observation).splitlines() if line.strip()]
        if not lines:
            continue
        named = [{name for name, _, _ in _record_names(line)} for line in lines]
        everywhere = set().union(*named)
        asked = {name for text in argument_strings(step.get("tool_args")) for name, _, _ in _record_names(text)}
        subjects = asked & everywhere
        first = lines[0]
        if len(lines) > 1 and first.count(_ROW_SEPARATOR) < 2 and not first.startswith("|"):
            subjects |= named[0]
        if len(everywhere) == 1:
            subjects |= everywhere
        for line, names in zip(lines, named):
            owners = names if names & subjects or not subjects else names | subjects
            for name in owners or subjects:
                records.setdefault(name, _Record()).add(line)
            row_name = _row_name(line)
            if row_name:
                records[row_name[0]].names.add(row_name[1])
    return records


def _row_name(line: str) -> tuple[str, str] | None:
    """``(record, name)`` when ``line`` is a row whose cell after a record's own cell is a
    name of two words or more with letters ("P-7 | Intake air filter | stock 6")."""
    stripped = line.strip()
    if stripped.count(_ROW_SEPARATOR) < 2 and not (stripped.startswith("|") and stripped.count("|") >= 3):
        return None
    cells = [cell.strip() for cell in (stripped.strip("|").split("|") if stripped.startswith("|")
                                       else stripped.split(_ROW_SEPARATOR))]
    for index, cell in enumerate(cells[:-1]):
        names = _record_names(cell)
        if len(names) == 1 and names[0][1] == 0 and names[0][2] == len(cell):
            following = cells[index + 1]
            if len(following.split()) >= 2 and re.search(r"[^\W\d_]{2}", following) and not _record_names(following):
                return names[0][0], following.lower()
            return None
    return None


def _name_forms(records: dict[str, _Record]) -> dict[str, str]:
    """How an answer may name a record by its row name: the name, and the name without its
    first word when two words or more remain ("intake air filter" for "Compressor intake air
    filter"); a form two records share names neither."""
    forms: dict[str, set[str]] = {}
    for record_name, record in records.items():
        for name in record.names:
            words = name.split()
            for form in {name, *([" ".join(words[1:])] if len(words) >= 3 else [])}:
                forms.setdefault(form, set()).add(record_name)
    return {form: next(iter(owners)) for form, owners in forms.items() if len(owners) == 1}


def _mentions(line: str, known: set[str], forms: dict[str, str]) -> list[tuple[str, int, int]]:
    """Where ``line`` names a record of the observations: by its id or by its row name
    (:func:`_name_forms`): ``(record, start, end)`` in line order, none overlapping."""
    found = [(name, start, end) for name, start, end in _record_names(line) if name in known]
    lowered = line.lower()
    for form, record in sorted(forms.items(), key=lambda item: -len(item[0])):
        for match in re.finditer(rf"(?<!\w){re.escape(form)}(?!\w)", lowered):
            if not any(start < match.end() and match.start() < end for _, start, end in found):
                found.append((record, match.start(), match.end()))
    return sorted(found, key=lambda mention: mention[1])


@dataclass(frozen=True)
class Claim:
    """A figure or word an answer ties to a record whose lines do not hold it.

    Attributes:
        record: The record the answer ties it to (normal form); ``""`` for a limit stated
            as a reading, whoever's it is.
        claim: The figure or word as the answer wrote it.
        owners: The records whose lines hold it (sorted); ``("limit",)`` for a limit stated
            as a reading.
    """

    record: str
    claim: str
    owners: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.record or '-'}: {self.claim} (of {', '.join(self.owners)})"


def _clauses(line: str, mentions: Sequence[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """``(start, end)`` of the clauses of one answer line (module docstring), never cut
    inside a record's mention ("Heater band 60 mm, 400 W")."""
    cuts = ({match.end() for match in _SENTENCE_END.finditer(line)} | {match.end() for match in _CLAUSE_MARK.finditer(line)}
            | {match.start() for match in _JOINER.finditer(line)})
    cuts = sorted({0, len(line)} | {cut for cut in cuts if not any(start < cut < end for _, start, end in mentions)})
    return [(start, end) for start, end in zip(cuts, cuts[1:]) if line[start:end].strip()]


def _bare(clause: str, mentions: Sequence[tuple[str, int, int]]) -> bool:
    """Whether ``clause`` is record mentions alone (with joining words and marks): one item of
    a list whose statement comes in a later clause ("AB-1, AB-2 and AB-3 are late")."""
    rest = clause
    for _, start, end in reversed(mentions):
        rest = rest[:start] + " " + rest[end:]
    return not re.sub(r"[\W_]", "", _JOINER.sub(" ", rest))


def _spans(line: str, known: set[str], forms: dict[str, str],
           carried: str | None) -> tuple[list[tuple[str, str]], str | None]:
    """The text each record governs in ``line``: ``[(record, text)]``, and the record passed on
    to what follows (the last one named). Records listed alone in clauses before a statement
    govern the statement's first part too."""
    spans: list[tuple[str, str]] = []
    last = carried
    listed: list[str] = []
    mentions = _mentions(line, known, forms)
    for start, end in _clauses(line, mentions):
        clause = line[start:end]
        inside = [(name, begin - start, stop - start) for name, begin, stop in mentions if start <= begin < end]
        if inside and _bare(clause, inside):
            # a list item; a sentence that ends with it has no statement after it
            listed = [] if _SENTENCE_CLOSE.search(clause) else [*listed, *(name for name, _, _ in inside)]
            last = inside[-1][0]
            continue
        if not inside:
            if last:
                spans.extend((name, clause) for name in dict.fromkeys([*listed, last]))
            listed = []
            last = carried if clause.rstrip().endswith((";", "；")) else last
            continue
        bounds = [0] + [begin for _, begin, _ in inside[1:]] + [len(clause)]
        spans.extend((name, clause[bounds[0]:bounds[1]]) for name in dict.fromkeys(listed) if name != inside[0][0])
        spans.extend((name, clause[bounds[index]:bounds[index + 1]]) for index, (name, _, _) in enumerate(inside))
        listed = []
        last = inside[-1][0] if not clause.rstrip().endswith((";", "；")) else carried
    return spans, last


def _figures(text: str, question_values: set[str], *, positions: bool = False) -> list[Any]:
    """The figures of ``text`` an answer states: dates and informative numbers, not ids, not
    a list line's number, not a value the question wrote: ``(as written, readings)``, with
    its start in ``text`` as a third item when ``positions``."""
    body = _LIST_MARKER.sub(lambda match: " " * len(match.group(0)), text, count=1)
    found: list[Any] = []
    for token in value_tokens(body):
        if token.kind not in ("number", "date") or not informative(token.value):
            continue
        if question_values & set(token.readings):
            continue
        figure = (body[token.start:token.end], set(token.readings))
        found.append((*figure, token.start) if positions else figure)
    return found


def misattributed_claims(answer: str, steps: Sequence[dict[str, Any]], question: str = "") -> list[Claim]:
    """The figures and states ``answer`` ties to a record that another record's lines hold
    and that record's own lines do not (module docstring).

    Args:
        answer: The written answer.
        steps: The turn's step records (failed and empty results are skipped).
        question: The user's question: figures it writes are the asker's, never checked.

    Returns:
        One :class:`Claim` per misattributed figure or word, in answer order, each once;
        ``[]`` when the observations name fewer than two records (nothing to confuse).
    """
    question_values = {reading for token in value_tokens(question) for reading in token.readings}
    found = _limits_as_readings(answer, steps, question_values)
    records = records_of(steps)
    if len(records) < 2:
        return found
    vocabulary: dict[str, set[str]] = {}
    for name, record in records.items():
        for word in record.words:
            vocabulary.setdefault(word, set()).add(name)
    forms = _name_forms(records)
    copied = _copied_lines(steps)
    carried: str | None = None
    intro: str | None = None  # a line ending in ":" over a list
    owners: set[str] = set()  # the records the intro names itself ("AB-1's parts are low:")
    listed: list[str] = []
    for raw in [*answer.splitlines(), ""]:
        line = raw.strip()
        item = bool(_LIST_ITEM.match(line))
        mentions = _mentions(line, set(records), forms) if line else []
        # records run together on the line right under the intro ("P-1 (…) | P-2 (…)") are its list
        run = [name for name, _, _ in mentions if name not in owners] if intro is not None and not listed else []
        run = run if len(set(run)) >= 2 and not item else []
        if intro is not None and line and not item and not run or not raw:
            found.extend(_intro_claims(intro, listed, records, vocabulary))
            intro, listed = (None, []) if line and not item else (intro, listed)
        if not line:
            continue
        if line.rstrip("*_ ").endswith((":", "：")) and _plain(line) not in copied:
            found.extend(_intro_claims(intro, listed, records, vocabulary) if intro is not None else [])
            # the intro is the line's last sentence ("AB-1 is stopped. Its parts are low:")
            intro, listed, owners = _SENTENCE_END.split(line)[-1], [], {name for name, _, _ in mentions}
            if not mentions:
                continue
        listed.extend(dict.fromkeys(run))
        if intro is not None and item and mentions:
            listed.append(mentions[0][0])
        spans, last = _spans(line, set(records), forms, carried)
        heading = bool(mentions) and not _KEY_VALUE.match(_plain(line)) and not any(
            token.kind in ("number", "date") and informative(token.value) for token in value_tokens(line))
        carried = last if heading else carried
        if _plain(line) in copied:  # a line of the tools' output, as they wrote it
            continue
        for name, text in spans:
            found.extend(_figure_claims(name, text, records, question_values))
            found.extend(_word_claims(name, text, records, vocabulary))
    return list(dict.fromkeys(found))


def _copied_lines(steps: Sequence[dict[str, Any]]) -> set[str]:
    """The successful observations' lines as :func:`_plain` writes them."""
    return {_plain(line) for step in steps if not step.get("error")
            for line in readable_observation(str(step.get("observation") or "")).splitlines()}


def _limit_words() -> re.Pattern[str]:
    words = [word for by_language in VERDICT_WORDS["limit"].values() for word in by_language]
    spaced = sorted((word for word in words if not _UNSPACED.search(word)), key=len, reverse=True)
    parts = [rf"(?<![\w-]){re.escape(word)}(?![\w-])" for word in spaced] + [
        re.escape(word) for word in words if _UNSPACED.search(word)]
    return re.compile("|".join(parts), re.IGNORECASE)


_LIMIT_WORD = _limit_words()
_LIMIT_END = re.compile(r"\s\||[()\[\];]")


def _limit_only(steps: Sequence[dict[str, Any]]) -> set[str]:
    """The figures the observations write only as a limit: after a ``limit`` word of the
    language table (:data:`~reactgraph.core.language.VERDICT_WORDS`: "limit", "threshold",
    and their kin) up to the end of its cell or bracket ("temp 48.7°C (limit 60.0)", "limits:
    vibration 4.5 mm/s, temperature 90.0°C"), and nowhere else."""
    as_limit: set[str] = set()
    elsewhere: set[str] = set()
    for line in _copied_lines(steps):
        bounds = _limit_bounds(line)
        for token in value_tokens(line):
            if token.kind != "number" or not informative(token.value):
                continue
            inside = any(start <= token.start < end for start, end in bounds)
            (as_limit if inside else elsewhere).update(token.readings)
    return as_limit - elsewhere


def _limit_bounds(line: str) -> list[tuple[int, int]]:
    """Where ``line`` states limits: from each limit word to the end of its cell or bracket."""
    bounds = []
    for match in _LIMIT_WORD.finditer(line):
        end = _LIMIT_END.search(line, match.end())
        bounds.append((match.end(), end.start() if end else len(line)))
    return bounds


def _limits_as_readings(answer: str, steps: Sequence[dict[str, Any]], question_values: set[str]) -> list[Claim]:
    """The figures ``answer`` states as a reading, in a clause with no limit word, that the
    observations write only as a limit (:func:`_limit_only`): "the temperature dropped from
    90.0°C" when 90.0°C is the limit. Lines copied from the tools' output are not checked."""
    limits = _limit_only(steps)
    if not limits:
        return []
    copied = _copied_lines(steps)
    claims = []
    for raw in answer.splitlines():
        line = raw.strip()
        if not line or _plain(line) in copied:
            continue
        stated = _limit_bounds(line)
        for start, end in _clauses(line, []):
            clause = line[start:end]
            if _LIMIT_WORD.search(clause):
                continue
            claims.extend(Claim("", line[start + at:start + at + len(written)], ("limit",))
                          for written, readings, at in _figures(clause, question_values, positions=True)
                          if readings & limits and not any(low <= start + at < high for low, high in stated))
    return claims


_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_KEY_VALUE = re.compile(r"^[^:]{1,40}:\s+\S")


def _plain(line: str) -> str:
    """A line without list marks, emphasis and letter case: how an answer copies a tool's line."""
    return " ".join(_LIST_ITEM.sub("", line).replace("**", "").replace("`", "").split()).lower()


def _intro_claims(intro: str, listed: Sequence[str], records: dict[str, _Record],
                  vocabulary: dict[str, set[str]]) -> list[Claim]:
    """The words of a list's intro ("These parts are out of stock:") that most of the records
    listed under it do not hold: each listed record lacking one is misattributed (a word that
    most of them hold describes the list, loosely, and stands)."""
    by_record = {name: _word_claims(name, intro, records, vocabulary) for name in dict.fromkeys(listed)}
    claims = []
    for word in {claim.claim for found in by_record.values() for claim in found}:
        lacking = [claim for found in by_record.values() for claim in found if claim.claim == word]
        if 2 * len(lacking) > len(by_record):
            claims.extend(lacking)
    return claims


def _figure_claims(name: str, text: str, records: dict[str, _Record], question_values: set[str]) -> list[Claim]:
    """The figures of a text ``name`` governs that other records' lines hold and its own do not."""
    own = records[name]
    claims = []
    for written, readings in _figures(text, question_values):
        if readings & own.values:
            continue
        owners = tuple(sorted(other for other, record in records.items() if readings & record.values))
        if owners:
            claims.append(Claim(name, written, owners))
    return claims


def _word_claims(name: str, text: str, records: dict[str, _Record], vocabulary: dict[str, set[str]]) -> list[Claim]:
    """The word cells and states of a text ``name`` governs that are another record's and not its own."""
    own = records[name]
    claims = []
    lowered = text.lower()
    for word, owners in vocabulary.items():
        if name in owners or own.says(word):
            continue
        if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", lowered):
            claims.append(Claim(name, word, tuple(sorted(owners))))
    for meaning in state_meanings(text):
        family = next((family for family in STATE_FAMILIES if meaning in family), ())
        if meaning in own.states or not own.states & (set(family) - {meaning}):
            continue
        owners = tuple(sorted(other for other, record in records.items() if meaning in record.states))
        if owners:
            claims.append(Claim(name, meaning, owners))
    return claims


def claim_problems(answer: str, steps: Sequence[dict[str, Any]], question: str = "") -> list[str]:
    """The answer check's label for misattributed claims, next to
    :func:`~reactgraph.answer.fitness.answer_problems`' labels.

    Returns:
        ``["misattributed"]`` when :func:`misattributed_claims` finds one, else ``[]``.
    """
    return ["misattributed"] if misattributed_claims(answer, steps, question) else []
