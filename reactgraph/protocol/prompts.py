"""Every prompt the engine sends, in one place."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool

from reactgraph.protocol.action_schema import tool_args_schema

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant that answers by using the tools available to you. "
    "Call a tool whenever the answer depends on data you do not have; never invent data. "
    "When you have what you need, give the final answer."
)

JSON_PROTOCOL = """Reply with exactly ONE JSON object and nothing else, in one of these two forms:
{{"type": "tool_call", "reasoning": "<why this tool>", "tool_name": "<a tool name below>", "tool_args": {{<arguments matching its schema>}}}}
{{"type": "final_answer", "reasoning": "<why you are done>", "answer": "<the answer to the user>"}}

Call one tool per reply. After each tool call you receive its observation in the next message.
Give the final answer as soon as the observations answer the question.

You can call these tools:

{tools}"""
"""The JSON-mode reply protocol, then the tools (SPEC R2.3). The protocol's text is the same
for every question and comes first: a small model's tools are ranked for the question
(SPEC R13.1), so everything after them differs per question, and llama.cpp's or a provider's
prefix cache serves only what comes before the first difference."""

REFORMAT_TEMPLATE = "Your previous response could not be parsed as valid JSON{reason}. Reply again with {expected}"
"""The one request to reformat unparseable model output (SPEC R2.4, R4.3, R4.4), sent by the
JSON loop and by :func:`~reactgraph.structured_llm_call`; how many times is
``AgentSettings.parse_retries``."""


def reformat_request(expected: str, reason: str = "") -> str:
    """:data:`REFORMAT_TEMPLATE` filled in: ``expected`` says what to reply with, ``reason``
    (starting with a space, or empty) why the last reply failed."""
    return REFORMAT_TEMPLATE.format(reason=reason, expected=expected)


REFORMAT_REQUEST = reformat_request(
    'exactly one JSON object: either {"type": "tool_call", "reasoning": "...", "tool_name": "...", "tool_args": {...}} '
    'or {"type": "final_answer", "reasoning": "...", "answer": "..."}. No text outside the object.'
)
"""The JSON loop's reformat request (SPEC R2.4)."""

FINAL_ONLY_REQUEST = (
    "The tool results above are all you will get: do not call any tool again. Reply now with the final "
    "answer to the user's question, using only facts from those results."
)
"""Sent with the last call of a stalled loop, which may only give the final answer (SPEC R13.1)."""

TOOL_REQUIRED_REQUEST = (
    "Do not answer from memory: the figures and ids of this request are in the tools' data, and no tool has "
    "been called yet. Call the tool that returns them now."
)
"""Sent after an answer that states figures or ids before any tool ran this turn (SPEC R13.1,);
the next call must be a tool call (native: ``tool_choice``; JSON: the tool
branches only)."""

UNCHANGED_NOTE = "\n\n(Unchanged: this is the same result as this call returned in iteration {iteration}.)"
"""Added to the observation the model sees when a repeated call returned what it returned
last time: polling goes on knowingly, and a loop that repeats itself is told so."""

UNWRITTEN_NOTE = (
    "\n\n(Note: no one wrote {values} — not the user, an earlier turn or a tool result. If it is not the value "
    "the user means, call again with one they gave or a tool returned.)"
)
"""Added to the observation the model sees when, under the permissive policy
(``AgentSettings.refuse_unasked_ids`` off), a call passed an identifier value no one wrote
(SPEC R13.1): the call ran, and the model is told the value is its own."""

UNWRITTEN_REFUSAL = (
    "that {argument} was not written by the user, an earlier turn or a tool result, so the call was not run. "
    "Call {tool_name} with the {argument} the user gave, or first call a tool whose result lists it."
)
"""The error a call gets instead of running when it passes an identifier value (an e-mail,
an id of a pattern's or an example's shape) that no one wrote, under the strict policy
(``AgentSettings.refuse_unasked_ids``, SPEC R13.1). It does not repeat the value: this text
is a tool result, and a value a tool result writes may be passed."""

SCHEMA_ECHO_ERROR = (
    "the arguments repeat the tool's parameter schema instead of giving values. Call {tool_name} again with "
    "the values themselves, as a JSON object like {example}."
)
"""The error a call gets instead of running when its arguments are a JSON schema
(``{"type": "object", "properties": …}``, :func:`reactgraph.tools.echoes.echoes_schema`): the model
can act on it instead of repeating the echo until the loop stalls."""

VALUE_SET_REQUEST = "Call {tool_name} again, now for this request: {request}"
"""Sent with a loop call for the next of several values a question lists for one argument of
a tool ("the weather in Boston and in San Francisco"): the question rewritten for the value no
call passed yet (:func:`reactgraph.nodes.llm_call.value_set_request`); the call must be a tool
call."""

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
    "is missing, and where a lookup found nothing for a value, say plainly that nothing was found for it. "
    "Answer in the same language as the question."
)

SYNTHESIS_USER = "Question:\n{query}\n\nWork log:\n{trace}\n\nWrite the answer to the question."

PROMPT_HEADINGS: tuple[str, ...] = ("Question:", "Work log:", "Draft answer from the assistant:")
"""The section headings of the synthesis prompts (:data:`SYNTHESIS_USER`, the draft block of
:mod:`reactgraph.answer.synthesis` and the DAG's). An answer holding one of them as a line of its
own is the prompt written back, not an answer: :func:`reactgraph.answer.fitness.answer_problems`
flags it, so the engine's own words never reach the user as the answer."""


def prompt_heading(line: str) -> bool:
    """Whether ``line`` (stripped) is a heading of the synthesis prompt written back: one of
    :data:`PROMPT_HEADINGS`, or its first words (two or more) closed by its colon — a small
    model shortens "Draft answer from the assistant:" to "Draft answer:" — letter case and
    markdown marks aside.

    Args:
        line: One line of an answer, stripped.

    Returns:
        True when the line is such a heading."""
    words = re.findall(r"[^\W_]+", line.lower())
    if not words or not line.rstrip("*_ ").endswith(":"):
        return False
    for heading in PROMPT_HEADINGS:
        heading_words = re.findall(r"[^\W_]+", heading.lower())
        if words == heading_words or (len(words) >= 2 and heading_words[:len(words)] == words):
            return True
    return False


def speaks_of_prompt(answer: str, said: str) -> bool:
    """Whether ``answer`` names a section of the synthesis prompt of two words or more ("work
    log", "draft answer", :data:`PROMPT_HEADINGS`) that ``said`` — the question and the
    tools' results — does not: it speaks of its prompt ("この回答は、work logで確認した…"), not of
    the data. Latin words are compared lower-cased, whatever script surrounds them.

    Args:
        answer: An answer.
        said: The question and the tools' results.

    Returns:
        True when such a name is the answer's own."""
    def words(text: str) -> str:
        return " " + " ".join(re.findall(r"[0-9a-z\u00df-\u024f]+", text.lower())) + " "

    written, known = words(answer), words(said)
    phrases = (words(heading) for heading in PROMPT_HEADINGS)
    return any(phrase.count(" ") > 2 and phrase in written and phrase not in known for phrase in phrases)


SYNTHESIS_HISTORY = (
    "Earlier in this conversation (for what the question refers to, such as 'that one' or 'the second "
    "one'; the facts to answer with are in the work log):\n{turns}\n\n"
)
"""Put before the question in the synthesis user message when the thread has earlier turns:
each turn as ``User: …`` / ``Assistant: …`` lines."""

FLAG_NOTE = "\n\n> ⚠ {note}"
"""Put under an answer under ``grounding="flag"`` that states values no tool returned: they
are named, so they are never shown as fact. ``note`` is the ``flag_note`` sentence of
:mod:`reactgraph.core.language` in the question's language."""

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

SYNTHESIS_PARTS = "\n\nThe question asks {count} things; answer each of them:\n{parts}"
"""Ends the synthesis user message of a question cut into parts (``AgentState.part_questions``),
one ``- part`` line each: a written answer that leaves a part's data out is withdrawn
(:func:`~reactgraph.answer.written.left_out_parts`), so the prompt names every part."""

SYNTHESIS_LANGUAGE = "\n\nWrite the answer in {language}, the language of the question."
"""Ends the synthesis user message (:data:`SYNTHESIS_USER`, :data:`SYNTHESIS_STRICT_USER`) when
the turn's language is known: the language named, as
:func:`~reactgraph.core.language.language_name` writes it. "The same language as the question"
alone left a small model answering a Korean question in English (bench/README.md, "Answer
writer per model"); named, it is one fact more for it to follow."""


def json_mode_system_prompt(
    base: str, tools: Sequence[BaseTool], arguments: Sequence[dict[str, Any]] | None = None
) -> str:
    """The JSON-mode system prompt (SPEC R2.3): ``base`` instructions, then the reply protocol,
    then every tool's name, description and argument JSON schema (in the given order): what
    differs per question comes last (:data:`JSON_PROTOCOL`).

    Args:
        base: The domain instructions.
        tools: The tools offered, most relevant first (SPEC R13.1).
        arguments: Each tool's argument schema as offered this turn (named values first,
            see :meth:`reactgraph.engine.bindings.Engine.offered_args`); ``None`` for the tools' own.
    """
    lines = []
    for index, tool in enumerate(tools):
        params = arguments[index] if arguments is not None else tool_args_schema(tool)
        lines.append(f"- {tool.name}: {tool.description.strip()}\n  arguments: {json.dumps(params, ensure_ascii=False)}")
    return f"{base}\n\n" + JSON_PROTOCOL.format(tools="\n".join(lines) if lines else "(no tools)")


# Structured output (SPEC §4)

STRUCTURED_INSTRUCTION = "Reply with only one JSON object that matches this JSON schema, and nothing else:\n{schema}"


# Tool selection (SPEC §5)

SELECTION_USER = "Request: {query}\n\nCatalog:\n{catalog}"

SELECTION_SYSTEM = (
    "You pick the tools an assistant will need to handle a user's request. Choose at most {limit} "
    "tool names from the catalog: the fewest that cover everything the request asks. Use the exact "
    'names. Reply with a JSON object {{"tools": ["name", ...]}}.'
)

LEAD_CHOICE_SYSTEM = (
    "You answer a question from data lines that tools returned. Choose, as exact copies, the one or "
    "two lines that answer it: the figure or item that decides, and the limit it is compared with when "
    "a line gives one. For a yes/no question also give the verdict: yes, no, or unknown when the lines "
    'do not decide it. Reply with a JSON object {"verdict": "yes" | "no" | "unknown", "facts": ["line", ...]} '
    '(verdict only for a yes/no question).'
)
"""System prompt of the lead choice (:func:`reactgraph.answer.lead.choose_lead`): the model picks, the engine writes."""

LEAD_CHOICE_USER = "Question: {question}\n\nData lines:\n{lines}"


# DAG planner (SPEC R9.1)

PLANNER_SYSTEM = """You are the planner of an assistant that works in steps. Break the user's goal into {min_steps} to {max_steps} steps. Each step is carried out by an assistant with tools that sees only its own task, the goal, and the results of the steps it depends on.
For every step give:
- id: a short unique id such as "s1";
- task: a clear, self-contained instruction, written in the same language as the goal;
- dependencies: the ids of the steps whose results it needs ([] when none); steps that do not depend on each other run in parallel;
- tool_hint: the tool the step will most likely use, or "";
- model_hint: the model role to run the step on, one of:
{roles}
Reply with a JSON object {{"steps": [...]}}."""

PLANNER_USER = "Goal: {goal}\n\nTools the steps can use:\n{catalog}"

REPLAN_NOTE = (
    "\n\nAn earlier round did not achieve the goal. What happened:\n{summary}\n\n"
    "Plan the work that is still missing. The new steps do not see the earlier results, so put "
    "any figure they need into their tasks."
)

CYCLE_FEEDBACK = (
    "That plan has a dependency cycle ({cycle}). Steps must form a directed acyclic graph: a step "
    "may only depend on steps that do not depend on it, directly or indirectly. Reply with the corrected plan."
)


# DAG analyzer (SPEC R9.4)

ANALYZER_SYSTEM = (
    "You check whether the results of a plan's steps achieve the user's goal. Reply with a JSON object: "
    '"achieved" (true only when the results fully answer the goal), "confidence" (0 to 1, how sure you are), '
    '"reasoning" (one or two sentences), "final_answer" (when achieved, the answer to the goal built only from '
    'the results, in the language of the goal; otherwise "").'
)

ANALYZER_USER = "Goal: {goal}\n\nStep results:\n{results}"


# DAG step context (SPEC R9.2)

STEP_CONTEXT = "Overall goal: {goal}\n\nYour task (step {id} of a larger plan): {task}"

STEP_TOOL_HINT = "\n\nSuggested tool: {tool}"

STEP_DEPENDENCIES = "\n\nResults of earlier steps you can use:"


# Context compaction (SPEC R6.1)

COMPACTION_HINT_PROMPTS: dict[str, str] = {
    "react_iteration": (
        "The assistant is in the middle of a tool loop. Keep: the user's current goal, the recent "
        "chain of reasoning and tool calls (which tool, which arguments, what it returned), every "
        "piece of data the next steps may need (identifiers, numbers, names, dates, error codes), "
        "and what is still left to do. Drop: old steps that later ones made redundant, failed "
        "retries whose error no longer matters, verbose or repeated tool output."
    ),
    "planner_input": (
        "The summary is the input of a planner that decides the next steps. Keep: the user's "
        "objectives and constraints, decisions already made, facts established so far, and open "
        "questions. Drop: tool-call mechanics, raw tool output, intermediate reasoning and chatter."
    ),
    "step_dependency": (
        "Other steps depend on what this conversation produced. Keep: the concrete result of every "
        "completed step (values, identifiers, names, file names, outcomes) and any error that blocks "
        "a dependent step. Drop: the reasoning narrative, retries and verbose output."
    ),
    "general": (
        "Keep: facts, the user's requests and preferences, decisions, results and unresolved "
        "questions. Drop: greetings, repetition, filler and verbose detail."
    ),
}
"""What each compaction hint (``AgentSettings.compaction_hint``) tells the summarizer to keep
and to drop (SPEC R6.1)."""

COMPACTION_SYSTEM = (
    "You compact the history of a conversation between a user and an AI assistant that uses "
    "tools, so that the assistant can continue its work within its context window. {hint}\n"
    "Write the summary in the language of the conversation{language}. Keep exact values "
    "(identifiers, numbers, names, dates, error codes) as they appear. Do not invent anything. "
    "Write plain text, at most about {words} words, and output only the summary."
)

COMPACTION_USER = (
    "The user's request, kept verbatim next to your summary (do not repeat it):\n{pinned}\n\n"
    "Messages to summarize, oldest first:\n{transcript}\n\nWrite the summary."
)
