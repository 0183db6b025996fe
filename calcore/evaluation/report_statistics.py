"""The cells and KDE problems of a report, and its metrics read off the statistics.

:func:`calcore.evaluate`, its bootstrap and the calibration test
(:mod:`calcore.evaluation.significance`) all lay out the statistics engine the same
way (:func:`report_cell_specs`, :func:`report_kde_specs`: bins and bandwidths from the
data) and read every metric off the sums with the registry's formulas
(:func:`scoring_values`, :func:`binned_values`, :func:`kde_point_values`).
"""

from __future__ import annotations

import numpy as np

from calcore.foundation.binning import resolve_binning
from calcore.foundation.kernel_density import validated_scores_bandwidth
from calcore.metrics.binary import HL_GROUPS
from calcore.metrics.binned import ReplicateBins
from calcore.metrics.registry import METRICS, adaptive_bins_for
from calcore.predictions import Predictions
from calcore.statistics.accumulator import CalibrationStatistics, CellSpec, KDESpec
from calcore.statistics.bin_statistics import BinStatistics, bin_statistics_from_sums
from calcore.statistics.kde_cells import ScoreMoments
from calcore.statistics.points import (
    RowBatch,
    classwise_edges,
    complementary_binary,
    reduction_edges,
)

__all__ = [
    "CELLS_OF_METRIC",
    "TACE_THRESHOLD",
    "report_cell_specs",
    "report_kde_specs",
    "statistics_bins",
    "scoring_values",
    "binned_values",
    "kde_point_values",
    "replicate_bins",
    "replicate_values",
]

#: Score threshold of the TACE in the report (Nixon et al. 2019).
TACE_THRESHOLD = 1e-3

#: Which set of cells each binned metric of the report reads (from :data:`METRICS`).
CELLS_OF_METRIC = {k: spec.cells for k, spec in METRICS.items() if spec.cells is not None}


def report_cell_specs(preds: Predictions, *, bins, binning, keys=None, weights=None) -> dict:
    """The cells of a report, with the bins found from ``preds`` (exact order statistics).

    ``conf``, ``top`` and ``cw`` use the report's binning; ``ace`` and ``tace`` the
    class-wise equal-mass bins of :func:`calcore.metrics.registry.adaptive_bins_for` (TACE only
    scores ``>= TACE_THRESHOLD``); ``deciles`` the class-wise deciles of risk of the binary
    measures (Hosmer-Lemeshow, O/E), whatever the binning. ``keys`` limits them to some of
    these (all by default); ``weights`` are row weights (equal-mass ranks count weight).
    """
    batch = RowBatch.of(preds)
    r = adaptive_bins_for(binning, bins)
    requests = {
        "conf": ("confidence", binning, bins, None),
        "top": ("top-label", binning, bins, None),
        "cw": ("class-wise", binning, bins, None),
        "ace": ("class-wise", "equal-mass", r, None),
        "tace": ("class-wise", "equal-mass", r, TACE_THRESHOLD),
        "deciles": ("class-wise", "equal-mass", HL_GROUPS, None),
    }
    wanted = [k for k in requests if keys is None or k in keys]
    edges = {
        key: reduction_edges(batch, reduction, binning=b, bins=k, weights=weights)
        for key, (reduction, b, k, _) in requests.items()
        if key in wanted and reduction != "class-wise"
    }
    classwise = [k for k in wanted if requests[k][0] == "class-wise"]
    found = classwise_edges(  # one partition (or sort) of each column for all of them
        batch,
        [(resolve_binning(requests[k][1], requests[k][2]), requests[k][3]) for k in classwise],
        weights=weights,
    )
    edges.update(zip(classwise, found, strict=True))
    return {key: CellSpec(requests[key][0], edges[key]) for key in wanted}


def statistics_bins(stats: CalibrationStatistics, key: str) -> BinStatistics:
    """The :class:`BinStatistics` of one set of cells of ``stats``."""
    spec = stats.specs[key]
    names = ("all",) if spec.reduction == "confidence" else stats.class_names
    return bin_statistics_from_sums(
        stats.cells[key], spec.edges, view=spec.reduction, group_names=names, n_rows=stats.total()
    )


def scoring_values(stats: CalibrationStatistics) -> dict:
    """Accuracy, and NLL and Brier score when ``stats`` kept them, from the scoring sums."""
    total = stats.weight
    out = {"accuracy": float(stats.correct / total)}
    if stats.proper_scores:
        out["nll"] = float(stats.nll / total) + 0.0  # + 0.0: no "-0.0" when every p_y = 1
        out["brier"] = float(stats.brier / total)
    return out


def binned_values(stats: CalibrationStatistics) -> dict:
    """The binned metrics whose cells ``stats`` keeps, each by its registry entry's
    ``from_bins`` (:data:`calcore.metrics.registry.METRICS`: the one table of metrics); the
    binary measures only for two classes."""
    bins = {key: statistics_bins(stats, key) for key in stats.specs}
    binary = len(stats.class_names) == 2
    return {
        k: float(spec.from_bins(bins[spec.cells]))
        for k, spec in METRICS.items()
        if spec.cells in bins and (binary or not spec.binary_only)
    }


def report_kde_specs(
    preds: Predictions, *, confidence: bool, classwise: bool, weights=None
) -> dict:
    """The KDE-ECE problems of a report with their rule-of-thumb bandwidths from ``preds``
    (weighted moments with ``weights``, which for integer weights equal repeated rows).

    For binary predictions whose class-0 column is exactly ``1 - p`` (see
    :func:`~calcore.statistics.points.complementary_binary`) the class-wise spec keeps
    class 1 alone: class 0's problem is its mirror image (score ``1 - s``, outcome
    ``1 - o``, the same bandwidth), and the estimator, with its grid on [0, 1] and its
    reflections at both ends, is symmetric under that map, so both KDE-ECEs are equal
    (to ~1e-17) and their mean is class 1's. 10M binary rows, every metric: one KDE
    problem of three spared.
    """

    def bandwidth(scores):
        if weights is None:
            return validated_scores_bandwidth(scores)
        return ScoreMoments.of(scores, weights).bandwidth()

    specs = {}
    if confidence:
        specs["kde_ece"] = KDESpec.confidence(bandwidth(preds.confidence))
    if classwise and complementary_binary(preds.probs):
        specs["kde_ece_classwise"] = KDESpec.classwise([bandwidth(preds.probs[:, 1])], [1])
    elif classwise:
        specs["kde_ece_classwise"] = KDESpec.classwise(
            [bandwidth(preds.probs[:, c]) for c in range(preds.n_classes)]
        )
    return specs


def kde_point_values(stats: CalibrationStatistics) -> dict:
    """KDE-ECE (confidence) and its class-wise mean, for the KDE problems ``stats`` keeps."""
    return {key: float(np.mean(stats.kde_ece(key))) for key in stats.kde_specs}


def replicate_bins(stats: CalibrationStatistics, key: str) -> ReplicateBins:
    """The :class:`~calcore.metrics.binned.ReplicateBins` of one set of cells of statistics
    with a replicate axis (views of its sums, no copies)."""
    spec, sums = stats.specs[key], stats.cells[key]
    n_groups = 1 if spec.reduction == "confidence" else stats.n_classes
    return ReplicateBins(
        sums.weight,
        sums.score,
        sums.outcome,
        spec.edges.cell_group,
        n_groups,
        np.asarray(stats.weight, dtype=np.float64),
    )


def replicate_values(stats: CalibrationStatistics, keys=None) -> dict:
    """The metrics ``keys`` (default: every metric ``stats`` keeps the sums of) of every
    replicate of statistics with a replicate axis.

    Returns a dict of metric to ndarray of shape (R,). Each metric is one expression over
    the (R, cells) replicate sums (``MetricSpec.from_replicate_bins``; the KDE-ECEs from
    their replicated kernel moments), equal to its one-sample value on each replicate to
    float64 rounding; the binary measures of two-class statistics, which have no such
    expression, are read replicate by replicate (a few cells each).

    Raises
    ------
    KeyError
        A metric of ``keys`` whose sums ``stats`` does not keep.
    """
    keys = None if keys is None else list(keys)
    n = stats.n_replicates
    total = stats.weight
    out = {"accuracy": stats.correct / total}
    if stats.proper_scores:
        out["nll"] = stats.nll / total + 0.0  # + 0.0: no "-0.0" when every p_y = 1
        out["brier"] = stats.brier / total
    binary = len(stats.class_names) == 2
    wanted = [
        (k, spec)
        for k, spec in METRICS.items()
        if spec.cells in stats.specs
        and (binary or not spec.binary_only)
        and (keys is None or k in keys)
    ]
    bins = {cells: replicate_bins(stats, cells) for cells in {spec.cells for _, spec in wanted}}
    looped = [(k, spec) for k, spec in wanted if spec.from_replicate_bins is None]
    for k, spec in wanted:
        if spec.from_replicate_bins is not None:
            out[k] = np.asarray(spec.from_replicate_bins(bins[spec.cells]), dtype=np.float64)
    if looped:
        for k, _ in looped:
            out[k] = np.empty(n)
        for r in range(n):
            one = stats.replicate(r)
            per_cells = {}
            for k, spec in looped:
                if spec.cells not in per_cells:
                    per_cells[spec.cells] = statistics_bins(one, spec.cells)
                out[k][r] = spec.from_bins(per_cells[spec.cells])
    for k in stats.kde_specs:
        if keys is None or k in keys:
            out[k] = np.atleast_2d(stats.kde_ece(k)).mean(axis=-1)
    if keys is None:
        return out
    return {k: out[k] for k in keys}
