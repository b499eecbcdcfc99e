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
import sqlite3
import sys
import uuid
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any

from rich.console import Console
from rich.markup import escape

from reactgraph.cli.dag import build_dag_agent
from reactgraph.cli.options import apply_deadline_options, build_parser
from reactgraph.cli.view import ask_decisions, banner_line, print_events, short
from reactgraph.core.language import detect_language
from reactgraph.core.redaction import redact
from reactgraph.policy.safeguards import policy_for


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
            console.print(f"[bold]? {escape(short(args.question, 300))}[/bold]")
            events = agent.astream_events(args.question, thread_id=args.thread)
        else:
            console.print(f"[bold]↻ resuming thread {escape(args.thread)}[/bold]")
            events = agent.aresume_events(args.thread)
        try:
            printed = await print_events(console, events, dag=dag, language=language)
            while printed.finish_reason == "waiting":
                decisions = await ask_decisions(console, printed.pending, approve_all=args.approve_all)
                if decisions is None:
                    raise RunFailed(f"the run waits for approval; decide with: reactgraph resume {args.thread}")
                printed = await print_events(console, agent.aresume_events(args.thread, decisions), dag=dag,
                                              language=language, worked=printed.worked)
        except (NothingToResumeError, ThreadBusyError) as exc:
            raise SetupError(str(exc)) from exc
        done = printed.done
        if printed.finish_reason == "model_error":
            reason = f"the model failed: {short(printed.failure or 'no answer', 300)}"
            if args.resumable:
                reason += f"; resume with: reactgraph resume {args.thread}"
            # A model that never answered is a set-up problem (wrong URL, key or model name).
            raise SetupError(reason) if done is None or not done.iterations else RunFailed(reason)
        if printed.finish_reason == "storage_error":
            raise RunFailed(f"the run's state could not be stored: {short(printed.failure or 'no answer', 300)}")
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
    parser = build_parser()
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
    apply_deadline_options(args)
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
