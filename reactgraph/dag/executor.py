"""The executor (SPEC R9.2, R9.3, R9.5): every plan step runs as the ReAct graph, as a
subgraph, on the model its ``model_hint`` resolves to.

``schedule`` (a node) marks the steps whose dependencies failed as failed themselves,
transitively, so none is left waiting; its conditional edge then sends one ``Send`` to
``run_step`` per *ready* step (every dependency completed), at most
``DAGSettings.max_concurrency`` at a time, in plan order. The ``run_step`` tasks of one
superstep run in parallel; when they are all done, ``schedule`` runs again, until no step
is left, and the analyzer takes over.

``run_step`` resolves the step's model from the registry right before its loop starts
(R9.3; never changed inside the step), takes the ReAct graph compiled for that role
(compiled once per role and cached), and runs it on a fresh context: the step's task, the
goal and its dependencies' results (each cut to ``dependency_chars``, ending with
``… [truncated]``). The loop runs without its own synthesis. A loop that raises or
outlasts ``step_timeout`` fails the step.

Checkpoints (SPEC §10, R13.8): the step's ReAct graph runs as a subgraph of the DAG graph,
so with a checkpointer its checkpoints are kept under the run's thread in the namespace of
its ``run_step`` task. A run cut while steps run resumes the ``run_step`` tasks that had not
finished (the finished ones' results are saved writes of the DAG's checkpoint and are not
run again), and each resumed step goes on from its own last checkpoint: its finished tool
calls are not run again.

Approval (SPEC R13.3): a step's tool call that needs a person's decision raises LangGraph's
interrupt out of the step's loop; it is let through (never a failed step) with the step's
id added to the interrupt's value (``step_id``), so the whole run pauses on it. The other
steps of the same wave go on to their end (their own calls that need approval pause them
too); no new step, no analysis starts until every pending call is decided.

Events (channel ``dag_step``): ``started`` when the loop starts, ``iteration`` before each
of its model calls, ``tool_started`` / ``tool`` when one of its tools starts / finished,
``completed`` at the end (also for a failed step).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import Any, Literal

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Interrupt, Send

from reactgraph.tools.approval import STEP_ID_KEY
from reactgraph.core.config import AgentSettings
from reactgraph.dag.budget import (
    is_limit,
    limit_update,
    model_label,
    ran_by_tool,
    run_limit,
    share_limits,
    step_shares,
    wave_size,
)
from reactgraph.dag.followups import PlanDrain, StepInbox
from reactgraph.dag.settings import DAGSettings
from reactgraph.dag.state import DAGState, PlanStep, StepResult, StepTask
from reactgraph.events import (
    AgentEvent,
    DagStepCompleted,
    DagStepIteration,
    DagStepStarted,
    DagStepTool,
    DagStepToolStarted,
    Injected,
    ThinkingStarted,
    ToolDone,
    ToolStarted,
    emit,
    graph_events,
)
from reactgraph.graph.names import ANALYZE, RUN_STEP, SYNTHESIZE
from reactgraph.graph.react import create_react_graph
from reactgraph.engine.history import thread_of
from reactgraph.core.language import detect_language, phrase
from reactgraph.core.limits import UsageLimits, describe_limit
from reactgraph.models.registry import ModelRegistry, RegisteredModel
from reactgraph.protocol.prompts import STEP_CONTEXT, STEP_DEPENDENCIES, STEP_TOOL_HINT
from reactgraph.answer.synthesis import RESULT_CLIP_MARK

logger = logging.getLogger(__name__)


def cut(text: str, limit: int) -> str:
    """``text`` itself when it has at most ``limit`` characters, else its first ``limit``
    characters followed by :data:`~reactgraph.answer.synthesis.RESULT_CLIP_MARK`."""
    return text if len(text) <= limit else text[:limit] + RESULT_CLIP_MARK


def step_context(task: StepTask | dict[str, Any], dependency_chars: int) -> str:
    """The one user message a step's loop starts from (SPEC R9.2): the goal, the task,
    the tool hint, and each dependency's task and result cut to ``dependency_chars``."""
    step = task["step"]
    text = STEP_CONTEXT.format(goal=task["goal"], id=step["id"], task=step["task"])
    if step.get("tool_hint"):
        text += STEP_TOOL_HINT.format(tool=step["tool_hint"])
    if task["dependency_results"]:
        text += STEP_DEPENDENCIES
        for dep in task["dependency_results"]:
            text += f"\n\n[{dep['id']}] {dep['task']}\n{cut(dep['result'], dependency_chars)}"
    return text


def failed_result(step_id: str, error: str, *, role: str | None = None, elapsed: float = 0.0,
                  iterations: int = 0, tool_steps: list[dict[str, Any]] | None = None) -> StepResult:
    """The result record of a step that failed (SPEC R9.2)."""
    return {"id": step_id, "status": "failed", "result": "", "error": error, "model_role": role, "iterations": iterations,
            "elapsed": elapsed, "finish_reason": None, "tool_steps": tool_steps or []}


def named_interrupt(paused: GraphInterrupt, step_id: str) -> GraphInterrupt:
    """``paused`` with ``step_id`` added to each interrupt value that is a dict (an
    approval request always is), under :data:`~reactgraph.tools.approval.STEP_ID_KEY`; the
    interrupt ids stay, so a decision keyed by them resumes the step's own task."""
    items = paused.args[0] if paused.args else ()
    named = tuple(Interrupt({**item.value, STEP_ID_KEY: step_id} if isinstance(item.value, dict) else item.value, item.id)
                  for item in items)
    return GraphInterrupt(named)


def results_answer(plan: Sequence[PlanStep], results: Mapping[str, StepResult], language: str | None = "en") -> str:
    """The last-resort answer: the completed steps' results joined in plan order, or a
    note that no step succeeded (in ``language``, :func:`~reactgraph.core.language.phrase`)."""
    done = [results[step["id"]] for step in plan if results.get(step["id"], {}).get("status") == "completed"]
    texts = [record["result"].strip() for record in done if record["result"].strip()]
    return "\n\n".join(texts) if texts else phrase("no_step_result", language)


class Schedule:
    """The ``schedule`` node: take the thread's follow-ups into the goal (``drain``, before
    each wave of steps; :mod:`reactgraph.dag.followups`), and fail the steps whose
    dependencies failed (transitively), emitting ``completed`` for each, so no step is left
    hanging (SPEC R9.2).

    When the run has reached a run-wide usage limit (:mod:`reactgraph.dag.budget`), every
    step not started is recorded as failed ("not run: …") and the run goes on to synthesis.

    Args:
        drain: The plan level's follow-up drain.
        limits: The run-wide usage limits.
    """

    def __init__(self, drain: PlanDrain, limits: UsageLimits | None = None) -> None:
        self.drain = drain
        self.limits = limits

    async def __call__(self, state: DAGState, config: RunnableConfig) -> dict[str, Any]:
        taken = await self.drain(state, config)
        reached = run_limit(state, self.limits)
        if reached is not None:
            return {**taken, **self._stop(state, reached)}
        results = dict(state.get("results") or {})
        update: dict[str, StepResult] = {}
        changed = True
        while changed:
            changed = False
            for step in state.get("plan") or []:
                if step["id"] in results:
                    continue
                failed = [dep for dep in step["dependencies"] if results.get(dep, {}).get("status") == "failed"]
                if failed:
                    record = failed_result(step["id"], f"dependency failed: {', '.join(failed)}")
                    results[step["id"]] = update[step["id"]] = record
                    emit(DagStepCompleted(round=state.get("round", 1), step_id=step["id"], ok=False, error=record["error"],
                                          elapsed=0.0, iterations=0, model_role=None))
                    changed = True
        return {**taken, "results": update} if update else taken

    @staticmethod
    def _stop(state: DAGState, reached: dict[str, Any]) -> dict[str, Any]:
        """The update that ends the run on a usage limit: the steps not started fail."""
        results = dict(state.get("results") or {})
        update: dict[str, StepResult] = {}
        for step in state.get("plan") or []:
            if step["id"] not in results:
                record = failed_result(step["id"], f"not run: {describe_limit(reached)}")
                results[step["id"]] = update[step["id"]] = record
                emit(DagStepCompleted(round=state.get("round", 1), step_id=step["id"], ok=False, error=record["error"],
                                      elapsed=0.0, iterations=0, model_role=None))
        language = detect_language(state.get("goal") or "")
        return {"results": update, **limit_update(reached, results_answer(state.get("plan") or [], results, language),
                                                  language)}


def route_schedule(state: DAGState, settings: DAGSettings,
                   limits: UsageLimits | None = None) -> list[Send] | Literal["analyze", "synthesize"]:
    """One ``Send("run_step", StepTask)`` per ready step, at most ``max_concurrency`` (and
    no more than the run-wide limits leave calls for, each with its share of them:
    :mod:`reactgraph.dag.budget`), in plan order; ``"analyze"`` when every step has a
    result; ``"synthesize"`` when the run reached a usage limit."""
    if is_limit(state.get("finish_reason")):
        return SYNTHESIZE
    results = state.get("results") or {}
    plan = state.get("plan") or []
    by_id = {step["id"]: step for step in plan}
    ready: list[StepTask] = []
    for step in plan:
        if step["id"] in results or len(ready) >= settings.max_concurrency:
            continue
        if all(results.get(dep, {}).get("status") == "completed" for dep in step["dependencies"]):
            dependency_results = [{"id": dep, "task": by_id[dep]["task"], "result": results[dep]["result"]}
                                  for dep in step["dependencies"]]
            ready.append({"step": step, "goal": state.get("goal", ""), "round": state.get("round", 1),
                          "dependency_results": dependency_results})
    if not ready:
        return ANALYZE
    ready = ready[:max(wave_size(state, limits, len(ready)), 1)]
    shares = step_shares(state, limits, len(ready))
    return [Send(RUN_STEP, {**task, "limits": share} if share is not None else task) for task, share in zip(ready, shares)]


class StepGraphs:
    """The ReAct graph compiled once per registry role (and model), for the steps.

    Args:
        tools: Every step's tools.
        settings: The steps' loop settings; synthesis is always off inside a step.
        use_native_tools: Allow native tool calling where the role's model has it (SPEC R2.2).
        inbox: The steps' follow-up queue (:class:`~reactgraph.dag.followups.StepInbox`).
    """

    def __init__(self, tools: Sequence[BaseTool], settings: AgentSettings, use_native_tools: bool,
                 inbox: StepInbox) -> None:
        self.tools = list(tools)
        self.settings = settings
        self.use_native_tools = use_native_tools
        self.inbox = inbox
        self._graphs: dict[tuple[str, int], CompiledStateGraph] = {}

    def graph_for(self, entry: RegisteredModel, share: dict[str, Any] | None = None) -> CompiledStateGraph:
        """The compiled ReAct graph bound to ``entry``'s model (compiled on first use); with
        ``share`` (the step's part of the run-wide limits, :mod:`reactgraph.dag.budget`) one
        compiled for that step, with those limits."""
        if share is not None and self.settings.limits is not None:
            settings = dataclasses.replace(self.settings, limits=share_limits(self.settings.limits, share))
            return self._compile(entry, settings)
        key = (entry.role, id(entry.llm))
        if key not in self._graphs:
            self._graphs[key] = self._compile(entry, self.settings)
        return self._graphs[key]

    def _compile(self, entry: RegisteredModel, settings: AgentSettings) -> CompiledStateGraph:
        return create_react_graph(
            entry.llm, self.tools, use_native_tools=self.use_native_tools, abilities=entry.abilities,
            settings=settings, name=f"dag_step_{entry.role}", fallbacks=entry.fallbacks, interrupt_queue=self.inbox,
        )


class RunStep:
    """The ``run_step`` node: one plan step as a ReAct subgraph (see the module docstring).

    Args:
        models: The registry the step's model is resolved from (SPEC R9.3).
        graphs: The per-role compiled ReAct graphs.
        settings: The DAG settings (``step_timeout``, ``dependency_chars``).
    """

    def __init__(self, models: ModelRegistry, graphs: StepGraphs, settings: DAGSettings) -> None:
        self.models = models
        self.graphs = graphs
        self.settings = settings

    async def __call__(self, task: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        # ``task`` is a StepTask; typed as a plain dict so LangGraph does not add its keys
        # to the graph's state channels.
        step: PlanStep = task["step"]
        round_number = task["round"]
        entry = self.models.resolve(step.get("model_hint"))  # R9.3: right before the loop starts
        graph = self.graphs.graph_for(entry, task.get("limits"))
        emit(DagStepStarted(round=round_number, step_id=step["id"], task=step["task"], model_role=entry.role,
                            dependencies=step["dependencies"]))
        step_config: RunnableConfig = {
            **config,
            "configurable": {**(config.get("configurable") or {}), "synthesize": False},
            "recursion_limit": self.graphs.settings.recursion_limit,
        }
        inner: dict[str, Any] = {}
        started = time.perf_counter()
        error: str | None = None
        try:
            with self.graphs.inbox.step(thread_of(config), step["id"]):  # its loop takes the follow-ups naming it
                async with asyncio.timeout(self.settings.step_timeout):
                    async with aclosing(graph_events(
                        graph, {"messages": [HumanMessage(step_context(task, self.settings.dependency_chars))]},
                        step_config, inner, preview_chars=self.graphs.settings.observation_preview_chars,
                    )) as events:
                        async for event in events:
                            self._forward(round_number, step["id"], event)
        except GraphInterrupt as paused:  # a call waits for a person: the run pauses (R13.3)
            raise named_interrupt(paused, step["id"]) from None
        except GraphBubbleUp:
            raise
        except TimeoutError:
            error = f"timed out after {self.settings.step_timeout:g} s"
        except Exception as exc:  # a failing loop fails its step, never the run (R9.2)
            error = f"{type(exc).__name__}: {exc}"
        elapsed = time.perf_counter() - started
        iterations = int(inner.get("iteration", 0))
        tool_steps = list(inner.get("steps") or [])
        if error is not None:
            logger.warning("step %s failed: %s", step["id"], error)
            record = failed_result(step["id"], error, role=entry.role, elapsed=elapsed, iterations=iterations,
                                   tool_steps=tool_steps)
        else:
            record = {"id": step["id"], "status": "completed", "result": str(inner.get("answer") or ""), "error": None,
                      "model_role": entry.role, "iterations": iterations, "elapsed": elapsed,
                      "finish_reason": inner.get("finish_reason"), "tool_steps": tool_steps}
        emit(DagStepCompleted(round=round_number, step_id=step["id"], ok=error is None, error=error,
                              elapsed=round(elapsed, 3), iterations=iterations, model_role=entry.role,
                              result=cut(record["result"], self.settings.result_chars)))
        usage = inner.get("usage") or {}
        by_model = inner.get("model_usage") or ({model_label(entry.llm): usage} if usage else {})
        return {"results": {step["id"]: record}, "usage": usage, "model_usage": by_model,
                "tool_runs": ran_by_tool(tool_steps)}

    @staticmethod
    def _forward(round_number: int, step_id: str, event: AgentEvent) -> None:
        """Re-emit a loop event as step progress: ``iteration`` for each model call,
        ``tool_started`` and ``tool`` for each tool call (SPEC R9.5), and a follow-up the loop
        took as ``inject`` with the step's id."""
        if isinstance(event, ThinkingStarted):
            emit(DagStepIteration(round=round_number, step_id=step_id, iteration=event.iteration))
        elif isinstance(event, ToolStarted):
            emit(DagStepToolStarted(round=round_number, step_id=step_id, iteration=event.iteration,
                                    tool_name=event.tool_name, tool_args=event.tool_args, tool_call_id=event.tool_call_id))
        elif isinstance(event, ToolDone):
            emit(DagStepTool(round=round_number, step_id=step_id, iteration=event.iteration, tool_name=event.tool_name,
                             observation=event.observation, error=event.error, iter_elapsed=event.iter_elapsed,
                             tool_call_id=event.tool_call_id, tool_args=event.tool_args))
        elif isinstance(event, Injected):
            emit(Injected(content=event.content, step_id=step_id))
