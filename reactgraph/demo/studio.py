"""LangGraph Studio entry points (SPEC R10.2): graph factories for ``studio/langgraph.json``.

``langgraph dev`` (``langgraph-cli[inmem]``) calls a factory for every request that needs
the graph — drawing it, reading a thread's state, starting a run — with the request's
config. :func:`studio_graph` makes such a factory from a graph builder: it builds the graph
over the demo plant's tool hub and system prompt and the model from the environment
(``REACTGRAPH_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``; see
:mod:`reactgraph.models.env`) or, with nothing configured, the embedded model's server
(SmolLM2-135M, or the catalogue entry ``REACTGRAPH_LOCAL_MODEL`` names; :mod:`reactgraph.models.catalog`).

Each run's configuration comes from :class:`StudioContext`, declared as the graph's
``context_schema`` so Studio shows it as a form: model name, loop mode, ``max_iterations``
and tool selection on/off. A LangGraph server mirrors a run's context into
``config["configurable"]``, which is where the factory reads it.

The embedded server is one per process: started by the first run that needs it (not by
schema or state reads), stopped at interpreter exit. All blocking set-up (database seeding,
model clients, the server start) runs in a worker thread, off the server's event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.pregel import Pregel

from reactgraph.providers.abilities import ModelAbilities
from reactgraph.core.config import AgentSettings
from reactgraph.events import with_custom_events

STUDIO_MAX_ITERATIONS = 6
"""Default iteration cap of a Studio run (the demo's; the embedded model is slow)."""


@dataclass
class StudioContext:
    """The configuration form of a Studio run.

    Attributes:
        model: Model name at the configured OpenAI-compatible endpoint; empty keeps
            ``REACTGRAPH_MODEL``. Ignored by the embedded model (it serves one model).
        mode: ``auto`` (native tool calling when the model supports it, SPEC R2.2),
            ``native`` (assume it does) or ``json`` (the JSON-in-content protocol).
        max_iterations: Most loop model calls before the fallback answer (SPEC R2.6).
        tool_selection: Run the pre-loop tool selection over the 24-tool hub (SPEC §5).
    """

    model: str = ""
    mode: Literal["auto", "native", "json"] = "auto"
    max_iterations: int = STUDIO_MAX_ITERATIONS
    tool_selection: bool = True


def context_from_config(config: RunnableConfig | None) -> StudioContext:
    """Read a :class:`StudioContext` from ``config["configurable"]``; unknown keys are ignored.

    Raises:
        ValueError: ``mode`` is not ``auto``/``native``/``json``, or ``max_iterations`` is
            not a positive integer.
    """
    configurable = (config or {}).get("configurable") or {}
    fields = {f.name for f in dataclasses.fields(StudioContext)}
    context = StudioContext(**{key: value for key, value in configurable.items() if key in fields})
    if context.mode not in ("auto", "native", "json"):
        raise ValueError(f"mode must be auto, native or json, got {context.mode!r}")
    if isinstance(context.max_iterations, bool) or not isinstance(context.max_iterations, int) or context.max_iterations < 1:
        raise ValueError(f"max_iterations must be a positive integer, got {context.max_iterations!r}")
    context.tool_selection = bool(context.tool_selection)
    return context


class _EmbeddedModel:
    """The process's embedded model server, created on first use and started by the
    first run (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: Any = None
        self._llm: BaseChatModel | None = None

    def get(self, *, start: bool) -> tuple[BaseChatModel, ModelAbilities]:
        from reactgraph.models import DEFAULT_MAX_TOKENS, LocalModelServer, abilities_from_env

        overrides = abilities_from_env()
        with self._lock:
            if self._server is None:
                self._server = LocalModelServer(max_tokens=int(overrides.get("max_output_tokens", DEFAULT_MAX_TOKENS)))
                self._llm = self._server.chat_model()
            if start and not self._server.running:
                self._server.start()
        return self._llm, dataclasses.replace(self._server.abilities, **overrides)  # type: ignore[return-value]


_embedded = _EmbeddedModel()


@lru_cache(maxsize=8)
def _endpoint_model(name: str) -> BaseChatModel | None:
    from reactgraph.models import model_from_env

    return model_from_env(model=name or None)


def resolve_studio_model(name: str, *, start: bool) -> tuple[BaseChatModel, ModelAbilities | dict[str, Any] | None]:
    """The model of a Studio run and its known abilities (SPEC R10.4).

    Args:
        name: :attr:`StudioContext.model`; empty keeps the environment's model name.
        start: Start the embedded server if that is the model (a run is about to use it).

    Returns:
        ``(llm, abilities)``: for a configured endpoint, one cached ``ChatOpenAI`` per name
        and the ability overrides from the environment (a dict merged over the model's
        profile); else the embedded model and its measured abilities.

    Raises:
        ValueError: A malformed environment setting.
        LocalModelError: The embedded model is needed and cannot start.
    """
    from reactgraph.models import abilities_from_env

    llm = _endpoint_model(name)
    if llm is not None:
        return llm, abilities_from_env() or None
    return _embedded.get(start=start)


@lru_cache(maxsize=1)
def _demo_hub() -> tuple[BaseTool, ...]:
    from reactgraph.demo.factory import build_factory_hub

    return tuple(build_factory_hub())


GraphBuilder = Callable[..., Pregel]
"""A graph builder called as ``build(llm, tools, use_native_tools=..., abilities=...,
settings=...)``, like :func:`~reactgraph.create_react_graph`."""


def build_studio_graph(build: GraphBuilder, config: RunnableConfig | None) -> Pregel:
    """Build one graph for a Studio request (blocking; see :func:`studio_graph`).

    Args:
        build: The graph builder.
        config: The request's config; its ``configurable`` holds the run's
            :class:`StudioContext` fields and, from a LangGraph server,
            ``__is_for_execution__`` (false for schema and state reads, which never start
            the embedded model).

    Returns:
        The compiled graph with :class:`StudioContext` as its ``context_schema``, its runs
        streaming the engine's events on the custom stream
        (:func:`~reactgraph.events.with_custom_events`).
    """
    from reactgraph.demo.factory import DEMO_SYSTEM_PROMPT

    context = context_from_config(config)
    executing = bool(((config or {}).get("configurable") or {}).get("__is_for_execution__", True))
    llm, abilities = resolve_studio_model(context.model, start=executing)
    if context.mode == "native":
        abilities = (
            dataclasses.replace(abilities, tool_call=True) if isinstance(abilities, ModelAbilities)
            else {**(abilities or {}), "tool_call": True}
        )
    settings = AgentSettings(
        max_iterations=context.max_iterations, tool_selection=context.tool_selection, system_prompt=DEMO_SYSTEM_PROMPT
    )
    graph = build(llm, list(_demo_hub()), use_native_tools=context.mode != "json", abilities=abilities, settings=settings)
    # Studio shows the engine's events (plan, steps, analysis) on the custom stream.
    return with_custom_events(graph).copy(update={"context_schema": StudioContext})


def studio_graph(build: GraphBuilder) -> Callable[[RunnableConfig], Awaitable[Pregel]]:
    """A LangGraph server graph factory over ``build`` (one line per graph in
    ``studio/graphs.py``).

    Args:
        build: A graph builder such as :func:`~reactgraph.create_react_graph`.

    Returns:
        ``async (config) -> compiled graph``; the blocking work of
        :func:`build_studio_graph` runs in a worker thread.
    """

    async def factory(config: RunnableConfig) -> Pregel:
        return await asyncio.to_thread(build_studio_graph, build, config)

    factory.__name__ = f"studio_{getattr(build, '__name__', 'graph')}"
    return factory
