"""Per-bin statistics of a binary view: the shared core of every binned estimate.

One pass of ``np.bincount`` per quantity; no per-sample Python loops. The
class-wise view of a wide problem (``n * L`` points) is processed in blocks of
classes so that its temporaries stay bounded (see :func:`classwise_bin_statistics`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.binning import BinningScheme, assign_bins, resolve_binning
from calcore.predictions import Predictions
from calcore.views import BinaryView, binary_view, classwise_view

__all__ = [
    "BinStatistics",
    "bin_statistics",
    "view_bin_statistics",
    "classwise_bin_statistics",
    "statistics_for",
]

# Points per block when the class-wise view is built piecewise (about 100 MB of temporaries).
_CLASSWISE_BLOCK_POINTS = 4_000_000


@dataclass(frozen=True, eq=False)
class BinStatistics:
    """Counts and means per bin, bins numbered across groups.

    Attributes
    ----------
    view : str
        The M2B view the bins come from.
    count : ndarray of shape (n_bins,), int64
    mean_score : ndarray of shape (n_bins,), float64
        Mean predicted probability (``conf_b``); NaN for an empty bin.
    mean_outcome : ndarray of shape (n_bins,), float64
        Observed frequency (``acc_b``); NaN for an empty bin.
    bin_group, bin_index : ndarray of shape (n_bins,), int64
        Group of each bin and its position within the group.
    lower_edge, upper_edge : ndarray of shape (n_bins,), float64
        See :class:`calcore.binning.BinAssignment`.
    group_names : tuple of str
    n_rows : int
        Rows of the original predictions (``N`` in ``n_b / N``).
    scheme : BinningScheme
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

    @property
    def gap(self) -> np.ndarray:
        """``|acc_b - conf_b|`` per bin (NaN for empty bins)."""
        return np.abs(self.mean_outcome - self.mean_score)

    @property
    def nonempty(self) -> np.ndarray:
        return self.count > 0


def bin_statistics(scores, outcomes, groups=None, *, n_groups=None, binning="equal-width", bins=15,
                   view="binary", group_names=None, n_rows=None) -> BinStatistics:
    """Bin a binary problem and return counts and means per bin.

    Parameters
    ----------
    scores, outcomes : ndarray of shape (m,)
        Predicted probabilities and 0/1 outcomes.
    groups : ndarray of shape (m,), optional
        Group ids; bins are formed within each group.
    n_groups : int, optional
    binning, bins :
        See :mod:`calcore.binning`.
    view : str
        Name recorded in the result.
    group_names : tuple of str, optional
    n_rows : int, optional
        Denominator for bin weights; defaults to ``m``.

    Returns
    -------
    BinStatistics
    """
    scores = np.asarray(scores, dtype=np.float64)
    outcomes = np.asarray(outcomes, dtype=np.float64)
    assignment = assign_bins(scores, groups, n_groups=n_groups, binning=binning, bins=bins)
    total = assignment.n_bins_total
    count = np.bincount(assignment.point_bin, minlength=total)
    sum_score = np.bincount(assignment.point_bin, weights=scores, minlength=total)
    sum_outcome = np.bincount(assignment.point_bin, weights=outcomes, minlength=total)
    with np.errstate(invalid="ignore", divide="ignore"):  # empty bins -> NaN, documented
        mean_score = sum_score / count
        mean_outcome = sum_outcome / count
    if group_names is None:
        group_names = tuple(str(g) for g in range(int(assignment.bin_group.max(initial=0)) + 1))
    return BinStatistics(
        view, count, mean_score, mean_outcome, assignment.bin_group, assignment.bin_index,
        assignment.lower_edge, assignment.upper_edge, tuple(group_names),
        int(scores.shape[0] if n_rows is None else n_rows), assignment.scheme,
    )


def view_bin_statistics(view: BinaryView, *, binning="equal-width", bins=15) -> BinStatistics:
    """:func:`bin_statistics` of a :class:`~calcore.views.BinaryView`."""
    return bin_statistics(
        view.scores, view.outcomes, view.groups, n_groups=view.n_groups, binning=binning, bins=bins,
        view=view.name, group_names=view.group_names, n_rows=view.n_rows,
    )


def _concat(parts: list[BinStatistics], names, n_rows, scheme) -> BinStatistics:
    cat = lambda attr: np.concatenate([getattr(p, attr) for p in parts])  # noqa: E731
    return BinStatistics(
        "class-wise", cat("count"), cat("mean_score"), cat("mean_outcome"), cat("bin_group"),
        cat("bin_index"), cat("lower_edge"), cat("upper_edge"), names, n_rows, scheme,
    )


def classwise_bin_statistics(preds: Predictions, *, binning="equal-width", bins=15, classes=None) -> BinStatistics:
    """Bin statistics of the class-wise view, built in blocks of classes.

    Equivalent to ``view_bin_statistics(classwise_view(preds))`` but never
    holds more than about four million points of the view at once, so that a
    50,000 x 1,000 problem needs ~100 MB of temporaries rather than 1.2 GB.
    """
    scheme = resolve_binning(binning, bins)
    classes = np.arange(preds.n_classes) if classes is None else np.asarray(classes, dtype=np.int64)
    per_block = max(1, _CLASSWISE_BLOCK_POINTS // max(preds.n_samples, 1))
    parts = []
    for start in range(0, classes.size, per_block):
        block = classes[start : start + per_block]
        v = classwise_view(preds, classes=block)
        # Bin with the block's groups renumbered 0..len(block)-1, then map back to classes.
        local = bin_statistics(
            v.scores, v.outcomes, np.repeat(np.arange(block.size), preds.n_samples),
            n_groups=block.size, binning=scheme, view="class-wise", n_rows=preds.n_samples,
        )
        parts.append(
            BinStatistics(
                "class-wise", local.count, local.mean_score, local.mean_outcome, block[local.bin_group],
                local.bin_index, local.lower_edge, local.upper_edge, (), preds.n_samples, scheme,
            )
        )
    return _concat(parts, preds.class_names, preds.n_samples, scheme)


def statistics_for(preds: Predictions, view: str, *, binning="equal-width", bins=15) -> BinStatistics:
    """Bin statistics of ``preds`` under the named view (class-wise is built in blocks)."""
    if view == "class-wise":
        return classwise_bin_statistics(preds, binning=binning, bins=bins)
    return view_bin_statistics(binary_view(preds, view), binning=binning, bins=bins)
