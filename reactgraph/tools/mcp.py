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
"""

from __future__ import annotations

import asyncio
import base64
import difflib
import html
import json
import logging
import os
import re
import signal
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextvars import ContextVar
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from langchain_core.tools import BaseTool, ToolException
from pydantic import PrivateAttr

from reactgraph.tools.artifacts import Artifact
from reactgraph.core.bounds import MAX_NESTING_DEPTH, json_text_too_deep, nesting_depth
from reactgraph.core.errors import MCPConfigError
from reactgraph.core.redaction import mapping_secrets, redact, url_secrets
from reactgraph.protocol.jsonparse import safe_json
from reactgraph.tools.ranking import KEYWORDS_KEY

logger = logging.getLogger(__name__)

MCP_EXTRA_HINT = "MCP servers need the mcp extra: pip install 'reactgraph[mcp]'"
"""What a missing ``mcp`` extra is reported as."""

STARTUP_TIMEOUT = 60.0
"""Default seconds a server has to start and list its tools (``npx`` may download first)."""

REQUEST_TIMEOUT = 408
"""The error code of the ``mcp`` SDK's ``McpError`` when a request's ``read_timeout_seconds`` passed."""

RECONNECT_AFTER = 10.0
"""Default seconds after a server went down before a call of one of its tools opens a new
session (starts the process again, for stdio); calls in between fail at once."""

HTTP_TRANSPORTS = {"streamable_http": "streamable_http", "streamable-http": "streamable_http",
                   "http": "streamable_http", "sse": "sse"}
"""Transport names accepted for a ``url`` server, as MCP clients spell them, and what each means."""

MAX_TOOL_NAME = 64
"""Longest tool name providers accept (OpenAI: ``^[a-zA-Z0-9_-]{1,64}$``)."""

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


# --- configuration --------------------------------------------------------------------------


SERVER_LISTS = ("mcpServers", "servers")
"""The keys a configuration keeps its servers under: ``mcpServers`` (Claude Desktop, Cursor,
Claude Code) and ``servers`` (VS Code's ``mcp.json``). Other top-level keys (VS Code's
``inputs``, a client's own settings) are not read."""

STDIO_FIELDS = ("command", "args", "env", "cwd")
"""The fields of a server that is a process started by reactgraph (stdio)."""

REMOTE_FIELDS = ("url", "headers", "sse_read_timeout")
"""The fields of a server reached at a URL (streamable HTTP, SSE)."""

COMMON_FIELDS = ("type", "transport", "timeout", "disabled")
"""The fields any server may have."""

IGNORED_FIELDS = ("autoApprove", "alwaysAllow", "description")
"""Fields other clients write (Cline's tool approval lists, a description) that mean nothing
here; they are accepted and not used (reactgraph's approval is ``AgentSettings.approval``)."""

_NOT_SUPPORTED = {
    "envFile": "put the variables in 'env' (or in the environment and refer to them as ${VAR})",
    "serverUrl": "call it 'url'",
}

_BRACED_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_INPUT_VAR = re.compile(r"\$\{input:([^}]*)\}")


def _expand(value: str) -> str:
    """``${VAR}`` (and VS Code's ``${env:VAR}``) replaced by the environment's values
    (unknown ones kept as written)."""
    return _BRACED_VAR.sub(lambda match: os.environ.get(match.group(1), match.group(0)), value)


def _string_map(server: str, field: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise MCPConfigError(f"MCP server {server!r}: {field!r} must be an object of strings")
    return {key: _expand(item) for key, item in value.items()}


def _seconds(server: str, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise MCPConfigError(f"MCP server {server!r}: {field!r} must be a number of seconds above 0, not {value!r}")
    return float(value)


def _check_fields(name: str, entry: dict[str, Any]) -> None:
    """Refuse a field no client format has, or one of the other kind of server (one line)."""
    known = (*STDIO_FIELDS, *REMOTE_FIELDS, *COMMON_FIELDS)
    for field in entry:
        if field in known or field in IGNORED_FIELDS:
            continue
        if field in _NOT_SUPPORTED:
            raise MCPConfigError(f"MCP server {name!r}: {field!r} is not supported: {_NOT_SUPPORTED[field]}")
        close = difflib.get_close_matches(str(field), known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise MCPConfigError(f"MCP server {name!r}: unknown field {field!r}{hint}; a server takes "
                             f"{', '.join(STDIO_FIELDS)} (stdio) or {', '.join(REMOTE_FIELDS)} (remote), "
                             f"and {', '.join(COMMON_FIELDS)}")
    if "command" in entry and "url" in entry:
        raise MCPConfigError(f"MCP server {name!r}: has both 'command' and 'url'; keep one")
    wrong = [field for field in (REMOTE_FIELDS if "command" in entry else STDIO_FIELDS if "url" in entry else ())
             if field in entry]
    if wrong:
        kind = "a 'command' (stdio) server" if "command" in entry else "a 'url' server"
        raise MCPConfigError(f"MCP server {name!r}: {wrong[0]!r} does not apply to {kind}")


def _check_prompts(name: str, entry: dict[str, Any]) -> None:
    """Refuse VS Code's ``${input:…}`` (a value VS Code asks the user for): nobody is asked here."""
    for field, value in entry.items():
        if isinstance(value, dict):
            value = list(value.values())
        texts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        prompts = [found for text in texts if isinstance(text, str) for found in _INPUT_VAR.findall(text)]
        if prompts:
            raise MCPConfigError(f"MCP server {name!r}: {field!r} uses ${{input:{prompts[0]}}}, which only VS Code "
                                 f"asks for; put the value in an environment variable and write ${{env:NAME}}")


def _disabled(name: str, entry: Any) -> bool:
    if not isinstance(entry, dict) or "disabled" not in entry:
        return False
    value = entry["disabled"]
    if not isinstance(value, bool):
        raise MCPConfigError(f"MCP server {name!r}: 'disabled' must be true or false (JSON booleans), not {value!r}")
    return value


def _server_connection(name: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise MCPConfigError(f"MCP server {name!r}: expected an object with 'command' or 'url'")
    _check_fields(name, entry)
    _check_prompts(name, entry)
    kinds = {entry[field] for field in ("transport", "type") if field in entry}
    if len(kinds) > 1:
        raise MCPConfigError(f"MCP server {name!r}: 'type' and 'transport' disagree ({' vs '.join(map(repr, kinds))})")
    kind = next(iter(kinds), None)
    session: dict[str, Any] = {}
    if "timeout" in entry:
        session["read_timeout_seconds"] = timedelta(seconds=_seconds(name, "timeout", entry["timeout"]))
    if "command" in entry:
        if kind not in (None, "stdio"):
            raise MCPConfigError(f"MCP server {name!r}: a 'command' server speaks stdio, not {kind!r}")
        command, args = entry["command"], entry.get("args", [])
        if not isinstance(command, str) or not command.strip():
            raise MCPConfigError(f"MCP server {name!r}: 'command' must be a non-empty string")
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise MCPConfigError(f"MCP server {name!r}: 'args' must be a list of strings")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise MCPConfigError(f"MCP server {name!r}: 'cwd' must be a string")
        stdio: dict[str, Any] = {"transport": "stdio", "command": _expand(command),
                                 "args": [_expand(arg) for arg in args],
                                 "env": _string_map(name, "env", entry.get("env")) or None,
                                 "cwd": _expand(cwd) if cwd else None}
        if session:
            stdio["session_kwargs"] = session
        return stdio
    if "url" in entry:
        url = entry["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise MCPConfigError(f"MCP server {name!r}: 'url' must be an http:// or https:// URL")
        transport = HTTP_TRANSPORTS.get(kind or "streamable_http")
        if transport is None:
            raise MCPConfigError(f"MCP server {name!r}: unknown transport {kind!r} "
                                 f"(use one of {', '.join(sorted(HTTP_TRANSPORTS))})")
        connection: dict[str, Any] = {"transport": transport, "url": _expand(url)}
        headers = _string_map(name, "headers", entry.get("headers"))
        if headers:
            connection["headers"] = headers
        if session:
            connection["timeout"] = session["read_timeout_seconds"].total_seconds()
            connection["session_kwargs"] = session
        if "sse_read_timeout" in entry:
            connection["sse_read_timeout"] = _seconds(name, "sse_read_timeout", entry["sse_read_timeout"])
        return connection
    raise MCPConfigError(f"MCP server {name!r}: needs a 'command' (stdio) or a 'url' (streamable HTTP, SSE)")


def parse_mcp_config(config: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Read an MCP client configuration (SPEC R13.4, R5.4: each server a connector of the hub).

    Args:
        config: A JSON file's path, or the parsed object: ``{"mcpServers": {name: entry}}``
            (Claude Desktop, Cursor), ``{"servers": {name: entry}}`` (VS Code), or the
            ``{name: entry}`` mapping itself. An entry is ``{"command": str, "args": [str],
            "env": {str: str}, "cwd": str}`` for a stdio server, or ``{"url": str,
            "headers": {str: str}, "sse_read_timeout": seconds}`` for a remote one; any entry
            may have ``type`` or ``transport`` (``stdio``; ``streamable_http``, ``http`` or
            ``sse`` for a URL, streamable HTTP by default), ``timeout`` (seconds to wait for
            each answer of the server) and ``disabled`` (``true`` skips it). ``${VAR}`` and
            ``${env:VAR}`` in strings are replaced from the environment.

    Returns:
        ``{name: connection}`` in file order, each connection a ``langchain-mcp-adapters``
        connection dict (``transport`` set; ``timeout`` becomes the session's
        ``read_timeout_seconds``).

    Raises:
        MCPConfigError: The file cannot be read, is not JSON or nests more than
            :data:`~reactgraph.core.bounds.MAX_NESTING_DEPTH` levels, or an entry is malformed: a
            field of no client's format (``"comand"``), a field of the other kind of server,
            a value of the wrong type (``"disabled": "true"``), a VS Code ``${input:…}``
            prompt. The message is one line naming the server, the field and what is allowed.
    """
    if isinstance(config, Mapping):
        data: Any = config
        if nesting_depth(data) > MAX_NESTING_DEPTH:
            raise MCPConfigError(f"the MCP configuration nests more than {MAX_NESTING_DEPTH} levels deep")
    else:
        try:
            text = Path(config).read_text(encoding="utf-8")
        except OSError as exc:
            raise MCPConfigError(f"cannot read the MCP configuration {os.fspath(config)}: {exc.strerror or exc}") from exc
        except ValueError as exc:
            raise MCPConfigError(f"the MCP configuration {os.fspath(config)} is not UTF-8 text: {exc}") from exc
        if json_text_too_deep(text):  # refused before the parser recurses into it
            raise MCPConfigError(f"the MCP configuration {os.fspath(config)} nests more than {MAX_NESTING_DEPTH} "
                                 "levels deep")
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise MCPConfigError(f"the MCP configuration {os.fspath(config)} is not JSON: {exc}") from exc
    if not isinstance(data, Mapping):
        raise MCPConfigError("the MCP configuration must be an object with an 'mcpServers' (or 'servers') object")
    lists = [key for key in SERVER_LISTS if key in data]
    if len(lists) > 1:
        raise MCPConfigError("the MCP configuration has both 'mcpServers' and 'servers'; keep one")
    servers = data[lists[0]] if lists else data
    if not isinstance(servers, Mapping):
        raise MCPConfigError("the MCP configuration must be an object with an 'mcpServers' (or 'servers') object")
    connections: dict[str, dict[str, Any]] = {}
    for name, entry in servers.items():
        if not isinstance(name, str) or not name.strip():
            raise MCPConfigError("every MCP server needs a non-empty name")
        if _disabled(name, entry):
            continue
        connections[name] = _server_connection(name, entry)
    return connections


# --- names ----------------------------------------------------------------------------------


def _safe_name(name: str) -> str:
    return _NAME_UNSAFE.sub("_", name).strip("_") or "tool"


def unique_tool_names(listing: Mapping[str, Iterable[str]], reserved: Iterable[str] = ()) -> dict[tuple[str, str], str]:
    """The name each MCP tool gets in the agent (SPEC R5.4: one registry over all connectors).

    A tool keeps its own name (characters other than letters, digits, ``_`` and ``-``
    replaced by ``_``) unless another server has a tool of that name or it is in
    ``reserved``: then every tool of that name is called ``<server>_<name>`` (whatever the
    order). Names are then given in ``listing`` order: a name an earlier tool already got is
    prefixed too, and a prefixed name still taken gets ``_2``, ``_3``… (the only
    order-dependent case; docs/mcp.md, "Tool names"). Names are cut to
    :data:`MAX_TOOL_NAME` characters.

    Args:
        listing: ``{server: [tool name, ...]}`` in the configuration's order.
        reserved: Names already used by the agent's other tools.

    Returns:
        ``{(server, tool name): name in the agent}``, all distinct and distinct from
        ``reserved``.
    """
    listing = {server: list(names) for server, names in listing.items()}
    owners: dict[str, set[str]] = {}
    for server, names in listing.items():
        for name in names:
            owners.setdefault(_safe_name(name), set()).add(server)
    taken = set(reserved)
    result: dict[tuple[str, str], str] = {}
    for server, names in listing.items():
        for name in names:
            local = _safe_name(name)
            if len(owners[local]) > 1 or local in taken:
                local = f"{_safe_name(server)}_{local}"
            local = local[:MAX_TOOL_NAME]
            candidate, number = local, 2
            while candidate in taken:
                suffix = f"_{number}"
                candidate, number = local[: MAX_TOOL_NAME - len(suffix)] + suffix, number + 1
            taken.add(candidate)
            result[(server, name)] = candidate
    return result


# --- results --------------------------------------------------------------------------------

_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp",
               "image/svg+xml": "svg", "audio/wav": "wav", "audio/mpeg": "mp3", "text/html": "html",
               "text/markdown": "md"}


def _field(item: Any, name: str) -> Any:
    """A field of an MCP SDK content object or of its JSON form."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _file_name(uri: Any, fallback: str, mime: str | None) -> str:
    tail = str(uri or "").rstrip("/").rsplit("/", 1)[-1]
    if tail and "." in tail and ":" not in tail:
        return tail
    extension = _EXTENSIONS.get(mime or "", "bin")
    return f"{fallback}.{extension}"


def map_tool_result(result: Any, tool: str) -> tuple[str, Artifact | None]:
    """An MCP ``CallToolResult`` as the engine's observation and artifact (SPEC R2.9, §12).

    - ``text`` content is the observation (parts joined by new lines); with no text,
      ``structuredContent`` is (as JSON);
    - an embedded text resource of type ``text/html`` or ``text/markdown`` is a document for
      the UI: an artifact; another text resource is data for the model: its text joins the
      observation after a ``[resource <uri>]`` line;
    - an image, an audio clip or a binary resource becomes an artifact (a data URL in HTML)
      and the observation says ``[image image/png: <file> (artifact)]``;
    - a resource link is the line ``[resource link <name>: <uri>]``.

    Several artifact parts make one HTML artifact, in content order.

    Args:
        result: The SDK's ``CallToolResult`` (or its JSON dict) of a successful call.
        tool: The tool's name in the agent (artifact file names start with it).

    Returns:
        ``(observation, artifact or None)``. The observation is ``""`` when the result had
        nothing for the model (the engine then sends the artifact note, or ``(empty result)``).
    """
    texts: list[str] = []
    parts: list[tuple[str, str, str]] = []  # (kind, content, filename)
    for index, item in enumerate(_field(result, "content") or [], start=1):
        kind = _field(item, "type")
        if kind == "text":
            texts.append(str(_field(item, "text") or ""))
        elif kind in ("image", "audio"):
            mime = _field(item, "mimeType") or f"{kind}/*"
            name = _file_name(None, f"{tool}-{kind}-{index}", mime)
            source = f"data:{mime};base64,{_field(item, 'data')}"
            tag = f'<img alt="{html.escape(name)}" src="{source}">' if kind == "image" else f'<audio controls src="{source}"></audio>'
            parts.append(("html", tag, name))
            texts.append(f"[{kind} {mime}: {name} (artifact)]")
        elif kind == "resource":
            resource = _field(item, "resource")
            uri, mime = _field(resource, "uri"), _field(resource, "mimeType")
            name = _file_name(uri, f"{tool}-resource-{index}", mime)
            text = _field(resource, "text")
            if isinstance(text, str) and mime in ("text/html", "text/markdown"):
                parts.append(("html" if mime == "text/html" else "markdown", text, name))
                texts.append(f"[resource {uri}: {name} (artifact)]")
            elif isinstance(text, str):
                texts.append(f"[resource {uri}]\n{text}")
            else:
                blob, mime = _field(resource, "blob") or "", mime or "application/octet-stream"
                source = f"data:{mime};base64,{blob}"
                tag = (f'<img alt="{html.escape(name)}" src="{source}">' if mime.startswith("image/")
                       else f'<a download="{html.escape(name)}" href="{source}">{html.escape(name)}</a>')
                parts.append(("html", tag, name))
                size = len(base64.b64decode(blob, validate=False)) if blob else 0
                texts.append(f"[resource {uri} ({mime}, {size} bytes): {name} (artifact)]")
        elif kind == "resource_link":
            texts.append(f"[resource link {_field(item, 'name')}: {_field(item, 'uri')}]")
        else:
            texts.append(f"[{kind} content]")
    observation = "\n".join(text for text in texts if text)
    structured = _field(result, "structuredContent")
    if not observation and structured is not None:
        observation = safe_json(structured)
    if not parts:
        return observation, None
    if len(parts) == 1:
        kind, content, name = parts[0]
        return observation, Artifact(name, content, "markdown" if kind == "markdown" else "html")
    body = "\n".join(
        f"<section>{content if kind == 'html' else '<pre>' + html.escape(content) + '</pre>'}</section>"
        for kind, content, _ in parts
    )
    return observation, Artifact(f"{_safe_name(tool)}.html", body, "html")


# --- sessions -------------------------------------------------------------------------------


def connection_secrets(connection: Mapping[str, Any]) -> tuple[str, ...]:
    """What a server's failure lines must not show: its URL's credentials,
    query values and environment values (a ``${env:VAR}`` put there), its headers' and its
    process environment's values (:mod:`reactgraph.core.redaction`)."""
    found = mapping_secrets(connection.get("headers")) + mapping_secrets(connection.get("env"))
    if isinstance(connection.get("url"), str):
        found += url_secrets(connection["url"])
    return tuple(found)


def one_line(exc: BaseException) -> str:
    """An exception as one line: the innermost real error of an exception group (what
    ``anyio`` task groups raise), as ``Type: message``, the message's whitespace folded."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_STREAM_CLOSED = frozenset({"BrokenResourceError", "ClosedResourceError", "EndOfStream", "McpError"})
"""Errors a stdio transport raises when the server's process has gone."""

SETTLE_SECONDS = 5.0
"""How long a call that saw its server's connection close waits for the session's task to
end (the process reaped, its exit status known) before it reports the server unavailable."""

KILL_GRACE_SECONDS = 2.0
"""How long a closed server's process group has between SIGTERM and SIGKILL
(:meth:`MCPServer.close`)."""

_spawned: ContextVar[list[Any] | None] = ContextVar("reactgraph_mcp_spawned", default=None)
"""In a session's task: the list the stdio process it starts is added to."""


def _watch_spawned_processes() -> None:
    """Let a session's task learn the process its stdio transport starts.

    The ``mcp`` SDK's ``stdio_client`` keeps its process to itself, yet the process's exit
    status is what explains a server that died (killed by a signal, exited with a status).
    The SDK's process factory is wrapped once: the wrapper adds each process it makes to the
    list in :data:`_spawned` of the calling task, which only :class:`MCPServer`'s tasks set
    (elsewhere it changes nothing). Without that factory (another SDK version) nothing is
    wrapped and the messages only lack the exit status.
    """
    try:
        import mcp.client.stdio as sdk
    except ImportError:
        return
    create = getattr(sdk, "_create_platform_compatible_process", None)
    if create is None or getattr(create, "reactgraph_watch", False):
        return

    async def create_and_tell(*args: Any, **kwargs: Any) -> Any:
        process = await create(*args, **kwargs)
        sink = _spawned.get()
        if sink is not None:
            sink.append(process)
        return process

    create_and_tell.reactgraph_watch = True  # type: ignore[attr-defined]
    sdk._create_platform_compatible_process = create_and_tell


def _group_alive(group: int) -> bool:
    """Whether process group ``group`` still has a process (one of ours: another user's is
    not ours to signal)."""
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


async def stop_process_groups(groups: Iterable[int], grace: float = KILL_GRACE_SECONDS) -> None:
    """End every process of ``groups``: SIGTERM, then SIGKILL to those still there after
    ``grace`` seconds (also when the wait is cancelled: the SIGKILL is sent on the way out).

    A stdio server is started in a session (and process group) of its own, whose id is its
    process id (the ``mcp`` SDK's ``start_new_session``); its children (``npx`` starting
    ``node``, a wrapper script's server) are in that group too, and nothing else is. 
    a server that ignored SIGTERM outlived ``serve``.

    Args:
        groups: Process group ids.
        grace: Seconds between SIGTERM and SIGKILL.
    """
    alive = [group for group in groups if _group_alive(group)]
    if not alive or os.name != "posix":
        return
    for group in alive:
        _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    try:
        while alive and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            alive = [group for group in alive if _group_alive(group)]
    finally:
        for group in alive:
            _signal_group(group, signal.SIGKILL)


def exit_reason(returncode: int | None) -> str:
    """How a server process ended, in words: the reason a dead stdio server is unavailable
    (SPEC R2.7: one line the model reads; R5.4: one connector down, the hub goes on).

    Args:
        returncode: The process's return code (negative: the signal that killed it, as
            ``subprocess`` reports it), or ``None`` when it is not known.

    Returns:
        ``"the server process was killed by SIGKILL"``, ``"the server process exited with
        status 1"``, or ``"the server process exited"``.
    """
    if returncode is None:
        return "the server process exited"
    if returncode < 0:
        try:
            return f"the server process was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"the server process was killed by signal {-returncode}"
    return f"the server process exited with status {returncode}"


class MCPServer:
    """One MCP server's session, owned by a task of its own for as long as it is open.

    The session is opened and closed in that task (the transports' ``anyio`` task groups
    must be), so a transport failure ends the task, not the caller; calls from any task or
    thread go through :meth:`call`. A server that went down gets a new session from the
    first call ``reconnect_after`` seconds later (never when ``None``). Made by
    :func:`load_mcp_tools`; one object per server.

    Attributes:
        name: The server's name in the configuration.
        error: Why the server is unavailable, one line (``None`` while it is up).
        tools: The adapter's LangChain tools as listed at start (remote names).
    """

    def __init__(self, name: str, connection: dict[str, Any], *, reconnect_after: float | None = RECONNECT_AFTER) -> None:
        self.name = name
        self.connection = connection
        self.secrets = connection_secrets(connection)
        self.reconnect_after = reconnect_after
        self.error: str | None = None
        self.tools: list[BaseTool] = []
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._dead = asyncio.Event()
        self._errlog: Any = None
        self._timeout = STARTUP_TIMEOUT
        self._down_since = 0.0
        self._closed = False
        self._reopening: asyncio.Lock | None = None
        self._stderr_at_ready = 0
        self._lost: str | None = None
        self._exited = False
        self._spawned: list[list[Any]] = []

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Any]:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        if self.connection["transport"] != "stdio":
            from langchain_mcp_adapters.sessions import create_session

            async with create_session(self.connection) as session:  # type: ignore[arg-type]
                yield session
            return
        parameters = StdioServerParameters(command=self.connection["command"], args=self.connection["args"],
                                           env=self.connection.get("env"), cwd=self.connection.get("cwd"))
        async with (stdio_client(parameters, errlog=self._errlog) as (read, write),
                    ClientSession(read, write, **(self.connection.get("session_kwargs") or {})) as session):
            yield session

    def _stderr_size(self) -> int:
        try:
            return os.fstat(self._errlog.fileno()).st_size if self._errlog is not None else 0
        except (OSError, ValueError):
            return 0

    def _stderr_tail(self, since: int = 0) -> str:
        """`` (stderr: <its last line>)`` of what the process wrote from byte ``since`` on, or ``""``."""
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(since)
            lines = [line.strip() for line in self._errlog.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f" (stderr: {lines[-1][:200]})" if lines else ""

    def _why_down(self, failure: BaseException | None, process: Any) -> str:
        """Why the session ended, one line. A stdio process's exit says it; its standard error
        is quoted only when it can explain it: never after a signal, and after the server was
        up only what it wrote since (not its start-up banner)."""
        since = self._stderr_at_ready if self._ready.is_set() else 0
        returncode = getattr(process, "returncode", None)
        if returncode is not None and (self._exited or not self._stop.is_set()):  # not stopped by us
            return exit_reason(returncode) + ("" if returncode < 0 else self._stderr_tail(since))
        if failure is None or isinstance(failure, asyncio.CancelledError):
            reason = self._lost or "the server closed the connection"
        else:
            reason = one_line(failure)
            if self.connection["transport"] == "stdio" and reason.split(":")[0] in _STREAM_CLOSED:
                reason = "the server process exited"
            elif self._ready.is_set():
                reason = f"the session ended: {reason}"
        return redact(reason + self._stderr_tail(since), self.secrets)

    async def _own(self) -> None:
        from langchain_mcp_adapters.tools import load_mcp_tools as list_tools

        _watch_spawned_processes()
        processes: list[Any] = []
        self._spawned.append(processes)  # every session's processes, for close()
        _spawned.set(processes)
        failure: BaseException | None = None
        try:
            async with self._open() as session:
                await session.initialize()
                self.tools = await list_tools(session, server_name=self.name)
                self._session = session
                self._stderr_at_ready = self._stderr_size()
                self._ready.set()
                await self._until_stopped_or_exited(processes[0] if processes else None)
        except BaseException as exc:  # noqa: BLE001 - the session's end, whatever it was, is this server's error
            failure = exc
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            if self.error is None and (self._lost is not None or not self._stop.is_set()):
                self.error = self._why_down(failure, processes[0] if processes else None)
            self._mark_down()
            self._ready.set()

    async def _until_stopped_or_exited(self, process: Any) -> None:
        """Hold the session until it is stopped or, for stdio, until its process exits."""
        waits = [asyncio.ensure_future(self._stop.wait())]
        if process is not None:
            waits.append(asyncio.ensure_future(process.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        if not self._stop.is_set():
            self._exited = True
            self._lost = "the server process exited"

    def _mark_down(self) -> None:
        if not self._dead.is_set():
            self._down_since = time.monotonic()
        self._dead.set()

    async def start(self, timeout: float) -> None:
        """Open the session and list the tools, in the owning task.

        Args:
            timeout: Seconds the server has to start and answer the listing (also used
                when a session is opened again after the server went down). It is the bound:
                a server not up by then is given up at once, its process stopped in the
                background (:meth:`close` waits for that).

        Raises:
            ToolException: The server did not start; the message is one line.
        """
        self._loop = asyncio.get_running_loop()
        self._timeout = timeout
        await self._open_session()

    async def _open_session(self) -> None:
        await self._end_task()
        self.error, self._session, self._lost, self._exited = None, None, None, False
        self._ready, self._stop, self._dead = asyncio.Event(), asyncio.Event(), asyncio.Event()
        if self.connection["transport"] == "stdio":
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self._timeout)
        except TimeoutError:
            self.error = f"did not start within {self._timeout:g} seconds" + self._stderr_tail()
            self._stop.set()
            self._mark_down()
            self._task.cancel()  # not waited for here: the timeout is the bound
        if self._dead.is_set() or self.error:
            raise ToolException(self.error or "the server closed the connection")

    async def _end_task(self) -> None:
        """Stop the session's task (if any) and wait for it; forget its standard error file.
        A session still starting is cancelled at once (nothing else ends its start)."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            if not self._ready.is_set():
                self._task.cancel()
            await asyncio.wait({self._task}, timeout=10)
            if not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=5)
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    async def close(self) -> None:
        """End the session for good; safe to call twice. Then every process group of a stdio
        process it started (a server's children included, one still starting or given up
        after its start timeout too) is ended: SIGTERM, SIGKILL after
        :data:`KILL_GRACE_SECONDS` (:func:`stop_process_groups`), even when this is cancelled.
"""
        self._closed = True
        try:
            await self._end_task()
        finally:
            groups = {process.pid for processes in self._spawned for process in processes
                      if isinstance(getattr(process, "pid", None), int)}
            await stop_process_groups(groups)

    async def _reopen_if_due(self) -> None:
        """After ``reconnect_after`` seconds down, open a new session (once at a time); a
        failed attempt restarts the wait."""
        if self._closed or self.reconnect_after is None or time.monotonic() - self._down_since < self.reconnect_after:
            return
        self._reopening = self._reopening or asyncio.Lock()
        async with self._reopening:
            if not self._dead.is_set():
                return  # another call reopened it meanwhile
            try:
                await self._open_session()
                logger.info("MCP server %r is back", self.name)
            except ToolException:
                self._down_since = time.monotonic()

    def unavailable(self) -> ToolException:
        """The error a call to a server that is down raises (one line)."""
        return ToolException(f"MCP server {self.name!r} is unavailable: {self.error or 'not started'}")

    async def _call_here(self, tool: str, arguments: dict[str, Any]) -> Any:
        if self._dead.is_set():
            await self._reopen_if_due()
        if self._dead.is_set() or self._session is None:
            raise self.unavailable()
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED

        call = asyncio.ensure_future(self._session.call_tool(tool, arguments))
        dead = asyncio.ensure_future(self._dead.wait())
        try:
            await asyncio.wait({call, dead}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            dead.cancel()
            if not call.done():
                call.cancel()
        if not call.done() or call.cancelled():
            raise self.unavailable()
        try:
            return call.result()
        except McpError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                waited = (self.connection.get("session_kwargs") or {}).get("read_timeout_seconds")
                within = f" within {waited.total_seconds():g} seconds" if waited else " in time"
                raise ToolException(f"MCP server {self.name!r} did not answer {tool!r}{within}") from exc
            if exc.error.code != CONNECTION_CLOSED:
                raise ToolException(f"MCP server {self.name!r} refused the call: {one_line(exc)}") from exc
            raise await self._gone("the server closed the connection") from exc
        except ToolException:
            raise
        except Exception as exc:
            if one_line(exc).split(":")[0] in _STREAM_CLOSED:
                raise await self._gone("the server closed the connection") from exc
            raise ToolException(f"MCP server {self.name!r} failed: {one_line(exc)}") from exc

    async def _gone(self, reason: str) -> ToolException:
        """The transport is closed for good: end the session (its task stops the process of
        a stdio server and records why it ended, e.g. its exit status) and return the
        unavailable error to raise. A stdio process that is dying gets a moment to end the
        task by itself, so that its exit status, not our stopping it, is the reason."""
        if self.connection["transport"] == "stdio" and self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=SETTLE_SECONDS / 2)
        self._lost = self._lost or reason
        self._stop.set()
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=SETTLE_SECONDS)
        if self.error is None:
            self.error = reason
        self._mark_down()
        return self.unavailable()

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call ``tool`` on the server from any event loop.

        Returns:
            The SDK's ``CallToolResult``.

        Raises:
            ToolException: The server is down, died during the call, refused it or the
                transport failed (one line naming the server).
        """
        loop = self._loop
        if loop is None or loop is asyncio.get_running_loop():
            return await self._call_here(tool, arguments)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._call_here(tool, arguments), loop))

    def call_blocking(self, tool: str, arguments: dict[str, Any]) -> Any:
        """:meth:`call` from a thread without a running event loop (a sync run's worker).

        Raises:
            ToolException: As :meth:`call`, or when called on the session's own loop's thread
                (a sync run inside async code would wait on itself).
        """
        loop = self._loop
        if loop is None or not loop.is_running():
            raise self.unavailable()
        if getattr(loop, "_thread_id", None) == threading.get_ident():
            raise ToolException(f"MCP tools of {self.name!r} need an async run (arun/astream) in this event loop")
        return asyncio.run_coroutine_threadsafe(self._call_here(tool, arguments), loop).result()


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
                         remote_name=listed.name, handle_tool_error=_error_observation)
        self._link = link

    def _finish(self, result: Any) -> tuple[str, Artifact | None]:
        observation, artifact = map_tool_result(result, self.name)
        if _field(result, "isError"):
            raise ToolException(f"MCP tool {self.remote_name!r} of {self.server!r} failed: {' '.join(observation.split())[:500]}")
        return observation, artifact

    def _run(self, *args: Any, **kwargs: Any) -> tuple[str, Artifact | None]:
        kwargs.pop("run_manager", None)
        return self._finish(self._link.call_blocking(self.remote_name, kwargs))

    async def _arun(self, *args: Any, **kwargs: Any) -> tuple[str, Artifact | None]:
        kwargs.pop("run_manager", None)
        return self._finish(await self._link.call(self.remote_name, kwargs))


def _error_observation(exc: ToolException) -> str:
    return f"Error: {exc}"


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
