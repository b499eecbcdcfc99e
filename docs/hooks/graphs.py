"""mkdocs hook: draws the compiled graphs into the pages (point 4).

A page line ``<!-- graph: NAME -->`` becomes a ``mermaid`` block holding
``get_graph().draw_mermaid()`` of the graph NAME, compiled at build time with a scripted model
(the wiring does not depend on the model), so a diagram can never drift from the code. The
ReAct graph gets enough stand-in tools for ``select_tools`` to be wired, and edges are drawn
curved, so a node's edge to itself is a loop. NAME is
one of :data:`GRAPHS`; an unknown name fails the build. Material renders the block through its
mermaid support (``pymdownx.superfences`` custom fence in mkdocs.yml).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from langchain_core.runnables.graph import CurveStyle
from langchain_core.tools import StructuredTool, tool
from mkdocs.exceptions import PluginError

from reactgraph import ModelAbilities, create_react_graph
from reactgraph.core.config import TOOL_SELECTION_THRESHOLD
from reactgraph.dag import create_dag_graph
from reactgraph.testing import ScriptedChatModel

MARKER = re.compile(r"^<!--[ \t]*graph:[ \t]*(?P<name>[\w-]+)[ \t]*-->[ \t]*$", re.MULTILINE)


@tool
def get_equipment_status(equipment_id: str) -> str:
    """Return the status of one machine (a stand-in: drawing a graph runs no tool)."""
    return f"{equipment_id}: normal"


def stand_in_tools() -> list[Any]:
    """Enough stand-in tools for the ReAct graph to wire ``select_tools`` (more than
    ``tool_selection_threshold``), so the drawing shows it with its edges."""
    def make(index: int) -> Any:
        def read_sensor(sensor: str) -> str:
            return f"sensor {index}/{sensor}: ok"

        return StructuredTool.from_function(read_sensor, name=f"read_sensor_{index}",
                                            description=f"Read sensor bank {index} (a stand-in).")

    return [get_equipment_status, *(make(index) for index in range(TOOL_SELECTION_THRESHOLD))]


GRAPHS: dict[str, Callable[[], Any]] = {
    "react": lambda: create_react_graph(ScriptedChatModel(), stand_in_tools(),
                                        abilities=ModelAbilities(tool_call=True)),
    "dag": lambda: create_dag_graph(ScriptedChatModel(), [get_equipment_status]),
}
"""The graphs a page can draw, by marker name: the ReAct graph (SPEC §1) and DAG mode (SPEC §9)."""


@cache
def mermaid(name: str) -> str:
    """The mermaid text of the compiled graph ``name``; raises ``PluginError`` for an unknown name."""
    if name not in GRAPHS:
        raise PluginError(f"<!-- graph: {name} -->: no such graph (known: {', '.join(GRAPHS)})")
    # Curved edges: a model node's edge to itself (its next step) draws as a loop, not a triangle.
    return GRAPHS[name]().get_graph().draw_mermaid(curve_style=CurveStyle.BASIS)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: replace each graph marker of a page's markdown with its mermaid block."""
    return MARKER.sub(lambda match: f"```mermaid\n{mermaid(match['name']).strip()}\n```", markdown)
