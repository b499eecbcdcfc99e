"""Schema-constrained output: the JSON-mode action schema and the request shapes.

A provider that can constrain generation to a JSON schema (``ModelAbilities.schema_output``)
is sent one with every JSON-mode loop call and with ``structured_llm_call`` level 2, so even
a small model can only write a well-formed action.

* :func:`action_schema` builds the action schema of SPEC R2.3 for the tools offered this
  turn: one ``tool_call`` branch per tool (its name as the only allowed ``tool_name``, its
  own argument schema as ``tool_args``) plus the ``final_answer`` branch.
* :func:`schema_response_format` wraps any schema in the provider's request shape:
  OpenAI's ``json_schema`` (strict, after :func:`strict_json_schema`) or llama.cpp's
  ``json_object`` + ``schema``.
* :func:`action_response_format` does both for the loop. OpenAI's strict mode needs an
  object at the root, so there the branches sit under one ``action`` key
  (:data:`ACTION_WRAPPER_KEY`), which :func:`reactgraph.protocol.actions.parse_action` unwraps.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from reactgraph.providers.abilities import SchemaOutput
from reactgraph.tools.values import argument_values, shape_of

ACTION_WRAPPER_KEY = "action"
"""The root key that holds the action in the OpenAI ``json_schema`` request shape."""

ACTION_SCHEMA_NAME = "react_action"
"""The schema name sent with OpenAI's ``json_schema`` response format for loop calls."""

ANSWER_CHOICE = "final_answer"
"""The choice that means "give the final answer" in tool-first mode (:func:`choice_schema`)."""


def choice_schema(choices: Sequence[str]) -> dict[str, Any]:
    """The schema of tool-first mode's first call (SPEC R13.1): ``{"next": name}`` with the
    tool names and :data:`ANSWER_CHOICE` as an enum, in the given order (best first)."""
    return {"type": "object", "properties": {"next": {"type": "string", "enum": list(choices)}},
            "required": ["next"], "additionalProperties": False}


_NESTED_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_NESTED_MAPS = ("$defs", "definitions")


def tool_args_schema(tool: BaseTool) -> dict[str, Any]:
    """A tool's argument JSON schema, as the JSON-mode prompt shows it (SPEC R2.3).

    Args:
        tool: Any LangChain tool.

    Returns:
        An object schema (``{"type": "object", "properties": {...}, "required": [...]}``,
        references resolved, titles removed); ``{"type": "object", "properties": {}}`` for
        a tool without arguments.
    """
    params = convert_to_openai_tool(tool)["function"].get("parameters") or {}
    return {"type": "object", "properties": {}, **params}


def value_schema(tool: BaseTool) -> dict[str, Any]:
    """A tool's argument schema as its values are read (:class:`reactgraph.tools.values.ValueReader`):
    :func:`tool_args_schema`, each property merged over the same property of the tool's own
    argument model, which keeps what the offered schema drops (a ``format``, a ``pattern`` or
    ``examples`` given as ``Field(json_schema_extra=...)``).

    Args:
        tool: Any LangChain tool.

    Returns:
        An object schema; :func:`tool_args_schema` itself when the tool has no argument model.
    """
    schema = tool_args_schema(tool)
    own = tool.args_schema
    if isinstance(own, dict):
        full = own
    elif isinstance(own, type) and issubclass(own, BaseModel):
        try:
            full = own.model_json_schema()
        except Exception:  # an injected argument (state, store, runtime) has no JSON schema
            return schema
    else:
        return schema
    written = full.get("properties") or {}
    properties = {name: {**(written.get(name) if isinstance(written.get(name), dict) else {}), **item}
                  for name, item in (schema.get("properties") or {}).items()}
    return {**schema, "properties": properties,
            **({"$defs": full["$defs"]} if isinstance(full.get("$defs"), dict) else {})}


def value_shape(value: str) -> str | None:
    """The shape of an identifier-like enum value (:func:`reactgraph.tools.values.shape_of`):
    every letter written ``a``, every digit ``9``, other characters kept (``"AB/100"`` ->
    ``"aa/999"``); ``None`` for a value without a digit (a word such as ``"normal"``),
    whose shape says nothing."""
    return shape_of(value)


def prefer_named_values(schema: Any, named: Sequence[str], seen: Sequence[str] | None = None) -> Any:
    """A copy of ``schema`` whose string enums list the ``named`` values first (in the
    given order), then the others in their original order. A named value that an enum
    lacks but whose :func:`value_shape` one of its values has (``PO-109`` beside
    ``PO-101``…) is put first into that enum too: a constrained model can then pass the
    id the question names, and the tool's own validation answers that it does not exist,
    instead of the model being forced onto a real machine the user never asked about
    (SPEC R13.1, R2.4). ``schema`` is not modified.

    With ``seen`` (ids the user or a tool wrote in the thread; ``AgentSettings.refuse_unasked_ids``),
    an enum of identifiers (values with a :func:`value_shape`) of which the question names
    some offers only those, the ``seen`` ones and its values that are no identifiers: what
    a call may pass without being refused (``reactgraph.nodes.call_checks.mark_unasked``), so a
    constrained model cannot pick another machine at all."""
    if not named:
        return schema
    rank = {value: index for index, value in enumerate(named)}

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: walk(value) for key, value in node.items()}
        enum = node.get("enum")
        if isinstance(enum, list) and all(isinstance(value, str) for value in enum):
            shapes = {value_shape(value) for value in enum} - {None}
            unlisted = [value for value in named if value not in enum and value_shape(value) in shapes]
            if unlisted or any(value in rank for value in enum):
                ordered = sorted(enum, key=lambda value: rank.get(value, len(rank)))
                if seen is not None and any(value in rank and value_shape(value) for value in enum):
                    ordered = [value for value in ordered
                               if value in rank or value in seen or value_shape(value) is None]
                out["enum"] = [*unlisted, *ordered]
        return out

    return walk(schema)


def enum_strings(schema: Any) -> Iterator[str]:
    """Every string enum value anywhere in ``schema`` (nested properties, items, branches)."""
    if isinstance(schema, dict):
        for value in schema.get("enum") or ():
            if isinstance(value, str):
                yield value
        for value in schema.values():
            yield from enum_strings(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from enum_strings(item)


def _takes_named(name: str, item: Any, named: Sequence[str]) -> bool:
    """Whether the argument ``name`` (schema ``item``) takes one of the ``named`` values:
    one of its enum values, a date for a date argument, an e-mail for an e-mail argument, a
    value of its pattern's or examples' shape (:class:`reactgraph.tools.values.ArgumentValues`)."""
    return any(argument.fits(value) for argument in argument_values("", {"properties": {name: item}})
               for value in named)


def offered_args_schema(tool: BaseTool, named: Sequence[str] = (), *, named_optionals_only: bool = False,
                        seen: Sequence[str] | None = None, pin_named: bool = False) -> dict[str, Any]:
    """The argument schema a model is offered for ``tool`` (SPEC R13.1).

    Args:
        tool: Any LangChain tool.
        named: Values the question names (enum values, dates), listed first in every enum
            (:func:`prefer_named_values`).
        seen: Ids the user or a tool wrote in the thread; given, an id enum of which the
            question names some offers only those and these (:func:`prefer_named_values`).
        named_optionals_only: Offer an optional argument only when the question names a
            value for it (:func:`_takes_named`: one of its enum values, a date for a date
            argument, a value of its format, pattern or examples); the tool
            then runs with its default. A small model otherwise fills every optional
            filter with the first value it sees (``AgentSettings.optional_args``). An
            optional argument that is the only one of the tool to take a named value is
            offered as required, its ``null`` branch dropped (:func:`fill_named`): the filter
            the question names a value for is filled, not left out.
        pin_named: Offer a string argument without an enum that takes some of the ``named``
            values by its schema (a ``format``, ``pattern`` or examples' shape: an e-mail, a
            UUID, a SKU, a date the question writes) only those values (:func:`pin_named_values`),
            so a schema-constrained model passes the value the question names, whole and in
            the argument's form, or calls another tool (``AgentSettings.refuse_unasked_ids``:
            a value no one wrote would be refused anyway).

    Returns:
        :func:`tool_args_schema` of ``tool`` with those changes.
    """
    schema = prefer_named_values(tool_args_schema(tool), named, seen)
    if pin_named and named:
        schema = pin_named_values(schema, value_schema(tool), named)
    if not named_optionals_only:
        return schema
    required = set(schema.get("required") or ())
    written = value_schema(tool).get("properties") or {}
    properties = {
        name: item for name, item in (schema.get("properties") or {}).items()
        if name in required or _takes_named(name, written.get(name, item), named)
    }
    return fill_named({**schema, "properties": properties}, written, named)


def fill_named(schema: dict[str, Any], written: dict[str, Any], named: Sequence[str]) -> dict[str, Any]:
    """A copy of the object ``schema`` in which every optional argument that is the only one
    to take some named value (:func:`_takes_named`, read from ``written``, the tool's
    :func:`value_schema` properties) is required, its ``null`` branch and default dropped: a
    question that names the machine of an alarm history or the result of the inspections it
    lists gets that filter filled. A value two arguments take (a date for ``start_date`` and
    ``end_date``) fills neither: which one it is for is the model's to say.

    Args:
        schema: The offered argument schema (``{"type": "object", "properties": …}``).
        written: The tool's :func:`value_schema` properties.
        named: The values the question (or the part of it the call answers) names.

    Returns:
        The new schema (``schema`` itself when nothing is filled).
    """
    properties = schema.get("properties") or {}
    required = list(schema.get("required") or ())
    takers: dict[str, list[str]] = {}
    for name, item in properties.items():
        for value in named:
            if _takes_named(name, written.get(name, item), [value]):
                takers.setdefault(value, []).append(name)
    filled = [name for name in properties if name not in required
              and any(names == [name] for names in takers.values())]
    if not filled:
        return schema
    changed = dict(properties)
    for name in filled:
        item = {key: value for key, value in properties[name].items() if key != "default"}
        branches = item.get("anyOf")
        if isinstance(branches, list):
            kept = [branch for branch in branches if not (isinstance(branch, dict) and branch.get("type") == "null")]
            item.pop("anyOf")
            item = {**kept[0], **item} if len(kept) == 1 and isinstance(kept[0], dict) else {**item, "anyOf": kept}
        changed[name] = item
    return {**schema, "properties": changed, "required": [*required, *filled]}


def pin_named_values(schema: dict[str, Any], written: dict[str, Any], named: Sequence[str]) -> dict[str, Any]:
    """A copy of the object ``schema`` in which every top-level argument that takes some of
    the ``named`` values is offered only those: an enum of words the named values among it
    ("email" of ``vpn, email, wiki``; an enum of ids is :func:`prefer_named_values`'), a string argument without an enum those that
    fit it (:meth:`reactgraph.tools.values.ArgumentValues.fits`: its ``format``, ``pattern``
    or examples' shape, read from ``written``, the tool's :func:`value_schema`), as an enum
    (its ``format`` and ``pattern`` dropped: the enum says more). A free-text argument and a
    date without a year (``--03-05``: the tool needs a whole date) are left as they are.

    Args:
        schema: The offered argument schema (``{"type": "object", "properties": …}``).
        written: The tool's :func:`value_schema` (which keeps ``format``, ``pattern``, ``examples``).
        named: The values the question names, in normal form.

    Returns:
        The new schema (``schema`` itself when no argument takes a named value).
    """
    properties = schema.get("properties") or {}
    own = written.get("properties") or {}
    pinned: dict[str, Any] = {}
    for name, item in properties.items():
        if isinstance(item, dict) and isinstance(item.get("enum"), list):
            if any(isinstance(value, str) and shape_of(value) for value in item["enum"]):
                continue  # an enum of ids: prefer_named_values offers the ids asked about and those seen
            listed = [value for value in dict.fromkeys(named) if value in item["enum"]]
            if listed and len(listed) < len(item["enum"]):
                pinned[name] = {**item, "enum": listed}
            continue
        if not isinstance(item, dict) or item.get("type") != "string":
            continue
        arguments = argument_values("", {"properties": {name: own.get(name, item)}})
        values = [value for value in dict.fromkeys(named)
                  if not value.startswith("--") and any(argument.fits(value) for argument in arguments)]
        if values:
            pinned[name] = {**{key: value for key, value in item.items() if key not in ("format", "pattern")},
                            "enum": values}
    return {**schema, "properties": {**properties, **pinned}} if pinned else schema


def _string_const(value: str) -> dict[str, Any]:
    return {"type": "string", "enum": [value]}


def action_schema(
    tools: Sequence[BaseTool], *, max_text_chars: int | None = None, named: Sequence[str] = (),
    named_optionals_only: bool = False, seen: Sequence[str] | None = None, tools_only: bool = False,
    pin_named: bool = False,
) -> dict[str, Any]:
    """The JSON schema of one JSON-mode action for ``tools`` (SPEC R2.3).

    Args:
        tools: The tools offered this turn, in order (most relevant first: the branches
            keep this order, SPEC R13.1).
        named: Enum values the question names, listed first in every argument enum
            (:func:`prefer_named_values`).
        named_optionals_only: Offer only the optional arguments the question names a
            value for (:func:`offered_args_schema`).
        seen: Ids the user or a tool wrote in the thread (:func:`offered_args_schema`).
        max_text_chars: When set, ``reasoning`` may hold at most a third of it and
            ``answer`` the rest (``maxLength``, characters), so a constrained reply ends
            before the provider's output cap cuts it off; ``None`` leaves them unbounded.
        tools_only: Leave the ``final_answer`` branch out (a tool call is required);
            ignored when ``tools`` is empty.
        pin_named: Offer an argument that takes named values only those (:func:`offered_args_schema`).

    Returns:
        ``{"anyOf": [branch, ...]}``: for each tool, an object with exactly ``type``
        (``"tool_call"``), ``reasoning`` (string), ``tool_name`` (that tool's name only)
        and ``tool_args`` (:func:`tool_args_schema` of that tool); last (unless
        ``tools_only``), the ``final_answer`` object with exactly ``type``, ``reasoning`` and ``answer``. Every
        key is required, no other key is allowed; the key order is the wire format's.
    """
    reasoning: dict[str, Any] = {"type": "string"}
    answer: dict[str, Any] = {"type": "string"}
    if max_text_chars is not None:
        reasoning["maxLength"] = max_text_chars // 3
        answer["maxLength"] = max_text_chars - max_text_chars // 3
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "type": _string_const("tool_call"),
                "reasoning": reasoning,
                "tool_name": _string_const(tool.name),
                "tool_args": offered_args_schema(tool, named, named_optionals_only=named_optionals_only, seen=seen,
                                                 pin_named=pin_named),
            },
            "required": ["type", "reasoning", "tool_name", "tool_args"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    if tools_only and branches:
        return {"anyOf": branches}
    branches.append(
        {
            "type": "object",
            "properties": {
                "type": _string_const("final_answer"),
                "reasoning": reasoning,
                "answer": answer,
            },
            "required": ["type", "reasoning", "answer"],
            "additionalProperties": False,
        }
    )
    return {"anyOf": branches}


def _allows_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_allows_null(branch) for branch in schema.get("anyOf", []))


def strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` that OpenAI's strict structured outputs accept.

    Strict mode wants every object closed (``additionalProperties: false``) with every
    property required, and has no ``default`` or ``oneOf``. So each object gets those, a
    property that was optional becomes nullable (``{"anyOf": [schema, {"type": "null"}]}``;
    the model writes ``null`` where it would have left the key out, which a pydantic
    argument model with a ``None`` default accepts), ``default`` keywords are dropped and
    ``oneOf`` becomes ``anyOf``. Nested schemas (properties, items, branches, ``$defs``)
    are converted too; ``schema`` is not modified.

    Args:
        schema: A JSON schema dict.

    Returns:
        The converted schema.
    """

    def walk(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        out = {("anyOf" if key == "oneOf" else key): value for key, value in node.items() if key != "default"}
        for key in _NESTED_LISTS:
            if isinstance(out.get(key), list):
                out[key] = [walk(item) for item in out[key]]
        for key in _NESTED_MAPS:
            if isinstance(out.get(key), dict):
                out[key] = {name: walk(item) for name, item in out[key].items()}
        if isinstance(out.get("items"), dict):
            out["items"] = walk(out["items"])
        if out.get("type") == "object" or isinstance(out.get("properties"), dict):
            required = set(out.get("required", []))
            properties: dict[str, Any] = {}
            for name, item in (out.get("properties") or {}).items():
                item = walk(item)
                if name not in required and not _allows_null(item):
                    item = {"anyOf": [item, {"type": "null"}]}
                properties[name] = item
            out["properties"] = properties
            out["required"] = list(properties)
            out["additionalProperties"] = False
        return out

    return walk(schema)


def schema_response_format(kind: SchemaOutput, schema: dict[str, Any], *, name: str) -> dict[str, Any] | None:
    """The ``response_format`` that constrains a reply to ``schema``.

    Args:
        kind: The provider's request shape (``ModelAbilities.schema_output``).
        schema: A JSON schema; for ``"json_schema"`` its root should be an object
            (OpenAI's strict mode refuses other roots).
        name: The schema's name for ``"json_schema"`` (letters, digits, ``_`` and ``-``,
            at most 64 characters).

    Returns:
        ``{"type": "json_schema", "json_schema": {"name": name, "schema":
        strict_json_schema(schema), "strict": True}}`` for ``"json_schema"``;
        ``{"type": "json_object", "schema": schema}`` for ``"json_object_schema"``;
        ``None`` for ``"none"``.

    Raises:
        ValueError: ``kind`` is not a :data:`~reactgraph.providers.abilities.SchemaOutput` value.
    """
    if kind == "none":
        return None
    if kind == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if kind == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": strict_json_schema(schema), "strict": True}}
    raise ValueError(f"unknown schema_output kind {kind!r}")


def action_response_format(
    kind: SchemaOutput, tools: Sequence[BaseTool], *, max_output_tokens: int | None = None, named: Sequence[str] = (),
    named_optionals_only: bool = False, seen: Sequence[str] | None = None, tools_only: bool = False,
    pin_named: bool = False,
) -> dict[str, Any] | None:
    """The ``response_format`` of a JSON-mode loop call offering ``tools``.

    Args:
        kind: The provider's request shape (``ModelAbilities.schema_output``).
        tools: The tools offered this turn, most relevant first; none leaves only the
            ``final_answer`` branch (what a stalled loop is sent, SPEC R13.1).
        named, named_optionals_only, seen, tools_only, pin_named: See :func:`action_schema`.
        max_output_tokens: The model's output cap (tokens), when known. For
            ``"json_object_schema"`` it bounds the free text to three quarters of it in
            characters (:func:`action_schema`'s ``max_text_chars``; a token is at least one
            character), so a small model that rambles still closes its object. OpenAI's
            strict mode documents no ``maxLength``, so ``"json_schema"`` is not bounded.

    Returns:
        :func:`schema_response_format` of :func:`action_schema` (``"json_object_schema"``),
        or of an object whose only key :data:`ACTION_WRAPPER_KEY` holds it
        (``"json_schema"``: OpenAI's strict mode wants an object at the root); ``None``
        for ``"none"``.

    Raises:
        ValueError: ``kind`` is not a :data:`~reactgraph.providers.abilities.SchemaOutput` value.
    """
    if kind == "none":
        return None
    bounded = kind == "json_object_schema" and max_output_tokens is not None
    schema = action_schema(tools, max_text_chars=max_output_tokens * 3 // 4 if bounded else None, named=named,
                           named_optionals_only=named_optionals_only, seen=seen, tools_only=tools_only,
                           pin_named=pin_named)
    if kind == "json_schema":
        schema = {
            "type": "object",
            "properties": {ACTION_WRAPPER_KEY: schema},
            "required": [ACTION_WRAPPER_KEY],
            "additionalProperties": False,
        }
    return schema_response_format(kind, schema, name=ACTION_SCHEMA_NAME)
