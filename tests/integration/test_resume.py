"""Checkpointed runs: crash and resume from another process, resume after model failure,
conversation continuity, default persistence, and runs shared between processes through
Postgres (SPEC §1 "a run interrupted by a crash resumes", R2.7, R7.5).

Runs that must die or run elsewhere use ``tests/crash_run.py`` in a subprocess. The
Postgres cases need ``$REACTGRAPH_TEST_DATABASE_URL`` (see ``tests/conftest.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import subprocess
import time
import uuid
from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from reactgraph import (
    AgentSettings,
    InMemoryInterruptQueue,
    NothingToResumeError,
    ReActAgent,
    ThreadBusyError,
    check_protocol,
    open_persistence,
)
from reactgraph.persistence.checkpointing import DATABASE_URL_ENV
from reactgraph.protocol.messages import UNFINISHED_TOOL_RESULT
from reactgraph.testing import ScriptedChatModel, tool_call
from tests import crash_run
from tests.processes import REPO, calls, helper, wait_for_saved_result
from tests.helpers import NATIVE_TOOLS_ONLY

pytestmark = pytest.mark.integration  # runs tests/crash_run.py in other processes



def parse(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def observer(persistence: Any) -> ReActAgent:
    """An agent in the test process reading the threads the helper processes write."""
    return ReActAgent(ScriptedChatModel(), crash_run.build_tools("unused.db", 0), abilities=NATIVE_TOOLS_ONLY,
                      checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue)


# Crash and resume (the first "must show") --------------------------------------


async def test_sigkill_during_tool_fan_out_then_resume_in_a_new_process(checkpoint_url, tmp_path):
    thread = f"crash-{uuid.uuid4().hex}"
    counter = tmp_path / "calls.db"
    first = subprocess.Popen(helper("start", checkpoint_url, thread, counter, slow=120), cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        async with open_persistence(checkpoint_url) as persistence:
            # Batch 2 is fast_count(call-fast-2) and slow_check(call-slow-3): wait until the
            # fast one's result is stored, then kill the process while the slow one sleeps.
            await wait_for_saved_result(persistence.checkpointer, thread, "call-fast-2")
            assert sorted(row[:3] for row in calls(counter)) == [
                ("fast_count", "call-fast-1", "done"), ("fast_count", "call-fast-2", "done"),
                ("slow_check", "call-slow-3", "start")]
            agent = observer(persistence)
            if persistence.shared:
                assert await agent.thread_status(thread) == "running"
            first.send_signal(signal.SIGKILL)
            assert first.wait(timeout=30) == -signal.SIGKILL
            # The dead process's run no longer holds the thread (Postgres: once its backend has
            # seen the closed socket and exited, which under load takes a moment after the kill).
            deadline = time.monotonic() + 10
            while (status := await agent.thread_status(thread)) == "running" and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert status == "interrupted"
    finally:
        if first.poll() is None:
            first.kill()
    before = parse(first.communicate()[0])
    assert not any(e.get("channel") == "done" for e in before)

    resumed = subprocess.run(helper("resume", checkpoint_url, thread, counter, slow=0.05), cwd=REPO,
                             capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = parse(resumed.stdout)
    started = [e["data"]["tool_call_id"] for e in events
               if e["channel"] == "step" and e["data"].get("type") == "iteration" and e["data"]["status"] == "start"]
    assert started == ["call-slow-3"]  # the finished fast call was not run again
    deltas = "".join(e["data"]["content"] for e in events if e["channel"] == "answer" and e["data"]["status"] == "delta")
    assert deltas == crash_run.SYNTHESIS
    done = events[-1]
    assert done["channel"] == "done"
    assert done["data"]["answer"] == crash_run.SYNTHESIS and done["data"]["finish_reason"] == "final_answer"
    assert done["data"]["iterations"] == 3 and done["data"]["usage"]["model_calls"] == 4  # 3 loop calls + synthesis

    rows = calls(counter)
    fast_runs = Counter(call_id for tool, call_id, phase, _ in rows if tool == "fast_count")
    assert fast_runs == {"call-fast-1": 1, "call-fast-2": 1}  # each fast call ran exactly once
    slow = [(call_id, phase, pid) for tool, call_id, phase, pid in rows if tool == "slow_check"]
    assert [phase for _, phase, _ in slow] == ["start", "start", "done"]  # mid-flight when killed: ran again
    assert {call_id for call_id, _, _ in slow} == {"call-slow-3"}  # with the same id: an idempotency key
    assert slow[0][2] == first.pid and slow[1][2] == slow[2][2] != first.pid

    async with open_persistence(checkpoint_url) as persistence:
        agent = observer(persistence)
        assert await agent.thread_status(thread) == "idle"
        state = (await agent.graph.aget_state({"configurable": {"thread_id": thread}})).values
        check_protocol(state["messages"])
        assert [s["tool_call_id"] for s in state["steps"]] == ["call-fast-1", "call-fast-2", "call-slow-3"]
        assert [m.tool_call_id for m in state["messages"] if isinstance(m, ToolMessage)] == [
            "call-fast-1", "call-fast-2", "call-slow-3"]
        assert state["answer"] == crash_run.ANSWER and state["synthesis"] == crash_run.SYNTHESIS
        with pytest.raises(NothingToResumeError, match="finished"):
            await agent.resume(thread)


async def test_sigkill_while_an_approved_call_runs_never_asks_again_nor_runs_it_twice(checkpoint_url, tmp_path):
    """point 5: the approved call's answer is stored before it runs, so the thread
    of a process killed meanwhile is interrupted, not waiting on that call again; its
    resume tells the model the call started and was not run again."""
    thread = f"approved-crash-{uuid.uuid4().hex}"
    counter = tmp_path / "calls.db"
    paused = subprocess.run(helper("start", checkpoint_url, thread, counter, approve="slow_check"), cwd=REPO,
                            capture_output=True, text=True, timeout=180)
    assert parse(paused.stdout)[-1]["data"]["finish_reason"] == "waiting", paused.stdout + paused.stderr
    decide = subprocess.Popen(helper("decide", checkpoint_url, thread, counter, slow=120, approve="slow_check",
                                     text=json.dumps({"call-slow-3": "approve"})),
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while ("slow_check", "call-slow-3", "start") not in [row[:3] for row in calls(counter)]:
            assert decide.poll() is None and time.monotonic() < deadline, decide.stderr.read() if decide.stderr else ""
            await asyncio.sleep(0.05)
        decide.send_signal(signal.SIGKILL)
        assert decide.wait(timeout=30) == -signal.SIGKILL
    finally:
        if decide.poll() is None:
            decide.kill()
            decide.wait()
    async with open_persistence(checkpoint_url) as persistence:
        agent = observer(persistence)
        deadline = time.monotonic() + 10
        while (status := await agent.thread_status(thread)) == "running" and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert status == "interrupted"  # before: "waiting", on the call that had started
        assert await agent.pending(thread) == []

    resumed = subprocess.run(helper("resume", checkpoint_url, thread, counter, approve="slow_check"), cwd=REPO,
                             capture_output=True, text=True, timeout=180)
    events = parse(resumed.stdout)
    assert events[-1]["channel"] == "done" and events[-1]["data"]["finish_reason"] == "final_answer", resumed.stdout
    [done] = [e["data"] for e in events if e["channel"] == "step" and e["data"].get("type") == "iteration"
              and e["data"]["status"] == "done" and e["data"]["tool_call_id"] == "call-slow-3"]
    assert "was not run again" in done["error"]
    slow = [phase for tool, _, phase, _ in calls(counter) if tool == "slow_check"]
    assert slow == ["start"]  # started once, in the killed process; never again


# Resume in process ----------------------------------------------------------------------


async def test_run_whose_model_kept_failing_is_resumed_to_the_synthesized_answer(tools, fast_settings):
    model = ScriptedChatModel(
        responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-003"}, "c1")]),
                   ConnectionError("down"), ConnectionError("down"), ConnectionError("down"), "CNC-003 is normal."],
        synthesis="CNC-003 runs normally.")
    agent = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                       settings=dataclasses.replace(fast_settings, synthesis="always"))  # then a synthesis call
    failed = await agent.run("How is CNC-003?", thread_id="plant")
    assert failed.finish_reason == "model_error" and failed.error
    assert await agent.thread_status("plant") == "interrupted"

    resumed = await agent.resume("plant")
    assert resumed.answer == "CNC-003 is normal." and resumed.finish_reason == "final_answer"
    assert resumed.synthesis == "CNC-003 runs normally."
    assert [s.tool_call_id for s in resumed.steps] == ["c1"]  # the tool ran once, before the failure
    assert resumed.iterations == 2 and resumed.thread_id == "plant"
    assert len(model.calls) == 6  # 1 + 3 failed attempts + 1 after resume + synthesis
    assert await agent.thread_status("plant") == "idle"


async def test_resume_refuses_when_there_is_nothing_to_resume(tools, fast_settings):
    without = ReActAgent(ScriptedChatModel(responses=["hi"]), tools, abilities=NATIVE_TOOLS_ONLY, settings=fast_settings)
    with pytest.raises(NothingToResumeError, match="no checkpointer"):
        await without.resume("t")
    agent = ReActAgent(ScriptedChatModel(responses=["CNC-003 is normal."]), tools, abilities=NATIVE_TOOLS_ONLY, settings=fast_settings,
                       checkpointer=InMemorySaver())
    assert await agent.thread_status("never") == "new"
    with pytest.raises(NothingToResumeError, match="no checkpoint"):
        await agent.resume("never")
    await agent.run("How is CNC-003?", thread_id="done")
    with pytest.raises(NothingToResumeError, match="finished"):
        await agent.resume("done")


async def test_resume_of_a_thread_with_a_run_going_is_refused(tools, fast_settings):
    agent = ReActAgent(ScriptedChatModel(responses=["x"]), tools, abilities=NATIVE_TOOLS_ONLY, settings=fast_settings, checkpointer=InMemorySaver())
    async with agent.interrupts.running("busy"):
        assert await agent.thread_status("busy") == "running"
        with pytest.raises(ThreadBusyError):
            await agent.resume("busy")
        with pytest.raises(ThreadBusyError):
            [event async for event in agent.aresume_events("busy")]


async def test_new_question_after_an_interrupted_fan_out_closes_the_unfinished_calls(tools, fast_settings):
    model = ScriptedChatModel(responses=["Only CNC-001 then: normal."])
    agent = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, settings=fast_settings,
                       checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    calls_ = [tool_call("get_status", {"equipment_id": "CNC-001"}, "c1"), tool_call("get_status", {"equipment_id": "CNC-002"}, "c2")]
    # The state a run killed during its tools leaves: c1 answered, c2 not.
    await agent.graph.aupdate_state(config, {"messages": [HumanMessage("check both"), AIMessage(content="", tool_calls=calls_),
                                                          ToolMessage("CNC-001: normal", tool_call_id="c1")]}, as_node="start_turn")
    assert await agent.thread_status("t") == "interrupted"
    result = await agent.run("only CNC-001", thread_id="t")
    assert result.answer == "Only CNC-001 then: normal."
    sent = model.calls[0]  # check_protocol passed on it inside the model
    assert [m.type for m in sent[1:]] == ["human", "ai", "tool", "tool", "human"]
    assert sent[-2].tool_call_id == "c2" and sent[-2].content == UNFINISHED_TOOL_RESULT
    assert sent[-1].content == "only CNC-001"


# Conversation continuity ----------------------------------------------------------------


async def test_second_run_on_a_thread_sees_the_earlier_turns_after_a_restart(tools, fast_settings, tmp_path):
    db = tmp_path / "checkpoints.db"
    async with open_persistence(db) as persistence:
        first = ReActAgent(ScriptedChatModel(responses=["CNC-003 is normal."]), tools, abilities=NATIVE_TOOLS_ONLY, settings=fast_settings,
                           checkpointer=persistence.checkpointer)
        await first.run("How is CNC-003?", thread_id="chat")
    async with open_persistence(db) as persistence:  # a new process would do the same
        model = ScriptedChatModel(responses=["It is the lathe.", "No history here."])
        second = ReActAgent(model, tools, abilities=NATIVE_TOOLS_ONLY, settings=fast_settings, checkpointer=persistence.checkpointer)
        result = await second.run("What kind of machine is it?", thread_id="chat")
        assert result.answer == "It is the lathe."
        assert [(m.type, m.content) for m in model.calls[0][1:]] == [
            ("human", "How is CNC-003?"), ("ai", "CNC-003 is normal."), ("human", "What kind of machine is it?")]
        await second.run("Another thread?", thread_id="other")
        assert [m.content for m in model.calls[1][1:]] == ["Another thread?"]


# Where checkpoints go -------------------------------------------------------------------


async def test_default_persistence_is_a_sqlite_file_under_reactgraph_home(tools, fast_settings, tmp_path, monkeypatch):
    monkeypatch.setenv("REACTGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    async with open_persistence() as persistence:
        assert isinstance(persistence.checkpointer, AsyncSqliteSaver)
        assert isinstance(persistence.interrupt_queue, InMemoryInterruptQueue) and not persistence.shared
        assert persistence.target == str(tmp_path / "home" / "checkpoints.db")
        cursor = await persistence.checkpointer.conn.execute("PRAGMA synchronous")
        assert await cursor.fetchone() == (1,)  # NORMAL: no fsync per checkpoint
        agent = ReActAgent(ScriptedChatModel(responses=["ok"]), tools, abilities=NATIVE_TOOLS_ONLY, settings=fast_settings,
                           checkpointer=persistence.checkpointer)
        await agent.run("hello", thread_id="t")
    assert (tmp_path / "home" / "checkpoints.db").stat().st_size > 0
    monkeypatch.setenv(DATABASE_URL_ENV, "memory")
    async with open_persistence() as persistence:
        assert isinstance(persistence.checkpointer, InMemorySaver)


def test_durability_must_be_a_langgraph_mode():
    assert AgentSettings().durability == "sync"
    with pytest.raises(ValueError, match="durability"):
        AgentSettings(durability="never")
