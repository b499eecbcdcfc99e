"""Whether a call's arguments echo what the model was shown instead of giving values: a JSON
schema copied as the arguments (:func:`echoes_schema`), or the tool's own name or words copied
into a free-text argument (:func:`echoes_tool`) — what a small model writes when the question
gives it nothing to fill in."""

from __future__ import annotations

import re

from collections.abc import Mapping
from typing import Any

from reactgraph.tools.notation import fold


_SCHEMA_WORDS = frozenset({"type", "properties", "required", "additionalProperties", "$schema", "items", "enum",
                           "anyOf", "oneOf", "title", "description", "format", "pattern", "default", "examples"})
_SCHEMA_TYPES = frozenset({"object", "string", "integer", "number", "boolean", "array"})


def _schema_like(node: Any) -> bool:
    """A JSON schema node: a ``type`` beside ``properties``/``required``/``enum``/``items``/
    ``anyOf``, or a schema type name with nothing but schema keywords beside it."""
    if not isinstance(node, dict) or "type" not in node:
        return False
    if set(node) & {"properties", "required", "enum", "items", "anyOf"}:
        return True
    return node.get("type") in _SCHEMA_TYPES and set(node) <= _SCHEMA_WORDS


def echoes_schema(args: Any, schema: Mapping[str, Any]) -> bool:
    """Whether a call's arguments repeat a JSON schema instead of giving values
    (``{"type": "object", "properties": {…}}`` as the arguments, or as the value of an
    argument that does not take an object): a small model copying what it was shown.

    Args:
        args: The call's arguments.
        schema: The tool's argument schema.

    Returns:
        True when the arguments, or one of their values, is a schema.
    """
    if not isinstance(args, dict):
        return False
    properties = schema.get("properties") or {}
    if set(args) - set(properties) and _schema_like(args):
        return True
    return any(_schema_like(value) for name, value in args.items()
               if not (isinstance(properties.get(name), dict) and properties[name].get("type") == "object"))


def _own_texts(tool_name: str, description: str, schema: Mapping[str, Any]) -> set[str]:
    texts = {tool_name, tool_name.replace("_", " "), *((description or "").strip().splitlines()[:1])}
    for name, item in (schema.get("properties") or {}).items():
        texts.update({str(name), str(name).replace("_", " ")})
        if isinstance(item, dict) and isinstance(item.get("description"), str):
            texts.add(item["description"])
    return {fold(text).strip(" .:;!?") for text in texts if text.strip()}


def _compact(text: str) -> str:
    """Letters and digits alone, folded: ``Sports_TeamStanding`` and ``sports_team.standing``
    are both ``sportsteamstanding``."""
    return "".join(char for char in fold(text) if char.isalnum())


def echoes_tool(value: Any, tool_name: str, description: str, schema: Mapping[str, Any]) -> bool:
    """Whether a call's argument ``value`` repeats the tool's own words instead of a value:
    its name (``search_products`` or ``search products``), the first line of its description,
    an argument's name or description — what a small model copies into a free-text argument
    ("query": "search_products") when the question shares no word with the tool.

    Args:
        value: One argument value of the call.
        tool_name: The tool's name.
        description: The tool's description.
        schema: Its argument JSON schema.

    Returns:
        True when ``value`` (a string, letter case, accents and end punctuation folded) is one
        of those texts, or one of them with one word changed (:data:`MIN_REWORDED_WORDS` words
        or more), or is the tool's name written with other separators or letter case
        (``Sports_TeamStanding`` for ``sports_team.standing``).
    """
    if not isinstance(value, str) or not value.strip():
        return False
    folded = fold(value).strip(" .:;!?")
    texts = _own_texts(tool_name, description, schema)
    if folded in texts:
        return True
    words = re.findall(r"\w+", folded)
    if len(words) >= MIN_REWORDED_WORDS and any(_one_word_apart(words, re.findall(r"\w+", text)) for text in texts):
        return True
    return _compact(value) == _compact(tool_name) != ""


MIN_REWORDED_WORDS = 5
"""Fewest words of a value that is one of the tool's own texts with one word changed
("What the user wants done, in a few words." for the argument's "What the patient wants done,
in a few words."): a shorter value may rightly differ from a text by one word."""


def _one_word_apart(words: list[str], text: list[str]) -> bool:
    """Whether ``words`` are ``text`` with one word replaced, added or left out, in order."""
    if abs(len(words) - len(text)) > 1:
        return False
    head = 0
    while head < min(len(words), len(text)) and words[head] == text[head]:
        head += 1
    tail = 0
    while tail < min(len(words), len(text)) - head and words[-1 - tail] == text[-1 - tail]:
        tail += 1
    return max(len(words), len(text)) - head - tail <= 1
