"""The JSON-mode action protocol (SPEC R2.3, R2.4, R2.8).

In JSON mode the model answers each loop call with one JSON object, either::

    {"type": "tool_call", "reasoning": "...", "tool_name": "...", "tool_args": {...}}
    {"type": "final_answer", "reasoning": "...", "answer": "..."}

:func:`parse_action` reads that wire format and the common variants real models write
(``action`` for ``type``, ``name``/``arguments`` for ``tool_name``/``tool_args``,
arguments as a JSON string, OpenAI-style ``{"function": {...}}``, a ``<tool_call>``
wrapper, and ``{"action": {...}}``, the shape OpenAI's strict schema output is given, see
:mod:`reactgraph.protocol.action_schema`). Unreadable content becomes a final answer whose reasoning is
:data:`PARSE_FAILURE_SENTINEL`, which the loop recognises (R2.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from reactgraph.protocol.action_schema import ACTION_WRAPPER_KEY
from reactgraph.protocol.jsonparse import extract_json, safe_json

PARSE_FAILURE_SENTINEL = "(could not parse LLM output as JSON)"
"""Reasoning of the action that stands for unparseable model output (SPEC R2.4)."""

_TYPE_KEYS = ("type", "action", "action_type", "kind", "step")
_NAME_KEYS = ("tool_name", "tool", "name", "function_name", "tool_id")
_ARGS_KEYS = ("tool_args", "arguments", "args", "parameters", "params", "input", "tool_input", "action_input")
_ANSWER_KEYS = ("answer", "final_answer", "response", "output", "content", "text", "result")
_REASONING_KEYS = ("reasoning", "thought", "thoughts", "reason", "rationale", "thinking")
_TOOL_TYPES = {"tool_call", "tool", "call_tool", "use_tool", "tool_use", "function_call", "function", "call"}
_FINAL_TYPES = {"final_answer", "final", "answer", "finish", "done", "respond", "response"}


@dataclass
class Action:
    """One parsed JSON-mode action.

    Attributes:
        type: ``"tool_call"`` or ``"final_answer"``.
        reasoning: The model's stated reasoning ("" when it gave none);
            :data:`PARSE_FAILURE_SENTINEL` when the content could not be parsed.
        tool_name: The tool to call (tool calls only).
        tool_args: The tool's arguments. Normally a dict; anything else (a list, a
            string that is not a JSON object) is passed on so the tool executor can
            report it as an error observation.
        answer: The final answer text (final answers only).
        raw: The content the model wrote.
    """

    type: Literal["tool_call", "final_answer"]
    reasoning: str = ""
    tool_name: str | None = None
    tool_args: Any = field(default_factory=dict)
    answer: str = ""
    raw: str = ""

    @property
    def parse_failed(self) -> bool:
        """True when this action stands for unparseable output (SPEC R2.4)."""
        return self.type == "final_answer" and self.reasoning == PARSE_FAILURE_SENTINEL


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj and obj[key] is not None:
            return obj[key]
    return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return safe_json(value)


def _args(value: Any) -> Any:
    if value is None:
        return {}
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped:
            return {}
        parsed = extract_json(stripped)
        return parsed if parsed is not None else value
    return value


def message_text(message: BaseMessage | None) -> str:
    """The text of a message's content: a string as is, text blocks joined, ``None`` → ""."""
    if message is None:
        return ""
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def parse_action(content: str | None, *, separate_reasoning_text: str = "") -> Action:
    """Read one JSON-mode action from model content.

    Args:
        content: The assistant message's text (may be ``None`` or empty).
        separate_reasoning_text: Reasoning the model returned in a separate field; used
            when the JSON ``reasoning`` is empty (SPEC R2.8).

    Returns:
        The :class:`Action`. Content with no readable object, or an object that is
        neither a tool call nor a final answer, gives an action whose
        ``parse_failed`` is true and whose ``answer`` is the raw content. Never raises.
    """
    raw = content if isinstance(content, str) else ""
    obj = extract_json(raw)
    if obj is None:
        return Action(type="final_answer", reasoning=PARSE_FAILURE_SENTINEL, answer=raw, raw=raw)
    wrapped = obj.get(ACTION_WRAPPER_KEY)
    if len(obj) == 1 and isinstance(wrapped, dict):  # {"action": {...}}: OpenAI json_schema output
        obj = wrapped
    # OpenAI-style {"function": {"name": ..., "arguments": ...}} or {"tool_calls": [...]}
    calls = obj.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        obj = {**obj, **calls[0]}
    function = obj.get("function")
    if isinstance(function, dict):
        obj = {**obj, **function}
    reasoning = _text(_first(obj, _REASONING_KEYS)).strip() or separate_reasoning_text
    kind = _first(obj, _TYPE_KEYS)
    kind = kind.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(kind, str) else ""
    name = _first(obj, _NAME_KEYS)
    answer = _first(obj, _ANSWER_KEYS)
    # {"action": "get_order_status", "action_input": {...}}: the action names the tool
    if kind and kind not in _TOOL_TYPES and kind not in _FINAL_TYPES and name is None and answer is None:
        name = _first(obj, _TYPE_KEYS)
        kind = "tool_call"
    is_final = kind in _FINAL_TYPES or (not kind and name is None and answer is not None)
    if is_final:
        if answer is None:  # {"action": "Final Answer", "action_input": "..."} (LangChain's ReAct format)
            answer = _first(obj, _ARGS_KEYS)
        text = _text(answer) if answer is not None else ""
        if not text.strip():
            text = reasoning
        return Action(type="final_answer", reasoning=reasoning, answer=text, raw=raw)
    if isinstance(name, str) and name.strip():
        return Action(
            type="tool_call",
            reasoning=reasoning,
            tool_name=name.strip(),
            tool_args=_args(_first(obj, _ARGS_KEYS)),
            raw=raw,
        )
    return Action(type="final_answer", reasoning=PARSE_FAILURE_SENTINEL, answer=raw, raw=raw)
