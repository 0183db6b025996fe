"""CSV: header sniffing, a fast typed read with pyarrow, and error diagnosis.

Reader choice (measured by ``benchmarks/bench_io.py`` on this 2-core machine):
``pyarrow.csv`` with explicit column types beat pandas' C engine, in
particular on wide files (50,000 x 1,000: pandas spent most of its time once a
text label column was present). Score columns are read straight to float64;
a cell that does not parse makes the whole read fail, and only then
:func:`_diagnose` re-reads the text to name the first offending cell, so the
fast path has no per-row Python and nothing is coerced silently.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from calcore._errors import CalcoreError
from calcore.io._columns import check_header_names
from calcore.io._source import Source, misnamed_binary
from calcore.io._table import columns_to_matrix

__all__ = ["CsvLayout", "scan_csv", "read_csv_columns"]

_BOM = b"\xef\xbb\xbf"
_DELIMITERS = (",", ";", "\t")
_WHITESPACE = frozenset(b" \t\r\n")


@dataclass(frozen=True)
class CsvLayout:
    """Where the data is and what the header says.

    Attributes
    ----------
    body_start, body_end : int
        Byte range of the data lines (after the header line, before trailing
        blank lines).
    delimiter : str
    columns : tuple of str
    preview : tuple of tuple of str
        The first data rows as text (at most ``preview_rows``).
    n_rows : int
    """

    body_start: int
    body_end: int
    delimiter: str
    columns: tuple[str, ...]
    preview: tuple[tuple[str, ...], ...]
    n_rows: int


def _utf8_error(source: str, data: bytes, exc: UnicodeDecodeError, base: int) -> CalcoreError:
    offset = base + exc.start
    line = data.count(b"\n", 0, offset) + 1
    return CalcoreError(
        f"{source}: byte {offset} (line {line}) is not valid UTF-8 (byte 0x{data[offset]:02x}). "
        f"Re-save the file as UTF-8 (e.g. 'CSV UTF-8' in Excel, or "
        f"df.to_csv(..., encoding='utf-8'))."
    )


def _decode(source: str, data: bytes, start: int, end: int) -> str:
    try:
        return data[start:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(source, data, exc, start) from None


def _sniff_delimiter(source: str, line: str) -> str:
    counts = {d: line.count(d) for d in _DELIMITERS}
    best = max(_DELIMITERS, key=lambda d: counts[d])  # ties: comma first
    if counts[best] == 0:
        raise CalcoreError(
            f"{source}: the header (line 1) {line[:80]!r} has a single column. Separate "
            f"columns with commas, semicolons or tabs; a label column and one score column per "
            f"class are needed."
        )
    return best


def _header(source: str, data: bytes) -> tuple[int, str, tuple[str, ...], int]:
    """Return (start of header, delimiter, columns, start of the body)."""
    if not data:
        raise CalcoreError(f"{source}: the file is empty (0 bytes). Upload the file with the data.")
    kind = misnamed_binary(data)
    if kind:
        raise CalcoreError(
            f"{source}: this is {kind}, not a CSV file. Give it the right extension "
            f"(.npz or .parquet)."
        )
    start = len(_BOM) if data.startswith(_BOM) else 0
    nl = data.find(b"\n", start)
    stop = len(data) if nl < 0 else nl
    line = _decode(source, data, start, stop).rstrip("\r")
    if not line.strip():
        raise CalcoreError(
            f"{source}: line 1 (the header) is blank. The first line must name the columns."
        )
    delimiter = _sniff_delimiter(source, line)
    columns = tuple(c.strip() for c in next(csv.reader([line], delimiter=delimiter)))
    check_header_names(columns, source=source)
    return start, delimiter, columns, stop + 1


def _preview(source: str, data: bytes, start: int, end: int, delimiter: str, n: int):
    stop = start
    for _ in range(n):
        nl = data.find(b"\n", stop, end)
        if nl < 0:
            stop = end
            break
        stop = nl + 1
    text = _decode(source, data, start, stop)
    return tuple(tuple(r) for r in csv.reader(text.splitlines(), delimiter=delimiter))


def scan_csv(src: Source, *, preview_rows: int = 100) -> CsvLayout:
    """Read the header and the first rows of a CSV file, without reading all values.

    Raises
    ------
    CalcoreError
        Empty file, binary file named .csv, blank/duplicate/undelimited header,
        non-UTF-8 header or preview, header without data rows.
    """
    data = src.data
    _, delimiter, columns, body_start = _header(src.name, data)
    end = len(data)
    while end > body_start and data[end - 1] in _WHITESPACE:  # trailing blank lines only
        end -= 1
    if end <= body_start:
        raise CalcoreError(
            f"{src.name}: the file has a header (line 1) but no data rows. Add one row per "
            f"sample below the header."
        )
    n_rows = data.count(b"\n", body_start, end) + 1
    preview = _preview(src.name, data, body_start, end, delimiter, preview_rows)
    return CsvLayout(body_start, end, delimiter, columns, preview, n_rows)


def _block_size(n_bytes: int) -> int:
    # pyarrow parses blocks in parallel; ~16 MiB blocks were fastest on wide
    # files (smaller blocks multiply per-column overhead), but a small file
    # still needs a few blocks to use every core.
    per_thread = n_bytes // (2 * (os.cpu_count() or 1))
    return int(min(16 << 20, max(1 << 20, per_thread)))


def read_csv_columns(
    src: Source, layout: CsvLayout, *, floats: Sequence[str], texts: Sequence[str]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Read the ``floats`` columns into one float64 matrix and ``texts`` as str arrays.

    Returns
    -------
    scores : ndarray of shape (n_rows, len(floats)), float64
        Empty cells are NaN (rejected later by validation, with their line).
    texts : dict of str to ndarray of object (str)

    Raises
    ------
    CalcoreError
        The first non-numeric cell, non-UTF-8 byte or line with the wrong number
        of fields, named by line and column.
    """
    index = {c: j for j, c in enumerate(layout.columns)}
    names = [f"c{j}" for j in range(len(layout.columns))]
    types = {names[index[c]]: pa.float64() for c in floats}
    types.update({names[index[c]]: pa.string() for c in texts})
    body = pa.py_buffer(memoryview(src.data)[layout.body_start : layout.body_end])
    try:
        table = pacsv.read_csv(
            body,
            read_options=pacsv.ReadOptions(column_names=names, block_size=_block_size(body.size)),
            parse_options=pacsv.ParseOptions(delimiter=layout.delimiter, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                column_types=types,
                include_columns=list(types),
                null_values=[""],
                strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        _diagnose(src, layout, floats, names)
        raise CalcoreError(f"{src.name}: could not read the CSV data: {exc}") from None
    scores = columns_to_matrix(table, [names[index[c]] for c in floats])
    text = {c: table.column(names[index[c]]).to_numpy(zero_copy_only=False) for c in texts}
    return scores, text


def _diagnose(src: Source, layout: CsvLayout, floats: Sequence[str], names: Sequence[str]) -> None:
    """Raise a CalcoreError naming the first bad byte, line or cell (slow path)."""
    data, start = src.data, layout.body_start
    try:
        data[start : layout.body_end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(src.name, data, exc, start) from None
    bad_rows: list = []

    def on_invalid(row):
        bad_rows.append(row)
        return "error"

    body = pa.py_buffer(memoryview(data)[start : layout.body_end])
    try:
        table = pacsv.read_csv(
            body,
            read_options=pacsv.ReadOptions(column_names=list(names), use_threads=False),
            parse_options=pacsv.ParseOptions(
                delimiter=layout.delimiter, ignore_empty_lines=False, invalid_row_handler=on_invalid
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names}, strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid:
        if not bad_rows:
            return
        _raise_field_count(src.name, layout, bad_rows[0])
    index = {c: j for j, c in enumerate(layout.columns)}
    found = []
    for col in floats:
        i = _first_unparsable(table.column(names[index[col]]))
        if i is not None:
            found.append((i, index[col], col))
    if found:
        i, j, col = min(found)
        value = table.column(names[j])[i].as_py()
        raise CalcoreError(
            f"{src.name}, line {i + 2}, column {col!r}: value {value!r} is not a number. Score "
            f"cells must be plain numbers with a '.' decimal point: no thousands separators, "
            f"decimal commas or text. Fix the cell."
        )


def _raise_field_count(source: str, layout: CsvLayout, row) -> None:
    line = row.number + 1  # pyarrow counts rows of the body from 1; the header is line 1
    expected, actual = row.expected_columns, row.actual_columns
    if actual < expected:
        last = (
            " It is the last line: the file may have been cut off."
            if line == layout.n_rows + 1
            else ""
        )
        raise CalcoreError(
            f"{source}, line {line}: {actual} field(s) but the header has {expected}: the line is "
            f"truncated or a value is missing.{last} Complete or remove the line."
        )
    raise CalcoreError(
        f"{source}, line {line}: {actual} fields but the header has {expected}. A value contains "
        f"the delimiter {layout.delimiter!r} (a thousands separator like 1,234 or a decimal "
        f"comma?). Remove the separator or quote the value."
    )


def _cast_fails(column: pa.ChunkedArray, stop: int) -> bool:
    try:
        pc.cast(column.slice(0, stop), pa.float64())
    except pa.ArrowInvalid:
        return True
    return False


def _first_unparsable(column: pa.ChunkedArray) -> int | None:
    """Index of the first non-empty cell that is not a float (binary search on prefixes)."""
    # Empty cells are allowed here: they become NaN and are reported by validation.
    column = pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)
    n = len(column)
    if not _cast_fails(column, n):
        return None
    lo, hi = 0, n  # the prefix of length hi fails, that of length lo does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _cast_fails(column, mid):
            hi = mid
        else:
            lo = mid
    return hi - 1
