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

import numpy as np

__all__ = ["poisson_weights", "row_uniforms"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)

# Poisson(1) distribution function at 0..19 as 32-bit thresholds (a weight is the number
# of thresholds at or below a 32-bit uniform); P(K > 19) < 1e-18 is never reached. The
# 2^-32 rounding of the thresholds is far below any bootstrap's resolution.
_THRESHOLDS = np.round(
    np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(20)]) * 2.0**32
).astype(np.uint64)
_THRESHOLDS = np.minimum(_THRESHOLDS, np.uint64(2**32))
# Weight at the start of each 2^16-wide bucket of uniforms, and whether a threshold falls
# inside the bucket (then the few values there are settled by a search).
_BUCKET_START = np.arange(1 << 16, dtype=np.uint64) << np.uint64(16)
_LUT = np.searchsorted(_THRESHOLDS, _BUCKET_START, side="right").astype(np.float64)
_AMBIGUOUS = np.searchsorted(_THRESHOLDS, _BUCKET_START + np.uint64((1 << 16) - 1), "right") > _LUT


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


#: Rows hashed at a time by :func:`row_uniforms`: three uint64 arrays of this many rows
#: stay in the CPU's cache between the mixer's steps.
_HASH_CHUNK = 1 << 15


def poisson_weights(positions, n_replicates: int, seed: int) -> np.ndarray:
    """Poisson(1) bootstrap weights of rows at the given stream positions.

    Parameters
    ----------
    positions : ndarray of int, shape (m,)
        Each row's position in the whole source (0-based, stable across reads).
    n_replicates : int
    seed : int

    Returns
    -------
    ndarray of shape (n_replicates, m), float64
        Integer weights; the same for a row whatever batch it arrives in.

    Notes
    -----
    One 64-bit hash of ``(seed, position, pair of replicates)`` gives the 32-bit
    uniforms of two replicates (its two halves as stored in memory).

    Examples
    --------
    >>> w = poisson_weights(np.arange(5), 3, seed=0)
    >>> w.shape, bool((poisson_weights(np.arange(2, 4), 3, seed=0) == w[:, 2:4]).all())
    ((3, 5), True)
    """
    pos = np.asarray(positions, dtype=np.uint64)
    pairs = (int(n_replicates) + 1) // 2
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * _GOLDEN + _GOLDEN)
        r = np.arange(pairs, dtype=np.uint64)[:, None]
        bits = _mix((pos[None, :] * np.uint64(pairs) + r) * _GOLDEN + key)
    # The two 32-bit halves of each hash are the uniforms of replicates 2j and 2j + 1.
    u = np.ascontiguousarray(
        bits.view(np.uint32).reshape(pairs, pos.size, 2).transpose(0, 2, 1)
    ).reshape(2 * pairs, pos.size)[:n_replicates]
    bucket = u >> np.uint32(16)
    weights = _LUT[bucket]
    near = np.flatnonzero(_AMBIGUOUS[bucket])
    if near.size:
        flat = u.reshape(-1)[near].astype(np.uint64)
        weights.reshape(-1)[near] = np.searchsorted(_THRESHOLDS, flat, side="right")
    return weights


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
