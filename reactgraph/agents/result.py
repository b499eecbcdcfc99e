"""What a run returns (SPEC R2.10)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from reactgraph.tools.approval import PendingCall
from reactgraph.tools.artifacts import Artifact
from reactgraph.engine.state import StepRecord
from reactgraph.core.usage import Usage

if TYPE_CHECKING:
    from reactgraph.agents.outcome import FinishReason


@dataclass(frozen=True)
class Step:
    """One tool call of the loop.

    Attributes:
        iteration: The loop iteration (1-based model call) that asked for it.
        tool_call_id: The id of the call (generated in JSON mode).
        tool_name: The tool the model asked for.
        tool_args: The arguments it gave (as given, even when invalid).
        observation: What the model was shown.
        error: Why the call failed, ``None`` when it succeeded.
        elapsed: Seconds the call took.
        artifact: A rich artifact the tool returned (SPEC R2.9), if any.
        approval: ``"approved"``, ``"edited"`` or ``"rejected"`` when a person decided
            on the call (SPEC R13.3); ``None`` when it needed no approval.
        unchanged: A repeated call that returned what the same call returned last time
            (the model was told so; it counts towards a stall).
        model: The model that asked for the call, when the agent has fallback models;
``None`` otherwise.
    """

    iteration: int
    tool_call_id: str
    tool_name: str
    tool_args: Any
    observation: str
    error: str | None = None
    elapsed: float = 0.0
    artifact: Artifact | None = None
    approval: str | None = None
    unchanged: bool = False
    model: str | None = None

    @property
    def ok(self) -> bool:
        """True when the tool ran and returned a result."""
        return self.error is None

    @classmethod
    def from_record(cls, record: StepRecord) -> Step:
        """Build a step from its state record (:class:`~reactgraph.engine.state.StepRecord`); a
        field an old record lacks takes its default."""
        artifact = record.get("artifact")
        return cls(
            iteration=int(record.get("iteration", 0)),
            tool_call_id=str(record.get("tool_call_id", "")),
            tool_name=str(record.get("tool_name", "")),
            tool_args=record.get("tool_args"),
            observation=str(record.get("observation", "")),
            error=record.get("error"),
            elapsed=float(record.get("elapsed", 0.0)),
            artifact=Artifact(**artifact) if isinstance(artifact, dict) else None,
            approval=record.get("approval"),
            unchanged=bool(record.get("unchanged")),
            model=record.get("model"),
        )


@dataclass(frozen=True)
class RunResult:
    """What the result of every run has, ReAct (:class:`AgentResult`) or DAG
    (:class:`~reactgraph.DAGResult`). Every field but ``answer`` is keyword-only.

    Attributes:
        answer: The answer before synthesis (see the subclass).
        usage: Tokens and model calls summed over every model call of the run (SPEC R2.10).
        elapsed: Seconds the run took.
        finish_reason: How the run ended (:data:`reactgraph.agents.outcome.FinishReason`; the subclass lists its values).
        error: Why the run failed, ``None`` when it did not.
        thread_id: The conversation thread the run belongs to.
        synthesis: The synthesized answer when the run streamed one, else ``None``.
        pending: The calls a paused run waits on (approvals, and interrupts tools raised
            themselves; SPEC R13.3, R13.8); empty unless ``finish_reason == "waiting"``.
    """

    answer: str
    _: KW_ONLY
    usage: Usage = field(default_factory=Usage)
    elapsed: float = 0.0
    finish_reason: FinishReason | None = None
    error: str | None = None
    thread_id: str | None = None
    synthesis: str | None = None
    pending: list[PendingCall] = field(default_factory=list)

    @property
    def waiting(self) -> bool:
        """True when the run is paused, waiting for :attr:`pending` decisions."""
        return bool(self.pending)

    @property
    def iterations(self) -> int:
        """Loop model calls of the run (the ``done`` event's ``iterations``)."""
        raise NotImplementedError

    def done_data(self, answer: str) -> dict[str, Any]:
        """The payload of the ``done`` event (SPEC §8) that ends this run's stream, with
        ``answer`` as the answer shown; the subclass's :meth:`_done_extras` follow."""
        return {
            "answer": answer,
            "iterations": self.iterations,
            "usage": self.usage.to_dict(),
            "elapsed": round(self.elapsed, 3),
            "finish_reason": self.finish_reason,
            "thread_id": self.thread_id,
            **self._done_extras(),
        }

    def _done_extras(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True, kw_only=True)
class AgentResult(RunResult):
    """The outcome of the tool loop of one run (SPEC R2.10).

    Attributes:
        answer: The loop's brief answer: the model's final answer, the raw content after
            two unparseable outputs, or the fallback summary (max iterations, model failure).
        messages: The full history sent to the model: system prompt, user query, every
            assistant message and every tool result.
        steps: Every tool call, in order.
        iterations: Model calls made by the loop.
        usage, elapsed, thread_id, synthesis, error: As :class:`RunResult`; ``elapsed``
            runs from the start of the run to the end of the loop (or of synthesis, for
            results built by ``astream_events``).
        finish_reason: ``"final_answer"``, ``"stalled"`` (the model's answer after the loop
            stalled, SPEC R13.1), ``"raw_content"``, ``"return_direct"`` (a ``return_direct``
            tool's result is the answer), ``"max_iterations"``, ``"model_error"``, a usage
            limit (``"model_call_limit"``, ``"tool_call_limit"``, ``"token_limit"``,
            ``"cost_limit"``; see :attr:`limit`), or ``"waiting"``: the run is paused
            on :attr:`pending` (SPEC R13.3) and continues with ``agent.resume``.
        grounding: The grounding check of the synthesized answer (SPEC R13.1; see
            :func:`reactgraph.answer.grounding.check_grounding`), ``None`` when not run.
        structured_response: The answer as an object of the agent's ``response_format``;
``None`` without one, or when no level of structured output worked.
        pending: As :class:`RunResult`.
        limit: The usage limit that ended the loop, with the run's figures (see
            :func:`reactgraph.core.limits.limit_reached`); ``None`` when none did.
        model: With fallback models: the model that served the loop last;
            ``None`` without fallbacks.
        model_usage: With fallback models: :attr:`usage` per model, by name (the
            models in the order they first answered); empty without fallbacks.
        answer_source: Which call wrote the streamed answer: ``"loop"`` (the loop's own
            final answer, ``AgentSettings.synthesis="auto"``), ``"synthesis"`` (the synthesis
            call) or ``"observations"`` (made of the tools' results, no model call); ``None``
            when no answer was streamed (``run``). In ``done`` under ``synthesis="auto"``
            only, so the ``done`` of ``"always"`` stays as it was.
    """

    messages: list[BaseMessage] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    iterations: int = 0  # type: ignore[assignment]  # a field here, a property of the base
    grounding: dict[str, Any] | None = None
    structured_response: Any = None
    limit: dict[str, Any] | None = None
    model: str | None = None
    model_usage: dict[str, Usage] = field(default_factory=dict)
    answer_source: str | None = None
    source_in_done: bool = field(default=False, repr=False)

    def _done_extras(self) -> dict[str, Any]:
        extras: dict[str, Any] = {"grounding": self.grounding, **({"limit": self.limit} if self.limit else {})}
        if self.source_in_done and self.answer_source is not None:
            extras["answer_source"] = self.answer_source
        if self.model_usage:
            extras.update(model=self.model, model_usage={name: u.to_dict() for name, u in self.model_usage.items()})
        return extras

    @property
    def artifacts(self) -> list[Artifact]:
        """Artifacts returned by the run's tools, in order (SPEC R2.9)."""
        return [step.artifact for step in self.steps if step.artifact is not None]
