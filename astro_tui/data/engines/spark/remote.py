"""The few Spark Connect client pieces the engine needs beyond its public API, in one place.

- `relation`: a DataFrame over SQL text that is a *relation* of the plan, not the
  `SqlCommand` `spark.sql()` sends, which the server executes at once when the
  text is a command. The text is parsed where the plan is analyzed or run.
- `explain`: Spark's parsed, analyzed, optimized and physical plans of a frame,
  from an AnalyzePlan request (analysis without executing commands).
- `batches`: the result as Arrow record batches as they arrive, so the engine can
  stop reading at a byte budget; Arrow's chunking of large batches is turned
  off (`no_chunking`), so no one batch grows past gRPC's message limit (128 MiB)
  while it is reassembled.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa


def relation(session: Any, text: str) -> Any:
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.plan import SQL

    return DataFrame(SQL(text), session)


def explain(frame: Any) -> str:
    return str(frame._explain_string(extended=True))


def batches(frame: Any) -> Iterator[pa.Table | pa.Schema]:
    """The result's Arrow schema (as `toArrow` would cast to) when the server sends it, and its batches."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    client = frame._session.client
    plan = frame._plan.to_proto(client)
    for item in client.to_table_as_iterator(plan, {}):
        if isinstance(item, StructType):
            yield to_arrow_schema(item, error_on_duplicated_field_names_in_struct=True, timezone="UTC")
        elif isinstance(item, pa.Table):
            yield item


def arrow_schema(frame: Any) -> pa.Schema:
    """The schema by a request of its own, for a result the server sent without one."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC")


def no_chunking(session: Any) -> None:
    client = session.client
    if hasattr(client, "_allow_arrow_batch_chunking"):
        client._allow_arrow_batch_chunking = False
