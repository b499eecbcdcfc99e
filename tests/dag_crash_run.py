"""A DAG run to kill and resume, in its own process (used by tests/integration/test_dag_resume.py).

``python -m tests.dag_crash_run start|resume --db-url URL --thread ID --counter FILE
[--slow SECONDS] [--judge-slow SECONDS]``

The plan is a diamond: steps ``a`` and ``b`` in parallel, ``c`` after both. Step ``a`` reads
A1; step ``b`` reads B1, then inspects B2 (``inspect`` records ``start``, sleeps ``--slow``
seconds, records ``done``); step ``c`` reads C1. Every tool run is a row of the SQLite file
``--counter`` (table ``calls``: tool, machine, phase, pid), reused from
:func:`tests.crash_run.record`. The models read their next move off the messages they are
sent, so a new process goes on where a killed one stopped; the analyzer runs on its own
role, ``judge``, answering after ``--judge-slow`` seconds. ``start`` streams a new run,
``resume`` resumes the thread; each event is printed as one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.tools import tool

from reactgraph import AgentSettings, DAGAgent, DAGSettings, ModelRegistry, open_persistence
from reactgraph.dag.analyze import ANALYZER_SYSTEM
from reactgraph.dag.plan import PLANNER_SYSTEM
from reactgraph.testing import ScriptedChatModel
from tests.crash_run import emit, record

GOAL = "Check machines A1, B1, B2 and C1."
SYNTHESIS = "All four machines are normal."
PLAN = {"steps": [{"id": "a", "task": "Read A1", "dependencies": []},
                  {"id": "b", "task": "Read B1, then inspect B2", "dependencies": []},
                  {"id": "c", "task": "Read C1", "dependencies": ["a", "b"]}]}
MOVES = {"a": [("read", "A1")], "b": [("read", "B1"), ("inspect", "B2")], "c": [("read", "C1")]}


def build_tools(counter: str, slow_seconds: float) -> list[Any]:
    """``read`` and the slow ``inspect``, counting on ``counter``."""

    @tool
    def read(machine: str) -> str:
        """Read a machine's status."""
        record(counter, "read", machine, "done", machine)
        return f"{machine}: normal"

    @tool
    async def inspect(machine: str) -> str:
        """Inspect a machine (slow)."""
        record(counter, "inspect", machine, "start", machine)
        await asyncio.sleep(slow_seconds)
        record(counter, "inspect", machine, "done", machine)
        return f"{machine}: inspected, no fault"

    return [read, inspect]


def move(messages: list[BaseMessage]) -> str:
    """The general model: the plan, or a step's next action read off its conversation."""
    if str(messages[0].content).startswith(PLANNER_SYSTEM[:40]):
        return json.dumps(PLAN)
    context = str(messages[1].content)
    step_id = next(step for step in MOVES if f"(step {step} of a larger plan)" in context)
    done = sum(1 for m in messages if m.type == "human" and str(m.content).startswith("Observation"))
    if done < len(MOVES[step_id]):
        name, machine = MOVES[step_id][done]
        return json.dumps({"type": "tool_call", "reasoning": "next", "tool_name": name, "tool_args": {"machine": machine}})
    return json.dumps({"type": "final_answer", "reasoning": "done", "answer": f"step {step_id}: normal"})


def build_agent(counter: str, slow: float, judge_slow: float, persistence: Any) -> DAGAgent:
    """The DAG agent of this module on ``persistence``."""
    general = ScriptedChatModel(responses=[move], repeat_last=True, synthesis=SYNTHESIS)
    verdict = json.dumps({"achieved": True, "confidence": 1.0, "reasoning": "all read", "final_answer": SYNTHESIS})
    judge = ScriptedChatModel(responses=[lambda messages: verdict if messages[0].content == ANALYZER_SYSTEM else ""],
                              repeat_last=True, delay=judge_slow)
    models = ModelRegistry(general).register("judge", judge)
    return DAGAgent(models, build_tools(counter, slow), settings=AgentSettings(max_iterations=6, tool_timeout=300),
                    dag_settings=DAGSettings(analyzer_role="judge"), checkpointer=persistence.checkpointer,
                    interrupt_queue=persistence.interrupt_queue)


async def main(args: argparse.Namespace) -> int:
    async with open_persistence(args.db_url) as persistence:
        agent = build_agent(args.counter, args.slow, args.judge_slow, persistence)
        events = agent.aresume_events(args.thread) if args.command == "resume" else \
            agent.astream_events(GOAL, thread_id=args.thread)
        async for event in events:
            emit({"channel": event.channel, "data": event.data, "t": time.time()})
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["start", "resume"])
    parser.add_argument("--db-url", required=True)
    parser.add_argument("--thread", required=True)
    parser.add_argument("--counter", required=True)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--judge-slow", type=float, default=0.0)
    sys.exit(asyncio.run(main(parser.parse_args())))
