"""The hostile Spark corpus (tests/data/hostile_spark.json) and how a test sees that nothing leaked."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support import DATA
from tests.support.spark_server import SparkServer

CORPUS = json.loads((DATA / "hostile_spark.json").read_text())


REFUSED = [e for e in CORPUS if not e.get("inert")]


INERT = [e for e in CORPUS if e.get("inert")]
"""`${…}` texts: refused where substitution is not proved off, plain text where it is."""


AIMED_AT = [Path("/tmp/astro-pwned"), Path("/tmp/astro-exfil")]


def leaked_values(server: SparkServer) -> list[str]:
    """What the outside test read through `${…}` and reflection: the server's paths."""

    java_home = os.environ.get("JAVA_HOME") or ""
    return [v for v in (str(server.warehouse), str(Path.home()), java_home) if len(v) > 3]


RUNAWAY = "SELECT count(*) AS n FROM range(100000000000) AS a WHERE a.id % 7 = 3"
