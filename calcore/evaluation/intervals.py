"""Confidence intervals from bootstrap replicates: percentile, basic, normal, BC, BCa and
iterated (second-order) bias correction.

Every method reads the same replicates (the statistics engine computes them once for all
metrics, :func:`calcore.evaluate`); they differ in how the replicates' quantiles become
bounds. Binned calibration errors are biased upwards on finite samples and their
resamples more so, so the percentile interval of an ECE tends to sit above the estimate
and above the truth; the basic interval reflects the quantiles around the estimate and
so corrects a bias of the size the bootstrap sees. That size is too small where the bias
is far from linear in the sampling noise (an l1 gap near 0 in a bin of a few rows): the
iterated correction also reads a bootstrap of the bootstraps, and its interval spans the
once- and twice-corrected estimates. ``docs/replications/intervals.md``
measures how often each covers the true value (``benchmarks/study_intervals.py``).

``scipy.stats.bootstrap`` computes the same three kinds of interval (percentile, basic,
BCa) but only from data it resamples itself; here the replicates come from weighted sums
over count vectors, so the formulas are applied to them directly (Efron & Tibshirani
1993, Eq. 13.5, 14.10-14.15; Davison & Hinkley 1997, Eq. 5.6).

References
----------
Efron & Tibshirani (1993), "An Introduction to the Bootstrap", Ch. 10, 13-14.
Davison & Hinkley (1997), "Bootstrap Methods and their Application", Sec. 3.9, 5.2-5.3.
Hall (1992), "The Bootstrap and Edgeworth Expansion", Sec. 1.4 (iterated bias correction).
Cook & Stefanski (1994), "Simulation-extrapolation estimation in parametric measurement
error models", JASA 89 (the same extrapolation in the noise level).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from calcore.foundation.errors import CalcoreError

__all__ = [
    "DOUBLE_BOOTSTRAP_METHODS",
    "INTERVAL_METHODS",
    "check_interval_method",
    "interval_bounds",
]

#: The interval methods, in the order the coverage study reports them.
INTERVAL_METHODS = ("percentile", "basic", "normal", "bc", "bca", "iterated")
#: The methods that need the replicates of a bootstrap of the bootstrap (see
#: :func:`calcore.statistics.replicates.double_resample_counts`).
DOUBLE_BOOTSTRAP_METHODS = frozenset({"iterated"})


def check_interval_method(method) -> str:
    """Return ``method`` if it is one of :data:`INTERVAL_METHODS`, else raise CalcoreError."""
    if method not in INTERVAL_METHODS:
        raise CalcoreError(
            f"interval_method must be one of {list(INTERVAL_METHODS)}; got {method!r}."
        )
    return method


def interval_bounds(
    estimate: float,
    replicates,
    *,
    method: str = "percentile",
    confidence_level: float = 0.95,
    jackknife=None,
    double_replicates=None,
    bounds: tuple[float, float] = (-np.inf, np.inf),
    contain_estimate: bool = False,
) -> tuple[float, float]:
    """The ``(low, high)`` bounds of one metric's interval from its bootstrap replicates.

    Parameters
    ----------
    estimate : float
        The metric on the full data.
    replicates : array_like of shape (R,)
        The metric on each resample.
    method : {"percentile", "basic", "normal", "bc", "bca", "iterated"}, default "percentile"
        ``"percentile"``: the ``(1 -+ level) / 2`` quantiles ``q_lo, q_hi``.
        ``"basic"``: ``(2 estimate - q_hi, 2 estimate - q_lo)``, the percentile interval
        reflected around the estimate (Davison & Hinkley, Eq. 5.6).
        ``"normal"``: the bias-corrected estimate ``2 estimate - mean*`` plus or minus
        ``z`` replicate standard deviations (Davison & Hinkley, Eq. 5.5).
        ``"bc"``: percentile at levels shifted by the median bias ``z0 =
        Phi^-1(share of replicates below the estimate)`` (Efron & Tibshirani, Eq. 14.10
        with ``a = 0``). ``"bca"``: also accelerated by the skewness ``a`` of the
        ``jackknife`` values (Eq. 14.15). ``"iterated"``: from the once-corrected
        estimate ``2 estimate - mean*`` to the twice-corrected ``3 estimate - 3 mean* +
        mean**`` (``mean**`` the mean of ``double_replicates``: the bias of the
        bootstrap's own bias estimate removed, Hall 1992, Sec. 1.4; equivalently a
        quadratic extrapolation of the metric's mean at noise levels 0, 1 and 2 to -1,
        as in SIMEX), widened by ``z`` replicate standard deviations on both sides.
    confidence_level : float, default 0.95
    jackknife : array_like, optional
        Leave-one-group-out values of the metric; required by ``"bca"``.
    double_replicates : array_like, optional
        The metric on resamples of resamples; required by ``"iterated"``.
    bounds : tuple of float
        The metric's range; the bounds are clipped to it (a reflected bound of an error
        can fall below 0).
    contain_estimate : bool, default False
        Extend the interval to the estimate when it lies wholly on one side of it. A
        bias-corrected interval of an upward-biased ECE can end below the estimate; the
        extension keeps a report from showing a value outside its own interval, at the
        price of a wider (more conservative) interval on that side.

    Returns
    -------
    tuple of float
        NaN bounds if any replicate (or jackknife value) is NaN.

    Raises
    ------
    CalcoreError
        An unknown method, ``"bca"`` without jackknife values or ``"iterated"`` without
        double replicates.

    References
    ----------
    Efron & Tibshirani (1993), Ch. 13-14; Davison & Hinkley (1997), Sec. 5.2-5.3.

    Examples
    --------
    >>> reps = [0.12, 0.14, 0.15, 0.16, 0.18]
    >>> [round(b, 3) for b in interval_bounds(0.13, reps, method="percentile")]
    [0.122, 0.178]
    >>> [round(b, 3) for b in interval_bounds(0.13, reps, method="basic", bounds=(0, 1))]
    [0.082, 0.138]
    >>> twice = [0.14, 0.155, 0.165, 0.175, 0.19]  # twice the noise: mean 0.165
    >>> [round(b, 3) for b in interval_bounds(0.13, reps, method="iterated",
    ...                                       double_replicates=twice)]
    [0.061, 0.154]
    """
    check_interval_method(method)
    reps = np.asarray(replicates, dtype=np.float64)
    if reps.size == 0 or np.isnan(reps).any():
        return np.nan, np.nan
    if method != "percentile" and not np.isfinite(estimate):
        return np.nan, np.nan  # the other methods are relative to the estimate
    alpha = (1.0 - confidence_level) / 2.0
    if method == "percentile":
        low, high = np.quantile(reps, [alpha, 1.0 - alpha])
    elif method == "basic":
        q_lo, q_hi = np.quantile(reps, [alpha, 1.0 - alpha])
        low, high = 2.0 * estimate - q_hi, 2.0 * estimate - q_lo
    elif method in ("normal", "iterated"):
        once = 2.0 * estimate - reps.mean()
        half = float(ndtri(1.0 - alpha)) * reps.std(ddof=1) if reps.size > 1 else np.nan
        low, high = once - half, once + half
        if method == "iterated":
            if double_replicates is None:
                raise CalcoreError(
                    "interval_method='iterated' needs the replicates of a double bootstrap."
                )
            reps2 = np.asarray(double_replicates, dtype=np.float64)
            if reps2.size == 0 or np.isnan(reps2).any():
                return np.nan, np.nan
            twice = 3.0 * estimate - 3.0 * reps.mean() + reps2.mean()
            low, high = min(once, twice) - half, max(once, twice) + half
    else:
        if method == "bca" and jackknife is None:
            raise CalcoreError("interval_method='bca' needs the jackknife values.")
        accel = 0.0 if method == "bc" else _acceleration(jackknife)
        if np.isnan(accel):
            return np.nan, np.nan
        levels = _bca_levels(_median_bias(reps, estimate), accel, alpha)
        low, high = np.quantile(reps, levels)
    if contain_estimate and np.isfinite(estimate):
        low, high = min(low, estimate), max(high, estimate)
    low, high = np.clip([low, high], *bounds)
    return float(low), float(high)


def _median_bias(reps: np.ndarray, estimate: float) -> float:
    """``z0 = Phi^-1(P*(theta* < theta_hat))``, ties counted half, kept finite.

    With every replicate above the estimate (an ECE's resamples often are) the share is
    0 and ``z0`` infinite; it is clipped to the share ``1 / (2R)``, the most a finite
    number of replicates can show.
    """
    r = reps.size
    share = (np.count_nonzero(reps < estimate) + 0.5 * np.count_nonzero(reps == estimate)) / r
    return float(ndtri(np.clip(share, 0.5 / r, 1.0 - 0.5 / r)))


def _acceleration(jackknife) -> float:
    """The BCa acceleration from jackknife values (Efron & Tibshirani, Eq. 14.15)."""
    jack = np.asarray(jackknife, dtype=np.float64)
    if jack.size < 2 or np.isnan(jack).any():
        return np.nan
    d = jack.mean() - jack
    denom = 6.0 * np.sum(d * d) ** 1.5
    return float(np.sum(d**3) / denom) if denom > 0 else 0.0


def _bca_levels(z0: float, accel: float, alpha: float) -> list[float]:
    """The two quantile levels of the BC/BCa interval (Eq. 14.10)."""
    z = ndtri(np.array([alpha, 1.0 - alpha]))
    shifted = z0 + (z0 + z) / (1.0 - accel * (z0 + z))
    return [float(v) for v in ndtr(shifted)]
