"""pyarrow's first look for pandas finds none in the app process (`data/without_pandas.py`),
and pandas still comes whole when asked for. In processes of their own: pandas may be loaded
in this one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_SCRIPT = """
    import json, sys
    import pyarrow as pa
    import pyarrow.compute as pc
    from astro_tui.data import without_pandas

    without_pandas.decide()
    without_pandas.decide()  # once
    seen = {"decided": "pandas" in sys.modules}
    values = pa.array([1, None, 3])
    filled = values.fill_null(0)  # a Python value: what the table widget's measure does
    seen["converted"] = [filled.to_pylist(), pc.max(values).as_py(), "pandas" in sys.modules]
    frame = pa.table({"a": [1, 2]}).to_pandas()  # asked for: pandas comes, and stays usable
    import pandas as pd

    seen["asked"] = [type(frame).__name__, frame["a"].tolist(), "pandas" in sys.modules]
    seen["after"] = pa.types.is_dictionary(pa.array(pd.Series(["x", "y"], dtype="category")).type)
    print(json.dumps(seen))
"""


def _run(script: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_conversions_need_no_pandas_and_pandas_comes_when_asked_for() -> None:
    assert _run(_SCRIPT) == {
        "decided": False,
        "converted": [[1, 0, 3], 3, False],
        "asked": ["DataFrame", [1, 2], True],
        "after": True,  # a pandas categorical read as one, not as a list of strings
    }


def test_nothing_changes_when_pandas_is_loaded() -> None:
    script = """
        import json
        import pandas as pd
        import pyarrow as pa
        from astro_tui.data import without_pandas

        without_pandas.decide()
        print(json.dumps(pa.types.is_dictionary(pa.array(pd.Series(["x"], dtype="category")).type)))
    """
    assert _run(script) is True
