"""The ReAct graph (SPEC §1, §2, §3).

::

    START → start_turn → [select_tools →] llm_call_native | llm_call_json   (the mode's model node, R2.2;
                                                                          select_tools with more tools than
                                                                          tool_selection_threshold, or any
                                                                          tools under the lexical gate)

    model node ─┬→ execute_tools ×N (Send) → model node        one iteration: two supersteps
                ├→ model node (JSON reformat retry; an answer suppressed by a follow-up)
                ├→ guard_context → model node                   (only when the window needs it)
                ├→ fallback (max_iterations, usage limits) → synthesize
                └→ synthesize (final answer accepted; END when the run skips synthesis)
    synthesize → END   (with ``response_format``: synthesize → structured_response → END)

Phase one is the loop between the model node and ``execute_tools``; phase two is
``synthesize``. The model node (:mod:`reactgraph.nodes.model_step`) drains follow-ups
before its call and after it (R7.2: JSON mode after each assistant message; native mode
after all tool results and after a final answer; both modes before the first model call),
checks the iteration cap and the window, calls the model and routes, all in one superstep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_type_hints

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, RetryPolicy, Send
from typing_extensions import TypedDict

from reactgraph.engine.dualmode import dual_node
from reactgraph.engine.bindings import Engine, split_prompt
from reactgraph.providers.abilities import ModelAbilities, resolve_abilities
from reactgraph.tools.approval import earlier_decision
from reactgraph.core.config import AgentSettings
from reactgraph.events import with_custom_events
from reactgraph.engine.fallbacks import ModelScope, ServingNode, retried, unpack_fallbacks
from reactgraph.graph.names import (
    EXECUTE_TOOLS,
    FALLBACK,
    GUARD_CONTEXT,
    LLM_CALL_JSON,
    LLM_CALL_NATIVE,
    LOOP_NODES,
    SELECT_TOOLS,
    START_TURN,
    STRUCTURED_RESPONSE,
    SYNTHESIZE,
)
from reactgraph.persistence.interrupts import InterruptQueue
from reactgraph.core.limits import UsageLimits, over_limit_refusals
from reactgraph.nodes.drain_interrupts import DrainInterrupts
from reactgraph.nodes.execute_tools import ExecuteTools
from reactgraph.nodes.fallback import Fallback
from reactgraph.nodes.guard_context import GuardContext, ServingGuard
from reactgraph.nodes.llm_call import LLMCallJSON, LLMCallNative
from reactgraph.nodes.model_step import ModelStep, model_node
from reactgraph.nodes.select_tools import SelectTools
from reactgraph.nodes.start_turn import StartTurn
from reactgraph.nodes.structured_response import StructuredResponse
from reactgraph.nodes.synthesize import Synthesize
from reactgraph.engine.state import AgentState, InputState, OutputState, selection_in_force
from reactgraph.answer.synthesis import REPEAT_REFUSAL
from reactgraph.tools.runner import ToolErrorPolicy

NODE_PHASES: dict[str, str] = {
    START_TURN: "tool_loop",
    SELECT_TOOLS: "tool_loop",
    GUARD_CONTEXT: "tool_loop",
    LLM_CALL_NATIVE: "tool_loop",
    LLM_CALL_JSON: "tool_loop",
    EXECUTE_TOOLS: "tool_loop",
    FALLBACK: "tool_loop",
    SYNTHESIZE: "synthesis",
    STRUCTURED_RESPONSE: "synthesis",
}
"""The phase of each node, put in its metadata (Studio shows it on the node, traces carry
it on the node's run): ``tool_loop`` (phase one, tool selection included) and ``synthesis``
(phase two)."""


def _tool_sends(state: dict[str, Any], limits: UsageLimits | None = None) -> list[Send]:
    """One ``Send`` per tool call in ``state["pending_tool_calls"]`` (the model call's
    update laid over the state, :class:`~reactgraph.nodes.model_step.ModelStep`); a call
    past a tool-call limit goes with the reason it may not run (R13.3,
    :func:`~reactgraph.core.limits.over_limit_refusals`)."""
    steps = state.get("steps") or []
    calls = list(state.get("pending_tool_calls") or [])
    refusals = over_limit_refusals(calls, steps, limits)
    sends = []
    for call, refusal in zip(calls, refusals):
        payload = {"call": call if refusal is None else {**call, "error": refusal, "refused": "limit"},
                   "iteration": state.get("iteration", 0), "mode": state.get("mode", "native"),
                   "selected_tools": selection_in_force(state),
                   **({"model": state["model"]} if state.get("model") else {})}
        decided = _decided_repeat(call, steps)
        if decided is not None:
            payload.update(decided)
        sends.append(Send(EXECUTE_TOOLS, payload))
    return sends


def _decided_repeat(call: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The payload entries of a call that repeats one a person already decided this turn
    (:func:`~reactgraph.tools.approval.earlier_decision`, R13.3): the call marked a repeat, with
    no error of its own (a repeat of an approved call that succeeded is not an error), and
    ``decided``: the earlier call's id, decision, observation and error, which
    ``execute_tools`` gives it without asking again or running. ``None`` for any other
    call (also one refused for another reason: unknown tool, bad JSON, unasked id)."""
    if call.get("error") and call.get("refused") != REPEAT_REFUSAL:
        return None
    earlier = earlier_decision(call, steps)
    if earlier is None:
        return None
    call = {key: value for key, value in call.items() if key != "repeat_of"}  # answered, not run: nothing to compare
    return {"call": {**call, "error": None, "refused": REPEAT_REFUSAL},
            "decided": {key: earlier.get(key) for key in ("tool_call_id", "approval", "observation", "error")}}


PREBUILT_NODE_NAMES: dict[str, tuple[str, ...]] = {
    "agent": LOOP_NODES,
    "model": LOOP_NODES,
    "tools": (EXECUTE_TOOLS,),
}
"""The node names of LangGraph's prebuilt agents (``create_react_agent``: ``agent``,
``tools``; ``create_agent``: ``model``, ``tools``) and the nodes they mean here."""


def map_node_names(names: Any) -> Any:
    """``interrupt_before``/``interrupt_after`` in this graph's node names: prebuilt names
    are mapped (:data:`PREBUILT_NODE_NAMES`), this graph's names and ``"*"`` kept.

    Raises:
        ValueError: A name that is neither.
    """
    if names is None or names == "*":
        return names
    mapped: list[str] = []
    for name in names:
        for node in PREBUILT_NODE_NAMES.get(name, (name,)):
            if node not in NODE_PHASES:
                raise ValueError(f"no node named {name!r}; nodes: {', '.join(NODE_PHASES)} (or agent, model, tools)")
            if node not in mapped:
                mapped.append(node)
    return mapped


def _extended(name: str, ours: type, extra: dict[str, Any]) -> type:
    """A TypedDict with the fields of ``ours`` plus ``extra`` (ours win on a shared key)."""
    return TypedDict(name, {**extra, **get_type_hints(ours, include_extras=True)}, total=False)  # type: ignore[operator]


def _schemas(state_schema: type | None) -> tuple[type, type, type]:
    """State, input and output schemas: ours, extended with the keys of the caller's
    ``state_schema`` (a TypedDict, e.g. a subclass of the prebuilt agent's ``AgentState``).
    Its keys that are also ours (``messages``, ``remaining_steps``) keep our definition; the
    others are state, input and output keys."""
    if state_schema is None:
        return AgentState, InputState, OutputState
    if not (isinstance(state_schema, type) and hasattr(state_schema, "__total__")):
        raise TypeError(f"state_schema must be a TypedDict class, got {state_schema!r}")
    ours = get_type_hints(AgentState, include_extras=True)
    extra = {key: hint for key, hint in get_type_hints(state_schema, include_extras=True).items() if key not in ours}
    name = state_schema.__name__
    return (
        _extended(name, AgentState, extra),
        _extended(f"{name}Input", InputState, extra),
        _extended(f"{name}Output", OutputState, extra),
    )


class ModelAttributed:
    """A node whose model calls may go through fallback chains: the usage it
    reports is written to ``model_usage`` too, under the model that answered its last call
    (:class:`~reactgraph.engine.fallbacks.ModelScope`, which also starts its fallback chains at the
    model serving the turn), else the model serving the turn, else the agent's model.
    ``body`` returns an update dict or a ``Command`` with one."""

    def __init__(self, body: Any, engine: Engine) -> None:
        self.body = body
        self.engine = engine

    async def __call__(self, state: AgentState, config: RunnableConfig) -> Any:
        with ModelScope(state.get("model")) as answered:
            out = await self.body(state, config)
        update = out.update if isinstance(out, Command) else out
        if isinstance(update, dict) and update.get("usage"):
            model = answered.labels[-1] if answered.labels else state.get("model") or self.engine.label
            update["model_usage"] = {model: update["usage"]}
        return out


class RoutedNode:
    """A node whose conditional edge is decided inside the node: it returns
    ``Command(update=..., goto=route(state after the update))``.

    LangGraph writes a node's update and a ``Command``'s ``goto`` in one step, while a
    conditional edge runs as a step of its own after the update is written. A run
    cancelled between the two (a client disconnect, ``aclose()`` of the event stream)
    leaves the update saved without the route, and a resume would apply the update and
    stop with nothing left to run: an unanswered thread (SPEC R13.5). Folding the
    route into the node makes the update and the route one write, saved whole or not at all.

    Args:
        body: The node body, ``async (state, config) -> update dict``.
        route: ``(state) -> destination(s)``, the former conditional edge's function. It is
            given the state with ``update`` laid over it, so it must read only keys that
            the node replaces (no reducer adds to them): ``iteration``, ``mode``,
            ``pending_final``, ``selected_tools``.
    """

    def __init__(self, body: Any, route: Any) -> None:
        self.body = body
        self.route = route

    async def __call__(self, state: AgentState, config: RunnableConfig) -> Command:
        update = await self.body(state, config)
        return Command(update=update, goto=self.route({**state, **update}))


def create_react_graph(
    llm: Any,
    tools: Sequence[Any] | ToolNode,
    *,
    use_native_tools: bool = True,
    abilities: ModelAbilities | dict[str, Any] | None = None,
    settings: AgentSettings | None = None,
    checkpointer: Any = None,
    interrupt_queue: InterruptQueue | None = None,
    compaction_llm: BaseChatModel | None = None,
    name: str | None = None,
    prompt: Any = None,
    state_schema: type | None = None,
    context_schema: type | None = None,
    store: Any = None,
    response_format: Any = None,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
    handle_tool_errors: ToolErrorPolicy | None = None,
    fallbacks: Sequence[Any] = (),
    custom_events: bool = False,
) -> CompiledStateGraph:
    """Build and compile the ReAct graph.

    Accepts what a user of LangGraph's ``create_react_agent`` passes, where it fits the
    two-phase design (docs/dropin.md lists the differences).

    Args:
        llm: Any LangChain chat model; every call of a run uses it (SPEC R2.1). A
            pre-bound model (``model.bind_tools(tools, parallel_tool_calls=False)``) keeps
            its bindings on the loop calls; its tools must be ``tools``; synthesis and
            structured calls never see tools. A LangChain ``llm.with_fallbacks([...])``
            chain is taken apart: its first model is the model, the others fallbacks.
        tools: LangChain tools, plain functions (made tools from their signature and
            docstring) and provider tool dicts (bound in native mode, run by the provider);
            or, as LangGraph's prebuilt takes it, a ``ToolNode``: its tools, its
            ``handle_tool_errors`` (unless left at LangGraph's default, or given here) and its
            ``wrap_tool_call`` / ``awrap_tool_call`` hooks around every call
            (:func:`~reactgraph.tools.runner.tool_source`).
            Tools run through LangGraph's ``ToolNode``: ``interrupt()``, ``Command``
            results, ``InjectedState``/``InjectedStore``/``ToolRuntime`` and
            ``return_direct`` work as in LangGraph (see :mod:`reactgraph.tools.runner`).
        use_native_tools: Allow native tool calling; JSON mode otherwise (SPEC R2.2).
        abilities: Explicit abilities, or a dict of some of them, merged over the model's
            profile (see :func:`~reactgraph.providers.abilities.resolve_abilities`).
        settings: :class:`~reactgraph.AgentSettings`; defaults when ``None``.
        checkpointer: Any LangGraph checkpointer, or ``None`` for none.
        interrupt_queue: Where follow-ups for running threads wait (SPEC §7); ``None``
            means a new in-memory queue. Runs invoked with ``configurable.thread_id`` drain
            that thread's follow-ups; to accept follow-ups, wrap the call in
            ``async with interrupt_queue.running(thread_id):``.
        compaction_llm: A separate, cheaper chat model for context compaction (SPEC §6);
            ``None`` compacts with ``llm``.
        name: The graph's name (traces, Studio, a subgraph node's name) and the ``name``
            of its assistant messages, as in LangGraph; ``None`` names the graph
            ``reactgraph`` and leaves messages unnamed.
        prompt: The loop's instructions: a string or ``SystemMessage`` (the system prompt,
            as ``settings.system_prompt``), or a callable / Runnable taking the state and
            returning the messages to send (native mode sends them as they are; JSON mode
            puts its tool protocol in their leading system message).
        state_schema: A TypedDict whose extra keys the graph keeps (input, state, output),
            e.g. a subclass of ``langgraph.prebuilt.chat_agent_executor.AgentState``; tools
            read them (``InjectedState``) and update them (``Command(update=...)``).
        context_schema: The runtime context type (``invoke(..., context=...)``), read by
            tools through ``ToolRuntime.context``.
        store: A LangGraph store (``InjectedStore``, ``ToolRuntime.store``).
        response_format: A pydantic model, JSON schema dict, TypedDict or ``(prompt,
            schema)``: after synthesis, ``structured_response`` is filled through
            :func:`~reactgraph.structured_llm_call` (three levels, so plain-text models
            work too; ``None`` when every level fails).
        interrupt_before: Nodes to pause before (``"*"``, this graph's names, or the
            prebuilt ``agent``/``model``/``tools``; see :func:`map_node_names`).
        interrupt_after: Nodes to pause after, as ``interrupt_before``.
        handle_tool_errors: What tool exceptions become, as ``ToolNode``'s argument:
            default every exception is an ``Error: …`` observation (SPEC R2.7); ``False``
            lets them fail the run.
        fallbacks: Fallback models, tried in order when the model fails (
            :mod:`reactgraph.engine.fallbacks`): chat models, ``(model, abilities)`` pairs or
            :class:`~reactgraph.FallbackModel`\\ s; after those of a ``with_fallbacks``
            chain and of ``settings.fallbacks``.
        custom_events: Put the engine's events (SPEC §8, ``{"reactgraph_event": channel,
            "data": payload}``, read back by :func:`~reactgraph.events.as_agent_event`) on
            ``stream_mode="custom"`` next to what the tools write. Default off: the custom
            stream holds only the tools' ``get_stream_writer()`` output, as under LangGraph's
            prebuilt agent (a run may still ask with ``configurable.reactgraph_events``).

    Returns:
        The compiled graph, a LangChain Runnable with sync and async entry points
        (``invoke``, ``ainvoke``, ``stream``, ``astream``, ``batch``, ``abatch``,
        ``astream_events``; see :mod:`reactgraph.engine.dualmode`). Input ``{"messages": [...]}``
        as LangGraph's prebuilt agent; the output is :class:`~reactgraph.engine.state.OutputState`:
        ``messages``, ``query``, ``mode``, ``selected_tools``, ``answer``, ``synthesis``,
        ``steps``, ``iteration``, ``usage``, ``finish_reason``, ``error``, and
        ``structured_response`` with ``response_format``, plus the ``state_schema`` keys.
        The last message is always an assistant message. Its ``recursion_limit`` default
        is derived from ``max_iterations``; a lower one given by the caller lowers the
        iteration cap instead of raising ``GraphRecursionError`` (SPEC R2.6; a limit
        below about 10 leaves no room for even the fallback and LangGraph raises).

    Raises:
        TypeError: A tool is none of the accepted kinds; ``prompt``, ``state_schema`` or
            ``response_format`` of an unsupported kind; ``llm`` is not a chat model.
        ValueError: Two tools share a name; a pre-bound model's tools differ from
            ``tools``; an unknown node in ``interrupt_before``/``interrupt_after``.
    """
    settings, prompt = split_prompt(settings or AgentSettings(), prompt)
    llm, chained = unpack_fallbacks(llm)
    engine = Engine.build(
        llm, tools, resolve_abilities(llm, abilities), settings, use_native_tools, interrupt_queue,
        compaction_llm=compaction_llm, handle_tool_errors=handle_tool_errors, prompt=prompt, message_name=name,
        fallbacks=[*chained, *fallbacks],
    )
    graph = compile_react_graph(
        engine, checkpointer=checkpointer, name=name, state_schema=state_schema, context_schema=context_schema,
        store=store, response_format=response_format, interrupt_before=interrupt_before, interrupt_after=interrupt_after,
    )
    return with_custom_events(graph) if custom_events else graph


def compile_react_graph(
    engine: Engine,
    *,
    checkpointer: Any = None,
    name: str | None = None,
    state_schema: type | None = None,
    context_schema: type | None = None,
    store: Any = None,
    response_format: Any = None,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
) -> CompiledStateGraph:
    """Wire and compile the ReAct graph around a prepared :class:`~reactgraph.engine.bindings.Engine`
    (the part of :func:`create_react_graph` after the model and tools are prepared; the
    agent facade calls it so that it shares the engine with the graph's nodes). The
    arguments are those of :func:`create_react_graph`."""
    settings = engine.settings
    retry = RetryPolicy(
        max_attempts=settings.model_attempts,
        initial_interval=settings.retry_initial_delay,
        backoff_factor=2.0,
        max_interval=settings.retry_max_delay,
        jitter=True,
        retry_on=lambda exc: retried(exc, engine.profile),  # the failing model's profile decides
    )
    state, input_schema, output_schema = _schemas(state_schema)
    builder = StateGraph(state, context_schema=context_schema, input_schema=input_schema, output_schema=output_schema)
    drain = DrainInterrupts(engine)
    guard = ServingGuard(engine) if engine.fallbacks else GuardContext(engine)  # each model's window

    def sends(state: dict[str, Any]) -> list[Send]:
        return _tool_sends(state, settings.limits)

    def answer(config: RunnableConfig) -> str:
        """Where an accepted answer goes: ``synthesize``, or straight to the end when the
        run skips synthesis (``configurable.synthesize`` false) and there is no
        ``response_format`` (the skipped node would pass the state through)."""
        enabled = (config.get("configurable") or {}).get("synthesize", settings.synthesize)
        return SYNTHESIZE if enabled or response_format is not None else END

    # A few tools get no selection call, but under the lexical gate (the strict policy) the
    # node still closes the gate and lets the values a question names choose the tools.
    selects = settings.tool_selection and bool(engine.tools) and (
        len(engine.tools) > settings.tool_selection_threshold or bool(settings.lexical_gate))
    structured = response_format is not None  # its object is written from the synthesized answer

    nodes = {
        START_TURN: StartTurn(engine),
        SELECT_TOOLS: SelectTools(engine),
        GUARD_CONTEXT: guard,
        LLM_CALL_NATIVE: ModelStep(engine, [LLMCallNative(model, structured) for model in engine.models], LLM_CALL_NATIVE,
                                     drain, guard, sends, answer),
        LLM_CALL_JSON: ModelStep(engine, [LLMCallJSON(model, structured) for model in engine.models], LLM_CALL_JSON,
                                   drain, guard, sends, answer),
        EXECUTE_TOOLS: ExecuteTools(engine),
        FALLBACK: Fallback(engine),
        SYNTHESIZE: ServingNode(engine, Synthesize) if engine.fallbacks else Synthesize(engine),  # fallback models serve it too
    }
    if response_format is not None:
        nodes[STRUCTURED_RESPONSE] = StructuredResponse(engine, response_format)
    loop = LOOP_NODES
    destinations = {  # where a node's Command may go (drawn as edges in Studio)
        SELECT_TOOLS: loop,
        GUARD_CONTEXT: loop,
        LLM_CALL_NATIVE: (EXECUTE_TOOLS, LLM_CALL_NATIVE, GUARD_CONTEXT, FALLBACK, SYNTHESIZE, END),
        LLM_CALL_JSON: (EXECUTE_TOOLS, LLM_CALL_JSON, GUARD_CONTEXT, FALLBACK, SYNTHESIZE, END),
        EXECUTE_TOOLS: loop,
    }
    routes = {SELECT_TOOLS: model_node, GUARD_CONTEXT: model_node}
    attributed = {SELECT_TOOLS, GUARD_CONTEXT, SYNTHESIZE, STRUCTURED_RESPONSE}
    for node_name, body in nodes.items():
        if node_name in routes:  # decided inside the node (see RoutedNode)
            body = RoutedNode(body, routes[node_name])
        if engine.fallbacks and node_name in attributed:
            body = ModelAttributed(body, engine)
        builder.add_node(
            node_name,
            dual_node(body, node_name),
            metadata={"phase": NODE_PHASES[node_name]},
            retry_policy=retry if node_name in LOOP_NODES else None,
            destinations=destinations.get(node_name),
        )

    builder.add_edge(START, START_TURN)
    # After start_turn: select_tools when the agent has enough tools for a selection (SPEC §5),
    # else the mode's model node. An edge, not a Command: a state written as start_turn
    # (update_state(as_node="start_turn"), a repaired thread) goes on from there as a new turn
    # would. The mode is the engine's, so the edge is static (a conditional edge copies every
    # channel of the state to read it).
    builder.add_edge(START_TURN, SELECT_TOOLS if selects else model_node({"mode": engine.mode}))
    builder.add_edge(FALLBACK, SYNTHESIZE)
    if response_format is not None:
        builder.add_edge(SYNTHESIZE, STRUCTURED_RESPONSE)
        builder.add_edge(STRUCTURED_RESPONSE, END)
    else:
        builder.add_edge(SYNTHESIZE, END)
    graph = builder.compile(
        checkpointer=checkpointer, store=store, name=name or "reactgraph",
        interrupt_before=map_node_names(interrupt_before), interrupt_after=map_node_names(interrupt_after),
    )
    # The model deadline rides in the config, so every node's model calls read it (reactgraph.engine.deadlines).
    return graph.with_config(recursion_limit=settings.recursion_limit,  # type: ignore[return-value]
                             configurable=settings.model_deadline.as_config())
