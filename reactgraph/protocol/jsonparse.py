"""Finding a JSON object in what a model wrote (SPEC R2.3).

Real models wrap JSON in markdown fences, surround it with prose, wrap it in
``<tool_call>`` tags, use single quotes, Python literals or trailing commas. :func:`extract_json`
accepts all of these and returns the first object it can read.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL)
_TAGGED = re.compile(r"<(tool_call|function_call|json|answer)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_MAX_CANDIDATES = 64


def _balanced_spans(text: str) -> list[str]:
    """Every substring that starts at a ``{`` and ends at its matching ``}``,
    skipping braces inside single- or double-quoted strings. An unterminated
    object at the end is returned closed as far as its nesting says."""
    spans: list[str] = []
    start = 0
    while len(spans) < _MAX_CANDIDATES:
        open_at = text.find("{", start)
        if open_at < 0:
            break
        depth = 0
        quote: str | None = None
        escaped = False
        end = -1
        for i in range(open_at, len(text)):
            ch = text[i]
            if quote:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == quote:
                    quote = None
                continue
            if ch in "\"'":
                # an apostrophe inside a word ("don't") is not a quote
                if ch == "'" and i > 0 and text[i - 1].isalnum():
                    continue
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end < 0:
            if depth > 0 and quote is None:  # truncated output: close what is open
                spans.append(text[open_at:] + "}" * depth)
            break
        spans.append(text[open_at : end + 1])
        start = open_at + 1
    return spans


def _loads_lenient(candidate: str) -> Any:
    """Parse one candidate: strict JSON first, then with trailing commas removed,
    then as a Python literal (single quotes, ``True``/``False``/``None``) that is also
    valid JSON data. ``None`` when none of these reads it."""
    candidate = candidate.strip()
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        pass
    cleaned = _TRAILING_COMMA.sub(r"\1", candidate)
    try:
        return json.loads(cleaned)
    except (ValueError, RecursionError):
        pass
    pythonish = re.sub(r"\btrue\b", "True", cleaned)
    pythonish = re.sub(r"\bfalse\b", "False", pythonish)
    pythonish = re.sub(r"\bnull\b", "None", pythonish)
    try:
        value = ast.literal_eval(pythonish)
        json.dumps(value)  # sets, bytes, complex, giant ints: not JSON, so not an answer
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError, OverflowError):
        return None
    return value


def extract_json(text: str | None) -> dict[str, Any] | None:
    """Find the first JSON object in model output.

    Looks, in order, at the whole text, fenced code blocks, ``<tool_call>``-style
    tags, then every brace-balanced span in the text; each candidate is read strictly,
    then leniently (trailing commas, single quotes, Python literals). A top-level list
    whose first item is an object yields that object.

    Args:
        text: What the model wrote; ``None`` and non-strings yield ``None``.

    Returns:
        The parsed object as a dict, or ``None`` when no object could be read.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    candidates: list[str] = [text]
    candidates += [m.group(1) for m in _FENCE.finditer(text)]
    candidates += [m.group(2) for m in _TAGGED.finditer(text)]
    for candidate in candidates:
        value = _loads_lenient(candidate)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            value = value[0]
        if isinstance(value, dict):
            return value
    for span in _balanced_spans(text):
        value = _loads_lenient(span)
        if isinstance(value, dict):
            return value
    return None


def safe_json(value: Any) -> str:
    """``value`` as compact JSON text for logs, prompts and observations; never raises.

    Non-ASCII text is kept; objects JSON cannot encode go through ``str``; a value that
    cannot be printed at all (e.g. an int past Python's digit limit) becomes ``<type>``.
    """
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError, OverflowError):
        try:
            return str(value)
        except (ValueError, RecursionError):
            return f"<{type(value).__name__}>"
