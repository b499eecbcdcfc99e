"""The analyzer (SPEC R9.4): did the round's step results achieve the goal?

``structured_llm_call`` with the analysis schema (``achieved``, ``confidence``,
``reasoning``, optional ``final_answer``); a reply without JSON is read by
:func:`analysis_from_text` (``achieved: yes``, ``confidence 0.7`` …); when nothing can be
read, the safe default is "not achieved" with confidence 0. Confidence is clamped to 0–1.

Then the decision: another round (back to the planner, with :func:`round_summary`) while
the goal is not achieved, the confidence is below ``confidence_threshold`` (0.8) and
rounds remain (``max_rounds``, 3 in all), or when the run took a follow-up after the
round's plan was made and rounds remain (:mod:`reactgraph.dag.followups`); otherwise the
run goes on to synthesis with ``finish_reason`` ``achieved``, ``not_achieved`` (a
confident "no") or ``max_rounds``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from reactgraph.dag.budget import limit_update, model_label, run_limit
from reactgraph.dag.executor import cut, results_answer
from reactgraph.dag.followups import PlanDrain
from reactgraph.dag.settings import DAGSettings
from reactgraph.dag.state import Analysis, DAGState, PlanStep, StepResult
from reactgraph.events import Analysis, Analyzing, emit
from reactgraph.graph.names import PLAN, SYNTHESIZE
from reactgraph.core.language import detect_language, phrase
from reactgraph.core.limits import UsageLimits
from reactgraph.models.registry import ModelRegistry
from reactgraph.protocol.prompts import ANALYZER_SYSTEM, ANALYZER_USER
from reactgraph.protocol.structured import structured_llm_call

logger = logging.getLogger(__name__)

ANALYSIS_SCHEMA: dict[str, Any] = {
    "title": "analysis",
    "description": "Whether the step results achieve the goal.",
    "type": "object",
    "properties": {
        "achieved": {"type": "boolean"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string"},
        "final_answer": {"type": "string"},
    },
    "required": ["achieved", "confidence", "reasoning"],
}



_ACHIEVED = re.compile(r"achieved\W{0,3}\s*(true|false|yes|no)\b", re.IGNORECASE)
_CONFIDENCE = re.compile(r"confidence\W{0,3}\s*(\d+(?:\.\d+)?|\.\d+)", re.IGNORECASE)
_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def safe_default(error: str | None = None, goal: str = "") -> Analysis:
    """The verdict when the analyzer's reply cannot be read: not achieved, confidence 0, and
    as reasoning a plain sentence in the goal's language (the language table's ``analysis_failed``); the parser's ``error`` goes to the log, not to the page."""
    if error:
        logger.warning("the analysis could not be read: %s", error)
    return {"achieved": False, "confidence": 0.0, "reasoning": phrase("analysis_failed", detect_language(goal)),
            "final_answer": None, "level": None}


def parse_analysis(data: Mapping[str, Any]) -> Analysis:
    """Normalize the analyzer's JSON (SPEC R9.4).

    Args:
        data: The decoded reply with ``achieved``, ``confidence``, ``reasoning`` and
            optionally ``final_answer``.

    Returns:
        The :class:`~reactgraph.dag.state.Analysis`: ``achieved`` a bool (``"yes"``,
        ``"true"``, ``1`` … accepted), ``confidence`` a float clamped to 0–1,
        ``final_answer`` ``None`` when empty.

    Raises:
        ValueError: ``achieved`` or ``confidence`` cannot be read.
    """
    achieved = data.get("achieved")
    if not isinstance(achieved, bool):
        text = str(achieved).strip().lower()
        if text not in _TRUE | _FALSE:
            raise ValueError(f"achieved must be true or false, got {achieved!r}")
        achieved = text in _TRUE
    try:
        confidence = float(data.get("confidence"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"confidence must be a number, got {data.get('confidence')!r}") from None
    if confidence != confidence:  # NaN
        raise ValueError("confidence is not a number")
    final = data.get("final_answer")
    return {"achieved": achieved, "confidence": min(1.0, max(0.0, confidence)),
            "reasoning": str(data.get("reasoning") or "").strip(),
            "final_answer": str(final).strip() or None if final is not None else None}


def analysis_from_text(text: str) -> dict[str, Any] | None:
    """The regex fallback: read ``achieved: yes`` / ``"achieved": false`` and
    ``confidence 0.7`` from prose; ``None`` when no verdict is written. A missing
    confidence reads as 0."""
    verdict = _ACHIEVED.search(text)
    if verdict is None:
        return None
    confidence = _CONFIDENCE.search(text)
    return {"achieved": verdict.group(1).lower() in _TRUE, "confidence": float(confidence.group(1)) if confidence else 0.0,
            "reasoning": text.strip()[:500]}


def format_results(plan: Sequence[PlanStep], results: Mapping[str, StepResult], chars: int) -> str:
    """The round's results, one block per step in plan order: ``[id] task (completed)``
    and the result cut to ``chars``, or ``[id] task (failed: why)``."""
    blocks = []
    for step in plan:
        record = results.get(step["id"])
        if record is None:
            blocks.append(f"[{step['id']}] {step['task']} (not run)")
        elif record["status"] == "failed":
            blocks.append(f"[{step['id']}] {step['task']} (failed: {record['error']})")
        else:
            blocks.append(f"[{step['id']}] {step['task']} (completed)\n{cut(record['result'], chars)}")
    return "\n\n".join(blocks) or "(no steps)"


def round_summary(round_number: int, plan: Sequence[PlanStep], results: Mapping[str, StepResult],
                  analysis: Analysis, chars: int) -> str:
    """What the planner is told about the last round when it re-plans (SPEC R9.4): each
    step's outcome (results cut to ``chars``) and the analyzer's verdict (an "achieved"
    one when a follow-up the plan did not have asks for another round)."""
    outcome = "achieved" if analysis["achieved"] else "not achieved"
    verdict = f"Analysis: {outcome} (confidence {analysis['confidence']:.2f}): {analysis['reasoning']}"
    return f"Round {round_number}:\n{format_results(plan, results, chars)}\n\n{verdict}"


def analyzer_messages(goal: str, plan: Sequence[PlanStep], results: Mapping[str, StepResult], chars: int) -> list[BaseMessage]:
    """The analyzer's prompt: instructions, then the goal and the formatted step results."""
    return [SystemMessage(ANALYZER_SYSTEM),
            HumanMessage(ANALYZER_USER.format(goal=goal, results=format_results(plan, results, chars)))]


class Analyzer:
    """The ``analyze`` node (see the module docstring). Emits ``phase`` ``{phase:
    "analyzing", round}`` and ``analysis`` ``{round, achieved, confidence, reasoning,
    final_answer, replan}``.

    Args:
        models: The registry; the analyzer runs on ``settings.analyzer_role``.
        settings: The DAG settings.
        drain: The plan level's follow-up drain (the analyzer judges the goal with them).
        limits: The run-wide usage limits (:mod:`reactgraph.dag.budget`): reached, the run
            ends without the analyzer's call, the round's results being the answer.
    """

    def __init__(self, models: ModelRegistry, settings: DAGSettings, drain: PlanDrain,
                 limits: UsageLimits | None = None) -> None:
        self.models = models
        self.settings = settings
        self.drain = drain
        self.limits = limits

    async def __call__(self, state: DAGState, config: RunnableConfig) -> dict[str, Any]:
        taken = await self.drain(state, config)
        reached = run_limit(state, self.limits)
        if reached is not None:
            language = detect_language(state.get("goal") or "")
            return {**taken, **limit_update(reached, results_answer(state.get("plan") or [], state.get("results") or {},
                                                                    language), language)}
        unplanned = len(state.get("follow_ups") or []) + len(taken.get("follow_ups") or []) > state.get("planned_follow_ups", 0)
        update = await self._analyze({**state, **taken}, config, unplanned)  # type: ignore[typeddict-item]
        if update.get("usage"):
            update["model_usage"] = {model_label(self.models.resolve(self.settings.analyzer_role).llm): update["usage"]}
        return {**taken, **update}

    async def _analyze(self, state: DAGState, config: RunnableConfig, unplanned: bool) -> dict[str, Any]:
        round_number = state.get("round", 1)
        plan = state.get("plan") or []
        results = state.get("results") or {}
        emit(Analyzing(round=round_number))
        entry = self.models.resolve(self.settings.analyzer_role)
        result = await structured_llm_call(
            entry.llm, analyzer_messages(state.get("goal", ""), plan, results, self.settings.result_chars),
            ANALYSIS_SCHEMA, abilities=entry.abilities, parse_fn=parse_analysis, regex_fallback=analysis_from_text,
            default_value=None, config=config, fallbacks=entry.fallbacks,
        )
        analysis: Analysis = safe_default(result.error, state.get("goal", "")) if result.value is None else {**result.value, "level": result.level}
        unsure = not analysis["achieved"] and analysis["confidence"] < self.settings.confidence_threshold
        replan = (unsure or unplanned) and round_number < self.settings.max_rounds
        finish: Literal["achieved", "not_achieved", "max_rounds"] | None = None
        if not replan:
            finish = ("achieved" if analysis["achieved"] else
                      "not_achieved" if analysis["confidence"] >= self.settings.confidence_threshold else "max_rounds")
        emit(Analysis(round=round_number, achieved=analysis["achieved"], confidence=analysis["confidence"],
                      reasoning=analysis["reasoning"], final_answer=analysis["final_answer"], replan=replan))
        summary = round_summary(round_number, plan, results, analysis, self.settings.result_chars)
        return {"analysis": analysis, "finish_reason": finish, "round_summary": summary, "usage": result.usage,
                "answer": analysis["final_answer"] or results_answer(plan, results, detect_language(state.get("goal") or ""))}


def route_analysis(state: DAGState) -> Literal["plan", "synthesize"]:
    """Back to the planner while the analyzer asked for another round, else synthesis."""
    return PLAN if state.get("finish_reason") is None else SYNTHESIZE
