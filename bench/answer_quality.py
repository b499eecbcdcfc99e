"""Answer quality of the whole pipeline on the demo plant (point 1).

Runs a fixed set of demo questions (English and Korean) through the agent exactly as
``reactgraph run`` builds it (:func:`reactgraph.models.open_model`,
:func:`reactgraph.demo.factory.build_factory_hub`,
:func:`reactgraph.demo.agent.build_demo_agent`, consumed through
``ReActAgent.astream_events``), so tool selection, the tool loop and the streamed answer
synthesis are all measured. Rows, in one process, on the same model object and tools:

* ``native``: ``build_demo_agent(json_mode=False)`` (native tool calls when the model's
  abilities have them, else the engine's JSON protocol; the row prints the mode it got);
* ``json``: ``build_demo_agent(json_mode=True)`` (the JSON protocol; with a model that takes
  a schema, every loop call carries the action schema);
* ``create_agent``: ``langchain.agents.create_agent`` on the same model object, the same
  tools and the demo system prompt, ``recursion_limit = 2 * max_iterations + 1`` (a model
  step and a tool step per iteration, plus the answering model step); a run that raises
  (``GraphRecursionError``, a context overflow, a provider error) counts as not answered;
* ``dag`` (only when named): :class:`reactgraph.DAGAgent` on the same model, tools and demo
  settings (the JSON protocol in its steps, one planning round), consumed through its
  ``astream_events``: every step's tool calls are the run's calls, so ``0 ungrounded``
  counts DAG answers stating a value or id no step returned.

Ground truth is computed at run time: each question names the tool call(s) that answer it;
the bench calls those tools itself on the plant database and extracts the key facts (ids,
dates, numbers, state words) from their output. Nothing is hand-typed. The scoring rules
are in :func:`score_run` and in bench/README.md; the columns:

* ``right tool``: some call of the run names an expected tool with the expected ids;
* ``first call``: the run's first call does;
* ``grounded``: the final streamed answer carries facts of the ground truth;
* ``0 ungrounded``: the answer has no number, date or id that appears neither in the
  trace (tool arguments, observations, errors) nor in the question or system prompt;
* ``by model``: the run ended with the model's own answer, not the iteration cap or an
  error (the finish reasons seen are printed per row);
* ``calls/run``: chat-model calls of a run (selection, loop, synthesis, retries);
* ``median s``, ``mean s``: wall time of a run.

Usage::

    python bench/answer_quality.py                       # every question, all rows
    python bench/answer_quality.py --questions 8 --verbose
    python bench/answer_quality.py --kinds unknown_id no_tool --rows json
    python bench/answer_quality.py --rows native json --json-out aq.json
    python bench/answer_quality.py --rows json --without all   # what each safeguard buys
    python bench/answer_quality.py --rows json --local-models smollm2-135m qwen2.5-coder-0.5b
    python bench/answer_quality.py --rows native --synthesis always auto --local-endpoint qwen2.5-coder-1.5b
    python bench/answer_quality.py --rows json --sections multi yesno   # every part answered; yes/no in the lead

Sections (``--sections``, default all, each with its own table rows): ``single`` (the questions
above), ``multi`` (:data:`MULTI_QUESTIONS`: two things asked at once; ``all parts`` counts the
runs where every part's plan was carried out and the answer states a fact of every part) and
``yesno`` (:data:`YESNO_QUESTIONS`: ``yes/no lead`` counts the runs whose lead sentence says the
yes or no, in the question's language, that the plant's data decides).

With nothing configured the embedded model is started; ``OPENAI_BASE_URL`` /
``REACTGRAPH_MODEL`` / ``OPENAI_API_KEY`` select an endpoint instead (as for
``reactgraph run``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.tracers.context import register_configure_hook
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reactgraph.demo.factory import DEMO_SYSTEM_PROMPT, normalize_equipment_id
from reactgraph.policy.safeguards import SAFEGUARDS

# --------------------------------------------------------------------------- questions


@dataclass(frozen=True)
class ExpectedCall:
    """One tool call that answers (part of) a question.

    Attributes:
        tool: The tool's name.
        args: The arguments the bench calls the tool with to get the ground truth.
        must: The argument values a run's call must carry to count as right (the
            question's ids, line, alarm code); a list value must be contained in the
            call's list. Arguments not named here are free.
    """

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    must: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    """One benchmark question.

    Attributes:
        text: The question as a user writes it.
        topic: What it is about (status, compare, alarms, ...), for the report only.
        plans: Ways to answer it; each plan is the calls it needs (all of them). The first
            plan gives the ground truth. Empty for a question that needs no tool.
        kind: ``"tool"`` (the data is in the plant), ``"unknown_id"`` (it names a machine
            the plant does not have) or ``"no_tool"`` (no data needed).
        unknown_id: The id the plant does not have (``kind == "unknown_id"``).
        parts: For a question that asks several things: per part, the plans that answer
            that part (see :func:`_multi`); ``plans`` is then every combination of them.
        yes_if: For a yes/no question: the answer is "yes" when one line of the ground truth
            (the first plan's output) contains all these words (case-insensitive), else "no"
            (:func:`expected_verdict`), so the truth comes from the plant's data.
    """

    text: str
    topic: str
    plans: tuple[tuple[ExpectedCall, ...], ...] = ()
    kind: str = "tool"
    unknown_id: str = ""
    parts: tuple[tuple[tuple[ExpectedCall, ...], ...], ...] = ()
    yes_if: tuple[str, ...] = ()

    @property
    def section(self) -> str:
        """``multi`` (a question of several parts), ``yesno`` or ``single``."""
        return "multi" if self.parts else "yesno" if self.yes_if else "single"


def _one(tool: str, must: dict[str, Any] | None = None, **args: Any) -> tuple[ExpectedCall, ...]:
    """A one-call plan; ``must`` defaults to every argument given."""
    return (ExpectedCall(tool, dict(args), dict(args) if must is None else must),)


def _compare(*ids: str) -> tuple[tuple[ExpectedCall, ...], ...]:
    """Two ways to compare machines: ``compare_equipment``, or one status call per machine."""
    return (
        _one("compare_equipment", equipment_ids=list(ids)),
        tuple(ExpectedCall("get_equipment_status", {"equipment_id": i}, {"equipment_id": i}) for i in ids),
    )


def _status(eid: str) -> tuple[tuple[ExpectedCall, ...], ...]:
    return (_one("get_equipment_status", equipment_id=eid),)


def _unknown(eid: str) -> tuple[tuple[ExpectedCall, ...], ...]:
    """An unknown machine: asking the status tool for it (the tool names the valid ids), or
    listing the machines."""
    return (_one("get_equipment_status", equipment_id=eid), _one("list_equipment", must={}))


QUESTIONS: tuple[Question, ...] = (
    # The first six span the kinds (one machine, two, alarms, maintenance, unknown id, no tool),
    # so --questions 6 is a small fair sample.
    Question("CNC-003 상태 확인해줘", "status", _status("CNC-003")),
    Question("Compare CNC-001 and CNC-003", "two machines", _compare("CNC-001", "CNC-003")),
    Question("Explain alarm W-1105.", "alarms", (_one("get_alarm_details", alarm_code="W-1105"),)),
    Question("RBT-002 정비 이력 보여줘", "maintenance", (_one("get_maintenance_history", equipment_id="RBT-002"),)),
    Question("What is the status of CNC-009?", "unknown id", _unknown("CNC-009"), kind="unknown_id", unknown_id="CNC-009"),
    Question("Hello! What kinds of questions can you help me with?", "no tool", kind="no_tool"),
    Question("What is the OEE of Line B?", "production", (_one("get_line_oee", line="Line B"),)),
    Question("Which spare parts are low on stock?", "inventory", (_one("list_low_stock_parts", must={}),)),
    Question("What is the current status of INJ-002?", "status", _status("INJ-002")),
    Question("Is PRS-001 running normally?", "status", _status("PRS-001")),
    Question("CMP-002는 지금 어떤 상태야?", "status", _status("CMP-002")),
    Question("INJ-001과 INJ-002의 온도를 비교해줘", "two machines", _compare("INJ-001", "INJ-002")),
    Question("Which is closer to its vibration limit, PRS-001 or PRS-002?", "two machines", _compare("PRS-001", "PRS-002")),
    Question("List the active alarms in the plant.", "alarms", (_one("list_active_alarms"),)),
    Question("현재 활성 알람 목록 보여줘", "alarms", (_one("list_active_alarms"),)),
    Question("알람 E-3301 상세 정보 알려줘", "alarms", (_one("get_alarm_details", alarm_code="E-3301"),)),
    Question("Which alarms has RBT-001 raised in the last 30 days?", "alarms",
             (_one("get_alarm_history", equipment_id="RBT-001"),)),
    Question("Show the vibration trend of CNC-003.", "status",
             (_one("get_sensor_trend", {"equipment_id": "CNC-003"}, equipment_id="CNC-003", metric="vibration"),)),
    Question("How has the temperature of INJ-002 changed over the last 5 days?", "status",
             (_one("get_sensor_trend", {"equipment_id": "INJ-002"}, equipment_id="INJ-002", metric="temperature", days=5),)),
    Question("Show the maintenance history of CMP-002.", "maintenance", (_one("get_maintenance_history", equipment_id="CMP-002"),)),
    Question("What maintenance is scheduled for CNC-003?", "maintenance",
             (_one("get_scheduled_maintenance", equipment_id="CNC-003"),)),
    Question("점검 기한이 지난 설비가 있어?", "maintenance", (_one("get_maintenance_due", must={}),)),
    Question("Line A 생산 실적 요약해줘", "production", (_one("get_production_summary", line="Line A"),)),
    Question("What was the shift output of Line C on 2026-01-28?", "production",
             (_one("get_shift_output", line="Line C", day="2026-01-28"),)),
    Question("Which line had the most downtime in the last week?", "production", (_one("get_downtime_report", must={}),)),
    Question("What is the defect rate of Line C?", "quality", (_one("get_defect_rate", line="Line C"),)),
    Question("최근 가장 많이 발생한 불량 유형은?", "quality", (_one("get_top_defects", must={}),)),
    Question("Show the quality inspections that failed.", "quality",
             (_one("list_quality_inspections", {"result": "fail"}, result="fail"),)),
    Question("Do we have a spindle bearing in stock?", "inventory",
             (_one("check_spare_part_stock", {}, query="spindle bearing"),)),
    Question("INJ-002에 쓸 수 있는 예비 부품 재고 알려줘", "inventory",
             (_one("find_parts_for_equipment", equipment_id="INJ-002"),)),
    Question("How much energy did CMP-001 use in the last week?", "energy",
             (_one("get_energy_usage", equipment_id="CMP-001"),)),
    Question("에너지를 가장 많이 쓰는 설비는 어디야?", "energy", (_one("get_top_energy_consumers", must={}),)),
    Question("Which machines are near or over their temperature or vibration limits?", "status",
             (_one("check_threshold_violations", must={}),)),
    Question("Line C에는 어떤 설비가 있어?", "status", (_one("list_equipment", line="Line C"),)),
    Question("PRS-007 상태 알려줘", "unknown id", _unknown("PRS-007"), kind="unknown_id", unknown_id="PRS-007"),
    Question("안녕하세요! 고마워요, 오늘은 여기까지예요.", "no tool", kind="no_tool"),
)
"""The question set. The engine is never tuned to it: it is the measure."""


def _multi(text: str, topic: str, *parts: tuple[tuple[ExpectedCall, ...], ...]) -> Question:
    """A question of several parts; each part is given as its plans (alternatives), and the
    question's plans are every combination of one plan per part."""
    plans: list[tuple[ExpectedCall, ...]] = [()]
    for part in parts:
        plans = [done + option for done in plans for option in part]
    return Question(text, topic, tuple(plans), parts=tuple(parts))


def _plans(*calls: tuple[ExpectedCall, ...]) -> tuple[tuple[ExpectedCall, ...], ...]:
    return tuple(calls)


MULTI_QUESTIONS: tuple[Question, ...] = (
    _multi("What's wrong with air compressor CMP-002, and do we have spare parts for it in stock?", "status+inventory",
           _status("CMP-002"), _plans(_one("find_parts_for_equipment", equipment_id="CMP-002"))),
    _multi("CNC-003 진동 수치가 왜 높아? 점검 이력도 알려줘", "status+maintenance",
           _plans(_one("get_sensor_trend", {"equipment_id": "CNC-003"}, equipment_id="CNC-003", metric="vibration"),
                  _one("get_equipment_status", equipment_id="CNC-003")),
           _plans(_one("get_maintenance_history", equipment_id="CNC-003"))),
    _multi("Which machines are due for inspection in the next 7 days, and are CNC-003's spare parts low?",
           "maintenance+inventory", _plans(_one("get_maintenance_due", must={})),
           _plans(_one("find_parts_for_equipment", equipment_id="CNC-003"))),
    _multi("What is the OEE of Line B, and what is its defect rate?", "production+quality",
           _plans(_one("get_line_oee", line="Line B")), _plans(_one("get_defect_rate", line="Line B"))),
    _multi("Show the status of INJ-002 and explain alarm W-2210.", "status+alarms",
           _status("INJ-002"), _plans(_one("get_alarm_details", alarm_code="W-2210"))),
    _multi("List the active alarms and the machines overdue for maintenance.", "alarms+maintenance",
           _plans(_one("list_active_alarms")), _plans(_one("get_maintenance_due", must={}))),
    _multi("RBT-001 상태 알려주고, 정비 이력도 보여줘", "status+maintenance",
           _status("RBT-001"), _plans(_one("get_maintenance_history", equipment_id="RBT-001"))),
    _multi("Line A 생산 실적이랑 불량률 알려줘", "production+quality",
           _plans(_one("get_production_summary", line="Line A")), _plans(_one("get_defect_rate", line="Line A"))),
    _multi("What is the status of PRS-002? Also, how much energy did it use last week?", "status+energy",
           _status("PRS-002"), _plans(_one("get_energy_usage", equipment_id="PRS-002"))),
    _multi("재고 부족한 부품이 뭐야? 그리고 활성 알람도 알려줘", "inventory+alarms",
           _plans(_one("list_low_stock_parts", must={})), _plans(_one("list_active_alarms"))),
    _multi("Compare CNC-001 and CNC-003, and show the scheduled maintenance for CNC-003.", "compare+maintenance",
           _compare("CNC-001", "CNC-003"), _plans(_one("get_scheduled_maintenance", equipment_id="CNC-003"))),
    _multi("CMP-001 에너지 사용량이랑 현재 상태 알려줘", "energy+status",
           _plans(_one("get_energy_usage", equipment_id="CMP-001")), _status("CMP-001")),
    _multi("Which machines exceed their limits, and what alarms has INJ-002 raised in the last 30 days?",
           "status+alarms", _plans(_one("check_threshold_violations", must={})),
           _plans(_one("get_alarm_history", equipment_id="INJ-002"))),
    _multi("불량 유형 상위 목록과 실패한 품질 검사를 보여줘", "quality+quality",
           _plans(_one("get_top_defects", must={})),
           _plans(_one("list_quality_inspections", {"result": "fail"}, result="fail"))),
)
"""Questions that ask two things (English and Korean, joined by "and", "also", "그리고",
"…도", two question marks): every part needs its own data."""


def _limit(eid: str, metric: str) -> tuple[tuple[ExpectedCall, ...], ...]:
    """Whether a machine is over a limit: the plant's limit check, the machine's status, or
    its sensor trend (which states the limits)."""
    return (_one("check_threshold_violations", must={}), _one("get_equipment_status", equipment_id=eid),
            _one("get_sensor_trend", {"equipment_id": eid}, equipment_id=eid, metric=metric))


YESNO_QUESTIONS: tuple[Question, ...] = (
    Question("Is CNC-001 running hotter than its limit?", "yes/no limit", _limit("CNC-001", "temperature"),
             yes_if=("CNC-001", "temperature", "EXCEEDED")),
    Question("Is CNC-003 vibrating above its limit?", "yes/no limit", _limit("CNC-003", "vibration"),
             yes_if=("CNC-003", "vibration", "EXCEEDED")),
    Question("INJ-002 온도가 한계를 넘었어?", "yes/no limit", _limit("INJ-002", "temperature"),
             yes_if=("INJ-002", "temperature", "EXCEEDED")),
    Question("PRS-001 진동이 한계치를 넘었어?", "yes/no limit", _limit("PRS-001", "vibration"),
             yes_if=("PRS-001", "vibration", "EXCEEDED")),
    Question("CMP-002가 지금 가동 중이야?", "yes/no status", _status("CMP-002"), yes_if=("State:", "normal")),
    Question("Is CNC-001 in normal state right now?", "yes/no status", _status("CNC-001"), yes_if=("State:", "normal")),
    Question("Are any spare parts out of stock?", "yes/no inventory", (_one("list_low_stock_parts", must={}),),
             yes_if=("OUT OF STOCK",)),
    Question("RBT-002 점검 기한이 지났어?", "yes/no maintenance", (_one("get_maintenance_due", must={}),),
             yes_if=("RBT-002", "OVERDUE")),
    Question("Is CNC-001 overdue for inspection?", "yes/no maintenance", (_one("get_maintenance_due", must={}),),
             yes_if=("CNC-001", "OVERDUE")),
    Question("알람 W-1105가 아직 활성 상태야?", "yes/no alarms",
             (_one("get_alarm_details", alarm_code="W-1105"), _one("list_active_alarms")), yes_if=("Status: ACTIVE",)),
)
"""Yes/no questions (English and Korean); the right verdict comes from the plant's data."""

SECTIONS: dict[str, tuple[Question, ...]] = {"single": QUESTIONS, "multi": MULTI_QUESTIONS, "yesno": YESNO_QUESTIONS}
"""The bench's sections by name (``--sections``)."""

# --------------------------------------------------------------------------- facts and scoring

_ASCII_BEFORE = r"(?<![A-Za-z0-9])"
_ASCII_AFTER = r"(?![A-Za-z0-9])"
_ID = re.compile(_ASCII_BEFORE + r"(QI-[A-Z]-\d{4}|[A-Z]{1,5}-\d{3,6})" + _ASCII_AFTER, re.IGNORECASE)
_LOOSE_EQUIPMENT_ID = re.compile(_ASCII_BEFORE + r"(CNC|PRS|RBT|CNV|INJ|CMP)[ _]?(\d{3})" + _ASCII_AFTER, re.IGNORECASE)
_DATE = re.compile(r"(?<![0-9])(\d{4})-(\d{2})-(\d{2})(?![0-9])")
_LIST_NUMBER = re.compile(r"^(\s*(?:[-*]\s*)?)\d{1,2}[.)](?=\s)", re.MULTILINE)
_NUMBER = re.compile(r"(?<![0-9.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![0-9])")

STATE_WORDS: dict[str, tuple[str, ...]] = {
    "normal": ("정상",),
    "warning": ("경고", "주의"),
    "stopped": ("정지", "멈춤", "멈춰"),
    "critical": ("심각", "치명", "위험"),
    "active": ("활성", "발생 중", "진행 중"),
    "cleared": ("해제", "해소"),
    "overdue": ("기한 초과", "지연", "지났", "지난"),
    "out of stock": ("재고 없", "품절", "재고가 없"),
    "low": ("부족", "낮"),
    "exceeded": ("초과",),
    "near limit": ("근접", "가까"),
    "pass": ("합격", "통과"),
    "fail": ("불합격", "실패"),
    "completed": ("완료",),
    "scheduled": ("예정",),
    "in_progress": ("진행 중", "진행중"),
}
"""State words looked for in ground truth, with the Korean words that say the same in an
answer (the plant's users write Korean; the tools answer in English)."""

NOT_FOUND_CUES: tuple[str, ...] = (
    "unknown", "not found", "no such", "does not exist", "doesn't exist", "not exist", "invalid", "not a valid",
    "not valid", "no equipment", "no machine", "not in the", "couldn't find", "could not find", "cannot find",
    "can't find", "unable to find", "not recognized", "없", "존재하지", "찾을 수", "유효하지", "잘못된", "확인되지",
)
"""Words with which an answer says that a machine id does not exist (unknown-id questions)."""


def _norm_number(text: str) -> str:
    """``"72.30"`` -> ``"72.3"``, ``"1,234"`` -> ``"1234"``, ``"007"`` -> ``"7"``."""
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return text
    return format(abs(value).normalize(), "f")


def extract_ids(text: str) -> set[str]:
    """The ids a text names, upper-cased.

    Args:
        text: Any text (an answer, an observation, a question).

    Returns:
        Ids like ``CNC-003``, ``W-1105``, ``WO-260031``, ``P-1001``, ``QI-A-0129``;
        ``CNC003`` and ``CNC 003`` are read as ``CNC-003``.
    """
    found = {m.group(1).upper() for m in _ID.finditer(text)}
    found |= {f"{m.group(1).upper()}-{m.group(2)}" for m in _LOOSE_EQUIPMENT_ID.finditer(text)}
    return found


def extract_dates(text: str) -> set[str]:
    """The ``YYYY-MM-DD`` dates a text names (as written)."""
    return {m.group(0) for m in _DATE.finditer(text)}


def _strip_ids_and_dates(text: str) -> str:
    text = _ID.sub(" ", text)
    text = _LOOSE_EQUIPMENT_ID.sub(" ", text)
    return _DATE.sub(" ", text)


def extract_numbers(text: str, *, skip_list_numbers: bool = True) -> set[str]:
    """The numbers a text states, normalized, without those inside ids and dates.

    Args:
        text: Any text.
        skip_list_numbers: Ignore list numbering (``1.`` / ``2)`` at the start of a line).

    Returns:
        Normalized numbers (:func:`_norm_number`): no sign, no thousands separators, no
        trailing zeros (``72.30`` and ``72.3`` are the same number).
    """
    text = _strip_ids_and_dates(text)
    if skip_list_numbers:
        text = _LIST_NUMBER.sub(r"\1 ", text)
    return {_norm_number(m.group(0)) for m in _NUMBER.finditer(text)}


def _distinctive_numbers(text: str) -> set[str]:
    """The numbers of a text (:func:`extract_numbers`) that are not a single digit 0-9: a
    bare ``1`` or ``3`` (or ``0.0``) matches an answer by chance too often to count as a fact."""
    return {n for n in extract_numbers(text) if len(n) > 1}


def _has_word(text: str, word: str) -> bool:
    return re.search(_ASCII_BEFORE + re.escape(word) + _ASCII_AFTER, text, re.IGNORECASE) is not None


def key_facts(observation: str, question: str, *, given: str = "") -> set[str]:
    """The facts of a ground-truth observation that an answer should carry.

    Args:
        observation: The right tool's output for the right arguments.
        question: The question; its own ids, numbers, dates and words are not facts (an
            answer repeating the question proves nothing).
        given: Other text the model had anyway (the system prompt); its dates and numbers
            are not facts either.

    Returns:
        Facts as ``kind:value`` strings: ``id:W-1105``, ``date:2026-01-10``,
        ``num:72.3`` (distinctive numbers only, see :func:`_distinctive_numbers`) and
        ``word:warning`` (see :data:`STATE_WORDS`).
    """
    asked = question + "\n" + given
    facts = {f"id:{i}" for i in extract_ids(observation) - extract_ids(asked)}
    facts |= {f"date:{d}" for d in extract_dates(observation) - extract_dates(asked)}
    facts |= {f"num:{n}" for n in _distinctive_numbers(observation) - extract_numbers(asked, skip_list_numbers=False)}
    facts |= {f"word:{w}" for w in STATE_WORDS if _has_word(observation, w) and not _has_word(question, w)}
    return facts


def facts_in_answer(facts: Iterable[str], answer: str) -> set[str]:
    """Which of ``facts`` (from :func:`key_facts`) the answer states.

    Ids and dates match exactly (ids also in their loose forms), numbers after
    normalization (or rounded: ``72`` states ``72.3``), state words in English or in the
    Korean words of :data:`STATE_WORDS`.
    """
    stated = {"id": extract_ids(answer), "date": extract_dates(answer)}
    numbers = extract_numbers(answer)
    found = set()
    for fact in facts:
        kind, _, value = fact.partition(":")
        if kind == "num":
            hit = any(_same_number(n, value) for n in numbers)
        elif kind == "word":
            hit = _has_word(answer, value) or any(k in answer for k in STATE_WORDS.get(value, ()))
        else:
            hit = value in stated.get(kind, set())
        if hit:
            found.add(fact)
    return found


def _same_number(stated: str, source: str) -> bool:
    """``stated`` is ``source``, or ``source`` rounded to ``stated``'s decimals and off by at
    most 1 % (``72`` states ``72.3``; ``1`` does not state ``1.2``)."""
    if stated == source:
        return True
    try:
        s, t = Decimal(stated), Decimal(source)
    except InvalidOperation:
        return False
    places = max(0, -int(s.as_tuple().exponent))
    if places >= max(0, -int(t.as_tuple().exponent)) or not t:
        return False
    return round(float(t), places) == float(s) and abs(float(s) - float(t)) <= abs(float(t)) / 100


def ungrounded(answer: str, sources: Sequence[str]) -> list[str]:
    """The numbers, dates and ids of ``answer`` that no source has.

    Args:
        answer: The final answer.
        sources: Everything the model was given or found: the question, the system prompt,
            every tool call's arguments (as JSON), observations and errors.

    Returns:
        Sorted ungrounded tokens (``id:CNC-007``, ``date:2026-02-30``, ``num:99.1``).
        Numbers compare after normalization (``72.30`` = ``72.3``) and a rounded number
        passes (``72`` for ``72.3``); list numbering is ignored; a date's year, month and
        day count as numbers of the source (``1월 29일`` for ``2026-01-29``).
    """
    text = "\n".join(sources)
    ids, dates = extract_ids(text), extract_dates(text)
    numbers = extract_numbers(text, skip_list_numbers=False)
    for d in dates:
        numbers |= {_norm_number(part) for part in d.split("-")}
    for i in ids:  # "CNC-003" also grounds a "3"
        numbers.add(_norm_number(i.rsplit("-", 1)[1]))
    out = {f"id:{i}" for i in extract_ids(answer) - ids}
    out |= {f"date:{d}" for d in extract_dates(answer) - dates}
    out |= {f"num:{n}" for n in extract_numbers(answer) if not any(_same_number(n, m) for m in numbers)}
    return sorted(out)


@dataclass
class Call:
    """One tool call of a run, as the trace shows it.

    Attributes:
        tool: The tool name the model wrote.
        args: The arguments the model wrote.
        observation: What the tool returned (empty when it failed).
        error: The error the engine reported, if any.
        ran: Whether the tool ran (``False``: the engine refused the call before it
            started, the ``done`` event's ``ran: false``).
    """

    tool: str
    args: Any
    observation: str = ""
    error: str | None = None
    ran: bool = True


def call_matches(expected: ExpectedCall, call: Call, tools: dict[str, BaseTool]) -> bool:
    """Whether a run's call is the expected one: same tool, and every ``must`` value.

    The call's arguments are read through the tool's own argument schema first (so
    ``cnc003`` is ``CNC-003`` and ``b`` is ``Line B``, as the tool itself would read them);
    arguments the schema rejects (an unknown id) are compared after
    :func:`reactgraph.demo.factory.normalize_equipment_id`.

    Args:
        expected: The expected call.
        call: The run's call.
        tools: The hub's tools by name.

    Returns:
        ``True`` when the call names the tool and carries every required value (a
        required list must be contained in the call's list).
    """
    if call.tool != expected.tool or not isinstance(call.args, dict):
        return False
    args: dict[str, Any] = dict(call.args)
    tool = tools.get(expected.tool)
    schema = getattr(tool, "args_schema", None)
    if schema is not None and hasattr(schema, "model_validate"):
        try:
            args = schema.model_validate(call.args).model_dump()
        except ValidationError:
            args = {k: _loose(v) for k, v in call.args.items()}
    for name, want in expected.must.items():
        have = args.get(name)
        if isinstance(want, list):
            if not isinstance(have, list) or not set(map(_loose, want)) <= set(map(_loose, have)):
                return False
        elif _loose(have) != _loose(want):
            return False
    return True


def _loose(value: Any) -> Any:
    return normalize_equipment_id(value) if isinstance(value, str) else value


def plan_done(plan: Sequence[ExpectedCall], calls: Sequence[Call], tools: dict[str, BaseTool]) -> bool:
    """Whether every call of ``plan`` matches some call of the run."""
    return all(any(call_matches(e, c, tools) for c in calls) for e in plan)


@dataclass
class Score:
    """How one run scored (see :func:`score_run` for the rules).

    Attributes:
        right_tool: Some plan of the question was carried out (every call of it made,
            with the right ids); for a no-tool question, no call was made.
        first_call: The first call belongs to some plan; for a no-tool question, no call
            was made; for an unknown id, no call or a call of an unknown-id plan.
        grounded: The answer carries the ground truth (rules per question kind).
        facts: The key facts of the ground truth.
        facts_found: Those the answer states.
        ungrounded: Numbers, dates and ids of the answer no source has.
    """

    right_tool: bool
    first_call: bool
    grounded: bool
    facts: list[str]
    facts_found: list[str]
    ungrounded: list[str]
    clean: bool = True
    lead_language: bool = True
    tool_free_answer: bool = False
    parts: int = 0
    parts_answered: int = 0
    verdict: str = ""
    lead_verdict: str = ""

    @property
    def all_parts(self) -> bool:
        """Every part of a multi-part question answered (False for other questions)."""
        return self.parts > 0 and self.parts_answered == self.parts

    @property
    def right_verdict(self) -> bool:
        """The lead says the yes/no the plant's data decides (False for other questions)."""
        return bool(self.verdict) and self.lead_verdict == self.verdict


_KOREAN = re.compile("[\uac00-\ud7a3]")


def clean_answer(answer: str) -> bool:
    """An answer a person reads as an answer: not empty, no code fence, no line of 8+
    characters twice."""
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    long_lines = [line for line in lines if len(line) >= 8]
    return bool(lines) and "```" not in answer and len(long_lines) == len(set(long_lines))


def lead_in_language(question: str, answer: str) -> bool:
    """For a Korean question, whether the answer's first line is Korean; True otherwise."""
    if not _KOREAN.search(question):
        return True
    first = next((line for line in answer.splitlines() if line.strip()), "")
    return bool(_KOREAN.search(first))


def expected_verdict(question: Question, ground_truth: str) -> str:
    """``"yes"`` when one line of ``ground_truth`` contains every word of ``question.yes_if``
    (case-insensitive), else ``"no"``; ``""`` for a question that is not yes/no."""
    if not question.yes_if:
        return ""
    words = [w.lower() for w in question.yes_if]
    return "yes" if any(all(w in line.lower() for w in words) for line in ground_truth.splitlines()) else "no"


VERDICT_WORDS: dict[str, dict[str, re.Pattern[str]]] = {
    "en": {"yes": re.compile(r"\byes\b", re.IGNORECASE),
           "no": re.compile(r"\bno\b|\bnot\b|n't\b|\bnone\b", re.IGNORECASE)},
    "ko": {"yes": re.compile(r"^\W*(네|예)\b|그렇습니다|맞습니다"),
           "no": re.compile(r"아니|않|없")},
}
"""How a lead says yes or no, per language of the plant's questions (English, Korean)."""


def lead_sentence(answer: str) -> str:
    """The answer's first sentence: its first non-empty line, cut after the first ``.``,
    ``!``, ``?`` or ``。`` that ends a sentence."""
    first = next((line.strip() for line in answer.splitlines() if line.strip()), "")
    match = re.search(r"[.!?。](\s|$)", first)
    return first[: match.end()].strip() if match else first


def lead_verdict(question_text: str, answer: str) -> str:
    """``"yes"``, ``"no"`` or ``""`` (neither, or both): what the answer's lead sentence says,
    in the question's language (Korean for a Korean question, else English)."""
    words = VERDICT_WORDS["ko" if _KOREAN.search(question_text) else "en"]
    lead = lead_sentence(answer)
    said = [v for v, pattern in words.items() if pattern.search(lead)]
    return said[0] if len(said) == 1 else ""


def _part_truth(part: tuple[tuple[ExpectedCall, ...], ...], tools: dict[str, BaseTool]) -> str:
    return ground_truth(Question("", "", part), tools)


def parts_answered(question: Question, calls: Sequence[Call], answer: str,
                   tools: dict[str, BaseTool], *, given: str = DEMO_SYSTEM_PROMPT) -> int:
    """How many parts of a multi-part question are answered: a part is answered when one of
    its plans was carried out and the answer states a key fact of that part's ground truth
    (its first plan's output), preferring the facts no other part has."""
    truths = [key_facts(_part_truth(part, tools), question.text, given=given) for part in question.parts]
    answered = 0
    for index, part in enumerate(question.parts):
        others = set().union(*(t for i, t in enumerate(truths) if i != index))
        own = truths[index] - others or truths[index]
        if any(plan_done(plan, calls, tools) for plan in part) and facts_in_answer(own, answer):
            answered += 1
    return answered


def score_run(question: Question, calls: Sequence[Call], answer: str, ground_truth: str,
              tools: dict[str, BaseTool], *, given: str = DEMO_SYSTEM_PROMPT) -> Score:
    """Score one run.

    Rules:

    * ``kind == "tool"``: right tool when some plan is done; grounded when the answer
      states at least ``min(2, len(facts))`` of the ground truth's key facts and at least
      one of those is an id, a date or a number (state words alone are not enough, unless
      the ground truth has nothing else).
    * ``kind == "unknown_id"``: right when the run made no call or carried out a plan (the
      status tool asked for the unknown id, which answers with the valid ids, or listing
      the machines); a call naming another machine is wrong. Grounded when the answer says
      the machine does not exist (:data:`NOT_FOUND_CUES`) and states no ungrounded number.
    * ``kind == "no_tool"``: right when no call was made; grounded when the answer is not
      empty and states no ungrounded number.

    Args:
        question: The question.
        calls: The run's tool calls in order.
        answer: The final streamed answer.
        ground_truth: The expected tool output(s) (:func:`ground_truth`).
        tools: The hub's tools by name.
        given: The system prompt (its dates and numbers are grounded).

    Returns:
        The :class:`Score`.
    """
    sources = [question.text, given] + [json.dumps(c.args, ensure_ascii=False) + "\n" + c.observation + "\n" + (c.error or "")
                                        for c in calls]
    loose = ungrounded(answer, sources)
    first = calls[0] if calls else None
    shape = {"clean": clean_answer(answer), "lead_language": lead_in_language(question.text, answer),
             "tool_free_answer": question.kind == "tool" and not calls and bool(answer.strip())}
    if question.kind == "no_tool":
        return Score(not calls, first is None, bool(answer.strip()) and not loose, [], [], loose, **shape)
    in_plan = first is not None and any(call_matches(e, first, tools) for plan in question.plans for e in plan)
    right = any(plan_done(plan, calls, tools) for plan in question.plans)
    if question.kind == "unknown_id":
        said = any(cue in answer.lower() for cue in NOT_FOUND_CUES)
        return Score(right or not calls, first is None or in_plan, said and not loose, [], [], loose, **shape)
    facts = key_facts(ground_truth, question.text, given=given)
    found = facts_in_answer(facts, answer)
    hard = {f for f in found if not f.startswith("word:")}
    has_hard = any(not f.startswith("word:") for f in facts)
    grounded = bool(facts) and len(found) >= min(2, len(facts)) and (bool(hard) or not has_hard)
    if question.parts:
        shape.update(parts=len(question.parts), parts_answered=parts_answered(question, calls, answer, tools, given=given))
    if question.yes_if:
        shape.update(verdict=expected_verdict(question, ground_truth), lead_verdict=lead_verdict(question.text, answer))
    return Score(right, in_plan, grounded, sorted(facts), sorted(found), loose, **shape)


def ground_truth(question: Question, tools: dict[str, BaseTool]) -> str:
    """The right tools' own output for the question: each call of its first plan, run on
    the plant database now; a call the tool rejects gives the rejection's text (as the
    engine reports it). ``""`` for a no-tool question.

    Raises:
        KeyError: A question names a tool the hub does not have (a bench bug).
    """
    if not question.plans:
        return ""
    out = []
    for expected in question.plans[0]:
        try:
            out.append(str(tools[expected.tool].invoke(expected.args)))
        except ValidationError as exc:
            out.append(str(exc))
    return "\n".join(out)

# --------------------------------------------------------------------------- running


class _CallCounter(BaseCallbackHandler):
    """Counts chat-model (and plain LLM) calls started while it is the current counter."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        """One chat-model call started."""
        self.calls += 1

    def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        """One plain LLM call started."""
        self.calls += 1


_COUNTER: ContextVar[_CallCounter | None] = ContextVar("answer_quality_call_counter", default=None)
register_configure_hook(_COUNTER, True)

_WRITTEN: ContextVar[list[str] | None] = ContextVar("answer_quality_written", default=None)


def _record_written_answers() -> None:
    """Let each run record the answers its model wrote to be checked before they are shown
    (``grounding="enforce"`` with ``grounding_check_first``): the synthesize node's unseen
    collection is wrapped, so a withdrawn answer, which no event carries, can be read next to
    the answer that stood instead. Bench instrumentation only; the engine is unchanged."""
    from reactgraph.nodes import synthesize as node

    original = node.collect_answer
    if getattr(original, "records_written", False):
        return

    async def collect(chunks: Any, fallback: str) -> str:
        text = await original(chunks, fallback)
        written = _WRITTEN.get()
        if written is not None:
            written.append(text)
        return text

    collect.records_written = True  # type: ignore[attr-defined]
    node.collect_answer = collect


@dataclass
class RunRecord:
    """One question on one row.

    Attributes:
        row: ``native``, ``json`` or ``create_agent``.
        question: The question text.
        kind: The question's kind.
        calls: The run's tool calls (tool, args, observation, error).
        answer: The final streamed answer (``""`` when the run raised).
        finish_reason: ``done``'s ``finish_reason``; for ``create_agent``
            ``final_answer`` or ``error:<ExceptionName>``.
        model_calls: Chat-model calls of the run (counted by a callback on every call).
        engine_model_calls: ``done``'s ``usage.model_calls`` (reactgraph rows), else ``None``.
        seconds: Wall time of the run, s.
        error: The exception a run raised, if any.
        score: Its :class:`Score`.
        stalls: ``stall`` events of the run (the engine found the loop stuck).
        engine_grounding: ``done``'s ``grounding`` report (reactgraph rows whose settings
            check grounding), else ``None``. The bench scores the answer itself either way.
        resets: ``answer`` ``reset`` events of the run (a streamed answer withdrawn).
        written: The answers the model wrote unseen, to be checked before they were shown
            (``grounding="enforce"``), in order, those withdrawn too.
    """

    row: str
    question: str
    kind: str
    calls: list[Call]
    answer: str
    finish_reason: str | None
    model_calls: int
    engine_model_calls: int | None
    seconds: float
    error: str | None = None
    score: Score | None = None
    stalls: int = 0
    engine_grounding: dict[str, Any] | None = None
    resets: int = 0
    written: list[str] = field(default_factory=list)


NOT_BY_MODEL = {"max_iterations", "model_error", "timeout", None}
"""Finish reasons that are not the model's own answer (the cap, a failure, no ``done``).
Any other reason (``final_answer``, ``raw_content``, an answer forced after a stall) is."""


def ended_by_model(finish_reason: str | None) -> bool:
    """Whether a run with this finish reason ended with the model's own answer."""
    return finish_reason not in NOT_BY_MODEL and not str(finish_reason).startswith("error:")


async def run_reactgraph(agent: Any, row: str, question: str) -> RunRecord:
    """Run one question through a reactgraph agent's ``astream_events``, as the CLI does.

    Args:
        agent: A :class:`reactgraph.ReActAgent` from ``build_demo_agent``.
        row: The row name for the record.
        question: The question.

    Returns:
        The :class:`RunRecord` (unscored): the calls from the ``step`` events, the answer
        from the ``answer`` deltas (text withdrawn by an ``answer`` ``reset`` event is dropped,
        as clients drop it; ``done``'s answer if none streamed), the finish reason, usage and
        grounding report from ``done``, and the number of ``stall`` events.
    """
    counter = _CallCounter()
    token = _COUNTER.set(counter)
    _record_written_answers()
    written: list[str] = []
    written_token = _WRITTEN.set(written)
    calls: dict[str, Call] = {}
    deltas: list[str] = []
    done: dict[str, Any] = {}
    error = None
    stalls = resets = 0

    def record(key: str, data: dict[str, Any], started: bool) -> None:
        """A tool call's start (its name and arguments) or its end (observation or error)."""
        if started:
            calls[key] = Call(str(data.get("tool_name") or ""), data.get("tool_args"))
        elif key in calls:
            calls[key].observation = "" if data.get("error") else str(data.get("observation") or "")
            calls[key].error = data.get("error")
            calls[key].ran = data.get("ran") is not False

    began = time.perf_counter()
    try:
        async for event in agent.astream_events(question, thread_id=uuid.uuid4().hex):
            data = event.data
            if event.channel == "dag_step" and data.get("status") in ("tool_started", "tool"):
                # a step loop's ids are its own
                record(f"{data.get('step_id')}:{data.get('tool_call_id')}", data, data.get("status") == "tool_started")
            elif event.channel == "step" and data.get("type") == "iteration":
                record(str(data.get("tool_call_id")), data, data.get("status") == "start")
            elif event.channel == "answer" and data.get("status") == "delta":
                deltas.append(str(data.get("content") or ""))
            elif event.channel == "answer" and data.get("status") == "reset":  # withdrawn: clients drop it
                deltas.clear()
                resets += 1
            elif event.channel == "stall":
                stalls += 1
            elif event.channel == "error":
                error = str(data.get("message"))
            elif event.channel == "done":
                done = data
    except Exception as exc:  # noqa: BLE001 (a run that raises is a result, not the end of the bench)
        error = f"{type(exc).__name__}: {exc}"
    finally:
        _COUNTER.reset(token)
        _WRITTEN.reset(written_token)
    seconds = time.perf_counter() - began
    answer = "".join(deltas) or str(done.get("answer") or "")
    usage = done.get("usage") or {}
    return RunRecord(row, question, "", list(calls.values()), answer, done.get("finish_reason"), counter.calls,
                     usage.get("model_calls"), seconds, error, stalls=stalls, engine_grounding=done.get("grounding"),
                     resets=resets, written=written)


async def run_bounded(run: Any, seconds: float | None, row: str, question: str) -> RunRecord:
    """Await ``run`` (a :func:`run_reactgraph` / :func:`run_create_agent` coroutine) for at most
    ``seconds`` (``None``: no bound). A run cut by the bound is a record with no calls, no
    answer, the finish reason ``timeout`` and the error ``timeout after N s``."""
    try:
        return await asyncio.wait_for(run, seconds)
    except TimeoutError:
        return RunRecord(row, question, "", [], "", "timeout", 0, None, float(seconds or 0),
                         f"timeout after {seconds:.0f} s")


async def run_create_agent(graph: Any, question: str, recursion_limit: int) -> RunRecord:
    """Run one question through a ``langchain.agents.create_agent`` graph.

    Args:
        graph: The compiled agent.
        question: The question.
        recursion_limit: LangGraph's step limit for the run.

    Returns:
        The :class:`RunRecord` (unscored). The answer is the last message when it is a
        model message without tool calls; a run that raises has no answer and the finish
        reason ``error:<ExceptionName>``; the calls come from the last state streamed.
    """
    counter = _CallCounter()
    token = _COUNTER.set(counter)
    state: dict[str, Any] = {}
    error = None
    began = time.perf_counter()
    try:
        async for chunk in graph.astream({"messages": [HumanMessage(question)]}, {"recursion_limit": recursion_limit},
                                         stream_mode="values"):
            state = chunk
    except Exception as exc:  # noqa: BLE001 (GraphRecursionError, context overflow, provider errors: not answered)
        error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    finally:
        _COUNTER.reset(token)
    seconds = time.perf_counter() - began
    messages = list(state.get("messages") or [])
    calls: dict[str, Call] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for tc in message.tool_calls:
                calls[str(tc.get("id"))] = Call(str(tc.get("name") or ""), tc.get("args"))
        elif isinstance(message, ToolMessage) and message.tool_call_id in calls:
            call = calls[message.tool_call_id]
            text = message.content if isinstance(message.content, str) else json.dumps(message.content, ensure_ascii=False)
            if message.status == "error":
                call.error = text
            else:
                call.observation = text
    last = messages[-1] if messages else None
    answer, reason = "", f"error:{error.split(':')[0]}" if error else None
    if error is None and isinstance(last, AIMessage) and not last.tool_calls:
        answer, reason = str(last.text), "final_answer"
    return RunRecord("create_agent", question, "", list(calls.values()), answer, reason, counter.calls, None,
                     seconds, error)


# --------------------------------------------------------------------------- report

ROWS = ("native", "json", "synthesis", "flagged", "permissive", "create_agent", "dag")
"""The rows: ``synthesis`` is the ``json`` agent with ``answer_from_observations=False`` (the
model writes the answer, checked before it is shown), so what the synthesis call adds is
measured; ``flagged`` is the ``json`` agent with the permissive policy's
``grounding`` and ``answer_from_observations`` (the model's answer streams as written, values
no tool returned flagged under it): the settings under which ``synthesis="auto"`` lets the
loop's answer stand, so ``--synthesis always auto`` compares the two there; ``permissive`` is the ``json`` agent with the permissive safeguard policy
forced (:data:`reactgraph.policy.safeguards.PERMISSIVE`), so on a small model the difference the
strict policy makes is measured in the same run; ``dag`` is DAG mode on the demo settings (run
only when named: it is not one of the default rows)."""

DEFAULT_ROWS = tuple(row for row in ROWS if row != "dag")
"""The rows run when ``--rows`` is not given."""


@dataclass
class RowSummary:
    """Totals of one row.

    Attributes:
        row: The row name; ``mode`` the loop protocol it ran (``native``/``json``/``-``).
        runs: Runs made.
        right_tool, first_call, grounded, zero_ungrounded, by_model: Runs that met each rule.
        calls: Chat-model calls summed over the runs.
        seconds: Wall time of each run, s.
        finish_reasons: How the runs ended.
    """

    row: str
    mode: str
    runs: int = 0
    right_tool: int = 0
    first_call: int = 0
    grounded: int = 0
    zero_ungrounded: int = 0
    by_model: int = 0
    clean: int = 0
    lead_language: int = 0
    tool_free: int = 0
    multi: int = 0
    all_parts: int = 0
    yesno: int = 0
    right_verdict: int = 0
    resets: int = 0
    calls: int = 0
    per_run_calls: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    finish_reasons: Counter = field(default_factory=Counter)

    def add(self, record: RunRecord) -> None:
        """Count one scored run."""
        assert record.score is not None
        self.runs += 1
        self.right_tool += record.score.right_tool
        self.first_call += record.score.first_call
        self.grounded += record.score.grounded
        self.zero_ungrounded += not record.score.ungrounded
        self.by_model += ended_by_model(record.finish_reason)
        self.clean += record.score.clean
        self.lead_language += record.score.lead_language
        self.tool_free += record.score.tool_free_answer
        self.multi += record.score.parts > 0
        self.all_parts += record.score.all_parts
        self.yesno += bool(record.score.verdict)
        self.right_verdict += record.score.right_verdict
        self.resets += record.resets
        self.calls += record.model_calls
        self.per_run_calls.append(record.model_calls)
        self.seconds.append(record.seconds)
        self.finish_reasons[str(record.finish_reason)] += 1

    def rates(self) -> dict[str, float]:
        """The rule counts as fractions of the runs, calls per run and the times (s)."""
        n = self.runs or 1
        return {
            "right_tool": self.right_tool / n, "first_call": self.first_call / n, "grounded": self.grounded / n,
            "zero_ungrounded": self.zero_ungrounded / n, "by_model": self.by_model / n, "clean": self.clean / n,
            "lead_language": self.lead_language / n, "calls_per_run": self.calls / n,
            "all_parts": self.all_parts / self.multi if self.multi else None,
            "right_verdict": self.right_verdict / self.yesno if self.yesno else None,
            "median_calls": statistics.median(self.per_run_calls) if self.per_run_calls else 0.0,
            "median_s": statistics.median(self.seconds) if self.seconds else 0.0,
            "mean_s": statistics.fmean(self.seconds) if self.seconds else 0.0,
        }


_COLUMNS = (("right_tool", "right tool"), ("first_call", "first call"), ("grounded", "grounded"),
            ("zero_ungrounded", "0 ungrounded"), ("by_model", "by model"), ("clean", "clean"),
            ("lead_language", "lead lang"))


def table(rows: Sequence[RowSummary]) -> str:
    """The markdown results table: one line per row, then ratios vs ``create_agent``.

    Args:
        rows: The row summaries.

    Returns:
        The table; percentages with their counts, ``calls/run``, median and mean s/run;
        the ratio lines divide each rate by ``create_agent``'s (``n/a`` when that is 0).
    """
    sections = any(r.multi or r.yesno for r in rows)
    head = ("| row | mode | runs | " + " | ".join(label for _, label in _COLUMNS)
            + (" | all parts | yes/no lead" if sections else "")
            + " | resets | no-tool answers | calls/run | median calls | median s | mean s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        rates = r.rates()
        cells = [f"{100 * rates[key]:.0f}% ({getattr(r, key)})" for key, _ in _COLUMNS]
        if sections:
            cells += [f"{100 * r.all_parts / r.multi:.0f}% ({r.all_parts})" if r.multi else "-",
                      f"{100 * r.right_verdict / r.yesno:.0f}% ({r.right_verdict})" if r.yesno else "-"]
        lines.append(f"| {r.row} | {r.mode} | {r.runs} | " + " | ".join(cells)
                     + f" | {r.resets} | {r.tool_free} | {rates['calls_per_run']:.1f} | {rates['median_calls']:.0f}"
                     + f" | {rates['median_s']:.1f} | {rates['mean_s']:.1f} |")
    base = next((r for r in rows if r.row == "create_agent"), None)
    if base is not None and len(rows) > 1:
        lines += ["", "| ratio vs create_agent | " + " | ".join(label for _, label in _COLUMNS) + " | calls/run | median s | mean s |",
                  "|" + "---|" * (len(_COLUMNS) + 4)]
        b = base.rates()
        for r in rows:
            if r is base:
                continue
            rates = r.rates()
            cells = [f"{rates[k] / b[k]:.2f}x" if b[k] else "n/a" for k, _ in _COLUMNS]
            cells += [f"{rates[k] / b[k]:.2f}x" if b[k] else "n/a" for k in ("calls_per_run", "median_s", "mean_s")]
            lines.append(f"| {r.row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _print_verbose(record: RunRecord) -> None:
    score = record.score
    assert score is not None
    engine = record.engine_grounding or {}
    print(f"--- {record.row} | {record.question} | {record.finish_reason} | {record.model_calls} calls | "
          f"{record.seconds:.1f} s | stalls {record.stalls} | engine grounding {engine.get('action', '-')}",
          file=sys.stderr)
    for call in record.calls:
        outcome = f"error: {call.error[:120]}" if call.error else call.observation.splitlines()[0][:120] if call.observation else ""
        print(f"    call {call.tool}({json.dumps(call.args, ensure_ascii=False)}) -> {outcome}", file=sys.stderr)
    if record.error:
        print(f"    raised {record.error[:300]}", file=sys.stderr)
    for text in record.written:
        print("    written: " + (" ".join(text.split())[:600] or "(none)"), file=sys.stderr)
    if engine.get("problems"):
        print(f"    withdrawn for: {', '.join(engine['problems'])}", file=sys.stderr)
    print("    answer: " + (" ".join(record.answer.split())[:600] or "(none)"), file=sys.stderr)
    print(f"    right tool {score.right_tool} · first call {score.first_call} · grounded {score.grounded} "
          f"(facts {len(score.facts_found)}/{len(score.facts)}: {', '.join(score.facts_found[:8])}) · "
          f"ungrounded {', '.join(score.ungrounded) or 'none'}"
          + (f" · parts {score.parts_answered}/{score.parts}" if score.parts else "")
          + (f" · lead verdict {score.lead_verdict or '-'} (truth {score.verdict})" if score.verdict else ""),
          file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- main


@asynccontextmanager
async def local_endpoint(name: str) -> AsyncIterator[Any]:
    """A catalogue model served by the embedded llama.cpp server (1 thread) and opened as an
    endpoint (:func:`reactgraph.models.open_model` with its URL, the ``llamacpp`` provider profile,
    its window and output cap): the abilities say nothing of ``small``, so agents on it get the
    permissive policy, as on a capable model.

    Yields:
        The :class:`~reactgraph.models.ResolvedModel`; the server stops when the block exits.
    """
    from reactgraph.models import open_model
    from reactgraph.models.env import ENV_CONTEXT_WINDOW, ENV_MAX_OUTPUT_TOKENS, ENV_PROVIDER
    from reactgraph.models.local import LocalModelServer

    async with LocalModelServer(model=name, n_threads=1) as server:
        environ = {**os.environ, ENV_PROVIDER: "llamacpp", ENV_CONTEXT_WINDOW: str(server.n_ctx),
                   ENV_MAX_OUTPUT_TOKENS: str(server.max_tokens)}
        async with open_model(model=server.model_name, base_url=server.base_url, api_key="not-needed",
                              environ=environ) as resolved:
            yield resolved


def model_line(resolved: Any) -> str:
    """One line about a model the rows ran on: its description, and for the embedded model its
    catalogue download size, the server's resident memory (MB, with its children) and CPU threads."""
    server = resolved.server
    if server is None:
        return f"model: {resolved.description}"
    pid = server.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    rss_kb = 0
    for process in [pid, *map(int, children)]:
        status = Path(f"/proc/{process}/status").read_text().splitlines()
        rss_kb += next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
    return (f"model: {resolved.description} · download {server.embedded.download_size} · RSS {round(rss_kb / 1024)} MB · "
            f"{server.n_threads} thread(s)")


async def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, open the model, run every row on the questions, print the table.

    Args:
        argv: Command-line arguments without the program name (``sys.argv[1:]`` when ``None``).

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=len(QUESTIONS),
                        help=f"the first N questions of each section (default: all; {len(QUESTIONS)} single, "
                             f"{len(MULTI_QUESTIONS)} multi-part, {len(YESNO_QUESTIONS)} yes/no)")
    parser.add_argument("--skip", type=int, default=0,
                        help="leave out the first N questions of each section, before --questions (a held-out "
                             "sample: --skip 8 --questions 8 runs questions 9 to 16)")
    parser.add_argument("--sections", nargs="+", choices=tuple(SECTIONS), default=list(SECTIONS),
                        help="single: one-part questions; multi: questions of several parts (every part answered); "
                             "yesno: yes/no questions (the right verdict in the lead); each section gets its own "
                             "table rows (default: all)")
    parser.add_argument("--kinds", nargs="+", choices=("tool", "unknown_id", "no_tool"),
                        help="only the questions of these kinds (after --questions)")
    parser.add_argument("--rows", nargs="+", choices=ROWS, default=list(DEFAULT_ROWS),
                        help="rows to run (default: all but dag)")
    parser.add_argument("--local-models", nargs="+", metavar="NAME",
                        help="embedded models of the catalogue to run every row on, one after the other ("
                             "quality, time, calls, download, memory and threads side by side; default: the configured model)")
    parser.add_argument("--local-endpoint", metavar="NAME",
                        help="serve this catalogue model with the embedded llama.cpp server (1 thread) and run every "
                             "row on it as an endpoint: not marked small, so under the permissive policy, as a capable "
                             "model would be")
    parser.add_argument("--without", nargs="+", default=[], metavar="SAFEGUARD",
                        help="add a row per safeguard: the json agent with that one safeguard of the strict policy "
                             "turned off (set to the permissive value); names: "
                             f"{', '.join(SAFEGUARDS)}, or 'all'")
    parser.add_argument("--max-iterations", type=int, default=6, help="loop iterations per run (default: 6)")
    parser.add_argument("--synthesis", nargs="+", choices=("always", "auto"), default=["always"],
                        help="AgentSettings.synthesis of the reactgraph rows; with both, each row runs under each "
                             "(named 'ROW [auto]'), taking turns (default: always)")
    parser.add_argument("--json-out", help="write the per-run records and the row totals to this JSON file")
    parser.add_argument("--verbose", action="store_true", help="print each run's calls, answer and score")
    parser.add_argument("--db", help="demo plant database file (default: a fresh one in a temporary directory)")
    args = parser.parse_args(argv)
    if args.max_iterations < 1 or args.questions < 1 or args.skip < 0:
        parser.error("--questions and --max-iterations must be at least 1, --skip at least 0")
    if args.local_endpoint and args.local_models:
        parser.error("--local-endpoint and --local-models exclude each other")
    ablated = list(SAFEGUARDS) if args.without == ["all"] else list(dict.fromkeys(args.without))
    unknown = [name for name in ablated if name not in SAFEGUARDS]
    if unknown:
        parser.error(f"--without: no safeguard named {', '.join(unknown)} (names: {', '.join(SAFEGUARDS)})")
    base_rows = [*args.rows, *(f"without {name}" for name in ablated)]
    modes = list(dict.fromkeys(args.synthesis))

    def labelled(row: str, mode: str) -> str:
        return row if len(modes) == 1 or mode == modes[0] else f"{row} [{mode}]"

    row_modes = {labelled(row, mode): (row, mode) for row in base_rows
                 for mode in (modes if row != "create_agent" else modes[:1])}
    row_names = list(row_modes)

    from langchain.agents import create_agent

    from reactgraph import AgentSettings, ReActAgent
    from reactgraph import DAGAgent, DAGSettings, ModelRegistry
    from reactgraph.demo.agent import build_demo_agent, demo_settings
    from reactgraph.policy.safeguards import PERMISSIVE, without
    from reactgraph.demo.factory import build_factory_hub
    from reactgraph.models import open_model

    questions = [q for name in args.sections for q in SECTIONS[name][args.skip: args.skip + args.questions]
                 if not args.kinds or q.kind in args.kinds]
    split = len(args.sections) > 1
    models = args.local_models or [None]
    summaries: dict[str, RowSummary] = {}
    records: list[RunRecord] = []
    model_lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        hub = build_factory_hub(args.db or Path(tmp) / "factory.db")
        tools = {tool.name: tool for tool in hub}
        truths = {q.text: ground_truth(q, tools) for q in questions}
        for local_model in models:  # one model at a time: each has the cores to itself
            opened = local_endpoint(args.local_endpoint) if args.local_endpoint else open_model(local_model=local_model)
            async with opened as resolved:
                suffix = f" · {local_model}" if len(models) > 1 else ""
                agents: dict[str, Any] = {}
                for label, (row, mode) in row_modes.items():
                    if row == "create_agent":
                        agents[label] = create_agent(resolved.llm, hub, system_prompt=DEMO_SYSTEM_PROMPT)
                    elif row == "dag":
                        agents[label] = DAGAgent(
                            ModelRegistry(resolved.llm, abilities=resolved.abilities, fallbacks=resolved.fallbacks),
                            hub, use_native_tools=False, dag_settings=DAGSettings(max_rounds=1),
                            settings=demo_settings(max_iterations=args.max_iterations, synthesis=mode))
                    elif row in ("permissive", "synthesis", "flagged") or row.startswith("without "):
                        forced = (dict(PERMISSIVE.settings) if row == "permissive"
                                  else {"answer_from_observations": False} if row == "synthesis"
                                  else without(["grounding", "answer_from_observations"]) if row == "flagged"
                                  else without([row.removeprefix("without ")]))
                        agents[label] = ReActAgent(resolved.llm, hub, use_native_tools=False,
                                                   abilities=resolved.abilities,
                                                   settings=AgentSettings(max_iterations=args.max_iterations,
                                                                          system_prompt=DEMO_SYSTEM_PROMPT,
                                                                          synthesis=mode, **forced))
                    else:
                        agents[label] = build_demo_agent(resolved, hub, json_mode=row == "json",
                                                         max_iterations=args.max_iterations, synthesis=mode)
                    for name in args.sections if split else ["single"]:
                        key = label + suffix + (f" · {name}" if split else "")
                        summaries[key] = RowSummary(key, "-" if row == "create_agent" else "dag" if row == "dag"
                                                    else agents[label].mode)
                print(f"model: {resolved.description} · {len(questions)} questions · {len(hub)} tools · "
                      f"max_iterations={args.max_iterations} · rows: {', '.join(row_names)}", file=sys.stderr, flush=True)
                if "native" in agents and agents["native"].mode == "json":
                    print("note: this model has no native tool calls, so the native row runs the JSON protocol "
                          "(the same agent as the json row)", file=sys.stderr, flush=True)
                for number, question in enumerate(questions, 1):
                    for row in row_names:  # rows take turns, so a slow moment of the machine hits them all
                        if row == "create_agent":
                            record = await run_create_agent(agents[row], question.text, 2 * args.max_iterations + 1)
                        else:
                            record = await run_reactgraph(agents[row], row + suffix, question.text)
                        record.row = row + suffix + (f" · {question.section}" if split else "")
                        record.kind = question.kind
                        record.score = score_run(question, record.calls, record.answer, truths[question.text], tools)
                        summaries[record.row].add(record)
                        records.append(record)
                        if args.verbose:
                            _print_verbose(record)
                        else:
                            extra = (f" parts {record.score.parts_answered}/{record.score.parts}" if record.score.parts
                                     else f" verdict {record.score.lead_verdict or '-'}/{record.score.verdict}"
                                     if record.score.verdict else "")
                            print(f"  [{number}/{len(questions)}] {record.row} | {question.text} | "
                                  f"{record.finish_reason} | right {record.score.right_tool:d} "
                                  f"grounded {record.score.grounded:d}{extra} | {record.seconds:.0f} s",
                                  file=sys.stderr, flush=True)
                model_lines.append(model_line(resolved))
    row_names = list(summaries)
    rows = [summaries[row] for row in row_names]
    print(f"\n{len(questions)} questions, {len(hub)} tools, max_iterations={args.max_iterations}, "
          f"{date.today().isoformat()}\n")
    print("\n".join(model_lines) + "\n")
    print(table(rows))
    print()
    for r in rows:
        print(f"finish reasons, {r.row}: " + ", ".join(f"{k} {v}" for k, v in r.finish_reasons.most_common()))
    if args.json_out:
        payload = {
            "models": model_lines, "date": date.today().isoformat(), "max_iterations": args.max_iterations,
            "questions": len(questions),
            "rows": [{"row": r.row, "mode": r.mode, "runs": r.runs, **r.rates(), "finish_reasons": dict(r.finish_reasons)}
                     for r in rows],
            "runs": [asdict(rec) for rec in records],
        }
        Path(args.json_out).write_text(json.dumps(payload, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
