"""Grounded answers: every number and id of an answer checked against the trace (SPEC R13.1).

A small model writing the answer copies figures from the work log when it can, and makes
them up when it cannot. :func:`check_grounding` finds every value in the answer — ids such
as ``CNC-003`` or ``W-1105``, dates, numbers (``72.3``, ``1,250``, ``48.70``) — and looks
for each in the evidence: the tool calls' arguments and observations, and the question.
A value found nowhere is *ungrounded*. An answer that passes on none of the values the
tools returned, when they returned some, is *factless* (a small model's answer often is).

Values are compared in a normal form: ids upper-cased, numbers without thousands
separators or trailing zeros (``48.70`` = ``48.7``, ``85.0`` = ``85``). Not checked: list
markers (``1.`` at the start of a line) and heading numbers. A derived figure — a
difference, a sum — is ungrounded by this rule; that is why ``AgentSettings.grounding``
defaults to ``"report"`` and only small models' profiles choose ``"enforce"``.

:func:`observation_answer` is enforce mode's last resort: an answer made of the
successful observations themselves, which is grounded by construction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reactgraph.jsonparse import safe_json

_ID = r"[A-Za-z]{1,6}-\d+(?:-\d+)*"
_DATE = r"\d{4}-\d{2}-\d{2}"
_NUMBER = r"\d+(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_VALUE = re.compile(rf"(?<![A-Za-z0-9_.])(?:({_DATE})|({_ID})|({_NUMBER}))(?![0-9])")
_LIST_MARKER = re.compile(r"^\s*(?:#+\s*)?\d+[.)]\s", re.MULTILINE)


def _normal_number(text: str) -> str:
    plain = text.replace(",", "")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    plain = plain.lstrip("0") or "0"
    return "0" + plain if plain.startswith(".") else plain


def extract_values(text: str, *, skip_list_markers: bool = False) -> list[str]:
    """The ids, dates and numbers of ``text`` in normal form (see the module docstring).

    Args:
        text: Any text.
        skip_list_markers: Leave out numbers that only number a list line or heading.

    Returns:
        The values, in order, each once: ids upper-cased (``CNC-003``), dates as written,
        numbers normalized (``1,250.50`` → ``1250.5``).
    """
    markers = {m.end() - 2 for m in _LIST_MARKER.finditer(text)} if skip_list_markers else set()
    values: list[str] = []
    for match in _VALUE.finditer(text):
        date, ident, number = match.groups()
        if date:
            value = date
        elif ident:
            value = ident.upper()
        else:
            if match.end() in markers:
                continue
            value = _normal_number(number)
        if value not in values:
            values.append(value)
    return values


def _with_id_parts(values: Iterable[str]) -> set[str]:
    """``values`` plus the number parts of their ids (``"003"`` of ``CNC-003`` is written
    alone too, as ``3``)."""
    found = set(values)
    for value in list(found):
        if "-" in value and not re.fullmatch(_DATE, value):
            found.update(_normal_number(part) for part in value.split("-")[1:])
    return found


def _evidence(steps: Sequence[dict[str, Any]], question: str) -> set[str]:
    found: set[str] = set(extract_values(question))
    for step in steps:
        found.update(extract_values(str(step.get("observation") or "")))
        found.update(extract_values(safe_json(step.get("tool_args"))))
    return _with_id_parts(found)


def _informative(value: str) -> bool:
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

    def to_dict(self, mode: str, action: str) -> dict[str, Any]:
        """The JSON form put in state, ``AgentResult.grounding`` and ``done``:
        ``{mode, action, checked, cited, ungrounded}`` (counts, and the ungrounded values)."""
        return {"mode": mode, "action": action, "checked": len(self.checked), "cited": len(self.cited),
                "ungrounded": list(self.ungrounded)}


def check_grounding(answer: str, steps: Sequence[dict[str, Any]], question: str, min_facts: int = 1) -> GroundingReport:
    """Check every number and id of ``answer`` against the trace and the question (SPEC R13.1).

    Args:
        answer: The synthesized answer.
        steps: The turn's step records (``tool_args``, ``observation``).
        question: The user's question.
        min_facts: The informative facts of the successful observations the answer must
            pass on to not be factless (``AgentSettings.grounding_min_facts``).

    Returns:
        A :class:`GroundingReport`.
    """
    checked = extract_values(answer, skip_list_markers=True)
    evidence = _evidence(steps, question)
    asked = _with_id_parts(extract_values(question))
    facts = {value for step in steps if not step.get("error")
             for value in extract_values(str(step.get("observation") or "")) if _informative(value)} - asked
    return GroundingReport(
        checked=checked,
        ungrounded=[value for value in checked if value not in evidence],
        cited=[value for value in checked if value in facts],
        facts_available=len(facts),
        min_facts=min_facts,
    )


def _is_korean(text: str) -> bool:
    return any("\uac00" <= char <= "\ud7a3" for char in text)


def observation_answer(question: str, steps: Iterable[dict[str, Any]], result_chars: int = 2000) -> str:
    """An answer made of the successful observations themselves (enforce mode's fallback).

    Args:
        question: The user's question (a Korean question gets the Korean lead line).
        steps: The turn's step records.
        result_chars: Characters kept of each observation.

    Returns:
        A lead line, then each distinct successful observation in a fenced block under its
        tool name; or, when none succeeded, one line saying no tool returned data followed
        by what each failed call was told (a rejected argument names the value and what
        is accepted, so an unknown id is explained).
    """
    korean = _is_korean(question)
    blocks: list[str] = []
    failures: list[str] = []
    seen: set[str] = set()
    for step in steps:
        observation = str(step.get("observation") or "")
        if step.get("error"):
            reason = str(step["error"]).strip().splitlines()[0] if str(step["error"]).strip() else "failed"
            line = f"- {step.get('tool_name')}({safe_json(step.get('tool_args'))}): {reason[:300]}"
            if not step.get("refused") and line not in failures:
                failures.append(line)
            continue
        if not observation.strip() or observation in seen:
            continue
        seen.add(observation)
        blocks.append(f"**{step.get('tool_name')}**\n```\n{observation[:result_chars]}\n```")
    if not blocks:
        lead = "도구에서 이 질문에 답할 데이터를 얻지 못했습니다." if korean else "No tool returned data that answers this question."
        if failures:
            return "\n\n".join([lead, ("도구의 응답:" if korean else "What the tools said:") + "\n" + "\n".join(failures)])
        return lead
    lead = "도구가 반환한 데이터입니다:" if korean else "Here is what the tools returned:"
    return "\n\n".join([lead, *blocks])
