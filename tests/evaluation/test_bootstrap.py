"""``calcore.bootstrap_interval`` (calcore.evaluation.bootstrap): percentile intervals reproduced
by hand from the same resamples, its confidence level, and the width of the accuracy's
interval against the normal approximation."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import calcore


@functools.lru_cache(maxsize=None)
def _boot_preds():
    rng = np.random.default_rng(21)
    p = rng.dirichlet(np.full(3, 0.8), size=150)
    return calcore.Predictions.from_probs(p, rng.integers(0, 3, size=150))


def _manual_percentile_interval(metric, preds, *, n_resamples, seed, level=0.95):
    """scipy.stats.bootstrap(method='percentile') by hand: one (n_resamples, n) draw of row
    indices from default_rng(seed).integers, the metric of each resample, linear quantiles."""
    n = preds.n_samples
    idx = np.random.default_rng(seed).integers(0, n, (n_resamples, n))
    values = np.array([metric(preds.subset(rows)) for rows in idx])
    alpha = (1 - level) / 2
    return np.quantile(values, [alpha, 1 - alpha])


@pytest.mark.parametrize(
    "metric",
    [
        calcore.accuracy,
        functools.partial(calcore.top_label_ece, bins=10),
        functools.partial(calcore.classwise_ece, bins=5, binning="equal-mass"),
    ],
)
@pytest.mark.parametrize("seed", [0, 9])
def test_percentile_interval_equals_manual_resampling(metric, seed):
    preds = _boot_preds()
    iv = calcore.bootstrap_interval(metric, preds, n_resamples=60, seed=seed)
    low, high = _manual_percentile_interval(metric, preds, n_resamples=60, seed=seed)
    assert iv.low == pytest.approx(low, rel=1e-12, abs=1e-15)
    assert iv.high == pytest.approx(high, rel=1e-12, abs=1e-15)
    assert iv.estimate == metric(preds)
    assert low < high


def test_percentile_interval_confidence_level_and_evaluate_agree_with_manual():
    preds = _boot_preds()
    iv = calcore.bootstrap_interval(
        calcore.accuracy, preds, n_resamples=60, seed=2, confidence_level=0.8
    )
    low, high = _manual_percentile_interval(
        calcore.accuracy, preds, n_resamples=60, seed=2, level=0.8
    )
    assert (iv.low, iv.high) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    # evaluate draws the same resamples: its accuracy and TL-ECE intervals match too
    report = calcore.evaluate(preds, bins=10, n_resamples=20, seed=3, interval_method="percentile")
    for key, metric in [
        ("accuracy", calcore.accuracy),
        ("top_label_ece", functools.partial(calcore.top_label_ece, bins=10)),
    ]:
        low, high = _manual_percentile_interval(metric, preds, n_resamples=20, seed=3)
        assert report.intervals[key].low == pytest.approx(low, rel=1e-12, abs=1e-15)
        assert report.intervals[key].high == pytest.approx(high, rel=1e-12, abs=1e-15)


def test_accuracy_interval_width_matches_the_normal_approximation():
    # For accuracy a on n rows the bootstrap distribution is ~ Binomial(n, a)/n, so the 95%
    # percentile interval has width ~ 2 * 1.96 * sqrt(a (1 - a) / n) (within 30% at 400 resamples).
    rng = np.random.default_rng(8)
    n = 2000
    p = rng.dirichlet(np.ones(3), size=n)
    preds = calcore.Predictions.from_probs(p, rng.integers(0, 3, size=n))
    iv = calcore.bootstrap_interval(calcore.accuracy, preds, n_resamples=400, seed=0)
    a = calcore.accuracy(preds)
    assert iv.low < a < iv.high
    width = 2 * 1.96 * math.sqrt(a * (1 - a) / n)
    assert 0.7 * width <= iv.high - iv.low <= 1.3 * width
