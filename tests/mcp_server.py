"""The project's own MCP server for the MCP tests: a FastMCP app of the ``mcp`` SDK
served over streamable HTTP on ``127.0.0.1:PORT`` (``python -m tests.mcp_server PORT``) or over
stdio (``python -m tests.mcp_server stdio``).

Its tools return each kind of MCP result the engine maps (SPEC R13.4, R2.9): text
(``machine_temperature``), structured content (``line_output``), an image
(``trend_chart``), an embedded HTML resource (``shift_report``), and an error result
(``broken_sensor``); ``exit_server`` ends the server's process in the middle of the call (a
server that dies, with a last line on stderr and exit status 3). Over stdio it writes a banner
on stderr first, as many servers do. ``echo`` has the name of a tool of ``server-everything``, so a hub of
both has a clash to prefix. ``python -m tests.mcp_server random N`` serves N tools with
random names over stdio instead (:func:`build_random_server`).
"""

from __future__ import annotations

import base64
import os
import secrets
import sys

from mcp.server.fastmcp import FastMCP, Image
from mcp.types import ToolAnnotations
from mcp.types import EmbeddedResource, TextResourceContents

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A one-pixel PNG, the image ``trend_chart`` returns."""


def build_server(port: int = 0) -> FastMCP:
    """The FastMCP app with the test tools, listening on ``port`` when run over HTTP."""
    server = FastMCP("plant-extras", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))  # a read: its repeat runs
    def machine_temperature(machine_id: str) -> str:
        """Current spindle temperature of a machine in degrees Celsius."""
        return f"{machine_id}: spindle temperature 71.5 C"

    @server.tool()
    def line_output(line: str) -> dict[str, object]:
        """Units produced today by a production line (structured result)."""
        return {"line": line, "units": 1284, "target": 1300}

    @server.tool()
    def trend_chart(machine_id: str) -> Image:
        """A chart of a machine's temperature trend (PNG image)."""
        return Image(data=PNG_1X1, format="png")

    @server.tool()
    def shift_report(line: str) -> list[object]:
        """The shift report of a line as an HTML document."""
        html = f"<h1>Shift report {line}</h1><p>1284 units</p>"
        return [
            f"Shift report of {line} attached.",
            EmbeddedResource(type="resource", resource=TextResourceContents(
                uri=f"report://{line}/shift.html", mimeType="text/html", text=html)),
        ]

    @server.tool()
    def broken_sensor(machine_id: str) -> str:
        """Reads a sensor that is out of order (always fails)."""
        raise RuntimeError(f"sensor of {machine_id} is offline")

    @server.tool()
    def exit_server() -> str:
        """Ends the server process during the call (the server dies), saying why on stderr."""
        print("exit_server: stopping as asked", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool()
    def echo(message: str) -> str:
        """Echoes the message back (same name as server-everything's echo)."""
        return f"plant-extras echo: {message}"

    return server


def build_random_server(count: int) -> FastMCP:
    """A server of ``count`` tools with random names (``tool_<hex>``), new ones each start,
    as a server that names its tools after its data may: each answers its own name."""
    server = FastMCP("random-names", log_level="WARNING")
    for _ in range(count):
        name = f"tool_{secrets.token_hex(6)}"
        server.add_tool(_answering(name), name=name, description=f"Looks {name} up.",
                        annotations=ToolAnnotations(readOnlyHint=True))
    return server


def _answering(name: str):
    def answer(item: str) -> str:
        return f"{name}: {item} ok"

    return answer


if __name__ == "__main__":
    if sys.argv[1] == "random":
        build_random_server(int(sys.argv[2])).run(transport="stdio")
    elif sys.argv[1] == "stdio":
        # A banner on stderr, as many stdio servers write one: it explains nothing later on.
        print("plant-extras MCP server running on stdio", file=sys.stderr, flush=True)
        build_server().run(transport="stdio")
    else:
        build_server(int(sys.argv[1])).run(transport="streamable-http")
