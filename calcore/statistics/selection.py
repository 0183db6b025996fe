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

__all__ = ["bit_buckets", "last_bucket", "order_statistics"]

_ONE = int(np.float64(1.0).view(np.uint64))
_SHIFT = 42  # 64 - 42 = 22-bit prefixes
# Columns shorter than this are partitioned directly (the histogram's 8 MB would dominate).
_MIN_VALUES = 1 << 20
# Shorter columns with several ranks: a histogram over their own range (_range_select).
_MIN_RANGE = 1 << 12
_RANGE_BUCKETS = 1 << 12
# Values per chunk of a pass: their prefixes (8 MB) are written into one reused buffer.
_CHUNK = 1 << 20


def last_bucket(shift: int) -> int:
    """The overflow bucket of :func:`bit_buckets`: one past the bucket of 1.0."""
    return (_ONE >> shift) + 1


def bit_buckets(values: np.ndarray, shift: int, *, out: np.ndarray | None = None) -> np.ndarray:
    """Bucket of each value by the top ``64 - shift`` bits of its float64 pattern, as intp.

    Non-negative float64 values sort like their bits, so buckets are ordered and narrow in
    relative terms. Everything above 1 (values over 1, NaN, and the sign bit of ``-0.0``
    and of negative values) lands in one overflow bucket, :func:`last_bucket`. ``out``
    (uint64, at least as long) receives the buckets instead of a new array.

    Examples
    --------
    >>> bit_buckets(np.array([0.0, 0.5, 1.0, 2.0, -0.0]), 52).tolist()  # exponents
    [0, 1022, 1023, 1024, 1024]
    """
    keys = np.ascontiguousarray(values, dtype=np.float64).reshape(-1).view(np.uint64)
    prefix = keys >> np.uint64(shift) if out is None else out[: keys.size]
    if out is not None:
        np.right_shift(keys, np.uint64(shift), out=prefix)
    np.minimum(prefix, np.uint64(last_bucket(shift)), out=prefix)
    return prefix.view(np.intp).reshape(np.shape(values))  # below 2**63: the same numbers


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
        if v.size < _MIN_RANGE or kth.size < 2:
            return np.partition(v, kth)[at]
        return _range_select(v, kth)[np.searchsorted(kth, at)]
    chunks = [v[a : a + _CHUNK] for a in range(0, v.size, _CHUNK)]
    buffer = np.empty(min(v.size, _CHUNK), dtype=np.uint64)
    top = last_bucket(_SHIFT)
    counts = np.zeros(top + 1, dtype=np.int64)
    for chunk in chunks:
        counts += np.bincount(bit_buckets(chunk, _SHIFT, out=buffer), minlength=top + 1)
    if counts[top]:  # a value above 1, NaN or a sign bit: the plain partition
        return np.partition(v, kth)[at]
    below = np.cumsum(counts) - counts  # values in lower buckets
    bucket = np.searchsorted(below, kth, side="right") - 1  # the bucket holding each rank
    wanted = np.zeros(top + 1, dtype=bool)
    wanted[bucket] = True
    gathered = np.concatenate([c[wanted[bit_buckets(c, _SHIFT, out=buffer)]] for c in chunks])
    # values of the wanted buckets below each one, then the rank within it
    before = np.cumsum(np.where(wanted, counts, 0)) - np.where(wanted, counts, 0)
    local = before[bucket] + (kth - below[bucket])
    found = np.partition(gathered, local)[local]
    return found[np.searchsorted(kth, at)]


def _range_select(v: np.ndarray, kth: np.ndarray) -> np.ndarray:
    """``np.sort(v)[kth]`` (``kth`` sorted, unique) for a column of moderate length.

    The same histogram as :func:`order_statistics`, over :data:`_RANGE_BUCKETS` buckets
    of the bit patterns between the column's smallest and largest value (a table of
    every 22-bit prefix would cost more than the column). 50,000 softmax outputs, 28
    ranks: 0.3 ms against 1.4 ms for ``np.partition`` (one introselect per rank).
    """
    bits = v.view(np.int64)
    low, high = int(bits.min()), int(bits.max())
    if low < 0:  # a sign bit (-0.0, negative values, -NaN): the plain partition
        return np.partition(v, kth)[kth]
    shift = 0
    while (high >> shift) - (low >> shift) >= _RANGE_BUCKETS:
        shift += 1
    key = bits >> shift
    key -= low >> shift
    counts = np.bincount(key, minlength=_RANGE_BUCKETS)
    below = np.cumsum(counts) - counts  # values in lower buckets
    bucket = np.searchsorted(below, kth, side="right") - 1  # the bucket holding each rank
    wanted = np.zeros(counts.size, dtype=bool)
    wanted[bucket] = True
    gathered = v[wanted[key]]
    kept = np.where(wanted, counts, 0)
    local = (np.cumsum(kept) - kept)[bucket] + (kth - below[bucket])
    return np.partition(gathered, local)[local]
