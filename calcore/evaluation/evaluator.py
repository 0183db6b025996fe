"""``calcore.evaluate``: every metric of a set of predictions in one report.

The report shares work between metrics: the bins of each view are computed
once and every norm (l1, l2, max) is read off them, and the class-wise ECE,
ACE and TACE come from one sort of the probability columns. Each value equals
the stand-alone metric function of :mod:`calcore.metrics.registry` (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from calcore.evaluation.binary_rows import (
    binary_row_replicates,
    binary_row_values,
    multiclass_note,
    streamed_note,
)
from calcore.evaluation.bootstrap import Interval, check_bootstrap_options
from calcore.evaluation.intervals import (
    DOUBLE_BOOTSTRAP_METHODS,
    check_interval_method,
    interval_bounds,
)
from calcore.evaluation.report_notes import merged_notes
from calcore.evaluation.report_statistics import (
    CELLS_OF_METRIC,
    TACE_THRESHOLD,
    binned_values,
    kde_point_values,
    replicate_values,
    report_cell_specs,
    report_kde_specs,
    scoring_values,
    statistics_bins,
)
from calcore.evaluation.significance import (
    TESTABLE_METRICS,
    CalibrationTest,
    p_values_from_null,
    redrawn_label_test,
    tested_statistics,
)
from calcore.foundation.binning import resolve_binning
from calcore.foundation.deprecation import renamed_attribute, renamed_keywords
from calcore.foundation.errors import CalcoreError, EmptySplitError
from calcore.foundation.limits import N_BOOTSTRAP
from calcore.foundation.threads import side_by_side
from calcore.foundation.tuning import SHARED_COUNTS_VALUES
from calcore.foundation.validation import (
    check_total_weight,
    freeze_fields,
    frozen_array,
    row_weights,
)
from calcore.io.stream import PredictionStream
from calcore.metrics.binary import HL_GROUPS
from calcore.metrics.registry import (
    BIN_FREE_METRICS,
    BINARY_METRICS,
    METRICS,
    adaptive_bins_for,
    metric_keys,
)
from calcore.predictions import Predictions
from calcore.statistics.accumulator import CalibrationStatistics
from calcore.statistics.passes import CellRequest, stream_statistics
from calcore.statistics.replicates import (
    KDE_MAX_WORK,
    KDE_PROBLEMS_PER_BLOCK,
    double_resample_counts,
    jackknife_weights,
    kde_resamples,
    kde_work_per_resample,
    resample_counts,
)

__all__ = ["CalibrationReport", "evaluate", "KDE_CLASSWISE_MAX_CLASSES", "TACE_THRESHOLD"]

#: The metrics read off the NLL and Brier sums (a stream skips them when neither is asked).
PROPER_SCORES = frozenset({"nll", "brier"})

#: Above this many classes ``evaluate`` leaves ``kde_ece_classwise`` out (one KDE per class).
KDE_CLASSWISE_MAX_CLASSES = 100


@dataclass(frozen=True)
class CalibrationReport:
    """Every scalar metric of one set of predictions, with the settings used.

    Attributes
    ----------
    n, n_classes : int
    metrics : dict of str to float or None
        Keyed as :data:`calcore.metrics.registry.METRICS`; ``None`` for a metric that
        was not computed (see ``notes``).
    intervals : dict of str to Interval
        Bootstrap intervals, when ``n_resamples > 0``.
    replicates : dict of str to ndarray
        The bootstrap replicates of each metric with an interval (for other interval
        methods, :func:`calcore.evaluation.intervals.interval_bounds`, or a test).
    jackknife : dict of str to ndarray
        Leave-one-group-out values of each metric (``interval_method="bca"`` only).
    double_replicates : dict of str to ndarray
        Each metric on resamples of the resamples (one per resample), for the metrics
        whose interval is ``"iterated"``.
    calibration_test : CalibrationTest or None
        p-values of "the model is calibrated" per calibration error, with the intervals
        (:func:`calcore.calibration_test`, as many redrawn label sets as resamples).
    bins, binning, seed, n_resamples :
        The settings.
    n_tied_rows : int
        Rows whose argmax was a tie (resolved to the lowest class index).
    notes : tuple of str
        What a reader should know (ties, classes without labels, skipped metrics).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> report = calcore.evaluate(preds, bins=10)
    >>> report.n, report.n_classes, report.accuracy, round(report.top_label_ece, 4)
    (4, 2, 0.75, 0.4)
    >>> report.as_dict()["binning"], report.notes  # 4 rows: a slope fit has no maximum
    ('equal-width', ('calibration_slope is NaN: the outcomes are separated by the scores: ...',))
    """

    n: int
    n_classes: int
    metrics: dict
    bins: int | str
    binning: str
    seed: int
    n_resamples: int = 0
    n_tied_rows: int = 0
    intervals: dict = field(default_factory=dict)
    notes: tuple = ()
    replicates: dict = field(default_factory=dict, repr=False, compare=False)
    jackknife: dict = field(default_factory=dict, repr=False, compare=False)
    calibration_test: CalibrationTest | None = field(default=None, repr=False, compare=False)
    double_replicates: dict = field(default_factory=dict, repr=False, compare=False)

    n_bootstrap = renamed_attribute("n_resamples", "n_bootstrap")

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    def combined_with(self, other: "CalibrationReport") -> "CalibrationReport":
        """One report from two that computed different metrics of the same rows.

        ``evaluate(metrics=...)`` leaves the metrics it was not asked for as None; this
        takes each metric from whichever report computed it (``other`` where both did),
        with the intervals of both. With the same ``seed`` and ``n_resamples`` both drew
        the same resamples, so the result equals one ``evaluate`` of every metric (the
        dashboard caches the metrics that use no bins apart from the binned ones). The
        settings (bins, binning) are this report's; the notes are both reports' as one
        evaluation of all the metrics words them
        (:func:`calcore.evaluation.report_notes.merged_notes`).

        Raises
        ------
        CalcoreError
            The reports are of different rows, classes, seeds or resamples.

        Examples
        --------
        >>> import calcore
        >>> p = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], [0, 1, 1])
        >>> a = calcore.evaluate(p, metrics=["conf_ece"])
        >>> b = calcore.evaluate(p, metrics=["accuracy"])
        >>> both = a.combined_with(b)
        >>> round(both.conf_ece, 4), round(both.accuracy, 4)
        (0.3, 0.6667)
        """
        same = (self.n, self.n_classes, self.seed, self.n_resamples) == (
            other.n,
            other.n_classes,
            other.seed,
            other.n_resamples,
        )
        if not same:
            raise CalcoreError(
                "combined_with needs reports of the same rows, classes, seed and resamples."
            )
        metrics = {
            k: other.metrics[k] if other.metrics.get(k) is not None else v
            for k, v in self.metrics.items()
        }
        return replace(
            self,
            metrics=metrics,
            intervals=self.intervals | other.intervals,
            replicates=self.replicates | other.replicates,
            jackknife=self.jackknife | other.jackknife,
            double_replicates=self.double_replicates | other.double_replicates,
            calibration_test=CalibrationTest.combine(self.calibration_test, other.calibration_test),
            notes=merged_notes(self.notes + other.notes),
        )

    def as_dict(self) -> dict:
        """JSON-ready dict with the keys of ``calcore metrics --json``.

        ``n_resamples`` is under its published key ``"n_bootstrap"`` (schema_version 1):
        pipelines read it by that name.
        """
        out = {"n": self.n, "n_classes": self.n_classes}
        out.update({k: _json_number(v) for k, v in self.metrics.items()})
        out.update(
            {
                "bins": _plain(self.bins),
                "binning": self.binning,
                "seed": _plain(self.seed),
                "n_bootstrap": _plain(self.n_resamples),  # the --json key (schema_version 1)
                "n_tied_rows": self.n_tied_rows,
            }
        )
        if self.intervals:
            out["intervals"] = {
                k: {
                    "low": _json_number(iv.low),
                    "high": _json_number(iv.high),
                    "confidence_level": iv.confidence_level,
                    "method": iv.method,
                    **({"caveat": iv.caveat} if iv.caveat else {}),
                }
                for k, iv in self.intervals.items()
            }
        if self.calibration_test is not None:
            out["calibration_test"] = self.calibration_test.as_dict()
        out["notes"] = list(self.notes)
        return out


def _metric_property(key: str) -> property:
    """``report.<key>``: ``report.metrics[key]``; AttributeError when the report has no
    such metric (e.g. ``kde_ece_classwise`` above :data:`KDE_CLASSWISE_MAX_CLASSES`)."""

    def value(report):
        try:
            return report.metrics[key]
        except KeyError:
            raise AttributeError(f"this report has no metric {key!r}") from None

    return property(value, doc=f"``metrics[{key!r}]``: {METRICS[key].label}.")


# One property per metric of the registry (report.top_label_ece...), declared on the
# class from the registry itself, so that a new metric cannot lack its property.
for _key in METRICS:
    setattr(CalibrationReport, _key, _metric_property(_key))
del _key


def _json_number(value):
    """A float for JSON, or None for a missing or non-finite value (strict JSON has no NaN)."""
    return None if value is None or not math.isfinite(value) else float(value)


def _plain(value):
    """numpy integers (accepted as settings) as Python ints, so that json.dumps takes them."""
    return int(value) if isinstance(value, np.integer) else value


def _point_metrics(
    preds: Predictions,
    *,
    bins,
    binning,
    with_kde_classwise: bool,
    wanted=frozenset(METRICS),
    weights=None,
):
    """Every wanted metric of ``preds`` and the statistics they came from.

    One :class:`CalibrationStatistics` pass over the cells and KDE problems of the wanted
    metrics only (the conf-ECE alone needs no class-wise sort); the others are None.
    """
    enough = preds.n_samples >= 2
    want_kde = enough and "kde_ece" in wanted
    want_kde_cw = enough and with_kde_classwise and "kde_ece_classwise" in wanted
    keys = {CELLS_OF_METRIC[k] for k in wanted if k in CELLS_OF_METRIC}

    def kde_specs_of():
        return report_kde_specs(preds, confidence=want_kde, classwise=want_kde_cw, weights=weights)

    def cell_specs_of():
        if not keys:
            return {}
        return report_cell_specs(preds, bins=bins, binning=binning, keys=keys, weights=weights)

    # bandwidths and bins side by side: both read every row before the sums can start
    # (10M binary rows: 0.08 s and 0.12 s); the argmax they share is computed first
    _ = preds.confidence
    specs, kde_specs = side_by_side([cell_specs_of, kde_specs_of], preds.probs.size)
    proper = bool({"nll", "brier"} & wanted)
    stats = CalibrationStatistics.empty(preds.class_names, specs, kde_specs, proper_scores=proper)
    stats.update(preds, weights=weights)
    m = scoring_values(stats) | binned_values(stats) | kde_point_values(stats)
    # every key, in the order of METRICS (tests/evaluation/test_evaluator.py); None where not wanted
    m = {k: (m.get(k) if k in wanted else None) for k in METRICS}
    return m, stats


def bootstrap_replicates(
    preds: Predictions,
    stats: CalibrationStatistics,
    counts: np.ndarray,
    *,
    kde_max_work: int,
    weights=None,
    row_keys=(),
    on_kde=None,
):
    """Every metric of ``stats`` for each resample (row counts ``counts``, shape (R, n)):
    ``(replicates, used)`` of :func:`bootstrap_and_double_replicates` without a second
    level."""
    reps, used, _ = bootstrap_and_double_replicates(
        preds, stats, counts, kde_max_work=kde_max_work, weights=weights,
        row_keys=row_keys, on_kde=on_kde,
    )  # fmt: skip
    return reps, used


def bootstrap_and_double_replicates(
    preds: Predictions,
    stats: CalibrationStatistics,
    counts: np.ndarray,
    *,
    kde_max_work: int,
    weights=None,
    row_keys=(),
    on_kde=None,
    double_counts=None,
):
    """Every metric of ``stats`` for each resample (row counts ``counts``, shape (R, n)),
    and the binned metrics of each resample of a resample (``double_counts``, optional).

    The replicate statistics are the same sums as the point estimate's, weighted by the
    counts (times the row weights), on the same cells and KDE bandwidths; the binary
    measures of the rows (``row_keys``: slope, intercept, Spiegelhalter's Z) are refitted
    with those weights (:func:`~calcore.evaluation.binary_rows.binary_row_replicates`). The KDE-ECEs
    get the first ``r`` resamples only when their kernel moments would cost more than
    ``kde_max_work`` (14 weighted sums per point, per problem and per resample).
    ``on_kde(done, total)``, if given, is called with ``done = 0`` once the other
    replicates are in, then after each block of KDE problems (counted over every KDE spec).

    The second level (the resamples of each resample of the iterated bias correction, on
    the full sample's cells; no KDE or scoring sums: only the binned calibration errors
    take that interval) is summed in the same pass as the first, as more columns of the
    same products: the cells of every point and
    the sparse matrix of the points are built once for both (the binned errors of 10,000 x
    100 rows: 0.14 + 0.14 CPU-s as two passes, 0.19 as one). Each replicate's sums are
    the same terms in the same order either way.

    Returns
    -------
    (dict of str to ndarray, dict of str to int, dict of str to ndarray)
        Replicates per metric key, the number of resamples each used, and the binned
        metrics' second-level replicates (empty without ``double_counts``).
    """
    n_resamples = counts.shape[0]
    w = counts if weights is None else counts * weights
    stacked = w
    if double_counts is not None:
        second = double_counts if weights is None else double_counts * weights
        stacked = np.concatenate((w, second))
    boot = CalibrationStatistics.empty(
        stats.class_names,
        stats.specs,
        {},
        replicates=stacked.shape[0],
        proper_scores=stats.proper_scores,
    )
    boot.update(preds, weights=stacked)
    values = replicate_values(boot)  # every replicate of each metric in one expression
    reps = {k: v[:n_resamples] for k, v in values.items()}
    double = {}
    if double_counts is not None:
        double = {k: values[k][n_resamples:] for k in _double_keys(stats)}
    reps |= binary_row_replicates(preds, w, row_keys)
    used = dict.fromkeys(reps, n_resamples)
    problems = sum(len(spec.layouts) for spec in stats.kde_specs.values())
    done = 0
    if on_kde is not None and problems:
        on_kde(0, problems)  # the cells' and scores' replicates are in
    for key, spec in stats.kde_specs.items():
        work = kde_work_per_resample(spec, preds.n_samples)
        r = kde_resamples(work, n_resamples, kde_max_work)
        # a row's r weights adjacent once here, not copied so by every problem's product
        wr = np.ascontiguousarray(w[:r].T).T
        per_problem = []
        for kboot in _kde_blocks(preds, stats.class_names, key, spec, wr):
            per_problem.append(np.atleast_2d(kboot.kde_ece(key)))
            if on_kde is not None:
                done += per_problem[-1].shape[-1]
                on_kde(min(done, problems), problems)
        reps[key] = np.concatenate(per_problem, axis=-1).mean(axis=-1)
        used[key] = r
    return reps, used, double


def _kde_blocks(preds, class_names, key, spec, w):
    """The replicate sums of a KDE spec's problems, a block of problems at a time.

    Each problem's replicate sums hold ``R x 14`` moments per occupied cell (about 5 MB a
    class at R = 200 on 10,000 rows); all 100 classes at once held 470 MB. A block of
    :data:`~calcore.statistics.replicates.KDE_PROBLEMS_PER_BLOCK` problems is summed,
    evaluated and released before the next (each problem's sums are the same whatever
    the block, so the values do not depend on it).
    """
    classes = np.arange(len(spec.layouts)) if spec.classes is None else spec.classes
    size = KDE_PROBLEMS_PER_BLOCK
    for a in range(0, len(spec.layouts), size):
        part = replace(spec, layouts=spec.layouts[a : a + size], classes=classes[a : a + size])
        if spec.reduction == "confidence":
            part = spec
        kboot = CalibrationStatistics.empty(class_names, {}, {key: part}, replicates=w.shape[0])
        kboot.update(preds, weights=w)
        yield kboot


def _double_keys(stats: CalibrationStatistics) -> list[str]:
    """The metrics whose cells ``stats`` keeps (those a double bootstrap can give)."""
    return [
        k
        for k, spec in METRICS.items()
        if spec.cells is not None
        and spec.cells in stats.specs
        and (len(stats.class_names) == 2 or not spec.binary_only)
    ]


def needs_double_bootstrap(keys, method: str | None) -> bool:
    """Whether the intervals of ``keys`` by ``method`` (None: each metric's own) read a
    double bootstrap."""
    return any((method or METRICS[k].interval_method) in DOUBLE_BOOTSTRAP_METHODS for k in keys)


# The row counts of the last resamples drawn are kept for the next ``evaluate`` of as
# many rows with the same seed, up to SHARED_COUNTS_VALUES per level (calcore.foundation.tuning).
_last_counts: dict = {}


def _shared_counts(n: int, n_resamples: int, seed, *, double: bool = False) -> np.ndarray:
    """:func:`resample_counts` (``double``: :func:`double_resample_counts` of them) of ``n``
    rows, drawn once for consecutive evaluations of as many rows with the same seed.

    The arrays are read-only: every evaluation shares them. A seed that is not an integer
    (a generator, None) is never reused.
    """
    reusable = isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
    reusable = reusable and n * n_resamples <= SHARED_COUNTS_VALUES
    key = (int(n), int(n_resamples), int(seed)) if reusable else None
    kept = _last_counts.get(key) if reusable else None
    if kept is None:
        kept = {"first": frozen_array(resample_counts(n, n_resamples, seed), owned=True)}
    if double and "double" not in kept:
        double_counts = double_resample_counts(kept["first"], seed)
        kept = kept | {"double": frozen_array(double_counts, owned=True)}
    if reusable:
        _last_counts.clear()  # one draw kept at a time
        _last_counts[key] = kept
    return kept["double" if double else "first"]


#: The metrics on equal-mass cells of their own (whatever the binning asked for).
_ADAPTIVE_KEYS = frozenset(k for k, spec in METRICS.items() if spec.cells in ("ace", "tace"))


def _fast_intervals(
    preds: Predictions,
    metrics: dict,
    stats: CalibrationStatistics,
    *,
    n_resamples: int,
    confidence_level: float,
    seed,
    binning: str,
    bins,
    kde_max_work: int,
    weights=None,
    method: str | None = None,
    progress=None,
) -> tuple[dict[str, Interval], list[str], dict, dict]:
    """Intervals of every computed metric from one set of count vectors.

    The resamples are multinomial row counts (:func:`resample_counts`, the draws of
    :func:`scipy.stats.bootstrap`); every metric's replicates come from the statistics
    engine with the counts as weights (:func:`bootstrap_replicates`); bins and KDE
    bandwidths are the full sample's. ``"bca"`` adds a grouped jackknife through the
    same engine (:func:`jackknife_weights`), ``"iterated"`` a resample of each resample
    (:func:`bootstrap_and_double_replicates`).

    Returns
    -------
    (intervals, notes, replicates, jackknife, double replicates)
    """
    # p-values get no interval (MetricSpec.p_value): their statistics have one
    keys = [k for k, v in metrics.items() if v is not None and not METRICS[k].p_value]
    notes = []
    if preds.n_samples < 2:
        notes.append("Bootstrap intervals are undefined with fewer than 2 rows (NaN).")
        nan = {
            k: Interval(
                float(metrics[k]),
                np.nan,
                np.nan,
                confidence_level,
                0,
                method or METRICS[k].interval_method,
            )
            for k in keys
        }
        return nan, notes, {}, {}, {}
    counts = _shared_counts(preds.n_samples, int(n_resamples), seed)
    twice = None
    if needs_double_bootstrap(keys, method):
        twice = _shared_counts(preds.n_samples, int(n_resamples), seed, double=True)
    on_kde = None if progress is None else (lambda d, t: progress.at(0, 0.5 + 0.5 * d / t))
    reps, used, double = bootstrap_and_double_replicates(
        preds, stats, counts, kde_max_work=kde_max_work, weights=weights, row_keys=keys,
        on_kde=on_kde, double_counts=twice,
    )  # fmt: skip
    if progress is not None:
        progress.at(2 if twice is not None else 1)
    jack = {}
    if method == "bca":
        groups = jackknife_weights(preds.n_samples, seed)
        jack, _ = bootstrap_replicates(
            preds, stats, groups, kde_max_work=kde_max_work, weights=weights, row_keys=keys
        )
    for key, spec in stats.kde_specs.items():
        if used[key] < n_resamples:
            notes.append(
                f"The {key} interval uses the first {used[key]} of the {n_resamples} resamples "
                f"(its kernel moments cost {kde_work_per_resample(spec, preds.n_samples):,} "
                f"multiply-adds per resample, capped at {kde_max_work:,} in all)."
            )
    # One note per kind of conditioning, so reports of disjoint metric sets (evaluate's
    # metrics=) carry disjoint notes, and a report of ACE/TACE alone says nothing of the
    # other metrics' binning (the page caches it across binnings of the same count).
    if any(k not in BIN_FREE_METRICS and k not in _ADAPTIVE_KEYS for k in keys):
        data_dependent = binning != "equal-width" or isinstance(bins, str)
        notes.append(
            "Bootstrap intervals keep the full sample's bins"
            + (
                f" ({binning}, bins={bins!r}, data-dependent: a conditional bootstrap), so "
                "they leave out the variability of the bin edges."
                if data_dependent
                else "."
            )
        )
    if _ADAPTIVE_KEYS & set(keys):
        notes.append(
            "The ACE/TACE intervals keep the full sample's equal-mass bins (a conditional "
            "bootstrap), so they leave out the variability of the bin edges."
        )
    if stats.kde_specs:
        notes.append(
            "The KDE-ECE intervals keep the full sample's bandwidth, so they leave out its "
            "variability."
        )
    notes += _deciles_note(keys)
    reps = {k: reps[k] for k in keys}
    jack = {k: jack[k] for k in keys if k in jack}
    double = {k: double[k] for k in keys if k in double}
    intervals = _intervals_from(metrics, reps, used, confidence_level, method, jack, double)
    intervals, sparse = _with_sparse_cell_caveats(intervals, stats)
    notes += _interval_notes(keys, method) + sparse
    return intervals, notes, reps, jack, double


def _deciles_note(keys) -> list[str]:
    """The conditioning of the intervals read off the deciles of risk (O/E, HL)."""
    if not any(METRICS[k].cells == "deciles" for k in keys):
        return []
    return [
        "The O/E and Hosmer-Lemeshow intervals keep the full sample's deciles of risk, so they "
        "leave out the variability of the group edges."
    ]


def _intervals_from(
    estimates, reps, used, level, method, jackknife, double=None
) -> dict[str, Interval]:
    """One :class:`Interval` per metric with replicates, read off them by ``method``.

    ``method=None``: each metric's ``interval_method`` from :data:`METRICS`, extended to
    contain the estimate (a bias-corrected interval of an ECE can end below it).
    """
    out = {}
    for k, values in reps.items():
        # an infinite replicate (an HL group whose certain prediction failed in a resample)
        # leaves the interval undefined, as a NaN one (a slope fit without a maximum) does
        values = np.where(np.isinf(values), np.nan, values)
        chosen = method or METRICS[k].interval_method
        if chosen in DOUBLE_BOOTSTRAP_METHODS and k not in (double or {}):
            chosen = "normal"  # no binned cells (scoring, KDE): the once-corrected interval
        # Clipped to the metric's range: the replicates are sums over resample weights and
        # can step outside it by an ulp (a TL-ECE of 1 + 2e-16), a reflected bound by more.
        low, high = interval_bounds(
            estimates[k],
            values,
            method=chosen,
            confidence_level=level,
            jackknife=jackknife.get(k),
            double_replicates=(double or {}).get(k),
            bounds=METRICS[k].bounds,
            contain_estimate=method is None,
        )
        out[k] = Interval(float(estimates[k]), low, high, level, used[k], chosen)
    return out


def _interval_notes(keys, method) -> list[str]:
    """What the intervals of ``keys`` cover, and the caveats of those that do not."""
    if method is not None:
        return [f"Intervals: {method} bootstrap intervals (interval_method={method!r})."]
    corrected = [
        METRICS[k].label for k in keys if METRICS[k].interval_method in ("normal", "iterated")
    ]
    notes = []
    if corrected:
        notes.append(
            "Intervals of the calibration errors ("
            + ", ".join(corrected)
            + ") are bias-corrected: these estimators read high on finite samples, so each "
            "interval spans the estimate minus the bias its resamples show and that bias "
            "corrected again by resamples of the resamples, plus the resamples' spread, and is "
            "extended to the estimate when it ends below it. In simulation (miscalibrated "
            "models of 2 to 10 classes, 500 to 50,000 rows) 95% intervals contained the true "
            "error in about 90% of samples on average and at least 80% in every setting of "
            "1,000 rows or more, against 58% for percentile intervals of the TL- and CW-ECE "
            "(docs/replications/intervals.md). For a calibrated model (true error 0) read the "
            "calibration test instead."
        )
    caveats = dict.fromkeys(METRICS[k].interval_caveat for k in keys)
    notes.extend(c for c in caveats if c)
    return notes


def _calibration_test(
    preds, values, stats, *, n_resamples, seed, kde_max_work, weights
) -> tuple[CalibrationTest | None, list[str]]:
    """The calibration test of every computed calibration error, the KDE-ECEs within the
    same work cap as their bootstrap (each redrawn label set costs one KDE per problem)."""
    keys, notes = [], []
    for k in TESTABLE_METRICS:
        if values.get(k) is None:
            continue
        if k in stats.kde_specs:
            work = kde_work_per_resample(stats.kde_specs[k], preds.n_samples) * n_resamples
            if work > kde_max_work:
                notes.append(
                    f"{k} is left out of the calibration test (its KDEs would cost "
                    f"{work:,} multiply-adds, over kde_max_work={kde_max_work:,})."
                )
                continue
        keys.append(k)
    if not keys:
        return None, notes
    # The report's own cells, bandwidths, sums and values: only the labels are redrawn.
    observed = {k: values[k] for k in keys}
    test = redrawn_label_test(
        preds,
        tested_statistics(stats, keys),
        observed,
        n_resamples=n_resamples,
        seed=seed,
        weights=weights,
    )
    notes.append(_TEST_NOTE.format(n=n_resamples))
    return test, notes


_TEST_NOTE = (
    "Calibration test: each p-value is the share of {n} label sets redrawn from the "
    "predicted probabilities (what a calibrated model would produce) whose error is at least "
    "the observed one; a small p-value is evidence of miscalibration."
)


#: Rows per non-empty (class, bin) cell below which the TL- and CW-ECE intervals are not
#: read as ranges for the truth: in the coverage study (docs/replications/intervals.md)
#: the default TL-ECE intervals contained the true error in 60-90% of samples at 5-6 rows
#: a cell (10 classes x 500 rows), 0-17% at 1.6-2.8 (100 classes x 1,000), and 90-97% at
#: 9-11 (10 classes x 1,000 rows).
SPARSE_CELL_ROWS = 8


def _with_sparse_cell_caveats(intervals: dict, stats: CalibrationStatistics):
    """``intervals`` with a caveat on each cell-based one whose cells hold too few rows
    for its bias correction (:data:`SPARSE_CELL_ROWS`), and the notes that say so."""
    out, notes = dict(intervals), []
    for key, cells in (("top_label_ece", "top"), ("classwise_ece", "cw")):
        if key not in intervals or cells not in stats.specs:
            continue
        bins = statistics_bins(stats, cells)
        count = np.asarray(bins.count, dtype=float)
        if cells == "cw":
            # Every row is in every class: each class's lowest bin holds most rows (p near
            # 0, gap near 0) and would hide the sparse upper bins, where the gaps are (100
            # classes x 1,000 rows: 91 rows a cell, 2 above the lowest; coverage 0).
            count = count[bins.bin_index > 0]
        occupied = count[count > 0]
        if occupied.size and occupied.mean() < SPARSE_CELL_ROWS:
            where = "above each class's lowest bin " if cells == "cw" else ""
            caveat = (
                f"its (class, bin) cells {where}hold {occupied.mean():.1f} rows on average "
                f"(fewer than {SPARSE_CELL_ROWS}), too few for its bias correction (in the "
                "coverage study such intervals missed the true error in 10% to 100% of "
                "samples). Read it as the estimator's spread; use fewer bins or more rows for "
                "a range of the truth."
            )
            out[key] = replace(intervals[key], caveat=caveat)
            notes.append(f"The {METRICS[key].label} interval is not shown as a range: {caveat}")
    return out, notes


def _data_notes(n_tied_rows, normalized, label_weight, class_names) -> list[str]:
    """What a reader should know about the rows themselves (ties, normalisation, classes)."""
    notes = []
    if n_tied_rows:
        notes.append(
            f"{n_tied_rows} row(s) have a tied top probability; the lowest class index "
            "was taken as the prediction."
        )
    if not normalized:
        notes.append(
            "Rows are not normalised (an unnormalised calibrator's output): each entry is a "
            "class-wise probability, so NLL and Brier are not proper scores of a distribution here."
        )
    absent = [class_names[c] for c in np.flatnonzero(np.asarray(label_weight) == 0)]
    if absent:
        shown = ", ".join(repr(a) for a in absent[:10]) + (" ..." if len(absent) > 10 else "")
        notes.append(f"{len(absent)} class(es) never occur as a label: {shown}.")
    return notes


def stream_requests(*, bins, binning, wanted, n_classes) -> tuple[dict, tuple]:
    """The cell requests and KDE problems of the ``wanted`` metrics on a stream."""
    scheme = resolve_binning(binning, bins)
    adaptive = resolve_binning("equal-mass", adaptive_bins_for(binning, bins))
    every = {
        "conf": CellRequest("confidence", scheme),
        "top": CellRequest("top-label", scheme),
        "cw": CellRequest("class-wise", scheme),
        "ace": CellRequest("class-wise", adaptive),
        "tace": CellRequest("class-wise", adaptive, TACE_THRESHOLD),
        "deciles": CellRequest("class-wise", resolve_binning("equal-mass", HL_GROUPS)),
    }
    wanted = applicable(wanted, n_classes)
    keys = {CELLS_OF_METRIC[k] for k in wanted if k in CELLS_OF_METRIC}
    kde = tuple(
        k
        for k in ("kde_ece", "kde_ece_classwise")
        if k in wanted and (k == "kde_ece" or n_classes <= KDE_CLASSWISE_MAX_CLASSES)
    )
    return {k: v for k, v in every.items() if k in keys}, kde


def applicable(wanted, n_classes: int) -> frozenset:
    """The ``wanted`` metrics that apply to predictions of ``n_classes`` classes (the binary
    measures only to two)."""
    return frozenset(wanted) if n_classes == 2 else frozenset(wanted) - set(BINARY_METRICS)


def streamed_report(
    passes,
    *,
    wanted,
    kde,
    bins,
    binning,
    seed,
    n_resamples,
    confidence_level,
    interval_method,
    tested=(),
) -> CalibrationReport:
    """The report of statistics accumulated on a stream (:class:`StreamedStatistics`):
    the in-memory formulas, Poisson bootstrap intervals, the test of the ``tested``
    metrics from the redrawn statistics."""
    stats, boot = passes.statistics, passes.bootstrap
    names = stats.class_names
    n_classes = len(names)
    values = scoring_values(stats) | binned_values(stats)
    if stats.n_rows >= 2:
        values |= kde_point_values(stats)
    m = {k: (values.get(k) if k in wanted else None) for k in METRICS}
    notes = _data_notes(stats.n_tied_rows, stats.normalized, stats.label_weight, names)
    notes += multiclass_note(n_classes, wanted) + streamed_note(n_classes, wanted)
    if "kde_ece_classwise" in wanted and "kde_ece_classwise" not in kde:
        notes.append(
            f"kde_ece_classwise was not computed: {n_classes} classes > "
            f"{KDE_CLASSWISE_MAX_CLASSES} (one KDE per class)."
        )
    intervals, reps, double = {}, {}, {}
    if boot is not None:
        reps = replicate_values(
            boot, [k for k, v in m.items() if v is not None and not METRICS[k].p_value]
        )
        used = dict.fromkeys(reps, boot.n_replicates)
        if passes.double_bootstrap is not None:
            twice = passes.double_bootstrap
            double = replicate_values(twice, [k for k in _double_keys(twice) if k in reps])
        intervals = _intervals_from(m, reps, used, confidence_level, interval_method, {}, double)
        intervals, sparse = _with_sparse_cell_caveats(intervals, stats)
        notes.extend(_interval_notes(list(reps), interval_method))
        notes.extend(sparse + _deciles_note(list(reps)))
        notes.append(
            f"Intervals: Poisson bootstrap, {n_resamples} replicates (each row weighted "
            "Poisson(1) by a generator keyed by its position, so any batching gives the same "
            "intervals); bins and KDE bandwidths stay those of the full data, so the intervals "
            "leave out their variability."
        )
    test = None
    if passes.redrawn is not None and stats.n_rows >= 2:
        observed = {k: m[k] for k in tested if m.get(k) is not None}
        test = p_values_from_null(observed, replicate_values(passes.redrawn, observed), seed)
        notes.append(_TEST_NOTE.format(n=passes.redrawn.n_replicates))
    elif tested and not stats.normalized:
        notes.append("No calibration test: some rows do not sum to 1, so no label can be drawn.")
    return CalibrationReport(
        stats.n_rows,
        n_classes,
        m,
        bins,
        binning,
        seed,
        int(n_resamples),
        stats.n_tied_rows,
        intervals,
        tuple(notes),
        replicates=reps,
        calibration_test=test,
        double_replicates=double,
    )


def _evaluate_stream(
    stream,
    *,
    bins,
    binning,
    seed,
    n_resamples,
    confidence_level,
    metrics,
    interval_method,
    test_calibration,
) -> CalibrationReport:
    """:func:`evaluate` of a :class:`~calcore.io.stream.PredictionStream`: the passes of
    :func:`calcore.statistics.passes.stream_statistics`, then the same formulas."""
    wanted = frozenset(METRICS) if metrics is None else frozenset(metric_keys(metrics))
    requests, kde = stream_requests(
        bins=bins, binning=binning, wanted=wanted, n_classes=len(stream.class_names)
    )
    boot = (int(n_resamples), seed) if n_resamples else None
    tested = [k for k in TESTABLE_METRICS if k in wanted] if test_calibration else []
    redraws = (int(n_resamples), seed) if n_resamples and tested else None
    passes = stream_statistics(
        stream,
        requests=requests,
        kde=kde,
        bootstrap=boot,
        redraws=redraws,
        double_bootstrap=bool(n_resamples) and needs_double_bootstrap(wanted, interval_method),
        proper_scores=bool(PROPER_SCORES & wanted),
    )
    stats = passes.statistics
    if stats.n_rows == 0 or stats.weight == 0:
        message = (
            f"{stream.name}: no rows"
            + (f" in split {stream.split!r}" if stream.split else "")
            + (" with a positive weight" if stats.n_rows else "")
            + ". Nothing to evaluate."
        )
        if stream.split and not stats.n_rows:
            raise EmptySplitError(
                message, source=stream.name, split=stream.split, column=stream.roles.split
            )
        raise CalcoreError(message)
    check_total_weight(float(stats.weight), source=stream.name)
    return streamed_report(
        passes,
        wanted=wanted,
        kde=kde,
        bins=bins,
        binning=binning,
        seed=seed,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        interval_method=interval_method,
        tested=tested if redraws is not None else (),
    )


class _Progress:
    """``evaluate``'s ``progress(done, total)``, counted in resamples over its passes."""

    def __init__(self, fn, n_resamples: int, passes: int) -> None:
        self.fn, self.n, self.total, self.done = fn, n_resamples, n_resamples * passes, 0
        fn(0, self.total)

    def at(self, finished_passes: int, fraction: float = 0.0) -> None:
        """``finished_passes`` whole passes done and ``fraction`` of the next."""
        done = min(int(self.n * (finished_passes + fraction)), self.total)
        if done > self.done:
            self.done = done
            self.fn(done, self.total)

    def finish(self) -> None:
        if self.done < self.total:
            self.done = self.total
            self.fn(self.total, self.total)


@renamed_keywords(n_bootstrap="n_resamples")
def evaluate(
    preds: Predictions,
    *,
    bins=15,
    binning: str = "equal-width",
    seed: int = 0,
    n_resamples: int = 0,
    confidence_level: float = 0.95,
    kde_classwise_max_classes: int = KDE_CLASSWISE_MAX_CLASSES,
    kde_max_work: int = KDE_MAX_WORK,
    metrics=None,
    sample_weight=None,
    interval_method: str | None = None,
    test_calibration: bool = True,
    progress=None,
) -> CalibrationReport:
    """Compute every registered metric of ``preds`` (or the ones named in ``metrics``).

    Parameters
    ----------
    preds : Predictions
    bins : int or str, default 15
    binning : str, default "equal-width"
        Binning of the binned metrics (see :mod:`calcore.foundation.binning`). ACE and
        TACE always use equal-mass bins, as many as
        :func:`calcore.metrics.registry.adaptive_bins_for` says; TACE keeps scores ``>= 1e-3``.
    seed : int, default 0
        Seeds the bootstrap.
    n_resamples : int, default 0
        Bootstrap resamples for intervals on every metric; 0 for none (SciPy's name, as
        in :func:`scipy.stats.bootstrap`; ``n_bootstrap``, its name until 0.1, still
        works for one release, with a DeprecationWarning).
    confidence_level : float, default 0.95
    interval_method : {None, "percentile", "basic", "normal", "bc", "bca", "iterated"}, \
default None
        How the bounds are read off the replicates
        (:func:`calcore.evaluation.intervals.interval_bounds`). None: each metric's
        ``interval_method`` in :data:`calcore.METRICS`, the one that covered the true value
        best in the coverage study (``docs/replications/intervals.md``): percentile for
        accuracy, NLL, Brier and the KDE-ECE, the iterated bias correction for the binned
        calibration errors, extended to contain the estimate. A method named here applies
        to every metric as is. ``"bca"`` needs in-memory predictions (its grouped
        jackknife costs 20 more replicates); ``"iterated"`` costs a second set of binned
        replicates (a resample of each resample); the metrics without bins (accuracy, NLL,
        Brier, the KDE-ECEs) then get ``"normal"``. The replicates are kept in the report
        whatever the method.
    test_calibration : bool, default True
        With ``n_resamples > 0``, also run :func:`calcore.calibration_test` on every
        computed calibration error (as many redrawn label sets as resamples, same seed):
        ``report.calibration_test``. On a stream the labels are redrawn in the same pass
        as the bootstrap, keyed by row position, so the p-values equal those of the same
        rows in memory.
    kde_classwise_max_classes : int, default 100
        ``kde_ece_classwise`` costs one KDE per class; above this many classes
        it is left out (``None``, with a note). Raise it to force it.
    sample_weight : array_like of shape (n,), optional
        Row weights (frequency weights: an integer weight equals that many copies of the
        row, exactly; a weight of 0 leaves the row out). Non-negative, finite, not all
        zero. Not yet with ``n_resamples``.
    metrics : iterable of str, optional
        Keys of :data:`calcore.METRICS` to report; the others are ``None`` and get no
        interval (no note). E.g. :data:`calcore.BIN_FREE_METRICS` once, and the others per
        binning: on 10,000 x 100 predictions the class-wise KDE is three quarters of the
        time.
    progress : callable, optional
        With ``n_resamples`` on in-memory predictions, called as ``progress(done, total)``
        while the resamples are used (for a progress line): ``total`` is ``n_resamples``
        times the resampling passes (the bootstrap, its resample of each resample when an
        interval reads one, the calibration test's redrawn labels); ``done`` never
        decreases, from ``(0, total)`` to ``(total, total)``. Within the bootstrap pass it
        reaches half the pass once the binned and scoring replicates are summed, then
        advances with each block of KDE problems. The report is the same with or without.

    Returns
    -------
    CalibrationReport

    Raises
    ------
    CalcoreError
        Invalid binning or bootstrap settings.

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], [0, 1, 1])
    >>> report = calcore.evaluate(preds, bins=5)
    >>> report.accuracy
    0.6666666666666666
    """
    if not isinstance(preds, (Predictions, PredictionStream)):
        raise CalcoreError(
            f"evaluate expects a calcore.Predictions or a stream from calcore.scan; got "
            f"{type(preds).__name__}. Build one with Predictions.from_probs, from_logits, "
            "load_predictions or scan."
        )
    resolve_binning(binning, bins)
    N_BOOTSTRAP.check(n_resamples, "n_resamples")
    if n_resamples:
        check_bootstrap_options(n_resamples, confidence_level)
    if interval_method is not None:
        check_interval_method(interval_method)
    if isinstance(preds, PredictionStream):
        if interval_method == "bca" and n_resamples:
            raise CalcoreError(
                "interval_method='bca' needs in-memory predictions (its jackknife leaves out "
                "groups of rows); streams give 'percentile', 'basic' or 'bc' intervals."
            )
        return _evaluate_stream(
            preds,
            bins=bins,
            binning=binning,
            seed=seed,
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            metrics=metrics,
            interval_method=interval_method,
            test_calibration=test_calibration,
        )
    wanted = frozenset(METRICS) if metrics is None else frozenset(metric_keys(metrics))
    weights = row_weights(preds, sample_weight)
    with_kde_cw = preds.n_classes <= kde_classwise_max_classes
    values, stats = _point_metrics(
        preds,
        bins=bins,
        binning=binning,
        with_kde_classwise=with_kde_cw,
        wanted=applicable(wanted, preds.n_classes),
        weights=weights,
    )
    rows, fit_notes = binary_row_values(preds, weights=weights, wanted=wanted)
    values |= rows
    notes = _data_notes(stats.n_tied_rows, stats.normalized, stats.label_weight, preds.class_names)
    notes += multiclass_note(preds.n_classes, wanted) + fit_notes
    if not with_kde_cw and "kde_ece_classwise" in wanted:
        notes.append(
            f"kde_ece_classwise was not computed: {preds.n_classes} classes > "
            f"{kde_classwise_max_classes} (one KDE per class); use calcore.kde_ece_classwise "
            "or raise kde_classwise_max_classes."
        )
    intervals: dict[str, Interval] = {}
    reps, jack = {}, {}
    double = {}
    tests = bool(test_calibration and n_resamples and preds.n_samples >= 2 and preds.normalized)
    tally = None
    if progress is not None and n_resamples:
        keys = [k for k, v in values.items() if v is not None and not METRICS[k].p_value]
        passes = 1 + needs_double_bootstrap(keys, interval_method) + tests
        tally = _Progress(progress, int(n_resamples), passes)
    if n_resamples:
        intervals, boot_notes, reps, jack, double = _fast_intervals(
            preds,
            values,
            stats,
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            seed=seed,
            binning=binning,
            bins=bins,
            kde_max_work=kde_max_work,
            weights=weights,
            method=interval_method,
            progress=tally,
        )
        notes.extend(boot_notes)
    test = None
    if tests:
        test, test_notes = _calibration_test(
            preds,
            values,
            stats,
            n_resamples=n_resamples,
            seed=seed,
            kde_max_work=kde_max_work,
            weights=weights,
        )
        notes.extend(test_notes)
    if tally is not None:
        tally.finish()
    return CalibrationReport(
        preds.n_samples,
        preds.n_classes,
        values,
        bins,
        binning,
        seed,
        n_resamples,
        preds.n_tied_rows,
        intervals,
        tuple(notes),
        replicates=reps,
        jackknife=jack,
        calibration_test=test,
        double_replicates=double,
    )
