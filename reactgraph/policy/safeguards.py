"""Safeguards scoped by evidence: which limits on what a model may do are on, per model (SPEC
R13.1).

A *safeguard* is a setting that changes what a model may do: refuse a call, force an answer,
hide an argument, withdraw an answer. Each was measured on the embedded 135M model, where it
helps, and costs a capable model something it legitimately does (poll a job, pick an id it
found itself, write a derived figure). So the defaults depend on the model, and one place
decides them: the model's :class:`~reactgraph.providers.abilities.ModelAbilities` ``small`` flag (set
by the embedded model's profile, by ``ModelAbilities(small=True)`` or by
``REACTGRAPH_SMALL_MODEL=1``) picks one of two :class:`SafeguardPolicy` values:

* :data:`STRICT` for small models — today's measured defaults of the embedded profile;
* :data:`PERMISSIVE` for every other model — what a capable model needs.

Every :class:`~reactgraph.AgentSettings` field a policy covers defaults to ``None``, meaning
"the model's policy decides"; a value set by the caller always wins
(:func:`resolve_settings`). The table of what each costs and buys is in ``docs/safeguards.md``.

A policy also carries the default of one setting that is no safeguard, because what it
costs and buys was measured per policy: ``synthesis`` (:data:`POLICY_DEFAULTS`; which call
writes the answer, ``docs/costs.md``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from reactgraph.providers.abilities import ModelAbilities
from reactgraph.core.config import TOOL_SELECTION_MAX


@dataclass(frozen=True)
class SafeguardPolicy:
    """A named set of :class:`~reactgraph.AgentSettings` values for the safeguard fields.

    Attributes:
        name: ``"strict"`` or ``"permissive"``.
        settings: ``AgentSettings`` field → value, for every field in :data:`SAFEGUARD_FIELDS`.
    """

    name: str
    settings: MappingProxyType

    def to_dict(self) -> dict[str, Any]:
        """``{"policy": name, **settings}``: the JSON form shown by ``ResolvedModel`` and the CLI."""
        return {"policy": self.name, **self.settings}


STRICT = SafeguardPolicy("strict", MappingProxyType({
    "grounding": "enforce",
    "grounding_min_facts": 2,
    "grounding_derived": False,
    "grounding_reask": False,
    "grounding_check_first": True,
    "answer_from_observations": True,
    "tool_selection_max": 1,
    "optional_args": "named",
    "lexical_gate": True,
    "refuse_unasked_ids": True,
    "stall_repeats": 1,
    "stall_failures": 2,
    "answer_when_covered": True,
    "show_reasoning": False,
}))
"""The small-model policy (the embedded model's profile; any model marked ``small``).
Measured on the embedded SmolLM2-135M (bench/README.md, ``answer_quality.py``): it invents
figures (grounding enforced, checked before it is shown; no derived figures), cannot choose
among tools (selection keeps one), fills every optional filter with the first value offered
(only named optional arguments offered), calls some tool for a greeting (lexical gate), takes
the first id its schema lists (ids the question does not name refused), repeats its first
call until the cap (one unchanged repeat or two calls without a new successful observation
is a stall), adds nothing after an observation that covers the question (answered at once),
and writes no useful reasoning (its loop text is not shown)."""

PERMISSIVE = SafeguardPolicy("permissive", MappingProxyType({
    "grounding": "flag",
    "grounding_min_facts": 1,
    "grounding_derived": True,
    "grounding_reask": True,
    "grounding_check_first": False,
    "answer_from_observations": False,
    "tool_selection_max": TOOL_SELECTION_MAX,
    "optional_args": "all",
    "lexical_gate": False,
    "refuse_unasked_ids": False,
    "stall_repeats": 3,
    "stall_failures": 4,
    "answer_when_covered": False,
    "show_reasoning": True,
}))
"""The policy of every model not marked small: what a capable model legitimately does runs
(polling, fixing its own arguments on the second or third try, ids it found or an earlier
turn named, every optional argument, a derived figure), its answer streams as it is written,
and values no tool returned are flagged under the answer rather than shown as fact."""

SAFEGUARD_FIELDS: tuple[str, ...] = tuple(STRICT.settings)
"""The ``AgentSettings`` fields a policy decides (``None`` in the settings = the policy's value)."""

SAFEGUARDS: MappingProxyType = MappingProxyType({
    "grounding": ("grounding", "grounding_min_facts", "grounding_derived", "grounding_reask", "grounding_check_first"),
    "answer_from_observations": ("answer_from_observations",),
    "tool_selection_max": ("tool_selection_max",),
    "optional_args": ("optional_args",),
    "lexical_gate": ("lexical_gate",),
    "refuse_unasked_ids": ("refuse_unasked_ids",),
    "stall": ("stall_repeats", "stall_failures"),
    "answer_when_covered": ("answer_when_covered",),
    "show_reasoning": ("show_reasoning",),
})
"""Each safeguard by name → the :data:`SAFEGUARD_FIELDS` that make it (grounding is five
settings, stall handling two): the unit ``bench/answer_quality.py --without NAME`` turns off,
so what each buys on a small model is measured on its own."""


def without(names: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """The :data:`STRICT` settings with the named safeguards set to :data:`PERMISSIVE`'s values.

    Args:
        names: Keys of :data:`SAFEGUARDS`.

    Returns:
        ``AgentSettings`` keyword arguments for every field of :data:`SAFEGUARD_FIELDS`.

    Raises:
        KeyError: A name that is no safeguard.
    """
    off = {field for name in names for field in SAFEGUARDS[name]}
    return {field: (PERMISSIVE if field in off else STRICT).settings[field] for field in SAFEGUARD_FIELDS}


def policy_for(abilities: ModelAbilities | None) -> SafeguardPolicy:
    """The safeguard policy of a model.

    Args:
        abilities: The model's resolved abilities; ``None`` (unknown) counts as not small.

    Returns:
        :data:`STRICT` when ``abilities.small``, else :data:`PERMISSIVE`.
    """
    return STRICT if abilities is not None and abilities.small else PERMISSIVE


POLICY_DEFAULTS: MappingProxyType = MappingProxyType({
    "strict": MappingProxyType({"synthesis": "always", "tool_selection": True}),
    "permissive": MappingProxyType({"synthesis": "auto", "tool_selection": "auto"}),
})
"""Policy name → the defaults of settings that are no safeguard but whose best value was
measured per policy (``None`` in :class:`~reactgraph.AgentSettings` = the model's policy's):

* ``synthesis``: ``"always"`` under :data:`STRICT`, where ``grounding="enforce"`` and
  ``answer_from_observations`` make the synthesis node write (or build) every answer anyway;
  ``"auto"`` under :data:`PERMISSIVE`: the loop's own answer stands, so a question costs the
  calls ``create_agent``'s does (bench/calls.py), and on Qwen2.5-Coder-1.5B served as an
  endpoint its answers were as right as the synthesis call's with 3.6 model calls a question
  instead of 5.0 (bench/README.md, ``answer_quality.py``).
* ``tool_selection``: ``True`` under :data:`STRICT` (keeping one tool is what makes a small
  model find the data); ``"auto"`` under :data:`PERMISSIVE`: on the same 1.5B endpoint the
  selection call raised no right-tool rate (6 of 6 with and without it) and cost 2,249 against
  1,319 prompt tokens a question (``bench/prompt_cache.py``)."""


def policy_settings(abilities: ModelAbilities | None) -> dict[str, Any]:
    """The safeguard values a model gets by default: its :func:`policy_for`'s settings, with
    ``answer_from_observations`` off for a small model that writes its answers
    (``abilities.writes_answers``: its synthesis, checked under ``enforce`` before it is
    shown, was measured as right as the observation answer and reading better).

    Returns:
        ``AgentSettings`` field → value, for every field of :data:`SAFEGUARD_FIELDS`.
    """
    policy = policy_for(abilities)
    values = dict(policy.settings)
    if policy is STRICT and abilities is not None and abilities.writes_answers:
        values["answer_from_observations"] = False
    return values


def resolve_settings(settings: Any, abilities: ModelAbilities | None) -> Any:
    """``settings`` with every safeguard field, and every field of :data:`POLICY_DEFAULTS`,
    left ``None`` filled from the model's policy.

    Args:
        settings: An :class:`~reactgraph.AgentSettings`.
        abilities: The model's resolved abilities (:func:`policy_for`).

    Returns:
        A new ``AgentSettings`` (``settings`` itself when nothing was left to the policy),
        filled from :func:`policy_settings`. Values the caller set are kept as they are.
    """
    defaults = {**policy_settings(abilities), **POLICY_DEFAULTS[policy_for(abilities).name]}
    filled = {name: value for name, value in defaults.items() if getattr(settings, name) is None}
    return dataclasses.replace(settings, **filled) if filled else settings
