"""The input token budget of a model call (SPEC R6.3)."""

from __future__ import annotations

from reactgraph.providers.abilities import ModelAbilities
from reactgraph.core.config import AgentSettings

MIN_BUDGET = 4_000
"""The budget is never below this many tokens (SPEC R6.3)."""


DEFAULT_CONTEXT_WINDOW = 32_768
"""Context window assumed, in tokens, when neither settings, abilities nor the model's
profile give one."""


DEFAULT_MAX_OUTPUT_TOKENS = 4_096
"""Output tokens reserved when neither settings, abilities nor the profile give a cap."""


def context_budget(abilities: ModelAbilities | None = None, settings: AgentSettings | None = None) -> int:
    """The input token budget of a model call (SPEC R6.3).

    ``context window − max output tokens``, each taken from ``settings`` when set there,
    else from ``abilities`` (explicit abilities over the model's profile, see
    :func:`~reactgraph.resolve_abilities`), else :data:`DEFAULT_CONTEXT_WINDOW` (32,768) /
    :data:`DEFAULT_MAX_OUTPUT_TOKENS` (4,096); never below :data:`MIN_BUDGET` (4,000).

    Args:
        abilities: The model's abilities, or ``None``.
        settings: The agent's settings, or ``None``.

    Returns:
        The budget in tokens.
    """
    abilities = abilities or ModelAbilities()
    settings = settings or AgentSettings()
    window = settings.context_window or abilities.context_window or DEFAULT_CONTEXT_WINDOW
    output = settings.max_output_tokens or abilities.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
    return max(MIN_BUDGET, int(window) - int(output))
