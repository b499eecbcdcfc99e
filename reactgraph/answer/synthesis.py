"""Answer synthesis (SPEC §3): one streaming model call that turns the trace into the
user-facing answer."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig

from reactgraph.engine.dualmode import stream_model
from reactgraph.protocol.actions import message_text
from reactgraph.events import AnswerDelta, AnswerDone, AnswerStarted, emit
from reactgraph.protocol.jsonparse import safe_json
from reactgraph.core.language import language_name, phrase
from reactgraph.protocol.prompts import (
    SYNTHESIS_HISTORY,
    SYNTHESIS_LANGUAGE,
    SYNTHESIS_PARTS,
    SYNTHESIS_STRICT,
    SYNTHESIS_STRICT_AVOID,
    SYNTHESIS_STRICT_USER,
    SYNTHESIS_SYSTEM,
    SYNTHESIS_USER,
)
from reactgraph.engine.state import StepRecord
from reactgraph.tools.runner import holds_no_data
from reactgraph.core.usage import sum_usage
from reactgraph.window.tokens import estimate_tokens

logger = logging.getLogger(__name__)

RESULT_CLIP_MARK = "… [truncated]"
"""Ends a tool result cut to ``result_chars`` for a synthesis prompt (SPEC R3.1). Not the
context guard's :data:`~reactgraph.window.TRUNCATION_MARKER`, which marks a message cut in
the conversation itself (R6.1)."""


REPEAT_REFUSAL = "repeat"
"""``refused`` value of a tool call (and its step record) that repeated a successful call."""

UNASKED_REFUSAL = "unasked"
"""``refused`` value of a tool call (and its step record) that passed an identifier the
question does not ask about (``AgentSettings.refuse_unasked_ids``)."""


def format_trace(steps: Sequence[StepRecord], draft_answer: str, result_chars: int = 2000) -> str:
    """The work log shown to the synthesis call (SPEC R3.1, R13.1).

    Successful tool calls come first, each with its whole result (up to ``result_chars``);
    every failed or refused attempt is one short line after them, so a small model finds
    the facts and nothing it could copy as an answer about the attempts themselves; a call
    refused as a repeat of a successful one is left out (its result is already there).

    Args:
        steps: Step records, in order.
        draft_answer: The model's own brief answer (never a step summary), added at the
            end as a draft; ``""`` for none.
        result_chars: Characters kept of each tool result (default 2,000); longer results
            end with :data:`RESULT_CLIP_MARK`.

    Returns:
        The numbered results (call, then ``Result:``), the ``Failed attempts`` lines (a
        result that only says nothing was found, :func:`~reactgraph.tools.runner.holds_no_data`,
        is one: ``found nothing (…)``), and
        the draft; ``(no tools were called)`` when there were no steps.
    """
    results: list[str] = []
    failures: list[str] = []
    for step in steps:
        call = f"{step.get('tool_name')}({safe_json(step.get('tool_args'))})"
        if step.get("refused") in (REPEAT_REFUSAL, UNASKED_REFUSAL):
            continue  # a repeat's result is above; an unasked id has no result: nothing to copy
        if step.get("error"):
            reason = str(step["error"]).strip().splitlines()[0]
            line = f"- {call}: failed ({reason[:160]})"
            if line not in failures:
                failures.append(line)
            continue
        observation = str(step.get("observation", ""))
        if holds_no_data(observation):  # "not found": no fact to present, said as such (SPEC R13.1)
            said = observation.strip().splitlines()[0][:160] if observation.strip() else "empty result"
            line = f"- {call}: found nothing ({said})"
            if line not in failures:
                failures.append(line)
            continue
        if len(observation) > result_chars:
            observation = observation[:result_chars] + RESULT_CLIP_MARK
        results.append(f"{len(results) + 1}. {call}\nResult:\n{observation}")
    blocks = results or ["(no tool returned a result)" if failures else "(no tools were called)"]
    if failures:
        blocks.append("Failed attempts (no data):\n" + "\n".join(failures))
    if draft_answer.strip():
        blocks.append(f"Draft answer from the assistant:\n{draft_answer.strip()}")
    return "\n\n".join(blocks)


HISTORY_TOKENS = 600
"""Tokens of earlier turns a synthesis prompt carries at most: the most recent
turns that fit, whole."""


def format_history(turns: Sequence[dict[str, str]], budget_tokens: int = HISTORY_TOKENS) -> str:
    """The thread's earlier turns for a synthesis prompt, compactly.

    Args:
        turns: ``AgentState.earlier_turns``, oldest first (``question``, ``answer``).
        budget_tokens: Most tokens to use (:func:`~reactgraph.window.tokens.estimate_tokens`);
            the newest turns that fit are kept, oldest first in the text.

    Returns:
        ``User: …`` / ``Assistant: …`` lines, ``""`` for none.
    """
    kept: list[str] = []
    used = 0
    for turn in reversed(turns):
        lines = f"User: {turn.get('question', '').strip()}"
        if str(turn.get("answer") or "").strip():
            lines += "\nAssistant: " + " ".join(str(turn["answer"]).split())
        cost = estimate_tokens(lines)
        if used + cost > budget_tokens:
            break
        kept.append(lines)
        used += cost
    return "\n".join(reversed(kept))


def synthesis_messages(
    query: str,
    steps: Sequence[dict[str, Any]],
    draft_answer: str,
    result_chars: int = 2000,
    *,
    strict: bool = False,
    ungrounded: Sequence[str] = (),
    history: str = "",
    language: str | None = None,
    parts: Sequence[str] = (),
) -> list[BaseMessage]:
    """The synthesis prompt: the synthesizer system prompt and one user message with the
    question and the formatted trace (SPEC R3.1), after the earlier turns when there are
    some, and ending with the language to write in when it is known.

    Args:
        query, steps, draft_answer, result_chars: As :func:`format_trace`.
        strict: Ask again after an answer failed the grounding check (SPEC R13.1): the
            strict prompt (copy figures exactly from the log, quote them), no draft.
        ungrounded: With ``strict``, the values the earlier answer made up, named in the
            prompt as values not to write.
        history: The earlier turns (:func:`format_history`), ``""`` for none.
        language: The turn's language (the state's ``language``, an ISO 639-1 code): named
            at the end of the user message (:data:`~reactgraph.protocol.prompts.SYNTHESIS_LANGUAGE`,
            the name from :func:`~reactgraph.core.language.language_name`); ``None``
            (the language could not be told) names none.
        parts: The texts of the question's parts (``AgentState.part_questions``): two or
            more are listed before the language
            (:data:`~reactgraph.protocol.prompts.SYNTHESIS_PARTS`), each to be answered.

    Returns:
        ``[SystemMessage, HumanMessage]``.
    """
    before = SYNTHESIS_HISTORY.format(turns=history) if history.strip() else ""
    after = (SYNTHESIS_PARTS.format(count=len(parts), parts="\n".join(f"- {part}" for part in parts))
             if len(parts) >= 2 else "")
    after += SYNTHESIS_LANGUAGE.format(language=language_name(language)) if language else ""
    if strict:
        trace = format_trace(steps, "", result_chars)
        avoid = SYNTHESIS_STRICT_AVOID.format(values=", ".join(ungrounded)) if ungrounded else ""
        user = SYNTHESIS_STRICT_USER.format(query=query, trace=trace, avoid=avoid)
        return [SystemMessage(SYNTHESIS_SYSTEM + " " + SYNTHESIS_STRICT), HumanMessage(before + user + after)]
    trace = format_trace(steps, draft_answer, result_chars)
    user = SYNTHESIS_USER.format(query=query, trace=trace)
    return [SystemMessage(SYNTHESIS_SYSTEM), HumanMessage(before + user + after)]


async def stream_synthesis(
    llm: BaseChatModel | Runnable,
    query: str,
    steps: Sequence[dict[str, Any]],
    draft_answer: str,
    *,
    result_chars: int = 2000,
    config: RunnableConfig | None = None,
    usage_out: dict[str, int] | None = None,
    strict: bool = False,
    ungrounded: Sequence[str] = (),
    history: str = "",
    language: str | None = None,
    parts: Sequence[str] = (),
) -> AsyncIterator[str]:
    """Stream the synthesized answer, chunk by chunk (SPEC R3.1).

    Args:
        llm: The agent's model (SPEC R2.1), possibly wrapped (``with_config``).
        query: The user's question.
        steps: The run's step records.
        draft_answer: The loop's brief answer.
        result_chars: Characters kept of each tool result.
        config: RunnableConfig for the model call.
        usage_out: When given, filled with the call's token usage (if the provider
            reports it) and ``model_calls: 1``.
        strict, ungrounded: Ask with the strict prompt after a failed grounding check
            (see :func:`synthesis_messages`, SPEC R13.1).
        history: The thread's earlier turns (:func:`format_history`), ``""`` for none.
        language, parts: The turn's language and the question's parts, named in the prompt
            (:func:`synthesis_messages`).

    Yields:
        Non-empty text chunks as the model produces them.

    Raises:
        Whatever the model call raises; callers fall back to the loop's answer (R3.2).
    """
    messages = synthesis_messages(query, steps, draft_answer, result_chars, strict=strict, ungrounded=ungrounded,
                                  history=history, language=language, parts=parts)
    async for text in stream_messages(llm, messages, config=config, usage_out=usage_out):
        yield text


async def stream_messages(
    llm: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    config: RunnableConfig | None = None,
    usage_out: dict[str, int] | None = None,
) -> AsyncIterator[str]:
    """Stream one model call's text (the core of :func:`stream_synthesis`, also used by
    DAG mode's synthesis with its own prompt).

    Args:
        llm: The chat model.
        messages: The prompt.
        config: RunnableConfig for the call.
        usage_out: When given, filled with the call's token usage and ``model_calls: 1``
            once the stream ended.

    Yields:
        Non-empty text chunks.

    Raises:
        Whatever the model call raises.
    """
    reported = sum_usage()  # the chunks' usage summed, as adding the chunks up sums it, without
    async for chunk in stream_model(llm, list(messages), config):  # copying the text so far each time
        if getattr(chunk, "usage_metadata", None):
            reported = sum_usage(reported, chunk.usage_metadata)
        text = message_text(chunk)
        if text:
            yield text
    if usage_out is not None:
        usage_out.update({**reported, "model_calls": 1})


REPEATED_LINE_LIMIT = 3
"""A streamed answer is cut when one line (numbers aside) comes this many times: the model is
looping (a small model's degenerate repetition, SPEC R13.1)."""

_DIGITS = re.compile(r"\d+")

LOOPING_TAIL_REPEATS = 5
"""A streamed answer is also cut when its unfinished line ends in one phrase of letters said
this many times in a row (``normal | normal | normal | …``): a loop inside one line, which
:data:`REPEATED_LINE_LIMIT` never sees (SPEC R13.1)."""

_LOOPING_TAIL_MIN_CHARS = 40
_LOOPING_UNIT_MAX_CHARS = 80


def looping_tail(line: str, repeats: int = LOOPING_TAIL_REPEATS) -> bool:
    """Whether ``line`` ends in one unit of text repeated ``repeats`` times in a row.

    Args:
        line: The text of a line so far (no newline in it).
        repeats: Back-to-back occurrences that make a loop.

    Returns:
        True when, for some unit of 1–80 characters holding a letter, the last
        ``max(repeats × unit, 40)`` characters are that unit over and over (at any phase, so
        the stream may end mid-unit). Separators (``----``, ``| --- | --- |``) and digits
        alone never count.
    """
    for period in range(1, _LOOPING_UNIT_MAX_CHARS + 1):
        span = max(period * repeats, _LOOPING_TAIL_MIN_CHARS)
        if span > len(line):
            break
        tail = line[-span:]
        if tail[:-period] == tail[period:] and any(char.isalpha() for char in tail[:period]):
            return True
    return False


async def until_repetition(chunks: AsyncIterator[str], limit: int = REPEATED_LINE_LIMIT) -> AsyncIterator[str]:
    """Pass ``chunks`` through until the text repeats itself (SPEC R13.1).

    A line of at least 12 characters that comes ``limit`` times — compared without its
    numbers and surrounding blanks, so ``4. x failed`` and ``5. x failed`` are the same line —
    ends the stream; so does a line of any length holding a letter or digit that comes
    :data:`LOOPING_TAIL_REPEATS` times in a row, exactly (``[19]`` over and over: too short for
    the first rule), and a line that loops within itself (:func:`looping_tail`). The chunk that
    completed the repetition is dropped and the source is closed, which stops the model call.

    Args:
        chunks: Streamed text.
        limit: Occurrences of one line that end the stream.

    Yields:
        The chunks before the one that completed the repeated line.
    """
    seen: dict[str, int] = {}
    pending = ""
    last_line, run = "", 0
    async with aclosing(chunks) as source:
        async for chunk in source:
            pending += chunk
            *lines, pending = pending.split("\n")
            for line in lines:
                key = _DIGITS.sub("#", line).strip()
                if len(key) >= 12:
                    seen[key] = seen.get(key, 0) + 1
                    if seen[key] >= limit:
                        logger.info("synthesis cut: the line %r came %d times", key[:80], limit)
                        return
                exact = line.strip()
                run = run + 1 if exact == last_line else 1
                last_line = exact
                if run >= LOOPING_TAIL_REPEATS and any(char.isalnum() for char in exact):
                    logger.info("synthesis cut: the short line %r came %d times in a row", exact[:80], run)
                    return
            if looping_tail(pending):
                logger.info("synthesis cut: the line loops on %r", pending[-80:])
                return
            yield chunk


async def with_fallback(chunks: AsyncIterator[str], fallback: str) -> AsyncIterator[str]:
    """Pass ``chunks`` through; the user always gets an answer (SPEC R3.2).

    Args:
        chunks: A streamed answer (e.g. :func:`stream_synthesis`).
        fallback: The answer to give instead: all of it when the stream failed before any
            visible text or produced only whitespace; after a blank line when the stream
            broke off midway.

    Yields:
        The streamed chunks, then the fallback when needed. Never raises for a failure of
        ``chunks`` (it is logged).
    """
    streamed = False
    try:
        async for text in chunks:
            streamed = streamed or bool(text.strip())
            yield text
    except Exception as exc:  # R3.2: a failed synthesis falls back, it never fails the run
        logger.warning("synthesis failed, falling back to the earlier answer: %s", exc)
        yield f"\n\n{fallback}" if streamed else fallback
        return
    if not streamed:
        yield fallback


def summarize_steps(steps: Sequence[StepRecord], reason: str, language: str | None = "en") -> str:
    """A plain-text fallback answer.

    Args:
        steps: Step records (``AgentState.steps``).
        reason: First line, saying why the run ended without a final answer.
        language: The language of the engine's own words (:func:`~reactgraph.core.language.phrase`;
            ``None`` for the neutral form).

    Returns:
        ``reason`` followed by one line per tool call: ``N. tool(args) — succeeded`` or
        ``— failed: <error>``; or a note that no tool was called.
    """
    if not steps:
        return f"{reason}\n{phrase('no_tools_called', language)}"
    lines = [reason, phrase("steps_taken", language)]
    for number, step in enumerate(steps, start=1):
        outcome = (phrase("step_succeeded", language) if not step.get("error")
                   else phrase("step_failed", language, error=step["error"]))
        lines.append(f"{number}. {step.get('tool_name')}({safe_json(step.get('tool_args'))}) — {outcome}")
    return "\n".join(lines)


async def one_chunk(text: str) -> AsyncIterator[str]:
    """``text`` as a stream of one chunk (an answer known in advance, sent as a stream)."""
    yield text


async def emit_answer(chunks: AsyncIterator[str], fallback: str,
                      epilogue: Callable[[str], str] | None = None) -> str:
    """Send a streamed answer as ``answer`` events (start, one delta per chunk, done),
    falling back to ``fallback`` as :func:`~reactgraph.answer.synthesis.with_fallback` does (R3.2).

    Args:
        chunks: The answer's text chunks.
        fallback: See :func:`with_fallback`.
        epilogue: ``text -> note`` called with the whole text once the stream ended; a
            non-empty note is sent as one more delta before ``done`` (``grounding="flag"``).

    Returns:
        The whole text sent, the note included.
    """
    emit(AnswerStarted())
    parts: list[str] = []
    async for text in with_fallback(chunks, fallback):
        parts.append(text)
        emit(AnswerDelta(content=text))
    note = epilogue("".join(parts)) if epilogue is not None else ""
    if note:
        parts.append(note)
        emit(AnswerDelta(content=note))
    emit(AnswerDone())
    return "".join(parts)


async def collect_answer(chunks: AsyncIterator[str], fallback: str) -> str:
    """The whole text of an answer written unseen (to be checked before it is sent,
    ``grounding="enforce"``), with :func:`with_fallback`'s fallback (R3.2)."""
    return "".join([text async for text in with_fallback(chunks, fallback)])
