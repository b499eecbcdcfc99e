"""The DAG agent facade (SPEC R9, R10.1, R13.8): ``run``, ``stream_answer``,
``astream_events`` and, with a checkpointer, ``resume``, ``aresume_events``, ``pending``,
``thread_status``, ``thread_snapshot`` and ``inject`` over the compiled DAG graph: the
same surface as :class:`~reactgraph.ReActAgent` (the thread bookkeeping is
:class:`~reactgraph.agents.facade.AgentFacade`'s)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from reactgraph.agents import outcome
from reactgraph.tools.approval import PendingCall
from reactgraph.core.config import AgentSettings
from reactgraph.dag.executor import results_answer
from reactgraph.dag.graph import create_dag_graph
from reactgraph.dag.settings import DAGSettings
from reactgraph.dag.state import PlanStep, StepResult
from reactgraph.dag.synthesize import dag_synthesis_messages
from reactgraph.events import AgentEvent
from reactgraph.agents.facade import AgentFacade
from reactgraph.persistence.interrupts import FollowUpLimits, InMemoryInterruptQueue, InterruptQueue
from reactgraph.core.language import detect_language, phrase
from reactgraph.models.registry import ModelRegistry
from reactgraph.agents.result import RunResult, Step
from reactgraph.answer.synthesis import stream_messages

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
        usage, elapsed, error, thread_id, synthesis: As :class:`~reactgraph.agents.result.RunResult`;
            ``usage`` sums planner, steps, analyzer (and synthesis).
        finish_reason: ``achieved``, ``not_achieved``, ``max_rounds``, ``plan_failed``,
            a run-wide usage limit (``model_call_limit``, ``tool_call_limit``,
            ``token_limit``, ``cost_limit``: see :attr:`limit`), ``waiting``  (paused on :attr:`pending`: a step's tool call waits for a person's
            decision), or ``error`` when the graph itself failed.
        pending: As :class:`~reactgraph.agents.result.RunResult`; each call names its plan step
            (:attr:`~reactgraph.PendingCall.step_id`).
        limit: The run-wide usage limit that ended the run (``AgentSettings.limits``,
            :mod:`reactgraph.dag.budget`) with the run's figures, as
            :func:`reactgraph.core.limits.limit_reached` gives them; ``None`` when none did.
        follow_ups: The follow-ups the run took in (:meth:`DAGAgent.inject`), oldest first.
        grounding: The grounding check of the answer shown against what the steps' tools
            returned, as :attr:`~reactgraph.AgentResult.grounding` (``mode``, ``checked``,
            ``ungrounded``, ``action``; ``withdrawn`` when an answer was replaced); ``None``
            when none ran (``run``, which does not synthesize, or grounding off).
    """

    steps: list[StepOutcome] = field(default_factory=list)
    rounds: int = 0
    achieved: bool = False
    confidence: float = 0.0
    reasoning: str = ""
    final_answer: str | None = None
    warnings: list[str] = field(default_factory=list)
    limit: dict[str, Any] | None = None
    follow_ups: list[str] = field(default_factory=list)
    grounding: dict[str, Any] | None = None

    @property
    def iterations(self) -> int:
        """Loop model calls summed over the steps."""
        return sum(step.iterations for step in self.steps)

    def _done_extras(self) -> dict[str, Any]:
        extras: dict[str, Any] = {"rounds": self.rounds, "achieved": self.achieved, "confidence": self.confidence,
                                  "grounding": self.grounding}
        if self.limit:
            extras["limit"] = self.limit
        return extras


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


class DAGAgent(AgentFacade[DAGResult]):
    """Plan, run each step as a ReAct loop on its own model, analyze, re-plan, answer (SPEC §9).

    Args:
        models: A :class:`~reactgraph.ModelRegistry` (steps run on the role their
            ``model_hint`` names, with fallback to ``general``), or one chat model for everything.
        tools: LangChain tools every step can use.
        use_native_tools: Allow native tool calling where a role's model has it (SPEC R2.2).
        settings: The steps' loop settings (:class:`~reactgraph.AgentSettings`).
        dag_settings: :class:`~reactgraph.DAGSettings`.
        checkpointer: Any LangGraph checkpointer: the DAG graph and every step's ReAct
            subgraph are checkpointed under the run's thread (each step in its own
            namespace), so a run cut anywhere resumes (:meth:`resume`) without running
            again a finished step or a finished tool call (SPEC §10, R13.8), and a step's
            tool call that needs approval pauses the run.
        interrupt_queue: Where follow-ups sent with :meth:`inject` wait (SPEC §7), as for
            :class:`~reactgraph.ReActAgent`; ``None`` means a new in-memory queue.

    Raises:
        TypeError, ValueError: Invalid tools.
    """

    failure_reason = "error"
    failure_kind = "dag_error"

    def __init__(
        self,
        models: ModelRegistry | BaseChatModel,
        tools: Sequence[BaseTool],
        *,
        use_native_tools: bool = True,
        settings: AgentSettings | None = None,
        dag_settings: DAGSettings | None = None,
        checkpointer: Any = None,
        interrupt_queue: InterruptQueue | None = None,
    ) -> None:
        self.models = models if isinstance(models, ModelRegistry) else ModelRegistry(models)
        self.tools = list(tools)
        self.settings = settings or AgentSettings()
        self.dag_settings = dag_settings or DAGSettings()
        self.checkpointer = checkpointer
        self.interrupts: InterruptQueue = (
            interrupt_queue if interrupt_queue is not None
            else InMemoryInterruptQueue(FollowUpLimits(max_chars=self.settings.max_message_chars)))
        self.graph = create_dag_graph(self.models, self.tools, use_native_tools=use_native_tools,
                                      settings=self.settings, dag_settings=self.dag_settings, checkpointer=checkpointer,
                                      interrupt_queue=self.interrupts)

    @property
    def recursion_limit(self) -> int:
        """The DAG graph's ``recursion_limit`` (:attr:`DAGSettings.recursion_limit`)."""
        return self.dag_settings.recursion_limit

    def _result(self, state: dict[str, Any], started: float, thread_id: str | None,
                failure: BaseException | None = None, pending: list[PendingCall] | None = None) -> DAGResult:
        plan = state.get("plan") or []
        results = state.get("results") or {}
        analysis = state.get("analysis") or {}
        answer, error = state.get("answer") or "", state.get("error")
        finish = outcome.finish_reason(state.get("finish_reason"), error=failure, waiting=bool(pending),
                                       failure_reason=self.failure_reason)
        if pending:
            answer = ""
        elif failure is not None:
            error = self._error_text(failure)
            language = detect_language(state.get("goal") or state.get("query") or "")
            answer = answer or (results_answer(plan, results, language) if results
                                else phrase("run_failed", language, error=error))
        return DAGResult(
            answer=answer, steps=_outcomes(plan, results), rounds=int(state.get("round", 0)),
            achieved=bool(analysis.get("achieved", False)), confidence=float(analysis.get("confidence", 0.0)),
            reasoning=str(analysis.get("reasoning", "")), final_answer=analysis.get("final_answer"),
            warnings=list(state.get("plan_warnings") or []), limit=state.get("limit"),
            follow_ups=list(state.get("follow_ups") or []), grounding=state.get("grounding"),
            finish_reason=finish, error=error, pending=list(pending or []),
            **self._run_fields(state, started, thread_id),
        )

    async def run(self, goal: str, *, thread_id: str | None = None) -> DAGResult:
        """Plan and run the steps for ``goal`` round by round, without synthesis.

        Args:
            goal: The user's request.
            thread_id: The run's thread (for a checkpointer); generated when ``None``.

        Returns:
            The :class:`DAGResult`. Never raises for what a model or tool does: steps fail
            on their own, the planner and analyzer fall back, and a failure of the graph
            itself gives ``finish_reason="error"`` with ``error`` set. A step's tool call
            that needs approval pauses the run: ``finish_reason="waiting"``, the calls in
            ``pending`` (:meth:`resume` with decisions continues it).

        Raises:
            ThreadBusyError: Another run is going on ``thread_id`` (one run per thread).
        """
        return await self._turn(goal, thread_id, synthesize=False)

    def _synthesis_chunks(self, goal: str, result: DAGResult, config: RunnableConfig) -> AsyncIterator[str]:
        """The DAG synthesis (SPEC R9.4) on the synthesis role's model."""
        plan: list[PlanStep] = [{"id": s.id, "task": s.task, "dependencies": s.dependencies,
                                 "tool_hint": s.tool_hint, "model_hint": s.model_hint} for s in result.steps]
        results: dict[str, StepResult] = {
            s.id: {"id": s.id, "status": "completed" if s.ok else "failed", "result": s.result, "error": s.error,
                   "model_role": s.model_role, "iterations": s.iterations, "elapsed": s.elapsed,
                   "finish_reason": None, "tool_steps": []} for s in result.steps}
        messages = dag_synthesis_messages(goal, plan, results, result.final_answer, self.dag_settings.result_chars)
        return stream_messages(self.models.resolve(self.dag_settings.synthesis_role).chained(), messages, config=config)

    def astream_events(self, goal: str, *, thread_id: str | None = None) -> AsyncIterator[AgentEvent]:
        """Run plan, steps, analysis and synthesis, yielding events as they happen.

        Args:
            goal: The user's request.
            thread_id: The run's thread (see :meth:`run`).

        Yields:
            :class:`~reactgraph.AgentEvent` items: ``phase`` (``planning`` / ``analyzing``
            with ``round``), ``plan``, ``dag_step`` (``started``, ``iteration``, ``tool``,
            ``completed``), ``analysis``, ``error`` (``kind: "plan_error"`` when the planner
            failed, ``"dag_error"`` when the graph failed), ``answer`` (start, deltas, done)
            ``inject`` ``{type: "inject", content}`` for each follow-up the run took in
            (:meth:`inject`), ``approval`` ``{type: "approval", status: "waiting", thread_id,
            pending}`` when a step's tool call waits for a decision (each pending call with
            its ``step_id``; ``done`` then has ``finish_reason: "waiting"``), and last
            ``done`` ``{answer, iterations, usage, elapsed, finish_reason, thread_id, rounds,
            achieved, confidence, grounding}`` (and ``limit`` when a run-wide usage limit ended the
            run). See the events table of docs/sse.md.

        Raises:
            ThreadBusyError: Another run is going on ``thread_id`` (one run per thread).
        """
        return self._turn_events(goal, thread_id)
