"""OpenTelemetry spans, Prometheus metrics and run log lines of real runs on scripted
models, read back with the SDK's in-memory exporter and Prometheus' parser."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_core.tracers.context import collect_runs
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client.parser import text_string_to_metric_families

from reactgraph import (
    AgentSettings,
    DAGAgent,
    FallbackModel,
    ModelAbilities,
    ModelRegistry,
    ReActAgent,
    create_react_graph,
    observability,
)
from reactgraph.persistence.checkpointing import open_persistence
from reactgraph.observability.logs import JsonFormatter
from reactgraph.observability.observer import TRACE_METADATA
from reactgraph.observability.metrics import exposition
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE_TOOLS_ONLY, HookedModel, log_calls, read_log
from tests.unit.dag.test_dag import general_model, plan, step, verdict

USAGE = {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
TWO_PHASES = AgentSettings(synthesis="always")
"""The loop, then a synthesis call, whatever the model's policy: the spans of both phases."""
CONTENT_KEYS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result", "reactgraph.follow_up.content", "reactgraph.dag.task"}


@tool
def get_status(equipment_id: str) -> str:
    """Read a machine's status."""
    if equipment_id == "CNC-404":
        raise ValueError("no such machine")
    return f"{equipment_id}: normal"


@tool
def stop_line(line: str) -> str:
    """Stop a production line."""
    return f"{line} stopped"


@pytest.fixture
def spans():
    """Instrumented for the test: spans to an in-memory exporter, metrics on."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observability.instrument(tracer_provider=provider, capture_content=False, metrics=True)
    exporter.provider = provider
    yield exporter
    observability.uninstrument()


class Tree:
    """The finished spans, with their parents by name."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.spans = sorted(exporter.get_finished_spans(), key=lambda span: span.start_time)
        self.by_id = {span.context.span_id: span for span in self.spans}

    def named(self, prefix: str) -> list:
        return [span for span in self.spans if span.name.startswith(prefix)]

    def parent(self, span):
        return self.by_id.get(span.parent.span_id) if span.parent is not None else None

    def attrs(self, span) -> dict:
        return dict(span.attributes)


def status_calls(*ids: str) -> AIMessage:
    return AIMessage("", tool_calls=[tool_call("get_status", {"equipment_id": i}, f"c-{i}") for i in ids],
                     usage_metadata=USAGE)


def metric_samples() -> dict[tuple[str, tuple], float]:
    families = text_string_to_metric_families(exposition()[0].decode())
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in families for sample in family.samples}


def sample(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_a_native_run_is_one_trace_of_genai_spans_with_parallel_tools_and_a_tool_error(spans, caplog):
    before = metric_samples()
    model = ScriptedChatModel(responses=[status_calls("CNC-001", "CNC-404"), "CNC-001 is normal."],
                              synthesis="**CNC-001** is normal.")
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES)
    with caplog.at_level(logging.INFO, logger="reactgraph.runs"):
        events = [event async for event in agent.astream_events("CNC-001 and CNC-404?", thread_id="t-native")]
    tree = Tree(spans)

    [run] = tree.named("invoke_agent")
    assert run.parent is None and run.name == "invoke_agent reactgraph"
    assert {span.context.trace_id for span in tree.spans} == {run.context.trace_id}  # one trace
    attrs = tree.attrs(run)
    assert attrs["gen_ai.operation.name"] == "invoke_agent" and attrs["gen_ai.conversation.id"] == "t-native"
    assert attrs["reactgraph.finish_reason"] == "final_answer" and attrs["reactgraph.mode"] == "native"
    assert attrs["reactgraph.model_calls"] == 3 and attrs["gen_ai.usage.input_tokens"] == 30
    assert attrs["reactgraph.time_to_first_answer_token"] > 0

    assert {span.name.split()[0] for span in tree.spans} == {"invoke_agent", "chat", "execute_tool"}  # no node spans
    chats = tree.named("chat")
    assert [tree.attrs(span)["reactgraph.phase"] for span in chats] == ["tool_loop", "tool_loop", "synthesis"]
    assert all(tree.parent(span) is run for span in chats)
    first = tree.attrs(chats[0])
    assert first["gen_ai.operation.name"] == "chat" and first["reactgraph.mode"] == "native"
    assert first["gen_ai.usage.input_tokens"] == 10 and first["gen_ai.usage.output_tokens"] == 3
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert tree.attrs(chats[1])["gen_ai.response.finish_reasons"] == ("stop",)

    tools = tree.named("execute_tool")
    assert sorted(tree.attrs(span)["gen_ai.tool.call.id"] for span in tools) == ["c-CNC-001", "c-CNC-404"]
    assert all(tree.parent(span) is run and span.name == "execute_tool get_status" for span in tools)
    # the two calls of one response ran in one superstep: each started before the other ended
    assert tools[1].start_time < tools[0].end_time
    failed = next(span for span in tools if tree.attrs(span)["gen_ai.tool.call.id"] == "c-CNC-404")
    assert failed.status.status_code is StatusCode.ERROR and "no such machine" in failed.status.description
    assert tree.attrs(failed)["error.type"] == "tool_error" and tree.attrs(failed)["reactgraph.tool.outcome"] == "error"

    # content is off by default
    assert not any(CONTENT_KEYS & set(span.attributes) for span in tree.spans)

    # the run's log line carries the same ids
    [line] = [record for record in caplog.records if record.name == "reactgraph.runs"]
    fields = json.loads(JsonFormatter().format(line))
    assert fields["event"] == "run_end" and fields["thread_id"] == "t-native"
    assert fields["run_id"] == attrs["reactgraph.run.id"]
    assert fields["trace_id"] == format(run.context.trace_id, "032x")
    assert fields["finish_reason"] == "final_answer" and fields["model_calls"] == 3
    assert fields["input_tokens"] == 30 and fields["seconds"] >= 0
    assert events[-1].data["finish_reason"] == "final_answer"

    after = metric_samples()
    grew = lambda name, **labels: sample(after, name, **labels) - sample(before, name, **labels)  # noqa: E731
    assert grew("reactgraph_runs_started_total", kind="start") == 1
    assert grew("reactgraph_runs_finished_total", finish_reason="final_answer") == 1
    assert grew("reactgraph_model_calls_total", phase="tool_loop", outcome="ok") == 2
    assert grew("reactgraph_model_calls_total", phase="synthesis", outcome="ok") == 1
    assert grew("reactgraph_tokens_total", phase="tool_loop", type="input") == 20
    assert grew("reactgraph_tool_calls_total", tool="get_status", outcome="ok") == 1
    assert grew("reactgraph_tool_calls_total", tool="get_status", outcome="error") == 1
    assert grew("reactgraph_time_to_first_answer_token_seconds_count") == 1
    assert sample(after, "reactgraph_runs_running") == 0


async def test_a_json_mode_run_with_node_spans_says_its_mode_and_records_content_when_asked(spans):
    observability.instrument(tracer_provider=spans.provider, capture_content=True, metrics=True, node_spans=True)
    action = json.dumps({"type": "tool_call", "reasoning": "look", "tool_name": "get_status",
                         "tool_args": {"equipment_id": "CNC-001"}})
    final = json.dumps({"type": "final_answer", "reasoning": "done", "answer": "CNC-001 is normal."})
    model = ScriptedChatModel(responses=[action, final], synthesis="CNC-001 is normal.")
    agent = ReActAgent(model, [get_status], abilities=ModelAbilities(json_mode=True))
    await agent.run("CNC-001?", thread_id="t-json")
    tree = Tree(spans)

    [run] = tree.named("invoke_agent")
    assert tree.attrs(run)["reactgraph.mode"] == "json"
    # the run's path, node by node
    assert [span.name for span in tree.spans if tree.parent(span) is run] == [
        "start_turn", "llm_call_json", "execute_tool get_status", "llm_call_json"]
    assert [tree.attrs(span)["langgraph.step"] for span in tree.spans if span.name.startswith("llm_call")] == [2, 4]
    chats = tree.named("chat")
    assert [tree.parent(span).name for span in chats] == ["llm_call_json", "llm_call_json"]
    assert {tree.attrs(span)["reactgraph.mode"] for span in chats} == {"json"}
    sent = json.loads(tree.attrs(chats[0])["gen_ai.input.messages"])
    assert sent[0]["role"] == "system" and sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "CNC-001?"}]}
    [call] = tree.named("execute_tool")
    assert json.loads(tree.attrs(call)["gen_ai.tool.call.arguments"]) == {"equipment_id": "CNC-001"}
    assert tree.attrs(call)["gen_ai.tool.call.result"] == "CNC-001: normal"
    assert "CNC-001?" in tree.attrs(run)["gen_ai.input.messages"]


async def test_an_approval_pause_and_its_resume_are_two_traces_of_one_conversation(spans):
    before = metric_samples()
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("stop_line", {"line": "L1"}, "s1")]),
                                         "L1 stopped."], synthesis="L1 is stopped.")
    agent = ReActAgent(model, [stop_line], abilities=NATIVE_TOOLS_ONLY, checkpointer=InMemorySaver(),
                       settings=AgentSettings(approval={"stop_line": "always"}))
    paused = await agent.run("stop L1", thread_id="t-approve")
    assert paused.waiting
    assert sample(metric_samples(), "reactgraph_approvals_waiting") - sample(before, "reactgraph_approvals_waiting") == 1
    resumed = await agent.resume("t-approve", {"s1": {"type": "approve"}})
    assert resumed.finish_reason == "final_answer"
    tree = Tree(spans)

    first, second = tree.named("invoke_agent")
    assert first.context.trace_id != second.context.trace_id
    [link] = second.links  # the resume's trace links to the paused run's
    assert link.context.span_id == first.context.span_id and link.attributes["reactgraph.link"] == "resumes"
    assert tree.attrs(first)["reactgraph.finish_reason"] == "waiting"
    assert tree.attrs(first)["reactgraph.run.kind"] == "start" and tree.attrs(second)["reactgraph.run.kind"] == "resume"
    assert {tree.attrs(span)["gen_ai.conversation.id"] for span in (first, second)} == {"t-approve"}
    waiting, decided = tree.named("execute_tool")
    assert tree.parent(waiting) is first and tree.attrs(waiting)["reactgraph.tool.approval"] == "waiting"
    assert waiting.status.status_code is StatusCode.UNSET
    assert tree.parent(decided) is second and tree.attrs(decided)["reactgraph.tool.approval"] == "approved"
    assert tree.attrs(second)["reactgraph.finish_reason"] == "final_answer"
    after = metric_samples()
    assert sample(after, "reactgraph_approvals_waiting") == sample(before, "reactgraph_approvals_waiting")
    assert (sample(after, "reactgraph_runs_finished_total", finish_reason="waiting")
            - sample(before, "reactgraph_runs_finished_total", finish_reason="waiting")) == 1
    assert (sample(after, "reactgraph_runs_started_total", kind="resume")
            - sample(before, "reactgraph_runs_started_total", kind="resume")) == 1


async def test_a_resume_in_another_process_links_its_span_to_the_paused_run_through_the_checkpoint(checkpoint_url):
    """Worker A pauses a run for approval, worker B (its own tracer provider and checkpointer
    connection, nothing shared in memory) resumes it: the paused run's span context is in the
    metadata of the checkpoint it left, and B's ``invoke_agent`` span links to it (R13.9)."""
    exporters = []

    def worker() -> InMemorySpanExporter:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        observability.instrument(tracer_provider=provider)
        exporters.append(exporter)
        return exporter

    thread = f"cross-{uuid.uuid4().hex[:8]}"
    approve = AgentSettings(approval={"stop_line": "always"})
    try:
        first = worker()
        async with open_persistence(checkpoint_url) as persistence:
            model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("stop_line", {"line": "L1"}, "s1")])])
            agent = ReActAgent(model, [stop_line], abilities=NATIVE_TOOLS_ONLY, settings=approve,
                               checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue)
            assert (await agent.run("stop L1", thread_id=thread)).waiting
        [paused] = [span for span in first.get_finished_spans() if span.name.startswith("invoke_agent")]
        assert paused.name == "invoke_agent reactgraph" and paused.attributes["reactgraph.finish_reason"] == "waiting"

        second = worker()
        async with open_persistence(checkpoint_url) as persistence:
            model = ScriptedChatModel(responses=["L1 stopped."], synthesis="L1 is stopped.")
            agent = ReActAgent(model, [stop_line], abilities=NATIVE_TOOLS_ONLY, settings=approve,
                               checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue)
            checkpoint = await agent.graph.aget_state({"configurable": {"thread_id": thread}})
            context = paused.context
            assert checkpoint.metadata[TRACE_METADATA] == f"{context.trace_id:032x}-{context.span_id:016x}"
            assert (await agent.resume(thread, {"s1": "approve"})).finish_reason == "final_answer"
    finally:
        observability.uninstrument()

    [resumed] = [span for span in second.get_finished_spans() if span.name.startswith("invoke_agent")]
    assert resumed.attributes["reactgraph.run.kind"] == "resume"
    assert resumed.context.trace_id != paused.context.trace_id  # linked traces, not one
    [link] = resumed.links
    assert (link.context.trace_id, link.context.span_id) == (paused.context.trace_id, paused.context.span_id)
    assert link.attributes["reactgraph.link"] == "resumes"
    # a new turn on the thread starts unlinked: only a resume continues an earlier run
    third = worker()
    try:
        async with open_persistence(checkpoint_url) as persistence:
            agent = ReActAgent(ScriptedChatModel(responses=["Nothing to do."]), [stop_line], abilities=NATIVE_TOOLS_ONLY,
                               settings=approve, checkpointer=persistence.checkpointer,
                               interrupt_queue=persistence.interrupt_queue)
            await agent.run("anything else?", thread_id=thread)
    finally:
        observability.uninstrument()
    [fresh] = [span for span in third.get_finished_spans() if span.name.startswith("invoke_agent")]
    assert fresh.attributes["reactgraph.run.kind"] == "start" and not fresh.links


async def test_compaction_and_a_follow_up_are_events_on_their_nodes_spans(spans):
    summarizer = ScriptedChatModel(responses=["Earlier: logs of the first machines were read."], repeat_last=True)
    model = HookedModel(responses=[*log_calls(4), "done"], synthesis="Done.")
    agent = ReActAgent(model, [read_log], compaction_llm=summarizer,
                       abilities=ModelAbilities(tool_call=True, context_window=9_000, max_output_tokens=1_000),
                       settings=TWO_PHASES)
    model.hooks[1] = lambda: agent.inject("t-compact", "also list the alarm codes")
    events = [event async for event in agent.astream_events("read the logs", thread_id="t-compact")]
    assert [event for event in events if event.channel == "compact"]
    tree = Tree(spans)

    [run] = tree.named("invoke_agent")
    compactions = [event for event in run.events if event.name == "compaction"]
    assert compactions and len(compactions) == len([event for event in events if event.channel == "compact"])
    event = compactions[0]
    assert event.attributes["reactgraph.compaction.kept_messages"] < event.attributes[
        "reactgraph.compaction.original_messages"]
    assert "compaction" in {tree.attrs(span)["reactgraph.phase"] for span in tree.named("chat")}
    [follow_up] = [event for event in run.events if event.name == "follow_up"]
    assert follow_up.attributes["reactgraph.follow_up.chars"] == len("also list the alarm codes")
    assert "reactgraph.follow_up.content" not in follow_up.attributes


async def test_dag_steps_are_children_of_their_plan_round(spans):
    general = general_model([plan(step("a"), step("b"))], [verdict(True, 0.9, "both normal")])
    agent = DAGAgent(ModelRegistry(general), [get_status], settings=AgentSettings(max_iterations=3))
    events = [event async for event in agent.astream_events("compare CNC-001 and CNC-002", thread_id="t-dag")]
    assert events[-1].data["finish_reason"] == "achieved"
    tree = Tree(spans)

    [run] = tree.named("invoke_agent")
    assert run.name == "invoke_agent reactgraph_dag" and agent.graph.get_name() == "reactgraph_dag"
    [round_span] = tree.named("plan_round")
    assert tree.parent(round_span) is run
    steps = tree.named("dag_step")
    assert sorted(span.name for span in steps) == ["dag_step a", "dag_step b"]
    assert all(tree.parent(span) is round_span for span in steps)
    chats = tree.named("chat")
    step_chats = [span for span in chats if tree.attrs(span)["reactgraph.phase"] == "tool_loop"]
    assert len(step_chats) == 2 and {tree.parent(span).name for span in step_chats} == {"dag_step a", "dag_step b"}
    planner_and_analyzer = [span for span in chats if tree.attrs(span)["reactgraph.phase"] == "structured"]
    assert len(planner_and_analyzer) == 2 and all(tree.parent(span) is round_span for span in planner_and_analyzer)
    [synthesis] = [span for span in chats if tree.attrs(span)["reactgraph.phase"] == "synthesis"]
    assert tree.parent(synthesis) is run  # after the round


async def test_nothing_is_observed_when_off():
    observability.uninstrument()
    agent = ReActAgent(ScriptedChatModel(responses=["fine"]), [get_status], abilities=NATIVE_TOOLS_ONLY)
    config, _ = agent._config("t-off", synthesize=False)
    assert "callbacks" not in config
    assert observability.run_callbacks("t-off") == []


async def test_a_failing_model_and_a_cancelled_run_end_their_spans_with_their_reasons(spans):
    before = metric_samples()
    failing = ScriptedChatModel(responses=[ConnectionError("endpoint down")], repeat_last=True)
    agent = ReActAgent(failing, [get_status], abilities=NATIVE_TOOLS_ONLY,
                       settings=AgentSettings(retry_initial_delay=0.001, retry_max_delay=0.002))
    result = await agent.run("CNC-001?", thread_id="t-fail")
    assert result.finish_reason == "model_error"

    gate = asyncio.Event()

    @tool
    async def wait_here(x: str) -> str:
        """Waits for the test."""
        await gate.wait()
        return x

    slow = ReActAgent(ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("wait_here", {"x": "a"}, "w1")]),
                                                   "done"]), [wait_here], abilities=NATIVE_TOOLS_ONLY)
    stream = slow.astream_events("go", thread_id="t-cancel")
    async for event in stream:
        if event.channel == "step" and event.data.get("type") == "iteration":
            break
    await stream.aclose()  # the client went away
    tree = Tree(spans)

    failed_run, cancelled_run = tree.named("invoke_agent")
    assert tree.attrs(failed_run)["reactgraph.finish_reason"] == "model_error"
    assert failed_run.status.status_code is StatusCode.ERROR
    failed_chats = [span for span in tree.named("chat") if tree.parent(span) is failed_run]
    assert failed_chats and all(span.status.status_code is StatusCode.ERROR for span in failed_chats)
    assert tree.attrs(failed_chats[0])["error.type"] == "ConnectionError"
    assert tree.attrs(cancelled_run)["reactgraph.finish_reason"] == "cancelled"
    [waiting] = tree.named("execute_tool wait_here")  # ended with its run, not left open
    assert tree.parent(waiting) is cancelled_run
    # a cancel is no failure: the tool's outcome says it, with no error status
    assert tree.attrs(waiting)["reactgraph.tool.outcome"] == "cancelled"
    assert waiting.status.status_code is StatusCode.UNSET and "error.type" not in tree.attrs(waiting)
    # every call the failing run made asked the provider: the run counts them all, as the metric does
    assert tree.attrs(failed_run)["reactgraph.model_calls"] == len(failed_chats)
    after = metric_samples()
    grew = lambda name, **labels: sample(after, name, **labels) - sample(before, name, **labels)  # noqa: E731
    assert grew("reactgraph_runs_finished_total", finish_reason="model_error") == 1
    assert grew("reactgraph_runs_finished_total", finish_reason="cancelled") == 1
    assert grew("reactgraph_model_calls_total", phase="tool_loop", outcome="error") == len(failed_chats)
    assert grew("reactgraph_tool_calls_total", tool="wait_here", outcome="cancelled") == 1
    assert sample(after, "reactgraph_runs_running") == 0


async def test_a_users_callbacks_see_the_run_beside_the_observer_on_a_graph_run_directly(spans):
    seen = []

    class Recorder(BaseCallbackHandler):
        def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs):
            seen.append((kwargs.get("name"), (metadata or {}).get("phase"), (metadata or {}).get("langgraph_node")))

    model = ScriptedChatModel(responses=[status_calls("CNC-001"), "CNC-001 is normal."], synthesis="Normal.")
    graph = create_react_graph(model, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES)
    config = {"callbacks": [Recorder(), *observability.run_callbacks("t-graph")],
              "configurable": {"thread_id": "t-graph", "synthesize": True}}
    await graph.ainvoke({"messages": [HumanMessage("CNC-001?")]}, config)

    assert seen == [("tool_loop/llm_call_native", "tool_loop", "llm_call_native"),
                    ("tool_loop/llm_call_native", "tool_loop", "llm_call_native"),
                    ("synthesis/synthesize", "synthesis", "synthesize")]
    tree = Tree(spans)
    [run] = tree.named("invoke_agent")
    assert tree.attrs(run)["gen_ai.conversation.id"] == "t-graph"
    assert [tree.attrs(span)["reactgraph.phase"] for span in tree.named("chat")] == ["tool_loop", "tool_loop",
                                                                                    "synthesis"]


async def test_a_reported_run_has_no_callback_handler_and_gives_langchains_graph_run_the_spans_run_id(spans):
    """The agents report their run's start and end to its observer: LangChain
    dispatches nothing to it, and the graph run LangChain's callbacks (LangSmith) record has
    the span's ``reactgraph.run.id``."""
    model = ScriptedChatModel(responses=[status_calls("CNC-001"), "CNC-001 is normal."], synthesis="Normal.")
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY)
    config: dict = {"configurable": {"thread_id": "t-ids"}}
    observer = observability.observe(config, "t-ids", reported=True)
    assert "callbacks" not in config and config["configurable"][observability.OBSERVER_KEY] is observer

    with collect_runs() as collected:  # a handler every run of the block gets, as LangSmith's tracer is
        await agent.run("CNC-001?", thread_id="t-ids")
    tree = Tree(spans)
    [run] = tree.named("invoke_agent")
    run_ids = [str(entry.id) for entry in collected.traced_runs]
    [graph_run] = [entry for entry in collected.traced_runs if entry.name == agent.graph.get_name()]
    assert str(graph_run.id) == tree.attrs(run)["reactgraph.run.id"]
    assert run_ids.count(str(graph_run.id)) == 1 and len(run_ids) > 3  # no model or tool run took the id
    assert tree.attrs(run)["reactgraph.finish_reason"] == "final_answer" and tree.attrs(run)["reactgraph.model_calls"] == 2


async def test_each_model_a_fallback_chain_tries_is_its_own_chat_span(spans):
    """A synthesis whose first model fails before its first token and whose fallback
    answers: two ``chat`` spans of the synthesis phase, the failed one an error (
's fallback chains)."""
    from tests.unit.engine.test_fallbacks import Unavailable

    before = metric_samples()
    primary = ScriptedChatModel(responses=["CNC-001 is normal."], synthesis=Unavailable(503))
    backup = ScriptedChatModel(responses=["unused"], synthesis="**CNC-001** is normal.")
    agent = ReActAgent(primary, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES,
                       fallbacks=[FallbackModel(backup, NATIVE_TOOLS_ONLY, name="backup")])
    events = [event async for event in agent.astream_events("CNC-001?", thread_id="t-fallback")]
    assert events[-1].data["answer"] == "**CNC-001** is normal."
    tree = Tree(spans)

    [run] = tree.named("invoke_agent")
    failed, answered = [span for span in tree.named("chat") if tree.attrs(span)["reactgraph.phase"] == "synthesis"]
    assert failed.status.status_code is StatusCode.ERROR and answered.status.status_code is StatusCode.UNSET
    assert failed.end_time <= answered.start_time and tree.parent(failed) is tree.parent(answered) is run
    after = metric_samples()
    assert (sample(after, "reactgraph_model_calls_total", phase="synthesis", outcome="error")
            - sample(before, "reactgraph_model_calls_total", phase="synthesis", outcome="error")) == 1
    assert (sample(after, "reactgraph_model_calls_total", phase="synthesis", outcome="ok")
            - sample(before, "reactgraph_model_calls_total", phase="synthesis", outcome="ok")) == 1


async def test_observe_on_a_graph_run_directly_keeps_the_users_callbacks_on_every_node(spans):
    """``observe(config, ...)`` for a graph you run yourself: the observer hears only the
    graph's own run from LangChain, the user's handlers still hear every node."""
    nodes = []

    class Recorder(BaseCallbackHandler):
        def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, metadata=None, **kwargs):
            if (metadata or {}).get("langgraph_node") == kwargs.get("name"):
                nodes.append(kwargs.get("name"))

    model = ScriptedChatModel(responses=[status_calls("CNC-001"), "CNC-001 is normal."], synthesis="Normal.")
    graph = create_react_graph(model, [get_status], abilities=NATIVE_TOOLS_ONLY, settings=TWO_PHASES)
    config = {"callbacks": [Recorder()], "configurable": {"thread_id": "t-observe", "synthesize": True}}
    observer = observability.observe(config, "t-observe")
    assert observer is not None and config["callbacks"].inheritable_handlers == config["callbacks"].handlers[:1]
    await graph.ainvoke({"messages": [HumanMessage("CNC-001?")]}, config)

    assert nodes[:3] == ["start_turn", "llm_call_native", "execute_tools"] and "synthesize" in nodes
    tree = Tree(spans)
    [run] = tree.named("invoke_agent")
    assert tree.attrs(run)["reactgraph.finish_reason"] == "final_answer"
    assert tree.attrs(run)["reactgraph.run.id"] == str(observer.run_id) != ""
    assert [tree.attrs(span)["reactgraph.phase"] for span in tree.named("chat")] == ["tool_loop", "tool_loop",
                                                                                    "synthesis"]
    assert all(tree.parent(span) is run for span in tree.spans if span is not run)


async def test_a_run_whose_checkpointer_fails_ends_its_span_and_metrics_with_storage_error(spans):
    """The span and the metrics say why the run ended as its result does: a saver that
    fails is ``storage_error``, not the agent's ``model_error``."""
    from tests.unit.persistence.test_checkpoint import FailingSaver

    before = metric_samples()
    model = ScriptedChatModel(responses=[status_calls("CNC-001"), "CNC-001 is normal."], repeat_last=True)
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=FailingSaver(2))
    result = await agent.run("CNC-001?", thread_id="t-storage")
    assert result.finish_reason == "storage_error"
    [run] = Tree(spans).named("invoke_agent")
    assert run.attributes["reactgraph.finish_reason"] == "storage_error"
    assert run.status.status_code is StatusCode.ERROR and "disk full" in run.status.description
    after = metric_samples()
    assert (sample(after, "reactgraph_runs_finished_total", finish_reason="storage_error")
            - sample(before, "reactgraph_runs_finished_total", finish_reason="storage_error")) == 1
    assert (sample(after, "reactgraph_runs_finished_total", finish_reason="model_error")
            - sample(before, "reactgraph_runs_finished_total", finish_reason="model_error")) == 0


async def test_a_run_whose_last_checkpoint_cannot_be_committed_ends_its_span_as_its_result(spans):
    """The span's finish reason is the result's, also when only committing the run's last
    checkpoint, after the graph returned, failed."""

    class CommitFails(InMemorySaver):
        async def commit_held(self, config) -> None:
            raise OSError("disk full")

    model = ScriptedChatModel(responses=[status_calls("CNC-001"), "CNC-001 is normal."])
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=CommitFails())
    result = await agent.run("CNC-001?", thread_id="t-commit")
    [run] = Tree(spans).named("invoke_agent")
    assert result.finish_reason == "storage_error"
    assert run.attributes["reactgraph.finish_reason"] == result.finish_reason


async def test_stream_answer_after_run_is_a_run_of_kind_answer_with_its_synthesis_call(spans):
    """The library's two phases: ``run`` (the loop) then ``stream_answer`` (the synthesis).
    The synthesis call is traced and counted as a run of its own on the thread."""
    before = metric_samples()
    model = ScriptedChatModel(responses=[status_calls("CNC-001"), "CNC-001 is normal."],
                              synthesis="**CNC-001** is normal.")
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY)
    result = await agent.run("CNC-001?", thread_id="t-two")
    text = "".join([chunk async for chunk in agent.stream_answer("CNC-001?", result)])
    assert text == "**CNC-001** is normal."
    tree = Tree(spans)

    loop, answer = tree.named("invoke_agent")
    assert tree.attrs(loop)["reactgraph.run.kind"] == "start" and tree.attrs(answer)["reactgraph.run.kind"] == "answer"
    assert tree.attrs(answer)["gen_ai.conversation.id"] == "t-two"
    assert tree.attrs(answer)["reactgraph.finish_reason"] == result.finish_reason
    [synthesis] = [span for span in tree.named("chat") if tree.parent(span) is answer]
    assert tree.attrs(synthesis)["reactgraph.phase"] == "synthesis"
    assert tree.attrs(answer)["reactgraph.model_calls"] == 1
    after = metric_samples()
    assert (sample(after, "reactgraph_model_calls_total", phase="synthesis", outcome="ok")
            - sample(before, "reactgraph_model_calls_total", phase="synthesis", outcome="ok")) == 1
    assert (sample(after, "reactgraph_runs_started_total", kind="answer")
            - sample(before, "reactgraph_runs_started_total", kind="answer")) == 1


async def test_a_run_cancelled_while_its_last_checkpoint_is_committed_still_ends_its_span(spans):
    """The run's end reaches the observer however the run ends: here the client goes away
    after the graph returned, while the run's last checkpoint is being committed (a server's
    request cancelled at that moment left ``runs_running`` up by one before)."""
    committing = asyncio.Event()

    class SlowCommit(InMemorySaver):
        async def commit_held(self, config) -> None:
            committing.set()
            await asyncio.sleep(30)

    before = metric_samples()
    model = ScriptedChatModel(responses=[status_calls("CNC-001"), "CNC-001 is normal."], synthesis="Normal.")
    agent = ReActAgent(model, [get_status], abilities=NATIVE_TOOLS_ONLY, checkpointer=SlowCommit())

    async def consume() -> None:
        async for _ in agent.astream_events("CNC-001?", thread_id="t-commit-cut"):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(committing.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [run] = Tree(spans).named("invoke_agent")
    assert run.attributes["reactgraph.finish_reason"] == "cancelled"
    assert sample(metric_samples(), "reactgraph_runs_running") == sample(before, "reactgraph_runs_running")


def test_the_model_parameters_cache_keeps_no_model_alive():
    """A chat span's model name is read once per model runnable; the cache holds the model
    weakly, so an agent's model is freed with the agent."""
    import gc
    import weakref

    from reactgraph.observability.records import model_params

    model = ScriptedChatModel(responses=["x"])
    bound = model.bind_tools([get_status])
    assert model_params(bound)["ls_model_name"] and model_params(bound) is model_params(bound)
    gone = weakref.ref(model)
    del model, bound
    gc.collect()
    assert gone() is None


# ------------------------------------------------- spans that cannot be sent: one line a minute


def test_spans_that_cannot_be_sent_are_reported_once_a_minute(caplog):
    from opentelemetry.sdk.trace.export import SpanExportResult

    from reactgraph.observability.tracing import ReportingExporter

    class Refused:
        def __init__(self):
            self.batches = 0

        def export(self, spans):
            self.batches += 1
            if self.batches == 3:
                raise ConnectionError("connection refused")
            return SpanExportResult.FAILURE

    now = [100.0]
    inner = Refused()
    exporter = ReportingExporter(inner, "http://127.0.0.1:9/v1/traces", clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="reactgraph.otel"):
        for _ in range(5):  # five batches within the minute: one line
            assert exporter.export([object(), object()]) == SpanExportResult.FAILURE
            now[0] += 10
        lines = [record.getMessage() for record in caplog.records if record.name == "reactgraph.otel"]
        assert len(lines) == 1 and lines[0].startswith("traces: 2 span(s) could not be sent to http://127.0.0.1:9/v1/traces")
        now[0] += 20  # a minute after the first warning: the next failure says how many were dropped since
        exporter.export([object()])
        lines = [record.getMessage() for record in caplog.records if record.name == "reactgraph.otel"]
        assert len(lines) == 2 and lines[1].startswith("traces: 9 span(s) could not be sent")
    assert inner.batches == 6


def test_where_spans_go_follows_the_otel_variables(monkeypatch):
    from reactgraph.observability.tracing import spans_endpoint

    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert spans_endpoint() == "http://localhost:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    assert spans_endpoint() == "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://traces.example/ingest")
    assert spans_endpoint() == "https://traces.example/ingest"
