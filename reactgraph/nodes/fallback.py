"""``fallback``: the end of a loop that reached its iteration cap (SPEC R2.6).

The cap is ``max_iterations``, or lower when the caller's ``recursion_limit`` leaves too few
graph steps for another iteration (LangGraph's ``RemainingSteps``): the user never sees a
``GraphRecursionError``. The answer is built from the recorded steps: which tools were
called and whether each succeeded, and is added as the last assistant message. The same
summary serves a run whose model kept failing (SPEC R2.7).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from reactgraph.engine.bindings import Engine
from reactgraph.core.language import phrase, turn_language
from reactgraph.core.limits import describe_limit
from reactgraph.engine.state import AgentState
from reactgraph.answer.synthesis import summarize_steps

STEPS_TO_FINISH = 9
"""Graph steps one more loop iteration may take before the run ends, counted from the
model node that checks: its model call, the tools, the model node sending the run to the
guard, the guard, the model node sending it to the fallback, the fallback, synthesis and
the structured response (eight), plus one to spare. With fewer left
(``remaining_steps``), the loop stops at the cap."""


def iteration_cap_reached(state: AgentState, max_iterations: int) -> bool:
    """Whether the loop must stop (SPEC R2.6): ``max_iterations`` model calls made, or the
    run's ``recursion_limit`` too close for another iteration (``remaining_steps``)."""
    if state.get("iteration", 0) >= max_iterations:
        return True
    remaining = state.get("remaining_steps")
    return remaining is not None and remaining < STEPS_TO_FINISH


class Fallback:
    """Write the step summary as the answer when the iteration cap or a usage limit
    (R13.3, :mod:`reactgraph.core.limits`) is reached, as the last assistant message too
    (every way the loop ends leaves one). A limit's figures go to ``limit``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState) -> dict[str, Any]:
        reached = None if iteration_cap_reached(state, self.engine.settings.max_iterations) \
            else self.engine.limit_reached(state)
        language = turn_language(state)
        if reached is not None:
            reason = describe_limit(reached, language)
        else:
            reason = phrase("stopped", language, iterations=state.get("iteration", 0))
        answer = summarize_steps(state.get("steps", []), reason, language)
        return {
            "messages": [AIMessage(answer, name=self.engine.message_name)],
            "answer": answer,
            "finish_reason": reached["reason"] if reached else "max_iterations",
            "limit": reached,
            "pending_final": None,
        }
