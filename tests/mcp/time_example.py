import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

import llmvcr


async def what_time() -> str:
    server = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server_time"])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("get_current_time", {"timezone": "UTC"})
            return result.content[0].text  # type: ignore[union-attr]


def main(cassette: str = "tests/cassettes/time.yaml") -> str:
    with llmvcr.use_cassette(
        cassette
    ):  # first run: the server runs; then: the recorded time, nothing started
        return anyio.run(what_time)
