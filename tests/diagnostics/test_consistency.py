"""Consistency bands (calcore.diagnostics.consistency) against Binomial quantiles.

Reference computed here: ``scipy.stats.binom.ppf`` (a bin whose points all have score s
has frequency Binomial(n, s)/n under perfect calibration).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from calcore import CalcoreError, Predictions
from calcore.diagnostics.consistency import consistency_bands


def binary_rows(score, n):
    """n rows predicting class 0 with confidence ``score`` (>= 0.5)."""
    return np.tile([score, 1.0 - score], (n, 1))


def test_bands_deterministic_per_seed_and_differ_across_seeds():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=300)
    preds = Predictions.from_probs(p, rng.integers(0, 3, 300))
    a = consistency_bands(preds, n_resamples=50, seed=11)
    b = consistency_bands(preds, n_resamples=50, seed=11)
    c = consistency_bands(preds, n_resamples=50, seed=12)
    np.testing.assert_array_equal(a.lower, b.lower)
    np.testing.assert_array_equal(a.upper, b.upper)
    ok = ~np.isnan(a.lower)
    assert (a.lower[ok] != c.lower[ok]).any() or (a.upper[ok] != c.upper[ok]).any()
    assert a.seed == 11 and c.seed == 12 and a.n_resamples == 50 and a.confidence_level == 0.9


def test_bands_match_binomial_quantiles():
    n1, s1, n2, s2 = 200, 0.55, 300, 0.85
    p = np.vstack([binary_rows(s1, n1), binary_rows(s2, n2)])
    y = np.zeros(n1 + n2, dtype=int)  # the labels do not matter under the null
    preds = Predictions.from_probs(p, y)
    bands = consistency_bands(preds, bins=10, n_resamples=4000, confidence_level=0.9, seed=1)
    for b, n, s in [(5, n1, s1), (8, n2, s2)]:
        assert bands.confidence[b] == pytest.approx(s, rel=1e-12)
        lo_ref = binom.ppf(0.05, n, s) / n
        hi_ref = binom.ppf(0.95, n, s) / n
        # Monte-Carlo tolerance: one atom of Binomial(n, s)/n
        assert abs(bands.lower[b] - lo_ref) <= 1.0 / n + 1e-12
        assert abs(bands.upper[b] - hi_ref) <= 1.0 / n + 1e-12
        assert bands.lower[b] < s < bands.upper[b]
    # a 50% band is narrower than the 90% band, and matches the quartiles
    half = consistency_bands(preds, bins=10, n_resamples=4000, confidence_level=0.5, seed=1)
    assert abs(half.lower[8] - binom.ppf(0.25, n2, s2) / n2) <= 1.0 / n2 + 1e-12
    assert abs(half.upper[8] - binom.ppf(0.75, n2, s2) / n2) <= 1.0 / n2 + 1e-12
    assert half.upper[8] - half.lower[8] < bands.upper[8] - bands.lower[8]


def test_bands_empty_bins_nan_and_certain_bins_exact():
    p = np.vstack([binary_rows(1.0, 20), binary_rows(0.75, 40)])
    preds = Predictions.from_probs(p, np.zeros(60, dtype=int))
    bands = consistency_bands(preds, bins=5, n_resamples=100)
    # bins [0, .2), [.2, .4), [.4, .6) hold nothing
    assert np.isnan(bands.lower[:3]).all() and np.isnan(bands.upper[:3]).all()
    assert np.isnan(bands.confidence[:3]).all()
    # score 1.0: every draw is a success, the band is the point 1
    assert bands.lower[4] == 1.0 and bands.upper[4] == 1.0
    assert bands.confidence[4] == 1.0 and bands.confidence[3] == 0.75
    assert bands.lower[3] < 0.75 < bands.upper[3]


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"n_resamples": 0}, r"^n_resamples must be a positive integer; got 0\.$"),
        ({"n_resamples": -3}, r"^n_resamples must be a positive integer; got -3\.$"),
        ({"n_resamples": 2.5}, r"^n_resamples must be a positive integer; got 2\.5\.$"),
        ({"confidence_level": 0.0}, r"^confidence_level must be in \(0, 1\); got 0\.0\.$"),
        ({"confidence_level": 1.0}, r"^confidence_level must be in \(0, 1\); got 1\.0\.$"),
        ({"confidence_level": 90}, r"^confidence_level must be in \(0, 1\); got 90\.$"),
        ({"confidence_level": float("nan")}, r"^confidence_level must be in \(0, 1\); got nan\.$"),
        ({"view": "toplabel"}, r"^view must be one of .*got 'toplabel'"),
        ({"bins": 0}, r"number of bins \(bins\) must be a positive integer; got 0"),
        ({"binning": "kmeans"}, r"^binning must be one of .*got 'kmeans'"),
    ],
)
def test_bands_errors(kwargs, pattern):
    preds = Predictions.from_probs(binary_rows(0.7, 10), np.zeros(10, dtype=int))
    with pytest.raises(CalcoreError, match=pattern):
        consistency_bands(preds, **kwargs)


def test_bands_reject_bool_resamples():
    preds = Predictions.from_probs(binary_rows(0.7, 10), np.zeros(10, dtype=int))
    with pytest.raises(CalcoreError, match=r"n_resamples must be a positive integer; got True"):
        consistency_bands(preds, n_resamples=True)
