"""Argument values: which parts of a text are values a tool takes, read from the tools' own
schemas (SPEC R13.11).

One notion serves every check that asks "which value does this question (or answer, or tool
result) name?": the ranking of tools by the identifiers they take, the values listed first in
the offered schemas, ``refuse_unasked_ids``, the ids the user or a tool wrote (``seen``),
``covered``, ``require_tool_data`` and the grounding of answers.

What an argument takes is read from its JSON schema (:class:`ArgumentValues`):

* ``enum`` — its values, matched by words (letter case, accents and width folded, Latin
  words by stem: "failed" names ``fail``); an enum of several words that differ only in
  their last ones (``Line A``, ``Line B``) is matched by those last words after a word in
  another script ("ライン B" names ``Line B``), and a word of another alphabet by its
  transliteration (``anyascii``: "Окафор" names ``Okafor``) — nothing else is translated, so a
  value the question writes in another language ("高" for ``high``) is not matched and never
  replaced;
* ``format`` — ``email``, ``uuid``, ``uri``/``url``, ``date`` and ``date-time`` (an argument
  named ``email``, ``staff_email``… takes an e-mail address without saying so);
* ``pattern`` — the schema's regular expression, searched as a whole token;
* ``examples``/``example`` and the description's own examples ("like AB/123", "e.g.
  2024-01-31", "for example 481516") — a value of the same shape (letters and digits in the
  same places, the same separators) is a value of that argument;
* ``type`` ``integer``/``number`` with examples — a whole number of the examples' digits.

:meth:`ValueReader.find` returns every value of a text as one whole :class:`Found` (a SKU
``AB/100`` is not ``100``; an e-mail address, a UUID, a quoted name are one value each) in
normal form: a date in the text's own notation (``2026年3月5日``, ``5. März 2026``,
``05/03/2026``) becomes ISO ``2026-03-05`` (a date without a year ``--03-05``), an enum value
is spelled as the enum spells it.

:func:`value_tokens` finds the values any text holds whatever the schemas (ids of letters and
digits joined by ``-``, ``/``, ``#``, ``_`` or ``.``, e-mail addresses, UUIDs, dates in the
notations above, numbers with every reading of their separators: ``1.234,5`` is ``1234.5``,
``1,250`` is ``1250`` or ``1.25``): what grounding compares.

How dates, numbers, times, folded text and a description's examples are written lives in
:mod:`reactgraph.tools.notation`;
whether a call's arguments echo a schema or the tool's own words, in
:mod:`reactgraph.tools.echoes` (both re-exported here).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from anyascii import anyascii

from reactgraph.tools.echoes import echoes_schema, echoes_tool  # noqa: F401 (re-exported)
from reactgraph.tools.notation import (  # noqa: F401 (re-exported)
    CLOCK_MARKER, DATE_MARKERS, DATE_TIME, MONTH_NAMES, TIME_OF_DAY, clock_readings,
    description_examples, find_dates, fold, normal_number, number_readings,
)

Kind = str
"""What made a :class:`Found` a value: ``enum``, ``date``, ``email``, ``uuid``, ``uri``,
``pattern``, ``example``, ``quoted`` (a quoted name), ``id``, ``time`` or ``number`` (generic shapes)."""

IDENTIFIER_KINDS = frozenset({"email", "uuid", "uri", "pattern", "example", "id"})
"""Kinds whose values name one record (who, which ticket, which item): a call passing one that
no one wrote is refused or marked (``AgentSettings.refuse_unasked_ids``)."""


# -- generic shapes ---------------------------------------------------------------------------

_EMAIL = r"[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,8}\.[A-Za-z]{2,24}"
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_URI = r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,15}://[^\s<>\"'`)\]]+"
# letters and digits joined by separators, with a digit somewhere: PO-103, AB/100, PO#77, INV_2024-001
_ID = r"[A-Za-z][A-Za-z0-9]{0,23}(?:[-/#_.][A-Za-z0-9]{1,24}){1,8}"
_NUMBER = r"\d+(?:[.,]\d+)*"

EMAIL = re.compile(rf"(?<![\w.%+\-]){_EMAIL}(?![\w\-])")
"""An e-mail address."""
UUID = re.compile(rf"(?<![0-9A-Za-z\-]){_UUID}(?![0-9A-Za-z\-])")
"""A UUID in its 8-4-4-4-12 hex form."""
URI = re.compile(_URI)
"""An absolute URI (``https://…``)."""


@dataclass(frozen=True)
class Token:
    """One value :func:`value_tokens` found.

    Attributes:
        value: Its normal form: an id upper-cased, an e-mail address or UUID lower-cased, a
            date in ISO form, a number's likeliest reading.
        kind: ``date``, ``time``, ``email``, ``uuid``, ``uri``, ``id`` or ``number``.
        readings: Every normal form it may stand for (a number's other readings; a time's
            ``HH:MM``, hour and minute; a date-time's date and ``HH:MM`` time).
        start: Where it starts in the text.
        end: Where it ends.
    """

    value: str
    kind: Kind
    readings: tuple[str, ...]
    start: int
    end: int


_GENERIC = re.compile(
    rf"(?P<email>{EMAIL.pattern})|(?P<uuid>{UUID.pattern})|(?P<uri>{_URI})|(?P<time>{TIME_OF_DAY.pattern})"
    rf"|(?P<id>(?<![A-Za-z0-9_.]){_ID}(?![A-Za-z0-9_]))|(?P<number>(?<![A-Za-z0-9_.,]){_NUMBER})(?![0-9])"
)


def value_tokens(text: str) -> list[Token]:
    """The values of ``text`` whatever the tools' schemas (module docstring): e-mail
    addresses, UUIDs, URIs, dates (:func:`find_dates`), times of day (``10:15``, also the time
    of an ISO date-time), ids (letters and digits joined by a separator, with at least one
    digit: ``PO-103``, ``AB/100``) and numbers (:func:`number_readings`), each one whole
    value, in text order."""
    dates = find_dates(text)
    tokens: list[Token] = []
    for start, end, iso in dates:  # a date-time's time is one more reading of it
        clock = DATE_TIME.search(text, start, end)
        tokens.append(Token(iso, "date", (iso, clock.group(1)[:5]) if clock else (iso,), start, end))
    for match in _GENERIC.finditer(text):
        if any(start < match.end() and match.start() < end for start, end, _ in dates):
            continue
        kind = match.lastgroup or "number"
        written = match.group(0)
        if kind == "time":
            readings = clock_readings(written)
            value = readings[0]
        elif kind == "id":
            if not any(char.isdigit() for char in written):
                continue
            written = written.rstrip(".")
            value = written.upper()
            readings = (value,)
        elif kind == "number":
            written = written.rstrip(".,")
            readings = tuple(number_readings(written))
            value = readings[0]
        else:
            value = written.lower() if kind in ("email", "uuid") else written
            readings = (value,)
        tokens.append(Token(value, kind, readings, match.start(), match.start() + len(written)))
    return sorted(tokens, key=lambda token: token.start)


def whole_value(text: str) -> Token | None:
    """The one value :func:`value_tokens` reads in all of ``text`` (spaces around it aside):
    ``"1234567890"`` is a number, ``"2022-01-01"`` a date, ``"PO-103"`` an id, ``"12:30 AM"``
    a time (a 12-hour clock's marker is part of the time it follows, :data:`CLOCK_MARKER`);
    ``None`` for a text that is more than one value or none (``"New York"``, ``"10 kg"``)."""
    stripped = text.strip()
    tokens = value_tokens(stripped)
    if len(tokens) != 1 or tokens[0].start != 0:
        return None
    rest = stripped[tokens[0].end:]
    if not rest or (tokens[0].kind == "time" and CLOCK_MARKER.fullmatch(rest)):
        return tokens[0]
    return None


def without_values(text: str, replacement: str = " ") -> str:
    """``text`` with each of its values (:func:`value_tokens`: ids, e-mail addresses, dates,
    numbers) replaced by ``replacement``: its words alone (ids and figures are no one's
    language and no search word)."""
    for token in reversed(value_tokens(text)):
        text = text[: token.start] + replacement + text[token.end :]
    return text


# -- values by schema -------------------------------------------------------------------------


def shape_of(value: str) -> str | None:
    """The shape of an identifier: every letter ``a``, every digit ``9``, other characters
    kept (``"AB/100"`` -> ``"aa/999"``); ``None`` for a value without a digit."""
    if not any(char.isdigit() for char in value):
        return None
    return "".join("9" if char.isdigit() else "a" if char.isalpha() else char for char in value)


def _shape_pattern(shape: str) -> str:
    return "".join("[A-Za-z]" if char == "a" else r"\d" if char == "9" else re.escape(char) for char in shape)


def _compiled(pattern: Any) -> re.Pattern[str] | None:
    """A schema ``pattern`` to search as a whole token, or ``None`` when Python cannot read
    it or it matches plain words too (``^\\S+$``: it says nothing about a value)."""
    if not isinstance(pattern, str) or not pattern:
        return None
    body = re.sub(r"^\^|(?<!\\)\$$", "", pattern.replace(r"\A", "").replace(r"\Z", "").replace(r"\z", ""))
    try:
        compiled = re.compile(rf"(?<![\w/@.\-])(?:{body})(?![\w/@\-])")
    except re.error:
        return None
    if any(compiled.fullmatch(sample) for sample in ("", "hello", "Hello world", "a")):
        return None
    return compiled


_LATIN_WORD = r"[0-9A-Za-z\u00c0-\u024f]+"
_WORD = re.compile(rf"{_LATIN_WORD}|[^\W_0-9A-Za-z\u00c0-\u024f]+")


def _words(text: str) -> list[tuple[str, int, int]]:
    """The words of ``text`` with their spans: runs of Latin letters and digits, and runs of
    letters of other scripts, apart ("Bの" is ``b`` and ``の``), folded (:func:`fold`)."""
    return [(fold(match.group(0)), match.start(), match.end()) for match in _WORD.finditer(text)]


def _latin(word: str) -> bool:
    return all(char.isascii() for char in word)


@dataclass(frozen=True)
class Found:
    """One value a text names.

    Attributes:
        text: The text as written (``2026年3月5日``, ``ab/100``).
        value: Its normal form for the argument it fits (``2026-03-05``, ``AB/100``, the
            enum's own spelling).
        kind: What made it a value (:data:`Kind`).
        start: Where it starts in the text.
    """

    text: str
    value: str
    kind: Kind
    start: int

    @property
    def identifier(self) -> bool:
        """Whether it names one record: an id-like enum value (with a digit), or an e-mail
        address, UUID, URI, or a value of a pattern's or an example's shape."""
        return self.kind in IDENTIFIER_KINDS or (self.kind == "enum" and shape_of(self.value) is not None)


@dataclass(frozen=True)
class ArgumentValues:
    """What one argument of one tool takes, read from its schema (module docstring).

    Attributes:
        tool: The tool's name.
        argument: The argument's name (a dotted path for a nested one).
        kind: The JSON-schema type (``string``, ``integer``…), ``""`` when none.
        format: The schema's ``format``, ``""`` when none.
        enum: Its string enum values.
        pattern: Its ``pattern``, compiled (:func:`_compiled`), or ``None``.
        shapes: The :func:`shape_of` of its examples and of its id-like enum values.
        default: Its string ``default``, ``None`` when none (a call passing it chose nothing).
    """

    tool: str
    argument: str
    kind: str = ""
    format: str = ""
    enum: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    shapes: frozenset[str] = field(default_factory=frozenset)
    default: str | None = None

    @property
    def identifier(self) -> bool:
        """Whether its values name one record (an e-mail, a UUID, a pattern's or an
        example's shape, an enum of ids) — what ``refuse_unasked_ids`` guards. A date
        argument never does: a model rightly computes a day the question names in words."""
        if self.format in ("date", "date-time"):  # a day is computed ("last week"), not looked up
            return False
        return (self.format in ("email", "uuid", "uri", "url") or self.pattern is not None or bool(self.shapes)
                or any(shape_of(value) for value in self.enum))

    @property
    def free(self) -> bool:
        """Whether it takes any text (a string without enum, format, pattern or example): a
        quoted name is its value."""
        return self.kind in ("string", "") and not (self.enum or self.format or self.pattern or self.shapes)

    def fits(self, value: str) -> bool:
        """Whether ``value`` (a normal form of :class:`Found`) is one this argument takes."""
        if self.enum and value in self.enum:
            return True
        if self.format == "email":
            return bool(EMAIL.fullmatch(value))
        if self.format == "uuid":
            return bool(UUID.fullmatch(value))
        if self.format in ("uri", "url"):
            return bool(URI.fullmatch(value))
        if self.format in ("date", "date-time"):
            return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}|--\d{2}-\d{2}", value))
        if self.pattern is not None and self.pattern.fullmatch(value):
            return True
        return any(re.fullmatch(_shape_pattern(shape), value, re.IGNORECASE) for shape in self.shapes)


def _leaves(schema: Any, path: str, defs: Mapping[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    if not isinstance(schema, dict):
        return
    if "$ref" in schema and isinstance(schema["$ref"], str):
        schema = {**defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), **{k: v for k, v in schema.items() if k != "$ref"}}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, item in properties.items():
            yield from _leaves(item, f"{path}.{name}" if path else name, defs)
        return
    if isinstance(schema.get("items"), dict):
        yield from _leaves({**schema["items"], "description": schema["items"].get("description")
                            or schema.get("description")}, path, defs)
        return
    branches = [branch for key in ("anyOf", "oneOf", "allOf") for branch in schema.get(key) or ()
                if isinstance(branch, dict) and branch.get("type") != "null"]
    if branches:
        merged: dict[str, Any] = {key: value for key, value in schema.items() if key not in ("anyOf", "oneOf", "allOf")}
        for branch in branches:
            for key, value in branch.items():
                merged.setdefault(key, value)
        yield from _leaves(merged, path, defs)
        return
    if path:
        yield path, schema


_EMAIL_NAME = re.compile(r"(?:^|_)e_?mail(?:_|$)|^mail$", re.IGNORECASE)

MIN_EXAMPLE = 3
"""Fewest characters of an example whose shape makes a value (``AB1``); a shorter one ("like
5") is a count, not an id."""

MIN_NUMBER_EXAMPLE = 4
"""Fewest digits of a number argument's example whose shape makes a value (a ticket number
``481516``, not a ``limit`` of ``10``)."""


def required_numbers(schema: Mapping[str, Any]) -> list[str]:
    """The required top-level arguments of an object ``schema`` that take a number: typed
    ``integer`` or ``number`` (alone or among the types of an ``anyOf``/``oneOf``, not beside
    ``string``) with no ``default``.

    Returns:
        Their names, in the schema's ``required`` order.
    """
    properties = schema.get("properties") or {}
    out: list[str] = []
    for name in schema.get("required") or ():
        item = properties.get(name)
        if not isinstance(item, dict) or "default" in item:
            continue
        options = [option for option in item.get("anyOf") or item.get("oneOf") or [item] if isinstance(option, dict)]
        types = {kind for option in options for kind in (
            option.get("type") if isinstance(option.get("type"), list) else [option.get("type")])}
        if types and types <= {"integer", "number", "null"} and types - {"null"}:
            out.append(name)
    return out


def argument_values(tool_name: str, schema: Mapping[str, Any]) -> list[ArgumentValues]:
    """What each argument of a tool takes (:class:`ArgumentValues`).

    Args:
        tool_name: The tool's name.
        schema: Its argument JSON schema (``{"type": "object", "properties": …}``).

    Returns:
        One :class:`ArgumentValues` per leaf argument (nested objects give dotted names,
        arrays their items' schema), in schema order.
    """
    defs = {**(schema.get("$defs") or {}), **(schema.get("definitions") or {})}
    out: list[ArgumentValues] = []
    for path, leaf in _leaves(dict(schema), "", defs):
        kind = leaf.get("type") if isinstance(leaf.get("type"), str) else ""
        enum = tuple(value for value in leaf.get("enum") or () if isinstance(value, str))
        examples = [str(value) for value in [*(leaf.get("examples") or []), leaf.get("example")]
                    if isinstance(value, (str, int)) and not isinstance(value, bool)]
        examples += description_examples(str(leaf.get("description") or ""))
        fmt = str(leaf.get("format") or "")
        if not fmt and kind in ("string", "") and _EMAIL_NAME.search(path.rsplit(".", 1)[-1]):
            fmt = "email"  # an argument named for an e-mail address takes one
        shapes: set[str] = set()
        for example in examples:
            if EMAIL.fullmatch(example):
                fmt = fmt or "email"
            elif UUID.fullmatch(example):
                fmt = fmt or "uuid"
            elif find_dates(example) and find_dates(example)[0][:2] == (0, len(example)):
                fmt = fmt or "date"
            elif (shape := shape_of(example)) is not None and len(shape) >= (
                    MIN_NUMBER_EXAMPLE if kind in ("integer", "number") else MIN_EXAMPLE):
                shapes.add(shape)
        shapes.update(shape for value in enum if (shape := shape_of(value)) is not None)
        default = leaf.get("default") if isinstance(leaf.get("default"), str) else None
        out.append(ArgumentValues(tool_name, path, kind, fmt, enum, _compiled(leaf.get("pattern")), frozenset(shapes),
                                  default))
    return out


_QUOTED = re.compile(
    r"(?<![\w])(?:\"([^\"\n]{1,80})\"|\u201c([^\u201d\n]{1,80})\u201d|\u201e([^\u201c\u201d\n]{1,80})[\u201c\u201d]"
    r"|\u00ab\s?([^\u00bb\n]{1,80}?)\s?\u00bb|\u300c([^\u300d\n]{1,80})\u300d|\u300e([^\u300f\n]{1,80})\u300f"
    r"|\u2018([^\u2019\n]{1,80})\u2019)"
)


class ValueReader:
    """Finds the values a text names for a set of tools (module docstring).

    Args:
        schemas: Tool name → argument JSON schema, in registration order.
        stem: Reduces a lower-cased Latin word to its stem, so an enum value is named by
            any form of its words ("failed" names ``fail``; the ranking passes
            :func:`reactgraph.tools.ranking.stem`); ``None`` compares words as written (folded).

    Example::

        reader = ValueReader({"get_product": {"type": "object", "properties": {"sku": {
            "type": "string", "description": "The SKU, like AB/123"}}}})
        [found.value for found in reader.find("Is ab/100 in stock?")]   # ["AB/100"]
    """

    def __init__(self, schemas: Mapping[str, Mapping[str, Any]], stem: Callable[[str], str] | None = None) -> None:
        self._stem = stem
        self.arguments: dict[str, list[ArgumentValues]] = {name: argument_values(name, schema)
                                                           for name, schema in schemas.items()}
        every = [argument for arguments in self.arguments.values() for argument in arguments]
        self._enums = list(dict.fromkeys(value for argument in every for value in argument.enum))
        self._enum_words = {value: [self._stemmed(word) for word, _, _ in _words(value)] for value in self._enums}
        self._enum_groups = [argument.enum for argument in every if len(argument.enum) >= 2]
        self._shapes = {shape: [argument for argument in every if shape in argument.shapes]
                        for argument in every for shape in argument.shapes}
        self._patterns = [argument for argument in every if argument.pattern is not None]
        self._formats = {argument.format for argument in every}
        self._free = any(argument.free for argument in every)
        self._identifier_arguments = [argument for argument in every if argument.identifier]
        self._required_numbers = {name: required_numbers(schema) for name, schema in schemas.items()}
        self._cache: dict[str, list[Found]] = {}

    def find(self, text: str) -> list[Found]:
        """Every value of ``text`` that some tool takes, each one whole :class:`Found` (the
        longest reading wins where two overlap), in text order; cached per text."""
        if text in self._cache:
            return self._cache[text]
        candidates: list[Found] = [*self._enum_values(text)]
        if self._formats & {"date", "date-time"}:
            candidates += [Found(text[start:end], iso, "date", start) for start, end, iso in find_dates(text)]
        if "email" in self._formats:
            candidates += [Found(m.group(0), m.group(0), "email", m.start()) for m in EMAIL.finditer(text)]
        if "uuid" in self._formats:
            candidates += [Found(m.group(0), m.group(0).lower(), "uuid", m.start()) for m in UUID.finditer(text)]
        if self._formats & {"uri", "url"}:
            candidates += [Found(m.group(0), m.group(0).rstrip(".,;"), "uri", m.start()) for m in URI.finditer(text)]
        for argument in self._patterns:
            assert argument.pattern is not None
            candidates += [Found(m.group(0), m.group(0), "pattern", m.start()) for m in argument.pattern.finditer(text)
                           if m.group(0)]
        for shape, arguments in self._shapes.items():
            spelled = [value for argument in arguments for value in argument.enum if shape_of(value) == shape]
            upper = bool(spelled) and all(value == value.upper() for value in spelled)
            lower = bool(spelled) and all(value == value.lower() for value in spelled)
            kind = "enum" if spelled else "example"
            for m in re.finditer(rf"(?<![A-Za-z0-9]){_shape_pattern(shape)}(?![A-Za-z0-9])", text, re.IGNORECASE):
                written = m.group(0)
                value = written.upper() if upper or not spelled else written.lower() if lower else written
                candidates.append(Found(written, value, kind if value in spelled else "example" if not spelled else "id",
                                        m.start()))
        if self._free:
            for m in _QUOTED.finditer(text):
                inner = next(group for group in m.groups() if group is not None).strip()
                if inner:
                    candidates.append(Found(m.group(0), inner, "quoted", m.start()))
        chosen: list[Found] = []
        taken: list[tuple[int, int, str]] = []
        for found in sorted(candidates, key=lambda item: (-len(item.text), item.start)):
            end = found.start + len(found.text)
            if any(start < end and found.start < stop and not (kind == found.kind == "enum")
                   for start, stop, kind in taken):
                continue
            if any(item.value == found.value for item in chosen):
                continue
            chosen.append(found)
            taken.append((found.start, end, found.kind))
        result = sorted(chosen, key=lambda item: item.start)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[text] = result
        return result

    def _enum_values(self, text: str) -> list[Found]:
        words = _words(text)
        stems = [self._stemmed(word) for word, _, _ in words]
        found: list[Found] = []
        for value, needle in self._enum_words.items():
            if not needle:
                continue
            for index in range(len(stems) - len(needle) + 1):
                if stems[index : index + len(needle)] == needle:
                    start, end = words[index][1], words[index + len(needle) - 1][2]
                    found.append(Found(text[start:end], value, "enum", start))
                    break
        # An enum whose values share their first words ("Line A", "Line B") is matched by its
        # last words after a word in another script ("ライン B"): a transliterated shared part.
        for group in self._enum_groups:
            split = [self._enum_words[value] for value in group]
            shared = 0
            while all(len(words_) > shared + 1 for words_ in split) and len({tuple(w[: shared + 1]) for w in split}) == 1:
                shared += 1
            if not shared:
                continue
            tails = [tuple(words_[shared:]) for words_ in split]
            for value, tail in zip(group, tails, strict=True):
                if tails.count(tail) != 1:
                    continue
                for index in range(1, len(stems) - len(tail) + 1):
                    if tuple(stems[index : index + len(tail)]) == tail and not _latin(words[index - 1][0]) \
                            and words[index][1] - words[index - 1][2] <= 1:
                        start, end = words[index - 1][1], words[index + len(tail) - 1][2]
                        found.append(Found(text[start:end], value, "enum", start))
                        break
        # A value written in another alphabet than its enum's ("Окафор" for ``Okafor``, "Σάντος"
        # for ``Santos``) is matched by its transliteration, word for word; nothing else is.
        spelled = [self._stemmed(fold(anyascii(word))) if not _latin(word) else stem
                   for (word, _, _), stem in zip(words, stems, strict=True)]
        if spelled != stems:
            named = {item.value for item in found}
            for value, needle in self._enum_words.items():
                if not needle or value in named:
                    continue
                for index in range(len(spelled) - len(needle) + 1):
                    if spelled[index : index + len(needle)] == needle and stems[index : index + len(needle)] != needle:
                        start, end = words[index][1], words[index + len(needle) - 1][2]
                        found.append(Found(text[start:end], value, "enum", start))
                        break
        return found

    def _stemmed(self, word: str) -> str:
        return self._stem(word) if self._stem is not None and word.isascii() and word.isalpha() else word

    def named(self, text: str) -> list[str]:
        """The normal forms of :meth:`find`, in text order."""
        return [found.value for found in self.find(text)]

    def takes(self, tool_name: str, value: str) -> bool:
        """Whether some argument of ``tool_name`` takes ``value``."""
        return any(argument.fits(value) for argument in self.arguments.get(tool_name, ()))

    def takes_numbers(self, tool_name: str) -> bool:
        """Whether some argument of ``tool_name`` is typed ``integer`` or ``number`` (so a
        number the question names may be its value)."""
        return any(argument.kind in ("integer", "number") for argument in self.arguments.get(tool_name, ()))

    def needs_number(self, tool_name: str) -> bool:
        """Whether ``tool_name`` cannot be called without a number: one of its required
        arguments is typed ``integer`` or ``number`` and has no default (:func:`required_numbers`)."""
        return bool(self._required_numbers.get(tool_name))

    def identifier_arguments(self, tool_name: str) -> list[ArgumentValues]:
        """The arguments of ``tool_name`` whose values name one record
        (:attr:`ArgumentValues.identifier`)."""
        return [argument for argument in self.arguments.get(tool_name, ()) if argument.identifier]

    def written(self, text: str) -> set[str]:
        """Every normal form ``text`` writes a value in — :meth:`find`'s values and the
        generic tokens' readings (:func:`value_tokens`), folded (:func:`fold`) — for
        telling whether someone wrote a value a call passes (:func:`written_in`)."""
        out = {fold(found.value) for found in self.find(text)}
        out.update(fold(reading) for token in value_tokens(text) for reading in token.readings)
        return out


def argument_leaves(args: Any, path: str = "") -> Iterable[tuple[str, Any]]:
    """The leaf values of a call's arguments with their dotted paths (list items under
    their list's path), as :func:`argument_values` names the arguments."""
    if isinstance(args, dict):
        for name, value in args.items():
            yield from argument_leaves(value, f"{path}.{name}" if path else str(name))
    elif isinstance(args, (list, tuple)):
        for item in args:
            yield from argument_leaves(item, path)
    else:
        yield path, args


def written_in(value: Any, written: set[str], text: str = "") -> bool:
    """Whether a call's argument ``value`` was written: its folded form, or any of its
    readings when it is one whole value (:func:`whole_value`: a date as ISO, a number, a time
    with its clock's marker), is among ``written`` (:meth:`ValueReader.written`),
    or it is a substring of ``text`` (folded)."""
    candidate = fold(str(value)).strip()
    if not candidate:
        return True
    if candidate in written or (text and candidate in fold(text)):
        return True
    token = whole_value(str(value))
    if token is None:
        return False
    # a time is written as itself or by its hour ("9am" for 09:00), not by its minute alone
    readings = (token.value, str(int(token.value[:2]))) if token.kind == "time" else token.readings
    return any(fold(reading) in written for reading in readings)


