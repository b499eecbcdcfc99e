"""The loop's own final answer as the streamed answer (``AgentSettings.synthesis="auto"``).

Under ``"always"`` the loop's model calls are never shown and one more streamed call writes
the answer from the trace (SPEC §3). Under ``"auto"`` a loop call that may be the last one is
streamed internally, and the answer it carries reaches the client as ``answer`` deltas while
it is decoded, so the user waits for no second call and pays for no second answer:

* native mode: a reply carrying no tool call is the answer (:func:`stream_loop_call` with
  :func:`native_text`);
* JSON mode: the ``answer`` field of a ``final_answer`` action, read from the partial JSON
  as it arrives (:func:`json_answer_so_far`, jiter's partial mode).

Nothing is sent while the text may still turn out not to be the answer: a reply that begins
like a tool call written in the content, a reasoning tag or a code fence (``<``, ``[``,
``{``, a backtick) is held until it ended, and a call whose answer a rule may refuse (a
tool required before answering, :func:`reactgraph.nodes.llm_call.needs_tool_call`) is held
whole. What was sent and then turns out not to be the answer (a tool call after some text, a
refused answer, a rewritten one) is withdrawn with an ``answer`` ``reset`` event, as a
withdrawn synthesis is. ``synthesize`` ends a streamed loop answer (the ``flag`` note, the
``answer`` ``done`` event) without a model call (:func:`loop_writes_answer` says when it
may: never where the synthesis call adds something).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jiter
from langchain_core.messages import AIMessage, AIMessageChunk, message_chunk_to_message
from langchain_core.runnables import Runnable, RunnableConfig

from reactgraph.engine.dualmode import stream_model
from reactgraph.protocol.actions import message_text
from reactgraph.core.config import AUTO_SYNTHESIS_STEPS
from reactgraph.events import AnswerDelta, AnswerReset, AnswerSignalled, AnswerStarted, emit

HELD_STARTS = "<[{`"
"""First characters of a reply that is held until it ended: a tool call written in the
content (``<tool_call>``, ``[TOOL_CALLS]``, a JSON call), a reasoning tag, a code fence."""


def loop_writes_answer(settings: Any, state: dict[str, Any], synthesizes: bool, structured: bool) -> bool:
    """Whether the loop's next final answer is the answer shown (``synthesis="auto"``).

    Args:
        settings: The agent's resolved :class:`~reactgraph.AgentSettings`.
        state: The run's state before the loop call.
        synthesizes: The run streams an answer (``Engine.synthesizes``).
        structured: The graph has a ``response_format`` (its object is written from the
            synthesized answer, so synthesis runs).

    Returns:
        False under ``"always"``, for a run that streams no answer, with ``structured``,
        under ``grounding="enforce"`` (the answer is checked before it stands) or
        ``answer_from_observations`` once a tool call succeeded, and once the turn ran
        :data:`~reactgraph.core.config.AUTO_SYNTHESIS_STEPS` tool calls; else True.
    """
    if settings.synthesis != "auto" or not synthesizes or structured or settings.grounding == "enforce":
        return False
    steps = state.get("steps") or []
    if settings.answer_from_observations and any(not step.get("error") for step in steps):
        return False
    return len(steps) < AUTO_SYNTHESIS_STEPS


class LoopAnswer:
    """The ``answer`` events of one loop call's answer, as the call decodes it.

    Args:
        hold: Send nothing until :meth:`finish` (the answer may still be refused).
    """

    def __init__(self, hold: bool = False) -> None:
        self.hold = hold
        self.sent = ""
        self.started = False

    def offer(self, text: str) -> None:
        """The answer's text decoded so far (the whole of it, each time): the part not sent
        yet goes out as a delta, unless the text is held (see the module docstring) or no
        longer extends what was sent (then :meth:`finish` settles it)."""
        text = text.lstrip()
        if self.hold or not text or (not self.started and text[0] in HELD_STARTS):
            return
        if not text.startswith(self.sent) or len(text) == len(self.sent):
            return
        if not self.started:
            emit(AnswerSignalled())  # the loop has its answer: the signal comes before the answer, as always
            emit(AnswerStarted())
            self.started = True
        emit(AnswerDelta(content=text[len(self.sent):]))
        self.sent = text

    def withdraw(self, problems: list[str]) -> None:
        """What was sent is not the answer: an ``answer`` ``reset`` event naming
        ``problems`` (nothing when nothing was sent)."""
        if self.started:
            emit(AnswerReset(ungrounded=[], factless=False, problems=problems))
        self.sent, self.started = "", False

    def finish(self, text: str) -> bool:
        """``text`` is the loop's accepted answer: send what was not sent of it (all of it,
        after a ``reset``, when the decoded text was rewritten).

        Returns:
            Whether the answer was sent (False for an empty one: synthesis writes it).
        """
        text = text.lstrip()
        if not text.strip():
            self.withdraw(["empty"])
            return False
        if self.started and not text.startswith(self.sent):
            self.withdraw(["rewritten"])
        self.hold = False
        if not self.started:
            emit(AnswerStarted())
            self.started = True
        if len(text) > len(self.sent):
            emit(AnswerDelta(content=text[len(self.sent):]))
        self.sent = text
        return True


def settle(answer: LoopAnswer | None, update: dict[str, Any]) -> dict[str, Any]:
    """A loop call's ``update`` once the call is decided: an accepted final answer of the
    model's own words is finished on ``answer`` and marked ``answer_streamed``; anything else
    (tool calls, a refused answer, a reformat request, a stall) withdraws what was sent.

    Returns:
        ``update``, with ``answer_streamed: True`` when the answer was sent.
    """
    if answer is None:
        return update
    draft = update.get("draft_answer")
    if update.get("finish_reason") == "final_answer" and draft and answer.finish(draft):
        update["answer_streamed"] = True
    else:
        answer.withdraw(["not_final"])
    return update


def native_text(message: AIMessageChunk) -> str | None:
    """The answer a native reply decoded so far carries: its text while it asked for no
    tool, ``None`` once it did."""
    if message.tool_call_chunks or message.tool_calls:
        return None
    return message_text(message)


def json_answer_so_far(text: str) -> str | None:
    """The ``answer`` of a JSON-mode ``final_answer`` action decoded so far (also inside an
    ``{"action": {...}}`` wrapper), read from the partial JSON; ``None`` while the action's
    type is not known to be ``final_answer`` or the text is no JSON object."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        action = jiter.from_json(text[start:].encode(), partial_mode="trailing-strings")
    except ValueError:
        return None
    if isinstance(action, dict) and len(action) == 1 and isinstance(action.get("action"), dict):
        action = action["action"]
    if not isinstance(action, dict) or action.get("type") != "final_answer":
        return None
    written = action.get("answer")
    return written if isinstance(written, str) else None


async def stream_loop_call(model: Runnable, messages: list[Any], config: RunnableConfig, answer: LoopAnswer,
                           read: Callable[[AIMessageChunk], str | None]) -> AIMessage:
    """One loop model call, streamed, its answer offered to ``answer`` as it is decoded.

    Args:
        model: The loop model (tools bound, or the JSON-mode model).
        messages: The loop's input.
        config: The run's config.
        answer: Where the decoded answer goes.
        read: The answer in the reply decoded so far (:func:`native_text`, or
            :func:`json_answer_so_far` over its text), ``None`` for none.

    Returns:
        The whole reply as one message (its chunks added up: content, tool calls, usage).

    Raises:
        Whatever the model call raises (what was sent of the answer is withdrawn first).
    """
    whole: AIMessageChunk | None = None
    try:
        async for chunk in stream_model(model, messages, config):
            if not isinstance(chunk, AIMessageChunk):
                chunk = AIMessageChunk(content=message_text(chunk))
            whole = chunk if whole is None else whole + chunk
            text = read(whole)
            if text is not None:
                answer.offer(text)
    except Exception:
        answer.withdraw(["model_error"])
        raise
    if whole is None:
        return AIMessage(content="")
    message = message_chunk_to_message(whole)
    return message if isinstance(message, AIMessage) else AIMessage(content=message_text(message))


def json_text(message: AIMessageChunk) -> str | None:
    """:func:`json_answer_so_far` of a JSON-mode reply decoded so far."""
    return json_answer_so_far(message_text(message))
