"""Arrow without NumPy, for a short command: NumPy's import was most of pyarrow's (~140 of ~175 ms).

pyarrow runs without NumPy when it cannot import it, and reading DuckDB's rows and
printing them needs none. NumPy is made unimportable only while a module of pyarrow
is imported, so anything else in the process may still load it; pyarrow itself stays
without it in that process (`to_numpy()` raises), which is why only a short command
that needs none imports it this way.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


def import_module(name: str) -> ModuleType:
    """`name` (pyarrow or one of its modules), imported without NumPy unless NumPy is loaded or
    pyarrow already runs with it."""
    lib = sys.modules.get("pyarrow.lib")
    if "numpy" in sys.modules or (lib is not None and getattr(lib, "np", None) is not None):
        return importlib.import_module(name)
    sys.modules["numpy"] = None  # type: ignore[assignment]
    try:
        return importlib.import_module(name)
    finally:
        del sys.modules["numpy"]
