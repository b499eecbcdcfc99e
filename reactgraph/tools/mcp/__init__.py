"""MCP servers as connectors of the hub (SPEC R5.4, R13.4).

:func:`load_mcp_tools` opens the servers of an MCP client configuration — the
``{"mcpServers": {name: {command, args, env} | {url, transport}}}`` file of Claude Desktop,
Cursor and Claude Code, or VS Code's ``{"servers": {name: {type, ...}}}`` — and yields their
tools as LangChain tools for :class:`~reactgraph.ReActAgent`::

    async with load_mcp_tools("mcp.json") as tools:
        agent = ReActAgent(llm, [*my_tools, *tools])
        result = await agent.arun("...")

What it does:

- **Sessions stay open** for the block: one session per server, opened once (stdio: the
  process is started once; streamable HTTP / SSE: one MCP session), closed on exit. Each
  session lives in a task of its own, so a transport that fails cancels that task only,
  never the run that called the tool.
- **Each server is a connector**: its tools carry ``metadata["connector"]`` (the server
  name, also a search keyword for tool selection, :mod:`reactgraph.tools.ranking`) and the tag
  ``connector:<server>``, like the demo plant's connectors. Tool selection (SPEC §5)
  ranks them together with every other tool of the agent.
- **Names stay unique** (:func:`unique_tool_names`): a name two servers share, or one
  already taken by another tool (``reserved``), becomes ``<server>_<name>``.
- **Failures are observations, never crashes** (SPEC R2.7): a server that fails to start
  is left out with a one-line reason (:attr:`MCPTools.failures`; the other servers' tools
  load); a call to a server that died, an error result or a transport failure is the
  observation ``Error: MCP server '<server>' …`` in one line, and the run goes on. A
  server that went down gets a new session from the first call ``reconnect_after``
  (10) seconds later, so a long-lived ``reactgraph serve`` outlives a restarted server.
- **Results map to observations and artifacts** (:func:`map_tool_result`; SPEC R2.9):
  text (and structured content when there is no text) is the observation; images, audio,
  HTML/markdown resources and binary resources become one :class:`~reactgraph.Artifact`
  for the UI, named in the observation.

Transports: the ``langchain-mcp-adapters`` package opens streamable HTTP and SSE sessions
and converts each listed MCP tool (name, description, JSON schema, annotations). Two
things it falls short on are done here with the ``mcp`` SDK: stdio servers are started
with their standard error kept in a file (the last line explains a server that failed to
start, and nothing is written over the terminal) and their process known to the session's
task (its exit status explains a server that died: :func:`exit_reason`), and results are mapped from the SDK's
``CallToolResult`` (the adapter drops the URI and type of embedded resources and refuses
audio). Both packages are the ``mcp`` extra: ``pip install 'reactgraph[mcp]'``.

The package keeps one concern per module: :mod:`~reactgraph.tools.mcp.config` (the
client configuration, tool names), :mod:`~reactgraph.tools.mcp.sessions` (one server's
session), :mod:`~reactgraph.tools.mcp.processes` (stdio servers' processes),
:mod:`~reactgraph.tools.mcp.results` (results to observations and artifacts) and
:mod:`~reactgraph.tools.mcp.loading` (the tools and :func:`load_mcp_tools`); every name is
importable from ``reactgraph.tools.mcp`` itself.
"""

from __future__ import annotations

from reactgraph.tools.mcp.config import (
    COMMON_FIELDS,
    HTTP_TRANSPORTS,
    IGNORED_FIELDS,
    MAX_TOOL_NAME,
    MCP_EXTRA_HINT,
    RECONNECT_AFTER,
    REMOTE_FIELDS,
    REQUEST_TIMEOUT,
    SERVER_LISTS,
    STARTUP_TIMEOUT,
    STDIO_FIELDS,
    parse_mcp_config,
    unique_tool_names,
)
from reactgraph.tools.mcp.loading import (
    MCPTool,
    MCPTools,
    load_mcp_tools,
)
from reactgraph.tools.mcp.processes import (
    KILL_GRACE_SECONDS,
    SETTLE_SECONDS,
    exit_reason,
    stop_process_groups,
)
from reactgraph.tools.mcp.results import (
    map_tool_result,
)
from reactgraph.tools.mcp.sessions import (
    MCPServer,
    connection_secrets,
    one_line,
)

__all__ = [
    "COMMON_FIELDS",
    "HTTP_TRANSPORTS",
    "IGNORED_FIELDS",
    "KILL_GRACE_SECONDS",
    "MAX_TOOL_NAME",
    "MCPServer",
    "MCPTool",
    "MCPTools",
    "MCP_EXTRA_HINT",
    "RECONNECT_AFTER",
    "REMOTE_FIELDS",
    "REQUEST_TIMEOUT",
    "SERVER_LISTS",
    "SETTLE_SECONDS",
    "STARTUP_TIMEOUT",
    "STDIO_FIELDS",
    "connection_secrets",
    "exit_reason",
    "load_mcp_tools",
    "map_tool_result",
    "one_line",
    "parse_mcp_config",
    "stop_process_groups",
    "unique_tool_names",
]
