"""Per-bin statistics of a binary view: the shared core of every binned estimate.

One pass of ``np.bincount`` per quantity; no per-sample Python loops. The
class-wise view of a wide problem (``n * L`` points) is processed in blocks of
classes so that its temporaries stay bounded (see :func:`classwise_bin_statistics`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore._classwise import classwise_equal_width, classwise_sorted_statistics
from calcore.binning import BinningScheme, assign_bins, resolve_binning
from calcore.predictions import Predictions
from calcore.views import BinaryView, binary_view, classwise_view

__all__ = [
    "BinStatistics",
    "bin_statistics",
    "view_bin_statistics",
    "classwise_bin_statistics",
    "classwise_bin_statistics_many",
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
) -> BinStatistics:
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
        view,
        count,
        mean_score,
        mean_outcome,
        assignment.bin_group,
        assignment.bin_index,
        assignment.lower_edge,
        assignment.upper_edge,
        tuple(group_names),
        int(scores.shape[0] if n_rows is None else n_rows),
        assignment.scheme,
    )


def view_bin_statistics(view: BinaryView, *, binning="equal-width", bins=15) -> BinStatistics:
    """:func:`bin_statistics` of a :class:`~calcore.views.BinaryView`."""
    return bin_statistics(
        view.scores,
        view.outcomes,
        view.groups,
        n_groups=view.n_groups,
        binning=binning,
        bins=bins,
        view=view.name,
        group_names=view.group_names,
        n_rows=view.n_rows,
    )


def _concat(parts: list[BinStatistics], names, n_rows, scheme) -> BinStatistics:
    cat = lambda attr: np.concatenate([getattr(p, attr) for p in parts])  # noqa: E731
    return BinStatistics(
        "class-wise",
        cat("count"),
        cat("mean_score"),
        cat("mean_outcome"),
        cat("bin_group"),
        cat("bin_index"),
        cat("lower_edge"),
        cat("upper_edge"),
        names,
        n_rows,
        scheme,
    )


def classwise_bin_statistics(
    preds: Predictions,
    *,
    binning="equal-width",
    bins=15,
    classes=None,
    threshold: float | None = None,
) -> BinStatistics:
    """Bin statistics of the class-wise view, computed blockwise.

    Equal to ``view_bin_statistics(classwise_view(preds))`` (tested) but, for
    the equal-width and rank-based schemes, built from one sort per class
    column without materialising the ``n * L`` view (:mod:`calcore._classwise`).
    ``threshold`` keeps only scores ``>= threshold`` (as TACE does);
    ``classes`` restricts to some classes.
    """
    return classwise_bin_statistics_many(preds, [(binning, bins, threshold)], classes=classes)[0]


def classwise_bin_statistics_many(
    preds: Predictions, requests, *, classes=None
) -> list[BinStatistics]:
    """:func:`classwise_bin_statistics` for several ``(binning, bins, threshold)``, one sort."""
    schemes = [(resolve_binning(b, k), t) for b, k, t in requests]
    chosen = None if classes is None else np.asarray(classes, dtype=np.int64)
    if any(s.kind == "unique" for s, _ in schemes):
        return [_classwise_generic(preds, scheme=s, chosen=chosen, threshold=t) for s, t in schemes]
    probs, labels = preds.probs, preds.labels
    if chosen is not None:
        probs = probs[:, chosen]
        to_local = np.full(preds.n_classes, -1)
        to_local[chosen] = np.arange(chosen.size)
        labels = to_local[
            labels
        ]  # rows labelled with other classes: outcome 0 for every chosen class
    if len(schemes) == 1 and schemes[0][0].kind == "equal-width" and schemes[0][1] is None:
        b = schemes[0][0].n_bins(preds.n_samples)
        count, sum_s, sum_o = classwise_equal_width(probs, labels, b)
        nan = np.full(count.shape, np.nan)
        raw = [(count, sum_s, sum_o, nan, nan, np.full(count.shape[0], b))]
    else:
        raw = classwise_sorted_statistics(probs, labels, schemes)
    results = []
    for (scheme, _), (count, sum_s, sum_o, lower, upper, n_bins) in zip(schemes, raw, strict=True):
        used = np.arange(count.shape[1])[None, :] < n_bins[:, None]
        group = np.broadcast_to(np.arange(count.shape[0])[:, None], count.shape)
        if chosen is not None:
            group = chosen[group]
        index = np.broadcast_to(np.arange(count.shape[1])[None, :], count.shape)
        if scheme.kind == "equal-width":  # report the fixed edges, as assign_bins does
            per_class = np.maximum(n_bins, 1)[:, None]  # count rules can differ per class
            lower, upper = index / per_class, (index + 1) / per_class
        with np.errstate(invalid="ignore", divide="ignore"):  # empty bins -> NaN, documented
            mean_s, mean_o = sum_s / count, sum_o / count
        results.append(
            BinStatistics(
                "class-wise",
                count[used],
                mean_s[used],
                mean_o[used],
                group[used],
                index[used],
                lower[used],
                upper[used],
                preds.class_names,
                preds.n_samples,
                scheme,
            )
        )
    return results


def _classwise_generic(preds: Predictions, *, scheme, chosen, threshold) -> BinStatistics:
    """Reference path: build the class-wise view in blocks of classes and bin it generically."""
    classes = np.arange(preds.n_classes) if chosen is None else chosen
    per_block = max(1, _CLASSWISE_BLOCK_POINTS // max(preds.n_samples, 1))
    parts = []
    for start in range(0, classes.size, per_block):
        block = classes[start : start + per_block]
        v = classwise_view(preds, classes=block)
        local_groups = np.repeat(np.arange(block.size), preds.n_samples)
        keep = slice(None) if threshold is None else v.scores >= threshold
        local = bin_statistics(
            v.scores[keep],
            v.outcomes[keep],
            local_groups[keep],
            n_groups=block.size,
            binning=scheme,
            view="class-wise",
            n_rows=preds.n_samples,
        )
        parts.append(
            BinStatistics(
                "class-wise",
                local.count,
                local.mean_score,
                local.mean_outcome,
                block[local.bin_group],
                local.bin_index,
                local.lower_edge,
                local.upper_edge,
                (),
                preds.n_samples,
                scheme,
            )
        )
    return _concat(parts, preds.class_names, preds.n_samples, scheme)


def statistics_for(
    preds: Predictions, view: str, *, binning="equal-width", bins=15
) -> BinStatistics:
    """Bin statistics of ``preds`` under the named view (class-wise is built in blocks)."""
    if view == "class-wise":
        return classwise_bin_statistics(preds, binning=binning, bins=bins)
    return view_bin_statistics(binary_view(preds, view), binning=binning, bins=bins)
