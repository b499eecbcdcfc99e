"""The demo agent exactly as ``reactgraph run`` and ``reactgraph serve`` build it.

One builder for both surfaces and for ``bench/answer_quality.py``, so what is measured is
what a user runs: the demo plant's system prompt, the model's resolved abilities and the
safeguards its abilities call for (:attr:`reactgraph.models.ResolvedModel.safeguards`, applied by
the engine itself).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from reactgraph.agents.react import ReActAgent
from reactgraph.core.config import AgentSettings
from reactgraph.demo.factory import DEMO_SYSTEM_PROMPT
from reactgraph.models import ResolvedModel


SYNTHESIS_ENV = "REACTGRAPH_SYNTHESIS"
"""The environment variable that sets :attr:`AgentSettings.synthesis` of the demo agent
(``reactgraph run``/``chat``/``serve``) when ``--synthesis`` is not given."""


ENV_APPROVE = "REACTGRAPH_APPROVE"
"""The environment variable naming the tools whose calls a person approves (comma list), read
when ``--approve`` is not given."""


def approve_names(given: Iterable[str] | None = None, environ: Any = None) -> tuple[str, ...]:
    """The tool names whose calls need a person's approval, from ``--approve`` options (each a
    name or a comma list) or, when none is given, ``$REACTGRAPH_APPROVE`` (a comma list).

    Args:
        given: The option values (``None`` or empty: the environment decides).
        environ: The environment (``os.environ`` when ``None``).

    Returns:
        The names in order, without blanks or repeats (``"*"`` stands for every tool).
    """
    values = list(given or [])
    if not values:
        values = [(os.environ if environ is None else environ).get(ENV_APPROVE, "")]
    names = [name.strip() for value in values for name in value.split(",")]
    return tuple(dict.fromkeys(name for name in names if name))


def approval_rules(approve: Sequence[str], tools: Sequence[BaseTool]) -> dict[str, str]:
    """``AgentSettings.approval`` for the tools named in ``approve`` (SPEC R13.3): each
    always asks a person first; the tools not named keep their own ``metadata["approval"]``.

    Raises:
        ValueError: A name that is no tool of ``tools`` (the message lists the tools).
    """
    known = [tool.name for tool in tools]
    unknown = [name for name in approve if name != "*" and name not in known]
    if unknown:
        raise ValueError(f"--approve / ${ENV_APPROVE} names no tool: {', '.join(unknown)} "
                         f"(tools: {', '.join(sorted(known))})")
    return {name: "always" for name in approve}


def demo_settings(*, max_iterations: int = AgentSettings.max_iterations, synthesis: str | None = None,
                  approval: dict[str, str] | None = None) -> AgentSettings:
    """The settings of a demo run.

    Args:
        max_iterations: Most model calls in the tool loop (SPEC R2.6).
        synthesis: :attr:`AgentSettings.synthesis` (``"always"`` or ``"auto"``); ``None``:
            ``$REACTGRAPH_SYNTHESIS``, else the setting's default (``None``: the model's policy decides).
        approval: Approval rules by tool name (:func:`approval_rules`; ``None``: the tools'
            own metadata decides).

    Returns:
        :class:`AgentSettings` with the demo system prompt, ``max_iterations``, ``synthesis``
        and ``approval``; the safeguard fields are left to the model's policy
        (:mod:`reactgraph.policy.safeguards`).

    Raises:
        ValueError: ``max_iterations`` below 1, or an unknown ``synthesis`` (from the
            environment too).
    """
    chosen = synthesis or os.environ.get(SYNTHESIS_ENV) or AgentSettings.synthesis
    return AgentSettings(max_iterations=max_iterations, system_prompt=DEMO_SYSTEM_PROMPT, synthesis=chosen,
                         approval=approval or {})


def build_demo_agent(
    resolved: ResolvedModel,
    tools: Sequence[BaseTool],
    *,
    json_mode: bool = False,
    max_iterations: int = AgentSettings.max_iterations,
    checkpointer: Any = None,
    interrupt_queue: Any = None,
    synthesis: str | None = None,
    approve: Sequence[str] = (),
) -> ReActAgent:
    """The demo :class:`ReActAgent` on ``resolved`` with ``tools``.

    Args:
        resolved: The model from :func:`reactgraph.models.open_model`.
        tools: Usually :func:`reactgraph.demo.factory.build_factory_hub`.
        json_mode: Force the JSON protocol (``--json-mode``) even for a model with native
            tool calls (SPEC R2.2).
        max_iterations: Most model calls in the tool loop (SPEC R2.6).
        checkpointer, interrupt_queue: From :func:`reactgraph.persistence.checkpointing.open_persistence`;
            ``None`` for none / a new in-memory queue.
        synthesis: Which call writes the answer (:func:`demo_settings`).
        approve: Tools whose every call a person approves first (``--approve``,
            :func:`approve_names`; ``"*"``: all of them).

    Returns:
        The agent, with ``resolved.fallbacks`` as its fallback models.

    Raises:
        ValueError: ``max_iterations`` below 1, or ``approve`` names no tool of ``tools``.
    """
    return ReActAgent(
        resolved.llm, tools, use_native_tools=not json_mode, abilities=resolved.abilities,
        settings=demo_settings(max_iterations=max_iterations, synthesis=synthesis,
                               approval=approval_rules(approve, tools)),
        checkpointer=checkpointer,
        interrupt_queue=interrupt_queue, fallbacks=resolved.fallbacks,
    )
