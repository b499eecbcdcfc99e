"""The compiled graph as a LangChain Runnable and a LangGraph citizen (SPEC R10.1):
every Runnable entry point, an LCEL chain, a node and a subgraph of a user's
``StateGraph``, a tool of another agent, a drop-in for LangGraph's prebuilt agent, and
trace run names that say node and phase."""

from __future__ import annotations

import asyncio
import http.server
import os
import subprocess
import sys
import threading
import warnings
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from pydantic import BaseModel

from reactgraph import AgentSettings, create_react_graph
from reactgraph.engine.bindings import (
    RUN_NAME_COMPACTION,
    RUN_NAME_JSON,
    RUN_NAME_NATIVE,
    RUN_NAME_SELECTION,
    RUN_NAME_SYNTHESIS,
)
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE, REPO, SMALL, log_calls, read_log

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent
from langchain.agents import create_agent

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

TWO_PHASES = AgentSettings(synthesis="always", tool_selection=True)  # the seed's two phases, the selection call too
"""The seed's two phases (a loop, then a synthesis call), whatever the model's policy: these
tests check both phases' nodes, calls and messages."""



def two_step_model(**kwargs: Any) -> ScriptedChatModel:
    """One tool call (get_status A), then the loop's answer; synthesis "A runs normally."."""
    return ScriptedChatModel(
        responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "c1")]), "A is normal."],
        synthesis="A runs normally.", **kwargs,
    )


def question(text: str = "How is A?") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def check_run(state: dict[str, Any]) -> None:
    assert state["answer"] == "A is normal." and state["synthesis"] == "A runs normally."
    assert [m.type for m in state["messages"]] == ["human", "ai", "tool", "ai"]
    assert state["steps"][0]["tool_name"] == "get_status" and state["steps"][0]["observation"] == "A: normal"
    assert state["finish_reason"] == "final_answer" and state["iteration"] == 2


# ------------------------------------------------------------------ Runnable entry points


def test_invoke(tools):
    check_run(create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES).invoke(question()))


async def test_ainvoke(tools):
    graph = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)
    check_run(await graph.ainvoke(question()))


def test_stream_updates_name_the_nodes_of_both_phases(tools):
    graph = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)
    nodes = [node for update in graph.stream(question(), stream_mode="updates") for node in update]
    assert nodes == ["start_turn", "llm_call_native", "execute_tools", "llm_call_native", "synthesize"]


async def test_astream_messages_carries_only_synthesis_tokens(tools):
    graph = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)
    tokens = [(meta["langgraph_node"], chunk.content)
              async for chunk, meta in graph.astream(question(), stream_mode="messages") if isinstance(chunk, AIMessageChunk)]
    assert {node for node, _ in tokens} == {"synthesize"}
    assert "".join(text for _, text in tokens) == "A runs normally."


def test_stream_messages_sync_matches(tools):
    graph = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)
    tokens = [chunk.content for chunk, meta in graph.stream(question(), stream_mode="messages")
              if isinstance(chunk, AIMessageChunk) and chunk.content]
    assert tokens == ["A ", "runs ", "normally."]


async def test_astream_events(tools):
    graph = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)
    streamed, output = [], None
    async for event in graph.astream_events(question(), version="v2"):
        if event["event"] == "on_chat_model_stream" and event["metadata"].get("langgraph_node") == "synthesize":
            streamed.append(event["data"]["chunk"].content)
        if event["event"] == "on_chain_end" and event["name"] == "reactgraph":
            output = event["data"]["output"]
        if event["event"] == "on_tool_end":
            assert event["name"] == "get_status"
    assert "".join(streamed) == "A runs normally."
    check_run(output)


def test_batch_and_abatch(tools):
    def model(answer: str) -> ScriptedChatModel:
        return ScriptedChatModel(responses=[answer], repeat_last=True)

    graph_a = create_react_graph(model("one"), tools, abilities=NATIVE, settings=TWO_PHASES)
    outputs = graph_a.batch([question("a"), question("b")], {"configurable": {"synthesize": False}})
    assert len(outputs) == 2 and {o["synthesis"] for o in outputs} == {None}
    graph_b = create_react_graph(ScriptedChatModel(responses=["x", "y"]), tools, abilities=NATIVE, settings=TWO_PHASES)
    outputs = asyncio.run(graph_b.abatch([question("a"), question("b")]))
    assert sorted(o["answer"] for o in outputs) == ["x", "y"]
    assert [o["synthesis"] for o in outputs] == ["Synthesized answer."] * 2


# ------------------------------------------------------------------ composition


def test_inside_an_lcel_chain(tools):
    graph = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)
    chain = RunnableLambda(lambda text: {"messages": [HumanMessage(text)]}) | graph | RunnableLambda(lambda s: s["synthesis"])
    assert chain.invoke("How is A?") == "A runs normally."
    graph_async = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)
    chain_async = RunnableLambda(lambda text: {"messages": [HumanMessage(text)]}) | graph_async | (lambda s: s["answer"])
    assert asyncio.run(chain_async.ainvoke("How is A?")) == "A is normal."


class Ticket(MessagesState):
    """A user's own graph state: a conversation plus fields of their own."""

    priority: str
    answer: str
    synthesis: str | None


def test_as_a_subgraph_of_a_users_graph(tools):
    agent = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)
    builder = StateGraph(Ticket)
    builder.add_node("triage", lambda state: {"priority": "high" if "A" in state["messages"][-1].content else "low"})
    builder.add_node("agent", agent)  # the compiled graph itself is the node: shared keys flow in and out
    builder.add_edge(START, "triage")
    builder.add_edge("triage", "agent")
    outer = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "ticket-1"}}
    namespaces = {ns for ns, _ in outer.stream(question(), config, stream_mode="updates", subgraphs=True)}
    state = outer.get_state(config).values
    assert state["priority"] == "high"
    assert state["answer"] == "A is normal." and state["synthesis"] == "A runs normally."
    assert [m.type for m in state["messages"]] == ["human", "ai", "tool", "ai"]
    assert any(ns and ns[0].startswith("agent:") for ns in namespaces)  # the agent's own nodes, namespaced


async def test_as_a_node_function_of_a_users_graph(tools):
    agent = create_react_graph(two_step_model(), tools, abilities=NATIVE, settings=TWO_PHASES)

    class Report(MessagesState):
        report: str

    async def ask_agent(state: Report) -> dict[str, Any]:
        result = await agent.ainvoke({"messages": [HumanMessage(f"Report on {state['messages'][-1].content}")]})
        return {"report": result["synthesis"], "messages": [AIMessage(result["synthesis"])]}

    builder = StateGraph(Report)
    builder.add_node("ask_agent", ask_agent)
    builder.add_edge(START, "ask_agent")
    state = await builder.compile().ainvoke({"messages": [HumanMessage("A")]})
    assert state["report"] == "A runs normally." and state["messages"][-1].content == "A runs normally."


class Ask(BaseModel):
    question: str


def plant_expert_tool(inner_model: ScriptedChatModel, tools) -> StructuredTool:
    """Our graph wrapped with ``as_tool``: question in, synthesized answer out."""
    agent = create_react_graph(inner_model, tools, abilities=NATIVE, settings=TWO_PHASES)
    chain = RunnableLambda(lambda args: {"messages": [HumanMessage(args["question"])]}) | agent | (lambda s: s["synthesis"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as_tool is marked beta in langchain-core
        return chain.as_tool(args_schema=Ask, name="plant_expert", description="Ask the plant expert agent a question.")


def outer_script() -> list[AIMessage]:
    return [AIMessage(content="", tool_calls=[tool_call("plant_expert", {"question": "How is A?"}, "outer-1")]),
            AIMessage(content="The expert says A runs normally.")]


@pytest.mark.parametrize("outer_kind", ["prebuilt", "reactgraph-sync", "reactgraph-async"])
def test_as_a_tool_of_another_agent(tools, outer_kind):
    inner = two_step_model()
    expert = plant_expert_tool(inner, tools)
    outer_model = ScriptedChatModel(responses=outer_script(), synthesis="A runs normally, says the expert.")
    if outer_kind == "prebuilt":
        state = create_react_agent(outer_model, [expert]).invoke(question("Ask the expert about A"))
    else:
        outer = create_react_graph(outer_model, [expert], abilities=NATIVE, settings=TWO_PHASES)
        run = outer.invoke if outer_kind == "reactgraph-sync" else (lambda x: asyncio.run(outer.ainvoke(x)))
        state = run(question("Ask the expert about A"))
        assert state["synthesis"] == "A runs normally, says the expert."
    result = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert result.tool_call_id == "outer-1" and result.content == "A runs normally."
    assert inner.calls[0][-1].content == "How is A?"  # the inner agent got the outer model's question
    assert state["messages"][-1].content == "The expert says A runs normally."


# ------------------------------------------------------------------ drop-in for the prebuilt agent

SCRIPTS = {
    "direct answer": [AIMessage(content="Nothing to look up.")],
    "one tool": [AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "d1")]),
                 AIMessage(content="A is normal.")],
    "parallel tools": [AIMessage(content="Checking both.", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "p1"),
                                                                      tool_call("as_dict", {"x": 3}, "p2")]),
                       AIMessage(content="Both fine.")],
    "bad arguments then retry": [AIMessage(content="", tool_calls=[tool_call("get_status", {"machine": 1}, "e1")]),
                                 AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "B"}, "e2")]),
                                 AIMessage(content="B is normal.")],
}


def shape(messages) -> list[tuple]:
    """Message types, tool calls (name, args, id) and tool-result ids, in order."""
    out = []
    for m in messages:
        calls = tuple((c["name"], tuple(sorted(c["args"].items())), c["id"]) for c in getattr(m, "tool_calls", []) or [])
        out.append((m.type, calls, getattr(m, "tool_call_id", None)))
    return out


PEERS = {"create_react_agent": create_react_agent, "create_agent": create_agent}


@pytest.mark.parametrize("peer", list(PEERS))
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_drop_in_for_the_prebuilt_react_agent(tools, name, peer):
    """Same scripted conversation, same tool calls and the same final message list shape as
    LangGraph's prebuilt agent (and its successor, LangChain's ``create_agent``).

    Our graph appends nothing for its synthesis phase: ``messages`` ends with the loop's
    final assistant message exactly as the prebuilt agent's does, and the synthesized
    answer (the extra, streaming model call) is in the ``synthesis`` output field.
    """
    prebuilt_model = ScriptedChatModel(responses=list(SCRIPTS[name]))
    ours_model = ScriptedChatModel(responses=list(SCRIPTS[name]), synthesis="Synthesized.")
    theirs = PEERS[peer](prebuilt_model, tools).invoke(question("status?"))
    ours = create_react_graph(ours_model, tools, abilities=NATIVE, settings=TWO_PHASES).invoke(question("status?"))
    assert shape(ours["messages"]) == shape(theirs["messages"])
    assert ours["messages"][-1].content == theirs["messages"][-1].content == SCRIPTS[name][-1].content
    statuses = [(m.tool_call_id, m.status) for m in ours["messages"] if isinstance(m, ToolMessage)]
    assert statuses == [(m.tool_call_id, m.status) for m in theirs["messages"] if isinstance(m, ToolMessage)]
    assert ours["synthesis"] == "Synthesized."
    assert len(ours_model.calls) == len(prebuilt_model.calls) + 1  # the synthesis call


# ------------------------------------------------------------------ trace run names


class RunNames(BaseCallbackHandler):
    """Records the run name and node of every chat model run (what LangSmith shows)."""

    def __init__(self) -> None:
        self.names: list[tuple[str, str | None]] = []

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, tags=None, metadata=None, **kwargs):
        self.names.append((kwargs.get("name"), (metadata or {}).get("langgraph_node")))


def selection_then_answer() -> list[AIMessage]:
    pick = AIMessage(content="", tool_calls=[{"name": "select_tools", "args": {"tools": ["tool_01"]}, "id": "s", "type": "tool_call"}])
    return [pick, AIMessage(content="done")]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_model_calls_are_named_by_phase_and_node(mode):
    many = [StructuredTool.from_function(lambda machine_id, i=i: str(i), name=f"tool_{i:02d}", description=f"Connector {i}.")
            for i in range(13)]
    recorder = RunNames()
    config = {"callbacks": [recorder]}
    graph = create_react_graph(ScriptedChatModel(responses=selection_then_answer()), many, abilities=NATIVE,
                               settings=TWO_PHASES)
    graph.invoke(question(), config) if mode == "sync" else asyncio.run(graph.ainvoke(question(), config))
    assert recorder.names == [(RUN_NAME_SELECTION, "select_tools"), (RUN_NAME_NATIVE, "llm_call_native"),
                              (RUN_NAME_SYNTHESIS, "synthesize")]

    json_recorder = RunNames()
    json_graph = create_react_graph(ScriptedChatModel(responses=['{"type": "final_answer", "answer": "ok"}']), many[:2],
                                    use_native_tools=False, settings=AgentSettings(synthesize=False))
    json_graph.invoke(question(), {"callbacks": [json_recorder]})
    assert json_recorder.names == [(RUN_NAME_JSON, "llm_call_json")]

    compaction_recorder = RunNames()
    summarizer = ScriptedChatModel(responses=["summary"], repeat_last=True)
    compacting = create_react_graph(ScriptedChatModel(responses=[*log_calls(4), "ok"]), [read_log], abilities=SMALL,
                                    compaction_llm=summarizer, settings=AgentSettings(synthesize=False))
    compacting.invoke(question(), {"callbacks": [compaction_recorder]})
    assert (RUN_NAME_COMPACTION, "guard_context") in compaction_recorder.names
    assert {name for name, _ in compaction_recorder.names} == {RUN_NAME_NATIVE, RUN_NAME_COMPACTION}


TRACED_RUN = """
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tracers.langchain import wait_for_all_tracers
from reactgraph import AgentSettings, create_react_graph
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import get_status

model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "A"}, "c1")]),
                                     "A is normal."], synthesis="A runs normally.")
create_react_graph(model, [get_status], abilities={"tool_call": True},
                   settings=AgentSettings(synthesis="always")).invoke({"messages": [HumanMessage("How is A?")]})
wait_for_all_tracers()
"""


def test_langsmith_tracing_by_environment_variables_alone():
    """A plain script (no tracing code) run with LangSmith's variables posts its runs, named
    by phase and node, to the endpoint they name (here a loopback stand-in for LangSmith)."""
    received: list[bytes] = []

    class FakeLangSmith(http.server.BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            received.append(self.rfile.read(length) if length else b"")
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PATCH = _reply

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeLangSmith)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    repo = str(REPO)
    env = {**os.environ, "LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "lsv2_test_key",
           "LANGSMITH_ENDPOINT": f"http://127.0.0.1:{server.server_port}", "NO_PROXY": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, "-c", TRACED_RUN], env=env, cwd=repo, capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    posted = b"".join(received)
    for name in (RUN_NAME_NATIVE, RUN_NAME_SYNTHESIS, "execute_tools", "get_status", "reactgraph"):
        assert f'"{name}"'.encode() in posted, name
