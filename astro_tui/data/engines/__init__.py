"""The engine layer: which engine opens a target, and how a new engine plugs in.

A target is a server URL (`postgresql://…`, `postgres://…`, `sc://…`), a named
connection from the config file (`@NAME`), or files on this machine (DuckDB
files, CSV/Parquet/JSON, globs), which DuckDB opens. Server engines are imported
only when a target needs them, so opening a file never pays for a driver.

To add an engine: write one module under `engines/` whose `open_target(url,
settings)` returns an `Engine` (see `base.py` for the contract), add its URL
schemes to `_SERVER_ENGINES`, and test it against a real server. Nothing above
`data/` changes; if it has to, the interface is wrong — fix the interface.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from astro_tui.config import Settings
from astro_tui.data.engines.base import Dialect, Engine
from astro_tui.data.errors import TargetError
from astro_tui.data.scope import Scope, scope_of
from astro_tui.text import redact_url

_SERVER_ENGINES = {
    "postgresql": "astro_tui.data.engines.postgres",
    "postgres": "astro_tui.data.engines.postgres",
    "sc": "astro_tui.data.engines.spark",
}
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.I)


def server_scheme(spec: str) -> str | None:
    """The URL scheme of a server target, or None for files."""
    match = _SCHEME.match(spec)
    return match.group(1).lower() if match else None


def expand_targets(specs: Sequence[str], settings: Settings) -> list[str]:
    """`@NAME` becomes the URL of the named connection; anything else is kept."""
    expanded = []
    for spec in specs:
        if spec.startswith("@"):
            name = spec[1:]
            url = settings.connections.get(name)
            if url is None:
                known = ", ".join(f"@{n}" for n in sorted(settings.connections)) or "none configured"
                raise TargetError(f"{spec}: no such connection in the config file (known: {known})")
            expanded.append(url)
        else:
            expanded.append(spec)
    return expanded


def scope_for(specs: Sequence[str], settings: Settings) -> Scope:
    """The scope in force for these targets: the settings' `hide` and each `@NAME`'s own."""
    return scope_of(specs, [(p, "settings") for p in settings.hide], settings.connection_hide)


def _servers(specs: Sequence[str], settings: Settings) -> tuple[list[str], list[str]]:
    """The targets expanded, and the servers among them; one line for what cannot be opened."""
    expanded = expand_targets(specs, settings)
    servers = [s for s in expanded if server_scheme(s)]
    if servers and len(expanded) > 1:
        raise TargetError("open one database server at a time, without other targets beside it")
    if servers and scope_for(specs, settings) and not _enforces_scopes(servers[0]):
        raise TargetError(
            f"{redact_url(servers[0])}: scopes (--hide, hide = [...]) are not enforced on this engine "
            "yet; this target is not opened with one"
        )
    return expanded, servers


def check_targets(specs: Sequence[str], settings: Settings) -> None:
    """Fail early, with one line, on targets that cannot be opened (before the app starts)."""
    expanded, servers = _servers(specs, settings)
    if servers:
        _server_module(servers[0])
        return
    from astro_tui.data.engines.duckdb.targets import resolve_targets

    resolve_targets(expanded)


def open_engine(
    specs: Sequence[str],
    settings: Settings,
    *,
    on_build: Callable[[str], None] | None = None,
    one_shot: bool = False,
) -> Engine:
    """The engine for these targets, opened; the sample warehouse when there are none.

    `one_shot`: this process runs one command and ends (`astro sql`), so an engine may run
    statements in it with limits that end the process (DuckDB, `duckdb/inline.py`); a
    server engine runs them on its server either way."""
    expanded, servers = _servers(specs, settings)
    if servers:
        module = _server_module(servers[0])
        if scope := scope_for(specs, settings):
            return module.open_target(servers[0], settings, scope)
        return module.open_target(servers[0], settings)
    from astro_tui.data.engines.duckdb import DuckDBEngine

    scope = scope_for(specs, settings)
    return DuckDBEngine.open(expanded, settings, on_build=on_build, one_shot=one_shot, scope=scope)


def _enforces_scopes(url: str) -> bool:
    """An engine module that enforces `--hide` says so (`SUPPORTS_SCOPES`); its `open_target`
    takes the scope. Every engine does today; a new one is refused a scope until it does."""
    return bool(getattr(_server_module(url), "SUPPORTS_SCOPES", False))


def _server_module(url: str):  # type: ignore[no-untyped-def]
    scheme = server_scheme(url) or ""
    module = _SERVER_ENGINES.get(scheme)
    if module is None:
        known = ", ".join(f"{s}://" for s in _SERVER_ENGINES)
        raise TargetError(f"{redact_url(url)}: unknown kind of server (astro opens {known} and files)")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise TargetError(f"{scheme}:// targets need a driver that is not installed ({exc.name})") from None


__all__ = ["Dialect", "Engine", "check_targets", "expand_targets", "open_engine", "server_scheme"]


def sample_file(*, build: bool = True) -> Path:
    """The sample warehouse's file (what no target opens), built first unless `build` is off."""
    from astro_tui.data.engines.duckdb.sample import ensure_sample, sample_path

    return ensure_sample() if build else sample_path()
