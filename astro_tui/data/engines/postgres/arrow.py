"""Arrow from the ADBC driver made plain for the layers above: no PostgreSQL extension types.

The driver hands types Arrow has no name for (numeric, inet, bit, json…) as
extension types over their storage. `numeric` becomes a decimal when its values
fit one (the scale is the largest seen), else float64; the others become
their storage (text, or bytes), which every view of a result can show.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

_MAX_PRECISION = 38


def normalize(table: pa.Table) -> pa.Table:
    if not any(isinstance(f.type, pa.ExtensionType) or _is_extension(f.type) for f in table.schema):
        return table
    columns = []
    fields = []
    for field, column in zip(table.schema, table.columns, strict=True):
        if not _is_extension(field.type):
            columns.append(column)
            fields.append(field)
            continue
        storage = pa.chunked_array([c.storage for c in column.chunks], type=field.type.storage_type)
        if _type_name(field.type) == "numeric":
            storage = _numeric(storage)
        columns.append(storage)
        fields.append(pa.field(field.name, storage.type, field.nullable, field.metadata))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, table.schema.metadata))


def _is_extension(data_type: pa.DataType) -> bool:
    return isinstance(data_type, pa.BaseExtensionType)


def _type_name(data_type: pa.DataType) -> str:
    return str(getattr(data_type, "type_name", "") or "")


def _numeric(text: pa.ChunkedArray) -> pa.ChunkedArray:
    """Exact decimals where the values allow, float64 for NaN/Infinity or more than 38 digits."""
    if len(text) == 0 or text.null_count == len(text):
        return text.cast(pa.decimal128(_MAX_PRECISION, 0)) if len(text) == 0 else text.cast(pa.float64())
    fraction = pc.utf8_length(pc.replace_substring_regex(text, r"^[^.]*\.?", ""))
    scale = int(pc.max(fraction).as_py() or 0)
    if scale <= _MAX_PRECISION:
        try:
            return text.cast(pa.decimal128(_MAX_PRECISION, scale))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    try:
        return text.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return text
