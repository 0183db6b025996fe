"""Arrow tables written as CSV text, quoted only where a cell needs it.

pyarrow's own CSV writer quotes every text cell (``"calib"``), so a file of
plain text columns would come back from ``calcore apply`` with every cell
changed in form. Here a cell is quoted only when it holds the delimiter, a
quote or a line break (RFC 4180), as a person or :mod:`csv` would write it;
everything is done with Arrow compute functions, a batch at a time.
"""

from __future__ import annotations

import numpy as np

from calcore.foundation.errors import CalcoreError

__all__ = ["csv_header", "csv_rows"]

#: A cell holding one of these is written quoted (its quotes doubled).
_NEEDS_QUOTES = r'[",\r\n]'


def csv_header(names) -> str:
    """The header line (with its line end) of columns ``names``."""
    return ",".join(_quoted(str(n)) for n in names) + "\n"


def _quoted(text: str) -> str:
    if any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_rows(table, *, source: str) -> memoryview:
    """The rows of ``table`` as UTF-8 CSV lines, each ended by ``\\n``.

    Numbers are written as their shortest text that reads back to the same value
    (``0.1``, ``1e-20``, integers in full, beyond 2**53 too), dates and times in ISO
    form, booleans as ``true``/``false``; a missing value (null) as an empty cell.

    Parameters
    ----------
    table : pyarrow.Table
    source : str
        What the rows come from, for messages.

    Raises
    ------
    CalcoreError
        A column whose type has no CSV text (lists, structs, bytes that are not UTF-8),
        naming the column and the formats that can hold it.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = [_cells(table.column(i), name, source) for i, name in enumerate(table.column_names)]
    line_end, nothing = pa.scalar("\n", pa.large_string()), pa.scalar("", pa.large_string())
    cells[-1] = pc.binary_join_element_wise(cells[-1], line_end, nothing)
    lines = pc.binary_join_element_wise(*cells, pa.scalar(",", pa.large_string()))
    return _joined(lines)


def _cells(column, name: str, source: str):
    """A column's cells as CSV text (large strings, quoted where needed, null -> "")."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):  # a pandas Categorical: its values' text
        column = column.cast(column.type.value_type)
    # numbers, dates and booleans never hold a comma, quote or line break: not searched
    may_need_quotes = not (
        pa.types.is_integer(column.type)
        or pa.types.is_floating(column.type)
        or pa.types.is_temporal(column.type)
        or pa.types.is_boolean(column.type)
    )
    try:
        text = pc.cast(column, pa.large_string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CalcoreError(
            f"{source}, column {name!r}: its type {column.type} has no CSV text "
            f"({' '.join(str(exc).split())[:120]}). Write the output as .parquet or .arrow, "
            "which keep it."
        ) from None
    if not may_need_quotes:
        return pc.fill_null(text, "")
    quote, nothing = pa.scalar('"', pa.large_string()), pa.scalar("", pa.large_string())
    quoted = pc.binary_join_element_wise(
        quote, pc.replace_substring(text, '"', '""'), quote, nothing
    )
    text = pc.if_else(pc.match_substring_regex(text, _NEEDS_QUOTES), quoted, text)
    return pc.fill_null(text, "")


def _joined(lines) -> memoryview:
    """The bytes of every value of a large-string array, back to back (its data buffer
    between the first and last offsets: no Python string per line)."""
    import pyarrow as pa

    array = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    if len(array) == 0:
        return memoryview(b"")
    _, offsets, data = array.buffers()
    ends = np.frombuffer(offsets, dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    return memoryview(data)[int(ends[0]) : int(ends[-1])]
