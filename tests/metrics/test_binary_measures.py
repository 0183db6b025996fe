"""The measures of binary models (calcore.metrics.binary, binary_fit): each against a value
computed independently (statsmodels GLM, closed forms, brute-force loops, scipy), frequency
weights as repeated rows, refusals, and their place in evaluate, streams, gates and compare."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy import stats

import calcore
from calcore.metrics.registry import BINARY_METRICS, IN_MEMORY_METRICS
from calcore.statistics.replicates import resample_counts

sm = pytest.importorskip("statsmodels.api")  # test-only dependency (requirements-dev.txt)


def _binary(n, *, seed, a=0.0, b=1.0, logits=False, scale=1.5):
    """Predictions whose true logit is ``a + b z`` for the model's logit ``z``: calibrated
    for (0, 1), over-confident (slope 1/b' < 1) when the model's z is b' times the truth."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=scale, size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(a + b * z)))).astype(int)
    if logits:
        return calcore.Predictions.from_logits(np.column_stack([np.zeros(n), z]), y), z, y
    p = 1 / (1 + np.exp(-z))
    return calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y), z, y


def _glm(y, z, weights=None, *, offset=False):
    kw = {} if weights is None else {"freq_weights": weights}
    if offset:
        x = np.ones((y.size, 1))
        return sm.GLM(y, x, family=sm.families.Binomial(), offset=z, **kw).fit(tol=1e-13).params
    x = sm.add_constant(z)
    return sm.GLM(y, x, family=sm.families.Binomial(), **kw).fit(tol=1e-13).params


CASES = [
    ("probs", dict(seed=1, a=0.3, b=0.6)),
    ("probs-large", dict(seed=2, a=-1.0, b=1.4, scale=3.0)),
    ("logits", dict(seed=3, a=0.2, b=0.8, logits=True)),
    ("logits-extreme", dict(seed=4, a=0.0, b=0.5, logits=True, scale=12.0)),
]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(("name", "kw"), CASES)
def test_slope_and_intercept_equal_statsmodels_glm(name, kw, weighted):
    preds, z, y = _binary(3000, **kw)
    w = np.random.default_rng(9).integers(0, 4, size=y.size).astype(float) if weighted else None
    fit = calcore.logistic_calibration(preds, sample_weight=w)
    _, slope = _glm(y, z, w)
    (intercept,) = _glm(y, z, w, offset=True)
    assert fit.slope == pytest.approx(slope, abs=1e-6), name
    assert fit.intercept == pytest.approx(intercept, abs=1e-6), name
    assert fit.slope_reason is None and fit.intercept_reason is None


def test_from_probs_the_logit_is_clipped_at_eps():
    p = np.array([0.0, 0.3, 0.7, 1.0, 0.5, 0.2])
    y = np.array([0, 1, 0, 1, 1, 0])
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    eps = np.finfo(float).eps
    q = np.clip(p, eps, 1 - eps)
    z = np.log(q / (1 - q))
    assert z[0] == pytest.approx(-36.04, abs=0.01)
    _, slope = _glm(y, z)
    assert calcore.calibration_slope(preds) == pytest.approx(slope, abs=1e-6)
    (intercept,) = _glm(y, z, offset=True)
    assert calcore.calibration_intercept(preds) == pytest.approx(intercept, abs=1e-6)


def test_calibrated_model_has_slope_one_and_intercept_zero():
    preds, _, _ = _binary(40_000, seed=11)
    fit = calcore.logistic_calibration(preds)
    # standard errors at n = 40,000 with z ~ N(0, 1.5^2): about 0.013 and 0.012
    assert fit.slope == pytest.approx(1.0, abs=0.05)
    assert fit.intercept == pytest.approx(0.0, abs=0.05)
    assert calcore.oe_ratio(preds) == pytest.approx(1.0, abs=0.03)
    assert abs(calcore.spiegelhalter_z(preds)) < 3.5


def test_overconfident_model_has_slope_one_half():
    # the model's logit is twice the true one: logit P(y) = z / 2
    preds, _, _ = _binary(40_000, seed=12, b=0.5)
    assert calcore.calibration_slope(preds) == pytest.approx(0.5, abs=0.04)
    assert calcore.hosmer_lemeshow_p(preds) < 1e-6


def test_separation_gives_nan_with_the_reason():
    sep = calcore.Predictions.from_probs([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7]], [0, 0, 1])
    fit = calcore.logistic_calibration(sep)
    assert np.isnan(fit.slope) and "separated" in fit.slope_reason
    assert np.isfinite(fit.intercept) and fit.intercept_reason is None  # it exists
    same = calcore.Predictions.from_probs([[0.9, 0.1], [0.6, 0.4]], [1, 1])
    fit = calcore.logistic_calibration(same)
    assert np.isnan(fit.slope) and np.isnan(fit.intercept)
    assert "same outcome" in fit.slope_reason and "same outcome" in fit.intercept_reason
    flat = calcore.Predictions.from_probs([[0.6, 0.4]] * 4, [0, 1, 1, 0])
    assert "same score" in calcore.logistic_calibration(flat).slope_reason
    report = calcore.evaluate(sep)
    assert np.isnan(report.calibration_slope)
    assert any(
        n.startswith("calibration_slope is NaN: the outcomes are separated") for n in report.notes
    )


def test_spiegelhalter_by_hand():
    p = np.array([0.1, 0.4, 0.8, 0.3])
    y = np.array([0, 1, 1, 0])
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    # (y - p)(1 - 2p): -0.08, 0.12, -0.12, -0.12 -> -0.2
    # (1 - 2p)^2 p (1 - p): 0.0576, 0.0096, 0.0576, 0.0336 -> 0.1584
    z = -0.2 / np.sqrt(0.1584)
    assert calcore.spiegelhalter_z(preds) == pytest.approx(z, rel=1e-12)
    assert calcore.spiegelhalter_p(preds) == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-12)
    half = calcore.Predictions.from_probs([[0.5, 0.5], [0.0, 1.0]], [0, 1])
    assert np.isnan(calcore.spiegelhalter_z(half))  # no variance


def test_oe_ratio_and_observed_expected_by_hand():
    p = np.array([0.2, 0.5, 0.9, 0.4])
    y = np.array([0, 1, 1, 1])
    w = np.array([1.0, 2.0, 0.5, 3.0])
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    assert calcore.oe_ratio(preds) == pytest.approx(3 / 2.0, rel=1e-15)
    expected = 0.2 + 1.0 + 0.45 + 1.2
    assert calcore.oe_ratio(preds, sample_weight=w) == pytest.approx(5.5 / expected, rel=1e-15)
    obs, exp = calcore.observed_expected(preds, sample_weight=w)
    assert (obs, exp) == pytest.approx((5.5 / 6.5, expected / 6.5), rel=1e-15)
    zero = calcore.Predictions.from_probs([[1.0, 0.0], [1.0, 0.0]], [0, 1])
    assert calcore.oe_ratio(zero) == np.inf


def _brute_hl(p, y):
    """HL on deciles by sorting: group k holds ranks [floor(k n / 10), floor((k + 1) n / 10))."""
    order = np.argsort(p)
    n = p.size
    total, groups = 0.0, 0
    for k in range(10):
        idx = order[(k * n) // 10 : ((k + 1) * n) // 10]
        if idx.size == 0:
            continue
        o, e, m = y[idx].sum(), p[idx].sum(), idx.size
        total += (o - e) ** 2 / (e * (1 - e / m))
        groups += 1
    return total, groups


@pytest.mark.parametrize("n", [1000, 997, 23])
def test_hosmer_lemeshow_equals_a_brute_force_loop(n):
    rng = np.random.default_rng(n)
    p = rng.uniform(0.02, 0.98, size=n)  # distinct scores
    y = (rng.random(n) < np.clip(p * 1.2, 0, 1)).astype(int)
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    hl, groups = _brute_hl(p, y)
    assert calcore.hosmer_lemeshow(preds) == pytest.approx(hl, rel=1e-10)
    assert calcore.hosmer_lemeshow_p(preds) == pytest.approx(stats.chi2.sf(hl, groups), rel=1e-8)


def test_hosmer_lemeshow_rule_for_certain_groups():
    # a group of p = 0 rows: no variance; 0 when nothing happened there, inf when it did
    p = np.r_[np.zeros(10), np.linspace(0.1, 0.9, 90)]
    y = (np.arange(100) % 3 == 0).astype(int)
    y[:10] = 0
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    assert np.isfinite(calcore.hosmer_lemeshow(preds))
    y[0] = 1
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    assert calcore.hosmer_lemeshow(preds) == np.inf
    assert calcore.hosmer_lemeshow_p(preds) == 0.0


@pytest.mark.parametrize(("binning", "bins"), [("equal-width", 15), ("equal-mass", 8)])
def test_positive_class_ece_equals_a_brute_force_binned_ece(binning, bins):
    preds, _, y = _binary(2000, seed=5, b=0.7)
    p = preds.probs[:, 1]
    if binning == "equal-width":
        idx = np.minimum((p * bins).astype(int), bins - 1)
    else:  # distinct scores: bins of ranks [floor(k n / B), floor((k + 1) n / B))
        ranks = np.empty(p.size, dtype=int)
        ranks[np.argsort(p)] = np.arange(p.size)
        idx = np.searchsorted((np.arange(1, bins) * p.size) // bins, ranks, side="right")
    ece = sum(
        abs(y[idx == b].mean() - p[idx == b].mean()) * (idx == b).sum() / p.size
        for b in range(bins)
        if (idx == b).any()
    )
    got = calcore.positive_class_ece(preds, bins=bins, binning=binning)
    assert got == pytest.approx(ece, rel=1e-12)


@functools.lru_cache(maxsize=None)
def _repeated():
    preds, _, _ = _binary(300, seed=7, a=0.2, b=0.7)
    counts = np.random.default_rng(8).integers(0, 4, size=300)
    counts[0] = 2
    rows = np.repeat(np.arange(300), counts)
    return preds, counts.astype(float), preds.subset(rows)


@pytest.mark.parametrize("key", BINARY_METRICS)
def test_integer_weights_equal_repeated_rows(key):
    preds, w, repeated = _repeated()
    a = calcore.compute_metric(key, preds, bins=10, sample_weight=w)
    b = calcore.compute_metric(key, repeated, bins=10)
    assert a == pytest.approx(b, rel=1e-9, abs=1e-12), key
    c = calcore.compute_metric(key, preds.with_sample_weight(w), bins=10)
    assert c == a


@pytest.mark.parametrize("key", BINARY_METRICS)
def test_row_order_does_not_matter_and_values_are_in_bounds(key):
    preds, _, _ = _binary(500, seed=6, b=0.8)
    perm = np.random.default_rng(0).permutation(500)
    a = calcore.compute_metric(key, preds, bins=10, binning="equal-mass")
    assert a == pytest.approx(
        calcore.compute_metric(key, preds.subset(perm), bins=10, binning="equal-mass"),
        rel=1e-9,
        abs=1e-12,
    )
    low, high = calcore.METRICS[key].bounds
    assert low <= a <= high


@pytest.mark.parametrize("key", BINARY_METRICS)
def test_three_classes_are_refused_with_the_multiclass_metrics(key):
    rng = np.random.default_rng(0)
    preds = calcore.Predictions.from_probs(rng.dirichlet(np.ones(3), 20), rng.integers(0, 3, 20))
    with pytest.raises(
        calcore.CalcoreError, match=r"exactly 2 classes.*these have 3.*classwise_ece"
    ):
        calcore.compute_metric(key, preds)


def test_evaluate_equals_the_functions_and_bootstraps_every_measure():
    preds, _, _ = _binary(800, seed=21, a=0.1, b=0.8)
    w = np.random.default_rng(1).integers(1, 3, size=800).astype(float)
    report = calcore.evaluate(preds, bins=12, sample_weight=w, n_resamples=40, seed=2)
    for key in BINARY_METRICS:
        want = calcore.compute_metric(key, preds, bins=12, sample_weight=w)
        assert report.metrics[key] == pytest.approx(want, rel=1e-10), key
        assert (key in report.intervals) is (not calcore.METRICS[key].p_value), key
    # the slope's replicates are refits on the same resample counts the other metrics use
    counts = resample_counts(800, 40, 2)
    r = 7
    refit = calcore.calibration_slope(preds, sample_weight=counts[r] * w)
    assert report.replicates["calibration_slope"][r] == pytest.approx(refit, rel=1e-9)
    z = calcore.spiegelhalter_z(preds, sample_weight=counts[r] * w)
    assert report.replicates["spiegelhalter_z"][r] == pytest.approx(z, rel=1e-10)
    # O/E is read off the full sample's deciles, which hold every row: the resample's own O/E
    oe = calcore.oe_ratio(preds, sample_weight=counts[r] * w)
    assert report.replicates["oe_ratio"][r] == pytest.approx(oe, rel=1e-10)
    assert not any("apply to binary models" in n for n in report.notes)


def test_multiclass_report_has_them_as_none_with_one_note():
    rng = np.random.default_rng(0)
    preds = calcore.Predictions.from_probs(rng.dirichlet(np.ones(3), 60), rng.integers(0, 3, 60))
    report = calcore.evaluate(preds, n_resamples=10)
    assert all(report.metrics[k] is None and k not in report.intervals for k in BINARY_METRICS)
    assert sum("apply to binary models" in n for n in report.notes) == 1


def test_a_stream_computes_what_its_sums_allow(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    preds, _, y = _binary(3000, seed=31, a=0.2, b=0.7)
    p = preds.probs[:, 1]
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"p_0": 1 - p, "p_1": p, "label": y}), path)
    for binning in ("equal-width", "equal-mass"):
        streamed = calcore.evaluate(calcore.scan(str(path)), bins=10, binning=binning)
        memory = calcore.evaluate(preds, bins=10, binning=binning)
        for key in BINARY_METRICS:
            if key in IN_MEMORY_METRICS:
                assert streamed.metrics[key] is None, key
            else:
                assert streamed.metrics[key] == pytest.approx(memory.metrics[key], rel=1e-10), key
        assert sum("need the rows in memory" in n for n in streamed.notes) == 1


def test_compare_ranks_by_distance_to_the_ideal_and_never_a_p_value():
    iv = lambda v: calcore.Interval(v, np.nan, np.nan, 0.95, 0)  # noqa: E731
    values = {
        "a": {"calibration_slope": iv(0.8), "spiegelhalter_p": iv(0.9), "oe_ratio": iv(1.3)},
        "b": {"calibration_slope": iv(1.1), "spiegelhalter_p": iv(0.2), "oe_ratio": iv(0.9)},
    }
    table = calcore.Comparison(("a", "b"), tuple(values["a"]), values, {}, {}, {}, {})
    assert table.best_methods("calibration_slope") == {"b"}  # |1.1 - 1| < |0.8 - 1|
    assert table.best_methods("oe_ratio") == {"b"}
    assert table.best_methods("spiegelhalter_p") == set()


def test_gates_on_binary_measures():
    from calcore.cli import gates

    preds, _, _ = _binary(500, seed=3)
    report = calcore.evaluate(preds, metrics=["oe_ratio"])
    band = gates.parse_gates(["oe_ratio=1.2"], ["oe_ratio=0.8"])
    assert gates.check_report(report, band).passed
    rng = np.random.default_rng(0)
    three = calcore.Predictions.from_probs(rng.dirichlet(np.ones(3), 30), rng.integers(0, 3, 30))
    with pytest.raises(calcore.CalcoreError, match=r"binary models.*3 classes.*apply: accuracy"):
        gates.check_report(calcore.evaluate(three, metrics=["accuracy"]), band)
