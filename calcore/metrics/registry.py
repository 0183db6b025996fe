"""The registry of scalar metrics: one place that lists every metric with its
report key, label, range and direction, so that :func:`calcore.evaluate`, the
CLI, the dashboard's table and the shared invariance tests agree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from calcore.foundation.deprecation import renamed_attribute
from calcore.foundation.errors import CalcoreError
from calcore.metrics import binary as bm
from calcore.metrics import binary_fit as bf
from calcore.metrics import binned as mb
from calcore.metrics import kde_ece as mk
from calcore.predictions import Predictions
from calcore.statistics import scoring as ms

__all__ = [
    "MetricSpec",
    "METRICS",
    "BIN_FREE_METRICS",
    "BINARY_METRICS",
    "IN_MEMORY_METRICS",
    "adaptive_bins_for",
    "compute_metric",
    "default_primary",
]


@dataclass(frozen=True)
class MetricSpec:
    """A scalar metric of a :class:`~calcore.Predictions`.

    Attributes
    ----------
    key : str
        snake_case name used in reports, the CLI's JSON and the dashboard.
    label : str
        Short human label, e.g. ``"TL-ECE"``.
    function : callable
        ``function(preds, **options) -> float``.
    takes_binning_scheme : bool
        Whether ``function`` takes the caller's binning scheme, ``bins`` and ``binning``
        (until 0.1 ``binned``). False for ACE and TACE, which bin by equal mass whatever
        the scheme and take a number of bins only (:func:`adaptive_bins_for`), and for
        the metrics without bins (:data:`BIN_FREE_METRICS`).
    higher_is_better : bool
        Whether a larger value is better (accuracy). False for the metrics with an
        ``ideal`` inside their range and for p-values, which :meth:`shortfall` ranks.
    bounds : tuple of float
        The range of possible values.
    description : str
    cells : str or None
        Which set of cells of the statistics engine the metric reads (``"conf"``,
        ``"top"``, ``"cw"``, ``"ace"``, ``"tace"``; see
        :func:`calcore.evaluation.report_statistics.report_cell_specs`), None for
        scoring and KDE metrics.
    from_bins : callable or None
        ``from_bins(BinStatistics) -> float``: the metric from its cells' per-bin
        statistics (what :func:`calcore.evaluate` and its bootstrap compute).
    interval_method : str
        The default interval of :func:`calcore.evaluate`
        (:data:`calcore.evaluation.intervals.INTERVAL_METHODS`), chosen by the coverage
        study of ``docs/replications/intervals.md``; ``"normal"`` intervals are extended
        to contain the estimate.
    interval_caveat : str or None
        Why the interval does not cover the true value reliably, where the study found
        that no method does; a report shows these words instead of trusting the bar.
    ideal : float or None
        The value of a perfectly calibrated model when it lies inside the range (slope 1,
        intercept 0, O/E 1, Spiegelhalter's Z 0): values are then ranked by their distance
        to it. None: the better end of the range (``higher_is_better``).
    binary_only : bool
        A measure of binary models (:mod:`calcore.metrics.binary`): None in the report of
        predictions with more classes, refused by ``calcore check``.
    p_value : bool
        A p-value of a test: evidence, not a quality, so never "best" (:meth:`shortfall` is
        None) and given no bootstrap interval (its statistic has one).
    from_replicate_bins : callable or None
        ``from_replicate_bins(ReplicateBins) -> ndarray of shape (R,)``: ``from_bins`` of
        every replicate of the same cells at once (:class:`calcore.metrics.binned.ReplicateBins`:
        the bootstrap and the calibration test's redraws); None where the bootstrap
        evaluates ``from_bins`` replicate by replicate (the binary measures).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> spec = calcore.METRICS["top_label_ece"]
    >>> spec.label, spec.takes_binning_scheme, spec.higher_is_better, spec.bounds
    ('TL-ECE', True, False, (0.0, 1.0))
    >>> round(spec.function(preds, bins=10), 4)
    0.4
    """

    key: str
    label: str
    function: Callable[..., float]
    takes_binning_scheme: bool
    higher_is_better: bool
    bounds: tuple[float, float]
    description: str
    cells: str | None = None
    from_bins: Callable | None = None
    interval_method: str = "percentile"
    interval_caveat: str | None = None
    ideal: float | None = None
    binary_only: bool = False
    p_value: bool = False
    from_replicate_bins: Callable | None = None

    binned = renamed_attribute("takes_binning_scheme", "binned")

    @property
    def better(self) -> str:
        """Which way is better, in a word or two: ``"lower"``, ``"higher"``, ``"near 1"``
        (an ideal value), or ``"p > 0.05"`` for a p-value (no evidence of miscalibration).

        Examples
        --------
        >>> import calcore
        >>> [calcore.METRICS[k].better for k in ("nll", "accuracy", "calibration_slope")]
        ['lower', 'higher', 'near 1']
        """
        if self.p_value:
            return "p > 0.05"
        if self.ideal is not None:
            return f"near {self.ideal:g}"
        return "higher" if self.higher_is_better else "lower"

    def shortfall(self, value: float) -> float | None:
        """How far ``value`` is from the best, for ranking methods (smaller is better):
        ``|value - ideal|`` with an ``ideal``, ``-value`` when higher is better, else
        ``value``; None for a p-value, which ranks nothing.

        Examples
        --------
        >>> import calcore
        >>> calcore.METRICS["calibration_slope"].shortfall(0.75)  # 1 is ideal
        0.25
        >>> calcore.METRICS["accuracy"].shortfall(0.5)  # higher is better
        -0.5
        >>> calcore.METRICS["spiegelhalter_p"].shortfall(0.5) is None  # a p-value ranks nothing
        True
        """
        if self.p_value:
            return None
        if self.ideal is not None:
            return abs(value - self.ideal)
        return -value if self.higher_is_better else value


def _spec(
    key,
    label,
    function,
    takes_binning_scheme,
    bounds,
    description,
    higher_is_better=False,
    cells=None,
    from_bins=None,
    from_replicate_bins=None,
    **binary,
):
    method, caveat = _INTERVALS.get(key, ("percentile", None))
    return MetricSpec(
        key,
        label,
        function,
        takes_binning_scheme,
        higher_is_better,
        bounds,
        description,
        cells,
        from_bins,
        method,
        caveat,
        **binary,
        from_replicate_bins=from_replicate_bins,
    )


#: The interval of each metric, from the coverage study (docs/replications/intervals.md):
#: ``(method, caveat)``. Means of rows (accuracy, NLL, Brier) and the KDE-ECE (whose
#: percentile interval covered best) keep the percentile interval; the binned calibration
#: errors, biased upwards, get the iterated (twice bias-corrected) interval: the once-
#: corrected one fell to 0.67 in a 10-class cell where the iterated one kept 0.83 or more,
#: and the percentile one covered the TL-ECE 0.58 of the time on average. The l2 errors,
#: ACE, TACE and the debiased ECE have no known truth in the simulators and follow their l1
#: counterparts.
_BIAS_CORRECTED = ("iterated", None)
_MAX_OVER_BINS = (
    "iterated",
    "An MCE is the largest gap over bins: both it and its resamples are maxima over noisy "
    "bins, and no bootstrap interval covers its population value reliably; read the "
    "interval as the estimator's spread, not as a range for the truth.",
)
_SMOOTHED_CLASSWISE = (
    "normal",
    "The class-wise KDE-ECE smooths each class's gaps with a bandwidth fixed from the data, "
    "a bias that its resamples do not show: in the coverage study its intervals missed the "
    "true class-wise error in most samples; read the interval as the estimator's spread, "
    "not as a range for the truth.",
)
_INTERVALS = {
    "conf_ece": _BIAS_CORRECTED,
    "conf_ece_l2": _BIAS_CORRECTED,
    "conf_mce": _MAX_OVER_BINS,
    "top_label_ece": _BIAS_CORRECTED,
    "top_label_ece_l2": _BIAS_CORRECTED,
    "top_label_mce": _MAX_OVER_BINS,
    "classwise_ece": _BIAS_CORRECTED,
    "classwise_ece_l2": _BIAS_CORRECTED,
    "classwise_mce": _MAX_OVER_BINS,
    "ace": _BIAS_CORRECTED,
    "tace": _BIAS_CORRECTED,
    "debiased_ece": _BIAS_CORRECTED,
    "kde_ece": ("percentile", None),
    "kde_ece_classwise": _SMOOTHED_CLASSWISE,
    # Binary models: the ECE of class 1 is a term of the class-wise ECE and follows it; the
    # ratio, the fits and the test statistics (no coverage study yet) keep the percentile
    # interval; the p-values get none (MetricSpec.p_value).
    "positive_class_ece": _BIAS_CORRECTED,
    "hosmer_lemeshow": (
        "percentile",
        "A resample's Hosmer-Lemeshow statistic adds the resampling noise to the data's own "
        "lack of fit (a chi-square statistic grows with noise), so its replicates read high "
        "and the interval does not cover the population value reliably; read it as the "
        "statistic's spread and the p-value for evidence.",
    ),
}


def _error(**kw) -> dict:
    """``from_bins`` and ``from_replicate_bins`` of an lp calibration error."""
    return {
        "from_bins": lambda stats: mb.calibration_error_from_bins(stats, **kw),
        "from_replicate_bins": lambda bins: mb.calibration_errors_from_replicate_bins(bins, **kw),
    }


def _debiased(stats) -> float:
    return float(np.sqrt(max(mb.debiased_squared_error_from_bins(stats), 0.0)))


def _debiased_replicates(bins) -> np.ndarray:
    return np.sqrt(np.maximum(mb.debiased_squared_errors_from_replicate_bins(bins), 0.0))


_ADAPTIVE = {
    "from_bins": mb.adaptive_errors_from_bins,
    "from_replicate_bins": mb.adaptive_errors_from_replicate_bins,
}


def _l2(f):
    return lambda preds, **kw: f(preds, p=2, **kw)


METRICS: dict[str, MetricSpec] = {
    s.key: s
    for s in [
        _spec(
            "accuracy",
            "Accuracy",
            ms.accuracy,
            False,
            (0.0, 1.0),
            "Fraction of rows whose argmax is the label.",
            True,
        ),
        _spec(
            "nll",
            "NLL",
            ms.negative_log_likelihood,
            False,
            (0.0, np.inf),
            "Mean negative log-likelihood of the labels.",
        ),
        _spec(
            "brier",
            "Brier",
            ms.brier_score,
            False,
            (0.0, 2.0),
            "Multiclass Brier score (sum over classes).",
        ),
        _spec(
            "conf_ece",
            "conf-ECE",
            mb.confidence_ece,
            True,
            (0.0, 1.0),
            "Confidence ECE (l1).",
            cells="conf",
            **_error(),
        ),
        _spec(
            "conf_ece_l2",
            "conf-ECE (l2)",
            _l2(mb.confidence_ece),
            True,
            (0.0, 1.0),
            "Confidence l2-ECE.",
            cells="conf",
            **_error(p=2),
        ),
        _spec(
            "conf_mce",
            "conf-MCE",
            mb.confidence_mce,
            True,
            (0.0, 1.0),
            "Largest confidence bin gap.",
            cells="conf",
            **_error(p=np.inf),
        ),
        _spec(
            "top_label_ece",
            "TL-ECE",
            mb.top_label_ece,
            True,
            (0.0, 1.0),
            "Top-label ECE (bins within each predicted class).",
            cells="top",
            **_error(),
        ),
        _spec(
            "top_label_ece_l2",
            "TL-ECE (l2)",
            _l2(mb.top_label_ece),
            True,
            (0.0, 1.0),
            "Top-label l2-ECE.",
            cells="top",
            **_error(p=2),
        ),
        _spec(
            "top_label_mce",
            "TL-MCE",
            mb.top_label_mce,
            True,
            (0.0, 1.0),
            "Largest (predicted class, bin) gap.",
            cells="top",
            **_error(p=np.inf),
        ),
        _spec(
            "classwise_ece",
            "CW-ECE",
            mb.classwise_ece,
            True,
            (0.0, 1.0),
            "Class-wise ECE, mean over classes.",
            cells="cw",
            **_error(per_group=True),
        ),
        _spec(
            "classwise_ece_l2",
            "CW-ECE (l2)",
            _l2(mb.classwise_ece),
            True,
            (0.0, 1.0),
            "Class-wise l2-ECE, mean over classes.",
            cells="cw",
            **_error(p=2, per_group=True),
        ),
        _spec(
            "classwise_mce",
            "CW-MCE",
            mb.classwise_mce,
            True,
            (0.0, 1.0),
            "Mean over classes of the largest bin gap.",
            cells="cw",
            **_error(p=np.inf, per_group=True),
        ),
        _spec(
            "ace",
            "ACE",
            mb.adaptive_ece,
            False,
            (0.0, 1.0),
            "Adaptive calibration error (Nixon et al.).",
            cells="ace",
            **_ADAPTIVE,
        ),
        _spec(
            "tace",
            "TACE",
            mb.thresholded_adaptive_ece,
            False,
            (0.0, 1.0),
            "Thresholded ACE, scores >= 1e-3.",
            cells="tace",
            **_ADAPTIVE,
        ),
        _spec(
            "debiased_ece",
            "debiased l2-ECE",
            mb.debiased_ece,
            True,
            (0.0, 1.0),
            "Kumar et al.'s debiased confidence l2-ECE.",
            cells="conf",
            from_bins=_debiased,
            from_replicate_bins=_debiased_replicates,
        ),
        _spec(
            "kde_ece",
            "KDE-ECE",
            mk.kde_ece_confidence,
            False,
            (0.0, 1.0),
            "KDE-ECE of the confidence view (Mix-n-Match).",
        ),
        _spec(
            "kde_ece_classwise",
            "KDE-ECE (CW)",
            mk.kde_ece_classwise,
            False,
            (0.0, 1.0),
            "KDE-ECE averaged over classes.",
        ),
        # -- binary models (calcore.metrics.binary): class 1 is the positive class
        _spec(
            "oe_ratio",
            "O/E",
            bm.oe_ratio,
            False,
            (0.0, np.inf),
            "Observed / expected events (1 ideal; > 1: the model under-predicts).",
            cells="deciles",
            from_bins=bm.oe_ratio_from_bins,
            ideal=1.0,
            binary_only=True,
        ),
        _spec(
            "calibration_slope",
            "slope",
            bf.calibration_slope,
            False,
            (-np.inf, np.inf),
            "Logistic recalibration slope on the logit (1 ideal; < 1: over-confident).",
            ideal=1.0,
            binary_only=True,
        ),
        _spec(
            "calibration_intercept",
            "intercept",
            bf.calibration_intercept,
            False,
            (-np.inf, np.inf),
            "Calibration-in-the-large intercept, logit offset (0 ideal; > 0: under-predicts).",
            ideal=0.0,
            binary_only=True,
        ),
        _spec(
            "spiegelhalter_z",
            "Spiegelhalter Z",
            bm.spiegelhalter_z,
            False,
            (-np.inf, np.inf),
            "Spiegelhalter's Z (0 ideal; standard normal for a calibrated model).",
            ideal=0.0,
            binary_only=True,
        ),
        _spec(
            "spiegelhalter_p",
            "Spiegelhalter p",
            bm.spiegelhalter_p,
            False,
            (0.0, 1.0),
            "Two-sided p-value of Spiegelhalter's Z (small: evidence of miscalibration).",
            binary_only=True,
            p_value=True,
        ),
        _spec(
            "hosmer_lemeshow",
            "HL",
            bm.hosmer_lemeshow,
            False,
            (0.0, np.inf),
            "Hosmer-Lemeshow statistic on deciles of risk (depends on the grouping).",
            cells="deciles",
            from_bins=lambda stats: bm.hosmer_lemeshow_from_bins(stats)[0],
            binary_only=True,
        ),
        _spec(
            "hosmer_lemeshow_p",
            "HL p",
            bm.hosmer_lemeshow_p,
            False,
            (0.0, 1.0),
            "Hosmer-Lemeshow p-value, chi-square with as many degrees of freedom as groups.",
            cells="deciles",
            from_bins=bm.hosmer_lemeshow_p_from_bins,
            binary_only=True,
            p_value=True,
        ),
        _spec(
            "positive_class_ece",
            "ECE (class 1)",
            bm.positive_class_ece,
            True,
            (0.0, 1.0),
            "ECE of the positive class's probability (class-wise ECE of class 1).",
            cells="cw",
            from_bins=bm.positive_class_error_from_bins,
            binary_only=True,
        ),
    ]
}

#: The measures of binary models (two classes, class 1 positive): None for more classes.
BINARY_METRICS = tuple(k for k, spec in METRICS.items() if spec.binary_only)

#: The metrics computed from the rows themselves, not from mergeable sums: a streamed
#: source (``calcore.scan``) reports them as None, with a note saying how to load the rows.
IN_MEMORY_METRICS = tuple(k for k, spec in METRICS.items() if spec.binary_only and not spec.cells)


#: The metrics that depend on neither ``bins`` nor ``binning`` (ACE and TACE are not
#: among them: their number of equal-mass bins follows ``bins``), so a report of these can
#: be kept while the binning changes (``evaluate(metrics=...)``). Of the binary measures
#: all but the ECE of class 1: Hosmer-Lemeshow and O/E read fixed deciles of risk.
BIN_FREE_METRICS = (
    "accuracy",
    "nll",
    "brier",
    "kde_ece",
    "kde_ece_classwise",
    *(k for k in BINARY_METRICS if k != "positive_class_ece"),
)


def adaptive_bins_for(binning, bins):
    """Number of equal-mass bins (or count rule) that ACE/TACE use beside a given binning.

    ``bins`` when it counts bins (``equal-width`` and ``equal-mass``: an integer or
    a rule such as ``"sturges"``); 15 otherwise (``points-per-bin``, where ``bins``
    is a number of points, and ``unique``, where it is unused).
    """
    return bins if binning in ("equal-width", "equal-mass") else 15


def metric_keys(metrics, *, among=None, what: str = "metrics") -> list[str]:
    """The metric keys named by ``metrics`` (one key or an iterable), checked once.

    Parameters
    ----------
    metrics : str or iterable of str
    among : sequence of str, optional
        The allowed keys (default: every key of :data:`METRICS`).
    what : str
        How the caller's argument is named in the message.

    Returns
    -------
    list of str
        The keys in the given order, without repeats.

    Raises
    ------
    CalcoreError
        No key, or a key not in ``among`` (the message lists the allowed keys).

    Examples
    --------
    >>> metric_keys("accuracy"), metric_keys(["conf_ece", "nll", "conf_ece"])
    (['accuracy'], ['conf_ece', 'nll'])
    """
    allowed = list(METRICS if among is None else among)
    keys = [metrics] if isinstance(metrics, str) else list(metrics)
    unknown = [k for k in keys if k not in allowed]
    if not keys or unknown:
        raise CalcoreError(
            f"{what} must name at least one of {allowed}; every key must be among them; got "
            f"{keys!r}" + (f" ({unknown!r} unknown)." if unknown else ".")
        )
    return list(dict.fromkeys(keys))


def compute_metric(
    key: str, preds: Predictions, *, bins=15, binning="equal-width", sample_weight=None
) -> float:
    """Compute one registered metric by key.

    Binned metrics get ``bins`` and ``binning``; ACE and TACE (always equal-mass)
    get the number of bins of :func:`adaptive_bins_for`; every metric takes
    ``sample_weight`` (row weights).

    Raises
    ------
    CalcoreError
        Unknown key, or invalid options for the metric.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> calcore.compute_metric("accuracy", preds)
    0.75
    >>> round(calcore.compute_metric("conf_ece", preds, bins=10), 4)
    0.4
    """
    if key not in METRICS:
        raise CalcoreError(f"Unknown metric {key!r}; the metrics are {sorted(METRICS)}.")
    spec = METRICS[key]
    w = {"sample_weight": sample_weight}
    if spec.takes_binning_scheme:
        return float(spec.function(preds, bins=bins, binning=binning, **w))
    if key in ("ace", "tace"):
        return float(spec.function(preds, bins=adaptive_bins_for(binning, bins), **w))
    return float(spec.function(preds, **w))


def default_primary(n_classes: int) -> str:
    """The calibration notion a user reads: the positive class's ECE for a binary model
    (its one probability), the top-label ECE for several classes (the predicted class's
    probability, Gupta & Ramdas 2022).

    Examples
    --------
    >>> default_primary(10), default_primary(2)
    ('top_label_ece', 'positive_class_ece')
    """
    return "positive_class_ece" if n_classes == 2 else "top_label_ece"
