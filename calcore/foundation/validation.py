"""Validation of prediction arrays, in one place.

Every public entry point (``Predictions`` constructors, the file loader, the
metrics) funnels its arrays through these functions, which return clean arrays
or raise :class:`~calcore.CalcoreError` with a message that names the source,
the column and the first offending row, and says how to fix it. Callers then
assume valid input.

Row and column wording is delegated to an :class:`InputContext` so that the same
checks produce "line 7 of preds.csv, column 'p_cat'" for a file and "row 5,
column 3 of probs" for an in-memory array.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, fields
from typing import Callable, Sequence

import numpy as np

from calcore.foundation.errors import LOGITS_FIX, CalcoreError, quoted, quoted_list
from calcore.foundation.limits import MAX_TOTAL_WEIGHT

__all__ = [
    "InputContext",
    "RenormalizationInfo",
    "probability_sum_tolerance",
    "check_probs",
    "check_unit_interval",
    "check_logits",
    "check_labels",
    "check_class_names",
    "check_label_names",
    "index_label",
    "reads_as_integer",
    "check_binary_probs",
    "check_sample_weight",
    "check_total_weight",
    "frozen_array",
    "ReadOnlyDict",
    "frozen_value",
    "freeze_fields",
]


def _default_row(i: int) -> str:
    return f"row {i} (0-based)"


@dataclass(frozen=True)
class InputContext:
    """How to describe a location in the input to a person.

    Attributes
    ----------
    source : str
        What the data is called in messages (a file name or ``"probs"``).
    columns : sequence of str or None
        Column names as the user sees them (the file headers); ``None`` means
        columns are described by their 0-based index.
    row : callable
        Maps a 0-based data row index to its description, e.g. ``"line 7"``
        for the 7th line of a CSV file (header on line 1).
    """

    source: str = "probs"
    columns: Sequence[str] | None = None
    row: Callable[[int], str] = field(default=_default_row)

    def column(self, j: int) -> str:
        if self.columns is None:
            return f"column {j}"
        return f"column {quoted(self.columns[j])}"

    def where(self, i: int, j: int | None = None) -> str:
        place = f"{self.source}, {self.row(i)}"
        return place if j is None else f"{place}, {self.column(j)}"


@dataclass(frozen=True)
class RenormalizationInfo:
    """What ``renormalize=True`` did: how many rows were rescaled and by how much.

    Attributes
    ----------
    n_rows : int
        Rows whose sum was off by more than the tolerance and were rescaled.
    max_deviation : float
        Largest ``|row sum - 1|`` seen among all rows.
    first_row : int or None
        0-based index of the first rescaled row.
    """

    n_rows: int
    max_deviation: float
    first_row: int | None


def probability_sum_tolerance(n_classes: int, dtype: np.dtype) -> float:
    """Tolerance on ``|sum(row) - 1|`` for a row of probabilities.

    ``1e-5 * sqrt(L)`` covers values printed with 6 decimals (rounding errors
    add up like a random walk over L columns), plus ``L * eps`` of the input
    dtype for sums of float32 softmax outputs. A row off by 1e-3 is rejected
    for any L <= 10,000.
    """
    eps = np.finfo(dtype).eps if np.issubdtype(dtype, np.floating) else 0.0
    return 1e-5 * np.sqrt(n_classes) + n_classes * eps


def _as_float_matrix(values, *, name: str, ctx: InputContext) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise CalcoreError(
            f"{ctx.source}: {name} must be numeric, got dtype {arr.dtype}. "
            f"Convert the scores to floating point numbers."
        )
    if arr.ndim != 2:
        raise CalcoreError(
            f"{ctx.source}: {name} must be a 2-D array of shape (n_samples, n_classes), "
            f"got shape {arr.shape}. For a binary problem pass both columns "
            f"[1 - p, p]."
        )
    n, n_classes = arr.shape
    if n == 0:
        raise CalcoreError(f"{ctx.source}: {name} has no rows. Provide at least one prediction.")
    if n_classes < 2:
        raise CalcoreError(
            f"{ctx.source}: {name} has {n_classes} class column; at least 2 classes are needed. "
            f"For a binary problem pass both columns [1 - p, p]."
        )
    return arr


def _first_bad(mask: np.ndarray) -> tuple[int, int | None]:
    """Index (row, column) of the first True in a 1-D or 2-D mask, in row-major order."""
    flat = int(np.argmax(mask.reshape(-1)))
    if mask.ndim == 1:
        return flat, None
    return divmod(flat, mask.shape[1])


def _check_finite(arr: np.ndarray, *, name: str, ctx: InputContext) -> None:
    finite = np.isfinite(arr)
    if not finite.all():
        i, j = _first_bad(~finite)
        raise CalcoreError(
            f"{ctx.where(i, j)}: {name} value {arr[i, j].item()!r} is not a finite number. "
            f"Remove or fix rows with NaN, empty or infinite scores."
        )


def check_probs(
    probs, *, ctx: InputContext = InputContext(), renormalize: bool = False
) -> tuple[np.ndarray, RenormalizationInfo | None]:
    """Validate a probability matrix and return it as float64.

    Parameters
    ----------
    probs : array_like of shape (n_samples, n_classes)
        Predicted probabilities; each row must lie on the simplex.
    ctx : InputContext
        How to name rows and columns in error messages.
    renormalize : bool
        Rescale rows whose sum is off by more than the tolerance (see
        :func:`probability_sum_tolerance`) instead of raising. Rows within the
        tolerance are never touched.

    Returns
    -------
    probs : ndarray of shape (n_samples, n_classes), float64
        A new array when the input was not float64 or rows were rescaled,
        otherwise the input itself.
    renormalization : RenormalizationInfo or None
        What was rescaled, when ``renormalize=True``.

    Raises
    ------
    CalcoreError
        Non-numeric or non-finite values, negative values or values above 1 (by
        more than the tolerance), rows off the simplex (without ``renormalize``), rows summing to 0.
    """
    arr = _as_float_matrix(probs, name="probability", ctx=ctx)
    in_dtype = arr.dtype
    arr = np.asarray(arr, dtype=np.float64)
    tol = probability_sum_tolerance(arr.shape[1], in_dtype)
    # Three reductions without temporaries; the elementwise search runs only on failure.
    sums = arr.sum(axis=1)
    if not np.isfinite(sums).all():  # NaN and inf propagate into the row sum
        _check_finite(arr, name="probability", ctx=ctx)
    if arr.min() < 0:
        i, j = _first_bad(arr < 0)
        raise CalcoreError(
            f"{ctx.where(i, j)}: probability {arr[i, j].item()!r} is negative. "
            f"Probabilities must lie in [0, 1]. {LOGITS_FIX}",
            option="scores_logits",
            fix=LOGITS_FIX,
        )
    # A value above 1 by less than the row-sum tolerance is rounding, like a row sum within it.
    if arr.max() > 1.0 + tol and not renormalize:
        i, j = _first_bad(arr > 1.0 + tol)
        raise CalcoreError(
            f"{ctx.where(i, j)}: probability {arr[i, j].item()!r} is greater than 1. "
            f"Probabilities must lie in [0, 1] (unnormalised scores are logits too). {LOGITS_FIX}",
            option="scores_logits",
            fix=LOGITS_FIX,
        )
    deviation = np.abs(sums - 1.0)
    off = deviation > tol
    if not off.any():
        return arr, (RenormalizationInfo(0, float(deviation.max()), None) if renormalize else None)
    i = int(np.argmax(off))
    if not renormalize:
        fix = (
            "Fix the scores, or pass renormalize=True (--renormalize on the command line) to "
            "rescale those rows and get a report."
        )
        raise CalcoreError(
            f"{ctx.where(i)}: probabilities sum to {sums[i]:.6g}, not 1 (tolerance {tol:.2g}); "
            f"{int(off.sum())} row(s) are off. {fix}",
            option="renormalize",
            fix=fix,
        )
    if (sums <= 0).any():
        k = int(np.argmax(sums <= 0))
        raise CalcoreError(
            f"{ctx.where(k)}: probabilities sum to 0, so the row cannot be renormalised. "
            f"Remove the row or give it valid scores."
        )
    out = arr.copy() if arr is probs else arr
    out[off] /= sums[off, None]
    return out, RenormalizationInfo(int(off.sum()), float(deviation.max()), i)


def check_unit_interval(values, *, ctx: InputContext = InputContext()) -> np.ndarray:
    """Validate a matrix of per-class probabilities in [0, 1] that need not sum to 1.

    For explicitly unnormalised calibrator outputs (class-wise calibration).

    Raises
    ------
    CalcoreError
        Non-numeric, non-finite, negative or above-1 values, wrong shape.
    """
    arr = np.asarray(_as_float_matrix(values, name="probability", ctx=ctx), dtype=np.float64)
    _check_finite(arr, name="probability", ctx=ctx)
    bad = (arr < 0) | (arr > 1)
    if bad.any():
        i, j = _first_bad(bad)
        raise CalcoreError(
            f"{ctx.where(i, j)}: probability {arr[i, j].item()!r} is outside [0, 1]."
        )
    return arr


def check_logits(logits, *, ctx: InputContext = InputContext("logits")) -> np.ndarray:
    """Validate a logit matrix (finite real numbers) and return it as float64.

    Raises
    ------
    CalcoreError
        Non-numeric or non-finite values, wrong shape, fewer than 2 classes.
    """
    arr = np.asarray(_as_float_matrix(logits, name="logit", ctx=ctx), dtype=np.float64)
    _check_finite(arr, name="logit", ctx=ctx)
    return arr


def check_labels(
    labels, n_classes: int, *, n_rows: int, ctx: InputContext = InputContext("labels")
) -> np.ndarray:
    """Validate integer labels in ``0 .. n_classes - 1`` and return them as int64.

    Raises
    ------
    CalcoreError
        Wrong length, non-integer values, labels outside the classes.
    """
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise CalcoreError(
            f"{ctx.source}: labels must be a 1-D array with one entry per row ({n_rows}), "
            f"got shape {arr.shape}."
        )
    if np.issubdtype(arr.dtype, np.floating):
        integral = np.isfinite(arr) & (arr == np.round(arr))
        if not integral.all():
            i = int(np.argmax(~integral))
            raise CalcoreError(
                f"{ctx.where(i)}: label {arr[i].item()!r} is not an integer class index. "
                f"Labels must be integers 0..{n_classes - 1} or class names."
            )
    elif not np.issubdtype(arr.dtype, np.integer) and arr.dtype != bool:
        raise CalcoreError(
            f"{ctx.source}: labels must be integer class indices 0..{n_classes - 1}, "
            f"got dtype {arr.dtype}. Map class names to indices first (load_predictions does)."
        )
    out = arr.astype(np.int64)
    bad = (out < 0) | (out >= n_classes)
    if bad.any():
        i = int(np.argmax(bad))
        raise CalcoreError(
            f"{ctx.where(i)}: label {arr[i].item()!r} is not a class index; there are {n_classes} "
            f"classes, so labels must be integers 0..{n_classes - 1}."
        )
    return out


def check_class_names(
    class_names, n_classes: int, *, ctx: InputContext = InputContext()
) -> tuple[str, ...]:
    """Return class names as a tuple of ``n_classes`` distinct, non-empty strings.

    ``None`` gives ``("0", "1", ...)``.

    Raises
    ------
    CalcoreError
        Wrong count, blank or duplicate names.
    """
    if class_names is None:
        return tuple(str(k) for k in range(n_classes))
    names = tuple(str(c) for c in class_names)
    if len(names) != n_classes:
        raise CalcoreError(
            f"{ctx.source}: {len(names)} class names given for {n_classes} score columns. "
            f"Give exactly one name per column."
        )
    for k, name in enumerate(names):
        if not name.strip():
            raise CalcoreError(
                f"{ctx.source}: class name {k} is blank. Give every class a non-empty name."
            )
    seen: dict[str, int] = {}
    for k, name in enumerate(names):
        if name in seen:
            raise CalcoreError(
                f"{ctx.source}: class name {quoted(name)} is used for classes {seen[name]} and "
                f"{k}. Class names must be distinct."
            )
        seen[name] = k
    return names


def _format_class_list(class_names: Sequence[str], limit: int = 20) -> str:
    return quoted_list(class_names, limit=limit, what="classes")


#: A class index as a label writes it: ASCII digits without sign, spaces, underscores
#: or leading zeros ("0", "7", "12"; not "07", "+7", " 7", "1_2" or "٧").
_INDEX_LABEL = re.compile(r"0|[1-9][0-9]*")


def index_label(text: str) -> int | None:
    """The class index that a label writes, or ``None`` if it is not one.

    Only the canonical form counts (see :data:`_INDEX_LABEL`): Python's ``int()`` also
    reads ``" 2"``, ``"+2"``, ``"02"``, ``"1_0"`` and digits of other scripts
    (``"٢"``, ``"２"``), which a file should not turn into class indices unnoticed.

    Examples
    --------
    >>> [index_label(t) for t in ("0", "12", "012", "+1", " 2", "1_0", "\u0662")]
    [0, 12, None, None, None, None, None]
    """
    return int(text) if _INDEX_LABEL.fullmatch(text) else None


def reads_as_integer(text: str) -> bool:
    """Whether Python's ``int()`` reads ``text``, canonical or not (``" 2"``, ``"٢"``, ...)."""
    try:
        int(text)
    except ValueError:
        return False
    return True


def _label_not_a_class(value: str, names: Sequence[str], where: str) -> CalcoreError:
    """The message for a label that is neither a class name nor a class index."""
    valid = (
        f"valid classes are {_format_class_list(names)} (or integer indices 0..{len(names) - 1})"
    )
    alike = unicodedata.normalize("NFC", value)
    twin = next((n for n in names if unicodedata.normalize("NFC", n) == alike), None)
    if twin is not None:
        return CalcoreError(
            f"{where}: label {quoted(value, code_points=True)} prints like the class "
            f"{quoted(twin, code_points=True)} but is written with other code points (Unicode "
            f"normalisation). Write the labels and the column names the same way (e.g. both "
            f"in NFC: unicodedata.normalize('NFC', text))."
        )
    if reads_as_integer(value) and 0 <= int(value) < len(names):
        return CalcoreError(
            f"{where}: label {quoted(value, code_points=not value.isascii())} is not a class "
            f"name, and is not written as a class index: an index is written with the ASCII "
            f"digits 0-9 only, without sign, spaces, underscores or leading zeros. Write "
            f"{int(value)} if it means class {quoted(names[int(value)])}, or the class name; "
            f"{valid}."
        )
    return CalcoreError(
        f"{where}: label {quoted(value, code_points=not value.isascii())} is not a class; "
        f"{valid}. Fix the label, or check that the score columns (one per class) are the "
        f"ones you meant."
    )


def check_label_names(
    values, class_names: Sequence[str], *, ctx: InputContext = InputContext("labels")
) -> tuple[np.ndarray, str]:
    """Map labels given as class names, or as integer indices written as text, to int64.

    Parameters
    ----------
    values : array_like of str, shape (n_samples,)
        The labels as they appear in the input (e.g. a CSV column read as text).
    class_names : sequence of str
        The classes, in score-column order.
    ctx : InputContext
        How to name rows in error messages (the label column goes in ``ctx.row``).

    Returns
    -------
    labels : ndarray of shape (n_samples,), int64
        Class indices.
    kind : {"names", "indices"}
        ``"names"`` when every label is a class name (this wins when class
        names are themselves numbers), ``"indices"`` when every label is an
        integer ``0 .. n_classes - 1`` written canonically (:func:`index_label`:
        ASCII digits, no sign, spaces, underscores or leading zeros).

    Raises
    ------
    CalcoreError
        A label that is neither a class name nor a valid index (the first one is
        named; an index written otherwise, such as ``" 2"``, ``"+2"``, ``"02"`` or
        ``"٢"``, is refused with the way to write it, and a label that prints like a
        class name shows the code points of both), labels mixing names and indices,
        or integer labels that are ambiguous because the class names are integers in
        another order.
    """
    names = tuple(class_names)
    arr = np.asarray(values).astype(str)
    # np.unique makes the mapping cost O(n log n) in C plus a Python loop over
    # the few distinct values only.
    uniq, inverse = np.unique(arr, return_inverse=True)
    lookup = {name: k for k, name in enumerate(names)}
    by_name = np.array([lookup.get(u, -1) for u in uniq], dtype=np.int64)
    if (by_name >= 0).all():
        return by_name[inverse].reshape(arr.shape), "names"
    as_int = [index_label(u) for u in uniq]
    by_index = np.array(
        [-1 if v is None or not 0 <= v < len(names) else v for v in as_int], dtype=np.int64
    )
    neither = (by_name < 0) & (by_index < 0)
    if neither.any():
        i = int(np.argmax(neither[inverse]))
        raise _label_not_a_class(arr[i].item(), names, ctx.where(i))
    if not (by_index >= 0).all():
        i = int(np.argmax((by_index < 0)[inverse]))
        k = int(np.argmax((by_name < 0)[inverse]))
        raise CalcoreError(
            f"{ctx.source}: labels mix class names ({ctx.row(i)}: {quoted(arr[i].item())}) and "
            f"integer indices ({ctx.row(k)}: {quoted(arr[k].item())}). Use one convention for "
            f"the whole column."
        )
    # Names that int() reads (" 1", "01", ...) make indices ambiguous too.
    numeric_names = all(reads_as_integer(n) for n in names)
    if numeric_names and names != tuple(str(k) for k in range(len(names))):
        k = int(np.argmax((by_name < 0)[inverse]))
        raise CalcoreError(
            f"{ctx.where(k)}: label {quoted(arr[k].item())} is not one of the class names "
            f"{_format_class_list(names)}, and reading it as a column index would be ambiguous "
            f"because the class names are numbers too. Write the labels as class names."
        )
    return by_index[inverse].reshape(arr.shape), "indices"


def check_binary_probs(p, *, ctx: InputContext = InputContext("probs")) -> np.ndarray:
    """Validate one column of P(positive class) and return ``[1 - p, p]`` as float64.

    Parameters
    ----------
    p : array_like of shape (n_samples,)
        Probabilities of the positive class.
    ctx : InputContext
        ``ctx.columns`` should hold the one column name.

    Returns
    -------
    probs : ndarray of shape (n_samples, 2), float64
        Column 0 is the negative class, column 1 the positive class.

    Raises
    ------
    CalcoreError
        Non-numeric, non-finite or out-of-range values (the first one is named).
    """
    arr = np.asarray(p)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise CalcoreError(f"{ctx.source}: probabilities must be numeric, got dtype {arr.dtype}.")
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise CalcoreError(
            f"{ctx.source}: expected one non-empty column of probabilities, got shape {arr.shape}."
        )
    col = np.asarray(arr, dtype=np.float64)[:, None]
    _check_finite(col, name="probability", ctx=ctx)
    outside = (col < 0) | (col > 1)
    if outside.any():
        i, j = _first_bad(outside)
        raise CalcoreError(
            f"{ctx.where(i, j)}: probability {col[i, 0].item()!r} is outside [0, 1]. A single "
            f"score column must hold P(positive class). {LOGITS_FIX}",
            option="scores_logits",
            fix=LOGITS_FIX,
        )
    return np.column_stack([1.0 - col[:, 0], col[:, 0]])


def refuse_weights(preds, what: str) -> None:
    """Raise for weighted predictions in a function that does not take row weights yet,
    rather than silently compute an unweighted result."""
    if getattr(preds, "sample_weight", None) is not None:
        raise CalcoreError(
            f"{what} does not use row weights yet, and these predictions carry them "
            f"(sample_weight, e.g. from a weight column). To compute it on the rows "
            f"unweighted, pass preds.with_sample_weight(None)."
        )


def row_weights(preds, sample_weight) -> np.ndarray | None:
    """The weights a function uses: ``sample_weight`` if given (checked), else the
    predictions' own (``preds.sample_weight``, from a weight column or
    :meth:`~calcore.Predictions.with_sample_weight`, checked when attached), else None."""
    if sample_weight is None:
        w = preds.sample_weight
        if w is not None and w.size and not (w > 0).any():  # e.g. a subset of weight-0 rows
            raise CalcoreError(
                "every row of these predictions has weight 0 (sample_weight), so there is "
                "nothing to evaluate or fit; choose rows with a positive weight."
            )
        return w
    return check_sample_weight(sample_weight, preds.n_samples)


def check_sample_weight(
    weights,
    n_rows: int,
    *,
    source: str = "sample_weight",
    row=_default_row,
    column: str | None = None,
    allow_all_zero: bool = False,
) -> np.ndarray:
    """Row weights as float64, or a CalcoreError naming the first bad one.

    Weights are frequency weights: finite, non-negative, one per row, not all zero
    (``allow_all_zero`` for one batch of a stream, checked on the whole stream instead).
    ``row(i)`` and ``column`` name the offending cell in messages.
    """
    w = np.asarray(weights)
    if w.dtype == bool or not (
        np.issubdtype(w.dtype, np.floating) or np.issubdtype(w.dtype, np.integer)
    ):
        raise CalcoreError(f"{source}: weights must be numbers, got dtype {w.dtype}.")
    if w.shape != (n_rows,):
        raise CalcoreError(
            f"{source}: one weight per row is needed, shape ({n_rows},); got shape {w.shape}."
        )
    w = w.astype(np.float64)
    # A subnormal weight has lost significant bits already (and its products with
    # probabilities underflow to 0), so a row's share would be silently wrong.
    bad = ~np.isfinite(w) | (w < 0) | ((w > 0) & (w < _SMALLEST_WEIGHT))
    if bad.any():
        i = int(np.argmax(bad))
        value = float(w[i])
        # a file's cell as the loader names it ("file, row k, column 'c': ..."), else the row
        where = (
            f"{source}, {row(i)}, column {quoted(column)}: weight {value!r}"
            if column is not None
            else f"{source}: {row(i)} has weight {value!r}"
        )
        raise CalcoreError(
            f"{where}; weights must be finite and 0 (leaves the row out) or from "
            f"{_SMALLEST_WEIGHT:.3g} (the smallest float64 with full precision). "
            "Fix or drop that row, or rescale every weight by one factor."
        )
    if n_rows and not allow_all_zero and not (w > 0).any():
        raise CalcoreError(f"{source}: every weight is 0, so there is nothing to evaluate.")
    with np.errstate(over="ignore"):  # finite weights may sum to inf: refused just below
        total = float(np.sum(w))
    check_total_weight(total, source=source, column=column)
    return w


#: Positive weights below this are subnormal floats (fewer significant bits).
_SMALLEST_WEIGHT = float(np.finfo(np.float64).tiny)


def check_total_weight(total: float, *, source: str, column: str | None = None) -> float:
    """``total`` (the weight of the rows evaluated together), or a CalcoreError when it
    exceeds :data:`calcore.foundation.limits.MAX_TOTAL_WEIGHT` (2**53), beyond which float64 sums
    of frequency weights, equal-mass ranks and bin counts are no longer exact.

    Examples
    --------
    >>> check_total_weight(1e6, source="w")
    1000000.0
    >>> check_total_weight(1e17, source="w")
    Traceback (most recent call last):
    ...
    calcore.foundation.errors.CalcoreError: w: the rows' total weight is 1e+17, above 2**53 ...
    """
    if not total <= MAX_TOTAL_WEIGHT:  # also catches an infinite or NaN total
        named = f", column {quoted(column)}" if column is not None else ""
        raise CalcoreError(
            f"{source}{named}: the rows' total weight is {total:.3g}, above 2**53 = "
            f"{MAX_TOTAL_WEIGHT:.3g}, the largest total at which float64 sums of weights, "
            "equal-mass ranks and bin counts stay exact. Divide every weight by one "
            "common factor."
        )
    return total


def frozen_array(arr: np.ndarray | None, *, owned: bool) -> np.ndarray | None:
    """``arr``'s values in a read-only array that no one else can write to.

    The one rule for copying or not: an ``arr`` the caller hands over (``owned``) is made
    read-only in place, as it is (no copy, whatever its memory layout); one it does not
    own is shared as it is when it is already read-only, owns its memory and is C-ordered
    (nothing can write to it), and copied otherwise, in C order, the copy made read-only.

    Parameters
    ----------
    arr : ndarray or None
        None is returned as is.
    owned : bool
        The caller keeps no writable reference to ``arr`` or to the memory it views (it
        made it, or it views memory that is itself read-only). Never True for an array a
        user passed in: that would freeze the user's array under them.

    Returns
    -------
    ndarray or None
        ``arr`` itself, made read-only, or a read-only C-ordered copy.

    Examples
    --------
    >>> a = np.arange(3.0)
    >>> frozen_array(a, owned=True) is a, a.flags.writeable
    (True, False)
    >>> b = np.arange(3.0)
    >>> frozen_array(b, owned=False) is b, b.flags.writeable  # copied: b is the caller's
    (False, True)
    """
    if arr is None:
        return None
    if owned or (not arr.flags.writeable and arr.base is None and arr.flags.c_contiguous):
        arr.flags.writeable = False
        return arr
    copy = np.array(arr, order="C")
    copy.flags.writeable = False
    return copy


class ReadOnlyDict(dict):
    """A dict that cannot be changed once made: a result's mapping, shared safely.

    A ``dict`` subclass, so that ``json.dumps``, ``isinstance(x, dict)``, ``==``,
    ``dict(x)`` and ``x | other`` (a new plain dict) work as on a dict; every method that
    would change it raises ``TypeError``. It pickles and copies as itself.

    Examples
    --------
    >>> d = ReadOnlyDict({"ece": 0.1})
    >>> d["ece"], d | {"mce": 0.3}
    (0.1, {'ece': 0.1, 'mce': 0.3})
    >>> d["ece"] = 0.2
    Traceback (most recent call last):
    ...
    TypeError: ReadOnlyDict is read-only: build a new dict (dict(d) | {...}) instead.
    """

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            f"{type(self).__name__} is read-only: build a new dict (dict(d) | {{...}}) instead."
        )

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        # rebuilt by frozen_value: the unpickled arrays in it are made read-only again
        return frozen_value, (dict(self),)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self  # nothing in it can change: a copy would be the same


def frozen_value(value):
    """``value`` made immutable for a result: an array read-only (in place: a result's
    arrays are its own), a dict a :class:`ReadOnlyDict` of frozen values; anything else
    (numbers, strings, tuples, frozen dataclasses) as it is.

    Examples
    --------
    >>> v = frozen_value({"ece": np.zeros(2)})
    >>> type(v).__name__, v["ece"].flags.writeable
    ('ReadOnlyDict', False)
    """
    if isinstance(value, np.ndarray):
        return frozen_array(value, owned=True)
    if isinstance(value, dict):
        return ReadOnlyDict({k: frozen_value(v) for k, v in value.items()})
    return value


def freeze_fields(result) -> None:
    """Make every array and dict field of a frozen dataclass immutable (its
    ``__post_init__`` calls this): results are shared across sessions (the dashboard's
    ``st.cache_resource``), so no reader may change what another reads.

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class Result:
    ...     values: dict
    ...     def __post_init__(self):
    ...         freeze_fields(self)
    >>> Result({"a": np.ones(2)}).values["a"][0] = 2.0
    Traceback (most recent call last):
    ...
    ValueError: assignment destination is read-only
    """
    for f in fields(result):
        value = getattr(result, f.name)
        frozen = frozen_value(value)
        if frozen is not value:
            object.__setattr__(result, f.name, frozen)
