"""What provenance costs: rendering typical answers with every value traced, against the renderer
before provenance (its source read from git at the commit before it), interleaved.

Run: uv run python bench/bench_provenance.py [--rounds N]

Each answer renders over real DuckDB results: a sentence of two values, a ranking of
12 regions, a listing of 100 rows × 3 columns, and 1,000 rows joined into one line.
Also printed: the size of `provenance` in `astro ask --json` for the listing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb

from astro_tui.agent import templates
from astro_tui.agent.events import Answer
from astro_tui.agent.provenance import provenance_json
from astro_tui.data.results import QueryResult

BEFORE = "428f479"  # the last commit before provenance
ROOT = Path(__file__).resolve().parent.parent

ANSWERS: dict[str, tuple[dict[str, str], str]] = {
    "sentence (2 values)": (
        {
            "rev": "SELECT 1234567.891::DECIMAL(18,3) AS revenue",
            "n": "SELECT 42 AS orders",
        },
        "Revenue in 2025 was {{ rev.value | money }} across {{ n.value | number }} orders.",
    ),
    "ranking (12 rows × 3)": (
        {
            "top": "SELECT 'region ' || range AS region, range * 1234.5 AS revenue, "
            "range / 12.0 AS share FROM range(12) ORDER BY 2 DESC"
        },
        "{% for r in top.rows %}{{ loop.index }}. {{ r.region }}: {{ r.revenue | money }} "
        "({{ r.share | percent }})\n{% endfor %}{{ top.row_count }} regions, "
        "{{ top.rows | sum(attribute='revenue') | money }} in all.",
    ),
    "listing (100 rows × 3)": (
        {
            "orders": "SELECT range AS id, DATE '2025-01-01' + range::INTEGER AS day, "
            "range * 1.5 AS amount FROM range(100)"
        },
        "{% for r in orders.rows %}- #{{ r.id }} on {{ r.day | date('%b %d') }}: "
        "{{ r.amount | money }}\n{% endfor %}",
    ),
    "join (1,000 values)": (
        {"ids": "SELECT range AS id FROM range(1000)"},
        "{{ ids.rows | map(attribute='id') | join(', ') }}",
    ),
}


def _old_templates() -> ModuleType | None:
    """The renderer before provenance, or None outside a git checkout that has that commit."""
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{BEFORE}:astro_tui/agent/templates.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    spec = importlib.util.spec_from_loader("templates_before_provenance", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    exec(compile(source, f"{BEFORE}:templates.py", "exec"), module.__dict__)
    return module


def _timed(render: Callable[..., Any], *args: Any) -> float:
    started = time.perf_counter()
    render(*args)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    con = duckdb.connect()
    old = _old_templates()
    if old is None:
        print(f"(the renderer before provenance, {BEFORE}, is not in this checkout: new figures only)")
    print(f"{'answer':24} {'traced':>10} {'before':>10} {'ratio':>7}   spans")
    for label, (inputs, template) in ANSWERS.items():
        results = {
            name: QueryResult(sql, con.sql(sql).to_arrow_table(), False, 0.0) for name, sql in inputs.items()
        }
        rendered = templates.render(template, results)
        new_ms: list[float] = []
        old_ms: list[float] = []
        for _ in range(args.rounds):  # interleaved, so both see the same machine
            new_ms.append(_timed(templates.render, template, results))
            if old is not None:
                old_ms.append(_timed(old.render, template, results))
        new = statistics.median(new_ms)
        if old_ms:
            before = statistics.median(old_ms)
            print(f"{label:24} {new:8.3f}ms {before:8.3f}ms {new / before:6.2f}×   {len(rendered.spans):,}")
        else:
            print(f"{label:24} {new:8.3f}ms {'—':>10} {'—':>7}   {len(rendered.spans):,}")
        if label.startswith("listing"):
            answer = Answer("result", rendered.text, True, provenance=rendered.spans)
            size = len(json.dumps(provenance_json(answer), default=str))
            chars = len(rendered.text)
            print(f"{'':24} ask --json provenance: {size:,} bytes for {chars:,} characters of text")


if __name__ == "__main__":
    main()
