"""The ``reactgraph`` command (SPEC R10.3).

``reactgraph run QUESTION`` answers a question with the demo plant's tools
(``reactgraph.demo.factory.DEMO_QUESTION`` is the one ``--help`` suggests):
it prints each tool call as it happens (tool, arguments, observation, elapsed), streams
the answer, and ends with a footer (iterations, tokens, elapsed). With no model
configured it starts the embedded local model (the ``[local]`` extra). With ``--dag`` it
answers in DAG mode (plan, steps, analysis; see :mod:`reactgraph.cli.dag`). Runs, ReAct and
DAG, are checkpointed (SQLite under ``$REACTGRAPH_HOME`` by default, ``--checkpoints`` or
``$REACTGRAPH_DATABASE_URL`` for another file or Postgres); ``--thread ID`` continues a
conversation, and ``reactgraph resume ID`` finishes a run that was interrupted (crash,
Ctrl-C, a model that kept failing), in DAG mode when the thread's checkpoints say so
(SPEC R13.8); Ctrl-C says so. ``--local-threads N`` sets the embedded
model's CPU threads. ``reactgraph --version`` prints the version; ``reactgraph`` alone,
the commands. Options have one name in every command (``--db-url`` is kept as a hidden
alias of ``--checkpoints`` for one release). A tool call that needs a person's approval (SPEC R13.3;
the demo's tool that writes a work order) is asked about on the terminal: approve, edit its
arguments, or reject it with a message for the agent; ``--approve-all`` approves every
call without asking (scripts). End the input (Ctrl-D) to leave the run waiting: ``reactgraph
resume ID`` asks again.

``reactgraph serve [--host 127.0.0.1] [--port 8000]`` serves the HTTP API and web page
(:mod:`reactgraph.server`) with the same tools and model until stopped with Ctrl-C;
``--workers N`` runs N server processes on the port (Postgres checkpoints only:
:mod:`reactgraph.server.workers`); ``--otel`` sends traces, ``--log-format json`` writes
JSON log lines, ``/metrics`` serves Prometheus metrics (docs/observability.md).

Exit status of ``run`` and ``resume``: 0 when an answer was produced; 2 with a one-line
reason when set-up failed (bad option or environment value, unreadable demo or checkpoint
database, the local model could not start, a configured model that never answered, nothing
to resume, a run already going on the thread); 1 with a one-line reason when the model
failed partway through the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sqlite3
import sys
import uuid
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape

from reactgraph.cli.dag import build_dag_agent, print_dag_event
from reactgraph.core.config import SYNTHESIS_MODES, AgentSettings
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
from reactgraph.core.language import detect_language, phrase
from reactgraph.models.local import default_threads
from reactgraph.core.redaction import redact
from reactgraph.policy.safeguards import policy_for
from reactgraph.agents.wording import answer_source_words, finish_words, policy_words, protocol_words

_OBSERVATION_LINES = 8

MCP_HELP = ('MCP client configuration ({"mcpServers" or VS Code\'s "servers": {name: {command, args, env} | {url, type}}}): '
            "each server's tools join the demo plant's hub for the run (docs/mcp.md)")


def _parser() -> argparse.ArgumentParser:
    from reactgraph.demo.factory import DEMO_QUESTION

    parser = argparse.ArgumentParser(prog="reactgraph", description="A two-phase ReAct agent engine on LangGraph.",
                                     epilog=f'Start with: reactgraph run "{DEMO_QUESTION}", then reactgraph serve. '
                                            "Each command has its own --help.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("run", help="answer a question with the demo plant's tools")
    run.add_argument("question", help=f'the question, e.g. "{DEMO_QUESTION}"')
    run.add_argument("--thread", help="conversation id: continue this thread (default: a new one, printed)")
    run.add_argument("--dag", action="store_true", help="plan, run each step as its own ReAct loop, analyze, re-plan")
    resume = commands.add_parser("resume", help="finish an interrupted run (ReAct or DAG) from its last checkpoint")
    resume.add_argument("thread", help="the interrupted run's thread id")
    for command in (run, resume):
        _add_agent_options(command)
        command.add_argument("--approve-all", action="store_true",
                             help="approve every tool call that needs approval without asking (for scripts)")
    _add_serve_parser(commands)
    return parser


def _version() -> str:
    """The installed distribution's version (the source tree's when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reactgraph")
    except PackageNotFoundError:
        return "0.1.0 (not installed)"


def _add_agent_options(command: argparse.ArgumentParser) -> None:
    """The options every command that runs the demo agent takes, under one name each
    (a former name stays as a hidden alias for one release)."""
    model = command.add_argument_group("model")
    model.add_argument("--model", help="model name (default: $REACTGRAPH_MODEL, else the embedded model)")
    model.add_argument("--base-url", help="the model's OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    model.add_argument("--api-key", help="the model endpoint's API key (default: $OPENAI_API_KEY)")
    model.add_argument("--json-mode", action="store_true",
                       help="force the JSON-in-content protocol instead of native tool calls")
    _add_local_model_options(model)
    _add_fallback_options(model)
    _add_deadline_options(model)
    agent = command.add_argument_group("agent")
    agent.add_argument("--max-iterations", type=int, default=AgentSettings.max_iterations,
                       help="most model calls in the tool loop of one run (default: %(default)s)")
    agent.add_argument("--synthesis", choices=SYNTHESIS_MODES, default=None,
                       help="which call writes the answer: 'always' a synthesis call after the loop, 'auto' the "
                            "loop's own final answer, streamed, unless synthesis adds something "
                            "(default: $REACTGRAPH_SYNTHESIS, else always)")
    agent.add_argument("--max-rounds", type=int, default=3,
                       help="DAG runs: plan/run/analyze rounds at most (default: %(default)s)")
    agent.add_argument("--db", help="demo plant database file (default: under $REACTGRAPH_HOME or ~/.local/share/reactgraph)")
    agent.add_argument("--mcp", metavar="FILE", help=MCP_HELP)
    agent.add_argument("--checkpoints", metavar="PATH|URL",
                       help="where threads are kept: a SQLite file, sqlite:///path, a postgresql:// URL or 'memory' "
                            "(default: $REACTGRAPH_DATABASE_URL, else checkpoints.db under $REACTGRAPH_HOME)")
    agent.add_argument("--db-url", dest="checkpoints", help=argparse.SUPPRESS)  # the former name of --checkpoints
    agent.add_argument("--approve", action="append", metavar="TOOL",
                       help="a person approves every call of TOOL before it runs (repeatable or a comma list; '*': "
                            "every tool; default: $REACTGRAPH_APPROVE; docs/approval.md)")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_local_model_options(group: Any) -> None:
    """``--local-model`` and ``--local-threads``: which embedded model runs when no model is
    configured, and on how many CPU threads."""
    from reactgraph.models.catalog import DEFAULT_LOCAL_MODEL, EMBEDDED_MODELS

    group.add_argument("--local-model", metavar="NAME",
                       help=f"the embedded model when no model is configured: {', '.join(EMBEDDED_MODELS)} "
                            f"(default: $REACTGRAPH_LOCAL_MODEL, else {DEFAULT_LOCAL_MODEL}; docs/embedded-model.md)")
    group.add_argument("--local-threads", type=_positive_int, metavar="N",
                       help="CPU threads of the embedded model (default: $REACTGRAPH_LOCAL_THREADS, else "
                            f"{default_threads()} on this machine: one core is left to the rest)")


def _add_fallback_options(command: argparse.ArgumentParser) -> None:
    """``--fallback-model`` and ``--fallback-base-url``, repeatable."""
    command.add_argument("--fallback-model", action="append", dest="fallback_models", metavar="NAME",
                         help="a model to go on with when the model fails (repeatable, tried in order; "
                              "'embedded' is the embedded model; default: $REACTGRAPH_FALLBACK_MODELS)")
    command.add_argument("--fallback-base-url", action="append", dest="fallback_base_urls", metavar="URL",
                         help="the endpoint of the fallback model given in the same position (default: "
                              "$REACTGRAPH_FALLBACK_BASE_URLS, else the model's endpoint)")


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not value > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be positive seconds (or inf), got {text}")
    return value


def _add_deadline_options(group: Any) -> None:
    """``--model-timeout`` and ``--first-token-timeout``: the deadline of each model call
    (:mod:`reactgraph.engine.deadlines`)."""
    group.add_argument("--model-timeout", type=_positive_seconds, metavar="SECONDS",
                       help="most seconds one model call may take, a stream until its last chunk; past it the call "
                            "fails as a timeout (retried, then the fallback model) (default: $REACTGRAPH_MODEL_TIMEOUT, "
                            "else 300)")
    group.add_argument("--first-token-timeout", type=_positive_seconds, metavar="SECONDS",
                       help="most seconds a streamed model call may wait for its first chunk (default: "
                            "$REACTGRAPH_MODEL_FIRST_TOKEN_TIMEOUT, else 180)")


def _apply_deadline_options(args: argparse.Namespace) -> None:
    """Put ``--model-timeout`` / ``--first-token-timeout`` in this process's environment,
    where every agent and model client it builds (and every ``serve`` worker it starts)
    reads its deadline (:func:`reactgraph.engine.deadlines.resolve_deadline`)."""
    from reactgraph.engine.deadlines import MODEL_FIRST_TOKEN_TIMEOUT_ENV, MODEL_TIMEOUT_ENV

    for name, variable in (("model_timeout", MODEL_TIMEOUT_ENV), ("first_token_timeout", MODEL_FIRST_TOKEN_TIMEOUT_ENV)):
        value = getattr(args, name, None)
        if value is not None:
            os.environ[variable] = repr(value)


def _add_serve_parser(commands: Any) -> None:
    serve = commands.add_parser(
        "serve", help="serve the HTTP API (SSE) and the web page with the demo plant's tools",
        description="Serve the HTTP API (SSE) and the web page with the demo plant's tools. The page and API are "
                    "open to this machine only, unless $REACTGRAPH_API_KEY is set: then every client must send it "
                    "as a bearer token (docs/server.md).")
    listen = serve.add_argument_group("server")
    listen.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: %(default)s)")
    listen.add_argument("--port", type=int, default=8000, help="TCP port (default: %(default)s)")
    listen.add_argument("--workers", type=int, default=1,
                        help="server processes sharing the port, one core each (default: %(default)s; above 1 "
                             "needs Postgres checkpoints)")
    listen.add_argument("--max-message-chars", type=int, default=None,
                        help="longest accepted message in characters (default: 20000)")
    listen.add_argument("--max-body-bytes", type=int, default=None,
                        help="largest accepted request body in bytes (default: 262144)")
    listen.add_argument("--head-timeout", type=float, default=None, metavar="SECONDS",
                        help="most seconds a request's head may take before the connection gets 408 and is closed "
                             "(default: 10)")
    listen.add_argument("--body-timeout", type=float, default=None, metavar="SECONDS",
                        help="most seconds without a byte of a request's body before it gets 408 (default: 30)")
    listen.add_argument("--body-deadline", type=float, default=None, metavar="SECONDS",
                        help="most seconds reading a whole request body may take, however slowly it drips, before "
                             "it gets 408 (default: 60)")
    listen.add_argument("--allowed-host", action="append", dest="allowed_hosts", metavar="HOST",
                        help="a host name clients may address while no $REACTGRAPH_API_KEY is set (repeatable; "
                             "default: localhost, 127.0.0.1, ::1; '*' allows any)")
    listen.add_argument("--client-keys", dest="client_keys", default=None, metavar="LIST_OR_FILE",
                        help="several bearer tokens for clients, each naming a principal that owns the threads it "
                             "starts (another principal gets 404 on them): 'token=principal,token2=principal2' or a "
                             "file of token=principal lines (default: $REACTGRAPH_API_KEYS; docs/server.md)")
    listen.add_argument("--dag", action="store_true",
                        help='runs that name no mode run in DAG mode (plan, steps, analysis); a client may still ask '
                             'for either with "mode" (docs/server.md)')
    _add_agent_options(serve)
    observe = serve.add_argument_group("observability")
    observe.add_argument("--otel", action="store_true",
                         help="send each run's OpenTelemetry spans over OTLP/HTTP as the OTEL_* environment variables "
                              "say (needs the otel extra; docs/observability.md)")
    observe.add_argument("--log-format", choices=("text", "json"), default="text",
                         help="the request and run_end log lines on stderr as text or JSON lines (default: %(default)s)")
    observe.add_argument("--public-metrics", action="store_true",
                         help="GET /metrics needs no bearer token (default: the same $REACTGRAPH_API_KEY as the API)")
    observe.add_argument("--no-metrics", dest="metrics", action="store_false",
                         help="no GET /metrics and no metrics recorded (each run then carries no observer "
                              "unless --otel)")


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


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else safe_json(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _print_card(console: Console, event: ToolDone) -> None:
    elapsed = f"{event.iter_elapsed or 0:.2f}s"
    approval = event.data.get("approval")
    if event.data.get("repeat_of_decided"):  # asked again for a call already decided: not asked, not run (R13.3)
        outcome = "the same rejection" if approval == "rejected" else "the earlier result"
        console.print(f"  [yellow]↺ {escape(event.tool_name)}[/yellow]({escape(_short(event.tool_args))}) "
                      f"[dim]asked again: {approval} before, so {outcome}[/dim]")
        return
    if approval == "rejected":
        console.print(f"  [yellow]⊘ {escape(event.tool_name)} rejected[/yellow]({escape(_short(event.tool_args))}) "
                      f"[dim]{escape(_short(event.error or '', 300))}[/dim]")
        return
    if event.error:
        console.print(f"  [red]✗ {escape(event.tool_name)}[/red] [dim]({elapsed})[/dim] {escape(_short(event.error, 300))}")
        return
    console.print(f"  [green]✓ {escape(event.tool_name)}[/green] [dim]({elapsed})[/dim]")
    lines = str(event.observation or "").splitlines() or [""]
    for line in lines[:_OBSERVATION_LINES]:
        console.print(f"    [dim]│[/dim] {escape(_short(line, 160))}")
    if len(lines) > _OBSERVATION_LINES:
        console.print(f"    [dim]│ … {len(lines) - _OBSERVATION_LINES} more lines[/dim]")
    if event.artifact:
        console.print(f"    [dim]│ artifact: {escape(event.artifact['filename'])}[/dim]")


async def _run(args: argparse.Namespace, console: Console) -> int:
    from reactgraph.persistence.checkpointing import open_persistence
    from reactgraph.dag.graph import is_dag_thread
    from reactgraph.demo.agent import approval_rules, approve_names, build_demo_agent, demo_settings
    from reactgraph.demo.factory import build_factory_hub
    from reactgraph.core.errors import LocalModelError, NothingToResumeError, ThreadBusyError
    from reactgraph.models import describe_chat_model, open_model

    if args.max_iterations < 1:
        raise ValueError("--max-iterations must be at least 1")
    if args.command == "run" and not args.question.strip():
        raise ValueError("the question is empty")
    try:
        tools = build_factory_hub(args.db)
    except sqlite3.Error as exc:
        raise SetupError(f"cannot open the demo database {args.db or ''}: {exc}".replace("  ", " ")) from exc
    async with AsyncExitStack() as stack:
        try:
            persistence = await stack.enter_async_context(open_persistence(args.checkpoints))
        except Exception as exc:
            if not _is_database_error(exc):
                raise
            raise SetupError(f"cannot open the checkpoint database: {' '.join(str(exc).split())}") from exc
        if args.command == "resume" and await persistence.checkpointer.aget_tuple(
                {"configurable": {"thread_id": args.thread}}) is None:
            raise SetupError(f"thread {args.thread!r} has no checkpoint")  # before any MCP server starts
        # A DAG thread is resumed by a DAG agent (its checkpoints say which graph wrote them, R13.8).
        dag = args.dag if args.command == "run" else await is_dag_thread(persistence.checkpointer, args.thread)
        if args.command == "run" and args.thread and await persistence.checkpointer.aget_tuple(
                {"configurable": {"thread_id": args.thread}}) is not None:
            if dag != await is_dag_thread(persistence.checkpointer, args.thread):
                mode = "DAG" if not dag else "ReAct"
                raise SetupError(f"thread {args.thread!r} holds {mode} runs; continue it "
                                 f"{'with' if mode == 'DAG' else 'without'} --dag, or start a new thread")
        if args.mcp:
            tools = [*tools, *await _open_mcp(stack, args.mcp, [tool.name for tool in tools], console)]
        approve = approve_names(args.approve)
        approval = approval_rules(approve, tools)  # a wrong name fails before the model starts
        try:
            resolved = await stack.enter_async_context(open_model(
                model=args.model, base_url=args.base_url, api_key=args.api_key,
                local_model=args.local_model, local_threads=args.local_threads,
                fallback_models=args.fallback_models, fallback_base_urls=args.fallback_base_urls))
        except LocalModelError as exc:
            raise SetupError(str(exc)) from exc
        if dag:
            settings = demo_settings(max_iterations=args.max_iterations, approval=approval)
            agent: Any = build_dag_agent(resolved, tools, settings=settings, native=not args.json_mode,
                                         max_rounds=args.max_rounds, checkpointer=persistence.checkpointer,
                                         interrupt_queue=persistence.interrupt_queue)
            mode = f"dag:{', '.join(agent.models.roles)}"
        else:
            agent = build_demo_agent(resolved, tools, json_mode=args.json_mode, max_iterations=args.max_iterations,
                                     checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue,
                                     synthesis=args.synthesis, approve=approve)
            mode = agent.mode
        args.thread = args.thread or uuid.uuid4().hex[:12]
        args.resumable = persistence.target != "memory"
        console.print(f"[dim]{escape(banner_line(redact(resolved.description), mode, len(tools), resolved.safeguards['policy'], approve))}[/dim]")
        if resolved.fallbacks:
            names = ", ".join(describe_chat_model(fallback.llm) for fallback in resolved.fallbacks)
            console.print(f"[dim]fallbacks: {escape(redact(names))}[/dim]")
        console.print(f"[dim]thread: {escape(args.thread)} · checkpoints: {escape(redact(persistence.target))}[/dim]")
        language = detect_language(args.question) if args.command == "run" else None  # a resume: not known
        if args.command == "run":
            console.print(f"[bold]? {escape(_short(args.question, 300))}[/bold]")
            events = agent.astream_events(args.question, thread_id=args.thread)
        else:
            console.print(f"[bold]↻ resuming thread {escape(args.thread)}[/bold]")
            events = agent.aresume_events(args.thread)
        try:
            printed = await _print_events(console, events, dag=dag, language=language)
            while printed.finish_reason == "waiting":
                decisions = await ask_decisions(console, printed.pending, approve_all=args.approve_all)
                if decisions is None:
                    raise RunFailed(f"the run waits for approval; decide with: reactgraph resume {args.thread}")
                printed = await _print_events(console, agent.aresume_events(args.thread, decisions), dag=dag,
                                              language=language, worked=printed.worked)
        except (NothingToResumeError, ThreadBusyError) as exc:
            raise SetupError(str(exc)) from exc
        done = printed.done
        if printed.finish_reason == "model_error":
            reason = f"the model failed: {_short(printed.failure or 'no answer', 300)}"
            if args.resumable:
                reason += f"; resume with: reactgraph resume {args.thread}"
            # A model that never answered is a set-up problem (wrong URL, key or model name).
            raise SetupError(reason) if done is None or not done.iterations else RunFailed(reason)
        if printed.finish_reason == "storage_error":
            raise RunFailed(f"the run's state could not be stored: {_short(printed.failure or 'no answer', 300)}")
        if printed.finish_reason == "plan_failed":
            raise RunFailed(str(done.answer if done is not None else ""))
        return 0 if done is not None and str(done.answer).strip() else 1


async def _open_mcp(stack: AsyncExitStack, path: str, reserved: Sequence[str], console: Console) -> list[Any]:
    """Open the MCP servers of ``--mcp`` for the rest of ``stack`` and print what started
    (SPEC R13.4); a server that did not start is one yellow line, not a failure.

    Raises:
        MCPConfigError: The file is unreadable or malformed (exit status 2).
        SetupError: The ``mcp`` extra is missing.
    """
    from reactgraph.tools.mcp import load_mcp_tools

    announce_mcp(path)
    try:
        tools = await stack.enter_async_context(load_mcp_tools(path, reserved=reserved))
    except ImportError as exc:
        raise SetupError(str(exc)) from exc
    print_mcp_summary(console, tools)
    return list(tools)


def announce_mcp(path: str, say: Callable[[str], Any] | None = None) -> None:
    """Say on stderr, in one line, which MCP servers the command now waits for (``npx`` may
    download a package first), and for how long at most (SPEC R5.4: each a connector of the hub).

    Args:
        path: The ``--mcp`` file.
        say: Where the line goes instead of stderr (``serve --log-format json``: a log record).

    Raises:
        MCPConfigError: The file is unreadable or malformed (checked before the line is printed).
    """
    from reactgraph.tools.mcp import STARTUP_TIMEOUT, parse_mcp_config

    names = list(parse_mcp_config(path))
    if names:
        line = f"starting MCP servers: {', '.join(names)} (up to {STARTUP_TIMEOUT:g} s) …"
        if say is not None:
            say(line)
        else:
            print(line, file=sys.stderr, flush=True)


def print_mcp_summary(console: Console, tools: Any) -> None:
    """The servers of :class:`~reactgraph.MCPTools` on the terminal: one dim line for those
    that started, one yellow line per server that did not."""
    started = [f"{escape(name)} ({len(names)} tools)" for name, names in tools.servers.items()]
    if started:
        console.print(f"[dim]mcp: {' · '.join(started)}[/dim]")
    for name, reason in tools.failures.items():
        console.print(f"[yellow]mcp: server {escape(name)} failed to start: {escape(reason)}[/yellow]")


def _is_database_error(exc: BaseException) -> bool:
    """True for the errors of opening a checkpoint database: SQLite's, psycopg's (Postgres
    unreachable, credentials refused) and the missing ``[postgres]`` extra."""
    return isinstance(exc, (ImportError, sqlite3.Error)) or type(exc).__module__.split(".")[0] in ("psycopg", "psycopg_pool")


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


async def _print_events(console: Console, events: Any, *, dag: bool = False, language: str | None = "en",
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
                console.print(f"[cyan]▶ {escape(event.tool_name)}[/cyan]({escape(_short(event.tool_args))})")
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
                console.print(f"[magenta]↳ follow-up: {escape(_short(event.content))}[/magenta]")
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
            console.print(f"[yellow]? a tool asks:[/yellow] {escape(_short(call.get('value'), 500))}")
            answer = await _read("  answer: ")
            if answer is None:
                return None
            decisions[key] = answer
            continue
        step = f" [dim](step {escape(str(call['step_id']))})[/dim]" if call.get("step_id") else ""
        console.print(f"[yellow]? approve[/yellow] [cyan]{escape(str(call.get('tool_name')))}[/cyan]"
                      f"({escape(_short(call.get('tool_args'), 500))}){step}")
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


def _server_settings(args: argparse.Namespace) -> Any:
    """The ``ServerSettings`` of ``reactgraph serve``'s options. Without ``--allowed-host``,
    the allowed hosts are the loopback names plus ``--host`` when it names one interface
    (not ``0.0.0.0`` or ``::``), so the page opens at the printed address.

    Raises:
        ValueError: An option out of range (the settings' own checks).
        ImportError: The ``server`` extra is not installed.
    """
    from reactgraph.server import ServerSettings

    options: dict[str, Any] = {"max_message_chars": args.max_message_chars, "max_body_bytes": args.max_body_bytes,
                               "public_metrics": args.public_metrics, "metrics": args.metrics,
                               "default_mode": "dag" if args.dag else "react",
                               "head_timeout": args.head_timeout, "body_timeout": args.body_timeout,
                               "body_deadline": args.body_deadline}
    if args.client_keys is not None:
        from reactgraph.server.owners import parse_api_keys

        options["api_keys"] = parse_api_keys(args.client_keys)
    if args.allowed_hosts:
        options["allowed_hosts"] = tuple(args.allowed_hosts)
    elif args.host not in ("0.0.0.0", "::", "", *ServerSettings.allowed_hosts):
        options["allowed_hosts"] = (*ServerSettings.allowed_hosts, args.host)
    return ServerSettings(**{key: value for key, value in options.items() if value is not None})


def _serve_workers(args: argparse.Namespace, console: Console) -> int:
    """``reactgraph serve --workers N``: check the options once, reserve the port, and fork
    the workers, each running :func:`_serve` on it (:mod:`reactgraph.server.workers`).

    Raises:
        WorkersError: Several workers on SQLite or memory checkpoints (one line).
        ValueError: Another option out of range.
        OSError: The address cannot be listened on.
    """
    from reactgraph.observability.metrics import prepare_multiprocess
    from reactgraph.server.workers import check_shared, run_workers, worker_socket

    check_shared(args.workers, args.checkpoints)
    prepare_multiprocess()  # before the fork: every worker writes its metrics where /metrics adds them up
    _server_settings(args)
    if args.max_iterations < 1:
        raise ValueError("--max-iterations must be at least 1")
    sock = worker_socket(args.host, args.port)
    console.print(f"[dim]{args.workers} worker processes on {escape(args.host)}:{sock.getsockname()[1]}[/dim]")

    def worker(sock: Any, ready: Any) -> int:
        try:
            return asyncio.run(_serve(args, console, sock=sock, ready=ready))
        except (SetupError, ValueError, OSError) as exc:
            _report(args, f"error: {exc}")
            return 2
        except KeyboardInterrupt:
            return 0

    return run_workers(worker, sock, args.workers)


async def _serve(args: argparse.Namespace, console: Console, sock: Any = None, ready: Any = None) -> int:
    """``reactgraph serve``: open the demo agent and serve it until stopped; a worker of
    ``--workers`` serves on the listening ``sock`` and calls ``ready()`` just before. A
    SIGTERM, while it starts or serves, closes what it opened (MCP servers, the model) and ends
    it with status 0 (:class:`~reactgraph.server.serve.SigtermStop`)."""
    try:
        from reactgraph.server.serve import SigtermStop
    except ImportError as exc:
        raise SetupError(f"the server needs the server extra: pip install 'reactgraph[server]' ({exc})") from exc
    with SigtermStop() as stop:
        try:
            return await _serve_until_stopped(args, console, stop, sock, ready)
        except asyncio.CancelledError:
            if not stop.stopped:
                raise
            return 0


async def _serve_until_stopped(args: argparse.Namespace, console: Console, stop: Any, sock: Any = None,
                               ready: Any = None) -> int:
    """The body of :func:`_serve`; ``stop`` is handed to :func:`~reactgraph.server.serve`."""
    from reactgraph.demo.agent import approve_names
    from reactgraph.demo.factory import DEMO_EXAMPLES
    from reactgraph.core.errors import LocalModelError
    from reactgraph.server import create_app, open_demo_agent, serve

    if args.max_iterations < 1:
        raise ValueError("--max-iterations must be at least 1")
    server_settings = _server_settings(args)
    if args.mcp:
        announce_mcp(args.mcp, _json_lines(args))
    try:
        context = open_demo_agent(model=args.model, base_url=args.base_url, api_key=args.api_key,
                                  json_mode=args.json_mode, max_iterations=args.max_iterations,
                                  db=args.db, checkpoints=args.checkpoints, mcp=args.mcp,
                                  local_model=args.local_model, local_threads=args.local_threads,
                                  fallback_models=args.fallback_models, fallback_base_urls=args.fallback_base_urls,
                                  max_rounds=args.max_rounds, synthesis=args.synthesis,
                                  approve=approve_names(args.approve))
        demo = await context.__aenter__()
    except Exception as exc:
        if not isinstance(exc, (LocalModelError, ImportError)) and not _is_database_error(exc):
            raise
        raise SetupError(" ".join(str(exc).split())) from exc
    try:
        auth = "bearer token required" if server_settings.resolved_api_key() else "no authentication"
        banner = banner_line(redact(demo.model), demo.agent.mode, len(demo.agent.tools),
                             policy_for(demo.agent.abilities).name, approve_names(args.approve))
        default = "a plan of steps (DAG)" if server_settings.default_mode == "dag" else "one tool loop (ReAct)"
        console.print(f"[dim]{escape(banner)} · conversations kept in {escape(redact(demo.checkpoints))} · {auth} · "
                      f"runs answer with {default} unless the client asks for the other way[/dim]")
        if demo.mcp is not None:
            print_mcp_summary(console, demo.mcp)
        port = sock.getsockname()[1] if sock is not None else args.port
        console.print(f"[bold]page: http://{args.host}:{port}/[/bold]")
        provider = _observe(args, console)
        app = create_app(demo.agent, server_settings, dag_agent=demo.dag_agent, examples=DEMO_EXAMPLES)
        if ready is not None:
            ready()
        try:
            await serve(app, args.host, port, sock=sock, log_format=args.log_format, stop=stop)
        finally:
            if provider is not None:  # a worker ends without atexit handlers: send the last spans now
                provider.shutdown()
        return 0
    finally:
        await context.__aexit__(None, None, None)


def _observe(args: argparse.Namespace, console: Any) -> Any:
    """Set up ``serve``'s log lines (``--log-format``) and, with ``--otel``, its traces
    (:mod:`reactgraph.observability`), saying on ``console`` where the spans go; returns the
    tracer provider made, else ``None``.

    Raises:
        SetupError: ``--otel`` without the otel extra.
    """
    from reactgraph import observability
    from reactgraph.observability.logs import configure_logging

    configure_logging(args.log_format)
    if not args.otel:
        return None
    try:
        from reactgraph.observability.tracing import configure_otel, describe_tracing

        provider = configure_otel()
        console.print(f"[dim]{escape(redact(describe_tracing(provider)))}[/dim]")
        observability.instrument(tracer_provider=provider, metrics=args.metrics)
    except ImportError as exc:
        raise SetupError(f"--otel needs the otel extra: pip install 'reactgraph[otel]' ({exc})") from exc
    return provider if hasattr(provider, "shutdown") else None


class SetupError(Exception):
    """The command could not start (reported as one line, exit status 2)."""


class RunFailed(Exception):
    """The run started but ended without a real answer (reported as one line, exit status 1)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reactgraph`` command.

    Args:
        argv: Arguments without the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        The exit status: 0 answer produced, 1 the model failed mid-run, 2 set-up failed.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `reactgraph`: what it can do, not an error
        parser.print_help()
        return 0
    logging.basicConfig(level=logging.ERROR, format="reactgraph: %(message)s")
    console: Any = Console(highlight=False, soft_wrap=True)
    if _json_lines(args):  # every line `serve --log-format json` prints is JSON
        from reactgraph.observability.logs import LogConsole, configure_logging

        configure_logging("json")
        console = LogConsole()
    args.thread = getattr(args, "thread", None)
    args.resumable = False
    _apply_deadline_options(args)
    try:
        if args.command == "serve" and args.workers != 1:
            return _serve_workers(args, console)
        return asyncio.run(_serve(args, console) if args.command == "serve" else _run(args, console))
    except (SetupError, ValueError, OSError) as exc:
        _report(args, f"error: {exc}")
        return 2
    except RunFailed as exc:
        _report(args, f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        _report(args, f"interrupted{_resume_hint(args)}")
        return 130


def _json_lines(args: argparse.Namespace) -> Callable[[str], Any] | None:
    """Under ``serve --log-format json``, where a line the command says goes: an ``INFO``
    record of ``reactgraph.serve``, written as JSON (:mod:`reactgraph.observability.logs`);
    ``None`` otherwise (the terminal)."""
    if getattr(args, "command", None) != "serve" or getattr(args, "log_format", "text") != "json":
        return None
    from reactgraph.observability.logs import SERVE_LOGGER

    return SERVE_LOGGER.info


def _report(args: argparse.Namespace, text: str) -> None:
    """The command's last line on stderr, ``reactgraph: <text>``; under ``serve
    --log-format json`` an ``ERROR`` record of ``reactgraph.serve`` instead."""
    if _json_lines(args) is None:
        print(f"reactgraph: {text}", file=sys.stderr)
        return
    from reactgraph.observability.logs import SERVE_LOGGER

    SERVE_LOGGER.error(text)


def _resume_hint(args: argparse.Namespace) -> str:
    """What a stopped ``run`` or ``resume`` leaves, and the commands that go on from it."""
    if args.command == "serve" or not args.thread:
        return ""
    if not args.resumable:
        return " (the run was not checkpointed, so it cannot be resumed)"
    return (f"; the thread is kept: reactgraph resume {args.thread} finishes this run, "
            f"reactgraph run --thread {args.thread} \"…\" asks a new question in it")


if __name__ == "__main__":
    sys.exit(main())
