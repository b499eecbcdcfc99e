"""Reasoning a model returns beside its answer (SPEC R2.8, R13.2).

Thinking-mode providers return it in a field of the assistant message: DeepSeek and older
vLLM/SGLang reasoning parsers as ``reasoning_content``, newer vLLM and Ollama as
``reasoning``; Anthropic-style models as ``reasoning``/``thinking`` content blocks. The
engine keeps it on the stored assistant message under :data:`REASONING_KEY` so a profile
can send it back (:attr:`~reactgraph.providers.profile.ProviderProfile.reasoning_field`);
it never enters the answer stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

REASONING_KEY = "reasoning_content"
"""``additional_kwargs`` key of the reasoning kept on an assistant message."""

RESPONSE_FIELDS = ("reasoning_content", "reasoning")
"""Fields of a Chat Completions message (or stream delta) that carry reasoning."""


def reasoning_field(message: Mapping[str, Any] | Any) -> str:
    """The reasoning in a raw Chat Completions message or delta (a dict, or the openai
    client's object): the first non-empty string of :data:`RESPONSE_FIELDS`, else ``""``."""
    for key in RESPONSE_FIELDS:
        value = message.get(key) if isinstance(message, Mapping) else getattr(message, key, None)
        if isinstance(value, str) and value:
            return value
    return ""


def kept_reasoning(message: BaseMessage) -> str | None:
    """The reasoning kept on an assistant message to send back, ``None`` for none."""
    if not isinstance(message, AIMessage):
        return None
    value = (message.additional_kwargs or {}).get(REASONING_KEY)
    return value if isinstance(value, str) and value else None


def separate_reasoning(message: AIMessage) -> str:
    """Reasoning a model returned outside its content (SPEC R2.8): the
    ``reasoning_content`` field (DeepSeek R1, vLLM reasoning parsers, …) or
    ``reasoning``/``thinking`` content blocks. "" when there is none."""
    extra = message.additional_kwargs or {}
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = extra.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, dict):
            summary = value.get("summary") or value.get("text")
            if isinstance(summary, str) and summary.strip():
                return summary.strip()
    if isinstance(message.content, list):
        parts = []
        for block in message.content:
            if isinstance(block, dict) and block.get("type") in ("reasoning", "thinking"):
                text = block.get("reasoning") or block.get("thinking") or block.get("text") or ""
                if isinstance(text, str):
                    parts.append(text)
        if any(p.strip() for p in parts):
            return "\n".join(p for p in parts if p.strip())
    return ""
