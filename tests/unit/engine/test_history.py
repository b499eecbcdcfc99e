"""The loop reads the history incrementally (no O(history) scan per iteration):
:class:`reactgraph.engine.history.HistoryFold` folds in only what a list gained since it was last
shown, and folds anew any list that is not a grown copy of the last one."""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.engine.history import HistoryFold, add_call_ids
from reactgraph.testing import ScriptedChatModel, tool_call

MACHINES = [f"M-{n:03d}" for n in range(1, 31)]


@tool
def machine_status(machine_id: Literal[tuple(MACHINES)]) -> str:  # type: ignore[valid-type]
    """The status of one machine."""
    return f"{machine_id}: normal, see also M-030"


class Item:
    """A list item compared by identity only, as messages in a run's state are."""

    def __init__(self, value: int) -> None:
        self.value = value


def counting_fold() -> tuple[HistoryFold[list[int], Item], list[int]]:
    folded: list[int] = []

    def add(acc: list[int], item: Item) -> None:
        folded.append(item.value)
        acc.append(item.value)

    return HistoryFold(list, add), folded


def test_a_grown_list_folds_only_its_new_items():
    fold, folded = counting_fold()
    items = [Item(n) for n in range(3)]
    assert fold(items, "t") == [0, 1, 2]
    items += [Item(3), Item(4)]
    assert fold(items, "t") == [0, 1, 2, 3, 4]
    assert fold(items, "t") == [0, 1, 2, 3, 4]
    assert folded == [0, 1, 2, 3, 4]  # every item read once


def test_a_list_that_is_not_a_grown_copy_is_folded_again():
    fold, folded = counting_fold()
    items = [Item(n) for n in range(4)]
    fold(items, "t")
    edited = [*items[:3], Item(30)]  # the last item replaced (same length)
    assert fold(edited, "t") == [0, 1, 2, 30]
    forked = [*items[:2], Item(20)]  # a run resumed from an earlier checkpoint
    assert fold(forked, "t") == [0, 1, 20]
    reread = [Item(n) for n in range(3)]  # equal values, other objects (read from a checkpoint)
    assert fold(reread, "t") == [0, 1, 2]
    assert folded == [0, 1, 2, 3, 0, 1, 2, 30, 0, 1, 20, 0, 1, 2]
    assert fold([], "t") == []


def test_lists_of_equal_items_are_kept_apart():
    """Two runs (with or without a thread id) whose items are equal but not the same objects
    (scripted models repeat their call ids) each get their own accumulator."""
    fold = HistoryFold(set, add_call_ids)
    first = [HumanMessage("q", id="h"), AIMessage("", id="a", tool_calls=[tool_call("t", {}, "call_0")])]
    second = [HumanMessage("q", id="h"), AIMessage("", id="a", tool_calls=[tool_call("t", {}, "call_9")])]
    assert fold(first, None) == {"call_0"}
    assert fold(second, None) == {"call_9"}
    first.append(AIMessage("", id="b", tool_calls=[tool_call("t", {}, "call_1")]))
    assert fold(first, None) == {"call_0", "call_1"}


async def test_a_long_run_reads_each_message_once():
    """Twelve iterations of a model that numbers its calls ``call_0`` every time, asked about
    ids the question names: every message is folded in once for the ids used and the ids
    written — not once per iteration — and the loop still renames the reused call ids and
    marks the repeated call unchanged."""
    asks = [MACHINES[n] for n in range(11)] + [MACHINES[10]]
    responses = [AIMessage("", tool_calls=[tool_call("machine_status", {"machine_id": m}, "call_0")]) for m in asks]
    agent = ReActAgent(ScriptedChatModel(responses=[*responses, "done"]), [machine_status],
                       abilities=ModelAbilities(tool_call=True), settings=AgentSettings(refuse_unasked_ids=True))
    engine = agent.engine
    counts = {"call_ids": 0, "_written_ids": 0}
    for name in counts:
        fold = getattr(engine, name)
        add = fold._add

        def counted(acc, item, add=add, name=name):
            counts[name] += 1
            add(acc, item)

        fold._add = counted
    result = await agent.run(f"Check {', '.join(MACHINES[:11])}")
    messages = result.messages
    assert len(result.steps) == 12 and result.steps[-1].unchanged
    ids = [call["id"] for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]
    assert len(ids) == 12 and len(set(ids)) == 12  # call_0 renamed after its first use
    assert sum(isinstance(m, ToolMessage) for m in messages) == 12
    # one message folded per item
    assert counts["call_ids"] <= len(messages)
    assert 0 < counts["_written_ids"] <= len(messages)

