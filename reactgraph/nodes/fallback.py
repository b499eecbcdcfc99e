"""``fallback``: the end of a loop that reached ``max_iterations`` (SPEC R2.6).

The answer is built from the recorded steps: which tools were called and whether each
succeeded. The same summary serves a run whose model kept failing (SPEC R2.7).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reactgraph.engine import Engine
from reactgraph.jsonparse import safe_json
from reactgraph.state import AgentState


def summarize_steps(steps: Sequence[dict[str, Any]], reason: str) -> str:
    """A plain-text fallback answer.

    Args:
        steps: Step records (``AgentState.steps``).
        reason: First line, saying why the run ended without a final answer.

    Returns:
        ``reason`` followed by one line per tool call: ``N. tool(args) — succeeded`` or
        ``— failed: <error>``; or a note that no tool was called.
    """
    if not steps:
        return f"{reason}\nNo tools were called."
    lines = [reason, "Steps taken:"]
    for number, step in enumerate(steps, start=1):
        outcome = "succeeded" if not step.get("error") else f"failed: {step['error']}"
        lines.append(f"{number}. {step.get('tool_name')}({safe_json(step.get('tool_args'))}) — {outcome}")
    return "\n".join(lines)


class Fallback:
    """Write the step summary as the answer when the iteration cap is reached."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState) -> dict[str, Any]:
        reason = f"I stopped after {self.engine.settings.max_iterations} iterations without reaching a final answer."
        return {
            "answer": summarize_steps(state.get("steps", []), reason),
            "finish_reason": "max_iterations",
            "pending_final": None,
            "pending_tool_calls": [],
        }
