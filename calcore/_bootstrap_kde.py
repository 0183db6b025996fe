"""Row-weighted KDE-ECE for many weight vectors at once (the bootstrap of KDE-ECE).

:func:`calcore.kde.kde_ece` evaluates kernel sums ``sum_j K((z - x_j) / h)`` at
every grid point ``z`` by enumerating the (grid point, sample) pairs inside the
kernel's window: about ``n * 2h / dz`` pairs, 1-4 million per binary problem at
``n = 10,000``. Repeating that for 200 resamples and every class is far too slow.

Here the triweight kernel's polynomial form does the work. Inside its window,
``(1 - u^2)^3`` with ``u = a - b``, ``a = (z - c) / h`` and ``b = (x - c) / h``,
is a degree-6 polynomial in ``b`` whose coefficients depend only on ``a``::

    sum_{x in window(z)} w_x K(u) = sum_{k=0..6} coef_k(a) * sum_{x in window(z)} w_x b^k

so every grid point needs seven *window moments* of the weights. The grid is cut
into chunks of width ``2h`` with a centre ``c`` each (so ``|a| <= 1`` and
``|b| <= 2``: the polynomial's terms stay below ~1e3 and cancellation costs at
most ~1e-13 relative). Within a chunk the window ends split the sorted points
into segments; a segment's moments are one sparse product ``W @ B`` (``B`` has
seven entries per point and chunk it touches, about ``14 n`` in all) and a window's
moments are a difference of prefix sums over segments. The work is
``O(R * 14 n + R * 14 G)`` for ``R`` weight vectors instead of
``O(R * n * 2h / dz)``, and it is exact up to rounding (tested against
:func:`calcore.kde.kde_ece` on the resampled rows to 1e-10).

The bandwidth and the grid are those of the full sample: with row weights they
stay fixed, whereas ``kde_ece`` on a resample re-derives the rule-of-thumb
bandwidth from the resample. The bootstrap built on this is therefore
conditional on the full sample's bandwidth (see :mod:`calcore._bootstrap_engine`).

References
----------
Zhang, Kailkhura and Han (2020), "Mix-n-Match", ICML, Sec. 4.1 and App. B-C
(the estimator, reflection and kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from calcore.kde import _TRIWEIGHT, _grid_size, _rule_of_thumb

__all__ = ["WeightedKDE", "weighted_kde", "kde_ece_from_sums"]

_N_POWERS = 7  # (1 - u^2)^3 has degree 6


@dataclass(frozen=True, eq=False)
class WeightedKDE:
    """Precomputed window-moment matrices of one binary problem (fixed bandwidth and grid).

    Attributes
    ----------
    bandwidth : float
    grid : ndarray of shape (G,)
    n_rows : int
    row_order : ndarray of shape (n_rows,)
        The rows sorted by score: ``moments`` has one column per row in this order,
        so that the product reads the weights sequentially (2x faster).
    moments : scipy.sparse.csc_matrix of shape (2 * n_chunks * seg * 7, n_rows)
        Segment moments of the weights (first half) and of the weights times the
        outcomes (second half), rows ordered (quantity, chunk, segment, power);
        reflected copies of a row add to its column.
    window : scipy.sparse.csr_matrix of shape (2 * G, 2 * n_chunks * (seg + 1) * 7)
        Maps the per-chunk prefix sums of the moments to the kernel sums at the
        grid (``coef_k(a)`` at the window's end, minus at its start), first
        ``sum_k`` then ``sum_yk``. Grid points whose window holds no point have an
        empty row, so their sums are exactly 0, as in ``kde_ece``.
    n_chunks, seg : int
        Layout of the segment axis (``seg`` segments per chunk, padded).
    """

    bandwidth: float
    grid: np.ndarray
    n_rows: int
    row_order: np.ndarray
    moments: sp.csc_matrix
    window: sp.csr_matrix
    n_chunks: int
    seg: int

    @property
    def work_per_resample(self) -> int:
        """Multiply-adds per weight vector (the sparse products and the prefix sums)."""
        return int(self.moments.nnz + self.window.nnz + self.moments.shape[0])

    def sums(self, weights_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Kernel sums ``sum_k`` and ``sum_yk`` at the grid for each weight vector.

        Parameters
        ----------
        weights_t : ndarray of shape (n_rows, R), C-contiguous
            One weight vector per column (row counts of a resample).

        Returns
        -------
        sum_k, sum_yk : ndarray of shape (R, G)
            As ``calcore.kde._kernel_sums`` on the rows repeated ``w_i`` times.
        """
        r = weights_t.shape[1]
        # float64 accumulation; the weights in score order, read once per row
        seg_sums = np.asarray(self.moments @ weights_t[self.row_order])
        seg_sums = seg_sums.reshape(2 * self.n_chunks, self.seg, _N_POWERS * r)
        # Prefix sums restart in every chunk (its moments are centred on its own c). A loop
        # over the short segment axis adds whole (rows, R) slabs: much faster than
        # np.cumsum along a middle axis.
        prefix = np.empty((seg_sums.shape[0], self.seg + 1, _N_POWERS * r))
        prefix[:, 0, :] = 0.0
        for t in range(self.seg):
            np.add(prefix[:, t, :], seg_sums[:, t, :], out=prefix[:, t + 1, :])
        out = np.asarray(self.window @ prefix.reshape(-1, r)).T  # (R, 2G)
        g = self.grid.size
        return out[:, :g], out[:, g:]


def _cubed_coefficients(a: np.ndarray) -> np.ndarray:
    """Coefficients in ``b`` of ``(1 - (a - b)^2)^3``, shape (7, len(a))."""
    q = np.stack([1.0 - a * a, 2.0 * a, -np.ones_like(a)])  # 1 - a^2 + 2ab - b^2
    sq = np.zeros((5, a.size))
    for i in range(3):
        for j in range(3):
            sq[i + j] += q[i] * q[j]
    cube = np.zeros((_N_POWERS, a.size))
    for i in range(5):
        for j in range(3):
            cube[i + j] += sq[i] * q[j]
    return cube


def weighted_kde(scores: np.ndarray, outcomes: np.ndarray, *, bandwidth=None) -> WeightedKDE:
    """Prepare row-weighted KDE sums for ``(scores, outcomes)`` of one binary problem.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Scores in [0, 1] (validated upstream: a :class:`~calcore.Predictions` view).
    outcomes : ndarray of shape (n,)
        0/1 outcomes.
    bandwidth : float, optional
        Kernel half-width; by default the rule of thumb on the full sample, as
        :func:`calcore.kde.kde_ece` uses.

    Returns
    -------
    WeightedKDE
    """
    s = np.asarray(scores, dtype=np.float64)
    o = np.asarray(outcomes, dtype=np.float64)
    n = s.size
    h = _rule_of_thumb(s) if bandwidth is None else float(bandwidth)
    grid = np.linspace(0.0, 1.0, _grid_size(None, h, "weighted_kde", integrate=True))
    # The sample and its mirror images about 0 and 1 (the same rule as calcore.kde._reflect),
    # each remembering its original row so that a row's weight follows its copies.
    low, high = np.flatnonzero(s <= h), np.flatnonzero(s >= 1.0 - h)
    points = np.concatenate([s, -s[low], 2.0 - s[high]])
    rows = np.concatenate([np.arange(n), low, high])
    order = np.argsort(points, kind="stable")
    points, rows = points[order], rows[order]
    lo = np.searchsorted(points, grid - h, side="left")
    hi = np.searchsorted(points, grid + h, side="right")

    width = 2.0 * h
    n_chunks = int(np.floor(1.0 / width)) + 1
    chunk = np.minimum((grid / width).astype(np.intp), n_chunks - 1)
    centre = (2.0 * np.arange(n_chunks) + 1.0) * h
    # Breakpoints of each chunk: every window start and end of its grid points.
    first = np.searchsorted(chunk, np.arange(n_chunks), side="left")
    last = np.searchsorted(chunk, np.arange(n_chunks), side="right")
    seg_lo = np.empty(grid.size, dtype=np.intp)
    seg_hi = np.empty(grid.size, dtype=np.intp)
    parts = []  # (point index range, segment of each point, chunk)
    max_seg = 1
    for j in range(n_chunks):
        if first[j] == last[j]:
            continue
        g_lo, g_hi = lo[first[j] : last[j]], hi[first[j] : last[j]]
        breaks = np.unique(np.concatenate([g_lo, g_hi]))
        seg_lo[first[j] : last[j]] = np.searchsorted(breaks, g_lo)
        seg_hi[first[j] : last[j]] = np.searchsorted(breaks, g_hi)
        idx = np.arange(breaks[0], breaks[-1])
        parts.append((idx, np.searchsorted(breaks, idx, side="right") - 1, j))
        max_seg = max(max_seg, breaks.size - 1)
    seg = max_seg

    half = _N_POWERS * n_chunks * seg
    row_order = np.argsort(s, kind="stable")
    rank = np.empty(n, dtype=np.intp)
    rank[row_order] = np.arange(n)
    r_list, c_list, v_list = [], [], []
    for idx, segment, j in parts:
        b = (points[idx] - centre[j]) / h
        pos = np.flatnonzero(o[rows[idx]] != 0.0)
        col = rank[rows[idx]]  # hoisted: the same columns for every power
        col_pos, r0 = col[pos], (j * seg + segment) * _N_POWERS
        power = np.ones_like(b)
        for k in range(_N_POWERS):
            r_list += [r0 + k, half + r0[pos] + k]
            c_list += [col, col_pos]
            v_list += [power, power[pos]]
            power = power * b
    # Duplicates (a row and its mirror image in the same segment) are summed by tocsr.
    moments = sp.csc_matrix(
        (np.concatenate(v_list), (np.concatenate(r_list), np.concatenate(c_list))),
        shape=(2 * half, n),
    )

    coef = _TRIWEIGHT * _cubed_coefficients((grid - centre[chunk]) / h)  # (7, G)
    busy = np.flatnonzero(hi > lo)
    # Column of (chunk, prefix position, power k) in the flattened prefix array.
    k_axis = np.arange(_N_POWERS)[:, None]
    at_hi = (chunk[None, busy] * (seg + 1) + seg_hi[None, busy]) * _N_POWERS + k_axis
    at_lo = (chunk[None, busy] * (seg + 1) + seg_lo[None, busy]) * _N_POWERS + k_axis
    cols = np.concatenate([at_hi, at_lo], axis=1).ravel()
    vals = np.concatenate([coef[:, busy], -coef[:, busy]], axis=1).ravel()
    rows_g = np.broadcast_to(np.concatenate([busy, busy])[None, :], (_N_POWERS, 2 * busy.size))
    rows_g = rows_g.ravel()
    half_cols = _N_POWERS * n_chunks * (seg + 1)
    window = sp.csr_matrix(
        (
            np.concatenate([vals, vals]),
            (
                np.concatenate([rows_g, rows_g + grid.size]),
                np.concatenate([cols, cols + half_cols]),
            ),
        ),
        shape=(2 * grid.size, 2 * half_cols),
    )
    return WeightedKDE(h, grid, n, row_order, moments, window, n_chunks, seg)


def kde_ece_from_sums(grid: np.ndarray, sum_k: np.ndarray, sum_yk: np.ndarray) -> np.ndarray:
    """KDE-ECE (order 1) from kernel sums on the grid, one value per row of ``sum_k``.

    The estimator of :func:`calcore.kde.kde_ece`:
    ``trap(|z - pi(z)| p(z)) / trap(p(z))`` with ``pi = sum_yk / sum_k`` and
    ``p`` proportional to ``sum_k`` (the constant ``1 / (n h)`` cancels in the
    ratio), the integrand being 0 where ``p = 0``.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(sum_k > 0.0, sum_yk / sum_k, 0.0)
    integrand = np.where(sum_k > 0.0, np.abs(grid - acc) * sum_k, 0.0)
    return np.trapezoid(integrand, axis=-1) / np.trapezoid(sum_k, axis=-1)
