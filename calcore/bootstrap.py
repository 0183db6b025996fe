"""Bootstrap confidence intervals for any metric of a set of predictions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.stats import bootstrap

from calcore._errors import CalcoreError
from calcore.predictions import Predictions

__all__ = ["Interval", "bootstrap_interval"]


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


def bootstrap_interval(
    metric: Callable[[Predictions], float],
    preds: Predictions,
    *,
    n_resamples: int = 200,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of ``metric(preds)`` over resampled rows.

    Rows are resampled with replacement (the metric sees ``preds.subset(rows)``),
    through :func:`scipy.stats.bootstrap` with ``method="percentile"``. BCa is
    not used: its jackknife step would evaluate the metric ``n`` more times.

    Parameters
    ----------
    metric : callable
        ``Predictions -> float``, e.g. ``functools.partial(calcore.top_label_ece, bins=15)``.
    preds : Predictions
    n_resamples : int, default 200
    confidence_level : float, default 0.95
    seed : int, default 0
        Seeds the resampling; the same seed gives the same interval.

    Returns
    -------
    Interval

    Raises
    ------
    CalcoreError
        ``n_resamples < 2`` or a confidence level outside (0, 1).

    References
    ----------
    Efron & Tibshirani (1993), Ch. 13.
    """
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 2:
        raise CalcoreError(f"n_resamples must be an integer >= 2; got {n_resamples!r}.")
    if not 0 < confidence_level < 1:
        raise CalcoreError(f"confidence_level must be in (0, 1); got {confidence_level!r}.")
    estimate = float(metric(preds))
    if preds.n_samples < 2:
        return Interval(estimate, np.nan, np.nan, confidence_level, 0)
    rows = np.arange(preds.n_samples)
    res = bootstrap(
        (rows,),
        lambda idx: metric(preds.subset(idx.astype(np.int64))),
        n_resamples=int(n_resamples),
        confidence_level=confidence_level,
        method="percentile",
        vectorized=False,
        rng=np.random.default_rng(seed),
    )
    ci = res.confidence_interval
    return Interval(estimate, float(ci.low), float(ci.high), confidence_level, int(n_resamples))
