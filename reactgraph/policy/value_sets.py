"""Value sets: a question that lists several values for one argument of a tool gets one call
per value (SPEC R13.1).

"What's the weather in Boston and in San Francisco?" asks one tool twice: the tool takes one
city. "Calculate the present value for 10, 20 and 30 years" asks it three times. A small model
writes one call, for the first value, and the loop would count the question answered. This
module finds such lists and tells which of their values no call has passed yet, without
knowing the domain or the language, and without guessing values nobody passed:

1. *Anchors*: each value a successful call passed (a number, a text: the call's own arguments)
   is looked up in the question. A value written right before or after a list separator
   (``,`` ``、`` and the language table's :data:`~reactgraph.core.language.LIST_JOINERS`
   "and", "y", "und", and the Japanese and Chinese ones …; a Korean word joined by its ending,
   :data:`~reactgraph.core.language.LIST_SUFFIXES`) is an item of a list.
2. *The list* (:func:`value_lists`): from the anchor, the items on either side, separator by
   separator: an item is the text up to the next separator or punctuation mark, at most
   :data:`EXTRA_ITEM_WORDS` words longer than the anchor (a word repeated before the anchor,
   "in Boston and *in* San Francisco", is left out of the next item); a number anchor's items
   are numbers ("10, 20 and 30"). A list has exactly one joining word (or ending), after its
   last comma: "Paris, France" is no list.
3. *Passed* (:func:`item_passed`): an item is passed when some successful call of the same
   tool passed its number, or a text that it holds, that holds it, or that shares a word
   with it that the question writes nowhere else (outside the list or in another item):
   "San Francisco, CA" passes "San Francisco"; in Korean, a name passes the word that is
   that name and its ending.
4. *One call per value* (:func:`next_request`): while an item is not passed, the question is
   not covered, and the loop's next call offers that tool, a call required, with the
   question rewritten without the items passed ("What's the weather in San Francisco?"),
   so a model that writes the first value it reads writes one still missing.
5. *Sets of numbers in prose* (:func:`pending_numbers`): "In 10 shots, what is the chance of
   exactly 7? In 15 shots, of exactly 10?" lists no values, but a call that took two or more
   of the question's numbers (10 and 7) leaves as many further numbers (15 and 10) that no
   call took, after them: a further set. The next call is asked for the sentences that hold
   it, without the sets taken before ("the pairs () and (81, 27)").

A call that passes every item at once (a list argument: "compare A and B" to a tool that
takes an array, or two arguments that take one item each) leaves nothing to do: one call.
A question that names one value makes no list: one call.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reactgraph.core.language import LIST_JOINERS, LIST_SUFFIXES
from reactgraph.tools.values import argument_leaves, fold, normal_number, number_readings, value_tokens

EXTRA_ITEM_WORDS = 1
"""Words an item of a list may have beyond the anchor's ("Boston" and "San Francisco")."""

_CJK = r"\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3"
_SPACED = [word for word in LIST_JOINERS if not re.search(f"[{_CJK}]", word)]
_UNSPACED = [word for word in LIST_JOINERS if word not in _SPACED]


def _alternatives(words: Iterable[str]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))


_SEPARATOR = re.compile(
    rf"\s*[,、，]\s*(?:(?P<comma_joiner>{_alternatives(_SPACED)})\s+)?"
    rf"|\s+(?P<joiner>{_alternatives(_SPACED)})\s+"
    rf"|\s*(?P<cjk_joiner>{_alternatives(_UNSPACED)})\s*"
    rf"|(?<=[\uac00-\ud7a3]{{2}})(?P<suffix>{_alternatives(LIST_SUFFIXES)})[,、，]?\s+",
    re.IGNORECASE,
)
_STOP = re.compile(r"[?!;:。？！；：\n()\[\]{}\"“”«»「」『』]|\.(?=\s|$)")
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])")
_NUMBER_AT_END = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*$")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class ListItem:
    """One item of a list the question names.

    Attributes:
        start: Where its text starts in the question.
        end: Where it ends.
        text: The text (a number, or a few words).
        readings: A number item's readings (:func:`~reactgraph.tools.values.number_readings`),
            ``()`` for a text item.
    """

    start: int
    end: int
    text: str
    readings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ValueList:
    """A list of values the question names for one tool's argument (module docstring).

    Attributes:
        tool: The tool whose call passed one of its items.
        items: The items, in the question's order.
        distinct: The folded words of each item that the question writes nowhere else (not
            outside the list, not in another item), one set per item.
    """

    tool: str
    items: tuple[ListItem, ...]
    distinct: tuple[frozenset[str], ...]

    @property
    def start(self) -> int:
        """Where the list starts in the question."""
        return self.items[0].start

    @property
    def end(self) -> int:
        """Where the list ends in the question."""
        return self.items[-1].end


def _joins(match: re.Match[str]) -> bool:
    return any(match.group(name) for name in ("comma_joiner", "joiner", "cjk_joiner", "suffix"))


def _separator_at(text: str, pos: int) -> re.Match[str] | None:
    match = _SEPARATOR.match(text, pos)
    return match if match and match.end() > pos else None


def _separator_before(text: str, pos: int) -> re.Match[str] | None:
    best = None
    for match in _SEPARATOR.finditer(text, max(0, pos - 40), pos):
        if match.end() == pos and match.end() > match.start():
            best = best if best is not None and best.start() <= match.start() else match
    return best


def _item_after(text: str, pos: int, number: bool, cap: int, repeated: str) -> tuple[ListItem, bool] | None:
    """The item that starts at ``pos`` (after a separator), and whether it was cut at ``cap``
    words (so the list ends with it); ``None`` when no item of the list's kind starts there."""
    if number:
        match = _NUMBER.match(text, pos)
        if not match:
            return None
        return ListItem(pos, match.end(), match.group(0), tuple(number_readings(match.group(0)))), False
    if repeated:  # "in Boston and in San Francisco": the word before the anchor is not the item's
        match = re.match(rf"{re.escape(repeated)}\s+", text[pos:], re.IGNORECASE)
        pos += match.end() if match else 0
    stop = len(text)
    for pattern in (_SEPARATOR, _STOP):
        found = next((m for m in pattern.finditer(text, pos) if m.end() > m.start()), None)
        stop = min(stop, found.start()) if found else stop
    words = list(re.finditer(r"\S+", text[pos:stop]))
    if not words or _NUMBER.fullmatch(words[0].group(0)):
        return None
    cut = len(words) > cap
    end = pos + words[min(len(words), cap) - 1].end()
    return ListItem(pos, end, text[pos:end]), cut


def _item_before(text: str, pos: int, number: bool, cap: int) -> tuple[ListItem, bool] | None:
    """The item that ends at ``pos`` (before a separator), and whether it was cut at ``cap``
    words; ``None`` when no item of the list's kind ends there."""
    if number:
        match = _NUMBER_AT_END.search(text[:pos])
        if not match:
            return None
        return ListItem(match.start(), pos, match.group(0), tuple(number_readings(match.group(0)))), False
    start = 0
    for pattern in (_SEPARATOR, _STOP):
        for match in pattern.finditer(text, 0, pos):
            if match.end() > match.start() and match.end() <= pos:
                start = max(start, match.end())
    words = list(re.finditer(r"\S+", text[start:pos]))
    if not words or _NUMBER.fullmatch(words[-1].group(0)):
        return None
    cut = len(words) > cap
    begin = start + words[max(0, len(words) - cap)].start()
    return ListItem(begin, pos, text[begin:pos]), cut


def _named_alike(anchor: ListItem, item: ListItem) -> bool:
    """Whether a text longer than an item may be is still cut to one: both it and the anchor
    start with a capital letter, as names do ("Persian Empire and Mauryan Empire with their
    history"), or with a letter of a script without capitals (Korean, Japanese, Chinese), and
    its first word is not a single letter ("Austin and I need a house"); a longer text that
    does not ("Paris and would like to find a hotel") is a request of its own."""
    def named(text: str) -> bool:  # a capital letter, or a letter of a script without capitals
        first = text[:1]
        return first.isupper() or (first.isalpha() and first.lower() == first.upper())

    words = item.text.split()
    return named(anchor.text) and named(item.text) and len(words[0].strip(",.;:'\"")) >= 2


def _written_alike(anchor: ListItem, item: ListItem) -> bool:
    """Whether ``item`` is written as ``anchor`` is: their first words start with a capital
    letter in the same places ("Mountain View and has outdoor seating" is no list; "Boston
    and San Francisco", "navy, purple and maroon" are). Words of a script without capitals
    agree with any."""
    def capitals(text: str) -> list[bool | None]:
        return [word[0].isupper() if word[0].lower() != word[0].upper() else None for word in text.split()]

    return all(a is None or b is None or a == b for a, b in zip(capitals(anchor.text), capitals(item.text)))


def _trailing_name(text: str, item: ListItem) -> ListItem | None:
    """The words ``item`` ends with that start with a capital letter ("the ancient empires
    *Persian Empire*"), ``None`` when its last word does not."""
    words = list(re.finditer(r"\S+", item.text))
    first = len(words)
    while first and words[first - 1].group(0)[:1].isupper():
        first -= 1
    if first == len(words):
        return None
    start = item.start + words[first].start()
    return ListItem(start, item.end, text[start:item.end])


def _chain(text: str, anchor: ListItem, cap: int) -> list[ListItem] | None:
    """The list around ``anchor`` (step 2 of the module docstring), ``None`` when it is in none."""
    number = bool(anchor.readings)
    before = text[: anchor.start].split()
    repeated = before[-1] if before and not number else ""
    right: list[ListItem] = []
    joined = comma_joined = False
    pos = anchor.end
    while not joined and (separator := _separator_at(text, pos)) is not None:
        found = _item_after(text, separator.end(), number, cap, repeated)
        if found is None:
            break
        item, cut = found
        if (cut and not _named_alike(anchor, item)) or not _written_alike(anchor, item):
            break
        right.append(item)
        joined = _joins(separator)
        comma_joined = comma_joined or bool(separator.group("comma_joiner"))
        if cut:
            break
        pos = item.end
    left: list[ListItem] = []
    pos = anchor.start
    if not number and repeated and _separator_before(text, pos) is None:
        # "in Boston and in San Francisco" read from its last item: the word repeated before
        # each item stands between the separator and the anchor
        word = re.search(rf"(?<!\S){re.escape(repeated)}\s+$", text[:pos])
        separator = _separator_before(text, word.start()) if word else None
        before = re.search(rf"(?<!\S){re.escape(repeated)}\s+(?=\S+(?:\s+\S+){{0,{cap - 1}}}$)",
                           text[: separator.start()]) if separator and word else None
        item = ListItem(before.end(), separator.start(), text[before.end():separator.start()]) if (
            separator is not None and before is not None) else None
        if separator is not None and item is not None and _written_alike(anchor, item):
            left.append(item)
            joined = joined or _joins(separator)
            comma_joined = comma_joined or bool(separator.group("comma_joiner"))
            pos = item.start
    while (separator := _separator_before(text, pos)) is not None:
        if _joins(separator) and (joined or right):  # one joining word, after the last comma
            break
        found = _item_before(text, separator.start(), number, cap)
        if found is None:
            break
        item, cut = found
        if cut:  # cut on its left: the capitalized words it ends with, when the anchor is a name
            item = _trailing_name(text, item) if anchor.text[:1].isupper() else None
            if item is None:
                break
        if not number and not _written_alike(anchor, item):
            break
        left.insert(0, item)
        joined = joined or _joins(separator)
        comma_joined = comma_joined or bool(separator.group("comma_joiner"))
        if cut:
            break
        pos = item.start
    items = [*left, anchor, *right]
    if not joined or (comma_joined and len(items) < 3):  # "Paris, and I'd like …": two requests
        return None
    digits = any(char.isdigit() for char in anchor.text)
    if any(any(char.isdigit() for char in item.text) != digits for item in items):
        return None  # "May 3rd 2022 and another flight": a date and words are no list
    return items


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(fold(text)) if len(word) >= 2 and not word.isdigit()}


def _leaf_strings(args: Any) -> list[Any]:
    return [value for _, value in argument_leaves(args) if value is not None and not isinstance(value, bool)]


def _single_values(args: Any) -> list[Any]:
    """The values of ``args`` that are an argument's one value (not an item of a list
    argument: a call that passes a list passes its items at once)."""
    if isinstance(args, dict):
        return [leaf for value in args.values() if not isinstance(value, (list, tuple)) for leaf in _single_values(value)]
    return [args] if args is not None and not isinstance(args, bool) else []


def _number_of(value: Any) -> set[str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = repr(value) if isinstance(value, float) else str(value)
        return {normal_number(text.lstrip("-"))} if "e" not in text.lower() else set()
    if isinstance(value, str) and re.fullmatch(r"\s*\d+(?:[.,]\d+)*\s*", value):
        return set(number_readings(value.strip()))
    return set()


def _anchors(text: str, value: Any) -> list[ListItem]:
    """Where a value a call passed is written in the question, as items."""
    numbers = _number_of(value)
    if numbers:
        return [ListItem(match.start(), match.end(), match.group(0), tuple(readings))
                for match in _NUMBER.finditer(text)
                if numbers & set(readings := number_readings(match.group(0)))]
    if not isinstance(value, str):
        return []
    out: list[ListItem] = []
    for candidate in dict.fromkeys([value.strip(), value.split(",")[0].strip()]):
        if len(candidate) < 2 or candidate.lower() in (word.lower() for word in LIST_JOINERS):
            continue
        left = r"(?<!\w)" if re.match(r"[A-Za-z0-9\u00c0-\u024f\u0400-\u04ff]", candidate) else ""
        right = r"(?!\w)" if re.search(r"[A-Za-z0-9\u00c0-\u024f\u0400-\u04ff]$", candidate) else ""
        for match in re.finditer(left + re.escape(candidate) + right, text, re.IGNORECASE):
            out.append(ListItem(match.start(), match.end(), match.group(0)))
    return out


def value_lists(question: str, calls: Sequence[tuple[str, Any]]) -> list[ValueList]:
    """The lists of values ``question`` names that some call passed an item of (steps 1–2
    of the module docstring).

    Args:
        question: The user's question, in any language.
        calls: The turn's successful calls as ``(tool name, arguments)``.

    Returns:
        Each list once, in the question's order, with the tool of the first call that passed
        one of its items; ``[]`` when no value a call passed is an item of a list.
    """
    lists: dict[tuple[int, int], ValueList | None] = {}  # None: the items of one call's arguments
    for tool, args in calls:
        for value in _single_values(args):
            for anchor in _anchors(question, value):
                cap = len(anchor.text.split()) + EXTRA_ITEM_WORDS
                items = _chain(question, anchor, cap)
                if items is None:
                    continue
                key = (items[0].start, items[-1].end)
                if key in lists or any(start < key[1] and key[0] < end for start, end in lists):
                    continue
                outside = _words(question[: key[0]] + " " + question[key[1]:])
                words = [_words(item.text) for item in items]
                distinct = tuple(frozenset(own - outside - {word for other in words if other is not own for word in other})
                                 for own in words)
                found = ValueList(tool, tuple(items), distinct)
                passed = [index for index in range(len(items)) if item_passed(found, index, args)]
                lists[key] = found if len(passed) == 1 else None
    return [found for _, found in sorted(lists.items(), key=lambda pair: pair[0]) if found is not None]


def item_passed(value_list: ValueList, index: int, args: Any) -> bool:
    """Whether a call's ``args`` pass item ``index`` of ``value_list`` (step 3 of the module
    docstring): its number, or a text that holds the item, that the item holds, or that shares
    a word with it that the question writes nowhere else (a word of a script
    written without spaces may be the start of the item's word: a Korean name with its ending)."""
    item = value_list.items[index]
    distinct = value_list.distinct[index]
    for value in _leaf_strings(args):
        if item.readings:
            if _number_of(value) & set(item.readings):
                return True
            continue
        if not isinstance(value, str) or len(value.strip()) < 2:
            continue
        written, passed = fold(item.text).strip(), fold(value).strip()
        if passed in written or written in passed:
            return True
        for word in _words(passed):
            if word in distinct or (not word.isascii() and any(other.startswith(word) for other in distinct)):
                return True
    return False


def pending_items(question: str, calls: Sequence[tuple[str, Any]]) -> list[tuple[ValueList, list[int]]]:
    """The lists of ``question`` with items no call of their tool passed (step 3), each with
    the indexes of those items; ``[]`` when every list is passed whole (or there is none).

    Args:
        question: The user's question.
        calls: The turn's successful calls as ``(tool name, arguments)``, in order.
    """
    out: list[tuple[ValueList, list[int]]] = []
    for value_list in value_lists(question, calls):
        own = [args for tool, args in calls if tool == value_list.tool]
        left = [index for index in range(len(value_list.items))
                if not any(item_passed(value_list, index, args) for args in own)]
        if left:
            out.append((value_list, left))
    return out


_SENTENCE_END = re.compile(r"(?<=[.?!。？！;；])\s+|(?<=[。？！])")


def _question_numbers(question: str) -> list[ListItem]:
    """The numbers ``question`` writes (:func:`~reactgraph.tools.values.value_tokens`: not
    those of an id or a date), each with its readings; a percentage also as a fraction
    ("5%" is ``5`` or ``0.05``)."""
    out = []
    for token in value_tokens(question):
        if token.kind != "number":
            continue
        readings = list(token.readings)
        if question[token.end:token.end + 1] == "%":
            readings += [normal_number(f"{float(reading) / 100:.10f}") for reading in token.readings]
        out.append(ListItem(token.start, token.end, question[token.start:token.end], tuple(readings)))
    return out


def pending_numbers(question: str, calls: Sequence[tuple[str, Any]]
                    ) -> tuple[str, list[ListItem], list[tuple[int, int]]] | None:
    """A question that writes a further set of numbers for a tool that took a set of them
    (step 5 of the module docstring): ``(tool name, the numbers of the next set, the spans
    of the sets its calls took)``, else ``None``.

    Each call's numbers (a list argument's too) are matched to the question's, each to an
    occurrence no earlier call took, the one nearest to the call's other numbers (a value
    every set shares, "a 60% chance", is taken once), and the numbers written inside a text it
    passed ("3x**2") too. A call that took two or more in one sentence took a set of that
    many (the most it took in one sentence: another may hold a value every set shares) and
    spans the text from its first number to its last. The numbers no call took, after the
    start of the tool's first span and outside every span of its calls, are a further set
    when there are at least as many of them as the fewest a call of the tool took in a set;
    the set is the first that many. Numbers before the
    first set (a version, an address) are the question's context, not a set."""
    numbers = _question_numbers(question)
    boundaries = [match.end() for match in _SENTENCE_END.finditer(question)]
    taken: set[int] = set()
    spans: dict[str, list[tuple[int, int]]] = {}
    fewest: dict[str, int] = {}
    for tool, args in calls:
        used: list[int] = []  # the occurrences this call took first
        values = [readings for value in _leaf_strings(args) if (readings := _number_of(value))]
        # a value written once first, then one written more than once where nearest to those
        matches = [[index for index, number in enumerate(numbers) if readings & set(number.readings)]
                   for readings in values]
        for matching in sorted(matches, key=lambda found: len([i for i in found if i not in taken])):
            fresh = [index for index in matching if index not in taken]
            if fresh:
                chosen = min(fresh, key=lambda index: min((abs(numbers[index].start - numbers[other].start)
                                                          for other in used), default=0))
                taken.add(chosen)
                used.append(chosen)
        for value in _leaf_strings(args):  # numbers written inside a text it passed ("3x**2")
            if isinstance(value, str) and not _number_of(value):
                for token in value_tokens(value):
                    fresh = [index for index, number in enumerate(numbers)
                             if index not in taken and set(token.readings) & set(number.readings)]
                    taken.update(fresh[:1])
        # the set is where the call's numbers are densest: one sentence may hold a value every
        # set shares ("a 60% chance"), another the set's own numbers
        per_sentence = Counter(bisect_right(boundaries, numbers[index].start) for index in used)
        size = max(per_sentence.values(), default=0)
        if size >= 2:
            spans.setdefault(tool, []).append((numbers[min(used)].start, numbers[max(used)].end))
            fewest[tool] = min(fewest.get(tool, size), size)
    for tool, tool_spans in spans.items():
        first = min(start for start, _ in tool_spans)
        left = [number for index, number in enumerate(numbers) if index not in taken and number.start >= first
                and not any(start <= number.start < end for start, end in tool_spans)]
        if len(left) >= fewest[tool]:
            return tool, left[: fewest[tool]], tool_spans
    return None


def _sentences_holding(question: str, items: Sequence[ListItem], taken: Sequence[tuple[int, int]]) -> str:
    """The sentences of ``question`` from the one holding the first of ``items`` to the one
    holding the last, without the sets ``taken`` (spans) they hold: "(45, 60) and (81, 27)"
    asks for "() and (81, 27)" once the first pair was passed."""
    starts = [0, *(match.end() for match in _SENTENCE_END.finditer(question))]
    begin = max(start for start in starts if start <= items[0].start)
    ends = [match.start() for match in _SENTENCE_END.finditer(question) if match.start() >= items[-1].end]
    end = ends[0] if ends else len(question)
    text, last = "", begin
    for start, stop in sorted(span for span in taken if begin <= span[0] and span[1] <= end):
        text += question[last:max(last, start)]
        last = max(last, stop)
    return (text + question[last:end]).strip()


def next_request(question: str, calls: Sequence[tuple[str, Any]]) -> tuple[str, str] | None:
    """The next call a question of several value sets needs (steps 4 and 5 of the module
    docstring): ``(tool name, the question without the items its calls passed)`` for the
    first list with an item no call passed, else ``(tool name, the sentences that hold the
    next set of numbers)`` (:func:`pending_numbers`); ``None`` when every item of every list
    and every set of numbers was passed.

    A passed item goes with the separator after it ("~~Boston and in~~ San Francisco": the word
    repeated before the next item too); a passed last item with the separator before it and
    the value the call passed ("Lisbon, Oslo ~~and Rome~~ weather?"), so the text around the list
    stays whole and the first item left is the first value the model reads."""
    pending = pending_items(question, calls)
    if not pending:
        numbers = pending_numbers(question, calls)
        return None if numbers is None else (numbers[0], _sentences_holding(question, numbers[1], numbers[2]))
    value_list, left = pending[0]
    own = [args for tool, args in calls if tool == value_list.tool]
    cuts: list[tuple[int, int]] = []
    items = value_list.items
    for index, item in enumerate(items):
        if index in left:
            continue
        if index + 1 < len(items):
            cuts.append((item.start, items[index + 1].start))
            continue
        end = item.end
        for args in own:
            for value in _leaf_strings(args):
                if isinstance(value, str) and value.strip() and fold(item.text).startswith(fold(value.strip())):
                    end = min(end, item.start + len(value.strip()))
        cuts.append((items[index - 1].end, end))
    text, last = "", 0
    for start, end in sorted(cuts):
        text += question[last:max(last, start)]
        last = max(last, end)
    return value_list.tool, text + question[last:]
