"""The answer phase on its own: the ``synthesize`` node as a one-node graph, for a loop that
ran without it (``ReActAgent.run`` then ``stream_answer``, SPEC R3.1), so the library's two
phases give the answer a streamed run gives, under the same safeguards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from reactgraph.engine.bindings import Engine
from reactgraph.events import EVENTS_KEY, AnswerDelta, AnswerReset, as_agent_event
from reactgraph.graph.names import SYNTHESIZE
from reactgraph.nodes.synthesize import Synthesize
from reactgraph.engine.state import AgentState


def answer_graph(engine: Engine) -> CompiledStateGraph:
    """A graph of the one node :class:`Synthesize`, for the answer phase of a loop that ran
    without it (``ReActAgent.run`` then ``stream_answer``, SPEC R3.1): the same answer the
    full graph gives, under the same safeguards.

    Args:
        engine: The agent's engine.

    Returns:
        The compiled graph; its input is an :class:`~reactgraph.engine.state.AgentState` of the
        finished loop (``query``, ``steps``, ``answer``, ``draft_answer``, ``finish_reason``,
        ``earlier_turns``).
    """
    builder = StateGraph(AgentState)
    builder.add_node(SYNTHESIZE, Synthesize(engine))
    builder.add_edge(START, SYNTHESIZE)
    builder.add_edge(SYNTHESIZE, END)
    return builder.compile()


async def answer_chunks(graph: CompiledStateGraph, engine: Engine, state: dict[str, Any],
                        config: RunnableConfig | None = None) -> AsyncIterator[str]:
    """The answer of a finished loop as text chunks, from :func:`answer_graph`.

    Args:
        graph: :func:`answer_graph` of ``engine``.
        engine: The agent's engine (its settings say whether an answer may be withdrawn).
        state: The finished loop's state (see :func:`answer_graph`).
        config: The run's config (its ``configurable`` gets ``synthesize``; an observer's,
            while observability is on).

    Yields:
        The answer's text as it is written. When an answer may be withdrawn after it streamed
        (``grounding="enforce"`` without ``grounding_check_first``), the chunks are held until
        the answer stands: a text stream cannot take back what it sent. Nothing when synthesis
        is off in the settings.
    """
    held = engine.settings.grounding == "enforce" and not engine.settings.grounding_check_first
    pending: list[str] = []
    config = dict(config or {})
    config["configurable"] = {**(config.get("configurable") or {}), SYNTHESIZE: True, EVENTS_KEY: True}
    async for chunk in graph.astream(state, config, stream_mode="custom"):
        event = as_agent_event(chunk)
        if isinstance(event, AnswerReset):
            pending.clear()
        elif isinstance(event, AnswerDelta):
            if held:
                pending.append(event.content)
            else:
                yield event.content
    for text in pending:
        yield text
