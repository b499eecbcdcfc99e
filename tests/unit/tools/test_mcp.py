"""MCP connectors without a server (SPEC R5.4, R13.4, R2.7, R2.9): the configuration,
unique tool names, the mapping of MCP results to observations and artifacts, and an MCP tool
whose server answers an error or is gone, inside a run. The real servers are in
tests/integration/test_mcp.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import ToolException
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)

from reactgraph import MCPConfigError, ModelAbilities, ReActAgent
from reactgraph.tools.mcp import MCPServer, MCPTool, map_tool_result, parse_mcp_config, unique_tool_names
from reactgraph.testing import ScriptedChatModel, tool_call

# --- configuration --------------------------------------------------------------------------


def test_the_usual_client_configuration_gives_stdio_and_http_connections(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKEN", "s3cret")
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server-files", "${HOME_DIR}"], "env": {"KEY": "${TOKEN}"}},
        "web": {"url": "http://127.0.0.1:9000/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "legacy": {"url": "https://example.com/sse", "type": "sse"},
        "http": {"url": "https://example.com/mcp", "transport": "http"},
        "off": {"command": "nothing", "disabled": True},
    }}))
    connections = parse_mcp_config(path)
    assert list(connections) == ["files", "web", "legacy", "http"]
    assert connections["files"] == {"transport": "stdio", "command": "npx", "args": ["-y", "server-files", "${HOME_DIR}"],
                                    "env": {"KEY": "s3cret"}, "cwd": None}
    assert connections["web"] == {"transport": "streamable_http", "url": "http://127.0.0.1:9000/mcp",
                                  "headers": {"Authorization": "Bearer s3cret"}}
    assert connections["legacy"]["transport"] == "sse" and connections["http"]["transport"] == "streamable_http"


@pytest.mark.parametrize(("config", "message"), [
    ({"mcpServers": []}, "must be an object with an 'mcpServers' (or 'servers') object"),
    ({"mcpServers": {"x": {}}}, "MCP server 'x': needs a 'command' (stdio) or a 'url'"),
    ({"mcpServers": {"x": {"command": "a", "args": "b"}}}, "MCP server 'x': 'args' must be a list of strings"),
    ({"mcpServers": {"x": {"url": "http://h/mcp", "transport": "websocket"}}}, "MCP server 'x': unknown transport 'websocket'"),
    ({"mcpServers": {"x": {"command": "a", "type": "sse"}}}, "MCP server 'x': a 'command' server speaks stdio, not 'sse'"),
    ({"mcpServers": {"x": {"command": "a", "env": {"A": 1}}}}, "MCP server 'x': 'env' must be an object of strings"),
])
def test_a_malformed_configuration_names_the_server_and_the_field(config, message):
    with pytest.raises(MCPConfigError) as caught:
        parse_mcp_config(config)
    assert message in str(caught.value) and isinstance(caught.value, ValueError)


def test_a_vs_code_mcp_json_is_read_as_written(monkeypatch):
    """VS Code's ``.vscode/mcp.json``: servers under ``servers``, ``type`` as the transport
    (``stdio``, ``http``, ``sse``), ``${env:VAR}`` references, and its ``inputs`` list (not ours)."""
    monkeypatch.setenv("GH_TOKEN", "t0k")
    connections = parse_mcp_config({
        "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": True}],
        "servers": {
            "files": {"type": "stdio", "command": "npx", "args": ["-y", "server-files"], "env": {"TOKEN": "${env:GH_TOKEN}"}},
            "github": {"type": "http", "url": "https://api.example.com/mcp/", "headers": {"Authorization": "Bearer ${env:GH_TOKEN}"}},
            "legacy": {"type": "sse", "url": "http://localhost:3001/sse"},
        },
    })
    assert connections == {
        "files": {"transport": "stdio", "command": "npx", "args": ["-y", "server-files"], "env": {"TOKEN": "t0k"}, "cwd": None},
        "github": {"transport": "streamable_http", "url": "https://api.example.com/mcp/", "headers": {"Authorization": "Bearer t0k"}},
        "legacy": {"transport": "sse", "url": "http://localhost:3001/sse"},
    }


def test_other_clients_fields_and_a_timeout_are_understood():
    """Cline's approval lists are accepted (and not used); ``timeout`` is how long each answer
    of the server is awaited (the session's read timeout; for a URL also the HTTP timeout);
    ``"disabled": false`` keeps a server."""
    from datetime import timedelta

    connections = parse_mcp_config({"mcpServers": {
        "files": {"command": "npx", "timeout": 30, "autoApprove": ["read"], "alwaysAllow": [], "disabled": False},
        "web": {"url": "http://h/mcp", "transport": "streamable_http", "type": "streamable_http", "timeout": 2.5,
                "sse_read_timeout": 60},
    }})
    assert connections["files"]["session_kwargs"] == {"read_timeout_seconds": timedelta(seconds=30)}
    assert connections["web"]["timeout"] == 2.5 and connections["web"]["sse_read_timeout"] == 60.0
    assert connections["web"]["session_kwargs"] == {"read_timeout_seconds": timedelta(seconds=2.5)}


@pytest.mark.parametrize(("entry", "message"), [
    ({"comand": "npx"}, "MCP server 'x': unknown field 'comand' (did you mean 'command'?); a server takes command, args, env, cwd (stdio)"),
    ({"command": "npx", "arg": ["-y"]}, "MCP server 'x': unknown field 'arg' (did you mean 'args'?)"),
    ({"url": "http://h/mcp", "header": {}}, "MCP server 'x': unknown field 'header' (did you mean 'headers'?)"),
    ({"command": "npx", "colour": "red"}, "MCP server 'x': unknown field 'colour'; a server takes"),
    ({"command": "npx", "disabled": "true"}, "MCP server 'x': 'disabled' must be true or false (JSON booleans), not 'true'"),
    ({"command": "npx", "disabled": 0}, "MCP server 'x': 'disabled' must be true or false"),
    ({"command": "npx", "headers": {"A": "b"}}, "MCP server 'x': 'headers' does not apply to a 'command' (stdio) server"),
    ({"url": "http://h/mcp", "args": ["a"]}, "MCP server 'x': 'args' does not apply to a 'url' server"),
    ({"command": "npx", "url": "http://h/mcp"}, "MCP server 'x': has both 'command' and 'url'; keep one"),
    ({"command": "npx", "timeout": "30s"}, "MCP server 'x': 'timeout' must be a number of seconds above 0, not '30s'"),
    ({"url": "http://h/mcp", "type": "http", "transport": "sse"}, "MCP server 'x': 'type' and 'transport' disagree"),
    ({"command": "npx", "envFile": ".env"}, "MCP server 'x': 'envFile' is not supported: put the variables in 'env'"),
    ({"serverUrl": "http://h/mcp"}, "MCP server 'x': 'serverUrl' is not supported: call it 'url'"),
    ({"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${input:api-key}"}},
     "MCP server 'x': 'headers' uses ${input:api-key}, which only VS Code asks for; put the value in an environment"),
])
def test_a_misspelled_or_misplaced_field_is_a_one_line_error(entry, message):
    """A field no client format has, one of the other kind of server or a value of the wrong
    type stops the configuration with one line naming the server, the field and what is
    allowed (before this, ``"comand"`` and ``"disabled": "true"`` were silently ignored)."""
    with pytest.raises(MCPConfigError) as caught:
        parse_mcp_config({"mcpServers": {"x": entry}})
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_servers_and_mcp_servers_together_are_refused():
    with pytest.raises(MCPConfigError, match="both 'mcpServers' and 'servers'"):
        parse_mcp_config({"mcpServers": {}, "servers": {}})


def test_an_unreadable_or_non_json_file_is_a_configuration_error(tmp_path):
    with pytest.raises(MCPConfigError, match="cannot read the MCP configuration"):
        parse_mcp_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{mcpServers")
    with pytest.raises(MCPConfigError, match="is not JSON"):
        parse_mcp_config(tmp_path / "bad.json")



def test_a_configuration_nested_past_the_bound_is_one_configuration_error(tmp_path):
    """~3,000 levels printed a RecursionError traceback."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"mcpServers": {"x": {"command": "srv", "args": ' + "[" * 3000 + "]" * 3000 + "}}}")
    with pytest.raises(MCPConfigError, match="nests more than 64 levels deep"):
        parse_mcp_config(deep)
    nested: Any = "x"
    for _ in range(100):
        nested = [nested]
    with pytest.raises(MCPConfigError, match="nests more than 64 levels deep"):
        parse_mcp_config({"mcpServers": {"x": {"command": "srv", "args": nested}}})


async def test_a_failure_line_never_shows_a_secret_from_the_environment(monkeypatch, caplog):
    """a secret put in a ``url`` through ``${env:VAR}`` was printed in the failure
    line and the log."""
    from fastapi import FastAPI

    from reactgraph.tools.mcp import load_mcp_tools
    from tests.serving import running_server

    monkeypatch.setenv("MCP_TOKEN", "tok-4f9a2c71")
    monkeypatch.setenv("MCP_PASSWORD", "pw-81be05d3")
    async with running_server(FastAPI()) as url:  # answers 404, which httpx reports with the URL
        host = url.removeprefix("http://")
        config = {"mcpServers": {
            "query": {"url": f"http://{host}/mcp?key=${{env:MCP_TOKEN}}", "type": "sse"},
            "userinfo": {"url": f"http://robot:${{env:MCP_PASSWORD}}@{host}/mcp", "type": "sse"},
            "path": {"url": f"http://{host}/${{env:MCP_TOKEN}}/mcp", "headers": {"X-Key": "${MCP_PASSWORD}"},
                     "type": "sse"},
        }}
        async with load_mcp_tools(config, startup_timeout=10) as tools:
            assert set(tools.failures) == {"query", "userinfo", "path"}
            shown = " ".join(tools.failures.values()) + caplog.text
    assert "tok-4f9a2c71" not in shown and "pw-81be05d3" not in shown
    assert "404 Not Found" in tools.failures["query"] and "key=***" in tools.failures["query"]


# --- names ----------------------------------------------------------------------------------


def test_names_clashing_across_servers_or_with_other_tools_get_the_server_prefix():
    names = unique_tool_names(
        {"everything": ["echo", "add"], "plant": ["echo", "machine_temperature", "get_status"]},
        reserved=["get_status"],
    )
    assert names == {
        ("everything", "echo"): "everything_echo",
        ("everything", "add"): "add",
        ("plant", "echo"): "plant_echo",
        ("plant", "machine_temperature"): "machine_temperature",
        ("plant", "get_status"): "plant_get_status",
    }


def test_names_are_made_safe_short_and_distinct():
    names = unique_tool_names({"my server": ["read.file", "x" * 80], "a": ["b_c"], "a_b": ["c"]}, reserved=["a_b_c"])
    assert names[("my server", "read.file")] == "read_file"
    assert names[("my server", "x" * 80)] == "x" * 64
    values = list(names.values())
    assert len(values) == len(set(values)) and "a_b_c" not in values
    assert all(len(value) <= 64 for value in values)


# --- results --------------------------------------------------------------------------------

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_text_is_the_observation_and_structured_content_fills_in_when_there_is_none():
    text = CallToolResult(content=[TextContent(type="text", text="a"), TextContent(type="text", text="b")],
                          structuredContent={"units": 3})
    assert map_tool_result(text, "t") == ("a\nb", None)
    structured = CallToolResult(content=[], structuredContent={"line": "A", "units": 1284})
    assert map_tool_result(structured, "t") == ('{"line": "A", "units": 1284}', None)


def test_an_image_is_an_artifact_named_in_the_observation():
    result = CallToolResult(content=[TextContent(type="text", text="chart:"),
                                     ImageContent(type="image", data=PNG, mimeType="image/png")])
    observation, artifact = map_tool_result(result, "trend_chart")
    assert observation == "chart:\n[image image/png: trend_chart-image-2.png (artifact)]"
    assert artifact is not None and artifact.kind == "html" and artifact.filename == "trend_chart-image-2.png"
    assert f'src="data:image/png;base64,{PNG}"' in artifact.content


def test_html_and_markdown_resources_are_artifacts_other_text_resources_are_data():
    html = CallToolResult(content=[EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="report://a/shift.html", mimeType="text/html", text="<h1>Shift</h1>"))])
    assert map_tool_result(html, "r")[1].to_dict() == {"filename": "shift.html", "content": "<h1>Shift</h1>", "kind": "html"}
    markdown = CallToolResult(content=[EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="notes://n", mimeType="text/markdown", text="# Notes"))])
    observation, artifact = map_tool_result(markdown, "notes")
    assert artifact.kind == "markdown" and artifact.filename == "notes-resource-1.md" and "(artifact)" in observation
    data = CallToolResult(content=[EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="file:///tmp/a.csv", mimeType="text/csv", text="a,b\n1,2"))])
    assert map_tool_result(data, "csv") == ("[resource file:///tmp/a.csv]\na,b\n1,2", None)


def test_binary_resources_and_links_and_several_parts_make_one_artifact():
    result = CallToolResult(content=[
        EmbeddedResource(type="resource", resource=BlobResourceContents(uri="file:///x/data.bin", mimeType="application/pdf",
                                                                        blob="AAEC")),
        ResourceLink(type="resource_link", name="manual", uri="https://example.com/manual.pdf"),
        ImageContent(type="image", data=PNG, mimeType="image/png"),
    ])
    observation, artifact = map_tool_result(result, "docs")
    assert observation.splitlines() == [
        "[resource file:///x/data.bin (application/pdf, 3 bytes): data.bin (artifact)]",
        "[resource link manual: https://example.com/manual.pdf]",
        "[image image/png: docs-image-3.png (artifact)]",
    ]
    assert artifact.filename == "docs.html" and artifact.content.count("<section>") == 2
    assert 'download="data.bin" href="data:application/pdf;base64,AAEC"' in artifact.content


# --- tools in a run -------------------------------------------------------------------------


class FakeServer(MCPServer):
    """An MCP server link answering from a table instead of a session."""

    def __init__(self, name: str, answers: dict[str, Any]) -> None:
        super().__init__(name, {"transport": "stdio", "command": "none", "args": []})
        self.answers = answers
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        self.seen.append((tool, arguments))
        answer = self.answers[tool]
        if isinstance(answer, Exception):
            raise answer
        return answer


def mcp_tool(server: MCPServer, remote: str, name: str | None = None) -> MCPTool:
    from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool

    listed = convert_mcp_tool_to_langchain_tool(None, Tool(name=remote, description=f"{remote} of a machine.",
                                                           inputSchema={"type": "object", "properties": {
                                                               "machine_id": {"type": "string"}}}),
                                                connection={"transport": "stdio", "command": "none", "args": []},
                                                server_name=server.name)
    return MCPTool(server, listed, name or remote)


async def test_mcp_results_errors_and_a_gone_server_are_observations_in_a_run():
    """In one run: an image result is an artifact on the step (the model gets the note), an
    error result and a server that is unavailable are error observations, and the run
    answers (SPEC R2.7, R2.9)."""
    server = FakeServer("plant", {
        "trend_chart": CallToolResult(content=[ImageContent(type="image", data=PNG, mimeType="image/png")]),
        "broken_sensor": CallToolResult(content=[TextContent(type="text", text="sensor offline")], isError=True),
        "machine_temperature": ToolException("MCP server 'plant' is unavailable: the server process exited"),
    })
    tools = [mcp_tool(server, "trend_chart"), mcp_tool(server, "broken_sensor"),
             mcp_tool(server, "machine_temperature", "plant_machine_temperature")]
    assert tools[2].metadata["connector"] == "plant" and tools[2].tags == ["connector:plant"]
    model = ScriptedChatModel(responses=[
        AIMessage("", tool_calls=[tool_call("trend_chart", {"machine_id": "CNC-1"}, "c1"),
                                  tool_call("broken_sensor", {"machine_id": "CNC-1"}, "b1"),
                                  tool_call("plant_machine_temperature", {"machine_id": "CNC-1"}, "m1")]),
        "Done.",
    ], synthesis="Chart attached; the sensor is offline.")
    result = await ReActAgent(model, tools, abilities=ModelAbilities(tool_call=True)).run("chart CNC-1")
    steps = {step.tool_call_id: step for step in result.steps}
    assert steps["c1"].artifact is not None and steps["c1"].artifact.filename == "trend_chart-image-1.png"
    assert steps["b1"].error == "MCP tool 'broken_sensor' of 'plant' failed: sensor offline"
    assert steps["m1"].error == "MCP server 'plant' is unavailable: the server process exited"
    assert ("machine_temperature", {"machine_id": "CNC-1"}) in server.seen  # the remote name is called
    sent = {m.tool_call_id: m for m in model.calls[1] if isinstance(m, ToolMessage)}
    assert sent["c1"].content.startswith("[Artifact generated: trend_chart-image-1.png]")
    assert "base64" not in sent["c1"].content
    assert sent["m1"].status == "error" and result.answer.strip() and result.error is None


async def test_a_server_that_never_started_is_unavailable_not_a_crash():
    server = MCPServer("ghost", {"transport": "stdio", "command": "none", "args": []})
    tool = mcp_tool(server, "machine_temperature")
    message = await tool.ainvoke(tool_call("machine_temperature", {"machine_id": "A"}, "g1"))
    assert message.status == "error" and message.content == "Error: MCP server 'ghost' is unavailable: not started"


def test_how_a_server_process_ended_is_said_in_words():
    from reactgraph.tools.mcp import exit_reason

    assert exit_reason(-9) == "the server process was killed by SIGKILL"
    assert exit_reason(-15) == "the server process was killed by SIGTERM"
    assert exit_reason(3) == "the server process exited with status 3"
    assert exit_reason(None) == "the server process exited"


async def test_a_server_slower_than_its_timeout_is_a_one_line_observation():
    """``"timeout": 2`` in the configuration: a call the server does not answer in time (the
    SDK's read timeout) is the observation that it did not answer within 2 seconds, not a
    refusal."""
    import asyncio

    from mcp.shared.exceptions import McpError
    from mcp.types import ErrorData

    class Slow:
        async def call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
            raise McpError(ErrorData(code=408, message="Timed out while waiting for response to ClientRequest."))

    (connection,) = parse_mcp_config({"mcpServers": {"slow": {"command": "npx", "timeout": 2}}}).values()
    server = MCPServer("slow", connection)
    server._session, server._loop = Slow(), asyncio.get_running_loop()
    message = await mcp_tool(server, "machine_temperature").ainvoke(tool_call("machine_temperature", {"machine_id": "A"}, "s1"))
    assert message.status == "error"
    assert message.content == "Error: MCP server 'slow' did not answer 'machine_temperature' within 2 seconds"


def test_the_documented_naming_rule_and_where_order_matters():
    """docs/mcp.md's rule: a shared name is prefixed on every server whatever the order; a name
    an earlier tool got is prefixed too, and a prefixed name still taken gets ``_2``."""
    forward = unique_tool_names({"a": ["x"], "b": ["x"], "c": ["a_x"]})
    backward = unique_tool_names({"c": ["a_x"], "b": ["x"], "a": ["x"]})
    assert (forward[("a", "x")], forward[("b", "x")], forward[("c", "a_x")]) == ("a_x", "b_x", "c_a_x")
    assert (backward[("a", "x")], backward[("b", "x")], backward[("c", "a_x")]) == ("a_x_2", "b_x", "a_x")
    assert unique_tool_names({"p": ["echo", "add"], "q": ["echo"]}) == unique_tool_names({"q": ["echo"], "p": ["echo", "add"]})
