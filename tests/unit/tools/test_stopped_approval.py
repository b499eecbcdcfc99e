"""An approved call stopped while it runs is never started again by a resume (SPEC R13.3).

A run is stopped by ``POST /threads/{id}/cancel`` or by a client that drops its stream: the
server cancels the task that reads the run's events, or the events' iterator is closed. Either
way the run of an approved call that may have side effects had started, and whether it took
effect is unknown: the resume answers it with ``STARTED_BEFORE``, as after ``kill -9``, and
never asks again. A tool declared without side effects runs again, unasked. ReAct and DAG
runs, on SQLite and Postgres (``checkpoint_url``); the agent that resumes is a new one on the
same database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from reactgraph import AgentSettings, DAGAgent, ReActAgent, open_persistence
from reactgraph.tools.approval import STARTED_BEFORE
from reactgraph.events import DagStepToolStarted, ToolStarted
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE_TOOLS_ONLY

from tests.unit.dag.test_dag import general_model, kind, plan, step, step_reply, verdict

SETTINGS = AgentSettings(max_iterations=4, tool_timeout=60, retry_initial_delay=0.01, retry_max_delay=0.02)


class Line:
    """``stop_line`` needs approval and waits for ``release`` once started; ``starts`` lists
    each run begun. ``side_effects`` is what the tool declares (``None``: nothing)."""

    def __init__(self, side_effects: bool | None) -> None:
        self.starts: list[str] = []
        self.started = asyncio.Event()
        self.release = asyncio.Event()

        @tool
        async def stop_line(line: str) -> str:
            """Stop a production line."""
            self.starts.append(line)
            self.started.set()
            await self.release.wait()
            return f"{line} angehalten"

        stop_line.metadata = {"approval": "always",
                              **({"side_effects": side_effects} if side_effects is not None else {})}
        self.tool = stop_line


def react_agent(line: Line, store: Any, model: ScriptedChatModel) -> ReActAgent:
    return ReActAgent(model, [line.tool], abilities=NATIVE_TOOLS_ONLY, settings=SETTINGS, checkpointer=store.checkpointer,
                      interrupt_queue=store.interrupt_queue)


def react_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[tool_call("stop_line", {"line": "L2"}, "c1")]), "Linie L2: erledigt."],
        synthesis="Linie L2 ist erledigt.")


def dag_agent(line: Line, store: Any, model: ScriptedChatModel) -> DAGAgent:
    return DAGAgent(model, [line.tool], settings=SETTINGS, checkpointer=store.checkpointer,
                    interrupt_queue=store.interrupt_queue)


def dag_model() -> ScriptedChatModel:
    def steps(messages):
        if kind(messages) == "step:halt" and len(messages) == 2:
            return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "stop_line", "tool_args": {"line": "L2"}})
        return step_reply(messages)

    return general_model([plan(step("halt", "Arrêter la ligne L2"))], [verdict(True, 1.0, "L2 arrêtée")],
                         steps=steps, synthesis="La ligne L2 est arrêtée.")


AGENTS = {"react": (react_agent, react_model), "dag": (dag_agent, dag_model)}
"""By mode: the agent on a store and a model, and the scripted model (one per test: the
agent that resumes goes on where the first one's script stopped)."""


async def stop_while_it_runs(agent: Any, thread: str, decisions: dict[str, Any], line: Line, how: str) -> None:
    """Resume ``thread`` with ``decisions`` and stop the run once the approved call runs:
    ``cancel`` cancels the task reading the events (the cancel endpoint, a dropped stream on
    the server); ``close`` closes the events' iterator (a consumer that goes away)."""
    events = agent.aresume_events(thread, decisions)
    if how == "close":
        async for event in events:
            if isinstance(event, (ToolStarted, DagStepToolStarted)):
                await asyncio.wait_for(line.started.wait(), 30)
                break
        await events.aclose()
        return

    async def read() -> None:
        async for _ in events:
            pass

    reading = asyncio.create_task(read())
    await asyncio.wait_for(line.started.wait(), 30)
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading


def observations(result: Any, mode: str) -> list[str]:
    """The observations of the run's ``stop_line`` calls (ReAct steps, or DAG steps' tool steps)."""
    records = result.steps if mode == "react" else [t for s in result.steps for t in s.tool_steps]
    return [r.observation for r in records if r.tool_name == "stop_line"]


@pytest.mark.parametrize("mode", ["react", "dag"])
@pytest.mark.parametrize("how", ["cancel", "close"])
async def test_a_stopped_approved_call_is_not_started_again_by_the_resume(checkpoint_url, mode, how):
    line, thread = Line(side_effects=None), f"stop-{mode}-{how}-{uuid.uuid4().hex[:8]}"
    async with open_persistence(checkpoint_url) as store:
        build, script = AGENTS[mode]
        model = script()
        agent = build(line, store, model)
        paused = [event async for event in agent.astream_events("Halte die Linie L2 an", thread_id=thread)]
        assert paused[-1].data["finish_reason"] == "waiting"
        [waiting] = await agent.pending(thread)
        await stop_while_it_runs(agent, thread, {waiting.tool_call_id: "approve"}, line, how)
        assert await agent.thread_status(thread) == "interrupted"
        assert await agent.pending(thread) == []  # not asked again
    line.release.set()
    async with open_persistence(checkpoint_url) as store:  # a new agent, as another process would be
        result = await build(line, store, model).resume(thread)
    assert line.starts == ["L2"]  # started once, by the stopped run; never again
    assert observations(result, mode) == [STARTED_BEFORE]
    assert result.finish_reason in ("final_answer", "achieved")


@pytest.mark.parametrize("mode", ["react", "dag"])
async def test_a_stopped_approved_call_of_a_tool_without_side_effects_runs_again_unasked(checkpoint_url, mode):
    line, thread = Line(side_effects=False), f"stop-read-{mode}-{uuid.uuid4().hex[:8]}"
    async with open_persistence(checkpoint_url) as store:
        build, script = AGENTS[mode]
        model = script()
        agent = build(line, store, model)
        [event async for event in agent.astream_events("Arrête la ligne L2", thread_id=thread)]
        [waiting] = await agent.pending(thread)
        await stop_while_it_runs(agent, thread, {waiting.tool_call_id: "approve"}, line, "cancel")
        assert await agent.thread_status(thread) == "interrupted"
        line.release.set()
        result = await agent.resume(thread)
    assert line.starts == ["L2", "L2"]
    assert observations(result, mode) == ["L2 angehalten"]
