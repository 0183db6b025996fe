"""Exact order statistics of grouped scores in a stream read several times (radix select).

Equal-mass and points-per-bin bins need, per group, the scores at given ranks
(:mod:`calcore.statistics.edges`). In memory a sort finds them; a stream larger than
memory is read again instead. A score in [0, 1] is a non-negative float64, whose bit
pattern read as an unsigned integer orders the same way as the value; so the scores
at the wanted ranks are found 16 bits at a time:

1. pass 1 counts, per group, the values of each top-16-bit prefix, and keeps the
   prefix holding each wanted rank (and how many values lie below it);
2. each later pass does the same for the next 16 bits among the values with a kept
   prefix, until a kept prefix holds at most ``collect_limit`` values (or 48 bits are
   fixed, which leaves at most 2^15 distinct values): then the values themselves are
   gathered (with their counts) and the rank is read off them exactly.

Memory is bounded by the distinct prefixes seen per pass (sparse counts) and by
``collect_limit`` values per kept prefix; nothing scales with the number of rows.
Typical data need two passes (a top-16-bit prefix of a million rows); scores packed
within 2^-36 of each other need four. Results equal the in-memory sort (tested).
"""

from __future__ import annotations

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.tuning import QUANTILES_DENSE_LIMIT as _DENSE_LIMIT
from calcore.foundation.tuning import QUANTILES_OBSERVE_VALUES as _OBSERVE_VALUES
from calcore.foundation.tuning import QUANTILES_PENDING_VALUES as _PENDING_VALUES

__all__ = ["ExactRanks"]

_BITS = 16
_TOP_SHIFT = 63 - _BITS  # the sign bit of a score in [0, 1] is 0: skip it
_LAST_SHIFT = _TOP_SHIFT - 2 * _BITS  # 48 bits fixed: at most 2^15 values remain
_SEVERAL = -2  # a top-16-bit prefix that several pending entries start with


def _keys(scores: np.ndarray) -> np.ndarray:
    # + 0.0 turns -0.0 into 0.0, whose bits sort first
    return (np.asarray(scores, dtype=np.float64) + 0.0).view(np.uint64)


def _sparse_add(keys: np.ndarray, counts: np.ndarray, new: np.ndarray, weights=None):
    """Merge the counts (or weights) of ``new`` uint64 keys into sorted ``keys``/``counts``."""
    if new.size == 0:
        return keys, counts
    allk = np.concatenate([keys, new])
    allc = np.concatenate([counts, np.ones(new.size) if weights is None else weights])
    merged, inverse = np.unique(allk, return_inverse=True)
    return merged, np.bincount(inverse, weights=allc, minlength=merged.size)


class ExactRanks:
    """The scores at given ranks of every group, found over several passes of a stream.

    Parameters
    ----------
    ranks : list of ndarray
        ``ranks[g]`` are 1-based ranks of group ``g``: the smallest score whose cumulative
        count (or weight) reaches ``R``; ranks ``<= 0`` give ``-inf`` (as
        :func:`calcore.statistics.edges.edges_for`).
        Group sizes are known from an earlier pass.
    collect_limit : int
        A kept prefix with at most this many values is gathered outright.

    Use: ``while ranks.wants_pass(): for batch: ranks.observe(scores, groups);
    ranks.end_pass()``; then :meth:`values`.

    Examples
    --------
    >>> s = np.array([0.3, 0.1, 0.2, 0.2, 0.9])
    >>> r = ExactRanks([np.array([2, 4])])
    >>> while r.wants_pass():
    ...     r.observe(s[:2], np.zeros(2, int)); r.observe(s[2:], np.zeros(3, int)); r.end_pass()
    >>> r.values()[0].tolist()
    [0.2, 0.2]
    """

    def __init__(self, ranks=None, *, n_groups: int | None = None, collect_limit: int = 1 << 22):
        self.n_groups = len(ranks) if n_groups is None else int(n_groups)
        self.collect_limit = int(collect_limit)
        self.shift = None  # shift of the prefixes fixed so far (None: nothing fixed yet)
        self.collecting = False
        self.ranks = None
        self.t_group = None
        self._reset_pass()
        if ranks is not None:
            self.set_ranks(ranks)

    def set_ranks(self, ranks) -> None:
        """The ranks wanted per group. The first pass counts top-16-bit prefixes whatever
        the ranks, so it can run before the group sizes (and so the ranks) are known."""
        if len(ranks) != self.n_groups:
            raise ValueError(f"ranks for {len(ranks)} groups, expected {self.n_groups}")
        self.ranks = [np.asarray(r, dtype=np.float64) for r in ranks]
        self.result = [np.full(r.shape, -np.inf) for r in self.ranks]
        # pending targets: group, index within the group's ranks, rank still wanted
        # among the values of the kept prefix, and that prefix
        groups, idx = [], []
        for g, r in enumerate(self.ranks):
            keep = np.flatnonzero(r > 0)
            groups.append(np.full(keep.size, g, dtype=np.int64))
            idx.append(keep)
        self.t_group = np.concatenate(groups) if groups else np.empty(0, np.int64)
        self.t_index = np.concatenate(idx) if idx else np.empty(0, np.int64)
        self.t_rank = np.array(
            [self.ranks[g][i] for g, i in zip(self.t_group, self.t_index, strict=True)],
            dtype=np.float64,
        )
        self.t_prefix = np.zeros(self.t_group.size, dtype=np.uint64)
        self.t_count = np.full(self.t_group.size, -1.0)  # weight in the kept prefix

    # ------------------------------------------------------------------ passes
    def wants_pass(self) -> bool:
        """Whether another pass over the stream is needed."""
        return self.t_group is None or self.t_group.size > 0

    def _reset_pass(self):
        self._keys = np.empty(0, dtype=np.uint64)
        self._counts = np.empty(0)
        self._buffer = []
        self._pending, self._pending_values = [], 0
        self._dense = None
        self._entry_prefix = None
        self._top_table = None

    def _entries(self):
        """Distinct (group, prefix) of the pending targets, as sorted uint64 codes."""
        if self._entry_prefix is None:
            code = self._code(self.t_group, self.t_prefix)
            self._entry_prefix = np.unique(code)
        return self._entry_prefix

    def _top_lookup(self) -> np.ndarray:
        """Per (group, top-16-bit prefix): the index of the one pending entry starting with
        that prefix, :data:`_SEVERAL` where several do, -1 where none does. One look-up
        (and, for longer entries, one compare with the entry's prefix) per value then
        replaces a binary search among the entries for nearly all (used up to
        ``_DENSE_LIMIT`` entries: 64 groups, 32 MB)."""
        if self._top_table is None:
            entries = self._entries()
            width = 63 - self.shift
            group = (entries >> np.uint64(width)).astype(np.intp)
            top = ((entries & np.uint64((1 << width) - 1)) >> np.uint64(width - _BITS)).astype(
                np.intp
            )
            slot = (group << _BITS) | top
            table = np.full(self.n_groups << _BITS, -1, dtype=np.intp)
            table[slot] = np.arange(entries.size)
            if width > _BITS:  # longer entries may share their top 16 bits: searched
                table[np.bincount(slot, minlength=table.size) > 1] = _SEVERAL
            self._top_table = table
        return self._top_table

    def _matched(self, keys, g, w, found):
        """The values inside a pending entry longer than 16 bits, and that entry's index:
        compared with the one entry their top 16 bits name, searched where several share
        them (:meth:`_in_entries`)."""
        one = np.flatnonzero(found >= 0)
        idx = found[one]
        mask = np.uint64((1 << (63 - self.shift)) - 1)
        inside = (keys[one] >> np.uint64(self.shift)) == (self._entries()[idx] & mask)
        sel, pos = one[inside], idx[inside]
        parts = [(keys[sel], g[sel], None if w is None else w[sel], pos)]
        several = np.flatnonzero(found == _SEVERAL)
        if several.size:
            parts.append(
                self._in_entries(keys[several], g[several], None if w is None else w[several])
            )
        if len(parts) == 1:
            return parts[0]
        weights = None if w is None else np.concatenate([p[2] for p in parts])
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            weights,
            np.concatenate([p[3] for p in parts]),
        )

    def _in_entries(self, keys, g, w):
        """The values whose (group, prefix) is a pending entry, and that entry's index."""
        code = self._code(g, keys >> np.uint64(self.shift))
        entries = self._entries()
        pos = np.searchsorted(entries, code)
        hit = (pos < entries.size) & (entries[np.minimum(pos, entries.size - 1)] == code)
        return keys[hit], g[hit], (None if w is None else w[hit]), pos[hit]

    def _code(self, groups, prefix):
        # group in the bits above the prefix: prefixes have at most 63 - shift bits
        width = 0 if self.shift is None else 63 - self.shift
        return (np.asarray(groups, dtype=np.uint64) << np.uint64(width)) | prefix

    def observe(self, scores, groups=None, weights=None) -> None:
        """Count (or gather) a batch's scores; ``groups`` as in the constructor (0 if None).

        ``groups`` and ``weights`` (frequency weights: ranks then count weight, as in
        :func:`calcore.statistics.edges.edges_for`) broadcast against ``scores``: a
        class-wise batch passes its ``(m, L)`` probabilities with groups
        ``arange(L)[None, :]`` and row weights ``w[:, None]``, expanded only a chunk at a
        time. The values are taken :data:`_OBSERVE_VALUES` at a time, so that every
        temporary stays in cache.
        """
        values = np.asarray(scores, dtype=np.float64)
        one_column = values.ndim < 2
        values = values.reshape(-1, 1) if one_column else values

        def fitted(a, dtype):  # broadcast to the values, expanded a chunk at a time
            a = np.asarray(a, dtype=dtype)
            if one_column and a.ndim == 1:
                a = a.reshape(-1, 1)
            return np.broadcast_to(a, values.shape)

        g = None if groups is None else fitted(groups, np.intp)
        w = None if weights is None else fitted(weights, np.float64)
        rows = max(1, _OBSERVE_VALUES // max(values.shape[1], 1))
        for a in range(0, values.shape[0], rows):
            chunk = values[a : a + rows].reshape(-1)
            self._observe(
                chunk,
                np.zeros(chunk.size, np.intp) if g is None else g[a : a + rows].reshape(-1),
                None if w is None else w[a : a + rows].reshape(-1),
            )

    def _observe(self, scores, g, w) -> None:
        keys = _keys(scores)
        if self.shift is not None and self.n_groups << _BITS > _DENSE_LIMIT:
            # too many groups for a look-up table: a binary search among the entries
            keys, g, w, pos = self._in_entries(keys, g, w)
        elif self.shift is not None:  # only values inside a kept prefix matter now
            slot = (keys >> np.uint64(_TOP_SHIFT)).view(np.int64)
            slot += g << _BITS
            found = self._top_lookup().take(slot)
            if self.shift == _TOP_SHIFT:  # the top 16 bits name the entry
                hit = np.flatnonzero(found >= 0)
                keys, g, pos = keys[hit], g[hit], found[hit]
                w = None if w is None else w[hit]
            else:
                keys, g, w, pos = self._matched(keys, g, w, found)
        else:
            pos = g
        if self.collecting:  # the remaining low bits, counted per distinct value
            low = keys & np.uint64((1 << self.shift) - 1)
            self._buffer.append(((pos.astype(np.uint64) << np.uint64(self.shift)) | low, w))
        else:
            sub = (keys >> np.uint64(self._child_shift())) & np.uint64((1 << _BITS) - 1)
            code = (pos.astype(np.uint64) << np.uint64(_BITS)) | sub
            n_entries = self.n_groups if self.shift is None else self._entries().size
            if n_entries << _BITS <= _DENSE_LIMIT:  # few prefixes: count in a dense table
                # later, many chunks at once: one bincount of the table's size per chunk
                # would cost more than the chunk
                self._pending.append((code.astype(np.intp), w))
                self._pending_values += code.size
                if self._pending_values >= _PENDING_VALUES:
                    self._count_pending(n_entries << _BITS)
                return
            self._buffer.append((code, w))
        if sum(b.size for b, _ in self._buffer) > (1 << 22):  # fold the buffer now and then
            self._fold()

    def _count_pending(self, size: int) -> None:
        """Add the pending codes to the dense table of ``size`` counts."""
        if not self._pending:
            return
        codes = np.concatenate([c for c, _ in self._pending])
        weights = None
        if any(w is not None for _, w in self._pending):
            weights = np.concatenate(
                [np.ones(c.size) if w is None else w for c, w in self._pending]
            )
        self._pending, self._pending_values = [], 0
        if self._dense is None:
            self._dense = np.zeros(size)
        self._dense += np.bincount(codes, weights=weights, minlength=size)

    def _child_shift(self) -> int:
        return _TOP_SHIFT if self.shift is None else self.shift - _BITS

    def _fold(self):
        if self._pending:
            n_entries = self.n_groups if self.shift is None else self._entries().size
            self._count_pending(n_entries << _BITS)
        if self._buffer:
            codes = np.concatenate([c for c, _ in self._buffer])
            weights = None
            if any(w is not None for _, w in self._buffer):
                weights = np.concatenate(
                    [np.ones(c.size) if w is None else w for c, w in self._buffer]
                )
            self._buffer = []
            self._keys, self._counts = _sparse_add(self._keys, self._counts, codes, weights)
        if self._dense is not None:
            used = np.flatnonzero(self._dense)
            self._keys, self._counts = _sparse_add(
                self._keys, self._counts, used.astype(np.uint64), self._dense[used]
            )
            self._dense = None

    def end_pass(self) -> None:
        """Use what the pass counted: fix 16 more bits, or read the ranks off the values.

        Raises
        ------
        CalcoreError
            A wanted rank is beyond the values counted: the data changed between passes.
        """
        self._fold()
        width = self.shift if self.collecting else _BITS
        entry_of = self._keys >> np.uint64(width)
        low = self._keys & np.uint64((1 << width) - 1)
        t_entry = (
            self.t_group
            if self.shift is None
            else np.searchsorted(self._entries(), self._code(self.t_group, self.t_prefix))
        )
        new_prefix = np.empty_like(self.t_prefix)
        new_rank = np.empty_like(self.t_rank)
        new_count = np.empty_like(self.t_count)
        for j, e in enumerate(t_entry):
            lo, hi = np.searchsorted(entry_of, [np.uint64(e), np.uint64(e + 1)])
            cum = np.cumsum(self._counts[lo:hi])
            if cum.size == 0 or cum[-1] < self.t_rank[j]:
                raise CalcoreError(
                    "the data changed between two passes over the source (fewer values than "
                    "the first pass counted); read it again from an unchanging copy."
                )
            k = int(np.searchsorted(cum, self.t_rank[j], side="left"))
            below = cum[k - 1] if k > 0 else 0.0
            base = np.uint64(0) if self.shift is None else self.t_prefix[j] << np.uint64(width)
            new_prefix[j] = base | low[lo + k]
            new_rank[j] = self.t_rank[j] - below
            new_count[j] = self._counts[lo + k]
        if self.collecting:  # every bit is fixed: the prefix is the value
            for j in range(t_entry.size):
                value = np.array([new_prefix[j]], dtype=np.uint64).view(np.float64)[0]
                self.result[self.t_group[j]][self.t_index[j]] = value
            self.t_group = self.t_group[:0]
            self._reset_pass()
            return
        self.t_prefix, self.t_rank, self.t_count = new_prefix, new_rank, new_count
        self.shift = self._child_shift()
        # gather when the kept prefixes (each counted once) hold few enough values
        _, first = np.unique(self._code(self.t_group, self.t_prefix), return_index=True)
        self.collecting = bool(
            self.shift <= _LAST_SHIFT or self.t_count[first].sum() <= self.collect_limit
        )
        self._reset_pass()

    # ------------------------------------------------------------ engine state
    def targets(self) -> dict:
        """What the finder decided so far (the prefixes still searched), as flat arrays:
        what a process that folds a part of the data needs to count its values for the
        next pass (:meth:`with_targets`); the wanted ranks and the results stay here."""
        if self.t_group is None:  # before set_ranks: the first pass counts every prefix
            return {"started": np.array(False)}
        return {
            "started": np.array(True),
            "shift": np.array(-1 if self.shift is None else self.shift, dtype=np.int64),
            "collecting": np.array(self.collecting),
            "t_group": self.t_group,
            "t_prefix": self.t_prefix,
        }

    @classmethod
    def with_targets(cls, n_groups: int, arrays: dict) -> "ExactRanks":
        """A finder that counts one pass for :meth:`targets` (made elsewhere): its
        :meth:`pass_counts` merge into that finder with :meth:`add_pass_counts`."""
        finder = cls(n_groups=n_groups)
        if bool(arrays["started"]):
            shift = int(arrays["shift"])
            finder.shift = None if shift < 0 else shift
            finder.collecting = bool(arrays["collecting"])
            finder.t_group = np.asarray(arrays["t_group"], dtype=np.int64)
            finder.t_prefix = np.asarray(arrays["t_prefix"], dtype=np.uint64)
        return finder

    def pass_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """What this pass counted so far: sorted uint64 codes and their counts (weights)."""
        self._fold()
        return self._keys, self._counts

    def add_pass_counts(self, keys: np.ndarray, counts: np.ndarray) -> None:
        """Add the counts of the same pass made elsewhere (another part of the data)."""
        self._fold()
        self._keys, self._counts = _sparse_add(
            self._keys, self._counts, np.asarray(keys, dtype=np.uint64), np.asarray(counts)
        )

    def values(self) -> list[np.ndarray]:
        """The score at each wanted rank, per group (``-inf`` for ranks ``<= 0``)."""
        if self.wants_pass():
            raise RuntimeError("ExactRanks: passes are still needed")
        return self.result
