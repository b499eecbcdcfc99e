"""A DAG-mode server to kill and a DAG agent to resume it (used by
tests/integration/test_dag_crash.py; SPEC R13.5, R13.8).

``python -m tests.crash_dag --db-url URL --counter FILE [--slow SECONDS] [--analysis SECONDS]``
serves, on a free loopback port, the app ``reactgraph serve --dag`` makes
(:func:`reactgraph.server.create_app` with a ReAct and a DAG agent on one checkpointer and
queue, DAG the default mode), prints ``{"url": ..., "pid": ...}`` and runs until killed.

The DAG agent's tools are those of :mod:`tests.crash_run` (``fast_count`` and
``slow_check``, each call recorded in the SQLite file ``--counter``). Its scripted model
reads its next move off the messages of each call, so a new process continues where a
killed one stopped: the planner always plans :data:`PLAN` (``a``: ``fast_count(CNC-001)``
then ``slow_check(CNC-003)``; ``b``: ``fast_count(CNC-002)``; ``c`` after both, no tool);
each step's loop calls its next tool until it has all its observations, then answers
``done <step>``; the analyzer, after ``--analysis`` seconds, says the goal is achieved.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from reactgraph import AgentSettings, DAGAgent, open_persistence
from reactgraph.dag.analyze import ANALYZER_SYSTEM
from reactgraph.testing import ScriptedChatModel
from tests import crash_run
from tests.unit.dag.test_dag import kind, plan, step, verdict

GOAL = "Check CNC-001, CNC-002 and CNC-003, then compare them."
SYNTHESIS = "CNC-001, CNC-002 and CNC-003 are normal."
STEP_TOOLS = {"a": [("fast_count", "CNC-001"), ("slow_check", "CNC-003")], "b": [("fast_count", "CNC-002")], "c": []}
PLAN = plan(step("a", "Read CNC-001 and inspect CNC-003"), step("b", "Read CNC-002"),
            step("c", "Compare the three machines", deps=["a", "b"]))


def reply(messages: list[BaseMessage]) -> str:
    """The planner's plan, the analyzer's verdict, or a step loop's next move."""
    role = kind(messages)
    if role == "planner":
        return PLAN
    if role == "analyzer":
        return verdict(True, 0.95, SYNTHESIS)
    step_id = role.split(":", 1)[1]
    seen = sum(isinstance(m, HumanMessage) and str(m.content).startswith("Observation from") for m in messages)
    moves = STEP_TOOLS[step_id]
    if seen < len(moves):
        name, machine = moves[seen]
        return json.dumps({"type": "tool_call", "reasoning": "next", "tool_name": name, "tool_args": {"machine": machine}})
    return json.dumps({"type": "final_answer", "reasoning": "done", "answer": f"done {step_id}"})


class SlowAnalysis(ScriptedChatModel):
    """The scripted model, whose analyzer calls take ``analysis_seconds`` (a kill lands in them)."""

    analysis_seconds: float = 0.0

    async def _pause(self, messages: list[BaseMessage]) -> None:
        if messages and messages[0].content == ANALYZER_SYSTEM:
            await asyncio.sleep(self.analysis_seconds)

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                         **kwargs: Any) -> Any:
        await self._pause(messages)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    async def _astream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                       **kwargs: Any) -> Any:
        await self._pause(messages)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


def build_dag_agent(counter: str, slow_seconds: float, analysis_seconds: float, persistence: Any,
                    interrupt_queue: Any) -> DAGAgent:
    """The DAG agent of this module on ``persistence`` (a checkpointer) and ``interrupt_queue``."""
    model = SlowAnalysis(responses=[reply], repeat_last=True, synthesis=SYNTHESIS, analysis_seconds=analysis_seconds)
    return DAGAgent(model, crash_run.build_tools(counter, slow_seconds), settings=AgentSettings(tool_timeout=120),
                    checkpointer=persistence, interrupt_queue=interrupt_queue)


async def serve(args: argparse.Namespace) -> None:
    """Serve both agents as ``reactgraph serve --dag`` does, until killed."""
    from reactgraph.server import ServerSettings, create_app
    from tests.serving import running_server

    async with open_persistence(args.db_url) as persistence:
        react = crash_run.build_agent(args.counter, args.slow, "native", persistence.checkpointer,
                                      persistence.interrupt_queue)
        dag = build_dag_agent(args.counter, args.slow, args.analysis, persistence.checkpointer,
                              persistence.interrupt_queue)
        app = create_app(react, ServerSettings(api_key="", default_mode="dag"), dag_agent=dag)
        async with running_server(app) as url:
            crash_run.emit({"url": url, "pid": os.getpid()})
            await asyncio.Event().wait()  # until the process is killed


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--db-url", required=True)
    parser.add_argument("--counter", required=True)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--analysis", type=float, default=0.0)
    asyncio.run(serve(parser.parse_args()))
