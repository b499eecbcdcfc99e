"""One node body, two entry points: the graph runs under ``invoke``/``stream``/``batch``
as well as ``ainvoke``/``astream``/``abatch`` (SPEC R10.1). Internal: not API.

**The rule for contributors.** Code that runs inside a graph node (``nodes/``, ``window/``,
the DAG nodes, ``protocol/structured.py``, ``answer/synthesis.py``) never awaits I/O itself: no
``await model.ainvoke(...)``, no ``async for ... in model.astream(...)``, no
``await asyncio.sleep/wait_for/gather/to_thread(...)``. It calls :func:`call_model`,
:func:`stream_model`, :func:`run_blocking` or :func:`run_in_daemon_thread` instead (or
project code that does). ``tests/unit/test_architecture.py`` scans for a bare await and
fails.

Every node's logic is written once, as a coroutine that does its I/O only through the
functions of this module (:func:`call_model`, :func:`stream_model`, :func:`run_blocking`,
:func:`run_in_daemon_thread`). Each of them looks at the run's mode:

- async mode (the default): they await the async APIs (``ainvoke``, ``astream``, the
  tool's ``ainvoke`` under ``asyncio.timeout``, ``asyncio.to_thread``);
- sync mode: they call the sync APIs (``invoke``, ``stream``; a tool runs in a worker thread with
  a ``concurrent.futures`` timeout) and never suspend, so
  :func:`run_sync` drives the coroutine to its end with ``send(None)`` and no event loop.

:func:`dual_node` turns a node body into a graph node with both entry points (LangGraph's
``RunnableCallable(func, afunc)``, the class its prebuilt agent uses for the same purpose); the
sync one marks the context as sync mode for the duration of the body. No event loop is started
per call: a model client whose async connection pool is bound to one loop (``ChatOpenAI``)
is only ever used through its sync client in sync mode.

A coroutine that awaits anything else during a sync run (for example a custom
:class:`~reactgraph.InterruptQueue` doing network I/O) cannot finish without a loop;
:func:`run_sync` then raises :class:`SyncRunError` naming the node.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph._internal._runnable import RunnableCallable

from reactgraph import observability
from reactgraph.engine.deadlines import deadline_of, stream_within_deadline, within_deadline
from reactgraph.core.errors import SyncRunError

T = TypeVar("T")

_SYNC: ContextVar[bool] = ContextVar("reactgraph_sync_run", default=False)


def in_sync_run() -> bool:
    """Whether the current node body runs under a synchronous entry point."""
    return _SYNC.get()


def run_sync(coro: Coroutine[Any, Any, T], name: str = "node") -> T:
    """Drive a coroutine that never suspends to completion, without an event loop.

    Args:
        coro: A coroutine whose awaits all complete immediately (the sync-mode I/O
            functions of this module).
        name: Named in the error message.

    Returns:
        The coroutine's return value.

    Raises:
        SyncRunError: The coroutine suspended (it awaited a future, a sleep or async I/O).
        Exception: Whatever the coroutine raises.
    """
    try:
        suspended_on = coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise SyncRunError(
        f"{name} awaited {suspended_on!r} during a synchronous run; use ainvoke/astream, "
        "or give the agent components with synchronous support"
    )


def dual_node(body: Callable[..., Awaitable[Any]], name: str) -> RunnableCallable:
    """A graph node with a sync and an async entry point over one coroutine body.

    Args:
        body: The node logic: an async callable ``(state, config?) -> update`` whose I/O
            goes through this module. Its signature decides what LangGraph injects
            (``config``, ``runtime``…), as for any node.
        name: The node's name.

    Returns:
        A LangGraph ``RunnableCallable`` whose ``invoke`` runs ``body`` in sync mode
        (:func:`run_sync`) and whose ``ainvoke`` awaits it in async mode, each through:
        func:`reactgraph.observability.run_node` (observed when the run is).
    """
    signature = inspect.signature(body)

    def sync_entry(*args: Any, **kwargs: Any) -> Any:
        token = _SYNC.set(True)
        try:
            return run_sync(observability.run_node(name, body, args, kwargs), name)
        finally:
            _SYNC.reset(token)

    async def async_entry(*args: Any, **kwargs: Any) -> Any:
        token = _SYNC.set(False)  # an async run nested in a sync one (a tool) is async again
        try:
            return await observability.run_node(name, body, args, kwargs)
        finally:
            _SYNC.reset(token)

    sync_entry.__signature__ = signature  # type: ignore[attr-defined]
    async_entry.__signature__ = signature  # type: ignore[attr-defined]
    return RunnableCallable(sync_entry, async_entry, name=name, trace=False)


observed_node = observability.observed_node
"""The node wrapper of a graph whose nodes are async only (the DAG graph's): its node runs
through :func:`reactgraph.observability.run_node` as :func:`dual_node`'s do, so graphs take
both wrappers from here, below the observer."""


def _own_deadlines(runnable: Runnable) -> bool:
    """Whether ``runnable`` gives each of its models' calls a deadline itself (a fallback
    chain: one deadline over the chain would leave the next model the first one's rest)."""
    return observability.observes_own_calls(runnable)


async def call_model(runnable: Runnable, input: Any, config: RunnableConfig | None = None) -> Any:
    """``runnable.invoke`` in sync mode, ``await runnable.ainvoke`` otherwise, within the
    run's model deadline (:func:`reactgraph.engine.deadlines.deadline_of`; async mode); observed
    as one model call of the run (:func:`reactgraph.observability.model_call`).

    Raises:
        ModelTimeoutError: The model did not answer within the deadline.
    """
    with observability.model_call(runnable, input, config) as call:
        if _SYNC.get():
            return call.returned(runnable.invoke(input, config))
        if _own_deadlines(runnable):
            return call.returned(await runnable.ainvoke(input, config))
        return call.returned(await within_deadline(runnable.ainvoke(input, config), deadline_of(config)))


async def stream_model(runnable: Runnable, input: Any, config: RunnableConfig | None = None) -> AsyncIterator[Any]:
    """Chunks of ``runnable.stream`` in sync mode, of ``runnable.astream`` otherwise, within
    the run's model deadline (first chunk and whole stream; async mode); observed as one
    model call of the run (:func:`reactgraph.observability.model_call`).

    Raises:
        ModelTimeoutError: A chunk came later than the deadline allows.
    """
    with observability.model_call(runnable, input, config) as call:
        if _SYNC.get():
            for chunk in runnable.stream(input, config):
                call.chunk(chunk)
                yield chunk
        else:
            chunks = runnable.astream(input, config)
            if not _own_deadlines(runnable):
                chunks = stream_within_deadline(chunks, deadline_of(config))
            async for chunk in chunks:
                call.chunk(chunk)
                yield chunk


async def run_blocking(fn: Callable[[], T]) -> T:
    """Run blocking work: directly in sync mode, in a worker thread otherwise (so the
    event loop keeps running)."""
    if _SYNC.get():
        return fn()
    return await asyncio.to_thread(fn)


def is_async_only(tool: BaseTool) -> bool:
    """Whether ``tool`` has only an async implementation (a ``StructuredTool`` made from a
    coroutine), so a sync run must give it its own event loop."""
    return isinstance(tool, StructuredTool) and tool.func is None and tool.coroutine is not None


def run_in_daemon_thread(fn: Callable[[], T], timeout: float) -> T:
    """``fn()`` in a new daemon thread (with this context, so LangGraph's config and
    ``interrupt()`` work inside it), waiting at most ``timeout`` seconds. A daemon thread,
    so a tool that never returns does not hold up interpreter exit.

    Raises:
        TimeoutError: ``fn`` did not return in time; its thread keeps running, only the
            result is discarded.
        BaseException: What ``fn`` raised.
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            future.set_result(context.run(fn))
        except BaseException as exc:  # handed to the waiting caller
            future.set_exception(exc)

    threading.Thread(target=target, name="reactgraph-tool", daemon=True).start()
    return future.result(timeout)
