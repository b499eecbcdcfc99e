"""The Berkeley Function Calling Leaderboard's own cases and checker: reactgraph vs create_agent.

Fetches the ``bfcl-eval`` wheel (:data:`BFCL_VERSION`) with ``pip download --no-deps`` into a
cache directory (``$REACTGRAPH_HOME/bench-cache/bfcl`` when ``REACTGRAPH_HOME`` is set, else
the system's temporary directory; never committed), and reads from it:

* the cases, ``bfcl_eval/data/BFCL_v4_<category>.json`` (one JSON object a line: ``id``,
  ``question`` (turns of chat messages), ``function`` (the function docs));
* the answers, ``bfcl_eval/data/possible_answer/BFCL_v4_<category>.json``;
* the checker, ``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` (``ast_checker``). It imports
  ``bfcl_eval.constants.model_config``, which pulls in every provider SDK, so a stub module
  stands in for it: its ``MODEL_CONFIG_MAPPING`` answers every model name with
  ``underscore_to_dot = False`` (the bench maps dotted names back itself).

Each case's function docs become LangChain tools: BFCL's types (``dict``, ``float``,
``tuple``, ``any``) map to JSON schema (:func:`to_json_schema`) and a dotted name like
``math.factorial`` to ``math_factorial`` (:func:`safe_names`, and back for the checker). A
tool returns a fixed acknowledgement. The case's user turn is asked (its system message, where
it has one, is the system prompt) of:

* ``reactgraph``: :class:`reactgraph.ReActAgent` with default settings and the model's
  abilities, consumed through ``astream_events`` as the CLI does;
* ``create_agent``: ``langchain.agents.create_agent`` on the same model object and tools,
  ``recursion_limit`` 13.

The run's tool calls that ran (identical repeats dropped, names mapped back) are the model
output the checker gets, ``[{name: {arg: value}}]``: a call the engine refused before it started
(a value no one wrote, under the strict policy) did nothing, as BFCL's rule for an agent that
executes its calls reads it; ``create_agent`` runs every call. ``irrelevance`` is right when no tool was called
(BFCL's own rule); the other categories by ``ast_checker``. Cases are a fixed-seed sample.

Usage::

    python bench/bfcl.py                          # 30 cases of each category, both agents
    python bench/bfcl.py --cases 6 --json bfcl.json
    python bench/bfcl.py --categories irrelevance --cases 10 --agents reactgraph --verbose
    python bench/bfcl.py --local-models smollm2-135m qwen2.5-coder-1.5b
    python bench/bfcl.py --gate-only --cases 100 --verbose   # the lexical gate alone, no model

``--gate-only`` runs no model: it asks, for each case, whether the strict policy's lexical gate
offers its question no tool on the case's tools (:func:`gate_closed`) and prints how many cases
of each category it closes (:func:`gate_table`). Irrelevance cases closed are won whatever the
model does; a relevant case closed is lost whatever it does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import types
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

sys.path.insert(0, str(Path(__file__).resolve().parent))

import answer_quality as aq  # noqa: E402  (the shared runners and call counter)

BFCL_VERSION = "2026.3.23"
"""The ``bfcl-eval`` release whose data and checker the bench uses."""

CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance", "live_simple", "live_multiple")
"""The categories measured (BFCL v4 names)."""

AGENTS = ("reactgraph", "create_agent")

# --------------------------------------------------------------------------- the wheel


def cache_dir() -> Path:
    """Where the wheel is kept: ``$REACTGRAPH_HOME/bench-cache/bfcl``, else a folder of the
    system's temporary directory."""
    home = os.environ.get("REACTGRAPH_HOME")
    return Path(home) / "bench-cache" / "bfcl" if home else Path(tempfile.gettempdir()) / "reactgraph-bench-bfcl"


def ensure_bfcl(directory: Path | None = None) -> Path:
    """Download (once) and unpack the ``bfcl-eval`` wheel; return the folder that holds the
    ``bfcl_eval`` package.

    Raises:
        RuntimeError: ``pip download`` failed (its output is in the message).
    """
    directory = directory or cache_dir()
    unpacked = directory / f"bfcl_eval-{BFCL_VERSION}"
    if (unpacked / "bfcl_eval" / "data").is_dir():
        return unpacked
    directory.mkdir(parents=True, exist_ok=True)
    wheels = list(directory.glob(f"bfcl_eval-{BFCL_VERSION}-*.whl"))
    if not wheels:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", f"bfcl-eval=={BFCL_VERSION}",
                               "-d", str(directory)], capture_output=True, text=True, check=False)
        wheels = list(directory.glob(f"bfcl_eval-{BFCL_VERSION}-*.whl"))
        if done.returncode or not wheels:
            raise RuntimeError(f"pip download bfcl-eval=={BFCL_VERSION} failed:\n{done.stdout}\n{done.stderr}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extractall(unpacked)
    return unpacked


class _AnyModelConfig(dict):
    """``MODEL_CONFIG_MAPPING`` of the stub: every model name maps to a config whose
    ``underscore_to_dot`` is False."""

    def __missing__(self, key: str) -> Any:
        return types.SimpleNamespace(underscore_to_dot=False)


def load_checker(root: Path) -> tuple[Any, Any]:
    """Import BFCL's ``ast_checker`` and its ``Language`` enum from ``root`` (the unpacked
    wheel), with the stub ``bfcl_eval.constants.model_config`` installed first."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = _AnyModelConfig()  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    """One BFCL case: ``id``, the category, the messages of its first turn, its function docs
    and its possible answers (``[]`` for irrelevance)."""

    id: str
    category: str
    messages: list[dict[str, str]]
    functions: list[dict[str, Any]]
    answers: list[Any] = field(default_factory=list)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_cases(root: Path, category: str, count: int, seed: int) -> list[Case]:
    """The first ``count`` cases of ``category`` in an order shuffled by ``random.Random(seed)``
    (all when fewer; so the cases of a smaller count are among those of a larger one), in the
    file's order, with their possible answers."""
    data = root / "bfcl_eval" / "data"
    rows = _lines(data / f"BFCL_v4_{category}.json")
    answer_file = data / "possible_answer" / f"BFCL_v4_{category}.json"
    answers = {row["id"]: row["ground_truth"] for row in _lines(answer_file)} if answer_file.exists() else {}
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)  # a smaller --cases draws a prefix of a larger one
    chosen = sorted(order[:count])
    return [Case(rows[i]["id"], category, list(rows[i]["question"][0]), list(rows[i]["function"]),
                 answers.get(rows[i]["id"], [])) for i in chosen]


_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def to_json_schema(doc: Any) -> Any:
    """A BFCL parameter doc as JSON schema: ``dict`` -> ``object``, ``float`` -> ``number``,
    ``tuple`` -> ``array``, ``any`` -> no type; nested ``properties`` and ``items`` too.
    Every other key is kept."""
    if isinstance(doc, list):
        return [to_json_schema(item) for item in doc]
    if not isinstance(doc, dict):
        return doc
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "type" and isinstance(value, str):
            if value == "any":
                continue
            out[key] = _TYPES.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf"):
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    return out


def safe_names(names: Sequence[str]) -> dict[str, str]:
    """Tool names a provider accepts (``[A-Za-z0-9_-]``, 64 characters) for BFCL's names,
    unique: ``{safe: original}``."""
    out: dict[str, str] = {}
    for name in names:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:60] or "tool"
        safe, n = base, 2
        while safe in out:
            safe, n = f"{base}_{n}", n + 1
        out[safe] = name
    return out


def case_tools(case: Case) -> tuple[list[BaseTool], dict[str, str]]:
    """The case's functions as tools (a fixed acknowledgement as their result) and the map
    from tool name back to BFCL's name."""
    names = safe_names([f["name"] for f in case.functions])
    back = {original: safe for safe, original in names.items()}
    tools = []
    for function in case.functions:
        schema = to_json_schema(function.get("parameters") or {"type": "object", "properties": {}})
        schema.setdefault("type", "object")
        name = back[function["name"]]
        tools.append(StructuredTool.from_function(
            func=lambda _name=name, **kwargs: f"{_name} accepted the request.", name=name,
            description=str(function.get("description") or name)[:1024], args_schema=schema))
    return tools, names


def model_output(calls: Sequence[aq.Call], names: dict[str, str]) -> list[dict[str, Any]]:
    """The run's calls as BFCL's model output: ``[{bfcl_name: args}]``, the calls whose tool
    ran (one the engine refused before it started did nothing: it is no output), identical
    repeats dropped, names mapped back (a name the case does not have is kept as written)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for call in calls:
        if not call.ran:
            continue
        args = call.args if isinstance(call.args, dict) else {}
        key = json.dumps([call.tool, args], sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append({names.get(call.tool, call.tool): args})
    return out


def check(case: Case, output: list[dict[str, Any]], checker: Any, language: Any) -> tuple[bool, str]:
    """Whether ``output`` is right for ``case`` by BFCL's rules, and the checker's error.

    ``irrelevance``: right when there is no call. Otherwise :func:`ast_checker` (a checker
    exception counts as wrong, its message the error)."""
    if case.category == "irrelevance":
        return not output, "" if not output else "a tool was called"
    if not output:
        return False, "no tool call"
    try:
        result = checker(case.functions, output, case.answers, language.PYTHON, case.category, "reactgraph")
    except Exception as exc:  # noqa: BLE001 (malformed model output makes the checker raise: a wrong answer)
        return False, f"checker raised {type(exc).__name__}: {exc}"
    return bool(result.get("valid")), "; ".join(map(str, result.get("error") or []))[:300]


def _question(case: Case) -> tuple[str, str | None]:
    users = [m["content"] for m in case.messages if m.get("role") == "user"]
    system = "\n".join(m["content"] for m in case.messages if m.get("role") == "system") or None
    return "\n".join(users), system


# --------------------------------------------------------------------------- report


def score_table(results: Sequence[dict[str, Any]], agents: Sequence[str], categories: Sequence[str]) -> str:
    """The per-category Markdown table: right cases per agent, and reactgraph - create_agent
    in points (when both ran)."""
    both = "reactgraph" in agents and "create_agent" in agents
    head = "| category | cases | " + " | ".join(agents) + (" | points (reactgraph - create_agent) |" if both else " |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]

    def line(label: str, rows: list[dict[str, Any]]) -> str:
        n = len({r["id"] for r in rows}) or 1
        right = {a: sum(r["right"] for r in rows if r["agent"] == a) for a in agents}
        cells = [f"{right[a]}/{n} ({100 * right[a] / n:.0f}%)" for a in agents]
        diff = f" | {100 * (right['reactgraph'] - right['create_agent']) / n:+.0f}" if both else ""
        return f"| {label} | {n} | " + " | ".join(cells) + diff + " |"

    for category in categories:
        lines.append(line(category, [r for r in results if r["category"] == category]))
    lines.append(line("**all**", list(results)))
    for agent in agents:
        mine = [r for r in results if r["agent"] == agent]
        if mine:
            lines.append(f"\n{agent}: median {statistics.median(r['seconds'] for r in mine):.1f} s and "
                         f"{statistics.median(r['model_calls'] for r in mine):.0f} model call(s) a case, "
                         f"{sum(1 for r in mine if r['run_error'])} run(s) raised or timed out")
    return "\n".join(lines)


def gate_closed(case: Case) -> bool:
    """Whether the strict policy's lexical gate (:func:`~reactgraph.nodes.select_tools.gate_closes`,
    on the case's tools) offers ``case``'s question no tool, its language detected as a run
    detects it."""
    from reactgraph.core.language import detect_language
    from reactgraph.nodes.select_tools import gate_closes
    from reactgraph.tools.ranking import ToolRanker

    tools, _ = case_tools(case)
    question, _ = _question(case)
    return gate_closes(ToolRanker(tools), question, detect_language(question))


def gate_table(cases: Sequence[Case], categories: Sequence[str], verbose: bool = False) -> str:
    """The Markdown table of the cases the lexical gate closes per category (no model), and
    with ``verbose`` the irrelevance questions it leaves open and the relevant ones it closes."""
    lines = ["| category | cases | gate closes |", "|---|---|---|"]
    notes: list[str] = []
    for category in categories:
        mine = [case for case in cases if case.category == category]
        closed = {case.id: gate_closed(case) for case in mine}
        lines.append(f"| {category} | {len(mine)} | {sum(closed.values())} |")
        for case in mine:
            if closed[case.id] != (category == "irrelevance"):
                notes.append(f"{'closed' if closed[case.id] else 'open'}: {case.id}: {_question(case)[0][:140]!r}")
    return "\n".join(lines + ([""] + notes if verbose and notes else []))


# --------------------------------------------------------------------------- main


async def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, fetch BFCL, run every case on every agent, print the tables.

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--categories", nargs="+", choices=CATEGORIES, default=list(CATEGORIES))
    parser.add_argument("--cases", type=int, default=30, help="cases per category (default 30)")
    parser.add_argument("--seed", type=int, default=47, help="sampling seed (default 47)")
    parser.add_argument("--agents", nargs="+", choices=AGENTS, default=list(AGENTS))
    parser.add_argument("--local-models", nargs="+", metavar="NAME", help="catalogue models, one after another")
    parser.add_argument("--cache", type=Path, help=f"where the bfcl-eval wheel is kept (default {cache_dir()})")
    parser.add_argument("--run-timeout", type=float, default=600.0,
                        help="seconds a run may take before it counts as wrong (default 600)")
    parser.add_argument("--json", dest="json_out", help="write every case's outcome and the totals here")
    parser.add_argument("--verbose", action="store_true", help="print each case's output and the checker's error")
    parser.add_argument("--gate-only", action="store_true",
                        help="run no model: count the cases the strict policy's lexical gate closes")
    args = parser.parse_args(argv)
    if args.cases < 1:
        parser.error("--cases must be at least 1")
    if args.gate_only:
        root = ensure_bfcl(args.cache)
        cases = [c for category in args.categories for c in load_cases(root, category, args.cases, args.seed)]
        print(f"BFCL v4 (bfcl-eval {BFCL_VERSION}), the lexical gate alone, {args.cases} case(s) per category, "
              f"seed {args.seed}\n")
        print(gate_table(cases, args.categories, args.verbose))
        return 0

    from langchain.agents import create_agent

    from reactgraph import AgentSettings, ReActAgent
    from reactgraph.models import open_model

    root = ensure_bfcl(args.cache)
    checker, language = load_checker(root)
    cases = [c for category in args.categories for c in load_cases(root, category, args.cases, args.seed)]
    results: list[dict[str, Any]] = []
    tables: list[str] = []
    model_lines: list[str] = []
    for local_model in args.local_models or [None]:
        async with open_model(local_model=local_model) as resolved:
            print(f"model: {resolved.description} · {len(cases)} cases · agents {', '.join(args.agents)}",
                  file=sys.stderr, flush=True)
            mine: list[dict[str, Any]] = []
            for number, case in enumerate(cases, 1):
                tools, names = case_tools(case)
                question, system = _question(case)
                for agent_name in args.agents:
                    if agent_name == "create_agent":
                        graph = create_agent(resolved.llm, tools, system_prompt=system)
                        record = await aq.run_bounded(aq.run_create_agent(graph, question, 13), args.run_timeout,
                                                      agent_name, question)
                    else:
                        settings = AgentSettings(system_prompt=system) if system else AgentSettings()
                        agent = ReActAgent(resolved.llm, tools, abilities=resolved.abilities,
                                           fallbacks=resolved.fallbacks, settings=settings)
                        record = await aq.run_bounded(aq.run_reactgraph(agent, agent_name, question),
                                                      args.run_timeout, agent_name, question)
                    output = model_output(record.calls, names)
                    right, error = check(case, output, checker, language)
                    row = {"model": resolved.description, "agent": agent_name, "id": case.id,
                           "category": case.category, "right": right, "output": output, "error": error,
                           "run_error": record.error, "model_calls": record.model_calls, "seconds": record.seconds}
                    mine.append(row)
                    print(f"  [{number}/{len(cases)}] {agent_name} | {case.id} | right {right:d} | "
                          f"{record.seconds:.0f} s", file=sys.stderr, flush=True)
                    if args.verbose:
                        print(f"      output {json.dumps(output, ensure_ascii=False)[:300]} | {error[:200]}",
                              file=sys.stderr, flush=True)
            results += mine
            model_lines.append(aq.model_line(resolved))
            head = f"model: {resolved.description}\n\n" if len(args.local_models or [None]) > 1 else ""
            tables.append(head + score_table(mine, args.agents, args.categories))
    print(f"\nBFCL v4 (bfcl-eval {BFCL_VERSION}), {args.cases} case(s) per category, seed {args.seed}, "
          f"{date.today().isoformat()}\n")
    print("\n".join(model_lines) + "\n")
    print("\n\n".join(tables))
    if args.json_out:
        payload = {"date": date.today().isoformat(), "bfcl_eval": BFCL_VERSION, "seed": args.seed,
                   "cases_per_category": args.cases, "models": model_lines, "results": results,
                   "cases": [asdict(c) | {"answers": c.answers} for c in cases]}
        Path(args.json_out).write_text(json.dumps(payload, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
