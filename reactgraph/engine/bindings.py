"""What every node of one compiled graph shares: the model, the tools, the settings.

The builder closes the nodes over one :class:`Engine`; none of it enters the
checkpointed state (SPEC R2.1: one model instance for every call of a run).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM

from reactgraph.engine.dualmode import call_model
from reactgraph.engine.query_values import CACHE_SIZE, QueryValues, remembered  # noqa: F401 (CACHE_SIZE re-exported)
from reactgraph.providers.abilities import ModelAbilities
from reactgraph.protocol.action_schema import action_response_format, value_shape
from reactgraph.protocol.actions import message_text
from reactgraph.tools.approval import needs_approval
from reactgraph.core.config import AgentSettings
from reactgraph.engine.fallbacks import (
    ChainMember,
    CircuitBreaker,
    FallbackChain,
    FallbackModel,
    as_fallback,
    model_label,
    pick_model,
    unique_labels,
)
from reactgraph.graph.names import GUARD_CONTEXT, LLM_CALL_JSON, LLM_CALL_NATIVE, SELECT_TOOLS, SYNTHESIZE
from reactgraph.engine.history import HistoryFold, add_call_ids, written_values_fold
from reactgraph.persistence.interrupts import InMemoryInterruptQueue, InterruptQueue
from reactgraph.core.limits import ModelPrice, limit_reached, model_name_of
from reactgraph.protocol.prompts import DEFAULT_SYSTEM_PROMPT, json_mode_system_prompt
from reactgraph.protocol.messages import in_mode_form
from reactgraph.providers import GENERIC, ProviderProfile, adapt_model, select_profile
from reactgraph.tools.ranking import ToolRanker, enum_values
from reactgraph.policy.safeguards import resolve_settings
from reactgraph.tools.runner import ToolErrorPolicy, ToolRunner, has_side_effects, prepare_tools, tool_source
from reactgraph.tools.values import ValueReader


RUN_NAME_SELECTION = f"tool_loop/{SELECT_TOOLS}"
"""Trace name of the tool-selection model calls: ``<phase>/<node>``. LangSmith (or any
callback handler) shows which node and phase each model call belongs to."""
RUN_NAME_COMPACTION = f"tool_loop/{GUARD_CONTEXT}"
"""Trace name of the context guard's compaction call."""
RUN_NAME_NATIVE = f"tool_loop/{LLM_CALL_NATIVE}"
"""Trace name of a native-mode loop call."""
RUN_NAME_JSON = f"tool_loop/{LLM_CALL_JSON}"
"""Trace name of a JSON-mode loop call."""
RUN_NAME_SYNTHESIS = f"synthesis/{SYNTHESIZE}"
"""Trace name of the streaming answer-synthesis call."""


TOOL_BINDING_KEYS = frozenset({"tools", "tool_choice", "parallel_tool_calls", "functions", "function_call"})
"""Keyword bindings of a pre-bound model that concern tools: kept for the native loop calls
only (synthesis, JSON mode and structured calls never see tools)."""


def split_bindings(llm: Any) -> tuple[BaseChatModel, dict[str, Any]]:
    """The chat model inside a pre-bound model (``llm.bind_tools(...)``, ``llm.bind(...)``)
    and its keyword bindings merged (outer bindings win); ``(llm, {})`` for a plain model.

    Raises:
        TypeError: No LangChain chat model inside.
    """
    kwargs: dict[str, Any] = {}
    model = llm
    while isinstance(model, RunnableBinding):
        kwargs = {**model.kwargs, **kwargs}
        model = model.bound
    if not isinstance(model, BaseChatModel):
        raise TypeError(f"the model must be a LangChain chat model (or one with bindings), got {type(model).__name__}")
    return model, kwargs


def _bound_tool_name(spec: Any) -> str | None:
    function = spec.get("function") if isinstance(spec, dict) else None
    if isinstance(function, dict):
        return function.get("name")
    return spec.get("name") if isinstance(spec, dict) and "input_schema" in spec else None


def split_prompt(settings: AgentSettings, prompt: Any) -> tuple[AgentSettings, Any]:
    """A ``prompt`` argument that is a string or a ``SystemMessage`` becomes the settings'
    ``system_prompt`` (returned with ``None``); any other prompt is returned unchanged,
    with the settings."""
    if isinstance(prompt, (str, SystemMessage)):
        text = prompt if isinstance(prompt, str) else str(prompt.text)
        return dataclasses.replace(settings, system_prompt=text), None
    return settings, prompt


def as_prompt_runnable(prompt: Any) -> Runnable | None:
    """A ``prompt`` argument as the runnable that builds the loop's model input from the
    state, or ``None`` for a fixed system prompt (``None``, a string, a ``SystemMessage``).

    Raises:
        TypeError: ``prompt`` is none of: ``None``, ``str``, ``SystemMessage``, a callable
            ``state -> list of messages``, a ``Runnable``.
    """
    if prompt is None or isinstance(prompt, (str, SystemMessage)):
        return None
    if isinstance(prompt, Runnable):
        return prompt
    if callable(prompt):
        return RunnableLambda(prompt, name="prompt")
    raise TypeError(f"prompt must be a string, a SystemMessage, a callable or a Runnable, got {type(prompt).__name__}")


@dataclass
class Engine(QueryValues):
    """The non-serializable parts of an agent, shared by its nodes.

    Attributes:
        llm: The chat model; every model call of a run uses this instance (SPEC R2.1).
        tools: Registered tools by name, in registration order.
        abilities: What ``llm`` can do (SPEC R2.2).
        settings: The agent's settings, every safeguard field filled from the model's
            policy (:func:`reactgraph.policy.safeguards.resolve_settings`).
        use_native_tools: The caller allows native tool calling.
        interrupts: The follow-up queue drained by ``drain_interrupts`` (SPEC §7).
        compaction_llm: A separate (cheaper) model for context compaction (SPEC §6);
            ``None`` compacts with ``llm``.
        ranker: BM25 index of ``tools``, for relevance-ranked offering (SPEC R13.1).
        call_ids: The tool-call ids a conversation used
            (:class:`~reactgraph.engine.history.HistoryFold` of its messages).
        runner: Runs tool calls the LangGraph way (:class:`~reactgraph.tools.runner.ToolRunner`).
        provider_tools: Provider tool dicts, bound in native mode, run by the provider.
        tool_bindings: Tool-related keyword bindings of a pre-bound model
            (:data:`TOOL_BINDING_KEYS` but ``tools``), kept on native loop calls.
        model_bindings: The pre-bound model's other keyword bindings, kept on every call
            the engine builds (loop and synthesis).
        prompt: A runnable building the loop's model input from the state (the
            ``prompt`` argument as a callable or Runnable), ``None`` for the system prompt.
        message_name: Set as ``name`` on the loop's assistant messages (the graph's
            ``name`` when the caller gave one, as LangGraph's prebuilt agent does).
        price: The model's token prices from ``settings.limits`` (R13.3), ``None`` when
            none are given.
        profile: The provider profile of ``llm`` (SPEC R13.2): ``llm`` is adapted to it
            (:func:`~reactgraph.providers.adapt_model`), and it decides which failures
            are retried, which mean a refused schema, and whether tool calls written in
            the content are read.
        label: The model's name in records, events and the breaker table.
        fallbacks: The fallback models, in order (:mod:`reactgraph.engine.fallbacks`):
            an engine each, sharing this one's tools and prompt, with its own model,
            abilities, profile, price and safeguard settings; each has the models after it
            as its own fallbacks. Empty for none.
        breaker: The model's :class:`~reactgraph.engine.fallbacks.CircuitBreaker`.
        mixed_modes: The agent's models do not all run the loop in one mode: each loop
            call converts the conversation into its model's form
            (:func:`~reactgraph.protocol.messages.in_mode_form`).
    """

    llm: BaseChatModel
    tools: dict[str, BaseTool]
    abilities: ModelAbilities
    settings: AgentSettings
    use_native_tools: bool = True
    interrupts: InterruptQueue = field(default_factory=InMemoryInterruptQueue)
    compaction_llm: BaseChatModel | None = None
    runner: ToolRunner | None = None
    provider_tools: list[dict[str, Any]] = field(default_factory=list)
    tool_bindings: dict[str, Any] = field(default_factory=dict)
    model_bindings: dict[str, Any] = field(default_factory=dict)
    prompt: Runnable | None = None
    message_name: str | None = None
    price: ModelPrice | None = None
    profile: ProviderProfile = GENERIC
    label: str = ""
    fallbacks: list[Engine] = field(default_factory=list, repr=False)
    breaker: CircuitBreaker = field(default_factory=CircuitBreaker, repr=False)
    mixed_modes: bool = False
    ranker: ToolRanker = field(default_factory=lambda: ToolRanker([]), repr=False)
    _enum_values: list[str] = field(default_factory=list, repr=False)
    _id_values: list[str] = field(default_factory=list, repr=False)  # those with a value_shape: ids
    _bound: dict[tuple[Any, ...], Runnable] = field(default_factory=dict, repr=False)
    _json_prompts: dict[tuple[Any, ...], str] = field(default_factory=dict, repr=False)
    _action_formats: dict[tuple[Any, ...], dict[str, Any] | None] = field(default_factory=dict, repr=False)
    _per_query: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict, repr=False)
    _argument_ids: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict, repr=False)
    _args_schemas: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _instructed: dict[str, set[str]] = field(default_factory=dict, repr=False)  # system prompt -> its values
    call_ids: HistoryFold[set[str], BaseMessage] = field(
        default_factory=lambda: HistoryFold(set, add_call_ids), repr=False)

    def __post_init__(self) -> None:
        self._written_ids = written_values_fold(self._id_values, self.values.written)

    @classmethod
    def build(
        cls,
        llm: Any,
        tools: Sequence[Any],
        abilities: ModelAbilities,
        settings: AgentSettings,
        use_native_tools: bool,
        interrupt_queue: InterruptQueue | None = None,
        *,
        compaction_llm: BaseChatModel | None = None,
        handle_tool_errors: ToolErrorPolicy | None = None,
        prompt: Any = None,
        message_name: str | None = None,
        fallbacks: Sequence[Any] = (),
    ) -> Engine:
        """Prepare the model and the tools. ``interrupt_queue`` ``None`` means a new
        :class:`~reactgraph.persistence.interrupts.InMemoryInterruptQueue`; ``compaction_llm`` ``None``
        means context compaction uses ``llm``.

        Args:
            llm: A chat model, or one with bindings (``bind_tools(..., parallel_tool_calls=False)``,
                ``bind(temperature=0)``): the bindings are kept, the tools re-bound per
                selection (see :func:`split_bindings`).
            tools: ``BaseTool`` objects, functions and provider tool dicts
                (:func:`~reactgraph.tools.runner.prepare_tools`), or a LangGraph ``ToolNode``
                (its tools, error policy and wrap hooks: :func:`~reactgraph.tools.runner.tool_source`).
            handle_tool_errors: The tool error policy (:class:`~reactgraph.tools.runner.ToolRunner`).
            prompt: A callable or Runnable prompt (:func:`as_prompt_runnable`); strings
                and system messages are ``settings.system_prompt``.
            fallbacks: Fallback models, in order: chat models, ``(model,
                abilities)`` pairs or :class:`~reactgraph.engine.fallbacks.FallbackModel`\\ s,
                after ``settings.fallbacks`` (see :meth:`with_fallbacks`).

        Raises:
            TypeError: An item of ``tools`` is not a tool; ``llm`` is not a chat model.
            ValueError: Two tools share a name; a pre-bound model's tools are not the
                ``tools`` given; a cost limit and no price for the model.
        """
        model, bindings = split_bindings(llm)
        given = settings
        settings = resolve_settings(settings, abilities)  # the model's safeguard policy fills what is left None
        price = settings.limits.price_for(model_name_of(model)) if settings.limits is not None else None
        profile = select_profile(model, abilities.provider)
        model = adapt_model(model, profile)
        if compaction_llm is not None:
            compaction_llm = adapt_model(compaction_llm, select_profile(compaction_llm))
        source = tool_source(tools, handle_tool_errors)
        runnable, provider = prepare_tools(source.tools)
        runner = ToolRunner(runnable, source.handle_tool_errors, wrap=source.wrap, awrap=source.awrap)
        bound_tools = bindings.pop("tools", None)
        if bound_tools is not None:
            bound_names = {_bound_tool_name(spec) for spec in bound_tools} - {None}
            if bound_names != set(runner.tools):
                raise ValueError(
                    f"the model is bound to tools {sorted(bound_names)} but the agent was given {sorted(runner.tools)}; "
                    "bind the same tools, or pass the model without bindings"
                )
            provider = provider + [spec for spec in bound_tools if _bound_tool_name(spec) is None and spec not in provider]
        interrupts = interrupt_queue if interrupt_queue is not None else InMemoryInterruptQueue()
        values = enum_values(list(runner.tools.values()))
        engine = cls(
            model, dict(runner.tools), abilities, settings, use_native_tools, interrupts=interrupts,
            compaction_llm=compaction_llm, runner=runner, provider_tools=provider,
            tool_bindings={k: v for k, v in bindings.items() if k in TOOL_BINDING_KEYS},
            model_bindings={k: v for k, v in bindings.items() if k not in TOOL_BINDING_KEYS},
            prompt=as_prompt_runnable(prompt), message_name=message_name, price=price, profile=profile,
            label=model_label(model), ranker=ToolRanker(list(runner.tools.values())), _enum_values=values,
            _id_values=[value for value in values if value_shape(value) is not None],
        )
        return engine.with_fallbacks([*settings.fallbacks, *fallbacks], given)

    def new_breaker(self) -> CircuitBreaker:
        """A circuit breaker with the settings' ``breaker_failures``, ``breaker_window``
        and ``breaker_cooldown``."""
        settings = self.settings
        return CircuitBreaker(settings.breaker_failures, settings.breaker_window, settings.breaker_cooldown)

    def with_fallbacks(self, fallbacks: Sequence[Any], settings: AgentSettings | None = None) -> Engine:
        """This engine with ``fallbacks`` as its fallback models.

        Each fallback is prepared as the engine's own model is: its bindings split off
        (its tool bindings dropped: the agent binds its tools), its abilities resolved
        (:func:`~reactgraph.providers.abilities.resolve_abilities`), its provider profile chosen and
        applied, its price looked up, its safeguard policy applied to ``settings``
        (:func:`~reactgraph.policy.safeguards.resolve_settings`: a small fallback is held to the
        strict policy); it gets an engine of its own (caches and all) that shares the tools,
        prompt and follow-up queue, and a circuit breaker.

        Args:
            fallbacks: Chat models, ``(model, abilities)`` pairs or
                :class:`~reactgraph.engine.fallbacks.FallbackModel`\\ s, in order.
            settings: The settings as the caller gave them, before the model's policy
                filled them; ``None``: this engine's.

        Returns:
            ``self``, its :attr:`fallbacks` (and theirs) and :attr:`mixed_modes` set.

        Raises:
            TypeError: A fallback is no chat model.
            ValueError: A cost limit and no price for a fallback model.
        """
        from reactgraph.providers.abilities import resolve_abilities  # abilities imports providers, as this module does

        specs = [as_fallback(item) for item in fallbacks]
        labels = unique_labels([self.label, *(spec.name or model_label(split_bindings(spec.llm)[0]) for spec in specs)])
        self.label, self.breaker, self.fallbacks = labels[0], self.new_breaker(), []
        for spec, label in zip(specs, labels[1:], strict=True):
            model, bindings = split_bindings(spec.llm)
            abilities = resolve_abilities(model, spec.abilities)
            profile = select_profile(model, abilities.provider)
            limits = self.settings.limits
            self.fallbacks.append(dataclasses.replace(
                self, llm=adapt_model(model, profile), abilities=abilities, profile=profile, label=label,
                settings=resolve_settings(settings or self.settings, abilities),
                price=limits.price_for(model_name_of(model)) if limits is not None else None,
                model_bindings={k: v for k, v in bindings.items() if k not in TOOL_BINDING_KEYS}, tool_bindings={},
                fallbacks=[], breaker=self.new_breaker(), _bound={}, _json_prompts={}, _action_formats={},
            ))
        mixed = len({engine.mode for engine in self.models}) > 1
        for engine in self.models:
            engine.mixed_modes = mixed
        for position, engine in enumerate(self.fallbacks):  # a fallback's calls go on with the models after it
            engine.fallbacks = self.fallbacks[position + 1:]
        return self

    @property
    def models(self) -> list[Engine]:
        """This engine's model and its fallbacks, in the order they are tried."""
        return [self, *self.fallbacks]

    def model_index(self, label: str | None) -> int | None:
        """The position in :attr:`models` of the model named ``label``; ``None`` for none."""
        return next((i for i, engine in enumerate(self.models) if engine.label == label), None)

    def first_model(self) -> int:
        """The position of the model a turn starts on: the first whose breaker lets calls
        through (:func:`~reactgraph.engine.fallbacks.pick_model`)."""
        return pick_model([engine.breaker for engine in self.models])

    def chained(self, build: Callable[[Engine], Runnable], call: str) -> Runnable:
        """The runnable ``build`` makes of the model, falling back to what it makes of each
        fallback model (:class:`~reactgraph.engine.fallbacks.FallbackChain`); ``build(self)`` when
        there are no fallbacks."""
        if not self.fallbacks:
            return build(self)
        return FallbackChain([ChainMember(e.label, build(e), e.profile, e.breaker) for e in self.models], call)

    def structured_models(self, serving: str | None = None) -> tuple[Any, list[FallbackModel]]:
        """The ``llm`` and ``fallbacks`` arguments of :func:`~reactgraph.structured_llm_call`
        for this agent's calls (tool selection, ``structured_response``): the model with
        its abilities alone without fallback models; else each model from the one named ``serving`` (the
        state's ``model``; the first when ``None``) on, as a
        :class:`~reactgraph.engine.fallbacks.FallbackModel` with its abilities, name and breaker.
"""
        if not self.fallbacks:
            return FallbackModel(self.llm, self.abilities), []
        first, *rest = (FallbackModel(e.llm, e.abilities, e.label, e.breaker)
                        for e in self.models[self.model_index(serving) or 0:])
        return first, rest

    def breaker_states(self) -> dict[str, dict[str, Any]]:
        """Each model's circuit breaker (:meth:`~reactgraph.engine.fallbacks.CircuitBreaker.snapshot`)
        by name, the model first."""
        return {engine.label: engine.breaker.snapshot() for engine in self.models}

    def limit_reached(self, state: dict[str, Any]) -> dict[str, Any] | None:
        """The usage limit the turn has reached (R13.3), or ``None``; see
        :func:`reactgraph.core.limits.limit_reached`. With fallback models, each model's usage
        costs its own price."""
        if self.fallbacks:
            return limit_reached(state, self.settings.limits, {engine.label: engine.price for engine in self.models})
        return limit_reached(state, self.settings.limits, self.price)

    @property
    def mode(self) -> Literal["native", "json"]:
        """``native`` iff native tools are allowed and the model can call tools (SPEC R2.2)."""
        return "native" if self.use_native_tools and self.abilities.tool_call else "json"

    @property
    def compaction_model(self) -> Runnable:
        """The model that compacts the context (SPEC §6): ``compaction_llm``, else ``llm``
        (falling back to the fallback models, :meth:`chained`)."""
        if self.compaction_llm is not None:
            return self.compaction_llm
        return self.chained(lambda engine: engine.llm, "compaction")

    @property
    def tool_descriptions(self) -> dict[str, str]:
        """Registered tool name → description: where answers built without the model read a
        table's column names and what the agent can look up (:mod:`reactgraph.answer.grounding`)."""
        return {name: tool.description or "" for name, tool in self.tools.items()}

    @property
    def base_system_prompt(self) -> str:
        """The domain instructions at the top of every loop system prompt."""
        return self.settings.system_prompt or DEFAULT_SYSTEM_PROMPT

    @property
    def stable_prompt(self) -> bool:
        """Whether the loop's prompt keeps one prefix for every question: for a model not
        marked ``small`` the tools are offered as registered, their enums as declared, so
        the system prompt and the tool list are the same across the calls of a run and
        across runs, and a provider's or llama.cpp's prefix cache serves them
        (bench/calls.py: new input tokens). A small model gets them ranked for the question
        and the values it names first (SPEC R13.1), which it needs to find the data."""
        return not self.abilities.small

    def tools_for(self, selected: Sequence[str] | None, query: str = "") -> list[BaseTool]:
        """The tools offered this turn (SPEC R5.2, R13.1): the selected names that exist, in
        their order (selection ranks them), or every tool: as registered under
        :attr:`stable_prompt`, else ranked by :attr:`ranker`, most relevant to ``query`` first."""
        if selected is None:
            if self.stable_prompt:
                return list(self.tools.values())
            return [self.tools[name] for name in self._query_facts(query)[0]]
        return [self.tools[name] for name in selected if name in self.tools]

    @property
    def values(self) -> ValueReader:
        """What the tools' arguments take (:class:`~reactgraph.tools.values.ValueReader`, read from
        their schemas once per agent): the one notion of a value behind ranking, named values,
        ``seen``, ``covered``, ``require_tool_data`` and the unasked-value check."""
        return self.ranker.values

    def native_model(self, tools: Sequence[BaseTool], named: Sequence[str] = (), *, final_only: bool = False,
                     seen: Sequence[str] | None = None, tool_required: bool = False) -> Runnable:
        """The loop model with ``tools`` (and the caller's provider tools) bound in the given
        order, enum values the question names first, kept out of the token stream (SPEC
        R3.3, R13.1). Cached per tool set, named values and ``seen`` (:meth:`seen_ids`).
        ``final_only`` (a stalled loop's last call) binds no tool at all; ``tool_required``
        passes ``tool_choice="any"`` to the model's ``bind_tools`` (a tool call is required,
        LangChain's providers map it to their own word, e.g. OpenAI's
        ``"required"``), or binds the tools alone for a model whose ``bind_tools`` takes none."""

        def bind() -> Runnable:
            offered: list[Any] = [
                {"type": "function", "function": {"name": tool.name, "description": tool.description or "",
                                                  "parameters": self.offered_args(tool, named, seen)}}
                for tool in tools
            ]
            offered += [] if final_only else self.provider_tools
            model: Runnable = self.llm
            if offered and tool_required:
                try:  # the model's own bind_tools says "any" in its provider's word ("required", ...)
                    model = self.llm.bind_tools(offered, tool_choice="any")
                except (TypeError, ValueError, NotImplementedError):  # it cannot force a call: asked in words only
                    model = self.llm.bind_tools(offered)
            elif offered:
                model = self.llm.bind_tools(offered)
            bindings = {**self.model_bindings, **(self.tool_bindings if offered else {})}
            if bindings:
                model = model.bind(**bindings)
            return model.with_config(tags=[TAG_NOSTREAM], run_name=RUN_NAME_NATIVE)

        key = (tuple(tool.name for tool in tools), tuple(named), final_only, None if seen is None else tuple(seen),
               tool_required)
        return remembered(self._bound, key, bind)

    def _plain(self) -> Runnable:
        """The model with the caller's non-tool bindings."""
        return self.llm.bind(**self.model_bindings) if self.model_bindings else self.llm

    @property
    def synthesis_model(self) -> Runnable:
        """The model for answer synthesis, named for traces (it streams into the answer).
        It never sees tools, also when the caller passed a pre-bound model. With fallback
        models, a failed stream goes to the next model before its first chunk (:meth:`chained`)."""
        return self.chained(lambda engine: engine._plain().with_config(run_name=RUN_NAME_SYNTHESIS), "synthesis")

    async def loop_input(self, state: dict[str, Any], config: RunnableConfig,
                         system: Callable[[str], str] | None = None) -> list[BaseMessage]:
        """The messages of one loop model call: the system prompt and the conversation,
        or what the caller's ``prompt`` callable/Runnable builds from the state.

        Args:
            state: The graph state.
            config: The node's config (for a Runnable prompt).
            system: Turns the domain instructions into the mode's system prompt (JSON
                mode adds the tools and the reply protocol); ``None`` keeps them. With a
                prompt runnable, a leading system message it returns is the instructions.
        """
        if self.prompt is None:
            text = self.base_system_prompt
            return [SystemMessage(system(text) if system else text), *self._in_form(state["messages"])]
        built = await call_model(self.prompt, state, config)
        messages: list[BaseMessage] = self._in_form(list(built.to_messages() if hasattr(built, "to_messages") else built))
        if system is None:
            return messages
        text = self.base_system_prompt
        if messages and isinstance(messages[0], SystemMessage):
            text, messages = message_text(messages[0]), messages[1:]
        return [SystemMessage(system(text)), *messages]

    def portable(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``messages`` in a form every model of the agent accepts (for calls any of them
        may answer): the JSON-mode form when the models run in different modes
        (:attr:`mixed_modes`), else as they are."""
        return in_mode_form(messages, "json") if self.mixed_modes else list(messages)

    def _in_form(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``messages`` in this model's loop form when the agent's models run in different
        modes (:attr:`mixed_modes`, :func:`~reactgraph.protocol.messages.in_mode_form`), else as they are."""
        return in_mode_form(messages, self.mode) if self.mixed_modes else list(messages)

    def loop_system_prompt(self, selected: Sequence[str] | None, query: str,
                           messages: Sequence[BaseMessage] = (), thread: Any = None) -> str:
        """The system prompt of the turn's loop calls when no prompt runnable builds it:
        the domain instructions in native mode; in JSON mode with the tools offered for
        ``selected`` and ``query`` (:meth:`tools_for`), the ids the conversation
        ``messages`` of ``thread`` allows (:meth:`seen_ids`) and the reply protocol (SPEC R2.3)."""
        if self.mode == "json":
            return self.json_system_prompt(self.tools_for(selected, query), named=self.named_values(query),
                                           seen=self.seen_ids(query, messages, thread))
        return self.base_system_prompt

    def json_system_prompt(self, tools: Sequence[BaseTool], base: str | None = None, named: Sequence[str] = (),
                           seen: Sequence[str] | None = None) -> str:
        """The JSON-mode system prompt for ``tools`` in the given order (SPEC R2.3, R13.1)
        under the domain instructions ``base`` (default :attr:`base_system_prompt`), enum
        values the question names first; cached per instructions, tool set, named values
        and ``seen`` (:meth:`seen_ids`)."""
        base = self.base_system_prompt if base is None else base
        key = (base, tuple(tool.name for tool in tools), tuple(named), None if seen is None else tuple(seen))
        return remembered(self._json_prompts, key, lambda: json_mode_system_prompt(
            base, tools, [self.offered_args(tool, named, seen) for tool in tools]))

    def action_format(self, tools: Sequence[BaseTool], named: Sequence[str] = (),
                      seen: Sequence[str] | None = None, tools_only: bool = False) -> dict[str, Any] | None:
        """The schema-constrained ``response_format`` for a JSON-mode call offering ``tools``,
in the request shape of ``abilities.schema_output``; ``None`` when the
        model cannot take a schema. Branches in the order of ``tools``, enum values the
        question names first (SPEC R13.1). Cached per tool set, named values and ``seen``
        (:meth:`seen_ids`); ``tools_only`` leaves the answer out (a tool call is required,).
        See :func:`~reactgraph.protocol.action_schema.action_response_format`."""
        key = (tuple(tool.name for tool in tools), tuple(named), None if seen is None else tuple(seen), tools_only)
        return remembered(self._action_formats, key,
                          lambda: action_response_format(
                              self.abilities.schema_output, tools, max_output_tokens=self.abilities.max_output_tokens,
                              named=named, named_optionals_only=self.settings.optional_args == "named", seen=seen,
                              tools_only=tools_only, pin_named=bool(self.settings.refuse_unasked_ids)))

    def synthesizes(self, config: RunnableConfig) -> bool:
        """Whether this run streams an answer synthesis after the loop: the run's
        ``configurable.synthesize``, else ``AgentSettings.synthesize``."""
        return bool((config.get("configurable") or {}).get("synthesize", self.settings.synthesize))

    def repeat_changes_something(self, call: dict[str, Any]) -> bool:
        """Whether running ``call`` again may change something: as its tool
        declares (:func:`~reactgraph.tools.runner.has_side_effects`); a tool that declares
        nothing counts as having side effects only when the call needs approval (a person
        was to decide on it: it changes something). Undeclared tools are mostly reads, and a
        capable model repeats a read to poll it."""
        tool = self.tools.get(call.get("name") or "")
        declared = has_side_effects(tool)
        if declared is not None:
            return declared
        return needs_approval(call, tool, self.settings.approval)

    def json_model(self, *, json_format: bool, response_format: dict[str, Any] | None = None) -> Runnable:
        """The loop model for JSON mode, kept out of the token stream (SPEC R3.3).

        Args:
            json_format: Bind ``response_format={"type": "json_object"}``.
            response_format: A schema-constrained format (:meth:`action_format`) bound
                instead; wins over ``json_format``.
        """
        model: Runnable = self._plain()
        if response_format is not None:
            model = model.bind(response_format=response_format)
        elif json_format:
            model = model.bind(response_format={"type": "json_object"})
        return model.with_config(tags=[TAG_NOSTREAM], run_name=RUN_NAME_JSON)
