"""The DAG graph (SPEC §1 "DAG mode", §9).

::

    START → start_dag → plan ─┬→ schedule ─┬→ run_step ×N (Send, one ReAct subgraph per ready step) → schedule
                              │            ├→ analyze ─┬→ plan (re-plan)
                              │            │           └→ synthesize → END
                              │            └→ synthesize (a run-wide usage limit reached) → END
                              └→ synthesize (planner failed, or a usage limit reached) → END
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from reactgraph.protocol.actions import message_text
from reactgraph.engine.dualmode import observed_node
from reactgraph.core.config import AgentSettings
from reactgraph.dag.analyze import Analyzer, route_analysis
from reactgraph.dag.budget import is_limit
from reactgraph.dag.executor import RunStep, Schedule, StepGraphs, route_schedule
from reactgraph.dag.followups import PlanDrain, StepInbox
from reactgraph.dag.plan import Planner
from reactgraph.dag.settings import DAGSettings
from reactgraph.dag.state import DAGState
from reactgraph.dag.synthesize import DAGSynthesize
from reactgraph.graph.names import ANALYZE, PLAN, RUN_STEP, SCHEDULE, START_DAG, SYNTHESIZE
from reactgraph.persistence.interrupts import InMemoryInterruptQueue, InterruptQueue
from reactgraph.models.registry import ModelRegistry
from reactgraph.agents.outcome import answer_shown
from reactgraph.engine.state import RESET, TURN_ANSWER_CHARS, InputState

GRAPH_KIND_KEY = "reactgraph_graph"
"""The checkpoint metadata key that says which graph wrote a thread's checkpoints: the DAG
graph puts :data:`DAG_GRAPH` there (in every run's config metadata, which LangGraph copies
into each checkpoint's metadata), so ``reactgraph resume`` knows a DAG thread (SPEC R13.8)."""

DAG_GRAPH = "dag"


async def is_dag_thread(checkpointer: Any, thread_id: str) -> bool:
    """Whether the last checkpoint of ``thread_id`` was written by the DAG graph.

    Args:
        checkpointer: Any LangGraph checkpointer.
        thread_id: The thread.

    Returns:
        True when the thread's last checkpoint carries :data:`GRAPH_KIND_KEY` =
        :data:`DAG_GRAPH`; False for a ReAct thread or a thread with no checkpoint.
    """
    saved = await checkpointer.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    return saved is not None and (saved.metadata or {}).get(GRAPH_KIND_KEY) == DAG_GRAPH


async def start_dag(state: DAGState) -> dict[str, Any]:
    """Open the run: the goal is the last human message; every per-run field is reset, and the
    run before this one on the thread (its goal and the answer the user saw) joins
    ``earlier_turns``."""
    goal = next((message_text(m) for m in reversed(state.get("messages", [])) if isinstance(m, HumanMessage)), "")
    update: dict[str, Any] = {
        "goal": goal, "follow_ups": RESET, "planned_follow_ups": 0, "limit": None, "tool_runs": RESET,
        "model_usage": RESET,
        "round": 0, "plan": [], "plan_warnings": [], "results": RESET, "analysis": None,
        "round_summary": "", "answer": "", "synthesis": None, "finish_reason": None, "error": None,
        "usage": RESET, "started_at": time.time()}
    if state.get("goal"):
        answer = answer_shown(state.get("synthesis"), state.get("answer"))  # as the user saw it
        update["earlier_turns"] = [{"question": state["goal"][:TURN_ANSWER_CHARS], "answer": answer[:TURN_ANSWER_CHARS]}]
    return update


def route_plan(state: DAGState) -> Literal["schedule", "synthesize"]:
    """After the planner: run the plan, or go to synthesis when planning failed or the run
    reached a usage limit."""
    finish = state.get("finish_reason")
    return SYNTHESIZE if finish == "plan_failed" or is_limit(finish) else SCHEDULE


def create_dag_graph(
    models: ModelRegistry | BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    use_native_tools: bool = True,
    settings: AgentSettings | None = None,
    dag_settings: DAGSettings | None = None,
    checkpointer: Any = None,
    interrupt_queue: InterruptQueue | None = None,
    name: str = "reactgraph_dag",
) -> CompiledStateGraph:
    """Build and compile the DAG graph: plan, run every step as a ReAct subgraph on the
    model of its hint, analyze, re-plan or synthesize (SPEC §9).

    Args:
        models: A :class:`~reactgraph.ModelRegistry`, or one chat model (then every role
            resolves to it).
        tools: The tools every step's loop gets.
        use_native_tools: Allow native tool calling in the steps (SPEC R2.2).
        settings: The steps' loop settings (:class:`~reactgraph.AgentSettings`: ``max_iterations``,
            ``tool_timeout`` …); their synthesis is always off. Its ``limits`` cap the whole
            run (:mod:`reactgraph.dag.budget`).
        dag_settings: :class:`~reactgraph.DAGSettings` (rounds, threshold, concurrency,
            step timeout …).
        checkpointer: Any LangGraph checkpointer, or ``None``; the step subgraphs use it
            too, each under the thread in its ``run_step`` task's namespace (SPEC §10,
            R13.8). Every checkpoint's metadata says ``reactgraph_graph: "dag"``
            (:func:`is_dag_thread`).
        interrupt_queue: Where follow-ups for running threads wait (SPEC §7); ``None`` means
            a new in-memory queue. The plan level takes every follow-up, and a step's loop
            those that name it (:mod:`reactgraph.dag.followups`); run the graph inside
            ``async with interrupt_queue.running(thread_id):`` to accept them.
        name: The graph's name (traces, Studio).

    Returns:
        The compiled graph (a LangChain Runnable; async use only, as for the ReAct graph).
        Input ``{"messages": [HumanMessage(goal)]}``; the output state carries ``goal``,
        ``round``, ``plan``, ``results`` (by step id), ``analysis``, ``answer``,
        ``synthesis``, ``finish_reason``, ``error``, ``usage``, ``limit``, ``follow_ups``. Pass
        ``{"configurable": {"synthesize": False}}`` to skip synthesis. Progress goes out
        on the custom stream (``plan``, ``dag_step``, ``analysis``, ``phase``, ``answer``).

    Raises:
        TypeError, ValueError: Invalid tools (as for :func:`~reactgraph.create_react_graph`).
    """
    registry = models if isinstance(models, ModelRegistry) else ModelRegistry(models)
    dag_settings = dag_settings or DAGSettings()
    step_settings = settings or AgentSettings()
    inbox = StepInbox(interrupt_queue if interrupt_queue is not None else InMemoryInterruptQueue())
    drain = PlanDrain(inbox)
    graphs = StepGraphs(tools, step_settings, use_native_tools, inbox)
    graphs.graph_for(registry.resolve(None))  # compiled now, so invalid tools fail here

    builder = StateGraph(DAGState, input_schema=InputState)
    limits = step_settings.limits  # the whole run's in DAG mode (reactgraph.dag.budget)
    nodes = {START_DAG: start_dag, PLAN: Planner(registry, tools, dag_settings, drain, limits),
             SCHEDULE: Schedule(drain, limits), RUN_STEP: RunStep(registry, graphs, dag_settings),
             ANALYZE: Analyzer(registry, dag_settings, drain, limits),
             SYNTHESIZE: DAGSynthesize(registry, dag_settings, step_settings,
                                       {getattr(tool, "name", ""): getattr(tool, "description", "") or "" for tool in tools})}
    for node, body in nodes.items():
        builder.add_node(node, observed_node(body, node))  # observed when the run is

    builder.add_edge(START, START_DAG)
    builder.add_edge(START_DAG, PLAN)
    builder.add_conditional_edges(PLAN, route_plan, [SCHEDULE, SYNTHESIZE])
    builder.add_conditional_edges(SCHEDULE, lambda state: route_schedule(state, dag_settings, limits),
                                  [RUN_STEP, ANALYZE, SYNTHESIZE])
    builder.add_edge(RUN_STEP, SCHEDULE)
    builder.add_conditional_edges(ANALYZE, route_analysis, [PLAN, SYNTHESIZE])
    builder.add_edge(SYNTHESIZE, END)
    graph = builder.compile(checkpointer=checkpointer, name=name)
    return graph.with_config(recursion_limit=dag_settings.recursion_limit,  # type: ignore[return-value]
                             metadata={GRAPH_KIND_KEY: DAG_GRAPH},
                             configurable=step_settings.model_deadline.as_config())  # reactgraph.engine.deadlines
