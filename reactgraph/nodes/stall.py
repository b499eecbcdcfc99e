"""Stall detection of the tool loop (SPEC R13.1): whether the loop is stuck, judged by
progress (:func:`detect_stall`), and the check before each loop call (:func:`stall_check`,
the ``stall`` event). ``llm_call_native`` and ``llm_call_json``
(:mod:`reactgraph.nodes.llm_call`) apply it; each keeps the turn's step records folded into
:class:`StepOutcomes` as they grow (:func:`step_outcomes_fold`), so a check reads each record
once rather than the whole turn before every model call."""

from __future__ import annotations

from typing import Any

from reactgraph.answer.synthesis import REPEAT_REFUSAL
from reactgraph.engine.bindings import Engine
from reactgraph.engine.history import HistoryFold
from reactgraph.engine.state import AgentState, StepRecord
from reactgraph.events import Stalled, emit
from reactgraph.protocol.jsonparse import safe_json


_CALLED, _CHANGED, _SUCCEEDED = 1, 2, 4  # StepOutcomes' flags of a model call


class StepOutcomes:
    """What :func:`detect_stall` reads of a turn's step records, one record at a time (a
    :class:`~reactgraph.engine.history.HistoryFold` step, :meth:`add`): the model calls that
    asked for a tool call (:attr:`called`), those that changed something (:attr:`changed`) and
    those that brought a new successful observation (:attr:`succeeded`), and each call's last
    outcome. Folded in as the steps grow, a turn's check reads each record once instead of
    every record (and its arguments as JSON) before every model call. Kept small (one flags
    entry per model call, an outcome that shares the record's text): a run holds it to its end."""

    __slots__ = ("last_outcome", "flags")

    def __init__(self) -> None:
        self.last_outcome: dict[str, str | tuple[str]] = {}  # the error as a 1-tuple, else the observation
        self.flags: dict[int, int] = {}

    def _having(self, flag: int) -> set[int]:
        return {asked for asked, flags in self.flags.items() if flags & flag}

    @property
    def called(self) -> set[int]:
        """The model calls (their iterations) that asked for a tool call."""
        return self._having(_CALLED)

    @property
    def changed(self) -> set[int]:
        """The model calls with a call new this turn or with another outcome than last time."""
        return self._having(_CHANGED)

    @property
    def succeeded(self) -> set[int]:
        """The model calls that brought a new successful observation."""
        return self._having(_SUCCEEDED)

    @classmethod
    def of(cls, steps: list[StepRecord]) -> StepOutcomes:
        """The outcomes of ``steps``, read whole."""
        facts = cls()
        for step in steps:
            facts.add(step)
        return facts

    def add(self, step: StepRecord) -> None:
        """Fold in the next step record (records come in the order they were recorded)."""
        asked = int(step.get("iteration") or 0)
        flags = self.flags.get(asked, 0) | _CALLED
        if step.get("refused") != REPEAT_REFUSAL:
            key = f"{step.get('tool_name')}\x00{safe_json(step.get('tool_args'))}"
            error = str(step.get("error") or "")
            outcome = (error,) if error else ("" if step.get("error") else str(step.get("observation") or ""))
            if self.last_outcome.get(key) != outcome:
                flags |= _CHANGED | (0 if step.get("error") else _SUCCEEDED)
            self.last_outcome[key] = outcome
        self.flags[asked] = flags


def detect_stall(
    steps: list[StepRecord], iteration: int, enabled: bool = True, progress_iteration: int = 0,
    repeats: int = 1, failures: int = 2, outcomes: StepOutcomes | None = None,
) -> str | None:
    """Whether the tool loop is stuck, judged by progress (SPEC R13.1).

    A model call *changes something* when one of its tool calls is new this turn (another
    tool, or new arguments: an attempt, even one that fails) or repeats a call with another
    outcome than the last time (a job's status that moved on). It *changes nothing* when every
    call it made repeats one with the same outcome (the same observation, the same error) or
    was refused as a repeat. Model calls that made no tool call (a reformat request) are not
    counted either way for ``repeats``.

    Args:
        steps: The turn's step records (each with the ``iteration`` that asked for it), in
            the order they were recorded (iterations never decrease).
        iteration: Model calls made so far in this turn.
        enabled: ``AgentSettings.stall_detection``.
        progress_iteration: The model call after which a follow-up was taken in (it counts
            as progress); 0 for none.
        repeats: ``AgentSettings.stall_repeats``: model calls in a row that change nothing.
        failures: ``AgentSettings.stall_failures``: model calls in a row without a new
            successful observation.
        outcomes: ``steps`` already folded (:class:`StepOutcomes`); ``None`` reads them here.

    Returns:
        ``"repeated_call"`` after ``repeats`` model calls in a row that changed nothing;
        ``"no_progress"`` after ``failures`` in a row without a new successful observation;
        ``None`` while the loop makes progress (or detection is off).
    """
    if not enabled or iteration < 1:
        return None
    facts = outcomes if outcomes is not None else StepOutcomes.of(steps)
    unchanged_run = no_success_run = 0
    counting_unchanged = counting_failures = True
    for asked in range(iteration, progress_iteration, -1):
        flags = facts.flags.get(asked, 0)
        if counting_unchanged and flags & _CALLED:
            if flags & _CHANGED:
                counting_unchanged = False
            else:
                unchanged_run += 1
        if counting_failures:
            if flags & _SUCCEEDED:
                counting_failures = False
            else:
                no_success_run += 1
        if not (counting_unchanged or counting_failures):
            break
    if unchanged_run >= repeats:
        return "repeated_call"
    return "no_progress" if no_success_run >= failures else None


def brought_observation(steps: list[StepRecord], iteration: int) -> bool:
    """Whether a tool call asked for by model call ``iteration`` succeeded (read from the end
    of the turn's step records, which are in iteration order)."""
    for step in reversed(steps):
        asked = int(step.get("iteration") or 0)
        if asked < iteration:
            return False
        if asked == iteration and not step.get("error"):
            return True
    return False


_KEPT = 64
"""Step lists a loop node keeps its :class:`StepOutcomes` for (the most recently checked): a
run's turn that comes back after others is read again from its first record."""


def step_outcomes_fold() -> HistoryFold[StepOutcomes, StepRecord]:
    """A loop node's fold of the turn's step records into :class:`StepOutcomes` (one
    accumulator per run's step list, as many as the engine's history folds keep)."""
    return HistoryFold(StepOutcomes, StepOutcomes.add, max_lists=_KEPT)


def stall_check(engine: Engine, state: AgentState, iteration: int,
                fold: HistoryFold[StepOutcomes, StepRecord] | None = None, thread: Any = None) -> str | None:
    """The stall reason for the call about to be made (emitting the ``stall`` event once
    per turn), or ``None``. ``fold``: the node's :func:`step_outcomes_fold` (of the run's
    ``thread``), so the turn's records are read once, not before every call."""
    settings = engine.settings
    if not settings.stall_detection:
        return None
    steps = state.get("steps", [])
    reason = detect_stall(steps, iteration - 1, settings.stall_detection,
                          state.get("progress_iteration", 0), settings.stall_repeats, settings.stall_failures,
                          outcomes=fold(steps, thread) if fold is not None and steps else None)
    if reason is not None:
        emit(Stalled(iteration=iteration, reason=reason))
    return reason
