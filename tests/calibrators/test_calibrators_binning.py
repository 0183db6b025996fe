"""Binary non-parametric calibrators: hb (UMD), ums, fwb, iso, sb."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from calcore import CalcoreError, Predictions, classwise_ece
from calcore.calibrators import Calibrator, make_calibrator
from calcore.calibrators._bins import umd_edges
from calcore.calibrators.histogram_binning import HistogramBinning
from calcore.calibrators.isotonic import IsotonicRegression

HB_EXACT = {"randomized": False}


def _params(name, **kw):
    return make_calibrator(name, **kw).params


def _binary_problem(n, rng, power=1.0):
    """Scores s ~ U(0,1); P(Y=1 | s) = s**power (power=1: perfectly calibrated)."""
    s = rng.random(n)
    y = (rng.random(n) < s**power).astype(float)
    return s, y


def _preds(s, y):
    return Predictions.from_probs(np.column_stack([1 - s, s]), y.astype(int))


# -- UMD ------------------------------------------------------------------------------
@pytest.mark.parametrize("n, bins", [(100, 7), (101, 10), (57, 57), (1000, 15), (30, 4)])
def test_umd_edges_are_order_statistics_at_ceil_b_delta(n, bins):
    s = np.random.default_rng(n).random(n)
    srt = np.sort(s)
    delta = (n + 1) / bins
    expected = [srt[math.ceil(b * delta) - 1] for b in range(1, bins)]
    assert umd_edges(srt, bins).tolist() == expected
    state = HistogramBinning.fit_binary(s, np.zeros(n), _params("hb", bins=bins, **HB_EXACT))
    assert state["edges"].tolist() == expected


@pytest.mark.parametrize("variant", ["paper", "original"])
@pytest.mark.parametrize("n, bins", [(100, 7), (503, 15), (64, 8), (20, 10)])
def test_umd_bin_sizes_and_values_brute_force(variant, n, bins):
    rng = np.random.default_rng(n + bins)
    s, y = _binary_problem(n, rng)
    state = HistogramBinning.fit_binary(s, y, _params("hb", bins=bins, variant=variant, **HB_EXACT))
    edges = np.r_[-np.inf, state["edges"], np.inf]
    for b in range(bins):
        lo, hi = edges[b], edges[b + 1]
        inside = (s > lo) & ((s < hi) if variant == "paper" else (s <= hi))
        assert state["counts"][b] == inside.sum()
        assert inside.sum() >= (n + 1) // bins - 1  # the paper's guarantee
        if inside.any():
            assert state["values"][b] == pytest.approx(y[inside].mean(), abs=1e-15)
    assert sum(state["counts"]) == (n - (bins - 1) if variant == "paper" else n)


def test_hb_predicts_by_half_open_bins():
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    y = np.array([0, 0, 1, 0, 1, 1, 1.0])
    # n = 7, B = 2: Delta = 4, edge = 4th order statistic = 0.4.
    p = _params("hb", bins=2, **HB_EXACT)
    state = HistogramBinning.fit_binary(s, y, p)
    assert state["edges"].tolist() == [0.4]
    assert state["values"] == pytest.approx([1 / 3, 1.0])  # paper: 0.4 excluded
    p_orig = _params("hb", bins=2, variant="original", **HB_EXACT)
    assert HistogramBinning.fit_binary(s, y, p_orig)["values"] == pytest.approx([0.25, 1.0])
    out = HistogramBinning.apply_binary(state, np.array([0.0, 0.4, 0.40001, 1.0]), p)
    assert out == pytest.approx([1 / 3, 1 / 3, 1.0, 1.0])


def test_hb_points_per_bin_gives_floor_n_over_k_bins():
    s, y = _binary_problem(230, np.random.default_rng(1))
    state = HistogramBinning.fit_binary(s, y, _params("hb", points_per_bin=50))
    assert len(state["values"]) == 4


def test_hb_randomized_is_reproducible_per_seed_and_close_to_exact():
    s = np.round(np.random.default_rng(2).random(400), 1)  # heavy ties
    y = (np.random.default_rng(3).random(400) < s).astype(float)
    a = make_calibrator("hb", bins=8, seed=5).fit(_preds(s, y))
    b = make_calibrator("hb", bins=8, seed=5).fit(_preds(s, y))
    c = make_calibrator("hb", bins=8, seed=6).fit(_preds(s, y))
    assert a.to_dict()["state"] == b.to_dict()["state"]
    assert a.to_dict()["state"]["values"] != c.to_dict()["state"]["values"]
    np.testing.assert_array_equal(a.transform(_preds(s, y)).probs, b.transform(_preds(s, y)).probs)
    # Randomisation breaks ties so that the bins have (nearly) equal mass.
    assert min(a.to_dict()["state"]["counts"]) >= (400 + 1) // 8 - 1
    assert len(set(a.to_dict()["state"]["values"])) == 8  # distinct bin values


# -- ums, fwb, sb, iso by hand ---------------------------------------------------------------
def test_ums_uses_one_half_for_edges_and_the_other_for_means():
    s, y = _binary_problem(200, np.random.default_rng(4))
    params = _params("ums", bins=4, seed=3)
    state = make_calibrator("ums", bins=4, seed=3).fit(_preds(s, y)).to_dict()["state"]
    perm = np.random.default_rng(3).permutation(200)
    first, second = perm[:100], perm[100:]
    assert state["edges"] == umd_edges(np.sort(s[first]), 4).tolist()
    edges = np.r_[-np.inf, state["edges"], np.inf]
    for b in range(4):
        inside = (s[second] > edges[b]) & (s[second] <= edges[b + 1])
        assert state["values"][b] == pytest.approx(y[second][inside].mean())
    assert params["seed"] == 3


def test_fwb_by_hand_with_empty_bin_midpoint():
    s = np.array([0.05, 0.1, 0.3, 0.35, 0.95])
    y = np.array([0, 1, 1, 1, 0.0])
    cal = make_calibrator("fwb", bins=4).fit(_preds(s, y))
    assert cal.to_dict()["state"]["values"] == [0.5, 1.0, 0.625, 0.0]  # bin 2 empty: midpoint
    out = cal.transform(_preds(np.array([0.0, 0.25, 0.6, 1.0]), np.array([0, 0, 0, 0.0])))
    assert out.probs[:, 1].tolist() == [0.5, 1.0, 0.625, 0.0]


def test_sb_averages_scores_not_outcomes():
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9])
    y = np.array([1, 1, 1, 0, 0, 0, 0.0])
    state = make_calibrator("sb", bins=2).fit(_preds(s, y)).to_dict()["state"]
    # Edge at rank ceil(8/2) = 4 -> 0.6; bins (0, 0.6], (0.6, 1].
    assert state["edges"] == [0.6]
    assert state["values"] == pytest.approx([0.3, 0.8])


def _pava_brute_force(x, y):
    """Pool equal x, then classic pool-adjacent-violators with explicit blocks."""
    xs = np.unique(x)
    blocks = [[y[x == v].sum(), (x == v).sum(), [v]] for v in xs]
    merged = True
    while merged:
        merged = False
        for i in range(len(blocks) - 1):
            if blocks[i][0] / blocks[i][1] > blocks[i + 1][0] / blocks[i + 1][1]:
                a, b = blocks[i], blocks.pop(i + 1)
                blocks[i] = [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
                merged = True
                break
    return {v: blk[0] / blk[1] for blk in blocks for v in blk[2]}


@pytest.mark.parametrize("seed", range(5))
def test_iso_matches_brute_force_pava(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.random(40), 1)
    y = (rng.random(40) < x).astype(float)
    state = IsotonicRegression.fit_binary(x, y, {})
    fitted = IsotonicRegression.apply_binary(state, x, {})
    expected = _pava_brute_force(x, y)
    np.testing.assert_allclose(fitted, [expected[v] for v in x], atol=1e-12)


def test_iso_predicts_piecewise_constant():
    state = IsotonicRegression.fit_binary(
        np.array([0.1, 0.2, 0.6, 0.8]), np.array([0, 1, 0, 1.0]), {}
    )
    assert state["starts"].tolist() == [0.1, 0.2, 0.8]
    assert state["values"].tolist() == [0.0, 0.5, 1.0]
    out = IsotonicRegression.apply_binary(state, np.array([0.0, 0.15, 0.5, 0.79, 0.9]), {})
    assert out.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0]


# -- held-out behaviour -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["hb", "ums", "fwb", "iso"])
def test_improves_miscalibrated_and_does_no_harm_on_calibrated(name):
    rng = np.random.default_rng(11)
    kw = {} if name == "iso" else {"bins": 10}
    for power, improves in [(3.0, True), (1.0, False)]:
        cal_s, cal_y = _binary_problem(5000, rng, power)
        test_s, test_y = _binary_problem(20000, rng, power)
        test = _preds(test_s, test_y)
        out = make_calibrator(name, **kw).fit(_preds(cal_s, cal_y)).transform(test)
        before = classwise_ece(test, bins=10, binning="equal-mass")
        after = classwise_ece(out, bins=10, binning="equal-mass")
        if improves:
            assert after < before / 2
        else:
            assert after < before + 0.02


def test_sb_on_scaled_scores_keeps_calibration():
    rng = np.random.default_rng(12)
    s, y = _binary_problem(4000, rng)
    test = _preds(*_binary_problem(20000, rng))
    out = make_calibrator("sb", bins=10).fit(_preds(s, y)).transform(test)
    assert classwise_ece(out, bins=10, binning="unique") < 0.02


# -- persistence and errors -------------------------------------------------------------
@pytest.mark.parametrize("name", ["hb", "ums", "fwb", "iso", "sb"])
def test_json_round_trip_is_bit_identical(name):
    rng = np.random.default_rng(13)
    cal = make_calibrator(name).fit(_preds(*_binary_problem(3000, rng, 2.0)))
    test = _preds(*_binary_problem(1000, rng))
    again = Calibrator.from_dict(json.loads(json.dumps(cal.to_dict())))
    np.testing.assert_array_equal(again.transform(test).probs, cal.transform(test).probs)
    assert again.params == cal.params


def test_errors():
    pre = _preds(*_binary_problem(50, np.random.default_rng(0)))
    with pytest.raises(CalcoreError, match="not fitted yet"):
        make_calibrator("hb").transform(pre)
    with pytest.raises(CalcoreError, match="exactly one of 'bins' and 'points_per_bin'"):
        make_calibrator("hb", bins=10, points_per_bin=5)
    with pytest.raises(CalcoreError, match="exactly one of 'bins' and 'points_per_bin'"):
        make_calibrator("fwb", bins=None)
    with pytest.raises(CalcoreError, match="'variant' must be one of"):
        make_calibrator("hb", variant="zadrozny")
    with pytest.raises(CalcoreError, match="'bins' must be >= 1"):
        make_calibrator("ums", bins=0)
    with pytest.raises(CalcoreError, match="needs at least 60 calibration points"):
        make_calibrator("hb", bins=60).fit(pre)
    with pytest.raises(CalcoreError, match="binary calibrator and the data has 3 classes"):
        make_calibrator("iso").fit(Predictions.from_probs(np.full((4, 3), 1 / 3), [0, 1, 2, 0]))
    cal = make_calibrator("hb", bins=5).fit(pre)
    other = Predictions.from_probs(pre.probs, pre.labels, ["a", "b"])
    with pytest.raises(CalcoreError, match="fitted on classes"):
        cal.transform(other)
    with pytest.raises(CalcoreError, match="same length"):
        HistogramBinning.fit_binary(np.zeros(3), np.zeros(4), cal.params)
