"""A replay as a marimo notebook: a `.py` file that `marimo edit` opens and `python FILE.py` runs.

A marimo cell is a function whose arguments are the names it reads from other
cells and whose return is the names it gives them; marimo orders the cells by
those names, so each name is defined once in the whole file (the writers name
DataFrames uniquely for that). Run as a script, a failing `assert` stops it with
the number that moved.
"""

from __future__ import annotations

import textwrap

from astro_tui.replay.cells import Cell, notebook_cells
from astro_tui.replay.judge import Judge
from astro_tui.replay.model import Replay

MARIMO_VERSION = "0.25"


def marimo_text(replay: Replay, judge: Judge | None = None) -> str:
    """The notebook; ReplayError when the guard (`judge`, none: refused) refuses a query."""
    cells = [Cell("code", "import marimo as mo", ("mo",)), *notebook_cells(replay, judge)]
    parts = [f'import marimo\n\n__generated_with = "{MARIMO_VERSION}"\napp = marimo.App()\n']
    for cell in cells:
        if cell.kind == "markdown":
            cell = Cell("code", f"mo.md({cell.source!r})", (), ("mo",))
        parts.append(_function(cell))
    parts.append('\nif __name__ == "__main__":\n    app.run()\n')
    return "\n".join(parts)


def _function(cell: Cell) -> str:
    uses = ", ".join(dict.fromkeys(cell.uses))
    body = cell.source.rstrip()
    returns = f"return ({', '.join(cell.defines)},)" if cell.defines else "return"
    return (
        f"\n@app.cell\ndef _({uses}):\n"
        + textwrap.indent(body, "    ", lambda line: True)
        + f"\n    {returns}\n"
    )
