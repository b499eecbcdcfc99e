"""MCP servers as connectors of the hub, against real servers (SPEC R5.4, R13.4, R2.7).

Two real MCP servers: ``@modelcontextprotocol/server-everything`` from npm (nobody here wrote
it) over stdio, installed with npm at test time, and the project's own FastMCP server
(``tests/mcp_server.py``) over streamable HTTP in a subprocess on a free port. The model is
scripted (:class:`reactgraph.testing.ScriptedChatModel`); everything else is real.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from reactgraph import AgentSettings, ModelAbilities, ReActAgent, load_mcp_tools
from reactgraph.testing import ScriptedChatModel, tool_call
from reactgraph.tools.runner import has_side_effects
from tests.npm import npm_bin, npm_cache_dir
from tests.processes import REPO

pytestmark = pytest.mark.integration

EVERYTHING = ("@modelcontextprotocol/server-everything", "2026.8.31", "mcp-server-everything")
"""The npm package, its pinned version and its command."""


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The stdio configuration entry of server-everything (installed with npm once)."""
    binary = npm_bin(*EVERYTHING, npm_cache_dir(tmp_path_factory.mktemp("npm")))
    return {"command": str(binary), "args": ["stdio"]}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def plant_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The project's MCP server over streamable HTTP: ``(url, process)``."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "tests.mcp_server", str(port)], cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "the MCP test server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the MCP test server did not listen within 60 s"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait()


def step_of(result: Any, call_id: str) -> Any:
    found = [step for step in result.steps if step.tool_call_id == call_id]
    assert found, f"no step {call_id}: {result.finish_reason} {result.error} {[(s.tool_call_id, s.tool_name, s.observation[:80]) for s in result.steps]} {result.answer!r}"
    return found[0]


async def test_an_agent_turn_uses_both_servers_and_answers_after_one_dies(everything, plant_server):
    """One run over a hub of two MCP servers: the model calls a tool of each (stdio and
    streamable HTTP), gets an image of each as an artifact, then the HTTP server is killed: its
    tool's call is a one-line error observation, the stdio server's tools keep working,
    and the run answers. A server whose command exits at start is reported and left out."""
    url, process = plant_server
    config = {"mcpServers": {
        "everything": everything,
        "plant": {"url": url, "transport": "streamable_http"},
        "gone": {"command": sys.executable, "args": ["-c", "pass"]},
    }}

    def kill_then_call(_messages: list[Any]) -> AIMessage:
        process.kill()
        process.wait()
        return AIMessage("", tool_calls=[tool_call("machine_temperature", {"machine_id": "CNC-004"}, "t2"),
                                         tool_call("everything_echo", {"message": "still here"}, "e2")])

    async with load_mcp_tools(config) as tools:
        assert set(tools.servers) == {"everything", "plant"}
        assert "exited" in tools.failures["gone"] and "\n" not in tools.failures["gone"]
        names = [tool.name for tool in tools]
        # Both servers have an ``echo``: both are prefixed; other names are kept.
        assert {"everything_echo", "plant_echo", "machine_temperature", "trend_chart"} <= set(names)
        by_name = {tool.name: tool for tool in tools}
        assert has_side_effects(by_name["machine_temperature"]) is False  # its readOnlyHint, through the loader
        assert has_side_effects(by_name["trend_chart"]) is None  # it declares nothing
        assert "echo" not in names and len(names) == len(set(names))
        model = ScriptedChatModel(
            by_kind={"selection": [AIMessage("", tool_calls=[tool_call(
                "select_tools", {"tools": ["everything_echo", "machine_temperature", "trend_chart", "get-tiny-image"]}, "s1")])]},
            responses=[
                AIMessage("", tool_calls=[tool_call("everything_echo", {"message": "hello"}, "e1"),
                                          tool_call("machine_temperature", {"machine_id": "CNC-003"}, "t1")]),
                AIMessage("", tool_calls=[tool_call("trend_chart", {"machine_id": "CNC-003"}, "c1"),
                                          tool_call("get-tiny-image", {}, "i1")]),
                kill_then_call,
                "CNC-003 runs at 71.5 C; the plant server went away after that.",
            ],
            synthesis="CNC-003: spindle temperature 71.5 C.",
        )
        agent = ReActAgent(model, tools, abilities=ModelAbilities(tool_call=True), settings=AgentSettings(tool_selection=True, tool_selection_max=6))
        result = await agent.run("Echo hello, read the spindle temperature of CNC-003, chart its trend, show the tiny image")

    # Tool selection ranked the tools of both servers together (one catalog, SPEC §5).
    assert model.kinds[0] == "selection"
    catalog = next(m.content for m in model.calls[0] if isinstance(m, HumanMessage))
    assert all(name in catalog for name in ("everything_echo", "get-tiny-image", "machine_temperature", "trend_chart"))
    assert step_of(result, "e1").observation == "Echo: hello"
    assert "71.5" in step_of(result, "t1").observation and step_of(result, "t1").error is None
    chart = step_of(result, "c1")
    assert chart.artifact is not None and chart.artifact.content.startswith('<img alt="trend_chart-image-1.png" src="data:image/png;base64,')
    # server-everything's image (text, image, text): the text is the observation, the image an artifact.
    logo = step_of(result, "i1")
    assert logo.artifact is not None and 'src="data:image/png;base64,' in logo.artifact.content
    assert "[image image/png: get-tiny-image-image-2.png (artifact)]" in logo.observation
    dead = step_of(result, "t2")
    assert dead.error is not None and dead.error.startswith("MCP server 'plant' is unavailable: ")
    assert "\n" not in dead.error
    assert step_of(result, "e2").observation == "Echo: still here" and step_of(result, "e2").error is None
    # The model saw the failure as an observation and answered.
    observations = [m for m in model.calls_except("synthesis")[-1] if getattr(m, "tool_call_id", None) == "t2"]
    assert observations and observations[0].content.startswith("Error: MCP server 'plant' is unavailable")
    assert result.answer.strip() and result.error is None


async def test_a_stdio_server_that_dies_mid_session_fails_as_an_observation(tmp_path):
    """The project's server over stdio ends its process during a call: that call and every
    later call of its tools are the one-line observation that the server is unavailable
    (no reconnection here); the other server's tools still answer (no crash, no hang)."""
    server = {"command": sys.executable, "args": ["-m", "tests.mcp_server", "stdio"], "cwd": str(REPO)}
    config = {"mcpServers": {"doomed": server, "spare": server}}
    async with load_mcp_tools(config, reconnect_after=None) as tools:
        by_name = {tool.name: tool for tool in tools}
        assert "doomed_exit_server" in by_name and "spare_machine_temperature" in by_name

        async def call(name: str, args: dict[str, Any]) -> Any:
            return await asyncio.wait_for(by_name[name].ainvoke(tool_call(name, args, f"id-{name}")), 30)

        dying = await call("doomed_exit_server", {})
        # The exit status, and the line the server wrote on its way out (not its start-up banner).
        assert dying.status == "error" and dying.content == ("Error: MCP server 'doomed' is unavailable: the server "
                                                             "process exited with status 3 (stderr: exit_server: stopping as asked)")
        after = await call("doomed_machine_temperature", {"machine_id": "CNC-001"})
        assert after.status == "error" and "\n" not in after.content
        assert after.content.startswith("Error: MCP server 'doomed' is unavailable")
        alive = await call("spare_machine_temperature", {"machine_id": "CNC-001"})
        assert alive.status == "success" and "71.5" in alive.content


def processes_with(marker: str) -> list[int]:
    """The ids of this machine's processes whose command line holds ``marker`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def test_a_server_killed_by_a_signal_is_reported_as_killed_not_by_its_banner():
    """A stdio server SIGKILLed between calls: the next call (and the one after) says the
    process was killed by SIGKILL, and quotes none of its standard error (its start-up
    banner explains nothing). Before, the message quoted that banner."""
    marker = f"kill-me-{uuid.uuid4().hex}"
    server = {"command": sys.executable, "args": ["-m", "tests.mcp_server", "stdio", marker], "cwd": str(REPO)}
    async with load_mcp_tools({"mcpServers": {"plant": server}}, reconnect_after=None) as tools:
        by_name = {tool.name: tool for tool in tools}
        first = await by_name["machine_temperature"].ainvoke(tool_call("machine_temperature", {"machine_id": "A"}, "m1"))
        assert first.status == "success"
        (pid,) = processes_with(marker)
        os.kill(pid, signal.SIGKILL)
        for call_id in ("m2", "m3"):
            after = await asyncio.wait_for(by_name["machine_temperature"].ainvoke(
                tool_call("machine_temperature", {"machine_id": "A"}, call_id)), 30)
            assert after.status == "error"
            assert after.content == "Error: MCP server 'plant' is unavailable: the server process was killed by SIGKILL"


async def test_startup_timeout_is_the_bound_on_waiting_for_a_server():
    """A server that never answers is given up when ``startup_timeout`` passes, not 10 s
    later: the tools of the others are there, and the reason says how long it had."""
    hung = {"command": sys.executable, "args": ["-c", "import time; time.sleep(120)"]}
    started = time.monotonic()
    async with load_mcp_tools({"mcpServers": {"hung": hung}}, startup_timeout=2) as tools:
        waited = time.monotonic() - started
        assert tools.failures == {"hung": "did not start within 2 seconds"} and list(tools) == []
    assert 2 <= waited < 3.5, waited


async def test_a_server_that_went_down_gets_a_new_session_on_a_later_call():
    """With ``reconnect_after`` passed (0 here), the call after a stdio server's process
    exited starts the server again and answers (a long-lived ``serve`` outlives a restarted
    MCP server); the call during which it died is still the unavailable observation."""
    server = {"command": sys.executable, "args": ["-m", "tests.mcp_server", "stdio"], "cwd": str(REPO)}
    async with load_mcp_tools({"mcpServers": {"plant": server}}, reconnect_after=0) as tools:
        by_name = {tool.name: tool for tool in tools}
        dying = await asyncio.wait_for(by_name["exit_server"].ainvoke(tool_call("exit_server", {}, "x1")), 30)
        assert dying.status == "error" and "is unavailable" in dying.content
        back = await asyncio.wait_for(by_name["machine_temperature"].ainvoke(
            tool_call("machine_temperature", {"machine_id": "CNC-002"}, "m1")), 60)
        assert back.status == "success" and back.content == "CNC-002: spindle temperature 71.5 C"


def test_reactgraph_run_with_mcp(tmp_path, plant_server):
    """``reactgraph run --mcp FILE`` (scripted model, real demo plant; VS Code's file format):
    the command says which servers it waits for, the MCP server's tool joins the hub, its
    result is printed, a server that does not start is one line with its exit status, and the
    run still answers (exit 0)."""
    url, _process = plant_server
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {  # VS Code's format, with a timeout for each answer
        "plant_extras": {"type": "http", "url": url, "timeout": 30},
        "broken": {"type": "stdio", "command": sys.executable, "args": ["-c", "import sys; sys.exit(1)"]},
    }}))
    script = {
        "selection": ["machine_temperature"],
        "responses": [{"tool_calls": [["machine_temperature", {"machine_id": "CNC-003"}, "m1"]]}, "It is 71.5 C."],
        "synthesis": "CNC-003 spindle: 71.5 C.",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.scripted_cli", json.dumps(script), "run", "Spindle temperature of CNC-003?",
         "--mcp", str(config), "--db", str(tmp_path / "factory.db"), "--db-url", "memory", "--synthesis", "always"],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("starting MCP servers: plant_extras, broken (up to 60 s) …\n")
    out = done.stdout
    assert "mcp: plant_extras (7 tools)" in out
    assert "mcp: server broken failed to start: the server process exited with status 1" in out
    assert "✓ machine_temperature" in out and "CNC-003: spindle temperature 71.5 C" in out
    assert "CNC-003 spindle: 71.5 C." in out


@pytest.mark.parametrize("command", [["run", "hi", "--db-url", "memory"], ["serve", "--checkpoints", "memory"]])
def test_a_bad_mcp_file_stops_run_and_serve_with_one_line(tmp_path, command):
    """A malformed ``--mcp`` file stops ``run`` and ``serve`` before any model starts: exit
    status 2 and one line naming the server and the field."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"web": {"url": "ftp://example"}}}))
    done = subprocess.run(
        [sys.executable, "-m", "reactgraph", *command, "--mcp", str(config), "--db", str(tmp_path / "f.db")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["reactgraph: error: MCP server 'web': 'url' must be an http:// or https:// URL"]



async def test_the_server_keeps_mcp_sessions_for_its_life(tmp_path, monkeypatch):
    """``reactgraph serve --mcp``'s agent (``open_demo_agent(mcp=...)``): the MCP tools join the
    demo hub, and two runs over HTTP (SSE) call the MCP tool through the session opened with
    the agent (it lives as long as the server); a server that did not start is reported on
    ``DemoAgent.mcp``."""
    from contextlib import asynccontextmanager

    import httpx

    import reactgraph.models
    from reactgraph.models import ResolvedModel
    from reactgraph.server import create_app, open_demo_agent
    from tests.serving import parse_sse, running_server

    model = ScriptedChatModel(
        by_kind={"selection": [AIMessage("", tool_calls=[tool_call("select_tools", {"tools": ["machine_temperature"]}, f"s{n}")])
                               for n in (1, 2)]},
        responses=[AIMessage("", tool_calls=[tool_call("machine_temperature", {"machine_id": "CNC-001"}, "m1")]), "ok",
                   AIMessage("", tool_calls=[tool_call("machine_temperature", {"machine_id": "CNC-002"}, "m2")]), "ok"],
        synthesis="Spindle at 71.5 C.",
    )

    @asynccontextmanager
    async def scripted(**_options: Any):
        yield ResolvedModel(model, ModelAbilities(tool_call=True), "scripted")

    monkeypatch.setattr(reactgraph.models, "open_model", scripted)
    server = {"command": sys.executable, "args": ["-m", "tests.mcp_server", "stdio"], "cwd": str(REPO)}
    config = {"mcpServers": {"extras": server, "dud": {"command": str(tmp_path / "no-such-server")}}}
    async with open_demo_agent(db=tmp_path / "factory.db", checkpoints="memory", mcp=config) as demo:
        assert demo.mcp is not None and "machine_temperature" in demo.mcp.servers["extras"]
        assert "No such file" in demo.mcp.failures["dud"]
        names = [tool.name for tool in demo.agent.tools]
        assert "machine_temperature" in names and "get_equipment_status" in names
        async with running_server(create_app(demo.agent)) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
            for thread in ("a", "b"):
                response = await client.post(f"/threads/{thread}/runs", json={"message": "Spindle temperature?"})
                events = parse_sse(response.text)
                done = [data for channel, data in events if channel == "step" and data.get("status") == "done"
                        and data.get("tool_name") == "machine_temperature"]
                assert done and "71.5" in done[0]["observation"] and done[0]["error"] is None


def doc_blocks(language: str) -> list[str]:
    """The fenced ``language`` blocks of docs/mcp.md, in order."""
    text = (REPO / "docs" / "mcp.md").read_text()
    return [block.split("\n", 1)[1] for block in text.split("```")[1::2] if block.startswith(language + "\n")]


async def test_the_examples_of_docs_mcp_run(tmp_path, monkeypatch, capsys):
    """docs/mcp.md's configurations (Claude Desktop's ``mcpServers`` and VS Code's ``servers``)
    parse as documented, and its library example runs as written (a scripted model as ``llm``,
    the project's server over stdio in ``mcp.json``) and prints what its ``# → …`` comments show."""
    from reactgraph.tools.mcp import parse_mcp_config
    from tests.unit.test_docs import fenced_blocks, printed, shown_outputs

    claude, vscode = doc_blocks("json")
    monkeypatch.setenv("PLANT_TOKEN", "t0k")
    parsed = [parse_mcp_config(json.loads(text)) for text in (claude, vscode)]
    assert [[c["transport"] for c in connections.values()] for connections in parsed] == [["stdio", "streamable_http"]] * 2
    assert parsed[0]["plant"]["headers"] == parsed[1]["plant"]["headers"] == {"Authorization": "Bearer t0k"}
    (example,) = doc_blocks("python")
    server = {"command": sys.executable, "args": ["-m", "tests.mcp_server", "stdio"], "cwd": str(REPO)}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {
        "plant": server, "broken": {"command": sys.executable, "args": ["-c", "pass"]}}}))
    monkeypatch.chdir(tmp_path)
    llm = ScriptedChatModel(responses=[  # JSON mode: the agent resolves no native tool calls for this model
        json.dumps({"type": "tool_call", "tool_name": "machine_temperature", "tool_args": {"machine_id": "CNC-003"}}),
        json.dumps({"type": "final_answer", "answer": "71.5 C."})])
    namespace: dict[str, Any] = {"llm": llm, "my_tools": []}
    exec("async def example():\n" + "".join(f"    {line}\n" for line in example.splitlines()) + "    return result",
         namespace)
    result = await namespace["example"]()
    assert "71.5" in result.steps[0].observation and result.answer.strip()
    # The example is marked skip for tests/unit/test_docs.py; its shown output is checked here.
    shown = shown_outputs([replace(block, skip=None) for block in fenced_blocks((REPO / "docs" / "mcp.md").read_text())])
    output = capsys.readouterr().out
    assert len(shown) == 2 and all(printed(line, output) for line in shown), (shown, output)


async def test_tool_metrics_stay_bounded_with_an_mcp_server_whose_tool_names_are_random(monkeypatch):
    """Each ``tool`` label is a series of its own in every scrape of ``/metrics``: an MCP
    server naming its 8 tools at random, all called, adds at most ``MAX_TOOL_LABELS`` (3
    here) names; the other calls count under ``(other)``."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    from reactgraph import observability
    from reactgraph.observability import metrics
    from reactgraph.server import ServerSettings, create_app
    from tests.serving import parse_sse

    monkeypatch.setattr(metrics, "MAX_TOOL_LABELS", 3)
    monkeypatch.setattr(metrics, "_tool_labels", set())

    def tool_counts(text: str) -> dict[str, float]:
        return {sample.labels["tool"]: sample.value for family in text_string_to_metric_families(text)
                for sample in family.samples if sample.name == "reactgraph_tool_calls_total"}

    server = {"command": sys.executable, "args": ["-m", "tests.mcp_server", "random", "8"], "cwd": str(REPO)}
    try:
        async with load_mcp_tools({"mcpServers": {"rnd": server}}) as tools:
            names = [tool.name for tool in tools]
            assert len(set(names)) == 8
            batch = AIMessage("", tool_calls=[tool_call(name, {"item": "Ventil 4"}, f"c{n}") for n, name in enumerate(names)])
            agent = ReActAgent(ScriptedChatModel(responses=[batch, "Alles geprüft."], synthesis="Alles geprüft."), tools,
                               abilities=ModelAbilities(tool_call=True))
            app = create_app(agent, ServerSettings(api_key=""))
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
                before = tool_counts((await client.get("/metrics")).text)
                ran = await client.post("/threads/rnd/runs", json={"message": "Prüfe alles"})
                after = tool_counts((await client.get("/metrics")).text)
    finally:
        observability.uninstrument()
    assert parse_sse(ran.text)[-1][1]["finish_reason"] == "final_answer"
    labelled = {name for name in after if name in names}
    assert len(labelled) == 3 and all(after[name] == 1 for name in labelled)
    assert after["(other)"] - before.get("(other)", 0) == 5  # the other five calls, counted, unlabelled
