"""Poisson bootstrap weights from a counter-based generator keyed by row position.

A bootstrap resample of ``n`` rows draws each row ``Multinomial(n, 1/n)`` times; for
large ``n`` the counts are nearly independent ``Poisson(1)``, which needs no knowledge
of ``n`` and no coordination between batches or partitions (Hanley & MacGibbon 2006;
TFMA's bootstrap does the same). Here replicate ``r`` of the row at position ``i`` gets
the weight ``F^-1(u)``, with ``F`` the Poisson(1) distribution function and ``u`` a
uniform made from ``(seed, i, r)`` alone by the SplitMix64 finaliser (a bijective
64-bit mixer; Steele, Lea & Flood 2014). The weights therefore do not depend on how
rows are batched, partitioned or merged: any split of the rows gives the same
replicates.

numpy's counter-based ``Philox`` could serve too, but its Poisson sampler consumes a
variable number of draws, so a row's weights would depend on the rows before it;
inverting the CDF of one uniform per (row, replicate) does not.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from calcore.foundation.tuning import HASH_CHUNK as _HASH_CHUNK

__all__ = ["WeightsBuffer", "poisson_weights", "row_uniforms"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _inverse_cdf_table(pmf) -> tuple[np.ndarray, np.ndarray]:
    """``(thresholds, weight_of_bucket)`` of an integer distribution given by ``pmf``.

    The distribution function at ``0..len(pmf) - 1`` as 32-bit thresholds (a weight is
    the number of thresholds at or below a 32-bit uniform; the tail beyond the table is
    below 2^-32, never reached). Then the weight of each 2^16-wide bucket of uniforms
    (the weight at its start), NaN where a threshold falls inside it: one lookup gives
    the weight and marks the rare uniforms (about 3 in 10,000) that a search settles.
    The 2^-32 rounding of the thresholds is far below any bootstrap's resolution.
    """
    thresholds = np.round(np.cumsum(pmf) * 2.0**32).astype(np.uint64)
    thresholds = np.minimum(thresholds, np.uint64(2**32))
    start = np.arange(1 << 16, dtype=np.uint64) << np.uint64(16)
    last = start + np.uint64((1 << 16) - 1)
    at_start = np.searchsorted(thresholds, start, "right")
    inside = np.searchsorted(thresholds, last, "right") > at_start
    return thresholds, np.where(inside, np.nan, at_start.astype(np.float64))


# Poisson(1): a row's count in a resample of a large sample.
_POISSON = _inverse_cdf_table([math.exp(-1.0) / math.factorial(k) for k in range(20)])
# Poisson(lam) for lam = 0..19 (every count a Poisson(1) weight takes): a row's count in a
# resample of a resample that counted it lam times. Each distribution function as 32-bit
# thresholds at 0..63 (the tail beyond is below 2^-32), row lam offset by lam * 2^33, so
# that one search over the flat table inverts any row's: the count is the number of
# thresholds at or below ``u + lam * 2^33``, less ``lam * 64``.
_NESTED_MAX, _NESTED_VALUES = 19, 64
_NESTED = np.concatenate(
    [
        np.minimum(
            np.round(
                np.cumsum(
                    [
                        (math.exp(-lam) * lam**k / math.factorial(k)) if lam else float(k == 0)
                        for k in range(_NESTED_VALUES)
                    ]
                )
                * 2.0**32
            ).astype(np.uint64),
            np.uint64(2**32),
        )
        + np.uint64(lam << 33)
        for lam in range(_NESTED_MAX + 1)
    ]
)
# The count of each (lam, 2^20-wide bucket of uniforms) of the nested table, -1 where a
# threshold falls inside the bucket: one lookup in 640 KB settles about 99% of the draws,
# a search the rest.
_NESTED_BUCKET_BITS = 12


def _nested_buckets() -> np.ndarray:
    shift = 32 - _NESTED_BUCKET_BITS
    start = np.arange(1 << _NESTED_BUCKET_BITS, dtype=np.uint64) << np.uint64(shift)
    last = start + np.uint64((1 << shift) - 1)
    out = np.empty((_NESTED_MAX + 1, start.size), dtype=np.float64)
    for lam in range(_NESTED_MAX + 1):
        offset = np.uint64(lam << 33)
        at_start = np.searchsorted(_NESTED, start + offset, "right") - lam * _NESTED_VALUES
        at_last = np.searchsorted(_NESTED, last + offset, "right") - lam * _NESTED_VALUES
        out[lam] = np.where(at_last > at_start, -1, at_start)
    return out.reshape(-1)


_NESTED_BUCKETS = _nested_buckets()
# Which 32-bit word of a uint64 in memory is its low half.
_LOW_WORD_FIRST = sys.byteorder == "little"


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (wrapping uint64 arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _mix_in_place(x: np.ndarray, scratch: np.ndarray) -> None:
    """:func:`_mix` of a uint64 array, overwriting it (``scratch``: same shape).

    The same values as ``_mix``, without its six temporary arrays: hashing every row of
    a 100M-row stream is then about twice as fast, most of the cost being memory traffic.
    """
    with np.errstate(over="ignore"):
        for shift, factor in ((30, _M1), (27, _M2)):
            np.right_shift(x, np.uint64(shift), out=scratch)
            x ^= scratch
            x *= factor
        np.right_shift(x, np.uint64(31), out=scratch)
        x ^= scratch


class WeightsBuffer:
    """Memory for a stream's bootstrap weights, kept from one batch to the next.

    A batch of 1M rows x 20 replicates is 160 MB of weights. Allocated afresh for each
    batch, those pages are mapped and zeroed by the kernel on first write, which cost
    more than drawing the weights (measured: 16 ns per weight written to fresh memory,
    1 ns to memory already touched). One buffer per stream, grown when a batch needs
    more, removes that cost.
    """

    def __init__(self) -> None:
        self._memory = np.empty(0, dtype=np.float64)

    def array(self, rows: int, columns: int) -> np.ndarray:
        """A C-ordered (rows, columns) float64 view of the buffer (contents undefined)."""
        if self._memory.size < rows * columns:
            self._memory = np.empty(rows * columns, dtype=np.float64)
        return self._memory[: rows * columns].reshape(rows, columns)


def poisson_weights(
    positions, n_replicates: int, seed: int, *, of=None, buffer: "WeightsBuffer | None" = None
) -> np.ndarray:
    """Poisson(1) bootstrap weights of rows at the given stream positions.

    Parameters
    ----------
    positions : ndarray of int, shape (m,)
        Each row's position in the whole source (0-based, stable across reads).
    n_replicates : int
    seed : int
    of : ndarray of shape (n_replicates, m), optional
        Weights of a resample of each of these resamples instead (the double bootstrap):
        the row counted ``of[r, i]`` times in resample ``r`` gets ``Poisson(of[r, i])``,
        so marginally Neyman type A(1, 1) (mean 1, variance 2) when ``of`` is this
        function's Poisson(1) weights. Their replicates give the mean ``E** theta**`` of
        the iterated bias correction (:func:`calcore.evaluation.intervals.interval_bounds`);
        drawn from each resample, not apart from it, the difference of the two levels'
        means carries less Monte Carlo noise. Uniforms keyed apart from the first level's.
    buffer : WeightsBuffer, optional
        Memory to write the weights into, reused from batch to batch; the result is then
        a view of it, valid until the buffer's next use.

    Returns
    -------
    ndarray of shape (n_replicates, m), float64
        Integer weights; the same for a row whatever batch it arrives in. The array is
        the transpose of a C-ordered ``(m, n_replicates)`` one: a row's weights are
        adjacent, which is the layout the replicate sums' matrix products read.

    Notes
    -----
    Replicates ``2j`` and ``2j + 1`` of the row at position ``i`` take the low and the
    high 32 bits of one SplitMix64 hash of ``(i * ceil(R / 2) + j) * golden + key``,
    ``key`` a hash of the seed, as uniforms. Rows are hashed a chunk at a time in place
    (see :func:`_mix_in_place`); measured on 1M rows x 20 replicates: 0.15 -> 0.06 s.
    The weights of a resample of each resample (``of``) take 0.10 s for the same rows.

    Examples
    --------
    >>> w = poisson_weights(np.arange(5), 3, seed=0)
    >>> w.shape, bool((poisson_weights(np.arange(2, 4), 3, seed=0) == w[:, 2:4]).all())
    ((3, 5), True)
    """
    pos = np.asarray(positions).reshape(-1)
    n_rep = int(n_replicates)
    pairs = (n_rep + 1) // 2
    thresholds, weight_of_bucket = _POISSON
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * _GOLDEN + _GOLDEN)
        if of is not None:
            key = _mix(key ^ _M2)
    counts_of = None if of is None else np.asarray(of).T  # (m, R)
    out = (
        np.empty((pos.size, n_rep), dtype=np.float64)
        if buffer is None
        else buffer.array(pos.size, n_rep)
    )
    rows = max(1, _HASH_CHUNK // max(pairs, 1))
    size = min(pos.size, rows)
    bits, mixing = np.empty((size, pairs), np.uint64), np.empty((size, pairs), np.uint64)
    table_row = np.empty((size, n_rep), np.uint32) if of is not None else None
    halves = bits.view(np.uint32)  # the two 32-bit words of each hash, in memory order
    columns = np.arange(n_rep) if _LOW_WORD_FIRST else np.arange(n_rep) ^ 1
    # (i * pairs + j) * golden + key, as i * (pairs * golden) + (j * golden + key): the
    # same wrapping uint64 values in two passes instead of five
    unsigned = pos.astype(np.uint64, copy=False)
    with np.errstate(over="ignore"):
        stride = np.uint64(pairs) * _GOLDEN
        offsets = np.arange(pairs, dtype=np.uint64) * _GOLDEN + key
    for start in range(0, pos.size, rows):
        n = min(rows, pos.size - start)
        x = bits[:n]
        with np.errstate(over="ignore"):
            np.multiply(unsigned[start : start + n, None], stride, out=x)
            x += offsets
        _mix_in_place(x, mixing[:n])
        uniforms = halves[:n, :n_rep] if _LOW_WORD_FIRST else halves[:n, columns]
        chunk = out[start : start + n]
        if of is not None:  # Poisson(count): row ``count`` of the nested table
            # each count, capped, shifted to its row of the bucket table (chunk by chunk:
            # no batch-sized temporaries)
            lam = table_row[:n]
            np.copyto(lam, counts_of[start : start + n], casting="unsafe")
            np.minimum(lam, np.uint32(_NESTED_MAX), out=lam)
            lam <<= np.uint32(_NESTED_BUCKET_BITS)
            bucket = uniforms >> np.uint32(32 - _NESTED_BUCKET_BITS)
            bucket |= lam
            np.take(_NESTED_BUCKETS, bucket, out=chunk, mode="clip")
            near = np.flatnonzero(chunk < 0)  # a threshold inside the bucket: search
            if near.size:
                lam_near = (bucket.ravel()[near] >> np.uint32(_NESTED_BUCKET_BITS)).astype(
                    np.uint64
                )
                exact = uniforms.ravel()[near].astype(np.uint64) + (lam_near << np.uint64(33))
                found = np.searchsorted(_NESTED, exact, side="right")
                chunk.reshape(-1)[near] = found - lam_near.astype(np.int64) * _NESTED_VALUES
            continue
        # every bucket index is < 2^16; mode "raise" (the default) would buffer the output
        np.take(weight_of_bucket, uniforms >> np.uint32(16), out=chunk, mode="clip")
        near = np.flatnonzero(np.isnan(chunk))  # a threshold inside the bucket: search
        if near.size:
            exact = uniforms.ravel()[near].astype(np.uint64)
            chunk.reshape(-1)[near] = np.searchsorted(thresholds, exact, side="right")
    return out.T


def row_uniforms(positions, seed: int, *, stream: int = 0) -> np.ndarray:
    """A uniform in [0, 1) per row, from ``(seed, stream, position)`` alone (SplitMix64).

    Used to draw a seeded uniform sample of a stream independent of its batching (the
    rows with the ``k`` smallest values are a uniform sample of ``k`` rows; ``stream``
    0), and the labels of the calibration test's resamples (``stream`` = replicate + 1).

    Examples
    --------
    >>> u = row_uniforms(np.arange(4), seed=1)
    >>> bool(((0 <= u) & (u < 1)).all()), bool((row_uniforms(np.arange(2, 4), 1) == u[2:]).all())
    (True, True)
    """
    pos = np.asarray(positions).reshape(-1)
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(~seed & 0xFFFFFFFFFFFFFFFF) * _GOLDEN + _GOLDEN)
        if stream:
            key = _mix(key + np.uint64(stream) * _GOLDEN)
    out = np.empty(pos.size, dtype=np.float64)
    size = min(pos.size, _HASH_CHUNK)
    bits, scratch = np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint64)
    for start in range(0, pos.size, _HASH_CHUNK):
        n = min(_HASH_CHUNK, pos.size - start)
        x = bits[:n]
        np.copyto(x, pos[start : start + n], casting="unsafe")
        with np.errstate(over="ignore"):
            x *= _GOLDEN
            x += key
        _mix_in_place(x, scratch[:n])
        x >>= np.uint64(11)  # the top 53 bits: exact in float64
        np.multiply(x, 1.0 / 2**53, out=out[start : start + n])
    return out.reshape(np.shape(positions))
