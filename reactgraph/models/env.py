"""Model configuration from the environment (SPEC R10.4).

Any OpenAI-compatible endpoint is configured with three variables:

==========================  =====================================================
``REACTGRAPH_MODEL``        model name sent in requests (default ``gpt-4o-mini``)
``OPENAI_BASE_URL``         API root ending in ``/v1`` (default: OpenAI's)
``OPENAI_API_KEY``          bearer key (a placeholder when only a base URL is set)
==========================  =====================================================

and, optionally, what the model can do, overriding its profile:

==================================  ============================================
``REACTGRAPH_TOOL_CALL``            native tool calls: ``1/0/true/false/yes/no/on/off``
``REACTGRAPH_JSON_MODE``            ``response_format=json_object``: same values
``REACTGRAPH_CONTEXT_WINDOW``       input window, tokens (positive integer)
``REACTGRAPH_MAX_OUTPUT_TOKENS``    output cap, tokens (positive integer)
``REACTGRAPH_SCHEMA_OUTPUT``        how the server takes an output schema:
                                    ``json_schema`` (OpenAI), ``json_object_schema``
                                    (llama.cpp) or ``none``
``REACTGRAPH_PROVIDER``             the provider profile: ``openai``, ``deepseek``,
                                    ``vllm``, ``ollama``, ``lmstudio``, ``llamacpp``
                                    or ``openai_compatible`` (default: chosen from
                                    the base URL and model name)
==================================  ============================================

Empty variables count as unset. With none of the first three set, :func:`model_from_env`
returns ``None`` and the caller falls back to the embedded local model.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reactgraph.providers.abilities import SCHEMA_OUTPUT_KINDS
from reactgraph.engine.deadlines import request_timeout
from reactgraph.providers import ENV_PROVIDER, get_profile

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_CONTEXT_WINDOW",
    "ENV_JSON_MODE",
    "ENV_MAX_OUTPUT_TOKENS",
    "ENV_MODEL",
    "ENV_PROVIDER",
    "ENV_SCHEMA_OUTPUT",
    "ENV_SMALL_MODEL",
    "ENV_TOOL_CALL",
    "OPENAI_DEFAULT_BASE_URL",
    "PLACEHOLDER_API_KEY",
    "abilities_from_env",
    "describe_chat_model",
    "fallback_specs",
    "model_from_env",
]

ENV_MODEL = "REACTGRAPH_MODEL"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_TOOL_CALL = "REACTGRAPH_TOOL_CALL"
ENV_JSON_MODE = "REACTGRAPH_JSON_MODE"
ENV_CONTEXT_WINDOW = "REACTGRAPH_CONTEXT_WINDOW"
ENV_MAX_OUTPUT_TOKENS = "REACTGRAPH_MAX_OUTPUT_TOKENS"
ENV_SCHEMA_OUTPUT = "REACTGRAPH_SCHEMA_OUTPUT"
ENV_SMALL_MODEL = "REACTGRAPH_SMALL_MODEL"
ENV_FALLBACK_MODELS = "REACTGRAPH_FALLBACK_MODELS"
ENV_FALLBACK_BASE_URLS = "REACTGRAPH_FALLBACK_BASE_URLS"

EMBEDDED_FALLBACK = "embedded"
"""The fallback model name that means the embedded local model."""

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""Model used when a key or base URL is configured but no model name."""

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

PLACEHOLDER_API_KEY = "not-needed"
"""Sent to keyless local servers (vLLM, Ollama, llama.cpp) so ChatOpenAI accepts the config."""

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})

def _setting(explicit: str | None, environ: Mapping[str, str], name: str) -> str | None:
    """``explicit`` if non-empty, else the stripped variable ``name`` if non-empty, else None."""
    if explicit is not None and explicit.strip():
        return explicit.strip()
    value = environ.get(name, "").strip()
    return value or None


def model_from_env(
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    environ: Mapping[str, str] | None = None,
    **chat_kwargs: Any,
) -> ChatOpenAI | None:
    """Build a ``ChatOpenAI`` for an OpenAI-compatible endpoint, or None when none is set.

    Each of ``model``, ``base_url`` and ``api_key`` wins over its variable
    (``REACTGRAPH_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``); empty strings count as
    unset. Nothing is sent over the network here.

    * nothing set -> ``None`` (use the embedded local model);
    * no model name -> ``gpt-4o-mini`` (right for OpenAI and for single-model servers such as
      llama.cpp or LM Studio that ignore the name; vLLM and Ollama need the real name);
    * a base URL but no key -> the placeholder key ``"not-needed"``;
    * a model name alone (no key, no base URL) -> ``ValueError``: OpenAI would refuse it.

    Examples::

        # OpenAI
        OPENAI_API_KEY=sk-... REACTGRAPH_MODEL=gpt-4o-mini reactgraph ask "..."
        # vLLM (vllm serve Qwen/Qwen2.5-7B-Instruct --enable-auto-tool-choice ...)
        OPENAI_BASE_URL=http://localhost:8000/v1 REACTGRAPH_MODEL=Qwen/Qwen2.5-7B-Instruct
        # Ollama
        OPENAI_BASE_URL=http://localhost:11434/v1 REACTGRAPH_MODEL=llama3.1:8b

        model_from_env(base_url="http://localhost:11434/v1", model="llama3.1:8b")

    Args:
        model: model name sent in requests.
        base_url: API root, e.g. ``http://localhost:8000/v1``.
        api_key: bearer key.
        environ: variables to read instead of ``os.environ``.
        **chat_kwargs: more ``ChatOpenAI`` arguments (``temperature``, ``timeout`` in
            seconds, ``max_tokens``...); they override the defaults (``max_retries=2``, and
            ``timeout`` the model deadline's total: :func:`reactgraph.engine.deadlines.request_timeout`).

    Returns:
        ``langchain_openai.ChatOpenAI``, or ``None`` when none of the three is configured.

    Raises:
        ValueError: only a model name is configured, with neither key nor base URL.
    """
    env = os.environ if environ is None else environ
    name = _setting(model, env, ENV_MODEL)
    url = _setting(base_url, env, ENV_BASE_URL)
    key = _setting(api_key, env, ENV_API_KEY)
    if name is None and url is None and key is None:
        return None
    if key is None and url is None:
        raise ValueError(
            f"{ENV_MODEL}={name!r} is set but neither {ENV_API_KEY} (for OpenAI) nor "
            f"{ENV_BASE_URL} (for vLLM, Ollama, llama.cpp, LM Studio...) is; set one of them"
        )

    from langchain_openai import ChatOpenAI

    params: dict[str, Any] = {
        "model": name or DEFAULT_OPENAI_MODEL,
        # Always explicit: otherwise ChatOpenAI and the openai client would consult
        # os.environ on their own, behind the back of a given ``environ``.
        "base_url": url or OPENAI_DEFAULT_BASE_URL,
        "api_key": key or PLACEHOLDER_API_KEY,
        "max_retries": 2,
        # The client's own bound on a request (it also holds in synchronous runs), from the
        # model deadline (reactgraph.engine.deadlines): a server that never answers fails the call.
        "timeout": request_timeout(env),
    }
    params.update(chat_kwargs)
    return ChatOpenAI(**params)


def _listed(given: Sequence[str] | None, environ: Mapping[str, str], name: str) -> list[str]:
    """``given`` when non-empty, else the comma-separated items of variable ``name``."""
    if given:
        return list(given)
    raw = environ.get(name, "")
    return [item.strip() for item in raw.split(",")] if raw.strip() else []


def fallback_specs(
    models: Sequence[str] | None = None,
    base_urls: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[tuple[str, str | None]]:
    """The fallback models configured: ``--fallback-model`` /
    ``--fallback-base-url`` given as ``models`` / ``base_urls``, else
    ``REACTGRAPH_FALLBACK_MODELS`` / ``REACTGRAPH_FALLBACK_BASE_URLS`` (comma-separated;
    models given as arguments take their base URLs from the arguments only).

    The n-th base URL goes with the n-th model; a model without one (fewer URLs, or an
    empty item) is reached at the agent's endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``).
    The name ``embedded`` (:data:`EMBEDDED_FALLBACK`) is the embedded local model.

    Examples::

        REACTGRAPH_FALLBACK_MODELS=gpt-4o-mini,embedded
        reactgraph serve --fallback-model llama3.1:8b --fallback-base-url http://localhost:11434/v1

    Args:
        models: Names from the command line; ``None`` or empty reads the environment.
        base_urls: Base URLs from the command line; ``None`` or empty reads the environment.
        environ: Variables to read instead of ``os.environ``.

    Returns:
        ``(name, base_url or None)`` per fallback, in order; ``[]`` for none.

    Raises:
        ValueError: An empty model name, or more base URLs than models.
    """
    env = os.environ if environ is None else environ
    names = _listed(models, env, ENV_FALLBACK_MODELS)
    urls = list(base_urls or ()) if models else _listed(base_urls, env, ENV_FALLBACK_BASE_URLS)
    if any(not name.strip() for name in names):
        raise ValueError(f"a fallback model name is empty ({ENV_FALLBACK_MODELS} or --fallback-model)")
    if len(urls) > len(names):
        raise ValueError(f"{len(urls)} fallback base URLs for {len(names)} fallback models; give a model for each URL")
    return [(name.strip(), (urls[i].strip() or None) if i < len(urls) else None) for i, name in enumerate(names)]


def _parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no or on/off")


def _parse_positive_int(name: str, raw: str) -> int:
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer number of tokens") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r} must be a positive number of tokens")
    return value


def _parse_schema_output(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in SCHEMA_OUTPUT_KINDS:
        raise ValueError(f"{name}={raw!r} is not one of {', '.join(SCHEMA_OUTPUT_KINDS)}")
    return value


def _parse_provider(name: str, raw: str) -> str:
    try:
        return get_profile(raw).name
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r}: {exc}") from None


# abilities_from_env: variable -> (ModelAbilities field, parser)
_ABILITY_VARS: tuple[tuple[str, str, Callable[[str, str], bool | int | str]], ...] = (
    (ENV_TOOL_CALL, "tool_call", _parse_bool),
    (ENV_JSON_MODE, "json_mode", _parse_bool),
    (ENV_CONTEXT_WINDOW, "context_window", _parse_positive_int),
    (ENV_MAX_OUTPUT_TOKENS, "max_output_tokens", _parse_positive_int),
    (ENV_SCHEMA_OUTPUT, "schema_output", _parse_schema_output),
    (ENV_PROVIDER, "provider", _parse_provider),
    (ENV_SMALL_MODEL, "small", _parse_bool),
)


def abilities_from_env(environ: Mapping[str, str] | None = None) -> dict[str, bool | int | str]:
    """Model-ability overrides set in the environment.

    Reads ``REACTGRAPH_TOOL_CALL`` and ``REACTGRAPH_JSON_MODE`` (booleans:
    ``1/0/true/false/yes/no/on/off``, any case), ``REACTGRAPH_CONTEXT_WINDOW`` and
    ``REACTGRAPH_MAX_OUTPUT_TOKENS`` (positive integers, tokens) and
    ``REACTGRAPH_SCHEMA_OUTPUT`` (``json_schema``, ``json_object_schema`` or ``none``,
    any case: how the server takes a JSON schema constraining its output) and
    ``REACTGRAPH_PROVIDER`` (a provider profile name, SPEC R13.2) and
    ``REACTGRAPH_SMALL_MODEL`` (a boolean: the model gets the strict safeguards,:
    mod:`reactgraph.policy.safeguards`).

    Args:
        environ: variables to read instead of ``os.environ``.

    Returns:
        Keyword arguments for ``ModelAbilities`` (``tool_call``, ``json_mode``,
        ``context_window``, ``max_output_tokens``, ``schema_output``, ``provider``, ``small``), holding only the variables that are set
        and non-empty; ``{}`` when none is.

    Raises:
        ValueError: a value does not parse; the message names the variable.
    """
    env = os.environ if environ is None else environ
    overrides: dict[str, bool | int | str] = {}
    for var, field, parse in _ABILITY_VARS:
        raw = env.get(var, "")
        if not raw.strip():
            continue
        overrides[field] = parse(var, raw)
    return overrides


def describe_chat_model(llm: Any) -> str:
    """One-line label for a chat model: ``"gpt-4o-mini at https://api.openai.com/v1"``.

    Works for ``ChatOpenAI`` (model name and base URL) and falls back to the model's
    ``model_name``/``model`` attribute or class name for other LangChain chat models.
    """
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None)
    label = str(name) if name else type(llm).__name__
    url = getattr(llm, "openai_api_base", None)
    if type(llm).__name__ == "ChatOpenAI" or url:
        return f"{label} at {url or OPENAI_DEFAULT_BASE_URL}"
    return label
