"""The MCP servers' tools as LangChain tools (:class:`MCPTool`) and the block that opens
and closes them (:func:`load_mcp_tools`)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal

from langchain_core.tools import BaseTool, ToolException
from pydantic import PrivateAttr

from reactgraph.core.redaction import redact
from reactgraph.tools.artifacts import Artifact
from reactgraph.tools.mcp.config import MCP_EXTRA_HINT, RECONNECT_AFTER, STARTUP_TIMEOUT, parse_mcp_config, unique_tool_names
from reactgraph.tools.mcp.results import error_observation, item_field, map_tool_result
from reactgraph.tools.mcp.sessions import MCPServer, one_line
from reactgraph.tools.ranking import KEYWORDS_KEY

logger = logging.getLogger(__name__)


class MCPTool(BaseTool):
    """One MCP server tool as the agent runs it (see the module docstring).

    The name is the agent's (:func:`unique_tool_names`); the call goes to ``remote_name``
    on ``server``. The result is ``(observation, artifact)``
    (``response_format="content_and_artifact"``, :func:`map_tool_result`); an error
    result or an unavailable server raises a ``ToolException`` that becomes the error
    observation ``Error: …`` (SPEC R2.7).
    """

    server: str
    remote_name: str
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    _link: MCPServer = PrivateAttr()

    def __init__(self, link: MCPServer, listed: BaseTool, name: str) -> None:
        metadata = dict(listed.metadata or {})
        metadata.update({"connector": link.name, "mcp_server": link.name, "mcp_tool": listed.name,
                         KEYWORDS_KEY: [*metadata.get(KEYWORDS_KEY, []), link.name]})
        super().__init__(name=name, description=listed.description or listed.name, args_schema=listed.args_schema,
                         metadata=metadata, tags=[f"connector:{link.name}"], server=link.name,
                         remote_name=listed.name, handle_tool_error=error_observation)
        self._link = link

    def _finish(self, result: Any) -> tuple[str, Artifact | None]:
        observation, artifact = map_tool_result(result, self.name)
        if item_field(result, "isError"):
            raise ToolException(f"MCP tool {self.remote_name!r} of {self.server!r} failed: {' '.join(observation.split())[:500]}")
        return observation, artifact

    def _run(self, *args: Any, **kwargs: Any) -> tuple[str, Artifact | None]:
        kwargs.pop("run_manager", None)
        return self._finish(self._link.call_blocking(self.remote_name, kwargs))

    async def _arun(self, *args: Any, **kwargs: Any) -> tuple[str, Artifact | None]:
        kwargs.pop("run_manager", None)
        return self._finish(await self._link.call(self.remote_name, kwargs))




class MCPTools(list):  # type: ignore[type-arg]
    """What :func:`load_mcp_tools` yields: the list of :class:`MCPTool` (pass it, or its
    items, as an agent's tools), plus what happened to each server.

    Attributes:
        servers: ``{server: [tool name in the agent, ...]}`` for every server that started.
        failures: ``{server: one-line reason}`` for every server that did not start.
    """

    def __init__(self, tools: Iterable[MCPTool], servers: dict[str, list[str]], failures: dict[str, str]) -> None:
        super().__init__(tools)
        self.servers = servers
        self.failures = failures


@asynccontextmanager
async def load_mcp_tools(
    config: str | os.PathLike[str] | Mapping[str, Any],
    *,
    reserved: Iterable[str] = (),
    startup_timeout: float = STARTUP_TIMEOUT,
    reconnect_after: float | None = RECONNECT_AFTER,
) -> AsyncIterator[MCPTools]:
    """Open the MCP servers of a client configuration and yield their tools (SPEC R13.4).

    The servers start together; each stays open until the block ends (then every session
    is closed and every stdio process stopped). Use the tools in async runs (``arun``,
    ``astream_events``) on the loop that opened them; a sync run calls them from its
    worker thread through this loop, which must then be free.

    Args:
        config: A configuration file's path or its parsed object (:func:`parse_mcp_config`).
        reserved: Names of the agent's other tools; an MCP tool with one of them is
            prefixed with its server's name (:func:`unique_tool_names`).
        startup_timeout: Seconds each server has to start and list its tools. The servers
            start together and the block waits no longer than this: a server not up by then
            is left out (its process stopped in the background).
        reconnect_after: Seconds after a server went down (its process exited, its
            connection broke) before a call of one of its tools opens a new session; calls
            before that fail at once. ``None``: a server that went down stays down. The
            tools are those listed at start.

    Yields:
        :class:`MCPTools`: the tools of every server that started, in configuration order,
        with ``servers`` and ``failures``. A server that failed is logged (warning) and
        left out; its tools are not offered.

    Raises:
        MCPConfigError: The configuration is malformed.
        ImportError: The ``mcp`` extra is not installed (the message says how to install it).
    """
    connections = parse_mcp_config(config)
    try:
        import langchain_mcp_adapters  # noqa: F401
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"{MCP_EXTRA_HINT} ({exc})") from exc
    links = [MCPServer(name, connection, reconnect_after=reconnect_after) for name, connection in connections.items()]
    async with AsyncExitStack() as stack:
        for link in links:
            stack.push_async_callback(link.close)
        outcomes = await asyncio.gather(*(link.start(startup_timeout) for link in links), return_exceptions=True)
        failures = {link.name: redact(one_line(outcome) if not isinstance(outcome, ToolException) else str(outcome),
                                      link.secrets)
                    for link, outcome in zip(links, outcomes, strict=True) if isinstance(outcome, BaseException)}
        for name, reason in failures.items():
            logger.warning("MCP server %r failed to start: %s", name, reason)
        started = [link for link in links if link.name not in failures]
        names = unique_tool_names({link.name: [tool.name for tool in link.tools] for link in started}, reserved)
        tools = [MCPTool(link, listed, names[(link.name, listed.name)]) for link in started for listed in link.tools]
        servers = {link.name: [names[(link.name, listed.name)] for listed in link.tools] for link in started}
        yield MCPTools(tools, servers, failures)
