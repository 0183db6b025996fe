"""calcore.simulate: generators against independent integrals, brute force and Monte Carlo."""

from itertools import pairwise

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import expit, logit
from scipy.stats import beta

from calcore import CalcoreError
from calcore.simulate import (
    concentration_for_accuracy,
    dirichlet_simulator,
    mix_n_match_simulator,
    mix_n_match_true_ece,
    simulate_predictions,
    true_calibration_errors,
    true_calibration_map,
    true_reliability_curve,
)

QUAD = {"epsabs": 1e-13, "epsrel": 1e-12, "limit": 500}


# ---------------------------------------------------------------- Mix-n-Match problem
def _z_density(z, b0, b1):
    """Density of z_1 = sigma(b0 + b1 x) for X ~ (N(-1,1) + N(1,1)) / 2, by change of variable."""
    x = (logit(z) - b0) / b1
    fx = (np.exp(-0.5 * (x + 1) ** 2) + np.exp(-0.5 * (x - 1) ** 2)) / (2 * np.sqrt(2 * np.pi))
    return fx / (abs(b1) * z * (1 - z))


def _pi1_eq14(z, b0, b1):
    """Mix-n-Match Eq. 14 as printed: [1 + exp(-2 (b0 + log(1/z - 1)) / b1)]^-1."""
    return 1.0 / (1.0 + np.exp(-2.0 * (b0 + np.log(1.0 / z - 1.0)) / b1))


def _z_space(f, b0, b1, kinks=()):
    pts = [1e-300, *sorted(kinks), 1 - 1e-16]
    return sum(quad(f, a, b, **QUAD)[0] for a, b in pairwise(pts))


@pytest.mark.parametrize("case", [1, 2])
@pytest.mark.parametrize("order", [1, 2])
def test_mix_n_match_truth_matches_quad_in_z(case, order):
    sim = mix_n_match_simulator(case)
    b0, b1 = sim.beta0, sim.beta1
    z_star = expit(b0 + b1 * (-b0 / (b1 + 2)))

    def f(z):
        return abs(z - _pi1_eq14(z, b0, b1)) ** order * _z_density(z, b0, b1)

    assert mix_n_match_true_ece(sim, order=order) == pytest.approx(
        _z_space(f, b0, b1, [z_star]), abs=1e-6, rel=0
    )


@pytest.mark.parametrize("case", [1, 2])
def test_mix_n_match_all_truths_match_quad_in_z(case):
    sim = mix_n_match_simulator(case)
    b0, b1 = sim.beta0, sim.beta1
    t = true_calibration_errors(sim)

    def dens(z):
        return _z_density(z, b0, b1)

    def pi(z):
        return _pi1_eq14(z, b0, b1)

    # confidence h in (1/2, 1): class 0 predicted at z = h, class 1 at z = 1 - h
    def conf_gap(h):
        return h * (dens(h) + dens(1 - h)) - dens(h) * pi(h) - dens(1 - h) * (1 - pi(1 - h))

    grid = np.linspace(0.5 + 1e-9, 1 - 1e-9, 20001)
    vals = conf_gap(grid)
    kinks = grid[np.flatnonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))]
    pts = [0.5, *kinks, 1 - 1e-16]
    conf = sum(quad(lambda h: abs(conf_gap(h)), a, b, **QUAD)[0] for a, b in pairwise(pts))
    acc = quad(lambda h: dens(h) * pi(h) + dens(1 - h) * (1 - pi(1 - h)), 0.5, 1 - 1e-16, **QUAD)[0]
    gap = mix_n_match_true_ece(sim)
    assert t.conf_ece == pytest.approx(conf, abs=1e-6)
    assert t.accuracy == pytest.approx(acc, abs=1e-6)
    assert t.top_label_ece == t.classwise_ece == gap
    assert t.canonical_ece_l1 == pytest.approx(2 * gap, abs=1e-12)
    assert t.conf_ece < gap  # merging two inputs can only cancel gaps


@pytest.mark.parametrize("case", [1, 2])
def test_mix_n_match_samples_reproduce_truth_within_monte_carlo_error(case):
    sim = mix_n_match_simulator(case)
    draw = simulate_predictions(sim, 1_000_000, seed=11)
    z1 = draw.preds.probs[:, 0]
    # the stored truth is sigma(-2x); Eq. 14 recomputes it from z1 alone
    np.testing.assert_allclose(
        draw.true_probs[:, 0], _pi1_eq14(z1, sim.beta0, sim.beta1), atol=1e-9
    )
    gap = np.abs(z1 - draw.true_probs[:, 0])
    se = gap.std() / np.sqrt(gap.size)
    assert abs(gap.mean() - mix_n_match_true_ece(sim)) < 4 * se
    t = true_calibration_errors(sim)
    correct = draw.preds.correct.astype(float)
    assert abs(correct.mean() - t.accuracy) < 4 * correct.std() / np.sqrt(correct.size)
    y0 = (draw.preds.labels == 0).astype(float)
    assert abs(y0.mean() - 0.5) < 4 * 0.5 / np.sqrt(y0.size)


def test_mix_n_match_calibrated_case_is_zero():
    sim = mix_n_match_simulator(beta0=0.0, beta1=-2.0)
    assert mix_n_match_true_ece(sim) < 1e-15
    assert true_calibration_errors(sim).conf_ece < 1e-12


# ---------------------------------------------------------------- Dirichlet simulators
def test_two_class_dirichlet_truth_matches_quad():
    """L = 2: the inner expectation is exact, so all binned truths are quadrature values."""
    alpha = (0.8, 1.6)
    m = true_calibration_map(2, temperature=1.7, class_bias=(0.3, -0.3))
    sim = dirichlet_simulator(2, concentration=alpha, true_map=m)

    def pi(p):
        s0, s1 = 0.3 + np.log(p) / 1.7, -0.3 + np.log1p(-p) / 1.7
        return expit(s0 - s1)

    def f(p):
        return beta.pdf(p, *alpha)

    gap = quad(lambda p: abs(p - pi(p)) * f(p), 0, 1, points=[0.5], **QUAD)[0]

    def conf_gap(h):
        return h * (f(h) + f(1 - h)) - f(h) * pi(h) - f(1 - h) * (1 - pi(1 - h))

    grid = np.linspace(0.5 + 1e-9, 1 - 1e-9, 4001)
    vals = np.array([conf_gap(h) for h in grid])
    kinks = grid[np.flatnonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))]
    pts = [0.5, *kinks, 1.0]
    conf = sum(quad(lambda h: abs(conf_gap(h)), a, b, **QUAD)[0] for a, b in pairwise(pts))
    t = true_calibration_errors(sim, n_inner=16, n_batches=2, panels=256, n_monte_carlo=400_000)
    assert t.top_label_ece == pytest.approx(gap, abs=1e-6)
    assert t.classwise_ece == pytest.approx(gap, abs=1e-6)
    assert t.conf_ece == pytest.approx(conf, abs=1e-6)
    assert t.standard_errors["top_label_ece"] == 0.0
    assert abs(t.canonical_ece_l1 - 2 * gap) < 4 * t.standard_errors["canonical_ece_l1"]


def _binned_with_truth(score, target, groups, n_bins=100):
    """ECE with equal-mass bins where each bin's accuracy is the mean *true* probability:
    no label noise, only a small within-bin bias."""
    total = 0.0
    for g in np.unique(groups):
        sel = groups == g
        s, t = score[sel], target[sel]
        for idx in np.array_split(np.argsort(s, kind="stable"), n_bins):
            total += abs(s[idx].mean() - t[idx].mean()) * idx.size
    return total / score.size


@pytest.mark.parametrize("kind", ["overconfident", "mix"])
def test_multiclass_truth_matches_brute_force(kind):
    sim = dirichlet_simulator(4, concentration=0.5, miscalibration=kind, strength=1.0)
    t = true_calibration_errors(sim, n_inner=512, panels=48, n_monte_carlo=200_000, seed=1)
    d = simulate_predictions(sim, 600_000, seed=5)
    h, c, probs, tp = d.preds.confidence, d.preds.predicted, d.preds.probs, d.true_probs
    zeros = np.zeros_like(c)
    brute = {
        "conf_ece": _binned_with_truth(h, d.true_correct_prob, zeros),
        "top_label_ece": _binned_with_truth(h, d.true_correct_prob, c, 50),
        "classwise_ece": np.mean(
            [_binned_with_truth(probs[:, k], tp[:, k], zeros) for k in range(4)]
        ),
    }
    for name, value in brute.items():
        tol = 4 * t.standard_errors[name] + 2.5e-3
        assert abs(getattr(t, name) - value) < tol, (name, getattr(t, name), value)
    # canonical errors: an independent plain average over the generated rows
    l1 = np.abs(probs - tp).sum(axis=1)
    se = np.hypot(l1.std() / np.sqrt(l1.size), t.standard_errors["canonical_ece_l1"])
    assert abs(l1.mean() - t.canonical_ece_l1) < 4 * se
    assert t.canonical_ece_l1 >= t.classwise_ece * 4 * 0.999  # sum over classes of the CW gaps


def test_samples_reproduce_accuracy_and_labels_follow_true_probs():
    sim = dirichlet_simulator(5, concentration=0.4, miscalibration="class-specific", strength=1.5)
    t = true_calibration_errors(sim, n_inner=64, panels=8, n_monte_carlo=400_000, seed=2)
    d = simulate_predictions(sim, 300_000, seed=3)
    correct = d.preds.correct.astype(float)
    se = np.hypot(correct.std() / np.sqrt(correct.size), t.standard_errors["accuracy"])
    assert abs(correct.mean() - t.accuracy) < 4 * se
    one_hot = np.eye(5)[d.preds.labels]
    resid = (one_hot - d.true_probs).mean(axis=0)
    assert np.all(np.abs(resid) < 4 * np.sqrt(0.25 / d.preds.n_samples))


def test_sampled_labels_reproduce_true_conf_ece():
    """Binned conf-ECE from sampled labels (not true probabilities) on a large sample."""
    sim = dirichlet_simulator(3, concentration=0.6, miscalibration="overconfident", strength=1.0)
    t = true_calibration_errors(sim, n_inner=512, panels=32, n_monte_carlo=20_000, seed=3)
    d = simulate_predictions(sim, 400_000, seed=21)
    h, correct = d.preds.confidence, d.preds.correct.astype(float)
    est = _binned_with_truth(h, correct, np.zeros_like(d.preds.labels), n_bins=20)
    # label noise inflates each bin's |gap| by at most about sqrt(2/pi) * sd / sqrt(n_b)
    noise = np.sqrt(2 / np.pi) * np.sqrt(0.25 / (400_000 / 20))
    assert abs(est - t.conf_ece) < noise + 4 * t.standard_errors["conf_ece"] + 1e-3


def test_calibrated_generator_has_zero_errors():
    sim = dirichlet_simulator(3, concentration=0.7, miscalibration="calibrated")
    t = true_calibration_errors(sim, n_inner=64, panels=16, n_monte_carlo=20_000)
    for name in ("conf_ece", "top_label_ece", "classwise_ece", "canonical_ece_l1"):
        assert getattr(t, name) < 1e-12


def test_overconfidence_raises_and_underconfidence_lowers_binned_gap_sign():
    over = true_reliability_curve(
        dirichlet_simulator(2, concentration=0.5, miscalibration="overconfident")
    )
    under = true_reliability_curve(
        dirichlet_simulator(2, concentration=0.5, miscalibration="underconfident")
    )
    assert np.all(over.accuracy < over.confidence)
    assert np.all(under.accuracy > under.confidence)
    # two symmetric classes: P(correct | h) = pi(h) in closed form
    h = over.confidence
    np.testing.assert_allclose(
        over.accuracy, np.sqrt(h) / (np.sqrt(h) + np.sqrt(1 - h)), atol=1e-12
    )


def test_mix_n_match_reliability_curve_integrates_to_conf_ece():
    sim = mix_n_match_simulator(1)
    curve = true_reliability_curve(sim, n_points=20001)
    approx = np.trapezoid(
        np.abs(curve.confidence - curve.accuracy) * curve.density, curve.confidence
    )
    assert approx == pytest.approx(true_calibration_errors(sim).conf_ece, abs=2e-4)


def test_concentration_for_accuracy_hits_target():
    m = true_calibration_map(10, kind="overconfident", strength=0.5)
    sim = dirichlet_simulator(10, accuracy=0.8, true_map=m)
    assert np.all(sim.alpha == sim.alpha[0]) and sim.target_accuracy == 0.8
    d = simulate_predictions(sim, 200_000, seed=9)
    assert abs(d.true_correct_prob.mean() - 0.8) < 0.01


def test_determinism_for_a_seed():
    sim = dirichlet_simulator(4, concentration=0.3, miscalibration="mix")
    a, b, c = (simulate_predictions(sim, 1000, seed=s) for s in (7, 7, 8))
    np.testing.assert_array_equal(a.preds.probs, b.preds.probs)
    np.testing.assert_array_equal(a.preds.labels, b.preds.labels)
    assert not np.array_equal(a.preds.probs, c.preds.probs)
    m1, m2 = (simulate_predictions(mix_n_match_simulator(2), 500, seed=3) for _ in range(2))
    np.testing.assert_array_equal(m1.preds.labels, m2.preds.labels)
    kw = {"n_inner": 64, "panels": 8, "n_monte_carlo": 10_000, "seed": 4}
    assert true_calibration_errors(sim, **kw) == true_calibration_errors(sim, **kw)


def test_errors_are_reported():
    with pytest.raises(CalcoreError, match="reachable range"):
        concentration_for_accuracy(0.05, true_calibration_map(3, kind="calibrated"))
    with pytest.raises(CalcoreError, match="kind must be one of"):
        true_calibration_map(3, kind="sideways")
    with pytest.raises(CalcoreError, match="not reachable"):
        dirichlet_simulator(3, accuracy=0.2)
    with pytest.raises(CalcoreError, match="case must be 1 or 2"):
        mix_n_match_simulator(3)
    with pytest.raises(CalcoreError, match="either concentration or accuracy"):
        dirichlet_simulator(3, accuracy=0.8, concentration=1.0)
    with pytest.raises(CalcoreError, match="n must be a positive integer"):
        simulate_predictions(mix_n_match_simulator(1), 0)


def test_estimator_errors_against_a_direct_loop_and_truth():
    from calcore import confidence_ece, kde_ece_confidence
    from calcore.simulate import estimator_errors, samples_needed

    sim = mix_n_match_simulator(1)
    res = estimator_errors(sim, sizes=[64, 2048], estimators=("kde", "equal-width"), n_repeats=6)
    truth = true_calibration_errors(sim).conf_ece
    assert res.truth == truth
    # independent loop over the documented seeds
    kde = [
        kde_ece_confidence(simulate_predictions(sim, 64, seed=1_000_003 * r + 64).preds)
        for r in range(6)
    ]
    ew = [
        confidence_ece(simulate_predictions(sim, 64, seed=1_000_003 * r + 64).preds)
        for r in range(6)
    ]
    assert res.mean_abs_error[0, 0] == pytest.approx(
        np.mean(np.abs(np.array(kde) - truth)), abs=1e-15
    )
    assert res.bias[1, 0] == pytest.approx(np.mean(ew) - truth, abs=1e-15)
    # errors shrink with n; small-n binned estimates are biased upwards (Mix-n-Match Fig. 7)
    assert np.all(res.mean_abs_error[:, 1] < res.mean_abs_error[:, 0])
    assert res.bias[1, 0] > 0
    tolerance = float(res.mean_abs_error[1].max()) + 1e-12
    assert samples_needed(res, tolerance=tolerance)["equal-width"] == 64
    assert samples_needed(res, 0.0) == {"kde": None, "equal-width": None}
    with pytest.raises(CalcoreError, match="KDE estimator exists"):
        estimator_errors(sim, view="top-label", estimators=("kde",), truth=0.1)
