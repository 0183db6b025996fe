"""Parquet via ``pyarrow.parquet``: score columns must have a numeric type.

Pages are read with their CRC checksums verified (where the writer stored them), so a
damaged page is an error naming its row group rather than wrong values; text is checked
to be UTF-8 before it is decoded, so a bad byte is named by column and row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import BUDGET_ENV
from calcore.io._columns import check_header_names
from calcore.io._source import Source
from calcore.io._table import RowNames, columns_to_matrix

__all__ = [
    "ParquetLayout",
    "scan_parquet",
    "read_parquet_columns",
    "text_column",
    "check_utf8",
    "valid_utf8",
    "open_parquet",
]


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
    row_groups : tuple of (int, str)
        The first row and name of each row group, when there are several (for messages:
        :class:`calcore.io._table.RowNames`).
    """

    columns: tuple[str, ...]
    types: tuple[str, ...]
    numeric: tuple[bool, ...]
    preview: tuple[tuple[str, ...], ...]
    n_rows: int
    row_groups: tuple[tuple[int, str], ...] = ()


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _brief(exc: BaseException) -> str:
    """An exception's message on one line, at most 200 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def open_parquet(source) -> pq.ParquetFile:
    """A Parquet file (a path or a buffer) whose pages are checked against their CRC
    checksums as they are read: pyarrow writes them only on request and verifies them
    only on request, so without this a flipped bit in a page is read as a wrong value."""
    return pq.ParquetFile(source, page_checksum_verification=True)


def non_utf8_name(name: str, exc: UnicodeDecodeError) -> CalcoreError:
    """The error for a schema whose column names (class names, with the score prefix) are
    not UTF-8: pyarrow cannot decode the schema, so the column cannot be named."""
    return CalcoreError(
        f"{name}: a column name in the file's schema is not valid UTF-8 ({_brief(exc)}), "
        f"which Parquet names must be. Decode the names with their real encoding (e.g. "
        f"raw.decode('cp1252')) and write the file again."
    )


def _open(src: Source) -> pq.ParquetFile:
    try:
        return open_parquet(pa.BufferReader(src.data))
    except UnicodeDecodeError as exc:
        raise non_utf8_name(src.name, exc) from None
    except (pa.ArrowException, OSError) as exc:
        raise CalcoreError(
            f"{src.name}: not a readable Parquet file ({_brief(exc)}). Re-export it, or give a "
            f"CSV file the .csv extension."
        ) from None


def _corrupt(src: Source, exc: BaseException) -> CalcoreError:
    return CalcoreError(
        f"{src.name}: the Parquet file is corrupt or uses an unsupported feature; reading its "
        f"data failed ({_brief(exc)}). Re-export it (e.g. df.to_parquet(path))."
    )


def unreadable_chunk(name: str, what: str, first_row: int, exc: BaseException) -> CalcoreError:
    """The error for a chunk of a file (``what``: ``"row group 3"``) whose data cannot be
    read (a damaged page, a failed checksum), loaded whole or streamed alike."""
    return CalcoreError(
        f"{name}, {what} (rows from {first_row}): cannot be read ({_brief(exc)}). The file "
        f"is damaged: re-export it. No result was computed."
    )


def _damaged_row_group(src: Source, columns: list[str], exc: BaseException) -> CalcoreError:
    """The error for a file whose columns failed to read, naming the first row group that
    fails on its own (a bad page, checksum or encoding), with its first row."""
    pf = _open(src)
    first = 0
    for g in range(pf.num_row_groups):
        try:
            pf.read_row_group(g, columns=columns, use_threads=False)
        except (pa.ArrowException, OSError, UnicodeDecodeError) as found:
            return unreadable_chunk(src.name, f"row group {g}", first, found)
        first += pf.metadata.row_group(g).num_rows
    return _corrupt(src, exc)


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
    try:
        schema = pf.schema_arrow
    except UnicodeDecodeError as exc:
        raise non_utf8_name(src.name, exc) from None
    except pa.ArrowException as exc:
        raise _corrupt(src, exc) from None
    columns = tuple(schema.names)
    check_header_names(columns, source=src.name)
    if meta.num_rows == 0:
        raise CalcoreError(f"{src.name}: the Parquet file has columns {list(columns)} but no rows.")
    try:
        first = next(pf.iter_batches(batch_size=preview_rows), None)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _damaged_row_group(src, list(columns), exc) from None
    preview = ()
    groups = _row_group_names(meta)
    if first is not None:
        for j, name in enumerate(columns):
            rows = RowNames(csv=False, chunks=groups)
            check_utf8(first.column(j), source=src.name, name=name, rows=rows)
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
        groups,
    )


def _row_group_names(meta) -> tuple[tuple[int, str], ...]:
    """``(first row, "row group g")`` of each row group, when there are several."""
    if meta.num_row_groups < 2:
        return ()
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return tuple((int(start), f"row group {g}") for g, start in enumerate(starts))


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
    names = list(dict.fromkeys([*floats, *texts, *extras]))
    try:
        table = _open(src).read(columns=names)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _damaged_row_group(src, names, exc) from None
    rows = RowNames(csv=False, chunks=layout.row_groups)
    try:
        scores = columns_to_matrix(table, list(floats))
        texts = {c: text_column(table.column(c), source=src.name, name=c, rows=rows) for c in texts}
        for c in extras:
            check_utf8(table.column(c), source=src.name, name=c, rows=rows)
        raw = {c: table.column(c) for c in extras}
    except CalcoreError:
        raise
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _corrupt(src, exc) from None
    return scores, texts, raw


def text_column(
    column: pa.ChunkedArray, *, source: str, name: str, rows: RowNames | None = None
) -> np.ndarray:
    """A label or split column as a str array; integral floats become integers first.

    ``rows`` names the column's rows in messages (default: a whole file's, from 0).

    Raises
    ------
    CalcoreError
        A float that is not an integer, or text that is not UTF-8 (file, column, row).
    """
    rows = rows or RowNames(csv=False)
    check_utf8(column, source=source, name=name, rows=rows)
    t = column.type
    if pa.types.is_floating(t):
        values = column.to_numpy(zero_copy_only=False)
        ok = np.isfinite(values) & (values == np.round(values))
        if not ok.all():
            i = int(np.argmax(~ok))
            raise CalcoreError(
                f"{source}, {rows(i)}, column {name!r}: value "
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
        if not valid_utf8(chunk.dictionary):  # an unused entry that is not UTF-8 (checked)
            parts.append(
                pc.fill_null(chunk.cast(chunk.type.value_type), "").to_numpy(zero_copy_only=False)
            )
            continue
        words = pc.fill_null(chunk.dictionary, "").to_numpy(zero_copy_only=False)
        words = np.append(np.asarray(words, dtype=object), "")  # index -1: missing
        parts.append(words[pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False)])
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def valid_utf8(array: pa.Array) -> bool:
    """Whether every value of a text array is UTF-8 (any other array: whether it is valid)."""
    try:
        array.validate(full=True)  # checks every string's bytes (C++, no decoding)
    except pa.ArrowInvalid:
        return False
    return True


def _first_invalid(array: pa.Array) -> int:
    """The index of the first value of an invalid text array that is not UTF-8: halves of
    the array validated in turn (a few dozen passes of C++, no decoding in Python)."""
    lo, hi = 0, len(array)  # array[lo:hi] holds an invalid value
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if valid_utf8(array.slice(lo, mid - lo)):
            lo = mid
        else:
            hi = mid
    return lo


def _suspect_rows(chunk: pa.DictionaryArray) -> pa.Array | None:
    """A dictionary chunk's text row by row when its dictionary holds an entry that is not
    UTF-8 (which may be unused), else None: every row's text is then UTF-8."""
    if valid_utf8(chunk.dictionary):
        return None
    return chunk.cast(chunk.type.value_type)


def check_utf8(column, *, source: str, name: str, rows=None) -> None:
    """Refuse a text column (plain or dictionary-encoded) with a value that is not UTF-8,
    naming the file, the column and the first row holding one (``rows``: the row names,
    default a whole file's). Unused dictionary entries are not values: they are ignored.

    Raises
    ------
    CalcoreError
        The first row whose text is not valid UTF-8, with the fix.
    """
    t = column.type
    dictionary = pa.types.is_dictionary(t)
    if not _is_text(t.value_type if dictionary else t):
        return
    rows = rows or RowNames(csv=False)
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    first = 0
    for chunk in chunks:
        values = _suspect_rows(chunk) if dictionary else chunk
        if values is not None and not valid_utf8(values):
            i = first + _first_invalid(values)
            raise CalcoreError(
                f"{source}, {rows(i)}, column {name!r}: the text is not valid UTF-8, which "
                f"Parquet text must be. Decode the values with their real encoding (e.g. "
                f"raw.decode('cp1252')) before writing the file."
            )
        first += len(chunk)
