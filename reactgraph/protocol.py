"""The provider message protocol, as a check (SPEC R2.5, R6.4, §12).

OpenAI-compatible providers reject a conversation in which an assistant message's tool
calls are not answered, in order, by one tool message each, directly after it.
:func:`check_protocol` enforces that rule and the rest of seed 003's "common mistakes"; the
test suite applies it to every message list sent to a model.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from reactgraph.errors import ProtocolError


def _valid_tool_content(content: object) -> bool:
    if isinstance(content, str):
        return True
    return isinstance(content, list) and bool(content) and all(isinstance(b, dict) and "type" in b for b in content)


def check_protocol(messages: Sequence[BaseMessage]) -> None:
    """Raise :class:`ProtocolError` unless ``messages`` is a valid conversation.

    Rules: system messages only at the start; the first non-system message is not an
    assistant or tool message; every assistant message with tool calls is followed
    directly by exactly one tool message per call, in the calls' order, with matching
    ``tool_call_id``; every tool message answers such a call; tool message content is a
    string, or a list of content blocks (dicts with a ``type``: what a tool returning an
    image gives, as LangGraph keeps it, issue 21); tool call ids are non-empty and unique.

    Args:
        messages: The list as it would be sent to the model.

    Raises:
        ProtocolError: The first rule broken, with the message index.
    """
    seen_ids: set[str] = set()
    i = 0
    n = len(messages)
    while i < n and isinstance(messages[i], SystemMessage):
        i += 1
    if i < n and isinstance(messages[i], (AIMessage, ToolMessage)):
        raise ProtocolError(f"message {i}: conversation starts with an orphan {messages[i].type} message")
    while i < n:
        message = messages[i]
        if isinstance(message, SystemMessage):
            raise ProtocolError(f"message {i}: system message after the conversation started")
        if isinstance(message, ToolMessage):
            raise ProtocolError(f"message {i}: tool message {message.tool_call_id!r} answers no preceding tool call")
        if isinstance(message, AIMessage) and message.tool_calls:
            expected = [call.get("id") for call in message.tool_calls]
            for call_id in expected:
                if not call_id:
                    raise ProtocolError(f"message {i}: tool call without an id")
                if call_id in seen_ids:
                    raise ProtocolError(f"message {i}: tool call id {call_id!r} used twice")
                seen_ids.add(call_id)
            for offset, call_id in enumerate(expected, start=1):
                j = i + offset
                if j >= n or not isinstance(messages[j], ToolMessage):
                    raise ProtocolError(
                        f"message {i}: tool call {call_id!r} is not answered by a tool message at {j}"
                    )
                reply = messages[j]
                if reply.tool_call_id != call_id:
                    raise ProtocolError(
                        f"message {j}: tool message answers {reply.tool_call_id!r}, expected {call_id!r}"
                    )
                if not _valid_tool_content(reply.content):
                    raise ProtocolError(
                        f"message {j}: tool message content is {type(reply.content).__name__}, not str or content blocks"
                    )
            i += len(expected) + 1
            continue
        i += 1


UNFINISHED_TOOL_RESULT = (
    "Error: this tool call did not finish: the run was stopped (cancelled or disconnected) "
    "before its result arrived. Call the tool again if its result is still needed."
)
"""Content of the tool message :func:`answer_unfinished_tool_calls` adds for a call
that has no result."""


def answer_unfinished_tool_calls(messages: Sequence[BaseMessage]) -> list[BaseMessage] | None:
    """Repair a history whose run was stopped between a tool-call message and its results.

    A run cancelled while its tools were running (a client that disconnected, a stopped
    server) leaves an assistant message whose tool calls have no tool messages in the
    checkpoint; a provider rejects every later request on that thread (SPEC R2.5, §12).

    Args:
        messages: A thread's history, without the system prompt.

    Returns:
        ``None`` when every tool call is answered. Otherwise a new list in which each
        assistant message with tool calls is followed by one tool message per call, in
        the calls' order: the one the history has for it (the first tool message with that
        ``tool_call_id`` directly after the assistant message), else a new one with
        :data:`UNFINISHED_TOOL_RESULT`. Other messages keep their order and ids; when a repair
        is made, tool messages there that answer none of the calls are left out.
    """
    repaired: list[BaseMessage] = []
    changed = False
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        repaired.append(message)
        if not isinstance(message, AIMessage) or not message.tool_calls:
            continue
        answered: dict[str, ToolMessage] = {}
        while i < len(messages) and isinstance(messages[i], ToolMessage):
            answered.setdefault(messages[i].tool_call_id, messages[i])
            i += 1
        for call in message.tool_calls:
            reply = answered.get(call.get("id") or "")
            if reply is None:
                changed = True
                reply = ToolMessage(UNFINISHED_TOOL_RESULT, tool_call_id=call.get("id") or "", name=call.get("name"),
                                    status="error")
            repaired.append(reply)
    return repaired if changed else None
