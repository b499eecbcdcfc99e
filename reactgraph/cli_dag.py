"""DAG mode of the ``reactgraph run`` command (``--dag``, SPEC §9, R10.3): the agent it
builds and how its progress events are printed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool
from rich.console import Console
from rich.markup import escape

from reactgraph.config import AgentSettings
from reactgraph.dag import DAGAgent, DAGSettings
from reactgraph.events import AgentEvent
from reactgraph.models import ResolvedModel
from reactgraph.models.registry import ModelRegistry


def build_dag_agent(resolved: ResolvedModel, tools: Sequence[BaseTool], *, settings: AgentSettings,
                    native: bool, max_rounds: int) -> DAGAgent:
    """The CLI's DAG agent: ``resolved`` is the ``general`` role; ``REACTGRAPH_MODEL_<ROLE>``
    variables add roles (see :meth:`~reactgraph.ModelRegistry.from_env`).

    Raises:
        ValueError: A role variable is malformed, or ``max_rounds`` is below 1.
    """
    models = ModelRegistry.from_env(resolved.llm, abilities=resolved.abilities)
    return DAGAgent(models, tools, use_native_tools=native, settings=settings,
                    dag_settings=DAGSettings(max_rounds=max_rounds))


def _short(text: Any, limit: int = 160) -> str:
    value = str(text).replace("\n", " ")
    return value if len(value) <= limit else value[:limit] + "…"


def print_dag_event(console: Console, event: AgentEvent) -> bool:
    """Print one DAG-mode event (``phase`` planning/analyzing, ``plan``, ``dag_step``,
    ``analysis``); ``False`` for any other event, which the caller prints."""
    data = event.data
    if event.channel == "phase" and data.get("phase") in ("planning", "analyzing"):
        console.print(f"[dim]… {data['phase']} (round {data['round']})[/dim]")
    elif event.channel == "plan":
        console.print(f"[bold]plan, round {data['round']}[/bold]")
        for step in data["steps"]:
            after = f" [dim]after {', '.join(step['dependencies'])}[/dim]" if step["dependencies"] else ""
            hint = f" [dim]· {escape(step['model_hint'])}[/dim]" if step.get("model_hint") else ""
            console.print(f"  [cyan]{escape(step['id'])}[/cyan] {escape(_short(step['task']))}{hint}{after}")
        for warning in data["warnings"]:
            console.print(f"  [yellow]! {escape(warning)}[/yellow]")
    elif event.channel == "dag_step" and data["status"] == "started":
        console.print(f"[cyan]▶ {escape(data['step_id'])}[/cyan] on {escape(data['model_role'])}")
    elif event.channel == "dag_step" and data["status"] == "tool":
        mark = "[red]✗[/red]" if data.get("error") else "[green]✓[/green]"
        detail = data.get("error") or data.get("observation") or ""
        console.print(f"  {escape(data['step_id'])} {mark} {escape(str(data['tool_name']))}: {escape(_short(detail, 120))}")
    elif event.channel == "dag_step" and data["status"] == "completed":
        if data["ok"]:
            console.print(f"[green]■ {escape(data['step_id'])}[/green] [dim]({data['elapsed']:.1f}s)[/dim] "
                          f"{escape(_short(data.get('result', '')))}")
        else:
            console.print(f"[red]■ {escape(data['step_id'])} failed:[/red] {escape(_short(data['error']))}")
    elif event.channel == "analysis":
        verdict = "achieved" if data["achieved"] else "not achieved"
        then = " → re-plan" if data["replan"] else ""
        console.print(f"[bold]analysis:[/bold] {verdict} (confidence {data['confidence']:.2f}){then} "
                      f"[dim]{escape(_short(data['reasoning']))}[/dim]")
    else:
        return event.channel == "dag_step"  # per-iteration progress is not printed
    return True
