"""Interval methods read off bootstrap replicates (issue 13).

References are independent: ``scipy.stats.bootstrap`` (percentile, basic and BCa with
the full jackknife) on the same resamples, and the textbook formulas by hand.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.stats
from scipy.special import ndtr, ndtri

import calcore
from calcore.evaluation.intervals import INTERVAL_METHODS, interval_bounds
from calcore.foundation.errors import CalcoreError
from calcore.statistics.replicates import jackknife_weights


def _preds(n, n_classes=3, seed=0, temperature=0.6):
    """Over-confident predictions: labels drawn from softened probabilities."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(n_classes), size=n)
    truth = probs**temperature
    truth /= truth.sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(n_classes, p=t) for t in truth])
    return calcore.Predictions.from_probs(probs, labels)


def _scipy_interval(metric, preds, *, method, n_resamples, seed):
    """scipy.stats.bootstrap over row indices: the same draws as evaluate for a seed."""
    rows = np.arange(preds.n_samples)
    res = scipy.stats.bootstrap(
        (rows,),
        lambda idx: metric(preds.subset(idx.astype(int))),
        vectorized=False,
        n_resamples=n_resamples,
        method=method,
        rng=np.random.default_rng(seed),
    )
    return res.confidence_interval.low, res.confidence_interval.high


METRIC_FUNCTIONS = {
    "nll": calcore.negative_log_likelihood,
    "brier": calcore.brier_score,
    "top_label_ece": functools.partial(calcore.top_label_ece, bins=5),
    "conf_ece": functools.partial(calcore.confidence_ece, bins=5),
}


@pytest.mark.parametrize("key", sorted(METRIC_FUNCTIONS))
@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_evaluate_matches_scipy_bootstrap(key, method):
    # 20 rows: the grouped jackknife has one row per group, i.e. scipy's full jackknife.
    preds = _preds(20, seed=4)
    report = calcore.evaluate(
        preds, bins=5, n_resamples=99, seed=7, metrics=[key], interval_method=method
    )
    low, high = _scipy_interval(
        METRIC_FUNCTIONS[key],
        preds,
        method="BCa" if method == "bca" else method,
        n_resamples=99,
        seed=7,
    )
    lo_bound, hi_bound = calcore.METRICS[key].bounds
    expected = np.clip([low, high], lo_bound, hi_bound)  # evaluate clips to the range
    iv = report.intervals[key]
    assert iv.method == method
    np.testing.assert_allclose([iv.low, iv.high], expected, rtol=1e-9, atol=1e-12)


def test_normal_interval_by_hand():
    preds = _preds(200, seed=1)
    report = calcore.evaluate(
        preds, bins=10, n_resamples=50, seed=3, metrics=["top_label_ece"], interval_method="normal"
    )
    idx = np.random.default_rng(3).integers(0, 200, (50, 200))  # the draws of evaluate
    reps = np.array([calcore.top_label_ece(preds.subset(r), bins=10) for r in idx])
    est = calcore.top_label_ece(preds, bins=10)
    center = 2 * est - reps.mean()
    half = 1.959963984540054 * reps.std(ddof=1)
    iv = report.intervals["top_label_ece"]
    np.testing.assert_allclose([iv.low, iv.high], [center - half, center + half], rtol=1e-9)
    np.testing.assert_allclose(report.replicates["top_label_ece"], reps, rtol=1e-9, atol=1e-15)


def test_bounds_by_hand_on_five_replicates():
    reps = [0.12, 0.14, 0.15, 0.16, 0.18]
    # Linear quantiles at 2.5% and 97.5% of five values: 0.122 and 0.178.
    assert interval_bounds(0.13, reps) == pytest.approx((0.122, 0.178))
    assert interval_bounds(0.13, reps, method="basic") == pytest.approx((0.082, 0.138))
    sd = np.std(reps, ddof=1)
    center = 0.26 - np.mean(reps)
    assert interval_bounds(0.13, reps, method="normal") == pytest.approx(
        (center - 1.959964 * sd, center + 1.959964 * sd), rel=1e-6
    )
    # BC: one of five replicates below 0.13, so z0 = Phi^-1(0.2).
    z0 = ndtri(0.2)
    levels = ndtr(2 * z0 + ndtri(np.array([0.025, 0.975])))
    assert interval_bounds(0.13, reps, method="bc") == pytest.approx(
        tuple(np.quantile(reps, levels))
    )


def test_bc_keeps_a_finite_median_bias_when_every_replicate_is_above():
    reps = np.linspace(0.2, 0.3, 100)  # every replicate above the estimate 0.1
    low, high = interval_bounds(0.1, reps, method="bc")
    z0 = ndtri(0.5 / 100)  # clipped to the share 1 / (2R)
    expected = np.quantile(reps, ndtr(2 * z0 + ndtri(np.array([0.025, 0.975]))))
    assert (low, high) == pytest.approx(tuple(expected))


def test_contain_estimate_extends_only_the_side_it_needs():
    reps = [0.30, 0.31, 0.32, 0.33]  # resamples far above the estimate: basic ends below it
    low, high = interval_bounds(0.2, reps, method="basic")
    assert high < 0.2
    low2, high2 = interval_bounds(0.2, reps, method="basic", contain_estimate=True)
    assert (low2, high2) == (pytest.approx(low), 0.2)


def test_nan_replicates_give_nan_bounds_and_bad_methods_are_refused():
    assert np.isnan(interval_bounds(0.1, [0.1, np.nan], method="normal")).all()
    with pytest.raises(CalcoreError, match="interval_method must be one of"):
        interval_bounds(0.1, [0.1, 0.2], method="studentised")
    with pytest.raises(CalcoreError, match="jackknife"):
        interval_bounds(0.1, [0.1, 0.2], method="bca")
    with pytest.raises(CalcoreError, match="interval_method must be one of"):
        calcore.evaluate(_preds(30), n_resamples=10, interval_method="BCa")


def test_jackknife_weights_leave_each_row_out_once():
    w = jackknife_weights(103, seed=5)
    assert w.shape == (20, 103)
    assert (w.sum(axis=0) == 19).all()  # each row left out of exactly one group
    sizes = 103 - w.sum(axis=1)
    assert sizes.min() >= 5 and sizes.max() <= 6
    np.testing.assert_array_equal(w, jackknife_weights(103, seed=5))
    assert jackknife_weights(3, seed=0).shape == (3, 3)


def test_default_methods_come_from_the_metric_table():
    preds = _preds(300, seed=2)
    report = calcore.evaluate(preds, n_resamples=30, seed=0)
    for key, iv in report.intervals.items():
        assert iv.method == calcore.METRICS[key].interval_method, key
    assert report.intervals["accuracy"].method == "percentile"
    assert report.intervals["top_label_ece"].method == "iterated"
    assert report.as_dict()["intervals"]["top_label_ece"]["method"] == "iterated"
    assert any("bias-corrected" in n for n in report.notes)
    assert any("MCE is the largest gap" in n for n in report.notes)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_classes", [2, 4, 12])
def test_default_intervals_never_exclude_their_estimate(seed, n_classes):
    sim = calcore.dirichlet_simulator(n_classes, miscalibration="overconfident")
    preds = calcore.simulate_predictions(sim, 150 + 50 * seed, seed=seed).preds
    report = calcore.evaluate(preds, n_resamples=40, seed=seed)
    for key, iv in report.intervals.items():
        if np.isfinite(iv.low):
            assert iv.low <= iv.estimate <= iv.high, (key, iv)


def test_calibrated_model_intervals_of_the_ece_move_towards_zero():
    # A calibrated model's percentile intervals of the ECE never come near 0 (issue 13):
    # its resamples are more biased than the estimate. The bias-corrected interval starts
    # well below the estimate (at 0 for some samples); the calibration test, not the
    # interval, is what answers "is it calibrated?".
    sim = calcore.dirichlet_simulator(3, miscalibration="calibrated", accuracy=0.75)
    lows, at_zero = [], 0
    for seed in range(10):
        preds = calcore.simulate_predictions(sim, 1000, seed=seed).preds
        report = calcore.evaluate(preds, n_resamples=100, seed=seed, metrics=["conf_ece"])
        iv = report.intervals["conf_ece"]
        percentile_low = np.quantile(report.replicates["conf_ece"], 0.025)
        assert percentile_low > iv.estimate / 2 > iv.low, seed
        lows.append(iv.low / iv.estimate)
        at_zero += iv.low == 0.0
    assert np.median(lows) < 0.2 and at_zero >= 2


def test_bca_is_refused_on_streams(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("label,p_a,p_b\na,0.9,0.1\nb,0.3,0.7\na,0.6,0.4\n")
    with pytest.raises(CalcoreError, match="needs in-memory predictions"):
        calcore.evaluate(calcore.scan(str(path)), n_resamples=10, interval_method="bca")
    report = calcore.evaluate(calcore.scan(str(path)), n_resamples=10, interval_method="basic")
    assert report.intervals["accuracy"].method == "basic"


def test_every_method_is_offered_by_evaluate():
    preds = _preds(60, seed=9)
    for method in INTERVAL_METHODS:
        report = calcore.evaluate(
            preds, n_resamples=20, seed=1, metrics=["conf_ece"], interval_method=method
        )
        iv = report.intervals["conf_ece"]
        assert iv.method == method and 0 <= iv.low <= iv.high <= 1


def test_sparse_top_label_cells_are_flagged():
    # 10 classes x 500 rows x 15 bins: about 5 rows per occupied (class, bin) cell, where
    # the coverage study's default TL-ECE interval covered the truth in 60-90% of samples;
    # at 1,000 rows (about 9) in 90-97%.
    sim = calcore.dirichlet_simulator(10, miscalibration="class-specific", accuracy=0.6)
    preds = calcore.simulate_predictions(sim, 500, seed=0).preds
    report = calcore.evaluate(preds, n_resamples=20)
    caveat = report.intervals["top_label_ece"].caveat
    assert caveat.startswith("its (class, bin) cells hold 4.8 rows on average (fewer than 8)")
    assert report.intervals["classwise_ece"].caveat is None  # every row is in every class
    (note,) = [n for n in report.notes if "is not shown as a range" in n]
    assert note.startswith("The TL-ECE interval") and "use fewer bins" in note
    assert report.as_dict()["intervals"]["top_label_ece"]["caveat"] == caveat
    assert "caveat" not in report.as_dict()["intervals"]["conf_ece"]
    fewer = calcore.evaluate(preds, n_resamples=20, bins=5)
    assert fewer.intervals["top_label_ece"].caveat is None
    more = calcore.simulate_predictions(sim, 1000, seed=0).preds
    assert calcore.evaluate(more, n_resamples=20).intervals["top_label_ece"].caveat is None


def test_sparse_class_wise_cells_are_counted_above_each_class_lowest_bin():
    # 100 classes x 1,000 rows: each class's lowest bin holds most rows (91 a cell over all
    # bins), its upper bins 2 to 3; the coverage study's CW-ECE interval covered 0 of 12.
    sim = calcore.dirichlet_simulator(100, miscalibration="overconfident", accuracy=0.4)
    preds = calcore.simulate_predictions(sim, 1000, seed=0).preds
    report = calcore.evaluate(preds, n_resamples=2, metrics=["classwise_ece"])
    caveat = report.intervals["classwise_ece"].caveat
    assert caveat.startswith("its (class, bin) cells above each class's lowest bin hold 2.9")
