"""Exports from any front end: a file's name never says another format than what is inside."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import astro_tui
from astro_tui.config import Settings
from astro_tui.session.export import ExportError
from tests.support.ui import REVENUE_SQL, shop_db

__all__ = ["shop_db"]


def test_a_name_that_says_another_format_is_refused_and_nothing_is_written(
    shop_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with astro_tui.open(shop_db, settings=Settings(), state_dir=tmp_path / "state") as session:
        result = session.sql(REVENUE_SQL)
        for fmt, name, message in (
            (
                "parquet",
                "x.csv",
                "x.csv is named as csv but the format is parquet: name it x.parquet or choose csv",
            ),
            (
                "csv",
                "x.PARQUET",
                "x.PARQUET is named as parquet but the format is csv: name it x.csv or choose parquet",
            ),
            ("json", "x.jsonl", "x.jsonl is named as JSON lines but the format is json: name it x.json"),
        ):
            with pytest.raises(ExportError) as caught:
                session.export(result, fmt, out / name)
            assert str(caught.value) == message
        assert list(out.iterdir()) == []
        # a name without a data suffix is written as asked
        written = session.export(result, "parquet", out / "revenue.data")
        assert pq.read_table(written).num_rows == 5
