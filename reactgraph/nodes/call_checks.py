"""What the tool loop does to the model's tool calls before they run: ids for calls that came
without one and one request shape for every call (:func:`normalize_tool_calls`), a call the
model wrote as text read into an action (:func:`action_from_content_call`), and calls answered
instead of run — ids no one wrote (:func:`mark_unasked`), arguments that repeat the schema
(:func:`mark_schema_echoes`), a call that repeats one already made (:func:`mark_repeats`).
``llm_call_native`` and ``llm_call_json`` (:mod:`reactgraph.nodes.llm_call`) apply them."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from reactgraph.engine.bindings import Engine
from reactgraph.protocol.actions import Action
from reactgraph.protocol.jsonparse import safe_json
from reactgraph.protocol.prompts import SCHEMA_ECHO_ERROR, UNWRITTEN_NOTE, UNWRITTEN_REFUSAL
from reactgraph.providers.content_calls import find_content_tool_calls
from reactgraph.engine.state import StepRecord, ToolCallRequest
from reactgraph.answer.synthesis import REPEAT_REFUSAL, UNASKED_REFUSAL
from reactgraph.tools.runner import outcome_digest
from reactgraph.tools.echoes import echoes_schema


def new_call_id() -> str:
    """A fresh tool call id, for calls that came without one (or in JSON mode)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def normalize_tool_calls(
    response: AIMessage, used_ids: Collection[str] | None = None
) -> tuple[AIMessage, list[ToolCallRequest]]:
    """Make a native response safe to send back (SPEC §12).

    Every tool call gets a non-empty id, unique in the message and among ``used_ids``
    (ids already in the conversation: some servers number calls ``call_0`` every time); calls whose arguments were not valid
    JSON (``invalid_tool_calls``) become calls with empty arguments plus an error, so
    they are answered with an error observation instead of breaking the protocol.

    Returns:
        The message to store (same content, cleaned ``tool_calls``, no
        ``invalid_tool_calls``) and the calls to run, in order.
    """
    requests: list[ToolCallRequest] = []
    calls: list[dict[str, Any]] = []
    used = used_ids or frozenset()
    seen: set[str] = set()  # this message's ids (``used_ids`` is not copied: it is the thread's)

    def take(call_id: Any, name: Any, args: Any, error: str | None) -> None:
        fresh = isinstance(call_id, str) and call_id and call_id not in seen and call_id not in used
        call_id = call_id if fresh else new_call_id()
        seen.add(call_id)
        name = name if isinstance(name, str) else ""
        calls.append({"id": call_id, "name": name, "args": args if isinstance(args, dict) else {}, "type": "tool_call"})
        requests.append({"id": call_id, "name": name, "args": args, "error": error})

    for call in response.tool_calls:
        take(call.get("id"), call.get("name"), call.get("args", {}), None)
    for bad in response.invalid_tool_calls:
        raw = bad.get("args")
        take(bad.get("id"), bad.get("name"), {}, f"arguments are not valid JSON: {raw!r}" + (f" ({bad['error']})" if bad.get("error") else ""))
    if not response.invalid_tool_calls and all(
        a["id"] == b.get("id") for a, b in zip(calls, response.tool_calls, strict=True)
    ):
        return response, requests
    cleaned = response.model_copy(update={"tool_calls": calls, "invalid_tool_calls": []})
    return cleaned, requests


def action_from_content_call(raw: str, tools: list[Any], reasoning: str = "") -> Action | None:
    """The JSON-mode action for content that is a native tool-call format instead of the
    JSON action (``<function=t>{...}</function>``, ``[TOOL_CALLS]...``): its first
    readable call to one of ``tools``, or ``None``."""
    found = find_content_tool_calls(raw, {tool.name for tool in tools})
    if found is None or not found.calls:
        return None
    call = found.calls[0]
    return Action(type="tool_call", reasoning=reasoning or found.text, tool_name=call["name"], tool_args=call["args"],
                  raw=raw)


def mark_unasked(requests: list[ToolCallRequest], engine: Engine, query: str,
                 seen: tuple[str, ...] | None, messages: Sequence[BaseMessage] = (),
                 thread: Any = None) -> list[ToolCallRequest]:
    """Refuse (or mark) tool calls that pass a value the question does not ask about (SPEC R13.1).

    * When the turn's question names identifiers an argument lists (:meth:`Engine.argument_ids`:
      ``PO-103`` among the order ids), a call giving that argument another of them
      (``PO-100``) gets an ``error`` instead of running, naming the ids asked about, unless the
      id is in ``seen`` (:meth:`Engine.seen_ids`: the user or a tool wrote it in the thread;
      the model's own text does not count). Small models otherwise call with the first id
      their schema lists and answer about the wrong machine; a schema-constrained model is
      not offered the other ids at all (:func:`~reactgraph.protocol.action_schema.prefer_named_values`).
    * A call passing an identifier value no one wrote in ``messages`` of ``thread``
      (:meth:`Engine.unwritten_values`: an e-mail, an id of a pattern's or an example's shape
      that is not in the question, an earlier turn or a tool result, such as
      ``example@example.com``) gets an ``error`` naming it under the strict policy
      (``AgentSettings.refuse_unasked_ids`` on), and runs with a ``note`` for the model
      (:data:`~reactgraph.protocol.prompts.UNWRITTEN_NOTE`) under the permissive one.

    The first check is off with ``AgentSettings.refuse_unasked_ids`` (``seen`` is then ``None``).
    """
    if not requests:
        return requests
    named = engine.named_values(query)
    for request in requests:
        args = request.get("args")
        if request.get("error") or not isinstance(args, dict):
            continue
        refused = False
        for argument, ids in (engine.argument_ids(request.get("name") or "").items() if seen is not None else ()):
            value = args.get(argument)
            asked = [name for name in named if name in ids]
            if not isinstance(value, str) or value not in ids or not asked or value in asked or value in seen:
                continue
            request["refused"] = UNASKED_REFUSAL
            request["error"] = (  # without the refused id: this text is a tool result the next check reads
                f"that {argument} is not one the question asks about: it names {', '.join(asked)}. "
                f"Call {request.get('name')} with {argument} {asked[0]!r}, or first call a tool whose result "
                f"lists the {argument} you want."
            )
            refused = True
            break
        if refused or not messages:
            continue
        unwritten = engine.unwritten_values(request.get("name") or "", args, messages, thread)
        if not unwritten:
            continue
        if engine.settings.refuse_unasked_ids:
            argument, value = unwritten[0]
            request["refused"] = UNASKED_REFUSAL
            request["error"] = UNWRITTEN_REFUSAL.format(argument=argument, value=value, tool_name=request.get("name"))
        else:
            request["note"] = UNWRITTEN_NOTE.format(values=", ".join(repr(value) for _, value in unwritten))
    return requests


def mark_schema_echoes(requests: list[ToolCallRequest], engine: Engine) -> list[ToolCallRequest]:
    """Answer calls whose arguments repeat a JSON schema (:func:`~reactgraph.tools.echoes.echoes_schema`:
    ``{"type": "object", "properties": …}`` as the arguments or as a value) with an ``error``
    the model can act on (:data:`~reactgraph.protocol.prompts.SCHEMA_ECHO_ERROR`, with the argument
    names to fill) instead of running them: a small model that copied its schema is told what
    to write, and the loop does not stall on the tool's validation errors."""
    for request in requests:
        tool = engine.tools.get(request.get("name") or "")
        if request.get("error") or tool is None:
            continue
        schema = engine.args_schema(tool.name)
        if echoes_schema(request.get("args"), schema):
            properties = list(schema.get("properties") or {})
            required = [name for name in schema.get("required") or () if name in properties] or properties[:1]
            example = safe_json({name: "..." for name in required})
            request["error"] = SCHEMA_ECHO_ERROR.format(tool_name=request.get("name"), example=example)
    return requests


def mark_repeats(requests: list[ToolCallRequest], steps: list[StepRecord], enabled: bool,
                 changes_something: Any = None) -> list[ToolCallRequest]:
    """Mark tool calls that repeat an earlier call of this turn (same tool, same arguments).

    A repeat of a call that may change something (``changes_something(request)`` true, see
    :meth:`Engine.repeat_changes_something`) that already succeeded gets an ``error`` instead
    of running again, pointing the model to the earlier result. Any other repeat runs, carrying
    ``repeat_of`` (the iteration and :func:`~reactgraph.tools.runner.outcome_digest` of the call's
    last outcome), so the tool node can tell the model when the result did not change (issue
    35: a job's status, a queue, a clock). Nothing is marked when ``enabled`` is false
    (``AgentSettings.refuse_repeated_calls``). ``steps`` are the turn's records: at most
    ``max_iterations`` model calls' worth, so they are read whole.
    """
    if not enabled or not requests:
        return requests
    for request in requests:
        if request.get("error"):
            continue
        name, args = request.get("name"), request.get("args")
        earlier = None
        for step in steps:  # the last match; JSON only for equal arguments
            if (step.get("tool_name") == name and step.get("refused") != REPEAT_REFUSAL and step.get("tool_args") == args
                    and safe_json(step.get("tool_args")) == safe_json(args)):
                earlier = step
        if earlier is None:
            continue
        if not earlier.get("error") and changes_something is not None and changes_something(request):
            request["refused"] = REPEAT_REFUSAL
            request["error"] = (
                f"repeated call: {request.get('name')} already ran with these arguments in iteration "
                f"{earlier.get('iteration')} and its result is in the conversation above; it may change something, "
                "so it is not run twice. Use that result to answer, or call a different tool."
            )
        else:
            request["repeat_of"] = {"iteration": earlier.get("iteration"),
                                    "digest": outcome_digest(earlier.get("observation"), earlier.get("error"))}
    return requests
