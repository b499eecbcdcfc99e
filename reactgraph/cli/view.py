"""What the command line shows of a run: the banner, one card per tool call, the streamed
answer and the footer (:func:`print_events`), and the questions it asks about the tool
calls that wait on a person's approval (:func:`ask_decisions`)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape

from reactgraph.agents.wording import answer_source_words, finish_words, policy_words, protocol_words
from reactgraph.cli.dag import print_dag_event
from reactgraph.core.language import phrase
from reactgraph.events import (
    AnswerDelta,
    AnswerDone,
    AnswerReset,
    AnswerSignalled,
    AnswerStarted,
    ApprovalWaiting,
    Compacted,
    Done,
    Injected,
    ModelSwitched,
    RunError,
    SelectingTools,
    Stalled,
    ThinkingStarted,
    ToolDone,
    ToolStarted,
)
from reactgraph.protocol.jsonparse import safe_json


_OBSERVATION_LINES = 8


def banner_line(model: str, mode: str, tools: int, policy: str, approve: Sequence[str] = ()) -> str:
    """The first line of ``run``, ``resume`` and ``serve`` in plain words: the model, how it
    calls tools, how many tools, the checks its safeguard policy adds, and the tools a person
    approves (``--approve``), e.g. ``"model: gpt-4o, which calls tools through its
    tool-calling API · 24 tools · standard checks"``.

    Args:
        model: The model's description (already redacted).
        mode: The tool-call protocol (``native`` / ``json``), or ``dag:<roles>`` for a DAG agent.
        tools: How many tools the agent has.
        policy: The safeguard policy's name (:mod:`reactgraph.policy.safeguards`).
        approve: The tools a person approves before each call.
    """
    how = (f"which plans steps (DAG; models by role: {mode[4:]})" if mode.startswith("dag:")
           else f"which {protocol_words(mode)}")
    line = f"model: {model}, {how} · {tools} tools · {policy_words(policy)}"
    if approve:
        line += " · you approve each call of " + ("every tool" if "*" in approve else ", ".join(approve))
    return line


def short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else safe_json(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _print_card(console: Console, event: ToolDone) -> None:
    elapsed = f"{event.iter_elapsed or 0:.2f}s"
    approval = event.data.get("approval")
    if event.data.get("repeat_of_decided"):  # asked again for a call already decided: not asked, not run (R13.3)
        outcome = "the same rejection" if approval == "rejected" else "the earlier result"
        console.print(f"  [yellow]↺ {escape(event.tool_name)}[/yellow]({escape(short(event.tool_args))}) "
                      f"[dim]asked again: {approval} before, so {outcome}[/dim]")
        return
    if approval == "rejected":
        console.print(f"  [yellow]⊘ {escape(event.tool_name)} rejected[/yellow]({escape(short(event.tool_args))}) "
                      f"[dim]{escape(short(event.error or '', 300))}[/dim]")
        return
    if event.data.get("ran") is False:  # refused before it started: the tool did nothing (R13.1)
        console.print(f"  [yellow]⊘ {escape(event.tool_name)} not run[/yellow]({escape(short(event.tool_args))}) "
                      f"[dim]{escape(short(event.error or '', 300))}[/dim]")
        return
    if event.error:
        console.print(f"  [red]✗ {escape(event.tool_name)}[/red] [dim]({elapsed})[/dim] {escape(short(event.error, 300))}")
        return
    console.print(f"  [green]✓ {escape(event.tool_name)}[/green] [dim]({elapsed})[/dim]")
    lines = str(event.observation or "").splitlines() or [""]
    for line in lines[:_OBSERVATION_LINES]:
        console.print(f"    [dim]│[/dim] {escape(short(line, 160))}")
    if len(lines) > _OBSERVATION_LINES:
        console.print(f"    [dim]│ … {len(lines) - _OBSERVATION_LINES} more lines[/dim]")
    if event.artifact:
        console.print(f"    [dim]│ artifact: {escape(event.artifact['filename'])}[/dim]")




@dataclass
class _Printed:
    """What the run loop needs from a printed event stream: its :class:`Done` event (``None``
    if the stream ended without one), the calls its :class:`ApprovalWaiting` event listed,
    the message of its last :class:`RunError` (``""`` when none), and the seconds the run has
    worked so far over its parts (a run paused for approval goes on in another stream)."""

    done: Done | None = None
    pending: list[dict[str, Any]] = field(default_factory=list)
    failure: str = ""
    worked: float = 0.0

    @property
    def finish_reason(self) -> str | None:
        return self.done.finish_reason if self.done is not None else None


class _AnswerView:
    """The answer as it streams: on a terminal, rendered as Markdown while it grows (lists,
    tables and bold show as such, not as ``**`` and ``|``); elsewhere (a pipe, a file) the raw
    text, chunk by chunk."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.text = ""
        self.live: Live | None = None
        self.soft_wrap = console.soft_wrap

    def start(self) -> None:
        self.text = ""
        if self.console.is_terminal:
            # The command's console does not wrap (soft_wrap: a long tool line stays one line), which
            # would cut every rendered line of the answer at the terminal's width: the answer wraps.
            self.soft_wrap, self.console.soft_wrap = self.console.soft_wrap, False
            self.live = Live(Markdown(""), console=self.console, auto_refresh=False, vertical_overflow="visible")
            self.live.start()

    def add(self, chunk: str) -> None:
        self.text += chunk
        if self.live is not None:
            self.live.update(Markdown(self.text), refresh=True)
        else:
            self.console.print(chunk, end="", markup=False, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
            self.console.soft_wrap = self.soft_wrap
        else:
            self.console.print()


async def print_events(console: Console, events: Any, *, dag: bool = False, language: str | None = "en",
                        worked: float = 0.0) -> _Printed:
    """Print a run's typed events as they come (DAG-mode events too when ``dag``); the
    engine's own words of the answer's progress are in ``language`` (the question's);
    ``worked`` is the seconds the run worked before it paused for approval (the footer adds them)."""
    printed = _Printed(worked=worked)
    answer = _AnswerView(console)
    async for event in events:
        if dag and print_dag_event(console, event):
            continue
        match event:
            case SelectingTools():
                console.print(f"[dim]… selecting tools ({event.total_tools} available)[/dim]")
            case ToolStarted():
                console.print(f"[cyan]▶ {escape(event.tool_name)}[/cyan]({escape(short(event.tool_args))})")
            case ToolDone():
                _print_card(console, event)
            case ThinkingStarted():
                console.print(f"[dim]… thinking (iteration {event.iteration})[/dim]")
            case AnswerSignalled():
                console.print(f"[dim]{escape(phrase('writing_answer', language))}[/dim]")
            case AnswerStarted():
                console.rule("answer", style="dim")
                answer.start()
            case AnswerDelta():
                answer.add(event.content)
            case AnswerDone():
                answer.stop()
            case AnswerReset():
                answer.stop()
                problems = event.problems if isinstance(event.problems, list) else []
                why = (f"values not in the tool results: {', '.join(event.ungrounded)}" if event.ungrounded
                       else ", ".join(problems) if problems and not event.factless
                       else "it passed on none of the tool results")
                console.print(f"[yellow]↺ answer withdrawn ({escape(why)}); writing it again[/yellow]")
            case Stalled():
                console.print(f"[yellow]… the loop is stuck ({escape(str(event.reason))}): asking for the final answer[/yellow]")
            case RunError():
                printed.failure = str(event.message)
                label = "storage error" if event.kind == "storage_error" else "model error"
                console.print(f"[red]{label}: {escape(printed.failure)}[/red]")
            case Injected():
                console.print(f"[magenta]↳ follow-up: {escape(short(event.content))}[/magenta]")
            case Compacted():
                console.print(f"[dim]── context compacted: {event.original_messages} → {event.kept_messages} messages ──[/dim]")
            case ModelSwitched():
                console.print(f"[yellow]⇄ {escape(event.previous)} failed ({escape(event.reason)}): the {escape(event.call)} "
                              f"call goes on with {escape(event.model)}[/yellow]")
            case ApprovalWaiting():
                printed.pending = list(event.pending or [])
                console.print(f"[yellow]⏸ waiting for approval of {len(printed.pending)} tool call(s)[/yellow]")
            case Done() if event.finish_reason == "waiting":
                printed.done = event  # the pause line said it; the footer comes with the run's end
                printed.worked = worked + event.elapsed
            case Done():
                printed.done = event
                console.rule(style="dim")
                console.print(f"[dim]{escape(footer_line(event, worked + event.elapsed))}[/dim]")
    return printed


def footer_line(done: Done, seconds: float) -> str:
    """The run's footer in plain words: how it ended, how long it worked (``seconds``: every
    part of a run that paused for approval added up), its steps (model calls of the tool loop),
    tokens and model calls, the model that served it and, under ``synthesis="auto"``, which call
    wrote the answer, e.g. ``"Answered in 2.4 s · 2 steps ·
    1830 tokens (1700 in, 130 out) in 3 model calls · model: gpt-4o"``."""
    usage = done.usage
    rounds = f"{done.iterations} step{'s' if done.iterations != 1 else ''}"
    line = (f"{finish_words(done.finish_reason)} in {seconds:.1f} s · {rounds} · {usage['total_tokens']} tokens "
            f"({usage['input_tokens']} in, {usage['output_tokens']} out) in {usage['model_calls']} model call"
            f"{'s' if usage['model_calls'] != 1 else ''}")
    line += f" · model: {done.model}" if done.model else ""
    return line + (f" · {answer_source_words(done.answer_source)}" if isinstance(done.answer_source, str) else "")


async def ask_decisions(console: Console, pending: Sequence[dict[str, Any]], *,
                        approve_all: bool = False) -> dict[str, Any] | None:
    """Ask on the terminal what to do with each call a paused run waits on (SPEC R13.3).

    Args:
        console: Where to print; answers are read from standard input.
        pending: The ``pending`` calls of the ``approval`` event.
        approve_all: Approve every approval request without asking (``--approve-all``);
            a tool's own interrupt is still asked about.

    Returns:
        Decisions by tool call id (or interrupt id) for ``agent.aresume_events``; ``None``
        when the input ended before every call was decided (the run stays waiting).
    """
    decisions: dict[str, Any] = {}
    for call in pending:
        key = call.get("tool_call_id") or call["interrupt_id"]
        if call.get("kind") != "approval":
            console.print(f"[yellow]? a tool asks:[/yellow] {escape(short(call.get('value'), 500))}")
            answer = await _read("  answer: ")
            if answer is None:
                return None
            decisions[key] = answer
            continue
        step = f" [dim](step {escape(str(call['step_id']))})[/dim]" if call.get("step_id") else ""
        console.print(f"[yellow]? approve[/yellow] [cyan]{escape(str(call.get('tool_name')))}[/cyan]"
                      f"({escape(short(call.get('tool_args'), 500))}){step}")
        if approve_all:
            console.print("  [green]approved[/green] [dim](--approve-all)[/dim]")
            decisions[key] = {"type": "approve"}
            continue
        decision = await _ask_one()
        if decision is None:
            return None
        decisions[key] = decision
    return decisions


async def _ask_one() -> dict[str, Any] | None:
    """One call's decision from the terminal; ``None`` at the end of the input."""
    while True:
        choice = await _read("  [a]pprove, [e]dit arguments, [r]eject? ")
        if choice is None:
            return None
        choice = choice.strip().lower()
        if choice in ("a", "approve", "y", "yes"):
            return {"type": "approve"}
        if choice in ("r", "reject", "n", "no"):
            message = await _read("  message for the agent (Enter: none): ")
            return None if message is None else {"type": "reject", "message": message.strip() or None}
        if choice in ("e", "edit"):
            while True:
                text = await _read("  new arguments as a JSON object: ")
                if text is None:
                    return None
                try:
                    args = json.loads(text)
                except ValueError as exc:
                    print(f"  not JSON: {exc}", file=sys.stderr)
                    continue
                if isinstance(args, dict):
                    return {"type": "edit", "args": args}
                print("  the arguments must be a JSON object", file=sys.stderr)


async def _read(prompt: str) -> str | None:
    """A line from standard input after ``prompt``; ``None`` at the end of the input."""
    try:
        return await asyncio.to_thread(input, prompt)
    except EOFError:
        return None
