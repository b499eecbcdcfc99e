"""Tool hooks: code around every tool call (SPEC R13.3).

``before_tool(call) -> call | ToolRejection | None`` runs before a call: it may return
the call with other arguments, a :class:`ToolRejection` (the call does not run; the
model sees its message as the observation), or ``None`` (go on unchanged).
``after_tool(call, result) -> result | None`` runs after it: ``result`` is the
``ToolMessage`` answering the call; a hook may return another ``ToolMessage``, a string
(the new content), or ``None`` (keep it). Hooks may be sync or async, and compose: the
hooks of ``AgentSettings.before_tool`` / ``after_tool`` run in order, each given what the
one before returned; the first rejection stops the chain.

A hook that raises becomes an observation like a tool error (SPEC R2.7): a failing
``before_tool`` keeps the call from running, a failing ``after_tool`` replaces the
result with the error. Hooks run inside ``execute_tools`` (after a person approved the
call, when approval is required: see :mod:`reactgraph.tools.approval`), once per call.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage

BeforeTool = Callable[[dict[str, Any]], "dict[str, Any] | ToolRejection | None | Awaitable[Any]"]
"""A ``before_tool`` hook: given the call ``{"name", "args", "id"}``."""

AfterTool = Callable[[dict[str, Any], ToolMessage], "ToolMessage | str | None | Awaitable[Any]"]
"""An ``after_tool`` hook: given the call and the ``ToolMessage`` answering it."""


@dataclass(frozen=True)
class ToolRejection:
    """What a ``before_tool`` hook returns to keep a call from running.

    Attributes:
        message: The observation the model sees instead of the tool's result.
    """

    message: str


def hook_name(hook: Any) -> str:
    """A hook's name for messages: its ``__name__``, else its class name."""
    return getattr(hook, "__name__", type(hook).__name__)


async def _call(hook: Any, *args: Any) -> Any:
    result = hook(*args)
    return await result if inspect.isawaitable(result) else result


async def run_before_tool(hooks: Sequence[BeforeTool], call: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Run the ``before_tool`` hooks in order.

    Args:
        hooks: The hooks (``AgentSettings.before_tool``).
        call: ``{"name", "args", "id"}``.

    Returns:
        ``(call, None)`` to run the (possibly rewritten) call, or ``(call, observation)``
        when a hook rejected it or raised (the observation says which hook and why).
        A hook cannot rename the call or change its id; a returned call that is not a
        dict with an ``args`` object counts as a failure of that hook.
    """
    for hook in hooks:
        try:
            result = await _call(hook, dict(call))
        except Exception as exc:
            return call, f"Error: before_tool hook {hook_name(hook)} failed: {type(exc).__name__}: {exc}"
        if result is None:
            continue
        if isinstance(result, ToolRejection):
            return call, result.message
        if not isinstance(result, dict) or not isinstance(result.get("args"), dict):
            return call, (f"Error: before_tool hook {hook_name(hook)} returned {type(result).__name__}, "
                          "not a call with an args object, a ToolRejection or None")
        call = {**call, "args": result["args"]}
    return call, None


async def run_after_tool(hooks: Sequence[AfterTool], call: dict[str, Any], message: ToolMessage) -> ToolMessage:
    """Run the ``after_tool`` hooks in order on the call's result.

    Args:
        hooks: The hooks (``AgentSettings.after_tool``).
        call: ``{"name", "args", "id"}`` as it ran.
        message: The ``ToolMessage`` answering the call.

    Returns:
        The result the model sees: the last hook's, with the call's id and tool name; a
        hook that raised (or returned something else than a ``ToolMessage``, a string or
        ``None``) makes it an error observation naming the hook.
    """
    for hook in hooks:
        try:
            result = await _call(hook, dict(call), message)
        except Exception as exc:
            return ToolMessage(f"Error: after_tool hook {hook_name(hook)} failed: {type(exc).__name__}: {exc}",
                               tool_call_id=message.tool_call_id, name=message.name, status="error")
        if result is None:
            continue
        if isinstance(result, str):
            message = message.model_copy(update={"content": result})
        elif isinstance(result, ToolMessage):
            message = result.model_copy(update={"tool_call_id": message.tool_call_id, "name": message.name})
        else:
            return ToolMessage(f"Error: after_tool hook {hook_name(hook)} returned {type(result).__name__}, "
                               "not a ToolMessage, a string or None",
                               tool_call_id=message.tool_call_id, name=message.name, status="error")
    return message
