"""A tool-calling agent on the `openai` SDK and the official MCP Python client.

It knows nothing of DreamGym: it reads its model endpoint from OPENAI_BASE_URL and
OPENAI_API_KEY (as the `openai` SDK does), its model name from OPENAI_MODEL, and its tools
from the MCP server at MCP_URL. It plays until a tool says the episode is over, the model
answers without a tool call, or MAX_TURNS turns have passed.
"""

import asyncio
import json
import os

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openai import AsyncOpenAI


async def main() -> None:
    model = os.environ.get("OPENAI_MODEL", "default")
    max_turns = int(os.environ.get("MAX_TURNS", "4"))
    client = AsyncOpenAI()
    async with streamable_http_client(os.environ["MCP_URL"]) as (read, write, *_):
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            listed = await session.list_tools()
            tools = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description or "",
                        "parameters": tool.input_schema,
                    },
                }
                for tool in listed.tools
            ]
            first = await session.call_tool("observe", {})
            messages = [
                {"role": "system", "content": initialized.instructions or "Use the tools."},
                {"role": "user", "content": first.content[0].text},
            ]
            for _ in range(max_turns):
                answer = await client.chat.completions.create(
                    model=model, messages=messages, tools=tools, tool_choice="required", max_tokens=48
                )
                message = answer.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    break
                over = False
                for call in message.tool_calls:
                    result = await session.call_tool(call.function.name, json.loads(call.function.arguments or "{}"))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result.content[0].text})
                    over = over or bool((result.structured_content or {}).get("done"))
                if over:
                    break


asyncio.run(main())
