"""One MCP server's session (:class:`MCPServer`): opened in a task of its own, reopened
after the server went down, its calls' failures turned into one-line reasons."""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.tools import BaseTool, ToolException

from reactgraph.core.redaction import mapping_secrets, redact, url_secrets
from reactgraph.tools.mcp.config import RECONNECT_AFTER, REQUEST_TIMEOUT, STARTUP_TIMEOUT
from reactgraph.tools.mcp.processes import (
    KILL_GRACE_SECONDS,
    SETTLE_SECONDS,
    exit_reason,
    spawned,
    stop_process_groups,
    watch_spawned_processes,
)

logger = logging.getLogger(__name__)


def connection_secrets(connection: Mapping[str, Any]) -> tuple[str, ...]:
    """What a server's failure lines must not show: its URL's credentials,
    query values and environment values (a ``${env:VAR}`` put there), its headers' and its
    process environment's values (:mod:`reactgraph.core.redaction`)."""
    found = mapping_secrets(connection.get("headers")) + mapping_secrets(connection.get("env"))
    if isinstance(connection.get("url"), str):
        found += url_secrets(connection["url"])
    return tuple(found)


def one_line(exc: BaseException) -> str:
    """An exception as one line: the innermost real error of an exception group (what
    ``anyio`` task groups raise), as ``Type: message``, the message's whitespace folded."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_STREAM_CLOSED = frozenset({"BrokenResourceError", "ClosedResourceError", "EndOfStream", "McpError"})
"""Errors a stdio transport raises when the server's process has gone."""



class MCPServer:
    """One MCP server's session, owned by a task of its own for as long as it is open.

    The session is opened and closed in that task (the transports' ``anyio`` task groups
    must be), so a transport failure ends the task, not the caller; calls from any task or
    thread go through :meth:`call`. A server that went down gets a new session from the
    first call ``reconnect_after`` seconds later (never when ``None``). Made by
    :func:`load_mcp_tools`; one object per server.

    Attributes:
        name: The server's name in the configuration.
        error: Why the server is unavailable, one line (``None`` while it is up).
        tools: The adapter's LangChain tools as listed at start (remote names).
    """

    def __init__(self, name: str, connection: dict[str, Any], *, reconnect_after: float | None = RECONNECT_AFTER) -> None:
        self.name = name
        self.connection = connection
        self.secrets = connection_secrets(connection)
        self.reconnect_after = reconnect_after
        self.error: str | None = None
        self.tools: list[BaseTool] = []
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._dead = asyncio.Event()
        self._errlog: Any = None
        self._timeout = STARTUP_TIMEOUT
        self._down_since = 0.0
        self._closed = False
        self._reopening: asyncio.Lock | None = None
        self._stderr_at_ready = 0
        self._lost: str | None = None
        self._exited = False
        self._spawned: list[list[Any]] = []

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Any]:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        if self.connection["transport"] != "stdio":
            from langchain_mcp_adapters.sessions import create_session

            async with create_session(self.connection) as session:  # type: ignore[arg-type]
                yield session
            return
        parameters = StdioServerParameters(command=self.connection["command"], args=self.connection["args"],
                                           env=self.connection.get("env"), cwd=self.connection.get("cwd"))
        async with (stdio_client(parameters, errlog=self._errlog) as (read, write),
                    ClientSession(read, write, **(self.connection.get("session_kwargs") or {})) as session):
            yield session

    def _stderr_size(self) -> int:
        try:
            return os.fstat(self._errlog.fileno()).st_size if self._errlog is not None else 0
        except (OSError, ValueError):
            return 0

    def _stderr_tail(self, since: int = 0) -> str:
        """`` (stderr: <its last line>)`` of what the process wrote from byte ``since`` on, or ``""``."""
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(since)
            lines = [line.strip() for line in self._errlog.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f" (stderr: {lines[-1][:200]})" if lines else ""

    def _why_down(self, failure: BaseException | None, process: Any) -> str:
        """Why the session ended, one line. A stdio process's exit says it; its standard error
        is quoted only when it can explain it: never after a signal, and after the server was
        up only what it wrote since (not its start-up banner)."""
        since = self._stderr_at_ready if self._ready.is_set() else 0
        returncode = getattr(process, "returncode", None)
        if returncode is not None and (self._exited or not self._stop.is_set()):  # not stopped by us
            return exit_reason(returncode) + ("" if returncode < 0 else self._stderr_tail(since))
        if failure is None or isinstance(failure, asyncio.CancelledError):
            reason = self._lost or "the server closed the connection"
        else:
            reason = one_line(failure)
            if self.connection["transport"] == "stdio" and reason.split(":")[0] in _STREAM_CLOSED:
                reason = "the server process exited"
            elif self._ready.is_set():
                reason = f"the session ended: {reason}"
        return redact(reason + self._stderr_tail(since), self.secrets)

    async def _own(self) -> None:
        from langchain_mcp_adapters.tools import load_mcp_tools as list_tools

        watch_spawned_processes()
        processes: list[Any] = []
        self._spawned.append(processes)  # every session's processes, for close()
        spawned.set(processes)
        failure: BaseException | None = None
        try:
            async with self._open() as session:
                await session.initialize()
                self.tools = await list_tools(session, server_name=self.name)
                self._session = session
                self._stderr_at_ready = self._stderr_size()
                self._ready.set()
                await self._until_stopped_or_exited(processes[0] if processes else None)
        except BaseException as exc:  # noqa: BLE001 - the session's end, whatever it was, is this server's error
            failure = exc
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            if self.error is None and (self._lost is not None or not self._stop.is_set()):
                self.error = self._why_down(failure, processes[0] if processes else None)
            self._mark_down()
            self._ready.set()

    async def _until_stopped_or_exited(self, process: Any) -> None:
        """Hold the session until it is stopped or, for stdio, until its process exits."""
        waits = [asyncio.ensure_future(self._stop.wait())]
        if process is not None:
            waits.append(asyncio.ensure_future(process.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        if not self._stop.is_set():
            self._exited = True
            self._lost = "the server process exited"

    def _mark_down(self) -> None:
        if not self._dead.is_set():
            self._down_since = time.monotonic()
        self._dead.set()

    async def start(self, timeout: float) -> None:
        """Open the session and list the tools, in the owning task.

        Args:
            timeout: Seconds the server has to start and answer the listing (also used
                when a session is opened again after the server went down). It is the bound:
                a server not up by then is given up at once, its process stopped in the
                background (:meth:`close` waits for that).

        Raises:
            ToolException: The server did not start; the message is one line.
        """
        self._loop = asyncio.get_running_loop()
        self._timeout = timeout
        await self._open_session()

    async def _open_session(self) -> None:
        await self._end_task()
        self.error, self._session, self._lost, self._exited = None, None, None, False
        self._ready, self._stop, self._dead = asyncio.Event(), asyncio.Event(), asyncio.Event()
        if self.connection["transport"] == "stdio":
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self._timeout)
        except TimeoutError:
            self.error = f"did not start within {self._timeout:g} seconds" + self._stderr_tail()
            self._stop.set()
            self._mark_down()
            self._task.cancel()  # not waited for here: the timeout is the bound
        if self._dead.is_set() or self.error:
            raise ToolException(self.error or "the server closed the connection")

    async def _end_task(self) -> None:
        """Stop the session's task (if any) and wait for it; forget its standard error file.
        A session still starting is cancelled at once (nothing else ends its start)."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            if not self._ready.is_set():
                self._task.cancel()
            await asyncio.wait({self._task}, timeout=10)
            if not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=5)
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    async def close(self) -> None:
        """End the session for good; safe to call twice. Then every process group of a stdio
        process it started (a server's children included, one still starting or given up
        after its start timeout too) is ended: SIGTERM, SIGKILL after
        :data:`KILL_GRACE_SECONDS` (:func:`stop_process_groups`), even when this is cancelled.
"""
        self._closed = True
        try:
            await self._end_task()
        finally:
            groups = {process.pid for processes in self._spawned for process in processes
                      if isinstance(getattr(process, "pid", None), int)}
            await stop_process_groups(groups)

    async def _reopen_if_due(self) -> None:
        """After ``reconnect_after`` seconds down, open a new session (once at a time); a
        failed attempt restarts the wait."""
        if self._closed or self.reconnect_after is None or time.monotonic() - self._down_since < self.reconnect_after:
            return
        self._reopening = self._reopening or asyncio.Lock()
        async with self._reopening:
            if not self._dead.is_set():
                return  # another call reopened it meanwhile
            try:
                await self._open_session()
                logger.info("MCP server %r is back", self.name)
            except ToolException:
                self._down_since = time.monotonic()

    def unavailable(self) -> ToolException:
        """The error a call to a server that is down raises (one line)."""
        return ToolException(f"MCP server {self.name!r} is unavailable: {self.error or 'not started'}")

    async def _call_here(self, tool: str, arguments: dict[str, Any]) -> Any:
        if self._dead.is_set():
            await self._reopen_if_due()
        if self._dead.is_set() or self._session is None:
            raise self.unavailable()
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED

        call = asyncio.ensure_future(self._session.call_tool(tool, arguments))
        dead = asyncio.ensure_future(self._dead.wait())
        try:
            await asyncio.wait({call, dead}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            dead.cancel()
            if not call.done():
                call.cancel()
        if not call.done() or call.cancelled():
            raise self.unavailable()
        try:
            return call.result()
        except McpError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                waited = (self.connection.get("session_kwargs") or {}).get("read_timeout_seconds")
                within = f" within {waited.total_seconds():g} seconds" if waited else " in time"
                raise ToolException(f"MCP server {self.name!r} did not answer {tool!r}{within}") from exc
            if exc.error.code != CONNECTION_CLOSED:
                raise ToolException(f"MCP server {self.name!r} refused the call: {one_line(exc)}") from exc
            raise await self._gone("the server closed the connection") from exc
        except ToolException:
            raise
        except Exception as exc:
            if one_line(exc).split(":")[0] in _STREAM_CLOSED:
                raise await self._gone("the server closed the connection") from exc
            raise ToolException(f"MCP server {self.name!r} failed: {one_line(exc)}") from exc

    async def _gone(self, reason: str) -> ToolException:
        """The transport is closed for good: end the session (its task stops the process of
        a stdio server and records why it ended, e.g. its exit status) and return the
        unavailable error to raise. A stdio process that is dying gets a moment to end the
        task by itself, so that its exit status, not our stopping it, is the reason."""
        if self.connection["transport"] == "stdio" and self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=SETTLE_SECONDS / 2)
        self._lost = self._lost or reason
        self._stop.set()
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=SETTLE_SECONDS)
        if self.error is None:
            self.error = reason
        self._mark_down()
        return self.unavailable()

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call ``tool`` on the server from any event loop.

        Returns:
            The SDK's ``CallToolResult``.

        Raises:
            ToolException: The server is down, died during the call, refused it or the
                transport failed (one line naming the server).
        """
        loop = self._loop
        if loop is None or loop is asyncio.get_running_loop():
            return await self._call_here(tool, arguments)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._call_here(tool, arguments), loop))

    def call_blocking(self, tool: str, arguments: dict[str, Any]) -> Any:
        """:meth:`call` from a thread without a running event loop (a sync run's worker).

        Raises:
            ToolException: As :meth:`call`, or when called on the session's own loop's thread
                (a sync run inside async code would wait on itself).
        """
        loop = self._loop
        if loop is None or not loop.is_running():
            raise self.unavailable()
        if getattr(loop, "_thread_id", None) == threading.get_ident():
            raise ToolException(f"MCP tools of {self.name!r} need an async run (arun/astream) in this event loop")
        return asyncio.run_coroutine_threadsafe(self._call_here(tool, arguments), loop).result()
