"""Canonical calibrators (top-label paper, App. G): sierpinski, grid, projection-hb.

Bin assignment is checked against brute-force loops written from the paper's
definitions (Sierpinski in exact rational arithmetic), per-bin outputs against
label frequencies counted by hand, and the fitted maps on synthetic data.
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from calcore import CalcoreError, Predictions, brier_score, classwise_ece
from calcore.calibrators import CALIBRATORS, Calibrator, make_calibrator
from calcore.calibrators._simplex import grid_n_bins, sierpinski_n_bins
from calcore.calibrators.canonical import CanonicalBins, canonical_bin_summary

METHODS = {"sierpinski": {"depth": 2}, "grid": {"K": 4}, "projection-hb": {"bins": 12}}
HALF = Fraction(1, 2)


def _compositions(total, n_classes):
    """All non-negative integer vectors of length L summing to ``total``."""
    return [c for c in itertools.product(range(total + 1), repeat=n_classes) if sum(c) == total]


def _points(n_classes, rng, n_random=150):
    """Random rows, every vertex, and dyadic rows m/8 (exact sums; many on bin boundaries)."""
    dyadic = np.array(_compositions(8, n_classes), dtype=np.float64) / 8.0
    rand = rng.dirichlet(np.full(n_classes, 0.7), size=n_random)
    return np.vstack([np.eye(n_classes), dyadic, rand, np.full((1, n_classes), 1.0 / n_classes)])


def _preds(probs, rng):
    return Predictions.from_probs(probs, rng.integers(0, probs.shape[1], len(probs)))


# -- brute-force references ----------------------------------------------------------------
def _sierpinski_brute(probs, depth):
    """Eq. (19) recursively, in exact rationals: bin ids in the documented order."""
    n_classes = probs.shape[1]
    bins = [(list(p), True) for d in range(1, depth + 1)
            for p in itertools.product(range(n_classes), repeat=d - 1)]  # fmt: skip
    bins += [(list(p), False) for p in itertools.product(range(n_classes), repeat=depth)]
    out = []
    for row in probs:
        s = [Fraction(float(v)) for v in row]
        hits = []
        for b, (path, centre) in enumerate(bins):
            ok = True
            for j in range(len(path) + 1):
                # t after j steps, in closed form: 2^j s - sum_i 2^(j-i) e_{path_i}
                t = [2**j * v for v in s]
                for i, cls in enumerate(path[:j]):
                    t[cls] -= 2 ** (j - i - 1)
                over = [c for c in range(n_classes) if t[c] > HALF]
                if j < len(path):
                    ok = ok and bool(over) and over[0] == path[j]
                elif centre:
                    ok = ok and not over
            if ok:
                hits.append(b)
        assert len(hits) == 1, (row, hits)
        out.append(hits[0])
    return np.array(out)


def _grid_brute(probs, k):
    """Eqs. (20)-(21): the lexicographically first k in I with K s_l in [k_l - 1, k_l], or -1."""
    n_classes = probs.shape[1]
    lo, hi = max(n_classes, k + 1), k + n_classes - 1
    index = [t for t in itertools.product(range(1, k + 1), repeat=n_classes) if lo <= sum(t) <= hi]
    assert len(index) == grid_n_bins(n_classes, k)
    out = []
    for row in probs:
        x = row * k
        found = [
            b for b, t in enumerate(index) if all(t[c] - 1 <= x[c] <= t[c] for c in range(len(t)))
        ]
        out.append(found[0] if found else -1)
    return np.array(out)


def _projection_brute(probs, labels, q, n_bins):
    """Alg. 10 line by line with Python lists: thresholds, bins, and Pi (boundary rows excluded)."""
    n, n_classes = probs.shape
    proj = [[sum(float(probs[i, c]) * float(q[b, c]) for c in range(n_classes))
             for b in range(n_bins)] for i in range(n)]  # fmt: skip
    c_rank = (n + 1) // n_bins
    thresholds = [-1.01] * n_bins
    left = list(range(n))
    for b in range(n_bins - 1):
        if len(left) < c_rank:
            break
        thresholds[b] = sorted(proj[i][b] for i in left)[c_rank - 1]
        left = [i for i in left if proj[i][b] > thresholds[b]]
    thresholds[-1] = 1.01
    bins = [min(b for b in range(n_bins) if proj[i][b] < thresholds[b]) for i in range(n)]
    dist, counts = [], []
    for b in range(n_bins):
        rows = [i for i in range(n) if bins[i] == b and all(
            proj[i][s] != thresholds[s] for s in range(n_bins))]  # fmt: skip
        counts.append(len(rows))
        dist.append([sum(labels[i] == c for i in rows) / len(rows) if rows else 1 / n_classes
                     for c in range(n_classes)])  # fmt: skip
    return np.array(thresholds), np.array(bins), np.array(dist), np.array(counts)


# -- bin assignment --------------------------------------------------------------------------
@pytest.mark.parametrize(("n_classes", "depth"), [(2, 3), (3, 0), (3, 1), (3, 2), (3, 3), (4, 2)])
def test_sierpinski_bins_match_exact_brute_force(n_classes, depth):
    rng = np.random.default_rng(n_classes * 10 + depth)
    probs = _points(n_classes, rng)
    cal = make_calibrator("sierpinski", depth=depth).fit(_preds(probs, rng))
    np.testing.assert_array_equal(cal.bin_index(probs), _sierpinski_brute(probs, depth))
    assert cal.fit_info["n_bins"] == (n_classes ** (depth + 1) - 1) // (n_classes - 1)


def test_sierpinski_counts_and_boundaries_by_hand():
    assert [sierpinski_n_bins(3, q) for q in (1, 2, 3)] == [4, 13, 40]  # paper's "14" is a slip
    cal = make_calibrator("sierpinski", depth=2).fit(_preds(np.eye(3), np.random.default_rng(0)))
    # ids: centre(depth 1)=0, centres of corner 0,1,2 at depth 2 = 1,2,3, corners 00..22 = 4..12
    rows = [
        [1, 0, 0],
        [0.5, 0.5, 0],
        [0.75, 0.25, 0],
        [0.5, 0.25, 0.25],
        [0.74, 0.26, 0],
        [0, 0, 1],
    ]
    assert cal.bin_index(np.array(rows)).tolist() == [4, 0, 1, 0, 5, 12]


@pytest.mark.parametrize(("n_classes", "k"), [(2, 3), (3, 1), (3, 2), (3, 4), (3, 5), (4, 3)])
def test_grid_bins_match_brute_force(n_classes, k):
    rng = np.random.default_rng(n_classes * 100 + k)
    grid_pts = np.array(_compositions(2 * k, n_classes), dtype=np.float64) / (2 * k)
    probs = np.vstack([_points(n_classes, rng), grid_pts])
    cal = make_calibrator("grid", K=k).fit(_preds(probs, rng))
    ref = _grid_brute(probs, k)
    ours = cal.bin_index(probs)
    found = ref >= 0  # rows a rounding error pushes off the simplex can lie in no bin
    assert found.mean() > 0.95
    np.testing.assert_array_equal(ours[found], ref[found])
    assert ((ours >= 0) & (ours < grid_n_bins(n_classes, k))).all()
    if n_classes == 3:
        assert grid_n_bins(3, k) == k * k  # Fig. 11: K^2 triangles


@pytest.mark.parametrize("directions", ["rotate", "random"])
@pytest.mark.parametrize(
    ("n_classes", "n_bins", "ties"), [(3, 7, False), (3, 5, True), (4, 9, False)]
)
def test_projection_hb_matches_algorithm_10_line_by_line(directions, n_classes, n_bins, ties):
    rng = np.random.default_rng(n_bins)
    probs = _points(n_classes, rng, n_random=60)
    if ties:  # many identical rows: cuts remove more than c rows, later bins may be unused
        probs = np.vstack([probs, np.tile(probs[-3:], (25, 1))])
    preds = _preds(probs, rng)
    cal = make_calibrator("projection-hb", bins=n_bins, directions=directions, seed=3).fit(preds)
    q = np.array(cal.to_dict()["state"]["directions"])
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0)
    if directions == "rotate":
        np.testing.assert_array_equal(q, -np.eye(n_classes)[np.arange(n_bins) % n_classes])
    thresholds, bins, dist, counts = _projection_brute(probs, preds.labels, q, n_bins)
    state = cal.to_dict()["state"]
    np.testing.assert_array_equal(state["thresholds"], thresholds)
    np.testing.assert_array_equal(cal.bin_index(probs), bins)
    np.testing.assert_array_equal(state["counts"], counts)
    np.testing.assert_array_equal(np.array(state["distribution"]), dist)
    # without ties (continuous rows) every bin keeps at least floor((n+1)/B) - 1 interior points
    cont = _preds(rng.dirichlet(np.ones(n_classes), size=200), rng)
    cal = make_calibrator("projection-hb", bins=n_bins, directions=directions).fit(cont)
    assert min(cal.to_dict()["state"]["counts"]) >= 201 // n_bins - 1
    assert cal.fit_info["n_estimation_rows"] == 200 - (n_bins - 1)


# -- per-bin outputs counted by hand ---------------------------------------------------------
def test_sierpinski_outputs_are_label_frequencies_by_hand():
    probs = [[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.9, 0.05, 0.05], [0.2, 0.7, 0.1],
             [0.3, 0.3, 0.4], [0.4, 0.4, 0.2]]  # fmt: skip
    preds = Predictions.from_probs(probs, [0, 1, 0, 1, 2, 0])
    cal = make_calibrator("sierpinski", depth=1).fit(preds)
    # bins: 0 = centre {rows 4, 5}, 1 = s_0 > 1/2 {0, 1, 2}, 2 = s_1 > 1/2 {3}, 3 = s_2 > 1/2 {}
    expected = [[1 / 2, 0, 1 / 2], [2 / 3, 1 / 3, 0], [0, 1, 0]]
    np.testing.assert_array_equal(np.array(cal.to_dict()["state"]["distribution"])[:3], expected)
    new = Predictions.from_probs([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.35, 0.35, 0.3]], [0, 2, 1])
    out = cal.transform(new).probs
    np.testing.assert_array_equal(out, [[2 / 3, 1 / 3, 0], [0.1, 0.1, 0.8], [1 / 2, 0, 1 / 2]])
    assert cal.fit_info["n_fallback_bins"] == 1
    assert cal.fit_info["last_transform"] == {"n_rows": 3, "rows_in_fallback_bins": 1}
    uniform = make_calibrator("sierpinski", depth=1, fallback="uniform").fit(preds)
    np.testing.assert_array_equal(uniform.transform(new).probs[1], [1 / 3, 1 / 3, 1 / 3])
    strict = make_calibrator("sierpinski", depth=1, min_count=2).fit(preds)  # bin 2 has 1 row
    assert strict.fit_info["n_fallback_bins"] == 2
    assert strict.fit_info["calibration_rows_in_fallback_bins"] == 1
    np.testing.assert_array_equal(strict.transform(preds).probs[3], probs[3])


def test_grid_outputs_by_hand():
    # K = 2, L = 3: I = (1,1,1) [centre], (1,1,2), (1,2,1), (2,1,1) in this order
    probs = [[1, 0, 0], [0.6, 0.2, 0.2], [0.5, 0.5, 0], [0.3, 0.3, 0.4], [0, 0.25, 0.75]]
    preds = Predictions.from_probs(probs, [0, 1, 2, 2, 2])
    cal = make_calibrator("grid", K=2).fit(preds)
    assert cal.bin_index(np.array(probs)).tolist() == [3, 3, 0, 0, 1]
    assert cal.to_dict()["state"]["bins"] == [[1, 1, 1], [1, 1, 2], [1, 2, 1], [2, 1, 1]]
    out = cal.transform(preds).probs
    np.testing.assert_array_equal(
        out, [[0.5, 0.5, 0], [0.5, 0.5, 0], [0, 0, 1], [0, 0, 1], [0, 0, 1]]
    )


def test_projection_hb_by_hand():
    # n = 5, B = 2: c = 3, q_1 = -e_1, T_1 = 3rd smallest of -s_0 = -0.7; row 2 lies on the cut
    probs = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.2, 0.8], [0.1, 0.9]]
    preds = Predictions.from_probs(probs, [0, 1, 0, 1, 1])
    cal = make_calibrator("projection-hb", bins=2).fit(preds)
    assert cal.to_dict()["state"]["thresholds"] == [-0.7, 1.01]
    assert cal.bin_index(np.array(probs)).tolist() == [0, 0, 1, 1, 1]
    assert cal.fit_info["n_estimation_rows"] == 4
    np.testing.assert_array_equal(cal.transform(preds).probs[[0, 2]], [[0.5, 0.5], [0.0, 1.0]])


# -- protocol, classes, errors ---------------------------------------------------------------
def test_registry_entries():
    for name in METHODS:
        info = CALIBRATORS[name]
        assert info.family == "canonical" and info.normalized and not info.accuracy_preserving
        assert not info.binary_only


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("n_classes", [2, 3, 6])
def test_runs_for_two_three_and_six_classes(name, n_classes):
    rng = np.random.default_rng(n_classes)
    preds = _preds(rng.dirichlet(np.ones(n_classes), size=400), rng)
    out = make_calibrator(name, **METHODS[name]).fit(preds).transform(preds)
    np.testing.assert_allclose(out.probs.sum(axis=1), 1.0, atol=1e-12)
    assert (out.probs >= 0).all()


@pytest.mark.parametrize("name", list(METHODS))
def test_seven_classes_refused(name):
    rng = np.random.default_rng(7)
    preds = _preds(rng.dirichlet(np.ones(7), size=100), rng)
    with pytest.raises(
        CalcoreError, match=r"with L = 7 classes that needs \d+ bins.*tl-hb or cw-hb"
    ):
        make_calibrator(name).fit(preds)


def test_errors():
    rng = np.random.default_rng(0)
    preds = _preds(rng.dirichlet(np.ones(3), size=10), rng)
    with pytest.raises(
        CalcoreError, match=r"bins=20 needs at least bins - 1 = 19 calibration rows"
    ):
        make_calibrator("projection-hb", bins=20).fit(preds)
    six = _preds(rng.dirichlet(np.ones(6), size=10), rng)
    with pytest.raises(CalcoreError, match=r"K=100 with L=6 classes gives [\d,]+ bins.*smaller K"):
        make_calibrator("grid", K=100).fit(six)
    with pytest.raises(CalcoreError, match=r"'fallback' must be one of \['identity', 'uniform'\]"):
        make_calibrator("grid", fallback="mean")
    with pytest.raises(CalcoreError, match="not fitted yet"):
        make_calibrator("grid").bin_index(preds.probs)
    with pytest.raises(CalcoreError, match=r"needs a 'sierpinski', 'grid' or 'projection-hb'"):
        canonical_bin_summary(make_calibrator("ts"), preds)
    cal = make_calibrator("grid").fit(preds)
    with pytest.raises(CalcoreError, match=r"probs must have shape \(n_samples, 3\); got \(2, 2\)"):
        cal.bin_index(np.full((2, 2), 0.5))


@pytest.mark.parametrize("name", list(METHODS))
def test_json_round_trip_bit_identical(name):
    rng = np.random.default_rng(5)
    calib, test = (_preds(rng.dirichlet(np.ones(3) * 0.5, size=n), rng) for n in (500, 800))
    cal = make_calibrator(name, directions="random", seed=4) if name == "projection-hb" else None
    cal = (cal or make_calibrator(name, **METHODS[name])).fit(calib)
    back = Calibrator.from_dict(json.loads(json.dumps(cal.to_dict())))
    a, b = cal.transform(test).probs, back.transform(test).probs
    assert a.tobytes() == b.tobytes()


# -- fitted maps on synthetic data -----------------------------------------------------------
def _synthetic(n, temperature, rng):
    """3 classes; labels from softmax(z / T), the model says softmax(z). T = 1: calibrated."""
    z = rng.normal(size=(n, 3)) * 2.5
    p_true = np.exp(z / temperature)
    p_true /= p_true.sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(p_true, axis=1)).sum(axis=1)
    return Predictions.from_logits(z, np.minimum(labels, 2))


FITTED = [("sierpinski", {"depth": 3}), ("grid", {"K": 8}), ("projection-hb", {"bins": 40})]


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(1)
    return {t: (_synthetic(10_000, t, rng), _synthetic(20_000, t, rng)) for t in (1.0, 2.0)}


@pytest.mark.parametrize(("name", "params"), FITTED)
def test_improves_overconfident_model(name, params, synthetic):
    """Brier = canonical reliability - resolution + uncertainty (Murphy), so it is the proper
    target of a canonical calibrator; canonical calibration implies class-wise (App. G, Prop. 1)."""
    calib, test = synthetic[2.0]
    out = make_calibrator(name, **params).fit(calib).transform(test)
    assert brier_score(out) < brier_score(test) - 0.01
    assert classwise_ece(out) < classwise_ece(test) / 3


@pytest.mark.parametrize(("name", "params"), FITTED)
def test_no_harm_on_calibrated_model(name, params, synthetic):
    """The model is calibrated, so its test CW-ECE (~0.007) is pure evaluation noise; the binned
    map adds the noise of its per-bin frequencies (about 150-250 calibration rows per bin, binomial
    s.e. up to 0.04 per bin, about 0.01 once averaged into CW-ECE). Brier may rise by the
    resolution binning gives up (a systematic cost, not noise), boundedly."""
    calib, test = synthetic[1.0]
    out = make_calibrator(name, **params).fit(calib).transform(test)
    assert classwise_ece(out) <= classwise_ece(test) + 0.015
    assert brier_score(out) < brier_score(test) + 0.03


def test_in_sample_canonical_calibration_and_summary(synthetic):
    calib, test = synthetic[2.0]
    cal = make_calibrator("grid", K=6, min_count=5).fit(calib)
    s = canonical_bin_summary(cal, calib)
    assert isinstance(s, CanonicalBins) and s.n_bins == 36
    onehot = np.eye(3)[calib.labels]
    for b, rec, fb in zip(s.bins, s.recalibrated, s.fallback, strict=True):
        if not fb:  # on its own calibration rows each bin is exactly canonically calibrated
            np.testing.assert_allclose(onehot[s.bin_of_row == b].mean(axis=0), rec, atol=1e-12)
    s = canonical_bin_summary(cal, test)
    out = cal.transform(test).probs
    assert s.counts.sum() == test.n_samples and (s.counts > 0).all()
    for b, mean, rec in zip(s.bins, s.mean_prediction, s.recalibrated, strict=True):
        rows = s.bin_of_row == b
        np.testing.assert_allclose(mean, test.probs[rows].mean(axis=0), atol=1e-12)
        np.testing.assert_allclose(rec, out[rows].mean(axis=0), atol=1e-12)
    np.testing.assert_array_equal(
        s.calibration_counts, np.array(cal.to_dict()["state"]["counts"])[s.bins]
    )
