"""Settings: file, then environment, then flags; bad values are one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from astro_tui.cli import main
from astro_tui.config import ConfigError, Settings, config_path, load_settings, write_setting


def test_later_sources_win(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model = "from-file"\nbase_url = "http://file/v1"\nrow_cap = 10\n')
    env = {"ASTRO_MODEL": "from-env", "OPENAI_BASE_URL": "http://env/v1"}
    settings = load_settings({"model": "from-flag", "base_url": None}, environ=env, path=path)
    assert settings.model == "from-flag"
    assert settings.base_url == "http://env/v1"
    assert settings.row_cap == 10
    assert settings.query_timeout_s == 30.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("row_cap = 'many'", "row_cap = 'many' (config file {path}:2): expected a whole number of rows"),
        ("colour = 'blue'", "config file {path}:2: unknown setting 'colour'"),
        ("modle = 'gpt'", "config file {path}:2: unknown setting 'modle'; did you mean 'model'?"),
        ("model = [", "config file {path}: "),
        ("threads = -2", "threads = -2 (config file {path}:2): expected a whole number, at least 1"),
        (
            "memory_limit = '1KB'",
            "memory_limit = '1KB' (config file {path}:2): expected a size of at least 16MB",
        ),
        ("base_url = 'localhost:11434'", "(config file {path}:2): expected an http:// or https:// URL"),
        (
            "[connections.prod]\nurl = 'sc://h'\nhots = 'x'",
            "connection prod (config file {path}:2): unknown key",
        ),
    ],
)
def test_bad_config_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    """Each names the setting, the file and line it came from, and what is allowed."""
    path = tmp_path / "config.toml"
    path.write_text("# mine\n" + text)
    with pytest.raises(ConfigError) as info:
        load_settings(environ={}, path=path)
    assert message.format(path=path) in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--memory-limit", "lots"], "memory_limit = 'lots' (flag --memory-limit): expected a size"),
        (
            ["--memory-limit", "1KB"],
            "memory_limit = '1KB' (flag --memory-limit): expected a size of at least 16MB",
        ),
        (["--max-rows", "0"], "row_cap = '0' (flag --max-rows): expected a whole number of rows, at least 1"),
        (["--timeout", "0"], "query_timeout_s = '0' (flag --timeout): expected a number of seconds above 0"),
        (["--timeout", "soon"], "query_timeout_s = 'soon' (flag --timeout)"),
        (["--hide", "a..b"], "hide (flag --hide): hide pattern 'a..b'"),
    ],
)
def test_bad_flags_are_usage_errors_naming_the_flag(args: list[str], message: str) -> None:
    for command in (["sql", "select 1"], ["shell", "ls"] if args[0] == "--hide" else ["config"]):
        done = CliRunner().invoke(main, [*command, *args])
        assert done.exit_code == 2, (command, done.output)
        assert done.stderr.startswith(f"astro: {message}") and done.stderr.count("\n") == 1, done.stderr
        assert command == ["config"] or not done.stdout


def test_environment_and_python_values_are_named_by_their_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^base_url = 'ftp://x' \(environment OPENAI_BASE_URL\): expected"):
        load_settings(environ={"OPENAI_BASE_URL": "ftp://x"}, path=tmp_path / "none.toml")
    import astro_tui

    with pytest.raises(ConfigError, match=r"^row_cap = 0 \(astro_tui.open\(row_cap=…\)\): expected"):
        astro_tui.open(row_cap=0)
    with pytest.raises(ConfigError, match=r"unknown setting 'row_caps'; did you mean 'row_cap'\?"):
        astro_tui.open(row_caps=5)
    with pytest.raises(ConfigError, match=r"^api_key \(Settings\(api_key=…\)\): expected text$"):
        Settings(api_key=12345)  # type: ignore[arg-type]  (a secret's value is never shown)


def test_an_unknown_key_in_the_file_does_not_break_astro_config() -> None:
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text('model = "m"\nrow_cap = 500\nmodle = "x"\n')
    shown = CliRunner().invoke(main, ["config"])
    assert shown.exit_code == 2
    assert "model" in shown.stdout and "500" in shown.stdout and "(file:2)" in shown.stdout
    assert (
        shown.stderr
        == f"astro: config file {config_path()}:3: unknown setting 'modle'; did you mean 'model'?\n"
    )
    fixed = CliRunner().invoke(main, ["config", "set", "model", "gpt-x"])
    assert fixed.exit_code == 0, fixed.output
    ran = CliRunner().invoke(main, ["sql", "select 1"])
    assert ran.exit_code == 2 and ":3: unknown setting 'modle'" in ran.stderr


def test_write_setting_is_atomic_private_and_validated(tmp_path: Path) -> None:
    path = tmp_path / "astro" / "config.toml"
    write_setting("theme", "nord", path=path)
    write_setting("query_timeout_s", 12.5, path=path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_settings(environ={}, path=path) == Settings(theme="nord", query_timeout_s=12.5)
    with pytest.raises(ConfigError):
        write_setting("row_cap", "lots", path=path)
    assert load_settings(environ={}, path=path).row_cap == 100_000


def test_astro_config_shows_and_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    runner = CliRunner()
    saved = runner.invoke(main, ["config", "set", "model", "qwen2.5-coder:7b"])
    assert saved.exit_code == 0 and str(config_path()) in saved.stdout
    shown = runner.invoke(main, ["config"])
    lines = {
        line.split(" = ")[0].strip(): line.split(" = ")[1].split() for line in shown.stdout.splitlines()[1:]
    }
    assert lines["model"] == ["qwen2.5-coder:7b", "(file:1)"]
    assert lines["api_key"] == ["(set)", "(environment", "OPENAI_API_KEY)"]
    assert "sk-secret-value" not in shown.stdout
    bad = runner.invoke(main, ["config", "set", "row_cap", "lots"])
    assert bad.exit_code == 2 and bad.stderr.startswith("astro: ")
    unknown = runner.invoke(main, ["config", "set", "colour", "blue"])
    assert unknown.exit_code == 2 and "unknown setting" in unknown.stderr


def test_config_writes_keep_the_users_comments_and_layout(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    text = (
        "# my astro settings\n"
        'model = "gpt-x"  # the team model\n'
        "\n"
        "# keep queries short\n"
        "query_timeout_s = 10.0\n"
        "\n"
        "[connections.prod]\n"
        "# read replica\n"
        'url = "postgresql://replica/db"\n'
    )
    path.write_text(text)
    write_setting("theme", "nord", path=path)
    write_setting("theme", "gruvbox", path=path)
    write_setting("query_timeout_s", 12.5, path=path)
    after = path.read_text()
    for kept in ("# my astro settings", "# the team model", "# keep queries short", "# read replica"):
        assert kept in after
    assert after.index('theme = "gruvbox"') < after.index("[connections.prod]")
    assert after.count("theme =") == 1 and "query_timeout_s = 12.5" in after
    assert path.stat().st_mode & 0o777 == 0o600
    settings = load_settings(environ={}, path=path)
    assert settings.theme == "gruvbox" and settings.connections == {"prod": "postgresql://replica/db"}


def test_astro_config_says_where_each_value_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text("row_cap = 500\n")
    monkeypatch.setenv("ASTRO_MODEL", "from-env")
    shown = CliRunner().invoke(main, ["config", "--timeout", "5"])
    assert shown.exit_code == 0, shown.output
    lines = {
        line.split(" = ")[0].strip(): line.split(" = ")[1].split() for line in shown.stdout.splitlines()[1:]
    }
    assert lines["row_cap"] == ["500", "(file:1)"]
    assert lines["model"] == ["from-env", "(environment", "ASTRO_MODEL)"]
    assert lines["query_timeout_s"] == ["5.0", "(flag", "--timeout)"]
    assert lines["threads"] == ["2", "(default)"]


def test_astro_help_lists_every_option_of_every_command() -> None:
    import click

    from astro_tui.cli import main as group

    text = CliRunner().invoke(main, ["--help"]).stdout
    assert group.commands, "no commands"
    for name, command in group.commands.items():
        assert name == "open" or f"astro {name}" in text, name
        for param in command.params:
            if isinstance(param, click.Option):
                for opt in param.opts:
                    assert opt in text, f"{name}: {opt}"
    assert "astro config" in text and "where it came from" in text
