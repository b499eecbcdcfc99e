"""LangGraph Studio's server (SPEC R10.2): ``langgraph dev`` started from ``studio/`` serves
the ReAct graph on the embedded model, and ``langgraph-sdk`` runs it, reads its checkpoint
history and forks a new run from an earlier checkpoint.

The server must need no network: analytics and the version check are switched off, no
LangSmith variable is passed, and every HTTP client that honours proxy variables is sent to
a trap that records connections (the test asserts it saw none).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from reactgraph.demo.factory import DEMO_QUESTION
from reactgraph.models import find_smollm2_gguf

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

STUDIO_DIR = Path(__file__).resolve().parents[2] / "studio"
APPROVAL_DIR = Path(__file__).resolve().parent / "studio_approval"
CONTEXT = {"max_iterations": 2, "mode": "auto", "tool_selection": True}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ProxyTrap:
    """A loopback listener given as HTTP(S)_PROXY: every connection to it is an attempt to
    reach the network."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.requests.append(conn.recv(200))
                except OSError:
                    self.requests.append(b"")

    def close(self) -> None:
        self.sock.close()


def server_env(trap: ProxyTrap, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "OPENAI_", "REACTGRAPH_")) and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    repo = str(STUDIO_DIR.parent)
    env.update(
        PYTHONPATH=os.pathsep.join([repo, *filter(None, [os.environ.get("PYTHONPATH")])]),
        REACTGRAPH_HOME=str(home),
        # the model file fetched (if need be) here, before the proxy trap is in the way
        REACTGRAPH_MODEL_DIR=str(find_smollm2_gguf().parent),
        REACTGRAPH_MAX_OUTPUT_TOKENS="48",  # keeps the embedded model's replies short
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="1",
        LANGSMITH_TRACING="false",
        HTTP_PROXY=trap.url, HTTPS_PROXY=trap.url, http_proxy=trap.url, https_proxy=trap.url,
        NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
    )
    return env


@contextmanager
def langgraph_dev(directory: Path, tmp_path: Path) -> Iterator[tuple[str, ProxyTrap, Path]]:
    """``langgraph dev --no-browser`` from ``directory`` on a free loopback port; yields
    ``(url, trap, log_path)`` and stops the server's process group afterwards."""
    langgraph = Path(sys.executable).parent / "langgraph"
    assert langgraph.exists(), "langgraph-cli[inmem] is not installed (pip install -e '.[dev]')"
    port = free_port()
    trap = ProxyTrap()
    log_path = tmp_path / "langgraph-dev.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(langgraph), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
            cwd=directory, env=server_env(trap, tmp_path / "home"), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, f"langgraph dev exited:\n{log_path.read_text()[-3000:]}"
            try:
                with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"{url}/ok", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"langgraph dev did not answer:\n{log_path.read_text()[-3000:]}"
            time.sleep(0.5)
        yield url, trap, log_path
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # the server's atexit stops the embedded model
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        trap.close()


@pytest.fixture
def studio_server(tmp_path):
    """The Studio server of ``studio/`` (see :func:`langgraph_dev`)."""
    with langgraph_dev(STUDIO_DIR, tmp_path) as served:
        yield served


async def test_studio_server_runs_inspects_and_forks_a_demo_run(studio_server):
    url, trap, log_path = studio_server
    client = get_client(url=url)

    assistant = (await client.assistants.search(graph_id="react"))[0]
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])
    assert set(schemas["context_schema"]["properties"]) == {"model", "mode", "max_iterations", "tool_selection"}
    assert {"answer", "synthesis", "steps", "messages"} <= set(schemas["output_schema"]["properties"])
    drawn = await client.assistants.get_graph(assistant["assistant_id"])
    phases = {node["id"]: (node.get("metadata") or {}).get("phase") for node in drawn["nodes"]}
    assert phases["llm_call_native"] == "tool_loop" and phases["synthesize"] == "synthesis"

    # 1. a demo run on the embedded model, streamed to the end
    thread = await client.threads.create()
    thread_id = thread["thread_id"]
    seen: list[tuple[str, object]] = []
    async for part in client.runs.stream(
        thread_id, "react", input={"messages": [{"role": "user", "content": DEMO_QUESTION}]},
        context=CONTEXT, stream_mode=["updates", "custom"],
    ):
        seen.append((part.event, part.data))
    assert not [data for event, data in seen if event == "error"], seen[-3:]
    updated = [node for event, data in seen if event == "updates" for node in data]
    assert updated[:2] == ["start_turn", "select_tools"] and updated[-1] == "synthesize"
    assert any(node.startswith("llm_call_") for node in updated)
    custom = [data for event, data in seen if event == "custom"]
    assert {"status": "done"} in [c["data"] for c in custom if c.get("reactgraph_event") == "answer"]
    state = await client.threads.get_state(thread_id)
    values = state["values"]
    assert values["answer"].strip() and values["synthesis"].strip()
    assert values["messages"][0]["type"] == "human" and values["messages"][0]["content"] == DEMO_QUESTION
    assert 1 <= values["iteration"] <= CONTEXT["max_iterations"]

    # 2. the thread's checkpoint history, newest first
    history = await client.threads.get_history(thread_id, limit=200)
    assert history[0]["next"] == [] and history[0]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    before_synthesis = next(h for h in history if h["next"] == ["synthesize"])
    assert before_synthesis["values"]["answer"] == values["answer"] and not before_synthesis["values"].get("synthesis")

    # 3. fork: a new run from the checkpoint before synthesis re-runs only the synthesis
    fork_id = before_synthesis["checkpoint"]["checkpoint_id"]
    forked: list[str] = []
    async for part in client.runs.stream(thread_id, "react", input=None, checkpoint_id=fork_id,
                                         context=CONTEXT, stream_mode="updates"):
        if part.event == "updates":
            forked.extend(part.data)
        assert part.event != "error", part.data
    assert forked == ["synthesize"]
    after = await client.threads.get_state(thread_id)
    assert after["values"]["synthesis"].strip() and after["values"]["steps"] == values["steps"]
    history = await client.threads.get_history(thread_id, limit=200)
    parents = {h["checkpoint"]["checkpoint_id"]: (h.get("parent_checkpoint") or {}).get("checkpoint_id") for h in history}
    lineage, checkpoint = [], after["checkpoint"]["checkpoint_id"]
    while checkpoint:
        lineage.append(checkpoint)
        checkpoint = parents.get(checkpoint)
    assert fork_id in lineage  # the new head descends from the fork point …
    assert state["checkpoint"]["checkpoint_id"] not in lineage  # … on a new branch beside the first run's end

    assert trap.requests == [], f"the server tried to reach the network: {trap.requests}"
    assert "Traceback" not in log_path.read_text(errors="replace")


async def test_a_tool_interrupt_is_resumed_through_langgraph_sdk(tmp_path):
    """``interrupt()`` inside a tool pauses a run served by ``langgraph dev``;
    Studio's path (langgraph-sdk) shows the interrupt and resumes it with
    ``Command(resume=...)``. The graph is ``studio_approval/graph.py`` (a scripted model)."""
    with langgraph_dev(APPROVAL_DIR, tmp_path) as (url, trap, log_path):
        client = get_client(url=url)
        thread_id = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread_id, "approval", input={"messages": [{"role": "user", "content": "Stop CNC-003."}]})
        paused = await client.threads.get_state(thread_id)
        assert paused["next"] == ["execute_tools"]
        [pending] = [i for task in paused["tasks"] for i in task["interrupts"]]
        assert pending["value"] == {"action": "stop_machine", "machine": "CNC-003"}
        assert not [m for m in paused["values"]["messages"] if m["type"] == "tool"]  # nothing ran yet
        assert (await client.threads.get(thread_id))["status"] == "interrupted"

        final = await client.runs.wait(thread_id, "approval", command={"resume": "approved by Kim"})
        tool_messages = [m["content"] for m in final["messages"] if m["type"] == "tool"]
        assert tool_messages == ["CNC-003 stopped (approved by Kim)"]
        assert final["messages"][-1]["type"] == "ai" and final["messages"][-1]["content"] == "CNC-003 is stopped."
        assert final["synthesis"] == "CNC-003 has been stopped."
        done = await client.threads.get_state(thread_id)
        assert done["next"] == [] and not done["tasks"]
        assert trap.requests == [], f"the server tried to reach the network: {trap.requests}"
        assert "Traceback" not in log_path.read_text(errors="replace")


async def test_an_approval_policy_interrupt_is_shown_and_resumed_through_langgraph_sdk(tmp_path):
    """a call the agent's approval policy holds pauses a ``langgraph dev`` run
    as a LangGraph interrupt whose value is the approval request; Studio's path
    (langgraph-sdk) resumes it with an edit decision, and the call runs with the edited
    arguments."""
    with langgraph_dev(APPROVAL_DIR, tmp_path) as (url, trap, log_path):
        client = get_client(url=url)
        thread_id = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread_id, "policy", input={"messages": [{"role": "user", "content": "Open a work order for CNC-003."}]})
        paused = await client.threads.get_state(thread_id)
        assert paused["next"] == ["execute_tools"]
        [pending] = [i for task in paused["tasks"] for i in task["interrupts"]]
        assert pending["value"]["type"] == "tool_approval" and pending["value"]["tool_call_id"] == "call_wo"
        assert pending["value"]["tool_args"] == {"equipment_id": "CNC-003", "task": "bearing"}
        assert pending["value"]["decisions"] == ["approve", "edit", "reject"]
        assert (await client.threads.get(thread_id))["status"] == "interrupted"

        final = await client.runs.wait(thread_id, "policy", command={
            "resume": {"type": "edit", "args": {"equipment_id": "CNC-003", "task": "replace bearing"}}})
        tool_messages = [m["content"] for m in final["messages"] if m["type"] == "tool"]
        assert tool_messages == ["work order created for CNC-003: replace bearing"]
        assert final["steps"][0]["approval"] == "edited"
        assert final["synthesis"] == "Work order created for CNC-003."
        assert trap.requests == [], f"the server tried to reach the network: {trap.requests}"
        assert "Traceback" not in log_path.read_text(errors="replace")


async def test_the_dag_graph_loads_and_finishes_a_run_through_langgraph_sdk(studio_server):
    """``studio/langgraph.json`` registers the DAG graph (``dag``) beside the ReAct
    one; ``langgraph dev`` serves it: its configuration form and drawing, and a run on the
    embedded model streamed to its end through langgraph-sdk (plan, steps, analysis and the
    synthesized answer, each step's loop checkpointed under the thread)."""
    url, trap, log_path = studio_server
    client = get_client(url=url)
    assistant = (await client.assistants.search(graph_id="dag"))[0]
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])
    assert set(schemas["context_schema"]["properties"]) == {"model", "mode", "max_iterations", "tool_selection"}
    assert {"plan", "results", "analysis", "synthesis", "finish_reason"} <= set(schemas["output_schema"]["properties"])
    drawn = await client.assistants.get_graph(assistant["assistant_id"])
    assert {"start_dag", "plan", "schedule", "run_step", "analyze", "synthesize"} <= {node["id"] for node in drawn["nodes"]}

    thread_id = (await client.threads.create())["thread_id"]
    seen: list[tuple[str, object]] = []
    async for part in client.runs.stream(
        thread_id, "dag", input={"messages": [{"role": "user", "content": DEMO_QUESTION}]},
        context={**CONTEXT, "max_iterations": 1}, stream_mode=["updates", "custom"],
    ):
        seen.append((part.event, part.data))
    assert not [data for event, data in seen if event == "error"], seen[-3:]
    updated = [node for event, data in seen if event == "updates" for node in data]
    assert updated[:2] == ["start_dag", "plan"] and "run_step" in updated and updated[-1] == "synthesize"
    custom = [data for event, data in seen if event == "custom"]
    channels = {c.get("reactgraph_event") for c in custom}
    assert {"plan", "dag_step", "analysis", "answer"} <= channels
    started = [c["data"]["step_id"] for c in custom if c.get("reactgraph_event") == "dag_step"
               and c["data"]["status"] == "started"]
    assert started  # at least one plan step ran
    state = await client.threads.get_state(thread_id)
    values = state["values"]
    assert state["next"] == [] and values["goal"] == DEMO_QUESTION and values["synthesis"].strip()
    assert values["finish_reason"] in ("achieved", "not_achieved", "max_rounds") and values["plan"]
    assert set(values["results"]) == {step["id"] for step in values["plan"]}
    assert (await client.threads.get(thread_id))["status"] == "idle"
    assert trap.requests == [], f"the server tried to reach the network: {trap.requests}"
    assert "Traceback" not in log_path.read_text(errors="replace")
