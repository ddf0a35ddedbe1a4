"""Plays one episode of a DreamGym environment with the official MCP Python SDK.

Usage: python_mcp_client.py MCP_URL ACTION [ACTION ...]
Prints one JSON line: the tools listed, the first observation and each act result.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, actions: list[str]) -> None:
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            tools = await session.list_tools()
            observed = await session.call_tool("observe", {})
            results = []
            for action in actions:
                result = await session.call_tool("act", {"action": action})
                results.append(
                    {"text": result.content[0].text, "error": result.is_error, "structured": result.structured_content}
                )
            print(
                json.dumps(
                    {
                        "server": initialized.server_info.name,
                        "protocol": initialized.protocol_version,
                        "tools": [tool.name for tool in tools.tools],
                        "observe": observed.content[0].text,
                        "results": results,
                    }
                )
            )


asyncio.run(main(sys.argv[1], sys.argv[2:]))
