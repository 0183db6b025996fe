"""Per-bin statistics of a binary reduction: counts and means per bin, for every binned estimate.

Computed by the statistics engine (:mod:`calcore.statistics`): bins from
:mod:`calcore.statistics.edges`, weighted sums from one ``np.bincount`` pass per
quantity. :class:`BinStatistics` is the per-bin view of those sums that the metric
formulas (:mod:`calcore.metrics.binned`) and the diagrams read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.foundation.binning import BinningScheme
from calcore.foundation.validation import freeze_fields, row_weights
from calcore.predictions import Predictions
from calcore.predictions.reductions import BinaryView, binary_view
from calcore.statistics.cells import CellSums
from calcore.statistics.edges import BinEdges, edges_for
from calcore.statistics.points import RowBatch, add_rows, reduction_edges

__all__ = [
    "BinStatistics",
    "bin_statistics",
    "bin_statistics_from_sums",
    "view_bin_statistics",
    "classwise_bin_statistics",
    "statistics_for",
]


@dataclass(frozen=True, eq=False)
class BinStatistics:
    """Counts and means per bin, bins numbered across groups.

    Attributes
    ----------
    view : str
        The M2B view the bins come from.
    count : ndarray of shape (n_bins,), int64 (float64 for non-integer weights)
        Number of points (total weight) in the bin.
    mean_score : ndarray of shape (n_bins,), float64
        Mean predicted probability (``conf_b``); NaN for an empty bin.
    mean_outcome : ndarray of shape (n_bins,), float64
        Observed frequency (``acc_b``); NaN for an empty bin.
    bin_group, bin_index : ndarray of shape (n_bins,), int64
        Group of each bin and its position within the group.
    lower_edge, upper_edge : ndarray of shape (n_bins,), float64
        See :class:`calcore.statistics.edges.BinAssignment`.
    group_names : tuple of str
    n_rows : int or float
        Rows of the original predictions (``N`` in ``n_b / N``); their total weight
        when weighted.
    scheme : BinningScheme

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> st = calcore.statistics_for(preds, "confidence", bins=5)
    >>> st.count.tolist(), st.mean_outcome[3:].tolist()  # bins [0.6, 0.8) and [0.8, 1]
    ([0, 0, 0, 2, 2], [1.0, 0.5])
    """

    view: str
    count: np.ndarray
    mean_score: np.ndarray
    mean_outcome: np.ndarray
    bin_group: np.ndarray
    bin_index: np.ndarray
    lower_edge: np.ndarray
    upper_edge: np.ndarray
    group_names: tuple[str, ...]
    n_rows: int
    scheme: BinningScheme

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    @property
    def gap(self) -> np.ndarray:
        """``|acc_b - conf_b|`` per bin (NaN for empty bins)."""
        return np.abs(self.mean_outcome - self.mean_score)

    @property
    def nonempty(self) -> np.ndarray:
        return self.count > 0


def counts_of(weight: np.ndarray) -> np.ndarray:
    """Integer counts as int64 (unit and integer weights); other weights stay float64."""
    rounded = np.rint(weight)
    if np.array_equal(rounded, weight) and (weight.size == 0 or weight.max() < 2.0**53):
        return rounded.astype(np.int64)
    return weight


def bin_statistics_from_sums(
    sums: CellSums,
    edges: BinEdges,
    *,
    view: str,
    group_names,
    n_rows,
    group_ids=None,
) -> BinStatistics:
    """Per-bin counts and means from the cell sums of one set of edges.

    ``group_ids`` maps the edges' groups to the reported ones (class-wise statistics
    of a subset of classes report the class indices). Empty bins have NaN means and,
    for rank-based schemes, NaN edges.
    """
    count = counts_of(sums.weight)
    with np.errstate(invalid="ignore", divide="ignore"):  # empty bins -> NaN, documented
        mean_score = sums.score / sums.weight
        mean_outcome = sums.outcome / sums.weight
    fixed = edges.fixed_edges()
    if fixed is not None:
        lower, upper = fixed
    elif sums.low is None:  # replicate sums keep no score ranges
        lower = upper = np.full(edges.n_cells, np.nan)
    else:
        lower = np.where(np.isfinite(sums.low), sums.low, np.nan)
        upper = np.where(np.isfinite(sums.high), sums.high, np.nan)
    group = edges.cell_group if group_ids is None else np.asarray(group_ids)[edges.cell_group]
    if isinstance(n_rows, (float, np.floating)) and float(n_rows).is_integer():
        n_rows = int(n_rows)
    return BinStatistics(
        view,
        count,
        mean_score,
        mean_outcome,
        group,
        edges.cell_index,
        lower,
        upper,
        tuple(group_names),
        n_rows,
        edges.scheme,
    )


def bin_statistics(
    scores,
    outcomes,
    groups=None,
    *,
    n_groups=None,
    binning="equal-width",
    bins=15,
    view="binary",
    group_names=None,
    n_rows=None,
    weights=None,
) -> BinStatistics:
    """Bin a binary problem and return counts and means per bin.

    Parameters
    ----------
    scores, outcomes : ndarray of shape (m,)
        Predicted probabilities and outcomes (0/1, or any values whose mean per bin is wanted).
    groups : ndarray of shape (m,), optional
        Group ids; bins are formed within each group.
    n_groups : int, optional
    binning, bins :
        See :mod:`calcore.foundation.binning`.
    view : str
        Name recorded in the result.
    group_names : tuple of str, optional
    n_rows : int, optional
        Denominator for bin weights; defaults to ``m`` (the total weight when weighted).
    weights : ndarray of shape (m,), optional
        Frequency weights: a weight of 3 counts as three equal points.

    Returns
    -------
    BinStatistics

    Examples
    --------
    >>> st = bin_statistics(np.array([0.1, 0.3, 0.8]), np.array([0.0, 1.0, 1.0]), bins=2)
    >>> st.count.tolist(), st.mean_outcome.tolist()
    ([2, 1], [0.5, 1.0])
    """
    scores = np.asarray(scores, dtype=np.float64)
    outcomes = np.asarray(outcomes, dtype=np.float64)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    edges = edges_for(scores, groups, n_groups=n_groups, binning=binning, bins=bins, weights=w)
    sums = CellSums.zeros(edges.n_cells, ranges=edges.thresholds is not None)
    g = None if groups is None else np.asarray(groups, dtype=np.intp)
    cells = edges.cell_of(scores, g)
    sums.add(cells, scores, w)
    sums.add_outcomes(cells, w, values=outcomes)
    if group_names is None:
        group_names = tuple(str(k) for k in range(edges.n_groups))
    if n_rows is None:
        n_rows = scores.shape[0] if w is None else float(w.sum())
    return bin_statistics_from_sums(sums, edges, view=view, group_names=group_names, n_rows=n_rows)


def view_bin_statistics(
    view: BinaryView, *, binning="equal-width", bins=15, weights=None
) -> BinStatistics:
    """:func:`bin_statistics` of a :class:`~calcore.predictions.reductions.BinaryView`
    (weights optional)."""
    return bin_statistics(
        view.scores,
        view.outcomes,
        view.groups,
        n_groups=view.n_groups,
        binning=binning,
        bins=bins,
        view=view.name,
        group_names=view.group_names,
        n_rows=None if weights is not None else view.n_rows,
        weights=weights,
    )


def classwise_bin_statistics(
    preds: Predictions,
    *,
    binning="equal-width",
    bins=15,
    classes=None,
    threshold: float | None = None,
    sample_weight=None,
    ranges: bool = True,
) -> BinStatistics:
    """Bin statistics of the class-wise view, computed blockwise (the ``n * L`` view is
    never built). ``threshold`` keeps only scores ``>= threshold`` (as TACE does);
    ``classes`` restricts to some classes; ``sample_weight`` are row weights; ``ranges``
    as in :func:`statistics_for`.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> st = calcore.classwise_bin_statistics(preds, bins=2)
    >>> st.bin_group.tolist(), st.count.tolist(), st.mean_outcome.tolist()
    ([0, 0, 1, 1], [2, 2, 2, 2], [0.0, 0.5, 0.5, 1.0])
    """
    return statistics_for(
        preds,
        "class-wise",
        binning=binning,
        bins=bins,
        threshold=threshold,
        classes=classes,
        sample_weight=sample_weight,
        ranges=ranges,
    )


def statistics_for(
    preds: Predictions,
    view: str,
    *,
    binning="equal-width",
    bins=15,
    threshold: float | None = None,
    classes=None,
    sample_weight=None,
    ranges: bool = True,
) -> BinStatistics:
    """Bin statistics of ``preds`` under the named view (``"confidence"``, ``"top-label"``,
    ``"class-wise"``), through the statistics engine: the one entry point for predictions
    (:func:`bin_statistics` takes arrays, :func:`view_bin_statistics` a ``BinaryView``).

    ``threshold`` keeps only points with a score ``>= threshold`` (TACE); ``classes``
    restricts the class-wise view to some classes; ``sample_weight`` are row weights
    (frequency weights; default ``preds.sample_weight``). ``ranges=False`` leaves out the
    smallest and largest score of each rank-based bin (``lower_edge`` and ``upper_edge``
    are then NaN), which no metric reads: they cost a ``np.minimum.at`` and a
    ``np.maximum.at`` per point.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> st = calcore.statistics_for(preds, "top-label", bins=2)  # bins per predicted class
    >>> st.bin_group.tolist(), st.count.tolist(), st.mean_outcome[[1, 3]].tolist()
    ([0, 0, 1, 1], [0, 2, 0, 2], [0.5, 1.0])
    """
    if view not in ("confidence", "top-label", "class-wise"):
        binary_view(preds, view)  # raises the CalcoreError listing the views
    batch = RowBatch.of(preds)
    chosen = None if classes is None else np.asarray(classes, dtype=np.intp)
    w = row_weights(preds, sample_weight)
    edges = reduction_edges(
        batch, view, binning=binning, bins=bins, weights=w, min_score=threshold, classes=chosen
    )
    sums = CellSums.zeros(edges.n_cells, ranges=ranges and edges.thresholds is not None)
    add_rows(sums, edges, batch, view, weights=w, classes=chosen)
    names = ("all",) if view == "confidence" else preds.class_names
    n_rows = preds.n_samples if w is None else float(w.sum())
    return bin_statistics_from_sums(
        sums, edges, view=view, group_names=names, n_rows=n_rows, group_ids=chosen
    )
