"""Parquet via ``pyarrow.parquet``: score columns must have a numeric type."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from calcore._errors import CalcoreError
from calcore.io._budget import BUDGET_ENV
from calcore.io._columns import check_header_names
from calcore.io._source import Source
from calcore.io._table import columns_to_matrix

__all__ = ["ParquetLayout", "scan_parquet", "read_parquet_columns", "text_column"]


@dataclass(frozen=True)
class ParquetLayout:
    """Schema, row count and the first rows of a Parquet file.

    Attributes
    ----------
    columns : tuple of str
    types : tuple of str
        Arrow type of each column, as text.
    numeric : tuple of bool
        Whether each column has an integer, floating or decimal type.
    preview : tuple of tuple of str
    n_rows : int
    """

    columns: tuple[str, ...]
    types: tuple[str, ...]
    numeric: tuple[bool, ...]
    preview: tuple[tuple[str, ...], ...]
    n_rows: int


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _brief(exc: BaseException) -> str:
    """An exception's message on one line, at most 200 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _open(src: Source) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(pa.BufferReader(src.data))
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # bad bytes in a name
        raise CalcoreError(
            f"{src.name}: not a readable Parquet file ({_brief(exc)}). Re-export it, or give a "
            f"CSV file the .csv extension."
        ) from None


def _corrupt(src: Source, exc: BaseException) -> CalcoreError:
    return CalcoreError(
        f"{src.name}: the Parquet file is corrupt or uses an unsupported feature; reading its "
        f"data failed ({_brief(exc)}). Re-export it (e.g. df.to_parquet(path))."
    )


def scan_parquet(src: Source, *, max_decoded_bytes: int, preview_rows: int = 100) -> ParquetLayout:
    """Read a Parquet file's schema and first rows, after checking its decoded size.

    Raises
    ------
    CalcoreError
        Unreadable file, blank/duplicate column names, no rows, or a declared
        uncompressed size above ``max_decoded_bytes``.
    """
    if not src.data:
        raise CalcoreError(
            f"{src.name}: the file is empty (0 bytes). Upload the file with the data."
        )
    pf = _open(src)
    meta = pf.metadata
    declared = sum(meta.row_group(k).total_byte_size for k in range(meta.num_row_groups))
    if declared > max_decoded_bytes:
        raise CalcoreError(
            f"{src.name}: the Parquet metadata declares {declared:,} bytes of uncompressed data, "
            f"more than max_decoded_bytes={max_decoded_bytes:,}; refusing to read it. If you "
            f"trust the file, raise the budget (max_decoded_bytes=... or {BUDGET_ENV})."
        )
    schema = pf.schema_arrow
    columns = tuple(schema.names)
    check_header_names(columns, source=src.name)
    if meta.num_rows == 0:
        raise CalcoreError(f"{src.name}: the Parquet file has columns {list(columns)} but no rows.")
    try:
        first = next(pf.iter_batches(batch_size=preview_rows), None)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _corrupt(src, exc) from None
    preview = ()
    if first is not None:
        cols = [first.column(j).to_pylist() for j in range(first.num_columns)]
        preview = tuple(
            tuple("" if v is None else str(v) for v in row) for row in zip(*cols, strict=True)
        )
    return ParquetLayout(
        columns,
        tuple(str(t) for t in schema.types),
        tuple(_is_numeric(t) for t in schema.types),
        preview,
        meta.num_rows,
    )


def non_numeric_scores(source: str, column: str, type_name) -> CalcoreError:
    """The error for a score column stored as text (or any non-numeric Arrow type)."""
    return CalcoreError(
        f"{source}, column {column!r}: has type {type_name}, but score columns must "
        f"be numeric. Store the scores as numbers, e.g. "
        f"df[{column!r}] = df[{column!r}].astype('float64') before df.to_parquet(...)."
    )


def read_parquet_columns(
    src: Source, layout: ParquetLayout, *, floats, texts, extras=()
) -> tuple[np.ndarray, dict[str, np.ndarray], dict]:
    """Read score columns as one float64 matrix, ``texts`` columns as text and ``extras``
    (metadata) as they are stored (Arrow chunked arrays).

    Raises
    ------
    CalcoreError
        A score column whose type is not numeric (named, with the fix), or a
        non-integral float label.
    """
    position = {c: j for j, c in enumerate(layout.columns)}
    for col in floats:
        j = position[col]
        if not layout.numeric[j]:
            raise non_numeric_scores(src.name, col, layout.types[j])
    try:
        table = _open(src).read(columns=list(dict.fromkeys([*floats, *texts, *extras])))
        scores = columns_to_matrix(table, list(floats))
        texts = {c: text_column(table.column(c), source=src.name, name=c) for c in texts}
        raw = {c: table.column(c) for c in extras}
    except CalcoreError:
        raise
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _corrupt(src, exc) from None
    return scores, texts, raw


def text_column(
    column: pa.ChunkedArray, *, source: str, name: str, first_row: int = 0
) -> np.ndarray:
    """A label or split column as a str array; integral floats become integers first.

    ``first_row`` is the file row of the column's first value (for messages on batches).
    """
    t = column.type
    if pa.types.is_floating(t):
        values = column.to_numpy(zero_copy_only=False)
        ok = np.isfinite(values) & (values == np.round(values))
        if not ok.all():
            i = int(np.argmax(~ok))
            raise CalcoreError(
                f"{source}, row {first_row + i} (0-based), column {name!r}: value "
                f"{float(values[i])!r} is "
                f"neither a class name nor an integer class index. Fix the value."
            )
        column = pa.chunked_array([pa.array(values.astype(np.int64))])
    if pa.types.is_dictionary(column.type):
        value_type = column.type.value_type
        if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
            return _dictionary_text(column)
        column = column.cast(value_type)
    text = pc.fill_null(pc.cast(column, pa.string()), "")  # missing -> '' (reported as a bad value)
    return text.to_numpy(zero_copy_only=False)


def _dictionary_text(column: pa.ChunkedArray) -> np.ndarray:
    """A dictionary-encoded text column as a str array, missing values as ``""``: each
    chunk's few dictionary values are decoded once and indexed (casting the whole column
    to text took a fifth of a streamed pass over a 10M-row file)."""
    parts = []
    for chunk in column.chunks:
        words = pc.fill_null(chunk.dictionary, "").to_numpy(zero_copy_only=False)
        words = np.append(np.asarray(words, dtype=object), "")  # index -1: missing
        parts.append(words[pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False)])
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)
