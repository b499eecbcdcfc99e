"""``reactgraph run --thread/--db-url`` and ``reactgraph resume`` (SPEC R10.3),
with a scripted model in place of the configured one and the unit tools in place of the
demo hub (no model server, no tool selection)."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
from langchain_core.messages import AIMessage

import reactgraph.demo.factory
import reactgraph.tools.mcp
import reactgraph.models
from reactgraph import ModelAbilities
from reactgraph.cli.main import main
from reactgraph.models import ResolvedModel
from reactgraph.testing import ScriptedChatModel, tool_call


@pytest.fixture
def cli_model(monkeypatch, tools):
    """Makes the CLI use the model in ``box["model"]`` and the unit test tools."""
    box: dict[str, ScriptedChatModel] = {}

    @asynccontextmanager
    async def scripted_model(**_options):
        yield ResolvedModel(box["model"], ModelAbilities(tool_call=True), "scripted")

    monkeypatch.setattr(reactgraph.models, "open_model", scripted_model)
    monkeypatch.setattr(reactgraph.demo.factory, "build_factory_hub", lambda _db=None: tools)
    return box


def test_run_checkpoints_to_sqlite_and_resume_finishes_an_interrupted_run(cli_model, tmp_path, capsys):
    db_url = str(tmp_path / "checkpoints.db")
    cli_model["model"] = ScriptedChatModel(
        responses=[AIMessage(content="", tool_calls=[tool_call("get_status", {"equipment_id": "CNC-003"}, "c1")]),
                   RuntimeError("model endpoint rejected the request")])
    assert main(["run", "How is CNC-003?", "--thread", "cli-1", "--db-url", db_url]) == 1
    out, err = capsys.readouterr()
    assert "thread: cli-1" in out and "CNC-003: normal" in out
    assert "resume with: reactgraph resume cli-1" in err

    cli_model["model"] = ScriptedChatModel(responses=["CNC-003 is normal."], synthesis="CNC-003 runs normally.")
    assert main(["resume", "cli-1", "--db-url", db_url, "--synthesis", "always"]) == 0
    out, _ = capsys.readouterr()
    assert "resuming thread cli-1" in out and "CNC-003 runs normally." in out
    assert "get_status" not in out  # the tool result from before the failure was kept

    assert main(["resume", "cli-1", "--db-url", db_url]) == 2
    assert "finished" in capsys.readouterr().err


def test_run_on_the_same_thread_continues_the_conversation(cli_model, tmp_path, capsys):
    db_url = str(tmp_path / "checkpoints.db")
    cli_model["model"] = first = ScriptedChatModel(responses=["CNC-003 is normal."])
    assert main(["run", "How is CNC-003?", "--thread", "chat", "--db-url", db_url]) == 0
    cli_model["model"] = second = ScriptedChatModel(responses=["It is a lathe."])
    assert main(["run", "What is it?", "--thread", "chat", "--db-url", db_url]) == 0
    assert [m.content for m in second.calls[0][1:]] == ["How is CNC-003?", "CNC-003 is normal.", "What is it?"]
    assert len(first.calls[0]) == 2  # system prompt and the question: the thread was new
    capsys.readouterr()


def test_resume_of_an_unknown_thread_is_a_one_line_error(cli_model, tmp_path, capsys):
    cli_model["model"] = ScriptedChatModel()
    assert main(["resume", "nope", "--db-url", str(tmp_path / "checkpoints.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("reactgraph: error:") and "no checkpoint" in err and err.count("\n") == 1


@pytest.fixture
def mcp_opened(monkeypatch, tmp_path):
    """A ``--mcp`` file of two servers, and the list of configurations ``load_mcp_tools`` was
    asked to open (it opens nothing: it yields no tools)."""
    from reactgraph.tools.mcp import MCPTools

    opened: list[object] = []

    @asynccontextmanager
    async def no_servers(config, **_options):
        opened.append(config)
        yield MCPTools([], {}, {})

    monkeypatch.setattr(reactgraph.tools.mcp, "load_mcp_tools", no_servers)
    config = tmp_path / "mcp.json"
    config.write_text('{"servers": {"files": {"type": "stdio", "command": "npx"}, "web": {"url": "http://127.0.0.1:9/mcp"}}}')
    return str(config), opened


def test_resume_of_an_unknown_thread_starts_no_mcp_server(cli_model, tmp_path, capsys, mcp_opened):
    """``reactgraph resume THREAD --mcp F`` checks that the thread has a checkpoint before it
    starts any MCP server (they may take a minute to start)."""
    config, opened = mcp_opened
    cli_model["model"] = ScriptedChatModel()
    assert main(["resume", "nope", "--db-url", str(tmp_path / "checkpoints.db"), "--mcp", config]) == 2
    err = capsys.readouterr().err
    assert err == "reactgraph: error: thread 'nope' has no checkpoint\n" and opened == []


def test_the_cli_says_which_mcp_servers_it_waits_for(cli_model, tmp_path, capsys, mcp_opened):
    """Before waiting for the servers of ``--mcp`` to start, ``reactgraph run`` prints one line
    on stderr naming them and the longest wait."""
    config, opened = mcp_opened
    cli_model["model"] = ScriptedChatModel(responses=["CNC-003 is normal."])
    assert main(["run", "How is CNC-003?", "--db-url", "memory", "--mcp", config]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "starting MCP servers: files, web (up to 60 s) …" and opened == [config]
