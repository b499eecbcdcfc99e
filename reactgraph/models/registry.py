"""Models by role, for DAG mode (SPEC R9.3; seed 000, "model binding").

A :class:`ModelRegistry` holds one chat model per *role*: ``general`` (required, the
default), the usual ``fast``, ``reasoning`` and ``smart``, and any custom role. Each plan
step names a role in its ``model_hint``; right before the step's ReAct loop starts, the DAG
executor calls :meth:`ModelRegistry.resolve` with that hint and runs the whole step on the
model it returns.

Resolution: the hint is normalized (case, surrounding space, ``-`` and spaces become
``_``); a registered role of that name wins; anything else (no hint, an unknown role, a
model name the planner made up) falls back to ``general``.

From the environment (:meth:`ModelRegistry.from_env`), per role ``<ROLE>`` (upper case):

================================  ==========================================================
``REACTGRAPH_MODEL_<ROLE>``       model name; setting it registers the role
``REACTGRAPH_BASE_URL_<ROLE>``    endpoint of that role (default ``OPENAI_BASE_URL``)
``REACTGRAPH_API_KEY_<ROLE>``     key of that role (default ``OPENAI_API_KEY``)
``REACTGRAPH_TOOL_CALL_<ROLE>``   ability overrides of that role (default: the unsuffixed
``REACTGRAPH_JSON_MODE_<ROLE>``   variable, see :mod:`reactgraph.models.env`)
``REACTGRAPH_CONTEXT_WINDOW_<ROLE>``
``REACTGRAPH_MAX_OUTPUT_TOKENS_<ROLE>``
``REACTGRAPH_PROVIDER_<ROLE>``
``REACTGRAPH_FALLBACK_MODELS_<ROLE>``      fallback models of that role, comma-separated (
``REACTGRAPH_FALLBACK_BASE_URLS_<ROLE>``   none when unset; ``general`` also reads the unsuffixed
                                           variables, see :func:`~reactgraph.models.env.fallback_specs`)
================================  ==========================================================

The ``general`` model is the one :func:`~reactgraph.models.model_from_env` configures
(``REACTGRAPH_MODEL_GENERAL`` may name it instead of ``REACTGRAPH_MODEL``), or the model
passed in (e.g. the embedded one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from reactgraph.providers.abilities import ModelAbilities, resolve_abilities
from reactgraph.providers import select_profile
from reactgraph.engine.fallbacks import (
    ChainMember,
    CircuitBreaker,
    FallbackChain,
    FallbackModel,
    as_fallback,
    unpack_fallbacks,
)
from reactgraph.models.env import (
    EMBEDDED_FALLBACK,
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_CONTEXT_WINDOW,
    ENV_FALLBACK_BASE_URLS,
    ENV_FALLBACK_MODELS,
    ENV_JSON_MODE,
    ENV_MAX_OUTPUT_TOKENS,
    ENV_MODEL,
    ENV_PROVIDER,
    ENV_TOOL_CALL,
    abilities_from_env,
    describe_chat_model,
    fallback_specs,
    model_from_env,
)

DEFAULT_ROLE = "general"
"""The role every unresolvable hint falls back to (SPEC R9.3)."""

ROLE_DESCRIPTIONS: dict[str, str] = {
    "general": "the default model, for most steps",
    "fast": "a quick, cheap model, for simple lookups",
    "reasoning": "a model for multi-step reasoning, comparisons and analysis",
    "smart": "the strongest model, for the hardest judgement",
}
"""What the planner is told about the well-known roles (custom roles show their own description)."""

ENV_ROLE_MODEL_PREFIX = f"{ENV_MODEL}_"

NOT_ROLE_VARIABLES = frozenset({"REACTGRAPH_MODEL_DIR"})
"""Variables that start like a role's model variable but name no role:
``REACTGRAPH_MODEL_DIR`` is the embedded models' directory (it made a role
``dir`` whose model had no endpoint, so every DAG run of the Studio graph failed)."""

ENV_ROLE_BASE_URL = "REACTGRAPH_BASE_URL"
ENV_ROLE_API_KEY = "REACTGRAPH_API_KEY"

_ROLE_NAME = re.compile(r"[a-z0-9_]+")


def normalize_role(name: str) -> str:
    """The canonical form of a role name or hint: lower case, stripped, ``-`` and runs of
    spaces turned into ``_`` (``" Fast "`` → ``"fast"``, ``"deep-think"`` → ``"deep_think"``)."""
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


@dataclass(frozen=True)
class RegisteredModel:
    """One role of a :class:`ModelRegistry`.

    Attributes:
        role: The role name (normalized).
        llm: The chat model of the role.
        abilities: What ``llm`` can do (explicit ones merged over its profile, SPEC R2.2).
        description: One line for the planner's prompt (e.g. "a quick, cheap model ...").
        fallbacks: The role's fallback models, in order: the steps, the planner
            and the analyzer on this role go on with them when its model fails.
    """

    role: str
    llm: BaseChatModel
    abilities: ModelAbilities
    description: str
    fallbacks: tuple[Any, ...] = ()

    def chained(self, call: str = "synthesis") -> Any:
        """The role's model for one call or stream that goes on with the role's fallback
        models as the fallback policy says (:class:`~reactgraph.engine.fallbacks.FallbackChain`;
        a stream only before its first chunk); ``llm`` itself without fallbacks.

        Args:
            call: What the call is, for the ``model_switch`` event.
        """
        if not self.fallbacks:
            return self.llm
        members = []
        for model in [FallbackModel(self.llm, self.abilities), *self.fallbacks]:
            profile = select_profile(model.llm, resolve_abilities(model.llm, model.abilities).provider)
            members.append(ChainMember(model.label, model.llm, profile, model.breaker or CircuitBreaker()))
        return FallbackChain(members, call)


class ModelRegistry:
    """Chat models by role, resolved by a plan step's ``model_hint`` (SPEC R9.3).

    Args:
        general: The default model, used for every hint that names no registered role.
        abilities: Its abilities (a :class:`~reactgraph.ModelAbilities`, a dict of some of
            them merged over the model's profile, or ``None`` for the profile alone).
        description: What the planner is told about it; defaults to the role's entry in
            :data:`ROLE_DESCRIPTIONS`.

    Example::

        models = ModelRegistry(ChatOpenAI(model="gpt-4o"))
        models.register("fast", ChatOpenAI(model="gpt-4o-mini"))
        models.resolve("FAST").role      # "fast"
        models.resolve("vision").role    # "general" (fallback)
    """

    def __init__(
        self,
        general: BaseChatModel,
        *,
        abilities: ModelAbilities | dict[str, Any] | None = None,
        description: str | None = None,
        fallbacks: Sequence[Any] = (),
    ) -> None:
        self._models: dict[str, RegisteredModel] = {}
        self.register(DEFAULT_ROLE, general, abilities=abilities, description=description, fallbacks=fallbacks)

    def register(
        self,
        role: str,
        llm: BaseChatModel,
        *,
        abilities: ModelAbilities | dict[str, Any] | None = None,
        description: str | None = None,
        fallbacks: Sequence[Any] = (),
    ) -> ModelRegistry:
        """Add or replace the model of ``role``.

        Args:
            role: Any name; normalized with :func:`normalize_role`. ``general`` replaces
                the default model.
            llm: The chat model.
            abilities: As for the constructor.
            description: What the planner is told about the role; defaults to
                :data:`ROLE_DESCRIPTIONS`, else ``"custom role <role>"``.
            fallbacks: The role's fallback models: chat models, ``(model,
                abilities)`` pairs or :class:`~reactgraph.FallbackModel`\\ s; a
                ``with_fallbacks`` chain given as ``llm`` adds its fallbacks first.

        Returns:
            The registry itself, so calls chain.

        Raises:
            ValueError: ``role`` normalizes to something other than letters, digits and ``_``.
            TypeError: ``llm`` is not a LangChain chat model, or a fallback is none.
        """
        name = normalize_role(role)
        llm, chained = unpack_fallbacks(llm)
        chain = tuple(as_fallback(item) for item in [*chained, *fallbacks])
        if not _ROLE_NAME.fullmatch(name):
            raise ValueError(f"a role name is letters, digits and '_', got {role!r}")
        if not isinstance(llm, BaseChatModel):
            raise TypeError(f"the model of role {name!r} must be a LangChain chat model, got {type(llm).__name__}")
        text = description or ROLE_DESCRIPTIONS.get(name) or f"custom role {name}"
        self._models[name] = RegisteredModel(name, llm, resolve_abilities(llm, abilities), text, chain)
        return self

    @property
    def roles(self) -> list[str]:
        """Registered role names, ``general`` first, then in registration order."""
        return list(self._models)

    def __contains__(self, role: object) -> bool:
        return isinstance(role, str) and normalize_role(role) in self._models

    def get(self, role: str) -> RegisteredModel:
        """The entry of exactly ``role`` (normalized).

        Raises:
            KeyError: ``role`` is not registered.
        """
        return self._models[normalize_role(role)]

    def resolve(self, hint: str | None) -> RegisteredModel:
        """The model for a step's ``model_hint`` (SPEC R9.3): the registered role the hint
        names, else ``general``. Never raises."""
        if isinstance(hint, str):
            entry = self._models.get(normalize_role(hint))
            if entry is not None:
                return entry
        return self._models[DEFAULT_ROLE]

    def describe(self) -> str:
        """One ``- role: description (model)`` line per role, for the planner's prompt."""
        return "\n".join(
            f"- {entry.role}: {entry.description} ({describe_chat_model(entry.llm)})" for entry in self._models.values()
        )

    @classmethod
    def from_env(
        cls,
        general: BaseChatModel | None = None,
        *,
        abilities: ModelAbilities | dict[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        fallbacks: Sequence[Any] | None = None,
    ) -> ModelRegistry:
        """Build a registry from ``REACTGRAPH_MODEL_<ROLE>`` and friends (module docstring).

        Args:
            general: The default model; ``None`` builds it from the environment like
                :func:`~reactgraph.models.model_from_env` (``REACTGRAPH_MODEL_GENERAL`` or
                ``REACTGRAPH_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``).
            abilities: Abilities of ``general`` when it is given; ignored otherwise (the
                environment's ability overrides apply).
            environ: Variables to read instead of ``os.environ``.
            fallbacks: The fallback models of ``general`` (``None``: its variables).

        Returns:
            The registry: ``general`` plus one role per non-empty ``REACTGRAPH_MODEL_<ROLE>``,
            each with the fallback models its variables name (``general``: those given in
            ``fallbacks``, else its variables).

        Raises:
            ValueError: No general model is given or configured, a role names a model but
                no endpoint, an ability variable does not parse (the message names the
                variable), or a role's fallback is ``embedded`` (only ``reactgraph run``
                and ``serve`` start the embedded model as a fallback).
        """
        env = os.environ if environ is None else environ
        if general is None:
            general_env = role_environ(env, DEFAULT_ROLE)
            general = model_from_env(environ=general_env)
            if general is None:
                raise ValueError(
                    f"no general model: set {ENV_MODEL} with {ENV_BASE_URL} or {ENV_API_KEY}, or pass one"
                )
            abilities = abilities_from_env(general_env) or None
        general_fallbacks = _role_fallbacks(env, DEFAULT_ROLE) if fallbacks is None else fallbacks
        registry = cls(general, abilities=abilities, fallbacks=general_fallbacks)
        for key in sorted(env):
            if not key.startswith(ENV_ROLE_MODEL_PREFIX) or not env[key].strip() or key in NOT_ROLE_VARIABLES:
                continue
            role = normalize_role(key[len(ENV_ROLE_MODEL_PREFIX):])
            if role == DEFAULT_ROLE:
                continue
            view = role_environ(env, role)
            try:
                llm = model_from_env(environ=view)
            except ValueError as exc:
                raise ValueError(f"{key} is set: {exc}") from exc
            registry.register(role, llm, abilities=abilities_from_env(view) or None,
                              fallbacks=_role_fallbacks(env, role))
        return registry


def _role_fallbacks(environ: Mapping[str, str], role: str) -> list[Any]:
    """The fallback chat models ``REACTGRAPH_FALLBACK_MODELS_<ROLE>`` names (for ``general``
    also the unsuffixed variable), each at its base URL, else the role's endpoint."""
    view = role_environ(environ, role)
    own = {var: environ.get(f"{var}_{role.upper()}", "") for var in (ENV_FALLBACK_MODELS, ENV_FALLBACK_BASE_URLS)}
    if role != DEFAULT_ROLE or own[ENV_FALLBACK_MODELS].strip():
        view.update(own)
    models: list[Any] = []
    for name, url in fallback_specs(None, None, view):
        if name == EMBEDDED_FALLBACK:
            raise ValueError(f"{ENV_FALLBACK_MODELS}_{role.upper()}: the embedded model is a fallback of "
                             "reactgraph run and serve only; name a served model")
        models.append(model_from_env(model=name, base_url=url, environ=view))
    return models


def role_environ(environ: Mapping[str, str], role: str) -> dict[str, str]:
    """The environment as :func:`~reactgraph.models.model_from_env` should see it for
    ``role``: each role variable (``REACTGRAPH_MODEL_<ROLE>``, ``REACTGRAPH_BASE_URL_<ROLE>``,
    ``REACTGRAPH_API_KEY_<ROLE>``, ``REACTGRAPH_TOOL_CALL_<ROLE>`` …) that is set replaces its
    general variable; unset ones keep the general value."""
    suffix = f"_{role.upper()}"
    view = dict(environ)
    pairs = [(ENV_MODEL, ENV_MODEL), (ENV_BASE_URL, ENV_ROLE_BASE_URL), (ENV_API_KEY, ENV_ROLE_API_KEY)]
    pairs += [(var, var) for var in (ENV_TOOL_CALL, ENV_JSON_MODE, ENV_CONTEXT_WINDOW, ENV_MAX_OUTPUT_TOKENS, ENV_PROVIDER)]
    for target, source in pairs:
        value = environ.get(source + suffix, "")
        if value.strip():
            view[target] = value
    return view
