"""Bounds on what enters the engine from a model, a client or a config (SPEC R13.5).

Two rules, each with one home here, applied before anything is stored:

- **Nesting depth**: a JSON-like value (tool arguments a model chose, edited arguments of
  an approval, a request body, an MCP config) may nest at most :data:`MAX_NESTING_DEPTH`
  lists and objects deep. Deeper values are refused with a clear reason (an error
  observation for a model's tool call, 422 for a request, ``MCPConfigError`` for a
  config; :func:`storable_problem` also names an integer past 64 bits, which the
  serializer refuses too). Without the bound, a value a few hundred levels deep
  passed the engine but not the checkpointer's serializer (msgpack stops at about 250),
  and a run stalled or failed as a "model error"; thousands of levels reached Python's
  recursion limit.
- **Text a store can keep**: a lone surrogate (``\\udc80``: what a ``\\udXXX`` JSON escape
  or a ``surrogateescape``-decoded file name gives) cannot be encoded as UTF-8, and
  Postgres ``jsonb`` refuses its escape. A store keeps each as ``?``
  (:data:`SURROGATE_STORED`): LangGraph's serializer (msgpack) writes them so, and
  :func:`store_safe` does the same for what a saver writes as JSON (Postgres ``jsonb``),
  so a stored text reads back the same whichever way it was written. The wire keeps them
  as ``\\uXXXX`` escapes (:func:`reactgraph.events.wire_json`); the HTTP endpoints refuse a
  message that holds one (422).
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_NESTING_DEPTH = 64
"""Most levels of lists and objects a value from a model, a client or a config may nest:
far more than any tool schema or config needs, far below what a serializer or Python's
recursion limit allows (a scalar is depth 0, ``{"a": 1}`` depth 1)."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

_JSON_TOKENS = re.compile(rb'"(?:[^"\\]+|\\.)*"?|[\[\]{}]', re.DOTALL)
"""A double-quoted string (skipped whole) or a bracket."""

SURROGATE_STORED = "?"
"""What a lone surrogate becomes in a store (as LangGraph's msgpack serializer writes it)."""


def nesting_depth(value: Any, limit: int = MAX_NESTING_DEPTH) -> int:
    """How many levels of lists, tuples and dicts ``value`` nests, counted without
    recursion, and only up to one past ``limit`` (a deeper value answers ``limit + 1``
    without being walked further).

    Args:
        value: Any value (a scalar is depth 0).
        limit: The depth that is still acceptable.

    Returns:
        The depth, at most ``limit + 1``.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        depth += 1
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def storable_problem(value: Any, what: str) -> str | None:
    """Why the checkpointer could not store ``value`` (a JSON-like value from a model or a
    client), or ``None``: it nests past :data:`MAX_NESTING_DEPTH`, holds an integer
    outside the 64 bits a store's serializer (msgpack) writes, or a key holding a lone
    surrogate (the serializer replaces one in a string, not in a key).

    Args:
        value: The value.
        what: What it is, for the reason (``"the arguments"``).
    """
    if nesting_depth(value) > MAX_NESTING_DEPTH:
        return f"{what} nest more than {MAX_NESTING_DEPTH} levels of lists and objects deep"
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
            return f"{what} hold an integer past 64 bits ({len(str(abs(item)))} digits)"
        if isinstance(item, dict):
            if any(isinstance(key, str) and has_lone_surrogate(key) for key in item):
                return f"{what} hold a key that is not valid Unicode text (a lone surrogate)"
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def finite_json(value: Any) -> bool:
    """Whether every number in ``value`` (nested in dicts, lists and tuples, at most
    :data:`MAX_NESTING_DEPTH` deep: check that first) is one JSON can hold: no NaN and no
    infinity (what a parser makes of ``NaN``, ``Infinity`` or ``1e999``)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if depth <= MAX_NESTING_DEPTH:
            if isinstance(item, dict):
                stack.extend((child, depth + 1) for child in item.values())
            elif isinstance(item, (list, tuple)):
                stack.extend((child, depth + 1) for child in item)
    return True


def json_text_too_deep(text: str | bytes, limit: int = MAX_NESTING_DEPTH) -> bool:
    """Whether the JSON (or YAML flow) text ``text`` opens more than ``limit`` levels of
    ``[`` and ``{``, read without parsing it (brackets inside double-quoted strings do not
    count; the scan is a regular expression, in C, and is skipped when the text holds
    ``limit`` brackets or fewer): a body or a config is refused before a parser recurses
    into it."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    for token in _JSON_TOKENS.findall(data):
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"]", b"}"):
            depth = max(depth - 1, 0)
    return False


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (it cannot be encoded as UTF-8)."""
    return _LONE_SURROGATE.search(text) is not None


def store_safe(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (and dict keys, nested in dicts,
    lists and tuples) replaced by :data:`SURROGATE_STORED`, as a store can keep it; the value itself when it
    holds none. Walks at most :data:`MAX_NESTING_DEPTH` levels (values entering the
    engine are bounded to that before they are stored)."""
    return _store_safe(value, 0)


def _store_safe(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(SURROGATE_STORED, value) if has_lone_surrogate(value) else value
    if depth > MAX_NESTING_DEPTH:
        return value
    if isinstance(value, dict):
        return {_store_safe(key, depth + 1): _store_safe(item, depth + 1) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_store_safe(item, depth + 1) for item in value)
    return value
