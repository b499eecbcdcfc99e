"""A run to kill and resume, in its own process (used by tests/integration/test_resume.py).

``python -m tests.crash_run start|resume|ask|inject|serve --db-url URL --thread ID --counter FILE
[--slow SECONDS] [--text TEXT] [--mode native|json]``

The agent has two tools that record every call in the SQLite file ``--counter`` (table
``calls``: tool, tool_call_id, phase, pid, machine): ``fast_count`` records one ``done`` row;
``slow_check`` records ``start``, sleeps ``--slow`` seconds, then records ``done``. Both
take their tool call id with ``InjectedToolCallId``, as an idempotent tool would.

The scripted model reads its next move off the conversation, so a new process continues
where a killed one stopped: no tool result yet → ``fast_count(CNC-001)``; one result →
``fast_count(CNC-002)`` and ``slow_check(CNC-003)`` in one response; three → the final
answer. A follow-up in the conversation adds one more ``fast_count(CNC-009)`` before the
answer. ``--mode json`` plays the same plan in the JSON-in-content protocol (SPEC R2.3),
one tool per iteration: ``fast_count(CNC-001)``, ``fast_count(CNC-002)``,
``slow_check(CNC-003)``, then the answer.

``start`` streams a new run, ``resume`` resumes the thread, ``ask`` starts a new turn
with ``--text`` and ``inject`` sends ``--text`` to the thread's run. ``--approve TOOL``
makes that tool's calls wait for approval; ``decide`` resumes the thread with the decision
``--text`` (JSON: ``{tool_call_id: decision}``). Each event is printed
as one JSON line ``{"channel": ..., "data": ...}``; an error as ``{"error": type, "message": ...}``.
``serve`` serves the agent over HTTP (``reactgraph.server.create_app``, no API key) on a
free loopback port, prints ``{"url": ..., "pid": ...}`` and runs until killed (``--thread``
unused). ``fork-server`` (no other options) runs the command lines it reads on stdin in
forked children, one at a time (see :func:`fork_servers`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import time
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool

from reactgraph import AgentSettings, ModelAbilities, ReActAgent, open_persistence
from reactgraph.testing import ScriptedChatModel, tool_call

QUERY = "Check CNC-001, CNC-002 and CNC-003."
ANSWER = "CNC-001, CNC-002 and CNC-003 are all normal."
SYNTHESIS = "All three machines are normal."


def record(counter: str, tool_name: str, tool_call_id: str, phase: str, machine: str = "") -> None:
    """Append one row to the counter table (created on first use)."""
    with sqlite3.connect(counter, timeout=30) as db:
        db.execute("CREATE TABLE IF NOT EXISTS calls (tool TEXT, tool_call_id TEXT, phase TEXT, pid INTEGER, machine TEXT)")
        db.execute("INSERT INTO calls VALUES (?, ?, ?, ?, ?)", (tool_name, tool_call_id, phase, os.getpid(), machine))


def build_tools(counter: str, slow_seconds: float) -> list[Any]:
    """The two counting tools, writing to ``counter``."""

    @tool
    def fast_count(machine: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Count one status read of a machine."""
        record(counter, "fast_count", tool_call_id, "done", machine)
        return f"{machine}: normal"

    @tool
    async def slow_check(machine: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """A slow inspection of a machine."""
        record(counter, "slow_check", tool_call_id, "start", machine)
        await asyncio.sleep(slow_seconds)
        record(counter, "slow_check", tool_call_id, "done", machine)
        return f"{machine}: normal, inspected"

    return [fast_count, slow_check]


def next_move(messages: list[BaseMessage]) -> AIMessage | str:
    """The scripted model's answer, read off the conversation of the current turn."""
    turn_start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not m.content.startswith("[USER"))
    turn = messages[turn_start:]
    results = sum(isinstance(m, ToolMessage) for m in turn)
    followed_up = any(isinstance(m, HumanMessage) and m.content.startswith("[USER INTERRUPT]") for m in turn)
    if results == 0:
        return AIMessage(content="", tool_calls=[tool_call("fast_count", {"machine": "CNC-001"}, "call-fast-1")])
    if results == 1:
        return AIMessage(content="", tool_calls=[tool_call("fast_count", {"machine": "CNC-002"}, "call-fast-2"),
                                                 tool_call("slow_check", {"machine": "CNC-003"}, "call-slow-3")])
    if followed_up and results == 3:
        return AIMessage(content="", tool_calls=[tool_call("fast_count", {"machine": "CNC-009"}, "call-fast-9")])
    return ANSWER


def json_move(messages: list[BaseMessage]) -> str:
    """:func:`next_move` in the JSON-in-content protocol: one tool per iteration."""
    turn_start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and m.content == QUERY)
    results = sum(isinstance(m, HumanMessage) and m.content.startswith("Observation from") for m in messages[turn_start:])
    plan = [("fast_count", "CNC-001"), ("fast_count", "CNC-002"), ("slow_check", "CNC-003")]
    if results < len(plan):
        name, machine = plan[results]
        return json.dumps({"type": "tool_call", "reasoning": "next machine", "tool_name": name, "tool_args": {"machine": machine}})
    return json.dumps({"type": "final_answer", "reasoning": "all checked", "answer": ANSWER})


def build_agent(counter: str, slow_seconds: float, mode: str, checkpointer: Any, interrupt_queue: Any = None,
                approve: str = "") -> ReActAgent:
    """The agent of this module: the scripted model playing :func:`next_move` (``mode``
    ``native``) or :func:`json_move` (``json``), the two counting tools on ``counter``;
    ``approve`` names a tool whose calls wait for approval."""
    move = next_move if mode == "native" else json_move
    model = ScriptedChatModel(responses=[move], repeat_last=True, synthesis=SYNTHESIS)
    settings = AgentSettings(tool_timeout=120, approval={approve: "always"} if approve else {},
                             synthesis="always")  # the answer written by a synthesis call (SYNTHESIS)
    return ReActAgent(model, build_tools(counter, slow_seconds), use_native_tools=mode == "native",
                      abilities=ModelAbilities(tool_call=True), settings=settings,
                      checkpointer=checkpointer, interrupt_queue=interrupt_queue)


def emit(payload: dict[str, Any]) -> None:
    print(json.dumps(payload, ensure_ascii=False), flush=True)


async def main(args: argparse.Namespace) -> int:
    async with open_persistence(args.db_url) as persistence:
        agent = build_agent(args.counter, args.slow, args.mode, persistence.checkpointer, persistence.interrupt_queue,
                            args.approve)
        if args.command == "serve":
            from reactgraph.server import ServerSettings, create_app
            from tests.serving import running_server

            async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
                emit({"url": url, "pid": os.getpid()})
                await asyncio.Event().wait()  # until the process is killed
        try:
            if args.command == "inject":
                await agent.inject(args.thread, args.text)
                emit({"injected": args.text, "status": await agent.thread_status(args.thread)})
                return 0
            if args.command in ("resume", "decide"):
                events = agent.aresume_events(args.thread, json.loads(args.text) if args.command == "decide" else None)
            else:
                events = agent.astream_events(QUERY if args.command == "start" else args.text, thread_id=args.thread)
            async for event in events:
                emit({"channel": event.channel, "data": event.data, "t": time.time()})
        except Exception as exc:
            emit({"error": type(exc).__name__, "message": str(exc)})
            return 3
    return 0


def fork_servers(parser: argparse.ArgumentParser) -> int:
    """``fork-server``: read one command line per stdin line (a JSON list of arguments, e.g.
    ``["serve", "--db-url", ...]``), run each in a forked child of this already-imported
    process (a server starts in milliseconds instead of a new interpreter's seconds), wait
    for the child to end, then print ``{"exited": pid, "signal": number or null}``."""
    for line in sys.stdin:
        options = parser.parse_args(json.loads(line))
        pid = os.fork()
        if pid == 0:  # the child: no event loop or thread was started before the fork
            code = 1
            try:
                code = asyncio.run(main(options))
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        emit({"exited": pid, "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None})
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["start", "resume", "decide", "ask", "inject", "serve", "fork-server"])
    parser.add_argument("--db-url", required=True)
    parser.add_argument("--thread", required=True)
    parser.add_argument("--counter", required=True)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--text", default="")
    parser.add_argument("--mode", choices=["native", "json"], default="native")
    parser.add_argument("--approve", default="")
    arguments = parser.parse_args()
    sys.exit(fork_servers(parser) if arguments.command == "fork-server" else asyncio.run(main(arguments)))
