"""Tool calls a model wrote in its content instead of ``tool_calls`` (SPEC R13.2).

Local servers (Ollama, vLLM without a tool parser, LM Studio, llama.cpp) often answer a
native-mode request with empty ``tool_calls`` and the call written in the text, in the
format the model was trained on:

==================================  ============================================================
Hermes / Qwen                       ``<tool_call>{"name": "t", "arguments": {...}}</tool_call>``
bare JSON (Llama 3.x, many others)  ``{"name": "t", "arguments": {...}}`` or ``"parameters"``,
                                    a list of such objects, or OpenAI's ``{"function": {...}}``
                                    and ``{"tool_calls": [...]}`` shapes
Mistral                             ``[TOOL_CALLS][{"name": "t", "arguments": {...}}]`` and the
                                    newer ``[TOOL_CALLS]t[ARGS]{...}``
Llama 3.1                           ``<|python_tag|>{"name": "t", "parameters": {...}}``
Llama 3.1 custom / Qwen3-Coder      ``<function=t>{...}</function>`` and
                                    ``<function=t><parameter=k>v</parameter></function>``
==================================  ============================================================

:func:`find_content_tool_calls` reads them; only a name of an offered tool makes a call,
so text that mentions a tool, names an unknown one, or is ordinary JSON data stays an
answer. Bare JSON counts only when it is the whole content (a fenced block at most); the
marked formats may have text around them, which is kept as the message content. Several
calls are kept in order. A call whose arguments cannot be read becomes an invalid call
with the reason, so the loop answers it with an error observation the model can act on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage

from reactgraph.protocol.jsonparse import extract_json

RECOVERED_KEY = "content_tool_calls"
"""``response_metadata`` key of a message whose tool calls were read from its content; the
value names the format (``"tool_call_tag"``, ``"bare_json"``, ``"mistral"``,
``"python_tag"``, ``"function_tag"``)."""

_TAG = re.compile(r"<(tool_call|function_call)>\s*(.*?)\s*(?:</\1>|$)", re.DOTALL | re.IGNORECASE)
_FUNCTION_TAG = re.compile(r"<function=([^>\s]+)>\s*(.*?)\s*(?:</function>|$)", re.DOTALL)
_PARAMETER_TAG = re.compile(r"<parameter=([^>\s]+)>\s*(.*?)\s*</parameter>", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_ARGS = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[CALL_ID\]\s*[A-Za-z0-9_\-]+\s*)?\[ARGS\]")
_PYTHON_TAG = "<|python_tag|>"
_LLAMA_END = re.compile(r"<\|(?:eom_id|eot_id|end_of_text)\|>")
_FENCE = re.compile(r"^```[ \t]*(?:json|JSON|tool_call|javascript|js)?[ \t]*\n?(.*?)\n?```$", re.DOTALL)
_NAME_FIELD = re.compile(r"[\"']name[\"']\s*:\s*[\"']([^\"']+)[\"']")
_NAME_KEYS = ("name", "tool_name", "function_name", "tool")
_ARGS_KEYS = ("arguments", "parameters", "args", "tool_args", "input")


@dataclass
class ContentToolCalls:
    """Tool calls found in a message's content.

    Attributes:
        format: Which format they were written in (see :data:`RECOVERED_KEY`).
        calls: Readable calls, in order: ``{"name": str, "args": dict}``.
        invalid: Calls to an offered tool whose arguments could not be read, in order:
            ``{"name": str, "args": str (the raw text), "error": str}``.
        text: The content with the calls taken out (stripped; ``""`` when nothing else).
    """

    format: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""

    @property
    def found(self) -> bool:
        """Whether any call (valid or not) was read."""
        return bool(self.calls or self.invalid)

    def add(self, name: str, args: Any, raw: str) -> None:
        """Record one call: ``args`` a dict (valid), ``None`` (unreadable: ``raw`` is kept)."""
        if isinstance(args, dict):
            self.calls.append({"name": name, "args": args})
        else:
            self.invalid.append({"name": name, "args": raw, "error": "the arguments written in the content are not a JSON object"})


def _tool_name(value: Any, names: Collection[str]) -> str | None:
    """``value`` as an offered tool's name (``functions.t`` counts as ``t``), else ``None``."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    value = value.removeprefix("functions.")
    return value if value in names else None


def _loads(text: str) -> Any:
    """Strict JSON, else the first object :func:`extract_json` can read, else ``None``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return extract_json(text)


def _values(text: str) -> list[Any]:
    """The JSON values ``text`` holds one after another (separated by spaces, ``;`` or
    ``,``), or ``[]`` when it is not such a sequence."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at, end = 0, len(text)
    while True:
        while at < end and text[at] in " \t\r\n;,":
            at += 1
        if at >= end:
            return values
        try:
            value, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return []
        values.append(value)


def _arguments(value: Any) -> dict[str, Any] | None:
    """Arguments as a dict: a dict as is, a JSON string parsed, none given → ``{}``;
    ``None`` when they are not an object."""
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        value = _loads(value)
    return value if isinstance(value, dict) else None


def _call_objects(value: Any) -> list[dict[str, Any]]:
    """The call objects in a parsed value: one object, a list of them, OpenAI's
    ``{"tool_calls": [...]}``; each ``{"function": {...}}`` unwrapped."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("function"), dict):
            item = item["function"]
        if isinstance(item, dict):
            out.append(item)
    return out


def _read_objects(found: ContentToolCalls, body: str, names: Collection[str], *, need_args: bool) -> bool:
    """Add the calls of one JSON body (an object or a list). A body that does not parse
    but names an offered tool adds an invalid call. Returns whether anything was added."""
    values = _values(body)
    if not values:
        lenient = extract_json(body)  # single quotes, trailing commas, a cut-off object
        values = [lenient] if lenient is not None else []
    objects = [obj for value in values for obj in _call_objects(value)]
    added = False
    for obj in objects:
        name = _tool_name(next((obj[k] for k in _NAME_KEYS if k in obj), None), names)
        key = next((k for k in _ARGS_KEYS if k in obj), None)
        if name is None or (need_args and key is None):
            continue
        found.add(name, _arguments(obj.get(key)) if key else {}, json.dumps(obj.get(key), ensure_ascii=False))
        added = True
    if not values and not need_args:
        match = _NAME_FIELD.search(body)
        name = _tool_name(match.group(1), names) if match else None
        if name is not None:
            found.add(name, None, body)
            added = True
    return added


def _function_body(found: ContentToolCalls, name: str, body: str) -> None:
    """One ``<function=name>`` call: a JSON body, or ``<parameter=k>v</parameter>`` items."""
    params = _PARAMETER_TAG.findall(body)
    if params:
        args: dict[str, Any] = {}
        for key, raw in params:
            try:
                args[key] = json.loads(raw)
            except (ValueError, RecursionError):
                args[key] = raw
        found.add(name, args, body)
        return
    found.add(name, _arguments(body) if body.strip() else {}, body)


def _marked(text: str, pattern: re.Pattern[str], fmt: str,
            read: Callable[[ContentToolCalls, re.Match[str]], bool]) -> ContentToolCalls | None:
    """The calls of every ``pattern`` match that ``read`` takes as a call; the text
    between the calls is kept as the content."""
    found = ContentToolCalls(fmt)
    kept: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        if not read(found, match):
            continue
        kept.append(text[last:match.start()])
        last = match.end()
    if not found.found:
        return None
    found.text = "".join([*kept, text[last:]]).strip()
    return found


def _tagged(text: str, names: Collection[str]) -> ContentToolCalls | None:
    def read(found: ContentToolCalls, match: re.Match[str]) -> bool:
        body = match.group(2)
        inner = _FUNCTION_TAG.search(body)
        name = _tool_name(inner.group(1), names) if inner else None
        if inner and name:  # Qwen3-Coder: <tool_call><function=...>
            _function_body(found, name, inner.group(2))
            return True
        return _read_objects(found, body, names, need_args=False)

    return _marked(text, _TAG, "tool_call_tag", read)


def _function_tags(text: str, names: Collection[str]) -> ContentToolCalls | None:
    def read(found: ContentToolCalls, match: re.Match[str]) -> bool:
        name = _tool_name(match.group(1), names)
        if name is not None:
            _function_body(found, name, match.group(2))
        return name is not None

    return _marked(text, _FUNCTION_TAG, "function_tag", read)


def _mistral(text: str, names: Collection[str]) -> ContentToolCalls | None:
    at = text.find(_MISTRAL)
    if at < 0:
        return None
    found = ContentToolCalls("mistral")
    rest = text[at:]
    for part in rest.split(_MISTRAL)[1:]:
        named = _MISTRAL_ARGS.match(part)
        if named:  # [TOOL_CALLS]name[ARGS]{...}
            name = _tool_name(named.group(1), names)
            if name is not None:
                found.add(name, _arguments(part[named.end():]), part[named.end():])
        else:
            _read_objects(found, part, names, need_args=False)
    if not found.found:
        return None
    found.text = text[:at].strip()
    return found


def _python_tag(text: str, names: Collection[str]) -> ContentToolCalls | None:
    at = text.find(_PYTHON_TAG)
    if at < 0:
        return None
    found = ContentToolCalls("python_tag")
    body = _LLAMA_END.sub("", text[at + len(_PYTHON_TAG):]).strip()
    _read_objects(found, body, names, need_args=False)  # several calls: {...}; {...}
    if not found.found:
        return None
    found.text = text[:at].strip()
    return found


def _bare_json(text: str, names: Collection[str]) -> ContentToolCalls | None:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith(("{", "[")):
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    found = ContentToolCalls("bare_json")
    objects = _call_objects(value)
    for obj in objects:  # every object must be a call: otherwise this is data, an answer
        name = _tool_name(next((obj[k] for k in _NAME_KEYS if k in obj), None), names)
        key = next((k for k in _ARGS_KEYS if k in obj), None)
        if name is None or key is None:
            return None
        found.add(name, _arguments(obj[key]), json.dumps(obj[key], ensure_ascii=False))
    return found if found.found else None


_READERS = (_tagged, _function_tags, _mistral, _python_tag, _bare_json)


def find_content_tool_calls(text: str | None, tool_names: Collection[str]) -> ContentToolCalls | None:
    """Read tool calls written in a reply's content (see the module docstring).

    Args:
        text: The reply's content.
        tool_names: The names of the tools offered in the request; a call naming
            anything else is not a call.

    Returns:
        The calls and the remaining text, or ``None`` when the content holds no call to
        an offered tool (an ordinary answer). Never raises.
    """
    if not isinstance(text, str) or not text.strip() or not tool_names:
        return None
    for reader in _READERS:
        try:
            found = reader(text, tool_names)
        except RecursionError:  # nesting too deep to read or write back: not a call
            continue
        if found is not None:
            return found
    return None


def recover_content_tool_calls(message: AIMessage, tool_names: Collection[str], new_id: Any) -> AIMessage:
    """``message`` with the tool calls written in its content made real.

    A message that already has tool calls (valid or invalid), or whose content holds no
    call to an offered tool, is returned unchanged. Otherwise the copy has the calls as
    ``tool_calls`` (ids from ``new_id()``), unreadable ones as ``invalid_tool_calls``,
    the text around them as content (valid calls first, then the
    unreadable ones), and :data:`RECOVERED_KEY` in ``response_metadata``:
    a normal assistant tool-call message, so the history stays valid for the provider.

    Args:
        message: A native-mode reply.
        tool_names: The names of the tools offered in that request.
        new_id: Makes a fresh tool call id (``() -> str``).
    """
    if message.tool_calls or message.invalid_tool_calls:
        return message
    content = message.content
    text = content if isinstance(content, str) else "".join(
        block.get("text", "") if isinstance(block, dict) and block.get("type") == "text" else
        block if isinstance(block, str) else "" for block in content
    )
    found = find_content_tool_calls(text, tool_names)
    if found is None:
        return message
    calls = [{"name": c["name"], "args": c["args"], "id": new_id(), "type": "tool_call"} for c in found.calls]
    invalid = [{"name": c["name"], "args": c["args"], "id": new_id(), "error": c["error"], "type": "invalid_tool_call"}
               for c in found.invalid]
    metadata = {**message.response_metadata, RECOVERED_KEY: found.format}
    return message.model_copy(update={"content": found.text, "tool_calls": calls, "invalid_tool_calls": invalid,
                                      "response_metadata": metadata})
