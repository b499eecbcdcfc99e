"""``reactgraph serve``: the demo agent behind the HTTP server, under uvicorn (SPEC R10.3)."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from fastapi import FastAPI

from reactgraph.agents.react import ReActAgent
from reactgraph.dag import DAGAgent, DAGSettings
from reactgraph.persistence.checkpointing import open_persistence
from reactgraph.core.config import AgentSettings
from reactgraph.tools.mcp import MCPTools, load_mcp_tools
from reactgraph.observability.logs import LogFormat, uvicorn_log_config
from reactgraph.server.runs import ServerSettings
from reactgraph.server.protocols import http_protocol


@dataclass(frozen=True)
class DemoAgent:
    """What :func:`open_demo_agent` yields.

    Attributes:
        agent: The agent: the demo plant's tools, the resolved model, the checkpointer and
            its interrupt queue.
        model: One-line description of the model (e.g. ``"embedded SmolLM2-135M (…)"``).
        checkpoints: Where threads are kept: a SQLite file path, a Postgres URL or ``"memory"``.
        mcp: The MCP servers' tools in the agent (:class:`reactgraph.MCPTools`, with each
            server's outcome), ``None`` without an MCP configuration.
        dag_agent: The DAG-mode agent (SPEC §9) over the same model, tools,
            checkpointer and interrupt queue, as ``reactgraph run --dag`` builds it.
    """

    agent: ReActAgent
    model: str
    checkpoints: str
    mcp: MCPTools | None = None
    dag_agent: DAGAgent | None = None


@asynccontextmanager
async def open_demo_agent(
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    json_mode: bool = False,
    max_iterations: int = AgentSettings.max_iterations,
    db: str | os.PathLike[str] | None = None,
    checkpoints: str | os.PathLike[str] | None = None,
    mcp: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    local_model: str | None = None,
    local_threads: int | None = None,
    fallback_models: Sequence[str] | None = None,
    fallback_base_urls: Sequence[str] | None = None,
    max_rounds: int = DAGSettings.max_rounds,
    synthesis: str | None = None,
    approve: Sequence[str] = (),
) -> AsyncIterator[DemoAgent]:
    """Open the model and the checkpointer and build the demo agent, for the block.

    The model is resolved as for ``reactgraph run`` (arguments, then the environment, then
    the embedded local model; :func:`reactgraph.models.open_model`); checkpoints go where
    :func:`reactgraph.persistence.checkpointing.open_persistence` puts them (``checkpoints``, then
    ``$REACTGRAPH_DATABASE_URL``, then ``checkpoints.db`` in the data directory), so a
    thread survives a server restart. With a Postgres URL the follow-up queue and run
    bookkeeping live in the same database, so several server processes serve the same
    threads (SPEC R7.5). With ``mcp``, the MCP servers of that client configuration are
    connectors of the hub beside the plant's (SPEC R5.4, R13.4): their sessions stay open
    for the block, i.e. the server's life (:func:`reactgraph.tools.mcp.load_mcp_tools`).

    Args:
        model, base_url, api_key: Endpoint settings of the model (``None``: environment).
        json_mode: Force the JSON-in-content protocol (SPEC R2.3).
        max_iterations: Loop cap per run (SPEC R2.6).
        db: The demo plant's SQLite file (``None``: the default under the data directory).
        checkpoints: Checkpoint path or URL (see above).
        mcp: An MCP client configuration (file path or parsed object), or ``None``.
        local_model, local_threads: The embedded model's catalogue name and CPU threads, used
            when no model is configured (``None``: ``$REACTGRAPH_LOCAL_MODEL`` /
            ``$REACTGRAPH_LOCAL_THREADS``, else the defaults; :func:`reactgraph.models.open_model`).
        fallback_models, fallback_base_urls: Fallback models (``None``: the
            environment), as :func:`reactgraph.models.open_model` takes them.
        max_rounds: The DAG agent's plan/run/analyze rounds at most (SPEC R9.4).
        synthesis: Which call writes the answer, ``"always"`` or ``"auto"``
            (``AgentSettings.synthesis``; ``None``: ``$REACTGRAPH_SYNTHESIS``, else the
            model's policy's, :data:`reactgraph.policy.safeguards.POLICY_DEFAULTS`).
        approve: Tools whose every call a person approves first, in both agents (``serve
            --approve``; :func:`reactgraph.demo.agent.approve_names`).

    Yields:
        :class:`DemoAgent`.

    Raises:
        ValueError: ``max_iterations`` or ``max_rounds`` below 1, a malformed model setting
            (a ``REACTGRAPH_MODEL_<ROLE>`` variable too), or ``approve`` naming no tool (checked
            before the model starts).
        sqlite3.Error, OSError: The plant database or the checkpoint file cannot be opened.
        ImportError: A Postgres URL without the ``[postgres]`` extra.
        psycopg.OperationalError: The Postgres database cannot be reached.
        reactgraph.models.LocalModelError: The embedded model cannot start (or is unknown).
        reactgraph.MCPConfigError: The MCP configuration is malformed.
        ImportError: ``mcp`` given without the ``[mcp]`` extra.
    """
    from reactgraph.cli.dag import build_dag_agent
    from reactgraph.demo.agent import approval_rules, build_demo_agent, demo_settings
    from reactgraph.demo.factory import build_factory_hub
    from reactgraph.models import open_model

    if max_iterations < 1:
        raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
    tools = build_factory_hub(db)
    async with AsyncExitStack() as stack:
        servers = None
        if mcp is not None:
            servers = await stack.enter_async_context(load_mcp_tools(mcp, reserved=[tool.name for tool in tools]))
            tools = [*tools, *servers]
        approval = approval_rules(approve, tools)  # a wrong name fails before the model starts
        resolved = await stack.enter_async_context(open_model(
            model=model, base_url=base_url, api_key=api_key, local_model=local_model, local_threads=local_threads,
            fallback_models=fallback_models, fallback_base_urls=fallback_base_urls))
        persistence = await stack.enter_async_context(open_persistence(checkpoints))
        agent = build_demo_agent(resolved, tools, json_mode=json_mode, max_iterations=max_iterations,
                                 checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue,
                                 synthesis=synthesis, approve=approve)
        dag_agent = build_dag_agent(resolved, tools, settings=demo_settings(max_iterations=max_iterations,
                                                                            approval=approval),
                                    native=not json_mode, max_rounds=max_rounds, checkpointer=persistence.checkpointer,
                                    interrupt_queue=persistence.interrupt_queue)
        yield DemoAgent(agent=agent, model=resolved.description, checkpoints=persistence.target, mcp=servers,
                        dag_agent=dag_agent)


class SigtermStop:
    """SIGTERM stops ``reactgraph serve`` the way Ctrl-C does, closing what it opened (MCP
    servers, the model) on the way out.

    Python ends at once on SIGTERM (its default action) and closes nothing: an MCP server
    still starting, or one given up after its start timeout whose stopping was under way,
    outlived the process; and uvicorn, which shuts down gracefully on SIGTERM, raises the
    signal again afterwards, which then ended the process before its MCP sessions were
    closed. With this handler in place (uvicorn restores it and raises the signal to it):

    - before uvicorn serves, a SIGTERM cancels the start (:attr:`stopped` is set);
    - once :meth:`serving` has named the uvicorn server, a SIGTERM asks it to shut down
      gracefully (as its own handler does; harmless when it already has), so a signal in the
      moment before uvicorn takes the signals is not lost and the one it raises again is
      absorbed while the shutdown goes on.

    Use as a context manager around the whole of ``serve``, in the task that runs it, in the
    main thread (elsewhere it does nothing).

    Attributes:
        stopped: A SIGTERM cancelled the start.
    """

    def __init__(self) -> None:
        self.stopped = False
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: Any = None

    def __enter__(self) -> SigtermStop:
        if threading.current_thread() is threading.main_thread():
            self._task = asyncio.current_task()
            self._loop = asyncio.get_running_loop()
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)

    def serving(self, server: uvicorn.Server) -> None:
        """``server`` serves from now on: a SIGTERM asks it to shut down."""
        self._server = server

    def _handle(self, _signum: int, _frame: Any) -> None:
        if self._server is not None:
            self._server.should_exit = True
        elif self._task is not None and self._loop is not None and not self.stopped:
            self.stopped = True
            self._loop.call_soon_threadsafe(self._task.cancel)


def tune_gc() -> None:
    """Set up the garbage collector for serving many concurrent runs.

    Collects once, then freezes what is alive (the imported modules, the compiled graph, the
    tools: about 190,000 objects that live as long as the process), so later collections never
    walk them again. Measured with ``bench/load.py`` (200 concurrent runs, one worker;
    bench/README): the server's CPU per run fell from 25.9 to 18.5 ms and its throughput rose
    from 37.9 to 53.4 runs/s; raising the young generation's threshold as well (10,000 instead
    of 700) changed nothing more. Called by :func:`serve` before it listens; an application
    that embeds :func:`~reactgraph.server.create_app` in a server of its own may call it once its
    agents are built. Process-wide: it changes the collector of everything in the process.
    """
    gc.collect()
    gc.freeze()


async def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, sock: socket.socket | None = None,
                log_format: LogFormat = "text", stop: SigtermStop | None = None) -> None:
    """Serve ``app`` with uvicorn in the running event loop until the process is told to
    stop (Ctrl-C / SIGTERM), then return. The process's garbage collector is set up for
    serving first (:func:`tune_gc`). A request's head must arrive within the app's
    ``ServerSettings.head_timeout`` (:func:`reactgraph.server.protocols.http_protocol`;).

    Args:
        app: Usually from :func:`reactgraph.server.create_app`.
        host: Interface to listen on.
        port: TCP port (0 picks a free one; uvicorn logs the address).
        sock: A socket already listening (a worker of ``serve --workers``,
            :mod:`reactgraph.server.workers`); ``host`` and ``port`` then only name it.
        log_format: uvicorn's own lines (start-up, access, errors) as text or as JSON lines
            (:func:`reactgraph.observability.logs.uvicorn_log_config`).
        stop: The process's :class:`SigtermStop`, told of the uvicorn server before it starts.

    Raises:
        OSError: The address is in use or not available (uvicorn logs the cause).
    """
    tune_gc()
    settings = getattr(getattr(app, "state", None), "settings", None) or ServerSettings()
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info", lifespan="off",
                                           log_config=uvicorn_log_config(log_format),
                                           http=http_protocol(settings.head_timeout)))
    if stop is not None:
        stop.serving(server)
    try:
        await server.serve(sockets=[sock] if sock is not None else None)
    except SystemExit as exc:  # uvicorn exits when it cannot bind; its log line says why
        raise OSError(f"could not listen on {host}:{port}") from exc
