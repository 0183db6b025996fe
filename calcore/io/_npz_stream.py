"""NPZ archives read a window of rows at a time, never unpickled.

Each array of the archive is a ``.npy`` member of the zip; its header gives the
shape and dtype, and its rows follow in C order, so rows ``[a, b)`` are read by
decompressing the member's stream sequentially (stored or deflated alike, with
:mod:`zipfile`). A window of rows then goes through the loader's checks
(:func:`calcore.io._npz.checked_content`: names, dtypes, shapes, integral labels) with
row numbers of the whole archive. Memory: one window per array.

Arrays stored in Fortran order (``np.save`` of a transposed view) cannot be read
by rows without the whole array, and are refused with a way out.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.io._npz import (
    ZIP_ERRORS,
    FirstRows,
    check_sizes,
    checked_content,
    corrupt_archive,
    read_npy_header,
)
from calcore.io._source import Source

__all__ = ["NpzArchive"]

#: Archives are not held in memory, so their decoded size is not limited here.
_NO_BUDGET = 1 << 62


@dataclass
class _Member:
    shape: tuple
    dtype: np.dtype
    row_bytes: int
    handle: object


class _Window:
    """Rows ``[first_row, first_row + rows)`` of every row array, shaped like the arguments
    :func:`calcore.io._npz.checked_content` reads (``files``, ``shapes``, item access)."""

    def __init__(self, files, shapes, arrays: dict, first_row: int):
        self.files, self.shapes, self.arrays, self.first_row = files, shapes, arrays, first_row

    def __getitem__(self, key: str) -> np.ndarray:
        return self.arrays[key]


class NpzArchive:
    """An NPZ file opened for reading by rows.

    Parameters
    ----------
    path : str
    name : str
        The name shown in messages.
    label_column : str, optional
        As in :func:`calcore.load_predictions` (default ``"labels"``).

    Raises
    ------
    CalcoreError
        Not a zip archive, object (pickled) arrays, a Fortran-ordered row array, or
        what :func:`calcore.load_predictions` refuses in the headers and first rows.
    """

    def __init__(self, path: str, name: str, *, label_column: str | None = None):
        self.path, self.name, self.label_column = path, name, label_column
        self.src = Source(name, b"", "npz")  # for messages only
        try:
            with zipfile.ZipFile(path) as zf:
                check_sizes(self.src, zf, _NO_BUDGET)  # refuses object arrays
                first = FirstRows(zf, 5)
                self.head = checked_content(self.src, first, label_column)
                self.shapes = dict(first.shapes)
                self.files = list(first.files)
                for key in self.files:
                    if key not in self.shapes:
                        with zf.open(f"{key}.npy") as fp:
                            self.shapes[key] = read_npy_header(fp)[0]
                self.class_names = first["class_names"] if "class_names" in self.files else None
        except CalcoreError:
            raise
        except zipfile.BadZipFile:
            raise CalcoreError(
                f"{name}: not a valid .npz (zip) archive. Save it with np.savez."
            ) from None
        except ZIP_ERRORS as exc:
            raise corrupt_archive(self.src, exc) from None
        self.n_rows = self.head.n_rows

    def row_arrays(self, weight: str | None) -> list[str]:
        """The arrays read row by row: scores, labels, split, weights."""
        keys = [self.head.score_name, self.head.label_name]
        keys += ["split"] if self.head.split is not None else []
        return keys + ([weight] if weight is not None else [])

    def check_weight(self, weight: str) -> None:
        """Refuse a weight array of the wrong shape or a non-numeric dtype (as the loader)."""
        with zipfile.ZipFile(self.path) as zf, zf.open(f"{weight}.npy") as fp:
            shape, _, dtype = read_npy_header(fp)
        numeric = np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)
        if shape != (self.n_rows,) or not numeric:
            raise CalcoreError(
                f"{self.name}: array {weight!r} has shape {shape} and dtype {dtype}; row "
                f"weights need shape ({self.n_rows},) and a numeric dtype."
            )

    def check_slice_array(self, name: str) -> None:
        """Refuse a slice array that is missing or not one number, boolean, string or
        datetime per row (as the loader does for a named slice column)."""
        if name not in self.files:
            raise CalcoreError(
                f"{self.name}: slice column {name!r} is not an array of the archive (arrays: "
                f"{self.files})."
            )
        with zipfile.ZipFile(self.path) as zf, zf.open(f"{name}.npy") as fp:
            shape, _, dtype = read_npy_header(fp)
        if shape != (self.n_rows,) or dtype.kind not in "biufUM":
            raise CalcoreError(
                f"{self.name}: slice column {name!r} has shape {shape} and dtype {dtype}; a "
                f"slice column needs one number, boolean, string or datetime per row, shape "
                f"({self.n_rows},)."
            )

    def windows(self, rows: int, *, weight: str | None = None, extras=()):
        """``(content, weights or None, first_row, {extra: values})`` per window of at most
        ``rows`` rows (``extras``: other arrays of one value per row, read alongside)."""
        keys = self.row_arrays(weight) + [k for k in extras if k not in self.row_arrays(weight)]
        try:
            with zipfile.ZipFile(self.path) as zf:
                members = {k: self._open(zf, k) for k in keys}
                for start in range(0, self.n_rows, rows):
                    m = min(rows, self.n_rows - start)
                    arrays = {k: self._read(members[k], k, m, start) for k in keys}
                    if self.class_names is not None:
                        arrays["class_names"] = self.class_names
                    window = _Window(self.files, self.shapes, arrays, start)
                    content = checked_content(self.src, window, self.label_column)
                    weights = None if weight is None else arrays[weight].astype(np.float64)
                    yield content, weights, start, {k: arrays[k] for k in extras}
        except CalcoreError:
            raise
        except FileNotFoundError:
            raise CalcoreError(
                f"{self.path}: the file disappeared while it was being read."
            ) from None
        except ZIP_ERRORS as exc:
            raise corrupt_archive(self.src, exc) from None

    def _open(self, zf, key: str) -> _Member:
        fp = zf.open(f"{key}.npy")
        shape, fortran, dtype = read_npy_header(fp)
        if fortran and len(shape) > 1:
            raise CalcoreError(
                f"{self.name}: array {key!r} is stored in Fortran (column-major) order, which "
                f"cannot be read row by row. Save it as np.ascontiguousarray(...), or load the "
                f"file whole with load_predictions."
            )
        per_row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        return _Member(shape, dtype, per_row, fp)

    def _read(self, member: _Member, key: str, rows: int, start: int) -> np.ndarray:
        data = member.handle.read(rows * member.row_bytes)
        if len(data) != rows * member.row_bytes:
            end = start + len(data) // max(member.row_bytes, 1)
            raise CalcoreError(
                f"{self.name}: array {key!r} ends before row {end} "
                f"(0-based) although its header declares {member.shape[0]:,} rows; the archive "
                f"is truncated. Re-save it."
            )
        return np.frombuffer(data, dtype=member.dtype).reshape((rows, *member.shape[1:]))
