"""Fast bootstrap of every metric of :func:`calcore.evaluate` from resample count vectors.

A bootstrap resample of ``n`` rows is a count vector ``w`` (``w_i`` = how many
times row ``i`` was drawn, ``sum w = n``). Every metric of the report is a
function of a few *weighted sums over rows*, so the replicates of all metrics
come from one sparse product ``W @ B`` with ``W`` the ``(R, n)`` matrix of
counts and ``B`` a sparse ``(n, K)`` matrix fixed by the full sample:

* accuracy, NLL, Brier: per-row terms, ``W @ terms / n``;
* binned metrics: per-bin counts, score sums and outcome sums, with ``B`` the
  one-hot bin assignment (one entry per row for the confidence and top-label
  views, one per (row, class) for the class-wise view). The per-bin formulas are
  those of :mod:`calcore.metrics_binned`, called on a
  :class:`~calcore.binned.BinStatistics` per replicate;
* KDE-ECE: window moments of the weights, see :mod:`calcore._bootstrap_kde`.

Bin assignments are those of the full sample. For equal-width bins with a fixed
number of bins this is exactly what re-binning the resample gives (the edges
``k/B`` do not depend on the data; tested against ``metric(preds.subset(rows))``
to 1e-12). For data-dependent bins -- equal-mass, points-per-bin, unique,
count rules such as ``"sturges"`` per predicted class, and always for ACE/TACE
(equal-mass) -- it is a *conditional* bootstrap: the bins are held at the full
sample's and only the rows are resampled, so the interval leaves out the
variability of the bin edges. KDE-ECE is likewise conditional on the full
sample's bandwidth and grid. :func:`calcore.evaluate` says so in its notes.

References
----------
Efron & Tibshirani (1993), "An Introduction to the Bootstrap", Ch. 6 and 13
(resampling as a multinomial reweighting of the rows, percentile intervals).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from calcore._bootstrap_kde import KDEBatches, KDEProblems, kde_problems
from calcore.binned import BinStatistics
from calcore.binning import equal_width_index
from calcore.metrics_binned import (
    adaptive_errors_from_bins,
    calibration_error_from_bins,
    debiased_squared_error_from_bins,
)
from calcore.metrics_scoring import brier_per_row, nll_per_row
from calcore.predictions import Predictions

__all__ = [
    "resample_counts",
    "ReportTemplates",
    "metric_replicates",
    "classwise_kdes",
    "KDE_MAX_WORK",
]

#: Multiply-adds allowed for the KDE replicates of one metric (about 0.3 s on one core of
#: a quiet machine). The class-wise KDE-ECE costs about 1.9M per resample for 10 classes and
#: 12.8M for 100 classes at n = 10,000, so 10 classes get all 200 resamples and 100 classes
#: 62 (evaluate with 200 resamples measured at ~0.6 s and ~1.9 s; each further resample of
#: 100 classes adds ~5 ms). Above it the KDE metric gets fewer resamples (the first ones),
#: and the report says so.
KDE_MAX_WORK = 800_000_000
_MIN_KDE_RESAMPLES = 25


def resample_counts(n: int, n_resamples: int, seed) -> np.ndarray:
    """Row counts of ``n_resamples`` bootstrap resamples of ``n`` rows, shape (R, n), float64.

    The rows are drawn as ``default_rng(seed).integers(0, n, (R, n))`` -- the
    draw :func:`scipy.stats.bootstrap` makes -- and counted, so each row of the
    result is a Multinomial(n, 1/n) vector and the resamples are the ones the
    generic subset path (:func:`calcore.bootstrap_intervals`) sees for the same seed.
    """
    idx = np.random.default_rng(seed).integers(0, n, (n_resamples, n))
    idx += (np.arange(n_resamples, dtype=idx.dtype) * n)[:, None]
    counts = np.bincount(idx.reshape(-1), minlength=n_resamples * n)
    return counts.reshape(n_resamples, n).astype(np.float64)


def _cells(stats: BinStatistics, scores: np.ndarray, group: int) -> np.ndarray:
    """Flat bin id of each score of one group under the full sample's bins (-1: no bin).

    Equal-width: the fixed edges ``k/B`` (:func:`calcore.binning.equal_width_index`,
    the rule of every binning path). Other schemes: bins are intervals of the
    sorted scores and ties are never split, so a score belongs to the first
    non-empty bin whose largest score is ``>=`` it.
    """
    in_group = np.flatnonzero(stats.bin_group == group)
    if in_group.size == 0:
        return np.full(scores.shape, -1, dtype=np.intp)
    if stats.scheme.kind == "equal-width":
        return in_group[equal_width_index(scores, in_group.size)]
    nonempty = in_group[stats.count[in_group] > 0]
    if nonempty.size == 0:
        return np.full(scores.shape, -1, dtype=np.intp)
    pos = np.searchsorted(stats.upper_edge[nonempty], scores, side="left")
    return np.where(pos < nonempty.size, nonempty[np.minimum(pos, nonempty.size - 1)], -1)


@dataclass(frozen=True)
class ReportTemplates:
    """The full-sample bin statistics of :func:`calcore.evaluate` (the bins the bootstrap keeps).

    ``cw``, ``ace`` and ``tace`` are class-wise statistics (groups = classes);
    ``tace_threshold`` is the score threshold of ``tace``.
    """

    conf: BinStatistics
    top: BinStatistics
    cw: BinStatistics
    ace: BinStatistics
    tace: BinStatistics
    tace_threshold: float


def _row_view_cells(preds: Predictions, stats: BinStatistics, groups: np.ndarray) -> np.ndarray:
    cells = np.empty(preds.n_samples, dtype=np.intp)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        cells[rows] = _cells(stats, preds.confidence[rows], int(g))
    return cells


def _classwise_cells(preds: Predictions, t: ReportTemplates):
    """Common refinement of the CW, ACE and TACE bins of every class, as (row, class) cells.

    All three partitions of a class are intervals of its sorted scores (TACE's
    excluded scores ``< threshold`` too), so the sum of the three monotone bin
    positions is a cell id that is constant exactly on their common refinement
    (at most ``B_cw + B_ace + B_tace + 1`` cells per class). One sparse product
    then serves the three metrics, and each metric's bins are sums of cells.
    """
    n, n_classes = preds.probs.shape
    parts = []
    for stats, threshold in ((t.cw, None), (t.ace, None), (t.tace, t.tace_threshold)):
        per_class = np.bincount(stats.bin_group, minlength=n_classes)
        start = np.concatenate(([0], np.cumsum(per_class)))[:-1]
        local = np.empty((n, n_classes), dtype=np.intp)
        flat = np.empty((n, n_classes), dtype=np.intp)
        for c in range(n_classes):
            col = preds.probs[:, c]
            cell = _cells(stats, col, c)
            if threshold is not None:
                cell = np.where(col >= threshold, cell, -1)
            flat[:, c] = cell
            # Monotone position within the class; -1 (below the threshold) sorts first.
            local[:, c] = np.where(cell >= 0, cell - start[c] + 1, 0)
        parts.append((local, flat, per_class.max(initial=0) + 1))
    width = int(sum(p[2] for p in parts))
    cell = sum(p[0] for p in parts) + np.arange(n_classes)[None, :] * width
    n_cells = n_classes * width
    # Which bin of each metric a cell belongs to (-1: none); all members of a cell agree.
    to_bin = []
    for _, flat, _ in parts:
        m = np.full(n_cells, -1, dtype=np.intp)
        m[cell.reshape(-1)] = flat.reshape(-1)
        to_bin.append(m)
    return cell, n_cells, to_bin


def _aggregation(to_bin: np.ndarray, n_bins: int) -> sp.csr_matrix:
    keep = np.flatnonzero(to_bin >= 0)
    return sp.csr_matrix((np.ones(keep.size), (keep, to_bin[keep])), shape=(to_bin.size, n_bins))


class _Blocks:
    """Rows of the stacked sparse matrix ``B^T`` (one block of rows per weighted sum)."""

    def __init__(self, n: int):
        self.n, self.rows, self.cols, self.vals, self.size = n, [], [], [], 0

    def add(self, cell: np.ndarray, row: np.ndarray, value, n_cells: int) -> slice:
        keep = cell >= 0
        self.rows.append(cell[keep] + self.size)
        self.cols.append(row[keep])
        self.vals.append(np.broadcast_to(value, cell.shape)[keep].astype(np.float64))
        out = slice(self.size, self.size + n_cells)
        self.size += n_cells
        return out

    def matrix(self) -> sp.csc_matrix:
        """CSC, one column per data row: the product then reads the counts row by row.

        Built directly (a stable merge of the blocks' row-ordered entries), without the
        index sorting of a COO conversion; duplicate entries are fine for the product.
        """
        cols = np.concatenate(self.cols)
        order = np.argsort(cols, kind="stable")
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=self.n), out=indptr[1:])
        return sp.csc_matrix(
            (np.concatenate(self.vals)[order], np.concatenate(self.rows)[order], indptr),
            shape=(self.size, self.n),
        )


def _replicate_stats(template: BinStatistics, count, sum_s, sum_o) -> list[BinStatistics]:
    """One BinStatistics per replicate, with the template's bins and the weighted sums."""
    with np.errstate(invalid="ignore", divide="ignore"):  # empty bins -> NaN, as bin_statistics
        mean_s, mean_o = sum_s / count, sum_o / count
    # Counts of a resample are integers held exactly in float64.
    count = np.rint(count).astype(np.int64)
    return [
        replace(template, count=count[r], mean_score=mean_s[r], mean_outcome=mean_o[r])
        for r in range(count.shape[0])
    ]


def metric_replicates(
    preds: Predictions, counts: np.ndarray, templates: ReportTemplates
) -> dict[str, np.ndarray]:
    """Replicates of the scoring and binned metrics of the report, one per row of ``counts``.

    Parameters
    ----------
    preds : Predictions
    counts : ndarray of shape (R, n)
        Row counts of each resample (:func:`resample_counts`).
    templates : ReportTemplates or None
        The full sample's bins, kept for every resample; None for the scoring metrics
        (accuracy, NLL, Brier) only.

    Returns
    -------
    dict of str to ndarray of shape (R,)
        Keyed as :data:`calcore.METRICS` (all but the KDE metrics).
    """
    n = preds.n_samples
    rows = np.arange(n)
    blocks = _Blocks(n)
    zero = np.zeros(n, dtype=np.intp)
    s_acc = blocks.add(zero, rows, preds.correct, 1)
    s_nll = blocks.add(zero, rows, nll_per_row(preds), 1)
    s_brier = blocks.add(zero, rows, brier_per_row(preds), 1)
    if templates is None:  # only the metrics that use no bins (evaluate's metrics=)
        sums = (blocks.matrix() @ np.ascontiguousarray(counts.T)).T
        return {key: sums[:, s][:, 0] / n for key, s in
                (("accuracy", s_acc), ("nll", s_nll), ("brier", s_brier))}  # fmt: skip
    row_views = {}
    for name, stats, groups in (
        ("conf", templates.conf, zero),
        ("top", templates.top, preds.predicted),
    ):
        cell, k = _row_view_cells(preds, stats, groups), stats.count.size
        row_views[name] = (
            blocks.add(cell, rows, 1.0, k),
            blocks.add(cell, rows, preds.confidence, k),
            blocks.add(cell, rows, preds.correct, k),
        )
    cell, n_cells, to_bin = _classwise_cells(preds, templates)
    all_rows = np.broadcast_to(rows[:, None], cell.shape).reshape(-1)
    cw_count = blocks.add(cell.reshape(-1), all_rows, 1.0, n_cells)
    cw_score = blocks.add(cell.reshape(-1), all_rows, preds.probs.reshape(-1), n_cells)
    cw_outcome = blocks.add(cell[rows, preds.labels], rows, 1.0, n_cells)

    # One pass over the counts for every weighted sum of every metric (float64 throughout).
    sums = (blocks.matrix() @ np.ascontiguousarray(counts.T)).T  # (R, K)
    out = {
        "accuracy": sums[:, s_acc][:, 0] / n,
        "nll": sums[:, s_nll][:, 0] / n,
        "brier": sums[:, s_brier][:, 0] / n,
    }
    conf = _replicate_stats(templates.conf, *(sums[:, s] for s in row_views["conf"]))
    top = _replicate_stats(templates.top, *(sums[:, s] for s in row_views["top"]))
    per_metric = []
    for stats, m in zip((templates.cw, templates.ace, templates.tace), to_bin, strict=True):
        agg = _aggregation(m, stats.count.size)
        per_metric.append(
            _replicate_stats(stats, *((sums[:, s] @ agg) for s in (cw_count, cw_score, cw_outcome)))
        )
    cw, ace, tace = per_metric
    for key, views, kw in (
        ("conf_ece", conf, {}),
        ("conf_ece_l2", conf, {"p": 2}),
        ("conf_mce", conf, {"p": np.inf}),
        ("top_label_ece", top, {}),
        ("top_label_ece_l2", top, {"p": 2}),
        ("top_label_mce", top, {"p": np.inf}),
        ("classwise_ece", cw, {"per_group": True}),
        ("classwise_ece_l2", cw, {"p": 2, "per_group": True}),
        ("classwise_mce", cw, {"p": np.inf, "per_group": True}),
    ):
        out[key] = np.array([calibration_error_from_bins(s, **kw) for s in views])
    out["ace"] = np.array([adaptive_errors_from_bins(s) for s in ace])
    out["tace"] = np.array([adaptive_errors_from_bins(s) for s in tace])
    out["debiased_ece"] = np.sqrt(
        np.maximum([debiased_squared_error_from_bins(s) for s in conf], 0.0)
    )
    return out


def classwise_kdes(preds: Predictions) -> KDEProblems | KDEBatches:
    """The class-wise binary problems ``(p_l, 1{y = l})`` of every class, as one batch."""
    outcomes = preds.labels[:, None] == np.arange(preds.n_classes)[None, :]
    return kde_problems(preds.probs, outcomes)


def kde_values(kdes: KDEProblems | KDEBatches, weights_t: np.ndarray) -> np.ndarray:
    """Mean over the problems of ``kdes`` of the KDE-ECE for each column of ``weights_t``, (R,)."""
    return kdes.replicates(weights_t).mean(axis=1)


def kde_resamples(kdes: KDEProblems | KDEBatches, n_resamples: int, max_work: int) -> int:
    """How many resamples the KDE metric over ``kdes`` gets within ``max_work`` multiply-adds."""
    affordable = max_work // max(kdes.work_per_resample, 1)
    return int(min(n_resamples, max(affordable, min(_MIN_KDE_RESAMPLES, n_resamples))))
