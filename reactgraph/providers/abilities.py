"""What a chat model can do, and how the engine finds out (SPEC R2.2, R6.3)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from langchain_core.language_models import BaseChatModel

from reactgraph.providers import chat_model_of, get_profile, select_profile

SchemaOutput = Literal["json_schema", "json_object_schema", "none"]
"""How a provider takes a JSON schema that constrains its output:

* ``"json_schema"``: OpenAI's ``response_format={"type": "json_schema", "json_schema":
  {"name", "schema", "strict": true}}`` (OpenAI, Azure OpenAI, vLLM, recent Ollama);
* ``"json_object_schema"``: llama.cpp style ``response_format={"type": "json_object",
  "schema": S}`` (llama-cpp-python's server, the embedded default);
* ``"none"``: the provider cannot be given a schema (the default).
"""

SCHEMA_OUTPUT_KINDS: tuple[str, ...] = get_args(SchemaOutput)
"""The values of :data:`SchemaOutput`, in declaration order."""


@dataclass(frozen=True)
class ModelAbilities:
    """Abilities of one chat model.

    Attributes:
        tool_call: The provider accepts tool schemas and returns structured tool calls.
            Native mode needs it (SPEC R2.2).
        json_mode: The provider accepts ``response_format={"type": "json_object"}``.
        context_window: Input context size in tokens, ``None`` when unknown.
        max_output_tokens: Most tokens one completion may produce, ``None`` when unknown.
        schema_output: The request shape in which the provider accepts a JSON schema that
            constrains its output (:data:`SchemaOutput`); ``"none"`` when it cannot. JSON
            mode and ``structured_llm_call`` level 2 send their schema this way.
        provider: The provider profile the model is used with (a name of
            :data:`reactgraph.providers.PROFILES`, e.g. ``"vllm"``); ``None`` chooses it from
            ``REACTGRAPH_PROVIDER``, the model's class, base URL and name (SPEC R13.2).
        small: A small model (the embedded one, or one a user marks so, e.g. with
            ``REACTGRAPH_SMALL_MODEL=1``): it gets the strict safeguards measured on the
            embedded model (:data:`reactgraph.policy.safeguards.STRICT`); every other model gets the
            permissive ones (SPEC R13.1).
        writes_answers: A small model whose own answers, written by synthesis and checked
            under ``grounding="enforce"`` before they are shown, were measured as right as the
            answer made of observations and reading better (the catalogue says which embedded
            model, :attr:`~reactgraph.models.catalog.EmbeddedModel.writes_answers`): the strict
            policy then lets it write (``answer_from_observations`` off; every check stays on).
            No effect on a model that is not ``small``.

    Raises:
        ValueError: ``schema_output`` is not one of :data:`SCHEMA_OUTPUT_KINDS`;
            ``provider`` names no profile.
    """

    tool_call: bool = False
    json_mode: bool = False
    context_window: int | None = None
    max_output_tokens: int | None = None
    schema_output: SchemaOutput = "none"
    provider: str | None = None
    small: bool = False
    writes_answers: bool = False

    def __post_init__(self) -> None:
        if self.schema_output not in SCHEMA_OUTPUT_KINDS:
            raise ValueError(f"schema_output must be one of {', '.join(SCHEMA_OUTPUT_KINDS)}, got {self.schema_output!r}")
        if self.provider is not None:
            object.__setattr__(self, "provider", get_profile(self.provider).name)


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
    ``max_output_tokens``), then from the provider profile's defaults
    (:func:`reactgraph.providers.select_profile`: the explicit ``provider``, else
    ``REACTGRAPH_PROVIDER``, else the model's class, base URL and name; SPEC R13.2);
    anything still unknown takes the safe default (no tool calling, no JSON mode, no
    schema output, unknown sizes). ``schema_output`` follows the LangChain profile's
    ``structured_output`` only where the provider profile says how (OpenAI's own service:
    ``"json_schema"``). The result names the provider profile in ``provider``.

    Args:
        llm: The chat model (any LangChain chat model, or a binding around one).
        explicit: A full :class:`ModelAbilities` (used as is), or a dict with some of
            its fields (merged over the profile), or ``None``.

    Returns:
        The resolved :class:`ModelAbilities`.

    Raises:
        TypeError: ``explicit`` has a key that is not a ``ModelAbilities`` field.
        ValueError: ``explicit`` sets an unknown ``schema_output`` or ``provider``, or
            ``REACTGRAPH_PROVIDER`` names no profile.
    """
    if isinstance(explicit, ModelAbilities):
        return explicit
    profile = _profile_of(llm)
    provider = select_profile(chat_model_of(llm), (explicit or {}).get("provider"))
    resolved = ModelAbilities(
        **provider.default_abilities(profile),
        context_window=profile.get("max_input_tokens"),
        max_output_tokens=profile.get("max_output_tokens"),
        provider=provider.name,
    )
    if explicit:
        resolved = replace(resolved, **explicit)
    return resolved
