"""The ``reactgraph`` command on a scripted model, in its own process (used by
tests/integration/test_cli_approval.py to drive the CLI through a pseudo-terminal).

``python -m tests.scripted_cli SCRIPT ARGS...`` runs ``reactgraph ARGS...`` with the demo
plant's real tools (``--db`` chooses its database) and, in place of the configured model,
a :class:`~reactgraph.testing.ScriptedChatModel` playing ``SCRIPT``: a JSON object
``{"responses": [...], "synthesis": "...", "selection": [...]}`` whose responses are strings
(content) or ``{"tool_calls": [[name, args, id], ...]}``; ``selection`` (optional) is the tool
names the tool-selection call picks. The exit status is the command's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.messages import AIMessage

import reactgraph.models
from reactgraph import ModelAbilities
from reactgraph.cli import main
from reactgraph.models import ResolvedModel
from reactgraph.testing import ScriptedChatModel, tool_call


def scripted_model(script: dict[str, Any]) -> ScriptedChatModel:
    """The model playing ``script`` (see the module docstring)."""
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
    sys.exit(main(sys.argv[2:]))
