"""Provider profiles: each OpenAI-compatible family's abilities and quirks in one place
(SPEC R13.2).

One small module per family holds its :class:`ProviderProfile`:

=====================  ==================  ==================================================
module                 name                chosen for
=====================  ==================  ==================================================
``openai``             ``openai``          no base URL, ``api.openai.com``, Azure
``deepseek``           ``deepseek``        ``api.deepseek.com``, ``ChatDeepSeek``
``vllm``               ``vllm``            a host naming vLLM/SGLang, ``Org/Model`` names
``ollama``             ``ollama``          port 11434, ``ChatOllama``, ``name:tag`` models
``lmstudio``           ``lmstudio``        port 1234
``llamacpp``           ``llamacpp``        the embedded model, ``*.gguf`` names
``generic``            ``openai_compatible``  everything else
=====================  ==================  ==================================================

:func:`select_profile` picks one: an explicit name (``ModelAbilities(provider=...)``, the
``abilities={"provider": ...}`` dict, or ``REACTGRAPH_PROVIDER``) wins; otherwise the chat
model's class, then its base URL, then its model name decide. The engine then uses the
profile for the model's default abilities (:func:`reactgraph.resolve_abilities`), adapts
the model's requests and replies (:func:`adapt_model`), reads tool calls written in
content (:mod:`reactgraph.providers.content_calls`) and classifies failures (retry,
schema refusal). To support one more server, add a module with a profile and list it in
:data:`PROFILES`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from reactgraph.providers import deepseek, generic, llamacpp, lmstudio, ollama, openai, vllm
from reactgraph.providers._adapter import adapt_model, applied_profile
from reactgraph.providers.profile import ProviderProfile

__all__ = [
    "ENV_PROVIDER",
    "GENERIC",
    "PROFILES",
    "ProviderProfile",
    "adapt_model",
    "applied_profile",
    "chat_model_of",
    "detect_profile",
    "get_profile",
    "select_profile",
]

ENV_PROVIDER = "REACTGRAPH_PROVIDER"
"""Environment variable naming the profile to use for every model (e.g. ``vllm``)."""

PROFILES: dict[str, ProviderProfile] = {
    profile.name: profile
    for profile in (openai.PROFILE, deepseek.PROFILE, ollama.PROFILE, lmstudio.PROFILE, llamacpp.PROFILE,
                    vllm.PROFILE, generic.PROFILE)
}
"""Every profile by name, in detection order (the generic one last)."""

_ALIASES = {"azure": "openai", "generic": "openai_compatible", "llama.cpp": "llamacpp", "llama_cpp": "llamacpp",
            "lm_studio": "lmstudio", "sglang": "vllm"}

GENERIC = generic.PROFILE
"""The profile of servers and chat models no other profile claims."""


def get_profile(name: str) -> ProviderProfile:
    """The profile called ``name`` (case and ``-`` ignored; ``azure``, ``generic``,
    ``sglang``, ``llama.cpp`` and ``lm_studio`` are accepted aliases).

    Raises:
        ValueError: no profile has that name; the message lists the names.
    """
    key = str(name).strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in PROFILES:
        raise ValueError(f"unknown provider {name!r}; use one of {', '.join(PROFILES)}")
    return PROFILES[key]


def chat_model_of(llm: Any) -> Any:
    """The chat model inside bindings (``llm.bind(...)``, ``bind_tools``), or ``llm`` itself."""
    while True:
        bound = getattr(llm, "bound", None)
        if bound is None or bound is llm:
            return llm
        llm = bound


def _base_url(model: Any) -> str | None:
    for attr in ("openai_api_base", "base_url"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def detect_profile(llm: Any) -> ProviderProfile:
    """The profile the chat model itself points to.

    In order: a profile already applied by :func:`adapt_model`; a family's chat model
    class (``AzureChatOpenAI``, ``ChatDeepSeek``, ``ChatOllama``); the base URL's host or
    port; no base URL on an OpenAI client means OpenAI's service; the model name's
    markers (``name:tag``, ``Org/Model``, ``*.gguf``); else the generic profile.
    """
    model = chat_model_of(llm)
    applied = applied_profile(model)
    if applied is not None:
        return applied
    classes = {cls.__name__ for cls in type(model).__mro__}
    for profile in PROFILES.values():
        if classes & set(profile.class_names):
            return profile
    url = _base_url(model)
    if url is not None:
        for profile in PROFILES.values():
            if profile.matches_url(url):
                return profile
    elif "BaseChatOpenAI" in classes:
        return openai.PROFILE
    name = str(getattr(model, "model_name", None) or getattr(model, "model", None) or "")
    for profile in PROFILES.values():
        if name and any(marker in name for marker in profile.model_markers):
            return profile
    return GENERIC


def select_profile(llm: Any, name: str | None = None, environ: Mapping[str, str] | None = None) -> ProviderProfile:
    """The profile for ``llm``: ``name`` when given, else ``REACTGRAPH_PROVIDER`` when set,
    else :func:`detect_profile`.

    Args:
        llm: The chat model (bindings are looked through).
        name: An explicit profile name (``ModelAbilities.provider``).
        environ: Variables to read instead of ``os.environ``.

    Raises:
        ValueError: ``name`` or ``REACTGRAPH_PROVIDER`` names no profile.
    """
    env = os.environ if environ is None else environ
    chosen = name or env.get(ENV_PROVIDER, "").strip()
    if chosen:
        try:
            return get_profile(chosen)
        except ValueError as exc:
            raise ValueError(f"{ENV_PROVIDER}: {exc}" if not name else str(exc)) from None
    return detect_profile(llm)
