"""Native, plain JSON and schema-constrained JSON mode on the embedded model.

Starts the embedded SmolLM2-135M behind ``llama_cpp.server`` and runs a fixed set of demo
questions through the ReAct graph (loop only, no synthesis) in three modes:

* ``native``: native tool calling (``bind_tools``);
* ``json``: JSON mode with ``response_format={"type": "json_object"}``, no schema;
* ``json+schema``: JSON mode where every loop call carries the action schema of the
  offered tools (``schema_output="json_object_schema"``).

The agent is offered a fixed eight-tool slice of the demo hub (what tool selection would
narrow the hub to; selection itself is off so every mode sees the same tools). Printed per
mode:

* ``parsed``: model turns whose reply parsed as a valid action (JSON modes: not the
  parse-failure sentinel of :func:`reactgraph.protocol.actions.parse_action`; native mode: no tool
  call with unreadable arguments);
* ``first call ok``: runs whose first tool call names an offered tool with arguments its
  argument schema accepts;
* ``id copied``: of the questions naming a machine or alarm, runs whose first tool call's
  arguments contain every id the question names (extra ids do not count against it);
* ``answered``: runs that ended with the model's final answer (not the iteration cap or
  raw content);
* ``calls/run``: mean model calls per run; ``s/run``: mean wall time per run.

Usage::

    python bench/real_model.py                      # 12 questions, 2 iterations, all modes
    python bench/real_model.py --questions 14 --max-iterations 3 --max-tokens 512
    python bench/real_model.py --questions 4 --modes json+schema
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import LLMResult
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reactgraph import AgentSettings, create_react_graph  # noqa: E402
from reactgraph.protocol.actions import parse_action  # noqa: E402
from reactgraph.demo.factory import build_factory_hub  # noqa: E402
from reactgraph.models import LocalModelServer  # noqa: E402

QUESTIONS = [
    "CNC-003 상태 확인해줘",
    "What is the current status of INJ-002?",
    "Compare CNC-001 and CNC-003",
    "List the active alarms in the plant.",
    "Explain alarm W-1105.",
    "Show the vibration trend of CNC-003.",
    "Show the maintenance history of CMP-002.",
    "What is the OEE of Line B?",
    "Which spare parts are low on stock?",
    "Is PRS-001 running normally?",
    "Give me the details of alarm E-3301.",
    "How has the temperature of INJ-002 changed over the last 5 days?",
    "RBT-002 정비 이력 보여줘",
    "What is the OEE of Line A?",
]
"""The fixed question set, each answerable with one of :data:`TOOLS`."""

TOOLS = [
    "get_equipment_status",
    "compare_equipment",
    "get_sensor_trend",
    "list_active_alarms",
    "get_alarm_details",
    "get_maintenance_history",
    "get_line_oee",
    "list_low_stock_parts",
]
"""The slice of the demo hub offered to the agent."""

MODES = ("json+schema", "json", "native")
_ID = re.compile(r"\b(?:[A-Z]{3}-\d{3}|[EWI]-\d{4})\b")


class TurnCounter(BaseCallbackHandler):
    """Counts the loop's model replies and how many parsed as a valid action."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.turns = 0
        self.parsed = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Judge one reply: JSON modes parse its content; native mode checks its tool calls."""
        message = response.generations[0][0].message
        if not isinstance(message, AIMessage):
            return
        self.turns += 1
        if self.mode == "native":
            ok = not message.invalid_tool_calls
        else:
            ok = not parse_action(message.content if isinstance(message.content, str) else "").parse_failed
        self.parsed += ok


@dataclass
class ModeResult:
    """Totals of one mode over the question set."""

    mode: str
    runs: int = 0
    turns: int = 0
    parsed: int = 0
    first_ok: int = 0
    with_id: int = 0
    id_copied: int = 0
    answered: int = 0
    calls: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


def _first_call_ok(steps: list[dict[str, Any]], tools: dict[str, Any]) -> bool:
    if not steps:
        return False
    tool = tools.get(steps[0].get("tool_name"))
    args = steps[0].get("tool_args")
    if tool is None or not isinstance(args, dict):
        return False
    try:
        tool.args_schema.model_validate(args)
    except ValidationError:
        return False
    return True


async def run_mode(server: LocalModelServer, mode: str, questions: list[str], max_iterations: int,
                   tools: list[Any]) -> ModeResult:
    """Run every question once in ``mode``; return the totals."""
    llm = server.chat_model()
    abilities = server.abilities
    if mode == "json":
        abilities = dataclasses.replace(abilities, schema_output="none")
    graph = create_react_graph(
        llm, tools, use_native_tools=mode == "native", abilities=abilities,
        settings=AgentSettings(max_iterations=max_iterations, tool_selection=False),
    )
    by_name = {tool.name: tool for tool in tools}
    result = ModeResult(mode)
    for question in questions:
        counter = TurnCounter(mode)
        began = time.perf_counter()
        try:
            state = await graph.ainvoke(
                {"messages": [HumanMessage(question)]},
                {"callbacks": [counter], "configurable": {"synthesize": False}},
            )
        except Exception as exc:  # a run that fails is counted, not fatal to the benchmark
            result.errors.append(f"{question}: {type(exc).__name__}: {exc}")
            continue
        elapsed = time.perf_counter() - began
        result.seconds += elapsed
        result.runs += 1
        result.turns += counter.turns
        result.parsed += counter.parsed
        steps = state.get("steps", [])
        result.first_ok += _first_call_ok(steps, by_name)
        wanted = _ID.findall(question)
        if wanted:
            result.with_id += 1
            args = str(steps[0].get("tool_args")) if steps else ""
            result.id_copied += all(ident in args for ident in wanted)
        result.answered += state.get("finish_reason") == "final_answer"
        result.calls += state.get("usage", {}).get("model_calls", 0)
        first = steps[0] if steps else {}
        print(f"  {mode} | {question} | first call {first.get('tool_name')} {first.get('tool_args')} | "
              f"{state.get('finish_reason')} | {counter.parsed}/{counter.turns} parsed | {elapsed:.0f} s",
              file=sys.stderr, flush=True)
    return result


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}% ({part}/{whole})" if whole else "n/a"


def table(results: list[ModeResult]) -> str:
    """The results as a markdown table."""
    lines = [
        "| mode | parsed | first call ok | id copied | answered | calls/run | s/run |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        runs = r.runs or 1
        lines.append(
            f"| {r.mode} | {_pct(r.parsed, r.turns)} | {_pct(r.first_ok, r.runs)} | {_pct(r.id_copied, r.with_id)} | "
            f"{_pct(r.answered, r.runs)} | {r.calls / runs:.1f} | {r.seconds / runs:.1f} |"
        )
    return "\n".join(lines)


async def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, start the embedded model, run the modes, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=12, help=f"how many of the {len(QUESTIONS)} questions (default 12)")
    parser.add_argument("--max-iterations", type=int, default=2,
                        help="loop iterations per run (default 2: a tool call, then the answer)")
    parser.add_argument("--max-tokens", type=int, default=256, help="output cap per model call, tokens (default 256)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    args = parser.parse_args(argv)
    questions = QUESTIONS[: max(1, min(args.questions, len(QUESTIONS)))]
    tools = [tool for tool in build_factory_hub(Path(tempfile.mkdtemp()) / "factory.db") if tool.name in TOOLS]
    results = []
    async with LocalModelServer(max_tokens=args.max_tokens) as server:
        for mode in args.modes:
            result = await run_mode(server, mode, questions, args.max_iterations, tools)
            print(f"{mode}: {result.runs} runs in {result.seconds:.0f} s", file=sys.stderr, flush=True)
            for error in result.errors:
                print(f"  failed run: {error}", file=sys.stderr)
            results.append(result)
    print(f"{len(questions)} questions, {len(tools)} tools, max_iterations={args.max_iterations}, "
          f"max_tokens={args.max_tokens}, embedded SmolLM2-135M-Instruct Q4_1 (llama.cpp)\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
