"""Binned calibration errors: conf-ECE, top-label ECE, class-wise ECE, their lp and
max (MCE) versions, top-K variants, ACE/TACE and the debiased l2-ECE.

All take a :class:`~calcore.Predictions` first and keyword-only options, and
return a float.

Definitions (Gupta & Ramdas 2022, Sec. 2 and 4; ALGORITHMS.md "Binned estimators"):
for bins ``b`` of a binary problem with ``n_b`` points, ``conf_b`` the mean score
and ``acc_b`` the mean outcome,

* lp-ECE = ``(sum_b n_b / N |acc_b - conf_b|^p)^(1/p)``, MCE = ``max_b |acc_b - conf_b|``
  over non-empty bins;
* top-label: bins are formed within each predicted class and the sum runs over
  (class, bin) with ``N = n`` -- this conditions on the predicted class, unlike
  the confidence ECE that some libraries call "top-label";
* class-wise: one problem per class over all ``n`` rows, ``CW = mean_l ECE_l``; the
  max version is ``mean_l MCE_l`` (the l-infinity norm inside the average);
* top-K: the mean over ranks ``k = 1..K`` of the rank-k confidence (or label) ECE.

Every metric takes ``sample_weight=`` (one non-negative weight per row): frequency
weights, so an integer weight counts the row that many times (exactly: tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.foundation.binning import resolve_binning
from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import row_weights
from calcore.predictions import Predictions
from calcore.predictions.reductions import top_k_confidence_view, top_k_label_view
from calcore.statistics.bin_statistics import (
    BinStatistics,
    classwise_bin_statistics,
    statistics_for,
    view_bin_statistics,
)

__all__ = [
    "calibration_error_from_bins",
    "confidence_ece",
    "confidence_mce",
    "top_label_ece",
    "top_label_mce",
    "classwise_ece",
    "classwise_mce",
    "top_k_confidence_ece",
    "top_k_label_ece",
    "adaptive_errors_from_bins",
    "adaptive_ece",
    "thresholded_adaptive_ece",
    "debiased_squared_error_from_bins",
    "debiased_ece",
    "ReplicateBins",
    "calibration_errors_from_replicate_bins",
    "adaptive_errors_from_replicate_bins",
    "debiased_squared_errors_from_replicate_bins",
]


def _check_order(p) -> float:
    if p == "inf" or p == np.inf:
        return np.inf
    if (
        isinstance(p, (bool, np.bool_))
        or not isinstance(p, (int, float, np.integer, np.floating))
        or p < 1
    ):
        raise CalcoreError(f"The norm order p must be a number >= 1 or np.inf; got {p!r}.")
    return float(p)


def calibration_error_from_bins(stats: BinStatistics, *, p=1, per_group=False) -> float:
    """The lp calibration error of binned statistics.

    Parameters
    ----------
    stats : BinStatistics
    p : float or np.inf, default 1
        Norm order; ``np.inf`` gives the maximum calibration error.
    per_group : bool, default False
        ``False``: one error over all (group, bin) pairs with weights
        ``n_b / n_rows`` (conf-ECE, TL-ECE). ``True``: the error of each group
        with weights ``n_b / n_rows``, averaged over groups (CW-ECE).

    Returns
    -------
    float
        0.0 when every bin is empty of miscalibration; the MCE of a group with
        no points counts as 0.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> st = calcore.statistics_for(preds, "confidence", bins=10)  # one point per bin
    >>> round(calcore.calibration_error_from_bins(st), 4)  # (0.1 + 0.8 + 0.3 + 0.4) / 4
    0.4
    >>> round(calcore.calibration_error_from_bins(st, p=np.inf), 4)
    0.8
    """
    p = _check_order(p)
    ok = stats.nonempty
    gap = stats.gap[ok]
    weight = stats.count[ok] / stats.n_rows
    group = stats.bin_group[ok]
    if not per_group:
        if p == np.inf:
            return float(gap.max(initial=0.0))
        return float(np.sum(weight * gap**p) ** (1.0 / p))
    n_groups = len(stats.group_names)
    if p == np.inf:
        per = np.zeros(n_groups)
        np.maximum.at(per, group, gap)
    else:
        per = np.bincount(group, weights=weight * gap**p, minlength=n_groups) ** (1.0 / p)
    return float(per.mean())


def confidence_ece(
    preds: Predictions, *, bins=15, binning="equal-width", p=1, sample_weight=None
) -> float:
    """Confidence ECE: ``max p`` against accuracy, ignoring which class was predicted.

    Parameters
    ----------
    preds : Predictions
    bins : int or str, default 15
    binning : str, default "equal-width"
        See :mod:`calcore.foundation.binning`.
    p : float or np.inf, default 1
        Norm order (2 for the l2-ECE, ``np.inf`` for the MCE).
    sample_weight : array_like of shape (n,), optional
        Row weights (frequency weights; see the module docstring).

    Returns
    -------
    float

    References
    ----------
    Guo et al. (2017), Eq. 3; Gupta & Ramdas (2022), Eq. 3.

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.8, 0.2], [0.8, 0.2]], [0, 1])
    >>> calcore.confidence_ece(preds, bins=10)
    0.30000000000000004
    """
    return calibration_error_from_bins(
        statistics_for(
            preds, "confidence", binning=binning, bins=bins, sample_weight=sample_weight
        ),
        p=p,
    )


def confidence_mce(
    preds: Predictions, *, bins=15, binning="equal-width", sample_weight=None
) -> float:
    """Maximum calibration error of the confidence view (largest bin gap).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> round(calcore.confidence_mce(preds, bins=10), 4)  # the wrong 0.8 prediction
    0.8
    """
    return confidence_ece(preds, bins=bins, binning=binning, p=np.inf, sample_weight=sample_weight)


def top_label_ece(
    preds: Predictions, *, bins=15, binning="equal-width", p=1, sample_weight=None
) -> float:
    """Top-label ECE: ``E |P(Y = c | c, h) - h|``, binned within each predicted class.

    Always at least the confidence ECE with the same bins (Jensen; Gupta &
    Ramdas 2022, Prop. 4).

    References
    ----------
    Gupta & Ramdas (2022), Eq. 4 and Sec. 4.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.8, 0.2], [0.8, 0.2], [0.2, 0.8], [0.2, 0.8]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 0, 0, 0])
    >>> round(calcore.top_label_ece(preds, bins=10), 4)  # class 0: gap 0.2, class 1: gap 0.8
    0.5
    >>> round(calcore.confidence_ece(preds, bins=10), 4)  # mixes both classes: |0.5 - 0.8|
    0.3
    """
    return calibration_error_from_bins(
        statistics_for(preds, "top-label", binning=binning, bins=bins, sample_weight=sample_weight),
        p=p,
    )


def top_label_mce(
    preds: Predictions, *, bins=15, binning="equal-width", sample_weight=None
) -> float:
    """Top-label MCE: the largest gap over (predicted class, bin) pairs.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.8, 0.2], [0.8, 0.2], [0.2, 0.8], [0.2, 0.8]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 0, 0, 0])
    >>> round(calcore.top_label_mce(preds, bins=10), 4)  # predicted class 1 is always wrong
    0.8
    """
    return top_label_ece(preds, bins=bins, binning=binning, p=np.inf, sample_weight=sample_weight)


def classwise_ece(
    preds: Predictions, *, bins=15, binning="equal-width", p=1, sample_weight=None
) -> float:
    """Class-wise ECE: ``(1/L) sum_l ECE(p_l, 1{y = l})`` over all rows for each class.

    References
    ----------
    Kull et al. (2019); Gupta & Ramdas (2022), Sec. 4 ("CW-ECE").

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.8, 0.2], [0.8, 0.2], [0.2, 0.8], [0.2, 0.8]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 0, 0, 0])
    >>> round(calcore.classwise_ece(preds, bins=10), 4)  # each class: (0.2 + 0.8) / 2
    0.5
    """
    return calibration_error_from_bins(
        statistics_for(
            preds, "class-wise", binning=binning, bins=bins, sample_weight=sample_weight
        ),
        p=p,
        per_group=True,
    )


def classwise_mce(
    preds: Predictions, *, bins=15, binning="equal-width", sample_weight=None
) -> float:
    """Class-wise MCE: the mean over classes of each class's largest bin gap.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> round(calcore.classwise_mce(preds, bins=10), 4)  # largest gap 0.8 in both classes
    0.8
    """
    return classwise_ece(preds, bins=bins, binning=binning, p=np.inf, sample_weight=sample_weight)


def _check_k(preds: Predictions, k) -> int:
    if (
        isinstance(k, (bool, np.bool_))
        or not isinstance(k, (int, np.integer))
        or not 1 <= k <= preds.n_classes
    ):
        raise CalcoreError(
            f"k must be an integer between 1 and the number of classes ({preds.n_classes}); "
            f"got {k!r}."
        )
    return int(k)


def _mean_over_ranks(
    preds: Predictions, make_view, *, k, bins, binning, p, sample_weight=None
) -> float:
    k = _check_k(preds, k)
    w = row_weights(preds, sample_weight)
    errors = [
        calibration_error_from_bins(
            view_bin_statistics(make_view(preds, rank), binning=binning, bins=bins, weights=w),
            p=p,
        )
        for rank in range(1, k + 1)
    ]
    return float(np.mean(errors))


def top_k_confidence_ece(
    preds: Predictions, *, k=2, bins=15, binning="equal-width", p=1, sample_weight=None
) -> float:
    """Top-K-confidence ECE: the mean over ranks 1..k of the rank's confidence ECE.

    References
    ----------
    Gupta & Ramdas (2022), Eq. 6 (top-K-confidence calibration); averaging
    over ranks is our choice of summary, as the paper defines no single number.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.6, 0.3, 0.1], [0.5, 0.4, 0.1], [0.2, 0.7, 0.1]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1])
    >>> round(calcore.top_k_confidence_ece(preds, k=2, bins=10), 4)  # mean of 0.4 and 0.3667
    0.3833
    >>> top1 = calcore.top_k_confidence_ece(preds, k=1, bins=10)
    >>> top1 == calcore.confidence_ece(preds, bins=10)
    True
    """
    return _mean_over_ranks(
        preds,
        top_k_confidence_view,
        k=k,
        bins=bins,
        binning=binning,
        p=p,
        sample_weight=sample_weight,
    )


def top_k_label_ece(
    preds: Predictions, *, k=2, bins=15, binning="equal-width", p=1, sample_weight=None
) -> float:
    """Top-K-label ECE: the mean over ranks 1..k of the rank's top-label-style ECE (Eq. 7).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.6, 0.3, 0.1], [0.5, 0.4, 0.1], [0.2, 0.7, 0.1]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1])
    >>> round(calcore.top_k_label_ece(preds, k=2, bins=10), 4)
    0.3833
    >>> calcore.top_k_label_ece(preds, k=1, bins=10) == calcore.top_label_ece(preds, bins=10)
    True
    """
    return _mean_over_ranks(
        preds, top_k_label_view, k=k, bins=bins, binning=binning, p=p, sample_weight=sample_weight
    )


def adaptive_errors_from_bins(stats: BinStatistics) -> float:
    """Unweighted mean gap over the non-empty (class, bin) pairs: ACE/TACE from their bins."""
    ok = stats.nonempty
    return float(stats.gap[ok].mean()) if ok.any() else 0.0


def _adaptive(preds: Predictions, *, bins: int, threshold: float | None, sample_weight) -> float:
    resolve_binning("equal-mass", bins)  # a positive integer or a count rule such as "sturges"
    return adaptive_errors_from_bins(
        classwise_bin_statistics(
            preds,
            binning="equal-mass",
            bins=bins,
            threshold=threshold,
            sample_weight=sample_weight,
            ranges=False,  # the bins' score ranges: no part of the metric
        )
    )


def adaptive_ece(preds: Predictions, *, bins=15, sample_weight=None) -> float:
    """Adaptive calibration error (ACE): class-wise, equal-mass bins, unweighted mean gap.

    ``ACE = 1/(L R) sum_l sum_r |acc(r, l) - conf(r, l)|`` with ``R`` equal-mass
    bins over each class's scores; bins left empty by the tie rule are skipped.

    References
    ----------
    Nixon et al. (2019), "Measuring calibration in deep learning", Sec. 4.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> round(calcore.adaptive_ece(preds, bins=2), 4)  # every class-wise bin has gap 0.35
    0.35
    """
    return _adaptive(preds, bins=bins, threshold=None, sample_weight=sample_weight)


def thresholded_adaptive_ece(
    preds: Predictions, *, bins=15, threshold=1e-3, sample_weight=None
) -> float:
    """Thresholded ACE (TACE): ACE over class-wise scores ``>= threshold`` only.

    ``threshold`` defaults to 1e-3 (Nixon et al. 2019); ``1/L`` is another common choice.
    Called "TECE" in the NA-FIR paper.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> round(calcore.thresholded_adaptive_ece(preds, bins=2, threshold=0.5), 4)
    0.4
    """
    if not 0 <= threshold < 1:
        raise CalcoreError(f"threshold must be in [0, 1); got {threshold!r}.")
    return _adaptive(preds, bins=bins, threshold=threshold, sample_weight=sample_weight)


def debiased_squared_error_from_bins(stats: BinStatistics, *, per_group: bool = False) -> float:
    """Kumar et al.'s debiased estimate of ``ECE^2`` from binned statistics (may be negative).

    ``sum_b n_b/N [ (acc_b - conf_b)^2 - acc_b (1 - acc_b) / (n_b - 1) ]``; bins with
    one point get no correction (their variance term is 0/0, and ``acc_b (1 - acc_b) = 0``).
    ``per_group=True`` averages the per-group estimates (class-wise).
    """
    ok = stats.count > 0
    n_b = stats.count[ok].astype(np.float64)
    acc, conf = stats.mean_outcome[ok], stats.mean_score[ok]
    with np.errstate(divide="ignore", invalid="ignore"):
        correction = np.where(n_b > 1, acc * (1 - acc) / np.maximum(n_b - 1, 1), 0.0)
    squared = float(np.sum(n_b / stats.n_rows * ((acc - conf) ** 2 - correction)))
    return squared / len(stats.group_names) if per_group else squared


def debiased_ece(
    preds: Predictions, *, bins=15, binning="equal-width", view="confidence", sample_weight=None
) -> float:
    """Debiased l2-ECE of Kumar et al. (2019), ``sqrt(max(ECE^2_debiased, 0))``.

    The plug-in l2-ECE is biased upwards by the sampling noise of each bin's
    frequency; subtracting its variance estimate removes that bias to first
    order (see :func:`debiased_squared_error_from_bins`). The squared estimate
    can be negative for well-calibrated models; the root of its positive part
    is returned.

    Parameters
    ----------
    view : {"confidence", "top-label", "class-wise"}, default "confidence"

    References
    ----------
    Kumar, Liang, Ma (2019), "Verified uncertainty calibration", NeurIPS, Sec. 5.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> round(calcore.confidence_ece(preds, bins=5, p=2), 4)  # plug-in l2-ECE
    0.35
    >>> calcore.debiased_ece(preds, bins=5)  # two points per bin: the gaps are within noise
    0.0
    """
    stats = statistics_for(preds, view, binning=binning, bins=bins, sample_weight=sample_weight)
    return float(
        np.sqrt(max(debiased_squared_error_from_bins(stats, per_group=view == "class-wise"), 0.0))
    )


# --- every bootstrap replicate at once -------------------------------------------------
#
# A replicate (a bootstrap resample, a redrawn label set) keeps the full sample's cells and
# changes only the weights, so the cell sums of R replicates are (R, n_cells) arrays and each
# metric below is one numpy expression over them -- the same formula as its one-sample
# counterpart above, with empty cells masked instead of dropped (a per-replicate Python
# loop cost 0.8 s of CPU on 10,000 x 100 rows at R = 200). Each equals the one-sample
# function on each replicate's :class:`BinStatistics` to float64 rounding (tested), since
# only the order of the additions differs.


@dataclass(frozen=True, eq=False)
class ReplicateBins:
    """Per-cell sums of ``R`` replicates on the same cells, shape (R, n_cells) each.

    Attributes
    ----------
    weight, score, outcome : ndarray of shape (R, n_cells)
        ``sum w``, ``sum w s`` and ``sum w o`` per replicate and cell.
    bin_group : ndarray of shape (n_cells,), int
        Group (class) of each cell, non-decreasing (cells laid out group by group, as
        :class:`~calcore.statistics.edges.BinEdges` does).
    n_groups : int
    n_rows : ndarray of shape (R,)
        Each replicate's ``N`` in ``n_b / N`` (its total weight).

    Examples
    --------
    >>> bins = ReplicateBins(
    ...     np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([[1.6, 0.0], [0.8, 0.3]]),
    ...     np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([0, 0]), 1, np.array([2.0, 2.0]))
    >>> calibration_errors_from_replicate_bins(bins).round(4).tolist()  # |0.5-0.8|; (0.2+0.3)/2
    [0.3, 0.25]
    """

    weight: np.ndarray
    score: np.ndarray
    outcome: np.ndarray
    bin_group: np.ndarray
    n_groups: int
    n_rows: np.ndarray

    @property
    def nonempty(self) -> np.ndarray:
        return self.weight > 0

    def means(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean score and mean outcome per cell, 0 in empty cells (masked by the callers)."""
        safe = np.where(self.nonempty, self.weight, 1.0)
        return self.score / safe, self.outcome / safe

    def gap(self) -> np.ndarray:
        """``|acc_b - conf_b|`` per replicate and cell, 0 in empty cells."""
        conf, acc = self.means()
        return np.abs(acc - conf)

    def group_sums(self, values: np.ndarray) -> np.ndarray:
        """Sums of ``values`` (R, n_cells) over each group's cells: (R, n_groups), 0 for a
        group without cells."""
        return self._group_reduce(np.add, values)

    def group_maxima(self, values: np.ndarray) -> np.ndarray:
        """Maxima of non-negative ``values`` over each group's cells (0 for none)."""
        return self._group_reduce(np.maximum, values)

    def _group_reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        # cells are sorted by group, so each group is one contiguous run for reduceat
        out = np.zeros((values.shape[0], self.n_groups))
        groups = np.arange(self.n_groups)
        starts = np.searchsorted(self.bin_group, groups)
        has = np.searchsorted(self.bin_group, groups, side="right") > starts
        if values.shape[1] and has.any():
            out[:, has] = ufunc.reduceat(values, starts[has], axis=1)
        return out


def calibration_errors_from_replicate_bins(
    bins: ReplicateBins, *, p=1, per_group=False
) -> np.ndarray:
    """:func:`calibration_error_from_bins` of every replicate: shape (R,).

    Empty cells weigh 0 (and their gap is 0, so they never raise a maximum: the
    one-sample function's ``initial=0.0``).
    """
    p = _check_order(p)
    gap = bins.gap()  # 0 in empty cells
    if p == np.inf:
        if not per_group:
            return gap.max(axis=1, initial=0.0)
        return bins.group_maxima(gap).mean(axis=1)
    terms = bins.weight / bins.n_rows[:, None] * gap**p
    if not per_group:
        return np.sum(terms, axis=1) ** (1.0 / p)
    return (bins.group_sums(terms) ** (1.0 / p)).mean(axis=1)


def adaptive_errors_from_replicate_bins(bins: ReplicateBins) -> np.ndarray:
    """:func:`adaptive_errors_from_bins` of every replicate (0 without a non-empty cell)."""
    filled = np.count_nonzero(bins.nonempty, axis=1)
    total = np.sum(bins.gap(), axis=1)
    return np.where(filled > 0, total / np.maximum(filled, 1), 0.0)


def debiased_squared_errors_from_replicate_bins(
    bins: ReplicateBins, *, per_group: bool = False
) -> np.ndarray:
    """:func:`debiased_squared_error_from_bins` of every replicate: shape (R,)."""
    conf, acc = bins.means()
    n_b = bins.weight
    correction = np.where(n_b > 1, acc * (1 - acc) / np.maximum(n_b - 1, 1), 0.0)
    terms = np.where(
        bins.nonempty, n_b / bins.n_rows[:, None] * ((acc - conf) ** 2 - correction), 0.0
    )
    squared = np.sum(terms, axis=1)
    return squared / bins.n_groups if per_group else squared
