"""What a question names and who wrote which value, as the engine works it out for the
nodes: the per-query caches (:func:`remembered`, :data:`CACHE_SIZE`), the tools ranked and the
values named for a question, the ids an argument lists, the values the user or a tool wrote,
whether a call answers the question, the values of a call no one wrote, the ids a call may
pass, and a tool's argument schema as offered this turn — the methods
:class:`~reactgraph.engine.bindings.Engine` inherits (:class:`QueryValues`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool

from reactgraph.protocol.action_schema import enum_strings, offered_args_schema, tool_args_schema, value_shape
from reactgraph.protocol.actions import message_text
from reactgraph.tools.echoes import echoes_tool
from reactgraph.tools.notation import FORMAT_MASK, fold
from reactgraph.protocol.jsonparse import safe_json
from reactgraph.protocol.messages import user_wrote
from reactgraph.tools.values import argument_leaves, value_tokens, whole_value, written_in


CACHE_SIZE = 256
"""Entries each of the engine's per-query caches keeps (the most recent ones): a server
answering many different questions would otherwise keep a bound model, a prompt and a schema
for every ranking of the tools it ever offered."""


def remembered(cache: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """``cache[key]``, made by ``make()`` the first time; the oldest entries are dropped
    beyond :data:`CACHE_SIZE`."""
    if key in cache:
        return cache[key]
    value = cache[key] = make()
    while len(cache) > CACHE_SIZE:
        cache.pop(next(iter(cache)), None)
    return value


_DAY_KINDS = frozenset({"date", "time"})
_MADE_UP_KINDS = frozenset({"id", "number", "email", "uuid"}) | _DAY_KINDS
"""Kinds of a whole text value (:func:`~reactgraph.tools.values.whole_value`) a model copies
from someone or makes up (:meth:`QueryValues.unwritten_values`); a URI is often put together
from parts the user gave (a host, a path), so it is not among them."""


_FORMAT_ARGUMENT = re.compile(r"format|pattern|mask|layout", re.IGNORECASE)
"""An argument whose name says it takes a format (``date_format``, ``time_pattern``): a mask
such as ``YYYY-MM-DD`` is its value, not a placeholder."""


class QueryValues:
    """The value methods of :class:`~reactgraph.engine.bindings.Engine` (SPEC R13.1, R13.11,
    R13.12). The engine gives the attributes they read: ``settings``, ``tools``, ``ranker``,
    ``values``, ``stable_prompt`` and its caches (``_per_query``, ``_argument_ids``,
    ``_args_schemas``, ``_id_values``, ``_enum_values``, ``_written_ids``, ``_instructed``)."""

    def args_schema(self, tool_name: str) -> dict[str, Any]:
        """Tool ``tool_name``'s argument schema (:func:`~reactgraph.protocol.action_schema.tool_args_schema`),
        worked out once per tool: the loop's checks read it for every call, and LangChain's
        conversion walks the tool's argument model each time. ``{}`` for an unknown tool.
        Shared between calls: read it, do not change it."""
        schema = self._args_schemas.get(tool_name)
        if schema is None:
            tool = self.tools.get(tool_name)
            schema = tool_args_schema(tool) if tool is not None else {}
            self._args_schemas[tool_name] = schema
        return schema

    def _query_facts(self, query: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Every tool's name ranked for ``query`` and the values it names, worked out once per
        query (each loop call of a turn asks again), for the most recent
        :data:`CACHE_SIZE` queries."""

        def work_out() -> tuple[tuple[str, ...], tuple[str, ...]]:
            ranked = tuple(name for name, _ in self.ranker.rank(query))
            return ranked, tuple(self.values.named(query))

        return remembered(self._per_query, query, work_out)

    def argument_ids(self, tool_name: str) -> dict[str, frozenset[str]]:
        """The arguments of tool ``tool_name`` whose schema lists identifiers (string enum
        values with a digit, :func:`~reactgraph.protocol.action_schema.value_shape`: machine ids,
        order numbers), each with those values; ``{}`` for an unknown tool. Worked out once
        per tool."""
        if tool_name not in self._argument_ids:
            properties = self.args_schema(tool_name).get("properties") or {}
            self._argument_ids[tool_name] = {
                name: ids for name, schema in properties.items()
                if (ids := frozenset(value for value in enum_strings(schema) if value_shape(value) is not None))
            }
        return self._argument_ids[tool_name]

    def tool_values(self, tool_name: str) -> frozenset[str]:
        """Every string enum value of ``tool_name``'s arguments (empty for an unknown tool):
        the values a call of it can pass."""
        return frozenset(enum_strings(self.args_schema(tool_name)))

    def named_values(self, query: str) -> tuple[str, ...]:
        """The values ``query`` names, in its order, each one whole value in the normal form
        its argument takes (:meth:`~reactgraph.tools.values.ValueReader.find`: enum values, ids of
        an enum's shape it lacks, e-mail addresses, UUIDs, dates as ISO, values of a pattern's
        or an example's shape, quoted names) (SPEC R13.1, R13.11)."""
        return self._query_facts(query)[1]

    def written_values(self, messages: Sequence[BaseMessage], thread: Any = None) -> set[str]:
        """What the user or a tool wrote in ``messages`` of ``thread``: the id enum values
        as spelled, and every value in folded normal form (:meth:`~reactgraph.tools.values.ValueReader.written`),
        read incrementally (:class:`~reactgraph.engine.history.HistoryFold`). Read it, do not change it."""
        return self._written_ids(messages, thread)

    def answers_question(self, step: dict[str, Any], query: str, messages: Sequence[BaseMessage],
                         thread: Any = None, steps: Sequence[dict[str, Any]] = ()) -> bool:
        """Whether a call (a step record) may stand as the answer to ``query`` (SPEC R13.12):
        every enum value it passes is one the question names (:meth:`named_values`), its
        argument's default, or one written before this turn by the user or a tool (the
        ``messages`` before the turn's question) or by another call's result this turn (one of
        ``steps``; a call's own result or a repeat's, which may echo its arguments, does not count). A call
        that passes another ("high" for a question that writes "高", the first line of an enum
        for a question about a SKU) answers another question: it neither covers the question
        nor is shown as its answer."""
        arguments = {argument.argument: argument for argument in self.values.arguments.get(
            str(step.get("tool_name") or ""), ())}
        named = self.named_values(query)
        written: set[str] | None = None
        for path, value in argument_leaves(step.get("tool_args")):
            argument = arguments.get(path)
            if argument is None or not isinstance(value, str) or value not in argument.enum:
                continue
            if value in named or value == argument.default:
                continue
            if written is None:
                asked = max((index for index, message in enumerate(messages)
                             if isinstance(message, HumanMessage) and message_text(message) == query), default=0)
                written = set(self.written_values(messages[:asked])) if asked else set()
                for other in steps:  # another call: not this one, nor a repeat of it
                    if not other.get("error") and (other.get("tool_name"), other.get("tool_args")) != (
                            step.get("tool_name"), step.get("tool_args")):
                        written |= self.values.written(str(other.get("observation") or ""))
            if not written_in(value, written):
                return False
        return True

    def answering_steps(self, steps: Sequence[dict[str, Any]], query: str, messages: Sequence[BaseMessage],
                        thread: Any = None) -> list[dict[str, Any]]:
        """The ``steps`` whose calls :meth:`answers_question` ``query``, in order: what an
        answer made of observations may show."""
        return [step for step in steps if self.answers_question(step, query, messages, thread, steps)]

    def unwritten_values(self, tool_name: str, args: Any, messages: Sequence[BaseMessage],
                         thread: Any = None) -> list[tuple[str, str]]:
        """The values of a call that no one wrote (SPEC R13.1): values the model made up,
        where neither the user nor a tool wrote them in ``messages`` (the question, earlier
        turns, tool results; the model's own text does not count), nor the agent's instructions
        (``AgentSettings.system_prompt``), and the argument's schema does not list them (an enum
        value, the default):

        * a value of an argument that names one record
          (:attr:`~reactgraph.tools.values.ArgumentValues.identifier`: an e-mail, a UUID, a value
          of a pattern's or an example's shape);
        * a text value of any argument that is one whole id, number, e-mail address or UUID
          (:func:`~reactgraph.tools.values.whole_value`: ``"case_id": "1234567890"``): a model
          copies such a value or makes it up, it does not compute it;
        * a date or time of day as text when no one wrote any figure at all — not the
          conversation, nor a date in the tool's description or schema (the question asks for
          "today"'s schedule of a tool that names no day): the model cannot know which day it is, so the
          one it writes is made up; where a figure is written (a date in the question, a tool's
          "data up to 2026-01-29"), a day named in words ("next Friday", "the 5th") is the
          model's to compute;
        * an empty value (``""``, ``[]``, ``{}``) for a required argument: the call gives nothing
          to act on;
        * a date or time written as its format's letters (``"YYYY-MM-DD"``,
          :data:`~reactgraph.tools.notation.FORMAT_MASK`): a description's placeholder — unless
          the argument asks for a format (:data:`_FORMAT_ARGUMENT`: ``date_format``);
        * a text argument whose value repeats the tool's own name or words
          (:func:`~reactgraph.tools.echoes.echoes_tool`: ``"query": "search_products"``), unless
          the user wrote it.

        Measured on the Berkeley Function Calling Leaderboard's correct calls (its possible
        answers in 2,111 cases of five categories, bench/README.md): the rules for values of
        any argument (whole values, days, empty required values) find a made-up value in none
        that the identifier rule did not already find (30, mostly addresses and formulas of
        an example's shape).

        Returns:
            ``(argument, value)`` pairs, in argument order; ``[]`` when every value was written.
        """
        out: list[tuple[str, str]] = []
        tool = self.tools.get(tool_name)
        if tool is None:
            return out
        schema = self.args_schema(tool_name)
        said: str | None = None
        for path, value in argument_leaves(args):
            if isinstance(value, str) and FORMAT_MASK.fullmatch(value.strip()) and not _FORMAT_ARGUMENT.search(path):
                out.append((path, value))  # "YYYY-MM-DD" copied from a description: no day at all
                continue
            if echoes_tool(value, tool.name, tool.description or "", schema):
                if said is None:
                    said = fold(" ".join(message_text(message) for message in messages if user_wrote(message)))
                if fold(str(value)).strip(" .:;!?") not in said:
                    out.append((path, str(value)))
        if isinstance(args, dict):
            properties = schema.get("properties") or {}
            out.extend((name, safe_json(args[name])) for name in schema.get("required") or ()
                       if name in properties and name in args and args[name] in ("", [], {}))
        arguments = {argument.argument: argument for argument in self.values.arguments.get(tool_name, ())}
        listed = {path for path, _ in out}
        written: set[str] | None = None
        for path, value in argument_leaves(args):
            if path in listed or value is None or isinstance(value, bool):
                continue
            argument = arguments.get(path)
            if argument is not None and (str(value) in argument.enum or str(value) == argument.default):
                continue
            day = False
            if argument is None or not argument.identifier:
                token = whole_value(value) if isinstance(value, str) else None
                if token is None or token.kind not in _MADE_UP_KINDS:
                    continue
                day = token.kind in _DAY_KINDS
            if written is None:  # the conversation's values, and the developer's instructions'
                written = self.written_values(messages, thread) | self._instructed_values()
            if day and (any(char.isdigit() for text in written for char in text) or self._names_a_day(tool_name)):
                continue  # a figure to count from: the conversation's, or the tool's own day ("data up to 2026-01-29")
            if not written_in(value, written):
                out.append((path, str(value)))
        return out

    def _instructed_values(self) -> set[str]:
        """The values the agent's own instructions write (``AgentSettings.system_prompt`` given as
        text: "Today is 2026-12-06", a default account number): the developer wrote them, so a
        call may pass them. Worked out once per prompt."""
        prompt = self.settings.system_prompt if isinstance(self.settings.system_prompt, str) else ""
        return remembered(self._instructed, prompt, lambda: self.values.written(prompt))

    def _names_a_day(self, tool_name: str) -> bool:
        """Whether tool ``tool_name``'s description or argument schema writes a date or a time
        of day (its data's reference day, an example): a day to count from."""
        tool = self.tools.get(tool_name)
        text = f"{tool.description if tool is not None else ''} {safe_json(self.args_schema(tool_name))}"
        return any(token.kind in _DAY_KINDS for token in value_tokens(text))

    def seen_ids(self, query: str, messages: Sequence[BaseMessage], thread: Any = None) -> tuple[str, ...] | None:
        """The ids a call may pass besides those ``query`` names, when the question names
        some (``AgentSettings.refuse_unasked_ids``, SPEC R13.1): every identifier an argument
        lists (an enum value with a digit) that the user or a tool wrote in ``messages`` —
        not the model. ``None`` when the check is off or the question names no such id:
        then any value may be passed. Reads the history only in that case.

        Args:
            query: The turn's question.
            messages: The thread's conversation.
            thread: The run's thread id: the messages are read incrementally
                (:class:`~reactgraph.engine.history.HistoryFold`).

        Returns:
            The ids, in the order of the tools' enums, or ``None``.
        """
        if not self.settings.refuse_unasked_ids:
            return None
        named = set(self.named_values(query))
        if named.isdisjoint(self._id_values):
            return None
        written = self._written_ids(messages, thread)
        return tuple(value for value in self._id_values if value not in named and value in written)

    def offered_args(self, tool: BaseTool, named: Sequence[str], seen: Sequence[str] | None = None) -> dict[str, Any]:
        """``tool``'s argument schema as offered this turn (see
        :func:`~reactgraph.protocol.action_schema.offered_args_schema`, ``AgentSettings.optional_args``;
        ``seen`` from :meth:`seen_ids`; under ``AgentSettings.refuse_unasked_ids`` an argument
        taking values the question names is offered only those, ``pin_named``)."""
        named_only = self.settings.optional_args == "named"
        if self.stable_prompt and not named_only and seen is None:  # enums as declared: one prefix,
            listed = set(self._enum_values)  # but an id no enum lists (CNC-009) is still put into its enum
            named = tuple(value for value in named if value not in listed)
        return offered_args_schema(tool, named, named_optionals_only=named_only, seen=seen,
                                   pin_named=bool(self.settings.refuse_unasked_ids))
