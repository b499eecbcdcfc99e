"""Every public exception of reactgraph, under one base, and the one reading of a failed
HTTP request that decides whether a model call is retried or a request shape is refused.

Catch :class:`ReactGraphError` for anything reactgraph raises on purpose. Each class also
keeps the builtin base it always had (``RuntimeError``, ``ValueError``, ``LookupError``),
so ``except RuntimeError`` written against earlier releases still catches it.

What the engine never raises (SPEC R2.7): tool failures and bad model output become
observations; a model call that keeps failing ends the run with an error event and a
fallback answer. The classes here are for callers' mistakes and setup problems.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any


class ReactGraphError(Exception):
    """Base class of every exception reactgraph raises on purpose."""


class ProtocolError(ReactGraphError, ValueError):
    """A message list that a provider would reject; the message says where and why."""


class NoActiveRunError(ReactGraphError, RuntimeError):
    """A follow-up was sent to a thread with no run going; start a run with it instead."""


class ThreadBusyError(ReactGraphError, RuntimeError):
    """A run was started on a thread that already has one going (one run per thread)."""


class FollowUpLimitError(ReactGraphError, RuntimeError):
    """A follow-up was refused: the thread already has as many follow-ups, or characters
    of them, waiting as its queue accepts (:class:`~reactgraph.FollowUpLimits`). Send it once
    the run has taken them in (an ``inject`` event), or start a new run with it."""


class ModelTimeoutError(ReactGraphError, TimeoutError):
    """A model call outlasted its deadline (:mod:`reactgraph.engine.deadlines`): no answer, or no
    stream's first chunk, in time. A ``TimeoutError``, so a transient failure: the loop
    retries it, then hands the call to a fallback model, and it counts in the model's
    circuit breaker."""


class NothingToResumeError(ReactGraphError, LookupError):
    """``resume`` found no interrupted run on the thread: the agent has no checkpointer,
    the thread has no checkpoint, or its last run finished."""


class StructuredOutputError(ReactGraphError, RuntimeError):
    """Every level of :func:`~reactgraph.structured_llm_call` failed and no
    ``default_value`` was given. ``result`` holds the calls made, the last raw text and the
    last error (a :class:`~reactgraph.protocol.structured.StructuredCallResult`; not
    imported here, so that the exceptions import nothing of the engine)."""

    def __init__(self, result: Any) -> None:
        super().__init__(f"structured output failed after {result.calls} model calls: {result.error}")
        self.result = result


class PlanError(ReactGraphError, ValueError):
    """The planner's output is not a usable plan (no steps, a step without a task, duplicate ids)."""


class SyncRunError(ReactGraphError, RuntimeError):
    """A node awaited real asynchronous work during a synchronous run (``invoke``,
    ``stream``, ``batch``); run the graph with ``ainvoke``/``astream`` instead."""


class DecisionError(ReactGraphError, ValueError):
    """Approval decisions that do not fit what the run waits on (SPEC R13.3): a call that is
    not pending, or a value that is no decision. The message names the call."""


class LocalModelError(ReactGraphError, RuntimeError):
    """The embedded model cannot be used: the extra is missing, or the server failed.

    The message says why in one line and what to do; for a server that failed to start it is
    followed by the last lines of the server's log.
    """


class MCPConfigError(ReactGraphError, ValueError):
    """An MCP client configuration that cannot be used (SPEC R13.4): not JSON, no
    ``mcpServers`` (or VS Code's ``servers``) object, or a server entry without a ``command``
    or a ``url``, with a transport reactgraph does not speak, a field no client format has
    (a misspelling), or a value of the wrong type. The message is one line naming the server,
    the field and what is allowed."""


class WorkersError(ReactGraphError, ValueError):
    """``reactgraph serve --workers N`` asked for what cannot work: fewer than one
    worker, several on SQLite or memory checkpoints (their run bookkeeping is per process),
    or several where processes cannot be forked. The message is one line."""


RETRY_LATER_STATUSES = frozenset({408, 409, 429})
"""4xx statuses that say "not now" (timeout, conflict, rate limit) rather than "never"."""


@dataclass(frozen=True)
class HttpFailure:
    """The HTTP status of a failed provider request, classified.

    Attributes:
        status: The response's status code.
    """

    status: int

    @property
    def transient(self) -> bool:
        """Worth retrying (SPEC R2.7): 408, 409, 429 or any 5xx."""
        return self.status in RETRY_LATER_STATUSES or self.status >= 500

    @property
    def refused(self) -> bool:
        """The provider refused the request itself: a 4xx other than 408, 409 and 429."""
        return 400 <= self.status < 500 and self.status not in RETRY_LATER_STATUSES


def http_failure(exc: BaseException) -> HttpFailure | None:
    """The HTTP status an exception carries (``exc.status_code`` as OpenAI's and httpx's
    errors have it, or ``exc.response.status_code``), classified; ``None`` when it carries
    none (a connection error, a parse error)."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return HttpFailure(status) if isinstance(status, int) else None


def is_transient_error(exc: BaseException) -> bool:
    """Whether a failed model call is worth retrying (SPEC R2.7): connection errors,
    timeouts, HTTP 408/409/429 and 5xx. A 4xx such as a rejected request is not."""
    failure = http_failure(exc)
    if failure is not None:
        return failure.transient
    if isinstance(exc, (ConnectionError, TimeoutError, asyncio.TimeoutError)):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"APIConnectionError", "APITimeoutError", "TransportError", "TimeoutException"})
