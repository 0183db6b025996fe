"""Validity curves and the UMD validity bound (calcore.diagnostics.validity).

References computed here: validity curves from a loop over the distinct predicted values
(Gupta & Ramdas 2021, Sec. 2.1 and 4) with the same resampling semantics as documented
(``default_rng(seed).choice(m, size=take, replace=False)`` per resample); the UMD bound
restated from its formula. Consistency bands are tested in tests/diagnostics/test_consistency.py,
ECE against the number of bins in tests/diagnostics/test_bin_sweep.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _synthetic import random_discrete_preds  # tests/ is on sys.path

from calcore import CalcoreError, Predictions
from calcore.diagnostics.validity import umd_validity_bound, validity_curve

# --------------------------------------------------------------------------- data


def discrete_preds():
    """Confidences 0.5, 0.75, 0.875 (8 rows each); accuracies 4/8, 4/8, 8/8 (exact in binary).

    Gaps |E_b - h_b|: 0, 0.25, 0.125.
    """
    p = np.vstack(
        [
            np.tile([0.5, 0.25, 0.25], (8, 1)),
            np.tile([0.125, 0.75, 0.125], (8, 1)),
            np.tile([0.0625, 0.0625, 0.875], (8, 1)),
        ]
    )
    y = np.r_[[0] * 4 + [1] * 4, [1] * 4 + [2] * 4, [2] * 8]
    return Predictions.from_probs(p, y)


# --------------------------------------------------------------------------- validity references


def brute_curves(scores, outcomes, groups, eps):
    """V(eps) and the conditional indicator, bins = distinct (group, score) pairs, by a loop."""
    bins = {}
    for i, key in enumerate(zip(groups.tolist(), scores.tolist(), strict=True)):
        bins.setdefault(key, []).append(i)
    gap = {}
    for key, idx in bins.items():
        e = sum(outcomes[i] for i in idx) / len(idx)
        h = sum(scores[i] for i in idx) / len(idx)
        gap[key] = abs(e - h)
    m = len(scores)
    v = np.array([sum(len(idx) for key, idx in bins.items() if gap[key] <= t) / m for t in eps])
    c = np.array([float(max(gap.values()) <= t) for t in eps])
    return v, c


def view_arrays(preds, view, group=None):
    if view == "confidence":
        s, o, g = preds.confidence, preds.correct, np.zeros(preds.n_samples, int)
    elif view == "top-label":
        s, o, g = preds.confidence, preds.correct, preds.predicted
    else:
        n = preds.n_samples
        s = preds.probs.T.reshape(-1)
        o = (preds.labels[None, :] == np.arange(preds.n_classes)[:, None]).reshape(-1).astype(float)
        g = np.repeat(np.arange(preds.n_classes), n)
    if group is not None:
        keep = g == group
        s, o, g = s[keep], o[keep], np.zeros(keep.sum(), int)
    return np.asarray(s), np.asarray(o), np.asarray(g)


# --------------------------------------------------------------------------- validity curves


def test_validity_hand_example():
    preds = discrete_preds()
    eps = np.array([0.0, 0.1, 0.125, 0.2, 0.25, 0.3])
    vc = validity_curve(preds, epsilon=eps, n_resamples=1)
    # gaps: 0 (8 points), 0.25 (8 points), 0.125 (8 points); <= is inclusive
    np.testing.assert_array_equal(vc.validity, [1 / 3, 1 / 3, 2 / 3, 2 / 3, 1.0, 1.0])
    np.testing.assert_array_equal(vc.conditional, [0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(vc.validity_sem, np.zeros(6))
    np.testing.assert_array_equal(vc.conditional_sem, np.zeros(6))
    np.testing.assert_array_equal(vc.epsilon, eps)
    assert vc.view == "confidence" and vc.group is None and vc.n_resamples == 1
    s, o, g = view_arrays(preds, "confidence")
    v, c = brute_curves(s, o, g, eps)
    np.testing.assert_array_equal(vc.validity, v)
    np.testing.assert_array_equal(vc.conditional, c)


def test_validity_default_grid():
    vc = validity_curve(discrete_preds(), n_resamples=1)
    np.testing.assert_allclose(vc.epsilon, np.linspace(0, 0.2, 201))
    assert vc.validity[0] == pytest.approx(1 / 3) and vc.validity[-1] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "view",
    [
        "confidence",
        "top-label",
        "class-wise",
    ],
)
def test_validity_single_pass_vs_loop(view):
    preds = random_discrete_preds()
    eps = np.linspace(0.0, 0.3, 61) + 1e-4  # away from the (random) gaps' exact values
    vc = validity_curve(preds, view=view, epsilon=eps, n_resamples=1)
    v, c = brute_curves(*view_arrays(preds, view), eps)
    np.testing.assert_allclose(vc.validity, v, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(vc.conditional, c)
    assert np.all(np.diff(vc.validity) >= 0)


@pytest.mark.parametrize(("view", "group"), [("top-label", 0), ("top-label", 2), ("class-wise", 1)])
def test_validity_per_group_vs_loop(view, group):
    preds = random_discrete_preds(seed=3)
    eps = np.linspace(0.0, 0.4, 41) + 1e-4
    vc = validity_curve(preds, view=view, group=group, epsilon=eps, n_resamples=1)
    assert vc.group == preds.class_names[group]
    v, c = brute_curves(*view_arrays(preds, view, group), eps)
    np.testing.assert_allclose(vc.validity, v, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(vc.conditional, c)


def test_validity_continuous_predictor_with_equal_width_bins():
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(3), size=300)
    preds = Predictions.from_probs(p, rng.integers(0, 3, 300))
    eps = np.linspace(0, 0.5, 51) + 1e-4
    vc = validity_curve(preds, binning="equal-width", bins=10, epsilon=eps, n_resamples=1)
    h, o = preds.confidence, preds.correct
    idx = np.array([max(k for k in range(10) if k / 10 <= s) for s in h])
    gaps = {b: abs(o[idx == b].mean() - h[idx == b].mean()) for b in np.unique(idx)}
    v = [sum((idx == b).sum() for b in gaps if gaps[b] <= t) / 300 for t in eps]
    np.testing.assert_allclose(vc.validity, v, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(vc.conditional, [float(max(gaps.values()) <= t) for t in eps])


@pytest.mark.parametrize(("view", "group"), [("confidence", None), ("top-label", 1)])
def test_validity_resampled_mean_and_sem(view, group):
    preds = random_discrete_preds(n=300, seed=7)
    eps = np.linspace(0.0, 0.3, 31) + 1e-4
    n_resamples, fraction, seed = 25, 0.5, 123
    vc = validity_curve(
        preds,
        view=view,
        group=group,
        epsilon=eps,
        n_resamples=n_resamples,
        sample_fraction=fraction,
        seed=seed,
    )
    s, o, g = view_arrays(preds, view, group)
    m = s.size
    take = max(1, int(round(fraction * m)))
    rng = np.random.default_rng(seed)
    vs, cs = [], []
    for _ in range(n_resamples):
        rows = rng.choice(m, size=take, replace=False)
        v, c = brute_curves(s[rows], o[rows], g[rows], eps)
        vs.append(v)
        cs.append(c)
    vs, cs = np.array(vs), np.array(cs)
    np.testing.assert_allclose(vc.validity, vs.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(vc.conditional, cs.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        vc.validity_sem, vs.std(axis=0, ddof=1) / math.sqrt(n_resamples), rtol=1e-9, atol=1e-12
    )
    np.testing.assert_allclose(
        vc.conditional_sem, cs.std(axis=0, ddof=1) / math.sqrt(n_resamples), rtol=1e-9, atol=1e-12
    )
    # conditional validity never exceeds marginal validity
    assert np.all(vc.conditional <= vc.validity + 1e-12)
    assert np.all(cs <= vs + 1e-12)
    assert (vc.conditional < vc.validity).any()  # not trivially equal


@pytest.mark.parametrize(
    ("view", "group"),
    [("confidence", None), ("top-label", 0), ("class-wise", 2)],
)
def test_validity_conditional_below_marginal_random(view, group):
    for seed in range(4):
        preds = random_discrete_preds(n=200, seed=seed)
        vc = validity_curve(preds, view=view, group=group, n_resamples=20, seed=seed)
        assert np.all(vc.conditional <= vc.validity + 1e-12)
        assert np.all(np.diff(vc.validity) >= -1e-12) and np.all(np.diff(vc.conditional) >= 0)


def test_validity_top_label_with_equal_width_bins_vs_loop():
    # the top-label version over (class, bin) pairs, with fixed-count bins (no unique scheme)
    preds = random_discrete_preds(seed=9)
    eps = np.linspace(0.0, 0.4, 41) + 1e-4
    vc = validity_curve(
        preds, view="top-label", binning="equal-width", bins=100, epsilon=eps, n_resamples=1
    )
    # the 5 levels fall in distinct width-0.01 bins, so bins are (class, value) pairs
    v, c = brute_curves(*view_arrays(preds, "top-label"), eps)
    np.testing.assert_allclose(vc.validity, v, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(vc.conditional, c)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"n_resamples": 0}, r"^n_resamples must be a positive integer; got 0\.$"),
        ({"n_resamples": 1.5}, r"^n_resamples must be a positive integer; got 1\.5\.$"),
        ({"sample_fraction": 0.0}, r"^sample_fraction must be in \(0, 1\]; got 0\.0\.$"),
        ({"sample_fraction": 1.5}, r"^sample_fraction must be in \(0, 1\]; got 1\.5\.$"),
        ({"view": "top-label", "group": 3}, r"^group must be a class index 0\.\.2; got 3\.$"),
        ({"view": "class-wise", "group": -1}, r"^group must be a class index 0\.\.2; got -1\.$"),
        ({"view": "confidence", "group": 1}, r"^group must be a class index 0\.\.0; got 1\.$"),
        ({"view": "calibrated"}, r"^view must be one of .*got 'calibrated'"),
    ],
)
def test_validity_errors(kwargs, pattern):
    with pytest.raises(CalcoreError, match=pattern):
        validity_curve(discrete_preds(), **kwargs)


# --------------------------------------------------------------------------- UMD bound


@pytest.mark.parametrize(
    ("n_calib", "n_bins"), [(100, 10), (1000, 15), (5000, 10), (30, 30), (99, 7)]
)
def test_umd_bound_formula(n_calib, n_bins):
    eps = np.linspace(0, 0.5, 51)
    m = (n_calib + 1) // n_bins - 1
    cond = [min(1.0, max(0.0, 1 - 2 * n_bins * math.exp(-2 * max(m - 1, 0) * e * e))) for e in eps]
    marg = [min(1.0, max(0.0, 1 - 2 * math.exp(-2 * max(m - 1, 0) * e * e))) for e in eps]
    got_c = umd_validity_bound(eps, n_calib=n_calib, n_bins=n_bins, conditional=True)
    got_m = umd_validity_bound(eps, n_calib=n_calib, n_bins=n_bins)
    np.testing.assert_allclose(got_c, cond, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got_m, marg, rtol=1e-12, atol=1e-15)
    assert np.all(got_c <= got_m)
    assert np.all((got_c >= 0) & (got_m <= 1))


def test_umd_bound_known_value():
    # n = 999, B = 10: m = floor(1000/10) - 1 = 99; at eps = 0.2: 1 - 20 exp(-2 * 98 * 0.04)
    got = umd_validity_bound([0.2], n_calib=999, n_bins=10, conditional=True)
    assert got[0] == pytest.approx(1 - 20 * math.exp(-7.84), rel=1e-12)
    marginal = umd_validity_bound([0.2], n_calib=999, n_bins=10)
    assert marginal[0] == pytest.approx(1 - 2 * math.exp(-7.84), rel=1e-12)
    # the bound inverts the radius sqrt(log(2B/alpha) / (2(m-1))): at that eps it is 1 - alpha
    alpha = 0.1
    eps = math.sqrt(math.log(2 * 10 / alpha) / (2 * 98))
    assert umd_validity_bound(eps, n_calib=999, n_bins=10, conditional=True) == pytest.approx(
        1 - alpha
    )
    assert umd_validity_bound(0.0, n_calib=999, n_bins=10) == 0.0  # clipped at 0


@pytest.mark.parametrize(
    ("n_calib", "n_bins"),
    [(5, 10), (10, 0), (0, 0), (100, -2)],
)
def test_umd_bound_errors(n_calib, n_bins):
    pattern = rf"^need n_calib >= n_bins >= 1; got n_calib={n_calib}, n_bins={n_bins}\.$"
    with pytest.raises(CalcoreError, match=pattern):
        umd_validity_bound([0.1], n_calib=n_calib, n_bins=n_bins)
