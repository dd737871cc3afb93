"""Calling astro's MCP server in process with the SDK's own client."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.types import CallToolResult

from astro_tui.mcp.server import AstroServer


async def call(server: AstroServer, name: str, arguments: dict[str, Any]) -> CallToolResult:
    async with Client(server) as client:
        return await client.call_tool(name, arguments)


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    return result.content[0].text  # type: ignore[union-attr]
