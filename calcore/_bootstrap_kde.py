"""KDE-ECE of many binary problems at once, and its row-weighted form for the bootstrap.

:func:`calcore.kde.kde_ece` evaluates kernel sums ``sum_j K((z - x_j) / h)`` at every
grid point ``z`` by enumerating the (grid point, sample) pairs inside the kernel's
window: about ``n * 2h / dz`` pairs per binary problem. That is exact and fine for one
problem, but the class-wise KDE-ECE of 100 classes (and its bootstrap) repeats it 100
times. Here the triweight kernel's polynomial form does the work instead.

**Moment form.** Inside its window, ``(1 - u^2)^3`` with ``u = a - b``,
``a = (z - c) / h`` and ``b = (x - c) / h`` is a degree-6 polynomial in ``b`` whose
coefficients depend only on ``a``, so a kernel sum over the points of a window is
``sum_k coef_k(a) * sum_x b^k``: seven *window moments*, each a difference of two
prefix sums over the sorted points. The work is ``O(n + G)`` per problem instead of
``O(n h / dz)``, and every problem of a batch goes through the same flat arrays (no
Python loop over problems or grid chunks).

**Centring.** The moments are centred per *block* of points: blocks of width ``2h``
with centres ``c_j = 2 j h`` (block ``j`` holds the points in ``[(2j-1)h, (2j+1)h)``),
so ``|b| <= 1``. A window ``[z - h, z + h]`` meets at most two consecutive blocks, with
``|a| <= 2`` for both, so the terms of the polynomial stay below ~5e2 and the prefix
sums are restarted at every block: their magnitude is the block's mass, not the
sample's. Rounding is then ~1e-13 relative on the estimates (tested against
``kde_ece`` to 1e-10 on ties, scores exactly 0 and 1, tiny ``n``, 2 to 100 classes).

**Reflection.** The reference reflects the sample about 0 and 1 (copies ``-s`` for
``s <= h`` and ``2 - s`` for ``s >= 1 - h``). Since the kernel is even, the copies'
sum at ``z`` is the plain sample's sum at ``-z`` (resp. ``2 - z``), so the points are
never duplicated: grid points ``z <= h`` get an extra query at ``-z`` and grid points
``z >= 1 - h`` one at ``2 - z``, with exactly the reference's window membership.

**Row weights (bootstrap).** With a weight ``w_i`` per row (the counts of a resample)
the window moments are ``sum_x w_x b_x^k``. Between consecutive window ends and block
starts (the *segments*) they are one sparse product ``B @ W^T`` (seven entries per
point; the outcome sums use the same segments with the positive points only), and the
kernel sums at the grid are a second sparse product with the prefix sums over segments
(at most 21 entries per query). The bandwidth and the grid are those of the full sample:
with row weights they stay fixed, whereas ``kde_ece`` on a resample re-derives the
rule-of-thumb bandwidth. The bootstrap built on this is therefore conditional on the
full sample's bandwidth (see :mod:`calcore._bootstrap_engine`).

References
----------
Zhang, Kailkhura and Han (2020), "Mix-n-Match: Ensemble and compositional methods for
uncertainty calibration in deep learning", ICML, Sec. 4.1 and App. B-C (the estimator,
reflection and kernel).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from calcore.kde import _grid_size, _rule_of_thumb

__all__ = ["KDEProblems", "KDEBatches", "kde_problems", "weighted_kde", "kde_ece_from_sums"]

_N_POWERS = 7  # (1 - u^2)^3 has degree 6
# Problems are laid side by side on one search axis: problem p's values (all in
# [-2h, 1 + 2h] within [-1, 2]) are shifted by p * _LANE. Rounding of the shift moves a
# window end by ~1e-13 at most, where the kernel is ~(1e-11)^3: no visible effect.
_LANE = 4.0
_CHUNK_VALUES = 2_000_000  # float64 values of one problem's prefix array per resample chunk
_MAX_BATCH_POINTS = 2_000_000  # (row, problem) pairs prepared at once


def _cubed_coefficients(a: np.ndarray) -> np.ndarray:
    """Coefficients in ``b`` of ``(1 - (a - b)^2)^3``, shape (7, len(a)).

    With ``q = 1 - a^2``: ``(q + 2ab - b^2)^3`` expanded by hand (float64 throughout).
    """
    q = 1.0 - a * a
    a2 = a * a
    out = np.empty((_N_POWERS, a.size))
    out[0] = q * q * q
    out[1] = 6.0 * a * q * q
    out[2] = 3.0 * q * (4.0 * a2 - q)
    out[3] = 4.0 * a * (2.0 * a2 - 3.0 * q)
    out[4] = 3.0 * q - 12.0 * a2
    out[5] = 6.0 * a
    out[6] = -1.0
    return out


def _ragged_arange(counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(c) for c in counts])`` without a Python loop."""
    counts = np.asarray(counts, dtype=np.intp)
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.intp) - np.repeat(starts, counts)


@dataclass(frozen=True, eq=False)
class _PointSet:
    """Sorted points of every problem on one flat axis, with their blocks and moments.

    ``offsets[p]:offsets[p + 1]`` are problem ``p``'s points (ascending). ``starts`` are
    the first point of every block (global, non-decreasing, two sentinels ``N`` at the
    end) and ``centre`` their centres (two sentinels 0). ``prefix`` is the exclusive prefix
    sum of the centred moments ``b^k`` restarted at every block: in block ``j``'s frame
    the sum over points ``[s, e)`` is ``value(e) - value(s)`` with ``value(i) = 0`` at
    ``i = starts[j]`` and ``prefix[:, i]`` otherwise.
    """

    values: np.ndarray
    keys: np.ndarray
    offsets: np.ndarray
    starts: np.ndarray
    centre: np.ndarray
    prefix: np.ndarray


def _point_set(values: np.ndarray, offsets: np.ndarray, h: np.ndarray) -> _PointSet:
    """Blocks and restarted moment prefix sums of sorted ``values`` (flat, per problem)."""
    n_problems = h.size
    sizes = np.diff(offsets)
    problem = np.repeat(np.arange(n_problems), sizes)
    keys = values + problem * _LANE
    # Block j of a problem: [(2j - 1)h, (2j + 1)h), centre 2jh; the last one is open above
    # and must reach 1 + h (the largest query point is 1 + 2h only for empty windows).
    n_blocks = np.ceil(1.0 / (2.0 * h)).astype(np.intp) + 1
    block_offsets = np.concatenate(([0], np.cumsum(n_blocks)))
    local = _ragged_arange(n_blocks)
    block_problem = np.repeat(np.arange(n_problems), n_blocks)
    hb = h[block_problem]
    lower = (2.0 * local - 1.0) * hb + block_problem * _LANE
    starts = np.searchsorted(keys, lower, side="left")
    starts[block_offsets[:-1]] = offsets[:-1]  # block 0 is open below
    starts = np.concatenate((starts, [values.size, values.size]))
    centre = np.concatenate((2.0 * local * hb, [0.0, 0.0]))
    n_total = block_offsets[-1]
    block = np.repeat(np.arange(n_total), np.diff(starts[: n_total + 1]))
    b = (values - centre[block]) / h[problem]
    m = np.empty((_N_POWERS, values.size))
    m[0] = 1.0
    m[1] = b
    for k in range(2, _N_POWERS):
        np.multiply(m[k - 1], b, out=m[k])
    # Restart the running sums at every non-empty block (subtract the previous
    # block's total at its first point) so they never carry another block's mass.
    first = starts[:n_total][np.diff(starts[: n_total + 1]) > 0]
    if first.size > 1:
        totals = np.add.reduceat(m, first, axis=1)
        m[:, first[1:]] -= totals[:, :-1]
    prefix = np.zeros((_N_POWERS, values.size + 1))
    np.cumsum(m, axis=1, out=prefix[:, 1:])
    return _PointSet(values, keys, offsets, starts, centre, prefix)


@dataclass(frozen=True, eq=False)
class _Windows:
    """Where the window of each query meets the points: two block parts.

    Part 1 is points ``[lo, e1)`` of block ``j`` (centre ``centre[j]``), part 2 points
    ``[starts[j + 1], e2)`` of block ``j + 1``; ``a1``, ``a2`` are the query's scaled
    offsets from the two centres. Empty windows give two empty parts.
    """

    lo: np.ndarray
    e1: np.ndarray
    e2: np.ndarray
    j: np.ndarray
    a1: np.ndarray
    a2: np.ndarray


def _windows(ps: _PointSet, query: np.ndarray, q_problem: np.ndarray, hq: np.ndarray):
    shift = q_problem * _LANE
    lo = np.searchsorted(ps.keys, (query - hq) + shift, side="left")
    hi = np.searchsorted(ps.keys, (query + hq) + shift, side="right")
    # The block holding point lo; a window of width 2h reaches at most the next block
    # (clipped there, so a rounding overshoot can never mix two centres).
    j = np.searchsorted(ps.starts[:-2], lo, side="right") - 1
    e1 = np.minimum(hi, ps.starts[j + 1])
    e2 = np.clip(hi, ps.starts[j + 1], ps.starts[j + 2])
    a1 = (query - ps.centre[j]) / hq
    a2 = (query - ps.centre[j + 1]) / hq
    return _Windows(lo, e1, e2, j, a1, a2)


def _poly_sum(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``sum_k coef_k(a) * m[k]``: the kernel sum from the window moments ``m`` (7, Q).

    The coefficients of :func:`_cubed_coefficients`, applied one at a time so that no
    (7, Q) coefficient array is stored.
    """
    a2 = a * a
    q = 1.0 - a2
    out = q * q * q * m[0]
    out += 6.0 * a * q * q * m[1]
    out += 3.0 * q * (4.0 * a2 - q) * m[2]
    out += 4.0 * a * (2.0 * a2 - 3.0 * q) * m[3]
    out += (3.0 * q - 12.0 * a2) * m[4]
    out += 6.0 * a * m[5]
    out -= m[6]
    return out


def _window_sums(ps: _PointSet, w: _Windows) -> np.ndarray:
    """``sum_x (1 - ((q - x) / h)^2)^3`` over each query's window (unit weights)."""
    out = np.zeros(w.lo.size)
    # Only non-empty windows (part 1 holds point lo whenever the window is not empty).
    act = np.flatnonzero(w.e1 > w.lo)
    lo, j = w.lo[act], w.j[act]
    start = ps.starts[j]
    m = np.take(ps.prefix, w.e1[act], axis=1)  # e1 > lo >= start: never the block's zero
    v_lo = np.take(ps.prefix, lo, axis=1)
    v_lo[:, lo == start] = 0.0  # the block's own zero (its restart)
    m -= v_lo
    out[act] = _poly_sum(w.a1[act], m)
    # Part 2 only where the window reaches into the next block.
    span = act[w.e2[act] > ps.starts[j + 1]]
    out[span] += _poly_sum(w.a2[span], np.take(ps.prefix, w.e2[span], axis=1))
    return out


@dataclass(eq=False)
class KDEProblems:
    """Reflected triweight KDE-ECE of several binary problems on the same rows.

    Built by :func:`kde_problems`; point estimates with :meth:`kde_ece`, row-weighted
    replicates (the bootstrap) with :meth:`replicates`.

    Attributes
    ----------
    bandwidth : ndarray of shape (n_problems,)
        Kernel half-width of each problem (the rule of thumb of
        :func:`calcore.kde.kde_bandwidth` unless given).
    grid_offsets : ndarray of shape (n_problems + 1,)
        Problem ``p``'s grid is ``grid[grid_offsets[p]:grid_offsets[p + 1]]``, the
        ``np.linspace(0, 1, size)`` of :func:`calcore.kde.kde_ece`.
    sum_k, sum_yk : ndarray of shape (total grid size,)
        Full-sample kernel sums ``sum_j K((z - x_j) / h) / K(0)`` and the same times the
        outcomes, reflected copies included (the constant factor cancels in the estimate).
    n_rows : int
    """

    bandwidth: np.ndarray
    grid: np.ndarray
    grid_offsets: np.ndarray
    sum_k: np.ndarray
    sum_yk: np.ndarray
    n_rows: int
    _scores: np.ndarray = field(repr=False)
    _outcomes: np.ndarray = field(repr=False)
    _points: _PointSet = field(repr=False)
    _queries: tuple = field(repr=False)
    _weighted: list | None = field(default=None, repr=False)

    @property
    def n_problems(self) -> int:
        return int(self.bandwidth.size)

    def kde_ece(self, order=1) -> np.ndarray:
        """KDE-ECE ``trap(|z - pi(z)|^d p(z)) / trap(p(z))`` of every problem, shape (P,).

        The estimator of :func:`calcore.kde.kde_ece` (no d-th root), the integrand
        being 0 where the density is 0.
        """
        return _ece_flat(self.grid, self.grid_offsets, self.sum_k, self.sum_yk, float(order))

    # ------------------------------------------------------------------ bootstrap
    def _prepare_weighted(self) -> list:
        if self._weighted is None:
            self._weighted = _weighted_problems(self)
        return self._weighted

    @property
    def work_per_resample(self) -> int:
        """Multiply-adds per weight vector of :meth:`replicates` (all problems)."""
        return int(sum(w.work for w in self._prepare_weighted()))

    def replicates(self, weights_t: np.ndarray, order=1) -> np.ndarray:
        """KDE-ECE of every problem for each weight vector, shape (R, n_problems).

        Parameters
        ----------
        weights_t : ndarray of shape (n_rows, R)
            One weight vector per column (row counts of a resample).

        Returns
        -------
        ndarray of shape (R, n_problems)
            As :func:`calcore.kde.kde_ece` on the rows repeated ``w_i`` times, with this
            object's bandwidths (to ~1e-12).
        """
        weights_t = np.ascontiguousarray(weights_t, dtype=np.float64)
        r = weights_t.shape[1]
        out = np.empty((r, self.n_problems))
        for p, wp in enumerate(self._prepare_weighted()):
            grid = self.grid[self.grid_offsets[p] : self.grid_offsets[p + 1]]
            step = max(1, _CHUNK_VALUES // (2 * _N_POWERS * (wp.n_segments + 1)))
            for lo in range(0, r, step):
                sum_k, sum_yk = wp.sums(weights_t[:, lo : lo + step])
                out[lo : lo + step, p] = _ece_columns(grid, sum_k, sum_yk, float(order))
        return out


def _ece_flat(grid, offsets, sum_k, sum_yk, order: float) -> np.ndarray:
    """Per-problem trapezoid ratio over a flat grid (equal spacing cancels in the ratio)."""
    positive = sum_k > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(positive, sum_yk / np.where(positive, sum_k, 1.0), 0.0)
    integrand = np.where(positive, np.abs(grid - acc) ** order * sum_k, 0.0)
    first, last = offsets[:-1], offsets[1:] - 1

    def trap(f):
        return np.add.reduceat(f, first) - 0.5 * (f[first] + f[last])

    return trap(integrand) / trap(sum_k)


def _queries(grid, grid_offsets, h):
    """The grid points plus the reflected queries (-z for z <= h, 2 - z for z >= 1 - h)."""
    n_problems = h.size
    g_problem = np.repeat(np.arange(n_problems), np.diff(grid_offsets))
    hg = h[g_problem]
    low = np.flatnonzero(grid <= hg)
    high = np.flatnonzero(grid >= 1.0 - hg)
    target = np.concatenate((np.arange(grid.size), low, high))
    value = np.concatenate((grid, -grid[low], 2.0 - grid[high]))
    return value, g_problem[target], target


class KDEBatches:
    """Several :class:`KDEProblems` batches acting as one (problems in batch order)."""

    def __init__(self, parts: list[KDEProblems]):
        self.parts = parts
        self.bandwidth = np.concatenate([p.bandwidth for p in parts])
        self.n_rows = parts[0].n_rows

    @property
    def n_problems(self) -> int:
        return int(self.bandwidth.size)

    def kde_ece(self, order=1) -> np.ndarray:
        return np.concatenate([p.kde_ece(order) for p in self.parts])

    @property
    def work_per_resample(self) -> int:
        return int(sum(p.work_per_resample for p in self.parts))

    def replicates(self, weights_t: np.ndarray, order=1) -> np.ndarray:
        return np.concatenate([p.replicates(weights_t, order) for p in self.parts], axis=1)


def kde_problems(scores, outcomes, *, bandwidth=None) -> KDEProblems | KDEBatches:
    """Prepare the KDE-ECE of the binary problems ``(scores[:, p], outcomes[:, p])``.

    Parameters
    ----------
    scores : ndarray of shape (n, n_problems)
        Scores in [0, 1], ``n >= 2`` (validated upstream: a :class:`~calcore.Predictions`).
    outcomes : ndarray of shape (n, n_problems)
        0/1 or boolean outcomes.
    bandwidth : float, optional
        One kernel half-width for every problem; by default each problem's rule of thumb
        on the full sample, as :func:`calcore.kde.kde_ece` uses.

    Returns
    -------
    KDEProblems or KDEBatches
        (Batches of at most ~2M (row, problem) pairs, with the same methods.) With the
        full-sample kernel sums computed (the point estimates are
        :meth:`KDEProblems.kde_ece`); the bootstrap matrices are built on first use.

    References
    ----------
    Zhang, Kailkhura and Han (2020), Mix-n-Match, ICML, Sec. 4.1, Eq. (6), App. B-C.
    """
    s = np.asarray(scores, dtype=np.float64)
    o = np.asarray(outcomes)
    n, n_problems = s.shape
    # Batches of problems bound the flat arrays (about 0.2 kB per point) on large inputs.
    per = max(1, _MAX_BATCH_POINTS // max(n, 1))
    if n_problems <= per:
        return _kde_batch(s, o, bandwidth)
    parts = [
        _kde_batch(s[:, i : i + per], o[:, i : i + per], bandwidth)
        for i in range(0, n_problems, per)
    ]
    return KDEBatches(parts)


def _kde_batch(scores, outcomes, bandwidth) -> KDEProblems:
    st = np.ascontiguousarray(scores.T)  # (P, n)
    ot = np.ascontiguousarray(outcomes.T != 0)
    n_problems, n = st.shape
    if bandwidth is None:
        # Row by row on contiguous copies: the very same float as kde_ece's rule of thumb.
        h = np.array([_rule_of_thumb(row) for row in st])
    else:
        h = np.full(n_problems, float(bandwidth))
    sizes = np.array([_grid_size(None, float(x), "kde_problems", integrate=True) for x in h])
    grid_offsets = np.concatenate(([0], np.cumsum(sizes)))
    grid = np.concatenate([np.linspace(0.0, 1.0, int(s)) for s in sizes])
    q_value, q_problem, q_target = _queries(grid, grid_offsets, h)
    hq = h[q_problem]

    offsets = np.arange(n_problems + 1) * n
    points = _point_set(np.sort(st, axis=1).reshape(-1), offsets, h)
    # Outcome sums: the positive points only (a point set of their own).
    pos_problem, pos_row = np.nonzero(ot)
    pos_values = st[pos_problem, pos_row]
    order = np.lexsort((pos_values, pos_problem))
    pos_offsets = np.concatenate(([0], np.cumsum(np.bincount(pos_problem, minlength=n_problems))))
    positives = _point_set(pos_values[order], pos_offsets, h)

    windows = _windows(points, q_value, q_problem, hq)
    size = grid.size
    sum_k = np.bincount(q_target, weights=_window_sums(points, windows), minlength=size)
    pos_windows = _windows(positives, q_value, q_problem, hq)
    sum_yk = np.bincount(q_target, weights=_window_sums(positives, pos_windows), minlength=size)
    return KDEProblems(
        bandwidth=h,
        grid=grid,
        grid_offsets=grid_offsets,
        sum_k=sum_k,
        sum_yk=sum_yk,
        n_rows=n,
        _scores=st,
        _outcomes=ot,
        _points=points,
        _queries=(q_value, q_problem, q_target, windows),
    )


def weighted_kde(scores, outcomes, *, bandwidth=None) -> KDEProblems:
    """:func:`kde_problems` of a single binary problem ``(scores, outcomes)`` of shape (n,)."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    return kde_problems(s, np.asarray(outcomes).reshape(-1, 1), bandwidth=bandwidth)


# ---------------------------------------------------------------------- row weights


@dataclass(frozen=True, eq=False)
class _WeightedProblem:
    """Sparse matrices of one problem for row-weighted kernel sums.

    ``moments`` are two CSC matrices of shape ``(7 * n_segments, .)`` with one column per
    row (rows in their own order, so the product reads the weights sequentially): the
    centred segment moments ``sum w b^k`` (rows ``7 t + k``) over all rows, and over the
    ``positive`` rows; they are interleaved as rows ``14 t + k`` and ``14 t + 7 + k``;
    ``accumulate`` are the segments that continue a block (the first segment of every
    block restarts the running sums). ``window`` (shape ``(2 Q, 14 * n_segments)``) maps
    the running sums to the kernel sums of the ``Q`` queries (first ``sum_k``, then
    ``sum_yk``) and ``extra_target`` folds the reflected queries (after the ``n_grid``
    grid points) into their grid points.
    """

    moments: tuple
    positive: np.ndarray
    accumulate: tuple
    window: sp.csr_matrix
    n_grid: int
    extra_target: np.ndarray
    n_segments: int

    @property
    def work(self) -> int:
        # The two products, the restart/prefix passes and ~12 passes of the estimate.
        return int(
            self.moments[0].nnz
            + self.moments[1].nnz
            + 2 * 2 * _N_POWERS * self.n_segments
            + self.window.nnz
            + 12 * self.n_grid
        )

    def sums(self, weights_t: np.ndarray):
        """Kernel sums ``sum_k``, ``sum_yk`` at the grid, shape (G, R) each, for (n, R) weights.

        As ``calcore.kde._kernel_sums`` on the rows repeated ``w_i`` times, without the
        constant ``35/32`` (it cancels in the estimate).
        """
        r = weights_t.shape[1]
        # (segment, [k powers, yk powers] x R), float64 accumulation
        seg = np.empty((self.n_segments, 2, _N_POWERS, r))
        seg[:, 0] = (self.moments[0] @ weights_t).reshape(self.n_segments, _N_POWERS, r)
        seg[:, 1] = (self.moments[1] @ weights_t[self.positive]).reshape(
            self.n_segments, _N_POWERS, r
        )
        seg = seg.reshape(self.n_segments, -1)
        # Running sums over the segments, in place, restarted at the first segment of every
        # block (so they hold one block's mass only): row t becomes the sum over its block's
        # segments up to t. A loop adding whole rows is 2-4x faster than np.cumsum(axis=0).
        for t in self.accumulate:
            np.add(seg[t - 1], seg[t], out=seg[t])
        per_query = self.window @ seg.reshape(-1, r)  # (2Q, R)
        q = per_query.shape[0] // 2
        sum_k, sum_yk = per_query[: self.n_grid], per_query[q : q + self.n_grid]
        # The reflected queries add to their grid points (views of the product, in place).
        np.add.at(sum_k, self.extra_target, per_query[self.n_grid : q])
        np.add.at(sum_yk, self.extra_target, per_query[q + self.n_grid :])
        return sum_k, sum_yk


def _weighted_problems(kp: KDEProblems) -> list[_WeightedProblem]:
    """The row-weighted matrices of every problem, prepared on the flat arrays at once."""
    ps = kp._points
    n, n_problems = kp.n_rows, kp.n_problems
    n_points = ps.values.size
    q_value, q_problem, q_target, w = kp._queries
    # Queries grouped by problem: each problem's grid points in order, then its reflections.
    by_problem = np.argsort(q_problem, kind="stable")
    q_off = np.concatenate(([0], np.cumsum(np.bincount(q_problem, minlength=n_problems))))
    qp = q_problem[by_problem]
    low, high = ps.offsets[qp], ps.offsets[qp + 1]
    # (Clipped: an empty window past a problem's last point may name the next problem.)
    lo, e1, e2 = (np.clip(x[by_problem], low, high) for x in (w.lo, w.e1, w.e2))
    j = w.j[by_problem]
    start1, start2 = ps.starts[j], ps.starts[j + 1]
    act = e1 > lo
    span = act & (e2 > start2)

    # Segments: between consecutive window part ends, block starts and problem starts.
    n_blocks = ps.starts.size - 2
    nonempty = np.flatnonzero(np.diff(ps.starts[: n_blocks + 1]) > 0)
    block_starts = ps.starts[nonempty]
    block = np.repeat(nonempty, np.diff(np.append(block_starts, n_points)))
    breaks = np.unique(np.concatenate((lo[act], e1[act], e2[span], block_starts, ps.offsets)))
    seg_of_point = np.repeat(np.arange(breaks.size - 1), np.diff(breaks))
    seg_off = np.searchsorted(breaks, ps.offsets)  # each problem's first segment
    continues = np.ones(breaks.size - 1, dtype=bool)
    continues[np.searchsorted(breaks, block_starts)] = False  # restarts (block firsts)

    # Where each row's point lies (rows: one argsort of every problem; ties may come in
    # any order, searchsorted never splits them), then its centred powers in row order:
    # CSC columns in row order, so the product reads the weights sequentially.
    rows = np.argsort(kp._scores, axis=1)
    point_of_row = np.empty((n_problems, n), dtype=np.intp)
    np.put_along_axis(point_of_row, rows, np.arange(n_points).reshape(n_problems, n), axis=1)
    point_of_row = point_of_row.reshape(-1)
    problem_of_row = np.repeat(np.arange(n_problems), n)
    centre = ps.centre[block[point_of_row]]
    b = (kp._scores.reshape(-1) - centre) / kp.bandwidth[problem_of_row]
    powers_by_row = np.empty((n_points, _N_POWERS))
    powers_by_row[:, 0] = 1.0
    powers_by_row[:, 1:] = b[:, None]
    np.cumprod(powers_by_row, axis=1, out=powers_by_row)
    seg_local = (seg_of_point[point_of_row] - seg_off[problem_of_row]).astype(np.int32)
    seg_rows_by_row = seg_local[:, None] * np.int32(_N_POWERS) + np.arange(
        _N_POWERS, dtype=np.int32
    )
    outcome = kp._outcomes.reshape(-1)

    # Window entries: +coef at each part's end, -coef at part 1's start, only where the
    # part is not empty and the value is not the block's own zero (its restart).
    use = np.stack((act, act & (lo != start1), span), axis=1)  # (Q, 3)
    query, kind = np.nonzero(use)  # the used parts, in query order
    a = np.where(kind == 2, w.a2[by_problem][query], w.a1[by_problem][query])
    data = _cubed_coefficients(a).T  # (parts, 7)
    data[kind == 1] *= -1.0
    end = np.choose(kind, (e1[query], lo[query], e2[query]))
    # Exclusive prefix at breakpoint t = running sum of segment t - 1 (a problem's segment 0
    # starts a block, so it is always dropped).
    t = np.searchsorted(breaks, end) - seg_off[qp[query]] - 1
    col = (t[:, None] * (2 * _N_POWERS) + np.arange(_N_POWERS)[None, :]).astype(np.int32)
    per_query = use.sum(axis=1)
    part_off = np.concatenate(([0], np.cumsum(per_query)))[q_off]
    # sum_yk only for windows that hold a positive row (elsewhere it is exactly 0).
    n_pos = np.concatenate(([0], np.cumsum(np.take_along_axis(kp._outcomes, rows, 1))))
    in_part2 = np.where(span, n_pos[e2] - n_pos[np.minimum(start2, n_points)], 0)
    has_pos = (n_pos[e1] - n_pos[lo] + in_part2) > 0
    yk = has_pos[np.repeat(np.arange(per_query.size), per_query)]
    targets = q_target[by_problem]

    out = []
    for p in range(n_problems):
        qs, ps_ = slice(q_off[p], q_off[p + 1]), slice(part_off[p], part_off[p + 1])
        n_seg = int(seg_off[p + 1] - seg_off[p])
        g0, g1 = kp.grid_offsets[p], kp.grid_offsets[p + 1]
        cols = slice(p * n, (p + 1) * n)
        positive = np.flatnonzero(outcome[cols])

        def csc(powers_rows, seg_rows_rows, n_seg=n_seg):
            m = powers_rows.shape[0]
            return sp.csc_matrix(
                (
                    powers_rows.ravel(),
                    seg_rows_rows.ravel(),
                    np.arange(0, _N_POWERS * m + 1, _N_POWERS, dtype=np.int32),
                ),
                shape=(_N_POWERS * n_seg, m),
                copy=False,
            )

        moments = (
            csc(powers_by_row[cols], seg_rows_by_row[cols]),
            csc(powers_by_row[cols][positive], seg_rows_by_row[cols][positive]),
        )
        d, c, keep = data[ps_], col[ps_], yk[ps_]
        pq = per_query[qs]
        counts = np.concatenate((pq, pq * has_pos[qs])) * _N_POWERS
        n_q = pq.size
        window = sp.csr_matrix(
            (
                np.concatenate((d.ravel(), d[keep].ravel())),
                np.concatenate((c.ravel(), (c[keep] + _N_POWERS).ravel())),
                np.concatenate(([0], np.cumsum(counts))).astype(np.int32),
            ),
            shape=(2 * n_q, 2 * _N_POWERS * n_seg),
            copy=False,
        )
        accumulate = np.flatnonzero(continues[seg_off[p] : seg_off[p + 1]])
        n_grid = int(g1 - g0)
        out.append(
            _WeightedProblem(
                moments,
                positive,
                tuple(accumulate.tolist()),
                window,
                n_grid,
                targets[qs][n_grid:] - g0,
                n_seg,
            )
        )
    return out


def _ece_columns(grid: np.ndarray, sum_k: np.ndarray, sum_yk: np.ndarray, order: float):
    """KDE-ECE of each column of the (G, R) kernel sums (few passes, reductions over rows).

    Overwrites ``sum_yk``. Same estimator as :func:`kde_ece_from_sums`.
    """
    positive = sum_k > 0.0
    gap = np.divide(sum_yk, sum_k, out=sum_yk, where=positive)  # pi(z) where p(z) > 0
    gap[~positive] = 0.0
    np.subtract(grid[:, None], gap, out=gap)
    np.abs(gap, out=gap)
    if order != 1.0:
        np.power(gap, order, out=gap)
    gap *= sum_k
    gap[~positive] = 0.0

    def trap(f):  # the grid spacing cancels in the ratio
        return f.sum(axis=0) - 0.5 * (f[0] + f[-1])

    return trap(gap) / trap(sum_k)


def kde_ece_from_sums(grid: np.ndarray, sum_k: np.ndarray, sum_yk: np.ndarray, order=1):
    """KDE-ECE from kernel sums on the grid, one value per row of ``sum_k`` (R, G).

    The estimator of :func:`calcore.kde.kde_ece`:
    ``trap(|z - pi(z)|^d p(z)) / trap(p(z))`` with ``pi = sum_yk / sum_k`` and
    ``p`` proportional to ``sum_k`` (the constant ``1 / (n h)`` cancels in the
    ratio), the integrand being 0 where ``p = 0``.
    """
    sum_k = np.atleast_2d(np.asarray(sum_k, dtype=np.float64))
    sum_yk = np.array(np.atleast_2d(sum_yk), dtype=np.float64)
    return _ece_columns(grid, sum_k.T, sum_yk.T, float(order))
