"""The MCP client configuration (SPEC R5.4): the servers of a Claude Desktop / Cursor /
Claude Code or VS Code file checked and turned into connections (:func:`parse_mcp_config`),
and the names their tools take among the agent's (:func:`unique_tool_names`)."""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from reactgraph.core.bounds import MAX_NESTING_DEPTH, json_text_too_deep, nesting_depth
from reactgraph.core.errors import MCPConfigError


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


def safe_name(name: str) -> str:
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
            owners.setdefault(safe_name(name), set()).add(server)
    taken = set(reserved)
    result: dict[tuple[str, str], str] = {}
    for server, names in listing.items():
        for name in names:
            local = safe_name(name)
            if len(owners[local]) > 1 or local in taken:
                local = f"{safe_name(server)}_{local}"
            local = local[:MAX_TOOL_NAME]
            candidate, number = local, 2
            while candidate in taken:
                suffix = f"_{number}"
                candidate, number = local[: MAX_TOOL_NAME - len(suffix)] + suffix, number + 1
            taken.add(candidate)
            result[(server, name)] = candidate
    return result


# --- results --------------------------------------------------------------------------------
