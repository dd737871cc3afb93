"""`astro mcp TARGET…`: serve astro's tools to another agent, over stdio or streamable HTTP.

A front end of a `Session`, like every other: the settings and the state
directory are read here once, and the session opens the targets (of every kind
`astro` takes) and reads their catalog before anything is served: a target that cannot be opened
is one line on stderr and exit code 2, so the client's log says why at once.
Stdout belongs to the protocol on stdio; everything astro says goes to stderr.
Only `click` is imported here, so `astro --help` does not pay for the SDK.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from astro_tui.session import Session

EXIT_USAGE = 2


def _fail(message: str) -> NoReturn:
    from astro_tui.text import inert

    click.echo(f"astro: {inert(message, keep_newlines=False)}", err=True)
    sys.exit(EXIT_USAGE)


@click.command("mcp")
@click.argument("targets", nargs=-1)
@click.option("--timeout", metavar="SECONDS", help="Query time limit in seconds (default 30).")
@click.option("--max-rows", metavar="N", help="Row cap for results (default 100,000).")
@click.option("--memory-limit", metavar="SIZE", help="Memory limit of a statement, e.g. 2GB (default 4GB).")
@click.option("--http", "http_address", metavar="HOST:PORT", help="Serve streamable HTTP instead of stdio.")
@click.option(
    "--token-file",
    metavar="FILE",
    help="Bearer token for --http, read from FILE (mode 600); or set ASTRO_MCP_TOKEN.",
)
@click.option(
    "--hide", multiple=True, metavar="PATTERN", help="Keep schema[.table[.column]] away (as astro --hide)."
)
def mcp(
    targets: tuple[str, ...],
    timeout: float | None,
    max_rows: int | None,
    memory_limit: str | None,
    http_address: str | None,
    token_file: str | None,
    hide: tuple[str, ...],
) -> None:
    """Serve TARGETS' guarded, read-only tools to another agent over MCP (stdio by default).

    Tools: shell, show_table, search_metadata, run_sql, submit_result, read_context.
    """
    from astro_tui.config import FLAG_LABELS, ConfigError, load_settings, state_dir
    from astro_tui.errors import AstroError
    from astro_tui.mcp import http
    from astro_tui.session import Building, Session

    flags = {
        "query_timeout_s": timeout,
        "row_cap": max_rows,
        "memory_limit": memory_limit,
        "hide": hide or None,
    }
    try:
        settings = load_settings({k: v for k, v in flags.items() if v is not None}, labels=FLAG_LABELS)
    except ConfigError as exc:
        _fail(str(exc))
    address = token = listener = None
    try:
        if http_address is not None:
            address = http.parse_address(http_address)
            token = http.read_token(token_file, os.environ)
            http.check_exposure(address, token)
        elif token_file is not None:
            raise http.HttpSetupError("--token-file goes with --http HOST:PORT")
    except http.HttpSetupError as exc:
        _fail(str(exc))

    signal.signal(signal.SIGTERM, _terminated)
    session = Session(list(targets), settings, state_dir=state_dir())
    session.listen(lambda event: click.echo(event.text, err=True) if isinstance(event, Building) else None)
    try:
        try:
            session.open()
        except AstroError as exc:
            _fail(str(exc))
        if address is not None:
            try:
                listener = http.listen(address)
            except http.HttpSetupError as exc:
                _fail(str(exc))
            _serve_http(session, address, listener, token)
        else:
            _serve_stdio(session)
    except KeyboardInterrupt:
        pass
    finally:
        session.close()


def _terminated(signum: int, frame: object) -> NoReturn:
    """SIGTERM (a client stopping the server) ends like stdin closing: workers and temp files go."""
    raise SystemExit(128 + signum)


def _serve_stdio(session: Session) -> None:
    import anyio

    from astro_tui.mcp.server import AstroServer

    server = AstroServer(session)
    click.echo(f"astro mcp: serving {session.label} over stdio", err=True)
    try:
        anyio.run(server.run_stdio_async)
    finally:
        server.close()


def _serve_http(session: Session, address: Any, listener: Any, token: str | None) -> None:
    import anyio
    import uvicorn

    from astro_tui.mcp import http
    from astro_tui.mcp.server import AstroServer

    port = listener.getsockname()[1]
    auth: dict[str, Any] = {}
    if token is not None:
        auth = {"token_verifier": http.BearerToken(token), "auth": http.auth_settings(address, port)}
    server = AstroServer(session, **auth)
    app = server.streamable_http_app(
        streamable_http_path=http.PATH,
        transport_security=http.transport_security(address, port),
        host=address.host,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    guard = "bearer token required" if token is not None else "this machine only"
    click.echo(
        f"astro mcp: serving {session.label} at http://{address.netloc(port)}{http.PATH} ({guard})", err=True
    )
    try:
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[listener]))
    finally:
        server.close()
