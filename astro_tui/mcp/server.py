"""The MCP server: astro's tools on the official SDK's `MCPServer`, and what wraps every call.

Around each call, whatever the tool: the arguments are checked the way the
app's agent checks a model's (one line naming what is wrong, `Call it as
run_sql(sql)`), a failure of any kind becomes one line marked as a tool error
(the server never exits on a bad call), and the call is saved in the MCP
session's conversation — also when the client cancels it.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CLIENT_INFO_META_KEY, CallToolResult

from astro_tui import __version__
from astro_tui.agent.registry import ToolRegistry
from astro_tui.mcp.calls import Calls
from astro_tui.mcp.record import CallRecord, Conversations
from astro_tui.mcp.shaping import one_line
from astro_tui.mcp.tools import CURRENT, AstroTools, CurrentCall
from astro_tui.session import Session

log = logging.getLogger("astro.mcp")

INSTRUCTIONS = """astro serves one database read-only: {label} ({dialect}). Find your way with \
read_context, shell (`ls /`, `cat`, `grep -ri`), search_metadata and show_table; query with \
run_sql; quote numbers through submit_result, which renders them from queries. Every statement is \
checked by the engine's own parser and runs read-only with a time limit and a row cap; results say \
when they were cut."""


class AstroServer(MCPServer):
    def __init__(self, session: Session, *, calls: Calls | None = None, **kwargs: Any) -> None:
        """Serve an opened session (`Session.open()`); closing the server leaves it open."""
        self.session = session
        self.calls = calls or Calls()
        self.tools = AstroTools(session, self.calls)
        self.conversations = Conversations(session)
        self._checks = ToolRegistry()
        tools = []
        for served in self.tools.served():
            func = self.tools.function(served)
            tool = Tool.from_function(
                func,
                description=served.description,
                annotations=AstroTools.annotations(served.title),
                structured_output=served.returns is not str,
            )
            tool.parameters = lean(tool.parameters)
            if tool.fn_metadata.output_schema is not None:
                tool.fn_metadata.output_schema = lean(tool.fn_metadata.output_schema)
            tools.append(tool)
            self._checks.add(func)
        super().__init__(
            name="astro",
            version=__version__,
            instructions=INSTRUCTIONS.format(
                label=one_line(session.label), dialect=session.database().dialect.name
            ),
            log_level="WARNING",
            tools=tools,
            **kwargs,
        )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        record = CallRecord(name, dict(arguments))
        session, client = _caller(context)
        token = CURRENT.set(CurrentCall(session, record))
        started = time.perf_counter()
        try:
            parsed = self._checks.parse("mcp", name, json.dumps(arguments, default=str))
            if parsed.error is not None or parsed.arguments is None:
                raise ToolError(one_line(parsed.error or f"{name}: invalid call"))
            result = await super().call_tool(name, parsed.arguments, context)
            if isinstance(result, CallToolResult) and result.is_error:
                record.status = "error"
            return result
        except ToolError as exc:
            record.status = "error"
            record.outcome = _message(name, exc)
            raise ToolError(record.outcome) from None
        except anyio.get_cancelled_exc_class():
            record.status = "cancelled"
            raise
        finally:
            CURRENT.reset(token)
            record.elapsed_ms = (time.perf_counter() - started) * 1000
            self.conversations.add(session, client, record)

    def close(self) -> None:
        self.calls.close()
        self.conversations.close()


def lean(schema: Any, *, naming: bool = False) -> Any:
    """A JSON schema without pydantic's titles, which only repeat the names, nor empty `items`,
    which constrain nothing: the tool list goes with every request the client's model makes, and
    a client validates each result's every row against an `items` it is given."""
    if isinstance(schema, dict):
        return {
            key: lean(value, naming=key in ("properties", "$defs"))
            for key, value in schema.items()
            if naming or not ((key == "title" and isinstance(value, str)) or (key == "items" and value == {}))
        }
    if isinstance(schema, list):
        return [lean(value) for value in schema]
    return schema


def _message(name: str, exc: ToolError) -> str:
    """One line starting with the tool's name; a crash names only its kind (its text stays here)."""
    if isinstance(exc, UnexpectedToolError):
        cause = exc.__cause__
        kind = type(cause).__name__ if cause is not None else "error"
        log.error("astro mcp: %s crashed (%s)", name, kind)
        return f"{name}: internal error ({kind}); the server is still running"
    text = str(exc).removeprefix(f"Error executing tool {name}: ")
    text = one_line(text)
    return text if text.startswith((f"{name}:", "unknown tool")) else f"{name}: {text}"


def _caller(context: Context[Any, Any] | None) -> tuple[str, str]:
    """The MCP session a call belongs to (its HTTP session id; one per stdio process) and the
    client's name, for the saved conversation."""
    if context is None:
        return "", "MCP client"
    try:
        request = context.request_context
    except ValueError:
        return "", "MCP client"
    session = ""
    http = getattr(request, "request", None)
    headers = getattr(http, "headers", None)
    if headers is not None:
        session = headers.get("mcp-session-id") or ""
    name = None
    params = request.session.client_params
    if params is not None and params.client_info is not None:
        name = params.client_info.name
    elif request.meta and isinstance(request.meta.get(CLIENT_INFO_META_KEY), dict):
        name = request.meta[CLIENT_INFO_META_KEY].get("name")
    return session[:100], f"MCP client {name}" if name else "MCP client"
