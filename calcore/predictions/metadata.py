"""The extra columns of a predictions file (country, device, date...), kept for slicing.

A loader turns every column that is neither label, split, weight nor score into a
:class:`MetadataColumn`: its kind, its values in a compact form and how many distinct
values it has. Categorical values are stored as codes into at most
:data:`MAX_SLICE_VALUES` categories; a text column with more distinct values (an id, a
URL) is counted and reported as ``"id-like"``, its values are not kept, so it never
holds memory beyond its read. :mod:`calcore.predictions.slicing` turns a column into slices.

Text cells (CSV, Parquet string columns, arrays of str) are factorised once; the kind
comes from the distinct values alone: all ``true``/``false`` -> boolean, all integers
(within the 64-bit range) -> integer, all numbers -> numeric, all ISO 8601 dates (``2026-11-24``,
``2026-11-24T08:00:00``, with an optional ``Z`` or offset) -> datetime, else
categorical, or id-like beyond :data:`MAX_SLICE_VALUES` values. One value that does
not fit makes the column categorical: a date column with a typo is sliced by its text,
never silently coerced. Empty cells (and, in CSV, pandas' NA strings: ``NA``,
``null``...) are missing.

Integers are kept as integers (int64, or uint64 above int64's range), never as float64:
hashed ids above 2**53 that differ in their last bits would otherwise become one value
and merge two slices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from calcore.foundation.validation import frozen_array

__all__ = [
    "MetadataColumn",
    "METADATA_KINDS",
    "MAX_SLICE_VALUES",
    "MISSING",
    "metadata_column",
    "concat_columns",
    "metadata_from_text",
    "numeric_column",
    "integer_column",
    "EXACT_FLOAT_INTEGERS",
]

#: Kinds of metadata columns, in the words of the load report.
METADATA_KINDS = ("categorical", "boolean", "integer", "numeric", "datetime", "id-like", "other")
#: Most distinct values a column may have to be sliced value by value (numeric columns
#: with more are sliced into quantile ranges on request; text columns with more are id-like).
MAX_SLICE_VALUES = 1000
#: The slice of rows whose value is missing.
MISSING = "(missing)"
#: Integers of at most this magnitude are exact as float64 (2**53): beyond it, two
#: integers can share a float, so integer columns are never stored as floats.
EXACT_FLOAT_INTEGERS = 2**53


@dataclass(frozen=True, eq=False)
class MetadataColumn:
    """One extra column of the rows of a :class:`~calcore.Predictions`.

    Attributes
    ----------
    name : str
    kind : str
        One of :data:`METADATA_KINDS`.
    values : ndarray or None
        ``categorical`` / ``boolean``: int32 codes into ``categories`` (-1: missing);
        ``integer``: int64, or uint64 when a value is above int64's range (exact; the
        missing rows are marked by ``mask`` and hold 0); ``numeric``: float64 (NaN:
        missing); ``datetime``:
        ``datetime64[s]`` (NaT: missing); ``id-like`` (text with more than
        :data:`MAX_SLICE_VALUES` values) and ``other`` (a type that cannot be sliced, such
        as a list): None, not kept.
    categories : tuple of str
        The category of each code (sorted), for categorical and boolean columns.
    n_distinct : int
        Distinct non-missing values.
    n_missing : int
    mask : ndarray of bool or None
        ``integer`` columns: the rows whose value is missing (None: none is). Other
        kinds mark missing values in ``values`` itself.

    Examples
    --------
    >>> col = MetadataColumn("device", "categorical", np.array([0, 1, -1, 0], np.int32),
    ...                      ("desktop", "mobile"), 2, 1)  # fmt: skip
    >>> col.describe()
    'device: categorical, 2 values, 1 missing'
    >>> col.take(np.array([1, 3])).values.tolist()
    [1, 0]
    """

    name: str
    kind: str
    values: np.ndarray | None
    categories: tuple[str, ...] = ()
    n_distinct: int = 0
    n_missing: int = 0
    mask: np.ndarray | None = None

    def __post_init__(self):
        if self.kind not in METADATA_KINDS:
            raise ValueError(f"unknown metadata kind {self.kind!r}")
        # handed over by the loaders (and, as before, a caller's arrays): frozen in place
        object.__setattr__(self, "values", frozen_array(self.values, owned=True))
        object.__setattr__(self, "mask", frozen_array(self.mask, owned=True))

    @property
    def n_rows(self) -> int | None:
        return None if self.values is None else int(self.values.shape[0])

    @property
    def sliceable(self) -> bool:
        """Whether the column can be sliced at all (every kind but id-like)."""
        return self.values is not None

    def missing(self) -> np.ndarray:
        """Boolean mask of the rows whose value is missing."""
        v = self.values
        if self.kind in ("categorical", "boolean"):
            return v < 0
        if self.kind == "datetime":
            return np.isnat(v)
        if v.dtype.kind in "iu":  # exact integers: missing rows are marked aside
            return np.zeros(v.shape, dtype=bool) if self.mask is None else self.mask
        return np.isnan(v)

    @classmethod
    def counted(
        cls, name: str, kind: str, values: np.ndarray, categories=(), mask=None
    ) -> "MetadataColumn":
        """A column with its distinct and missing values counted from ``values`` (and
        ``mask``, the missing rows of an integer column).

        Examples
        --------
        >>> MetadataColumn.counted("n", "integer", np.array([2.0, np.nan, 2.0])).describe()
        'n: integer, 1 values, 1 missing'
        """
        col = cls(name, kind, values, tuple(categories), mask=mask)
        missing = col.missing()
        distinct = int(np.unique(values[~missing]).size)
        return replace(col, n_distinct=distinct, n_missing=int(missing.sum()))

    def take(self, rows) -> "MetadataColumn":
        """The column at ``rows`` (an index array, boolean mask or slice); counts recomputed."""
        if self.values is None:
            return self
        rows = rows if isinstance(rows, slice) else np.asarray(rows)
        mask = None if self.mask is None else self.mask[rows]
        return MetadataColumn.counted(
            self.name, self.kind, self.values[rows], self.categories, mask
        )

    def summary(self) -> str:
        """``"categorical, 12 values, 3 missing"``: what the load report says of it."""
        if self.kind == "other":
            text = "a type that cannot be sliced (not kept)"
        else:
            text = f"{self.kind}, {self.n_distinct:,} values"
        if self.kind == "id-like":
            text += f" (more than {MAX_SLICE_VALUES:,}: not kept for slicing)"
        return text + (f", {self.n_missing:,} missing" if self.n_missing else "")

    def describe(self) -> str:
        """``"country: categorical, 12 values, 3 missing"``."""
        return f"{self.name}: {self.summary()}"


def concat_columns(parts) -> MetadataColumn | None:
    """One column of several parts' rows, one part after the other; counts recomputed.

    Categorical codes are mapped to the union of the parts' categories (sorted; beyond
    :data:`MAX_SLICE_VALUES` the column becomes id-like); exact integers stay exact
    (uint64 when a part needs it and every value fits). Columns whose values are not
    kept (id-like, other) stay so: the same column object if every part has it, else with
    the largest part's distinct count (at least that many) and the missing rows added.

    Parameters
    ----------
    parts : sequence of MetadataColumn
        The same column (name) of each part, in order.

    Returns
    -------
    MetadataColumn or None
        None when the parts' kinds differ, or integers cannot share one exact type:
        such a column cannot slice all the joined rows.

    Examples
    --------
    >>> a = metadata_column("device", ["mobile", "desktop"])
    >>> b = metadata_column("device", ["tablet", None])
    >>> both = concat_columns([a, b])
    >>> both.categories, both.values.tolist(), both.describe()
    (('desktop', 'mobile', 'tablet'), [1, 0, 2, -1], 'device: categorical, 3 values, 1 missing')
    """
    parts = list(parts)
    first = parts[0]
    if any(p.kind != first.kind for p in parts):
        return None
    if any(p.values is None for p in parts):
        if all(p is first for p in parts):
            return first
        distinct = max(p.n_distinct for p in parts)
        missing = sum(p.n_missing for p in parts)
        return MetadataColumn(first.name, first.kind, None, (), distinct, missing)
    if first.kind in ("categorical", "boolean"):
        return _concat_coded(parts)
    values = [p.values for p in parts]
    mask = None
    if first.kind == "integer":
        kinds = {v.dtype.kind for v in values}
        if len(kinds) > 1 and not kinds <= {"i", "u"}:  # exact and float-held integers
            return None
        if len(kinds) > 1:  # int64 and uint64 parts: uint64 if no int64 value is negative
            if any(v.dtype.kind == "i" and v.size and v.min() < 0 for v in values):
                return None
            values = [v.astype(np.uint64) for v in values]
        if any(p.mask is not None for p in parts):
            mask = np.concatenate([p.missing() for p in parts])
    return MetadataColumn.counted(first.name, first.kind, np.concatenate(values), (), mask)


def _concat_coded(parts) -> MetadataColumn:
    """Categorical or boolean parts joined on the union of their categories."""
    first = parts[0]
    if all(p.categories == first.categories for p in parts):
        codes = np.concatenate([p.values for p in parts])
        return MetadataColumn.counted(first.name, first.kind, codes, first.categories)
    union = sorted(set().union(*(p.categories for p in parts)))
    if len(union) > MAX_SLICE_VALUES:
        missing = sum(p.n_missing for p in parts)
        return MetadataColumn(first.name, "id-like", None, (), len(union), missing)
    position = {c: i for i, c in enumerate(union)}
    codes = []
    for p in parts:  # old code -> new code; the missing code -1 (the last entry) stays -1
        lookup = np.array([position[c] for c in p.categories] + [-1], dtype=np.int32)
        codes.append(lookup[p.values])
    return MetadataColumn.counted(first.name, first.kind, np.concatenate(codes), tuple(union))


def metadata_column(name: str, values) -> MetadataColumn:
    """A metadata column from an array of one value per row (or a MetadataColumn as is).

    Booleans, integers, floats (NaN missing) and datetimes keep their type; anything
    else is read as text cells (:func:`metadata_from_text`).

    Examples
    --------
    >>> metadata_column("age", np.array([31.0, np.nan, 45.5])).describe()
    'age: numeric, 2 values, 1 missing'
    """
    if isinstance(values, MetadataColumn):
        return values
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"metadata column {name!r} must be one-dimensional")
    if arr.dtype.kind == "b":
        return MetadataColumn.counted(name, "boolean", arr.astype(np.int32), ("False", "True"))
    if arr.dtype.kind in "iuf":
        return numeric_column(name, arr, integer=arr.dtype.kind != "f")
    if arr.dtype.kind == "M":
        return MetadataColumn.counted(name, "datetime", arr.astype("datetime64[s]"))
    return metadata_from_text(name, arr.astype(object))


def numeric_column(name: str, values, *, integer: bool) -> MetadataColumn:
    """A numeric column as float64 (NaN and infinities: missing); ``integer``: an integer
    column, exact when ``values`` are integers (:func:`integer_column`), else from floats
    that are whole numbers.

    Examples
    --------
    >>> numeric_column("x", [1, np.inf, 3], integer=True).describe()
    'x: integer, 2 values, 1 missing'
    """
    if integer and np.asarray(values).dtype.kind in "iu":
        return integer_column(name, np.asarray(values))
    v = np.asarray(values, dtype=np.float64)
    v = np.where(np.isfinite(v), v, np.nan)  # an infinity is not a slice value
    return MetadataColumn.counted(name, "integer" if integer else "numeric", v)


def integer_column(name: str, values: np.ndarray, missing=None) -> MetadataColumn:
    """An integer column kept exact: int64, or uint64 when a value is above int64's range
    (``missing``: a mask of the rows without a value).

    Examples
    --------
    >>> ids = integer_column("id", np.array([2**53 + 1, 2**53 + 2, 0]), np.array([0, 0, 1], bool))
    >>> ids.describe(), ids.values[:2].tolist()
    ('id: integer, 2 values, 1 missing', [9007199254740993, 9007199254740994])
    """
    v = np.asarray(values)
    if v.dtype.kind not in "iu":
        raise ValueError(f"integer_column: {name!r} has dtype {v.dtype}, not an integer one")
    fits_int64 = v.dtype.kind == "i" or v.size == 0 or v.max() <= np.iinfo(np.int64).max
    v = v.astype(np.int64 if fits_int64 else np.uint64)
    mask = None
    if missing is not None and np.any(missing):
        mask = np.asarray(missing, dtype=bool)
        v = np.where(mask, 0, v).astype(v.dtype)
    return MetadataColumn.counted(name, "integer", v, mask=mask)


_INTEGER = re.compile(r"[+-]?[0-9]+")
_ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?"
)
_BOOLEAN = {"true": 1, "false": 0}


def metadata_from_text(name: str, cells, *, categorical: bool = False) -> MetadataColumn:
    """A metadata column from text cells (``""`` or None: missing); ``categorical``: of
    that kind whatever the values (a streamed column whose first batch was text).

    Examples
    --------
    >>> metadata_from_text("day", np.array(["2026-11-02", "", "2026-11-03"], object)).kind
    'datetime'
    >>> metadata_from_text("n", np.array(["3", "4", "x"], object)).kind  # one non-number
    'categorical'
    """
    import pandas as pd  # on use: importing calcore loads no pandas

    codes, uniques = pd.factorize(np.asarray(cells, dtype=object), use_na_sentinel=True)
    # Vectorised over the distinct values: an id column has as many as rows.
    text = pd.Series(uniques, dtype=object).astype(str).str.strip()
    blank = (text == "").to_numpy()
    if blank.any():  # "" is a value to pandas: make it missing
        remap = np.where(blank, -1, np.cumsum(~blank) - 1)
        codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1)
        text = text[~blank].reset_index(drop=True)
    codes = np.asarray(codes)
    if text.empty:
        return _from_codes(name, "categorical", codes, np.empty(0, np.int32), ())
    if not categorical:
        typed = _typed_from_text(name, text, codes)
        if typed is not None:
            return typed
    distinct = text.unique()
    if distinct.size > MAX_SLICE_VALUES:  # no sort of a million ids
        return MetadataColumn(name, "id-like", None, (), int(distinct.size), int((codes < 0).sum()))
    categories = np.sort(distinct.astype(str))
    lookup = np.searchsorted(categories, text.to_numpy(dtype=str)).astype(np.int32)
    return _from_codes(name, "categorical", codes, lookup, tuple(categories.tolist()))


def _typed_from_text(name: str, text, codes) -> MetadataColumn | None:
    """The boolean, integer, numeric or datetime column the distinct texts all fit, if any."""
    lower = text.str.lower()
    if lower.isin(list(_BOOLEAN)).all():
        return _from_codes(
            name, "boolean", codes, lower.map(_BOOLEAN).to_numpy(np.int32), ("False", "True")
        )
    if _INTEGER.fullmatch(text.iloc[0]) and text.str.fullmatch(_INTEGER).all():
        integers = _as_integers(text)
        if integers is None:  # beyond 64 bits: no exact number, the text as written
            return None
        padded = np.append(integers, np.zeros(1, integers.dtype))  # code -1: the last
        return integer_column(name, padded[codes], codes < 0)
    numbers = _as_numbers(text)
    if numbers is not None:
        return numeric_column(name, np.append(numbers, np.nan)[codes], integer=False)
    dates = _as_dates(text)
    if dates is not None:
        values = np.append(dates, np.datetime64("NaT", "s"))[codes]
        return MetadataColumn.counted(name, "datetime", values)
    return None


def _from_codes(name, kind, codes, lookup, categories) -> MetadataColumn:
    """A coded column: ``lookup[code]`` per row (``-1`` for the missing code ``-1``)."""
    values = np.append(lookup, np.int32(-1)).astype(np.int32)[codes]  # code -1: the last
    return MetadataColumn.counted(name, kind, values, categories)


def _as_integers(text) -> np.ndarray | None:
    """Integers written plainly (``-12``, ``+7``, ``007``) as exact int64, or uint64 when
    one is above int64's range; None when they do not fit 64 bits."""
    cells = text.to_numpy(dtype=str)
    for dtype in (np.int64, np.uint64):
        try:
            return cells.astype(dtype)  # parsed exactly (never through a float)
        except OverflowError:
            continue
    return None


def _as_numbers(text) -> np.ndarray | None:
    """The values as float64 if every one is a finite number written plainly, else None."""
    import pandas as pd

    try:
        float(text.iloc[0])  # a cheap refusal for text columns (one value decides)
    except ValueError:
        return None
    out = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    if not np.isfinite(out).all():  # "abc", and also "nan" / "inf" written out
        return None
    return out


def _as_dates(text) -> np.ndarray | None:
    """The values as datetime64[s] (UTC) if every one is an ISO 8601 date, else None."""
    import pandas as pd

    if not _ISO_DATE.fullmatch(text.iloc[0]) or not text.str.fullmatch(_ISO_DATE).all():
        return None
    try:
        parsed = pd.to_datetime(text, format="ISO8601", utc=True)
    except (ValueError, OverflowError):
        return None
    return parsed.dt.tz_localize(None).to_numpy().astype("datetime64[s]")
