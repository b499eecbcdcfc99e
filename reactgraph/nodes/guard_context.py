"""``guard_context``: the context guard (SPEC §6).

Before each loop model call the model node asks :meth:`GuardContext.fits` whether the
request is within the token budget with no over-long message (counting only the messages
added since the last check); only when it is not does the run pass through this
node, which runs :class:`~reactgraph.window.ContextGuard` on the conversation, counting the
system prompt and the tool schemas the call will add (the system prompt is not in state:
the model nodes prepend it), and goes back to the model node. What the guard changes is
written back to state, so later iterations and checkpoints carry the compacted history:

- messages cut to ``max_message_chars`` replace the originals by id;
- a compaction replaces the whole history (``RemoveMessage(REMOVE_ALL_MESSAGES)`` and the
  new list), emits ``compact`` ``{original_messages, kept_messages}`` (SPEC §8) and adds
  the compaction call's tokens to ``usage``.

When the iteration cap is reached the next node is the fallback answer, which calls no
model, so the guard passes.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import RemoveMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from reactgraph.engine.dualmode import run_blocking
from reactgraph.engine.bindings import RUN_NAME_COMPACTION, Engine
from reactgraph.engine.pinning import pinned_ids
from reactgraph.events import Compacted, emit
from reactgraph.engine.fallbacks import ServingNode
from reactgraph.engine.history import thread_of
from reactgraph.nodes.fallback import iteration_cap_reached
from reactgraph.engine.state import AgentState, selection_in_force
from reactgraph.window import ContextGuard, TokenCounter, context_budget, model_name_of


def _tally_key(messages: list[Any], config: RunnableConfig) -> tuple[Any, str | None]:
    """What names a conversation for the guard's running token total: the run's thread and
    the id of the conversation's first message."""
    return thread_of(config), messages[0].id


class GuardContext:
    """The ``guard_context`` node (see the module docstring).

    Args:
        engine: The shared engine: its compaction model, abilities and settings decide the
            guard (budget from :func:`~reactgraph.window.context_budget`, tokens counted
            with the loop model's encoding).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        settings = engine.settings
        self.guard = ContextGuard(
            engine.compaction_model,
            budget=context_budget(engine.abilities, settings),
            counter=TokenCounter(model_name_of(engine.llm)),
            max_message_chars=settings.max_message_chars,
            hint=settings.compaction_hint,
            keep_recent_messages=settings.keep_recent_messages,
            run_name=RUN_NAME_COMPACTION,
        )
        self._overheads: dict[tuple[tuple[str, ...] | None, bool], int] = {}

    def overhead_tokens(self, selected: list[str] | None, *, exact: bool = True) -> int:
        """Tokens the loop call adds around the messages: its system prompt, plus the tool
        schemas in native mode (JSON mode lists the tools in the system prompt). Cached
        per selection (``None``: every tool). ``exact`` false gives a bound that needs no
        tokenizer: one token per UTF-8 byte at most (:meth:`TokenCounter.upper_bound`)."""
        key = (None if selected is None else tuple(selected), exact)
        if key not in self._overheads:
            tools = self.engine.tools_for(selected)
            if self.engine.mode == "native":
                system = self.engine.base_system_prompt
                schemas = [json.dumps(convert_to_openai_tool(tool), ensure_ascii=False) for tool in tools]
            else:
                system, schemas = self.engine.json_system_prompt(tools), []
            counter = self.guard.counter
            if exact:
                tokens = counter.count_message(SystemMessage(system)) + sum(map(counter.count_text, schemas))
            else:
                tokens = counter.upper_bound(SystemMessage(system)) + sum(
                    len(text.encode("utf-8", "surrogatepass")) for text in schemas)
            self._overheads[key] = tokens
        return self._overheads[key]

    async def _load_counter(self) -> None:
        if not self.guard.counter.loaded:  # the first load may try a download: off the event loop
            await run_blocking(self.guard.counter.load)

    async def fits(self, state: AgentState, config: RunnableConfig) -> bool:
        """Whether the next loop call's request needs no guarding: every message within
        ``max_message_chars`` and the tokens within the budget (SPEC R6.1). Counts only the
        messages added since the thread's last check (:meth:`ContextGuard.fits`).

        Args:
            state: The graph state before the model call.
            config: The run's config (its ``thread_id`` names the conversation).

        Returns:
            True when this node would change nothing, so the model node calls the model
            directly; False when the run must pass through this node first.
        """
        messages = state.get("messages") or []
        key = _tally_key(messages, config) if messages else None
        selected = selection_in_force(state)
        if not self.guard.counter.loaded and self.guard.fits(
                messages, overhead_tokens=self.overhead_tokens(selected, exact=False), key=key, exact=False):
            return True  # far below the budget: the tokenizer is not loaded until a run comes near it
        await self._load_counter()
        return self.guard.fits(messages, overhead_tokens=self.overhead_tokens(selected), key=key)

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        if iteration_cap_reached(state, self.engine.settings.max_iterations):
            return {}
        await self._load_counter()
        messages = list(state.get("messages", []))
        if messages:  # what the guard changes keeps message ids: the running total is void
            self.guard.forget(_tally_key(messages, config))
        result = await self.guard.aguard(
            messages, overhead_tokens=self.overhead_tokens(state.get("selected_tools")), config=config,
            pinned=pinned_ids(state),
        )
        if result.messages:
            self.guard.accept(result.messages, _tally_key(result.messages, config))
        update: dict[str, Any] = {}
        if result.usage["model_calls"]:
            update["usage"] = result.usage
        if result.compacted:
            emit(Compacted(original_messages=len(messages), kept_messages=len(result.messages)))
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *result.messages]
        elif result.truncated:
            cut = set(result.truncated)
            update["messages"] = [message for message in result.messages if message.id in cut]
        return update


class ServingGuard(ServingNode):
    """The ``guard_context`` node of an agent with fallback models: the guard of
    the model serving the turn (:class:`~reactgraph.engine.fallbacks.ServingNode`), so each model's
    own window, tokenizer and compaction model decide (a small fallback model gets its
    history compacted to fit it). Same interface as :class:`GuardContext`."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, GuardContext)

    async def fits(self, state: AgentState, config: RunnableConfig) -> bool:
        """:meth:`GuardContext.fits` of the serving model's guard."""
        return await self.serving(state).fits(state, config)
