"""The in-memory table every reader produces and the row numbering of messages."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from calcore.foundation.errors import quoted
from calcore.io._columns import Roles

__all__ = ["RawTable", "RowNames", "SelectedRowNames", "LabelRowNames", "columns_to_matrix"]


@dataclass(frozen=True)
class RowNames:
    """Describe data row ``i`` (0-based) as the file numbers it.

    CSV: ``"line {i + first}"`` (``first`` = 2: header on line 1, rows one per line,
    so blank lines are kept as rows rather than skipped; a streamed piece starts further
    down), or ``"line {lines[i]}"`` when some records span several lines (quoted line
    breaks). Parquet/NPZ: ``"row {i + first} (0-based)"`` (``first`` = 0 for a whole
    file), the same wording as in-memory arrays, followed by the file's chunk that holds
    the row when ``chunks`` says (``"row 3998 (0-based) in row group 3"``).
    """

    csv: bool
    lines: np.ndarray | None = field(default=None, compare=False, repr=False)
    #: The file line of row 0 (a piece of a streamed CSV starts further down), or for
    #: other formats the file's 0-based index of row 0.
    first: int | None = None
    #: ``(first file row, name)`` of the file's chunks that hold the rows, in file order
    #: (``(0, "row group 0"), (1000, "row group 1")``): a damaged or bad value deep in a
    #: Parquet file is named with its row group. Empty: not said.
    chunks: tuple[tuple[int, str], ...] = field(default=(), compare=False, repr=False)

    def __call__(self, i: int) -> str:
        if not self.csv:
            row = i + (self.first or 0)
            return f"row {row} (0-based)" + self._chunk_of(row)
        if self.lines is not None:
            return f"line {int(self.lines[i])}"
        return f"line {i + (2 if self.first is None else self.first)}"

    def _chunk_of(self, row: int) -> str:
        """`` in row group 3`` for a file row, or ``""`` without chunks."""
        k = bisect.bisect_right([start for start, _ in self.chunks], row) - 1
        return f" in {self.chunks[k][1]}" if k >= 0 else ""

    @property
    def numbering(self) -> str:
        if self.csv:
            return "file lines (the header is line 1, the first data row line 2)"
        return "0-based row indices"


@dataclass(frozen=True)
class SelectedRowNames:
    """Row names after selecting ``rows`` (e.g. one split): still the file's numbering."""

    base: RowNames
    rows: np.ndarray

    def __call__(self, i: int) -> str:
        return self.base(int(self.rows[i]))


@dataclass(frozen=True)
class LabelRowNames:
    """Row names that also name the label column, for label error messages."""

    rows: object
    column: str

    def __call__(self, i: int) -> str:
        return f"{self.rows(i)}, column {quoted(self.column)}"


@dataclass(frozen=True, eq=False)
class RawTable:
    """A file's label, split and score columns, read but not yet validated.

    Attributes
    ----------
    source, file_format, delimiter : str, str, str or None
    columns : tuple of str
        All columns (NPZ: array names).
    roles : Roles
    n_rows : int
    scores : ndarray of shape (n_rows, n_score_columns), float64
    labels : ndarray of shape (n_rows,)
        Text (CSV, Parquet, NPZ string labels) or integers (NPZ integer labels).
    split : ndarray of shape (n_rows,) of str, or None
        In a stream's batches, ``(distinct values, index per row)`` as for the labels.
    row_names : RowNames
    kind_hint : tuple of (str, str) or None
        ``(kind, reason)`` when the format fixes the kind (NPZ array names).
    weights : ndarray of shape (n_rows,) or None
        The weight column's values (not yet validated), if the file has one.
    weight_column : str or None
        Its name (NPZ: the array's).
    metadata : dict of str to MetadataColumn
        The other columns (CSV and Parquet), kept for slicing.
    """

    source: str
    file_format: str
    delimiter: str | None
    columns: tuple[str, ...]
    roles: Roles
    n_rows: int
    scores: np.ndarray
    labels: np.ndarray
    split: np.ndarray | tuple | None
    row_names: RowNames
    kind_hint: tuple[str, str] | None = None
    weights: np.ndarray | None = None
    weight_column: str | None = None
    metadata: dict = field(default_factory=dict)


def columns_to_matrix(table, names) -> np.ndarray:
    """Stack numeric Arrow columns into a C-ordered float64 matrix; nulls become NaN."""
    # One record batch at a time: the batch's columns are stacked straight
    # into their rows of the output (2-3x faster than filling column by
    # column and converting the order afterwards, measured on 50,000 x 1,000).
    out = np.empty((table.num_rows, len(names)), dtype=np.float64)
    r = 0
    for batch in table.select(list(names)).to_batches():
        columns = [c.to_numpy(zero_copy_only=False) for c in batch.columns]
        # "unsafe" only lets integer/decimal columns become float64.
        np.stack(columns, axis=1, out=out[r : r + batch.num_rows], casting="unsafe")
        r += batch.num_rows
    return out
