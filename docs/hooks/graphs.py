"""mkdocs hook: draws the compiled graphs into the pages (issue 19 point 4).

A page line ``<!-- graph: NAME -->`` becomes a ``mermaid`` block holding
``get_graph().draw_mermaid()`` of the graph NAME, compiled at build time with a scripted model
(the wiring does not depend on the model), so a diagram can never drift from the code. NAME is
one of :data:`GRAPHS`; an unknown name fails the build. Material renders the block through its
mermaid support (``pymdownx.superfences`` custom fence in mkdocs.yml).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from langchain_core.tools import tool
from mkdocs.exceptions import PluginError

from reactgraph import ModelAbilities, create_react_graph
from reactgraph.dag import create_dag_graph
from reactgraph.testing import ScriptedChatModel

MARKER = re.compile(r"^<!--[ \t]*graph:[ \t]*(?P<name>[\w-]+)[ \t]*-->[ \t]*$", re.MULTILINE)


@tool
def get_equipment_status(equipment_id: str) -> str:
    """Return the status of one machine (a stand-in: drawing a graph runs no tool)."""
    return f"{equipment_id}: normal"


GRAPHS: dict[str, Callable[[], Any]] = {
    "react": lambda: create_react_graph(ScriptedChatModel(), [get_equipment_status],
                                        abilities=ModelAbilities(tool_call=True)),
    "dag": lambda: create_dag_graph(ScriptedChatModel(), [get_equipment_status]),
}
"""The graphs a page can draw, by marker name: the ReAct graph (SPEC §1) and DAG mode (SPEC §9)."""


@cache
def mermaid(name: str) -> str:
    """The mermaid text of the compiled graph ``name``; raises ``PluginError`` for an unknown name."""
    if name not in GRAPHS:
        raise PluginError(f"<!-- graph: {name} -->: no such graph (known: {', '.join(GRAPHS)})")
    return GRAPHS[name]().get_graph().draw_mermaid()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: replace each graph marker of a page's markdown with its mermaid block."""
    return MARKER.sub(lambda match: f"```mermaid\n{mermaid(match['name']).strip()}\n```", markdown)
