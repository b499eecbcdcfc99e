"""Human approval of tool calls (SPEC R13.3).

A per-tool policy (``AgentSettings.approval``, else the tool's own
``metadata["approval"]``) says which calls a person must approve before they run:
``"never"``, ``"always"``, or a predicate over the call. ``execute_tools`` asks with
LangGraph's ``interrupt()`` before the call runs, so the pause is an ordinary LangGraph
interrupt: checkpointed (it survives a process restart), shown by Studio, and answered
with ``Command(resume=...)``. Each tool call is its own task, so in a parallel batch
only the calls that need approval wait; the others run and their results are kept.

The interrupt's value is an approval request (:func:`approval_request`). The answer is
a :class:`Decision`: approve, approve with edited arguments, or reject with a message
the model sees as the call's observation.

This module holds the policy, the request and decision shapes and the mapping from
decisions to a ``Command``; the pause itself is in :mod:`reactgraph.nodes.execute_tools`,
the surfaces in :class:`~reactgraph.ReActAgent` (``resume(thread_id, decisions)``), the
CLI, the server (``approval`` event, ``POST /threads/{id}/approvals``) and the page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.tools import BaseTool
from langgraph.types import Command, Interrupt, StateSnapshot

from reactgraph.core.bounds import finite_json, storable_problem
from reactgraph.core.errors import DecisionError
from reactgraph.protocol.jsonparse import safe_json
from reactgraph.engine.state import StepRecord
from reactgraph.tools.runner import has_side_effects

logger = logging.getLogger(__name__)

ApprovalRule = Literal["always", "never"] | bool | Callable[[dict[str, Any]], bool]
"""When a tool's calls need approval: ``"always"`` / ``True``, ``"never"`` / ``False``,
or a predicate given the call (``{"name", "args", "id"}``) returning True when this
call needs it. A predicate that raises counts as True (approval fails closed)."""

APPROVAL_REQUEST = "tool_approval"
"""The ``type`` of an approval request (the interrupt's value)."""

STEP_ID_KEY = "step_id"
"""The key of an interrupt value (a dict) that names the DAG plan step whose loop raised it
(added by the DAG executor as the interrupt leaves the step, SPEC R13.8)."""

DECISIONS = ("approve", "edit", "reject")
"""The decisions a person can give, as on the wire (``{"type": ...}``)."""

DEFAULT_REJECTION = "The user rejected this tool call; it did not run."
"""The observation of a rejected call when the person gave no message."""

STARTED_KEY = "started"
"""Marks the stored answer of an approved call that has started (:func:`started_answer`)."""

STARTED_BEFORE = ("Error: this call was approved and started, but the run stopped (it was cancelled, its client went "
                  "away or its process ended) before its result was stored. It was not run again, so whether it took "
                  "effect is unknown: check before calling it again.")
"""The observation of an approved call that may have side effects and whose run stopped
while it ran — cancelled, its stream dropped, its process killed: never run twice, never
asked again (SPEC R13.3)."""

NO_CHECKPOINTER = ("Error: this call needs a person's approval, and the run cannot pause for it (the agent has no "
                   "checkpointer); it did not run.")
"""The observation of a call that needs approval in a run without a checkpointer."""


def approval_rule(tool: BaseTool | None, policy: Mapping[str, ApprovalRule] | None) -> ApprovalRule:
    """The rule for ``tool``'s calls: ``policy[tool name]``, else ``policy["*"]``, else
    the tool's ``metadata["approval"]`` (a tool that changes something can require it by
    default), else ``"never"``."""
    name = tool.name if tool is not None else ""
    if policy:
        if name in policy:
            return policy[name]
        if "*" in policy:
            return policy["*"]
    metadata = (tool.metadata or {}) if tool is not None else {}
    return metadata.get("approval", "never")


def may_need_approval(tool: BaseTool | None, policy: Mapping[str, ApprovalRule] | None) -> bool:
    """Whether some call of ``tool`` may need a person's approval (its rule is not ``"never"``
    or ``False``): a tool that changes something, whatever its calls' arguments. Such a tool
    is never chosen by default, and its confirmation is no data a part of a question asks for."""
    return approval_rule(tool, policy) not in ("never", False)


def changes_something(tool: BaseTool | None, policy: Mapping[str, ApprovalRule] | None) -> bool:
    """Whether ``tool`` writes, not only reads: it declares side effects
    (:func:`~reactgraph.tools.runner.has_side_effects`: ``metadata={"side_effects": True}``, MCP's
    ``destructiveHint``) or some call of it may need a person's approval
    (:func:`may_need_approval`). Such a tool is never a default choice, nor offered to a small
    model for a question whose words do not name it.

    Args:
        tool: A tool (``None``: none).
        policy: ``AgentSettings.approval``.

    Returns:
        True for a tool that may change something."""
    return has_side_effects(tool) is True or may_need_approval(tool, policy)


def check_rule(name: str, rule: Any) -> None:
    """Validate one rule of an approval policy.

    Raises:
        ValueError: ``rule`` is not ``"always"``, ``"never"``, a bool or a callable.
    """
    if not (rule in ("always", "never") or isinstance(rule, bool) or callable(rule)):
        raise ValueError(f"approval rule for {name!r} must be 'always', 'never', a bool or a callable, got {rule!r}")


def needs_approval(call: dict[str, Any], tool: BaseTool | None, policy: Mapping[str, ApprovalRule] | None) -> bool:
    """Whether ``call`` must be approved before it runs (see :data:`ApprovalRule`).

    Args:
        call: The tool call (``name``, ``args``, ``id``).
        tool: The tool it names (``None`` for an unknown tool: never asked, it cannot run).
        policy: ``AgentSettings.approval``.
    """
    if tool is None:
        return False
    rule = approval_rule(tool, policy)
    if rule in ("always", True):
        return True
    if rule in ("never", False) or not callable(rule):
        return False
    try:
        return bool(rule({"name": call.get("name"), "args": call.get("args"), "id": call.get("id")}))
    except Exception as exc:  # fail closed: a predicate that breaks asks the person
        logger.warning("approval predicate for %s raised %s; asking for approval", call.get("name"), exc)
        return True


def approval_request(call: dict[str, Any], iteration: int, description: str = "") -> dict[str, Any]:
    """The interrupt value asking a person to approve ``call`` (JSON, shown by Studio).

    Returns:
        ``{"type": "tool_approval", "tool_call_id", "tool_name", "tool_args",
        "iteration", "description", "decisions": ["approve", "edit", "reject"]}``.
    """
    return {
        "type": APPROVAL_REQUEST,
        "tool_call_id": call.get("id"),
        "tool_name": call.get("name"),
        "tool_args": call.get("args"),
        "iteration": iteration,
        "description": description,
        "decisions": list(DECISIONS),
    }


DECIDED = ("approved", "edited", "rejected")
"""The ``approval`` of a step record a person decided (``None`` for a call that needed none)."""


def _same_args(left: Any, right: Any) -> bool:
    """Equal arguments, also as JSON (``1 == True`` in Python, not in a tool's eyes)."""
    return left == right and safe_json(left) == safe_json(right)


def earlier_decision(call: dict[str, Any], steps: list[StepRecord]) -> StepRecord | None:
    """The step record of this turn's call that ``call`` repeats and a person already
    decided, or ``None`` (SPEC R13.3, approval never asks twice).

    A call repeats a decided one when it names the same tool with the same arguments as
    the model first wrote them (``requested_args`` of an edited call) or as they ran
    (``tool_args``). The repeat is not put to the person again: it gets the decided
    call's observation (its result, or the person's rejection) without running.

    Args:
        call: The tool call about to be sent to ``execute_tools`` (``name``, ``args``).
        steps: The turn's step records, oldest first.

    Returns:
        The latest matching record whose ``approval`` is one of :data:`DECIDED`.
    """
    name, args = call.get("name"), call.get("args")
    for step in reversed(steps):
        if step.get("approval") not in DECIDED or step.get("tool_name") != name:
            continue
        if _same_args(args, step.get("tool_args")) or (
                "requested_args" in step and _same_args(args, step.get("requested_args"))):
            return step
    return None


@dataclass(frozen=True)
class Decision:
    """A person's answer to an approval request.

    Attributes:
        type: ``"approve"`` (run the call as the model wrote it), ``"edit"`` (run it with
            :attr:`args` instead) or ``"reject"`` (do not run it; the model sees
            :attr:`message` as the observation).
        args: The arguments to run with (``edit`` only): a JSON object.
        message: Why it was rejected (``reject`` only); :data:`DEFAULT_REJECTION` when empty.
    """

    type: Literal["approve", "edit", "reject"]
    args: dict[str, Any] | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        if self.type not in DECISIONS:
            raise ValueError(f"a decision is one of {', '.join(DECISIONS)}, got {self.type!r}")
        if self.type == "edit":
            if not isinstance(self.args, dict):
                raise ValueError("an edit decision needs args: the call's new arguments as a JSON object")
            problem = storable_problem(self.args, "an edit's args")  # before it is stored
            if problem is not None:
                raise ValueError(problem)
            if not finite_json(self.args):
                raise ValueError("an edit's args hold NaN or an infinite number (1e999 included); "
                                 "JSON has no such value")

    @classmethod
    def approve(cls) -> Decision:
        """Run the call as it is."""
        return cls("approve")

    @classmethod
    def edit(cls, args: dict[str, Any]) -> Decision:
        """Run the call with ``args`` instead of the model's arguments."""
        return cls("edit", args=args)

    @classmethod
    def reject(cls, message: str | None = None) -> Decision:
        """Do not run the call; ``message`` is what the model is told."""
        return cls("reject", message=message)

    @property
    def observation(self) -> str:
        """What the model sees for a rejected call."""
        return (self.message or "").strip() or DEFAULT_REJECTION

    def to_dict(self) -> dict[str, Any]:
        """The wire form: ``{"type"}`` plus ``args`` (edit) or ``message`` (reject)."""
        data: dict[str, Any] = {"type": self.type}
        if self.args is not None:
            data["args"] = self.args
        if self.message is not None:
            data["message"] = self.message
        return data

    @classmethod
    def parse(cls, value: Any) -> Decision:
        """A decision from what a caller gave: a :class:`Decision`, a dict
        ``{"type": "approve" | "edit" | "reject", "args"?, "message"?}``, or the words
        ``"approve"`` / ``"reject"``; ``True`` approves and ``False`` rejects.

        Raises:
            ValueError: Anything else, or an edit without ``args`` (the reason says which).
        """
        if isinstance(value, Decision):
            return value
        if value is True or value in ("approve", "approved", "yes"):
            return cls.approve()
        if value is False or value in ("reject", "rejected", "no"):
            return cls.reject()
        if isinstance(value, dict):
            kind = value.get("type", value.get("decision"))
            unknown = set(value) - {"type", "decision", "args", "message"}
            if unknown:
                raise ValueError(f"a decision has only type, args and message; unknown: {', '.join(sorted(unknown))}")
            if kind not in DECISIONS:
                raise ValueError(f"a decision's type is one of {', '.join(DECISIONS)}, got {kind!r}")
            message = value.get("message")
            if message is not None and not isinstance(message, str):
                raise ValueError("a rejection message must be a string")
            return cls(kind, args=value.get("args") if kind == "edit" else None,
                       message=message if kind == "reject" else None)
        raise ValueError(f"not a decision: {value!r} (give {{'type': 'approve' | 'edit' | 'reject', ...}})")


def read_decision(value: Any) -> Decision:
    """The decision a resumed approval received, never raising: a value that is no
    decision rejects the call (approval fails closed) and says why."""
    try:
        return Decision.parse(value)
    except ValueError as exc:
        return Decision.reject(f"The call was not run: the approval answer could not be read ({exc}).")


def started_answer(decision: Decision, *, side_effects: bool = True) -> dict[str, Any]:
    """The answer stored for an approved (or edited) call just before it runs
    (:func:`reactgraph.persistence.checkpointing.record_answered_interrupt`).

    For a call that may have side effects, the decision's wire form marked
    :data:`STARTED_KEY`: its task, run again after its run stopped (a process killed, a
    run cancelled, a stream dropped), reads it back and answers :data:`STARTED_BEFORE`
    instead of asking or running again. For a call of a tool declared without side
    effects (``side_effects=False``), the plain decision: it runs again, unasked.

    Args:
        decision: The person's approve or edit decision.
        side_effects: Whether running the call again may change something
            (``Engine.repeat_changes_something``).

    Returns:
        The value the task's ``interrupt()`` returns when the task runs again."""
    return {**decision.to_dict(), STARTED_KEY: True} if side_effects else decision.to_dict()


def started_decision(answer: Any) -> Decision | None:
    """The decision of an answer :func:`started_answer` made, or ``None`` for any other
    answer (a person's decision, to be read with :func:`read_decision`)."""
    if isinstance(answer, dict) and answer.get(STARTED_KEY) is True:
        return read_decision({key: value for key, value in answer.items() if key != STARTED_KEY})
    return None


@dataclass(frozen=True)
class PendingCall:
    """A call a paused run waits on.

    Attributes:
        interrupt_id: The LangGraph interrupt's id (``Command(resume={id: ...})``).
        tool_call_id: The tool call's id; ``None`` for an interrupt a tool raised itself.
        tool_name: The tool; ``None`` as above.
        tool_args: The arguments the model gave.
        iteration: The loop iteration that asked for the call.
        kind: ``"approval"`` (an approval request) or ``"interrupt"`` (a tool's own
            ``interrupt()``, answered with any value).
        value: The interrupt's value as LangGraph holds it.
        step_id: In a DAG run, the plan step whose loop made the call (the value's
            ``step_id``, SPEC R13.8); ``None`` in a ReAct run.
    """

    interrupt_id: str
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_args: Any = None
    iteration: int | None = None
    kind: Literal["approval", "interrupt"] = "interrupt"
    value: Any = field(default=None, repr=False)
    step_id: str | None = None

    @classmethod
    def from_interrupt(cls, item: Interrupt) -> PendingCall:
        """Read one LangGraph ``Interrupt``."""
        value = item.value
        step_id = value.get(STEP_ID_KEY) if isinstance(value, dict) else None
        step_id = str(step_id) if step_id is not None else None
        if isinstance(value, dict) and value.get("type") == APPROVAL_REQUEST:
            return cls(item.id, value.get("tool_call_id"), value.get("tool_name"), value.get("tool_args"),
                       value.get("iteration"), "approval", value, step_id)
        return cls(item.id, value=value, step_id=step_id)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the ``approval`` event, ``GET /threads/{id}``); ``step_id`` only
        for a call of a DAG step."""
        data = {"interrupt_id": self.interrupt_id, "tool_call_id": self.tool_call_id, "tool_name": self.tool_name,
                "tool_args": self.tool_args, "iteration": self.iteration, "kind": self.kind, "value": self.value}
        if self.step_id is not None:
            data["step_id"] = self.step_id
        return data


def pending_calls(snapshot: StateSnapshot) -> list[PendingCall]:
    """The calls a thread's paused run waits on (empty when it is not paused).

    Args:
        snapshot: ``await graph.aget_state({"configurable": {"thread_id": ...}})``.
    """
    return [PendingCall.from_interrupt(item) for item in snapshot.interrupts or ()]


def resume_command(pending: list[PendingCall], decisions: Mapping[str, Any]) -> Command:
    """The ``Command(resume=...)`` that answers ``pending`` with ``decisions``.

    Args:
        pending: What the run waits on (:func:`pending_calls`).
        decisions: Keyed by tool call id (or interrupt id): a :class:`Decision` (or its
            dict / word form, see :meth:`Decision.parse`) for an approval; any value for a
            tool's own interrupt. Calls left out keep waiting.

    Returns:
        ``Command(resume={interrupt_id: value})``.

    Raises:
        DecisionError: No decision given, a key that names no pending call, two keys
            that name the same call (its tool call id and its interrupt id), or an
            approval answer that is no decision.
    """
    if not decisions:
        raise DecisionError("no decisions given")
    by_key = {call.interrupt_id: call for call in pending}
    by_key.update({call.tool_call_id: call for call in pending if call.tool_call_id})
    resume: dict[str, Any] = {}
    for key, value in decisions.items():
        call = by_key.get(key)
        if call is None:
            waiting = ", ".join(c.tool_call_id or c.interrupt_id for c in pending) or "nothing"
            raise DecisionError(f"no pending call {key!r}; the run waits on: {waiting}")
        if call.interrupt_id in resume:  # named once by its tool call id and once by its interrupt id
            raise DecisionError(f"two decisions for call {call.tool_call_id or call.interrupt_id!r}")
        if call.kind == "approval":
            try:
                value = Decision.parse(value).to_dict()
            except ValueError as exc:
                raise DecisionError(f"call {key!r}: {exc}") from exc
        resume[call.interrupt_id] = value
    return Command(resume=resume)
