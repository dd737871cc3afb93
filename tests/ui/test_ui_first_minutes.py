"""What a new user trips on in the first minutes (issue 28): whatever has the keys is on screen,
zoom fills the screen, nothing is cut silently, ctrl+c stops work before it offers to quit."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from rich.cells import cell_len
from textual.widgets import Tree

from astro_tui.llm.errors import model_not_configured_message
from astro_tui.ui.panes.catalog import CatalogTree
from astro_tui.ui.panes.shell import ShellLog, ShellPane
from astro_tui.ui.widgets.command_lines import fit_command, howto_lines
from astro_tui.ui.widgets.key_footer import KeyFooter
from astro_tui.ui.widgets.question import QuestionInput
from tests.support.ui import log_text, make_app, notifications, plain, ready, shop_db, submit, wait_until

__all__ = ["shop_db"]

LONG_COMMENT = "A comment long enough that no pane of a hundred columns holds it on one line: " + "x" * 60
SLOW_SQL = "/sql SELECT count(*) FROM range(1000000) a, range(1000000) b"


@pytest.fixture(scope="module")
def wide_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("wide") / "wide.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE orders (order_id INTEGER, "
        "a_column_name_much_too_long_for_the_drawer_of_the_catalog DECIMAL(12,2));"
        f"COMMENT ON TABLE orders IS '{LONG_COMMENT}'"
    )
    con.close()
    return path


def on_screen(widget) -> bool:
    region = widget.region
    return widget.display and region.width > 0 and region.height > 0


def keys_on_screen(app) -> bool:
    return app.focused is not None and on_screen(app.focused)


async def select_table(pilot, app) -> None:
    await pilot.press("f2")
    tree = app.query_one(CatalogTree)
    await wait_until(pilot, lambda: tree.root.children and tree.root.children[0].children)
    tree.move_cursor(tree.root.children[0].children[0])
    await pilot.pause()


async def test_p_and_f5_beside_the_drawer_at_100_columns(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await select_table(pilot, app)
        assert on_screen(app.catalog_pane) and not on_screen(app.results)
        await pilot.press("p")
        await wait_until(pilot, lambda: app.results.current is not None)
        await pilot.pause()
        assert on_screen(app.results), "the preview is seen"
        assert isinstance(app.focused, Tree) and keys_on_screen(app), "the tree keeps the keys, in view"
        await pilot.press("f4")
        await pilot.pause()
        assert on_screen(app.conversation) and keys_on_screen(app)
        await pilot.press("f2", "f5")
        await pilot.pause()
        assert app.results in app.focused.ancestors_with_self and keys_on_screen(app)


async def test_p_below_100_columns_closes_the_drawer_on_the_results(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await select_table(pilot, app)
        await pilot.press("p")
        await wait_until(pilot, lambda: app.results.current is not None)
        await pilot.pause()
        assert on_screen(app.results) and not on_screen(app.catalog_pane)
        assert app.results in app.focused.ancestors_with_self and keys_on_screen(app)


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)])
async def test_zoom_gives_the_pane_the_screen_at_every_size(shop_db: Path, size: tuple[int, int]) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        for key, pane in (("f2", app.catalog_pane), ("f3", app.catalog_pane), ("f5", app.results)):
            await pilot.press(key, "f10")
            await pilot.pause()
            assert app.screen.maximized is pane
            assert pane.region.width == size[0], (key, pane.region)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen.maximized is None
        await pilot.press("f4", "f10", "f2")  # a key for another pane leaves the zoom for it
        await pilot.pause()
        assert app.screen.maximized is None and isinstance(app.focused, Tree) and keys_on_screen(app)


async def test_shell_output_wraps_and_a_long_tree_label_ends_in_an_ellipsis(wide_db: Path) -> None:
    app = make_app(wide_db)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await pilot.press("f3")
        log = app.query_one(ShellLog)
        before = len(log.entries)
        app.query_one(ShellPane).submit("cat orders")
        await wait_until(pilot, lambda: len(log.entries) >= before + 2)

        def shown() -> tuple[int, str]:
            texts = ["".join(s.text for s in line).rstrip() for line in log.lines]
            return max(map(cell_len, texts), default=0), "".join(t.replace(" ", "") for t in texts)

        await wait_until(pilot, lambda: LONG_COMMENT.replace(" ", "") in shown()[1])
        narrow = log.scrollable_content_region.width
        assert shown()[0] <= narrow, "no line runs past the pane"
        assert log.virtual_size.width <= narrow, "nothing to scroll sideways to"
        await pilot.press("f10")
        await wait_until(pilot, lambda: log.scrollable_content_region.width > narrow and shown()[0] > narrow)
        assert (
            LONG_COMMENT.replace(" ", "") in shown()[1] and shown()[0] <= log.scrollable_content_region.width
        )

        await pilot.press("escape", "f2")  # the tree: no horizontal scrollbar over the cursor's row
        tree = app.query_one(CatalogTree)
        table = tree.root.children[0].children[0]
        tree.move_cursor(table)
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(table.children) == 2)
        await pilot.pause()
        assert not tree.show_horizontal_scrollbar
        assert tree.virtual_size.width <= tree.scrollable_content_region.width
        assert tree.cursor_node is table and tree.cursor_line < tree.scrollable_content_region.height


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_the_footer_fits_zoomed_with_work_running(shop_db: Path, size: tuple[int, int]) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await submit(pilot, SLOW_SQL)
        await wait_until(pilot, lambda: app.session.sql_running)
        footer = app.query_one(KeyFooter)
        for key in ("f4", "f5", "f2"):
            await pilot.press(key, "f10")
            await wait_until(pilot, lambda: any(k.key == "escape" for k in footer.query("FooterKey")))
            await pilot.pause()
            assert footer.virtual_size.width <= size[0], (key, footer.virtual_size)
            await pilot.press("f10")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.session.sql_running)


async def test_the_top_bar_keeps_its_keys_whole(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        app._set_topbar("/a/very/long/path/to/some/data/files/" * 3 + "orders.parquet · 1 table")
        bar = app.query_one("#topbar")
        line = plain(bar)
        assert line.endswith("F1 help · F2 catalog · ctrl+p") and cell_len(line) <= bar.content_size.width
        assert "…" in line and "no model configured" in line


@pytest.mark.parametrize("width", range(31, 90, 3))  # the URL, its indent and ` \\`
def test_a_command_to_copy_is_never_broken_inside_a_word(width: int) -> None:
    command = "    astro --model qwen2.5-coder:7b --base-url http://localhost:11434/v1"
    lines = fit_command(command, width)
    assert all(cell_len(line) <= width for line in lines)
    joined = " ".join(line.removesuffix(" \\").strip() for line in lines)
    assert joined == command.strip(), "the shell reads the lines as the one command"
    assert all(line.endswith(" \\") for line in lines[:-1])


@pytest.mark.parametrize("width", range(40, 121, 4))
def test_the_no_model_box_keeps_its_layout_at_every_width(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commands share one indent under their heading, continuations sit deeper, an option keeps
    its value beside it where that fits, paragraphs wrap under their own indent, settings stay
    whole (issue 37: the Ollama line lost its indent at 100-120 columns)."""
    monkeypatch.setenv("ASTRO_CONFIG_DIR", "/home/me/.config/astro")  # not the test's long temp path
    text = model_not_configured_message()
    lines = howto_lines(text, width)
    assert all(cell_len(line) <= width for line in lines), lines
    assert " ".join(" ".join(lines).split()).replace(" \\", "") == " ".join(text.split())

    def indent(line: str) -> int:
        return len(line) - len(line.lstrip())

    ollama = next(i for i, line in enumerate(lines) if line.strip().startswith("Ollama"))
    pull, astro = lines[ollama + 1], lines[ollama + 2]
    assert indent(pull) == indent(astro) == indent(lines[ollama]) + 2
    assert "--base-url http://localhost:11434/v1" in " ".join(lines), "the option and its value"
    continued = lines[ollama + 3] if astro.endswith(" \\") else None
    assert continued is None or indent(continued) == indent(astro) + 2
    vllm = next(i for i, line in enumerate(lines) if line.strip().startswith("vLLM"))
    assert indent(lines[vllm + 1]) == indent(lines[vllm]) == indent(lines[ollama])
    assert any(line.strip() == 'base_url = "http://localhost:11434/v1"' for line in lines)


async def test_ctrl_c_stops_a_running_sql_and_puts_it_back(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await submit(pilot, SLOW_SQL)
        await wait_until(pilot, lambda: app.session.sql_running)
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: "cancelled" in log_text(app) and not app.session.sql_running)
        assert not any("quit" in n.lower() for n in notifications(app)), "no offer to quit while it ran"
        question = app.conversation.question
        assert question.text == SLOW_SQL, "the cancelled /sql is back for editing"
        assert isinstance(app.focused, QuestionInput)

        question.clear()
        await submit(pilot, SLOW_SQL)
        await wait_until(pilot, lambda: app.session.sql_running)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.session.sql_running)
        await wait_until(pilot, lambda: question.text == SLOW_SQL)

        await pilot.press("f2", "ctrl+c")  # nothing runs: now ctrl+c says how to quit
        await wait_until(pilot, lambda: any("quit" in n.lower() for n in notifications(app)))
        assert app.is_running
