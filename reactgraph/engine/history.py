"""Facts read out of a thread's history, folded in as it grows (no O(history)
scan per loop iteration).

Before each model call the loop needs a few facts about the whole conversation, which
grows with every turn of a thread: the tool-call ids already used (a provider that numbers
its calls ``call_0`` every time gets fresh ones, SPEC §12) and the identifiers the user or a
tool wrote (a call may pass those, R13.1), and every value they wrote. The conversation only grows while a run goes
on, so a :class:`HistoryFold` keeps what it worked out for each list it was shown and,
shown the list again, folds in only the items added since. A list that is not a grown copy of the
last one (another thread, a compaction, an edit of the last item, a run resumed from a
checkpoint, which reads fresh objects) is folded again from its start, so a fold never
answers for a history it has not read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig

from reactgraph.protocol.actions import message_text

Acc = TypeVar("Acc")
Item = TypeVar("Item")

MAX_FOLDED_LISTS = 1024
"""Lists a :class:`HistoryFold` keeps its work for (the most recently shown): one per thread
that ran lately, as the context guard keeps its running totals."""


def thread_of(config: RunnableConfig | None) -> Any:
    """The run's thread id (``configurable.thread_id``), ``None`` when it has none."""
    return ((config or {}).get("configurable") or {}).get("thread_id")


class HistoryFold(Generic[Acc, Item]):
    """An accumulator over a list that only grows, brought up to date with the new items.

    Args:
        new: Makes an empty accumulator.
        add: Folds one item into an accumulator (in place).
        max_lists: Lists to keep accumulators for, least recently shown dropped first.

    A list is recognised by its first item and known length: shown a list whose first item
    is the same object as before and whose item at the known length's end is still the same
    object, the fold adds ``items[known:]``; any other list is folded from its start. Items
    are compared by identity (never by value), so two runs whose messages or records are
    equal (scripted models repeat their ids) never share an accumulator.
    """

    def __init__(self, new: Callable[[], Acc], add: Callable[[Acc, Item], None], *,
                 max_lists: int = MAX_FOLDED_LISTS) -> None:
        self._new = new
        self._add = add
        self._max = max_lists
        self._lists: dict[Hashable, tuple[Item, int, Item, Acc]] = {}

    def __call__(self, items: Sequence[Item], thread: Hashable = None) -> Acc:
        """The accumulator of ``items``, oldest first.

        Args:
            items: The list as it stands (the state's messages).
            thread: The run's thread id (``None`` for none): with the first item, it names
                the list among those kept.

        Returns:
            The accumulator with every item folded in. It stays the fold's: read it, do not
            change it.
        """
        if not items:
            return self._new()
        key = (thread, id(items[0]))
        kept = self._lists.pop(key, None)  # one run per thread: no two callers share a key
        start, acc = 0, None
        if kept is not None:
            first, known, last, folded = kept
            if first is items[0] and known <= len(items) and items[known - 1] is last:
                start, acc = known, folded
        if acc is None:
            acc = self._new()
        for item in items[start:]:
            self._add(acc, item)
        self._lists[key] = (items[0], len(items), items[-1], acc)
        while len(self._lists) > self._max:
            try:  # sync runs (invoke) fold on worker threads: another may drop the oldest first
                del self._lists[next(iter(self._lists))]
            except (KeyError, RuntimeError, StopIteration):
                break
        return acc


def add_call_ids(ids: set[str], message: BaseMessage) -> None:
    """:class:`HistoryFold` step: the tool-call ids an assistant message used."""
    if isinstance(message, AIMessage):
        ids.update(call["id"] for call in message.tool_calls if call.get("id"))


def written_values_fold(ids: Sequence[str], read: Callable[[str], set[str]] | None = None
                        ) -> HistoryFold[set[str], BaseMessage]:
    """A :class:`HistoryFold` of the values the user or a tool wrote: the text of every
    message but the model's own. It holds the identifiers among ``ids`` (an agent's enum
    values that are ids) that a text contains, as they are spelled, and what ``read`` finds
    in each text (:meth:`reactgraph.tools.values.ValueReader.written`: every value in normal form,
    folded), so a call's value can be checked against what someone wrote."""

    def add(found: set[str], message: BaseMessage) -> None:
        if not isinstance(message, AIMessage):
            text = message_text(message)
            found.update(value for value in ids if value in text)
            if read is not None:
                found.update(read(text))

    return HistoryFold(set, add)
