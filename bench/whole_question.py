"""Whole-question check on the embedded model: multi-part questions get data for every part,
yes/no questions get a verdict in the lead, and no answer states a value no tool returned.

A small scripted check next to ``answer_quality.py`` (whose multi-part and yes/no sections are
the bench of record): each question names, per part, the tools any of which answers that part
and, for a yes/no question, the verdict the plant's data gives. It runs the demo agent exactly
as ``reactgraph serve`` builds it (strict policy on the embedded model) and prints, per
question, the tools called, whether every part got data, the answer's first line and its
ungrounded values; then the totals.

Usage::

    python bench/whole_question.py                 # embedded default (SmolLM2-135M)
    python bench/whole_question.py --local-model qwen2.5-coder-0.5b --verbose
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

MULTI_PART: tuple[tuple[str, tuple[frozenset[str], ...]], ...] = (
    ("What's wrong with air compressor CMP-002, and do we have spare parts for it in stock?",
     (frozenset({"get_equipment_status", "list_active_alarms", "get_alarm_details", "get_sensor_trend"}),
      frozenset({"check_spare_part_stock", "find_parts_for_equipment", "list_low_stock_parts"}))),
    ("Which machines are due for inspection in the next 7 days, and are CNC-003's spare parts low?",
     (frozenset({"get_maintenance_due", "get_scheduled_maintenance"}),
      frozenset({"find_parts_for_equipment", "list_low_stock_parts", "check_spare_part_stock"}))),
    ("CNC-003 진동 수치가 왜 높아? 점검 이력도 알려줘",
     (frozenset({"get_sensor_trend", "get_equipment_status", "compare_equipment"}),
      frozenset({"get_maintenance_history", "get_maintenance_due", "get_scheduled_maintenance"}))),
    ("What is the status of PRS-001, and which alarms are active on the plant?",
     (frozenset({"get_equipment_status"}), frozenset({"list_active_alarms"}))),
    ("CMP-002 상태 알려줘. 그리고 에너지 사용량은 얼마야?",
     (frozenset({"get_equipment_status", "list_active_alarms"}),
      frozenset({"get_energy_usage", "get_top_energy_consumers"}))),
    ("Show the maintenance history of CNC-001; also list the low stock parts",
     (frozenset({"get_maintenance_history"}), frozenset({"list_low_stock_parts"}))),
)

YES_NO: tuple[tuple[str, str], ...] = (
    ("Is CMP-002 stopped?", "yes"),
    ("Is CNC-001 stopped?", "no"),
    ("Does CNC-003 have an active alarm?", "yes"),
    ("CMP-002가 멈춰 있어?", "yes"),
    ("CNC-001에 활성 알람이 있어?", "no"),
    ("Is PRS-001 in a warning state?", "no"),
)

VERDICT_WORDS = {"yes": ("Yes.", "네."), "no": ("No.", "아니요.")}


async def main(argv: list[str] | None = None) -> int:
    """Run the questions, print one line each and the totals; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local-model", help="embedded model of the catalogue (default: the configured one)")
    parser.add_argument("--verbose", action="store_true", help="print each answer")
    args = parser.parse_args(argv)

    from reactgraph.demo.agent import build_demo_agent
    from reactgraph.demo.factory import build_factory_hub
    from reactgraph.models import open_model

    parts_ok = verdicts_ok = invented = 0
    seconds: list[float] = []
    calls: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        hub = build_factory_hub(Path(tmp) / "factory.db")
        async with open_model(local_model=args.local_model) as resolved:
            agent = build_demo_agent(resolved, hub, json_mode=True, max_iterations=6)
            print(f"model: {resolved.description}", file=sys.stderr, flush=True)
            runs = [(question, parts, None) for question, parts in MULTI_PART]
            runs += [(question, (), verdict) for question, verdict in YES_NO]
            for question, parts, verdict in runs:
                started = time.perf_counter()
                done: dict = {}
                called: list[str] = []
                async for event in agent.astream_events(question):
                    if event.channel == "done":
                        done = event.data
                    elif (event.channel == "step" and event.data.get("type") == "iteration"
                          and event.data.get("status") == "done" and not event.data.get("error")):
                        called.append(str(event.data.get("tool_name")))
                seconds.append(time.perf_counter() - started)
                calls.append(int((done.get("usage") or {}).get("model_calls", 0)))
                answer = str(done.get("answer") or "")
                lead = answer.strip().splitlines()[0] if answer.strip() else ""
                ungrounded = list((done.get("grounding") or {}).get("ungrounded") or [])
                invented += bool(ungrounded)
                if parts:
                    ok = all(any(name in wanted for name in called) for wanted in parts)
                    parts_ok += ok
                    mark = f"parts {'ok' if ok else 'MISSING'}"
                else:
                    ok = lead.startswith(VERDICT_WORDS[verdict])
                    verdicts_ok += ok
                    mark = f"verdict {'ok' if ok else 'WRONG'} (want {verdict})"
                print(f"{mark:28} | {seconds[-1]:5.1f} s | calls {calls[-1]} | {question} | tools {called} | "
                      f"lead: {lead[:90]}" + (f" | UNGROUNDED {ungrounded}" if ungrounded else ""), flush=True)
                if args.verbose:
                    print(answer, "\n", flush=True)
    print(f"\nmulti-part: every part answered {parts_ok}/{len(MULTI_PART)} · yes/no: right verdict in the lead "
          f"{verdicts_ok}/{len(YES_NO)} · answers with invented values {invented} · median "
          f"{statistics.median(seconds):.1f} s · median calls {statistics.median(calls):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
