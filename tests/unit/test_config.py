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
        ("row_cap = 'many'", "setting row_cap: expected a number"),
        ("colour = 'blue'", "unknown setting 'colour'"),
        ("model = [", "config file"),
        ("threads = -2", "must not be negative"),
    ],
)
def test_bad_config_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings(environ={}, path=path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


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
    assert lines["model"] == ["qwen2.5-coder:7b", "(file)"]
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
    assert lines["row_cap"] == ["500", "(file)"]
    assert lines["model"] == ["from-env", "(environment", "ASTRO_MODEL)"]
    assert lines["query_timeout_s"] == ["5.0", "(flag)"]
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
