"""Slices of the rows: by the values of metadata columns, ranges or periods, crossed.

A slice specification is a column name with an optional grouping after a colon:

* ``"country"``: one slice per value (categorical, boolean, integer columns; numeric
  columns with at most :data:`~calcore.predictions.metadata.MAX_SLICE_VALUES` distinct values);
* ``"age:q4"``: numeric or integer columns cut into ``k`` quantile ranges (2 to 100),
  ``[min, c1], (c1, c2], ..., (c_k-1, max]`` at the data's ``j/k`` quantiles; ties never
  split, so there may be fewer ranges;
* ``"date:day"``, ``"date:week"`` (weeks start on Monday, named by that Monday),
  ``"date:month"``: datetime columns by period. A datetime column without a period is
  grouped by day when it spans at most 92 days, by week up to 2 years, else by month.

Two specifications cross: every present combination of values is a slice. Missing
values form their own slice, :data:`~calcore.predictions.metadata.MISSING` (``"(no value)"`` in a
column that holds the text ``"(missing)"`` as a value: two slices never share a name).
More than ``MAX_SLICE_VALUES`` slices, an id-like column, an unknown column or a grouping that
does not fit the column's kind is a :class:`~calcore.CalcoreError` naming the column
and the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import freeze_fields, frozen_array
from calcore.predictions.metadata import (
    EXACT_FLOAT_INTEGERS,
    MAX_SLICE_VALUES,
    MISSING,
    MetadataColumn,
)

__all__ = [
    "Slicing",
    "SliceLabels",
    "SliceSpec",
    "parse_slice_spec",
    "slicing_of",
    "PERIODS",
    "check_exact_ranges",
]

#: The missing values' slice when a column holds the value ``"(missing)"`` itself.
MISSING_WHEN_TAKEN = "(no value)"
#: Periods of datetime slices.
PERIODS = ("day", "week", "month")
_QUANTILES = re.compile(r"q(\d+)")
_MAX_QUANTILES = 100
# Spans (days) up to which a datetime column without a period is sliced by day / week.
_AUTO_DAY_SPAN, _AUTO_WEEK_SPAN = 92, 731


@dataclass(frozen=True)
class SliceSpec:
    """A column and how its values are grouped (None: value by value, or the default period).

    Examples
    --------
    >>> parse_slice_spec("age:q4"), parse_slice_spec("country").grouping
    (SliceSpec(column='age', grouping='q4'), None)
    """

    column: str
    grouping: str | None = None

    def __str__(self) -> str:
        return self.column if self.grouping is None else f"{self.column}:{self.grouping}"


def parse_slice_spec(text) -> SliceSpec:
    """``"column"`` or ``"column:grouping"`` (``qK``, ``day``, ``week``, ``month``).

    A column whose name contains a colon is matched whole first by :func:`slicing_of`.
    """
    if isinstance(text, SliceSpec):
        return text
    text = str(text)
    column, sep, grouping = text.rpartition(":")
    if not sep or not column:
        return SliceSpec(text)
    grouping = grouping.strip().lower()
    if grouping not in PERIODS and not _QUANTILES.fullmatch(grouping):
        return SliceSpec(text)  # a colon that is part of the name
    return SliceSpec(column, grouping)


class SliceLabels:
    """``n_slices`` and ``labels`` of anything with ``values`` (per slice, a value per column)."""

    @property
    def n_slices(self) -> int:
        return len(self.values)

    @property
    def labels(self) -> tuple[str, ...]:
        """Each slice's name: its values joined by ``" | "``."""
        return tuple(" | ".join(v) for v in self.values)


@dataclass(frozen=True, eq=False)
class Slicing(SliceLabels):
    """Every row in exactly one slice.

    Attributes
    ----------
    columns : tuple of str
        The specifications sliced by (``"country"``, ``"date:week"``).
    codes : ndarray of intp, shape (n,)
        The slice of each row, ``0 .. n_slices - 1``.
    values : tuple of tuple of str
        Per slice, its value in each column.
    ordered : bool
        Whether the slices have a natural order (periods, ranges): then they are in it.
    kinds : tuple of str
        The metadata kind of each column sliced by (``("datetime",)`` for periods).
    resolved : tuple
        Per column, its period (datetime), its range edges (quantile ranges) or None.

    Examples
    --------
    >>> col = MetadataColumn("device", "categorical", np.array([1, 0, 1], np.int32),
    ...                      ("desktop", "mobile"), 2)  # fmt: skip
    >>> s = slicing_of({"device": col}, ["device"])
    >>> s.labels, s.rows(1).tolist()
    (('desktop', 'mobile'), [0, 2])
    """

    columns: tuple[str, ...]
    codes: np.ndarray
    values: tuple[tuple[str, ...], ...]
    ordered: bool = False
    kinds: tuple[str, ...] = ()
    #: Per column, what its grouping resolved to on these rows: the period of a datetime
    #: column, the edges of quantile ranges (a tuple of floats), else None. Other rows
    #: sliced ``like=`` this slicing get the same periods and ranges.
    resolved: tuple = ()

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    def rows(self, k: int) -> np.ndarray:
        """Indices of the rows of slice ``k``."""
        return np.flatnonzero(self.codes == k)

    def row_groups(self) -> list[np.ndarray]:
        """The rows of every slice (one stable sort instead of a scan per slice), read-only."""
        order = frozen_array(np.argsort(self.codes, kind="stable"), owned=True)
        bounds = np.searchsorted(self.codes[order], np.arange(self.n_slices + 1))
        return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def slicing_of(
    columns: dict, by, *, max_slices: int = MAX_SLICE_VALUES, like: "Slicing | None" = None
) -> Slicing:
    """The slices of rows by one or more specifications (crossed).

    Parameters
    ----------
    columns : dict of str to MetadataColumn
        E.g. ``preds.metadata``.
    by : str, SliceSpec, or a sequence of them
    max_slices : int
        Most slices allowed (after crossing).
    like : Slicing, optional
        A slicing of other rows by the same ``by``: its periods and quantile ranges are
        used instead of being chosen from these rows (so a slice means the same on a
        calibration and a test split). Values beyond its ranges join the first or last.

    Returns
    -------
    Slicing

    Raises
    ------
    CalcoreError
        Unknown column, id-like column, grouping unfit for the column, too many slices.

    Examples
    --------
    >>> from calcore.predictions.metadata import metadata_column
    >>> columns = {"age": metadata_column("age", [20, 30, 40, 50, np.nan]),
    ...            "ok": metadata_column("ok", [True, True, False, True, False])}  # fmt: skip
    >>> slicing_of(columns, ["age:q2", "ok"]).labels
    ('[20, 30] | True', '(30, 50] | False', '(30, 50] | True', '(missing) | False')
    """
    specs = [by] if isinstance(by, (str, SliceSpec)) else list(by)
    if not specs:
        raise CalcoreError("slicing needs at least one column.")
    if like is not None and len(like.resolved) != len(specs):
        raise ValueError("slicing_of: like= must slice by the same columns")
    fixed = like.resolved if like is not None else (None,) * len(specs)
    parts = [_one_column(columns, s, max_slices, f) for s, f in zip(specs, fixed, strict=True)]
    codes, values, ordered, *_ = parts[0]
    for more_codes, more_values, more_ordered, *_ in parts[1:]:
        combined = codes.astype(np.int64) * len(more_values) + more_codes
        present, codes = np.unique(combined, return_inverse=True)
        if present.size > max_slices:
            raise CalcoreError(
                f"slicing by {' x '.join(map(str, specs))} gives {present.size:,} slices, more "
                f"than {max_slices:,}. Slice by fewer or coarser columns."
            )
        values = [
            (*values[int(c) // len(more_values)], *more_values[int(c) % len(more_values)])
            for c in present
        ]
        ordered = ordered and more_ordered
    names = tuple(str(parse_slice_spec(s)) for s in specs)
    kinds = tuple(part[3] for part in parts)
    resolved = tuple(part[4] for part in parts)
    return Slicing(
        names,
        np.asarray(codes, dtype=np.intp),
        tuple(map(tuple, values)),
        ordered,
        kinds,
        resolved,
    )


def resolve_spec(spec, column_names) -> SliceSpec:
    """The specification of ``spec`` among ``column_names`` (a name with a colon in it is
    matched whole first), or an error naming the known columns."""
    text = str(spec)
    spec = SliceSpec(text) if text in column_names else parse_slice_spec(spec)
    if spec.column not in column_names:
        known = ", ".join(repr(c) for c in column_names) or "none"
        raise CalcoreError(
            f"no metadata column {spec.column!r} to slice by (metadata columns: {known}). "
            "Slice by one of them, or name the column in slice_columns= (--by) when loading."
        )
    return spec


def check_sliceable(col: MetadataColumn, grouping: str | None) -> None:
    """Refuse a column that cannot be sliced, or a grouping that does not fit its kind."""
    if col.kind == "other":
        raise CalcoreError(
            f"column {col.name!r} has a type that cannot be sliced (e.g. a list or a struct). "
            "Slice by a column of text, numbers, booleans or dates."
        )
    if not col.sliceable:
        raise CalcoreError(
            f"column {col.name!r} has {col.n_distinct:,} distinct values (id-like), too many "
            f"for slicing (at most {MAX_SLICE_VALUES:,}). Slice by a coarser column."
        )
    if grouping in PERIODS and col.kind != "datetime":
        raise CalcoreError(
            f"column {col.name!r} is {col.kind}, not datetime: it cannot be grouped by "
            f"{grouping}. Store dates as ISO 8601 text (2026-11-24) or as a date type."
        )
    if grouping is not None and grouping not in PERIODS and col.kind not in ("integer", "numeric"):
        raise CalcoreError(
            f"column {col.name!r} is {col.kind}: quantile ranges ({grouping}) need a numeric "
            "column. Slice by its values instead."
        )


def column_slices(col: MetadataColumn, grouping: str | None, max_slices: int, *, streamed=False):
    """``(codes, names, keys, ordered)`` of one checked column: each row's slice (missing
    values: ``len(names)``), the present values' slice names in their order, a sort key per
    name (the number itself for numbers by value, else the name) and whether the order is
    natural; not for quantile ranges (:func:`range_slices`). ``streamed``: the column is a
    batch of a stream (for the message of a column with too many values)."""
    missing = col.missing()
    if col.kind in ("categorical", "boolean"):
        codes = np.where(missing, len(col.categories), col.values).astype(np.intp)
        return codes, list(col.categories), list(col.categories), False
    if col.kind == "datetime":
        codes, names = _periods(col, grouping or _auto_period(col), missing)
        return codes, names, list(names), True
    if grouping is not None:  # the edges come from every row: slicing_of, BatchSlicer
        raise ValueError("quantile ranges are cut by range_slices with the column's edges")
    present = col.values[~missing]
    distinct = np.unique(present)
    if distinct.size > max_slices:
        fix = (
            "Slice by a coarser column, or load the file whole to cut it into quantile ranges."
            if streamed
            else f"Slice it into quantile ranges: '{col.name}:q5' (--by {col.name}:q5)."
        )
        raise CalcoreError(
            f"column {col.name!r} is {col.kind} with {distinct.size:,} distinct values, "
            f"too many to slice value by value (at most {max_slices:,}). {fix}"
        )
    codes = np.full(col.values.shape, distinct.size, dtype=np.intp)
    codes[~missing] = np.searchsorted(distinct, present)
    return codes, [_value_name(v) for v in distinct], distinct.tolist(), True


def missing_name(names) -> str:
    """The missing values' slice name: :data:`MISSING`, unless a value is spelled so."""
    return MISSING if MISSING not in names else MISSING_WHEN_TAKEN


def _one_column(columns: dict, spec, max_slices: int, fixed=None):
    """(codes, values as 1-tuples, ordered, kind, resolved grouping) of one specification,
    present slices only; ``fixed``: a resolved grouping of other rows to use."""
    spec = resolve_spec(spec, columns)
    col: MetadataColumn = columns[spec.column]
    check_sliceable(col, spec.grouping)
    resolved = fixed
    if resolved is None and col.kind == "datetime":
        resolved = spec.grouping or _auto_period(col)
    elif resolved is None and spec.grouping is not None and spec.grouping not in PERIODS:
        edges = _quantile_edges(col, quantile_count(col.name, spec.grouping))
        resolved = None if edges is None else tuple(edges.tolist())
    if col.kind == "datetime":
        codes, names, _, ordered = column_slices(col, resolved, max_slices)
    elif spec.grouping is not None:
        codes, names = range_slices(
            col.values, col.missing(), None if resolved is None else np.asarray(resolved)
        )
        ordered = True
    else:
        codes, names, _, ordered = column_slices(col, None, max_slices)
    # a value spelled "(missing)" keeps its name; the missing values' slice takes another
    names.append(missing_name(names))
    used, codes = np.unique(codes, return_inverse=True)
    if used.size > max_slices:
        raise CalcoreError(
            f"column {col.name!r} gives {used.size:,} slices, more than {max_slices:,}. "
            "Slice by a coarser grouping."
        )
    return codes.reshape(-1), [(names[int(u)],) for u in used], ordered, col.kind, resolved


def _number(v) -> str:
    """A number as a range's edge is shown: integers whole, other values to 6 digits."""
    if isinstance(v, (int, np.integer)):
        return str(int(v))  # exact at any size (an int64 id above 2**53)
    return str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else f"{v:.6g}"


def _value_name(v) -> str:
    """A value's slice name, a function of the value alone (the batches of a stream name
    it alike) and never shared by two values: :func:`_number` when that reads back as the
    value, else the shortest text that does (``9007199254740994.0``, ``0.1234567``)."""
    name = _number(v)
    if isinstance(v, (int, np.integer)) or float(name) == float(v):
        return name
    return repr(float(v))


def check_exact_ranges(column: str, values: np.ndarray) -> None:
    """Refuse quantile ranges of integers beyond 2**53: their ranks are found and their
    edges compared as float64 (also on a stream), where such integers are not exact.

    Raises
    ------
    CalcoreError
        Naming the column, its largest magnitude and the limit.
    """
    if values.dtype.kind not in "iu" or values.size == 0:
        return
    largest = max(abs(int(values.min())), abs(int(values.max())))
    if largest > EXACT_FLOAT_INTEGERS:
        raise CalcoreError(
            f"column {column!r} holds integers up to {largest:,} in magnitude, beyond 2**53 "
            f"({EXACT_FLOAT_INTEGERS:,}), where quantile ranges cannot be cut exactly. Slice "
            f"it by value ('{column}', e.g. an id), or by a coarser column."
        )


def quantile_count(column: str, grouping: str) -> int:
    """The ``k`` of a ``"qK"`` grouping, checked (2 to 100)."""
    k = int(grouping[1:])
    if not 2 <= k <= _MAX_QUANTILES:
        raise CalcoreError(
            f"column {column!r}: q{k} asks for {k} quantile ranges; use 2 to {_MAX_QUANTILES}."
        )
    return k


def quantile_ranks(n: int, k: int) -> np.ndarray:
    """1-based ranks of the ``k``-quantile cuts of ``n`` values: ``ceil(n j / k)``, j = 1..k-1.

    The inverted-CDF quantile (Hyndman & Fan's definition 1, numpy's "inverted_cdf"): the
    smallest value with at least a share ``j / k`` of the values at or below it. Computed
    in integers, so a stream (which finds values by rank) and memory cut alike.

    Examples
    --------
    >>> quantile_ranks(10, 4).tolist()
    [3, 5, 8]
    """
    j = np.arange(1, k, dtype=np.int64)
    return (np.int64(n) * j + (k - 1)) // k


def range_edges(low: float, cut_values, high: float) -> np.ndarray:
    """``[min, c1, ..., max]`` from the values at the quantile ranks: duplicates removed and
    cuts at the maximum dropped, so a value never straddles two ranges."""
    cuts = np.unique(np.asarray(cut_values, dtype=np.float64))
    return np.concatenate(([low], cuts[cuts < high], [high]))


def range_slices(values: np.ndarray, missing: np.ndarray, edges) -> tuple[np.ndarray, list]:
    """Each value's range (missing: ``len(names)``) and the ranges' names.

    Ranges are closed on the right, ``[min, c1], (c1, c2], ..., (c_k-1, max]``: a cut's
    value goes with the values below it, as the quantile's definition says. ``edges``
    None: the column has no value (no range).
    """
    if edges is None:
        return np.zeros(values.shape, dtype=np.intp), []
    codes = np.full(values.shape, edges.size - 1, dtype=np.intp)
    codes[~missing] = np.searchsorted(edges[1:-1], values[~missing], side="left")
    names = [
        f"{'[' if j == 0 else '('}{_number(a)}, {_number(b)}]"
        for j, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True))
    ]
    return codes, names


def _quantile_edges(col: MetadataColumn, k: int) -> np.ndarray | None:
    """The edges of ``k`` quantile ranges of a column in memory (None: no value)."""
    present = col.values[~col.missing()]
    if present.size == 0:
        return None
    check_exact_ranges(col.name, present)
    n = present.size
    ranks = np.concatenate(([1], quantile_ranks(n, k), [n]))
    found = np.partition(present, ranks - 1)[ranks - 1]
    return range_edges(found[0], found[1:-1], found[-1])


def _auto_period(col: MetadataColumn) -> str:
    days = col.values[~col.missing()].astype("datetime64[D]")
    if days.size == 0:
        return "day"
    span = int((days.max() - days.min()).astype(np.int64))
    return "day" if span <= _AUTO_DAY_SPAN else "week" if span <= _AUTO_WEEK_SPAN else "month"


def _periods(col: MetadataColumn, period: str, missing: np.ndarray):
    """Codes and names of the days, weeks (from Monday) or months of a datetime column."""
    days = col.values.astype("datetime64[D]")
    if period == "month":
        start = days.astype("datetime64[M]")
        fmt = [str(m) for m in np.unique(start[~missing])]
    else:
        start = days
        if period == "week":  # 1970-01-01 was a Thursday: shift to the Monday on or before
            offset = (days.astype(np.int64) + 3) % 7
            start = days - offset.astype("timedelta64[D]")
        fmt = [str(d) if period == "day" else f"week of {d}" for d in np.unique(start[~missing])]
    distinct = np.unique(start[~missing])
    codes = np.full(days.shape, distinct.size, dtype=np.intp)
    codes[~missing] = np.searchsorted(distinct, start[~missing])
    return codes, fmt
