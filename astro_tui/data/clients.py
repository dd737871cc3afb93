"""How the engine's own client reaches the same data from outside astro, for a replay.

An engine describes its data as plain JSON (`Engine.client_info`: files, or a URL
without its secret), which a saved conversation keeps. `client_code` turns that
back into code for the engine's own client: a Python cell that connects and reads
a query into a pandas DataFrame, and the preamble of a script for the engine's
command-line client. Every path and URL enters the code as a quoted literal, so a
hostile conversation file cannot write code through them. Engine knowledge stays
here, in `data/`: the replay writers above only paste what this returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from astro_tui.data.errors import TargetError


@dataclass(frozen=True, slots=True)
class ClientCode:
    """What a replay needs to reach the data without astro."""

    targets: tuple[str, ...]
    """What `astro` reopens the data with (`--check`): no secret in it."""
    requirements: tuple[str, ...]
    """The packages the Python code imports besides the standard library."""
    connect: str
    """Python defining `read(sql) -> pandas.DataFrame`, read-only where the engine can be."""
    script_client: str
    """The command-line client a SQL script is for, as `client_scripts` names it."""
    script_setup: tuple[str, ...]
    """The statements a SQL script starts with (attaching the data), without their `;`."""
    script_run: str
    """How to run the script, `{file}` standing for its path."""
    text_type: str
    """The SQL type a value is cast to, to print it in a check query."""
    quote: str = '"'
    """The engine's quote for a name."""
    secret_note: str = ""
    """Where the password or token comes from at run time, when the engine needs one."""
    script_commands: tuple[str, ...] = ()
    """The client's own commands a script starts with, one a line (psql's `\\set ON_ERROR_STOP on`)."""
    script_ascii: bool = False
    """The client decodes the file in the platform's encoding: astro's own literals stay ASCII."""


def client_code(info: Any) -> ClientCode:
    """The code for a saved `client_info`; TargetError when it is not one astro wrote."""
    if not isinstance(info, Mapping):
        raise TargetError("the conversation does not say how to reach its data")
    engine = info.get("engine")
    if engine == "duckdb":
        return _duckdb(info)
    url = info.get("url")
    if engine in ("postgresql", "spark") and isinstance(url, str):
        if not url or any(ch.isspace() or not ch.isprintable() for ch in url):
            raise TargetError("the conversation's URL is not one astro writes")
        return _postgres(url) if engine == "postgresql" else _spark(url)
    raise TargetError(f"the conversation's data is of an unknown kind ({str(engine)[:40]!r})")


_READERS = {"csv": "read_csv_auto", "parquet": "read_parquet", "json": "read_json_auto"}


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _duckdb(info: Mapping[str, Any]) -> ClientCode:
    files = info.get("files")
    if not isinstance(files, list) or not files:
        raise TargetError("the conversation does not say which DuckDB files it read")
    parsed: list[tuple[str, str, list[str]]] = []
    for item in files:
        name, kind, paths = (item.get(k) for k in ("name", "kind", "paths")) if isinstance(item, dict) else ()
        if not (isinstance(name, str) and kind in ("duckdb", *_READERS) and isinstance(paths, list)):
            raise TargetError("the conversation's DuckDB files are not as astro writes them")
        if not paths or not all(isinstance(p, str) for p in paths):
            raise TargetError("the conversation's DuckDB files are not as astro writes them")
        parsed.append((name, kind, paths))
    steps: list[str] = []
    for name, kind, paths in parsed:
        if kind == "duckdb":
            steps.append(f"ATTACH {_sql_literal(paths[0])} AS {_sql_ident(name)} (READ_ONLY)")
        else:
            listed = ", ".join(_sql_literal(p) for p in paths)
            steps.append(f"CREATE VIEW {_sql_ident(name)} AS SELECT * FROM {_READERS[kind]}([{listed}])")
    single = len(parsed) == 1 and parsed[0][1] == "duckdb"
    if single:
        connect = f"con = duckdb.connect({parsed[0][2][0]!r}, read_only=True)\n"
        steps.append(f"USE {_sql_ident(parsed[0][0])}")
    else:
        connect = "con = duckdb.connect()\n" + "".join(f"con.execute({s!r})\n" for s in steps)
    code = (
        "import duckdb\nimport pandas as pd\n\n"
        + connect
        + "\n\ndef read(sql):\n    return con.execute(sql).df()\n"
    )
    targets = tuple(p for _, _, paths in parsed for p in paths)
    return ClientCode(
        targets=targets,
        requirements=("duckdb", "pandas"),
        connect=code,
        script_client="duckdb",
        script_setup=tuple(steps),
        script_run="duckdb -f {file}",
        text_type="VARCHAR",
    )


def _postgres(url: str) -> ClientCode:
    code = (
        "import os\n\nimport adbc_driver_postgresql.dbapi\nimport pandas as pd\n\n"
        "# The password comes from PGPASSWORD or ~/.pgpass, as for psql; ASTRO_REPLAY_URL overrides.\n"
        f"con = adbc_driver_postgresql.dbapi.connect(os.environ.get('ASTRO_REPLAY_URL', {url!r}))\n"
        "with con.cursor() as cur:\n"
        "    cur.execute('SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY')\n"
        "con.commit()\n\n\n"
        "def read(sql):\n"
        "    with con.cursor() as cur:\n"
        "        cur.execute(sql)\n"
        "        frame = cur.fetch_arrow_table().to_pandas()\n"
        "    con.rollback()\n"
        "    return frame\n"
    )
    return ClientCode(
        targets=(url,),
        requirements=("adbc-driver-postgresql", "pyarrow", "pandas"),
        connect=code,
        script_client="psql",
        script_setup=("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",),
        script_run="psql " + _shell_quote(url) + " -X -f {file}",
        text_type="TEXT",
        secret_note="the password comes from PGPASSWORD or ~/.pgpass",
        # after the person's ~/.psqlrc: stop at an error, a statement ends at `;` only, UTF-8 lexing
        script_commands=("\\set ON_ERROR_STOP on", "\\set SINGLELINE off", "\\encoding UTF8"),
    )


def _spark(url: str) -> ClientCode:
    code = (
        "import os\n\nimport pandas as pd\nfrom pyspark.sql import SparkSession\n\n"
        "# A token goes in SPARK_REMOTE (sc://host:15002/;token=…), which overrides the URL.\n"
        f"spark = SparkSession.builder.remote(os.environ.get('SPARK_REMOTE', {url!r})).getOrCreate()\n\n\n"
        "def read(sql):\n    return spark.sql(sql).toPandas()\n"
    )
    return ClientCode(
        targets=(url,),
        requirements=("pyspark-client", "pandas"),
        connect=code,
        script_client="spark-sql",
        script_setup=(),
        script_run="spark-sql -f {file}",
        text_type="STRING",
        quote="`",
        secret_note="a token goes in SPARK_REMOTE",
        script_ascii=True,
    )


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
