"""DAG mode of the ``reactgraph run`` command (``--dag``, SPEC §9, R10.3): the agent it
builds and how its progress events are printed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool
from rich.console import Console
from rich.markup import escape

from reactgraph.core.config import AgentSettings
from reactgraph.dag import DAGAgent, DAGSettings
from reactgraph.events import (
    AgentEvent,
    Analysis,
    Analyzing,
    DagStepCompleted,
    DagStepIteration,
    DagStepStarted,
    DagStepTool,
    DagStepToolStarted,
    PlanMade,
    Planning,
)
from reactgraph.persistence.interrupts import InterruptQueue
from reactgraph.models import ResolvedModel
from reactgraph.models.registry import ModelRegistry
from reactgraph.agents.wording import verdict_words


def build_dag_agent(resolved: ResolvedModel, tools: Sequence[BaseTool], *, settings: AgentSettings,
                    native: bool, max_rounds: int, checkpointer: Any = None,
                    interrupt_queue: InterruptQueue | None = None) -> DAGAgent:
    """The CLI's DAG agent: ``resolved`` is the ``general`` role, with its fallback models;
    ``REACTGRAPH_MODEL_<ROLE>`` variables add roles (see :meth:`~reactgraph.ModelRegistry.from_env`).
    With ``checkpointer`` (and its ``interrupt_queue``, :func:`~reactgraph.open_persistence`)
    its runs are kept and resumable (SPEC R13.8).

    Raises:
        ValueError: A role variable is malformed, or ``max_rounds`` is below 1.
    """
    models = ModelRegistry.from_env(resolved.llm, abilities=resolved.abilities, fallbacks=resolved.fallbacks)
    return DAGAgent(models, tools, use_native_tools=native, settings=settings,
                    dag_settings=DAGSettings(max_rounds=max_rounds), checkpointer=checkpointer,
                    interrupt_queue=interrupt_queue)


def _short(text: Any, limit: int = 160) -> str:
    value = str(text).replace("\n", " ")
    return value if len(value) <= limit else value[:limit] + "…"


def print_dag_event(console: Console, event: AgentEvent) -> bool:
    """Print one DAG-mode event (:class:`Planning`, :class:`Analyzing`, :class:`PlanMade`,
    the ``dag_step`` kinds, :class:`Analysis`); ``False`` for any other event, which the
    caller prints."""
    match event:
        case Planning() | Analyzing():
            console.print(f"[dim]… {event.phase} (round {event.round})[/dim]")
        case PlanMade():
            console.print(f"[bold]plan, round {event.round}[/bold]")
            for step in event.steps:
                after = f" [dim]after {', '.join(step['dependencies'])}[/dim]" if step["dependencies"] else ""
                hint = f" [dim]· {escape(step['model_hint'])}[/dim]" if step.get("model_hint") else ""
                console.print(f"  [cyan]{escape(step['id'])}[/cyan] {escape(_short(step['task']))}{hint}{after}")
            for warning in event.warnings:
                console.print(f"  [yellow]! {escape(warning)}[/yellow]")
        case DagStepStarted():
            console.print(f"[cyan]▶ {escape(event.step_id)}[/cyan] on {escape(event.model_role)}")
        case DagStepTool():
            mark = "[red]✗[/red]" if event.error else "[green]✓[/green]"
            detail = event.error or event.observation or ""
            console.print(f"  {escape(event.step_id)} {mark} {escape(str(event.tool_name))}: {escape(_short(detail, 120))}")
        case DagStepCompleted() if event.ok:
            console.print(f"[green]■ {escape(event.step_id)}[/green] [dim]({event.elapsed:.1f}s)[/dim] "
                          f"{escape(_short(event.result or ''))}")
        case DagStepCompleted():
            console.print(f"[red]■ {escape(event.step_id)} failed:[/red] {escape(_short(event.error))}")
        case Analysis():
            console.print(f"[bold]analysis:[/bold] {verdict_words(event.achieved, event.confidence, event.replan)} "
                          f"[dim]{escape(_short(event.reasoning))}[/dim]")
        case DagStepIteration() | DagStepToolStarted():
            pass  # per-iteration progress and tool starts are not printed (the finished tool is)
        case _:
            return False
    return True
