"""Bootstrap confidence intervals for any metric of a set of predictions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import BOOTSTRAP_RESAMPLES
from calcore.predictions import Predictions

__all__ = [
    "Interval",
    "bootstrap_interval",
    "bootstrap_intervals",
    "check_bootstrap_options",
    "percentile_bounds",
]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a bootstrap interval.

    Attributes
    ----------
    estimate : float
        The metric on the full data.
    low, high : float
        Interval bounds.
    confidence_level : float
    n_resamples : int
    method : str
        How the bounds were read off the replicates (see
        :data:`calcore.evaluation.intervals.INTERVAL_METHODS`).
    caveat : str or None
        Why this interval should not be read as a range for the true value, on these
        data (e.g. bins too sparse for any bias correction the coverage study checked);
        None when nothing is known against it. The metric's own caveat, whatever the
        data, is ``calcore.METRICS[key].interval_caveat``.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> calcore.bootstrap_interval(calcore.accuracy, preds, n_resamples=100, seed=0)
    ... # doctest: +NORMALIZE_WHITESPACE
    Interval(estimate=0.75, low=0.25, high=1.0, confidence_level=0.95, n_resamples=100,
             method='percentile', caveat=None)
    """

    estimate: float
    low: float
    high: float
    confidence_level: float
    n_resamples: int
    method: str = "percentile"
    caveat: str | None = None


def percentile_bounds(replicates, confidence_level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-interval bounds of bootstrap replicates along axis 0.

    ``np.quantile`` with linear interpolation at ``(1 - level) / 2`` and
    ``(1 + level) / 2``: the percentile interval of :func:`scipy.stats.bootstrap`.
    A NaN replicate makes the bounds NaN (never silently dropped).
    """
    alpha = (1.0 - confidence_level) / 2.0
    low, high = np.quantile(np.asarray(replicates, dtype=np.float64), [alpha, 1.0 - alpha], axis=0)
    return np.atleast_1d(low), np.atleast_1d(high)


def check_bootstrap_options(n_resamples, confidence_level) -> None:
    """Raise CalcoreError unless ``n_resamples >= 2`` is an integer and the level is in (0, 1)."""
    BOOTSTRAP_RESAMPLES.check(n_resamples, "n_resamples")
    if not 0 < confidence_level < 1:
        raise CalcoreError(f"confidence_level must be in (0, 1); got {confidence_level!r}.")


def bootstrap_intervals(
    statistics: Callable[[Predictions], Mapping[str, float]],
    preds: Predictions,
    *,
    n_resamples: int = 200,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> dict[str, Interval]:
    """Percentile bootstrap intervals of several metrics from one set of resamples.

    Rows are resampled with replacement and the statistics see
    ``preds.subset(rows)`` for each resample: any callable works, at the price
    of one full evaluation per resample. :func:`calcore.evaluate` uses the fast
    count-vector bootstrap instead (:mod:`calcore.statistics.replicates`), which draws
    the same resamples for the same seed.

    The resamples are ``default_rng(seed).integers(0, n, (n_resamples, n))``
    (the draw of :func:`scipy.stats.bootstrap`, so intervals did not move when
    it was replaced) and the bounds are percentiles of the replicates
    (:func:`percentile_bounds`). ``scipy.stats.bootstrap`` is deliberately not
    used: it only hands the statistic resampled data, so it cannot share
    weighted sums across metrics, which is what makes ``evaluate`` fast. BCa
    is not offered: its jackknife would evaluate the metrics ``n`` more
    times. Binned ECEs are biased upwards on small samples, and so are their
    resamples: read the interval as the spread of the estimator, not as an
    interval around the true ECE.

    Parameters
    ----------
    statistics : callable
        ``Predictions -> {name: float}``; every call must return the same names.
    preds : Predictions
    n_resamples : int, default 200
    confidence_level : float, default 0.95
    seed : int, default 0
        Seeds the resampling; the same seed gives the same intervals.

    Returns
    -------
    dict of str to Interval
        NaN bounds (``n_resamples = 0``) when there are fewer than 2 rows.

    Raises
    ------
    CalcoreError
        ``n_resamples < 2`` or a confidence level outside (0, 1).

    References
    ----------
    Efron & Tibshirani (1993), "An Introduction to the Bootstrap", Ch. 13.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> def stats(p):
    ...     return {"acc": calcore.accuracy(p), "nll": calcore.negative_log_likelihood(p)}
    >>> ivs = calcore.bootstrap_intervals(stats, preds, n_resamples=50, seed=0)
    >>> sorted(ivs), ivs["acc"].estimate, ivs["acc"].n_resamples
    (['acc', 'nll'], 0.75, 50)
    """
    check_bootstrap_options(n_resamples, confidence_level)
    full = dict(statistics(preds))
    names = list(full)
    if preds.n_samples < 2:
        return {k: Interval(float(full[k]), np.nan, np.nan, confidence_level, 0) for k in names}
    n = preds.n_samples
    idx = np.random.default_rng(seed).integers(0, n, (int(n_resamples), n))
    values = np.empty((idx.shape[0], len(names)))
    for r, rows in enumerate(idx):  # once per resample, all metrics
        got = statistics(preds.subset(rows))
        values[r] = [got[k] for k in names]
    low, high = percentile_bounds(values, confidence_level)
    return {
        k: Interval(
            float(full[k]), float(low[i]), float(high[i]), confidence_level, int(n_resamples)
        )
        for i, k in enumerate(names)
    }


def bootstrap_interval(
    metric: Callable[[Predictions], float],
    preds: Predictions,
    *,
    n_resamples: int = 200,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of one metric; see :func:`bootstrap_intervals`.

    Examples
    --------
    >>> import calcore
    >>> p = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]],
    ...                                    [0, 1, 1, 1])
    >>> iv = calcore.bootstrap_interval(calcore.accuracy, p, n_resamples=50, seed=0)
    >>> iv.estimate, 0.0 <= iv.low <= iv.estimate <= iv.high <= 1.0
    (0.75, True)
    """
    return bootstrap_intervals(
        lambda p: {"value": metric(p)},
        preds,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
    )["value"]
