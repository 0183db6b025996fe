"""Metadata columns of Parquet and Arrow files, from their Arrow arrays.

Typed columns keep their type: booleans, integers (exact, never through float64),
floats, dates and timestamps
(converted to UTC); string columns are read as text cells
(:func:`calcore.predictions.metadata.metadata_from_text`: the same rules as CSV).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from calcore.predictions.metadata import (
    MetadataColumn,
    integer_column,
    metadata_from_text,
    numeric_column,
)

__all__ = ["metadata_from_arrow"]


def metadata_from_arrow(name: str, column) -> MetadataColumn:
    """A metadata column from an Arrow (chunked) array of a Parquet or Arrow file.

    Examples
    --------
    >>> import pyarrow as pa
    >>> metadata_from_arrow("ok", pa.chunked_array([[True, None, False]])).describe()
    'ok: boolean, 2 values, 1 missing'
    """
    t = column.type
    if pa.types.is_dictionary(t):
        column, t = column.cast(t.value_type), t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return metadata_from_text(name, column.to_numpy(zero_copy_only=False))
    if pa.types.is_boolean(t):
        codes = pc.fill_null(pc.cast(column, pa.int32()), -1).to_numpy(zero_copy_only=False)
        return MetadataColumn.counted(name, "boolean", codes.astype(np.int32), ("False", "True"))
    if pa.types.is_integer(t):
        missing = column.is_null().to_numpy(zero_copy_only=False)
        return integer_column(name, pc.fill_null(column, 0).to_numpy(zero_copy_only=False), missing)
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        values = pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)  # null -> NaN
        return numeric_column(name, values, integer=False)
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        if pa.types.is_timestamp(t) and t.tz is not None:
            column = pc.cast(column, pa.timestamp(t.unit))  # stored as UTC instants
        values = column.to_numpy(zero_copy_only=False).astype("datetime64[s]")
        return MetadataColumn.counted(name, "datetime", values)
    return MetadataColumn(name, "other", None, (), 0, int(column.null_count))
