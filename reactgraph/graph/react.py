"""The ReAct graph (SPEC §1, §2, §3).

::

    START → start_turn → select_tools → drain_interrupts → guard_context ─┬→ llm_call_native ─┬→ execute_tools ×N (Send) → drain_interrupts
                                                                          │                   └→ drain_interrupts (final answer)
                                                                          ├→ llm_call_json → drain_interrupts ─┬→ execute_tools (Send) → drain_interrupts
                                                                          │                                    ├→ guard_context (reformat retry)
                                                                          │                                    └→ synthesize
                                                                          └→ fallback (max_iterations) → synthesize
    drain_interrupts → synthesize (final answer, no follow-up) | guard_context;   synthesize → END

Phase one is the loop from ``guard_context`` to ``drain_interrupts``; phase two is
``synthesize``. The mode edge follows the model's abilities (R2.2); the drain points follow
R7.2 (JSON mode: right after each assistant message; native mode: after all tool results;
both modes: before the first model call and after tool results, see
:mod:`reactgraph.nodes.drain_interrupts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy, Send

from reactgraph.abilities import ModelAbilities, resolve_abilities
from reactgraph.config import AgentSettings
from reactgraph.dualmode import dual_node
from reactgraph.engine import Engine, is_transient_error
from reactgraph.interrupts import InterruptQueue
from reactgraph.nodes.drain_interrupts import DrainInterrupts
from reactgraph.nodes.execute_tools import ExecuteTools
from reactgraph.nodes.fallback import Fallback
from reactgraph.nodes.guard_context import GuardContext
from reactgraph.nodes.llm_call import LLMCallJSON, LLMCallNative
from reactgraph.nodes.select_tools import SelectTools
from reactgraph.nodes.start_turn import StartTurn
from reactgraph.nodes.synthesize import Synthesize
from reactgraph.state import AgentState, InputState, OutputState

NODE_PHASES: dict[str, str] = {
    "start_turn": "tool_loop",
    "select_tools": "tool_loop",
    "drain_interrupts": "tool_loop",
    "guard_context": "tool_loop",
    "llm_call_native": "tool_loop",
    "llm_call_json": "tool_loop",
    "execute_tools": "tool_loop",
    "fallback": "tool_loop",
    "synthesize": "synthesis",
}
"""The phase of each node, put in its metadata (Studio shows it on the node, traces carry
it on the node's run): ``tool_loop`` (phase one, tool selection included) and ``synthesis``
(phase two)."""


def _tool_sends(state: AgentState) -> list[Send]:
    return [
        Send(
            "execute_tools",
            {"call": call, "iteration": state.get("iteration", 0), "mode": state.get("mode", "native"),
             "selected_tools": state.get("selected_tools")},
        )
        for call in state.get("pending_tool_calls") or []
    ]


def route_model(state: AgentState, engine: Engine) -> Literal["llm_call_native", "llm_call_json", "fallback"]:
    """After the guard: the iteration cap (R2.6), else the mode's model node (R2.2)."""
    if state.get("iteration", 0) >= engine.settings.max_iterations:
        return "fallback"
    return "llm_call_native" if state.get("mode") == "native" else "llm_call_json"


def route_after_native_call(state: AgentState) -> list[Send] | Literal["drain_interrupts"]:
    """Native mode: one ``Send`` per tool call, or on to the drain with a final answer."""
    return _tool_sends(state) or "drain_interrupts"


def route_after_drain(state: AgentState) -> list[Send] | Literal["synthesize", "guard_context"]:
    """After the drain: the final answer still pending goes to synthesis; a JSON-mode
    tool call runs; anything else loops back to the guard."""
    if state.get("pending_final") is not None:
        return "synthesize"
    if state.get("mode") == "json":
        sends = _tool_sends(state)
        if sends:
            return sends
    return "guard_context"


def create_react_graph(
    llm: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    use_native_tools: bool = True,
    abilities: ModelAbilities | dict[str, Any] | None = None,
    settings: AgentSettings | None = None,
    checkpointer: Any = None,
    interrupt_queue: InterruptQueue | None = None,
    compaction_llm: BaseChatModel | None = None,
    name: str = "reactgraph",
) -> CompiledStateGraph:
    """Build and compile the ReAct graph.

    Args:
        llm: Any LangChain chat model; every call of a run uses it (SPEC R2.1).
        tools: LangChain tools (``@tool`` functions, ``StructuredTool``, any ``BaseTool``).
        use_native_tools: Allow native tool calling; JSON mode otherwise (SPEC R2.2).
        abilities: Explicit abilities, or a dict of some of them, merged over the model's
            profile (see :func:`~reactgraph.abilities.resolve_abilities`).
        settings: :class:`~reactgraph.AgentSettings`; defaults when ``None``.
        checkpointer: Any LangGraph checkpointer, or ``None`` for none.
        interrupt_queue: Where follow-ups for running threads wait (SPEC §7); ``None``
            means a new in-memory queue. Runs invoked with ``configurable.thread_id`` drain
            that thread's follow-ups; to accept follow-ups, wrap the call in
            ``async with interrupt_queue.running(thread_id):``.
        compaction_llm: A separate, cheaper chat model for context compaction (SPEC §6);
            ``None`` compacts with ``llm``.
        name: The graph's name (shown in traces and Studio).

    Returns:
        The compiled graph, a LangChain Runnable with sync and async entry points
        (``invoke``, ``ainvoke``, ``stream``, ``astream``, ``batch``, ``abatch``,
        ``astream_events``; see :mod:`reactgraph.dualmode`). Input ``{"messages": [...]}``
        as LangGraph's prebuilt agent; the output is :class:`~reactgraph.state.OutputState`:
        ``messages``, ``query``, ``mode``, ``selected_tools``, ``answer``, ``synthesis``,
        ``steps``, ``iteration``, ``usage``, ``finish_reason``, ``error``. Its
        ``recursion_limit`` default is derived from ``max_iterations`` so the iteration cap
        is always reached first.

    Raises:
        TypeError: A tool is not a ``BaseTool``.
        ValueError: Two tools share a name.
    """
    settings = settings or AgentSettings()
    engine = Engine.build(
        llm, tools, resolve_abilities(llm, abilities), settings, use_native_tools, interrupt_queue,
        compaction_llm=compaction_llm,
    )
    retry = RetryPolicy(
        max_attempts=settings.model_attempts,
        initial_interval=settings.retry_initial_delay,
        backoff_factor=2.0,
        max_interval=settings.retry_max_delay,
        jitter=True,
        retry_on=is_transient_error,
    )
    builder = StateGraph(AgentState, input_schema=InputState, output_schema=OutputState)
    nodes = {
        "start_turn": StartTurn(engine),
        "select_tools": SelectTools(engine),
        "guard_context": GuardContext(engine),
        "llm_call_native": LLMCallNative(engine),
        "llm_call_json": LLMCallJSON(engine),
        "execute_tools": ExecuteTools(engine),
        "drain_interrupts": DrainInterrupts(engine),
        "fallback": Fallback(engine),
        "synthesize": Synthesize(engine),
    }
    for node_name, body in nodes.items():
        builder.add_node(
            node_name,
            dual_node(body, node_name),
            metadata={"phase": NODE_PHASES[node_name]},
            retry_policy=retry if node_name.startswith("llm_call") else None,
        )

    builder.add_edge(START, "start_turn")
    builder.add_edge("start_turn", "select_tools")
    builder.add_edge("select_tools", "drain_interrupts")
    builder.add_conditional_edges(
        "guard_context", lambda state: route_model(state, engine), ["llm_call_native", "llm_call_json", "fallback"]
    )
    builder.add_conditional_edges("llm_call_native", route_after_native_call, ["execute_tools", "drain_interrupts"])
    builder.add_edge("llm_call_json", "drain_interrupts")
    # Both modes drain after all tool results are in (the superstep barrier): native mode
    # may only drain there (R7.2); JSON mode drained right after the assistant message
    # already and drains again so a follow-up sent during a tool reaches the next call.
    builder.add_edge("execute_tools", "drain_interrupts")
    builder.add_conditional_edges("drain_interrupts", route_after_drain, ["execute_tools", "synthesize", "guard_context"])
    builder.add_edge("fallback", "synthesize")
    builder.add_edge("synthesize", END)
    graph = builder.compile(checkpointer=checkpointer, name=name)
    return graph.with_config(recursion_limit=settings.recursion_limit)  # type: ignore[return-value]
