"""KDE-ECE from mergeable per-cell kernel moments: the statistics form of the estimator.

The KDE-ECE of :func:`calcore.foundation.kernel_density.kde_ece` needs, at every grid point
``z``, the kernel sums ``S(z) = sum_x K((z - x) / h)`` and
``S_y(z) = sum_x o_x K((z - x) / h)`` over the scores and their mirror images
(``-s`` for ``s <= h``, ``2 - s`` for ``s >= 1 - h``);
the estimate is ``trap(|z - S_y / S| S) / trap(S)`` (constants cancel). Those sums are
sums over rows, but each row touches every grid point within ``h``: kept per grid
point, a row would cost ``2 h / dz >= 16`` updates.

**Cells aligned with the windows.** Given ``h`` and the grid, cut [0, 1] at every
window end ``z - h`` and ``z + h``, every mirrored window end (``h - z``, ``2 - h - z``)
and every block boundary ``(2j + 1) h`` (see below). Every window is then a union of
whole cells, so a window's kernel sum is a sum over its cells of
``sum_x (1 - (a - b_x)^2)^3``, a degree-6 polynomial in ``b_x = (x - c) / h`` (``c`` the
centre of the cell's block, below) whose coefficients depend only on ``a = (z - c) / h``:
seven moments
``sum_x w b_x^k`` per cell and per outcome are sufficient statistics, exact (no binning
error), additive over rows (so mergeable), and independent of ``n``. A row costs one
``searchsorted`` among the cell edges and fourteen weighted ``bincount`` entries.

**Evaluation.** Cells are grouped in blocks of
width ``2h`` centred at ``2jh`` (block boundaries are cut points, so no cell straddles
two) and their moments are taken about the block's centre (``|b| <= 1``, as in the
centred moment form this replaced: rounding ~1e-13). Summed cumulatively within each
block, a window, which meets at most two blocks, is two differences of those sums:
``O(cells + grid)``.
A point exactly on a window end has kernel value 0, so which cell it falls in does not
matter; rounding of the edges moves points only within ~1e-16 of an end (kernel
~1e-45). Results equal :func:`calcore.foundation.kernel_density.kde_ece` to ~1e-12 (tested).

The bandwidth must be known before rows are added: in memory it is the rule of thumb of
the data (:func:`calcore.foundation.kernel_density.kde_bandwidth`); a stream gets it from a
first pass of mergeable moments (:class:`ScoreMoments`).

References
----------
Zhang, Kailkhura and Han (2020), "Mix-n-Match", ICML, Sec. 4.1, App. B-C.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from calcore.foundation.kernel_density import MIN_BANDWIDTH, default_grid_size
from calcore.foundation.threads import single_threaded_blas
from calcore.foundation.tuning import KDE_CHUNK_POINTS as _CHUNK
from calcore.foundation.tuning import KDE_CROWDED_ROWS as _CROWDED_ROWS
from calcore.foundation.tuning import KDE_PRODUCT_OUTCOME_SHARE as _PRODUCT_OUTCOME_SHARE
from calcore.statistics.cuts import SortedCuts

__all__ = [
    "positive_moments",
    "union_add",
    "KDELayout",
    "KDESums",
    "ScoreMoments",
    "kde_ece_from_sums",
]

_N_POWERS = 7  # (1 - u^2)^3 has degree 6


@dataclass(frozen=True)
class ScoreMoments:
    """Mergeable weight, mean and centred sum of squares of a problem's scores.

    Chan et al.'s pairwise update keeps the variance accurate for any batching (no
    ``E[s^2] - E[s]^2`` cancellation). ``bandwidth()`` is the rule of thumb of
    :func:`calcore.foundation.kernel_density.kde_bandwidth` (``1.06 sigma n^-1/5``, floored at
    1e-3).
    """

    weight: float = 0.0
    mean: float = 0.0
    m2: float = 0.0

    @classmethod
    def of(cls, scores, weights=None) -> "ScoreMoments":
        s = np.asarray(scores, dtype=np.float64)
        if weights is None:
            n = float(s.size)
            mean = float(s.mean()) if s.size else 0.0
            return cls(n, mean, float(np.sum((s - mean) ** 2)) if s.size else 0.0)
        w = np.asarray(weights, dtype=np.float64)
        n = float(w.sum())
        mean = float(w @ s / n) if n > 0 else 0.0
        return cls(n, mean, float(w @ (s - mean) ** 2) if n > 0 else 0.0)

    def merge(self, other: "ScoreMoments") -> "ScoreMoments":
        n = self.weight + other.weight
        if n == 0:
            return ScoreMoments()
        delta = other.mean - self.mean
        mean = self.mean + delta * other.weight / n
        m2 = self.m2 + other.m2 + delta * delta * self.weight * other.weight / n
        return ScoreMoments(n, mean, m2)

    def bandwidth(self) -> float:
        if self.weight <= 0:  # no data (e.g. every weight 0): callers report that
            return MIN_BANDWIDTH
        sigma = np.sqrt(self.m2 / self.weight)
        return max(1.06 * float(sigma) * self.weight**-0.2, MIN_BANDWIDTH)


def _cubed_coefficients(a: np.ndarray) -> np.ndarray:
    """Coefficients in ``b`` of ``(1 - (a - b)^2)^3``, shape (7, len(a))."""
    q = 1.0 - a * a
    a2 = a * a
    return np.stack(
        [
            q * q * q,
            6.0 * a * q * q,
            3.0 * q * (4.0 * a2 - q),
            4.0 * a * (2.0 * a2 - 3.0 * q),
            3.0 * q - 12.0 * a2,
            6.0 * a,
            np.full_like(a, -1.0),
        ]
    )


@dataclass(frozen=True, eq=False)
class KDELayout:
    """The cells of one KDE-ECE problem, fixed by its bandwidth and grid.

    Attributes
    ----------
    bandwidth : float
    grid : ndarray of shape (G,)
        ``np.linspace(0, 1, G)``, ``G = max(2001, ceil(8 / h) + 1)`` as in :func:`kde_ece`.
    edges : ndarray of shape (E,)
        Sorted cut points in (0, 1); cell ``j`` is ``[edges[j-1], edges[j])`` (cell 0
        starts at 0, the last one ends at 1 included).

    Examples
    --------
    >>> from calcore.statistics import KDELayout
    >>> layout = KDELayout.for_bandwidth(0.25)
    >>> layout.bandwidth, layout.grid.size, KDELayout.for_bandwidth(0.001).grid.size
    (0.25, 2001, 8001)
    >>> layout.cell_of(np.array([0.0, 1.0])).tolist() == [0, layout.n_cells - 1]
    True
    """

    bandwidth: float
    grid: np.ndarray
    edges: np.ndarray

    @classmethod
    def for_bandwidth(cls, bandwidth: float) -> "KDELayout":
        h = float(bandwidth)
        grid = np.linspace(0.0, 1.0, default_grid_size(h))
        n_blocks = int(np.ceil(1.0 / (2.0 * h))) + 1
        cuts = [
            grid - h,
            grid + h,
            h - grid[grid <= h],
            2.0 - h - grid[grid >= 1.0 - h],
            (2.0 * np.arange(n_blocks) + 1.0) * h,
        ]
        edges = np.unique(np.concatenate(cuts))
        edges = edges[(edges > 0.0) & (edges < 1.0)]
        return cls(h, grid, edges)

    @property
    def n_cells(self) -> int:
        return int(self.edges.size + 1)

    def cell_of(self, scores: np.ndarray) -> np.ndarray:
        """Cell of each score in [0, 1]: ``np.searchsorted(edges, scores, side="right")``."""
        return self._search.count(scores)

    @cached_property
    def _search(self) -> SortedCuts:
        return SortedCuts(self.edges, side="right")

    @cached_property
    def centre(self) -> np.ndarray:
        bounds = np.concatenate(([0.0], self.edges, [1.0]))
        return 0.5 * (bounds[:-1] + bounds[1:])

    @cached_property
    def frame(self) -> np.ndarray:
        """Centre ``2jh`` of each cell's block: the origin of its moments."""
        return 2.0 * self.bandwidth * self.block

    @cached_property
    def block(self) -> np.ndarray:
        """Block of each cell: block ``j`` is ``[(2j - 1) h, (2j + 1) h)``, centre ``2jh``."""
        return np.floor(self.centre / (2.0 * self.bandwidth) + 0.5).astype(np.intp)

    def _first_cell_at(self, values: np.ndarray) -> np.ndarray:
        """Index of the cell that starts at each value (0 below 0, n_cells at or above 1)."""
        idx = np.searchsorted(self.edges, values, side="left") + 1
        idx = np.where(values <= 0.0, 0, idx)
        return np.where(values >= 1.0, self.n_cells, idx)


@dataclass(eq=False)
class KDESums:
    """Per-cell moments ``sum w b^k`` (k = 0..6), all points and positive ones, with
    ``b = (x - c) / h`` and ``c`` the centre of the cell's block.

    ``moments`` has shape ``(2, 7, n_kept)``: index 0 of the first axis is every point,
    1 the points whose outcome is 1. ``cells`` says which cells of the layout the last
    axis holds: None for every cell (``n_kept = n_cells``), else their sorted indices.

    With replicate weights, ``moments`` is ``(n_kept, 7, 2, R)``, cells first: the
    layout the sparse products of :meth:`add` produce and the grid product
    (:func:`_grid_product`) reads, every (outcome, replicate) set of a cell's power
    adjacent, so neither transposes them (the cumulative sums along the cells written
    into a moved layout, and the moved writes of each chunk's sums, were a sixth of the
    class-wise KDE-ECE's replicates of 10,000 x 100 rows). :meth:`dense` gives them in
    the ``(R, 2, 7, n_cells)`` order. Replicated sums keep only the cells their points
    fall in: scores pile up in a few cells of thousands, and a dense (200, 2, 7, 4,000)
    array a class held 2.5 GB for 100 classes, whose first writes alone took 4.6 s of
    a 9 s ``evaluate`` (10,000 x 100 rows, 200 resamples).

    Examples
    --------
    >>> from calcore.statistics import KDELayout, KDESums, kde_ece_from_sums
    >>> layout = KDELayout.for_bandwidth(0.2)
    >>> low, high = KDESums.zeros(layout), KDESums.zeros(layout)
    >>> low.add(layout, [0.2, 0.3], [0, 1])
    >>> high.add(layout, [0.7, 0.8], [1, 1])
    >>> round(kde_ece_from_sums(layout, low.merge(high)), 4)  # kde_ece of the four points
    0.2626
    """

    moments: np.ndarray
    cells: np.ndarray | None = None
    #: Replicated sums whose every replicate has the same all-points moments (the
    #: calibration test's redrawn labels: only the positives change) keep them once here,
    #: shape (7, n_kept); the all-points half of ``moments`` is then left zero and the KDE
    #: of all points is evaluated once for all replicates.
    shared_all: np.ndarray | None = None

    @classmethod
    def zeros(cls, layout: KDELayout, *, replicates: int | None = None) -> "KDESums":
        if replicates is None:
            return cls(np.zeros((2, _N_POWERS, layout.n_cells)))
        return cls(np.zeros((0, _N_POWERS, 2, int(replicates))), np.empty(0, dtype=np.intp))

    @property
    def replicated(self) -> bool:
        return self.moments.ndim == 4

    def _positions(self, touched: np.ndarray) -> np.ndarray:
        """Where the (sorted, distinct) layout cells ``touched`` sit on the cell axis
        (replicated sums: the first), keeping room for them first."""
        if self.cells is None:
            return touched
        kept = np.union1d(self.cells, touched)
        if kept.size > self.cells.size:
            grown = np.zeros((kept.size,) + self.moments.shape[1:])
            grown[np.searchsorted(kept, self.cells)] = self.moments
            self.moments, self.cells = grown, kept
        return np.searchsorted(self.cells, touched)

    def dense(self, n_cells: int) -> np.ndarray:
        """The moments of every layout cell: shape ``(2, 7, n_cells)``, or
        ``(R, 2, 7, n_cells)`` with replicates."""
        moments = self.full_moments()
        if self.cells is None:
            return moments
        out = np.zeros(moments.shape[:-1] + (n_cells,))
        out[..., self.cells] = moments
        return out

    def full_moments(self) -> np.ndarray:
        """``moments`` with the shared all-points moments written into every replicate,
        replicated ones in the ``(R, 2, 7, n_kept)`` order (a view when nothing is shared)."""
        out = self._with_shared()
        return out.transpose(3, 2, 1, 0) if self.replicated else out

    def _with_shared(self) -> np.ndarray:
        """``moments`` (in its own layout) with the shared all-points moments written in."""
        if self.shared_all is None:
            return self.moments
        out = self.moments.copy()
        if self.replicated:
            out[:, :, 0, :] = self.shared_all.T[:, :, None]
        else:
            out[0] = self.shared_all
        return out

    def add(self, layout: KDELayout, scores, outcomes, weights=None) -> None:
        """Add points (scores in [0, 1], 0/1 outcomes) with optional row weights.

        ``weights`` is None, shape (m,), or (R, m) for a replicate axis.
        """
        s = np.asarray(scores, dtype=np.float64).ravel()
        pos = np.asarray(outcomes).ravel().astype(bool)
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        # one BLAS thread for the crowded cells' dense products (_crowded_moments): a
        # pool's wake-ups cost more than these products when the other core is busy (30
        # classes of 10,000 x 100 on the loaded machine: 2.5 s of CPU with the default
        # threads, 0.46 s on one). Callers adding many problems enter it once themselves
        # (CalibrationStatistics.update): entering scans the loaded libraries, a few ms.
        with single_threaded_blas() if self.replicated else contextlib.nullcontext():
            for a in range(0, s.size, _CHUNK):  # chunks: the seven powers stay in cache
                wc = None if w is None else w[..., a : a + _CHUNK]
                self._add_chunk(layout, s[a : a + _CHUNK], pos[a : a + _CHUNK], wc)

    def _add_chunk(self, layout, s, pos, w) -> None:
        cells = layout.cell_of(s)
        # in the frame of the cell's block (centre 2jh), so |b| <= 1 and the evaluation
        # needs no change of frame
        b = (s - layout.frame[cells]) / layout.bandwidth
        n = layout.n_cells
        powers = np.empty((_N_POWERS, s.size))
        powers[0] = 1.0
        for k in range(1, _N_POWERS):
            np.multiply(powers[k - 1], b, out=powers[k])
        if self.replicated:  # replicate weights (R, m)
            self._add_replicated(cells, powers, pos, w, n)
            return
        # One bincount per power over (outcome, cell); "all points" is their sum, kept in
        # row 0 of the outcome axis (negatives + positives), positives in row 1.
        if self.cells is not None:  # compact sums without replicates: every cell from now
            self.moments, self.cells = self.dense(n), None
        key = cells + n * pos
        for k in range(_N_POWERS):
            v = powers[k] if w is None else powers[k] * w
            split = np.bincount(key, weights=v, minlength=2 * n).reshape(2, n)
            self.moments[0, k] += split[0] + split[1]
            self.moments[1, k] += split[1]

    def _add_replicated(self, cells, powers, pos, w, n_cells: int) -> None:
        """Moments of every replicate (weights ``w``, (R, m)) as two sparse products with
        the rows' weights: a (m, cells x 7) matrix of the points' powers, and the same
        for the positive points only.

        The matrix is built in the points' own order (seven entries a point, no sort),
        and the product is taken as ``X.T @ w.T``: each point adds ``power * w[:, row]``
        to its cell's seven rows, so a point's ``R`` weights are read once for all seven
        powers, and every sum adds the same terms in the same order (increasing row) as
        the cell-sorted matrix of before, which a ``np.unique`` and an ``argsort`` of
        the points made (0.7 ms a class of 10,000 points, plus the index arithmetic).
        The crowded cells (below) come from a dense product instead (same values to
        ~1e-16 relative). Only the cells this chunk touches are kept (scores pile up in
        few of them).
        """
        if cells.size == 0:
            return
        per_cell_all = np.bincount(cells, minlength=n_cells)
        touched = np.flatnonzero(per_cell_all)
        local_of = np.zeros(n_cells, dtype=np.intp)
        local_of[touched] = np.arange(touched.size)
        local = local_of[cells]
        at = self._positions(touched)
        wt = np.ascontiguousarray(w.T)  # (m, R): a point's weights adjacent (no copy if so)
        m, t = cells.size, touched.size
        index = np.int32 if max(m, t * _N_POWERS) < 2**31 else np.int64
        for which in (0, 1):
            if which == 0:
                selected, per_cell = None, per_cell_all[touched]
                n_selected = m
            else:
                selected = np.asarray(pos, dtype=bool)
                n_selected = int(np.count_nonzero(selected))
                if n_selected == 0:
                    continue
                per_cell = np.bincount(local[selected], minlength=t)
            limit = max(_CROWDED_ROWS, n_selected // 16)
            crowded = np.flatnonzero(per_cell >= limit)
            sparse = selected
            dense = None
            if crowded.size:  # a dense product for the cells where the scores pile up
                in_crowded = (per_cell >= limit)[local]
                rows = np.flatnonzero(in_crowded if selected is None else in_crowded & selected)
                dense = _crowded_moments(powers, local, crowded, rows, wt)
                sparse = ~in_crowded if selected is None else selected & ~in_crowded
            points = np.arange(m) if sparse is None else np.flatnonzero(sparse)
            indptr = np.zeros(m + 1, dtype=index)
            if sparse is None:
                indptr[1:] = np.arange(_N_POWERS, _N_POWERS * (m + 1), _N_POWERS)
            else:
                np.cumsum(sparse * _N_POWERS, out=indptr[1:])
            columns = local[points].astype(index)[:, None] * _N_POWERS + np.arange(
                _N_POWERS, dtype=index
            )
            matrix = sp.csr_matrix(
                (powers[:, points].T.reshape(-1), columns.reshape(-1), indptr),
                shape=(m, t * _N_POWERS),
            )
            got = np.asarray(matrix.T @ wt).reshape(t, _N_POWERS, -1)  # (t, 7, R)
            if dense is not None:
                got[crowded] += dense
            if t and at[-1] - at[0] == t - 1:  # consecutive cells (a first chunk): a slice,
                self.moments[at[0] : at[-1] + 1, :, which] += got  # not a gather and a scatter
            else:
                self.moments[at, :, which] += got

    def merge(self, other: "KDESums") -> "KDESums":
        if self.shared_all is not None or other.shared_all is not None:
            self, other = (KDESums(x._with_shared(), x.cells) for x in (self, other))
        if self.replicated:  # compact, cells first
            cells = np.union1d(self.cells, other.cells)
            out = np.zeros((cells.size,) + self.moments.shape[1:])
            out[np.searchsorted(cells, self.cells)] += self.moments
            out[np.searchsorted(cells, other.cells)] += other.moments
            return KDESums(out, cells)
        if self.cells is None and other.cells is None:
            return KDESums(self.moments + other.moments)
        if self.cells is None or other.cells is None:  # one holds every cell
            n = (self if self.cells is None else other).moments.shape[-1]
            return KDESums(self.dense(n) + other.dense(n))
        return KDESums(*union_add(self.moments, self.cells, other.moments, other.cells))

    def replicate(self, r: int) -> "KDESums":
        """Replicate ``r``'s sums alone (a view; shared all-points moments stay shared)."""
        return KDESums(self.moments[..., r].transpose(2, 1, 0), self.cells, self.shared_all)


def _crowded_moments(powers, local, crowded, rows, wt) -> np.ndarray:
    """Moments of the points of a few crowded cells for every replicate, shape (q, 7, R).

    One dense product ``B.T @ wt`` with ``B`` (m, 7q) the points' powers in their cell's
    columns and zeros elsewhere: ``7 q R m`` multiply-adds at BLAS speed, where the sparse
    product reads a point's R weights at a fraction of it (a class's cell near 0 holds
    6,000 of 10,000 rows in the class-wise problems of 100 classes).
    """
    column = np.full(local.max(initial=0) + 1, -1, dtype=np.intp)
    column[crowded] = np.arange(crowded.size)
    place = column[local[rows]]
    inside = rows[place >= 0]
    place = place[place >= 0]
    basis = np.zeros((wt.shape[0], crowded.size * _N_POWERS))
    basis[inside[:, None], place[:, None] * _N_POWERS + np.arange(_N_POWERS)] = powers[:, inside].T
    return (basis.T @ wt).reshape(crowded.size, _N_POWERS, -1)


def positive_moments(layout: KDELayout, scores, positive: np.ndarray, weights=None):
    """Per-cell moments of the positive points of several outcome vectors at once, on the
    cells the points fall in.

    The points (``scores``, row weights ``weights``) are the same for every outcome
    vector; row ``r`` of ``positive`` says which of them have outcome 1 in set ``r``.
    Used by the calibration test's redrawn labels
    (:class:`~calcore.statistics.redraws.LabelRedraws`): the cells and powers of the
    points are computed once, and each set costs one bincount per power. Only the cells
    the points fall in are kept (a dense (200, 7, 4,000) array a class made the redraws
    of 100 classes hold gigabytes).

    Parameters
    ----------
    layout : KDELayout
    scores : ndarray of shape (m,)
    positive : ndarray of bool, shape (R, m)
    weights : ndarray of shape (m,), optional

    Returns
    -------
    moments : ndarray of shape (R, 7, k)
        What row 1 of :attr:`KDESums.moments` would hold for each outcome vector, on
    cells : ndarray of shape (k,)
        the layout's cells that hold points (sorted).

    Examples
    --------
    >>> layout = KDELayout.for_bandwidth(0.2)
    >>> sums = KDESums.zeros(layout)
    >>> sums.add(layout, [0.2, 0.3, 0.7], [1, 0, 1])
    >>> scores, positive = np.array([0.2, 0.3, 0.7]), np.array([[1, 0, 1]], bool)
    >>> got, cells = positive_moments(layout, scores, positive)
    >>> bool(np.allclose(got[0], sums.moments[1][:, cells]))
    True
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    positive = np.asarray(positive, dtype=bool)
    n_sets = positive.shape[0]
    all_cells = layout.cell_of(s)
    touched = np.unique(all_cells)
    n = touched.size
    out = np.zeros((n_sets, _N_POWERS, n))
    index = np.int32 if max(s.size, n * _N_POWERS) < 2**31 else np.int64
    for a in range(0, s.size, _CHUNK):
        chunk = s[a : a + _CHUNK]
        cells = all_cells[a : a + _CHUNK]
        m = chunk.size
        b = (chunk - layout.frame[cells]) / layout.bandwidth
        power = np.ones(m) if weights is None else np.asarray(weights)[a : a + _CHUNK]
        power = np.array(power, dtype=np.float64)
        hits = positive[:, a : a + _CHUNK]
        if np.count_nonzero(hits) < _PRODUCT_OUTCOME_SHARE * hits.size:
            sets, points = np.nonzero(hits)  # few positives: one bincount per power
            key = sets * n + np.searchsorted(touched, cells)[points]
            for k in range(_N_POWERS):
                if k:
                    power *= b
                sums = np.bincount(key, weights=power[points], minlength=n_sets * n)
                out[:, k] += sums.reshape(n_sets, n)
            continue
        # many: one sparse product X.T @ P.T of the points' seven powers (X, point-ordered,
        # seven entries a point) with the 0/1 outcome vectors; every sum adds the same
        # terms in the same order (increasing point) as the bincounts, plus exact zeros
        values = np.empty((m, _N_POWERS))
        for k in range(_N_POWERS):
            if k:
                power *= b
            values[:, k] = power
        columns = np.searchsorted(touched, cells).astype(index)[:, None] * _N_POWERS
        columns = columns + np.arange(_N_POWERS, dtype=index)
        indptr = np.arange(0, _N_POWERS * (m + 1), _N_POWERS, dtype=index)
        matrix = sp.csr_matrix(
            (values.reshape(-1), columns.reshape(-1), indptr), shape=(m, n * _N_POWERS)
        )
        outcomes = np.ascontiguousarray(hits.T, dtype=np.float64)
        got = np.asarray(matrix.T @ outcomes).reshape(n, _N_POWERS, n_sets)
        out += got.transpose(2, 1, 0)
    return out, touched


def union_add(first, first_cells, second, second_cells):
    """``first + second`` on the union of their cells (the last axis of each holds the
    sorted layout cells ``*_cells``): ``(moments, cells)``. An empty ``first`` (the first
    batch of redraws) gives ``second`` itself, not a copy through a zero array."""
    if (
        first_cells.size == 0
        and np.broadcast_shapes(first.shape[:-1], second.shape[:-1]) == (second.shape[:-1])
    ):
        return second, second_cells
    cells = np.union1d(first_cells, second_cells)
    out = np.zeros(np.broadcast_shapes(first.shape[:-1], second.shape[:-1]) + (cells.size,))
    out[..., np.searchsorted(cells, first_cells)] += first
    out[..., np.searchsorted(cells, second_cells)] += second
    return out, cells


class _Packed:
    """The non-empty cells of a layout, renumbered ``0 .. len(used) - 1`` (same blocks)."""

    def __init__(self, layout: KDELayout, used: np.ndarray):
        self.bandwidth = layout.bandwidth
        self.used = used
        self.block = layout.block[used]
        self.n_cells = int(used.size)

    def position(self, cell: np.ndarray) -> np.ndarray:
        """Packed index of the first used cell at or after each layout cell index."""
        return np.searchsorted(self.used, cell, side="left")


def _block_prefix(layout, flat: np.ndarray) -> np.ndarray:
    """Cumulative block-frame moments, restarted at every block: shape (n_cells + 1, F).

    ``flat`` is (n_cells, F): every moment of every cell, cells first (so that a window's
    moments are contiguous rows to gather). Row ``j`` of the result is the sum over the
    cells before ``j`` *of the same block as cell j - 1* (0 at a block's first cell), so a
    window part is ``P[end] - P[start]`` with ``P[start] = 0`` when ``start`` is its
    block's first cell.
    """
    shifted = flat.copy()  # the moments are kept in block frames already
    first = np.flatnonzero(np.r_[True, layout.block[1:] != layout.block[:-1]])
    if first.size > 1:
        totals = np.add.reduceat(shifted, first, axis=0)
        shifted[first[1:]] -= totals[:-1]
    out = np.zeros((flat.shape[0] + 1, flat.shape[1]))
    np.cumsum(shifted, axis=0, out=out[1:])
    return out


def _range_sums(layout, prefix, start, stop, a_of_block):
    """Kernel sums and weights over cells ``[start, stop)`` (at most two blocks) per query.

    ``prefix`` is :func:`_block_prefix`'s, with ``F = L * 7`` columns (``L`` sets of seven
    moments). ``a_of_block(centre, queries)`` gives the polynomial argument of the given
    queries (indices into ``start``) for a block centre each. Returns ``(sums, mass)``,
    both of shape ``(len(start), L)``: the kernel sums and ``sum w`` in range.
    """
    h = layout.bandwidth
    n = layout.n_cells
    block = layout.block
    block_start = np.searchsorted(block, np.arange(block[-1] + 2), side="left")
    n_sets = prefix.shape[1] // _N_POWERS
    out = np.zeros((start.size, n_sets))
    mass = np.zeros_like(out)
    act = np.flatnonzero(stop > start)
    if act.size == 0:
        return out, mass
    s, e = start[act], stop[act]
    b1 = block[s]
    end1 = block_start[b1 + 1]
    e1 = np.minimum(e, end1)

    def part(lo, hi, blk, idx):
        v_lo = prefix[lo]
        v_lo[lo == block_start[blk]] = 0.0
        moments = (prefix[hi] - v_lo).reshape(lo.size, n_sets, _N_POWERS)
        coef = _cubed_coefficients(a_of_block(2.0 * h * blk, act[idx]))  # (7, q)
        out[act[idx]] += np.einsum("qsk,kq->qs", moments, coef)
        mass[act[idx]] += moments[:, :, 0]

    part(s, e1, b1, np.arange(act.size))
    two = np.flatnonzero(e > end1)
    if two.size:
        b2 = b1[two] + 1
        part(np.minimum(end1[two], n), e[two], b2, two)
    return out, mass


def kde_sums_at_grid(layout: KDELayout, sums: KDESums):
    """``S(z)`` and ``S_y(z)`` at every grid point (divided by K(0) = 35/32), reflected copies
    included, and ``W(z)``, the weight of the points in each window; shapes ``lead + (G,)``.

    The polynomial form sums terms up to ~500 times a window's weight, so a window whose
    points all sit near its ends (kernel values ~0) can come out as rounding noise of
    either sign, ~1e-13 W: below ``1e-11 W`` a sum is set to 0. The exact sums there are
    below ``1e-11`` per point (the kernel at ``|u| > 0.99998``), so the estimate moves by
    less than that, while a noise value would otherwise enter the order-``d`` integrand
    as ``S_y^d / S^(d-1)``.
    """
    z = layout.grid
    if sums.shared_all is not None:
        return _shared_sums_at_grid(layout, sums)
    if sums.replicated:  # one sparse product for every replicate
        n_rep = sums.moments.shape[-1]
        local, stacked = _used_sets(sums)
        used = local if sums.cells is None else sums.cells[local]
        total_q = np.zeros((z.size, n_rep, 2))
        mass_q = np.zeros_like(total_q)
        if used.size:
            got, weight = _grid_product(
                _Packed(layout, used), stacked, _grid_ranges(layout), z.size
            )
            # the product's sets are (outcome, replicate); _finish_grid reads (replicate, outcome)
            total_q[...] = got.reshape(z.size, 2, n_rep).transpose(0, 2, 1)
            mass_q[...] = weight.reshape(z.size, 2, n_rep).transpose(0, 2, 1)
        return _finish_grid(
            total_q.reshape(z.size, -1), mass_q.reshape(z.size, -1), z.size, (n_rep, 2)
        )
    lead = sums.moments.shape[:-2]  # (2,)
    # Only cells holding points matter (scores pile up: most cells are empty). Cells
    # first, (n_used, F) with F = prod(lead) * 7, so windows gather contiguous rows.
    kept = sums.moments.shape[-1]
    counts = np.abs(sums.moments[..., 0, :]).reshape(-1, kept).sum(axis=0)
    local = np.flatnonzero(counts > 0)
    used = local if sums.cells is None else sums.cells[local]
    packed = _Packed(layout, used)
    ranges = _grid_ranges(layout)
    flat = np.moveaxis(sums.moments[..., local], -1, 0).reshape(local.size, -1)
    prefix = _block_prefix(packed, flat)
    n_sets = flat.shape[1] // _N_POWERS
    total_q = np.zeros((z.size, n_sets))
    mass_q = np.zeros_like(total_q)
    for start, stop, queries, argument in ranges:
        if queries.size and used.size:
            got, weight = _range_sums(
                packed, prefix, packed.position(start), packed.position(stop), argument
            )
            total_q[queries] += got
            mass_q[queries] += weight
    return _finish_grid(total_q, mass_q, z.size, lead)


def _shared_sums_at_grid(layout: KDELayout, sums: KDESums):
    """:func:`kde_sums_at_grid` of replicates that share their all-points moments: the
    grid product takes ``1 + R`` sets (all points once, then each replicate's positives)
    instead of ``2 R``, and its all-points column is repeated for every replicate."""
    z = layout.grid
    # (R, 2) with replicates; (2,) for one replicate's view (KDESums.replicate)
    lead = (sums.moments.shape[-1], 2) if sums.replicated else (2,)
    local = np.flatnonzero(sums.shared_all[0])  # cells with weight (positives among them)
    used = local if sums.cells is None else sums.cells[local]
    n_rep = int(np.prod(lead[:-1]))
    total_q = np.zeros((z.size,) + lead)
    mass_q = np.zeros_like(total_q)
    if used.size:
        stacked = _shared_sets(sums, local)
        got, weight = _grid_product(_Packed(layout, used), stacked, _grid_ranges(layout), z.size)
        total_q.reshape(z.size, n_rep, 2)[:, :, 0] = got[:, :1]
        total_q.reshape(z.size, n_rep, 2)[:, :, 1] = got[:, 1:]
        mass_q.reshape(z.size, n_rep, 2)[:, :, 0] = weight[:, :1]
        mass_q.reshape(z.size, n_rep, 2)[:, :, 1] = weight[:, 1:]
    return _finish_grid(total_q.reshape(z.size, -1), mass_q.reshape(z.size, -1), z.size, lead)


def _grid_ranges(layout: KDELayout) -> list:
    """The cell ranges of the windows at the grid points and of their mirror images."""
    h, z, n = layout.bandwidth, layout.grid, layout.n_cells
    # (first cell, end cell, queries, argument a of the polynomial for a block centre c):
    # the windows themselves, a = (z - c) / h; the mirror images -s of s in [0, h - z]
    # (z <= h), a = -(z + c) / h; the mirror images 2 - s of s in [2 - h - z, 1]
    # (z >= 1 - h), a = (2 - z - c) / h.
    every, low, high = np.arange(z.size), np.flatnonzero(z <= h), np.flatnonzero(z >= 1.0 - h)
    return [
        (
            layout._first_cell_at(z - h),
            layout._first_cell_at(z + h),
            every,
            lambda c, i: (z[every[i]] - c) / h,
        ),
        (
            np.zeros(low.size, dtype=np.intp),
            layout._first_cell_at(h - z[low]),
            low,
            lambda c, i: -(z[low[i]] + c) / h,
        ),
        (
            layout._first_cell_at(2.0 - h - z[high]),
            np.full(high.size, n, dtype=np.intp),
            high,
            lambda c, i: (2.0 - z[high[i]] - c) / h,
        ),
    ]


def _finish_grid(total_q, mass_q, n_grid: int, lead: tuple):
    """``(S, S_y, W)`` of :func:`kde_sums_at_grid` from per-query sums of shape (G, sets)."""
    total = np.moveaxis(total_q.reshape((n_grid,) + lead), 0, -1)  # lead + (G,)
    mass = np.moveaxis(mass_q.reshape((n_grid,) + lead), 0, -1)
    noise = np.abs(total) <= 1e-11 * mass[..., :1, :]
    total[noise] = 0.0
    return total[..., 0, :], total[..., 1, :], mass[..., 0, :]


def _used_sets(sums: KDESums):
    """``(local, stacked)`` of replicated sums: the positions of the cells with weight in
    some replicate, and their moments as ``(u, 7, 2R)``, the sets (outcome, replicate)."""
    kept, n_rep = sums.moments.shape[0], sums.moments.shape[-1]
    local = np.flatnonzero(np.abs(sums.moments[:, 0]).reshape(kept, -1).sum(axis=1) > 0)
    # the sums keep touched cells only, so usually all of them: no copy
    moments = sums.moments if local.size == kept else sums.moments[local]
    return local, moments.reshape(local.size, _N_POWERS, 2 * n_rep)


def _shared_sets(sums: KDESums, local: np.ndarray) -> np.ndarray:
    """The ``(u, 7, 1 + R)`` sets of sums that share their all-points moments: all points
    once, then each replicate's positives (one for a replicate's view)."""
    if sums.replicated:
        positives = sums.moments[:, :, 1, :]  # (u, 7, R): a view, then the used cells only
        positives = positives if local.size == positives.shape[0] else positives[local]
    else:
        positives = sums.moments[1][:, local].T[:, :, None]
    return np.concatenate((sums.shared_all[:, local].T[:, :, None], positives), axis=2)


def _grid_product(packed: "_Packed", moments: np.ndarray, ranges, n_grid: int):
    """Kernel sums and window weights of every replicate at every grid point, as one sparse
    product: ``(G, sets)`` each.

    ``moments`` (shape ``(u, 7, sets)``, the used cells first) are summed within blocks
    (:func:`_block_prefix`) into a ``((u + 1) * 7, sets)`` matrix, replicates and outcome
    sets as its columns. A window part is then two rows of it per power, ``P[hi] - P[lo]``,
    weighted by the polynomial's coefficients: a (2G, (u + 1) * 7) operator with at most 14
    entries per part (2 for the weight ``W(z)``) that every replicate shares. The gathered
    (G, sets, 7) differences of the per-part evaluation (:func:`_range_sums`) took 12.7 of
    the 20 s of a profiled ``compare`` of 4 methods on 5,000 x 10 rows with 200 resamples.
    """
    u = packed.n_cells
    n_sets = moments.shape[-1]
    # sums restarted at every block, along the cells: cells first, then the seven powers,
    # then every (outcome, replicate) set, the layout of the sums (KDESums). Each cell's
    # row of 7 x sets sums is the previous row plus its own, or its own alone at a block's
    # first cell: one vectorised addition a cell, where np.cumsum runs one strided scalar
    # chain per column (u = 1,660 cells x 2,800 sums, the confidence KDE at R = 200: 14-16
    # against 44-100 ms), and no block totals to subtract (_block_prefix's restart, whose
    # np.add.reduceat along the cells was a tenth of the class-wise KDE's replicates; the
    # restarted sums differ from those by that subtraction's rounding, ~1e-16 of a block)
    flat = np.ascontiguousarray(moments, dtype=np.float64).reshape(u, -1)
    starts = np.r_[True, packed.block[1:] != packed.block[:-1]].tolist()
    cumulative = np.zeros((u + 1, _N_POWERS, n_sets))
    rows = cumulative.reshape(u + 1, -1)
    for j in range(u):
        if starts[j]:
            rows[j + 1] = flat[j]
        else:
            np.add(rows[j], flat[j], out=rows[j + 1])
    prefix = cumulative.reshape((u + 1) * _N_POWERS, n_sets)
    h, block = packed.bandwidth, packed.block
    block_start = np.searchsorted(block, np.arange(block[-1] + 2), side="left")
    rows, cols, vals = [], [], []
    powers = np.arange(_N_POWERS)

    def part(lo, hi, blk, queries, argument, idx):
        coef = _cubed_coefficients(argument(2.0 * h * blk, idx)).T  # (q, 7)
        q = queries[:, None]
        rows.extend((np.broadcast_to(q, coef.shape), q + n_grid))
        cols.extend((hi[:, None] * _N_POWERS + powers, hi[:, None] * _N_POWERS))
        vals.extend((coef, np.ones((hi.size, 1))))
        inner = lo != block_start[blk]  # P[lo] is 0 at its block's first cell
        if inner.any():
            rows.extend((np.broadcast_to(q[inner], coef[inner].shape), q[inner] + n_grid))
            cols.extend((lo[inner, None] * _N_POWERS + powers, lo[inner, None] * _N_POWERS))
            vals.extend((-coef[inner], -np.ones((int(inner.sum()), 1))))

    for start, stop, queries, argument in ranges:
        if not queries.size:
            continue
        lo, hi = packed.position(start), packed.position(stop)
        act = np.flatnonzero(hi > lo)
        s, e = lo[act], hi[act]
        b1 = block[s]
        end1 = block_start[b1 + 1]
        part(s, np.minimum(e, end1), b1, queries[act], argument, act)
        two = np.flatnonzero(e > end1)  # a window meets at most two blocks
        if two.size:
            part(np.minimum(end1[two], u), e[two], b1[two] + 1, queries[act[two]], argument,
                 act[two])  # fmt: skip
    operator = _rows_operator(rows, cols, vals, (2 * n_grid, prefix.shape[0]))
    out = operator @ prefix
    return out[:n_grid], out[n_grid:]


def _rows_operator(rows, cols, vals, shape) -> sp.csr_matrix:
    """A CSR matrix of the entries ``(rows, cols, vals)`` (lists of arrays), each row's in
    the order given, duplicates kept (the product adds them in turn).

    Built by a stable counting of the rows, not through scipy's COO conversion, whose
    sort of every row's columns and summing of duplicates took a third of the grid
    product's time (10,000 x 100, the class-wise problems). The sums differ from the
    converted matrix's only in the order of a row's terms (~1e-16 relative).
    """
    if not rows:
        return sp.csr_matrix(shape)
    flat_rows = np.concatenate([np.ravel(r) for r in rows])
    index = np.int32 if max(flat_rows.size, shape[1]) < 2**31 else np.int64
    # rows fit 16 bits for grids up to 16,383 points: numpy's stable sort is then a radix sort
    key = flat_rows.astype(np.int16 if shape[0] < 2**15 else np.int64)
    order = np.argsort(key, kind="stable")
    indptr = np.zeros(shape[0] + 1, dtype=index)
    np.cumsum(np.bincount(flat_rows, minlength=shape[0]), out=indptr[1:])
    columns = np.concatenate([np.ravel(c) for c in cols])[order].astype(index)
    values = np.concatenate([np.ravel(v) for v in vals])[order]
    return sp.csr_matrix((values, columns, indptr), shape=shape)


def kde_ece_from_sums(layout: KDELayout, sums: KDESums, *, order=1):
    """KDE-ECE ``trap(|z - S_y/S|^d S) / trap(S)`` (a float, or one per replicate).

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics import KDELayout, KDESums, kde_ece_from_sums
    >>> layout = KDELayout.for_bandwidth(0.2)
    >>> sums = KDESums.zeros(layout)
    >>> sums.add(layout, [0.2, 0.3, 0.7, 0.8], [0, 1, 1, 1])
    >>> round(kde_ece_from_sums(layout, sums), 4)
    0.2626
    >>> round(calcore.kde_ece([0.2, 0.3, 0.7, 0.8], [0, 1, 1, 1], bandwidth=0.2), 4)
    0.2626
    """
    if sums.replicated:
        return _replicated_kde_ece(layout, sums, order)
    s_k, s_yk, _ = kde_sums_at_grid(layout, sums)
    value = _ece_integral(layout.grid, s_k, s_yk, order, axis=-1)
    return float(value) if np.ndim(value) == 0 else value


def _ece_integral(grid, s_k, s_yk, order, *, axis):
    """``trap(|z - S_y/S|^d S) / trap(S)`` along ``axis`` (the grid's)."""
    positive = s_k > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(positive, s_yk / np.where(positive, s_k, 1.0), 0.0)
    # 0 <= S_y <= S exactly; where both are rounding noise the ratio is not, so it is
    # held in [0, 1], which bounds such a point's share of the integral by its tiny S.
    np.clip(acc, 0.0, 1.0, out=acc)
    z = grid if axis == -1 else grid[:, None]
    integrand = np.where(positive, np.abs(z - acc) ** float(order) * s_k, 0.0)
    return np.trapezoid(integrand, axis=axis) / np.trapezoid(s_k, axis=axis)


def _replicated_kde_ece(layout: KDELayout, sums: KDESums, order):
    """The KDE-ECE of every replicate, in the (G, R) layout of the grid product.

    The same sums, noise rule and integrand as :func:`kde_sums_at_grid` and
    :func:`kde_ece_from_sums` per replicate, without moving the product's (G, 2R) output
    to (R, 2, G) and back; replicates that share their all-points moments
    (:attr:`KDESums.shared_all`) keep one all-points column for all.
    """
    z = layout.grid
    n_rep = sums.moments.shape[-1]
    if sums.shared_all is not None:
        local = np.flatnonzero(sums.shared_all[0])
        stacked = _shared_sets(sums, local)  # (u, 7, 1 + R)
    else:
        local, stacked = _used_sets(sums)  # (u, 7, 2R)
    used = local if sums.cells is None else sums.cells[local]
    if used.size == 0:
        return np.full(n_rep, np.nan)
    got, mass = _grid_product(_Packed(layout, used), stacked, _grid_ranges(layout), z.size)
    if sums.shared_all is not None:
        k_cols, y_cols, weight = slice(0, 1), slice(1, None), mass[:, :1]
    else:
        k_cols, y_cols, weight = slice(0, n_rep), slice(n_rep, None), mass[:, :n_rep]
    # below 1e-11 of the window's weight a sum is rounding noise (kde_sums_at_grid): zeroed
    # in the product's own output, where two np.where copies of the (G, R) sums took twice
    # the time (12 against 6.6 ms a class at G = 2001, R = 200, loaded machine)
    floor = 1e-11 * weight
    magnitude = np.abs(got)
    noise = np.empty(got.shape, dtype=bool)
    np.less_equal(magnitude[:, k_cols], floor, out=noise[:, k_cols])
    np.less_equal(magnitude[:, y_cols], floor, out=noise[:, y_cols])
    np.copyto(got, 0.0, where=noise)
    value = _replicated_integral(z, got[:, k_cols], got[:, y_cols], order)
    return np.broadcast_to(value, (n_rep,)).copy()


def _replicated_integral(grid, s_k, s_yk, order):
    """:func:`_ece_integral` along axis 0 of (G, R) sums (``s_k`` may be one shared column),
    element for element the same arithmetic with fewer (G, R) passes: the ratio divided
    only where ``S > 0`` into zeros and the integrand formed in place (G = 2001, R = 200,
    loaded machine: 12.8 -> 10.7 ms a call; the plain integral was a fifth of the
    class-wise KDE-ECE's replicates on 5,000 x 10 rows, profiled)."""
    positive = s_k > 0.0
    acc = np.zeros(np.broadcast_shapes(s_k.shape, s_yk.shape))
    np.divide(s_yk, s_k, out=acc, where=positive)
    np.clip(acc, 0.0, 1.0, out=acc)  # as _ece_integral: rounding noise held in [0, 1]
    np.subtract(grid[:, None], acc, out=acc)
    np.abs(acc, out=acc)
    if float(order) != 1.0:  # x ** 1.0 is x
        acc = acc ** float(order)
    integrand = np.zeros_like(acc)
    np.multiply(acc, s_k, out=integrand, where=positive)
    return np.trapezoid(integrand, axis=0) / np.trapezoid(s_k, axis=0)
