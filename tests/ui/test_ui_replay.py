"""`/replay` in the app: the conversation on screen leaves as a notebook, and nothing is
overwritten without a yes. The model is the fake server; the database a real DuckDB file."""

from __future__ import annotations

from pathlib import Path

import nbformat

from astro_tui.ui.screens.confirm import ConfirmScreen
from astro_tui.ui.screens.export import ExportScreen
from tests.support.fake_openai import FakeOpenAI
from tests.support.ui import REVENUE_SQL, make_app, notifications, shop_db, submit, wait_until
from tests.support.ui_provenance import TOTAL_SQL, answer_script, answered

__all__ = ["shop_db"]


async def test_slash_replay_writes_the_notebook_and_asks_before_replacing_it(
    shop_db: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    out = tmp_path / "revenue.ipynb"
    async with app.run_test(size=(100, 30)) as pilot:
        await answered(pilot)
        await submit(pilot, f"/replay ipynb {out}")
        await wait_until(pilot, lambda: any(n.startswith("Wrote ") for n in notifications(app)))
        notebook = nbformat.read(out, as_version=4)
        nbformat.validate(notebook)
        code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
        assert REVENUE_SQL in code and TOTAL_SQL in code and "assert" in code
        assert "astro_tui" not in code
        written = out.read_bytes()

        await submit(pilot, f"/replay {out}")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await wait_until(pilot, lambda: any(n.startswith("Not written") for n in notifications(app)))
        assert out.read_bytes() == written

        await submit(pilot, "/replay")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ExportScreen))
        proposed = Path.cwd() / f"astro-{app.session.conversation_id}.ipynb"
    assert sorted(p.name for p in tmp_path.glob("*.*")) == ["revenue.ipynb"]
    assert not proposed.exists(), "a closed prompt writes nothing"
