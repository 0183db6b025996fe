"""Slices of a streamed source's rows, batch by batch, with ids that hold for the whole stream.

In memory, :func:`calcore.predictions.slicing.slicing_of` sees a column whole. A stream shows it a
batch at a time, so :class:`BatchSlicer` gives every slice met an id in the order met
and maps each batch's rows to those ids; :meth:`BatchSlicer.slicing` then puts the slices
in the order :func:`~calcore.predictions.slicing.slicing_of` gives the same rows (values sorted,
missing last). Each batch's column is hashed once (pyarrow's ``dictionary_encode``,
pandas' ``factorize``) and only its distinct values are typed and named, with the
in-memory rules (:mod:`calcore.predictions.metadata`, :mod:`calcore.predictions.slicing`).

Quantile ranges (``"age:q4"``) need the column's quantiles over every row: the slicer
finds them first, by exact rank, in passes over the slice columns alone
(:meth:`BatchSlicer.wants_range_pass`; :class:`~calcore.foundation.exact_ranks.ExactRanks`,
usually two passes), so the ranges are those of the same rows in memory.

What a stream cannot do is refused up front, never approximated:

* a datetime column needs its period named (``"date:week"``), since the automatic one
  depends on the whole column's span;
* a column's kind is decided by the first batch with a value in it; a later batch whose
  values read as another kind (a date column with a typo further down) is an error that
  names the file and rows. Text that read as categories first stays text, so a later
  batch of digits is simply more categories. Integers and other numbers mix freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.exact_ranks import ExactRanks
from calcore.predictions.metadata import (
    MAX_SLICE_VALUES,
    MetadataColumn,
    metadata_column,
    metadata_from_text,
)
from calcore.predictions.slicing import (
    PERIODS,
    SliceLabels,
    check_exact_ranges,
    check_sliceable,
    column_slices,
    missing_name,
    quantile_count,
    quantile_ranks,
    range_edges,
    range_slices,
    resolve_spec,
)

__all__ = ["BatchSlicer", "QuantileCuts", "StreamSlicing", "used_dictionary_entries"]

# Kinds that name and order their values alike (a float key, _number's name).
_FAMILY = {"integer": "number", "numeric": "number"}


@dataclass(eq=False)
class BatchSlicer:
    """Stream-wide slice ids for the rows of every batch.

    Parameters
    ----------
    by : str, SliceSpec, or a sequence of them
        As in :func:`calcore.evaluate_by`; two or more cross.
    column_names : sequence of str
        The stream's slice columns (``PredictionStream.slice_columns``).
    max_slices : int
        Most slices allowed over the whole stream.

    Raises
    ------
    CalcoreError
        Unknown column, a quantile count out of range, and (on a batch) what
        :func:`slicing_of` refuses, a datetime column without a period, a kind that
        changes, too many slices.

    Examples
    --------
    >>> from types import SimpleNamespace as Batch
    >>> slicer = BatchSlicer("shop", ["shop"])
    >>> first = Batch(slice_values={"shop": np.array(["b", "b"], object)}, file="f", first_row=0)
    >>> later = Batch(slice_values={"shop": np.array(["a", None], object)}, file="f", first_row=2)
    >>> slicer.codes(first).tolist(), slicer.codes(later).tolist()  # ids in the order met
    ([0, 0], [1, 2])
    >>> s = slicer.slicing()
    >>> s.labels, s.place.tolist()  # sorted, missing last; place[id]: where each id is
    (('a', 'b', '(missing)'), [1, 0, 2])
    """

    by: object
    column_names: tuple
    max_slices: int = MAX_SLICE_VALUES
    _specs: list = field(init=False, repr=False)
    _kinds: list = field(init=False, repr=False)
    _ids: dict = field(init=False, repr=False, default_factory=dict)
    _entries: list = field(init=False, repr=False, default_factory=list)

    def __post_init__(self):
        one = isinstance(self.by, str) or not hasattr(self.by, "__iter__")
        specs = [self.by] if one else list(self.by)
        if not specs:
            raise CalcoreError("slicing needs at least one column.")
        self._specs = [resolve_spec(s, tuple(self.column_names)) for s in specs]
        self._kinds = [None] * len(self._specs)
        self._cuts = {
            j: QuantileCuts(quantile_count(spec.column, spec.grouping))
            for j, spec in enumerate(self._specs)
            if spec.grouping is not None and spec.grouping not in PERIODS
        }

    def wants_range_pass(self) -> bool:
        """Whether quantile ranges still need a pass over the slice columns
        (:meth:`observe_ranges` for every batch, then :meth:`end_range_pass`)."""
        return any(not cuts.done for cuts in self._cuts.values())

    def observe_ranges(self, batch) -> None:
        """Count a batch's values of the columns cut into quantile ranges (``batch`` as in
        :meth:`codes`; only its ``slice_values`` of those columns are read)."""
        for j, cuts in self._cuts.items():
            if cuts.done:
                continue
            spec = self._specs[j]
            numbers = self._numbers(batch, j, spec.column)
            if numbers is not None:  # counted as they are: hashing them costs more
                cuts.observe(numbers[~np.isnan(numbers)])
                continue
            distinct, index = _factorized(batch.slice_values[spec.column])
            if distinct is None:  # a nested Arrow type
                check_sliceable(MetadataColumn(spec.column, "other", None), spec.grouping)
            col = self._typed(spec.column, distinct, j, batch)
            if col.n_distinct == 0:
                continue
            check_sliceable(col, spec.grouping)
            counts = np.bincount(index[index >= 0], minlength=distinct.size)
            present = ~col.missing()
            check_exact_ranges(spec.column, col.values[present])
            cuts.observe(col.values[present].astype(np.float64), counts[present].astype(np.float64))

    def end_range_pass(self) -> None:
        """Close a pass of :meth:`observe_ranges`."""
        for cuts in self._cuts.values():
            if not cuts.done:
                cuts.end_pass()

    @property
    def n_slices(self) -> int:
        """Slices met so far."""
        return len(self._entries)

    def codes(self, batch) -> np.ndarray:
        """The slice id of each of ``batch``'s rows (new slices get the next ids).

        ``batch`` has ``slice_values`` (column -> raw values), ``file`` and ``first_row``
        (for messages), as a :class:`~calcore.io.stream.StreamBatch`.
        """
        parts = [self._column(batch, j, spec) for j, spec in enumerate(self._specs)]
        if len(parts) == 1:
            local, entries = parts[0]
            present = np.flatnonzero(np.bincount(local, minlength=len(entries)))
            table = np.full(len(entries), -1, dtype=np.intp)
            for k in present:
                table[k] = self._id(entries[k], batch)
            return table[local]
        # crossed: only the combinations present get an entry (two columns of 1,000 values
        # would otherwise make a million per batch)
        combined = np.zeros(parts[0][0].size, dtype=np.int64)
        for local, entries in parts:
            combined = combined * len(entries) + local
        present, inverse = np.unique(combined, return_inverse=True)
        table = np.empty(present.size, dtype=np.intp)
        for i, code in enumerate(present.tolist()):
            entry = ()
            for _, entries in reversed(parts):
                code, k = divmod(code, len(entries))
                entry = entries[k] + entry
            table[i] = self._id(entry, batch)
        return table[inverse.reshape(-1)]

    def _id(self, entry: tuple, batch) -> int:
        found = self._ids.get(entry)
        if found is None:
            found = self._ids[entry] = len(self._entries)
            self._entries.append(entry)
            if len(self._entries) > self.max_slices:
                raise CalcoreError(
                    f"{batch.file}, rows from {batch.first_row}: slicing by "
                    f"{' x '.join(map(str, self._specs))} gives more than {self.max_slices:,} "
                    "slices. Slice by fewer or coarser columns (a datetime column by week or "
                    "month)."
                )
        return found

    def _column(self, batch, j: int, spec):
        """Local codes of a batch's rows in one column and each code's entry
        ``((missing, sort key, name),)``; the missing entry last."""
        missing_entry = ((True, 0, None),)
        if j in self._cuts and self.wants_range_pass():
            raise RuntimeError("BatchSlicer: the quantile ranges' passes are not done")
        numbers = self._numbers(batch, j, spec.column) if j in self._cuts else None
        if numbers is not None:  # each row's range straight from its number
            codes, names = range_slices(numbers, np.isnan(numbers), self._cuts[j].edges)
            entries = [((False, k, name),) for k, name in enumerate(names)]
            return codes, entries + [missing_entry]
        distinct, index = _factorized(batch.slice_values[spec.column])
        if distinct is None:  # a nested Arrow type
            check_sliceable(MetadataColumn(spec.column, "other", None), spec.grouping)
        col = self._typed(spec.column, distinct, j, batch)
        if col.n_distinct == 0:  # all missing: this batch decides nothing
            return np.zeros(index.size, dtype=np.intp), [missing_entry]
        if not col.sliceable:  # id-like within one batch: say so, not as the whole column's count
            raise CalcoreError(
                f"{batch.file}, rows from {batch.first_row}: column {spec.column!r} has "
                f"{col.n_distinct:,} distinct values in one batch of {index.size:,} rows alone "
                f"(id-like), too many for slicing (at most {MAX_SLICE_VALUES:,}). Slice by a "
                "coarser column."
            )
        check_sliceable(col, spec.grouping)
        if col.kind == "datetime" and spec.grouping is None:
            raise CalcoreError(
                f"column {spec.column!r} is datetime: on a streamed source name its period, "
                f"'{spec.column}:day', '{spec.column}:week' or '{spec.column}:month' (in "
                "memory it is chosen from the whole column's span)."
            )
        if j in self._cuts:
            per_value, names = range_slices(col.values, col.missing(), self._cuts[j].edges)
            keys = list(range(len(names)))
        else:
            per_value, names, keys, _ = column_slices(
                col, spec.grouping, self.max_slices, streamed=True
            )
        per_value = np.append(per_value, len(names))  # index -1: a missing cell
        entries = [((False, key, name),) for key, name in zip(keys, names, strict=True)]
        entries.append(missing_entry)
        return per_value[index], entries

    def _numbers(self, batch, j: int, name: str) -> np.ndarray | None:
        """A batch's column as float64 (NaN: missing or infinite) when it is stored as
        numbers (an Arrow or numpy numeric array), typed like :func:`metadata_column`
        types it; None for text cells and other types (they are typed value by value)."""
        found = _numeric_values(batch.slice_values[name], name)
        if found is None:
            return None
        values, kind = found
        if not np.isnan(values).all():
            self._check_kind(name, kind, j, batch)
        return values

    def _typed(self, name: str, distinct, j: int, batch):
        """The batch's distinct values as a metadata column, of the stream's kind."""
        text = distinct.dtype.kind in "OUS"
        col = metadata_from_text(name, distinct) if text else metadata_column(name, distinct)
        if col.n_distinct == 0:
            return col
        if self._kinds[j] == "categorical" and text and col.kind != "categorical":
            return metadata_from_text(name, distinct, categorical=True)
        self._check_kind(name, col.kind, j, batch)
        return col

    def _check_kind(self, name: str, kind: str, j: int, batch) -> None:
        """Decide column ``j``'s kind on its first values; later ones must be of its family."""
        decided = self._kinds[j]
        if decided is None:
            self._kinds[j] = kind
        elif _FAMILY.get(kind, kind) != _FAMILY.get(decided, decided):
            raise CalcoreError(
                f"{batch.file}, column {name!r}, rows from {batch.first_row}: the values read "
                f"as {kind} here, but as {decided} in the stream's first rows; a streamed "
                "slice column must hold one kind of value throughout. Fix the values, or load "
                "the file whole (load_predictions types the column from every row)."
            )

    # ------------------------------------------------- engines (calcore.spark)
    def plan(self) -> dict:
        """What a task's slicer needs to give the rows this slicer's ids, as JSON-able
        values: the specs, the columns, the kinds decided so far, the quantile ranges' edges
        and the slices met so far, in id order (:meth:`from_plan`)."""
        if self.wants_range_pass():
            raise RuntimeError("BatchSlicer: the quantile ranges' passes are not done")
        return {
            "by": [str(s) for s in self._specs],
            "columns": list(self.column_names),
            "max_slices": int(self.max_slices),
            "kinds": list(self._kinds),
            "cuts": {
                str(j): None if c.edges is None else np.asarray(c.edges).tolist()
                for j, c in self._cuts.items()
            },
            "entries": [list(map(list, e)) for e in self._entries],
        }

    @classmethod
    def from_plan(cls, plan: dict) -> "BatchSlicer":
        """A slicer that continues :meth:`plan`'s (in another process)."""
        slicer = cls(plan["by"], tuple(plan["columns"]), max_slices=plan["max_slices"])
        slicer._kinds = list(plan["kinds"])
        for j, edges in plan["cuts"].items():
            cuts = slicer._cuts[int(j)]
            cuts.edges = None if edges is None else np.asarray(edges, dtype=np.float64)
            cuts.done = True
        for entry in plan["entries"]:
            entry = tuple(tuple(part) for part in entry)
            slicer._ids[entry] = len(slicer._entries)
            slicer._entries.append(entry)
        return slicer

    def entry(self, slice_id: int) -> tuple:
        """The entry ``((missing, sort key, name), ...)`` of a slice id (JSON-able)."""
        return self._entries[slice_id]

    def id_of(self, entry: tuple, batch) -> int:
        """The id of a slice entry met elsewhere (a new one gets the next id); ``batch``
        (``file``, ``first_row``) names where, if it makes too many slices."""
        return self._id(entry, batch)

    def kinds(self) -> list:
        """The kind decided for each slice column so far (None: no value yet)."""
        return list(self._kinds)

    def adopt_kinds(self, kinds, batch) -> None:
        """Check the kinds another process decided against this slicer's (same family),
        deciding those still open; ``batch`` names that part in the message."""
        for j, kind in enumerate(kinds):
            if kind is not None:
                self._check_kind(self._specs[j].column, kind, j, batch)

    def slicing(self) -> "StreamSlicing":
        """The slices met, in their natural order (as :func:`slicing_of` orders them).

        Raises
        ------
        CalcoreError
            No rows were sliced.
        """
        if not self._entries:
            raise CalcoreError("no rows to slice.")
        order = sorted(range(len(self._entries)), key=lambda i: _sort_key(self._entries[i]))
        place = np.empty(len(order), dtype=np.intp)
        place[order] = np.arange(len(order))
        missing = [
            missing_name({e[j][2] for e in self._entries if not e[j][0]})
            for j in range(len(self._specs))
        ]
        values = tuple(
            tuple(missing[j] if part[0] else part[2] for j, part in enumerate(self._entries[i]))
            for i in order
        )
        kinds = tuple(k or "categorical" for k in self._kinds)
        ordered = all(k in ("integer", "numeric", "datetime") for k in kinds)
        return StreamSlicing(tuple(map(str, self._specs)), values, ordered, kinds, place)


class QuantileCuts:
    """The edges of one column's ``k`` quantile ranges over every row of a stream.

    The values at the ranks of the minimum, the ``k - 1`` cuts
    (:func:`~calcore.predictions.slicing.quantile_ranks`) and the maximum are found by
    :class:`~calcore.foundation.exact_ranks.ExactRanks`, which orders non-negative floats:
    negative values are counted mirrored in a group of their own (the ``r``-th smallest of
    ``n_neg`` negatives is minus the ``(n_neg - r + 1)``-th smallest of their magnitudes).
    A batch's values come one by one (a numeric column) or as its distinct values with
    their counts (text cells, typed value by value).

    Examples
    --------
    >>> cuts = QuantileCuts(4)
    >>> values = np.array([-3.0, -1.0, 0.0, 2.0, 2.0, 5.0, 7.0, 8.0, 9.0, 10.0])
    >>> while not cuts.done:
    ...     cuts.observe(values[:4], np.ones(4)); cuts.observe(values[4:], np.ones(6))
    ...     cuts.end_pass()
    >>> cuts.edges.tolist()  # the ranks 1, 3, 5, 8 and 10 of ten values
    [-3.0, 0.0, 2.0, 8.0, 10.0]
    """

    def __init__(self, k: int):
        self.k = int(k)
        self.finder = ExactRanks(n_groups=2)
        self.n = self.n_negative = 0
        self.ranks = None  # 1-based ranks over all values, once the first pass has counted
        self.edges = None
        self.done = False

    def observe(self, values: np.ndarray, counts: np.ndarray | None = None) -> None:
        """Count finite values (``counts``: how often each occurs; once when None)."""
        negative = values < 0
        self.finder.observe(np.abs(values), (~negative).astype(np.intp), weights=counts)
        if self.ranks is None:
            self.n += int(values.size if counts is None else counts.sum())
            self.n_negative += int(
                np.count_nonzero(negative) if counts is None else counts[negative].sum()
            )

    def end_pass(self) -> None:
        if self.ranks is None:
            if self.n == 0:  # no value at all: no range
                self.done = True
                return
            self.ranks = np.concatenate(([1], quantile_ranks(self.n, self.k), [self.n]))
            neg = self.ranks <= self.n_negative
            self.finder.set_ranks(
                [self.n_negative - self.ranks[neg] + 1, self.ranks[~neg] - self.n_negative]
            )
        self.finder.end_pass()
        if self.finder.wants_pass():
            return
        mirrored, positive = self.finder.values()
        found = np.empty(self.ranks.size)
        neg = self.ranks <= self.n_negative
        found[neg], found[~neg] = -mirrored, positive
        self.edges = range_edges(found[0], found[1:-1], found[-1])
        self.done = True


@dataclass(frozen=True, eq=False)
class StreamSlicing(SliceLabels):
    """The slices of a stream, as :class:`~calcore.predictions.slicing.Slicing` without row codes.

    Attributes
    ----------
    columns, values, ordered, kinds :
        As in :class:`~calcore.predictions.slicing.Slicing`.
    place : ndarray of intp
        ``place[id]``: where the slice with that id (:meth:`BatchSlicer.codes`) is in
        ``values``.
    """

    columns: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    ordered: bool
    kinds: tuple[str, ...]
    place: np.ndarray


def _sort_key(entry: tuple):
    # missing last; then the key (numbers and names never meet within one column)
    return tuple((missing, key) for missing, key, _ in entry)


def _numeric_values(values, name: str):
    """``(float64 values, "integer" or "numeric")`` of an Arrow or numpy numeric array
    (nulls, NaN and infinities as NaN), else None; integers beyond 2**53 are refused
    (:func:`~calcore.predictions.slicing.check_exact_ranges`: these are cut into quantile
    ranges)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        t = values.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
            return None
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if pa.types.is_integer(t):
            check_exact_ranges(name, values.drop_null().to_numpy(zero_copy_only=False))
        out = pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False)
        kind = "integer" if pa.types.is_integer(t) else "numeric"
    else:
        arr = np.asarray(values)
        if arr.dtype.kind not in "iuf":
            return None
        check_exact_ranges(name, arr)
        out, kind = arr.astype(np.float64), "integer" if arr.dtype.kind != "f" else "numeric"
    return np.where(np.isfinite(out), out, np.nan), kind


def _factorized(values):
    """``(distinct values, index of each row's value or -1 when missing)`` of a batch's
    raw column: Arrow arrays by ``dictionary_encode``, others by ``pandas.factorize``."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        try:
            encoded = pc.dictionary_encode(values)
        except pa.ArrowNotImplementedError:  # a nested type (a list, a struct)
            return None, np.full(len(values), -1, dtype=np.intp)
        if isinstance(encoded, pa.ChunkedArray):
            encoded = encoded.combine_chunks()
        index = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.intp)
        dictionary, index = used_dictionary_entries(encoded.dictionary, index)
        return _arrow_values(dictionary), index
    arr = np.asarray(values)
    index, distinct = pd.factorize(arr if arr.dtype.kind != "U" else arr.astype(object))
    return np.asarray(distinct), np.asarray(index, dtype=np.intp)


def used_dictionary_entries(dictionary, index: np.ndarray):
    """The entries of an Arrow dictionary that some row uses, and each row's index into
    them (-1: missing): a pandas Categorical keeps categories no row holds, and those must
    not decide the column's kind nor count as its values (nor be judged as labels).

    Examples
    --------
    >>> import pyarrow as pa
    >>> kept, index = used_dictionary_entries(pa.array(["a", "b", "z"]), np.array([2, -1, 0]))
    >>> kept.to_pylist(), index.tolist()
    (['a', 'z'], [1, -1, 0])
    """
    used = np.flatnonzero(np.bincount(index[index >= 0], minlength=len(dictionary)))
    if used.size == len(dictionary):
        return dictionary, index
    renumbered = np.append(np.full(len(dictionary), -1, dtype=np.intp), -1)
    renumbered[used] = np.arange(used.size)
    return dictionary.take(used), renumbered[index]  # index -1 reads the last: -1


def _arrow_values(dictionary) -> np.ndarray:
    """An Arrow dictionary's values as numpy, typed as :func:`metadata_from_arrow` types
    a column (strings as text, booleans, numbers as float64, dates and times in UTC)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = dictionary.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return dictionary.to_numpy(zero_copy_only=False).astype(object)
    if pa.types.is_boolean(t):
        return dictionary.to_numpy(zero_copy_only=False).astype(bool)
    if pa.types.is_integer(t):
        return dictionary.to_numpy(zero_copy_only=False)
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return pc.cast(dictionary, pa.float64()).to_numpy(zero_copy_only=False)
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        if pa.types.is_timestamp(t) and t.tz is not None:
            dictionary = pc.cast(dictionary, pa.timestamp(t.unit))
        return dictionary.to_numpy(zero_copy_only=False).astype("datetime64[s]")
    if pa.types.is_dictionary(t):
        return _arrow_values(dictionary.cast(t.value_type))
    return None
