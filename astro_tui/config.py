"""Settings from a TOML file, the environment and flags, later sources winning.

One frozen object travels through the app so every layer reads the same limits;
nothing below the CLI reads the environment on its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
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


FLAGS: dict[str, str] = {
    "query_timeout_s": "--timeout",
    "row_cap": "--max-rows",
    "memory_limit": "--memory-limit",
    "hide": "--hide",
    "model": "--model",
    "base_url": "--base-url",
}
"""The command line's spelling of the settings it takes, for its messages."""
FLAG_LABELS = {name: f"flag {flag}" for name, flag in FLAGS.items()}


class ConfigError(AstroError):
    """A setting is missing or malformed; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable; defaults are what a first run should feel like.

    A plain dataclass, not a pydantic model: it is on the start-up path of `astro sql`,
    where importing pydantic costs ~150 ms (pydantic-core alone ~45 ms) against a command of
    ~300 ms. Every value is checked by the one schema below (`SCHEMA`), whatever its source.
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
        for name in SCHEMA:
            value = getattr(self, name)
            if name == "connections":
                urls, hides = _connections(value, "Settings(connections=…)")
                object.__setattr__(self, "connections", urls)
                object.__setattr__(self, "connection_hide", {**self.connection_hide, **hides})
            elif value is not None or SCHEMA[name].kind is not str:
                object.__setattr__(self, name, check_setting(name, value, f"Settings({name}=…)"))

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


# ---------------------------------------------------------------------------- the schema


@dataclass(frozen=True, slots=True)
class Rule:
    """What one setting allows, said once: the check and the words the error uses."""

    kind: type
    allowed: str
    minimum: float | None = None
    above: bool = False
    """The minimum itself is not allowed (a time limit of 0 s)."""
    choices: tuple[str, ...] = ()


_SECONDS = "a number of seconds above 0"
_MEMORY_FLOOR = 16 * 10**6
"""Below this DuckDB cannot read even the catalog: an open fails in a line no one understands."""

SCHEMA: dict[str, Rule] = {
    "model": Rule(str, "a model name, e.g. gpt-4.1-mini"),
    "base_url": Rule(str, "an http:// or https:// URL, e.g. http://localhost:11434/v1"),
    "api_key": Rule(str, "text"),
    "reasoning_effort": Rule(
        str, "one of minimal, low, medium, high", choices=("minimal", "low", "medium", "high")
    ),
    "memory_limit": Rule(str, "a size of at least 16MB, e.g. 500MB, 4GB, 2GiB or 50%"),
    "theme": Rule(str, "a theme name (the app's palette lists them)"),
    "query_timeout_s": Rule(float, _SECONDS, 0, above=True),
    "connect_timeout_s": Rule(float, _SECONDS, 0, above=True),
    "read_timeout_s": Rule(float, _SECONDS, 0, above=True),
    "turn_deadline_s": Rule(float, _SECONDS, 0, above=True),
    "row_cap": Rule(int, "a whole number of rows, at least 1", 1),
    "threads": Rule(int, "a whole number, at least 1", 1),
    "max_retries": Rule(int, "a whole number, at least 0", 0),
    "max_tool_calls": Rule(int, "a whole number, at least 1", 1),
    "max_completions": Rule(int, "a whole number, at least 1", 1),
    "max_reasks": Rule(int, "a whole number, at least 0", 0),
    "tool_protocol": Rule(str, "one of native, text", choices=("native", "text")),
    "agent_profile": Rule(str, "one of full, small", choices=("full", "small")),
    "schema_prompt_tokens": Rule(int, "a whole number of tokens, at least 0 (0: never)", 0),
    "connections": Rule(dict, '[connections.NAME] tables with url = "postgresql://…" or "sc://…"'),
    "hide": Rule(tuple, 'a list of patterns, e.g. hide = ["hr", "sales.people.email"]'),
}


def check_setting(name: str, value: Any, source: str) -> Any:
    """VALUE for setting NAME as the app uses it, or a ConfigError in one line naming the
    setting, where the value came from and what is allowed."""
    rule = SCHEMA[name]
    if rule.kind is tuple:
        return _patterns(name, value, source)
    checked = _checked(rule, value)
    if checked is _WRONG:
        shown = "" if name == "api_key" else f" = {_shown(value)}"
        raise ConfigError(f"{name}{shown} ({source}): expected {rule.allowed}")
    return checked


_WRONG = object()


def _checked(rule: Rule, value: Any) -> Any:
    if rule.kind is str:
        if not isinstance(value, str) or (rule.choices and value not in rule.choices):
            return _WRONG
        if rule is SCHEMA["base_url"] and not value.lower().startswith(("http://", "https://")):
            return _WRONG
        if rule is SCHEMA["memory_limit"]:
            from astro_tui.sizes import memory_bytes

            size = memory_bytes(value)
            return _WRONG if size is None or size < _MEMORY_FLOOR else value.strip()
        return value
    if isinstance(value, str):  # a flag or the environment: text that spells a number
        try:
            value = rule.kind(value.strip())
        except ValueError:
            return _WRONG
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return _WRONG
    if rule.kind is int and value != int(value):
        return _WRONG
    if rule.minimum is not None and (value <= rule.minimum if rule.above else value < rule.minimum):
        return _WRONG
    return rule.kind(value)


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return text if len(text) <= 60 else text[:57] + "…"


def _patterns(name: str, value: Any, source: str) -> tuple[str, ...]:
    """A list of scope patterns, each read now so a bad one is one line at start."""
    from astro_tui.patterns import ScopeError, split_pattern

    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
        raise ConfigError(f"{name} ({source}): expected {SCHEMA['hide'].allowed}")
    try:
        for item in items:
            split_pattern(item)
    except ScopeError as exc:
        raise ConfigError(f"{name} ({source}): {exc}") from None
    return tuple(item.strip() for item in items)


_CONNECTION_KEYS = ("url", "hide")


def _connections(
    value: Any, source: str | Callable[[str], str]
) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """`[connections.NAME]` tables as NAME → URL (`astro @NAME`) and NAME → its hide patterns."""
    where = source if callable(source) else (lambda _key: source)
    if not isinstance(value, dict):
        raise ConfigError(f"connections ({where('connections')}): expected {SCHEMA['connections'].allowed}")
    urls: dict[str, str] = {}
    hides: dict[str, tuple[str, ...]] = {}
    for name, entry in value.items():
        here = where(f"connections.{name}")
        url = entry.get("url") if isinstance(entry, dict) else entry
        if not isinstance(url, str) or not url:
            raise ConfigError(f'connection {name} ({here}): expected url = "postgresql://…" or "sc://…"')
        if isinstance(entry, dict):
            unknown = [key for key in entry if key not in _CONNECTION_KEYS]
            if unknown:
                raise ConfigError(
                    f"connection {name} ({here}): unknown key '{unknown[0]}'; a connection has url and hide"
                )
            if "hide" in entry:
                hides[str(name)] = _patterns(f"connection {name} hide", entry["hide"], here)
        urls[str(name)] = url
    return urls, hides


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


@dataclass(slots=True)
class Layers:
    """Every given value with where it came from, before the schema checks it."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    file: Path | None = None
    lines: dict[str, int] = field(default_factory=dict)
    """The line of each key of the config file (`connections.NAME` for a table)."""

    def where(self, key: str) -> str:
        return (
            f"config file {self.file}:{self.lines[key]}" if key in self.lines else f"config file {self.file}"
        )


def _key_lines(text: str) -> dict[str, int]:
    """Where each top-level key and each `[table]` of a TOML file is, for messages: tomllib
    keeps no positions, and a setting's line is all a person needs to find it."""
    import re

    lines: dict[str, int] = {}
    table: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$", line)
        if header:
            table = header.group(1).replace('"', "").replace(" ", "")
            lines.setdefault(table, number)
            continue
        key = re.match(r'\s*"?([A-Za-z0-9_.-]+)"?\s*=', line)
        if key:
            lines.setdefault(f"{table}.{key.group(1)}" if table else key.group(1), number)
    return lines


def _read_file(path: Path, layers: Layers) -> dict[str, Any]:
    layers.file = path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    import tomllib

    try:
        values = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    layers.lines = _key_lines(text)
    return values


def _layers(
    flags: Mapping[str, Any] | None,
    labels: Mapping[str, str] | None,
    environ: Mapping[str, str] | None,
    path: Path | None,
) -> tuple[Layers, list[ConfigError]]:
    """File, then environment, then flags, later ones winning; the unknown keys of the file
    as errors beside them, so `astro config` can still show the rest."""
    layers = Layers()
    problems: list[ConfigError] = []
    for key, value in _read_file(path or config_path(), layers).items():
        if key in SCHEMA:
            layers.values[key] = value
            layers.sources[key] = layers.where(key)
        else:
            problems.append(ConfigError(f"{layers.where(key)}: {_unknown(key)}"))
    env = os.environ if environ is None else environ
    for var, key in ENV_VARS.items():
        if env.get(var):
            layers.values[key] = env[var]
            layers.sources[key] = f"environment {var}"
    for key, value in (flags or {}).items():
        if value is None or value == ():
            continue
        label = (labels or {}).get(key, f"flag {key}")
        if key not in SCHEMA:
            problems.append(ConfigError(f"{label}: {_unknown(key)}"))
            continue
        if key == "hide" and "hide" in layers.values:  # a flag hides more, never less than the file
            before = layers.values["hide"]
            value = [*([before] if isinstance(before, str) else before), *value]
            label = f"{layers.sources['hide']} and {label}"
        layers.values[key] = value
        layers.sources[key] = label
    return layers, problems


def _unknown(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(key, list(SCHEMA), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else "; `astro config` lists them"
    return f"unknown setting '{key}'{hint}"


def _checked_values(layers: Layers) -> tuple[dict[str, Any], list[ConfigError]]:
    """Each value through the schema once, named by its source; what fails is left out."""
    checked: dict[str, Any] = {}
    problems: list[ConfigError] = []
    for key, value in layers.values.items():
        try:
            if key == "connections":
                where = layers.where if layers.sources[key].startswith("config file") else layers.sources[key]
                _connections(value, where)
                checked[key] = value
            else:
                checked[key] = check_setting(key, value, layers.sources[key])
        except ConfigError as exc:
            problems.append(exc)
    return checked, problems


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Settings:
    """File, then environment, then flags; a flag given as None does not override. The first
    problem is a ConfigError naming the setting, its source (`labels` names a flag as the
    caller spells it, e.g. `--max-rows`) and what is allowed."""
    layers, problems = _layers(flags, labels, environ, path)
    checked, invalid = _checked_values(layers)
    problems += invalid
    if problems:
        raise problems[0]
    return Settings(**checked)


def inspect_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> tuple[Settings, dict[str, str], list[ConfigError]]:
    """What `astro config` shows: the settings that are valid, where each came from, and every
    problem, so a bad key in the file is named without hiding the rest."""
    layers, problems = _layers(flags, labels, environ, path)
    checked, invalid = _checked_values(layers)
    sources = {key: layers.sources.get(key, "default") if key in checked else "default" for key in SCHEMA}
    return Settings(**checked), sources, problems + invalid


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
    if key not in SCHEMA or SCHEMA[key].kind is dict:
        raise ConfigError(
            _unknown(key) if key not in SCHEMA else f"'{key}' are tables: edit [{key}.NAME] in {target}"
        )
    checked = check_setting(key, value, "astro config set")
    doc[key] = list(checked) if isinstance(checked, tuple) else checked
    atomic_write_text(target, tomlkit.dumps(doc), mode=0o600)
    return target
