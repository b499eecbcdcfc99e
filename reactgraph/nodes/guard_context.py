"""``guard_context``: the context guard at the top of every iteration (SPEC §6).

Placeholder until the ContextGuard issue lands: it passes state through. It already sits
where the guard belongs, between the loop's routing and each model call, so that issue
only replaces this body (truncate, count, compact) and emits the ``compact`` event.
"""

from __future__ import annotations

from typing import Any

from reactgraph.engine import Engine
from reactgraph.state import AgentState


class GuardContext:
    """Pass-through for now (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState) -> dict[str, Any]:
        return {}
