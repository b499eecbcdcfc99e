"""The DAG graph's state (SPEC §9). Every field is JSON-friendly, so any LangGraph
checkpointer can store it; models, tools and settings stay in the builder's closure."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from typing_extensions import NotRequired, TypedDict

from reactgraph.dag.budget import add_counts
from reactgraph.agents.outcome import DAGFinishReason
from reactgraph.engine.state import RESET, InputState, StepRecord, add_model_usage, add_turns, add_usage


class PlanStep(TypedDict):
    """One step of a plan (SPEC R9.1)."""

    id: str
    """Unique within the plan, e.g. ``"s1"``."""
    task: str
    """A self-contained instruction, in the goal's language."""
    dependencies: list[str]
    """Ids of the steps whose results this step needs (existing ids only, no cycles)."""
    tool_hint: str | None
    """The tool the planner expects the step to need, shown to the step's loop."""
    model_hint: str | None
    """The registry role the step should run on (resolved with fallback to ``general``)."""


class StepResult(TypedDict):
    """How one step ended (SPEC R9.2)."""

    id: str
    status: Literal["completed", "failed"]
    result: str
    """The step loop's answer; empty when the step failed."""
    error: str | None
    """Why the step failed: the loop raised, timed out, or a dependency failed."""
    model_role: str | None
    """The registry role the step ran on; ``None`` when it never started."""
    iterations: int
    elapsed: float
    """Seconds the step took."""
    finish_reason: str | None
    """The step loop's finish reason (``final_answer``, ``max_iterations`` …)."""
    tool_steps: list[StepRecord]
    """The step loop's tool trace (the records of :class:`reactgraph.Step`)."""


class StepTask(TypedDict):
    """What the executor's ``Send`` hands to ``run_step``: one ready step."""

    step: PlanStep
    goal: str
    round: int
    dependency_results: list[dict[str, str]]
    """``{id, task, result}`` of each dependency, in the step's order."""
    limits: NotRequired[dict[str, Any] | None]
    """The step's share of the run-wide usage limits (:func:`reactgraph.dag.budget.step_shares`)."""


def add_follow_ups(left: list[str] | None, right: Any) -> list[str]:
    """Reducer of ``follow_ups``: appends; :data:`~reactgraph.engine.state.RESET` empties it."""
    if right == RESET:
        return []
    return [*(left or []), *(right or [])]


def merge_results(left: dict[str, StepResult] | None, right: Any) -> dict[str, StepResult]:
    """Reducer of ``results``: parallel steps each add theirs; :data:`~reactgraph.engine.state.RESET`
    clears them when a new plan starts."""
    if right == RESET:
        return {}
    return {**(left or {}), **(right or {})}


class Analysis(TypedDict):
    """The analyzer's verdict on a round (SPEC R9.4)."""

    achieved: bool
    confidence: float
    """Clamped to 0..1."""
    reasoning: str
    final_answer: str | None
    level: NotRequired[int | None]
    """The ``structured_llm_call`` level that produced it; ``None`` for the safe default."""


class DAGState(InputState, total=False):
    """The state of one DAG run. Input is ``{"messages": [...]}``; the last human
    message is the goal."""

    goal: str
    """The user's goal (the last human message when the run started), with the follow-ups
    the run took in since (``[USER INTERRUPT] …`` blocks, :mod:`reactgraph.dag.followups`)."""
    follow_ups: Annotated[list[str], add_follow_ups]
    """The follow-ups the run took in, oldest first (SPEC §7, R13.8)."""
    planned_follow_ups: int
    """How many of ``follow_ups`` the current plan was made with; a round that took more
    plans again (when rounds remain)."""
    round: int
    """The current round, 1-based."""
    plan: list[PlanStep]
    """The current round's plan, dependencies pruned and acyclic."""
    plan_warnings: list[str]
    """What the planner fixed in the current plan (pruned dependencies, dropped steps …)."""
    results: Annotated[dict[str, StepResult], merge_results]
    """Results of the current plan's steps by id (of the last executed plan after a failed re-plan)."""
    analysis: Analysis | None
    """The analyzer's verdict on the last round."""
    round_summary: str
    """A short summary of the last round, given to the planner when it re-plans."""
    answer: str
    """The best answer before synthesis: the analyzer's final answer, else the step results."""
    synthesis: str | None
    """The streamed answer (``None`` when synthesis was skipped)."""
    grounding: dict[str, Any] | None
    """The grounding check of the answer against the steps' tool observations, as
    ``AgentState.grounding`` (:mod:`reactgraph.dag.synthesize`); ``None`` when off or not run."""
    finish_reason: DAGFinishReason | None
    """Why the run stopped re-planning (a usage limit: :mod:`reactgraph.dag.budget`)."""
    limit: dict[str, Any] | None
    """The run-wide usage limit that ended the run, with the figures; ``None`` when none did."""
    tool_runs: Annotated[dict[str, int], add_counts]
    """Tool calls that ran in the run's steps, by tool (for the run-wide limits)."""
    model_usage: Annotated[dict[str, dict[str, int]], add_model_usage]
    """``usage`` by model name (a cost limit with a price table)."""
    error: str | None
    """Why the planner failed, when it did."""
    usage: Annotated[dict[str, int], add_usage]
    """Tokens and model calls summed over the planner, every step, the analyzer and the synthesis."""
    started_at: float
    earlier_turns: Annotated[list[dict[str, str]], add_turns]
    """The thread's earlier runs, oldest first, each ``{"question", "answer"}`` (as
    ``AgentState.earlier_turns``): the synthesis sees them, so a follow-up goal's "that machine"
    is answered about the right thing."""
    """Wall-clock start (seconds since the epoch)."""
