"""The DAG agent facade (SPEC R9, R10.1): ``run``, ``stream_answer`` and
``astream_events`` over the compiled DAG graph, the same surface as
:class:`~reactgraph.ReActAgent`."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool

from reactgraph.config import AgentSettings
from reactgraph.dag.analyze import results_answer
from reactgraph.dag.graph import create_dag_graph
from reactgraph.dag.settings import DAGSettings
from reactgraph.dag.state import PlanStep, StepResult
from reactgraph.dag.synthesize import dag_synthesis_messages
from reactgraph.events import AgentEvent, graph_events
from reactgraph.facade import AgentFacade
from reactgraph.models.registry import ModelRegistry
from reactgraph.result import RunResult, Step
from reactgraph.synthesis import stream_messages

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepOutcome:
    """One plan step of the last executed round.

    Attributes:
        id, task, dependencies, tool_hint, model_hint: The step as planned (SPEC R9.1).
        status: ``"completed"`` or ``"failed"``.
        result: The step loop's answer (empty when failed).
        error: Why it failed (loop error, ``timed out after … s``, ``dependency failed: …``).
        model_role: The registry role it ran on (``None`` when it never started).
        iterations: Model calls of its loop.
        elapsed: Seconds it took.
        tool_steps: Its loop's tool calls (:class:`~reactgraph.Step`, one per tool call,
            as ``AgentResult.steps``); "step" alone means a plan step in DAG mode.
    """

    id: str
    task: str
    dependencies: list[str]
    tool_hint: str | None
    model_hint: str | None
    status: str
    result: str
    error: str | None
    model_role: str | None
    iterations: int
    elapsed: float
    tool_steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the step completed."""
        return self.status == "completed"


@dataclass(frozen=True, kw_only=True)
class DAGResult(RunResult):
    """The outcome of a DAG run.

    Attributes:
        answer: The answer before synthesis: the analyzer's final answer, else the
            completed steps' results joined, else the planner's failure message.
        steps: The steps of the last executed plan, in plan order.
        rounds: Rounds run (plans accepted or attempted).
        achieved, confidence, reasoning, final_answer: The analyzer's last verdict (``False``,
            0.0, ``""``, ``None`` when no analysis ran).
        warnings: What the planner repaired in the last plan (pruned dependencies …).
        usage, elapsed, error, thread_id, synthesis: As :class:`~reactgraph.result.RunResult`;
            ``usage`` sums planner, steps, analyzer (and synthesis).
        finish_reason: ``achieved``, ``not_achieved``, ``max_rounds``, ``plan_failed``, or
            ``error`` when the graph itself failed.
    """

    steps: list[StepOutcome] = field(default_factory=list)
    rounds: int = 0
    achieved: bool = False
    confidence: float = 0.0
    reasoning: str = ""
    final_answer: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def iterations(self) -> int:
        """Loop model calls summed over the steps."""
        return sum(step.iterations for step in self.steps)

    def _done_extras(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "achieved": self.achieved, "confidence": self.confidence}


def _outcomes(plan: Sequence[PlanStep], results: dict[str, StepResult]) -> list[StepOutcome]:
    outcomes = []
    for planned in plan:
        record = results.get(planned["id"])
        if record is None:
            continue
        outcomes.append(StepOutcome(
            id=planned["id"], task=planned["task"], dependencies=list(planned["dependencies"]),
            tool_hint=planned.get("tool_hint"), model_hint=planned.get("model_hint"), status=record["status"],
            result=record["result"], error=record["error"], model_role=record["model_role"],
            iterations=int(record["iterations"]), elapsed=float(record["elapsed"]),
            tool_steps=[Step.from_record(r) for r in record["tool_steps"]],
        ))
    return outcomes


class DAGAgent(AgentFacade):
    """Plan, run each step as a ReAct loop on its own model, analyze, re-plan, answer (SPEC §9).

    Args:
        models: A :class:`~reactgraph.ModelRegistry` (steps run on the role their
            ``model_hint`` names, with fallback to ``general``), or one chat model for everything.
        tools: LangChain tools every step can use.
        use_native_tools: Allow native tool calling where a role's model has it (SPEC R2.2).
        settings: The steps' loop settings (:class:`~reactgraph.AgentSettings`).
        dag_settings: :class:`~reactgraph.DAGSettings`.
        checkpointer: Any LangGraph checkpointer.

    Raises:
        TypeError, ValueError: Invalid tools.
    """

    failure_reason = "error"

    def __init__(
        self,
        models: ModelRegistry | BaseChatModel,
        tools: Sequence[BaseTool],
        *,
        use_native_tools: bool = True,
        settings: AgentSettings | None = None,
        dag_settings: DAGSettings | None = None,
        checkpointer: Any = None,
    ) -> None:
        self.models = models if isinstance(models, ModelRegistry) else ModelRegistry(models)
        self.tools = list(tools)
        self.settings = settings or AgentSettings()
        self.dag_settings = dag_settings or DAGSettings()
        self.graph = create_dag_graph(self.models, self.tools, use_native_tools=use_native_tools,
                                      settings=self.settings, dag_settings=self.dag_settings, checkpointer=checkpointer)

    @property
    def recursion_limit(self) -> int:
        """The DAG graph's ``recursion_limit`` (:attr:`DAGSettings.recursion_limit`)."""
        return self.dag_settings.recursion_limit

    def _result(self, state: dict[str, Any], started: float, thread_id: str,
                failure: BaseException | None = None) -> DAGResult:
        plan = state.get("plan") or []
        results = state.get("results") or {}
        analysis = state.get("analysis") or {}
        answer, finish, error = state.get("answer") or "", state.get("finish_reason"), state.get("error")
        if failure is not None:
            error, finish = self._error_text(failure), "error"
            answer = answer or (results_answer(plan, results) if results else f"The run failed: {error}")
        return DAGResult(
            answer=answer, steps=_outcomes(plan, results), rounds=int(state.get("round", 0)),
            achieved=bool(analysis.get("achieved", False)), confidence=float(analysis.get("confidence", 0.0)),
            reasoning=str(analysis.get("reasoning", "")), final_answer=analysis.get("final_answer"), warnings=list(state.get("plan_warnings") or []),
            finish_reason=finish, error=error, **self._run_fields(state, started, thread_id),
        )

    async def run(self, goal: str, *, thread_id: str | None = None) -> DAGResult:
        """Plan and run the steps for ``goal`` round by round, without synthesis.

        Args:
            goal: The user's request.
            thread_id: The run's thread (for a checkpointer); generated when ``None``.

        Returns:
            The :class:`DAGResult`. Never raises for what a model or tool does: steps fail
            on their own, the planner and analyzer fall back, and a failure of the graph
            itself gives ``finish_reason="error"`` with ``error`` set.
        """
        started = time.perf_counter()
        config, thread_id = self._config(thread_id, synthesize=False)
        state: dict[str, Any] = {}
        try:
            async for state in self.graph.astream({"messages": [HumanMessage(goal)]}, config, stream_mode="values"):
                pass
        except Exception as exc:  # SPEC R2.7: a result, never a crash
            logger.warning("DAG run failed: %s", exc)
            return self._result(state, started, thread_id, exc)
        return self._result(state, started, thread_id)

    def _synthesis_chunks(self, goal: str, result: DAGResult) -> AsyncIterator[str]:
        """The DAG synthesis (SPEC R9.4) on the synthesis role's model."""
        plan: list[PlanStep] = [{"id": s.id, "task": s.task, "dependencies": s.dependencies,
                                 "tool_hint": s.tool_hint, "model_hint": s.model_hint} for s in result.steps]
        results: dict[str, StepResult] = {
            s.id: {"id": s.id, "status": "completed" if s.ok else "failed", "result": s.result, "error": s.error,
                   "model_role": s.model_role, "iterations": s.iterations, "elapsed": s.elapsed,
                   "finish_reason": None, "tool_steps": []} for s in result.steps}
        messages = dag_synthesis_messages(goal, plan, results, result.final_answer, self.dag_settings.result_chars)
        return stream_messages(self.models.resolve(self.dag_settings.synthesis_role).chained(), messages)

    async def astream_events(self, goal: str, *, thread_id: str | None = None) -> AsyncIterator[AgentEvent]:
        """Run plan, steps, analysis and synthesis, yielding events as they happen.

        Args:
            goal: The user's request.
            thread_id: The run's thread (see :meth:`run`).

        Yields:
            :class:`~reactgraph.AgentEvent` items: ``phase`` (``planning`` / ``analyzing``
            with ``round``), ``plan``, ``dag_step`` (``started``, ``iteration``, ``tool``,
            ``completed``), ``analysis``, ``error`` (``kind: "plan_error"`` when the planner
            failed, ``"dag_error"`` when the graph failed), ``answer`` (start, deltas, done)
            and last ``done`` ``{answer, iterations, usage, elapsed, finish_reason,
            thread_id, rounds, achieved, confidence}``. See the events table of docs/sse.md.
        """
        started = time.perf_counter()
        config, thread_id = self._config(thread_id, synthesize=True)
        state: dict[str, Any] = {}
        failure: BaseException | None = None
        try:
            # Closed when the consumer stops early (a disconnect), so the run is cancelled at once.
            async with aclosing(graph_events(self.graph, {"messages": [HumanMessage(goal)]}, config, state)) as stream:
                async for event in stream:
                    yield event
        except Exception as exc:  # SPEC R2.7
            logger.warning("DAG run failed: %s", exc)
            failure = exc
        result = self._result(state, started, thread_id, failure)
        for event in self._closing_events(result, failed=failure is not None, kind="dag_error"):
            yield event
