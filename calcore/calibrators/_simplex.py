"""Partitions of the probability simplex for canonical calibration (top-label paper, App. G).

Pure, vectorised bin-assignment functions; :mod:`calcore.calibrators.canonical`
wraps them in calibrators. Every function takes ``probs`` as an ``ndarray of
shape (n_samples, n_classes)`` (float64, rows on the simplex) and returns an
``ndarray of shape (n_samples,)`` of int64 bin ids in ``0 .. n_bins - 1``.
Loops run over depths, classes or bins, never over samples.

References
----------
Gupta & Ramdas (2022), "Top-label calibration and multiclass-to-binary
reductions", ICLR, Appendix G.1 (Sierpinski binning, eqs. 18-19), G.2 (grid-style
binning, eqs. 20-21, Prop. 2-3) and G.3 (projection histogram binning, Alg. 10).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from calcore.foundation.errors import CalcoreError

__all__ = ["sierpinski_n_bins", "sierpinski_bins", "sierpinski_index"]
__all__ += ["grid_n_bins", "grid_bins", "grid_index", "largest_grid_k", "MAX_GRID_BINS"]
__all__ += ["projection_values", "projection_thresholds", "projection_index"]

#: Grid binning refuses K (for the given L) with more bins than this.
MAX_GRID_BINS = 200_000
#: Threshold of the last projection bin (Alg. 10, line 8); an unused (empty) bin gets its negative.
T_LAST = 1.01


# -- Sierpinski binning (App. G.1) ---------------------------------------------------------------
def sierpinski_n_bins(n_classes: int, depth: int) -> int:
    """``(L^(q+1) - 1) / (L - 1)`` bins: ``L^(d-1)`` centres at depth ``d <= q``, ``L^q`` corners.

    For L = 3 this is 4, 13, 40 at q = 1, 2, 3 (the paper's text says 14 for q = 2,
    a slip: its own formula ``(3^(q+1) - 1) / 2`` gives 13).
    """
    return sum(n_classes**d for d in range(depth + 1))


def sierpinski_bins(n_classes: int, depth: int) -> tuple[list[list[int]], list[bool]]:
    """The bin definitions in id order: ``(paths, is_centre)``.

    ``paths[b]`` lists the corner steps (0-based classes ``l`` with ``t_l > 1/2``)
    that lead to bin ``b``; a centre bin ends with "no coordinate above 1/2" after
    its path. Ids: centre bins of depth 1, 2, ..., q (each depth ordered by its
    path read as a base-L number), then the depth-q corner cells in the same order.
    """
    paths, centre = [], []
    for d in range(1, depth + 1):
        for p in itertools.product(range(n_classes), repeat=d - 1):
            paths.append(list(p))
            centre.append(True)
    for p in itertools.product(range(n_classes), repeat=depth):
        paths.append(list(p))
        centre.append(False)
    return paths, centre


def sierpinski_index(probs: np.ndarray, depth: int) -> np.ndarray:
    """Sierpinski bin of each row (eq. 19, recursively, to depth ``q``).

    At each level a row with ``t_l > 1/2`` for some class (the first such ``l`` if
    rounding puts two above 1/2) moves to the corner cell ``l`` and is
    reparameterised as ``t <- 2 t - e_l``; a row with every ``t_l <= 1/2`` stays in
    that level's centre bin, which is not subdivided further. Both updates are
    exact in binary floating point (``2 t`` and ``2 t_l - 1`` for ``t_l`` in
    ``(1/2, 1]``), so boundaries such as ``s_l = 1/2`` are assigned as in exact
    arithmetic.
    """
    n, n_classes = probs.shape
    out = np.empty(n, dtype=np.int64)
    rows = np.arange(n)
    t = probs.copy()
    prefix = np.zeros(n, dtype=np.int64)
    offset = 0
    for d in range(depth):
        over = t > 0.5
        has = over.any(axis=1)
        stay = ~has
        out[rows[stay]] = offset + prefix[stay]
        offset += n_classes**d
        cls = over[has].argmax(axis=1)
        rows, prefix, t = rows[has], prefix[has] * n_classes + cls, 2.0 * t[has]
        t[np.arange(rows.size), cls] -= 1.0
    out[rows] = offset + prefix
    return out


# -- grid-style binning (App. G.2) -------------------------------------------------------------
def grid_n_bins(n_classes: int, k: int) -> int:
    """``|I|`` of eq. (20): tuples of positive integers with sum in ``[max(L, K+1), K+L-1]``."""
    lo = max(n_classes, k + 1)
    return sum(math.comb(s - 1, n_classes - 1) for s in range(lo, k + n_classes))


def largest_grid_k(n_classes: int) -> int:
    """The largest ``K`` whose grid has at most :data:`MAX_GRID_BINS` bins for ``n_classes``
    (the bins grow with ``K``, so a bisection finds it)."""
    lo, hi = 1, MAX_GRID_BINS + 1  # grid_n_bins(L, K) >= K for L >= 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if grid_n_bins(n_classes, mid) <= MAX_GRID_BINS else (lo, mid - 1)
    return lo


def grid_bins(n_classes: int, k: int) -> np.ndarray:
    """All ``k`` in ``I`` (eq. 20) in lexicographic order, ``ndarray of shape (n_bins, L)``."""
    n_bins = grid_n_bins(n_classes, k)
    if n_bins > MAX_GRID_BINS:
        raise CalcoreError(
            f"grid: K={k} with L={n_classes} classes gives {n_bins:,} bins, more than "
            f"{MAX_GRID_BINS:,}; with {n_classes} classes K must be 1 to "
            f"{largest_grid_k(n_classes):,}. Use a smaller K."
        )
    # Each sum s of the allowed range, one at a time: the compositions of s into L positive
    # parts are the (L - 1)-subsets of cut points 1..s-1. Only the bins are generated (the
    # earlier stars-and-bars over every sum <= K + L - 1 made 75x more tuples for L = 3).
    parts = []
    for total in range(max(n_classes, k + 1), k + n_classes):
        cuts = np.array(list(itertools.combinations(range(1, total), n_classes - 1)), np.int64)
        cuts = cuts.reshape(-1, n_classes - 1)
        ends = np.full((len(cuts), 1), total, dtype=np.int64)
        parts.append(np.diff(np.c_[np.zeros((len(cuts), 1), np.int64), cuts, ends], axis=1))
    bins = np.concatenate(parts)
    return bins[np.lexsort(bins.T[::-1])].astype(np.int64)


def _grid_codes(bins: np.ndarray, k: int) -> np.ndarray:
    """Mixed-radix code of each tuple (increasing in lexicographic order)."""
    code = np.zeros(bins.shape[0], dtype=np.int64)
    for col in range(bins.shape[1]):
        code = code * k + (bins[:, col] - 1)
    return code


def grid_index(probs: np.ndarray, k: int, bins: np.ndarray) -> np.ndarray:
    """Grid bin of each row: the lexicographically smallest ``k`` in ``I`` whose bin holds it.

    With ``x = K s`` (computed in float64), ``k_l = max(1, ceil(x_l))`` is forced
    unless ``x_l`` is a positive integer, where ``k_l`` may also be ``x_l + 1``.
    The smallest choice fails eq. (20) only when every ``x_l`` is such an integer
    (sum = K); the lexicographic minimum then raises the last such coordinate.
    Rows off the simplex by rounding that no bin contains go to the tuple one
    unit step away (raising the coordinate nearest its upper edge, or lowering
    the one nearest its lower edge).
    """
    n_classes = probs.shape[1]
    x = probs * k
    kk = np.maximum(np.ceil(x), 1.0)
    flexible = (kk == x) & (x >= 1.0)
    lo, hi = max(n_classes, k + 1), k + n_classes - 1
    rows = np.arange(x.shape[0])
    last_flex = n_classes - 1 - flexible[:, ::-1].argmax(axis=1)
    first = True
    while True:
        total = kk.sum(axis=1)
        short, over = total < lo, total > hi
        if not (short.any() or over.any()):
            break
        if short.any():
            near_top = np.where(kk < k, x - kk, -np.inf).argmax(axis=1)
            col = np.where(flexible.any(axis=1) & first, last_flex, near_top)
            kk[rows[short], col[short]] += 1.0
        if over.any():
            col = np.where(kk > 1, x - (kk - 1.0), np.inf).argmin(axis=1)
            kk[rows[over], col[over]] -= 1.0
        first = False
    codes = _grid_codes(kk.astype(np.int64), k)
    return np.searchsorted(_grid_codes(bins, k), codes).astype(np.int64)


# -- projection histogram binning (App. G.3, Alg. 10) ------------------------------------------
def projection_values(probs: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """``probs @ directions.T`` summed class by class, so each entry is independent of the batch.

    (A BLAS product may round a row differently depending on the batch it is in;
    the bins of Alg. 10 compare these values with thresholds for equality.)
    """
    out = np.zeros((probs.shape[0], directions.shape[0]))
    for col in range(probs.shape[1]):
        out += probs[:, col, None] * directions[None, :, col]
    return out


def projection_thresholds(values: np.ndarray) -> np.ndarray:
    """Thresholds ``T`` of Alg. 10, lines 2-8, from the projections of the calibration rows.

    ``T_b`` is the ``c``-th smallest projection on ``q_b`` among the rows left,
    ``c = floor((n + 1) / B)``; rows with projection ``<= T_b`` then leave. When
    fewer than ``c`` rows are left (heavy ties), the remaining bins are unused:
    ``T_b = -1.01``, below every projection of the simplex on a unit vector.
    ``T_B = 1.01``.
    """
    n, n_bins = values.shape
    c = (n + 1) // n_bins
    thresholds = np.full(n_bins, -T_LAST)
    thresholds[-1] = T_LAST
    left = np.arange(n)
    for b in range(n_bins - 1):
        if left.size < c:
            break
        v = values[left, b]
        thresholds[b] = np.partition(v, c - 1)[c - 1]
        left = left[v > thresholds[b]]
    return thresholds


def projection_index(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """``B(g) = min {b : g^T q_b < T_b}`` (Alg. 10, line 9)."""
    return (values < thresholds).argmax(axis=1).astype(np.int64)
