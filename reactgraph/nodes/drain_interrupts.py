"""``drain_interrupts``: where follow-up messages join a running loop (SPEC §7).

Placeholder until the interrupt-queue issue lands: it passes state through. Its place in
the graph already follows R7.2: in JSON mode it runs right after each assistant message,
before the final answer is accepted; in native mode only after every tool result of the
assistant message is in. That issue replaces this body with the drain (one pinned
``[USER INTERRUPT]`` message, clearing ``pending_final``/``answer``/``finish_reason``
when a final answer was pending, R7.4) and the ``inject`` event.
"""

from __future__ import annotations

from typing import Any

from reactgraph.engine import Engine
from reactgraph.state import AgentState


class DrainInterrupts:
    """Pass-through for now (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState) -> dict[str, Any]:
        return {}
