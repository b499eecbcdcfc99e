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

from reactgraph.answer.verdicts import (
    LEAD_FACTS, LEAD_LINE_CHARS, affirmed, decided_verdict, fact_lines, state_meanings, stated_value_of,
)
from reactgraph.core.language import QUESTION_WORDS, detect_language, phrase, reads_as
from reactgraph.core.usage import sum_usage
from reactgraph.policy.parts import asked_alone
from reactgraph.protocol.prompts import LEAD_CHOICE_SYSTEM, LEAD_CHOICE_USER
from reactgraph.protocol.structured import structured_llm_call
from reactgraph.tools.ranking import tokenize

logger = logging.getLogger(__name__)

QuestionKind = Literal["yes_no", "which", "other"]

_UNSPACED_LANGUAGES = ("ko", "ja", "zh")

LEAD_LINES = 40
"""Most observation lines offered to choose from (the first ones of the turn)."""


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


def by_relevance(question: str, lines: Sequence[str]) -> list[str]:
    """``lines`` with those sharing the most search words with ``question`` first (stable
    otherwise): a small model choosing under a schema tends to take the first options, so the
    line about what was asked ("OEE: 81.2 %" for "What is the OEE …") comes before the rest.
    A line that only repeats what the question says ("ID: AB/100", "Name: Pump 2" for "What's
    wrong with pump AB/100?") tells nothing and goes after every line that does. Among lines
    that share as many words with the question, a line stating a state (the language table's
    state meanings: stopped, warning, overdue…, :func:`~reactgraph.answer.verdicts.state_meanings`)
    comes first: "What's wrong with AB/100?" is answered by "State: stopped" and an alarm that
    says "unit tripped" before a temperature."""
    language = detect_language(question)
    asked = set(tokenize(question, language))

    def says_something(line: str) -> bool:
        stated = {word for cell in line.split("; ") for word in tokenize(stated_value_of(cell), language)}
        return any(len(word) > 1 and word not in asked for word in stated)

    return sorted(lines, key=lambda line: (not says_something(line), -len(asked & set(tokenize(line, language))),
                                           not state_meanings(stated_value_of(line))))


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
