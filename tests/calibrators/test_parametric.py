"""Parametric calibrators: exact small cases, brute-force references, synthetic truth, CIFAR-10.

Synthetic generator: true logits ``g ~ N(0, s^2)``, labels drawn from ``softmax(g)`` (so
``softmax(g)`` is perfectly calibrated), observed logits ``factor * g`` (over-confident
for ``factor > 1``; the NLL-optimal temperature is then ``factor``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import expit, logsumexp, softmax

import calcore
from calcore import CalcoreError, Predictions
from calcore.calibrators import CALIBRATORS, Calibrator, make_calibrator
from calcore.calibrators.binary_scaling import (
    BetaCalibration,
    PlattScaling,
    apply_beta,
    apply_platt,
    fit_beta,
    fit_platt,
)

MULTICLASS = ["ts", "ets", "vs", "ms", "dirichlet"]
BINARY = ["platt", "beta"]


def _synthetic(n, n_classes, factor, seed, scale=1.5):
    rng = np.random.default_rng(seed)
    g = rng.normal(scale=scale, size=(n, n_classes))
    p = softmax(g, axis=1)
    labels = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return Predictions.from_logits(factor * g, np.minimum(labels, n_classes - 1))


def _split(preds, n_calib):
    rows = np.arange(preds.n_samples)
    return preds.subset(rows[:n_calib]), preds.subset(rows[n_calib:])


def _nll_grid(z, labels, temps):
    out = np.empty(temps.size)
    rows = np.arange(z.shape[0])
    for start in range(0, temps.size, 500):
        t = temps[start : start + 500, None, None]
        lse = logsumexp(z[None] / t, axis=2)
        out[start : start + 500] = np.mean(lse - z[rows, labels][None] / t[:, :, 0], axis=1)
    return out


# -- temperature scaling ------------------------------------------------------------------------
def test_ts_exact_binary_case():
    # d = z1 - z0 = 1 on every row, 3 of 4 labels are 1: sigmoid(1/T) = 3/4, T = 1/log(3).
    preds = Predictions.from_logits([[0.0, 1.0]] * 4, [1, 1, 1, 0])
    ts = make_calibrator("ts").fit(preds)
    assert ts.fit_info["temperature"] == pytest.approx(1 / np.log(3), rel=1e-12)
    assert ts.fit_info["converged"] is True


def test_ts_matches_brute_force_grid():
    preds = _synthetic(1500, 4, 2.5, seed=1)
    t_hat = make_calibrator("ts").fit(preds).fit_info["temperature"]
    z, y = preds.logits, preds.labels
    coarse = np.linspace(0.2, 8.0, 2001)
    t0 = coarse[np.argmin(_nll_grid(z, y, coarse))]
    fine = np.linspace(t0 - 0.01, t0 + 0.01, 20_001)  # spacing 1e-6
    t_grid = fine[np.argmin(_nll_grid(z, y, fine))]
    assert abs(t_hat - t_grid) < 1e-4
    assert abs(t_hat - 2.5) < 0.3  # the generator's true over-confidence factor


def test_ts_float32_logits_give_the_float64_temperature():
    preds = _synthetic(4000, 10, 2.0, seed=2)
    z32 = preds.logits.astype(np.float32)
    t64 = make_calibrator("ts").fit(preds).fit_info["temperature"]
    t32 = make_calibrator("ts").fit(Predictions.from_logits(z32, preds.labels))
    assert abs(t32.fit_info["temperature"] - t64) < 1e-5
    assert abs(t32.fit_info["temperature"] - 1.0) > 0.5  # never silently left at T = 1


def test_ts_on_probabilities_equals_ts_on_logits():
    preds = _synthetic(2000, 5, 2.0, seed=3)
    from_probs = Predictions.from_probs(preds.probs, preds.labels)
    t_logits = make_calibrator("ts").fit(preds).fit_info["temperature"]
    ts = make_calibrator("ts").fit(from_probs)
    assert ts.fit_info["temperature"] == pytest.approx(t_logits, rel=1e-8)
    assert ts.fit_info["scores"] == "log(max(probs, 1e-300))"


def test_ts_keeps_scaled_logits_for_composition():
    preds = _synthetic(500, 3, 2.0, seed=4)
    ts = make_calibrator("ts").fit(preds)
    out = ts.transform(preds)
    np.testing.assert_array_equal(out.logits, preds.logits / ts.fit_info["temperature"])


def test_ts_optimum_on_a_bound_is_clamped_and_reported():
    # Every row correct with a margin: the NLL keeps falling as T -> 0.
    preds = Predictions.from_logits([[0.0, 1.0], [1.0, 0.0]] * 5, [1, 0] * 5)
    with pytest.warns(calcore.CalcoreWarning, match="lower bound 0.01"):
        ts = make_calibrator("ts").fit(preds)
    info = ts.fit_info
    assert info["temperature"] == 0.01 and info["at_bound"] and info["bound"] == "min_temperature"
    assert "T clamped to 0.01" in info["message"] and "separable" in info["message"]
    assert info["iterations"] < 10  # tests the bound instead of crawling towards it
    np.testing.assert_array_equal(ts.transform(preds).logits, preds.logits / 0.01)
    # A wider range: still clamped, to the new bound, in a few iterations.
    with pytest.warns(calcore.CalcoreWarning, match="lower bound 0.0001"):
        wide = make_calibrator("ts", min_temperature=1e-4).fit(preds)
    assert wide.fit_info["temperature"] == 1e-4 and wide.fit_info["iterations"] < 10
    # Labels independent of the (tiny) scores: the optimum is T -> infinity.
    flat = Predictions.from_logits([[0.0, 1.0]] * 4, [0, 1, 0, 1])
    with pytest.warns(calcore.CalcoreWarning, match="upper bound 100"):
        ts = make_calibrator("ts").fit(flat)
    info = ts.fit_info
    assert info["temperature"] == 100.0 and info["at_bound"] and info["bound"] == "max_temperature"
    assert "T clamped to 100" in info["message"] and "no signal" in info["message"]
    # An interior optimum says it is not on a bound.
    inner = make_calibrator("ts").fit(_synthetic(500, 3, 2.0, seed=9)).fit_info
    assert inner["at_bound"] is False and inner["bound"] is None


def test_ts_constant_rows_leave_t_at_one_and_say_why():
    preds = Predictions.from_logits([[1.0, 1.0]] * 3, [0, 1, 0])
    ts = make_calibrator("ts").fit(preds)
    assert ts.fit_info["temperature"] == 1.0 and "constant" in ts.fit_info["message"]
    np.testing.assert_allclose(ts.transform(preds).probs, 0.5)


# -- shared properties ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "params"), [("ts", {}), ("ets", {"loss": "mse"}), ("ets", {"loss": "nll"})]
)
def test_accuracy_preserved_exactly(name, params):
    preds = _synthetic(3000, 10, 3.0, seed=5)
    out = make_calibrator(name, **params).fit_transform(preds)
    np.testing.assert_array_equal(out.predicted, preds.predicted)
    assert CALIBRATORS[name].accuracy_preserving


@pytest.mark.parametrize("name", MULTICLASS)
def test_rows_on_simplex(name):
    calib, test = _split(_synthetic(3000, 6, 2.0, seed=6), 1500)
    out = make_calibrator(name).fit(calib).transform(test)
    np.testing.assert_allclose(out.probs.sum(axis=1), 1.0, atol=1e-12)
    assert out.probs.min() >= 0.0


@pytest.mark.parametrize(
    ("name", "metric"),
    [
        ("ts", calcore.negative_log_likelihood),
        ("ets", calcore.brier_score),
        ("vs", calcore.negative_log_likelihood),
        ("ms", calcore.negative_log_likelihood),
        ("dirichlet", calcore.negative_log_likelihood),
    ],
)
def test_improves_miscalibrated_and_harmless_on_calibrated(name, metric):
    calib, test = _split(_synthetic(8000, 5, 2.5, seed=7), 4000)
    before, after = metric(test), metric(make_calibrator(name).fit(calib).transform(test))
    assert after < before - 0.02
    assert calcore.top_label_ece(make_calibrator(name).fit(calib).transform(test)) < 0.5 * (
        calcore.top_label_ece(test)
    )
    calib, test = _split(_synthetic(8000, 5, 1.0, seed=8), 4000)
    before, after = metric(test), metric(make_calibrator(name).fit(calib).transform(test))
    assert after < before + 0.01


def _binary_synthetic(n, factor, seed):
    rng = np.random.default_rng(seed)
    g = rng.normal(scale=2.0, size=n)
    y = (rng.random(n) < expit(g)).astype(int)
    s = expit(factor * g)
    return Predictions.from_probs(np.column_stack([1 - s, s]), y)


@pytest.mark.parametrize("name", BINARY)
def test_binary_improves_and_does_no_harm(name):
    for factor, margin in ((3.0, -0.02), (1.0, 0.01)):
        calib, test = _split(_binary_synthetic(8000, factor, seed=9), 4000)
        out = make_calibrator(name).fit(calib).transform(test)
        before = calcore.negative_log_likelihood(test)
        assert calcore.negative_log_likelihood(out) < before + margin
        np.testing.assert_allclose(out.probs.sum(axis=1), 1.0, atol=1e-12)


def test_platt_exact_case():
    # Scores with logit 0 and 1; outcome frequencies 1/4 and 3/4 -> b = -log 3, a = 2 log 3.
    s = np.repeat([0.5, expit(1.0)], 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    state = fit_platt(s, y)
    assert state["b"] == pytest.approx(-np.log(3), abs=1e-6)
    assert state["a"] == pytest.approx(2 * np.log(3), abs=1e-6)
    np.testing.assert_allclose(apply_platt(state, [0.5, expit(1.0)]), [0.25, 0.75], atol=1e-6)


def test_beta_contains_the_identity_and_is_monotone():
    calib, _ = _split(_binary_synthetic(20_000, 1.0, seed=10), 20_000)
    state = fit_beta(calib.probs[:, 1], calib.labels)
    assert state["a"] == pytest.approx(1, abs=0.1) and state["b"] == pytest.approx(1, abs=0.1)
    grid = np.linspace(0, 1, 101)
    assert np.all(np.diff(apply_beta(state, grid)) >= 0)


@pytest.mark.parametrize("cls", [PlattScaling, BetaCalibration])
def test_binary_contract_for_m2b_wrappers(cls):
    preds = _binary_synthetic(2000, 2.0, seed=11)
    params = make_calibrator(cls.name).params
    state = cls.fit_binary(preds.probs[:, 1], preds.labels == 1, params)
    assert json.loads(json.dumps(state)) == state
    p = cls.apply_binary(state, preds.probs[:, 1], params)
    assert p.shape == (2000,) and p.min() >= 0 and p.max() <= 1
    via_protocol = make_calibrator(cls.name).fit(preds).transform(preds)
    np.testing.assert_array_equal(via_protocol.probs[:, 1], p)
    assert CALIBRATORS[cls.name].binary_only and CALIBRATORS[cls.name].family == "parametric"


@pytest.mark.parametrize("name", MULTICLASS + BINARY)
def test_json_round_trip_is_bit_identical(name):
    data = _binary_synthetic(1000, 2.0, 12) if name in BINARY else _synthetic(1000, 4, 2.0, 12)
    fitted = make_calibrator(name).fit(data)
    restored = Calibrator.from_dict(json.loads(json.dumps(fitted.to_dict())))
    a, b = fitted.transform(data), restored.transform(data)
    np.testing.assert_array_equal(a.probs, b.probs)
    assert (a.logits is None) == (b.logits is None)
    if a.logits is not None:
        np.testing.assert_array_equal(a.logits, b.logits)


# -- errors -------------------------------------------------------------------------------------
def test_errors():
    preds = _synthetic(200, 3, 2.0, seed=13)
    with pytest.raises(CalcoreError, match="not fitted yet"):
        make_calibrator("ts").transform(preds)
    fitted = make_calibrator("vs").fit(preds)
    other = Predictions.from_logits(preds.logits, preds.labels, class_names=["a", "b", "c"])
    with pytest.raises(CalcoreError, match="fitted on classes"):
        fitted.transform(other)
    with pytest.raises(CalcoreError, match="binary calibrator .* 3 classes.*tl-platt"):
        make_calibrator("platt").fit(preds)
    with pytest.raises(CalcoreError, match="min_temperature .* must be below max_temperature"):
        make_calibrator("ts", min_temperature=5.0, max_temperature=2.0)
    with pytest.raises(CalcoreError, match="'loss' must be one of"):
        make_calibrator("ets", loss="hinge")
    with pytest.raises(CalcoreError, match="'reg_lambda' must be >= 0"):
        make_calibrator("dirichlet", reg_lambda=-1.0)
    with pytest.raises(CalcoreError, match="outcomes must be 0/1"):
        fit_platt([0.2, 0.7], [0, 2])
    with pytest.raises(CalcoreError, match="outside \\[0, 1\\]"):
        fit_beta([0.2, 1.7], [0, 1])


# -- CIFAR-10: Gupta & Ramdas (2022), Tables 2-3, TS column --------------------------------------
# model: (TS TL-ECE, TS CW-ECE x 100) as printed; NLL-optimal T on the 5,000 val rows.
PAPER_TS = {"resnet50": (0.022, 0.42), "resnet110": (0.022, 0.50)}
PAPER_BASE_EQUALS_TS = {"wide_resnet": 0.023, "densenet121": 0.027}


def _cifar(reference_data, model, split):
    d = reference_data / "cifar10"
    return Predictions.from_logits(
        np.load(d / f"{model}_{split}_logits.npy"), np.load(d / f"{model}_{split}_labels.npy")
    )


@pytest.mark.parametrize("model", list(PAPER_TS))
def test_cifar10_ts_reproduces_paper(reference_data, model):
    ts = make_calibrator("ts").fit(_cifar(reference_data, model, "val"))
    out = ts.transform(_cifar(reference_data, model, "test"))
    tl, cw = PAPER_TS[model]
    assert round(calcore.top_label_ece(out, bins=15), 3) == tl
    assert round(100 * calcore.classwise_ece(out, bins=15), 2) == cw


@pytest.mark.parametrize("model", list(PAPER_BASE_EQUALS_TS))
def test_cifar10_models_the_paper_left_at_t1(reference_data, model):
    # The paper's TS equals Base here; the NLL optimum is a T slightly below 1 and helps.
    ts = make_calibrator("ts").fit(_cifar(reference_data, model, "val"))
    assert 0.9 < ts.fit_info["temperature"] < 0.99
    out = ts.transform(_cifar(reference_data, model, "test"))
    assert calcore.top_label_ece(out, bins=15) < PAPER_BASE_EQUALS_TS[model]


# -- affine maps (vs, ms, dirichlet): the optimum itself -----------------------------------------
def _penalised_nll(x, labels, w, b, *, off, diag, bias):
    """The penalised mean NLL and its gradient, written out independently of calcore."""
    n, n_classes = x.shape
    full = np.ndim(w) == 2
    z = x @ w.T + b if full else x * w + b
    lse = logsumexp(z, axis=1)
    value = np.mean(lse - z[np.arange(n), labels])
    g = np.exp(z - lse[:, None])
    g[np.arange(n), labels] -= 1.0
    g /= n
    if full:
        dev = w - np.eye(n_classes)
        weights = np.where(np.eye(n_classes, dtype=bool), diag, off)
        value += np.sum(weights * dev**2)
        gw = g.T @ x + 2 * weights * dev
    else:
        value += diag * np.sum((w - 1) ** 2)
        gw = np.sum(g * x, axis=0) + 2 * diag * (w - 1)
    value += bias * np.sum(b**2)
    return value, gw, g.sum(axis=0) + 2 * bias * b


def _affine_case(name, n_classes):
    preds = _synthetic(3000, n_classes, 2.0, seed=21)
    logp = preds.logits - logsumexp(preds.logits, axis=1, keepdims=True)
    cases = {  # features and penalty weights as documented in the classes' docstrings
        "vs": (preds.logits, {"off": 0.0, "diag": 0.0, "bias": 0.0}),
        "ms": (preds.logits, {"off": 1e-4, "diag": 1e-4, "bias": 1e-4}),
        "dirichlet": (
            logp,
            {"off": 1.0 / (n_classes * (n_classes - 1)), "diag": 0.0, "bias": 1.0 / n_classes},
        ),
    }
    return preds, *cases[name]


@pytest.mark.parametrize("name", ["vs", "ms", "dirichlet"])
def test_affine_fit_satisfies_the_first_order_condition(name):
    preds, x, weights = _affine_case(name, 6)
    cal = make_calibrator(name).fit(preds)
    w, b = np.asarray(cal._state["weights"]), np.asarray(cal._state["bias"])
    value, gw, gb = _penalised_nll(x, preds.labels, w, b, **weights)
    assert cal.fit_info["converged"] is True
    assert cal.fit_info["objective"] == pytest.approx(value, rel=1e-12)
    # L-BFGS-B stops at |projected gradient| <= 1e-5 or a relative decrease <= 2.2e-9
    assert max(np.abs(gw).max(), np.abs(gb).max()) < 1e-4


@pytest.mark.parametrize("name", ["ms", "dirichlet"])
def test_affine_fit_matches_an_independent_minimiser(name):
    # Reference: scipy's BFGS on the plain objective from the identity, to a tight tolerance.
    from scipy.optimize import minimize

    preds, x, weights = _affine_case(name, 4)
    n_classes = preds.n_classes

    def fun(theta):
        w, b = theta[: n_classes**2].reshape(n_classes, n_classes), theta[n_classes**2 :]
        value, gw, gb = _penalised_nll(x, preds.labels, w, b, **weights)
        return value, np.concatenate([gw.ravel(), gb])

    theta0 = np.concatenate([np.eye(n_classes).ravel(), np.zeros(n_classes)])
    ref = minimize(fun, theta0, jac=True, method="BFGS", options={"gtol": 1e-10, "maxiter": 5000})
    cal = make_calibrator(name).fit(preds)
    assert cal.fit_info["objective"] <= ref.fun + 1e-8
    w_ref = ref.x[: n_classes**2].reshape(n_classes, n_classes)
    # The penalty makes the optimum unique: the parameters agree, not just the probabilities.
    np.testing.assert_allclose(cal._state["weights"], w_ref, atol=2e-3)
    np.testing.assert_allclose(cal._state["bias"], ref.x[n_classes**2 :], atol=2e-3)
    z_ref = x @ w_ref.T + ref.x[n_classes**2 :]
    p_ref = softmax(z_ref, axis=1)
    np.testing.assert_allclose(cal.transform(preds).probs, p_ref, atol=1e-4)


def test_dirichlet_returns_the_lowest_penalty_parameters():
    # softmax ignores a common shift of a row's logits, so (W + 1 v^T, b + c 1) predicts the same;
    # the optimum has the lowest ODIR penalty among those: zero off-diagonal column sums, sum b = 0.
    preds, _, _ = _affine_case("dirichlet", 5)
    state = make_calibrator("dirichlet").fit(preds)._state
    w, b = np.asarray(state["weights"]), np.asarray(state["bias"])
    off_diagonal_sums = w.sum(axis=0) - np.diag(w)
    np.testing.assert_allclose(off_diagonal_sums, 0.0, atol=1e-10)
    assert abs(b.sum()) < 1e-10


def test_affine_objective_gradient_matches_finite_differences():
    from scipy.optimize import check_grad

    from calcore.calibrators._logistic import AffinePenalty, affine_objective

    preds, x, _ = _affine_case("dirichlet", 4)
    rng = np.random.default_rng(22)
    penalty = AffinePenalty(off=0.3, diag=0.2, bias=0.1)
    for diagonal, k in ((False, 16), (True, 4)):
        objective = affine_objective(x, preds.labels, diagonal=diagonal, penalty=penalty)

        def split(theta, k=k, diagonal=diagonal):
            return (theta[:k] if diagonal else theta[:k].reshape(4, 4)), theta[k:]

        def value(theta, split=split, objective=objective):
            return objective(*split(theta))[0]

        def grad(theta, split=split, objective=objective):
            _, gw, gb = objective(*split(theta))
            return np.concatenate([np.ravel(gw), gb])

        theta = rng.normal(size=k + 4)
        assert check_grad(value, grad, theta) < 1e-5 * max(1.0, np.abs(grad(theta)).max())
        w, b = split(theta)
        exact = _penalised_nll(x, preds.labels, w, b, off=0.3 * (not diagonal), diag=0.2, bias=0.1)
        assert value(theta) == pytest.approx(exact[0], rel=1e-12)


def test_blas_runs_single_threaded_inside_the_fit_context_and_is_restored():
    from threadpoolctl import threadpool_info

    from calcore.foundation.threads import single_threaded_blas

    def blas_thread_counts():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_thread_counts()
    assert before, "numpy/scipy ship OpenBLAS here; the helper found none"
    with single_threaded_blas():
        assert set(blas_thread_counts()) == {1}
        with single_threaded_blas():  # nested: still one thread, not restored early
            pass
        assert set(blas_thread_counts()) == {1}
    assert blas_thread_counts() == before


# -- ensemble temperature scaling: the weights and the blocked passes ----------------------------
def _ets_parts(preds, temperature):
    p_t = softmax(preds.logits / temperature, axis=1)
    return p_t, preds.probs, np.eye(preds.n_classes)[preds.labels]


@pytest.mark.parametrize("loss", ["mse", "nll"])
def test_ets_weights_beat_a_brute_force_grid_over_the_simplex(loss):
    preds = _synthetic(3000, 5, 2.5, seed=31)
    ets = make_calibrator("ets", loss=loss).fit(preds)
    p_t, p_1, onehot = _ets_parts(preds, ets.fit_info["temperature"])
    step = 0.005
    grid = [(a, b) for a in np.arange(0, 1 + 1e-9, step) for b in np.arange(0, 1 - a + 1e-9, step)]
    grid = np.array([(a, b, max(0.0, 1 - a - b)) for a, b in grid])
    rows = np.arange(preds.n_samples)

    def loss_at(w):
        q = w[0] * p_t + w[1] * p_1 + w[2] / preds.n_classes
        if loss == "mse":
            return np.mean(np.sum((q - onehot) ** 2, axis=1))
        return -np.mean(np.log(q[rows, preds.labels]))

    # the loss is a quadratic (mse) or a function of the label column only (nll): vectorise it
    if loss == "mse":
        values = np.array([loss_at(w) for w in grid[:: max(1, len(grid) // 4000)]])
        grid = grid[:: max(1, len(grid) // 4000)]
    else:
        a = np.column_stack([p_t[rows, preds.labels], p_1[rows, preds.labels]])
        q = grid[:, :2] @ a.T + grid[:, 2:] / preds.n_classes
        values = -np.mean(np.log(q), axis=1)
    w = np.asarray(ets.fit_info["weights"])
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0, abs=1e-12)
    assert ets.fit_info["weights_loss"] == pytest.approx(loss_at(w), rel=1e-10)
    assert loss_at(w) <= values.min() + 1e-10
    assert np.abs(w - grid[np.argmin(values)]).max() < 0.05


def test_ets_blocked_statistics_and_transform_match_the_full_matrices():
    from calcore.calibrators import _scaling

    preds = _synthetic(3000, 50, 2.0, seed=32)  # 1,310 rows per block: 3 blocks, the last partial
    temperature, weights = 1.7, (0.5, 0.3, 0.2)
    p_t, p_1, _ = _ets_parts(preds, temperature)
    stats = _scaling.ets_statistics(preds.logits, preds.probs, preds.labels, temperature)
    rows = np.arange(preds.n_samples)
    assert stats.s_tt == pytest.approx(np.sum(p_t * p_t) / 3000, rel=1e-12)
    assert stats.s_t1 == pytest.approx(np.sum(p_t * p_1) / 3000, rel=1e-12)
    assert stats.s_11 == pytest.approx(np.sum(p_1 * p_1) / 3000, rel=1e-12)
    np.testing.assert_allclose(stats.label_probs[:, 0], p_t[rows, preds.labels], rtol=1e-12)
    np.testing.assert_array_equal(stats.label_probs[:, 1], p_1[rows, preds.labels])
    out = _scaling.ets_probabilities(preds.logits, preds.probs, temperature, weights)
    expected = weights[0] * p_t
    expected += weights[1] * p_1
    expected += weights[2] / 50
    np.testing.assert_array_equal(out, expected)  # same operations: the same bits
