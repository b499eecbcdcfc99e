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

from reactgraph.core.language import QUESTION_WORDS, SCRIPT_LANGUAGES, detect_language, phrase
from reactgraph.protocol.prompts import LEAD_CHOICE_SYSTEM, LEAD_CHOICE_USER
from reactgraph.tools.ranking import tokenize
from reactgraph.protocol.structured import structured_llm_call

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
        for raw in str(step.get("observation") or "").splitlines():
            line = raw.strip()
            if line and len(line) <= LEAD_LINE_CHARS and line not in lines:
                lines.append(line)
    return lines[:LEAD_LINES]


def by_relevance(question: str, lines: Sequence[str]) -> list[str]:
    """``lines`` with those sharing the most search words with ``question`` first (stable
    otherwise): a small model choosing under a schema tends to take the first options, so the
    line about what was asked ("OEE: 81.2 %" for "What is the OEE …") comes before the rest."""
    language = detect_language(question)
    asked = set(tokenize(question, language))
    return sorted(lines, key=lambda line: -len(asked & set(tokenize(line, language))))


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
    checked this way and counts as affirmed."""
    language = detect_language(question)
    if language in SCRIPT_LANGUAGES and detect_language(" ".join(facts)) != language:
        return True  # a script the lines are not in: no word of it can be looked for in them
    asked = set(tokenize(re.sub(r"[A-Za-z]{1,6}-\d+(?:-\d+)*|\d+(?:\.\d+)?", " ", question), language))
    return any(asked & set(tokenize(_value(fact), language)) for fact in facts)


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


def lead_sentence(question: str, kind: QuestionKind, verdict: str | None, facts: Sequence[str]) -> str:
    """The lead the engine writes from a choice, in the question's language (the language
    table's ``verdict_yes``/``verdict_no``/``verdict_unknown``, :func:`~reactgraph.core.language.phrase`).

    Args:
        question: The user's question (its language picks the sentence).
        kind: :func:`question_kind` of it.
        verdict: ``yes``, ``no`` or ``unknown`` (yes/no questions), else ignored.
        facts: The chosen observation lines, as the tools wrote them (a row's cells joined
            by " · ", as an answer's list shows rows).

    Returns:
        The sentence; ``""`` when there is nothing to say (no facts for a which question).
    """
    joined = "; ".join(" · ".join(cell.strip() for cell in fact.rstrip(".:").split(" | ")) for fact in facts)
    if kind == "yes_no" and verdict in ("yes", "no", "unknown"):
        if verdict != "unknown" and not joined:
            verdict = "unknown"
        return phrase(f"verdict_{verdict}", detect_language(question), facts=joined + "." if joined else "").strip()
    return joined + "." if joined else ""


async def choose_lead(llm: Any, abilities: Any, question: str, steps: Sequence[dict[str, Any]], *,
                      config: RunnableConfig | None = None, fallbacks: Sequence[Any] = (),
                      usage_out: dict[str, int] | None = None) -> str | None:
    """The lead of an observation answer, chosen by the model and written by the engine.

    Args:
        llm: The model (it only chooses; a schema-constrained call when it can take one).
        abilities: Its abilities.
        question: The user's question.
        steps: The turn's step records.
        config: RunnableConfig for the call.
        fallbacks: Fallback models, as :func:`~reactgraph.protocol.structured.structured_llm_call` takes them.
        usage_out: Receives the call's usage.

    Returns:
        The lead sentence (:func:`lead_sentence`), or ``None`` — no call made — when the
        question is neither yes/no nor which/what, the observations hold no line, or the
        choice failed or named no line. Never raises.
    """
    kind = question_kind(question)
    lines = by_relevance(question, observation_lines(steps))
    if kind == "other" or not lines:
        return None
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
    return lead_sentence(question, kind, verdict, facts) or None
