"""NPZ archives: never unpickled, decoded size checked before decompressing.

Expected arrays: exactly one of ``probs`` (n, L) or ``logits`` (n, L) (a 1-D
array, or one column, is P(positive) / the positive logit), ``labels`` (n,)
as integers or strings, optional ``class_names`` (L,) of str, optional
``split`` (n,) of str. Other arrays are ignored and reported.
"""

from __future__ import annotations

import io
import lzma
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from calcore._errors import CalcoreError
from calcore.io._budget import BUDGET_ENV, over_budget
from calcore.io._source import Source

__all__ = ["NpzContent", "read_npz"]

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


def _header_of(zf: zipfile.ZipFile, info: zipfile.ZipInfo):
    with zf.open(info) as fp:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fp)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(fp)
        return np.lib.format._read_array_header(fp, version)  # 3.0 (utf-8 header)


def _check_sizes(src: Source, zf: zipfile.ZipFile, max_decoded_bytes: int) -> None:
    """Refuse archives whose declared or array sizes exceed the budget (zip bombs)."""
    infos = zf.infolist()
    declared = sum(i.file_size for i in infos)
    if declared > max_decoded_bytes:
        raise CalcoreError(
            f"{src.name}: the archive declares {declared:,} bytes once decompressed, more than "
            f"max_decoded_bytes={max_decoded_bytes:,}; refusing to decompress it. If you trust "
            f"the file, raise the budget (max_decoded_bytes=... or {BUDGET_ENV})."
        )
    decoded = 0
    for info in infos:
        if not info.filename.endswith(".npy"):
            continue
        try:
            shape, _, dtype = _header_of(zf, info)
        except _ZIP_ERRORS as exc:
            raise _corrupt(src, exc, info.filename[:-4]) from None
        if dtype.hasobject:
            raise CalcoreError(
                f"{src.name}: array {info.filename[:-4]!r} is an object (pickled) array; "
                f"object/pickled arrays are refused because unpickling can run code. Save "
                f"numbers as numeric arrays and names as a unicode array "
                f"(np.array(names, dtype=str))."
            )
        # numpy allocates the array from the header before reading the data:
        # an array larger than its own member would allocate unchecked memory.
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count * dtype.itemsize
        if nbytes > info.file_size:
            raise CalcoreError(
                f"{src.name}: array {info.filename[:-4]!r} declares {nbytes:,} bytes but its "
                f"member holds {info.file_size:,}; the archive is corrupt or crafted."
            )
        decoded += count * max(dtype.itemsize, 8)  # scores become float64
    if decoded > max_decoded_bytes:
        raise over_budget(
            src.name, "the arrays (from their .npy headers)", decoded, max_decoded_bytes
        )


def _get(src: Source, npz, key: str) -> np.ndarray:
    try:
        return npz[key]
    except ValueError as exc:  # numpy: "Object arrays cannot be loaded when allow_pickle=False"
        raise CalcoreError(
            f"{src.name}: array {key!r} could not be loaded without unpickling ({exc}); "
            f"object/pickled arrays are refused. Save it as a numeric or unicode array."
        ) from None


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
            f"{src.name}: array {key!r} has shape {arr.shape}; expected (n_samples, n_classes)."
        )
    return key, np.asarray(arr, dtype=np.float64)


def _text(src: Source, npz, key: str, n: int) -> np.ndarray:
    arr = _get(src, npz, key)
    if arr.shape != (n,):
        raise CalcoreError(
            f"{src.name}: array {key!r} has shape {arr.shape}; expected ({n},), one entry per row "
            f"of the scores."
        )
    if np.issubdtype(arr.dtype, np.floating):
        ok = np.isfinite(arr) & (arr == np.round(arr))
        if not ok.all():
            i = int(np.argmax(~ok))
            raise CalcoreError(
                f"{src.name}, row {i} (0-based), array {key!r}: {float(arr[i])!r} is not an "
                f"integer. Use integer class indices or class names."
            )
        arr = arr.astype(np.int64)
    return arr.astype(str)


# What a damaged or exotic zip can raise while its members are read: bad CRC or
# headers (BadZipFile), bad deflate data (zlib.error), encryption (RuntimeError),
# unsupported methods or versions (NotImplementedError), cut data (EOFError),
# bad .npy headers or sizes (ValueError, OSError).
_ZIP_ERRORS = (
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


def _corrupt(src: Source, exc: BaseException, array: str | None = None) -> CalcoreError:
    text = " ".join(str(exc).split())[:200] or type(exc).__name__
    what = "reading it failed" if array is None else f"reading array {array!r} failed"
    return CalcoreError(
        f"{src.name}: the archive is corrupt or uses an unsupported zip feature (encryption, "
        f"an unusual compression method); {what} ({type(exc).__name__}: {text}). "
        f"Re-save it with np.savez or np.savez_compressed."
    )


def read_npz(src: Source, *, max_decoded_bytes: int, label_column: str | None = None) -> NpzContent:
    """Read an NPZ archive safely (``allow_pickle=False``, sizes checked first).

    Raises
    ------
    CalcoreError
        Not a zip, over the size budget, object arrays, missing/duplicate score
        arrays, missing labels, shape or dtype mismatches.
    """
    try:
        zf = zipfile.ZipFile(io.BytesIO(src.data))
    except (zipfile.BadZipFile, *_ZIP_ERRORS):
        raise CalcoreError(
            f"{src.name}: not a valid .npz (zip) archive. Save it with np.savez."
        ) from None
    with zf:
        _check_sizes(src, zf, max_decoded_bytes)
    try:
        return _read_arrays(src, label_column)
    except CalcoreError:
        raise
    except _ZIP_ERRORS as exc:
        raise _corrupt(src, exc) from None


def _read_arrays(src: Source, label_column: str | None) -> NpzContent:
    with np.load(io.BytesIO(src.data), allow_pickle=False) as npz:
        names = tuple(npz.files)
        score_name, scores = _scores(src, npz, names)
        label_name = label_column or "labels"
        if label_name not in names:
            raise CalcoreError(
                f"{src.name}: no {label_name!r} array (arrays: {list(names)}). Save the true "
                f"labels as 'labels', or pass label_column='<array name>'."
            )
        labels = _text(src, npz, label_name, scores.shape[0])
        class_names = None
        if "class_names" in names:
            cn = _get(src, npz, "class_names")
            if cn.dtype.kind != "U" or cn.ndim != 1:
                raise CalcoreError(
                    f"{src.name}: 'class_names' must be a 1-D unicode array, got dtype {cn.dtype} "
                    f"and shape {cn.shape}. Save it with np.array(names, dtype=str)."
                )
            class_names = tuple(str(c) for c in cn)
        split = _text(src, npz, "split", scores.shape[0]) if "split" in names else None
    known = {score_name, label_name, "class_names", "split"}
    ignored = tuple(k for k in names if k not in known)
    return NpzContent(names, score_name, scores, labels, label_name, class_names, split, ignored)
