"""The command line's options: the commands (``run``, ``resume``, ``serve``) and the
options they share, each with one name in every command (:func:`build_parser`)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from reactgraph.core.config import SYNTHESIS_MODES, AgentSettings
from reactgraph.models.local import default_threads


MCP_HELP = ('MCP client configuration ({"mcpServers" or VS Code\'s "servers": {name: {command, args, env} | {url, type}}}): '
            "each server's tools join the demo plant's hub for the run (docs/mcp.md)")


def build_parser() -> argparse.ArgumentParser:
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
                            "(default: $REACTGRAPH_SYNTHESIS, else the policy decides: strict (a small model) always, "
                            "permissive (any other) auto)")
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


def apply_deadline_options(args: argparse.Namespace) -> None:
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
