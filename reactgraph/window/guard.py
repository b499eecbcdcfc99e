"""The context guard (SPEC R6.1, R6.2, R6.4): :class:`ContextGuard` runs before every loop
model call (the ``guard_context`` node) and keeps the conversation inside the model's token
budget in three steps:

1. any message longer than ``max_message_chars`` characters is cut, with a
   :data:`TRUNCATION_MARKER`;
2. the tokens of the whole request are counted (system prompt and tool schemas included,
   as ``overhead_tokens``); within the budget the messages pass unchanged;
3. over the budget, a compaction model summarizes the older messages into one message,
   keeping system messages, pinned messages (R6.2) and the most recent messages verbatim;
   when that call fails, or its result is still over the budget, a heuristic truncation
   keeps the pinned messages and as many recent messages as fit, walking back from the end.

Every result keeps the provider protocol (R6.4): an assistant message with tool calls and
its tool results are kept or dropped together, and the conversation never starts with an
assistant or tool message."""

from __future__ import annotations

import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.constants import TAG_NOSTREAM

from reactgraph.engine.dualmode import call_model
from reactgraph.engine.pinning import is_pinned
from reactgraph.protocol.actions import message_text
from reactgraph.core.config import COMPACTION_HINTS
from reactgraph.protocol.prompts import COMPACTION_HINT_PROMPTS, COMPACTION_SYSTEM, COMPACTION_USER
from reactgraph.core.usage import sum_usage, usage_of
from reactgraph.window.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    REQUEST_OVERHEAD_TOKENS,
    TokenCounter,
    conversation_language,
    model_name_of,
)

logger = logging.getLogger(__name__)

TRUNCATION_MARKER = "[Truncated]"
"""Ends every text the guard cuts (SPEC R6.1)."""


SUMMARY_HEADER = "[Summary of the earlier conversation]"
"""First line of the message that replaces compacted messages."""


DROPPED_NOTE = "[Earlier messages were removed to fit the context window.]"
"""The message that stands where a heuristic truncation removed messages."""


_MARKER_ROOM = 80
"""Characters a cut message leaves for the marker line, so it stays within its limit."""


def clip_text(text: str, chars: int) -> str:
    """``text`` cut to its first ``chars`` characters followed by a line starting with
    :data:`TRUNCATION_MARKER` that says how much was cut; ``text`` itself when it is not
    longer than ``chars``."""
    if len(text) <= chars:
        return text
    chars = max(0, chars)
    return f"{text[:chars]}\n{TRUNCATION_MARKER} ({len(text) - chars:,} of {len(text):,} characters cut)"


def _with_text(message: BaseMessage, chars: int, over: int | None = None) -> BaseMessage:
    """``message`` (same id and flags) with each text part longer than ``over`` characters
    (default ``chars``) cut to ``chars``; the message itself when no part is that long."""
    over = chars if over is None else over
    content = message.content
    if isinstance(content, str):
        return message if len(content) <= over else message.model_copy(update={"content": clip_text(content, chars)})
    changed = False
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, str) and len(block) > over:
            block, changed = clip_text(block, chars), True
        elif isinstance(block, dict) and block.get("type") == "text" and len(str(block.get("text", ""))) > over:
            block, changed = {**block, "text": clip_text(str(block["text"]), chars)}, True
        blocks.append(block)
    return message.model_copy(update={"content": blocks}) if changed else message


def _units(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Split a conversation into the pieces compaction keeps or drops whole (R6.4): an
    assistant message with tool calls together with the tool results that follow it and
    answer its calls; every other message alone."""
    units: list[list[BaseMessage]] = []
    i = 0
    while i < len(messages):
        unit = [messages[i]]
        i += 1
        if isinstance(unit[0], AIMessage) and unit[0].tool_calls:
            ids = {call.get("id") for call in unit[0].tool_calls}
            while i < len(messages) and isinstance(messages[i], ToolMessage) and messages[i].tool_call_id in ids:
                unit.append(messages[i])
                i += 1
        units.append(unit)
    return units


def _protected(unit: list[BaseMessage], pinned: Collection[str]) -> bool:
    """System messages and units holding a pinned message are always kept."""
    return isinstance(unit[0], SystemMessage) or any(is_pinned(message, pinned) for message in unit)


def _orphan(unit: list[BaseMessage]) -> bool:
    """A tool result that answers no preceding call: never kept by compaction."""
    return isinstance(unit[0], ToolMessage)


def _render(message: BaseMessage) -> str:
    """One message as a transcript entry for the compaction model."""
    text = message_text(message)
    if isinstance(message, ToolMessage):
        return f"[tool result {message.name or message.tool_call_id}] {text}"
    if isinstance(message, AIMessage):
        calls = "".join(
            f"\n[assistant calls] {call.get('name')}({json.dumps(call.get('args'), ensure_ascii=False, default=str)})"
            for call in message.tool_calls
        )
        return f"[assistant] {text}{calls}"
    role = {"human": "user", "system": "system"}.get(message.type, message.type)
    return f"[{role}] {text}"


@dataclass
class GuardResult:
    """What one pass of :class:`ContextGuard` did.

    Attributes:
        messages: The conversation to send (without the system prompt the caller adds).
        truncated: Ids of messages cut to ``max_message_chars`` (step 1); the cut
            messages keep their ids.
        method: ``None`` (within budget after step 1), ``"summary"`` (LLM compaction) or
            ``"truncation"`` (heuristic truncation).
        tokens_before: Tokens of the request after step 1, ``overhead_tokens`` included.
        tokens_after: Tokens of the request as returned.
        budget: The budget the guard kept to, in tokens.
        usage: Tokens of the compaction call (``input_tokens``, ``output_tokens``,
            ``total_tokens``) and ``model_calls`` (0 or 1).
        error: Why LLM compaction was not used, when it was tried and failed.
    """

    messages: list[BaseMessage]
    truncated: list[str | None] = field(default_factory=list)
    method: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    budget: int = 0
    usage: dict[str, int] = field(default_factory=sum_usage)
    error: str | None = None

    @property
    def compacted(self) -> bool:
        """Whether step 3 ran (messages were summarized or removed)."""
        return self.method is not None


class ContextGuard:
    """Keeps a conversation inside a token budget (SPEC §6; see the module docstring).

    Args:
        llm: The compaction model (SPEC R2.1 allows a separate, cheaper one); ``None``
            skips LLM compaction and goes straight to heuristic truncation.
        budget: Input tokens a request may use, taken as given (the engine passes
            :func:`context_budget`, which has the 4,000-token floor).
        counter: The :class:`TokenCounter`; a new one for ``llm``'s model when ``None``.
        max_message_chars: Characters one message's text may have before it is cut to at
            most that many (default 50,000; at least 100).
        hint: The compaction prompt, one of :data:`~reactgraph.core.config.COMPACTION_HINTS`
            (``react_iteration``, ``planner_input``, ``step_dependency``, ``general``).
        keep_recent_messages: Recent messages LLM compaction keeps verbatim when they fit
            (whole tool-call groups, so a group may take it past this number).
        run_name: Name of the compaction call's run in traces (LangSmith).

    Raises:
        ValueError: ``budget`` is not positive, ``max_message_chars`` is below 100, ``hint``
            is unknown, or ``keep_recent_messages`` is negative.
    """

    def __init__(
        self,
        llm: BaseChatModel | None,
        *,
        budget: int,
        counter: TokenCounter | None = None,
        max_message_chars: int = 50_000,
        hint: str = "react_iteration",
        keep_recent_messages: int = 6,
        run_name: str = "react_compaction",
    ) -> None:
        if budget < 1:
            raise ValueError(f"budget must be a positive number of tokens, got {budget}")
        if max_message_chars < 100:
            raise ValueError(f"max_message_chars must be at least 100, got {max_message_chars}")
        if hint not in COMPACTION_HINT_PROMPTS:
            raise ValueError(f"unknown compaction hint {hint!r}; use one of {', '.join(COMPACTION_HINTS)}")
        if keep_recent_messages < 0:
            raise ValueError(f"keep_recent_messages must not be negative, got {keep_recent_messages}")
        self.llm = llm
        self.budget = budget
        self.counter = counter or TokenCounter(model_name_of(llm))
        self.max_message_chars = max_message_chars
        self.hint = hint
        self.keep_recent_messages = keep_recent_messages
        self._model = llm.with_config(tags=[TAG_NOSTREAM], run_name=run_name) if llm is not None else None
        self.max_tallies = 1024
        self._tallies: OrderedDict[Hashable, tuple[int, str | None, int, bool]] = OrderedDict()

    @property
    def summary_tokens(self) -> int:
        """Most tokens the summary may take: an eighth of the budget, between 128 and 1,024."""
        return min(1024, max(128, self.budget // 8))

    def truncate_message(self, message: BaseMessage) -> BaseMessage:
        """Step 1 (R6.1): ``message`` with every text part longer than ``max_message_chars``
        characters cut to at most that many, ending with :data:`TRUNCATION_MARKER`; the
        same id and flags. Returns ``message`` itself when nothing is that long."""
        return _with_text(message, self.max_message_chars - _MARKER_ROOM, self.max_message_chars)

    def _tokens(self, messages: Iterable[BaseMessage], overhead: int) -> int:
        return overhead + self.counter.count_messages(messages)

    def fits(self, messages: Sequence[BaseMessage], *, overhead_tokens: int = 0, key: Hashable = None,
             exact: bool = True) -> bool:
        """Whether :meth:`aguard` would pass ``messages`` unchanged: no message over
        ``max_message_chars`` and the request within the budget (SPEC R6.1). The loop asks
        this before every model call and runs the guard only when it says no.

        Counting is incremental: a bound on the token total of the conversation
        under ``key`` (the run's thread and first message) is remembered with its last
        message's id, so a conversation that only grew since the last check looks at its
        new messages only; any other change (a compaction, a different conversation) looks
        at them all again. Far below the budget no text is tokenized: the bytes of the new
        messages bound their tokens (:meth:`TokenCounter.upper_bound`); only when that bound
        goes over the budget is the conversation counted exactly (each message's count is
        cached by the counter).

        Args:
            messages: The conversation, oldest first, without the system prompt.
            overhead_tokens: Tokens the request adds around ``messages``.
            key: Names the conversation; ``None`` always counts everything.
            exact: Count exactly when the bound is over the budget. ``False`` answers
                no instead, without tokenizing (the caller has not loaded the counter's
                encoding yet, and asks again with ``exact`` once it has).

        Returns:
            True when the guard has nothing to do; False when it must run (or, with
            ``exact`` false, when only an exact count can tell).
        """
        known = self._tallies.get(key) if key is not None else None
        start, tokens = 0, REQUEST_OVERHEAD_TOKENS
        if known is not None:
            count, last_id, total, accepted = known
            if 0 < count <= len(messages) and last_id is not None and messages[count - 1].id == last_id:
                if accepted and count == len(messages):
                    return True
                start, tokens = count, total
        for message in messages[start:]:
            if self.truncate_message(message) is not message:
                return False
            tokens += self.counter.upper_bound(message)
        if tokens + overhead_tokens > self.budget:  # near the budget: count exactly
            if not exact:
                self._remember(key, messages, tokens, accepted=False)
                return False
            tokens = self.counter.count_messages(messages)
        self._remember(key, messages, tokens, accepted=False)
        return tokens + overhead_tokens <= self.budget

    def accept(self, messages: Sequence[BaseMessage], key: Hashable) -> None:
        """Record ``messages`` (what :meth:`aguard` returned) as guarded: :meth:`fits` says
        yes to them until a message is added, even when they are still over the budget
        (pinned messages alone can be), so the model is called instead of guarding again."""
        self._remember(key, messages, self.counter.count_messages(messages), accepted=True)

    def _remember(self, key: Hashable, messages: Sequence[BaseMessage], tokens: int, *, accepted: bool) -> None:
        if key is None or not messages:
            return
        self._tallies.pop(key, None)  # re-inserted last: the least recently checked go first
        self._tallies[key] = (len(messages), messages[-1].id, tokens, accepted)
        while len(self._tallies) > self.max_tallies:
            self._tallies.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        """Drop the running total :meth:`fits` keeps under ``key``: the next check counts
        the conversation again. Whoever rewrites messages in place (the guard's own
        truncation keeps a cut message's id) calls this."""
        self._tallies.pop(key, None)

    async def aguard(
        self,
        messages: Sequence[BaseMessage],
        *,
        overhead_tokens: int = 0,
        config: RunnableConfig | None = None,
        pinned: Collection[str] = frozenset(),
    ) -> GuardResult:
        """Run the three steps of SPEC R6.1 on ``messages``.

        Args:
            messages: The conversation, oldest first, without the system prompt the caller
                adds (system messages inside it are kept).
            overhead_tokens: Tokens the request adds around ``messages`` (the system prompt
                and the tool schemas).
            config: RunnableConfig for the compaction call; the call is tagged
                ``TAG_NOSTREAM`` so it never reaches a token stream (SPEC R3.3).
            pinned: Ids of the pinned messages, kept by every compaction (SPEC R6.2).

        Returns:
            The :class:`GuardResult`. Its messages pass :func:`~reactgraph.check_protocol`
            when ``messages`` did, hold every system and pinned message, and fit the budget
            whenever those alone (with ``overhead_tokens``) do. Never raises for what the
            compaction model does: a failed call becomes ``error`` and a truncation.
        """
        work: list[BaseMessage] = []
        truncated: list[str | None] = []
        for message in messages:
            cut = self.truncate_message(message)
            if cut is not message:
                truncated.append(message.id)
            work.append(cut)
        tokens = self._tokens(work, overhead_tokens)
        result = GuardResult(work, truncated, tokens_before=tokens, tokens_after=tokens, budget=self.budget)
        if tokens <= self.budget:
            return result
        units = _units(work)
        if self._model is not None:
            try:
                summarized = await self._summarize(self._model, units, overhead_tokens, config, result.usage, pinned)
            except Exception as exc:  # any failure of the compaction model: heuristic truncation
                result.error = f"{type(exc).__name__}: {exc}"
                logger.warning("context compaction failed, truncating instead: %s", result.error)
            else:
                if summarized is not None:
                    after = self._tokens(summarized, overhead_tokens)
                    if after <= self.budget:
                        result.messages, result.method, result.tokens_after = summarized, "summary", after
                        return result
                    result.error = f"the summarized conversation is still over budget ({after} > {self.budget} tokens)"
                    units = _units(summarized)
        result.messages = self._truncate_history(units, overhead_tokens, pinned)
        result.method = "truncation"
        result.tokens_after = self._tokens(result.messages, overhead_tokens)
        if result.tokens_after > self.budget:
            logger.warning("pinned messages alone exceed the context budget (%d > %d tokens)", result.tokens_after, self.budget)
        return result

    def _fixed_tokens(self, units: list[list[BaseMessage]], overhead: int, pinned: Collection[str]) -> int:
        """Tokens of the request with only its protected units."""
        return self._tokens((m for unit in units if _protected(unit, pinned) for m in unit), overhead)

    def _fit_texts(self, texts: list[str], room: int) -> list[str]:
        """Cut ``texts`` by the same proportion until their tokens fit ``room``; after ten
        rounds the last cut is returned even if it does not fit."""
        total = sum(self.counter.count_text(text) for text in texts)
        ratio = room / total if total else 1.0
        fitted = texts
        for _ in range(10):
            if total <= room:
                break
            fitted = [clip_text(text, int(len(text) * ratio)) for text in texts]
            total = sum(self.counter.count_text(text) for text in fitted)
            ratio *= 0.7
        return fitted

    def _shrink(self, unit: list[BaseMessage], room: int) -> list[BaseMessage] | None:
        """``unit`` with its texts cut by one proportion so it fits ``room`` tokens, or
        ``None`` when even short texts do not fit."""
        longest = max(len(message_text(message)) for message in unit)
        ratio = room / max(1, self.counter.count_messages(unit) - REQUEST_OVERHEAD_TOKENS)
        for _ in range(10):
            chars = int(longest * ratio)
            if chars < 1:
                return None
            shrunk = [_with_text(message, chars) for message in unit]
            if self.counter.count_messages(shrunk) - REQUEST_OVERHEAD_TOKENS <= room:
                return shrunk
            ratio *= 0.7
        return None

    async def _summarize(
        self,
        model: Runnable,
        units: list[list[BaseMessage]],
        overhead: int,
        config: RunnableConfig | None,
        usage: dict[str, int],
        pinned_ids: Collection[str],
    ) -> list[BaseMessage] | None:
        """LLM compaction: the older units become one summary message; system, pinned and
        the most recent units that fit stay. ``None`` when there is nothing older to
        summarize. Adds the call's tokens to ``usage``.

        Raises:
            Exception: Whatever the compaction model raises; ValueError for an empty summary.
        """
        room = (
            self.budget - self._fixed_tokens(units, overhead, pinned_ids) - self.summary_tokens
            - self.counter.count_text(SUMMARY_HEADER) - MESSAGE_OVERHEAD_TOKENS - 2
        )
        tail: set[int] = set()
        kept = 0
        for index in range(len(units) - 1, -1, -1):
            unit = units[index]
            if _protected(unit, pinned_ids):
                continue
            cost = self.counter.count_messages(unit) - REQUEST_OVERHEAD_TOKENS
            if _orphan(unit) or kept >= self.keep_recent_messages or cost > room:
                break
            tail.add(index)
            kept += len(unit)
            room -= cost
        older = [index for index, unit in enumerate(units) if index not in tail and not _protected(unit, pinned_ids)]
        if not older:
            return None
        pinned = [message_text(m) for unit in units if _protected(unit, pinned_ids) for m in unit if not isinstance(m, SystemMessage)]
        language = conversation_language(pinned or [message_text(m) for i in older for m in units[i] if isinstance(m, HumanMessage)])
        system = COMPACTION_SYSTEM.format(
            hint=COMPACTION_HINT_PROMPTS[self.hint],
            language=f" ({language})" if language else "",
            words=self.summary_tokens * 3 // 4,
        )
        pinned_text = "\n".join(clip_text(text, 2_000) for text in pinned) or "(not given)"
        transcript_room = (
            self.budget - self.summary_tokens - 64
            - self.counter.count_text(system) - self.counter.count_text(COMPACTION_USER) - self.counter.count_text(pinned_text)
        )
        entries = self._fit_texts([_render(m) for i in older for m in units[i]], max(0, transcript_room))
        prompt = [SystemMessage(system), HumanMessage(COMPACTION_USER.format(pinned=pinned_text, transcript="\n".join(entries)))]
        response = await call_model(model, prompt, config)
        usage.update(sum_usage(usage, usage_of(response)))
        text = message_text(response).strip()
        if not text:
            raise ValueError("the compaction model returned an empty summary")
        summary_text = self._fit_texts([text], self.summary_tokens)[0]
        summary = HumanMessage(f"{SUMMARY_HEADER}\n{summary_text}", id=f"summary-{uuid.uuid4().hex}")
        compacted: list[BaseMessage] = []
        first_older = older[0]
        older_set = set(older)
        for index, unit in enumerate(units):
            if index == first_older:
                compacted.append(summary)
            if index not in older_set:
                compacted.extend(unit)
        return compacted

    def _truncate_history(self, units: list[list[BaseMessage]], overhead: int, pinned: Collection[str]) -> list[BaseMessage]:
        """Heuristic truncation: keep system and pinned units, then walk back from the end
        keeping whole units while they fit (the first one that does not fit is cut to fit
        when it can); one :data:`DROPPED_NOTE` stands where messages were removed."""
        note = HumanMessage(DROPPED_NOTE, id=f"dropped-{uuid.uuid4().hex}")
        room = self.budget - self._fixed_tokens(units, overhead, pinned) - self.counter.count_message(note)
        keep: dict[int, list[BaseMessage]] = {index: unit for index, unit in enumerate(units) if _protected(unit, pinned)}
        for index in range(len(units) - 1, -1, -1):
            unit = units[index]
            if index in keep:
                continue
            if _orphan(unit) or room <= 0:
                break
            cost = self.counter.count_messages(unit) - REQUEST_OVERHEAD_TOKENS
            if cost <= room:
                keep[index] = unit
                room -= cost
                continue
            shrunk = self._shrink(unit, room)
            if shrunk is not None:
                keep[index] = shrunk
            break
        place_note = room >= 0
        kept: list[BaseMessage] = []
        for index in range(len(units)):
            if index in keep:
                kept.extend(keep[index])
            elif place_note:
                kept.append(note)
                place_note = False
        return kept
