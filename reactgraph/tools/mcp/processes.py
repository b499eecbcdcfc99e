"""The processes of stdio MCP servers: learning the one a session starts
(:func:`watch_spawned_processes`), stopping their process groups
(:func:`stop_process_groups`) and saying why one ended (:func:`exit_reason`)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any


SETTLE_SECONDS = 5.0
"""How long a call that saw its server's connection close waits for the session's task to
end (the process reaped, its exit status known) before it reports the server unavailable."""

KILL_GRACE_SECONDS = 2.0
"""How long a closed server's process group has between SIGTERM and SIGKILL
(:meth:`MCPServer.close`)."""

spawned: ContextVar[list[Any] | None] = ContextVar("reactgraph_mcp_spawned", default=None)
"""In a session's task: the list the stdio process it starts is added to."""


def watch_spawned_processes() -> None:
    """Let a session's task learn the process its stdio transport starts.

    The ``mcp`` SDK's ``stdio_client`` keeps its process to itself, yet the process's exit
    status is what explains a server that died (killed by a signal, exited with a status).
    The SDK's process factory is wrapped once: the wrapper adds each process it makes to the
    list in :data:`spawned` of the calling task, which only :class:`MCPServer`'s tasks set
    (elsewhere it changes nothing). Without that factory (another SDK version) nothing is
    wrapped and the messages only lack the exit status.
    """
    try:
        import mcp.client.stdio as sdk
    except ImportError:
        return
    create = getattr(sdk, "_create_platform_compatible_process", None)
    if create is None or getattr(create, "reactgraph_watch", False):
        return

    async def create_and_tell(*args: Any, **kwargs: Any) -> Any:
        process = await create(*args, **kwargs)
        sink = spawned.get()
        if sink is not None:
            sink.append(process)
        return process

    create_and_tell.reactgraph_watch = True  # type: ignore[attr-defined]
    sdk._create_platform_compatible_process = create_and_tell


def _group_alive(group: int) -> bool:
    """Whether process group ``group`` still has a process (one of ours: another user's is
    not ours to signal)."""
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


async def stop_process_groups(groups: Iterable[int], grace: float = KILL_GRACE_SECONDS) -> None:
    """End every process of ``groups``: SIGTERM, then SIGKILL to those still there after
    ``grace`` seconds (also when the wait is cancelled: the SIGKILL is sent on the way out).

    A stdio server is started in a session (and process group) of its own, whose id is its
    process id (the ``mcp`` SDK's ``start_new_session``); its children (``npx`` starting
    ``node``, a wrapper script's server) are in that group too, and nothing else is. 
    a server that ignored SIGTERM outlived ``serve``.

    Args:
        groups: Process group ids.
        grace: Seconds between SIGTERM and SIGKILL.
    """
    alive = [group for group in groups if _group_alive(group)]
    if not alive or os.name != "posix":
        return
    for group in alive:
        _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    try:
        while alive and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            alive = [group for group in alive if _group_alive(group)]
    finally:
        for group in alive:
            _signal_group(group, signal.SIGKILL)


def exit_reason(returncode: int | None) -> str:
    """How a server process ended, in words: the reason a dead stdio server is unavailable
    (SPEC R2.7: one line the model reads; R5.4: one connector down, the hub goes on).

    Args:
        returncode: The process's return code (negative: the signal that killed it, as
            ``subprocess`` reports it), or ``None`` when it is not known.

    Returns:
        ``"the server process was killed by SIGKILL"``, ``"the server process exited with
        status 1"``, or ``"the server process exited"``.
    """
    if returncode is None:
        return "the server process exited"
    if returncode < 0:
        try:
            return f"the server process was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"the server process was killed by signal {-returncode}"
    return f"the server process exited with status {returncode}"
