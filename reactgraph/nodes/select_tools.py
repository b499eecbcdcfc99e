"""``select_tools``: pre-loop tool selection for large hubs (SPEC §5).

Placeholder until the structured-output issue lands: it passes state through, so every
registered tool is offered (``selected_tools`` stays ``None``, set by ``start_turn``).
That issue replaces the body with one ``structured_llm_call`` when more than
``TOOL_SELECTION_THRESHOLD`` tools are registered, writing the chosen names to
``selected_tools``; the loop nodes and ``execute_tools`` already read that field.
"""

from __future__ import annotations

from typing import Any

from reactgraph.engine import Engine
from reactgraph.state import AgentState


class SelectTools:
    """Pass-through for now (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState) -> dict[str, Any]:
        return {}
