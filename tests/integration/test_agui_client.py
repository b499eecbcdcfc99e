"""``POST /agui`` driven by the official AG-UI client: ``@ag-ui/client``'s
``HttpAgent`` from npm, under node, against a real uvicorn server (tests/agui_client.mjs).

A scripted model (reactgraph.testing) makes two parallel tool calls and the synthesis
streams the answer; the client must receive and apply valid AG-UI events in the right
order (its own verifier rejects a malformed stream), end with the answer as an assistant
message, pause on an approval interrupt and resume it, and get 401 without the server's
key and 422 for input that has no question."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import AgentSettings, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.npm import npm_cache_dir, npm_package
from tests.serving import running_server
from tests.helpers import NATIVE

pytestmark = pytest.mark.integration

CLIENT_SCRIPT = Path(__file__).parent.parent / "agui_client.mjs"
CLIENT_VERSION = "1.0.0"
ANSWER = "CNC-001 is **running**; CNC-002 is *idle*."
KEY = "agui-secret"


@tool
async def machine_status(machine_id: str) -> str:
    """Read one machine's status."""
    await asyncio.sleep(0.05 if machine_id == "CNC-001" else 0.2)  # CNC-001 finishes first
    return f"{machine_id}: {'running' if machine_id == 'CNC-001' else 'idle'}"


@tool
def create_order(machine_id: str, task: str) -> str:
    """Create a maintenance work order."""
    return f"WO-7 created for {machine_id}: {task}"


@pytest.fixture(scope="module")
def client_dir(tmp_path_factory) -> Path:
    return npm_package("@ag-ui/client", CLIENT_VERSION, npm_cache_dir(tmp_path_factory.mktemp("npm")))


def agent_with(responses: list[Any], synthesis: str, **settings: Any) -> ReActAgent:
    model = ScriptedChatModel(responses=responses, synthesis=synthesis)
    return ReActAgent(model, [machine_status, create_order], abilities=NATIVE, checkpointer=InMemorySaver(),
                      settings=AgentSettings(**{"synthesis": "always", **settings}))  # the two phases


def two_calls() -> AIMessage:
    return AIMessage(content="", tool_calls=[tool_call("machine_status", {"machine_id": "CNC-001"}, "call_a"),
                                             tool_call("machine_status", {"machine_id": "CNC-002"}, "call_b")])


async def run_client(client_dir: Path, url: str, **config: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run the node client; returns the events it received and its closing line."""
    config = {"clientDir": str(client_dir), "url": f"{url}/agui", "runId": "run-1", **config}
    process = await asyncio.create_subprocess_exec(
        "node", str(CLIENT_SCRIPT), json.dumps(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert lines and "event" not in lines[-1], (out.decode(), err.decode())
    return [line["event"] for line in lines[:-1]], lines[-1]


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


async def test_a_run_with_two_parallel_tool_calls_and_a_streamed_answer(client_dir):
    agent = agent_with([two_calls(), "Both read."], ANSWER)
    async with running_server(create_app(agent, ServerSettings(api_key=KEY))) as url:
        events, closing = await run_client(client_dir, url, threadId="plant-1", token=KEY,
                                           messages=[user("CNC-001과 CNC-002 상태?")])
    assert "error" not in closing, closing
    kinds = [event["type"] for event in events]
    assert kinds == [
        "RUN_STARTED",
        "STEP_STARTED", "STEP_FINISHED",  # the loop's first model call asks for both tools
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TOOL_CALL_RESULT", "TOOL_CALL_RESULT",
        "STEP_STARTED", "STEP_FINISHED",  # the second model call answers
        "STEP_STARTED", "STEP_FINISHED",  # the answer is written
        "TEXT_MESSAGE_START", *["TEXT_MESSAGE_CONTENT"] * (kinds.count("TEXT_MESSAGE_CONTENT")), "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert kinds.count("TEXT_MESSAGE_CONTENT") > 1  # streamed, not one block
    assert (events[0]["threadId"], events[0]["runId"]) == ("plant-1", "run-1")
    assert (events[-1]["threadId"], events[-1]["runId"]) == ("plant-1", "run-1")
    assert [e["stepName"] for e in events if e["type"].startswith("STEP_")] == \
        ["model_call_1"] * 2 + ["model_call_2"] * 2 + ["writing_answer"] * 2
    starts = [(e["toolCallId"], e["toolCallName"]) for e in events if e["type"] == "TOOL_CALL_START"]
    assert starts == [("call_a", "machine_status"), ("call_b", "machine_status")]
    args = {e["toolCallId"]: json.loads(e["delta"]) for e in events if e["type"] == "TOOL_CALL_ARGS"}
    assert args == {"call_a": {"machine_id": "CNC-001"}, "call_b": {"machine_id": "CNC-002"}}
    results = [(e["toolCallId"], e["content"]) for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results == [("call_a", "CNC-001: running"), ("call_b", "CNC-002: idle")]
    text = [e for e in events if e["type"].startswith("TEXT_MESSAGE")]
    assert len({e["messageId"] for e in text}) == 1 and text[0]["role"] == "assistant"
    assert "".join(e["delta"] for e in text if e["type"] == "TEXT_MESSAGE_CONTENT") == ANSWER
    assert events[-1]["result"]["answer"] == ANSWER and events[-1]["result"]["finish_reason"] == "final_answer"
    assert events[-1]["usage"][0]["totalTokens"] == events[-1]["result"]["usage"]["total_tokens"]

    # the client applied the events: the tool calls, their results and the answer are its messages
    messages = closing["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [call["id"] for call in messages[1]["toolCalls"]] == ["call_a", "call_b"]
    assert messages[-1]["content"] == ANSWER
    assert closing["result"]["answer"] == ANSWER


async def test_approval_pauses_as_an_interrupt_and_resume_continues_the_thread(client_dir):
    order = AIMessage(content="", tool_calls=[tool_call("create_order", {"machine_id": "CNC-002", "task": "bearing"}, "o1")])
    agent = agent_with([order, "Ordered."], "WO-7 is open for CNC-002.", approval={"create_order": "always"})
    async with running_server(create_app(agent, ServerSettings(api_key=""))) as url:
        events, closing = await run_client(client_dir, url, threadId="plant-2", messages=[user("CNC-002 주문")])
        assert "error" not in closing, closing
        custom = [e for e in events if e["type"] == "CUSTOM"]
        assert [e["name"] for e in custom] == ["approval"]
        [pending] = custom[0]["value"]["pending"]
        assert (pending["tool_call_id"], pending["tool_name"]) == ("o1", "create_order")
        finished = events[-1]
        assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt"
        [interrupt] = closing["interrupts"]
        assert (interrupt["id"], interrupt["toolCallId"], interrupt["reason"]) == (pending["interrupt_id"], "o1", "approval")
        assert "TEXT_MESSAGE_START" not in [e["type"] for e in events]

        resumed, closing = await run_client(client_dir, url, threadId="plant-2", runId="run-2", messages=closing["messages"],
                                            resume=[{"interruptId": interrupt["id"], "status": "resolved"}])
    assert "error" not in closing, closing
    kinds = [e["type"] for e in resumed]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == ("o1", "WO-7 created for CNC-002: bearing")
    assert resumed[-1]["result"]["answer"] == "WO-7 is open for CNC-002."
    assert "outcome" not in resumed[-1] or resumed[-1]["outcome"]["type"] == "success"


async def test_the_key_and_bad_input_are_refused(client_dir):
    agent = agent_with([two_calls(), "Both read."], ANSWER)
    async with running_server(create_app(agent, ServerSettings(api_key=KEY))) as url:
        for token in (None, "wrong"):
            events, closing = await run_client(client_dir, url, threadId="plant-3", token=token, messages=[user("hi")])
            assert events == [] and "401" in closing["error"], closing
        events, closing = await run_client(client_dir, url, threadId="plant-3", token=KEY, messages=[])
        assert events == [] and "422" in closing["error"], closing
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as http:
            invalid = await http.post("/agui", json={"threadId": "plant-3", "messages": "nope"})
            assert invalid.status_code == 422
            assert {tuple(error["loc"]) for error in invalid.json()["detail"]} >= {("body", "runId"), ("body", "messages")}
    assert agent.llm.calls == []  # nothing reached the model
