"""Fixtures of the security tests: a TPC-H database the guard corpora run on."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.support.legit_duckdb import TPCH_DDL


@pytest.fixture(scope="module")
def tpch_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tpch") / "tpch.duckdb"
    con = duckdb.connect(str(path))
    con.execute(TPCH_DDL)
    con.close()
    return path
