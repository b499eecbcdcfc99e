"""The planner (SPEC R9.1): ``structured_llm_call`` with the plan schema, then repairs.

- The model is asked for 2–6 steps (``DAGSettings.min_steps``/``max_steps``), each with
  ``id``, ``task``, ``dependencies``, ``tool_hint``, ``model_hint``, tasks in the goal's language.
- A single step object (``{"id": …, "task": …}`` instead of ``{"steps": [...]}``) is wrapped
  into a one-step plan; steps past ``max_steps`` are dropped with a warning.
- Dependencies naming no step of the plan are pruned with a warning (logged and put in
  the ``plan`` event).
- A cycle (found by a depth-first topological sort) is rejected: the planner is told the
  cycle and asked once more; a second cyclic plan ends the run with a clear failure
  (``finish_reason="plan_failed"``, an ``error`` event of kind ``plan_error`` whose message,
  also the answer, is the language table's ``plan_cycle`` sentence in the goal's language; the
  cycle itself goes to the log).
- Output that cannot be read at all runs the goal as one step (SPEC R2.7), so the user
  still gets an answer; the plan's warning says so in plain words, in the goal's language
  ("The plan could not be made; answering step by step instead.",
  :func:`~reactgraph.core.language.phrase`), and the parser's reason goes to the log.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from reactgraph.dag.budget import limit_update, model_label, run_limit
from reactgraph.dag.followups import PlanDrain
from reactgraph.dag.settings import DAGSettings
from reactgraph.dag.state import DAGState, PlanStep
from reactgraph.core.errors import PlanError
from reactgraph.events import PlanMade, Planning, RunError, emit
from reactgraph.core.language import detect_language, phrase
from reactgraph.core.limits import UsageLimits
from reactgraph.models.registry import ModelRegistry
from reactgraph.protocol.prompts import CYCLE_FEEDBACK, PLANNER_SYSTEM, PLANNER_USER, REPLAN_NOTE
from reactgraph.tools.ranking import catalog_line
from reactgraph.engine.state import RESET
from reactgraph.protocol.structured import structured_llm_call
from reactgraph.core.usage import sum_usage

logger = logging.getLogger(__name__)


def plan_schema(roles: Sequence[str], max_steps: int) -> dict[str, Any]:
    """The plan's JSON schema (SPEC R9.1). ``model_hint`` is limited to ``roles``. The top
    level has no ``required`` key, so a bare step object reaches :func:`parse_plan` and is
    wrapped there."""
    step = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "task": {"type": "string"},
            "dependencies": {"type": "array", "items": {"type": "string"}},
            "tool_hint": {"type": "string"},
            "model_hint": {"type": "string", "enum": list(roles)},
        },
        "required": ["id", "task", "dependencies"],
    }
    return {
        "title": "plan",
        "description": "The steps that achieve the goal.",
        "type": "object",
        "properties": {"steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps}},
    }


def _hint(value: Any) -> str | None:
    text = str(value).strip() if isinstance(value, (str, int, float)) else ""
    return text or None


def parse_plan(data: Any, max_steps: int) -> tuple[list[PlanStep], list[str]]:
    """Turn the planner's JSON into plan steps (SPEC R9.1).

    Args:
        data: The decoded reply: ``{"steps": [...]}`` (``plan`` is read too), or one step
            object, which becomes a one-step plan.
        max_steps: Steps kept; the rest are dropped with a warning.

    Returns:
        ``(steps, warnings)``: steps with string ids, deduplicated dependencies that all
        name a step of the plan (dangling ones pruned, each with a warning), hints as
        stripped strings or ``None``. Cycles are left for :func:`find_cycle`.

    Raises:
        PlanError: No steps, a step that is not an object or has no task, duplicate ids.
    """
    if not isinstance(data, dict):
        raise PlanError(f"expected a JSON object, got {type(data).__name__}")
    items = data.get("steps", data.get("plan"))
    if items is None and "task" in data:
        items = [data]
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list) or not items:
        raise PlanError("the plan has no steps")
    warnings: list[str] = []
    if len(items) > max_steps:
        warnings.append(f"the plan had {len(items)} steps; only the first {max_steps} are kept")
        items = items[:max_steps]
    steps: list[PlanStep] = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not str(item.get("task") or "").strip():
            raise PlanError(f"step {number} has no task")
        step_id = _hint(item.get("id")) or f"s{number}"
        if any(step["id"] == step_id for step in steps):
            raise PlanError(f"two steps have the id {step_id!r}")
        raw = item.get("dependencies")
        raw = [raw] if isinstance(raw, (str, int)) else raw if isinstance(raw, list) else []
        dependencies = list(dict.fromkeys(_hint(dep) for dep in raw if _hint(dep)))
        steps.append({"id": step_id, "task": str(item["task"]).strip(), "dependencies": dependencies,  # type: ignore[typeddict-item]
                      "tool_hint": _hint(item.get("tool_hint")), "model_hint": _hint(item.get("model_hint"))})
    known = {step["id"] for step in steps}
    for step in steps:
        dangling = [dep for dep in step["dependencies"] if dep not in known]
        for dep in dangling:
            warnings.append(f"step {step['id']}: dependency {dep!r} names no step of the plan and was removed")
        step["dependencies"] = [dep for dep in step["dependencies"] if dep in known]
    return steps, warnings


def find_cycle(steps: Sequence[PlanStep]) -> list[str] | None:
    """A dependency cycle of the plan, or ``None`` when the steps form a DAG.

    A depth-first topological sort over the dependency edges; the first back edge found
    gives the cycle as ids, first id repeated at the end (``["s1", "s2", "s1"]``; a step
    depending on itself gives ``["s1", "s1"]``)."""
    depends = {step["id"]: step["dependencies"] for step in steps}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in depends.get(node, []):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for step in steps:
        if step["id"] not in state:
            cycle = visit(step["id"])
            if cycle:
                return cycle
    return None


def planner_messages(
    goal: str, tools: Sequence[BaseTool], models: ModelRegistry, settings: DAGSettings, summary: str = ""
) -> list[BaseMessage]:
    """The planner's prompt: instructions with the registry's roles, then the goal, the
    tool catalog (one ~80-character line per tool) and, when re-planning, the summary
    of the last round."""
    catalog = "\n".join(catalog_line(tool) for tool in tools) or "(no tools)"
    system = PLANNER_SYSTEM.format(min_steps=settings.min_steps, max_steps=settings.max_steps, roles=models.describe())
    user = PLANNER_USER.format(goal=goal, catalog=catalog)
    if summary:
        user += REPLAN_NOTE.format(summary=summary)
    return [SystemMessage(system), HumanMessage(user)]


class Planner:
    """The ``plan`` node (see the module docstring). Emits ``phase`` ``{phase: "planning",
    round}`` before the call and ``plan`` ``{round, steps, warnings}`` with the accepted plan.
    The thread's follow-ups are taken into the goal first (``drain``), so the plan is made
    with them (:mod:`reactgraph.dag.followups`).

    Args:
        models: The registry; the planner runs on ``settings.planner_role``.
        tools: The tools the steps will have (shown as a catalog).
        settings: The DAG settings.
        drain: The plan level's follow-up drain.
        limits: The run-wide usage limits (:mod:`reactgraph.dag.budget`): reached, the run
            ends without another plan.
    """

    def __init__(self, models: ModelRegistry, tools: Sequence[BaseTool], settings: DAGSettings, drain: PlanDrain,
                 limits: UsageLimits | None = None) -> None:
        self.models = models
        self.tools = list(tools)
        self.settings = settings
        self.drain = drain
        self.limits = limits

    async def __call__(self, state: DAGState, config: RunnableConfig) -> dict[str, Any]:
        taken = await self.drain(state, config)
        reached = run_limit(state, self.limits)
        if reached is not None:  # a re-plan past a run-wide limit: the last round's results are the answer
            return {**taken, **limit_update(reached, state.get("answer") or "", detect_language(state.get("goal") or ""))}
        planned = len(state.get("follow_ups") or []) + len(taken.get("follow_ups") or [])
        update = await self._plan({**state, **taken}, config)  # type: ignore[typeddict-item]
        if update.get("usage"):
            update["model_usage"] = {model_label(self.models.resolve(self.settings.planner_role).llm): update["usage"]}
        return {**taken, **update, "planned_follow_ups": planned}

    async def _plan(self, state: DAGState, config: RunnableConfig) -> dict[str, Any]:
        round_number = state.get("round", 0) + 1
        goal = state.get("goal", "")
        emit(Planning(round=round_number))
        entry = self.models.resolve(self.settings.planner_role)
        schema = plan_schema(self.models.roles, self.settings.max_steps)
        messages = planner_messages(goal, self.tools, self.models, self.settings, state.get("round_summary", ""))
        usage: dict[str, int] = {}
        cycle: list[str] | None = None
        for _attempt in range(2):  # the second attempt only after a cyclic plan
            result = await structured_llm_call(
                entry.llm, messages, schema, abilities=entry.abilities, default_value=None, config=config,
                parse_fn=lambda data: parse_plan(data, self.settings.max_steps), fallbacks=entry.fallbacks,
            )
            usage = sum_usage(usage, result.usage)
            if result.value is None:
                # Said in plain words on the page; what went wrong is for the log.
                logger.warning("the planner's output could not be read (%s); the goal runs as one step", result.error)
                warning = phrase("plan_failed", detect_language(goal))
                steps: list[PlanStep] = [{"id": "s1", "task": goal, "dependencies": [], "tool_hint": None, "model_hint": None}]
                return self._accept(round_number, steps, [warning], usage)
            steps, warnings = result.value
            cycle = find_cycle(steps)
            if cycle is None:
                return self._accept(round_number, steps, warnings, usage)
            logger.warning("the plan has a dependency cycle %s; asking the planner again", " → ".join(cycle))
            messages = [*messages, AIMessage(result.raw), HumanMessage(CYCLE_FEEDBACK.format(cycle=" → ".join(cycle)))]
        # Said in plain words, in the goal's language; the cycle itself is for the log.
        logger.warning("the planner returned a plan with a dependency cycle twice (%s); no step was run",
                       " → ".join(cycle or []))
        message = phrase("plan_cycle", detect_language(goal))
        emit(RunError(message=message, kind="plan_error"))
        return {"round": round_number, "finish_reason": "plan_failed", "error": message, "usage": usage,
                "answer": state.get("answer") or message}

    @staticmethod
    def _accept(round_number: int, steps: list[PlanStep], warnings: list[str], usage: dict[str, int]) -> dict[str, Any]:
        for warning in warnings:
            logger.warning("plan round %d: %s", round_number, warning)
        emit(PlanMade(round=round_number, steps=steps, warnings=warnings))
        return {"round": round_number, "plan": steps, "plan_warnings": warnings, "results": RESET,
                "analysis": None, "finish_reason": None, "error": None, "usage": usage}
