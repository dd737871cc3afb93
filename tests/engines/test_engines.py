"""The engine layer's dispatch: which engine a target opens, named connections, secrets kept out."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from astro_tui.config import ConfigError, Settings, load_settings
from astro_tui.data.database import Database
from astro_tui.data.engines import check_targets, expand_targets, open_engine, server_scheme
from astro_tui.data.errors import TargetError
from astro_tui.text import redact_url
from tests.support import ROOT
from tests.support.imports import _imports

PACKAGE = ROOT / "astro_tui"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ann:s3cret@db.example:5432/shop", "postgresql://ann:***@db.example:5432/shop"),
        ("postgres://ann@host/db", "postgres://ann@host/db"),
        (
            "postgresql://host/db?sslmode=require&password=s3cret",
            "postgresql://host/db?sslmode=require&password=***",
        ),
        ("sc://spark:15002/;token=s3cret;use_ssl=true", "sc://spark:15002/;token=***;use_ssl=true"),
        ("postgresql://:s3cret@host/db", "postgresql://:***@host/db"),
    ],
)
def test_urls_are_shown_without_their_secrets(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "s3cret" not in redact_url(url)


def test_named_connections_expand_and_unknown_names_say_which_exist() -> None:
    settings = Settings(connections={"prod": {"url": "postgresql://ann@host/shop"}})  # type: ignore[dict-item]
    assert expand_targets(["@prod"], settings) == ["postgresql://ann@host/shop"]
    with pytest.raises(TargetError, match=r"^@nope: no such connection in the config file \(known: @prod\)$"):
        expand_targets(["@nope"], settings)


def test_servers_are_opened_one_at_a_time_and_unknown_schemes_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x\n1\n")
    with pytest.raises(TargetError, match="one database server at a time"):
        check_targets(["postgresql://host/db", str(tmp_path / "a.csv")], Settings())
    with pytest.raises(TargetError) as raised:
        open_engine(["mysql://root:hunter2@host/db"], Settings())
    assert str(raised.value).startswith("mysql://root:***@host/db: unknown kind of server")
    assert "hunter2" not in str(raised.value)
    assert server_scheme("warehouse.duckdb") is None
    assert server_scheme("SC://h:15002") == "sc"


def test_connections_come_from_config_tables(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model = "m"\n\n[connections.prod]\nurl = "postgresql://ann@host/shop"\n')
    settings = load_settings(path=path, environ={})
    assert settings.connections == {"prod": "postgresql://ann@host/shop"}
    path.write_text("[connections.prod]\nhost = 'x'\n")
    with pytest.raises(ConfigError, match=r"connection prod \(config file .*config.toml:1\): expected url"):
        load_settings(path=path, environ={})


def test_astro_config_lists_connections_without_passwords(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('[connections.prod]\nurl = "postgresql://ann:s3cret@host/shop"\n')
    env = {"ASTRO_CONFIG_DIR": str(config_dir), "PATH": "/usr/bin:/bin"}
    shown = subprocess.run(
        [sys.executable, "-m", "astro_tui.cli", "config"], capture_output=True, text=True, env=env, check=True
    )
    assert re.search(r"connection @prod +\= postgresql://ann:\*\*\*@host/shop", shown.stdout), shown.stdout
    assert "s3cret" not in shown.stdout + shown.stderr
    saved = subprocess.run(
        [sys.executable, "-m", "astro_tui.cli", "config", "set", "row_cap", "500"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert saved.returncode == 0, saved.stderr
    again = load_settings(path=config_dir / "config.toml", environ={})
    assert again.row_cap == 500
    assert again.connections == {"prod": "postgresql://ann:s3cret@host/shop"}


def test_the_sample_engine_names_its_dialect_and_seeds_its_notes(sample_db: Database) -> None:
    assert sample_db.dialect.name == "DuckDB"
    assert "revenue" in sample_db.context_seed.lower()
    assert sample_db.key == "sample"


def test_nothing_above_data_names_an_engine() -> None:
    """Engines plug in under data/; the layers above only see Database and the dispatch."""
    above = [p for p in PACKAGE.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts[:1]]
    offenders = {
        f"{path.relative_to(PACKAGE)}: {module}"
        for path in above
        for module in _imports(path)
        if (module.startswith("astro_tui.data.engines.") and module != "astro_tui.data.engines.base")
        or module in {"duckdb", "adbc_driver_postgresql", "pyspark", "pglast", "sqlglot"}
    }
    assert not offenders, sorted(offenders)
