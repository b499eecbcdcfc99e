"""What a chat model can do, and how the engine finds out (SPEC R2.2, R6.3; issue 10)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from langchain_core.language_models import BaseChatModel

SchemaOutput = Literal["json_schema", "json_object_schema", "none"]
"""How a provider takes a JSON schema that constrains its output (issue 10):

* ``"json_schema"``: OpenAI's ``response_format={"type": "json_schema", "json_schema":
  {"name", "schema", "strict": true}}`` (OpenAI, Azure OpenAI, vLLM, recent Ollama);
* ``"json_object_schema"``: llama.cpp style ``response_format={"type": "json_object",
  "schema": S}`` (llama-cpp-python's server, the embedded default);
* ``"none"``: the provider cannot be given a schema (the default).
"""

SCHEMA_OUTPUT_KINDS: tuple[str, ...] = get_args(SchemaOutput)
"""The values of :data:`SchemaOutput`, in declaration order."""

_OPENAI_API = "https://api.openai.com/v1"


def _speaks_openai_json_schema(model: Any) -> bool:
    """Whether ``model`` is OpenAI's own service: ``AzureChatOpenAI``, or ``ChatOpenAI``
    with OpenAI's base URL. Other providers' profiles say nothing about the request shape."""
    names = {cls.__name__ for cls in type(model).__mro__}
    if "AzureChatOpenAI" in names:
        return True
    return "ChatOpenAI" in names and (getattr(model, "openai_api_base", None) or _OPENAI_API).rstrip("/") == _OPENAI_API


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
            mode and ``structured_llm_call`` level 2 send their schema this way (issue 10).

    Raises:
        ValueError: ``schema_output`` is not one of :data:`SCHEMA_OUTPUT_KINDS`.
    """

    tool_call: bool = False
    json_mode: bool = False
    context_window: int | None = None
    max_output_tokens: int | None = None
    schema_output: SchemaOutput = "none"

    def __post_init__(self) -> None:
        if self.schema_output not in SCHEMA_OUTPUT_KINDS:
            raise ValueError(f"schema_output must be one of {', '.join(SCHEMA_OUTPUT_KINDS)}, got {self.schema_output!r}")


def _chat_model_of(llm: Any) -> Any:
    """The chat model inside bindings (``llm.bind(...)``), or ``llm`` itself."""
    bound = getattr(llm, "bound", None)
    if bound is not None and bound is not llm:
        return _chat_model_of(bound)
    return llm


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
    calling, no JSON mode, no schema output, unknown sizes). ``schema_output`` is read from
    the profile only for OpenAI's own service (``AzureChatOpenAI``, or ``ChatOpenAI`` at
    OpenAI's base URL) whose profile says ``structured_output``, as ``"json_schema"``; it
    is never assumed for other providers or servers.

    Args:
        llm: The chat model (any LangChain chat model, or a binding around one).
        explicit: A full :class:`ModelAbilities` (used as is), or a dict with some of
            its fields (merged over the profile), or ``None``.

    Returns:
        The resolved :class:`ModelAbilities`.

    Raises:
        TypeError: ``explicit`` has a key that is not a ``ModelAbilities`` field.
        ValueError: ``explicit`` sets an unknown ``schema_output``.
    """
    if isinstance(explicit, ModelAbilities):
        return explicit
    profile = _profile_of(llm)
    structured = bool(profile.get("structured_output", False))
    openai_service = _speaks_openai_json_schema(_chat_model_of(llm))
    resolved = ModelAbilities(
        tool_call=bool(profile.get("tool_calling", False)),
        json_mode=structured,
        schema_output="json_schema" if structured and openai_service else "none",
        context_window=profile.get("max_input_tokens"),
        max_output_tokens=profile.get("max_output_tokens"),
    )
    if explicit:
        resolved = replace(resolved, **explicit)
    return resolved
