"""FIR, NA-FIR and SCIR: a hand-computed case, independent references (simulated annealing
for NA-FIR, a brute-force QP for SCIR's 2-D isotonic fit), invariants, persistence, errors,
and the CIFAR-10 trends of the NA-FIR paper."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import isotonic_regression, minimize

import calcore
from calcore.calibrators import CALIBRATORS, Calibrator, make_calibrator
from calcore.calibrators._scir import isotonic_regression_ranked

METHODS = ("fir", "na-fir", "scir")
MODELS = ("densenet121", "resnet110", "resnet50", "wide_resnet")


def _overconfident(n, n_classes, seed):
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.full(n_classes, 0.5), n)
    labels = np.minimum((truth.cumsum(1) < rng.random((n, 1))).sum(1), n_classes - 1)
    return calcore.Predictions.from_logits(3.0 * np.log(np.maximum(truth, 1e-300)), labels)


def _nll(probs, labels):
    return float(-np.mean(np.log(probs[np.arange(len(labels)), labels])))


# -- FIR -------------------------------------------------------------------------------------
def test_fir_hand_computed():
    # Flattened pairs sorted: 0.2:0 0.3:0 0.4:1 0.6:0 0.7:1 0.8:1 -> PAVA blocks
    # {0.2, 0.3} = 0, {0.4, 0.6} = 0.5, {0.7, 0.8} = 1; linear between blocks.
    fit = calcore.Predictions.from_probs([[0.8, 0.2], [0.6, 0.4], [0.3, 0.7]], [0, 1, 1])
    fir = make_calibrator("fir", eps=0.0).fit(fit)
    assert fir.fit_info["n_blocks"] == 3
    np.testing.assert_allclose(fir.transform(fit).probs, [[1, 0], [0.5, 0.5], [0, 1]], atol=1e-15)
    new = calcore.Predictions.from_probs([[0.5, 0.5], [0.35, 0.65], [0.25, 0.75]], [0, 1, 0])
    np.testing.assert_allclose(
        fir.transform(new).probs, [[0.5, 0.5], [0.25, 0.75], [0, 1]], atol=1e-15
    )
    # with eps every entry gets eps before normalising
    q = make_calibrator("fir", eps=0.1).fit(fit).transform(new).probs
    np.testing.assert_allclose(q[1], [0.35 / 1.2, 0.85 / 1.2])


def test_fir_rows_with_all_zero_scores_keep_the_input():
    fit = calcore.Predictions.from_probs([[0.5, 0.4, 0.1], [0.6, 0.35, 0.05]], [0, 0])
    fir = make_calibrator("fir", eps=0.0).fit(fit)
    new = calcore.Predictions.from_probs([[0.34, 0.33, 0.33], [0.9, 0.05, 0.05]], [0, 0])
    q = fir.transform(new).probs
    np.testing.assert_array_equal(q[0], new.probs[0])  # g = 0 everywhere: fallback
    np.testing.assert_allclose(q[1], [1, 0, 0])
    # the default eps turns the same row uniform instead
    q = make_calibrator("fir").fit(fit).transform(new).probs
    np.testing.assert_allclose(q[0], np.full(3, 1 / 3))


# -- NA-FIR ----------------------------------------------------------------------------------
def _reference_blocks(preds):
    """Independent FIR: PAVA block index of every entry and the block values."""
    p = preds.probs.ravel()
    y = (np.arange(preds.n_classes)[None, :] == preds.labels[:, None]).ravel().astype(float)
    u, inv, cnt = np.unique(p, return_inverse=True, return_counts=True)
    res = isotonic_regression(np.bincount(inv, weights=y) / cnt, weights=cnt)
    block_of_unique = np.repeat(np.arange(len(res.blocks) - 1), np.diff(res.blocks))
    return block_of_unique[inv].reshape(preds.probs.shape), res.x[res.blocks[:-1]]


def _normalised_nll(values, blocks, labels, eps=0.0):
    g = values[blocks] + eps
    return _nll(g / g.sum(1, keepdims=True), labels)


def _simulated_annealing(values, blocks, labels, *, seed, iters=20000, step=0.01, beta=200.0):
    """Alg. 1 of the paper on the block values (sum log-likelihood; accept w.p. exp(beta d))."""
    rng = np.random.default_rng(seed)
    g = values.astype(float).copy()
    n = len(labels)
    cur = -n * _normalised_nll(g, blocks, labels)
    best, best_g = cur, g.copy()
    for _ in range(iters):
        b = rng.integers(len(g))
        trial = g.copy()
        trial[b] += step * rng.choice([-1.0, 1.0])
        if trial[b] < 0 or np.any(np.diff(trial) < 0) or trial[-1] <= 0:
            continue
        ll = -n * _normalised_nll(trial, blocks, labels)
        if not np.isfinite(ll):
            continue
        if ll > best:
            best, best_g = ll, trial.copy()
        if ll > cur or rng.random() < np.exp(beta * (ll - cur)):
            g, cur = trial, ll
    return -best / n, best_g


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nafir_reaches_at_least_the_annealers_nll(seed):
    preds = _overconfident(40, 3, seed)
    blocks, fir_values = _reference_blocks(preds)
    fir_nll = _normalised_nll(fir_values, blocks, preds.labels)
    sa_nll, _ = _simulated_annealing(fir_values, blocks, preds.labels, seed=seed)
    nafir = make_calibrator("na-fir", eps=0.0).fit(preds)
    ours = _nll(nafir.transform(preds).probs, preds.labels)  # independent recomputation
    info = nafir.fit_info
    assert info["converged"] and info["n_blocks"] == len(fir_values)
    assert info["nll_start"] == pytest.approx(fir_nll, rel=1e-12)
    assert info["nll_end"] == pytest.approx(ours, rel=1e-12)
    assert ours <= sa_nll + 1e-9
    assert ours <= fir_nll


@pytest.mark.parametrize("seed", [0, 1])
def test_nafir_improves_fir_on_training_data_and_is_order_preserving(seed):
    preds = _overconfident(500, 6, seed)
    fir = make_calibrator("fir").fit(preds)
    nafir = make_calibrator("na-fir", min_blocks=30).fit(preds)
    q = nafir.transform(preds).probs
    assert _nll(q, preds.labels) <= _nll(fir.transform(preds).probs, preds.labels)
    assert nafir.fit_info["nll_end"] <= nafir.fit_info["nll_start"]
    assert nafir.fit_info["n_blocks"] >= 30
    # never reverses the order of two classes
    o = np.argsort(preds.probs, axis=1, kind="stable")
    assert np.all(np.diff(np.take_along_axis(q, o, 1), axis=1) >= -1e-15)


def test_nafir_reports_non_convergence():
    with pytest.warns(calcore.CalcoreWarning, match="L-BFGS-B stopped before converging"):
        c = make_calibrator("na-fir", max_iter=1).fit(_overconfident(300, 4, 0))
    assert c.fit_info["converged"] is False
    assert c.fit_info["nll_end"] <= c.fit_info["nll_start"]


# -- SCIR ------------------------------------------------------------------------------------
def _brute_force_isotonic(c, r, y):
    """The 2-D isotonic least-squares QP with every order constraint, by SLSQP."""
    n = len(c)
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j and c[i] <= c[j] and r[i] <= r[j]]
    eye = np.eye(n)
    cons = [
        {
            "type": "ineq",
            "fun": lambda x, i=i, j=j: x[j] - x[i],
            "jac": lambda x, i=i, j=j: eye[j] - eye[i],
        }
        for i, j in pairs
    ]
    res = minimize(
        lambda x: np.sum((x - y) ** 2),
        np.full(n, y.mean()),
        jac=lambda x: 2 * (x - y),
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 2000},
    )
    assert res.success, res.message
    return res.x


@pytest.mark.parametrize("seed", range(6))
def test_scir_fit_equals_brute_force_qp(seed):
    rng = np.random.default_rng(seed)
    n = 30
    c = np.round(rng.random(n), 1 if seed % 2 else 4)  # odd seeds: many ties in c
    r = rng.integers(1, 5, n)
    y = (rng.random(n) < 0.2 + 0.6 * c).astype(int)
    fitted, _ = isotonic_regression_ranked(c, r, y)
    np.testing.assert_allclose(fitted, _brute_force_isotonic(c, r, y.astype(float)), atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scir_training_predictions_are_differences_of_the_brute_force_fit(seed):
    preds = _overconfident(7, 5, seed)  # 7 rows x 4 ranks = 28 points
    n, L = preds.probs.shape
    order = np.argsort(-preds.probs, axis=1, kind="stable")
    cum = np.cumsum(np.take_along_axis(preds.probs, order, 1), 1)[:, :-1]
    rank_y = np.argmax(order == preds.labels[:, None], 1)
    ranks = np.tile(np.arange(1, L), (n, 1))
    inside = (ranks > rank_y[:, None]).astype(float)
    g = _brute_force_isotonic(cum.ravel(), ranks.ravel(), inside.ravel()).reshape(n, L - 1)
    G = np.c_[np.zeros(n), g, np.ones(n)]
    expected = np.empty((n, L))
    np.put_along_axis(expected, order, np.diff(G, axis=1), 1)
    q = make_calibrator("scir", eps=0.0).fit(preds).transform(preds).probs
    np.testing.assert_allclose(q, expected, atol=1e-6)


def test_scir_fit_is_monotone_in_both_coordinates():
    preds = _overconfident(2000, 8, 3)
    order = np.argsort(-preds.probs, axis=1, kind="stable")
    cum = np.cumsum(np.take_along_axis(preds.probs, order, 1), 1)[:, :-1].ravel()
    ranks = np.tile(np.arange(1, 8), 2000)
    rank_y = np.repeat(np.argmax(order == preds.labels[:, None], 1), 7)
    g, _ = isotonic_regression_ranked(cum, ranks, (ranks > rank_y).astype(int))
    for r in range(1, 8):
        here = ranks == r
        o = np.argsort(cum[here], kind="stable")
        assert np.all(np.diff(g[here][o]) >= 0)  # in c for fixed r
        if r < 7:  # in r: every point of rank r+1 with c' >= c has g' >= g
            nxt = ranks == r + 1
            o2 = np.argsort(cum[nxt])
            suffix_min = np.minimum.accumulate(g[nxt][o2][::-1])[::-1]
            j = np.searchsorted(cum[nxt][o2], cum[here], side="left")
            ok = j < nxt.sum()
            assert np.all(suffix_min[j[ok]] >= g[here][ok])


def test_scir_tied_classes_share_their_probability():
    preds = calcore.Predictions.from_probs(
        [[0.5, 0.25, 0.25], [0.2, 0.2, 0.6], [0.7, 0.2, 0.1], [0.1, 0.3, 0.6]] * 5, [0, 2, 0, 1] * 5
    )
    q = make_calibrator("scir").fit(preds).transform(preds).probs
    assert q[0, 1] == q[0, 2] and q[1, 0] == q[1, 1]


# -- every method ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", METHODS)
def test_registered_with_family(name):
    assert CALIBRATORS[name].family == "isotonic"
    assert CALIBRATORS[name].accuracy_preserving is False


@pytest.mark.parametrize("name", METHODS)
def test_outputs_on_the_simplex_and_json_round_trip(name):
    fit, test = _overconfident(400, 5, 10), _overconfident(300, 5, 11)
    probs = test.probs.copy()
    probs[:5] = [1, 0, 0, 0, 0]  # saturated rows with exact zeros and ties
    test = calcore.Predictions.from_probs(probs, test.labels)
    c = make_calibrator(name).fit(fit)
    q = c.transform(test).probs
    assert np.all(q > 0) and np.allclose(q.sum(1), 1, atol=1e-12)
    loaded = Calibrator.from_dict(json.loads(json.dumps(c.to_dict())))
    np.testing.assert_array_equal(loaded.transform(test).probs, q)


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("fir", {"eps": -1e-3}, "'eps' must be >= 0"),
        ("scir", {"eps": "small"}, "'eps' must be a number"),
        ("na-fir", {"min_blocks": 0}, "'min_blocks' must be >= 1"),
        ("na-fir", {"max_iter": 2.5}, "'max_iter' must be an integer"),
        ("scir", {"bins": 3}, r"unknown parameter\(s\) \['bins'\]"),
    ],
)
def test_parameter_errors(name, params, match):
    with pytest.raises(calcore.CalcoreError, match=match):
        make_calibrator(name, **params)


@pytest.mark.parametrize("name", METHODS)
def test_use_errors(name):
    preds = _overconfident(50, 3, 0)
    with pytest.raises(calcore.CalcoreError, match="not fitted yet"):
        make_calibrator(name).transform(preds)
    c = make_calibrator(name).fit(preds)
    other = calcore.Predictions.from_probs(preds.probs, preds.labels, ["x", "y", "z"])
    with pytest.raises(calcore.CalcoreError, match="same classes in the same order"):
        c.transform(other)


# -- CIFAR-10 (paper Table 2, CIFAR10 rows: average ranks over the same four models) ---------
@pytest.fixture(scope="module")
def cifar_results(reference_data):
    rows = {}
    for model in MODELS:
        load = lambda split, m=model: calcore.Predictions.from_logits(  # noqa: E731
            np.load(reference_data / "cifar10" / f"{m}_{split}_logits.npy"),
            np.load(reference_data / "cifar10" / f"{m}_{split}_labels.npy"),
        )
        val, test = load("val"), load("test")
        out = {"uncalibrated": test}
        names = METHODS + (("ts",) if "ts" in CALIBRATORS else ())
        for name in names:
            out[name] = make_calibrator(name).fit(val).transform(test)
        rows[model] = {
            k: (calcore.negative_log_likelihood(p), calcore.confidence_ece(p, bins=15))
            for k, p in out.items()
        }
    print("\nCIFAR-10 test (fit on val): NLL / conf-ECE (15 equal-width bins)")
    for model, res in rows.items():
        print(model, {k: (round(a, 4), round(b, 4)) for k, (a, b) in res.items()})
    return rows


def test_cifar10_trends(cifar_results):
    for model, res in cifar_results.items():
        raw_nll, raw_ece = res["uncalibrated"]
        # NA-FIR improves FIR's NLL (paper: NA-FIR rank 1.2 vs FIR 4.0) and the raw model's
        assert res["na-fir"][0] < res["fir"][0] < raw_nll, model
        # SCIR has the lowest conf-ECE of the three (paper: SCIR rank 1.0) and beats raw
        assert res["scir"][1] < min(res["fir"][1], res["na-fir"][1], raw_ece), model
        # NA-FIR's NLL beats SCIR's (paper: 1.2 vs 1.8)
        assert res["na-fir"][0] < res["scir"][0], model
