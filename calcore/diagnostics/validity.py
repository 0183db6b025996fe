"""Validity and conditional-validity curves (Gupta & Ramdas 2021, Sec. 2.1 and 4).

For a predictor whose outputs fall in bins ``b`` (its distinct values for a
discrete predictor such as histogram binning, or the bins of a binning scheme
for a continuous one), with ``h_b`` the mean prediction and ``E_b`` the mean
outcome of the test points in ``b``:

* ``V(eps)`` = fraction of test points whose bin has ``|E_b - h_b| <= eps``;
* conditional validity: ``1{max_b |E_b - h_b| <= eps}``, averaged over resamples
  (always below ``V``).

Both are averaged over ``R`` random subsamples of the test set and reported
with the standard deviation of the mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import N_RESAMPLES
from calcore.foundation.validation import freeze_fields, refuse_weights
from calcore.predictions import Predictions
from calcore.predictions.reductions import binary_view
from calcore.statistics.bin_statistics import bin_statistics

__all__ = ["ValidityCurve", "validity_curve", "umd_validity_bound"]


@dataclass(frozen=True, eq=False)
class ValidityCurve:
    """Mean validity curves over resamples.

    Attributes
    ----------
    epsilon : ndarray of shape (E,)
    validity, validity_sem : ndarray of shape (E,)
        Mean of ``V(eps)`` over resamples and its standard deviation of the mean.
    conditional, conditional_sem : ndarray of shape (E,)
        Mean of the conditional indicator and its standard deviation of the mean.
    view : str
    group : str or None
        What the curve is of, for a legend: the class of a per-class curve
        (:func:`validity_curve`), or the calibrator's label with the class in brackets
        (:func:`calcore.evaluation.calibrator_validity`); None for the whole view.
    n_resamples : int

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> curve = calcore.validity_curve(preds, n_resamples=1)
    >>> curve.epsilon.size, curve.view, curve.n_resamples, float(curve.validity[-1])
    (201, 'confidence', 1, 0.25)
    """

    epsilon: np.ndarray
    validity: np.ndarray
    validity_sem: np.ndarray
    conditional: np.ndarray
    conditional_sem: np.ndarray
    view: str
    group: str | None
    n_resamples: int

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it


def validity_curves_once(scores, outcomes, groups, n_groups, epsilon, binning, bins):
    stats = bin_statistics(scores, outcomes, groups, n_groups=n_groups, binning=binning, bins=bins)
    ok = stats.count > 0
    gap, weight = stats.gap[ok], stats.count[ok] / max(scores.size, 1)
    # V(eps) = total weight of bins with gap <= eps: a step function, read off the sorted gaps.
    order = np.argsort(gap)
    cum = np.r_[0.0, np.cumsum(weight[order])]
    validity = cum[np.searchsorted(gap[order], epsilon, side="right")]
    conditional = (epsilon >= gap.max(initial=0.0)).astype(np.float64)
    return validity, conditional


def validity_curve(
    preds: Predictions,
    *,
    view: str = "confidence",
    group: int | None = None,
    binning="unique",
    bins=15,
    epsilon=None,
    n_resamples: int = 100,
    sample_fraction: float = 0.5,
    seed: int = 0,
) -> ValidityCurve:
    """Validity and conditional-validity curves of a predictor on a test set.

    Parameters
    ----------
    preds : Predictions
        The predictor's outputs on test data.
    view : {"confidence", "top-label", "class-wise"}
        For top-label the bins are (predicted class, value) pairs; for
        class-wise (with ``group``) one class's problem.
    group : int, optional
        Restrict to one group (predicted class for top-label, class for
        class-wise): the per-class curve.
    binning, bins :
        ``"unique"`` (default) for discrete predictors; e.g. ``"equal-width"``
        with 15 bins for continuous ones.
    epsilon : array_like, optional
        Grid of tolerances; default 201 points on [0, 0.2].
    n_resamples : int, default 100
        Random subsamples of the test rows; 1 uses all rows once.
    sample_fraction : float, default 0.5
        Fraction of rows in each subsample (without replacement).
    seed : int, default 0

    Returns
    -------
    ValidityCurve

    References
    ----------
    Gupta & Ramdas (2021), "Distribution-free calibration guarantees for
    histogram binning without sample splitting", Sec. 2.1 (validity plots) and
    Sec. 4 (conditional validity plots).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> curve = calcore.validity_curve(preds, epsilon=[0.1, 0.35, 1.0], n_resamples=1)
    >>> curve.validity.tolist(), curve.conditional.tolist()  # bin gaps 0.1, 0.8, 0.3, 0.4
    ([0.25, 0.5, 1.0], [0.0, 0.0, 1.0])
    """
    refuse_weights(preds, "validity_curve")
    N_RESAMPLES.check(n_resamples, "n_resamples")
    if not 0 < sample_fraction <= 1:
        raise CalcoreError(f"sample_fraction must be in (0, 1]; got {sample_fraction!r}.")
    # a copy (np.array): the result's own array, frozen with it, never the caller's
    eps = np.linspace(0.0, 0.2, 201) if epsilon is None else np.array(epsilon, dtype=np.float64)
    v = binary_view(preds, view)
    scores, outcomes, groups, n_groups = v.scores, v.outcomes, v.groups, v.n_groups
    group_name = None
    if group is not None:
        if not 0 <= group < v.n_groups:
            raise CalcoreError(f"group must be a class index 0..{v.n_groups - 1}; got {group!r}.")
        mask = v.groups == group
        scores, outcomes = scores[mask], outcomes[mask]
        groups, n_groups, group_name = np.zeros(mask.sum(), dtype=np.int64), 1, v.group_names[group]
    rng = np.random.default_rng(seed)
    m = scores.size
    take = m if n_resamples == 1 else max(1, int(round(sample_fraction * m)))
    val = np.empty((n_resamples, eps.size))
    cond = np.empty((n_resamples, eps.size))
    for r in range(n_resamples):  # R is small (~100); each pass is vectorised over points
        rows = np.arange(m) if n_resamples == 1 else rng.choice(m, size=take, replace=False)
        val[r], cond[r] = validity_curves_once(
            scores[rows], outcomes[rows], groups[rows], n_groups, eps, binning, bins
        )
    sem = (
        (lambda a: a.std(axis=0, ddof=1) / np.sqrt(n_resamples))
        if n_resamples > 1
        else (lambda a: np.zeros(eps.size))
    )
    return ValidityCurve(
        eps,
        val.mean(axis=0),
        sem(val),
        cond.mean(axis=0),
        sem(cond),
        v.name,
        group_name,
        int(n_resamples),
    )


def umd_validity_bound(
    epsilon, *, n_calib: int, n_bins: int, conditional: bool = False
) -> np.ndarray:
    """Distribution-free lower bound on validity for uniform-mass binning (UMD).

    With at least ``m = floor((n + 1) / B) - 1`` calibration points per bin,
    Hoeffding's inequality gives ``|P(Y=1 | h = h_b) - h_b| <= eps`` for every
    bin with probability at least ``1 - 2B exp(-2 (m - 1) eps^2)`` (conditional
    validity, union bound over bins), and for a random test point with
    probability at least ``1 - 2 exp(-2 (m - 1) eps^2)`` (marginal validity;
    no union bound, by the law of total expectation). Clipped to [0, 1].

    References
    ----------
    Gupta & Ramdas (2021), Theorems 3-4 (the theory curve of Fig. 3).

    Examples
    --------
    >>> import calcore
    >>> calcore.umd_validity_bound([0.0, 0.1, 0.2], n_calib=999, n_bins=10).round(4).tolist()
    [0.0, 0.7183, 0.9992]
    """
    if n_bins < 1 or n_calib < n_bins:
        raise CalcoreError(
            f"need n_calib >= n_bins >= 1; got n_calib={n_calib!r}, n_bins={n_bins!r}."
        )
    eps = np.asarray(epsilon, dtype=np.float64)
    m = (n_calib + 1) // n_bins - 1
    factor = 2.0 * n_bins if conditional else 2.0
    return np.clip(1.0 - factor * np.exp(-2.0 * max(m - 1, 0) * eps**2), 0.0, 1.0)
