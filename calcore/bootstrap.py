"""Bootstrap confidence intervals for any metric of a set of predictions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
from scipy.stats import bootstrap

from calcore._errors import CalcoreError
from calcore.predictions import Predictions

__all__ = ["Interval", "bootstrap_interval", "bootstrap_intervals"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a bootstrap percentile interval.

    Attributes
    ----------
    estimate : float
        The metric on the full data.
    low, high : float
        Interval bounds.
    confidence_level : float
    n_resamples : int
    """

    estimate: float
    low: float
    high: float
    confidence_level: float
    n_resamples: int


def bootstrap_intervals(
    statistics: Callable[[Predictions], Mapping[str, float]],
    preds: Predictions,
    *,
    n_resamples: int = 200,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> dict[str, Interval]:
    """Percentile bootstrap intervals of several metrics from one set of resamples.

    Rows are resampled with replacement (the statistics see
    ``preds.subset(rows)``), through :func:`scipy.stats.bootstrap` with
    ``method="percentile"``. BCa is not used: its jackknife would evaluate the
    metrics ``n`` more times. Binned ECEs are biased upwards on small samples,
    and so are their resamples: read the interval as the spread of the
    estimator, not as an interval around the true ECE.

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

    Raises
    ------
    CalcoreError
        ``n_resamples < 2`` or a confidence level outside (0, 1).

    References
    ----------
    Efron & Tibshirani (1993), "An Introduction to the Bootstrap", Ch. 13.
    """
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, (int, np.integer))
        or n_resamples < 2
    ):
        raise CalcoreError(f"n_resamples must be an integer >= 2; got {n_resamples!r}.")
    if not 0 < confidence_level < 1:
        raise CalcoreError(f"confidence_level must be in (0, 1); got {confidence_level!r}.")
    full = dict(statistics(preds))
    names = list(full)
    if preds.n_samples < 2:
        return {k: Interval(float(full[k]), np.nan, np.nan, confidence_level, 0) for k in names}

    def resampled(idx: np.ndarray) -> np.ndarray:
        values = statistics(preds.subset(idx.astype(np.int64)))  # once per resample, all metrics
        return np.array([values[k] for k in names], dtype=np.float64)

    res = bootstrap(
        (np.arange(preds.n_samples),),
        resampled,
        n_resamples=int(n_resamples),
        confidence_level=confidence_level,
        method="percentile",
        vectorized=False,
        rng=np.random.default_rng(seed),
    )
    low, high = (
        np.atleast_1d(res.confidence_interval.low),
        np.atleast_1d(res.confidence_interval.high),
    )
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
    >>> import functools, calcore
    >>> # calcore.bootstrap_interval(functools.partial(calcore.top_label_ece, bins=15), preds)
    """
    return bootstrap_intervals(
        lambda p: {"value": metric(p)},
        preds,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
    )["value"]
