"""Fallback models: when a model fails, the run goes on with the next one.

An agent may be given an ordered list of fallback models besides its model
(``ReActAgent(llm, tools, fallbacks=[...])``, ``AgentSettings.fallbacks``, or a LangChain
``llm.with_fallbacks([...])`` chain, unpacked by :func:`unpack_fallbacks`). Each keeps its
own abilities and provider profile, so a fallback may run the loop in another mode (a
hosted model calling tools natively falling back to a local JSON-mode model); the
conversation is then converted into the next model's form
(:func:`reactgraph.protocol.messages.in_mode_form`).

**The policy**, one for every model call of a run:

* a failure the failing model's profile calls transient (429, 5xx, timeouts, connection
  errors; :meth:`~reactgraph.providers.ProviderProfile.is_transient`) hands the call to the
  next model once the model's own retries are spent (``AgentSettings.model_attempts`` for
  loop calls; other calls are not retried by the engine);
* a failure the profile marks permanent for the model (a 400 "context length", a 404
  "model not found"; :meth:`~reactgraph.providers.ProviderProfile.is_permanent`) hands it
  over at once;
* optionally (``AgentSettings.fallback_parse_failures``), ``N`` unparseable JSON-mode
  outputs in a row hand the loop over too;
* anything else (a request the model refuses for its shape) is not a reason to switch:
  the engine already asks again without what was refused.

A run that switched stays on its new model for the rest of the turn — its context guard,
synthesis and safeguard settings too (:class:`ServingNode`) —; the next turn starts again
with the first model whose :class:`CircuitBreaker` lets calls through. The breaker of
each model counts its failed calls: after ``breaker_failures`` failures within
``breaker_window`` seconds it opens, and the model is skipped (no call, no retries) for
``breaker_cooldown`` seconds; then one call may try it again (half open): a success closes
the breaker, a failure opens it for another cool-down.

Which model answered is recorded: the ``model`` of each step record and of the loop's
state, ``model_usage`` (usage per model) in the state, the result and ``done``, and a
``model_switch`` event each time a call is handed to the next model.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.fallbacks import RunnableWithFallbacks
from langgraph._internal._constants import CONFIG_KEY_RUNTIME  # how a task sees its attempt number

from reactgraph import observability
from reactgraph.engine.deadlines import deadline_of, stream_within_deadline, within_deadline
from reactgraph.events import ModelSwitched, emit
from reactgraph.core.limits import model_name_of
from reactgraph.providers import ProviderProfile, chat_model_of

logger = logging.getLogger(__name__)

BreakerState = Literal["closed", "open", "half_open"]
"""``"closed"`` (calls go through), ``"open"`` (the model is skipped) or ``"half_open"``
(the cool-down is over: the next call tries the model again)."""


@dataclass(frozen=True)
class FallbackModel:
    """A fallback model with what is known about it.

    Attributes:
        llm: A LangChain chat model (or one with bindings; tool bindings are dropped,
            the agent binds its own tools).
        abilities: Its :class:`~reactgraph.ModelAbilities`, or a dict of some of them,
            resolved as the agent's model's are (:func:`~reactgraph.resolve_abilities`).
            ``None`` reads the model's profile.
        name: Its name in events and records; ``None``: :func:`model_label`.
        breaker: The :class:`CircuitBreaker` that counts its failures (an agent passes
            its own); ``None`` for none.
    """

    llm: Any
    abilities: Any = None
    name: str | None = None
    breaker: CircuitBreaker | None = None

    @property
    def label(self) -> str:
        """:attr:`name`, else :func:`model_label` of the model."""
        return self.name or model_label(self.llm)


def unpack_fallbacks(llm: Any) -> tuple[Any, list[Any]]:
    """The model and the fallbacks of a LangChain ``llm.with_fallbacks([...])`` chain.

    Args:
        llm: A chat model (returned as is, with no fallbacks), or a
            ``RunnableWithFallbacks`` whose runnable and fallbacks are chat models (nested
            chains are flattened, primary first).

    Returns:
        ``(model, fallbacks)``, in the order the chain would try them.
    """
    if not isinstance(llm, RunnableWithFallbacks):
        return llm, []
    primary, inner = unpack_fallbacks(llm.runnable)
    rest: list[Any] = []
    for fallback in llm.fallbacks:
        head, tail = unpack_fallbacks(fallback)
        rest += [head, *tail]
    return primary, [*inner, *rest]


def as_fallback(item: Any) -> FallbackModel:
    """One entry of a fallback list as a :class:`FallbackModel`: a ``FallbackModel``, a
    chat model, or a ``(chat model, abilities)`` pair.

    Raises:
        TypeError: Anything else.
    """
    if isinstance(item, FallbackModel):
        return item
    if isinstance(item, tuple) and len(item) == 2:
        return FallbackModel(item[0], item[1])
    if isinstance(item, Runnable):
        return FallbackModel(item)
    raise TypeError(f"a fallback must be a chat model, a (model, abilities) pair or a FallbackModel, got {item!r}")


def model_label(llm: Any) -> str:
    """How a model is named in records, events and the breaker table: its model name
    (``gpt-4o-mini``), else its class name."""
    model = chat_model_of(llm)
    return model_name_of(model) or type(model).__name__


def unique_labels(labels: Sequence[str]) -> list[str]:
    """``labels`` with a repeated one numbered (``m``, ``m#2``), so each model of a
    chain has its own name."""
    out: list[str] = []
    for label in labels:
        name, n = label, 1
        while name in out:
            n += 1
            name = f"{label}#{n}"
        out.append(name)
    return out


class CircuitBreaker:
    """The circuit breaker of one model (see the module docstring).

    Args:
        failures: Failed calls within ``window`` that open it (at least 1).
        window: Seconds over which failures are counted.
        cooldown: Seconds the model is skipped once open.
        clock: Returns the time in seconds (``time.monotonic``; tests pass their own).
    """

    def __init__(self, failures: int = 3, window: float = 60.0, cooldown: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.failures = max(1, failures)
        self.window = window
        self.cooldown = cooldown
        self.clock = clock
        self._lock = threading.Lock()
        self._recent: list[float] = []
        self._opened_at: float | None = None
        self._opened = 0

    def _state(self, now: float) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        return "half_open" if now >= self._opened_at + self.cooldown else "open"

    @property
    def state(self) -> BreakerState:
        """The breaker's state now."""
        with self._lock:
            return self._state(self.clock())

    def allows(self) -> bool:
        """Whether a call may go to the model now (closed or half open)."""
        return self.state != "open"

    def record_failure(self) -> None:
        """Count a failed call; opens the breaker at ``failures`` within ``window``, or at
        once when half open."""
        with self._lock:
            now = self.clock()
            if self._state(now) == "half_open":
                self._opened_at, self._opened = now, self._opened + 1
                return
            self._recent = [t for t in self._recent if t > now - self.window] + [now]
            if self._opened_at is None and len(self._recent) >= self.failures:
                self._opened_at, self._opened, self._recent = now, self._opened + 1, []

    def record_success(self) -> None:
        """Count a call that worked: closes the breaker and forgets earlier failures."""
        with self._lock:
            self._opened_at, self._recent = None, []

    def snapshot(self) -> dict[str, Any]:
        """The breaker as the server's status shows it: ``state``, ``recent_failures``
        (within the window), ``times_opened`` and ``retry_in`` (seconds until a half-open
        try; ``None`` unless open)."""
        with self._lock:
            now = self.clock()
            state = self._state(now)
            retry_in = round(self._opened_at + self.cooldown - now, 3) if state == "open" and self._opened_at else None
            recent = sum(1 for t in self._recent if t > now - self.window)
            return {"state": state, "recent_failures": recent, "times_opened": self._opened, "retry_in": retry_in}


def pick_model(breakers: Sequence[CircuitBreaker], start: int = 0) -> int:
    """The first model from ``start`` on whose breaker lets calls through; when every one
    from ``start`` on is open, ``start`` (a run is never refused for want of a model)."""
    for index in range(start, len(breakers)):
        if breakers[index].allows():
            return index
    return start


RETRY_MARK = "reactgraph_retry"
"""Attribute a loop model node sets on the exception it raises: whether the node's retry
policy retries it (the failing model's profile decides, not the first model's)."""


def node_attempt(config: RunnableConfig | None) -> int:
    """The attempt of the running graph node, 1 for the first (LangGraph's retry policy
    counts them in the task's runtime)."""
    runtime = ((config or {}).get("configurable") or {}).get(CONFIG_KEY_RUNTIME)
    return int(getattr(getattr(runtime, "execution_info", None), "node_attempt", 1) or 1)


def retried(exc: BaseException, profile: ProviderProfile) -> bool:
    """Whether a loop model node's failure is retried: what the node decided
    (:data:`RETRY_MARK`), else whether ``profile`` calls it transient."""
    decided = getattr(exc, RETRY_MARK, None)
    return profile.is_transient(exc) if decided is None else bool(decided)


class ModelScope:
    """The model serving the turn and the models that answered the calls of one graph
    node, in order (a context manager around a node's body). A :class:`FallbackChain`
    starts at the serving model, so a run handed to a fallback stays on it for synthesis
    and compaction; the usage the node reports is put down to the models that answered
    (``model_usage``); :func:`answered` records one.

    Args:
        serving: The name of the model serving the turn (the state's ``model``), ``None``
            before the loop's first call.
    """

    def __init__(self, serving: str | None = None) -> None:
        self.serving = serving
        self.labels: list[str] = []

    def __enter__(self) -> ModelScope:
        self._token = _SCOPE.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _SCOPE.reset(self._token)


_SCOPE: ContextVar[ModelScope | None] = ContextVar("reactgraph_model_scope", default=None)


def answered(label: str) -> None:
    """Record that model ``label`` answered a call of the running node (see :class:`ModelScope`)."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.labels.append(label)


class ServingNode:
    """A graph node made once per model of an agent with fallback models, run as the one of
    the model serving the turn (the state's ``model``; before the loop's first call, the
    first model its breaker lets through): that model's settings (its safeguard policy),
    window and chain of fallbacks decide.

    Args:
        engine: The agent's engine (``models``, ``model_index``, ``first_model``).
        make: Makes the node of one model's engine.
    """

    def __init__(self, engine: Any, make: Callable[[Any], Any]) -> None:
        self.engine = engine
        self.nodes = [make(model) for model in engine.models]

    def serving(self, state: Any) -> Any:
        """The node of the model serving the turn."""
        index = self.engine.model_index(state.get("model"))
        return self.nodes[self.engine.first_model() if index is None else index]

    async def __call__(self, state: Any, config: RunnableConfig) -> Any:
        return await self.serving(state)(state, config)


@dataclass(frozen=True)
class ChainMember:
    """One model of a :class:`FallbackChain`: its name, the runnable to call, its provider
    profile (which classifies its failures) and its breaker."""

    label: str
    runnable: Runnable
    profile: ProviderProfile
    breaker: CircuitBreaker


def switch(previous: str, model: str, exc: BaseException, call: str, profile: ProviderProfile,
           reason: str | None = None) -> None:
    """Log and emit the ``model_switch`` event of a call handed from ``previous`` to ``model``."""
    reason = reason or ("permanent" if profile.is_permanent(exc) else "transient")
    logger.warning("%s call: %s failed (%s: %s), falling back to %s", call, previous, type(exc).__name__, exc, model)
    emit(ModelSwitched(previous=previous, model=model, reason=reason, call=call,
                       error=f"{type(exc).__name__}: {exc}"[:300]))


class FallbackChain(Runnable):
    """One model call (``invoke``/``ainvoke``) or stream (``stream``/``astream``) that goes
    to the next model when one fails as the fallback policy says (module docstring).

    Used for the calls that are the same in every mode: synthesis and context compaction
    (tool selection and ``structured_response`` go through
    :func:`~reactgraph.structured_llm_call`'s ``fallbacks``). Models whose breaker is open
    are skipped. A stream falls back only before its first chunk; once a chunk was given
    out, a failure is raised to the caller (synthesis then ends the answer as it always
    does, SPEC R3.2).

    Each model's attempt is its own model call of an observed run
    (:func:`reactgraph.observability.model_call`, one ``chat`` span each), with its own
    deadline in async calls (:mod:`reactgraph.engine.deadlines`): a model past it fails as a
    timeout does, and the next one gets the whole deadline again.

    Args:
        members: The models, in order.
        call: What the call is, for events and logs (``"synthesis"``, ``"compaction"``).
    """

    observes_calls = True
    """Each model's attempt is observed here, not the chain as one call."""

    def __init__(self, members: Sequence[ChainMember], call: str) -> None:
        self.members = list(members)
        self.call = call

    def _order(self) -> list[int]:
        scope = _SCOPE.get()
        serving = scope.serving if scope is not None else None
        start = next((i for i, member in enumerate(self.members) if member.label == serving), 0)
        first = pick_model([m.breaker for m in self.members], start)
        return list(range(first, len(self.members)))

    def _handoff(self, order: list[int], position: int, exc: Exception) -> int:
        """After the model at ``position`` of ``order`` failed with ``exc``: the position
        of the model to try next, when the policy hands the call on.

        Raises:
            Exception: ``exc``, when it is no reason to switch or no model is left.
        """
        member = self.members[order[position]]
        if not member.profile.falls_back(exc):
            raise exc
        member.breaker.record_failure()
        nxt = next((p for p in range(position + 1, len(order)) if self.members[order[p]].breaker.allows()), None)
        if nxt is None:
            raise exc
        switch(member.label, self.members[order[nxt]].label, exc, self.call, member.profile)
        return nxt

    def _answered(self, member: ChainMember) -> None:
        member.breaker.record_success()
        answered(member.label)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """The first answer of the models in order (see the class docstring)."""
        order, position = self._order(), 0
        while True:
            member = self.members[order[position]]
            try:
                with observability.model_call(member.runnable, input, config) as observed:
                    result = observed.returned(member.runnable.invoke(input, config, **kwargs))
            except Exception as exc:
                position = self._handoff(order, position, exc)
                continue
            self._answered(member)
            return result

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """:meth:`invoke`, awaiting each model's ``ainvoke``."""
        order, position = self._order(), 0
        while True:
            member = self.members[order[position]]
            try:
                with observability.model_call(member.runnable, input, config) as observed:
                    result = observed.returned(await within_deadline(member.runnable.ainvoke(input, config, **kwargs),
                                                                     deadline_of(config)))
            except Exception as exc:
                position = self._handoff(order, position, exc)
                continue
            self._answered(member)
            return result

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """The chunks of the first model whose stream starts (see the class docstring)."""
        order, position = self._order(), 0
        while True:
            member = self.members[order[position]]
            started = False
            try:
                with observability.model_call(member.runnable, input, config) as observed:
                    for chunk in member.runnable.stream(input, config, **kwargs):
                        if not started:
                            started = True
                            self._answered(member)
                        observed.chunk(chunk)
                        yield chunk
            except Exception as exc:
                if started:
                    raise
                position = self._handoff(order, position, exc)
                continue
            return

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        """:meth:`stream`, over each model's ``astream``."""
        order, position = self._order(), 0
        while True:
            member = self.members[order[position]]
            started = False
            try:
                with observability.model_call(member.runnable, input, config) as observed:
                    chunks = stream_within_deadline(member.runnable.astream(input, config, **kwargs), deadline_of(config))
                    async for chunk in chunks:
                        if not started:
                            started = True
                            self._answered(member)
                        observed.chunk(chunk)
                        yield chunk
            except Exception as exc:
                if started:
                    raise
                position = self._handoff(order, position, exc)
                continue
            return
