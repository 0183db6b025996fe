"""Order statistics of a long in-memory column at many ranks: a histogram, then a small
partition.

``np.partition`` with many ``kth`` runs one introselect per rank: on 10M binary scores,
the 56 ranks of ACE and TACE (both classes) took 0.32 s, single-threaded, before any sum
could start. A score in [0, 1] is a non-negative float64, whose bit pattern read as an
unsigned integer orders like the value. So one pass counts the values of each 22-bit
prefix (sign, exponent and 10 mantissa bits: a bucket is ``2**-10`` of its value wide),
the cumulative counts name the bucket holding each wanted rank, a second pass gathers
the values of those buckets only, and one ``np.partition`` of that small set (values of
a lower bucket are all smaller) gives every rank exactly. Measured on those 10M scores:
0.32 -> 0.06 s.

Hand-written rather than a library call: numpy has no multi-rank selection that is not
an introselect per rank, and scipy none at all.
"""

from __future__ import annotations

import numpy as np

__all__ = ["order_statistics"]

_SHIFT = 42  # 64 - 42 = 22-bit prefixes
# Prefix of 1.0; everything above it (values over 1, NaN, the sign bit of -0.0 and of
# negative values) is counted in one overflow bucket and sends the column to np.partition.
_TOP = int(np.float64(1.0).view(np.uint64)) >> _SHIFT
# Columns shorter than this are partitioned directly (the histogram's 8 MB would dominate).
_MIN_VALUES = 1 << 20
# Values per chunk of a pass: their prefixes (8 MB) are written into one reused buffer.
_CHUNK = 1 << 20


def _prefixes(chunk: np.ndarray, out: np.ndarray) -> np.ndarray:
    """22-bit prefix of each value, capped at ``_TOP + 1`` (the overflow bucket), as intp."""
    prefix = out[: chunk.size]
    np.right_shift(chunk.view(np.uint64), np.uint64(_SHIFT), out=prefix)
    np.minimum(prefix, np.uint64(_TOP + 1), out=prefix)
    return prefix.view(np.intp)  # below 2**23: the same numbers


def order_statistics(values: np.ndarray, positions) -> np.ndarray:
    """``np.partition(values, positions)[positions]``: the values at 0-based sorted positions.

    Parameters
    ----------
    values : ndarray of float64, shape (n,)
        Not modified.
    positions : array of int
        Positions in ``values`` sorted ascending, each in ``[0, n)``, in any order and
        with repeats.

    Returns
    -------
    ndarray of float64, the shape of ``positions``
        Exactly the values ``np.sort(values)[positions]``.

    Examples
    --------
    >>> v = np.random.default_rng(0).random(2_000_000)
    >>> at = np.array([0, 1, 999_999, 1_999_999])
    >>> bool((order_statistics(v, at) == np.sort(v)[at]).all())
    True
    """
    v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    at = np.asarray(positions, dtype=np.intp)
    if at.size == 0:
        return np.empty(at.shape)
    kth = np.unique(at)
    if v.size < _MIN_VALUES:
        return np.partition(v, kth)[at]
    chunks = [v[a : a + _CHUNK] for a in range(0, v.size, _CHUNK)]
    buffer = np.empty(min(v.size, _CHUNK), dtype=np.uint64)
    counts = np.zeros(_TOP + 2, dtype=np.int64)
    for chunk in chunks:
        counts += np.bincount(_prefixes(chunk, buffer), minlength=_TOP + 2)
    if counts[_TOP + 1]:  # a value above 1, NaN or a sign bit: the plain partition
        return np.partition(v, kth)[at]
    below = np.cumsum(counts) - counts  # values in lower buckets
    bucket = np.searchsorted(below, kth, side="right") - 1  # the bucket holding each rank
    wanted = np.zeros(_TOP + 2, dtype=bool)
    wanted[bucket] = True
    gathered = np.concatenate([c[wanted[_prefixes(c, buffer)]] for c in chunks])
    # values of the wanted buckets below each one, then the rank within it
    before = np.cumsum(np.where(wanted, counts, 0)) - np.where(wanted, counts, 0)
    local = before[bucket] + (kth - below[bucket])
    found = np.partition(gathered, local)[local]
    return found[np.searchsorted(kth, at)]
