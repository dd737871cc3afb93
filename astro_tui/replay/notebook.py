"""A replay as a Jupyter notebook (`.ipynb`), written with nbformat and valid against its schema."""

from __future__ import annotations

import nbformat
from nbformat import v4

from astro_tui.replay.cells import notebook_cells
from astro_tui.replay.judge import Judge
from astro_tui.replay.model import Replay


def notebook_text(replay: Replay, judge: Judge | None = None) -> str:
    """The notebook; ReplayError when the guard (`judge`, none: refused) refuses a query."""
    cells = [
        v4.new_markdown_cell(cell.source) if cell.kind == "markdown" else v4.new_code_cell(cell.source)
        for cell in notebook_cells(replay, judge)
    ]
    book = v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(book)
    return nbformat.writes(book)
