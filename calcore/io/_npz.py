"""NPZ archives: never unpickled, decoded size checked before decompressing.

Expected arrays: exactly one of ``probs`` (n, L) or ``logits`` (n, L) (a 1-D
array, or one column, is P(positive) / the positive logit), ``labels`` (n,)
as integers or strings, optional ``class_names`` (L,) of str, optional
``split`` (n,) of str. Other arrays of shape (n,) (numbers, booleans, strings,
datetimes) are metadata for slicing; the rest are ignored and reported.
"""

from __future__ import annotations

import collections
import contextlib
import io
import itertools
import lzma
import math
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import BUDGET_ENV, over_budget
from calcore.io._source import Source

__all__ = ["NpzContent", "read_npz", "peek_npz"]

_SCORE_ARRAYS = ("probs", "logits")


@dataclass(frozen=True, eq=False)
class NpzContent:
    """The arrays of an NPZ file, checked for shape and type but not for values."""

    names: tuple[str, ...]
    score_name: str
    scores: np.ndarray  # (n, L) or (n, 1), float64
    labels: np.ndarray  # (n,), str
    label_name: str
    class_names: tuple[str, ...] | None
    split: np.ndarray | None
    ignored: tuple[str, ...]
    n_rows: int = -1  # rows of the scores; from the header when only the first were read

    def __post_init__(self):
        if self.n_rows < 0:
            object.__setattr__(self, "n_rows", int(self.scores.shape[0]))


def read_npy_header(fp):
    """``(shape, fortran_order, dtype)`` of the ``.npy`` stream ``fp``, left at its data."""
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fp)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(fp)
    # 3.0 (utf-8 header): numpy has no public reader for it
    from numpy.lib import _format_impl

    return _format_impl._read_array_header(fp, version)


def _header_of(zf: zipfile.ZipFile, info: zipfile.ZipInfo):
    with zf.open(info) as fp:
        return read_npy_header(fp)


def _refuse_overlapping_entries(src: Source, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse entries whose data overlap: how zip bombs declare more than they hold.

    The streamed reader has no size budget, so this check, not the budget, is what
    stops an "overlapping" zip bomb there. An entry ends at least 30 bytes (the fixed
    part of its local header) plus its compressed size after its offset.
    """
    ordered = sorted(infos, key=lambda i: i.header_offset)
    for cur, nxt in itertools.pairwise(ordered):
        if nxt.header_offset < cur.header_offset + 30 + cur.compress_size:
            raise CalcoreError(
                f"{src.name}: zip entries {cur.filename!r} and {nxt.filename!r} overlap (they "
                f"share compressed data), which is how zip bombs are built; refusing to "
                f"decompress it. Re-save the arrays with np.savez or np.savez_compressed."
            )


def _refuse_duplicate_members(src: Source, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse two members of one name: ``np.load`` would silently read the last one (two
    ``labels.npy``: which labels were meant cannot be known)."""
    counts = collections.Counter(i.filename for i in infos)
    twice = [name for name, n in counts.items() if n > 1]
    if twice:
        shown = ", ".join(f"{name!r} ({counts[name]} times)" for name in twice[:5])
        raise CalcoreError(
            f"{src.name}: the archive holds several members of one name: {shown}; numpy "
            f"would silently read the last one. Re-save the arrays with np.savez or "
            f"np.savez_compressed (one member per array)."
        )


def _array_bytes(src: Source, info: zipfile.ZipInfo, shape: tuple, dtype: np.dtype) -> int:
    """The bytes an array's header declares, refused beyond what its member holds: numpy
    allocates the array from the header before reading the data."""
    nbytes = math.prod(shape) * dtype.itemsize  # Python integers: no overflow to wrap
    if nbytes > info.file_size:
        raise CalcoreError(
            f"{src.name}: array {info.filename[:-4]!r} declares {nbytes:,} bytes in its "
            f"header (shape {tuple(shape)} of {dtype}), but its member holds only "
            f"{info.file_size:,} bytes, the most the array can be; the archive is corrupt "
            f"or crafted. Re-save it with np.savez."
        )
    return nbytes


def check_sizes(src: Source, zf: zipfile.ZipFile, max_decoded_bytes: int) -> None:
    """Refuse archives whose declared or array sizes exceed the budget (zip bombs), an
    array larger than its member, and two members of one name."""
    infos = zf.infolist()
    _refuse_duplicate_members(src, infos)
    declared = sum(i.file_size for i in infos)
    if declared > max_decoded_bytes:
        raise CalcoreError(
            f"{src.name}: the archive declares {declared:,} bytes once decompressed, more than "
            f"max_decoded_bytes={max_decoded_bytes:,}; refusing to decompress it. If you trust "
            f"the file, raise the budget (max_decoded_bytes=... or {BUDGET_ENV})."
        )
    _refuse_overlapping_entries(src, infos)
    decoded = 0
    for info in infos:
        if not info.filename.endswith(".npy"):
            continue
        try:
            shape, _, dtype = _header_of(zf, info)
        except ZIP_ERRORS as exc:
            raise corrupt_archive(src, exc, info.filename[:-4]) from None
        if dtype.hasobject:
            raise CalcoreError(
                f"{src.name}: array {info.filename[:-4]!r} is an object (pickled) array; "
                f"object/pickled arrays are refused because unpickling can run code. Save "
                f"numbers as numeric arrays and names as a unicode array "
                f"(np.array(names, dtype=str))."
            )
        _array_bytes(src, info, shape, dtype)
        decoded += math.prod(shape) * max(dtype.itemsize, 8)  # scores become float64
    if decoded > max_decoded_bytes:
        raise over_budget(
            src.name, "the arrays (from their .npy headers)", decoded, max_decoded_bytes
        )


def _get(src: Source, npz, key: str) -> np.ndarray:
    try:
        return npz[key]
    except ValueError as exc:
        if "pickle" not in str(exc):  # a bad header or size, not an object array
            raise corrupt_archive(src, exc, key) from None
        # numpy: "Object arrays cannot be loaded when allow_pickle=False"
        raise CalcoreError(
            f"{src.name}: array {key!r} could not be loaded without unpickling ({exc}); "
            f"object/pickled arrays are refused. Save it as a numeric or unicode array."
        ) from None


def _full_shape(npz, key: str, arr: np.ndarray) -> tuple:
    """``arr``'s shape, or for a window of rows (:class:`FirstRows`, a streamed
    window) the shape of the whole array."""
    shapes = getattr(npz, "shapes", None)
    return arr.shape if shapes is None else shapes[key]


def _scores(src: Source, npz, names) -> tuple[str, np.ndarray]:
    found = [k for k in _SCORE_ARRAYS if k in names]
    if len(found) != 1:
        what = "both" if found else "neither"
        raise CalcoreError(
            f"{src.name}: the archive has {what} of the arrays 'probs' and 'logits' (arrays: "
            f"{list(names)}). Save exactly one of them."
        )
    key = found[0]
    arr = _get(src, npz, key)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise CalcoreError(f"{src.name}: array {key!r} has dtype {arr.dtype}; it must be numeric.")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise CalcoreError(
            f"{src.name}: array {key!r} has shape {_full_shape(npz, key, arr)}; expected "
            f"(n_samples, n_classes)."
        )
    return key, np.asarray(arr, dtype=np.float64)


def _text(src: Source, npz, key: str, n: int) -> np.ndarray:
    arr = _get(src, npz, key)
    shape = _full_shape(npz, key, arr)
    if shape != (n,):
        raise CalcoreError(
            f"{src.name}: array {key!r} has shape {shape}; expected ({n},), one entry per row "
            f"of the scores."
        )
    if np.issubdtype(arr.dtype, np.floating):
        ok = np.isfinite(arr) & (arr == np.round(arr))
        if not ok.all():
            i = int(np.argmax(~ok))
            row = i + getattr(npz, "first_row", 0)  # a streamed window starts further down
            raise CalcoreError(
                f"{src.name}, row {row} (0-based), array {key!r}: {float(arr[i])!r} is not an "
                f"integer. Use integer class indices or class names."
            )
        arr = arr.astype(np.int64)
    return arr.astype(str)


# What a damaged or exotic zip can raise while its members are read: bad CRC or
# headers (BadZipFile), bad deflate data (zlib.error), encryption (RuntimeError),
# unsupported methods or versions (NotImplementedError), cut data (EOFError),
# bad .npy headers or sizes (ValueError, OSError).
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    RuntimeError,
    NotImplementedError,
    EOFError,
    OSError,
    ValueError,
    KeyError,
    lzma.LZMAError,
)


def corrupt_archive(src: Source, exc: BaseException, array: str | None = None) -> CalcoreError:
    text = " ".join(str(exc).split())[:200] or type(exc).__name__
    what = "reading it failed" if array is None else f"reading array {array!r} failed"
    return CalcoreError(
        f"{src.name}: the archive is corrupt or uses an unsupported zip feature (encryption, "
        f"an unusual compression method); {what} ({type(exc).__name__}: {text}). "
        f"Re-save it with np.savez or np.savez_compressed."
    )


@contextlib.contextmanager
def _checked_archive(src: Source, max_decoded_bytes: int):
    """The open zip archive of ``src``, its sizes and dtypes checked (:func:`check_sizes`)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(src.data))
    except (zipfile.BadZipFile, *ZIP_ERRORS):
        raise CalcoreError(
            f"{src.name}: not a valid .npz (zip) archive. Save it with np.savez."
        ) from None
    with zf:
        check_sizes(src, zf, max_decoded_bytes)
        yield zf


def read_npz(src: Source, *, max_decoded_bytes: int, label_column: str | None = None) -> NpzContent:
    """Read an NPZ archive safely (``allow_pickle=False``, sizes checked first).

    Raises
    ------
    CalcoreError
        Not a zip, over the size budget, object arrays, missing/duplicate score
        arrays, missing labels, shape or dtype mismatches.
    """
    with _checked_archive(src, max_decoded_bytes):
        pass  # checked only: np.load reads the arrays below, from the same bytes
    try:
        return _read_arrays(src, label_column)
    except CalcoreError:
        raise
    except ZIP_ERRORS as exc:
        raise corrupt_archive(src, exc) from None


def _read_arrays(src: Source, label_column: str | None) -> NpzContent:
    with np.load(io.BytesIO(src.data), allow_pickle=False) as npz:
        return checked_content(src, npz, label_column)


def checked_content(src: Source, npz, label_column: str | None) -> NpzContent:
    """The checked arrays of ``npz``: an ``NpzFile``, or :class:`FirstRows`, whose arrays
    are cut after a few rows (its ``shapes`` are the whole arrays')."""
    names = tuple(npz.files)
    score_name, scores = _scores(src, npz, names)
    n = _full_shape(npz, score_name, scores)[0]
    label_name = label_column or "labels"
    if label_name not in names:
        fix = "Save the true labels as 'labels', or pass label_column='<array name>'."
        raise CalcoreError(
            f"{src.name}: no {label_name!r} array (arrays: {list(names)}). {fix}",
            option="label_array",
            fix=fix,
        )
    labels = _text(src, npz, label_name, n)
    class_names = None
    if "class_names" in names:
        cn = _get(src, npz, "class_names")
        if cn.dtype.kind != "U" or cn.ndim != 1:
            raise CalcoreError(
                f"{src.name}: 'class_names' must be a 1-D unicode array, got dtype {cn.dtype} "
                f"and shape {cn.shape}. Save it with np.array(names, dtype=str)."
            )
        class_names = tuple(str(c) for c in cn)
    split = _text(src, npz, "split", n) if "split" in names else None
    known = {score_name, label_name, "class_names", "split"}
    ignored = tuple(k for k in names if k not in known)
    return NpzContent(names, score_name, scores, labels, label_name, class_names, split, ignored, n)


class FirstRows:
    """The first ``rows`` entries of each array of an archive, read from its member stream.

    Stands in for ``np.load``'s archive in :func:`_scores`/:func:`_text` when inspecting:
    only the ``.npy`` header and the first rows are decoded, so inspecting a 200 MB
    archive takes milliseconds instead of a second. Arrays stored in Fortran order
    (not what ``np.savez`` writes for C arrays) are read whole.
    """

    def __init__(self, zf: zipfile.ZipFile, rows: int):
        self.zf, self.rows = zf, rows
        self.files = [i.filename[:-4] for i in zf.infolist() if i.filename.endswith(".npy")]
        self.shapes = {}

    def __getitem__(self, key: str) -> np.ndarray:
        with self.zf.open(f"{key}.npy") as fp:
            shape, fortran, dtype = read_npy_header(fp)
            self.shapes[key] = shape
            if dtype.hasobject:  # check_sizes refused these already; never unpickle
                raise ValueError("Object arrays cannot be loaded when allow_pickle=False")
            if fortran or len(shape) == 0 or key == "class_names":
                fp.seek(0)
                return np.lib.format.read_array(fp, allow_pickle=False)
            first = min(self.rows, shape[0])
            per_row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
            data = fp.read(first * per_row)
            return np.frombuffer(data, dtype=dtype).reshape((first, *shape[1:]))


def peek_npz(
    src: Source, *, max_decoded_bytes: int, label_column: str | None = None, rows: int = 5
) -> NpzContent:
    """:func:`read_npz` for inspection: the same checks of names, dtypes and shapes, but
    the scores, labels and split hold only their first ``rows`` rows (``n_rows`` is the
    full count). Values beyond those rows are checked when the file is loaded.

    Raises
    ------
    CalcoreError
        As :func:`read_npz`, for what the headers and first rows show.
    """
    with _checked_archive(src, max_decoded_bytes) as zf:
        first = FirstRows(zf, rows)
        try:
            return checked_content(src, first, label_column)
        except CalcoreError:
            raise
        except ZIP_ERRORS as exc:
            raise corrupt_archive(src, exc) from None
