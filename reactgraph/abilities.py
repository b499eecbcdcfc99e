"""What a chat model can do, and how the engine finds out (SPEC R2.2, R6.3)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from langchain_core.language_models import BaseChatModel


@dataclass(frozen=True)
class ModelAbilities:
    """Abilities of one chat model.

    Attributes:
        tool_call: The provider accepts tool schemas and returns structured tool calls.
            Native mode needs it (SPEC R2.2).
        json_mode: The provider accepts ``response_format={"type": "json_object"}``.
        context_window: Input context size in tokens, ``None`` when unknown.
        max_output_tokens: Most tokens one completion may produce, ``None`` when unknown.
    """

    tool_call: bool = False
    json_mode: bool = False
    context_window: int | None = None
    max_output_tokens: int | None = None


def _profile_of(llm: Any) -> dict[str, Any]:
    profile = getattr(llm, "profile", None)
    if isinstance(profile, dict):
        return profile
    bound = getattr(llm, "bound", None)  # RunnableBinding around a chat model
    if bound is not None and bound is not llm:
        return _profile_of(bound)
    return {}


def resolve_abilities(
    llm: BaseChatModel | Any, explicit: ModelAbilities | dict[str, Any] | None = None
) -> ModelAbilities:
    """Decide a model's abilities (SPEC R2.2).

    Explicit configuration wins; what it leaves out comes from the model's LangChain
    profile (``tool_calling``, ``structured_output``, ``max_input_tokens``,
    ``max_output_tokens``); anything still unknown takes the safe default (no tool
    calling, no JSON mode, unknown sizes).

    Args:
        llm: The chat model (any LangChain chat model, or a binding around one).
        explicit: A full :class:`ModelAbilities` (used as is), or a dict with some of
            its fields (merged over the profile), or ``None``.

    Returns:
        The resolved :class:`ModelAbilities`.

    Raises:
        TypeError: ``explicit`` has a key that is not a ``ModelAbilities`` field.
    """
    if isinstance(explicit, ModelAbilities):
        return explicit
    profile = _profile_of(llm)
    resolved = ModelAbilities(
        tool_call=bool(profile.get("tool_calling", False)),
        json_mode=bool(profile.get("structured_output", False)),
        context_window=profile.get("max_input_tokens"),
        max_output_tokens=profile.get("max_output_tokens"),
    )
    if explicit:
        resolved = replace(resolved, **explicit)
    return resolved
