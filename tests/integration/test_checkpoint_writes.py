"""A task's writes ride along with the checkpoint that follows them (SPEC §10):
one commit per superstep on SQLite and Postgres, with nothing lost on the way — writes no
checkpoint follows are stored within ``WRITE_HOLD_SECONDS``, read back at once by the
process that made them, and stored when the persistence closes. ``open_persistence`` is
opened twice for two processes (each has its own connection and holds).
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from contextlib import asynccontextmanager

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import ERROR, empty_checkpoint
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from reactgraph import ModelAbilities, ReActAgent, open_persistence
from reactgraph.persistence import folding
from reactgraph.persistence.folding import WRITE_HOLD_SECONDS
from reactgraph.testing import ScriptedChatModel, tool_call

pytestmark = pytest.mark.integration


async def _checkpoint(saver, thread: str) -> dict:
    """Store an empty checkpoint on ``thread`` and return its config (writes go under it)."""
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    return await saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1}, {})


def _pending(saved) -> list[tuple[str, str, object]]:
    return sorted((task, channel, value) for task, channel, value in (saved.pending_writes if saved else []))


async def test_a_run_commits_each_iteration_once_with_its_checkpoints_and_writes(checkpoint_url, tools, monkeypatch):
    """Durability ``"sync"`` on these savers (``run_durability``): the checkpoint before a
    model step is held and committed with the one before the tool step that follows, with
    both steps' writes — one store per loop iteration, every one with checkpoints; the
    last checkpoint is committed before the run returns. (The hold is made long here so
    that a slow moment of the machine cannot store anything alone.)"""
    monkeypatch.setattr(folding, "WRITE_HOLD_SECONDS", 30.0)
    thread = f"fold-{uuid.uuid4().hex}"
    async with open_persistence(checkpoint_url) as persistence:
        saver = persistence.checkpointer
        stores: list[tuple[int, int]] = []
        store = saver._store

        async def counting(key, held, checkpoints):
            stores.append((sum(len(writes.rows) for writes in held), len(checkpoints)))
            await store(key, held, checkpoints)

        saver._store = counting
        llm = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-003"})]),
                                           AIMessage("", tool_calls=[tool_call("as_dict", {"x": 3})]),
                                           "CNC-003 is running."])
        agent = ReActAgent(llm, tools, abilities=ModelAbilities(tool_call=True), checkpointer=saver,
                           interrupt_queue=persistence.interrupt_queue)
        result = await agent.run("How is CNC-003?", thread_id=thread)
        assert result.finish_reason == "final_answer" and len(result.steps) == 2
        # The turn's input (the input checkpoint and the one start_turn runs from) before
        # start_turn runs, so no event goes out before the question is stored; up to the first
        # tool step (start_turn's and the model step's checkpoints); then one per tool step:
        # the checkpoint after it and the one after the next model step.
        assert [checkpoints for _rows, checkpoints in stores] == [2, 2, 2, 2], stores
        assert all(rows for rows, _ in stores), stores
        # What was stored reads back whole in another process.
        async with open_persistence(checkpoint_url) as other:
            reader = ReActAgent(ScriptedChatModel(), tools, abilities=ModelAbilities(tool_call=True),
                                checkpointer=other.checkpointer, interrupt_queue=other.interrupt_queue)
            values = (await reader.graph.aget_state({"configurable": {"thread_id": thread}})).values
            assert [step["tool_name"] for step in values["steps"]] == ["get_status", "as_dict"]
            assert values["answer"] == result.answer


async def test_no_tool_starts_before_another_process_reads_the_call_that_started_it(checkpoint_url, monkeypatch):
    """The promise of durability ``"sync"`` with checkpoints held (SPEC §10): when a
    tool starts, the checkpoint it resumes from — the model's tool calls — is committed, so a
    process that resumes after a crash runs the same calls, not a model's new answer."""
    monkeypatch.setattr(folding, "WRITE_HOLD_SECONDS", 30.0)
    thread = f"fold-{uuid.uuid4().hex}"
    seen: list[tuple[tuple[str, ...], list[str]]] = []
    async with open_persistence(checkpoint_url) as one, open_persistence(checkpoint_url) as two:
        reader = ReActAgent(ScriptedChatModel(), [], checkpointer=two.checkpointer, interrupt_queue=two.interrupt_queue)

        @tool
        async def inspect_line(line: str) -> str:
            """Inspect a production line."""
            snapshot = await reader.graph.aget_state({"configurable": {"thread_id": thread}})
            seen.append((snapshot.next, [call["id"] for call in getattr(snapshot.values["messages"][-1], "tool_calls", [])]))
            return f"line {line} inspected"

        calls = [tool_call("inspect_line", {"line": "A"}, "call-a"), tool_call("inspect_line", {"line": "B"}, "call-b")]
        llm = ScriptedChatModel(responses=[AIMessage("", tool_calls=calls[:1]), AIMessage("", tool_calls=calls[1:]), "Both fine."])
        agent = ReActAgent(llm, [inspect_line], abilities=ModelAbilities(tool_call=True), checkpointer=one.checkpointer,
                           interrupt_queue=one.interrupt_queue)
        result = await agent.run("Inspect lines A and B", thread_id=thread)
    assert result.finish_reason == "final_answer"
    assert seen == [(("execute_tools",), ["call-a"]), (("execute_tools",), ["call-b"])]


async def test_a_task_waiting_for_its_checkpoint_gets_it_committed_or_the_failure(checkpoint_url, monkeypatch):
    """``checkpoint_stored``: a held checkpoint is committed at once when asked for; one not
    handed to the saver yet is committed as soon as it comes; a failed commit raises to the
    waiting task and the checkpoint stays held for the next commit; a checkpoint another
    process stored is found in the database."""
    monkeypatch.setattr(folding, "WRITE_HOLD_SECONDS", 30.0)
    monkeypatch.setattr(folding, "STORED_POLL_SECONDS", 0.05)
    thread = f"fold-{uuid.uuid4().hex}"
    base = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    holding = {"configurable": {**base["configurable"], folding.TASKS_WAIT_FOR_CHECKPOINT: True}}
    async with open_persistence(checkpoint_url) as one, open_persistence(checkpoint_url) as two:
        saver = one.checkpointer
        first = empty_checkpoint()
        await saver.aput(holding, first, {"source": "loop", "step": 0}, {})
        assert await two.checkpointer.aget_tuple(base) is None  # held
        await saver.checkpoint_stored(base, first["id"])
        assert (await two.checkpointer.aget_tuple(base)).checkpoint["id"] == first["id"]

        second = empty_checkpoint()
        waiting = asyncio.ensure_future(saver.checkpoint_stored(base, second["id"]))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        await saver.aput(holding, second, {"source": "loop", "step": 1}, {})  # a task waits: committed now
        await asyncio.wait_for(waiting, 5)
        assert (await two.checkpointer.aget_tuple(base)).checkpoint["id"] == second["id"]

        third = empty_checkpoint()
        await saver.aput(holding, third, {"source": "loop", "step": 2}, {})
        store = saver._store

        async def failing(key, held, checkpoints):
            raise ConnectionError("database went away")

        saver._store = failing
        with pytest.raises(ConnectionError):
            await saver.checkpoint_stored(base, third["id"])
        saver._store = store
        await saver.commit_held(base)
        assert (await two.checkpointer.aget_tuple(base)).checkpoint["id"] == third["id"]

        fourth = empty_checkpoint()
        await two.checkpointer.aput(base, fourth, {"source": "loop", "step": 3}, {})  # another process
        await asyncio.wait_for(saver.checkpoint_stored(base, fourth["id"]), 5)


async def test_a_read_of_the_thread_waits_for_its_store_in_progress(checkpoint_url, monkeypatch):
    """Read-your-writes with a store in flight: what a store took is no longer held, so a
    read of the thread in the same process waits for that store to end rather than read the
    database before it (the server's thread view read a running thread as unknown)."""
    monkeypatch.setattr(folding, "WRITE_HOLD_SECONDS", 30.0)
    thread = f"fold-{uuid.uuid4().hex}"
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": "", folding.TASKS_WAIT_FOR_CHECKPOINT: True}}
    async with open_persistence(checkpoint_url) as one:
        saver = one.checkpointer
        checkpoint = empty_checkpoint()
        await saver.aput(config, checkpoint, {"source": "input", "step": -1}, {})  # held
        gate, taken = asyncio.Event(), asyncio.Event()
        store = saver._store

        async def slow(key, held, checkpoints):
            taken.set()
            await gate.wait()
            await store(key, held, checkpoints)

        saver._store = slow
        storing = asyncio.ensure_future(saver.checkpoint_stored(config, checkpoint["id"]))
        await asyncio.wait_for(taken.wait(), 5)  # the store has taken the checkpoint and waits at the gate
        reading = asyncio.ensure_future(saver.aget_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}))
        await asyncio.sleep(0.05)
        assert not reading.done()
        gate.set()
        saved = await asyncio.wait_for(reading, 5)
        await storing
        assert saved is not None and saved.checkpoint["id"] == checkpoint["id"]


async def test_a_stream_closed_early_frees_its_thread_with_what_it_saved_committed(checkpoint_url, tools, monkeypatch):
    """A consumer that stops reading a run's events (``aclose``, a ``break`` in ``aclosing``)
    ends the run; the thread is freed only once what the run handed the saver is committed,
    so another process reads the thread at once (the hold is 30 s here: only that wait can
    have committed it)."""
    monkeypatch.setattr(folding, "WRITE_HOLD_SECONDS", 30.0)
    thread = f"fold-{uuid.uuid4().hex}"
    llm = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("hangs", {"x": 1}, "call-hangs")]), "never"])
    async with open_persistence(checkpoint_url) as one, open_persistence(checkpoint_url) as two:
        agent = ReActAgent(llm, tools, abilities=ModelAbilities(tool_call=True), checkpointer=one.checkpointer,
                           interrupt_queue=one.interrupt_queue)
        events = agent.astream_events("Check machine 1", thread_id=thread)
        async for _event in events:
            break  # the run has started: its first checkpoints are handed to the saver
        await events.aclose()
        assert not await one.interrupt_queue.is_running(thread)
        saved = await two.checkpointer.aget_tuple({"configurable": {"thread_id": thread}})
        assert saved is not None and saved.checkpoint["channel_values"].get("query") == "Check machine 1"


async def test_writes_no_checkpoint_follows_are_stored_within_the_hold(checkpoint_url):
    thread = f"fold-{uuid.uuid4().hex}"
    async with open_persistence(checkpoint_url) as one, open_persistence(checkpoint_url) as two:
        config = await _checkpoint(one.checkpointer, thread)
        await one.checkpointer.aput_writes(config, [("steps", ["a finished tool"])], "task-1", "")
        # The process that wrote reads its writes back at once...
        assert _pending(await one.checkpointer.aget_tuple(config)) == [("task-1", "steps", ["a finished tool"])]
        await one.checkpointer.aput_writes(config, [("steps", ["another"])], "task-2", "")
        # ...and another process sees them once the hold is over, with no checkpoint after them.
        deadline = time.monotonic() + 5
        while True:
            seen = _pending(await two.checkpointer.aget_tuple(config))
            if len(seen) == 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(WRITE_HOLD_SECONDS)
        assert seen == [("task-1", "steps", ["a finished tool"]), ("task-2", "steps", ["another"])]


async def test_writes_still_held_are_stored_when_the_persistence_closes(checkpoint_url):
    thread = f"fold-{uuid.uuid4().hex}"
    async with open_persistence(checkpoint_url) as one:
        config = await _checkpoint(one.checkpointer, thread)
        await one.checkpointer.aput_writes(config, [("steps", ["made just before closing"])], "task-1", "")
    async with open_persistence(checkpoint_url) as two:
        assert _pending(await two.checkpointer.aget_tuple(config)) == [
            ("task-1", "steps", ["made just before closing"])]


async def test_held_writes_of_one_task_keep_the_stock_savers_rules(checkpoint_url):
    """A task's writes made twice before they are stored: a regular write keeps the first
    value, a special one (errors, interrupts) the last, as LangGraph's savers store them."""
    thread = f"fold-{uuid.uuid4().hex}"
    async with open_persistence(checkpoint_url) as one:
        saver = one.checkpointer
        config = await _checkpoint(saver, thread)
        await saver.aput_writes(config, [("steps", ["first"])], "task-1", "")
        await saver.aput_writes(config, [("steps", ["second"])], "task-1", "")
        await saver.aput_writes(config, [(ERROR, "first failure")], "task-2", "")
        await saver.aput_writes(config, [(ERROR, "last failure")], "task-2", "")
        async with open_persistence(checkpoint_url) as two:
            await saver.aget_tuple(config)  # stores them all, in one commit
            assert _pending(await two.checkpointer.aget_tuple(config)) == [
                ("task-1", "steps", ["first"]), ("task-2", ERROR, "last failure")]


async def test_a_tools_done_event_comes_once_another_process_reads_its_result(checkpoint_url, tools):
    """'s guarantee with writes held: each tool's ``done`` event comes once
    its result is committed — another process reads it then — and the wait reads no
    checkpoint back (the saver answers from memory)."""
    thread = f"fold-{uuid.uuid4().hex}"
    calls = [tool_call("get_status", {"equipment_id": f"CNC-00{n}"}, f"call-{n}") for n in (1, 2, 3)]
    llm = ScriptedChatModel(responses=[AIMessage("", tool_calls=calls), "All three run.", "All three run."])
    async with open_persistence(checkpoint_url) as one, open_persistence(checkpoint_url) as two:
        saver = one.checkpointer
        reads = 0
        read = saver.aget_tuple

        async def counting(config):
            nonlocal reads
            reads += 1
            return await read(config)

        saver.aget_tuple = counting
        agent = ReActAgent(llm, tools, abilities=ModelAbilities(tool_call=True), checkpointer=saver,
                           interrupt_queue=one.interrupt_queue)
        done: list[str] = []
        async for event in agent.astream_events("How are CNC-001..003?", thread_id=thread):
            if event.channel == "step" and event.data.get("type") == "iteration" and event.data.get("status") == "done":
                done.append(event.data["tool_call_id"])
                saved = await two.checkpointer.aget_tuple({"configurable": {"thread_id": thread}})
                records = list(saved.checkpoint["channel_values"].get("steps") or [])
                records += [r for _task, channel, value in saved.pending_writes or [] if channel == "steps" for r in value]
                assert event.data["tool_call_id"] in {r.get("tool_call_id") for r in records}
        assert sorted(done) == ["call-1", "call-2", "call-3"]
        assert reads == 1  # LangGraph's load at the start; the waits read nothing


async def test_a_cancelled_run_frees_its_thread_only_with_its_results_committed(checkpoint_url, tools, monkeypatch):
    """A run cancelled in the middle of a fan-out (a client that went away) hands LangGraph's
    last saves to the saver and ends; the agent waits until they are committed, so another
    process reads the finished tool's result as soon as the thread is free — here the hold
    is 30 s, so only that wait can have committed it."""
    monkeypatch.setattr(folding, "WRITE_HOLD_SECONDS", 30.0)
    thread = f"fold-{uuid.uuid4().hex}"
    calls = [tool_call("get_status", {"equipment_id": "CNC-001"}, "call-fast"), tool_call("hangs", {"x": 1}, "call-hangs")]
    llm = ScriptedChatModel(responses=[AIMessage("", tool_calls=calls), "never reached"])
    async with open_persistence(checkpoint_url) as one, open_persistence(checkpoint_url) as two:
        saver, handed = one.checkpointer, asyncio.Event()
        put_writes = saver.aput_writes

        async def watched(config, writes, task_id, task_path=""):
            await put_writes(config, writes, task_id, task_path)
            if any(channel == "messages" and any(getattr(m, "tool_call_id", None) == "call-fast" for m in value)
                   for channel, value in writes):
                handed.set()

        saver.aput_writes = watched
        agent = ReActAgent(llm, tools, abilities=ModelAbilities(tool_call=True), checkpointer=saver,
                           interrupt_queue=one.interrupt_queue)
        run = asyncio.ensure_future(agent.run("How is CNC-001?", thread_id=thread))
        await asyncio.wait_for(handed.wait(), 10)  # get_status's result is with the saver, hangs still sleeps
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert not await one.interrupt_queue.is_running(thread)
        saved = await two.checkpointer.aget_tuple({"configurable": {"thread_id": thread}})
        results = [m.tool_call_id for _task, channel, value in saved.pending_writes if channel == "messages"
                   for m in value if getattr(m, "tool_call_id", None)]
        assert results == ["call-fast"]


@asynccontextmanager
async def _stock_saver(url: str):
    """LangGraph's own saver on ``url`` (its long channel versions), tables set up."""
    if url.startswith("postgres"):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            yield saver
    else:
        async with AsyncSqliteSaver.from_conn_string(url) as saver:
            yield saver


async def test_a_thread_written_with_langgraphs_versions_goes_on_with_short_ones(checkpoint_url, tools):
    """these savers write channel versions of 19 characters, LangGraph's of about
    50 (every checkpoint lists a version per channel). A thread LangGraph's saver wrote goes
    on here — a second turn runs its tool and answers, the trace and the history read
    back — and the checkpoints written here carry only short versions, each greater than
    the long one it follows."""
    thread = f"versions-{uuid.uuid4().hex}"
    config = {"configurable": {"thread_id": thread}}
    script = [AIMessage("", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-001"}, "c1")]), "First.",
              AIMessage("", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-002"}, "c2")]), "Second."]
    llm = ScriptedChatModel(responses=script)
    async with _stock_saver(checkpoint_url) as stock:
        agent = ReActAgent(llm, tools, abilities=ModelAbilities(tool_call=True), checkpointer=stock)
        assert (await agent.run("How is CNC-001?", thread_id=thread)).answer == "First."
        long_versions = (await stock.aget_tuple(config)).checkpoint["channel_versions"]
    assert min(len(version) for version in long_versions.values()) > 45
    async with open_persistence(checkpoint_url) as persistence:
        saver = persistence.checkpointer
        agent = ReActAgent(llm, tools, abilities=ModelAbilities(tool_call=True), checkpointer=saver)
        second = await agent.run("And CNC-002?", thread_id=thread)
        assert second.answer == "Second." and [step.tool_args for step in second.steps] == [{"equipment_id": "CNC-002"}]
        versions = (await saver.aget_tuple(config)).checkpoint["channel_versions"]
        for channel, version in versions.items():
            if version != long_versions.get(channel):  # written by the second turn
                assert len(version) == 19 and version > long_versions.get(channel, ""), (channel, version)
        assert versions["messages"] != long_versions["messages"] and versions["steps"] != long_versions["steps"]
        snapshot = await agent.graph.aget_state(config)
        assert [m.type for m in snapshot.values["messages"]] == ["human", "ai", "tool", "ai"] * 2
        assert [step["tool_call_id"] for step in snapshot.values["steps"]] == ["c2"]
        answers = [state.values.get("answer") async for state in agent.graph.aget_state_history(config)]
        assert answers[0] == "Second." and "First." in answers


def _same(left, right) -> bool:
    """Equal, with the same types all the way down (NaN equal to NaN)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right))
    return left == right


async def test_every_channel_value_reads_back_as_stored(checkpoint_url):
    """the Postgres saver keeps values that ``jsonb`` stores exactly in the
    checkpoint itself (no blob row for the turn's ``usage`` at every model step) and the
    rest in blobs — NUL in a string and NaN included, which failed the whole store of
    LangGraph's saver, and floats ``jsonb`` would turn into ints."""
    values = {
        "usage": {"input_tokens": 12, "output_tokens": 3, "model_calls": 1},
        "pinned": ["a", "b"], "nested": {"a": [1, {"b": None, "c": 2.5}], "d": True}, "empty": {},
        "nul": "a\x00b", "nul_key": {"k\x00": 1}, "nan": float("nan"), "inf": float("-inf"),
        "big": 1e300, "small": 1e-7, "plain": 0.1, "count": 2**40,
        "deep": [[[[[[[[[["bottom"]]]]]]]]]], "text": "ünïcode ✓", "flag": False, "none": None,
    }
    thread = f"values-{uuid.uuid4().hex}"
    async with open_persistence(checkpoint_url) as persistence:
        saver = persistence.checkpointer
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = dict(values)
        checkpoint["channel_versions"] = {key: saver.get_next_version(None) for key in values}
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        await saver.aput(config, checkpoint, {"source": "input", "step": -1}, checkpoint["channel_versions"])
    async with open_persistence(checkpoint_url) as persistence:
        read = (await persistence.checkpointer.aget_tuple({"configurable": {"thread_id": thread}})).checkpoint
    assert {key for key in values if not _same(values[key], read["channel_values"].get(key))} == set()


async def test_a_question_and_an_answer_with_nul_in_them_are_stored(checkpoint_url):
    """A NUL character in what the user or the model wrote (``jsonb`` refuses ``\\u0000``)
    does not fail the run's store: the run answers and the thread reads back."""
    thread = f"nul-{uuid.uuid4().hex}"
    async with open_persistence(checkpoint_url) as persistence:
        agent = ReActAgent(ScriptedChatModel(responses=["an\x00swer"]), [], abilities=ModelAbilities(tool_call=True),
                           checkpointer=persistence.checkpointer)
        result = await agent.run("que\x00stion", thread_id=thread)
        assert result.error is None and result.answer == "an\x00swer"
        state = (await agent.graph.aget_state({"configurable": {"thread_id": thread}})).values
        assert state["query"] == "que\x00stion" and state["answer"] == "an\x00swer"
