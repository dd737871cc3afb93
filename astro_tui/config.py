"""Settings from a TOML file, the environment and flags, later sources winning.

One frozen object travels through the app so every layer reads the same limits;
nothing below the CLI reads the environment on its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from astro_tui.errors import AstroError

APP_NAME = "astro"

ENV_VARS: dict[str, str] = {
    "OPENAI_API_KEY": "api_key",
    "OPENAI_BASE_URL": "base_url",
    "ASTRO_MODEL": "model",
    "ASTRO_TOOL_PROTOCOL": "tool_protocol",
    "ASTRO_AGENT_PROFILE": "agent_profile",
}


class ConfigError(AstroError):
    """A setting is missing or malformed; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable; defaults are what a first run should feel like.

    A plain dataclass, not a pydantic model: it is on the start-up path of the app,
    where pydantic's import costs a fifth of a second.
    """

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    reasoning_effort: str | None = None

    query_timeout_s: float = 30.0
    row_cap: int = 100_000
    memory_limit: str = "4GB"
    threads: int = 2

    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    turn_deadline_s: float = 600.0
    max_retries: int = 2
    max_tool_calls: int = 20
    max_completions: int = 30
    max_reasks: int = 1
    tool_protocol: str = "native"
    """`native`: tools go in the request's `tools` field; `text`: astro writes them into the system
    prompt and reads `<tool_call>` blocks back, as the model's own chat template does, for servers
    that cannot carry tools (llama-cpp-python's stock server)."""
    agent_profile: str = "full"
    """`full`: every tool and the whole prompt; `small`: run_sql and a plain-text answer traced to
    cells, for models of a few billion parameters that cannot follow the full protocol."""
    schema_prompt_tokens: int = 3_000
    """The schema goes into the system prompt when its digest fits this many tokens (0: never)."""

    theme: str | None = None
    connections: dict[str, str] = field(default_factory=dict, compare=False)
    hide: tuple[str, ...] = ()
    """Scope patterns (`--hide`, `hide = [...]`): what the model may not see (`data/scope.py`)."""
    connection_hide: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    """`hide = [...]` of each `[connections.NAME]`, read from `connections`; not a setting."""

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            kind = _FIELD_KINDS.get(spec.name)
            if kind is dict:
                object.__setattr__(self, spec.name, _connections(value))
                hides = {**self.connection_hide, **_connection_hides(value)}
                object.__setattr__(self, "connection_hide", hides)
                continue
            if kind is tuple:
                object.__setattr__(self, spec.name, _patterns(spec.name, value))
                continue
            if kind is None:
                continue
            if kind is str:
                if value is not None and not isinstance(value, str):
                    raise ConfigError(f"setting {spec.name}: expected text, got {value!r}")
                allowed = _CHOICES.get(spec.name)
                if allowed is not None and value not in allowed:
                    choices = ", ".join(allowed)
                    raise ConfigError(f"setting {spec.name}: expected one of {choices}, got {value!r}")
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"setting {spec.name}: expected a number, got {value!r}")
            if kind is int and value != int(value):
                raise ConfigError(f"setting {spec.name}: expected a whole number, got {value!r}")
            if value < 0:
                raise ConfigError(f"setting {spec.name}: must not be negative, got {value!r}")
            object.__setattr__(self, spec.name, kind(value))

    @property
    def model_configured(self) -> bool:
        return bool(self.model)

    @property
    def is_local_server(self) -> bool:
        """A server on this machine needs no key (Ollama, vLLM, llama.cpp, LM Studio)."""
        url = (self.base_url or "").lower()
        return any(h in url for h in ("localhost", "127.0.0.1", "[::1]", "0.0.0.0"))

    def as_dict(self) -> dict[str, Any]:
        return {spec.name: getattr(self, spec.name) for spec in fields(self)}

    @classmethod
    def field_kind(cls, name: str) -> type | None:
        """str, int or float for a setting's name; None when there is no such setting."""
        return _FIELD_KINDS.get(name)


_FIELD_KINDS: dict[str, type] = {
    "model": str,
    "base_url": str,
    "api_key": str,
    "reasoning_effort": str,
    "memory_limit": str,
    "theme": str,
    "query_timeout_s": float,
    "connect_timeout_s": float,
    "read_timeout_s": float,
    "turn_deadline_s": float,
    "row_cap": int,
    "threads": int,
    "max_retries": int,
    "max_tool_calls": int,
    "max_completions": int,
    "max_reasks": int,
    "tool_protocol": str,
    "agent_profile": str,
    "schema_prompt_tokens": int,
    "connections": dict,
    "hide": tuple,
}

_CHOICES: dict[str, tuple[str, ...]] = {
    "tool_protocol": ("native", "text"),
    "agent_profile": ("full", "small"),
}


def _patterns(where: str, value: Any) -> tuple[str, ...]:
    """A list of scope patterns, each read now so a bad one is one line at start."""
    from astro_tui.data.scope import ScopeError, parse_pattern

    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
        raise ConfigError(f'{where}: expected a list of patterns, e.g. hide = ["hr", "sales.people.email"]')
    try:
        return tuple(parse_pattern(v).text for v in items)
    except ScopeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _connection_hides(value: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        return {}
    return {
        str(name): _patterns(f"connection {name} hide", entry["hide"])
        for name, entry in value.items()
        if isinstance(entry, dict) and "hide" in entry
    }


def _connections(value: Any) -> dict[str, str]:
    """`[connections.NAME]` tables with a `url`, as NAME → URL (`astro @NAME`)."""
    if not isinstance(value, dict):
        raise ConfigError("setting connections: expected [connections.NAME] tables with a url")
    found: dict[str, str] = {}
    for name, entry in value.items():
        url = entry.get("url") if isinstance(entry, dict) else entry
        if not isinstance(url, str) or not url:
            raise ConfigError(f'connection {name}: expected url = "postgresql://…" or "sc://…"')
        found[str(name)] = url
    return found


def config_dir() -> Path:
    """platformdirs and tomllib are imported only when needed: `astro sql` pays for each load."""
    if os.environ.get("ASTRO_CONFIG_DIR"):
        return Path(os.environ["ASTRO_CONFIG_DIR"])
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP_NAME))


def config_path() -> Path:
    return config_dir() / "config.toml"


def state_dir() -> Path:
    """Per-project state (notes, conversations): `.astro/` in the working directory."""
    return Path(os.environ.get("ASTRO_STATE_DIR") or Path.cwd() / ".astro")


def cache_dir() -> Path:
    if os.environ.get("ASTRO_CACHE_DIR"):
        return Path(os.environ["ASTRO_CACHE_DIR"])
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP_NAME))


def _read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from None


def _read_env(environ: dict[str, str]) -> dict[str, Any]:
    return {field: environ[var] for var, field in ENV_VARS.items() if environ.get(var)}


def load_settings(
    flags: dict[str, Any] | None = None,
    *,
    environ: dict[str, str] | None = None,
    path: Path | None = None,
) -> Settings:
    """File, then environment, then flags; a flag given as None does not override."""
    merged: dict[str, Any] = {}
    merged.update(_read_file(path or config_path()))
    merged.update(_read_env(dict(os.environ) if environ is None else environ))
    given = {k: v for k, v in (flags or {}).items() if v is not None and v != ()}
    if "hide" in given:  # a flag hides more, never less than the file
        file_hide = merged.get("hide", [])
        given["hide"] = [*([file_hide] if isinstance(file_hide, str) else file_hide), *given["hide"]]
    merged.update(given)
    return _settings_from(merged)


def _settings_from(values: dict[str, Any]) -> Settings:
    unknown = sorted(set(values) - set(_FIELD_KINDS))
    if unknown:
        raise ConfigError(f"unknown setting '{unknown[0]}' (see `astro config`)")
    return Settings(**values)


def write_setting(key: str, value: Any, *, path: Path | None = None) -> Path:
    """Persist one key (e.g. the theme) atomically, mode 0600 since the file may hold a key.

    The file is edited, not regenerated: tomlkit keeps the user's comments, order
    and layout, and only the one value changes.
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from astro_tui.files import atomic_write_text

    target = path or config_path()
    try:
        text = target.read_text(encoding="utf-8") if target.exists() else ""
        doc = tomlkit.parse(text)
    except (OSError, TOMLKitError) as exc:
        raise ConfigError(f"config file {target}: {exc}") from None
    doc[key] = value
    _settings_from(doc.unwrap())
    atomic_write_text(target, tomlkit.dumps(doc), mode=0o600)
    return target


def setting_sources(
    flags: dict[str, Any] | None = None,
    *,
    environ: dict[str, str] | None = None,
    path: Path | None = None,
) -> dict[str, str]:
    """Where each setting's effective value comes from: default, file, environment VAR or flag;
    the same precedence as `load_settings`."""
    env = dict(os.environ) if environ is None else environ
    sources = dict.fromkeys(_FIELD_KINDS, "default")
    for name in _read_file(path or config_path()):
        sources[name] = "file"
    for var, name in ENV_VARS.items():
        if env.get(var):
            sources[name] = f"environment {var}"
    for name, value in (flags or {}).items():
        if value is not None and value != ():
            merged = name == "hide" and sources[name] == "file"  # hide flags add to the file's
            sources[name] = "file and flag" if merged else "flag"
    return sources
