"""A server for the tests, written with the SDK's MCPServer (FastMCP as mcp 2 names it): tools that
return the time now, one that adds, and one that asks the client to sample (a server request inside
a tool call)."""

from __future__ import annotations

import os
import sys
import time

try:
    from mcp.server.mcpserver import Context, MCPServer
except ImportError:  # the SDK's 1.x line names it FastMCP
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as MCPServer
from mcp.types import SamplingMessage, TextContent

app = MCPServer("clock")


def _ran(tool: str) -> None:
    """Count a call at the server: one line per tool run, in the file CLOCK_LOG names (if any)."""
    if os.environ.get("CLOCK_LOG"):
        with open(os.environ["CLOCK_LOG"], "a") as log:
            log.write(tool + "\n")


@app.tool()
def weather(city: str) -> str:
    """The weather in a city, as measured now (the loopback model calls the first tool it is given)."""
    return f"21C in {city} at {time.time_ns()}"


@app.tool()
def now() -> str:
    """The time now, to the nanosecond: a different answer every run."""
    _ran("now")
    return str(time.time_ns())


@app.tool()
def add(a: int, b: int) -> int:
    """a + b"""
    _ran("add")
    return a + b


@app.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model (a sampling request to the client) and log on the way."""
    await ctx.info(f"asking {question}")
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=question))],
        max_tokens=10,
    )
    return result.content.text if isinstance(result.content, TextContent) else "?"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("http", "sse"):
        transport = "streamable-http" if sys.argv[1] == "http" else "sse"
        try:
            app.run(transport, port=int(sys.argv[2]))
        except TypeError:  # the SDK's 1.x line takes the port from its settings
            app.settings.port = int(sys.argv[2])
            app.run(transport)
    else:
        app.run("stdio")
