"""Every prompt the engine sends, in one place."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool

from reactgraph.action_schema import tool_args_schema

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant that answers by using the tools available to you. "
    "Call a tool whenever the answer depends on data you do not have; never invent data. "
    "When you have what you need, give the final answer."
)

JSON_PROTOCOL = """You can call these tools:

{tools}

Reply with exactly ONE JSON object and nothing else, in one of these two forms:
{{"type": "tool_call", "reasoning": "<why this tool>", "tool_name": "<a tool name above>", "tool_args": {{<arguments matching its schema>}}}}
{{"type": "final_answer", "reasoning": "<why you are done>", "answer": "<the answer to the user>"}}

Call one tool per reply. After each tool call you receive its observation in the next message.
Give the final answer as soon as the observations answer the question."""

REFORMAT_REQUEST = (
    "Your previous response could not be parsed as valid JSON. Reply again with exactly one JSON "
    'object: either {"type": "tool_call", "reasoning": "...", "tool_name": "...", "tool_args": {...}} '
    'or {"type": "final_answer", "reasoning": "...", "answer": "..."}. No text outside the object.'
)

FINAL_ONLY_REQUEST = (
    "The tool results above are all you will get: do not call any tool again. Reply now with the final "
    "answer to the user's question, using only facts from those results."
)
"""Sent with the last call of a stalled loop, which may only give the final answer (SPEC R13.1)."""

TOOL_ARGS_REQUEST = "Write the arguments of {tool_name} for the user's request as a JSON object."
"""Tool-first mode's second call, after the model chose a tool (SPEC R13.1)."""

ANSWER_REQUEST = 'Write the final answer to the user\'s request as {"answer": "..."}, using the observations above.'
"""Tool-first mode's second call, after the model chose to answer (SPEC R13.1)."""

OBSERVATION = "Observation from {tool_name}:\n{observation}"
"""JSON mode: how a tool result is shown to the model, as a user message (SPEC R2.3)."""

SYNTHESIS_SYSTEM = (
    "You write the final answer to the user's question from the work log of an assistant that "
    "used tools to find the facts. Present the results directly and completely. Use markdown "
    "(short headings, lists, bold for key figures) when it helps. Do not add meta commentary: never "
    "say 'based on the tool output', 'according to the log' or mention tools, steps or iterations. "
    "Do not invent facts that are not in the log; if the log does not answer the question, say what "
    "is missing. Answer in the same language as the question."
)

SYNTHESIS_USER = "Question:\n{query}\n\nWork log:\n{trace}\n\nWrite the answer to the question."

SYNTHESIS_STRICT = (
    "Quote the key figures of the work log (states, readings, ids, codes, dates) exactly as it writes them, "
    "and write no number, id or date that is not in the work log."
)
"""Added to the synthesis system prompt when an answer is asked for again because it held
values found nowhere in the trace (SPEC R13.1, ``grounding="enforce"``)."""

SYNTHESIS_STRICT_USER = (
    "Question:\n{query}\n\nWork log:\n{trace}\n\n{avoid}Write the answer to the question, quoting the figures "
    "of the work log that answer it."
)
"""The user message of a synthesis asked for again (SPEC R13.1); ``avoid`` is empty or
:data:`SYNTHESIS_STRICT_AVOID`."""

SYNTHESIS_STRICT_AVOID = "An earlier answer wrote values that are not in the work log ({values}); do not write them. "


def json_mode_system_prompt(
    base: str, tools: Sequence[BaseTool], arguments: Sequence[dict[str, Any]] | None = None
) -> str:
    """The JSON-mode system prompt (SPEC R2.3): ``base`` instructions, then every tool's
    name, description and argument JSON schema (in the given order), then the reply protocol.

    Args:
        base: The domain instructions.
        tools: The tools offered, most relevant first (SPEC R13.1).
        arguments: Each tool's argument schema as offered this turn (named values first,
            see :meth:`reactgraph.engine.Engine.offered_args`); ``None`` for the tools' own.
    """
    lines = []
    for index, tool in enumerate(tools):
        params = arguments[index] if arguments is not None else tool_args_schema(tool)
        lines.append(f"- {tool.name}: {tool.description.strip()}\n  arguments: {json.dumps(params, ensure_ascii=False)}")
    return f"{base}\n\n" + JSON_PROTOCOL.format(tools="\n".join(lines) if lines else "(no tools)")
