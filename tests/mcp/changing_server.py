"""A stdio MCP server whose tools change with ``TOOLS_VERSION`` (the environment is not part of a
server's recorded name): version 2 renames ``echo`` to ``say``, adds ``units`` to ``weather``'s input,
rewords ``now`` and drops ``legacy``, adds ``add``."""

from __future__ import annotations

import os
import time

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # the SDK's 1.x line names it FastMCP
    from mcp.server.fastmcp import FastMCP as MCPServer

app = MCPServer("changing")
SECOND = os.environ.get("TOOLS_VERSION") == "2"

if SECOND:

    @app.tool()
    def weather(city: str, units: str) -> str:
        """The weather in a city."""
        return f"21 {units} in {city}"

    @app.tool()
    def now() -> str:
        """The time now, in nanoseconds since the epoch."""
        return str(time.time_ns())

    @app.tool()
    def say(text: str) -> str:
        """Say it back."""
        return text

    @app.tool()
    def add(a: int, b: int) -> int:
        """a + b"""
        return a + b

else:

    @app.tool()
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"21C in {city}"

    @app.tool()
    def now() -> str:
        """The time now."""
        return str(time.time_ns())

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @app.tool()
    def legacy() -> str:
        """Gone in version 2."""
        return "old"


if __name__ == "__main__":
    app.run("stdio")
