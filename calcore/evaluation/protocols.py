"""Fit on a calibration split, evaluate on a test split: comparisons of calibrators,
learning curves and validity curves over calibration/test resamples.

Every function takes calibrators by short name (``"ts"``), as ``(name, params)``
pairs, or as unfitted :class:`~calcore.calibrators.Calibrator` instances, and is
deterministic for a given ``seed``.
"""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from calcore.calibrators import Calibrator, make_calibrator
from calcore.diagnostics.validity import ValidityCurve, validity_curves_once
from calcore.evaluation.bootstrap import Interval
from calcore.evaluation.evaluator import evaluate
from calcore.foundation.deprecation import renamed_function, renamed_keywords
from calcore.foundation.errors import CalcoreError, CalcoreWarning
from calcore.foundation.limits import N_REPEATS, N_RESAMPLES
from calcore.foundation.validation import freeze_fields, refuse_weights
from calcore.metrics.registry import METRICS, compute_metric
from calcore.predictions import Predictions, concat
from calcore.predictions.reductions import binary_view
from calcore.statistics.scoring import calibration_gain

__all__ = [
    "UNCALIBRATED",
    "Comparison",
    "compare",
    "LearningCurve",
    "learning_curve",
    "calibrator_validity",
    "concatenate",
    "random_split",
]

#: Row name of the input predictions in a comparison.
UNCALIBRATED = "uncalibrated"


def _calibrator(spec) -> tuple[str, Calibrator]:
    """A fresh unfitted calibrator and its display name from a name, (name, params) or instance."""
    if isinstance(spec, Calibrator):
        return spec.name, copy.deepcopy(spec)
    if isinstance(spec, str):
        return spec, make_calibrator(spec)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], dict):
        name, params = spec
        shown = name + (
            "" if not params else "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"
        )
        return shown, make_calibrator(name, **params)
    raise CalcoreError(f"A method is a name, a (name, params) pair or a Calibrator; got {spec!r}.")


def _check_same_classes(calib: Predictions, test: Predictions) -> None:
    if calib.class_names != test.class_names:
        raise CalcoreError(
            f"The calibration and test data have different classes ({list(calib.class_names)} vs "
            f"{list(test.class_names)}); both must list the same classes in the same order."
        )


#: Deprecated for one release: calcore.predictions.concat is the one join of rows.
concatenate = renamed_function(
    "calcore.evaluation.concatenate", "calcore.predictions.concat", concat
)


def random_split(
    preds: Predictions, *, test_fraction: float = 0.5, seed: int = 0
) -> tuple[Predictions, Predictions]:
    """Split rows at random into calibration and test predictions.

    Parameters
    ----------
    preds : Predictions
    test_fraction : float, default 0.5
        Share of rows that go to the test split, in (0, 1); rounded to the
        nearest row count, and each split keeps at least one row.
    seed : int, default 0
        The same seed gives the same split.

    Returns
    -------
    calib, test : Predictions
        Rows keep their original order within each split (so the load report's
        row numbers stay meaningful).

    Raises
    ------
    CalcoreError
        Fewer than 2 rows or a fraction outside (0, 1).

    Examples
    --------
    >>> p = Predictions.from_probs([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]], [0, 1, 0, 1])
    >>> calib, test = random_split(p, test_fraction=0.25, seed=1)
    >>> calib.n_samples, test.n_samples
    (3, 1)
    """
    if not (isinstance(test_fraction, (int, float)) and 0.0 < test_fraction < 1.0):
        raise CalcoreError(f"test_fraction must lie in (0, 1); got {test_fraction!r}.")
    if preds.n_samples < 2:
        raise CalcoreError(f"Splitting needs at least 2 rows; got {preds.n_samples}.")
    n_test = min(max(int(round(test_fraction * preds.n_samples)), 1), preds.n_samples - 1)
    order = np.random.default_rng(seed).permutation(preds.n_samples)
    return preds.subset(np.sort(order[n_test:])), preds.subset(np.sort(order[:n_test]))


@dataclass(frozen=True, eq=False)
class Comparison:
    """Calibrators fitted on one split and evaluated on another.

    Attributes
    ----------
    methods : tuple of str
        ``"uncalibrated"`` first, then each method as given.
    metrics : tuple of str
        Metric keys (see :data:`calcore.METRICS`), plus ``"calibration_gain"``.
    values : dict
        ``values[method][metric]`` is an :class:`~calcore.Interval` (bootstrap over
        test rows when ``n_resamples > 0``, else with NaN bounds), or ``None``
        for a metric that was not computed.
    calibrated : dict of str to Predictions
        The recalibrated test predictions of each method.
    calibrators : dict of str to Calibrator
        The fitted calibrators.
    fit_seconds : dict of str to float
    notes : dict of str to tuple of str
        Per method: the evaluation notes and whether the calibration gain is exact.
    calibration_tests : dict of str to CalibrationTest
        Per method with intervals: the test of "calibrated" of its report.
    replicates, double_replicates : dict of str to dict of str to ndarray
        Per method, its report's bootstrap replicates of each metric (and those of the
        resamples of the resamples): every method's come from the same resamples of the
        test rows, so differences between methods are paired (:meth:`verdict`).
    fit_warnings : dict of str to tuple of str
        Per method, the warnings its fit issued (a bound hit, no convergence).
    n_classes : int
    n_calib : int or None
        Calibration rows the methods were fitted on (None when unknown).

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
    >>> calib, test = (calcore.simulate_predictions(sim, 300, seed=s).preds for s in (0, 1))
    >>> result = calcore.compare(calib, test, ["ts"])
    >>> [round(result.values[m]["top_label_ece"].estimate, 4) for m in result.methods]
    [0.1995, 0.1019]
    >>> result.notes["ts"][-1]
    'calibration gain: exact: the map is injective and accuracy-preserving'
    """

    methods: tuple[str, ...]
    metrics: tuple[str, ...]
    values: dict
    calibrated: dict
    calibrators: dict
    fit_seconds: dict
    notes: dict
    calibration_tests: dict = field(default_factory=dict)
    replicates: dict = field(default_factory=dict, repr=False)
    double_replicates: dict = field(default_factory=dict, repr=False)
    fit_warnings: dict = field(default_factory=dict)
    n_classes: int = 0
    n_calib: int | None = None

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    def verdict(self, *, primary: str | None = None, confidence_level: float = 0.95):
        """Which calibrator to ship (:func:`calcore.evaluation.verdict.verdict_of`): the
        best on ``primary``, the methods tied with it on paired intervals, and the one
        recommended, with its warnings.

        Examples
        --------
        >>> import calcore
        >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
        >>> calib, test = (calcore.simulate_predictions(sim, 1000, seed=s).preds for s in (0, 1))
        >>> calcore.compare(calib, test, ["ts"], n_resamples=100).verdict().recommended
        'ts'
        """
        from calcore.evaluation.verdict import verdict_of

        return verdict_of(self, primary=primary, confidence_level=confidence_level)

    def rows(self) -> list[dict]:
        """Tidy rows ``{method, metric, estimate, low, high}``, for tables and CSV."""
        out = []
        for method in self.methods:
            for metric in self.metrics:
                iv = self.values[method].get(metric)
                if iv is not None:
                    out.append(
                        {
                            "method": method,
                            "metric": metric,
                            "estimate": iv.estimate,
                            "low": iv.low,
                            "high": iv.high,
                        }
                    )
        return out

    @classmethod
    def from_reports(
        cls,
        reports: dict,
        gains: dict | None,
        *,
        calibrated: dict | None = None,
        calibrators: dict | None = None,
        fit_seconds: dict | None = None,
        fit_warnings: dict | None = None,
        n_calib: int | None = None,
    ) -> "Comparison":
        """The comparison of reports computed elsewhere (e.g. cached one method at a time).

        Parameters
        ----------
        reports : dict of str to CalibrationReport
            :data:`UNCALIBRATED` first, then each method's report on its recalibrated
            test rows (same rows, settings and resamples).
        gains : dict of str to CalibrationGain, or None
            Each method's :func:`~calcore.calibration_gain` (not the uncalibrated one's);
            None when it was not computed (reports of a streamed source, whose gain needs
            both row sets in memory): the table's gain is then None for every row.
        calibrated, calibrators, fit_seconds, fit_warnings : dict, optional
            As in :func:`compare`; empty when not given.
        n_calib : int, optional
            Calibration rows of the fits (for the verdict's warning on small sets).

        Returns
        -------
        Comparison
            What :func:`compare` returns for the same reports.

        Raises
        ------
        CalcoreError
            ``reports`` does not start with the uncalibrated report, or a method has no gain.

        Examples
        --------
        >>> import calcore
        >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
        >>> calib, test = (calcore.simulate_predictions(sim, 300, seed=s).preds for s in (0, 1))
        >>> out = calcore.make_calibrator("ts").fit(calib).transform(test)
        >>> c = calcore.Comparison.from_reports(
        ...     {"uncalibrated": calcore.evaluate(test), "ts": calcore.evaluate(out)},
        ...     {"ts": calcore.calibration_gain(test, out)},
        ... )
        >>> c.best("top_label_ece"), sorted(c.best_methods("accuracy"))  # TS keeps the argmax
        ('ts', ['ts', 'uncalibrated'])
        """
        names = list(reports)
        if not names or names[0] != UNCALIBRATED:
            raise CalcoreError(f"reports must start with {UNCALIBRATED!r}; got {names[:3]}.")
        missing = [m for m in names[1:] if gains is not None and m not in gains]
        if missing:
            raise CalcoreError(f"No calibration gain for {missing}; give one per method.")
        base = reports[UNCALIBRATED]
        values = {
            UNCALIBRATED: _intervals(base)
            | {"calibration_gain": None if gains is None else _point(0.0)}
        }
        notes = {UNCALIBRATED: tuple(base.notes)}
        for name in names[1:]:
            gain = None if gains is None else gains[name]
            values[name] = _intervals(reports[name]) | {
                "calibration_gain": None if gain is None else _point(gain.value)
            }
            notes[name] = tuple(reports[name].notes) + (
                () if gain is None else (f"calibration gain: {gain.note}",)
            )
        return cls(
            tuple(names),
            (*METRICS, "calibration_gain"),
            values,
            dict(calibrated or {}),
            dict(calibrators or {}),
            dict(fit_seconds or {}),
            notes,
            {m: r.calibration_test for m, r in reports.items() if r.calibration_test is not None},
            {m: dict(r.replicates) for m, r in reports.items()},
            {m: dict(r.double_replicates) for m, r in reports.items()},
            {m: tuple(w) for m, w in (fit_warnings or {}).items()},
            int(base.n_classes),
            n_calib,
        )

    @staticmethod
    def higher_is_better(metric: str) -> bool:
        """Whether a larger value of ``metric`` is better (accuracy, the calibration gain).
        False too for the metrics ranked by their distance to an ideal value (calibration
        slope, intercept, O/E, Spiegelhalter's Z) and for p-values, which rank nothing: see
        :meth:`best_methods`."""
        return metric == "calibration_gain" or (
            metric in METRICS and METRICS[metric].higher_is_better
        )

    def best_methods(self, metric: str) -> set[str]:
        """Every method with the best (finite) estimate of ``metric``: ties all count; empty
        when no method has a value, and for a p-value (evidence, not a quality). Best is the
        largest for accuracy and the gain, the closest to the ideal for a metric with one
        (:attr:`MetricSpec.ideal <calcore.MetricSpec>`: slope 1, intercept 0, O/E 1, Z 0),
        else the smallest."""
        spec = METRICS.get(metric)
        if spec is not None and spec.p_value:
            return set()
        scored = {
            m: self.values[m][metric].estimate for m in self.methods if self.values[m].get(metric)
        }
        scored = {m: v for m, v in scored.items() if np.isfinite(v)}
        if not scored:
            return set()
        if spec is None:  # the calibration gain: higher is better
            sign = -1.0 if self.higher_is_better(metric) else 1.0
            shortfall = {m: sign * v for m, v in scored.items()}
        else:
            shortfall = {m: spec.shortfall(v) for m, v in scored.items()}
        target = min(shortfall.values())
        return {m for m, v in shortfall.items() if v == target}

    def best(self, metric: str) -> str:
        """The method with the best estimate of ``metric`` (the first of ties, in order)."""
        winners = self.best_methods(metric)
        if not winners:
            raise CalcoreError(f"No method has a value for {metric!r}.")
        return next(m for m in self.methods if m in winners)


def _point(value: float) -> Interval:
    """An estimate without an interval (NaN bounds)."""
    return Interval(float(value), np.nan, np.nan, 0.95, 0)


def _intervals(report) -> dict:
    out = {}
    for key, value in report.metrics.items():
        if value is None:
            out[key] = None
        elif key in report.intervals:
            out[key] = report.intervals[key]
        else:
            out[key] = _point(value)
    return out


@renamed_keywords(n_bootstrap="n_resamples")
def compare(
    calib: Predictions,
    test: Predictions,
    methods,
    *,
    bins=15,
    binning: str = "equal-width",
    n_resamples: int = 0,
    seed: int = 0,
    metrics=None,
) -> Comparison:
    """Fit each method on ``calib``, evaluate it and the uncalibrated predictions on ``test``.

    Parameters
    ----------
    calib, test : Predictions
        Calibration and evaluation splits with the same classes.
    methods : sequence
        Names (``"ts"``), ``(name, params)`` pairs, or unfitted calibrators.
    bins, binning :
        Binning of the binned metrics (as :func:`calcore.evaluate`).
    n_resamples : int, default 0
        Bootstrap resamples of the test rows for intervals on every metric (until 0.1
        ``n_bootstrap``, still accepted for one release, with a DeprecationWarning). Every
        method is evaluated on the same resamples, so :meth:`Comparison.verdict` reads paired
        differences.
    seed : int, default 0
    metrics : iterable of str, optional
        Keys of :data:`calcore.METRICS` to compute (default every metric); the others are
        None. A verdict needs its primary metric and reads the Brier score, NLL and
        accuracy as guards.

    Returns
    -------
    Comparison

    Raises
    ------
    CalcoreError
        Different classes, unknown methods or invalid parameters.

    References
    ----------
    Zhang et al. (2020), Table 1 (calibration gain); Gupta & Ramdas (2022), Tables 2-3.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
    >>> calib, test = (calcore.simulate_predictions(sim, 300, seed=s).preds for s in (0, 1))
    >>> result = calcore.compare(calib, test, ["ts", ("tl-hb", {"bins": 5})])
    >>> result.methods, result.best("top_label_ece")
    (('uncalibrated', 'ts', 'tl-hb(bins=5)'), 'ts')
    """
    _check_same_classes(calib, test)
    built = [_calibrator(m) for m in methods]
    names = [name for name, _ in built]
    if len(set(names)) != len(names) or UNCALIBRATED in names:
        raise CalcoreError(f"Method names must be distinct and not {UNCALIBRATED!r}; got {names}.")
    options = dict(bins=bins, binning=binning, seed=seed, n_resamples=n_resamples, metrics=metrics)
    reports = {UNCALIBRATED: evaluate(test, **options)}
    gains, calibrated, calibrators, seconds, caught = {}, {}, {}, {}, {}
    for name, calibrator in built:
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as raised:
            warnings.simplefilter("always", CalcoreWarning)
            calibrator.fit(calib)
        seconds[name] = time.perf_counter() - start
        caught[name] = fit_warning_texts(raised)
        out = calibrator.transform(test)
        reports[name] = evaluate(out, **options)
        gains[name] = calibration_gain(
            test, out, injective_accuracy_preserving=exact_gain(calibrator)
        )
        calibrated[name], calibrators[name] = out, calibrator
    return Comparison.from_reports(
        reports,
        gains,
        calibrated=calibrated,
        calibrators=calibrators,
        fit_seconds=seconds,
        fit_warnings=caught,
        n_calib=calib.n_samples,
    )


def fit_warning_texts(raised) -> tuple[str, ...]:
    """The texts of the :class:`~calcore.CalcoreWarning` a fit raised (recorded by
    ``warnings.catch_warnings(record=True)``), each once; others are raised again."""
    out = []
    for w in raised:
        if issubclass(w.category, CalcoreWarning):
            out.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return tuple(dict.fromkeys(out))


def exact_gain(calibrator) -> bool:
    """Whether a calibrator's calibration gain is exact: an injective, accuracy-preserving
    map (Mix-n-Match Prop. 4.1)."""
    return bool(getattr(calibrator, "injective", False)) and bool(calibrator.accuracy_preserving)


@dataclass(frozen=True, eq=False)
class LearningCurve:
    """A metric and accuracy against the calibration-set size (Mix-n-Match Fig. 6).

    Attributes
    ----------
    sizes : ndarray of shape (S,), int
    methods : tuple of str
    metric : str
    mean, std : ndarray of shape (M, S)
        The metric on the test set over repetitions.
    accuracy_mean, accuracy_std : ndarray of shape (M, S)
    n_repeats : int
    uncalibrated : float
        The metric of the uncalibrated test predictions (a flat reference line).

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
    >>> calib, test = (calcore.simulate_predictions(sim, 300, seed=s).preds for s in (0, 1))
    >>> curve = calcore.learning_curve(calib, test, ["ts"], sizes=[20, 300], n_repeats=3)
    >>> curve.sizes.tolist(), curve.methods, curve.metric, curve.mean.shape
    ([20, 300], ('ts',), 'top_label_ece', (1, 2))
    """

    sizes: np.ndarray
    methods: tuple[str, ...]
    metric: str
    mean: np.ndarray
    std: np.ndarray
    accuracy_mean: np.ndarray
    accuracy_std: np.ndarray
    n_repeats: int
    uncalibrated: float

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    @classmethod
    def combine(cls, curves) -> "LearningCurve":
        """One curve of every method from curves computed a method (or a few) at a time.

        :func:`learning_curve` draws the same subsets for every method from its seed, so
        curves of the same data, sizes, metric, repetitions and seed computed separately
        are the rows of one joint call (the dashboard caches them per method).

        Raises
        ------
        CalcoreError
            No curves, or curves of different sizes, metrics, repetitions or test rows.

        Examples
        --------
        >>> import calcore
        >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
        >>> calib, test = (calcore.simulate_predictions(sim, 300, seed=s).preds for s in (0, 1))
        >>> one = [calcore.learning_curve(calib, test, [m], sizes=[50, 300], n_repeats=2)
        ...        for m in ("ts", "tl-hb")]
        >>> both = calcore.LearningCurve.combine(one)
        >>> both.methods, both.mean.shape
        (('ts', 'tl-hb'), (2, 2))
        """
        curves = list(curves)
        if not curves:
            raise CalcoreError("LearningCurve.combine needs at least one curve.")
        first = curves[0]
        methods = [m for c in curves for m in c.methods]
        if len(set(methods)) != len(methods):
            raise CalcoreError(f"LearningCurve.combine: a method appears twice in {methods}.")
        for c in curves[1:]:
            same = (
                np.array_equal(c.sizes, first.sizes)
                and c.metric == first.metric
                and c.n_repeats == first.n_repeats
                and np.array_equal(c.uncalibrated, first.uncalibrated, equal_nan=True)
            )
            if not same:
                raise CalcoreError(
                    "LearningCurve.combine: the curves differ in sizes, metric, repetitions "
                    "or test rows; compute them with the same arguments."
                )
        return cls(
            sizes=first.sizes,
            methods=tuple(methods),
            metric=first.metric,
            mean=np.vstack([c.mean for c in curves]),
            std=np.vstack([c.std for c in curves]),
            accuracy_mean=np.vstack([c.accuracy_mean for c in curves]),
            accuracy_std=np.vstack([c.accuracy_std for c in curves]),
            n_repeats=first.n_repeats,
            uncalibrated=first.uncalibrated,
        )


def learning_curve(
    calib: Predictions,
    test: Predictions,
    methods,
    *,
    sizes,
    metric: str = "top_label_ece",
    n_repeats: int = 5,
    bins=15,
    binning: str = "equal-width",
    seed: int = 0,
) -> LearningCurve:
    """Fit each method on random subsets of ``calib`` of each size; evaluate on all of ``test``.

    Each repetition draws one subset per size (without replacement) and fits every
    method on the same subset, so methods are compared on equal data.

    Raises
    ------
    CalcoreError
        Unknown metric, sizes outside ``2 .. calib.n_samples``, ``n_repeats < 1``.

    References
    ----------
    Zhang, Kailkhura, Han (2020), "Mix-n-Match", Sec. 5.2 and Fig. 6.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
    >>> calib, test = (calcore.simulate_predictions(sim, 300, seed=s).preds for s in (0, 1))
    >>> curve = calcore.learning_curve(calib, test, ["ts"], sizes=[20, 300], n_repeats=3)
    >>> curve.mean.round(4).tolist(), round(curve.uncalibrated, 4)
    ([[0.0918, 0.1019]], 0.1995)
    """
    refuse_weights(calib, "learning_curve")
    refuse_weights(test, "learning_curve")
    _check_same_classes(calib, test)
    if metric not in METRICS:
        raise CalcoreError(f"Unknown metric {metric!r}; the metrics are {sorted(METRICS)}.")
    sizes = np.asarray(list(sizes), dtype=np.int64)
    if sizes.size == 0 or sizes.min() < 2 or sizes.max() > calib.n_samples:
        raise CalcoreError(
            f"sizes must lie in 2..{calib.n_samples} (the calibration rows); got {sizes.tolist()}."
        )
    N_REPEATS.check(n_repeats, "n_repeats")
    built = [_calibrator(m) for m in methods]
    rng = np.random.default_rng(seed)
    values = np.empty((len(built), sizes.size, n_repeats))
    accuracies = np.empty_like(values)
    for r in range(n_repeats):
        for s, size in enumerate(sizes):
            subset = calib.subset(
                np.sort(rng.choice(calib.n_samples, size=int(size), replace=False))
            )
            for m, (_, calibrator) in enumerate(built):
                out = copy.deepcopy(calibrator).fit(subset).transform(test)
                values[m, s, r] = compute_metric(metric, out, bins=bins, binning=binning)
                accuracies[m, s, r] = out.correct.mean()
    base = compute_metric(metric, test, bins=bins, binning=binning)
    ddof = 1 if n_repeats > 1 else 0
    return LearningCurve(
        sizes,
        tuple(name for name, _ in built),
        metric,
        values.mean(axis=2),
        values.std(axis=2, ddof=ddof),
        accuracies.mean(axis=2),
        accuracies.std(axis=2, ddof=ddof),
        int(n_repeats),
        float(base),
    )


def calibrator_validity(
    data: Predictions,
    method,
    *,
    n_calib: int,
    n_test: int,
    n_resamples: int = 100,
    view: str = "confidence",
    group: int | None = None,
    binning: str = "unique",
    bins=15,
    epsilon=None,
    seed: int = 0,
) -> ValidityCurve:
    """Validity and conditional validity of a calibrator over calibration/test resamples.

    The protocol of the histogram-binning paper: each resample draws ``n_calib``
    calibration rows and, from the rest, ``n_test`` test rows (without
    replacement), fits the method on the former and computes ``V(eps)`` and the
    conditional indicator on its outputs for the latter; the curves are the mean
    over resamples with the standard deviation of the mean. Discrete outputs
    (histogram binning) use ``binning="unique"``; continuous ones need bins.

    With ``group`` (a class index), only the test rows of that group count: for
    ``view="top-label"`` the rows predicted as the class (the per-class validity
    of top-label calibration), for ``"class-wise"`` that class's problem. A
    resample without such rows is left out of the mean (``n_resamples`` of the
    result says how many counted).

    Raises
    ------
    CalcoreError
        ``n_calib + n_test`` larger than the data, invalid counts.

    References
    ----------
    Gupta & Ramdas (2021), Sec. 2.2 (protocol) and Sec. 4 (conditional validity).

    Examples
    --------
    >>> import calcore
    >>> data = calcore.simulate_predictions(calcore.mix_n_match_simulator(1), 400, seed=0).preds
    >>> curve = calcore.calibrator_validity(
    ...     data, "hb", n_calib=200, n_test=200, n_resamples=5, epsilon=[0.0, 0.1, 1.0]
    ... )
    >>> curve.validity.round(4).tolist(), curve.conditional.tolist(), curve.n_resamples
    ([0.0, 0.634, 1.0], [0.0, 0.0, 1.0], 5)
    """
    refuse_weights(data, "calibrator_validity")
    if n_calib < 2 or n_test < 1 or n_calib + n_test > data.n_samples:
        raise CalcoreError(
            f"need n_calib >= 2, n_test >= 1 and n_calib + n_test <= {data.n_samples}; "
            f"got n_calib={n_calib}, n_test={n_test}."
        )
    N_RESAMPLES.check(n_resamples, "n_resamples")
    name, calibrator = _calibrator(method)
    if group is not None and not 0 <= group < data.n_classes:
        raise CalcoreError(f"group must be a class index 0..{data.n_classes - 1}; got {group!r}.")
    eps = np.linspace(0.0, 0.2, 201) if epsilon is None else np.array(epsilon, dtype=np.float64)
    rng = np.random.default_rng(seed)
    val = np.full((n_resamples, eps.size), np.nan)
    cond = np.full_like(val, np.nan)
    for r in range(n_resamples):
        order = rng.permutation(data.n_samples)
        calib = data.subset(np.sort(order[:n_calib]))
        test = data.subset(np.sort(order[n_calib : n_calib + n_test]))
        out = copy.deepcopy(calibrator).fit(calib).transform(test)
        v = binary_view(out, view)
        scores, outcomes, groups, n_groups = v.scores, v.outcomes, v.groups, v.n_groups
        if group is not None:
            mask = groups == group
            if not mask.any():
                continue  # no test row of this group in this resample
            scores, outcomes = scores[mask], outcomes[mask]
            groups, n_groups = np.zeros(scores.size, dtype=np.int64), 1
        val[r], cond[r] = validity_curves_once(
            scores, outcomes, groups, n_groups, eps, binning, bins
        )
    counted = ~np.isnan(val[:, 0])
    val, cond = val[counted], cond[counted]
    k = int(counted.sum())
    if k == 0:
        raise CalcoreError(
            f"No resample has a test row of group {group} ({data.class_names[group]!r}); "
            "choose another class or more test rows."
        )
    sem = (
        (lambda a: a.std(axis=0, ddof=1) / np.sqrt(k)) if k > 1 else (lambda a: np.zeros(eps.size))
    )
    label = name if group is None else f"{name} [{data.class_names[group]}]"
    return ValidityCurve(
        eps, val.mean(axis=0), sem(val), cond.mean(axis=0), sem(cond), view, label, k
    )
