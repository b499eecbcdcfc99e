"""Token usage: the one type that counts it and the helpers every model call site uses
to read and sum it (SPEC R2.10: usage summed over every model call of a run).

Graph state carries usage as a plain dict (checkpoints stay JSON-friendly); results carry
it as :class:`Usage`. Both have the keys of :data:`USAGE_KEYS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens", "model_calls")
"""The counters of usage, in the order of the ``done`` event's ``usage``."""

TOKEN_KEYS = USAGE_KEYS[:3]
"""The counters a provider reports on a message (``usage_metadata``)."""


@dataclass(frozen=True)
class Usage:
    """Token usage summed over every model call of a run.

    Attributes:
        input_tokens: Prompt tokens, as the provider reported them.
        output_tokens: Completion tokens.
        total_tokens: Their sum as reported.
        model_calls: Model calls made (loop iterations, plus synthesis when it ran).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    model_calls: int = 0

    @classmethod
    def from_dict(cls, counts: Mapping[str, Any] | None) -> Usage:
        """The usage of a state's ``usage`` dict; missing keys count 0."""
        return cls(**{key: int((counts or {}).get(key, 0) or 0) for key in USAGE_KEYS})

    def add(self, other: Usage | Mapping[str, Any] | None) -> Usage:
        """This usage plus ``other`` (a :class:`Usage` or a usage dict), key by key."""
        right = other if isinstance(other, Usage) else Usage.from_dict(other)
        return Usage(**{key: getattr(self, key) + getattr(right, key) for key in USAGE_KEYS})

    def to_dict(self) -> dict[str, int]:
        """The usage as a plain dict (the ``usage`` of the ``done`` event and of state)."""
        return {key: getattr(self, key) for key in USAGE_KEYS}


def reported_tokens(message: Any) -> dict[str, int]:
    """The tokens a provider reported on a message or a streamed chunk (its
    ``usage_metadata``; a missing count is 0), keyed by :data:`TOKEN_KEYS`."""
    reported = getattr(message, "usage_metadata", None) or {}
    return {key: int(reported.get(key, 0) or 0) for key in TOKEN_KEYS}


def usage_of(message: Any) -> dict[str, int]:
    """The token usage a provider reported on a message, plus one model call, as a dict."""
    return {**reported_tokens(message), "model_calls": 1}


def sum_usage(*parts: Mapping[str, Any] | None) -> dict[str, int]:
    """Usage dicts summed key by key (``None`` counts nothing); every key of
    :data:`USAGE_KEYS` is present in the result."""
    total = dict.fromkeys(USAGE_KEYS, 0)
    for part in parts:
        if part:
            for key in USAGE_KEYS:
                total[key] += int(part.get(key, 0) or 0)
    return total
