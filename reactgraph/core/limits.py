"""Usage limits of one run (SPEC R13.3).

:class:`UsageLimits` (``AgentSettings.limits``) caps what one turn's tool loop may spend:
model calls, tool calls (all, and per tool), input, output and total tokens, and cost when
the model's prices are given. The loop checks them where it checks the iteration cap
(before each model call, :func:`limit_reached`): reaching one ends the loop gracefully, as
the cap does, with the step summary and the streamed synthesis, and ``finish_reason`` says
which limit (``model_call_limit``, ``tool_call_limit``, ``token_limit``, ``cost_limit``);
``AgentResult.limit`` and the ``done`` event carry the figures. Tool calls a batch asks
for beyond a tool-call limit do not run (:func:`over_limit_refusals`): each gets an error
observation, so the protocol stays whole.

Token and cost figures are the provider-reported usage summed over the turn's model calls
(``AgentState.usage``: tool selection, compaction and the loop). The synthesis call runs
after the loop ends, so its tokens come on top of a token or cost limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from reactgraph.core.language import phrase

LimitReason = Literal["model_call_limit", "tool_call_limit", "token_limit", "cost_limit"]
"""The ``finish_reason`` of a loop a usage limit ended."""

LIMIT_REASONS: tuple[str, ...] = get_args(LimitReason)
"""The values of :data:`LimitReason`."""


@dataclass(frozen=True)
class ModelPrice:
    """What a model's tokens cost, in any currency unit (USD usually).

    Attributes:
        input_per_million: Price of one million input (prompt) tokens.
        output_per_million: Price of one million output (completion) tokens.
    """

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        if self.input_per_million < 0 or self.output_per_million < 0:
            raise ValueError("token prices must not be negative")

    def cost(self, usage: Mapping[str, Any]) -> float:
        """The cost of ``usage`` (``input_tokens``, ``output_tokens``)."""
        return (int(usage.get("input_tokens", 0)) * self.input_per_million
                + int(usage.get("output_tokens", 0)) * self.output_per_million) / 1_000_000


@dataclass(frozen=True)
class UsageLimits:
    """Caps on one turn's tool loop; ``None`` means no cap.

    Attributes:
        model_calls: Most model calls (selection and compaction calls included).
        tool_calls: Most tool calls that run (refused or rejected calls do not count).
        tool_calls_per_tool: Most calls of one tool, by tool name.
        input_tokens: Most input tokens summed over the model calls.
        output_tokens: Most output tokens.
        total_tokens: Most input plus output tokens.
        cost: Most cost, in the unit of :attr:`prices`.
        prices: The model's :class:`ModelPrice`, or a table of them by model name (the
            agent's model is looked up by its ``model_name`` / ``model``). Needed for
            ``cost``; with it, the cost so far is reported even without a cost cap.

    Raises:
        ValueError: A cap below zero (or below one for call counts), or ``cost``
            without ``prices``.
    """

    model_calls: int | None = None
    tool_calls: int | None = None
    tool_calls_per_tool: Mapping[str, int] = field(default_factory=dict)
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    prices: ModelPrice | Mapping[str, ModelPrice] | None = None

    def __post_init__(self) -> None:
        for name in ("model_calls", "tool_calls"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} limit must be at least 1, got {value}")
        for name, value in self.tool_calls_per_tool.items():
            if value < 1:
                raise ValueError(f"tool call limit of {name!r} must be at least 1, got {value}")
        for name in ("input_tokens", "output_tokens", "total_tokens", "cost"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} limit must not be negative, got {value}")
        if self.cost is not None and self.prices is None:
            raise ValueError("a cost limit needs the model's prices (prices=ModelPrice(...))")

    def price_for(self, model_name: str | None) -> ModelPrice | None:
        """The price of the agent's model: :attr:`prices` itself, or its entry for
        ``model_name``.

        Raises:
            ValueError: A cost limit, and the table has no entry for ``model_name``.
        """
        if self.prices is None or isinstance(self.prices, ModelPrice):
            return self.prices
        price = self.prices.get(model_name or "")
        if price is None and self.cost is not None:
            raise ValueError(f"the price table has no entry for the model {model_name!r}: "
                             f"it lists {', '.join(sorted(self.prices)) or 'nothing'}")
        return price


def model_name_of(llm: Any) -> str | None:
    """The model's name as its LangChain class keeps it (``model_name`` or ``model``)."""
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(llm, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def tool_calls_made(steps: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Tool calls that ran in the turn, by tool name (step records with ``ran``)."""
    counts: dict[str, int] = {}
    for record in steps:
        if record.get("ran"):
            name = str(record.get("tool_name"))
            counts[name] = counts.get(name, 0) + 1
    return counts


def _cost(state: Mapping[str, Any], price: ModelPrice | Mapping[str, ModelPrice | None] | None) -> float | None:
    """The turn's cost: ``usage`` at ``price``; with a price per model (fallback models,),
    each model's ``model_usage`` at its own price (``None`` when one is missing)."""
    if price is None:
        return None
    if isinstance(price, ModelPrice):
        return round(price.cost(state.get("usage") or {}), 6)
    spent = (state.get("model_usage") or {}).items()
    if any(price.get(model) is None for model, _ in spent):
        return None
    return round(sum(price[model].cost(usage) for model, usage in spent), 6)  # type: ignore[union-attr]


def figures(state: Mapping[str, Any], price: ModelPrice | Mapping[str, ModelPrice | None] | None) -> dict[str, Any]:
    """What the turn spent so far: ``model_calls``, ``tool_calls``, ``input_tokens``,
    ``output_tokens``, ``total_tokens``, and ``cost`` with a price (else ``None``): one
    :class:`ModelPrice`, or one per model name for an agent with fallback models, each
    model's ``model_usage`` at its price."""
    usage = state.get("usage") or {}
    return {
        "model_calls": int(usage.get("model_calls", 0)),
        "tool_calls": sum(tool_calls_made(state.get("steps") or []).values()),
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
        "total_tokens": int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0)),
        "cost": _cost(state, price),
    }


def limit_reached(state: Mapping[str, Any], limits: UsageLimits | None,
                  price: ModelPrice | Mapping[str, ModelPrice | None] | None) -> dict[str, Any] | None:
    """The first limit the turn has reached, checked before each loop model call.

    Returns:
        ``None``, or ``{"reason": <finish_reason>, "limit": <name>, "max": cap, "used":
        figure, "tool": name or None, "figures": figures(state)}``.
    """
    if limits is None:
        return None
    spent = figures(state, price)
    checks: list[tuple[str, str, Any, Any, str | None]] = [
        ("model_call_limit", "model_calls", limits.model_calls, spent["model_calls"], None),
        ("tool_call_limit", "tool_calls", limits.tool_calls, spent["tool_calls"], None),
    ]
    made = tool_calls_made(state.get("steps") or [])
    checks += [("tool_call_limit", "tool_calls_per_tool", cap, made.get(tool, 0), tool)
               for tool, cap in limits.tool_calls_per_tool.items()]
    checks += [("token_limit", name, getattr(limits, name), spent[name], None)
               for name in ("input_tokens", "output_tokens", "total_tokens")]
    checks.append(("cost_limit", "cost", limits.cost, spent["cost"], None))
    for reason, name, cap, used, tool in checks:
        if cap is not None and used is not None and used >= cap:
            return {"reason": reason, "limit": name, "max": cap, "used": used, "tool": tool, "figures": spent}
    return None


def describe_limit(reached: Mapping[str, Any], language: str | None = "en") -> str:
    """One sentence saying which limit ended the loop (the fallback answer's first line), in
    ``language`` (:func:`~reactgraph.core.language.phrase`; ``None``: the neutral form). English
    names the limit in words ("tool calls"); the other forms by its setting's name
    (``tool_calls``, ``tool_calls_per_tool[name]``), which reads the same in every language."""
    if language == "en":
        what = {"model_calls": "model calls", "tool_calls": "tool calls", "input_tokens": "input tokens",
                "output_tokens": "output tokens", "total_tokens": "tokens", "cost": "cost"}.get(reached["limit"], "")
        if reached["limit"] == "tool_calls_per_tool":
            what = f"calls of {reached['tool']}"
    else:
        what = f"tool_calls_per_tool[{reached['tool']}]" if reached["limit"] == "tool_calls_per_tool" else reached["limit"]
    return phrase("limit_reached", language, max=reached["max"], what=what, used=reached["used"])


def over_limit_refusals(calls: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]],
                        limits: UsageLimits | None) -> list[str | None]:
    """For each call of a batch, in order: why it may not run because it would pass a
    tool-call limit, or ``None``. The calls before it in the batch count as made (a
    refused or rejected call is then counted too: a batch cannot know in advance)."""
    if limits is None:
        return [None] * len(calls)
    made = tool_calls_made(steps)
    total = sum(made.values())
    reasons: list[str | None] = []
    for call in calls:
        name = str(call.get("name"))
        cap = limits.tool_calls_per_tool.get(name)
        if limits.tool_calls is not None and total >= limits.tool_calls:
            reasons.append(f"tool call limit reached ({limits.tool_calls} calls per run); the call did not run")
            continue
        if cap is not None and made.get(name, 0) >= cap:
            reasons.append(f"tool call limit of {name} reached ({cap} calls per run); the call did not run")
            continue
        total += 1
        made[name] = made.get(name, 0) + 1
        reasons.append(None)
    return reasons
