"""The iterated (second-order) bias-corrected interval of the binned calibration errors.

Its second level -- a resample of each resample -- is checked against independent
references: the distribution of a double bootstrap's row counts (closed forms), and each
double replicate recomputed by the stand-alone metric functions with the counts as row
weights (not the statistics engine that computes them in ``evaluate``).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore
from calcore.evaluation.intervals import interval_bounds
from calcore.foundation.keyed_random import poisson_weights
from calcore.statistics.replicates import double_resample_counts, resample_counts

BINNED = {
    "conf_ece": calcore.confidence_ece,
    "top_label_ece": calcore.top_label_ece,
    "classwise_ece": calcore.classwise_ece,
}


def _preds(n, n_classes, seed):
    sim = calcore.dirichlet_simulator(n_classes, miscalibration="overconfident")
    return calcore.simulate_predictions(sim, n, seed=seed).preds


def test_double_resample_counts_are_resamples_of_each_resample():
    first = resample_counts(40, 3000, seed=1)
    second = double_resample_counts(first, seed=1)
    assert second.shape == first.shape
    np.testing.assert_array_equal(second.sum(axis=1), np.full(3000, 40.0))
    assert not (second[first == 0]).any()  # only rows of the parent resample are drawn
    # Marginally a row's count has mean 1 and variance E[Var(c2 | c1)] + Var(c1)
    # = (1 - (2 - 1/n) / n) + (1 - 1/n): about 1.93 for n = 40 (against 0.975 one level down).
    n = 40
    want = (1 - (2 - 1 / n) / n) + (1 - 1 / n)
    assert second.mean() == pytest.approx(1.0, abs=1e-12)
    assert second.var() == pytest.approx(want, rel=0.02)
    assert first.var() == pytest.approx(1 - 1 / n, rel=0.02)
    np.testing.assert_array_equal(second, double_resample_counts(first, seed=1))
    assert not np.array_equal(second, double_resample_counts(first, seed=2))


def test_nested_poisson_weights_resample_each_resample_and_are_keyed_by_position():
    first = poisson_weights(np.arange(400_000), 5, seed=3)
    w = poisson_weights(np.arange(400_000), 5, seed=3, of=first)
    assert not w[first == 0].any()  # a row out of a resample stays out of its resamples
    # Given the first level's count lam, Poisson(lam): mean lam, variance lam.
    for lam in (1, 2, 3):
        given = w[first == lam]
        assert given.mean() == pytest.approx(lam, rel=0.01) and given.var() == pytest.approx(
            lam, rel=0.03
        ), lam
    # Marginally Neyman type A(1, 1): P(0) = exp(e^-1 - 1), P(1) = exp(e^-1 - 2),
    # P(2) = P(1) (1 + e^-1) / 2; mean 1, variance 2.
    freq = np.bincount(w.ravel().astype(np.int64)) / w.size
    e = math.exp(-1.0)
    p0, p1 = math.exp(e - 1), math.exp(e - 2)
    for k, p in enumerate((p0, p1, p1 * (1 + e) / 2)):
        assert freq[k] == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / w.size)), k
    assert w.mean() == pytest.approx(1.0, abs=0.01) and w.var() == pytest.approx(2.0, rel=0.02)
    part = poisson_weights(np.arange(1000, 1200), 5, seed=3, of=first[:, 1000:1200])
    np.testing.assert_array_equal(part, w[:, 1000:1200])


def test_iterated_bounds_by_hand_and_without_the_second_level():
    reps = [0.12, 0.14, 0.15, 0.16, 0.18]
    twice = [0.14, 0.155, 0.165, 0.175, 0.19]
    half = 1.959963984540054 * math.sqrt(0.0005)
    once, second = 2 * 0.13 - 0.15, 3 * 0.13 - 3 * 0.15 + 0.165
    low, high = interval_bounds(0.13, reps, method="iterated", double_replicates=twice)
    assert low == pytest.approx(min(once, second) - half, abs=1e-12)
    assert high == pytest.approx(max(once, second) + half, abs=1e-12)
    normal = interval_bounds(0.13, reps, method="normal")
    assert low <= normal[0] and high >= normal[1]  # never narrower than the normal one
    with pytest.raises(calcore.CalcoreError, match="double bootstrap"):
        interval_bounds(0.13, reps, method="iterated")
    nan = interval_bounds(0.13, reps, method="iterated", double_replicates=[0.1, np.nan])
    assert all(math.isnan(b) for b in nan)


# Equal-width bins with a fixed count: the replicates keep the full sample's bins, which
# are what the metric function bins a reweighted sample into (data-dependent bins are a
# conditional bootstrap, see calcore.statistics.replicates).
@pytest.mark.parametrize(("n_classes", "bins"), [(3, 10), (5, 20)])
def test_double_replicates_equal_the_metric_functions_on_resampled_resamples(n_classes, bins):
    preds = _preds(300, n_classes, seed=4)
    report = calcore.evaluate(preds, n_resamples=25, seed=9, bins=bins)
    twice = double_resample_counts(resample_counts(300, 25, seed=9), seed=9)
    for key, metric in BINNED.items():
        assert report.intervals[key].method == "iterated"
        want = [metric(preds, bins=bins, sample_weight=w) for w in twice]
        np.testing.assert_allclose(report.double_replicates[key], want, rtol=1e-9, atol=1e-13)
        low, high = interval_bounds(
            report.metrics[key], report.replicates[key], method="iterated",
            double_replicates=want, bounds=(0.0, 1.0), contain_estimate=True,
        )  # fmt: skip
        assert (report.intervals[key].low, report.intervals[key].high) == pytest.approx(
            (low, high), abs=1e-12
        )


def test_metrics_without_bins_fall_back_to_normal_when_iterated_is_named():
    preds = _preds(200, 3, seed=5)
    report = calcore.evaluate(preds, n_resamples=20, seed=1, interval_method="iterated")
    assert report.intervals["top_label_ece"].method == "iterated"
    for key in ("accuracy", "nll", "brier", "kde_ece"):
        assert report.intervals[key].method == "normal", key
        assert key not in report.double_replicates
    percentile = calcore.evaluate(preds, n_resamples=20, seed=1, interval_method="percentile")
    assert percentile.double_replicates == {}  # no second level unless an interval reads it


def test_streamed_double_replicates_equal_the_metric_functions_whatever_the_batching(tmp_path):
    rng = np.random.default_rng(6)
    p = rng.beta(0.6, 2.0, 500)
    y = (rng.random(500) < np.clip(1.3 * p, 0, 1)).astype(np.int64)
    pq.write_table(pa.table({"label": y, "p_fraud": p}), tmp_path / "a.parquet", row_group_size=70)
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    reports = [
        calcore.evaluate(calcore.scan(tmp_path / "a.parquet", batch_rows=rows), n_resamples=8,
                         seed=2, metrics=list(BINNED))
        for rows in (33, 500)
    ]  # fmt: skip
    twice = poisson_weights(
        np.arange(500), 8, seed=2, of=poisson_weights(np.arange(500), 8, seed=2)
    )
    for key, metric in BINNED.items():
        want = [metric(preds, bins=15, sample_weight=w) for w in twice]
        for report in reports:
            assert report.intervals[key].method == "iterated"
            np.testing.assert_allclose(report.double_replicates[key], want, rtol=1e-9, atol=1e-13)
