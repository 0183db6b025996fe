"""Exact counts of sorted cuts below many values: ``np.searchsorted`` made fast.

Every rank-based bin (equal-mass, points-per-bin, unique) and every KDE grid cell is
found by counting a group's sorted thresholds below a score. A binary search per
score is a chain of dependent, mispredicted loads; these classes replace it by a
table look-up that is exact:

* :class:`SortedCuts`: one set of cuts, a table over equal-width buckets of [0, 1]
  (for cuts spread over [0, 1], such as a KDE grid);
* :class:`GroupedCuts`: one set of cuts per group (per class), a table over the
  buckets of the float64 bit pattern. Non-negative float64 values sort like their
  bits, so a value's top bits (its exponent and first mantissa bits) name a bucket
  that is narrow in relative terms (down to ``2**-10`` of the value) however close to 0
  the values crowd, as softmax outputs and rare-event scores do. In a bucket holding no
  cut of the group every value has the same count (read from the table); the few
  values in a bucket holding a cut take the exact search.

Both give exactly ``np.searchsorted(cuts, values, side)`` (tested at, just below and
just above every cut). Hand-written rather than a library call: numpy and scipy have
no batched searchsorted over per-row sorted sets.
"""

from __future__ import annotations

import numpy as np

from calcore.binning import equal_width_index
from calcore.statistics.selection import bit_buckets, last_bucket

__all__ = ["SortedCuts", "GroupedCuts"]

# Buckets of 2**42 consecutive bit patterns (10 mantissa bits): 1,047,553 buckets cover
# [0, 1]; one more takes everything above 1, NaN and the sign bit.
_SHIFT = 42
# Table entries (groups x buckets) at most (9 bytes each: 19 MB). One or two groups get
# the finest buckets; each doubling of the groups drops one mantissa bit (1,000 groups: 3
# bits, an eighth of a binade). 50,000 x 1,000 (ACE and TACE in evaluate): 93 MB of peak
# extra memory; 2**23 entries used 272 MB and were no faster.
_MAX_TABLE = 1 << 21
# Values searched exactly at a time (the bisection keeps ~8 arrays of them).
_SEARCH_CHUNK = 1 << 16
# Cuts in one bucket that are stepped over one compare at a time; more take a bisection.
_MAX_STEPS = 4


class SortedCuts:
    """``np.searchsorted(cuts, values, side)`` for many values against fixed sorted cuts.

    Through a table over ``4 * len(cuts)`` (at least 64) equal-width buckets of [0, 1]:
    each value's exact bucket (:func:`calcore.binning.equal_width_index`), the count of
    cuts below the bucket from the table, then a few compares with the cuts inside the
    bucket. Same result as ``searchsorted`` for values in [0, 1], several times faster on
    long inputs.
    """

    def __init__(self, cuts: np.ndarray, *, side: str):
        self.cuts = np.asarray(cuts, dtype=np.float64)
        self.side = side
        m = max(64, 4 * self.cuts.size)
        self._table = np.searchsorted(self.cuts, np.arange(m + 1) / m, side=side)
        self._steps = int(np.max(np.diff(self._table), initial=0))
        self._padded = np.append(self.cuts, np.inf)

    def count(self, values: np.ndarray) -> np.ndarray:
        """``#{cuts <= v}`` (side "right") or ``#{cuts < v}`` (side "left") of each value."""
        idx = self._table[equal_width_index(values, self._table.size - 1)]
        for _ in range(self._steps):
            if self.side == "right":
                idx += self._padded[idx] <= values
            else:
                idx += self._padded[idx] < values
        return idx


class GroupedCuts:
    """Per group ``g``, ``np.searchsorted(cuts[starts[g]:starts[g + 1]], v, side)`` for
    every value ``v`` of the group, exactly.

    Parameters
    ----------
    cuts : ndarray of float64
        Every group's sorted cuts, group after group (``-inf`` allowed).
    starts : ndarray of int, shape (G + 1,)
        Where each group's cuts begin, and the total at the end.
    side : {"left", "right"}
        ``#{cuts < v}`` or ``#{cuts <= v}``.
    offsets : ndarray of int, shape (G,), optional
        Added to every count of a group (a flat cell id: the group's first cell); a
        negative offset makes every count of its group ``-1`` (a group without cells).

    Examples
    --------
    >>> cuts = GroupedCuts(np.array([0.2, 0.5, -np.inf, 0.1]), np.array([0, 2, 4]), side="left")
    >>> cuts.count(np.array([0.3, 0.3, 0.5]), np.array([0, 1, 0])).tolist()
    [1, 2, 1]
    """

    def __init__(self, cuts: np.ndarray, starts: np.ndarray, *, side: str, offsets=None):
        self.cuts = np.asarray(cuts, dtype=np.float64)
        self.starts = np.asarray(starts, dtype=np.intp)
        self.side = side
        n_groups = self.starts.size - 1
        shift = _SHIFT
        while shift < 62 and n_groups * (last_bucket(shift) + 1) > _MAX_TABLE:
            shift += 1  # coarser buckets; at 62, one bucket holds [0, 1] (all searched)
        self._shift = shift
        self._last = last_bucket(shift)  # beyond [0, 1]
        width = self._last + 1
        self._width = width
        group_of_cut = np.repeat(np.arange(n_groups), np.diff(self.starts))
        # -inf (and any cut below 0) is below every value in [0, 1]: counted as it stands
        below_all = self.cuts < 0
        inside = ~below_all
        bucket = self._buckets(self.cuts[inside])
        per_bucket = np.bincount(
            group_of_cut[inside] * width + bucket, minlength=n_groups * width
        ).reshape(n_groups, width)
        base = np.bincount(group_of_cut[below_all], minlength=n_groups)
        below = np.cumsum(per_bucket, axis=1)  # in place from here: the table can be large
        below -= per_bucket
        below += base[:, None]
        exact = per_bucket > 0
        del per_bucket
        exact[:, self._last] = True  # above 1, NaN, the sign bit: searched
        self._offsets = np.zeros(n_groups, dtype=np.intp)
        if offsets is not None:
            self._offsets = np.asarray(offsets, dtype=np.intp)
            below += self._offsets[:, None]
            none = self._offsets < 0
            below[none], exact[none] = -1, False
        self._below = below.astype(np.intp, copy=False).reshape(-1)
        self._exact = exact.reshape(-1)
        self._padded = np.append(self.cuts, np.inf)

    def _buckets(self, values: np.ndarray) -> np.ndarray:
        return bit_buckets(values, self._shift)

    def count(self, values: np.ndarray, groups=None) -> np.ndarray:
        """The count for each value (any shape) in its group (broadcast; group 0 if None)."""
        values = np.ascontiguousarray(values, dtype=np.float64)
        key = self._buckets(values)
        if groups is not None:
            key += np.asarray(groups, dtype=np.intp) * self._width  # broadcast, not expanded
        count = self._below.take(key)
        slow = np.flatnonzero(self._exact.take(key))
        flat_key, flat_values, flat_count = key.reshape(-1), values.reshape(-1), count.reshape(-1)
        for a in range(0, slow.size, _SEARCH_CHUNK):  # bounded temporaries
            part = slow[a : a + _SEARCH_CHUNK]
            k, v = flat_key[part], flat_values[part]
            g = k // self._width  # the group is in the key
            stepped = self._step(k, v, g, flat_count[part])
            if stepped is None:
                stepped = self._search(v, g) + self._offsets[g]
            flat_count[part] = stepped
        return count

    def _step(self, key, values, g, first):
        """The exact counts by stepping over the few cuts inside each value's bucket, or
        None where a bucket holds more than :data:`_MAX_STEPS` cuts or is the last one.

        ``first`` is the table's count at the bucket (cuts below it, offset included);
        the bucket's cuts are the next ``below[key + 1] - below[key]`` of the group.
        """
        if np.any(key % self._width == self._last):
            return None
        inside = self._below.take(key + 1) - first
        steps = int(inside.max(initial=0))
        if steps > _MAX_STEPS:
            return None
        shift = self.starts[:-1][g] - self._offsets[g]  # from a cell id to a cut index
        idx = first + shift
        for j in range(steps):
            cut = self._padded[idx]
            advance = cut <= values if self.side == "right" else cut < values
            if j:
                advance &= inside > j
            idx += advance
        return idx - shift

    def _search(self, values: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The exact count by a vectorised bisection within each value's group."""
        if self.starts.size == 2:
            return np.searchsorted(self.cuts, values, side=self.side)
        lo, hi = self.starts[g].copy(), self.starts[g + 1].copy()
        base = lo.copy()
        widest = int(np.max(np.diff(self.starts), initial=0))
        for _ in range(widest.bit_length()):
            mid = (lo + hi) >> 1
            cut = self._padded[mid]
            below = cut <= values if self.side == "right" else cut < values
            active = lo < hi
            np.copyto(lo, mid + 1, where=below & active)
            np.copyto(hi, mid, where=~below & active)
        return lo - base
