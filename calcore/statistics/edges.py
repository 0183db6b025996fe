"""Bin edges per group: the partition that cell sums are kept on.

A binned estimate needs two things: *where the bins are* (this module) and *the
weighted sums per bin* (:mod:`calcore.statistics.cells`). Separating them is what
makes the sums mergeable: once the edges are fixed, every batch of rows adds to
the same cells, in any order.

Every scheme of :mod:`calcore.foundation.binning` is a partition of each group's scores into
intervals, and so is described by edges alone:

* **equal-width**: ``B`` intervals ``[k/B, (k+1)/B)``, the last closed at 1.0; a
  score's bin is :func:`calcore.foundation.binning.equal_width_index` (exact at the edges).
  ``B`` is fixed, or a count rule (``"sturges"``, ``"cube-root"``) of the group's size.
* **rank-based** (equal-mass, points-per-bin) and **unique**: ``B - 1`` thresholds
  ``u_1 <= ... <= u_{B-1}`` per group, and a score ``s`` falls in bin
  ``#{k : s > u_k}``. For equal-mass, ``u_k`` is the smallest score whose
  cumulative weight reaches ``R_k = floor(k m / B)`` (``m`` the group's total weight rounded
  down, its size for the count rules too;
  ``u_k = -inf`` when ``R_k = 0``). A score ``s`` is then in bin ``>= k`` exactly when
  the weight strictly below it is ``>= R_k``, which, for unit weights, is the rule
  "bin ``k`` holds ranks ``[floor(k m/B), floor((k+1) m/B))`` and a block of ties goes
  with its first member" of :func:`calcore.foundation.binning.assign_bins`. Ties are never
  split, because equal scores compare equally with every threshold. For
  ``unique`` the thresholds are the distinct scores but the largest.

Thresholds are exact order statistics of the data: here from a sort of each group;
for the class-wise columns of a batch, from one ``np.partition`` of each column at
every request's ranks (:func:`calcore.statistics.points.classwise_edges`). Streamed
sources that cannot be held in memory need them from separate passes; see
:mod:`calcore.foundation.exact_ranks`. A score's cell is then a count of thresholds
below it (:class:`calcore.statistics.cuts.GroupedCuts`).

Weights are frequency weights: a row of weight 3 counts as three equal rows, so a
group's "size" for the count rules and the equal-mass ranks is its total weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from calcore.foundation.binning import (
    BIN_COUNT_RULES,
    BinningScheme,
    equal_width_index,
    resolve_binning,
)
from calcore.foundation.validation import check_total_weight, freeze_fields
from calcore.statistics.cuts import GroupedCuts

__all__ = [
    "BinEdges",
    "BinAssignment",
    "edges_for",
    "group_thresholds",
    "equal_mass_ranks",
    "assign_bins",
    "bins_per_group",
]


def bins_per_group(scheme: BinningScheme, group_sizes) -> np.ndarray:
    """Number of bins of each group under ``scheme`` (the rules of :func:`assign_bins`).

    A group with no points gets no bins under a count rule or points-per-bin, and
    ``B`` empty bins under a fixed count (so that, e.g., a class never predicted still
    reports its empty top-label bins).
    """
    sizes = np.asarray(group_sizes)
    out = np.empty(sizes.shape[0], dtype=np.int64)
    for g, m in enumerate(sizes):
        m = int(np.floor(m + 1e-9))  # total weight; integer for unit or integer weights
        if m == 0 and (scheme.bins in BIN_COUNT_RULES or scheme.kind == "points-per-bin"):
            out[g] = 0
        else:
            out[g] = scheme.n_bins(m)
    return out


@dataclass(frozen=True, eq=False)
class BinEdges:
    """The bins of every group of one binary reduction.

    Attributes
    ----------
    scheme : BinningScheme
    bins_per_group : ndarray of shape (G,), int64
    thresholds : ndarray of shape (sum(max(B_g - 1, 0)),), float64, or None
        Inner thresholds of the rank-based and unique schemes, group after group
        (None for equal-width, whose edges are ``k / B_g``).
    min_score : float or None
        Scores below it belong to no bin (TACE keeps class-wise scores ``>= 1e-3``).

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics import BinEdges
    >>> edges = BinEdges(calcore.resolve_binning("equal-width", 4), np.array([4, 2]))  # two groups
    >>> edges.n_cells, edges.cell_group.tolist()
    (6, [0, 0, 0, 0, 1, 1])
    >>> edges.cell_of(np.array([0.3, 0.3]), np.array([0, 1])).tolist()  # bin 1 of 4, bin 0 of 2
    [1, 4]
    """

    scheme: BinningScheme
    bins_per_group: np.ndarray
    thresholds: np.ndarray | None = None
    min_score: float | None = None

    @property
    def n_groups(self) -> int:
        return int(self.bins_per_group.shape[0])

    @cached_property
    def offsets(self) -> np.ndarray:
        """First cell of each group, and the total at the end: shape (G + 1,)."""
        return np.concatenate(([0], np.cumsum(self.bins_per_group))).astype(np.intp)

    @property
    def n_cells(self) -> int:
        return int(self.offsets[-1])

    @cached_property
    def cell_group(self) -> np.ndarray:
        """Group of every cell, shape (n_cells,)."""
        return np.repeat(np.arange(self.n_groups), self.bins_per_group)

    @cached_property
    def cell_index(self) -> np.ndarray:
        """Position of every cell within its group (0 = lowest scores)."""
        return np.arange(self.n_cells) - self.offsets[self.cell_group]

    @cached_property
    def _threshold_start(self) -> np.ndarray:
        inner = np.maximum(self.bins_per_group - 1, 0)
        return np.concatenate(([0], np.cumsum(inner))).astype(np.intp)

    @cached_property
    def search(self) -> GroupedCuts:
        """Each score's flat cell, ``offsets[g] + #{k : u_k < s}`` over its group's
        thresholds (rank-based and unique bins); ``-1`` in a group without bins."""
        first = np.where(self.bins_per_group > 0, self.offsets[:-1], -1)
        return GroupedCuts(self.thresholds, self._threshold_start, side="left", offsets=first)

    def fixed_edges(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Lower and upper edge of every cell for equal-width bins, else None."""
        if self.thresholds is not None:
            return None
        nb = self.bins_per_group[self.cell_group]
        return self.cell_index / nb, (self.cell_index + 1) / nb

    @property
    def uniform_bins(self) -> int | None:
        """The equal-width bin count shared by every group (None: rank-based or mixed)."""
        nb = self.bins_per_group
        if self.thresholds is not None or nb.size == 0 or not np.all(nb == nb[0]):
            return None
        return max(int(nb[0]), 1)

    def cell_of(self, scores: np.ndarray, groups=None, *, local=None) -> np.ndarray:
        """Flat cell id of each score (``-1`` below ``min_score`` or in a group without bins).

        Parameters
        ----------
        scores : ndarray, float64
            Any shape.
        groups : ndarray of int or int, optional
            The group of each score (broadcast against ``scores``); group 0 when omitted.
        local : ndarray of intp, optional
            ``equal_width_index(scores, uniform_bins)`` when the caller has it already
            (the confidence and top-label cells of a batch share it).

        Returns
        -------
        ndarray of intp, the shape of ``scores``
        """
        scores = np.asarray(scores, dtype=np.float64)
        if self.thresholds is not None:
            cell = self.search.count(scores, groups)
            if self.min_score is not None:
                np.copyto(cell, -1, where=scores < self.min_score)
            return cell
        g = np.zeros((), dtype=np.intp) if groups is None else np.asarray(groups, dtype=np.intp)
        nb = self.bins_per_group
        if local is None and (self.n_groups == 1 or np.all(nb == nb[0])):
            local = equal_width_index(scores, max(int(nb[0]), 1))
        elif local is None:
            local = equal_width_index(scores, np.maximum(nb, 1)[g])
        cell = local + self.offsets[g]
        empty_group = nb[g] == 0
        if self.min_score is not None or np.any(empty_group):
            drop = empty_group if self.min_score is None else (scores < self.min_score)
            if self.min_score is not None:
                drop = drop | empty_group
            cell = np.where(drop, -1, cell)
        return cell


def _order_statistics(sorted_scores: np.ndarray, cum_weight, ranks: np.ndarray) -> np.ndarray:
    """Smallest score whose cumulative weight reaches each rank (``-inf`` for rank 0)."""
    out = np.full(ranks.shape, -np.inf)
    pos = ranks > 0
    if cum_weight is None:  # unit weights: the rank-th smallest score
        out[pos] = sorted_scores[ranks[pos] - 1]
    else:
        # Exact for integer weights; real weights carry the rounding of their cumulative sum.
        idx = np.searchsorted(cum_weight, ranks[pos], side="left")
        out[pos] = sorted_scores[np.minimum(idx, sorted_scores.size - 1)]
    return out


def group_thresholds(scheme, sorted_scores, weights_sorted, n_bins: int) -> np.ndarray:
    """The ``B - 1`` thresholds of one group from its sorted scores (and their weights).

    Equal-mass: the order statistics at the ranks ``floor(k m / B)``; unique: the
    distinct scores but the largest; ``-inf`` for every threshold of an empty group.
    """
    if n_bins <= 1:
        return np.empty(0)
    if sorted_scores.size == 0:  # B empty bins (a fixed count): -inf keeps the layout aligned
        return np.full(n_bins - 1, -np.inf)
    if scheme.kind == "unique":
        return np.unique(sorted_scores)[:-1]
    if weights_sorted is None:
        m = sorted_scores.size
        cum = None
    else:
        cum = np.cumsum(weights_sorted)
        m = cum[-1]
    return _order_statistics(sorted_scores, cum, equal_mass_ranks(m, n_bins))


def equal_mass_ranks(total, n_bins: int) -> np.ndarray:
    """The ranks ``R_k = floor(k m / B)``, ``k = 1 .. B-1``, of a group of total weight
    ``total`` (``m`` = ``total`` rounded down; its size for unit weights).

    Computed as ``k q + floor(k r / B)`` with ``m = q B + r``, so that no product
    exceeds ``m`` or ``B**2``: ``k m`` itself overflows int64 for totals near 2**53
    and 100,000 bins.

    Raises
    ------
    CalcoreError
        If ``total`` exceeds 2**53, where float64 sums of weights are no longer exact.

    Examples
    --------
    >>> equal_mass_ranks(10, 4).tolist()
    [2, 5, 7]
    >>> int(equal_mass_ranks(2**53, 100_000)[-1]) == (99_999 * 2**53) // 100_000
    True
    """
    m = int(np.floor(check_total_weight(float(total), source="equal-mass bins") + 1e-9))
    q, r = divmod(m, max(int(n_bins), 1))
    k = np.arange(1, max(int(n_bins), 1), dtype=np.int64)
    return k * q + (k * r) // max(int(n_bins), 1)


def edges_for(
    scores,
    groups=None,
    *,
    n_groups: int | None = None,
    binning="equal-width",
    bins=15,
    weights=None,
    min_score: float | None = None,
) -> BinEdges:
    """The bins of a binary reduction, from its (in-memory) scores.

    Parameters
    ----------
    scores : ndarray of shape (m,)
    groups : ndarray of shape (m,) of int, optional
        Group of each score (one group when omitted).
    n_groups : int, optional
        Defaults to ``groups.max() + 1``.
    binning, bins :
        See :mod:`calcore.foundation.binning`.
    weights : ndarray of shape (m,), optional
        Frequency weights (non-negative).
    min_score : float, optional
        Leave scores below it out of every bin (and out of the group sizes).

    Returns
    -------
    BinEdges

    Examples
    --------
    >>> e = edges_for(np.array([0.1, 0.2, 0.2, 0.9]), binning="equal-mass", bins=2)
    >>> e.thresholds.tolist(), e.cell_of(np.array([0.1, 0.2, 0.9])).tolist()
    ([0.2], [0, 0, 1])
    """
    scheme = resolve_binning(binning, bins)
    scores = np.asarray(scores, dtype=np.float64)
    if groups is None:
        n_groups = 1
    elif n_groups is None:
        n_groups = int(np.max(groups)) + 1 if np.size(groups) else 1
    if scheme.kind == "equal-width" and scheme.bins not in BIN_COUNT_RULES:
        # a fixed count: B bins in every group whatever its size (no pass over the rows)
        return BinEdges(scheme, bins_per_group(scheme, np.zeros(n_groups)), None, min_score)
    if groups is None:
        groups = np.zeros(scores.shape[0], dtype=np.intp)
    groups = np.asarray(groups, dtype=np.intp)
    if min_score is not None:
        keep = scores >= min_score
        scores, groups = scores[keep], groups[keep]
        weights = None if weights is None else np.asarray(weights)[keep]
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    if w is not None and not (w > 0).all():  # a row of weight 0 is a row that is not there
        keep = w > 0
        scores, groups, w = scores[keep], groups[keep], w[keep]
    sizes = np.bincount(groups, weights=w, minlength=n_groups)
    if scheme.kind == "unique":
        nb = np.zeros(n_groups, dtype=np.int64)  # one bin per distinct score, counted below
    else:
        nb = bins_per_group(scheme, sizes)
    if scheme.kind == "equal-width":
        return BinEdges(scheme, nb, None, min_score)
    if n_groups == 1:
        per_group = [(0, np.arange(scores.size))] if scores.size else []
    else:
        order = np.argsort(groups, kind="stable")
        bounds = np.searchsorted(groups[order], np.arange(n_groups + 1))
        per_group = [
            (g, order[bounds[g] : bounds[g + 1]])
            for g in range(n_groups)
            if bounds[g + 1] > bounds[g]
        ]
    thresholds = [group_thresholds(scheme, np.empty(0), None, int(b)) for b in nb]
    for g, rows in per_group:
        s = scores[rows] if n_groups > 1 else scores
        if w is None:
            s_sorted, w_sorted = np.sort(s), None
        else:
            o = np.argsort(s, kind="stable")
            s_sorted, w_sorted = s[o], (w[rows] if n_groups > 1 else w)[o]
        if scheme.kind == "unique":
            nb[g] = np.unique(s_sorted).size
        thresholds[g] = group_thresholds(scheme, s_sorted, w_sorted, int(nb[g]))
    flat = np.concatenate(thresholds) if thresholds else np.empty(0)
    return BinEdges(scheme, nb, flat, min_score)


@dataclass(frozen=True, eq=False)
class BinAssignment:
    """Which bin each point falls in; bins are numbered across groups.

    Attributes
    ----------
    point_bin : ndarray of shape (m,), int64
        Flat bin id of each point.
    bin_group : ndarray of shape (n_bins_total,), int64
        Group of each flat bin.
    bin_index : ndarray of shape (n_bins_total,), int64
        Position of the bin within its group (0 = lowest scores).
    lower_edge, upper_edge : ndarray of shape (n_bins_total,), float64
        The bin's interval: the fixed edges for equal-width, else the smallest
        and largest score in the bin (NaN for an empty bin).
    scheme : BinningScheme

    Examples
    --------
    >>> import calcore
    >>> a = calcore.assign_bins(np.array([0.05, 0.5, 1.0]), bins=2)
    >>> a.point_bin.tolist(), a.lower_edge.tolist(), a.upper_edge.tolist()
    ([0, 1, 1], [0.0, 0.5], [0.5, 1.0])
    >>> a = calcore.assign_bins(np.array([0.1, 0.2, 0.2, 0.9]), binning="equal-mass", bins=2)
    >>> a.point_bin.tolist(), a.upper_edge.tolist()  # the tied 0.2s stay together
    ([0, 0, 0, 1], [0.2, 0.9])
    """

    point_bin: np.ndarray
    bin_group: np.ndarray
    bin_index: np.ndarray
    lower_edge: np.ndarray
    upper_edge: np.ndarray
    scheme: BinningScheme

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    @property
    def n_bins_total(self) -> int:
        return int(self.bin_group.shape[0])


def assign_bins(
    scores,
    groups=None,
    *,
    n_groups: int | None = None,
    binning="equal-width",
    bins=15,
    weights=None,
) -> BinAssignment:
    """Assign each score to a bin within its group.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        Values in [0, 1].
    groups : ndarray of shape (m,) of int, optional
        Group ids in ``0 .. n_groups - 1``; one group when omitted.
    n_groups : int, optional
        Number of groups (defaults to ``groups.max() + 1``); groups without
        points get no bins under data-dependent schemes and ``B`` empty bins
        under fixed-count ones.
    binning : str or BinningScheme
    bins : int or str
        See :mod:`calcore.foundation.binning`.
    weights : ndarray of shape (m,), optional
        Frequency weights: equal-mass ranks count weight (rows of weight 0 still get
        the bin their score falls in).

    Returns
    -------
    BinAssignment

    Raises
    ------
    CalcoreError
        Invalid scheme or bins.

    Examples
    --------
    >>> assign_bins(np.array([0.05, 0.5, 1.0]), bins=2).point_bin.tolist()
    [0, 1, 1]
    """
    scores = np.asarray(scores, dtype=np.float64)
    g = None if groups is None else np.asarray(groups, dtype=np.intp)
    edges = edges_for(scores, g, n_groups=n_groups, binning=binning, bins=bins, weights=weights)
    point_bin = edges.cell_of(scores, g).astype(np.int64, copy=False)
    fixed = edges.fixed_edges()
    if fixed is not None:
        lower, upper = fixed
    else:
        lower, upper = np.full(edges.n_cells, np.inf), np.full(edges.n_cells, -np.inf)
        np.minimum.at(lower, point_bin, scores)
        np.maximum.at(upper, point_bin, scores)
        lower[~np.isfinite(lower)] = np.nan
        upper[~np.isfinite(upper)] = np.nan
    return BinAssignment(point_bin, edges.cell_group, edges.cell_index, lower, upper, edges.scheme)
