"""How a run ended and what it answered: the one rule for a run's finish reason and for the
answer shown to the user, read by every place that reports a run's end (the agents' results,
the ``done`` event, the server's thread view, the observer's span, metrics and log line).

- The finish reason (:data:`FinishReason`, every value any run can end with): a run that
  paused on a tool call's approval is ``waiting``; a run stopped from outside (its task
  cancelled, its consumer gone) is ``cancelled``; a run whose checkpointer or store failed is
  ``storage_error``; a run whose graph raised otherwise ends with its agent's failure reason
  (``model_error`` for the ReAct agent, ``error`` for the DAG agent); a run that finished
  ends with the reason its graph recorded (:data:`LoopFinishReason`,
  :data:`DAGFinishReason`).
- The answer shown: the streamed synthesis when there is one, else the answer before it
  (the loop's final answer, the DAG's best answer); an earlier turn is remembered by it too.
"""

from __future__ import annotations

from typing import Literal, get_args

from reactgraph.persistence.checkpointing import STORAGE_ERROR, is_storage_failure
from reactgraph.core.limits import LimitReason
from reactgraph.engine.state import LoopFinishReason

DAGFinishReason = Literal["achieved", "not_achieved", "max_rounds", "plan_failed", LimitReason]
"""How a DAG run stopped re-planning: the analyzer found the goal achieved, or not (with the
confidence under its threshold and no round left), the round cap, a plan that could not be
made, a run-wide usage limit (:mod:`reactgraph.dag.budget`)."""

RunEnd = Literal["waiting", "cancelled", "model_error", "storage_error", "error"]
"""How a run ended that its graph did not finish: paused on an approval, stopped from outside,
a model that failed (the ReAct agent), a checkpointer or store that failed, any failure of a
DAG run."""

FinishReason = Literal[LoopFinishReason, DAGFinishReason, RunEnd]
"""Every ``finish_reason`` a run can end with (:func:`finish_reason` decides it)."""

FINISH_REASONS: frozenset[str] = frozenset(get_args(FinishReason))
"""The values of :data:`FinishReason`."""

UNRECORDED = "unknown"
"""The label metrics and spans give a run whose graph ended without recording a finish
reason (a run stopped by an ``interrupt_before``/``interrupt_after`` breakpoint)."""


def cancelled(error: BaseException | None) -> bool:
    """Whether ``error`` stopped a run or a call from outside rather than failed it: a task
    cancelled (``CancelledError``, asyncio's or ``concurrent.futures``'), a generator closed
    (its consumer went away), Ctrl-C."""
    return isinstance(error, (GeneratorExit, KeyboardInterrupt)) or type(error).__name__ == "CancelledError"


def finish_reason(recorded: str | None, *, error: BaseException | None = None, waiting: bool = False,
                  failure_reason: str = "model_error") -> FinishReason | None:
    """The finish reason of a run (the rule of this module's docstring).

    Args:
        recorded: The ``finish_reason`` the graph's last state holds (``None`` when it holds none).
        error: What stopped the run, if anything did (a graph failure, a cancellation).
        waiting: Whether the run paused on a tool call waiting for a decision.
        failure_reason: The agent's reason for a failed run (``model_error``, ``error``).

    Returns:
        ``waiting``, ``cancelled``, ``storage_error``, ``failure_reason``, else ``recorded``
        (``None`` when the graph recorded none).
    """
    if waiting:
        return "waiting"
    if error is not None:
        if cancelled(error):
            return "cancelled"
        return STORAGE_ERROR if is_storage_failure(error) else failure_reason  # type: ignore[return-value]
    return recorded  # type: ignore[return-value]


def is_failure(finish: str | None, failure_reason: str) -> bool:
    """Whether a run with this ``finish`` reason failed (its agent's ``failure_reason`` or
    ``storage_error``): such a run gets an ``error`` event and an errored span."""
    return finish in (failure_reason, STORAGE_ERROR)


def answer_shown(synthesis: str | None, answer: str | None) -> str:
    """The answer a run shows: its ``synthesis`` when one was streamed (even an empty one),
    else ``answer``, the answer before synthesis (``""`` for none)."""
    return synthesis if synthesis is not None else (answer or "")
