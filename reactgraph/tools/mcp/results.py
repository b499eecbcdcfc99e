"""An MCP tool's result as the run sees it (SPEC R2.9): the observation text and the one
:class:`~reactgraph.Artifact` for the UI (:func:`map_tool_result`)."""

from __future__ import annotations

import base64
import html
from typing import Any

from langchain_core.tools import ToolException

from reactgraph.protocol.jsonparse import safe_json
from reactgraph.tools.artifacts import Artifact
from reactgraph.tools.mcp.config import safe_name


_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp",
               "image/svg+xml": "svg", "audio/wav": "wav", "audio/mpeg": "mp3", "text/html": "html",
               "text/markdown": "md"}


def item_field(item: Any, name: str) -> Any:
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
    for index, item in enumerate(item_field(result, "content") or [], start=1):
        kind = item_field(item, "type")
        if kind == "text":
            texts.append(str(item_field(item, "text") or ""))
        elif kind in ("image", "audio"):
            mime = item_field(item, "mimeType") or f"{kind}/*"
            name = _file_name(None, f"{tool}-{kind}-{index}", mime)
            source = f"data:{mime};base64,{item_field(item, 'data')}"
            tag = f'<img alt="{html.escape(name)}" src="{source}">' if kind == "image" else f'<audio controls src="{source}"></audio>'
            parts.append(("html", tag, name))
            texts.append(f"[{kind} {mime}: {name} (artifact)]")
        elif kind == "resource":
            resource = item_field(item, "resource")
            uri, mime = item_field(resource, "uri"), item_field(resource, "mimeType")
            name = _file_name(uri, f"{tool}-resource-{index}", mime)
            text = item_field(resource, "text")
            if isinstance(text, str) and mime in ("text/html", "text/markdown"):
                parts.append(("html" if mime == "text/html" else "markdown", text, name))
                texts.append(f"[resource {uri}: {name} (artifact)]")
            elif isinstance(text, str):
                texts.append(f"[resource {uri}]\n{text}")
            else:
                blob, mime = item_field(resource, "blob") or "", mime or "application/octet-stream"
                source = f"data:{mime};base64,{blob}"
                tag = (f'<img alt="{html.escape(name)}" src="{source}">' if mime.startswith("image/")
                       else f'<a download="{html.escape(name)}" href="{source}">{html.escape(name)}</a>')
                parts.append(("html", tag, name))
                size = len(base64.b64decode(blob, validate=False)) if blob else 0
                texts.append(f"[resource {uri} ({mime}, {size} bytes): {name} (artifact)]")
        elif kind == "resource_link":
            texts.append(f"[resource link {item_field(item, 'name')}: {item_field(item, 'uri')}]")
        else:
            texts.append(f"[{kind} content]")
    observation = "\n".join(text for text in texts if text)
    structured = item_field(result, "structuredContent")
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
    return observation, Artifact(f"{safe_name(tool)}.html", body, "html")


# --- sessions -------------------------------------------------------------------------------




def error_observation(exc: ToolException) -> str:
    return f"Error: {exc}"
