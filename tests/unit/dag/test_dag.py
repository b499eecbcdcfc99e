"""DAG mode (SPEC §9) on scripted models, one per registry role.

Planner, analyzer and synthesis run on the ``general`` model; the models here have no
tool calling and no JSON mode, so structured calls use plain text (level 3) and the
steps' loops use the JSON protocol. Step models answer from the step id in their
context, so parallel steps get deterministic replies whatever order they run in.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from reactgraph import AgentSettings, DAGAgent, DAGSettings, ModelRegistry, create_dag_graph
from reactgraph.dag.analyze import ANALYZER_SYSTEM, analysis_from_text, parse_analysis
from reactgraph.dag.plan import PLANNER_SYSTEM, find_cycle, parse_plan
from reactgraph.core.language import detect_language, phrase
from reactgraph.protocol.prompts import SYNTHESIS_SYSTEM
from reactgraph.testing import ScriptedChatModel

SETTINGS = AgentSettings(max_iterations=3, tool_timeout=1, retry_initial_delay=0.01, retry_max_delay=0.02)
STEP_ID = re.compile(r"Your task \(step (\w+) of a larger plan\)")


def step(step_id, task=None, deps=(), model_hint=None, tool_hint=None):
    return {"id": step_id, "task": task or f"do {step_id}", "dependencies": list(deps),
            "model_hint": model_hint, "tool_hint": tool_hint}


def plan(*steps):
    return json.dumps({"steps": list(steps)})


def verdict(achieved, confidence, answer=""):
    return json.dumps({"achieved": achieved, "confidence": confidence, "reasoning": "checked", "final_answer": answer})


def kind(messages: list[BaseMessage]) -> str:
    """Which call this is: planner, analyzer, synthesis, or ``step:<id>``."""
    first = messages[0].content
    if first.startswith(PLANNER_SYSTEM[:40]):
        return "planner"
    if first == ANALYZER_SYSTEM:
        return "analyzer"
    if first == SYNTHESIS_SYSTEM:
        return "synthesis"
    for message in messages:
        if isinstance(message, HumanMessage) and (found := STEP_ID.search(str(message.content))):
            return f"step:{found.group(1)}"
    return "other"


def step_reply(messages):
    step_id = kind(messages).split(":")[1]
    return json.dumps({"type": "final_answer", "reasoning": "done", "answer": f"result {step_id}"})


def general_model(planner, analyzer, steps=step_reply, **kwargs):
    """The general model: the planner and analyzer replies in turn (lists), ``steps`` for steps."""
    planner, analyzer = list(planner), list(analyzer)

    def reply(messages):
        role = kind(messages)
        if role == "planner":
            return planner.pop(0)
        if role == "analyzer":
            return analyzer.pop(0)
        return steps(messages)

    return ScriptedChatModel(responses=[reply], repeat_last=True, **kwargs)


def step_model(**kwargs):
    return ScriptedChatModel(responses=[step_reply], repeat_last=True, **kwargs)


def calls_by_kind(model):
    return [kind(messages) for messages in model.calls]


async def collect(agent, goal="Compare CNC-001 and CNC-003"):
    return [event async for event in agent.astream_events(goal)]


def of(events, channel, **match):
    return [e.data for e in events if e.channel == channel and all(e.data.get(k) == v for k, v in match.items())]


# Executor: a diamond, parallel middle steps, per-step models (R9.2, R9.3, R9.5) -----------------


async def test_diamond_runs_the_middle_steps_in_parallel_each_on_its_hinted_model(tools):
    diamond = plan(step("a", model_hint="fast"), step("b", deps=["a"], model_hint="reasoning"),
                   step("c", deps=["a"], model_hint="FAST"), step("d", deps=["b", "c"], model_hint="vision"))
    general = general_model([diamond], [verdict(True, 0.9, "final from analyzer")])
    fast, reasoning = step_model(delay=0.2), step_model(delay=0.2)
    models = ModelRegistry(general).register("fast", fast).register("reasoning", reasoning)
    agent = DAGAgent(models, tools, settings=SETTINGS)
    events = await collect(agent)

    # each step's loop calls went to the model of its hint; an unknown hint falls back to general
    assert calls_by_kind(fast) == ["step:a", "step:c"]
    assert calls_by_kind(reasoning) == ["step:b"]
    assert calls_by_kind(general) == ["planner", "step:d", "analyzer", "synthesis"]
    started = {e["step_id"]: e["model_role"] for e in of(events, "dag_step", status="started")}
    assert started == {"a": "fast", "b": "reasoning", "c": "fast", "d": "general"}

    # b and c both started before either completed: they ran in the same superstep
    progress = [(e.data["status"], e.data["step_id"]) for e in events if e.channel == "dag_step"
                and e.data["status"] in ("started", "completed")]
    middle = [item for item in progress if item[1] in "bc"]
    assert {middle[0], middle[1]} == {("started", "b"), ("started", "c")}
    assert progress[0] == ("started", "a") and progress[1] == ("completed", "a")
    assert progress[-2:] == [("started", "d"), ("completed", "d")]
    assert of(events, "dag_step", status="iteration", step_id="b") == [
        {"status": "iteration", "round": 1, "step_id": "b", "iteration": 1}]

    # d's fresh context: its task, the goal, and both dependency results
    d_context = general.calls[1][-1].content
    assert "Overall goal: Compare CNC-001 and CNC-003" in d_context and "do d" in d_context
    assert "[b] do b\nresult b" in d_context and "[c] do c\nresult c" in d_context
    assert "result a" not in d_context

    done = events[-1]
    assert done.channel == "done" and done.data["finish_reason"] == "achieved" and done.data["rounds"] == 1
    assert done.data["answer"] == "Synthesized answer."
    assert done.data["usage"]["model_calls"] == 7  # planner, 4 steps, analyzer, synthesis


async def test_concurrency_is_bounded(tools):
    wide = plan(*(step(f"s{i}") for i in range(1, 5)))
    general = general_model([wide], [verdict(True, 1.0, "ok")], delay=0.05)
    agent = DAGAgent(general, tools, settings=SETTINGS, dag_settings=DAGSettings(max_concurrency=2))
    events = await collect(agent)
    running, peak = 0, 0
    for event in of(events, "dag_step"):
        running += {"started": 1, "completed": -1}.get(event["status"], 0)
        peak = max(peak, running)
    assert peak == 2
    assert len(of(events, "dag_step", status="completed", ok=True)) == 4


async def test_dependency_results_are_cut_with_a_marker(tools):
    def long_reply(messages):
        if kind(messages) == "step:a":
            return json.dumps({"type": "final_answer", "reasoning": "", "answer": "x" * 500})
        return step_reply(messages)

    general = general_model([plan(step("a"), step("b", deps=["a"]))], [verdict(True, 1.0, "ok")], steps=long_reply)
    graph = create_dag_graph(general, tools, settings=SETTINGS, dag_settings=DAGSettings(dependency_chars=100))
    state = await graph.ainvoke({"messages": [HumanMessage("goal")]}, {"configurable": {"synthesize": False}})
    b_context = next(c for c in general.calls if kind(c) == "step:b")[-1].content
    assert "[a] do a\n" + "x" * 100 + "… [truncated]" in b_context
    assert "x" * 101 not in b_context
    assert state["results"]["a"]["result"] == "x" * 500


# Planner (R9.1) ----------------------------------------------------------------------------


async def test_a_cycle_is_rejected_and_replanned_once(tools):
    cyclic = plan(step("a", deps=["b"]), step("b", deps=["a"]))
    general = general_model([cyclic, plan(step("a"), step("b", deps=["a"]))], [verdict(True, 1.0, "ok")])
    events = await collect(DAGAgent(general, tools, settings=SETTINGS))
    planner_calls = [c for c in general.calls if kind(c) == "planner"]
    assert len(planner_calls) == 2
    assert "dependency cycle (a → b → a)" in planner_calls[1][-2].content  # then the JSON instruction
    assert [p["steps"] for p in of(events, "plan")] == [[step("a"), step("b", deps=["a"])]]
    assert events[-1].data["finish_reason"] == "achieved"


async def test_a_second_cycle_fails_clearly_without_running_a_step(tools):
    cyclic = plan(step("a", deps=["a"]), step("b"))
    general = general_model([cyclic, cyclic], [])
    agent = DAGAgent(general, tools, settings=SETTINGS)
    events = await collect(agent)
    assert calls_by_kind(general) == ["planner", "planner"]  # no step, no analyzer, no synthesis call
    errors = of(events, "error")
    # in plain words, in the goal's language (the cycle itself goes to the log)
    assert errors == [{"message": phrase("plan_cycle", detect_language("Compare CNC-001 and CNC-003")), "kind": "plan_error"}]
    assert "cycle" not in errors[0]["message"] and "→" not in errors[0]["message"]
    assert of(events, "answer", status="delta") == [{"status": "delta", "content": errors[0]["message"]}]
    assert events[-1].data["finish_reason"] == "plan_failed" and events[-1].data["answer"] == errors[0]["message"]
    result = await DAGAgent(general_model([cyclic, cyclic], []), tools, settings=SETTINGS).run("goal")
    assert result.finish_reason == "plan_failed" and result.steps == [] and result.error == phrase("plan_cycle", detect_language("goal"))


async def test_a_dangling_dependency_is_pruned_with_a_warning(tools, caplog):
    general = general_model([plan(step("a"), step("b", deps=["a", "zz"]))], [verdict(True, 1.0, "ok")])
    with caplog.at_level(logging.WARNING, logger="reactgraph.dag.plan"):
        result = await DAGAgent(general, tools, settings=SETTINGS).run("goal")
    warning = "step b: dependency 'zz' names no step of the plan and was removed"
    assert result.warnings == [warning]
    assert warning in caplog.text
    assert [(s.id, s.dependencies, s.status) for s in result.steps] == [("a", [], "completed"), ("b", ["a"], "completed")]


async def test_unreadable_plan_runs_the_goal_as_one_step(tools, caplog):
    general = general_model(["no idea", "still no idea"], [verdict(True, 1.0, "ok")])
    goal = "Please check the state of CNC-003"
    result = await DAGAgent(general, tools, settings=SETTINGS).run(goal)
    assert [(s.id, s.task) for s in result.steps] == [("s1", goal)]
    # plain words on the page, in the goal's language; the parser's reason in the log
    assert result.warnings == ["The plan could not be made; answering step by step instead."]
    assert "the planner's output could not be read" in caplog.text and "JSON" not in result.warnings[0]
    general = general_model(["no idea", "still no idea"], [verdict(True, 1.0, "ok")])
    korean = await DAGAgent(general, tools, settings=SETTINGS).run("CNC-003 확인해줘")
    assert korean.warnings == ["계획을 세우지 못해 한 단계씩 답합니다."]


def test_parse_plan_wraps_a_single_step_and_keeps_at_most_max_steps():
    steps, warnings = parse_plan({"id": 1, "task": " look up CNC-003 ", "dependencies": "x"}, 6)
    assert steps == [{"id": "1", "task": "look up CNC-003", "dependencies": [], "tool_hint": None, "model_hint": None}]
    assert warnings == ["step 1: dependency 'x' names no step of the plan and was removed"]
    many, warnings = parse_plan({"steps": [step(f"s{i}", deps=["s7"] if i == 2 else ()) for i in range(1, 8)]}, 6)
    assert [s["id"] for s in many] == ["s1", "s2", "s3", "s4", "s5", "s6"]
    assert warnings[0] == "the plan had 7 steps; only the first 6 are kept"
    assert many[1]["dependencies"] == []  # its dependency was one of the dropped steps
    with pytest.raises(ValueError, match="two steps have the id"):
        parse_plan({"steps": [step("a"), step("a")]}, 6)


def test_find_cycle_reports_the_cycle_or_none():
    assert find_cycle([step("a"), step("b", deps=["a"]), step("c", deps=["a", "b"])]) is None
    assert find_cycle([step("a", deps=["c"]), step("b", deps=["a"]), step("c", deps=["b"])]) == ["a", "c", "b", "a"]
    assert find_cycle([step("a", deps=["a"])]) == ["a", "a"]


# Failures: a failing step, its dependents, a timeout (R9.2) ---------------------------------


async def test_a_failing_step_fails_its_dependents_and_the_rest_runs(tools):
    def broken(messages):
        raise ValueError("model refused")

    general = general_model([plan(step("a", model_hint="fast"), step("b", deps=["a"]), step("c", deps=["b"]), step("d"))],
                            [verdict(False, 0.9)])
    fast = ScriptedChatModel(responses=[broken], repeat_last=True)
    agent = DAGAgent(ModelRegistry(general).register("fast", fast), tools, settings=SETTINGS)
    events = await collect(agent)
    completed = {e["step_id"]: (e["ok"], e["error"]) for e in of(events, "dag_step", status="completed")}
    assert completed == {"a": (False, "ValueError: model refused"), "d": (True, None),
                         "b": (False, "dependency failed: a"), "c": (False, "dependency failed: b")}
    assert {e["step_id"] for e in of(events, "dag_step", status="started")} == {"a", "d"}
    analyzer_prompt = next(c for c in general.calls if kind(c) == "analyzer")[1].content
    assert "[b] do b (failed: dependency failed: a)" in analyzer_prompt
    assert events[-1].data["finish_reason"] == "not_achieved"  # a confident "no": no re-plan


async def test_a_step_that_outlasts_its_timeout_fails(tools):
    general = general_model([plan(step("a", model_hint="slow"), step("b"))], [verdict(True, 1.0, "only b")])
    slow = step_model(delay=5)
    agent = DAGAgent(ModelRegistry(general).register("slow", slow), tools, settings=SETTINGS,
                     dag_settings=DAGSettings(step_timeout=1))
    result = await agent.run("goal")
    outcome = {s.id: s for s in result.steps}
    assert outcome["a"].status == "failed" and outcome["a"].error == "timed out after 1 s"
    assert 1 <= outcome["a"].elapsed < 4
    assert outcome["b"].ok and outcome["b"].result == "result b"


# Analyzer and re-planning (R9.4) ---------------------------------------------------------


async def test_not_achieved_twice_then_achieved_runs_three_rounds(tools):
    general = general_model(
        [plan(step("a"), step("b")), plan(step("c")), plan(step("e"), step("f", deps=["e"]))],
        [verdict(False, 0.3), verdict(False, 0.5), verdict(True, 0.95, "the final answer")],
    )
    general.synthesis = RuntimeError("synthesis down")
    events = await collect(DAGAgent(general, tools, settings=SETTINGS))
    assert [(a["round"], a["achieved"], a["replan"]) for a in of(events, "analysis")] == [
        (1, False, True), (2, False, True), (3, True, False)]
    planner_prompts = [c[1].content for c in general.calls if kind(c) == "planner"]
    assert len(planner_prompts) == 3
    assert "Round 1:\n[a] do a (completed)\nresult a" in planner_prompts[1]
    assert "Analysis: not achieved (confidence 0.30)" in planner_prompts[1]
    assert "Round 2:\n[c] do c (completed)\nresult c" in planner_prompts[2]
    done = events[-1].data
    assert done["rounds"] == 3 and done["finish_reason"] == "achieved"
    assert done["answer"] == "the final answer"  # synthesis failed: the analyzer's answer


async def test_rounds_stop_at_max_rounds_and_fall_back_to_the_step_results(tools):
    general = general_model([plan(step("a")), plan(step("b"), step("c"))], [verdict(False, 0.1), verdict(False, 0.1)])
    general.synthesis = ""
    agent = DAGAgent(general, tools, settings=SETTINGS, dag_settings=DAGSettings(max_rounds=2))
    events = await collect(agent)
    assert events[-1].data["finish_reason"] == "max_rounds" and events[-1].data["rounds"] == 2
    assert events[-1].data["answer"] == "result b\n\nresult c"


async def test_garbage_analyzer_output_gives_the_safe_default(tools):
    general = general_model([plan(step("a")), plan(step("b"))], ["%%%", "???", "!!!", "###"])
    agent = DAGAgent(general, tools, settings=SETTINGS, dag_settings=DAGSettings(max_rounds=2))
    events = await collect(agent)
    analyses = of(events, "analysis")
    assert [(a["achieved"], a["confidence"], a["replan"]) for a in analyses] == [(False, 0.0, True), (False, 0.0, False)]
    assert analyses[0]["reasoning"] == phrase("analysis_failed", detect_language("Compare CNC-001 and CNC-003"))
    assert "could not be read" not in analyses[0]["reasoning"]  # no parser jargon on the page
    assert calls_by_kind(general).count("analyzer") == 4  # plain text and one reformat retry per round
    assert events[-1].data["finish_reason"] == "max_rounds"


async def test_prose_analysis_is_read_by_the_regex_fallback(tools):
    general = general_model([plan(step("a"))], ["Achieved: yes. Confidence: 0.9. It is all there."])
    result = await DAGAgent(general, tools, settings=SETTINGS).run("goal")
    assert (result.achieved, result.confidence, result.finish_reason) == (True, 0.9, "achieved")
    assert calls_by_kind(general).count("analyzer") == 1


def test_analysis_parsing_clamps_confidence_and_reads_loose_values():
    assert parse_analysis({"achieved": "yes", "confidence": 7, "reasoning": "r"}) == {
        "achieved": True, "confidence": 1.0, "reasoning": "r", "final_answer": None}
    assert parse_analysis({"achieved": False, "confidence": "-0.5", "reasoning": "", "final_answer": " x "})["confidence"] == 0.0
    with pytest.raises(ValueError):
        parse_analysis({"achieved": "maybe", "confidence": 0.5, "reasoning": ""})
    assert analysis_from_text('{"achieved": false, confidence=0.4') == {
        "achieved": False, "confidence": 0.4, "reasoning": '{"achieved": false, confidence=0.4'}
    assert analysis_from_text("no verdict here") is None


# Facade -------------------------------------------------------------------------------------


async def test_run_skips_synthesis_and_stream_answer_streams_it(tools):
    general = general_model([plan(step("a"), step("b", deps=["a"]))], [verdict(True, 0.9, "draft")])
    agent = DAGAgent(general, tools, settings=SETTINGS)
    result = await agent.run("goal")
    assert "synthesis" not in calls_by_kind(general)
    assert result.answer == "draft" and result.synthesis is None and result.iterations == 2
    assert [s.model_role for s in result.steps] == ["general", "general"]
    chunks = [c async for c in agent.stream_answer("goal", result)]
    assert "".join(chunks) == "Synthesized answer." and len(chunks) > 1
    synthesis_prompt = general.calls[-1][-1].content
    assert "[b] do b (completed)\nresult b" in synthesis_prompt and "Draft answer from the assistant:\ndraft" in synthesis_prompt


# ModelRegistry (R9.3) ------------------------------------------------------------------------


def test_registry_resolves_hints_with_fallback_to_general():
    general, fast = ScriptedChatModel(), ScriptedChatModel()
    models = ModelRegistry(general).register(" Deep-Think ", fast, abilities={"tool_call": True})
    assert models.roles == ["general", "deep_think"]
    assert models.resolve("deep think").llm is fast and models.resolve("deep think").abilities.tool_call
    assert models.resolve("fast").role == "general" and models.resolve(None).llm is general
    assert "deep_think" in models and "fast" not in models
    with pytest.raises(ValueError):
        models.register("a/b", fast)


def test_registry_from_env_adds_one_role_per_variable():
    env = {"OPENAI_BASE_URL": "http://localhost:8000/v1", "REACTGRAPH_MODEL": "big",
           "REACTGRAPH_MODEL_FAST": "small", "REACTGRAPH_TOOL_CALL_FAST": "1",
           "REACTGRAPH_MODEL_REASONING": "think", "REACTGRAPH_BASE_URL_REASONING": "http://gpu:9000/v1",
           "REACTGRAPH_MODEL_SMART": " "}
    models = ModelRegistry.from_env(environ=env)
    assert models.roles == ["general", "fast", "reasoning"]
    assert models.get("general").llm.model_name == "big" and not models.get("general").abilities.tool_call
    assert models.get("fast").llm.model_name == "small" and models.get("fast").abilities.tool_call
    assert models.get("reasoning").llm.openai_api_base == "http://gpu:9000/v1"
    embedded = ScriptedChatModel()
    models = ModelRegistry.from_env(embedded, environ={"REACTGRAPH_MODEL_FAST": "small", "OPENAI_API_KEY": "k"})
    assert models.get("general").llm is embedded and models.get("fast").llm.model_name == "small"
    with pytest.raises(ValueError, match="REACTGRAPH_MODEL_FAST is set"):
        ModelRegistry.from_env(embedded, environ={"REACTGRAPH_MODEL_FAST": "small"})
    with pytest.raises(ValueError, match="no general model"):
        ModelRegistry.from_env(environ={})


def test_the_embedded_models_directory_variable_names_no_role():
    """REACTGRAPH_MODEL_DIR (where the embedded model's files are) is no REACTGRAPH_MODEL_<ROLE>."""
    embedded = ScriptedChatModel()
    models = ModelRegistry.from_env(embedded, environ={"REACTGRAPH_MODEL_DIR": "/cache/models"})
    assert models.roles == ["general"]


async def test_a_checkpointed_run_keeps_the_plan_and_results(tools):
    from langgraph.checkpoint.memory import InMemorySaver

    general = general_model([plan(step("a"), step("b", deps=["a"]))], [verdict(True, 1.0, "ok")])
    agent = DAGAgent(general, tools, settings=SETTINGS, checkpointer=InMemorySaver())
    result = await agent.run("goal", thread_id="dag-1")
    saved = (await agent.graph.aget_state({"configurable": {"thread_id": "dag-1"}})).values
    assert [s["id"] for s in saved["plan"]] == ["a", "b"]
    assert {k: v["result"] for k, v in saved["results"].items()} == {"a": "result a", "b": "result b"}
    assert saved["finish_reason"] == "achieved" and result.thread_id == "dag-1"


async def test_cli_prints_every_dag_event(tools):
    import io

    from rich.console import Console

    from reactgraph.cli.dag import print_dag_event

    def one_tool_then_answer(messages):
        if len(messages) == 2:  # system prompt and the step context: call a tool first
            return json.dumps({"type": "tool_call", "reasoning": "", "tool_name": "get_status",
                               "tool_args": {"equipment_id": "CNC-003"}})
        return step_reply(messages)

    general = general_model([plan(step("a", deps=["zz"]), step("b", deps=["a"], model_hint="slow"), step("c", deps=["b"]))],
                            [verdict(False, 0.9)], steps=one_tool_then_answer)
    models = ModelRegistry(general).register("slow", step_model(delay=5))
    agent = DAGAgent(models, tools, settings=SETTINGS, dag_settings=DAGSettings(step_timeout=1))
    out = io.StringIO()
    console = Console(file=out, width=200)
    printed = [print_dag_event(console, event) for event in await collect(agent)]
    assert printed.count(False) == 5  # answer start, two deltas ("Synthesized answer."), answer done, done
    assert [re.sub(r"\(\d+\.\ds\)", "(…s)", line) for line in out.getvalue().splitlines()] == [
        "… planning (round 1)",
        "plan, round 1",
        "  a do a",
        "  b do b · slow after a",
        "  c do c after b",
        "  ! step a: dependency 'zz' names no step of the plan and was removed",
        "▶ a on general",
        "  a ✓ get_status: CNC-003: normal",
        "■ a (…s) result a",
        "▶ b on slow",
        "■ b failed: timed out after 1 s",
        "■ c failed: dependency failed: b",
        "… analyzing (round 1)",
        "analysis: The goal is not reached yet (sure). checked",
    ]


async def test_closing_the_event_stream_cancels_the_running_step(tools):
    """A consumer that stops reading (a client disconnect) cancels the DAG run at once."""
    from langchain_core.tools import tool

    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Wait for a long time."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "finished"

    call = json.dumps({"type": "tool_call", "reasoning": "wait", "tool_name": "wait_forever", "tool_args": {}})
    general = general_model([plan(step("a"))], [verdict(True, 1.0)], steps=lambda messages: call)
    agent = DAGAgent(general, [wait_forever], settings=AgentSettings(max_iterations=3, tool_timeout=120))
    events = agent.astream_events("goal")
    async for event in events:
        if event.channel == "dag_step" and event.data["status"] == "started":
            break
    await asyncio.wait_for(started.wait(), 5)
    await events.aclose()
    await asyncio.wait_for(cancelled.wait(), 1)


async def test_a_follow_up_goals_synthesis_sees_the_threads_earlier_run(tools):
    """DAG mode's synthesis, like ReAct mode's, is shown the thread's earlier runs, so a
    follow-up goal that says "that machine" is answered about the right one."""
    from langgraph.checkpoint.memory import InMemorySaver

    general = general_model([plan(step("a")), plan(step("b"))], [verdict(True, 1.0, "CNC-003, on 2026-01-10"),
                                                                 verdict(True, 1.0, "yes")],
                            synthesis="CNC-003 was last maintained on 2026-01-10.")
    agent = DAGAgent(general, tools, settings=SETTINGS, checkpointer=InMemorySaver())
    [e async for e in agent.astream_events("When was CNC-003 last maintained?", thread_id="dag-t")]
    [e async for e in agent.astream_events("Is that machine over any limit?", thread_id="dag-t")]
    prompt = general.calls[-1][-1].content
    assert "User: When was CNC-003 last maintained?\nAssistant: CNC-003 was last maintained on 2026-01-10." in prompt
    assert prompt.index("User: When was CNC-003") < prompt.index("Question:\nIs that machine over any limit?")
