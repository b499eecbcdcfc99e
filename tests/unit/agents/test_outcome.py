"""One rule for how a run ended and what it answered (:mod:`reactgraph.agents.outcome`): every finish
reason the code writes or compares against is a member of :data:`FinishReason`, and the finish
reason and the answer shown agree between the agent's result, the server's ``done`` event and
thread view, and the observer's span of the same scripted run."""

from __future__ import annotations

import ast
import asyncio
import json

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reactgraph import AgentSettings, ReActAgent, observability
from reactgraph.persistence.checkpointing import STORAGE_ERROR
from reactgraph.core.limits import LIMIT_REASONS
from reactgraph.agents.outcome import FINISH_REASONS, answer_shown, cancelled, finish_reason, is_failure
from reactgraph.agents.result import Step
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE_TOOLS_ONLY, REPO
from tests.server_cases import asgi_client
from tests.serving import parse_sse
from tests.unit.answer.test_synthesis_auto import lookup_train

PACKAGE = REPO / "reactgraph"
FINISH_NAMES = {"finish_reason", "finish", "failure_reason"}
"""Names a finish reason is written to or read from in the engine's code."""


def _names_finish(node: ast.AST) -> bool:
    """Whether ``node`` reads a finish reason: ``finish``, ``x.finish_reason``,
    ``x.get("finish_reason")``, ``x["finish_reason"]``."""
    if isinstance(node, ast.Name):
        return node.id in FINISH_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in FINISH_NAMES
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "finish_reason"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "finish_reason"
    return False


def _strings(node: ast.AST | None) -> set[str]:
    """The string constants an expression can evaluate to (the branches of ``a if c else b``,
    ``a or b``), not the keys it reads on the way (``reached["reason"]``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_strings(value) for value in node.values))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # `finish in ("a", "b")`
        return set().union(*(_strings(item) for item in node.elts))
    return set()


def produced_finish_reasons() -> dict[str, set[str]]:
    """Every string literal the package writes as a finish reason or compares one against, by
    file: dict entries and keywords ``finish_reason=…``, assignments to ``finish`` /
    ``finish_reason`` / ``failure_reason``, the reason given to the loop's final update, and
    both sides of a comparison with a finish reason."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "static" in path.parts or path.parent.name == "demo":
            continue
        values: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == "finish_reason":
                        values |= _strings(value)
            elif isinstance(node, ast.keyword) and node.arg in FINISH_NAMES:
                values |= _strings(node.value)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_names_finish(target) for target in targets):
                    values |= _strings(node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_final_update":
                values |= _strings(node.args[3]) if len(node.args) > 3 else set()
            elif isinstance(node, ast.Compare) and _names_finish(node.left):
                for right in node.comparators:
                    values |= _strings(right)
        if values:
            found[str(path.relative_to(PACKAGE))] = values
    return found


def test_every_finish_reason_the_code_writes_or_reads_is_a_member_of_the_type():
    produced = produced_finish_reasons()
    # the scan sees the places that decide a finish reason
    assert {"final_answer", "stalled", "covered", "raw_content"} <= produced["nodes/llm_call.py"]
    assert "return_direct" in produced["nodes/drain_interrupts.py"]
    assert "max_iterations" in produced["nodes/fallback.py"]
    assert {"achieved", "not_achieved", "max_rounds"} <= produced["dag/analyze.py"]
    assert "plan_failed" in produced["dag/plan.py"]
    assert "error" in produced["dag/agent.py"] and "model_error" in produced["agents/facade.py"]
    outside = {f"{file}: {value}" for file, values in produced.items() for value in values - FINISH_REASONS}
    assert outside == set()
    assert {STORAGE_ERROR, *LIMIT_REASONS} <= FINISH_REASONS


def test_the_scan_sees_a_reason_outside_the_type():
    """The scan is what the test above relies on: a new literal shows up in it."""
    source = 'def end(state):\n    return {"finish_reason": "gave_up" if state else "final_answer"}\n'
    tree = ast.parse(source)
    [node] = [n for n in ast.walk(tree) if isinstance(n, ast.Dict)]
    assert _strings(node.values[0]) - FINISH_REASONS == {"gave_up"}


@pytest.mark.parametrize(("recorded", "error", "waiting", "expected"), [
    ("final_answer", None, False, "final_answer"),
    (None, None, False, None),
    ("final_answer", None, True, "waiting"),
    (None, asyncio.CancelledError(), False, "cancelled"),
    (None, GeneratorExit(), False, "cancelled"),
    ("stalled", ConnectionError("endpoint down"), False, "model_error"),
])
def test_the_finish_reason_rule(recorded, error, waiting, expected):
    assert finish_reason(recorded, error=error, waiting=waiting) == expected
    assert finish_reason(recorded, error=error, waiting=waiting, failure_reason="error") == (
        "error" if expected == "model_error" else expected)
    assert is_failure(expected, "model_error") is (expected == "model_error")
    assert cancelled(error) is (expected == "cancelled")


def test_the_answer_shown_is_the_synthesis_even_an_empty_one_else_the_loops():
    assert answer_shown("Die Linie läuft.", "line ok") == "Die Linie läuft."
    assert answer_shown("", "line ok") == ""
    assert answer_shown(None, "ライン正常") == "ライン正常"
    assert answer_shown(None, None) == ""


def test_an_old_step_record_without_the_newer_fields_still_reads():
    """Checkpoints written before a field existed hold step dicts without it."""
    old = {"iteration": 1, "tool_call_id": "c1", "tool_name": "lookup", "tool_args": {"q": "x"},
           "observation": "found", "error": None, "elapsed": 0.2}
    step = Step.from_record(old)
    assert (step.tool_name, step.observation, step.ok, step.approval, step.unchanged, step.model) == (
        "lookup", "found", True, None, False, None)


@tool
def archive(item: str) -> str:
    """Archive an item."""
    return f"{item} archived"


TOOLS = [lookup_train, archive]


def _script(case: str) -> tuple[ScriptedChatModel, AgentSettings, str]:
    """A fresh scripted model for one way a run ends, its settings and the question."""
    call = AIMessage("", tool_calls=[tool_call("lookup_train", {"number": "ICE 578"}, "c1")])
    if case == "final_answer":
        return (ScriptedChatModel(responses=[call, "ICE 578 departs at 08:15."],
                                  synthesis="Der ICE 578 fährt um 08:15 ab."), AgentSettings(), "Wann fährt der ICE 578?")
    if case == "max_iterations":
        return (ScriptedChatModel(responses=[call], repeat_last=True, synthesis="El ICE 578 sale a las 08:15."),
                AgentSettings(max_iterations=2, stall_detection=False), "¿Cuándo sale el ICE 578?")
    if case == "waiting":
        ask = AIMessage("", tool_calls=[tool_call("archive", {"item": "report-7"}, "a1")])
        return (ScriptedChatModel(responses=[ask, "archived"], synthesis="report-7 est archivé."),
                AgentSettings(approval={"archive": "always"}), "archive report-7")
    return (ScriptedChatModel(responses=[ConnectionError("endpoint down")], repeat_last=True),
            AgentSettings(retry_initial_delay=0.001, retry_max_delay=0.002), "ICE 578 は何時に出発しますか?")


@pytest.mark.parametrize("case", ["final_answer", "max_iterations", "waiting", "model_error"])
async def test_the_result_the_done_event_the_thread_and_the_span_agree(case):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observability.instrument(tracer_provider=provider, capture_content=True, metrics=False)
    try:
        model, settings, question = _script(case)
        result = await ReActAgent(model, TOOLS, abilities=NATIVE_TOOLS_ONLY, settings=settings,
                                  checkpointer=InMemorySaver()).run(question, thread_id="direct")
        model, settings, question = _script(case)
        agent = ReActAgent(model, TOOLS, abilities=NATIVE_TOOLS_ONLY, settings=settings, checkpointer=InMemorySaver())
        async with asgi_client(create_app(agent, ServerSettings(api_key=""))) as client:
            events = parse_sse((await client.post("/threads/served/runs", json={"message": question})).text)
            thread = (await client.get("/threads/served")).json()
    finally:
        observability.uninstrument()
    [done] = [data for channel, data in events if channel == "done"]
    spans = [span for span in exporter.get_finished_spans() if span.name.startswith("invoke_agent")]
    direct, served = sorted(spans, key=lambda span: span.start_time)

    assert result.finish_reason == done["finish_reason"] == case
    assert {dict(span.attributes)["reactgraph.finish_reason"] for span in (direct, served)} == {case}
    if case == "waiting":
        assert done["answer"] == result.answer == "" and thread["status"] == "waiting"
        return
    if case == "model_error":  # the run's answer is the fallback made from its steps, as the result's
        assert done["answer"] == result.answer and "ConnectionError: endpoint down" in done["answer"]
        return
    # a finished run: the thread shows what done showed, the span says it too
    assert thread["result"]["finish_reason"] == case
    assert thread["result"]["answer"] == done["answer"] == answer_shown(done["answer"], None)
    assert thread["result"]["loop_answer"] == result.answer
    [output] = json.loads(dict(served.attributes)["gen_ai.output.messages"])
    assert output["parts"][0]["content"] == done["answer"]
