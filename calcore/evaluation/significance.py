"""The significance of calibration errors: p-values of "the model is calibrated".

A test of calibration: is a calibration error larger than a calibrated model's would be?

Null hypothesis: the model is calibrated, i.e. each row's label is drawn from its own
predicted distribution. Under it the labels can be redrawn ("consistency resampling",
Broecker & Smith 2007; the consistency bands of :mod:`calcore.diagnostics.consistency`
draw them the same way), keeping the scores, the bins and the KDE bandwidths: every
redrawn set is a sample the null hypothesis could have produced. The p-value of a metric
is the share of redrawn sets whose error is at least the observed one, with the usual
``+1`` of a Monte Carlo test, ``(1 + #{T* >= T}) / (R + 1)``, which keeps the test's
type-I error at or below the nominal level for any number of resamples (Davison &
Hinkley 1997, Sec. 4.2.5).

Unlike an interval, the test needs no bias correction: the redrawn errors carry the same
finite-sample bias as the observed one, so a calibrated model gets large p-values even
when its binned ECE is visibly above 0.

The labels of resample ``r`` come from one uniform per row keyed by ``(seed, r, row
position)`` (:func:`calcore.foundation.keyed_random.row_uniforms`), so they do not depend on
how the rows are batched.

References
----------
Broecker & Smith (2007), "Increasing the reliability of reliability diagrams", Weather
and Forecasting 22. Vaicenavicius et al. (2019), "Evaluating model calibration in
classification", AISTATS, Sec. 4 (consistency resampling tests). Davison & Hinkley
(1997), "Bootstrap Methods and their Application", Sec. 4.2.5.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from calcore.evaluation.report_statistics import (
    CELLS_OF_METRIC,
    binned_values,
    kde_point_values,
    replicate_values,
    report_cell_specs,
    report_kde_specs,
)
from calcore.foundation.binning import resolve_binning
from calcore.foundation.deprecation import renamed_keywords
from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import BOOTSTRAP_RESAMPLES
from calcore.foundation.tuning import REDRAW_MEMORY_BYTES
from calcore.foundation.validation import freeze_fields, row_weights
from calcore.metrics.registry import METRICS, metric_keys
from calcore.predictions import Predictions
from calcore.statistics.accumulator import CalibrationStatistics
from calcore.statistics.redraws import LabelRedraws

__all__ = [
    "CalibrationTest",
    "TESTABLE_METRICS",
    "calibration_test",
    "redrawn_label_test",
    "p_values_from_null",
    "tested_statistics",
    "DEFAULT_TESTED",
]

#: The metrics the test can use: the calibration errors (not accuracy or the scores, and
#: not the binary measures: O/E, slope and intercept are not errors whose null
#: distribution is redrawn here, Spiegelhalter and Hosmer-Lemeshow are tests already).
TESTABLE_METRICS = tuple(
    k
    for k in METRICS
    if k not in ("accuracy", "nll", "brier")
    and (not METRICS[k].binary_only or k == "positive_class_ece")
)
#: What :func:`calibration_test` tests by default: one metric per view and the KDE-ECE.
DEFAULT_TESTED = ("conf_ece", "top_label_ece", "classwise_ece", "kde_ece")


@dataclass(frozen=True)
class CalibrationTest:
    """p-values of "the model is calibrated" per metric.

    Attributes
    ----------
    observed : dict of str to float
        Each metric on the data.
    p_values : dict of str to float
        ``(1 + #{redrawn >= observed}) / (n_resamples + 1)``; NaN where the metric is
        undefined.
    n_resamples : int
    seed : int
    null_values : dict of str to ndarray
        Each metric on every redrawn set (its distribution under calibration).

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident", strength=2)
    >>> preds = calcore.simulate_predictions(sim, 2000, seed=0).preds
    >>> test = calcore.calibration_test(preds, metrics=["top_label_ece"], n_resamples=99)
    >>> test.p_values["top_label_ece"], test.verdict("top_label_ece")
    (0.01, 'miscalibrated (p = 0.01)')
    """

    observed: dict
    p_values: dict
    n_resamples: int
    seed: int
    null_values: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    @renamed_keywords(level="alpha")
    def verdict(self, key: str, alpha: float = 0.05) -> str:
        """``"consistent with calibrated (p = 0.41)"`` or ``"miscalibrated (p = 0.004)"``:
        miscalibrated when ``key``'s p-value is at most ``alpha``, the test's significance
        level (until 0.1 ``level``, which still works for one release, with a
        DeprecationWarning)."""
        p = self.p_values[key]
        if not np.isfinite(p):
            return "untestable (the metric is undefined)"
        words = "miscalibrated" if p <= alpha else "consistent with calibrated"
        return f"{words} (p = {p:.2g})"

    def null_quantile(self, key: str, q: float = 0.95) -> float:
        """The ``q`` quantile of ``key`` under calibration (over the redrawn label sets):
        the value a calibrated model of these predictions stays below with probability
        about ``q`` (NaN when the metric is undefined or was not kept).

        Examples
        --------
        >>> t = CalibrationTest({"conf_ece": 0.1}, {"conf_ece": 0.2}, 4, 0,
        ...                     {"conf_ece": np.array([0.01, 0.02, 0.03, 0.05])})
        >>> round(t.null_quantile("conf_ece", 0.5), 3)
        0.025
        """
        values = np.asarray(self.null_values.get(key, ()), dtype=np.float64)
        values = values[np.isfinite(values)]
        return float(np.quantile(values, q)) if values.size else float("nan")

    @staticmethod
    def combine(a: "CalibrationTest | None", b: "CalibrationTest | None"):
        """The tests of two reports of the same rows and seed, metrics of ``b`` winning."""
        if a is None or b is None:
            return a or b
        return CalibrationTest(
            a.observed | b.observed,
            a.p_values | b.p_values,
            b.n_resamples,
            b.seed,
            a.null_values | b.null_values,
        )

    def as_dict(self) -> dict:
        """``{metric: {"p_value": ..., "n_resamples": ...}}`` (JSON-ready; NaN as None)."""
        return {
            k: {
                "p_value": float(p) if np.isfinite(p) else None,
                "n_resamples": self.n_resamples,
            }
            for k, p in self.p_values.items()
        }


def calibration_test(
    preds: Predictions,
    *,
    metrics=DEFAULT_TESTED,
    bins=15,
    binning: str = "equal-width",
    n_resamples: int = 200,
    seed: int = 0,
    sample_weight=None,
    positions=None,
) -> CalibrationTest:
    """Test "the model is calibrated" with each metric by consistency resampling.

    Parameters
    ----------
    preds : Predictions
        Rows that sum to 1 (the labels are redrawn from them).
    metrics : iterable of str, default DEFAULT_TESTED
        Keys of :data:`TESTABLE_METRICS`.
    bins, binning :
        As in :func:`calcore.evaluate`; the bins are the data's, kept for every resample.
    n_resamples : int, default 200
        Redrawn label sets; p-values are multiples of ``1 / (n_resamples + 1)``.
    seed : int, default 0
    sample_weight : array_like of shape (n,), optional
        Row weights, as in :func:`calcore.evaluate` (default: ``preds.sample_weight``).
        A weighted row's label is drawn once and counts with its weight (as in the
        bootstrap); for frequency weights of repeated rows, whose copies would each get
        a label, the test is then conservative.
    positions : array_like of int, shape (n,), optional
        Each row's position in the whole source, the key of its redrawn labels (default
        ``0 .. n - 1``): a slice tested with its rows' positions gets the p-values of the
        same slice of a stream.

    Returns
    -------
    CalibrationTest

    Raises
    ------
    CalcoreError
        Unknown or untestable metrics, unnormalised predictions, fewer than 2 rows, or
        invalid options.

    References
    ----------
    Broecker & Smith (2007); Vaicenavicius et al. (2019), Sec. 4.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="calibrated")
    >>> preds = calcore.simulate_predictions(sim, 2000, seed=0).preds
    >>> test = calcore.calibration_test(preds, metrics=["conf_ece"], n_resamples=99, seed=1)
    >>> test.p_values["conf_ece"] > 0.05
    True
    """
    keys = metric_keys(metrics, among=TESTABLE_METRICS, what="calibration_test metrics")
    BOOTSTRAP_RESAMPLES.check(n_resamples, "n_resamples")
    resolve_binning(binning, bins)
    if not preds.normalized:
        raise CalcoreError(
            "calibration_test redraws each row's label from its probabilities, so the rows "
            "must sum to 1; these predictions are unnormalised (e.g. class-wise histogram "
            "binning). Test the class-wise metrics of each class's binary problem instead."
        )
    if preds.n_samples < 2:
        raise CalcoreError("calibration_test needs at least 2 rows.")
    weights = row_weights(preds, sample_weight)
    stats = _data_statistics(preds, keys, bins=bins, binning=binning, weights=weights)
    values = binned_values(stats) | kde_point_values(stats)
    observed = {k: values[k] for k in keys}
    return redrawn_label_test(
        preds,
        stats,
        observed,
        n_resamples=n_resamples,
        seed=seed,
        weights=weights,
        positions=positions,
    )


def redrawn_label_test(
    preds: Predictions,
    stats: CalibrationStatistics,
    observed: dict,
    *,
    n_resamples: int,
    seed: int,
    weights=None,
    positions=None,
) -> CalibrationTest:
    """:func:`calibration_test` on statistics already computed.

    :func:`calcore.evaluate` has computed the bins, the bandwidths, the sums and the
    observed errors in its own pass; this redraws the labels only (the caller has checked
    the options), with :class:`~calcore.statistics.redraws.LabelRedraws`: each redraw
    costs one bincount per set of cells, not a pass of the statistics engine.

    Parameters
    ----------
    preds : Predictions
    stats : CalibrationStatistics
        The statistics of ``preds`` (with ``weights``); its ``specs`` and ``kde_specs``
        are the cells and KDE problems of the tested metrics.
    observed : dict of str to float
        The tested metrics on ``preds``.
    n_resamples, seed :
        As in :func:`calibration_test`.
    weights : ndarray, optional
        Resolved row weights.
    positions : ndarray of int, optional
        The rows' positions in the whole source (default ``0 .. n - 1``).

    Returns
    -------
    CalibrationTest

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics.accumulator import CalibrationStatistics
    >>> from calcore.evaluation.report_statistics import report_cell_specs
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident", strength=2)
    >>> preds = calcore.simulate_predictions(sim, 1000, seed=0).preds
    >>> specs = report_cell_specs(preds, bins=15, binning="equal-width", keys={"conf"})
    >>> stats = CalibrationStatistics.empty(preds.class_names, specs, {})
    >>> stats.update(preds)
    >>> observed = {"conf_ece": calcore.confidence_ece(preds)}
    >>> redrawn_label_test(preds, stats, observed, n_resamples=19, seed=0).p_values
    {'conf_ece': 0.05}
    """
    keys = list(observed)
    positions = np.arange(preds.n_samples) if positions is None else np.asarray(positions)
    if positions.shape != (preds.n_samples,):
        raise CalcoreError(f"positions must hold one position per row ({preds.n_samples}).")
    null = {k: [] for k in keys}
    for redraws in _redraw_groups(stats, int(n_resamples)):
        accumulated = LabelRedraws(
            stats.class_names, stats.specs, stats.kde_specs, redraws=redraws, seed=seed
        )
        accumulated.update(preds, positions, weights)
        values = replicate_values(accumulated.statistics(stats), keys)
        for k in keys:
            null[k].append(values[k])
    return p_values_from_null(observed, {k: np.concatenate(v) for k, v in null.items()}, seed)


def p_values_from_null(observed: dict, null: dict, seed: int) -> CalibrationTest:
    """The p-values of ``observed`` errors against their redrawn (null) values.

    Examples
    --------
    >>> test = p_values_from_null({"conf_ece": 0.05}, {"conf_ece": np.array([0.01, 0.07, 0.02])}, 0)
    >>> test.p_values, test.n_resamples
    ({'conf_ece': 0.5}, 3)
    """
    n_resamples = len(next(iter(null.values()))) if null else 0
    p_values = {
        k: float((1 + np.count_nonzero(null[k] >= observed[k])) / (n_resamples + 1))
        if np.isfinite(observed[k])
        else np.nan
        for k in observed
    }
    return CalibrationTest(dict(observed), p_values, int(n_resamples), seed, dict(null))


def _redraw_groups(stats: CalibrationStatistics, n_resamples: int):
    """``range(n_resamples)`` in consecutive groups whose redrawn sums fit the memory cap.

    A KDE problem's redrawn sums hold the cells its points fall in only (positives, and
    all points beside them in :meth:`LabelRedraws.statistics`: 14 moments a cell), not
    every cell of its layout: a group sized by the layouts (4,000 cells a class) ran the
    200 redraws of 10,000 x 100 rows in 19 groups where 2 fit, and each group repeats the
    per-class set-up of the KDE sums.
    """
    occupied = sum(
        int(np.count_nonzero(sums.dense(lay.n_cells)[0, 0]))
        for key, spec in stats.kde_specs.items()
        for lay, sums in zip(spec.layouts, stats.kde[key], strict=True)
    )
    per_redraw = 8 * (
        sum(s.edges.n_cells for s in stats.specs.values()) + 14 * occupied + stats.n_classes
    )
    size = max(1, REDRAW_MEMORY_BYTES // max(per_redraw, 1))
    return [range(a, min(a + size, n_resamples)) for a in range(0, n_resamples, size)]


def tested_statistics(stats: CalibrationStatistics, keys) -> CalibrationStatistics:
    """``stats`` restricted to the cells and KDE problems of the metrics ``keys``."""
    cells = {CELLS_OF_METRIC[k] for k in keys if k in CELLS_OF_METRIC}
    return replace(
        stats,
        specs={c: s for c, s in stats.specs.items() if c in cells},
        cells={c: s for c, s in stats.cells.items() if c in cells},
        kde_specs={k: s for k, s in stats.kde_specs.items() if k in keys},
        kde={k: s for k, s in stats.kde.items() if k in keys},
    )


def _data_statistics(preds, keys, *, bins, binning, weights) -> CalibrationStatistics:
    """The statistics of ``preds`` on the cells and KDE problems of the tested metrics."""
    cells = {CELLS_OF_METRIC[k] for k in keys if k in CELLS_OF_METRIC}
    specs = report_cell_specs(preds, bins=bins, binning=binning, keys=cells, weights=weights)
    kde = report_kde_specs(
        preds,
        confidence="kde_ece" in keys,
        classwise="kde_ece_classwise" in keys,
        weights=weights,
    )
    stats = CalibrationStatistics.empty(preds.class_names, specs, kde)
    stats.update(preds, weights=weights)
    return stats
