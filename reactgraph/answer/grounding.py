"""Grounded answers: every number and id of an answer checked against the trace (SPEC R13.1).

A small model writing the answer copies figures from the work log when it can, and makes
them up when it cannot. :func:`check_grounding` finds every value in the answer — ids such
as ``PO-103`` or ``E-17``, dates, numbers (``72.3``, ``1,250``, ``48.70``) — and looks
for each in the evidence: the tool calls' arguments and observations, and the question.
A value found nowhere is *ungrounded*. An answer that passes on none of the values the
tools returned, when they returned some, is *factless* (a small model's answer often is).

Values are compared in a normal form: ids upper-cased, numbers without thousands
separators or trailing zeros (``48.70`` = ``48.7``, ``85.0`` = ``85``). Not checked: list
markers (``1.`` at the start of a line) and heading numbers. A derived figure — a
difference, a sum, a ratio, a percent change of two figures of the evidence, or one of them
rounded — is grounded only with ``derived=True`` (``AgentSettings.grounding_derived``: on for
capable models, off for small ones, which write such numbers by chance).

What makes an answer unfit to show whatever its values lives in
:mod:`reactgraph.answer.fitness`.

:func:`observation_answer` is enforce mode's last resort: an answer made of the successful
observations themselves — a lead sentence naming what was asked about, then the facts as a
list or a table — which is grounded by construction.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reactgraph.protocol.jsonparse import safe_json
from reactgraph.core.language import detect_language, phrase, reads_as
from reactgraph.engine.state import StepRecord
from reactgraph.tools.runner import holds_no_data
from reactgraph.tools.notation import normal_number
from reactgraph.tools.values import Token, value_tokens

_LIST_MARKER = re.compile(r"^\s*(?:#+\s*)?\d+[.)]\s", re.MULTILINE)


def _tokens(text: str, *, skip_list_markers: bool = False) -> list[Token]:
    """:func:`~reactgraph.tools.values.value_tokens` of ``text``, without the numbers that only
    number a list line or heading when ``skip_list_markers``."""
    markers = {m.end() - 2 for m in _LIST_MARKER.finditer(text)} if skip_list_markers else set()
    return [token for token in value_tokens(text) if not (token.kind == "number" and token.end in markers)]


def extract_values(text: str, *, skip_list_markers: bool = False) -> list[str]:
    """The values of ``text`` in normal form (:func:`~reactgraph.tools.values.value_tokens`: ids,
    e-mail addresses, UUIDs, dates in any notation, numbers).

    Args:
        text: Any text.
        skip_list_markers: Leave out numbers that only number a list line or heading.

    Returns:
        The values, in order, each once: ids upper-cased (``PO-103``), dates as written,
        numbers normalized (``1,250.50`` → ``1250.5``).
    """
    return list(dict.fromkeys(token.value for token in _tokens(text, skip_list_markers=skip_list_markers)))


def _readings(text: str) -> set[str]:
    """Every reading of every value of ``text`` (a number's other readings too)."""
    return {reading for token in value_tokens(text) for reading in token.readings}


def _with_id_parts(values: Iterable[str]) -> set[str]:
    """``values`` plus the number parts of their ids (``"003"`` of ``PO-103`` is written
    alone too, as ``3``)."""
    found = set(values)
    for value in list(found):
        if not value.startswith("-") and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) and re.search(r"[A-Za-z]", value):
            found.update(normal_number(part) for part in re.split(r"[-/#_.]", value)[1:] if part.isdigit())
    return found


def _in_evidence(token: Token, evidence: set[str]) -> bool:
    """Whether a value of the answer is in the evidence: one of its readings is, or it is a
    date without a year (``3月5日``) whose month and day an evidence date has. A time of day
    counts by its clock reading alone (``10:45`` is not grounded by a ``10`` in the trace)."""
    if token.kind == "time":
        return any(reading in evidence for reading in token.readings if ":" in reading)
    if any(reading in evidence for reading in token.readings):
        return True
    return token.value.startswith("--") and any(item.endswith(token.value[1:]) and item[:4].isdigit()
                                                for item in evidence)


_DERIVED_OPERANDS = 80
"""Most evidence numbers :func:`derivable` combines pairwise (the first ones of the trace):
80 numbers are 6,320 ordered pairs, checked in well under a millisecond per value."""


def _decimals(value: str) -> int:
    return len(value.split(".")[1]) if "." in value else 0


def derivable(value: str, evidence: Iterable[str]) -> bool:
    """Whether the number ``value`` (normal form) is one of the ``evidence`` numbers rounded,
    or the difference, sum, ratio (plain or in percent) or percent change of two of them, at
    the precision ``value`` is written with (SPEC R13.1, a capable model's derived
    figure is not made up).

    Args:
        value: A number in :func:`extract_values`' normal form (``"6.6"``); ids and dates
            are never derivable.
        evidence: Values of the trace in normal form; only numbers are used.

    Returns:
        True when some single figure or pair gives ``value`` once rounded to its decimals.
    """
    if not re.fullmatch(r"\d+(?:\.\d+)?", value):
        return False
    target, places = float(value), _decimals(value)
    tolerance = 0.5 * 10 ** -places + 1e-9
    numbers = [float(item) for item in evidence if re.fullmatch(r"\d+(?:\.\d+)?", item)][:_DERIVED_OPERANDS]

    def close(candidate: float) -> bool:
        return abs(abs(candidate) - target) <= tolerance

    if any(close(number) for number in numbers):
        return True
    for a, b in itertools.permutations(numbers, 2):
        if close(a - b) or close(a + b) or (b and (close(a / b) or close(a / b * 100) or close((a - b) / b * 100))):
            return True
    return False


def _evidence(steps: Sequence[StepRecord], question: str) -> set[str]:
    found: set[str] = _readings(question)
    for step in steps:
        found.update(_readings(str(step.get("observation") or "")))
        found.update(_readings(safe_json(step.get("tool_args"))))
    return _with_id_parts(found)


def informative(value: str) -> bool:
    """Whether a value says something by itself: an id, a date, or a number other than a
    bare single digit (``#2``, ``1.`` and the like turn up in any text)."""
    return not re.fullmatch(r"\d", value)


@dataclass(frozen=True)
class GroundingReport:
    """The result of :func:`check_grounding`.

    Attributes:
        checked: Every value found in the answer, in normal form.
        ungrounded: The values found neither in the trace nor in the question.
        cited: The answer's values that come from a successful observation and are not
            in the question (the facts the answer passes on).
            Only informative values count: ids, dates and numbers other than a bare
            single digit.
        facts_available: How many informative values the successful observations hold
            that the question does not already name.
        min_facts: The facts an answer must pass on (fewer when fewer are available).
    """

    checked: list[str] = field(default_factory=list)
    ungrounded: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    facts_available: int = 0
    min_facts: int = 1

    @property
    def grounded(self) -> bool:
        """True when no value is ungrounded."""
        return not self.ungrounded

    @property
    def factless(self) -> bool:
        """True when the tools returned facts and the answer passes on fewer than
        ``min(min_facts, facts_available)`` of them (none, with the default of one)."""
        return len(self.cited) < min(self.min_facts, self.facts_available)

    def to_dict(self, mode: str, action: str, problems: Sequence[str] = ()) -> dict[str, Any]:
        """The JSON form put in state, ``AgentResult.grounding`` and ``done``:
        ``{mode, action, checked, cited, ungrounded}`` (counts, and the ungrounded values),
        plus ``problems`` (:func:`answer_problems` of a withdrawn answer) when there are some."""
        form = {"mode": mode, "action": action, "checked": len(self.checked), "cited": len(self.cited),
                "ungrounded": list(self.ungrounded)}
        return {**form, "problems": list(problems)} if problems else form


def check_grounding(answer: str, steps: Sequence[dict[str, Any]], question: str, min_facts: int = 1, *,
                    derived: bool = False, context: str = "") -> GroundingReport:
    """Check every number and id of ``answer`` against the trace and the question (SPEC R13.1).

    Args:
        answer: The synthesized answer.
        steps: The turn's step records (``tool_args``, ``observation``).
        question: The user's question.
        min_facts: The informative facts of the successful observations the answer must
            pass on to not be factless (``AgentSettings.grounding_min_facts``).
        derived: A number :func:`derivable` from the evidence is grounded too
            (``AgentSettings.grounding_derived``).
        context: More evidence: the earlier turns shown to synthesis (a follow-up may
            repeat an earlier answer's figure).

    Returns:
        A :class:`GroundingReport`.
    """
    tokens = list({token.value: token for token in reversed(_tokens(answer, skip_list_markers=True))}.values())[::-1]
    checked = [token.value for token in tokens]
    evidence = _evidence(steps, question) | _with_id_parts(_readings(context))
    asked = _with_id_parts(_readings(question))
    facts = {value for step in steps if not step.get("error") and not holds_no_data(step.get("observation"))
             for value in extract_values(str(step.get("observation") or "")) if informative(value)} - asked
    missing = [token.value for token in tokens if not _in_evidence(token, evidence)]
    ordered: list[str] = []  # the evidence in trace order, sorted once, only when a value is missing
    return GroundingReport(
        checked=checked,
        ungrounded=[value for value in missing
                    if not (derived and derivable(value, ordered or (ordered := sorted(evidence, key=_first_seen(
                        steps, question)))))],
        cited=[token.value for token in tokens if any(reading in facts for reading in token.readings)],
        facts_available=len(facts),
        min_facts=min_facts,
    )


def _first_seen(steps: Sequence[StepRecord], question: str) -> Any:
    """A sort key putting evidence values in the order the trace first writes them (so
    :func:`derivable`'s bound keeps the first figures, not arbitrary ones)."""
    text = question + "\n" + "\n".join(str(step.get("observation") or "") for step in steps)
    return lambda value: (text.find(value) if value in text else len(text), value)


_ROW_SEPARATOR = " | "
_KEY_VALUE = re.compile(r"^([^:|]{1,40}?):\s+(\S.*)$")
_RULE_ROW = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")] if line.strip().startswith("|") \
        else [cell.strip() for cell in line.split("|")]


def row_header(rows: Sequence[Sequence[str]]) -> list[str] | None:
    """The column names a tool's own output gives its rows: the first row when it names
    columns — no cell of it holds a digit while every later row holds one, and no cell is
    longer than 40 characters (``id | name | state`` over ``AB/100 | Pump | on``). Over one
    row, only a first row of three columns or more is told from data (``isbn | title | due``
    over one loan; ``a | b`` over ``1 | 2`` may be two rows of data).

    Args:
        rows: A run of rows of one width, as cells, in output order (a Markdown rule row
            under a header is already taken out).

    Returns:
        The first row's cells, or ``None`` when the output names no columns (the rows are
        then shown as a list).
    """
    if len(rows) < 2 or (len(rows) == 2 and len(rows[0]) < 3):
        return None
    first, rest = rows[0], rows[1:]
    if any(char.isdigit() for cell in first for char in cell) or not all(0 < len(cell) <= 40 for cell in first):
        return None
    return list(first) if all(any(char.isdigit() for char in "".join(row)) for row in rest) else None


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value.replace("\n", " ").strip()
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def readable_observation(observation: str) -> str:
    """A tool result as lines a reader (and :func:`_observation_lines`) can take: a result that
    is one JSON object becomes its ``key: value`` lines; a JSON array of objects sharing their
    keys becomes a Markdown table whose header is those keys (the tool's own names for its
    columns), one row an object; an array of one object, its ``key: value`` lines; an array of
    plain values, one line each. Nested values are written as compact JSON. Any other text is
    returned as it is.

    Args:
        observation: The observation text.

    Returns:
        The same facts, one per line, with no JSON punctuation around them.
    """
    text = observation.strip()
    if not text[:1] in ("[", "{"):
        return observation
    try:
        data = json.loads(text)
    except ValueError:
        return observation
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict):
        data = data[0]
    if isinstance(data, dict):
        return "\n".join(f"{key}: {_cell(value)}" for key, value in data.items()) if data else observation
    if not isinstance(data, list) or not data:
        return observation
    if all(isinstance(item, dict) for item in data):
        keys = list(dict.fromkeys(key for item in data for key in item))
        if len(keys) < 2:
            return "\n".join(_cell(item.get(keys[0])) if keys else "" for item in data)
        rows = ["| " + " | ".join(str(key) for key in keys) + " |", "|" + "---|" * len(keys)]
        rows.extend("| " + " | ".join(_cell(item.get(key, "")).replace("|", "/") for key in keys) + " |" for item in data)
        return "\n".join(rows)
    return "\n".join(_cell(item) for item in data)


def _observation_lines(observation: str, emitted: set[str]) -> list[str]:
    """One observation as answer lines: ``key: value`` lines as a list, runs of rows (``a | b
    | c`` lines of one width) as a table when the output names their columns
    (:func:`row_header`, or a Markdown header over a rule row), else as list items; a title
    line (ending in ``:``) as it is, other lines as list items; lines already written
    (``emitted``) are skipped. No table is ever shown with an empty header row."""
    out: list[str] = []
    rows: list[list[str]] = []
    ruled: list[str] | None = None  # the header a Markdown rule row confirmed

    def flush() -> None:
        nonlocal ruled
        same = len({len(row) for row in rows}) == 1
        names = (ruled if ruled is not None and same and len(ruled) == len(rows[0])
                 else row_header(rows) if same else None)
        body = rows[1:] if names is not None and ruled is None else rows
        if names is not None and body:
            out.extend(["", "| " + " | ".join(names) + " |", "|" + "---|" * len(names)])
            out.extend("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in body)
            out.append("")
        else:
            out.extend("- " + " · ".join(cell for cell in row if cell) for row in rows)
        rows.clear()
        ruled = None

    for raw in readable_observation(observation).splitlines():
        line = raw.strip()
        if not line or line in emitted:
            continue
        if _RULE_ROW.match(line) and len(rows) == 1:
            ruled = rows.pop()
            continue
        emitted.add(line)
        if line.count(_ROW_SEPARATOR) >= 2 or (line.startswith("|") and line.endswith("|") and line.count("|") >= 3):
            rows.append(_cells(line))
            continue
        flush()
        match = _KEY_VALUE.match(line)
        if line.endswith(":"):
            out.append(line)
        elif match:
            out.append(f"- **{match.group(1).strip()}**: {match.group(2).strip()}")
        else:
            out.append(f"- {line}")
    flush()
    return out


def argument_strings(value: Any) -> Iterable[str]:
    """The strings and numbers of a tool call's arguments (nested dicts and lists walked), as text."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from argument_strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from argument_strings(item)


def _subject(question: str, steps: Sequence[StepRecord]) -> str:
    """What the question asks about, for the lead sentence: the arguments of the tool calls
    that the question writes as a whole word or phrase (``PO-103``, ``2026-01-28``, ``Line C``
    in "Line Cの設備" but not ``fail`` in "failed"; any letter case) or in its own notation
    (``2026-03-05`` for "2026年3月5日", the number ``104233``), in the order the question names
    them, spelled as the calls passed them."""
    found: dict[str, int] = {}
    written = {reading: token.start for token in value_tokens(question) for reading in token.readings}
    for step in steps:
        for value in argument_strings(step.get("tool_args")):
            text = str(value).strip()
            if len(text) < 2 or text in found:
                continue
            # Latin letters and digits bound a word; a particle of a language written without
            # spaces may follow the value (Korean, Japanese).
            match = re.search(rf"(?<![A-Za-z0-9]){re.escape(text)}(?![A-Za-z0-9])", question, re.IGNORECASE)
            if match:
                found[text] = match.start()
            else:  # the same value in the question's own notation (a date, a number): one of its readings
                readings = [reading for token in value_tokens(text) if token.end - token.start == len(text)
                            for reading in token.readings if reading in written]
                if readings:
                    found[text] = written[readings[0]]
    return ", ".join(sorted(found, key=found.__getitem__))


def observation_answer(question: str, steps: Iterable[dict[str, Any]], result_chars: int = 2000,
                       descriptions: Mapping[str, str] | None = None, *, language: str | None = None,
                       lead: str | None = None) -> str:
    """An answer made of the successful observations themselves (enforce mode's fallback and
    a loop that answers without the model), grounded by construction.

    Args:
        question: The user's question: the values it names that the calls passed are named
            in the lead, and its language picks the lead's when ``language`` is not given.
        steps: The turn's step records.
        result_chars: Characters kept of each observation.
        descriptions: Tool name → description (kept for callers; column names come from the
            tools' output itself, :func:`row_header`).
        language: The turn's language (the state's ``language``); ``None`` detects it from
            ``question`` (:func:`~reactgraph.core.language.detect_language`). Every sentence comes
            from :func:`~reactgraph.core.language.phrase`, the neutral form for an unknown language.
        lead: The sentence that answers the question (:func:`reactgraph.answer.lead.choose_lead`,
            made of the observations' own lines), put before the engine's lead; ``None``
            for the engine's lead alone.

    Returns:
        Markdown: a lead sentence naming what was asked about, then the facts of each
        distinct successful observation — ``key: value`` lines as a list, rows as a table —
        with units and ids as the tools wrote them, no code fence, no tool name or argument
        dump and no line twice. When no call returned data (every one failed, or its result
        holds none: :func:`~reactgraph.tools.runner.holds_no_data`): the sentence that nothing was
        found (``phrase("no_data_about")``, ``phrase("no_data")``), then what each call was told (an unknown id's message names the valid ones).
    """
    steps = list(steps)
    language = language or detect_language(question)
    subject = _subject(question, steps)
    body: list[str] = []
    failures: list[str] = []
    emitted: set[str] = set()
    for step in steps:
        said = step.get("error") or (step.get("observation") if holds_no_data(step.get("observation")) else None)
        if said is not None:
            reason = str(said).strip().splitlines()[0] if str(said).strip() else "(empty)"
            line = f"- {reason[:300]}"
            if not step.get("refused") and line not in failures:
                failures.append(line)
            continue
        observation = str(step.get("observation") or "")[:result_chars]
        lines = _observation_lines(observation, emitted)
        if lines:
            body.extend([*lines, ""])
    if not body:
        lead = phrase("no_data_about", language, subject=subject) if subject else phrase("no_data", language)
        if failures:
            return "\n\n".join([lead, phrase("tools_said", language) + "\n" + "\n".join(failures)])
        return lead
    answer_lead, lead = lead, (phrase("report_lead", language, subject=subject) if subject
                               else phrase("report_lead_plain", language))
    verdicts = tuple(phrase(f"verdict_{verdict}", language, facts="").strip() for verdict in ("yes", "no", "unknown"))
    if answer_lead and language and not answer_lead.startswith(verdicts) and reads_as(answer_lead, language) is False:
        # a lead made of the tools' own lines alone, in another language than the question's
        # (English data, a Japanese question), comes after the engine's sentence: the answer
        # opens in the reader's language, and the named line still stands before the rest of
        # the data. A verdict ("はい。…") already opens in the reader's language.
        text = "\n".join([lead, "", answer_lead, "", *body]).strip()
    else:
        text = "\n".join([*([answer_lead, ""] if answer_lead else []), lead, "", *body]).strip()
    return re.sub(r"\n{3,}", "\n\n", text)


CAPABILITY_LINES = 8
"""Most tools a :func:`capabilities_answer` lists."""


def capabilities_answer(question: str, descriptions: Mapping[str, str], *, language: str | None = None) -> str:
    """The answer to a question no tool was called for when the model's own is unfit to show
    (the strict policy's check: a reply in another language than the greeting, a code fence):
    what the agent can look up, in the question's language, from the tools' summaries.

    Args:
        question: The user's question; its language picks the answer's when ``language``
            (the turn's) is not given.
        descriptions: Tool name → description; the first line of each is listed (no tool
            names: they are no words of the user's), at most :data:`CAPABILITY_LINES`, and
            only lines without a figure (an answer states no number no tool returned).

    Returns:
        Markdown: a lead sentence, then the list; the lead alone when there are no tools.
    """
    summaries = list(dict.fromkeys(line for line in (text.strip().splitlines()[0].strip()
                                                     for text in descriptions.values() if text and text.strip())
                                   if not any(char.isdigit() for char in line)))
    language = language or detect_language(question)
    if not summaries:
        return phrase("no_data_no_tools", language)
    lead = phrase("can_look_up", language)
    items = [f"- {summary}" for summary in summaries[:CAPABILITY_LINES]]
    if len(summaries) > CAPABILITY_LINES:
        items.append("- " + phrase("and_more", language))
    return "\n".join([lead, "", *items])
