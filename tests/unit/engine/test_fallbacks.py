"""Fallback models with scripted models: ``with_fallbacks`` chains, the policy,
the conversion of the history between loop modes, synthesis (only before its first token),
compaction, tool selection and ``structured_llm_call``, unparseable JSON outputs, the
circuit breaker, records and sync runs. Every message list a scripted model is sent is
checked with ``check_protocol``."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import (
    AgentSettings,
    CircuitBreaker,
    FallbackModel,
    ModelAbilities,
    ModelTimeoutError,
    ReActAgent,
    check_protocol,
    create_react_graph,
    structured_llm_call,
)
from reactgraph.engine.deadlines import (
    DEFAULT_FIRST_TOKEN_TIMEOUT,
    DEFAULT_MODEL_TIMEOUT,
    MODEL_FIRST_TOKEN_TIMEOUT_ENV,
    MODEL_TIMEOUT_ENV,
    ModelDeadline,
    stream_within_deadline,
)
from reactgraph.engine.fallbacks import unpack_fallbacks
from reactgraph.models.env import model_from_env
from reactgraph.protocol.messages import in_mode_form
from reactgraph.providers import get_profile
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE_TOOLS_ONLY, PROMPTED, SMALL, log_calls, read_log

FAST = AgentSettings(model_attempts=2, retry_initial_delay=0.01, retry_max_delay=0.02, synthesis="always")


class Unavailable(Exception):
    """A provider error with an HTTP status, as OpenAI's client raises them."""

    def __init__(self, status: int, message: str = "unavailable") -> None:
        super().__init__(message)
        self.status_code = status


@tool
def get_status(equipment_id: str) -> str:
    """The state of one machine."""
    return f"{equipment_id}: normal, 71% utilization"


def status_call(call_id: str = "c1") -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-001"}, call_id)])


def action(kind: str, **fields: Any) -> str:
    import json

    return json.dumps({"type": kind, "reasoning": "r", **fields})


def dead(**kwargs: Any) -> ScriptedChatModel:
    return ScriptedChatModel(responses=[Unavailable(503)], repeat_last=True, synthesis=Unavailable(503), **kwargs)


async def events_of(agent: ReActAgent, query: str = "CNC-001?") -> list[Any]:
    return [event async for event in agent.astream_events(query)]


# ------------------------------------------------------------------ the chain and the policy


def test_a_with_fallbacks_chain_is_unpacked_in_order():
    a, b, c = (ScriptedChatModel(responses=["x"]) for _ in range(3))
    assert unpack_fallbacks(a.with_fallbacks([b.with_fallbacks([c])])) == (a, [b, c])
    assert unpack_fallbacks(a) == (a, [])


async def test_an_agent_takes_a_with_fallbacks_chain_and_its_fallback_answers():
    backup = ScriptedChatModel(responses=[status_call(), "CNC-001 is normal."], synthesis="**CNC-001** is normal.")
    agent = ReActAgent(dead().with_fallbacks([backup]), [get_status], abilities=NATIVE_TOOLS_ONLY, settings=FAST)
    assert agent.mode == "native" and [m.label for m in agent.engine.models] == ["ScriptedChatModel", "ScriptedChatModel#2"]
    # the fallback reads its own abilities from its profile: none say it calls tools, so JSON mode
    assert agent.engine.fallbacks[0].mode == "json"
    result = await agent.run("CNC-001?")
    assert result.model == "ScriptedChatModel#2" and result.finish_reason == "raw_content"


def test_the_profile_tells_permanent_from_transient_failures():
    profile = get_profile("openai")
    context = Unavailable(400, "This model's maximum context length is 8192 tokens")
    assert profile.is_permanent(context) and not profile.is_transient(context) and profile.falls_back(context)
    assert profile.is_permanent(Unavailable(404, "The model `gpt-9` does not exist"))
    assert profile.falls_back(Unavailable(429)) and profile.falls_back(ConnectionError("reset"))
    refused = Unavailable(400, "response_format json_schema is not supported")
    assert not profile.falls_back(refused)  # a refused request shape is the engine's to handle, not a switch


async def test_a_permanent_error_switches_at_once_and_a_refused_request_does_not_switch():
    primary = ScriptedChatModel(responses=[Unavailable(400, "maximum context length exceeded")], repeat_last=True)
    backup = ScriptedChatModel(responses=["fine"])
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=FAST,
                       fallbacks=[FallbackModel(backup, NATIVE_TOOLS_ONLY, name="backup")])
    result = await agent.run("CNC-001?")
    assert (result.answer, result.model, len(primary.calls)) == ("fine", "backup", 1)  # no retry of a permanent error

    refusing = ScriptedChatModel(responses=[Unavailable(400, "bad request")], repeat_last=True)
    untouched = ScriptedChatModel(responses=["never"])
    agent = ReActAgent(refusing, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=FAST,
                       fallbacks=[FallbackModel(untouched, NATIVE_TOOLS_ONLY)])
    result = await agent.run("CNC-001?")
    assert result.finish_reason == "model_error" and untouched.calls == []


async def test_transient_failures_are_retried_before_the_fallback_and_each_call_is_recorded():
    primary = ScriptedChatModel(responses=[status_call("p1"), Unavailable(503), Unavailable(503)])
    backup = ScriptedChatModel(responses=["CNC-001 is normal."], synthesis="**CNC-001** normal.")
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=FAST,
                       fallbacks=[FallbackModel(backup, NATIVE_TOOLS_ONLY, name="backup")])
    events = await events_of(agent)
    assert len(primary.kinds) == 1 + FAST.model_attempts  # its own retries first
    switch = [e.data for e in events if e.channel == "model_switch"]
    assert switch == [{"previous": "ScriptedChatModel", "model": "backup", "reason": "transient", "call": "loop",
                       "error": "Unavailable: unavailable"}]
    done = events[-1].data
    assert done["model"] == "backup" and done["answer"] == "**CNC-001** normal."
    assert done["model_usage"] == {"ScriptedChatModel": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                                                         "model_calls": 1},
                                   "backup": {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30,
                                              "model_calls": 2}}
    # the fallback got the primary's tool call and its result, in native form
    sent = backup.calls[0]
    assert isinstance(sent[-2], AIMessage) and sent[-2].tool_calls[0]["id"] == "p1" and isinstance(sent[-1], ToolMessage)


async def test_step_records_name_the_model_that_asked():
    primary = ScriptedChatModel(responses=[status_call("p1"), Unavailable(503)], repeat_last=True)
    backup = ScriptedChatModel(responses=[status_call("b1").model_copy(update={"tool_calls": [
        tool_call("get_status", {"equipment_id": "CNC-002"}, "b1")]}), "done"])
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=FAST,
                       fallbacks=[FallbackModel(backup, NATIVE_TOOLS_ONLY, name="backup")])
    result = await agent.run("CNC-001 and CNC-002?")
    assert [(s.tool_args["equipment_id"], s.model) for s in result.steps] == [("CNC-001", "ScriptedChatModel"),
                                                                          ("CNC-002", "backup")]


async def test_without_fallbacks_nothing_changes():
    model = ScriptedChatModel(responses=[status_call(), "ok"])
    result = await ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY).run("CNC-001?")
    assert result.model is None and result.model_usage == {} and result.steps[0].model is None


# ------------------------------------------------------------------ modes and the history


def test_the_history_converts_between_the_modes_and_back():
    native = [HumanMessage("CNC-001 and CNC-002?"),
              AIMessage("checking", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-001"}, "a"),
                                                tool_call("get_status", {"equipment_id": "CNC-002"}, "b")]),
              ToolMessage("CNC-001: normal", tool_call_id="a", name="get_status"),
              ToolMessage("CNC-002: down", tool_call_id="b", name="get_status"),
              AIMessage("CNC-001 normal, CNC-002 down.")]
    as_json = in_mode_form(native, "json")
    check_protocol(as_json)
    assert [type(m).__name__ for m in as_json] == ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage",
                                                   "HumanMessage", "AIMessage"]
    assert '"tool_name": "get_status"' in as_json[1].content and "CNC-002: down" in as_json[4].content
    assert in_mode_form(as_json, "json") == as_json  # already in the form: unchanged
    back = in_mode_form(as_json, "native")
    check_protocol(back)
    calls = [m.tool_calls[0] for m in back if isinstance(m, AIMessage) and m.tool_calls]
    assert [(c["name"], c["args"]) for c in calls] == [("get_status", {"equipment_id": "CNC-001"}),
                                                      ("get_status", {"equipment_id": "CNC-002"})]
    results = [m for m in back if isinstance(m, ToolMessage)]
    assert [r.content for r in results] == ["CNC-001: normal", "CNC-002: down"]
    final = in_mode_form([AIMessage(action("final_answer", answer="All fine."))], "native")
    assert final[0].content == "All fine."


async def test_native_to_json_fallback_gets_the_calls_as_actions_and_observations():
    primary = ScriptedChatModel(responses=[status_call("p1"), ConnectionError("reset")], repeat_last=True)
    backup = ScriptedChatModel(responses=[action("final_answer", answer="CNC-001 is normal.")])
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=FAST,
                       fallbacks=[FallbackModel(backup, PROMPTED, name="local")])
    result = await agent.run("CNC-001?")
    assert (result.answer, result.model, result.finish_reason) == ("CNC-001 is normal.", "local", "final_answer")
    sent = backup.calls[0]
    assert isinstance(sent[0], SystemMessage) and '"tool_call"' in sent[0].content  # the JSON-mode protocol
    assert not any(isinstance(m, ToolMessage) or getattr(m, "tool_calls", None) for m in sent)
    assert sent[-1].content.startswith("Observation from get_status:")
    assert backup.call_kwargs[0].get("tools") is None


async def test_a_turn_starts_on_a_fallback_of_the_other_mode_when_the_breaker_skips_the_model():
    primary = dead()
    backup = ScriptedChatModel(responses=[action("final_answer", answer="one"), action("final_answer", answer="two")])
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(model_attempts=3,
                       retry_initial_delay=0.01, retry_max_delay=0.02, breaker_failures=3),
                       fallbacks=[FallbackModel(backup, PROMPTED, name="local")])
    first = await agent.run("CNC-001?")
    assert first.answer == "one" and len(primary.calls) == 3
    second = await agent.run("CNC-001?")
    assert (second.answer, second.model, len(primary.calls)) == ("two", "local", 3)  # skipped: no call, no retry


async def test_unparseable_json_outputs_hand_the_loop_over_when_asked():
    primary = ScriptedChatModel(responses=["not json at all"], repeat_last=True)
    backup = ScriptedChatModel(responses=[action("final_answer", answer="parsed.")])
    settings = AgentSettings(fallback_parse_failures=1)
    agent = ReActAgent(primary, [get_status], abilities=PROMPTED, settings=settings,
                       fallbacks=[FallbackModel(backup, PROMPTED, name="backup")])
    events = await events_of(agent)
    assert [e.data["reason"] for e in events if e.channel == "model_switch"] == ["unparseable"]
    assert events[-1].data["model"] == "backup" and len(primary.calls) == 1
    assert backup.calls[0][-1].content != "not json at all"  # the reformat request was kept for it


# ------------------------------------------------------------------ synthesis, compaction, selection, structured


async def test_synthesis_falls_back_before_its_first_token():
    primary = ScriptedChatModel(responses=["CNC-001 is normal."], synthesis=Unavailable(503))
    backup = ScriptedChatModel(responses=["unused"], synthesis="**CNC-001** is normal.")
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(synthesis="always"),
                       fallbacks=[FallbackModel(backup, NATIVE_TOOLS_ONLY, name="backup")])
    events = await events_of(agent)
    assert [(e.data["call"], e.data["model"]) for e in events if e.channel == "model_switch"] == [("synthesis", "backup")]
    done = events[-1].data
    assert done["answer"] == "**CNC-001** is normal." and done["model"] == "ScriptedChatModel"
    assert done["model_usage"]["backup"]["model_calls"] == 1 and done["model_usage"]["ScriptedChatModel"]["model_calls"] == 1


async def test_synthesis_that_breaks_after_its_first_token_ends_as_before():
    primary = ScriptedChatModel(responses=["CNC-001 is normal."], synthesis="one two FAIL_MIDWAY four")
    backup = ScriptedChatModel(responses=["unused"], synthesis="never sent")
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(synthesis="always"),
                       fallbacks=[FallbackModel(backup, NATIVE_TOOLS_ONLY)])
    events = await events_of(agent)
    assert backup.calls == [] and not [e for e in events if e.channel == "model_switch"]
    assert events[-1].data["answer"] == "one two \n\nCNC-001 is normal."  # the loop's answer after a blank line (R3.2)


async def test_compaction_falls_back_to_the_next_model():
    loop = iter([*log_calls(4), AIMessage("CNC-003 정상")])

    def respond(messages):
        if messages[0].content.startswith("You compact the history"):
            raise Unavailable(503)
        return next(loop)

    primary = ScriptedChatModel(responses=[respond], repeat_last=True)
    backup = ScriptedChatModel(responses=["SUMMARY-TEXT CNC-001 CNC-002 read"], repeat_last=True)
    graph = create_react_graph(primary, [read_log], abilities=SMALL, fallbacks=[FallbackModel(backup, SMALL, name="b")])
    state = await graph.ainvoke({"messages": [HumanMessage("CNC-003 상태 확인해줘")]},
                                {"configurable": {"synthesize": False}})
    assert backup.calls and all(call[0].content.startswith("You compact the history") for call in backup.calls)
    assert any(str(m.content).startswith("[Summary") or "SUMMARY-TEXT" in str(m.content) for m in state["messages"])
    assert state["model_usage"]["b"]["model_calls"] == len(backup.calls)


async def test_structured_llm_call_goes_on_with_the_next_model():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    primary = ScriptedChatModel(responses=[Unavailable(503)], repeat_last=True)
    backup = ScriptedChatModel(responses=['{"n": 3}'])
    breaker = CircuitBreaker(failures=1)
    result = await structured_llm_call(FallbackModel(primary, {"tool_call": True, "json_mode": True}, "p", breaker),
                                       [HumanMessage("n?")], schema, fallbacks=[(backup, {"json_mode": True})])
    assert (result.value, result.level, result.calls) == ({"n": 3}, 2, 2)
    assert len(primary.calls) == 1 and breaker.state == "open"  # its other levels were not tried
    again = await structured_llm_call(FallbackModel(primary, None, "p", breaker), [HumanMessage("n?")], schema,
                                      fallbacks=[ScriptedChatModel(responses=['{"n": 4}'])])
    assert again.value == {"n": 4} and len(primary.calls) == 1  # its breaker is open: skipped


async def test_tool_selection_goes_on_with_the_next_model():
    tools = [read_log, get_status, *[tool(f"t{i}", description=f"Tool number {i} for plant data.")(lambda: "x")
                                     for i in range(3)]]
    primary = ScriptedChatModel(by_kind={"selection": [Unavailable(503)]}, responses=["CNC-001 is normal."])
    backup = ScriptedChatModel(responses=['{"tools": ["get_status"]}'])
    settings = AgentSettings(tool_selection=True, tool_selection_threshold=2)
    agent = ReActAgent(primary, tools, abilities=NATIVE_TOOLS_ONLY, settings=settings,
                       fallbacks=[FallbackModel(backup, {"json_mode": True}, name="b")])
    events = await events_of(agent, "status of CNC-001")
    assert [(e.data["call"], e.data["model"]) for e in events if e.channel == "model_switch"] == [("structured", "b")]
    assert primary.kinds[0] == "selection" and backup.kinds == ["selection"]
    # the node's usage goes to the model that answered: the backup's call and the failed request
    assert events[-1].data["model_usage"]["b"]["model_calls"] == 2


# ------------------------------------------------------------------ the breaker and sync runs


def test_the_circuit_breaker_opens_cools_down_and_closes():
    now = [0.0]
    breaker = CircuitBreaker(failures=2, window=10.0, cooldown=5.0, clock=lambda: now[0])
    breaker.record_failure()
    now[0] = 11.0  # the first failure left the window
    breaker.record_failure()
    assert breaker.state == "closed"
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allows() and breaker.snapshot()["retry_in"] == 5.0
    now[0] = 16.0
    assert breaker.state == "half_open" and breaker.allows()
    breaker.record_failure()  # the try after the cool-down failed: open again at once
    assert breaker.snapshot() == {"state": "open", "recent_failures": 0, "times_opened": 2, "retry_in": 5.0}
    now[0] = 21.0
    breaker.record_success()
    assert breaker.state == "closed"


def test_a_sync_run_falls_back_too():
    primary = dead()
    backup = ScriptedChatModel(responses=["CNC-001 is normal."], synthesis="**CNC-001** normal.")
    graph = create_react_graph(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=FAST,
                               fallbacks=[FallbackModel(backup, NATIVE_TOOLS_ONLY, name="b")])
    state = graph.invoke({"messages": [HumanMessage("CNC-001?")]})
    assert state["synthesis"] == "**CNC-001** normal." and state["model"] == "b"
    assert set(backup.apis) <= {"generate", "stream"}


def test_bad_fallback_settings_are_refused():
    with pytest.raises(ValueError, match="fallback_parse_failures"):
        AgentSettings(fallback_parse_failures=0)
    with pytest.raises(ValueError, match="breaker_failures"):
        AgentSettings(breaker_failures=0)
    with pytest.raises(TypeError, match="a fallback must be"):
        ReActAgent(ScriptedChatModel(responses=["x"]), [get_status], fallbacks=["gpt-4o"])


# ------------------------------------------------------------------ the CLI, the environment and the server


def test_fallback_models_come_from_the_command_line_or_the_environment():
    from reactgraph.cli.options import build_parser
    from reactgraph.models.env import fallback_specs

    args = build_parser().parse_args(["serve", "--fallback-model", "llama3.1:8b", "--fallback-base-url",
                                 "http://localhost:11434/v1", "--fallback-model", "embedded"])
    assert fallback_specs(args.fallback_models, args.fallback_base_urls, {}) == [
        ("llama3.1:8b", "http://localhost:11434/v1"), ("embedded", None)]
    run = build_parser().parse_args(["run", "q?", "--fallback-model", "gpt-4o"])
    assert run.fallback_models == ["gpt-4o"] and run.fallback_base_urls is None
    env = {"REACTGRAPH_FALLBACK_MODELS": "gpt-4o-mini, qwen", "REACTGRAPH_FALLBACK_BASE_URLS": ",http://vllm:8000/v1"}
    assert fallback_specs(None, None, env) == [("gpt-4o-mini", None), ("qwen", "http://vllm:8000/v1")]
    assert fallback_specs(["x"], None, env) == [("x", None)]  # the command line wins
    assert fallback_specs(None, None, {}) == []
    with pytest.raises(ValueError, match="2 fallback base URLs for 1 fallback models"):
        fallback_specs(["a"], ["http://a/v1", "http://b/v1"], {})
    with pytest.raises(ValueError, match="empty"):
        fallback_specs(None, None, {"REACTGRAPH_FALLBACK_MODELS": "a,,b"})


async def test_open_model_builds_each_fallback_at_its_endpoint():
    from reactgraph.models import open_model

    env = {"OPENAI_BASE_URL": "http://primary:8000/v1", "REACTGRAPH_MODEL": "big",
           "REACTGRAPH_FALLBACK_MODELS": "small,other", "REACTGRAPH_FALLBACK_BASE_URLS": "http://backup:9000/v1"}
    async with open_model(environ=env) as resolved:
        assert [(f.llm.model_name, f.llm.openai_api_base) for f in resolved.fallbacks] == [
            ("small", "http://backup:9000/v1"), ("other", "http://primary:8000/v1")]
        agent = ReActAgent(resolved.llm, [get_status], fallbacks=resolved.fallbacks)
        assert [m.label for m in agent.engine.models] == ["big", "small", "other"]


async def test_the_server_streams_the_switch_and_shows_each_models_breaker():
    from reactgraph.server import ServerSettings, create_app
    from tests.serving import parse_sse
    from tests.server_cases import asgi_client

    backup = ScriptedChatModel(responses=["CNC-001 is normal."], repeat_last=True, synthesis="**CNC-001** normal.")
    agent = ReActAgent(dead(), [get_status], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(
        model_attempts=3, retry_initial_delay=0.01, retry_max_delay=0.02, breaker_failures=3),
        fallbacks=[FallbackModel(backup, NATIVE_TOOLS_ONLY, name="backup")])
    async with asgi_client(create_app(agent, ServerSettings(api_key=""))) as client:
        before = (await client.get("/healthz")).json()
        events = parse_sse((await client.post("/threads/t/runs", json={"message": "CNC-001?"})).text)
        after = (await client.get("/healthz")).json()
    assert [m["name"] for m in before["models"]] == ["ScriptedChatModel", "backup"]
    assert [m["state"] for m in before["models"]] == ["closed", "closed"]
    assert ("model_switch", {"previous": "ScriptedChatModel", "model": "backup", "reason": "transient",
                             "call": "loop", "error": "Unavailable: unavailable"}) in events
    assert events[-1][0] == "done" and events[-1][1]["model"] == "backup"
    primary = after["models"][0]
    assert primary["state"] == "open" and primary["recent_failures"] == 0 and primary["times_opened"] == 1
    assert 0 < primary["retry_in"] <= 30


def test_each_fallback_gets_its_own_safeguard_policy():
    from reactgraph.policy.safeguards import PERMISSIVE, STRICT

    agent = ReActAgent(ScriptedChatModel(responses=["x"]), [get_status], abilities=NATIVE_TOOLS_ONLY,
                       settings=AgentSettings(grounding="report"),
                       fallbacks=[FallbackModel(ScriptedChatModel(responses=["y"]), ModelAbilities(small=True))])
    capable, small = agent.engine.models
    assert capable.settings.optional_args == PERMISSIVE.settings["optional_args"]
    assert small.settings.optional_args == STRICT.settings["optional_args"] != PERMISSIVE.settings["optional_args"]
    assert capable.settings.grounding == small.settings.grounding == "report"  # what the caller set wins for both
    assert (capable.settings.synthesis, small.settings.synthesis) == ("auto", "always")  # each policy's default


# ------------------------------------------------------------------ DAG roles


def test_dag_roles_name_their_own_fallback_lists():
    from reactgraph import ModelRegistry

    env = {"OPENAI_BASE_URL": "http://primary:8000/v1", "REACTGRAPH_MODEL": "big", "REACTGRAPH_FALLBACK_MODELS": "medium",
           "REACTGRAPH_MODEL_FAST": "tiny", "REACTGRAPH_FALLBACK_MODELS_FAST": "tiny-2,tiny-3",
           "REACTGRAPH_FALLBACK_BASE_URLS_FAST": "http://other:9000/v1", "REACTGRAPH_MODEL_SMART": "huge"}
    registry = ModelRegistry.from_env(environ=env)
    names = {role: [(f.llm.model_name, f.llm.openai_api_base) for f in registry.get(role).fallbacks]
             for role in registry.roles}
    assert names == {"general": [("medium", "http://primary:8000/v1")],
                     "fast": [("tiny-2", "http://other:9000/v1"), ("tiny-3", "http://primary:8000/v1")],
                     "smart": []}  # a role names its own list; none when unset
    with pytest.raises(ValueError, match="embedded"):
        ModelRegistry.from_env(environ={**env, "REACTGRAPH_FALLBACK_MODELS_FAST": "embedded"})


async def test_a_dag_step_and_the_planner_go_on_with_the_roles_fallback():
    from reactgraph import DAGAgent, ModelRegistry

    plan = '{"steps": [{"id": "a", "task": "read CNC-001", "dependencies": []}]}'
    final = action("final_answer", answer="CNC-001 read")
    analysis = '{"achieved": true, "confidence": 0.9, "reasoning": "ok", "final_answer": "CNC-001 is normal"}'
    backup = ScriptedChatModel(responses=[plan, action("tool_call", tool_name="get_status",
                                                       tool_args={"equipment_id": "CNC-001"}), final, analysis],
                               synthesis="**CNC-001** is normal.")
    registry = ModelRegistry(dead(), abilities=PROMPTED, fallbacks=[FallbackModel(backup, PROMPTED, name="backup")])
    agent = DAGAgent(registry, [get_status], settings=AgentSettings(model_attempts=1))
    events = [event async for event in agent.astream_events("Check CNC-001")]
    calls = [e.data["call"] for e in events if e.channel == "model_switch"]
    assert calls == ["structured", "structured", "synthesis"]  # the planner, the analyzer, the synthesis
    assert [e.data["ok"] for e in events if e.channel == "dag_step" and e.data.get("status") == "completed"] == [True]
    assert backup.kinds.count("tool_loop") == 2  # the step's loop went on with the fallback too
    assert events[-1].data["answer"] == "**CNC-001** is normal."


async def test_a_fallback_with_a_smaller_window_gets_the_history_compacted_to_fit_it():
    def compaction(messages) -> bool:
        return messages[0].content.startswith("You compact the history")

    primary = ScriptedChatModel(responses=[*log_calls(3), Unavailable(503)], repeat_last=True)

    def respond(messages):
        return AIMessage("SUMMARY: CNC-001..003 logs read") if compaction(messages) else AIMessage("CNC-003 정상")

    backup = ScriptedChatModel(responses=[respond], repeat_last=True)
    big = ModelAbilities(tool_call=True, context_window=200_000, max_output_tokens=1_000)
    agent = ReActAgent(primary, [read_log], abilities=big, settings=FAST,
                       fallbacks=[FallbackModel(backup, SMALL, name="small")])  # a 9,000-token window
    events = await events_of(agent, "CNC-001, CNC-002, CNC-003 logs?")
    assert not any(compaction(call) for call in primary.calls)  # its own window held the history
    assert [compaction(call) for call in backup.calls][:2] == [True, False]  # compacted before its first call
    assert [e.channel for e in events].count("compact") >= 1 and events[-1].data["model"] == "small"


async def test_the_answer_of_a_run_a_small_fallback_served_is_checked_under_its_policy():
    from reactgraph.policy.safeguards import STRICT

    backup = ScriptedChatModel(responses=[status_call("b1"), "CNC-001: normal, 71% utilization."],
                               synthesis="CNC-001 is normal at 71% utilization.")
    agent = ReActAgent(dead(), [get_status], abilities=NATIVE_TOOLS_ONLY, settings=FAST,
                       fallbacks=[FallbackModel(backup, ModelAbilities(tool_call=True, small=True), name="small")])
    events = await events_of(agent)
    done = events[-1].data
    assert done["model"] == "small" and done["grounding"]["mode"] == STRICT.settings["grounding"]


async def test_the_command_line_prints_the_switch_and_the_serving_model():
    from rich.console import Console

    from reactgraph.cli.view import print_events
    from reactgraph.events import Done, ModelSwitched

    async def events():
        yield ModelSwitched(previous="gpt-4o-mini", model="SmolLM2-135M-Instruct", reason="transient", call="loop",
                            error="APIConnectionError: Connection error.")
        yield Done(answer="a", iterations=1, usage={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                                                    "model_calls": 2}, elapsed=0.1, finish_reason="final_answer",
                   thread_id="t", model="SmolLM2-135M-Instruct", model_usage={})

    console = Console(record=True, width=200)
    await print_events(console, events())
    text = console.export_text()
    assert "gpt-4o-mini failed (transient): the loop call goes on with SmolLM2-135M-Instruct" in text
    assert "Answered in 0.1 s · 1 step · 2 tokens (1 in, 1 out) in 2 model calls · " \
           "model: SmolLM2-135M-Instruct" in text


def test_ag_ui_clients_get_the_switch_as_a_custom_event():
    from tests.unit.server.test_agui import mapped

    from reactgraph.events import ModelSwitched

    switch = ModelSwitched(previous="a", model="b", reason="permanent", call="loop", error="E: context length")
    assert ("CUSTOM", {"name": "model_switch", "value": switch.data}) in mapped(switch)


async def test_a_cost_limit_counts_each_models_usage_at_its_own_price():
    from reactgraph import ModelPrice, UsageLimits

    class Named(ScriptedChatModel):
        model_name: str

    cheap = Named(model_name="cheap", responses=[Unavailable(503)], repeat_last=True)
    dear = Named(model_name="dear", responses=[status_call("d1"), status_call("d2").model_copy(update={"tool_calls": [
        tool_call("get_status", {"equipment_id": "CNC-002"}, "d2")]}), "done"])
    limits = UsageLimits(cost=20.0, prices={"cheap": ModelPrice(0, 0), "dear": ModelPrice(1_000_000, 1_000_000)})
    agent = ReActAgent(cheap, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=AgentSettings(
        model_attempts=1, limits=limits), fallbacks=[FallbackModel(dear, NATIVE_TOOLS_ONLY)])
    result = await agent.run("CNC-001 and CNC-002?")
    # each call of "dear" is 10 input + 5 output tokens at 1 per token: the second reaches 30 >= 20
    assert (result.finish_reason, result.limit["used"], result.model) == ("cost_limit", 30.0, "dear")


# ------------------------------------------------------------------ model deadlines


def test_the_model_deadline_comes_from_the_settings_else_the_environment_else_the_default(monkeypatch):
    monkeypatch.delenv(MODEL_TIMEOUT_ENV, raising=False)
    monkeypatch.delenv(MODEL_FIRST_TOKEN_TIMEOUT_ENV, raising=False)
    assert AgentSettings().model_deadline == ModelDeadline(DEFAULT_MODEL_TIMEOUT, DEFAULT_FIRST_TOKEN_TIMEOUT)
    monkeypatch.setenv(MODEL_TIMEOUT_ENV, "42")
    monkeypatch.setenv(MODEL_FIRST_TOKEN_TIMEOUT_ENV, "inf")
    assert AgentSettings().model_deadline == ModelDeadline(42.0, math.inf)
    assert AgentSettings(model_timeout=7, model_first_token_timeout=2).model_deadline == ModelDeadline(7, 2)
    assert model_from_env(model="m", base_url="http://127.0.0.1:9/v1", environ={}).request_timeout == DEFAULT_MODEL_TIMEOUT
    assert model_from_env(model="m", base_url="http://127.0.0.1:9/v1", environ={MODEL_TIMEOUT_ENV: "12"}).request_timeout == 12
    for bad in (0, -1, math.nan, "10"):
        with pytest.raises(ValueError, match="model_timeout must be positive seconds"):
            AgentSettings(model_timeout=bad)
    monkeypatch.setenv(MODEL_TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=MODEL_TIMEOUT_ENV):
        AgentSettings().model_deadline


async def test_a_stream_that_stops_after_its_first_chunk_fails_at_the_total_deadline():
    closed = asyncio.Event()

    async def chunks():
        try:
            yield "Guten "
            await asyncio.Event().wait()  # the rest never comes
            yield "Tag"
        finally:
            closed.set()

    got: list[str] = []
    with pytest.raises(ModelTimeoutError, match="longer than 0.2 s") as failure:
        async for chunk in stream_within_deadline(chunks(), ModelDeadline(total=0.2, first_token=10)):
            got.append(chunk)
    assert got == ["Guten "] and closed.is_set()  # the model's stream is closed
    assert isinstance(failure.value, TimeoutError) and get_profile("openai").is_transient(failure.value)


async def test_a_hanging_loop_call_is_retried_then_handed_to_the_fallback():
    """A scripted model whose call never returns: each attempt ends at ``model_timeout``
    (the loop retries it, ``model_attempts``), then the fallback answers."""

    class Hanging(ScriptedChatModel):
        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
            self.calls.append(list(messages))
            await asyncio.Event().wait()

    primary = Hanging(responses=["never"])
    backup = ScriptedChatModel(responses=[status_call(), "CNC-001 läuft."], synthesis="CNC-001 läuft normal.")
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, fallbacks=[(backup, NATIVE_TOOLS_ONLY)],
                       settings=AgentSettings(model_attempts=2, model_timeout=0.2, retry_initial_delay=0.01,
                                              retry_max_delay=0.02, synthesis="always"))
    events = await asyncio.wait_for(events_of(agent), 30)
    [switch] = [e.data for e in events if e.channel == "model_switch"]
    assert switch["reason"] == "transient" and switch["error"].startswith("ModelTimeoutError")
    assert len(primary.calls) == 2 and events[-1].data["answer"] == "CNC-001 läuft normal."
