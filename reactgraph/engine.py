"""What every node of one compiled graph shares: the model, the tools, the settings.

The builder closes the nodes over one :class:`Engine`; none of it enters the
checkpointed state (SPEC R2.1: one model instance for every call of a run).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM

from reactgraph.abilities import ModelAbilities
from reactgraph.action_schema import action_response_format, prefer_named_values, tool_args_schema
from reactgraph.config import AgentSettings
from reactgraph.interrupts import InMemoryInterruptQueue, InterruptQueue
from reactgraph.prompts import DEFAULT_SYSTEM_PROMPT, json_mode_system_prompt
from reactgraph.ranking import ToolRanker, enum_values, named_values

RUN_NAME_SELECTION = "tool_loop/select_tools"
"""Trace name of the tool-selection model calls: ``<phase>/<node>``. LangSmith (or any
callback handler) shows which node and phase each model call belongs to."""
RUN_NAME_COMPACTION = "tool_loop/guard_context"
"""Trace name of the context guard's compaction call."""
RUN_NAME_NATIVE = "tool_loop/llm_call_native"
"""Trace name of a native-mode loop call."""
RUN_NAME_JSON = "tool_loop/llm_call_json"
"""Trace name of a JSON-mode loop call."""
RUN_NAME_SYNTHESIS = "synthesis/synthesize"
"""Trace name of the streaming answer-synthesis call."""


def is_transient_error(exc: BaseException) -> bool:
    """Whether a failed model call is worth retrying (SPEC R2.7): connection errors,
    timeouts, HTTP 408/429 and 5xx. A 4xx such as a rejected request is not."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        return status in (408, 409, 429) or status >= 500
    if isinstance(exc, (ConnectionError, TimeoutError, asyncio.TimeoutError)):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"APIConnectionError", "APITimeoutError", "TransportError", "TimeoutException"})


@dataclass
class Engine:
    """The non-serializable parts of an agent, shared by its nodes.

    Attributes:
        llm: The chat model; every model call of a run uses this instance (SPEC R2.1).
        tools: Registered tools by name, in registration order.
        abilities: What ``llm`` can do (SPEC R2.2).
        settings: The agent's settings.
        use_native_tools: The caller allows native tool calling.
        interrupts: The follow-up queue drained by ``drain_interrupts`` (SPEC §7).
        compaction_llm: A separate (cheaper) model for context compaction (SPEC §6);
            ``None`` compacts with ``llm``.
        ranker: BM25 index of ``tools``, for relevance-ranked offering (SPEC R13.1).
    """

    llm: BaseChatModel
    tools: dict[str, BaseTool]
    abilities: ModelAbilities
    settings: AgentSettings
    use_native_tools: bool = True
    interrupts: InterruptQueue = field(default_factory=InMemoryInterruptQueue)
    compaction_llm: BaseChatModel | None = None
    ranker: ToolRanker = field(default_factory=lambda: ToolRanker([]), repr=False)
    _enum_values: list[str] = field(default_factory=list, repr=False)
    _bound: dict[tuple[Any, ...], Runnable] = field(default_factory=dict, repr=False)
    _json_prompts: dict[tuple[Any, ...], str] = field(default_factory=dict, repr=False)
    _action_formats: dict[tuple[Any, ...], dict[str, Any] | None] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        llm: BaseChatModel,
        tools: Sequence[BaseTool],
        abilities: ModelAbilities,
        settings: AgentSettings,
        use_native_tools: bool,
        interrupt_queue: InterruptQueue | None = None,
        *,
        compaction_llm: BaseChatModel | None = None,
    ) -> Engine:
        """Index the tools by name. ``interrupt_queue`` ``None`` means a new
        :class:`~reactgraph.interrupts.InMemoryInterruptQueue`; ``compaction_llm`` ``None``
        means context compaction uses ``llm``.

        Raises:
            TypeError: An item of ``tools`` is not a LangChain ``BaseTool``.
            ValueError: Two tools share a name.
        """
        registry: dict[str, BaseTool] = {}
        for tool in tools:
            if not isinstance(tool, BaseTool):
                raise TypeError(f"tools must be LangChain BaseTool objects, got {type(tool).__name__}")
            if tool.name in registry:
                raise ValueError(f"two tools are named {tool.name!r}")
            registry[tool.name] = tool
        interrupts = interrupt_queue if interrupt_queue is not None else InMemoryInterruptQueue()
        return cls(llm, registry, abilities, settings, use_native_tools, interrupts=interrupts, compaction_llm=compaction_llm,
                   ranker=ToolRanker(list(registry.values())), _enum_values=enum_values(list(registry.values())))

    @property
    def mode(self) -> Literal["native", "json"]:
        """``native`` iff native tools are allowed and the model can call tools (SPEC R2.2)."""
        return "native" if self.use_native_tools and self.abilities.tool_call else "json"

    @property
    def compaction_model(self) -> BaseChatModel:
        """The model that compacts the context (SPEC §6): ``compaction_llm``, else ``llm``."""
        return self.compaction_llm if self.compaction_llm is not None else self.llm

    @property
    def base_system_prompt(self) -> str:
        """The domain instructions at the top of every loop system prompt."""
        return self.settings.system_prompt or DEFAULT_SYSTEM_PROMPT

    def tools_for(self, selected: Sequence[str] | None, query: str = "") -> list[BaseTool]:
        """The tools offered this turn, most relevant to ``query`` first (SPEC R5.2, R13.1):
        the selected names that exist, in their order (selection ranks them), or every
        tool ranked by :attr:`ranker`."""
        if selected is None:
            return [self.tools[name] for name, _ in self.ranker.rank(query)]
        return [self.tools[name] for name in selected if name in self.tools]

    def named_values(self, query: str) -> tuple[str, ...]:
        """The argument enum values ``query`` names, in its order (SPEC R13.1)."""
        return tuple(named_values(query, self._enum_values))

    def native_model(self, tools: Sequence[BaseTool], named: Sequence[str] = ()) -> Runnable:
        """The loop model with ``tools`` bound in the given order, enum values the question
        names first, kept out of the token stream (SPEC R3.3, R13.1). Cached per tool set
        and named values; no tools means the plain model (a stalled loop's last call)."""
        key = (tuple(tool.name for tool in tools), tuple(named))
        if key not in self._bound:
            model: Runnable = self.llm
            if tools:
                specs = [
                    {"type": "function", "function": {"name": tool.name, "description": tool.description or "",
                                                      "parameters": prefer_named_values(tool_args_schema(tool), named)}}
                    for tool in tools
                ]
                model = self.llm.bind_tools(specs)
            self._bound[key] = model.with_config(tags=[TAG_NOSTREAM], run_name=RUN_NAME_NATIVE)
        return self._bound[key]

    @property
    def synthesis_model(self) -> Runnable:
        """The model for answer synthesis, named for traces (it streams into the answer)."""
        return self.llm.with_config(run_name=RUN_NAME_SYNTHESIS)

    def json_system_prompt(self, tools: Sequence[BaseTool], named: Sequence[str] = ()) -> str:
        """The JSON-mode system prompt for ``tools`` in the given order (SPEC R2.3, R13.1),
        cached per tool set and named values."""
        key = (tuple(tool.name for tool in tools), tuple(named))
        if key not in self._json_prompts:
            self._json_prompts[key] = json_mode_system_prompt(self.base_system_prompt, tools, named)
        return self._json_prompts[key]

    def action_format(self, tools: Sequence[BaseTool], named: Sequence[str] = ()) -> dict[str, Any] | None:
        """The schema-constrained ``response_format`` for a JSON-mode call offering ``tools``
        (issue 10), in the request shape of ``abilities.schema_output``; ``None`` when the
        model cannot take a schema. Branches in the order of ``tools``, enum values the
        question names first (SPEC R13.1). Cached per tool set and named values.
        See :func:`~reactgraph.action_schema.action_response_format`."""
        key = (tuple(tool.name for tool in tools), tuple(named))
        if key not in self._action_formats:
            self._action_formats[key] = action_response_format(
                self.abilities.schema_output, tools, max_output_tokens=self.abilities.max_output_tokens, named=named
            )
        return self._action_formats[key]

    def json_model(self, *, json_format: bool, response_format: dict[str, Any] | None = None) -> Runnable:
        """The loop model for JSON mode, kept out of the token stream (SPEC R3.3).

        Args:
            json_format: Bind ``response_format={"type": "json_object"}``.
            response_format: A schema-constrained format (:meth:`action_format`) bound
                instead; wins over ``json_format``.
        """
        model: Runnable = self.llm
        if response_format is not None:
            model = self.llm.bind(response_format=response_format)
        elif json_format:
            model = self.llm.bind(response_format={"type": "json_object"})
        return model.with_config(tags=[TAG_NOSTREAM], run_name=RUN_NAME_JSON)
