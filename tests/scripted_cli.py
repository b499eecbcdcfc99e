"""The ``reactgraph`` command on a scripted model, in its own process (used by
tests/integration/test_cli_approval.py to drive the CLI through a pseudo-terminal).

``python -m tests.scripted_cli SCRIPT ARGS...`` runs ``reactgraph ARGS...`` with the demo
plant's real tools (``--db`` chooses its database) and, in place of the configured model,
a :class:`~reactgraph.testing.ScriptedChatModel` playing ``SCRIPT``: a JSON object
``{"responses": [...], "synthesis": "...", "selection": [...]}`` whose responses are strings
(content) or ``{"tool_calls": [[name, args, id], ...]}``; ``selection`` (optional) is the tool
names the tool-selection call picks. The exit status is the command's.

``{"by_message": {"tool": NAME, "arg": ARG}, "delay": SECONDS}`` plays a model that keeps no
state between calls (for ``serve --workers``, where each worker has its own model object):
see :class:`ByMessageModel`. With ``$SCRIPTED_SHARED_SOCKET`` set, ``serve --workers`` has its
workers accept from one shared listening socket (not one each with ``SO_REUSEPORT``), so a
test can steer connections by stopping a worker.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

import reactgraph.models
from reactgraph import ModelAbilities, check_protocol
from reactgraph.protocol.actions import message_text
from reactgraph.cli.main import main
from reactgraph.models import ResolvedModel
from reactgraph.testing import ScriptedChatModel, tool_call


MACHINE = re.compile(r"[A-Z]{2,5}-\d{3}")


class ByMessageModel(ScriptedChatModel):
    """A scripted model whose reply depends only on the messages it is sent: after a user
    message (the query or a ``[USER INTERRUPT]``) it calls ``tool`` with ``{arg: <the last
    machine id in that message>}`` (call id ``call-<id>-<n>``, ``n`` the assistant messages so
    far); after a tool result it answers ``Checked <ids>.``; tool selection picks ``tool``. The
    synthesis (:func:`trace_ids`) is ``Status of <ids>.``.
    Each loop call sleeps ``delay`` seconds."""

    tool: str = "get_equipment_status"
    arg: str = "equipment_id"

    def _next(self, messages: list[BaseMessage], kind: str) -> AIMessage:
        check_protocol(messages)
        if kind == "selection":
            return AIMessage(content="", tool_calls=[tool_call("select_tools", {"tools": [self.tool]}, "select")],
                             usage_metadata=dict(self.usage))
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(content=f"Checked {', '.join(called_ids(messages))}.", usage_metadata=dict(self.usage))
        machine = MACHINE.findall(message_text(messages[-1]))[-1]
        turn = sum(isinstance(message, AIMessage) for message in messages)
        return AIMessage(content="", tool_calls=[tool_call(self.tool, {self.arg: machine}, f"call-{machine}-{turn}")],
                         usage_metadata=dict(self.usage))


def called_ids(messages: list[BaseMessage]) -> list[str]:
    """The machine ids the tool calls in ``messages`` named, in order."""
    return [MACHINE.findall(json.dumps(call["args"]))[0] for message in messages if isinstance(message, AIMessage)
            for call in message.tool_calls if call["name"] != "select_tools"]


def trace_ids(messages: list[BaseMessage]) -> list[str]:
    """The machine ids a synthesis call's user message names (its question and trace), sorted."""
    return sorted(set(MACHINE.findall(" ".join(message_text(message) for message in messages
                                               if not isinstance(message, SystemMessage)))))


def scripted_model(script: dict[str, Any]) -> ScriptedChatModel:
    """The model playing ``script`` (see the module docstring)."""
    if "by_message" in script:
        return ByMessageModel(**script["by_message"], delay=script.get("delay", 0.0),
                              synthesis=lambda messages: f"Status of {', '.join(trace_ids(messages))}.")
    responses: list[Any] = [
        item if isinstance(item, str)
        else AIMessage(content="", tool_calls=[tool_call(name, args, call_id) for name, args, call_id in item["tool_calls"]])
        for item in script["responses"]
    ]
    picks = [AIMessage(content="", tool_calls=[tool_call("select_tools", {"tools": script["selection"]}, "select")])] \
        if "selection" in script else []
    return ScriptedChatModel(responses=responses, synthesis=script.get("synthesis", "Synthesized answer."),
                             by_kind={"selection": picks})


if __name__ == "__main__":
    model = scripted_model(json.loads(sys.argv[1]))

    @asynccontextmanager
    async def open_scripted(**_options: Any) -> AsyncIterator[ResolvedModel]:
        yield ResolvedModel(model, ModelAbilities(tool_call=True), "scripted")

    reactgraph.models.open_model = open_scripted
    if os.environ.get("SCRIPTED_SHARED_SOCKET"):  # serve --workers on one shared listening socket
        import reactgraph.server.workers as workers

        workers.worker_socket = workers.listening_socket
    sys.exit(main(sys.argv[2:]))
