"""Arrow's conversions from Python values without pandas: its import is ~50 MB and a second
or more under load, and nothing the app converts (a result's widths, its display copy, the
table widget's own measures) needs it.

pyarrow decides once per process, at its first conversion from Python values (`pa.array`,
`pa.scalar`, a compute function given a Python number), whether pandas is installed, and
imports it to find out. `decide` makes that look find none: pandas is withheld (an import
hook) only for it, so anything else in the process may still load it. Asking pyarrow for
pandas itself (`to_pandas`, `Table.from_pandas`) imports it then, and from then on pyarrow
uses it as before; a pandas object handed to `pa.array` before that would be read as a plain
sequence, which is why only the app process, which holds none, decides this. Nothing
changes when pandas is already loaded.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

_lock = threading.Lock()
_decided = False


class _Withheld(MetaPathFinder):
    """An import hook that finds pandas missing (first in line while pyarrow looks)."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def decide() -> None:
    """Let pyarrow look for pandas now, and find none (unless pandas is already loaded); once."""
    global _decided
    if _decided:
        return
    with _lock:
        if _decided:
            return
        import pyarrow as pa

        if "pandas" not in sys.modules:
            withheld = _Withheld()
            sys.meta_path.insert(0, withheld)
            try:
                pa.array([0])  # its first look; if it has looked before, nothing is imported here
            finally:
                sys.meta_path.remove(withheld)
        _decided = True
