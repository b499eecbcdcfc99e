"""Deadlines of model calls: a model that accepts a request and never answers fails the
call, as a timeout does, instead of holding the run forever.

Every model call of a run gets a :class:`ModelDeadline`: a whole call (a reply, or a stream
from its request to its last chunk) may take ``total`` seconds; a stream's first chunk must
come within ``first_token`` seconds. A call past either raises
:class:`~reactgraph.ModelTimeoutError`, a ``TimeoutError``: a transient failure, so the
loop's retries (``AgentSettings.model_attempts``), the fallback models and their circuit
breakers (:mod:`reactgraph.engine.fallbacks`) treat it as they treat a 503.

Where a deadline comes from, first that says: ``AgentSettings.model_timeout`` and
``model_first_token_timeout``; the environment (:data:`MODEL_TIMEOUT_ENV`,
:data:`MODEL_FIRST_TOKEN_TIMEOUT_ENV`); the defaults (:data:`DEFAULT_MODEL_TIMEOUT`,
:data:`DEFAULT_FIRST_TOKEN_TIMEOUT`). The graphs carry it in their config
(:data:`DEADLINE_KEY`), so the calls of their nodes, of a DAG step's loop and of a fallback
chain's members each read it (:func:`deadline_of`). It holds in async runs (``ainvoke``,
``astream``: the server, the CLI); a synchronous run's call is bounded only by its client's
own request timeout (``reactgraph serve`` and :func:`~reactgraph.open_model` set one:
:func:`request_timeout`).
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from reactgraph.core.errors import ModelTimeoutError

T = TypeVar("T")

MODEL_TIMEOUT_ENV = "REACTGRAPH_MODEL_TIMEOUT"
"""Seconds a whole model call may take when the settings do not say (``inf``: no limit)."""

MODEL_FIRST_TOKEN_TIMEOUT_ENV = "REACTGRAPH_MODEL_FIRST_TOKEN_TIMEOUT"
"""Seconds a streamed model call may wait for its first chunk when the settings do not say."""

DEFAULT_MODEL_TIMEOUT = 300.0
"""Seconds a whole model call may take by default: a long synthesis by a local model on a
busy CPU finishes within it; a request nobody answers is given up after it."""

DEFAULT_FIRST_TOKEN_TIMEOUT = 180.0
"""Seconds a stream may wait for its first chunk by default (a local model reading a long
prompt on a busy CPU takes tens of seconds)."""

DEADLINE_KEY = "__reactgraph_model_deadline"
"""The ``configurable`` key the graphs carry their deadline in, ``(total, first_token)``.
Starts with ``__`` so LangGraph does not copy it into checkpoint metadata."""


@dataclass(frozen=True)
class ModelDeadline:
    """How long one model call may take.

    Attributes:
        total: Seconds for the whole call (a stream: until its last chunk); ``math.inf``
            for no limit.
        first_token: Seconds a stream may wait for its first chunk; ``math.inf`` for no
            limit. Calls that do not stream have only ``total``.
    """

    total: float = DEFAULT_MODEL_TIMEOUT
    first_token: float = DEFAULT_FIRST_TOKEN_TIMEOUT

    def __post_init__(self) -> None:
        for name in ("total", "first_token"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value) or value <= 0:
                raise ValueError(f"a model deadline's {name} must be positive seconds (inf for none), got {value!r}")

    def as_config(self) -> dict[str, Any]:
        """The ``configurable`` entry that carries this deadline (:data:`DEADLINE_KEY`)."""
        return {DEADLINE_KEY: (self.total, self.first_token)}


def seconds_from_env(name: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    """Seconds from environment variable ``name`` (a positive number, or ``inf``), else
    ``default``; ``environ`` is read instead of ``os.environ`` when given.

    Raises:
        ValueError: The variable is set to something else (named in the message).
    """
    text = (os.environ if environ is None else environ).get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value) or value <= 0:
        raise ValueError(f"{name} must be positive seconds (or inf), got {text!r}")
    return value


def resolve_deadline(total: float | None = None, first_token: float | None = None,
                     environ: Mapping[str, str] | None = None) -> ModelDeadline:
    """The deadline of the given limits, each ``None`` read from the environment
    (``environ``, else ``os.environ``), else its default (module docstring).

    Raises:
        ValueError: A limit, given or from the environment, that is not positive seconds.
    """
    return ModelDeadline(
        total if total is not None else seconds_from_env(MODEL_TIMEOUT_ENV, DEFAULT_MODEL_TIMEOUT, environ),
        first_token if first_token is not None else seconds_from_env(MODEL_FIRST_TOKEN_TIMEOUT_ENV,
                                                                     DEFAULT_FIRST_TOKEN_TIMEOUT, environ),
    )


def deadline_of(config: Any) -> ModelDeadline:
    """The deadline a run's config carries (:data:`DEADLINE_KEY`), else the environment's
    or the default one."""
    carried = ((config or {}).get("configurable") or {}).get(DEADLINE_KEY)
    if isinstance(carried, (tuple, list)) and len(carried) == 2:
        return _carried_deadline(float(carried[0]), float(carried[1]))
    return resolve_deadline()


@functools.lru_cache(maxsize=64)
def _carried_deadline(total: float, first_token: float) -> ModelDeadline:
    """The (immutable) deadline of a carried pair, made and checked once per pair: every
    model call of a run reads the same one."""
    return ModelDeadline(total, first_token)


def request_timeout(environ: Mapping[str, str] | None = None) -> float | None:
    """The request timeout (seconds) to give an HTTP chat client: the model deadline's
    total as the environment (``environ``, else ``os.environ``) or the default sets it, a
    bound on the client's own wait that also holds in synchronous runs; ``None`` for no
    limit."""
    deadline = resolve_deadline(environ=environ)
    return None if math.isinf(deadline.total) else deadline.total


def _limit(seconds: float) -> float | None:
    return None if math.isinf(seconds) else max(seconds, 0.0)


async def within_deadline(call: Awaitable[T], deadline: ModelDeadline) -> T:
    """Await one model call (not streamed) within ``deadline.total``.

    Raises:
        ModelTimeoutError: The call took longer (it is cancelled).
        Exception: What the call raised.
    """
    try:
        async with asyncio.timeout(_limit(deadline.total)) as scope:
            return await call
    except TimeoutError as exc:
        if scope.expired():
            raise ModelTimeoutError(f"the model did not answer within {deadline.total:g} s") from exc
        raise


async def stream_within_deadline(chunks: AsyncIterator[T], deadline: ModelDeadline) -> AsyncIterator[T]:
    """The chunks of one streamed model call: the first within ``deadline.first_token``,
    the last within ``deadline.total`` of the call's start. The stream is closed however
    this ends.

    Raises:
        ModelTimeoutError: A chunk came too late (the stream is closed).
        Exception: What the stream raised.
    """
    loop = asyncio.get_running_loop()
    start = loop.time()
    first = True
    try:
        while True:
            elapsed = loop.time() - start
            left = deadline.total - elapsed
            if first:
                left = min(left, deadline.first_token - elapsed)
            try:
                async with asyncio.timeout(_limit(left)) as scope:
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except TimeoutError as exc:
                if not scope.expired():
                    raise
                what = (f"no first token within {deadline.first_token:g} s" if first and
                        deadline.first_token <= deadline.total else f"the stream took longer than {deadline.total:g} s")
                raise ModelTimeoutError(f"the model's stream timed out: {what}") from exc
            first = False
            yield chunk
    finally:
        closing = getattr(chunks, "aclose", None)
        if closing is not None:
            await closing()
