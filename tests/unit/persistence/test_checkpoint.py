"""The graph state is checkpoint-serializable: a run on the SQLite checkpointer stores and
reloads every field, artifacts and step records included."""

from __future__ import annotations

import json
import sqlite3
import threading
import warnings

import httpx
import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from reactgraph import AgentSettings, ModelAbilities, ReActAgent, open_persistence
from reactgraph.persistence import checkpointing, savers
from reactgraph.events import RunError
from reactgraph.persistence.interrupts import InMemoryInterruptQueue
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import as_dict
from tests.serving import parse_sse


async def test_state_round_trips_through_sqlite(tools, tmp_path):
    script = [AIMessage(content="", tool_calls=[tool_call("report", {"title": "oee"}, "c1"),
                                                 tool_call("as_dict", {"x": 3}, "c2")]),
              "Report ready.", "Second turn answer."]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unregistered type in state would warn on load
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
            agent = ReActAgent(ScriptedChatModel(responses=script), tools,
                               abilities=ModelAbilities(tool_call=True), checkpointer=saver)
            first = await agent.run("make the report", thread_id="plant-1")
            snapshot = await agent.graph.aget_state({"configurable": {"thread_id": "plant-1"}})
            values = snapshot.values
            assert values["answer"] == "Report ready." == first.answer
            assert [s["tool_name"] for s in values["steps"]] == ["report", "as_dict"]
            assert values["steps"][0]["artifact"]["filename"] == "oee.html"
            assert values["usage"]["model_calls"] == 2
            assert snapshot.next == ()
            second = await agent.run("and now?", thread_id="plant-1")
            assert second.answer == "Second turn answer."
            assert second.steps == [] and second.iterations == 1  # per-turn fields were reset
            assert [m.type for m in second.messages] == ["system", "human", "ai", "tool", "tool", "ai", "human", "ai"]
            history = [state async for state in agent.graph.aget_state_history({"configurable": {"thread_id": "plant-1"}})]
            answers = {state.values.get("answer") for state in history}
            assert {"Report ready.", "Second turn answer."} <= answers  # both turns' checkpoints are kept


async def _largest_checkpoint(saver, thread_id: str) -> int:
    """Bytes of the largest checkpoint row the thread's run stored (SQLite's ``checkpoint``
    column: the serialized checkpoint, channel values included)."""
    async with saver.conn.execute("SELECT max(length(checkpoint)) FROM checkpoints WHERE thread_id = ?",
                                  (thread_id,)) as cursor:
        (size,) = await cursor.fetchone()
    return int(size)


async def test_a_checkpoint_does_not_grow_with_the_trace_and_the_trace_reads_back(tools, tmp_path):
    """``steps`` is a ``DeltaChannel`` like ``messages``: a checkpoint stores the
    step records written since the last one, so a run of 24 tool calls stores checkpoints no
    larger than a run of 4 (each re-stored the whole trace before: about 150 bytes more per
    tool call, in every checkpoint); reading the thread replays the records — the whole
    trace at the end, the trace so far at an earlier checkpoint, none after a new turn."""

    def script(calls: int) -> list:
        return [*(AIMessage("", tool_calls=[tool_call("as_dict", {"x": n}, f"c{n}")]) for n in range(calls)),
                f"{calls} calls made.", "Next turn."]

    async with open_persistence(tmp_path / "checkpoints.db") as persistence:
        saver = persistence.checkpointer
        sizes = {}
        for calls in (4, 24):
            agent = ReActAgent(ScriptedChatModel(responses=script(calls)), tools,
                               abilities=ModelAbilities(tool_call=True), checkpointer=saver)
            result = await agent.run("count", thread_id=f"trace-{calls}")
            assert len(result.steps) == calls
            sizes[calls] = await _largest_checkpoint(saver, f"trace-{calls}")
        assert sizes[24] <= sizes[4] + 64, sizes  # a few more digits, not the trace

        config = {"configurable": {"thread_id": "trace-24"}}
        snapshot = await agent.graph.aget_state(config)
        assert [step["tool_args"]["x"] for step in snapshot.values["steps"]] == list(range(24))
        history = [state async for state in agent.graph.aget_state_history(config)]
        partial = {len(state.values.get("steps") or []) for state in history}
        assert set(range(25)) <= partial  # every checkpoint on the way has the trace up to it
        for state in history:
            assert [step["tool_args"]["x"] for step in state.values.get("steps") or []] == list(
                range(len(state.values.get("steps") or [])))
        second = await agent.run("again", thread_id="trace-24")
        assert second.answer == "Next turn." and second.steps == []
        assert (await agent.graph.aget_state(config)).values["steps"] == []


async def test_the_write_ahead_log_is_copied_into_the_database_on_a_worker_thread(tools, tmp_path, monkeypatch):
    """the saver's commits on the event loop's thread never copy SQLite's
    write-ahead log into the database file (that copy, with its fsyncs, held the loop for
    milliseconds in one commit of a hundred); a worker thread does it every
    ``WAL_CHECKPOINT_COMMITS`` commits, so the file itself — read while ignoring the log —
    has the run's checkpoints."""
    monkeypatch.setattr(savers, "WAL_CHECKPOINT_COMMITS", 3)
    copied_on: list[str] = []
    copy = savers.WalCheckpointer._copy

    def recording_copy(self):
        copied_on.append(threading.current_thread().name)
        copy(self)

    monkeypatch.setattr(savers.WalCheckpointer, "_copy", recording_copy)
    script = [*(AIMessage("", tool_calls=[tool_call("as_dict", {"x": n}, f"c{n}")]) for n in range(8)), "Done."]
    path = tmp_path / "checkpoints.db"
    async with open_persistence(path) as persistence:
        saver = persistence.checkpointer
        async with saver.conn.execute("PRAGMA wal_autocheckpoint") as cursor:
            assert (await cursor.fetchone())[0] == 0  # no commit of the saver copies the log itself
        agent = ReActAgent(ScriptedChatModel(responses=script), tools, abilities=ModelAbilities(tool_call=True),
                           checkpointer=saver)
        assert len((await agent.run("count", thread_id="wal")).steps) == 8
        await saver.wal_checkpointer.aclose()
        assert copied_on and threading.main_thread().name not in copied_on
        file_only = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)  # ignores the log
        try:
            (stored,) = file_only.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 'wal'").fetchone()
        finally:
            file_only.close()
        assert stored >= 6


def test_postgres_parameters_are_the_json_that_json_dumps_writes():
    """``json_bytes`` (orjson) writes the same JSON values ``json.dumps`` writes for
    what a checkpoint document and its metadata hold, and falls back to ``json.dumps`` for
    what orjson refuses instead of failing the store."""
    import json

    values = [
        {"v": 4, "channel_versions": {"messages": "0000000042.9f3a61c0"}, "channel_values": {"iteration": 3}},
        {"text": "설비 CNC-003 — 72.3 %", "nested": [[1, 2.5, None, True], {"k": -0.0}], "empty": {}},
        {1: "int key", 2.5: "float key", True: "bool key", None: "none key"},
        {"big": 2**70, "neg": -(2**80)},  # past 64 bits: orjson refuses, json.dumps writes them
    ]
    for value in values:
        assert json.loads(checkpointing.json_bytes(value)) == json.loads(json.dumps(value))
    # a lone surrogate: orjson refuses it and jsonb refuses its escape; stored as the serializer stores it
    assert json.loads(checkpointing.json_bytes({"surrogate": "a\ud800", "big": 2**70})) == {"surrogate": "a?", "big": 2**70}
    assert isinstance(checkpointing.json_bytes({"a": 1}), bytes)
    # orjson's UTF-8, not json.dumps's \u escapes: the fast encoder is the one in use
    assert checkpointing.json_bytes({"t": "설비"}) == '{"t":"설비"}'.encode()


class FailingSaver(InMemorySaver):
    """An in-memory saver whose puts fail after the first ``after`` (a disk that fills up, a
    database that goes away or refuses a value)."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after
        self.puts = 0

    async def aput(self, config, checkpoint, metadata, new_versions):
        self.puts += 1
        if self.puts > self.after:
            raise OSError("disk full")
        return await super().aput(config, checkpoint, metadata, new_versions)


@pytest.mark.parametrize("after", [0, 2, 4], ids=["first-put", "after-the-model-call", "after-the-tool"])
async def test_a_checkpointer_that_fails_during_a_run_ends_it_with_storage_error_not_model_error(after):
    """a run whose checkpointer failed ended with an error labelled as a model
    failure. Now its kind is ``storage_error`` on every surface: the ``error`` event, ``done``'s
    finish reason, the result, the /runs stream and AG-UI's RUN_ERROR; the model was fine."""
    def failing_agent() -> ReActAgent:
        script = [AIMessage(content="", tool_calls=[tool_call("as_dict", {"x": 3}, "c1")]), "x is 3."]
        return ReActAgent(ScriptedChatModel(responses=script, repeat_last=True), [as_dict],
                          abilities=ModelAbilities(tool_call=True), checkpointer=FailingSaver(after))

    events = [event async for event in failing_agent().astream_events("what is x?", thread_id="t1")]
    errors = [event for event in events if isinstance(event, RunError)]
    assert [(error.kind, error.message) for error in errors] == [("storage_error", "OSError: disk full")]
    assert events[-1].channel == "done" and events[-1].finish_reason == "storage_error"
    assert "could not be stored" in events[-1].answer
    result = await failing_agent().run("what is x?", thread_id="t2")
    assert result.finish_reason == "storage_error" and result.error == "OSError: disk full"

    runs_app, agui_app = (create_app(failing_agent(), ServerSettings(api_key="")) for _ in range(2))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=runs_app), base_url="http://localhost") as client:
        runs = await client.post("/threads/t3/runs", json={"message": "what is x?"})
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=agui_app), base_url="http://localhost") as client:
        agui = await client.post("/agui", json={"threadId": "t4", "runId": "r", "state": None, "tools": [], "context": [],
                                                "forwardedProps": None,
                                                "messages": [{"id": "1", "role": "user", "content": "what is x?"}]})
    sse = parse_sse(runs.text)
    assert [data["kind"] for channel, data in sse if channel == "error"] == ["storage_error"]
    assert sse[-1][0] == "done" and sse[-1][1]["finish_reason"] == "storage_error"
    last = json.loads(agui.text.strip().rsplit("data: ", 1)[1])
    assert last["type"] == "RUN_ERROR" and last["code"] == "storage_error"


class FailingQueue(InMemoryInterruptQueue):
    """A follow-up queue whose ``take`` fails (the Postgres queue's database gone away)."""

    async def take(self, thread_id: str) -> list[str]:
        raise OSError("follow-up queue unreachable")


async def test_a_follow_up_queue_that_fails_during_a_run_ends_it_with_storage_error():
    """The follow-up queue keeps a thread's state as the checkpointer does: its failure in a
    run is a ``storage_error``, not a model failure ('s caveat)."""
    script = [AIMessage(content="", tool_calls=[tool_call("as_dict", {"x": 3}, "c1")]), "x is 3."]
    agent = ReActAgent(ScriptedChatModel(responses=script, repeat_last=True), [as_dict],
                       abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver(),
                       interrupt_queue=FailingQueue())
    result = await agent.run("what is x?", thread_id="t1")
    assert result.finish_reason == "storage_error" and result.error == "OSError: follow-up queue unreachable"


async def test_a_model_that_fails_still_ends_the_run_with_model_error():
    model = ScriptedChatModel(responses=[ConnectionError("model endpoint down")], repeat_last=True)
    agent = ReActAgent(model, [as_dict], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver(),
                       settings=AgentSettings(model_attempts=1))
    result = await agent.run("what is x?", thread_id="t1")
    assert result.finish_reason == "model_error" and not checkpointing.is_storage_failure(ConnectionError("x"))
