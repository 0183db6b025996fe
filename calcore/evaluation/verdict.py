"""Which calibrator to ship: a paired verdict over the resamples of a comparison.

:func:`calcore.compare` evaluates every method on the same test rows and, with
``n_resamples``, on the same bootstrap resamples of them (one seed, one set of row
counts). A difference between two methods is therefore read off paired replicates: the
resample-to-resample noise that both share cancels, and an interval of the difference is
much narrower than the two intervals side by side suggest.

The verdict, for one primary metric (lower is better):

1. **Best**: the candidate (the uncalibrated predictions included) with the lowest
   estimate.
2. **Tied with the best**: every candidate whose paired difference to the best has an
   interval that contains 0. The intervals are Bonferroni-adjusted for the ``K`` methods
   compared (level ``1 - alpha / K``): the best is chosen after looking, and the claim
   "some calibrator beats the uncalibrated model" must hold at ``alpha`` whichever of
   the ``K`` it turns out to be. Binned calibration errors read high on finite samples,
   and by different amounts for different outputs (a binning method's few distinct
   values fill fewer bins), so the differences get the bias-corrected interval of the
   metric (``METRICS[key].interval_method``), not a percentile one.
3. **Recommended**: when the uncalibrated predictions are tied with the best, nothing
   ("no calibrator needed": none is clearly better). Otherwise, among the tied methods,
   the one that keeps the argmax (accuracy-preserving), then the simplest family
   (parametric before isotonic before binning), then the one that does not raise the
   Brier score clearly, then the best estimate.
4. **Guards and warnings**: the Brier score and NLL beside the primary metric (a method
   can lower a calibration error by giving up sharpness; a proper score then rises), a
   change of accuracy, fits that hit a bound or did not converge, and calibration sets
   too small for a binning method.

``docs/replications/verdict.md`` (``benchmarks/study_verdict.py``) measures how often
the verdict claims an improvement on calibrated data (its type-I error) and how often it
finds one on miscalibrated data.

References
----------
Efron & Tibshirani (1993), "An Introduction to the Bootstrap", Sec. 16 (paired
comparisons on common resamples). Dunn (1961), "Multiple comparisons among means", JASA
56 (the Bonferroni adjustment). Gupta & Ramdas (2022), Sec. 5 (top-label ECE as the
quantity a user of a classifier reads).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.evaluation.intervals import DOUBLE_BOOTSTRAP_METHODS, interval_bounds
from calcore.foundation import limits as _limits
from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import freeze_fields
from calcore.metrics.registry import METRICS, default_primary

__all__ = [
    "PairedDifference",
    "Verdict",
    "verdict_of",
    "primary_metrics",
    "MIN_ROWS_PER_BIN",
]

#: See :data:`calcore.foundation.limits.MIN_CALIBRATION_ROWS_PER_BIN` (the recommended set
#: shares it).
MIN_ROWS_PER_BIN = _limits.MIN_CALIBRATION_ROWS_PER_BIN

#: Families from simplest to most flexible: among methods tied with the best, the verdict
#: recommends the simplest (fewest fitted values, least to go wrong on new data).
_FAMILY_ORDER = ("parametric", "composite", "isotonic", "binning", "canonical")

#: The calibration errors a verdict can rank by (the metrics that should be 0 for a
#: calibrated model; not accuracy or the proper scores, which are its guards).
_GUARDS = ("brier", "nll", "accuracy")


@dataclass(frozen=True)
class PairedDifference:
    """The difference of a metric between two methods on the same resamples.

    Attributes
    ----------
    method, reference : str
        ``estimate = metric(method) - metric(reference)``.
    metric : str
    estimate, low, high : float
        The difference and its interval (NaN bounds without resamples).
    confidence_level : float
        The interval's level (Bonferroni-adjusted in a verdict).
    interval_method : str

    Examples
    --------
    >>> d = PairedDifference("ts", "uncalibrated", "top_label_ece", -0.1, -0.12, -0.08, 0.98)
    >>> d.excludes_zero, d.as_dict()["high"]
    (True, -0.08)
    """

    method: str
    reference: str
    metric: str
    estimate: float
    low: float
    high: float
    confidence_level: float
    interval_method: str = "percentile"

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0 (a difference beyond noise)."""
        return bool(np.isfinite(self.low) and (self.low > 0 or self.high < 0))

    def as_dict(self) -> dict:
        def num(v):
            return float(v) if np.isfinite(v) else None

        return {
            "method": self.method,
            "reference": self.reference,
            "metric": self.metric,
            "difference": num(self.estimate),
            "low": num(self.low),
            "high": num(self.high),
            "confidence_level": self.confidence_level,
            "interval_method": self.interval_method,
        }


@dataclass(frozen=True)
class Verdict:
    """Which calibrator to ship, how sure, and what to watch.

    Attributes
    ----------
    primary : str
        The metric ranked by (a key of :data:`calcore.METRICS`).
    recommended : str
        A method of the comparison, or ``"uncalibrated"`` ("no calibrator needed").
    best : str
        The lowest estimate of ``primary`` (may differ from ``recommended``).
    tied_with_best : tuple of str
        Every candidate whose difference to the best includes 0 (the best included).
    paired : dict of str to PairedDifference
        Each candidate's difference to the best (``metric(m) - metric(best)``).
    improvement : PairedDifference or None
        ``metric(recommended) - metric(uncalibrated)`` (negative: better), None when
        nothing is recommended.
    guards : dict of str to dict of str to PairedDifference
        Per method, its Brier, NLL and accuracy minus the uncalibrated ones.
    warnings : dict of str to tuple of str
        Per method, what to know before shipping it (accuracy change, bounds hit, too few
        calibration rows, a proper score that rose).
    reason : str
        Why the recommended method was chosen among the tied ones.
    confidence_level : float
        The family-wise level (the paired intervals use ``1 - (1 - level) / K``).
    n_resamples : int
        0 when the comparison had no resamples: the verdict then ranks by estimates only
        and says it cannot tell noise from a difference.
    estimates : dict of str to float
        ``primary`` of every candidate.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
    >>> calib, test = (calcore.simulate_predictions(sim, 1000, seed=s).preds for s in (0, 1))
    >>> v = calcore.compare(calib, test, ["ts", "tl-hb"], n_resamples=100).verdict()
    >>> v.recommended, v.improves
    ('ts', True)
    """

    primary: str
    recommended: str
    best: str
    tied_with_best: tuple[str, ...]
    paired: dict
    improvement: PairedDifference | None
    guards: dict
    warnings: dict
    reason: str
    confidence_level: float
    n_resamples: int
    estimates: dict

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    @property
    def improves(self) -> bool:
        """Whether a calibrator is recommended (the uncalibrated model is not tied with
        the best)."""
        return self.recommended != _UNCALIBRATED

    def sentence(self) -> str:
        """One sentence a reviewer can read aloud: what to ship, by how much, how sure.

        Examples
        --------
        >>> import calcore
        >>> sim = calcore.dirichlet_simulator(3, miscalibration="calibrated")
        >>> calib, test = (calcore.simulate_predictions(sim, 1000, seed=s).preds for s in (0, 1))
        >>> calcore.compare(calib, test, ["ts"], n_resamples=100).verdict().sentence()[:45]
        'No calibrator needed: none of ts is clearly b'
        """
        label = METRICS[self.primary].label
        pct = f"{round(100 * self.confidence_level)}%"
        if self.n_resamples == 0:
            head = (
                f"{self.best} has the lowest {label} ({_num(self.estimates[self.best])}), "
                "but without resamples no difference can be told from noise: compare with "
                "bootstrap resamples for a verdict."
            )
            return head
        methods = [m for m in self.paired if m != _UNCALIBRATED]
        if not self.improves:
            shown = ", ".join(methods) if methods else "no method"
            return (
                f"No calibrator needed: none of {shown} is clearly better than the "
                f"uncalibrated model on {label} ({_num(self.estimates[_UNCALIBRATED])}; "
                f"{pct} paired intervals)."
            )
        rec = self.recommended
        imp = self.improvement
        out = (
            f"Ship {rec}: {label} {_num(self.estimates[rec])}, "
            f"{_num(-imp.estimate)} below uncalibrated "
            f"[{_num(-imp.high)}, {_num(-imp.low)}]"
        )
        others = [m for m in self.tied_with_best if m != rec]
        if others:
            out += f"; tied with {', '.join(others)}"
        out += f"; {self.reason}"
        if self.warnings.get(rec):
            out += f". Watch: {self.warnings[rec][0]}"
        return out + "."

    def as_dict(self) -> dict:
        """JSON-ready, with the keys of ``calcore compare --json``."""
        return {
            "primary": self.primary,
            "recommended": self.recommended,
            "improves": self.improves,
            "best": self.best,
            "tied_with_best": list(self.tied_with_best),
            "sentence": self.sentence(),
            "reason": self.reason,
            "confidence_level": self.confidence_level,
            "n_resamples": self.n_resamples,
            "estimates": {m: _json(v) for m, v in self.estimates.items()},
            "paired": {m: d.as_dict() for m, d in self.paired.items()},
            "improvement": None if self.improvement is None else self.improvement.as_dict(),
            "guards": {m: {k: d.as_dict() for k, d in g.items()} for m, g in self.guards.items()},
            "warnings": {m: list(w) for m, w in self.warnings.items() if w},
        }


_UNCALIBRATED = "uncalibrated"


def _num(value: float) -> str:
    return (
        "n/a"
        if not np.isfinite(value)
        else f"{value:.3f}"
        if abs(value) >= 1e-3
        else (f"{value:.2g}")
    )


def _json(value):
    return float(value) if value is not None and np.isfinite(value) else None


def primary_metrics(n_classes: int) -> list[str]:
    """The metrics a verdict can rank calibrators by on data with ``n_classes`` classes:
    the calibration errors (lower is better, 0 when calibrated) that apply to it."""
    out = []
    for key, spec in METRICS.items():
        if key in _GUARDS or spec.higher_is_better or spec.bounds != (0.0, 1.0):
            continue
        if getattr(spec, "binary_only", False) and n_classes != 2:
            continue
        out.append(key)
    return out


def verdict_of(
    comparison, *, primary: str | None = None, confidence_level: float = 0.95
) -> Verdict:
    """The verdict of a :class:`~calcore.Comparison` (see the module docstring).

    Parameters
    ----------
    comparison : Comparison
        From :func:`calcore.compare` (or :meth:`Comparison.from_reports`), ideally with
        ``n_resamples > 0``: the paired intervals need its replicates.
    primary : str, optional
        The metric to rank by; default :func:`default_primary`.
    confidence_level : float, default 0.95
        Family-wise level over the compared methods.

    Returns
    -------
    Verdict

    Raises
    ------
    CalcoreError
        A primary metric that does not apply to the data (the message lists those that
        do) or that the comparison did not compute.

    References
    ----------
    Efron & Tibshirani (1993), Sec. 16; Dunn (1961).

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
    >>> calib, test = (calcore.simulate_predictions(sim, 1000, seed=s).preds for s in (0, 1))
    >>> c = calcore.compare(calib, test, ["ts", "tl-hb"], n_resamples=100)
    >>> v = verdict_of(c)
    >>> v.recommended, v.best, v.paired["uncalibrated"].excludes_zero
    ('ts', 'ts', True)
    """
    n_classes = comparison.n_classes
    allowed = primary_metrics(n_classes)
    primary = default_primary(n_classes) if primary is None else primary
    if primary not in allowed:
        raise CalcoreError(
            f"primary metric {primary!r} does not apply to {n_classes}-class predictions; "
            f"choose one of {allowed}."
        )
    if not 0.0 < confidence_level < 1.0:
        raise CalcoreError(f"confidence_level must lie in (0, 1); got {confidence_level!r}.")
    candidates = list(comparison.methods)
    estimates = {}
    for m in candidates:
        iv = comparison.values[m].get(primary)
        if iv is None:
            raise CalcoreError(
                f"The comparison did not compute {primary!r}; compare with metrics that include it."
            )
        estimates[m] = float(iv.estimate)
    finite = {m: v for m, v in estimates.items() if np.isfinite(v)}
    if not finite:
        raise CalcoreError(f"No method has a finite {primary!r} on these data.")
    best = min(finite, key=lambda m: (finite[m], candidates.index(m)))
    n_methods = max(len(candidates) - 1, 1)
    level = 1.0 - (1.0 - confidence_level) / n_methods
    reps = comparison.replicates
    n_resamples = min((len(reps.get(m, {}).get(primary, ())) for m in candidates), default=0)
    interval_method = METRICS[primary].interval_method

    def paired(metric, method, reference, how=None) -> PairedDifference:
        d = (
            comparison.values[method][metric].estimate
            - comparison.values[reference][metric].estimate
        )
        how = how or METRICS[metric].interval_method
        low = high = np.nan
        if n_resamples:
            a, b = reps[method].get(metric), reps[reference].get(metric)
            if a is not None and b is not None:
                r = min(len(a), len(b))
                diff = np.asarray(a[:r]) - np.asarray(b[:r])
                twice = None
                if how in DOUBLE_BOOTSTRAP_METHODS:
                    da = comparison.double_replicates.get(method, {}).get(metric)
                    db = comparison.double_replicates.get(reference, {}).get(metric)
                    if da is None or db is None:
                        how = "normal"  # no second level kept: the once-corrected interval
                    else:
                        twice = np.asarray(da) - np.asarray(db)
                low, high = interval_bounds(
                    d, diff, method=how, confidence_level=level, double_replicates=twice
                )
        return PairedDifference(method, reference, metric, float(d), low, high, level, how)

    diffs = {m: paired(primary, m, best, interval_method) for m in candidates}
    if n_resamples:
        tied = tuple(m for m in candidates if m == best or not diffs[m].excludes_zero)
    else:
        tied = (best,)
    guards = {
        m: {
            g: paired(g, m, _UNCALIBRATED)
            for g in _GUARDS
            if comparison.values[m].get(g) is not None
        }
        for m in candidates
        if m != _UNCALIBRATED
    }
    warnings = {m: tuple(_warnings_of(comparison, m, guards.get(m, {}))) for m in candidates}
    if _UNCALIBRATED in tied:
        recommended = _UNCALIBRATED
        reason = (
            "the uncalibrated model is tied with the best"
            if n_resamples
            else "the uncalibrated model has the lowest estimate"
        )
    else:
        recommended, reason = _choose(comparison, tied, estimates, guards)
    improvement = None
    if recommended != _UNCALIBRATED:
        improvement = paired(primary, recommended, _UNCALIBRATED, interval_method)
    return Verdict(
        primary,
        recommended,
        best,
        tied,
        diffs,
        improvement,
        guards,
        warnings,
        reason,
        float(confidence_level),
        int(n_resamples),
        estimates,
    )


def _family_rank(comparison, method: str) -> int:
    calibrator = comparison.calibrators.get(method)
    family = getattr(calibrator, "family", None)
    return _FAMILY_ORDER.index(family) if family in _FAMILY_ORDER else len(_FAMILY_ORDER)


def _keeps_accuracy(comparison, method: str) -> bool:
    calibrator = comparison.calibrators.get(method)
    return bool(getattr(calibrator, "accuracy_preserving", False))


def _raises_brier(guards: dict) -> bool:
    brier = guards.get("brier")
    return brier is not None and np.isfinite(brier.low) and brier.low > 0


def _choose(comparison, tied, estimates, guards) -> tuple[str, str]:
    """The recommended method among the tied ones (never "uncalibrated") and why."""
    pool = [m for m in tied if m != _UNCALIBRATED]
    if len(pool) == 1:
        m = pool[0]
        why = "the lowest estimate, clearly below the others" if len(tied) == 1 else ""
        # a change of the argmax is said once, as a warning with its size
        keeps = "keeps accuracy" if _keeps_accuracy(comparison, m) else ""
        return m, ", ".join(w for w in (why, keeps) if w) or "the only method tied with the best"

    def key(m):
        return (
            not _keeps_accuracy(comparison, m),
            _family_rank(comparison, m),
            _raises_brier(guards.get(m, {})),
            estimates[m],
            list(comparison.methods).index(m),
        )

    chosen = min(pool, key=key)
    parts = []
    if _keeps_accuracy(comparison, chosen) and not all(
        _keeps_accuracy(comparison, m) for m in pool
    ):
        parts.append("keeps accuracy")
    family = getattr(comparison.calibrators.get(chosen), "family", None)
    if family and any(_family_rank(comparison, m) > _family_rank(comparison, chosen) for m in pool):
        parts.append(f"the simplest of the tied ({family})")
    if not parts:
        parts.append(
            "keeps accuracy" if _keeps_accuracy(comparison, chosen) else "the lowest estimate"
        )
    return chosen, ", ".join(parts)


def _warnings_of(comparison, method: str, guards: dict) -> list[str]:
    """What to know before shipping ``method``."""
    out = list(comparison.fit_warnings.get(method, ()))
    calibrator = comparison.calibrators.get(method)
    if calibrator is None:
        return out
    info = getattr(calibrator, "fit_info", {}) or {}
    if info.get("at_bound"):
        out.append(f"the fit hit its bound ({info.get('message', info.get('bound'))})")
    elif info.get("converged") is False:
        out.append(f"the fit did not converge ({info.get('message', 'no message')})")
    acc = guards.get("accuracy")
    if acc is not None and not getattr(calibrator, "accuracy_preserving", False):
        if acc.estimate != 0:
            sure = " (beyond noise)" if acc.excludes_zero else ""
            out.append(
                f"changes accuracy by {acc.estimate:+.4f}{sure}: it is not accuracy-preserving"
            )
    for key, label in (("brier", "the Brier score"), ("nll", "the NLL")):
        d = guards.get(key)
        if d is not None and np.isfinite(d.low) and d.low > 0:
            out.append(
                f"raises {label} by {d.estimate:.4f} [{d.low:.4f}, {d.high:.4f}]: a proper "
                "score rose, so it gave up more sharpness than it gained calibration"
            )
    bins = (getattr(calibrator, "params", {}) or {}).get("bins")
    n_calib = comparison.n_calib
    if getattr(calibrator, "family", None) == "binning" and isinstance(bins, int) and n_calib:
        # a top-label wrapper bins each predicted class's rows apart: about n / K of them
        per_class = method.startswith(("tl-", "tkl-")) and comparison.n_classes > 2
        per_bin = n_calib / max(bins, 1) / (comparison.n_classes if per_class else 1)
        if per_bin < MIN_ROWS_PER_BIN:
            out.append(
                f"{n_calib:,} calibration rows for {bins} bins ({per_bin:.0f} a bin, fewer than "
                f"{MIN_ROWS_PER_BIN}): its bin estimates are noisy; use fewer bins or more rows"
            )
    return list(dict.fromkeys(out))
