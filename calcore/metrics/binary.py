"""Calibration measures of binary classifiers: O/E, Spiegelhalter's Z, Hosmer-Lemeshow
and the ECE of the positive class (slope and intercept: :mod:`calcore.metrics.binary_fit`).

These are the numbers that ads, fraud, credit and clinical teams report. They need
predictions with exactly two classes; the positive class is class index 1, so that
``p = probs[:, 1]`` and ``y = (labels == 1)``. Row weights (``sample_weight=``, default
``preds.sample_weight``) are frequency weights: an integer weight counts the row that many
times, exactly. For more classes use the multiclass errors (class-wise ECE and the others
of :data:`calcore.METRICS`); one-vs-rest versions are not offered.

References
----------
Van Calster et al. (2016), "A calibration hierarchy for risk models was defined: from
utopia to empirical data", J. Clin. Epidemiol. 74; Van Calster et al. (2019),
"Calibration: the Achilles heel of predictive analytics", BMC Medicine 17; Cox (1958),
"Two further applications of a model for binary regression", Biometrika 45;
Spiegelhalter (1986), "Probabilistic prediction in patient management and clinical
trials", Stat. Med. 5; Hosmer & Lemeshow (1980); Hosmer et al. (1997), "A comparison of
goodness-of-fit tests for the logistic regression model", Stat. Med. 16; Bertolini et al.
(2000), "One model, several results: the paradox of the Hosmer-Lemeshow goodness-of-fit
test", J. Epidemiol. Biostat. 5.
"""

from __future__ import annotations

import numpy as np
from scipy.special import chdtrc, ndtr

from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import row_weights
from calcore.predictions import Predictions
from calcore.statistics.bin_statistics import BinStatistics, statistics_for

__all__ = [
    "LOGIT_CLIP",
    "HL_GROUPS",
    "check_binary",
    "binary_rows",
    "model_logits",
    "observed_expected",
    "oe_ratio",
    "spiegelhalter_z",
    "spiegelhalter_p",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "hosmer_lemeshow_from_bins",
    "hosmer_lemeshow_p_from_bins",
    "oe_ratio_from_bins",
    "positive_class_ece",
    "positive_class_error_from_bins",
]

#: Probabilities are clipped to ``[LOGIT_CLIP, 1 - LOGIT_CLIP]`` before their logit (float64
#: eps, the floor of the NLL too): a probability of exactly 0 or 1 becomes a logit of
#: -+36.04 instead of an infinite one. Predictions made from logits use them as they are.
LOGIT_CLIP = float(np.finfo(np.float64).eps)

#: Groups of the Hosmer-Lemeshow statistic (deciles of risk).
HL_GROUPS = 10
#: Relative rounding of a group's expected count (a sum of n_g probabilities) in HL.
_CERTAIN = 64 * float(np.finfo(np.float64).eps)

_MULTICLASS = (
    "the metrics of several classes are accuracy, nll, brier, the confidence, top-label and "
    "class-wise ECEs (conf_ece, top_label_ece, classwise_ece and their l2 and MCE versions), "
    "ace, tace, debiased_ece, kde_ece and kde_ece_classwise"
)


def check_binary(preds: Predictions, what: str) -> None:
    """Raise a :class:`CalcoreError` unless ``preds`` has exactly two classes."""
    if preds.n_classes != 2:
        raise CalcoreError(
            f"{what} is a measure of binary models and needs predictions with exactly 2 "
            f"classes (the positive class is class index 1); these have {preds.n_classes}. "
            f"One-vs-rest is not offered: {_MULTICLASS}."
        )


def model_logits(preds: Predictions) -> np.ndarray:
    """The model's logit of the positive class, ``z = log(p / (1 - p))``, shape (n,).

    From the logits when the predictions carry them (``z = logit_1 - logit_0``, exact),
    else from ``p = probs[:, 1]`` clipped to ``[LOGIT_CLIP, 1 - LOGIT_CLIP]``.
    """
    check_binary(preds, "model_logits")
    if preds.logits is not None:
        return preds.logits[:, 1] - preds.logits[:, 0]
    p = np.clip(preds.probs[:, 1], LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.log(p) - np.log1p(-p)


def binary_rows(preds: Predictions, sample_weight, what: str):
    """``p = probs[:, 1]``, ``y`` (float 0/1) and the row weights (ones when none), after
    :func:`check_binary` (``what`` names the caller in its message)."""
    check_binary(preds, what)
    w = row_weights(preds, sample_weight)
    w = np.ones(preds.n_samples) if w is None else w
    return preds.probs[:, 1], (preds.labels == 1).astype(np.float64), w


def observed_expected(preds: Predictions, *, sample_weight=None) -> tuple[float, float]:
    """The observed rate of the positive class and the mean predicted probability.

    Returns
    -------
    (observed, expected) : tuple of float
        ``sum w y / sum w`` and ``sum w p / sum w``.

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.8, 0.2], [0.6, 0.4], [0.4, 0.6]], [0, 1, 1])
    >>> [round(v, 4) for v in calcore.observed_expected(preds)]  # 2/3 and 1.2/3
    [0.6667, 0.4]
    """
    p, y, w = binary_rows(preds, sample_weight, "observed_expected")
    total = float(w.sum())
    return float(w @ y) / total, float(w @ p) / total


def oe_ratio(preds: Predictions, *, sample_weight=None) -> float:
    """Observed over expected events, ``sum w y / sum w p``: calibration-in-the-large.

    1 for a model whose mean prediction is the event rate; above 1 it under-predicts,
    below 1 it over-predicts. ``inf`` when every ``p`` is 0 but some event occurred, NaN
    when there is neither.

    References
    ----------
    Van Calster et al. (2016), "calibration-in-the-large"; Riley et al. (2024), "O/E".

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.8, 0.2], [0.6, 0.4], [0.4, 0.6]], [0, 1, 1])
    >>> round(calcore.oe_ratio(preds), 4)  # 2 events, 1.2 expected
    1.6667
    """
    p, y, w = binary_rows(preds, sample_weight, "oe_ratio")
    return _ratio(float(w @ y), float(w @ p))


def _ratio(observed: float, expected: float) -> float:
    if expected > 0:
        return observed / expected
    return np.inf if observed > 0 else np.nan


def oe_ratio_from_bins(stats: BinStatistics) -> float:
    """O/E from class-wise bin statistics (the bins of class 1 cover every row): the
    events and the expected events summed over class 1's bins."""
    ones = (stats.bin_group == 1) & stats.nonempty
    count = stats.count[ones]
    return _ratio(
        float(np.sum(count * stats.mean_outcome[ones])),
        float(np.sum(count * stats.mean_score[ones])),
    )


def _spiegelhalter_sums(p, y, w) -> tuple[float, float]:
    # numerator and variance of Spiegelhalter's statistic: sum w (y - p)(1 - 2p) has mean 0
    # and variance sum w (1 - 2p)^2 p (1 - p) when y ~ Bernoulli(p) independently
    c = 1.0 - 2.0 * p
    return float(w @ ((y - p) * c)), float(w @ (c * c * p * (1.0 - p)))


def spiegelhalter_z(preds: Predictions, *, sample_weight=None) -> float:
    """Spiegelhalter's Z, ``sum w (y - p)(1 - 2p) / sqrt(sum w (1 - 2p)^2 p (1 - p))``.

    Standard normal under the hypothesis that every ``y`` is Bernoulli(``p``) (the model is
    calibrated row by row); 0 ideal, large ``|Z|`` is evidence of miscalibration. It
    decomposes the Brier score: ``Z`` is its standardised excess over what a calibrated
    model would score. NaN when every ``p`` is 0, 1/2 or 1 (zero variance).

    References
    ----------
    Spiegelhalter (1986), Eq. 4; Rufibach (2010), "Use of Brier score to assess binary
    predictions", J. Clin. Epidemiol. 63.

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8]], [1, 1])
    >>> round(calcore.spiegelhalter_z(preds), 4)  # (0.9*0.8 + 0.2*-0.6) / sqrt(0.0576+0.0576)
    1.7678
    """
    p, y, w = binary_rows(preds, sample_weight, "spiegelhalter_z")
    num, var = _spiegelhalter_sums(p, y, w)
    return float(num / np.sqrt(var)) if var > 0 else np.nan


def spiegelhalter_p(preds: Predictions, *, sample_weight=None) -> float:
    """Two-sided p-value of :func:`spiegelhalter_z`, ``2 (1 - Phi(|Z|))``.

    A small p-value is evidence that the model is not calibrated; a large one is no
    evidence either way (with few rows the test has little power).

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8]], [1, 1])
    >>> round(calcore.spiegelhalter_p(preds), 4)
    0.0771
    """
    return _two_sided(spiegelhalter_z(preds, sample_weight=sample_weight))


def _two_sided(z) -> float:
    # scipy.special's ndtr and chdtrc (below) are what scipy.stats's norm.sf and chi2.sf
    # compute, value for value; importing scipy.stats took a third of `import calcore`
    return float(2.0 * ndtr(-np.abs(z)))


def _decile_bins(preds: Predictions, sample_weight) -> BinStatistics:
    check_binary(preds, "hosmer_lemeshow")
    return statistics_for(
        preds,
        "class-wise",
        binning="equal-mass",
        bins=HL_GROUPS,
        classes=[1],
        sample_weight=sample_weight,
        ranges=False,
    )


def hosmer_lemeshow_from_bins(stats: BinStatistics) -> tuple[float, int]:
    """The Hosmer-Lemeshow statistic and its number of non-empty groups from the
    class-wise equal-mass bins of class 1 (:func:`hosmer_lemeshow`).

    A group whose expected count ``E_g`` is 0 or ``n_g`` (every ``p`` in it 0, or every one
    1; within the rounding of the sum, ``64 eps n_g``) has no variance: it adds 0 when
    ``O_g = E_g`` (within the same rounding) and ``inf`` otherwise (an outcome the model
    called impossible).
    """
    ones = (stats.bin_group == 1) & stats.nonempty
    n_g = np.asarray(stats.count[ones], dtype=np.float64)
    observed = n_g * stats.mean_outcome[ones]
    expected = n_g * stats.mean_score[ones]
    variance = expected * (1.0 - expected / n_g)
    diff = np.abs(observed - expected)
    # E_g is a sum of n_g terms: within _CERTAIN n_g of 0 or n_g its variance is rounding
    # (and would make the statistic depend on the row order), so the group is certain
    rounding = _CERTAIN * n_g
    certain = (expected <= rounding) | (n_g - expected <= rounding)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(certain, np.where(diff > rounding, np.inf, 0.0), diff**2 / variance)
    return float(terms.sum()), int(n_g.size)


def _hl_p(statistic: float, groups: int) -> float:
    # G degrees of freedom, not G - 2: the G - 2 of Hosmer & Lemeshow (1980) is for the
    # rows a logistic model was fitted on (two fitted parameters); calcore evaluates
    # predictions on rows they were not fitted to, where under calibration each group's
    # standardised (O_g - E_g) is free and HL ~ chi2(G) (Hosmer, Lemeshow & Sturdivant 2013,
    # Sec. 5.2.2; on 400 simulated calibrated test sets of 6,000 rows, G - 2 rejected at
    # 0.05 in 11% of them, G in 4.5%: tests/evaluation/test_binary_summary.py)
    return float(chdtrc(groups, statistic)) if groups > 2 else np.nan


def hosmer_lemeshow(preds: Predictions, *, sample_weight=None) -> float:
    """The Hosmer-Lemeshow statistic on deciles of risk.

    ``HL = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))`` over the 10 equal-mass groups of
    ``p`` (the ``equal-mass`` binning of :mod:`calcore.foundation.binning`: a block of tied
    scores is never split, so a group can be empty and is then skipped), with ``O_g = sum w y``,
    ``E_g = sum w p`` and ``n_g = sum w`` in the group. For a group with ``E_g`` in
    ``{0, n_g}`` see :func:`hosmer_lemeshow_from_bins`. 0 ideal.

    The statistic depends on the grouping: other group counts, or other tie rules, can turn
    a "good fit" into a "poor fit" on the same data (Hosmer et al. 1997; Bertolini et al.
    2000). Report it with its groups, and prefer the calibration slope and intercept, or
    the reliability diagram, to read how a model is miscalibrated.

    References
    ----------
    Hosmer & Lemeshow (1980); Hosmer et al. (1997); Bertolini et al. (2000).

    Examples
    --------
    >>> import calcore
    >>> probs = [[1 - q, q] for q in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 0, 1, 0, 1, 1, 0, 1, 1, 1])
    >>> round(calcore.hosmer_lemeshow(preds), 4)  # one row per group: sum (y - p)^2 / (p (1 - p))
    7.7749
    """
    return hosmer_lemeshow_from_bins(_decile_bins(preds, sample_weight))[0]


def hosmer_lemeshow_p(preds: Predictions, *, sample_weight=None) -> float:
    """p-value of :func:`hosmer_lemeshow`: ``chi2.sf(HL, G)``, ``G`` the non-empty groups
    (NaN for fewer than 3): on held-out rows (the predictions were not fitted to them) the
    statistic of a calibrated model is chi-square with ``G`` degrees of freedom; ``G - 2``
    is for a logistic model's own fitting rows (Hosmer, Lemeshow & Sturdivant 2013, Sec.
    5.2.2). The grouping caveat of the statistic applies.

    Examples
    --------
    >>> import calcore
    >>> probs = [[1 - q, q] for q in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 0, 1, 0, 1, 1, 0, 1, 1, 1])
    >>> round(calcore.hosmer_lemeshow_p(preds), 4)  # chi-square with 10 degrees of freedom
    0.6508
    """
    return _hl_p(*hosmer_lemeshow_from_bins(_decile_bins(preds, sample_weight)))


def hosmer_lemeshow_p_from_bins(stats: BinStatistics) -> float:
    """:func:`hosmer_lemeshow_p` from the bins of :func:`hosmer_lemeshow_from_bins`."""
    return _hl_p(*hosmer_lemeshow_from_bins(stats))


def positive_class_error_from_bins(stats: BinStatistics) -> float:
    """The l1 ECE of class 1 from class-wise bin statistics: ``sum_b n_b / N |acc_b -
    conf_b|`` over class 1's bins (the class-1 term of the class-wise ECE)."""
    ones = (stats.bin_group == 1) & stats.nonempty
    return float(np.sum(stats.count[ones] / stats.n_rows * stats.gap[ones]))


def positive_class_ece(
    preds: Predictions, *, bins=15, binning="equal-width", sample_weight=None
) -> float:
    """The binned ECE of ``p = probs[:, 1]`` against ``y = (labels == 1)``.

    The class-wise ECE restricted to class 1, with the bins of the other binned metrics;
    for a binary model it is the ECE of the score the team ships, whereas the
    confidence ECE folds ``p`` and ``1 - p`` together.

    References
    ----------
    Naeini et al. (2015); Kull et al. (2019) (class-wise calibration).

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.8, 0.2], [0.8, 0.2], [0.3, 0.7]], [0, 1, 1])
    >>> round(calcore.positive_class_ece(preds, bins=10), 4)  # (2 * 0.3 + 0.3) / 3
    0.3
    """
    check_binary(preds, "positive_class_ece")
    return positive_class_error_from_bins(
        statistics_for(
            preds,
            "class-wise",
            binning=binning,
            bins=bins,
            classes=[1],
            sample_weight=sample_weight,
            ranges=False,
        )
    )
