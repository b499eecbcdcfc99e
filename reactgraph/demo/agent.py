"""The demo agent exactly as ``reactgraph run`` and ``reactgraph serve`` build it.

One builder for both surfaces and for ``bench/answer_quality.py``, so what is measured is
what a user runs: the demo plant's system prompt, the model's resolved abilities and the
safeguards its abilities call for (:attr:`reactgraph.models.ResolvedModel.safeguards`, applied by
the engine itself).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool

from reactgraph.agent import ReActAgent
from reactgraph.config import AgentSettings
from reactgraph.demo.factory import DEMO_SYSTEM_PROMPT
from reactgraph.models import ResolvedModel


SYNTHESIS_ENV = "REACTGRAPH_SYNTHESIS"
"""The environment variable that sets :attr:`AgentSettings.synthesis` of the demo agent
(``reactgraph run``/``chat``/``serve``) when ``--synthesis`` is not given."""


def demo_settings(*, max_iterations: int = AgentSettings.max_iterations, synthesis: str | None = None) -> AgentSettings:
    """The settings of a demo run.

    Args:
        max_iterations: Most model calls in the tool loop (SPEC R2.6).
        synthesis: :attr:`AgentSettings.synthesis` (``"always"`` or ``"auto"``); ``None``:
            ``$REACTGRAPH_SYNTHESIS``, else the setting's default.

    Returns:
        :class:`AgentSettings` with the demo system prompt, ``max_iterations`` and
        ``synthesis``; the safeguard fields are left to the model's policy
        (:mod:`reactgraph.safeguards`).

    Raises:
        ValueError: ``max_iterations`` below 1, or an unknown ``synthesis`` (from the
            environment too).
    """
    chosen = synthesis or os.environ.get(SYNTHESIS_ENV) or AgentSettings.synthesis
    return AgentSettings(max_iterations=max_iterations, system_prompt=DEMO_SYSTEM_PROMPT, synthesis=chosen)


def build_demo_agent(
    resolved: ResolvedModel,
    tools: Sequence[BaseTool],
    *,
    json_mode: bool = False,
    max_iterations: int = AgentSettings.max_iterations,
    checkpointer: Any = None,
    interrupt_queue: Any = None,
    synthesis: str | None = None,
) -> ReActAgent:
    """The demo :class:`ReActAgent` on ``resolved`` with ``tools``.

    Args:
        resolved: The model from :func:`reactgraph.models.open_model`.
        tools: Usually :func:`reactgraph.demo.factory.build_factory_hub`.
        json_mode: Force the JSON protocol (``--json-mode``) even for a model with native
            tool calls (SPEC R2.2).
        max_iterations: Most model calls in the tool loop (SPEC R2.6).
        checkpointer, interrupt_queue: From :func:`reactgraph.checkpointing.open_persistence`;
            ``None`` for none / a new in-memory queue.
        synthesis: Which call writes the answer (:func:`demo_settings`).

    Returns:
        The agent, with ``resolved.fallbacks`` as its fallback models (issue 41).

    Raises:
        ValueError: ``max_iterations`` below 1.
    """
    return ReActAgent(
        resolved.llm, tools, use_native_tools=not json_mode, abilities=resolved.abilities,
        settings=demo_settings(max_iterations=max_iterations, synthesis=synthesis), checkpointer=checkpointer,
        interrupt_queue=interrupt_queue, fallbacks=resolved.fallbacks,
    )
