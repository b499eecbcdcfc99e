"""The kinds of model call a run makes and the graph node that makes each: read by the
observer (the ``phase`` of spans and metrics) and by the scripted test model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.constants import TAG_NOSTREAM

from reactgraph.graph.names import GUARD_CONTEXT, LLM_CALL_JSON, LLM_CALL_NATIVE, SELECT_TOOLS, SYNTHESIZE


CALL_KINDS = ("tool_loop", "selection", "synthesis", "structured", "compaction")
"""The kinds of model call a run makes: a tool-loop iteration (SPEC §2), tool selection
(§5), answer synthesis (§3), a structured call (``structured_llm_call`` outside selection:
``response_format``, the DAG planner and analyzer, §4, §9) and context compaction (§6)."""


_NODE_KINDS = {
    LLM_CALL_NATIVE: "tool_loop",
    LLM_CALL_JSON: "tool_loop",
    SELECT_TOOLS: "selection",
    GUARD_CONTEXT: "compaction",
    SYNTHESIZE: "synthesis",
}
"""The graph nodes that make each kind of call (ReAct and DAG graphs; the DAG's steps run
the ReAct nodes). Other nodes' calls (``structured_response``, ``plan``, ``analyze``) are
structured calls."""


def call_kind_of(metadata: Mapping[str, Any] | None, tags: Sequence[str] | None) -> str:
    """The kind of a model call (one of :data:`CALL_KINDS`) from its run's ``metadata``
    and ``tags`` as LangChain callbacks get them (:func:`call_kind`; the ``phase`` of
    :mod:`reactgraph.observability`'s spans and metrics)."""
    node = (metadata or {}).get("langgraph_node")
    if node is not None:
        return _NODE_KINDS.get(node, "structured")
    return "structured" if TAG_NOSTREAM in (tags or ()) else "synthesis"
