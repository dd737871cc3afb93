"""The catalog pane: a lazy tree of schemas → tables → columns, the table card, the shell.

Nodes are added only when their parent is opened, a few hundred at a time, so
a 10,000-table schema costs nothing until the user asks for it and never
stalls the screen. Names and comments come from the database: always inert.
The tree can show an outline (schemas and tables, the columns still being
read): a table opened then, or its card, shows the columns once they are read.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from astro_tui.data.catalog_model import NOT_READ
from astro_tui.errors import AstroError, error_line
from astro_tui.text import inert
from astro_tui.ui.actions import bindings
from astro_tui.ui.inert import inert_text
from astro_tui.ui.panes.shell import ShellPane
from astro_tui.ui.wording import counted

if TYPE_CHECKING:
    import threading

    from astro_tui.data.catalog_model import Catalog, Column, Schema, Table
    from astro_tui.session import Session

CHUNK = 500


@dataclass(frozen=True, slots=True)
class Node:
    kind: Literal["schema", "table", "column", "more", "reading"]
    schema: Schema | None = None
    table: Table | None = None
    column: Column | None = None
    offset: int = 0


def _count(n: int | None) -> str:
    if n is None:
        return ""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}".replace(".0", "")
    return str(n)


class CatalogTree(Tree[Node]):
    BINDINGS = bindings("catalog")

    def __init__(self) -> None:
        super().__init__(Text("catalog"), id="catalog-tree")
        self.show_root = False
        self.guide_depth = 2
        self.catalog: Catalog | None = None
        self._waiting: list[TreeNode[Node]] = []
        """Tables opened while the columns were being read."""

    def render_label(self, node: TreeNode[Node], base_style: Style, style: Style) -> Text:
        """A label wider than the pane ends in `…` (the card below has it whole): a horizontal
        scrollbar would take the tree's last row, and the cursor's row with it."""
        label = super().render_label(node, base_style, style)
        depth, parent = 0, node.parent
        while parent is not None and parent is not self.root:
            depth, parent = depth + 1, parent.parent
        room = self.scrollable_content_region.width - depth * self.guide_depth
        if room > 1 and label.cell_len > room:
            label.truncate(room, overflow="ellipsis")
        return label

    def load(self, catalog: Catalog) -> None:
        self.clear()
        self.catalog, self._waiting = catalog, []
        for schema in catalog.schemas:
            name = f"{schema.database}.{schema.name}" if schema.database else schema.name
            label = inert_text(name, "bold", keep_newlines=False)
            label.append(f"  {len(schema.tables):,}", "dim")
            self.root.add(label, Node("schema", schema=schema), allow_expand=bool(schema.tables))
        if len(catalog.schemas) == 1 and catalog.schemas[0].tables:
            self.root.children[0].expand()
        self.cursor_line = 0

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded[Node]) -> None:
        node = event.node
        data = node.data
        if data is None or node.children:
            return
        if data.kind == "schema" and data.schema is not None:
            self._add_tables(node, data.schema, 0)
        elif data.kind == "table" and data.table is not None:
            self._add_columns(node, data.table)

    def _add_columns(self, node: TreeNode[Node], table: Table) -> None:
        if table.columns is NOT_READ:
            whole = self.catalog.counterpart(table) if self.catalog and self.catalog.complete else None
            if whole is None:
                node.add_leaf(Text("reading the columns…", style="italic dim"), Node("reading", table=table))
                self._waiting.append(node)
                return
            table = whole
            node.data = Node("table", schema=node.data.schema if node.data else None, table=table)
        for column in table.columns:
            label = inert_text(column.name, keep_newlines=False)
            label.append(f"  {inert(column.type, keep_newlines=False)}", "dim")
            node.add_leaf(label, Node("column", table=table, column=column))

    def fill(self, catalog: Catalog) -> None:
        """The whole catalog of the outline shown: the tables opened meanwhile get their columns."""
        self.catalog, waiting, self._waiting = catalog, self._waiting, []
        for node in waiting:
            if node.data is None or node.data.table is None:
                continue
            node.remove_children()
            self._add_columns(node, node.data.table)

    def _add_tables(self, parent: TreeNode[Node], schema: Schema, offset: int) -> None:
        tables = schema.tables[offset : offset + CHUNK]
        for table in tables:
            label = inert_text(table.name, keep_newlines=False)
            if table.kind == "view":
                label.append("  view", "italic dim")
            if table.row_count is not None:
                label.append(f"  {_count(table.row_count)}", "dim")
            expand = table.columns is NOT_READ or bool(table.columns)
            parent.add(label, Node("table", schema=schema, table=table), allow_expand=expand)
        rest = len(schema.tables) - offset - len(tables)
        if rest > 0:
            more = Text(f"… {rest:,} more (enter)", style="italic dim")
            parent.add_leaf(more, Node("more", schema=schema, offset=offset + len(tables)))

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[Node]) -> None:
        node = event.node
        data = node.data
        if data is not None and data.kind == "more" and data.schema is not None and node.parent is not None:
            parent = node.parent
            node.remove()
            self._add_tables(parent, data.schema, data.offset)

    def selected_table(self) -> Table | None:
        node = self.cursor_node
        return node.data.table if node is not None and node.data is not None else None

    def selected_name(self) -> str | None:
        """The SQL identifier of the highlighted table or column, quoted where SQL needs it."""
        from astro_tui.data.catalog_model import quote_ident

        node = self.cursor_node
        if node is None or node.data is None:
            return None
        data = node.data
        if data.kind == "column" and data.column is not None:
            quote = data.table.identifier_quote if data.table is not None else '"'
            return quote_ident(data.column.name, quote)
        if data.kind == "table" and data.table is not None:
            return data.table.sql_name
        if data.kind == "schema" and data.schema is not None:
            return quote_ident(data.schema.name)
        return None


class CatalogPane(Vertical):
    """Tree on top, the highlighted table's card, then the shell."""

    ALLOW_MAXIMIZE = True

    class Card(Message):
        """A table's card, rendered in a worker (`cat`'s text, with the tables referencing it)."""

        def __init__(self, table: Table, card: str) -> None:
            super().__init__()
            self.table = table
            self.card = card

    def __init__(self, session: Session) -> None:
        super().__init__(id="catalog", classes="pane")
        self.border_title = "Catalog"
        self.session = session

    def compose(self) -> ComposeResult:
        with Vertical(id="catalog-top"):
            yield Static(Text("Opening the database…", style="italic"), id="catalog-status")
            yield CatalogTree()
            with VerticalScroll(id="table-card"):
                yield Static(id="table-card-text")
        yield ShellPane()

    def show_failure(self, message: str) -> None:
        self.show_status(f"✗ {message}\nctrl+r tries again")

    def show_status(self, text: str) -> None:
        status = self.query_one("#catalog-status", Static)
        status.update(inert_text(text, "italic"))
        status.display = bool(text)

    def set_catalog(self, catalog: Catalog, after: threading.Event | None = None) -> None:
        """Show the catalog; the whole catalog of the outline shown fills it in, in place."""
        tree = self.query_one(CatalogTree)
        shown = tree.catalog
        if shown is not None and not shown.complete and catalog.complete and _names(shown) == _names(catalog):
            tree.fill(catalog)
            self.show_status("")
            return
        label = self.session.label
        tables = sum(len(s.tables) for s in catalog.schemas)
        self.border_title = Text(f"Catalog · {inert(label, keep_newlines=False)}")
        self.border_subtitle = f"{counted(len(catalog.schemas), 'schema')} · {counted(tables, 'table')}"
        reading = "" if catalog.complete else "reading the columns…"
        self.show_status(reading if tables else "no tables in this database")
        self.query_one(CatalogTree).load(catalog)
        self.query_one(ShellPane).set_session(self.session, after)

    def preview_selected(self) -> bool:
        """The highlighted table's first rows, in the results pane (p); False when none is."""
        table = self.query_one(CatalogTree).selected_table()
        if table is None or self.session.db is None:
            self.app.notify("Highlight a table in the catalog first.", severity="warning")
            return False
        self._preview(table)
        return True

    @work(thread=True, group="preview", exit_on_error=False, description="preview table")
    def _preview(self, table: Table) -> None:
        with contextlib.suppress(AstroError):  # reported as QueryFailed
            self.session.preview(table)

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted[Node]) -> None:
        data = event.node.data
        if data is not None and data.table is not None:
            tree = self.query_one(CatalogTree)
            table = data.table
            if table.columns is NOT_READ and tree.catalog is not None and tree.catalog.complete:
                table = tree.catalog.counterpart(table) or table  # read since: no wait for the shell
            self._render_card(table, self.query_one(ShellPane).shell)

    @work(thread=True, exclusive=True, group="card", exit_on_error=False, description="render card")
    def _render_card(self, table: Table, shell: Any) -> None:
        """The same card `cat` prints, including the tables that reference this one; of a table
        of the outline, once the columns are read."""
        if table.columns is NOT_READ:
            self.post_message(self.Card(table, f"{table.sql_name}\n\nreading the columns…"))
        try:
            card = (shell or self.session.metadata_shell()).card(table)
        except AstroError as exc:  # columns not read: gone from the catalog re-read
            card = f"{table.sql_name}\n\n{error_line(exc)}"
        self.post_message(self.Card(table, card))

    def on_catalog_pane_card(self, message: CatalogPane.Card) -> None:
        message.stop()
        shown = self.query_one(CatalogTree).selected_table()
        if shown is None or shown.sql_name != message.table.sql_name:
            return  # a card whose columns came in after the cursor moved on
        self.query_one("#table-card-text", Static).update(inert_text(message.card.rstrip()))
        card = self.query_one("#table-card")
        card.display = True
        card.scroll_home(animate=False)


def _names(catalog: Catalog) -> list[tuple[str | None, str, tuple[str, ...]]]:
    """What the tree shows before a table is opened: an outline and its whole catalog agree on
    it unless the database changed in between."""
    return [(s.database, s.name, tuple(t.name for t in s.tables)) for s in catalog.schemas]
