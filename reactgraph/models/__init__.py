"""Model resolution: an endpoint from the environment, else the embedded local model.

The usual entry point is :func:`open_model`::

    async with open_model() as resolved:
        print(resolved.description)      # "gpt-4o-mini at https://api.openai.com/v1"
        answer = await resolved.llm.ainvoke("hi")

It picks, in order (SPEC R10.4):

1. an OpenAI-compatible endpoint given as arguments or by ``REACTGRAPH_MODEL``,
   ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` (see :mod:`reactgraph.models.env`);
2. otherwise the embedded model behind a private llama.cpp server
   (see :mod:`reactgraph.models.local`), started for the block and stopped after it:
   SmolLM2-135M, or another entry of the catalogue (:mod:`reactgraph.models.catalog`)
   chosen by ``local_model`` or ``$REACTGRAPH_LOCAL_MODEL``.

Fallback models come from ``fallback_models`` / ``fallback_base_urls`` or
``REACTGRAPH_FALLBACK_MODELS`` / ``REACTGRAPH_FALLBACK_BASE_URLS``
(:func:`~reactgraph.models.env.fallback_specs`); ``embedded`` names the embedded model.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from reactgraph.core.paths import data_home
from reactgraph.providers.abilities import ModelAbilities, resolve_abilities
from reactgraph.models.catalog import (
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    ENV_LOCAL_MODEL,
    ENV_LOCAL_THREADS,
    EmbeddedModel,
    embedded_model,
    find_gguf,
)
from reactgraph.engine.fallbacks import FallbackModel
from reactgraph.models.env import (
    DEFAULT_OPENAI_MODEL,
    EMBEDDED_FALLBACK,
    PLACEHOLDER_API_KEY,
    abilities_from_env,
    describe_chat_model,
    fallback_specs,
    model_from_env,
)
from reactgraph.policy.safeguards import policy_for, policy_settings
from reactgraph.models.local import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    GGUF_FILENAME,
    INSTALL_HINT,
    LOCAL_MODEL_NAME,
    LocalModelError,
    LocalModelServer,
    default_threads,
    find_smollm2_gguf,
)

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_N_CTX",
    "DEFAULT_OPENAI_MODEL",
    "EMBEDDED_MODELS",
    "ENV_LOCAL_MODEL",
    "ENV_LOCAL_THREADS",
    "EmbeddedModel",
    "GGUF_FILENAME",
    "INSTALL_HINT",
    "LOCAL_MODEL_NAME",
    "PLACEHOLDER_API_KEY",
    "LocalModelError",
    "LocalModelServer",
    "ResolvedModel",
    "abilities_from_env",
    "describe_chat_model",
    "embedded_model",
    "find_gguf",
    "find_smollm2_gguf",
    "model_from_env",
    "open_model",
]


@dataclass(frozen=True)
class ResolvedModel:
    """The chat model a run uses, and what is known about it.

    Attributes:
        llm: the LangChain chat model to call.
        abilities: what the model can do, when known from settings (environment overrides, or
            the embedded model's measured abilities); ``None`` means "let the engine read the
            model's profile and fall back to safe defaults".
        description: one-line human label, e.g. ``"gpt-4o-mini at https://api.openai.com/v1"``
            or ``"embedded SmolLM2-135M (llama.cpp on 127.0.0.1:41234)"``.
        server: the embedded server when that is what ``llm`` talks to, else ``None``.
        overrides: only the ability fields set in the environment (see
            :func:`abilities_from_env`), e.g. ``{"context_window": 32768}``. ``abilities``
            holds them merged over the model's profile.
        fallbacks: The fallback models configured, in order, each with its
            abilities when known (the embedded model's).
    """

    llm: BaseChatModel
    abilities: ModelAbilities | None
    description: str
    server: LocalModelServer | None = None
    overrides: dict[str, bool | int | str] = field(default_factory=dict)
    fallbacks: list[FallbackModel] = field(default_factory=list)

    @property
    def safeguards(self) -> dict[str, Any]:
        """The safeguard policy agents on this model get by default (SPEC R13.1):
        ``{"policy": "strict" | "permissive", <AgentSettings field>: value, ...}``, decided
        by ``abilities.small`` alone (:func:`reactgraph.policy.safeguards.policy_for`; unknown
        abilities are not small), with ``answer_from_observations`` off for a small model that
        writes its answers (:func:`reactgraph.policy.safeguards.policy_settings`). ``AgentSettings``
        fields set by the caller win."""
        return {"policy": policy_for(self.abilities).name, **policy_settings(self.abilities)}


@asynccontextmanager
async def _embedded_server(options: Mapping[str, Any], max_tokens: int,
                           start_timeout: float) -> AsyncIterator[LocalModelServer]:
    """The embedded model's server (``options``: :class:`LocalModelServer`'s ``model``,
    ``n_ctx``, ``n_threads``, ``environ``), made in a worker thread (the first use downloads
    the model file), started for the block and stopped after it, also on error or cancellation."""
    server = await asyncio.to_thread(LocalModelServer, **options, max_tokens=max_tokens, log_dir=data_home() / "logs")
    await server.start_async(start_timeout)
    try:
        yield server
    finally:
        await server.stop_async()


@asynccontextmanager
async def open_model(
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    environ: Mapping[str, str] | None = None,
    local_model: str | None = None,
    local_threads: int | None = None,
    local_n_ctx: int | None = None,
    local_start_timeout: float = 120.0,
    fallback_models: Sequence[str] | None = None,
    fallback_base_urls: Sequence[str] | None = None,
) -> AsyncIterator[ResolvedModel]:
    """Resolve the model for a run; start the embedded model if nothing is configured.

    Args:
        model, base_url, api_key: explicit endpoint settings; each wins over its
            environment variable (see :func:`model_from_env`).
        environ: variables to read instead of ``os.environ``.
        local_model: the embedded model's catalogue name (:data:`EMBEDDED_MODELS`, e.g.
            ``"qwen2.5-coder-1.5b"``); default: ``$REACTGRAPH_LOCAL_MODEL``, else
            ``"smollm2-135m"``. Its file is downloaded on first use (in a worker thread).
        local_threads: llama.cpp's CPU threads for the embedded model; default:
            ``$REACTGRAPH_LOCAL_THREADS``, else the entry's, else one less than the CPUs this
            process may run on (:func:`~reactgraph.models.local.default_threads`).
        local_n_ctx: context window of the embedded model, tokens; default: the entry's.
        local_start_timeout: seconds to wait for the embedded server to load the model.
        fallback_models, fallback_base_urls: the fallback models (``--fallback-model``,
            ``--fallback-base-url``; ``None`` reads the environment, see
            :func:`~reactgraph.models.env.fallback_specs`). Each is a ``ChatOpenAI`` at its
            base URL (else the model's endpoint) with ``api_key``; ``embedded`` is the
            embedded model, started for the block unless it is the model itself.

    Yields:
        :class:`ResolvedModel`. For a configured endpoint, ``abilities`` is the model's
        profile with :func:`abilities_from_env`'s overrides merged over it
        (:func:`~reactgraph.providers.abilities.resolve_abilities`) when any is set, else ``None``. For the
        embedded model, ``abilities`` is the server's (no native tool calls, JSON mode and
        ``json_object_schema`` schema output on, the entry's or ``local_n_ctx`` window, 512-token
        output cap, ``small`` as the entry says) updated by any override
        (``REACTGRAPH_MAX_OUTPUT_TOKENS`` also sets the client's ``max_tokens``); the server
        starts in a worker thread and is stopped when the block exits (also on error or
        cancellation). ``fallbacks`` holds the fallback models.

    Raises:
        ValueError: a malformed environment setting (see :func:`model_from_env` and
            :func:`abilities_from_env`).
        ValueError: a thread count below 1 (also from ``$REACTGRAPH_LOCAL_THREADS``).
        LocalModelError: nothing is configured and the embedded model cannot start (an
            unknown ``local_model``, the ``[local]`` extra is missing, the download failed or
            its hash differs, or the server failed; the one-line message says which).
    """
    specs = fallback_specs(fallback_models, fallback_base_urls, environ)
    overrides = abilities_from_env(environ)
    embedded = {"model": local_model, "n_ctx": local_n_ctx, "n_threads": local_threads, "environ": environ}
    max_tokens = int(overrides.get("max_output_tokens", DEFAULT_MAX_TOKENS))
    async with AsyncExitStack() as stack:
        llm = model_from_env(model=model, base_url=base_url, api_key=api_key, environ=environ)
        if llm is not None:
            resolved = ResolvedModel(
                llm=llm,
                abilities=resolve_abilities(llm, overrides) if overrides else None,
                description=describe_chat_model(llm),
                server=None,
                overrides=overrides,
            )
        else:
            server = await stack.enter_async_context(_embedded_server(embedded, max_tokens, local_start_timeout))
            resolved = ResolvedModel(
                llm=server.chat_model(),
                abilities=dataclasses.replace(server.abilities, **overrides),
                description=server.description,
                server=server,
                overrides=overrides,
            )
        fallbacks: list[FallbackModel] = []
        for name, url in specs:
            if name == EMBEDDED_FALLBACK:
                local = resolved.server or await stack.enter_async_context(
                    _embedded_server(embedded, max_tokens, local_start_timeout))
                fallbacks.append(FallbackModel(local.chat_model(), local.abilities))
                continue
            chat = model_from_env(model=name, base_url=url or base_url, api_key=api_key, environ=environ)
            assert chat is not None  # a name is given
            fallbacks.append(FallbackModel(chat))
        yield dataclasses.replace(resolved, fallbacks=fallbacks)
