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
    mat_k, mat_yk : scipy.sparse.csr_matrix of shape (7 * n_chunks * seg, n_rows)
        Segment moments of the weights (all points) and of the weights times the
        outcomes, one column per original row (reflected copies add to their row).
    coef : ndarray of shape (7, G)
        ``coef_k(a)`` of each grid point (the kernel's constant included).
    chunk, seg_lo, seg_hi : ndarray of shape (G,)
        Each grid point's chunk and the segments where its window starts and ends.
    empty : ndarray of shape (G,), bool
        Grid points whose window holds no point (sums exactly 0, as in ``kde_ece``).
    n_chunks, seg : int
        Layout of the segment axis (``seg`` segments per chunk, padded).
    """

    bandwidth: float
    grid: np.ndarray
    n_rows: int
    mat_k: sp.csr_matrix
    mat_yk: sp.csr_matrix
    coef: np.ndarray
    chunk: np.ndarray
    seg_lo: np.ndarray
    seg_hi: np.ndarray
    empty: np.ndarray
    n_chunks: int
    seg: int

    @property
    def work_per_resample(self) -> int:
        """Multiply-adds per weight vector (the sparse products dominate)."""
        return int(self.mat_k.nnz + self.mat_yk.nnz)

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
        return self._window_sums(self.mat_k, weights_t), self._window_sums(self.mat_yk, weights_t)

    def _window_sums(self, mat: sp.csr_matrix, weights_t: np.ndarray) -> np.ndarray:
        r = weights_t.shape[1]
        seg_sums = np.asarray(mat @ weights_t)  # (7 * n_chunks * seg, R), float64 accumulation
        seg_sums = seg_sums.reshape(_N_POWERS, self.n_chunks, self.seg, r)
        # Prefix sums restart in every chunk: a chunk's moments are centred on its own c.
        prefix = np.zeros((_N_POWERS, self.n_chunks, self.seg + 1, r))
        np.cumsum(seg_sums, axis=2, out=prefix[:, :, 1:, :])
        moments = prefix[:, self.chunk, self.seg_hi, :] - prefix[:, self.chunk, self.seg_lo, :]
        out = np.einsum("kg,kgr->rg", self.coef, moments)
        out[:, self.empty] = 0.0
        return out


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

    def matrix(weight_of_point: np.ndarray) -> sp.csr_matrix:
        r_list, c_list, v_list = [], [], []
        for idx, segment, j in parts:
            keep = weight_of_point[idx] != 0.0
            idx, segment = idx[keep], segment[keep]
            b = (points[idx] - centre[j]) / h
            power = np.ones_like(b)
            for k in range(_N_POWERS):
                r_list.append((k * n_chunks + j) * seg + segment)
                c_list.append(rows[idx])
                v_list.append(power * weight_of_point[idx])
                power = power * b
        r_all = np.concatenate(r_list) if r_list else np.zeros(0, dtype=np.intp)
        c_all = np.concatenate(c_list) if c_list else np.zeros(0, dtype=np.intp)
        v_all = np.concatenate(v_list) if v_list else np.zeros(0)
        # Duplicates (a row and its mirror image in the same segment) are summed by tocsr.
        return sp.coo_matrix((v_all, (r_all, c_all)), shape=(_N_POWERS * n_chunks * seg, n)).tocsr()

    a = (grid - centre[chunk]) / h
    return WeightedKDE(
        h,
        grid,
        n,
        matrix(np.ones(points.size)),
        matrix(o[rows]),
        _TRIWEIGHT * _cubed_coefficients(a),
        chunk,
        seg_lo,
        seg_hi,
        hi == lo,
        n_chunks,
        seg,
    )


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
