"""Usage limits of a whole DAG run (SPEC R13.3, R13.8).

In DAG mode ``AgentSettings.limits`` (:class:`~reactgraph.UsageLimits`) caps the run, not
each step: model calls, tool calls (all, and per tool), tokens and cost summed over the
planner, every step's loop, the analyzer (and the synthesis, which comes on top of a token
or cost limit, as in ReAct mode). The figures are the DAG state's ``usage`` (every node adds
its calls), ``tool_runs`` (tool calls that ran, by tool) and ``model_usage`` (usage by
model name, for a price table).

Where the run checks them: before each planner call, before each wave of steps, before
the analyzer. Reaching one ends the run gracefully: the steps not started are recorded as
not run, no more planning or analysis, and the synthesis writes the answer from the
results so far; ``finish_reason`` says which limit (``model_call_limit``,
``tool_call_limit``, ``token_limit``, ``cost_limit``) and ``limit`` holds the figures, as
:func:`reactgraph.core.limits.limit_reached` gives them.

Inside a wave, the steps share what is left: each step's loop runs with the remaining
model calls, tool calls, tokens and cost split evenly among the wave's steps (a wave sends
no more steps than there are model calls and tool calls left, so each gets at least one),
and the remaining calls of each tool in full (parallel steps may together pass a per-tool
cap by the calls they make at once). A step's loop that reaches its share ends as a loop
reaching its limit does (its answer is the step summary), and the run goes on while the
run-wide figures are below the caps. A planner or analyzer call is one structured call,
which may take up to five model calls (SPEC R4.5): the run can pass a model-call cap by
those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from reactgraph.core.limits import (
    LIMIT_REASONS,
    UsageLimits,
    describe_limit,
    figures,
    limit_reached,
    model_name_of,
    tool_calls_made,
)
from reactgraph.engine.state import RESET


def add_counts(left: dict[str, int] | None, right: Any) -> dict[str, int]:
    """Reducer of ``tool_runs``: counts summed by key; :data:`~reactgraph.engine.state.RESET` empties them."""
    if right == RESET:
        return {}
    merged = dict(left or {})
    for key, count in (right or {}).items():
        merged[key] = merged.get(key, 0) + int(count)
    return merged


def model_label(llm: Any) -> str:
    """The name a model's usage is kept under in ``model_usage`` (its ``model_name`` /
    ``model``, else its class name)."""
    return model_name_of(llm) or type(llm).__name__


def _view(state: Mapping[str, Any]) -> dict[str, Any]:
    """The run's figures in the shape :func:`~reactgraph.core.limits.limit_reached` reads."""
    records = [{"tool_name": name, "ran": True} for name, count in (state.get("tool_runs") or {}).items()
               for _ in range(int(count))]
    return {"usage": state.get("usage") or {}, "model_usage": state.get("model_usage") or {}, "steps": records}


def run_limit(state: Mapping[str, Any], limits: UsageLimits | None) -> dict[str, Any] | None:
    """The run-wide limit the DAG run has reached, or ``None`` (see the module docstring).

    Returns:
        ``{"reason", "limit", "max", "used", "tool", "figures"}`` as
        :func:`reactgraph.core.limits.limit_reached`.
    """
    if limits is None:
        return None
    return limit_reached(_view(state), limits, limits.prices)


def limit_update(reached: Mapping[str, Any], answer: str, language: str | None = "en") -> dict[str, Any]:
    """The state update that ends the run on ``reached``: its ``finish_reason`` and
    ``limit``, and the answer before synthesis: the sentence saying which limit (in
    ``language``, the goal's), then ``answer`` (the results so far)."""
    return {"finish_reason": reached["reason"], "limit": dict(reached),
            "answer": f"{describe_limit(reached, language)}\n\n{answer}".strip()}


def is_limit(finish_reason: Any) -> bool:
    """Whether a run's ``finish_reason`` says a usage limit ended it."""
    return finish_reason in LIMIT_REASONS


def wave_size(state: Mapping[str, Any], limits: UsageLimits | None, ready: int) -> int:
    """How many of ``ready`` steps the wave may send: at most one per model call and per
    tool call left."""
    if limits is None:
        return ready
    figures = run_limit_figures(state, limits)
    if limits.model_calls is not None:
        ready = min(ready, limits.model_calls - figures["model_calls"])
    if limits.tool_calls is not None:
        ready = min(ready, limits.tool_calls - figures["tool_calls"])
    return max(ready, 0)


def run_limit_figures(state: Mapping[str, Any], limits: UsageLimits) -> dict[str, Any]:
    """What the run spent so far (:func:`reactgraph.core.limits.figures` of the run)."""
    return figures(_view(state), limits.prices)


def step_shares(state: Mapping[str, Any], limits: UsageLimits | None, steps: int) -> list[dict[str, Any] | None]:
    """The limits each of a wave's ``steps`` loops runs with: what the run has left, split
    evenly (see the module docstring), as the :class:`~reactgraph.UsageLimits` fields to
    replace (plain data: a ``Send``'s payload is checkpointed; :func:`share_limits` reads
    it back); ``None`` each without run-wide limits."""
    if limits is None or steps <= 0:
        return [None] * steps
    spent = run_limit_figures(state, limits)
    made = {name: int(count) for name, count in (state.get("tool_runs") or {}).items()}

    def split_int(cap: int | None, used: int, index: int) -> int | None:
        if cap is None:
            return None
        left = max(cap - used, 0)
        return left // steps + (1 if index < left % steps else 0)

    def split_float(cap: float | None, used: float | None, index: int) -> float | None:
        return None if cap is None else max(cap - (used or 0), 0) / steps

    shares: list[dict[str, Any] | None] = []
    for index in range(steps):
        shares.append({
            "model_calls": _at_least_one(split_int(limits.model_calls, spent["model_calls"], index)),
            "tool_calls": _at_least_one(split_int(limits.tool_calls, spent["tool_calls"], index)),
            "tool_calls_per_tool": {name: max(cap - made.get(name, 0), 1) for name, cap in limits.tool_calls_per_tool.items()},
            "input_tokens": split_int(limits.input_tokens, spent["input_tokens"], index),
            "output_tokens": split_int(limits.output_tokens, spent["output_tokens"], index),
            "total_tokens": split_int(limits.total_tokens, spent["total_tokens"], index),
            "cost": split_float(limits.cost, spent["cost"], index),
        })
    return shares


def share_limits(limits: UsageLimits, share: Mapping[str, Any]) -> UsageLimits:
    """The :class:`~reactgraph.UsageLimits` of a step's loop: ``limits`` (its prices) with
    the step's ``share`` (:func:`step_shares`)."""
    return dataclasses.replace(limits, **dict(share))


def _at_least_one(share: int | None) -> int | None:
    """A share of calls for a step the wave sends (:func:`wave_size` keeps it at one or more)."""
    return None if share is None else max(share, 1)


def ran_by_tool(tool_steps: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Tool calls that ran in a step's loop, by tool (its step records with ``ran``)."""
    return tool_calls_made(tool_steps)
