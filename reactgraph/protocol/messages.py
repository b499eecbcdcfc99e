"""The provider message protocol, as a check (SPEC R2.5, R6.4, §12), and the conversion
of a conversation between the two loop modes' forms.

OpenAI-compatible providers reject a conversation in which an assistant message's tool
calls are not answered, in order, by one tool message each, directly after it.
:func:`check_protocol` enforces that rule and the rest of seed 003's "common mistakes"; the
test suite applies it to every message list sent to a model.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from reactgraph.protocol.actions import message_text, parse_action
from reactgraph.core.errors import ProtocolError
from reactgraph.protocol.jsonparse import safe_json
from reactgraph.protocol.prompts import OBSERVATION


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
    image gives, as LangGraph keeps it); tool call ids are non-empty and unique.

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


_OBSERVATION_HEAD = OBSERVATION.split("{tool_name}")[0]


def user_wrote(message: BaseMessage) -> bool:
    """Whether ``message`` holds the user's own words: a user message that is not a tool result
    shown in JSON mode (:data:`~reactgraph.protocol.prompts.OBSERVATION`, a user message too),
    whose text may quote what the engine refused ("Call get_x with …").

    Args:
        message: Any message of a thread.

    Returns:
        True for a :class:`~langchain_core.messages.HumanMessage` the user sent."""
    return isinstance(message, HumanMessage) and not message_text(message).startswith(_OBSERVATION_HEAD)


def _json_form(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if isinstance(message, ToolMessage):  # a result without its call: shown as an observation
            out.append(HumanMessage(OBSERVATION.format(tool_name=message.name or "unknown",
                                                       observation=message_text(message))))
            continue
        if not isinstance(message, AIMessage) or not message.tool_calls:
            out.append(message)
            continue
        results: dict[str, ToolMessage] = {}
        while i < len(messages) and isinstance(messages[i], ToolMessage):
            results.setdefault(messages[i].tool_call_id, messages[i])
            i += 1
        reasoning = message_text(message)
        for call in message.tool_calls:
            action = {"type": "tool_call", "reasoning": reasoning, "tool_name": call.get("name"),
                      "tool_args": call.get("args", {})}
            out.append(AIMessage(safe_json(action), name=message.name))
            reasoning = ""
            result = results.get(call.get("id") or "")
            if result is not None:
                out.append(HumanMessage(OBSERVATION.format(tool_name=call.get("name") or "unknown",
                                                           observation=message_text(result))))
    return out


def _native_form(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if not isinstance(message, AIMessage) or message.tool_calls:
            out.append(message)
            continue
        action = parse_action(message_text(message))
        if action.parse_failed:
            out.append(message)
            continue
        if action.type == "final_answer":
            out.append(AIMessage(action.answer, name=message.name))
            continue
        head = _OBSERVATION_HEAD + f"{action.tool_name}:\n"
        following = messages[i] if i < len(messages) else None
        if not isinstance(following, HumanMessage) or not message_text(following).startswith(head):
            out.append(message)  # no result follows: the action stays text
            continue
        call_id = f"call_{message.id or len(out)}"
        args = action.tool_args if isinstance(action.tool_args, dict) else {}
        out.append(AIMessage(action.reasoning, name=message.name,
                             tool_calls=[{"id": call_id, "name": action.tool_name or "", "args": args, "type": "tool_call"}]))
        out.append(ToolMessage(message_text(following)[len(head):], tool_call_id=call_id, name=action.tool_name))
        i += 1
    return out


def in_mode_form(messages: Sequence[BaseMessage], mode: str) -> list[BaseMessage]:
    """A conversation written by models of either loop mode, in the form of ``mode``
    (a run handed to a fallback model that runs the loop in the other mode).

    Native form (SPEC R2.5): a JSON-mode tool-call action followed by its observation
    becomes an assistant message with that tool call (its reasoning as the content; the
    id ``call_<message id>``) and the tool message answering it; a final-answer action
    becomes its answer text. JSON form (R2.3): each tool call of an assistant message
    becomes one action message followed by its result as the observation user message
    (:data:`~reactgraph.protocol.prompts.OBSERVATION`), in the calls' order; a tool message without
    its call becomes an observation too. Everything else is kept as it is; messages already
    in the form are unchanged, so a conversion of a converted list changes nothing.

    Args:
        messages: The conversation (no system prompt needed; one is kept as it is).
        mode: ``"native"`` or ``"json"``.

    Returns:
        A new list; ``messages`` is not modified. Valid for :func:`check_protocol` when the
        input was.
    """
    return _native_form(messages) if mode == "native" else _json_form(messages)
