"""calcore's metrics against brute-force references (tests/_reference.py) and hand computations.

The references loop over points and bins exactly as the definitions read (ALGORITHMS.md
"Binned estimators"), so agreement to 1e-12 on many small random inputs -- with ties, exact 0/1
probabilities, multiples of 0.1 sitting on bin edges, empty bins, classes never predicted --
checks the vectorised binning and statistics of calcore, not calcore against itself.
"""

from __future__ import annotations

import functools
import math

import _reference as ref  # tests/ is on sys.path (rootdir conftest, no __init__.py)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calcore

TOL = 1e-12

# (binning, bins): every scheme, fixed counts that put multiples of 0.1 on edges (5, 10), and the
# data-dependent rules.
SCHEMES = [
    ("equal-width", 1),
    ("equal-width", 5),
    ("equal-width", 10),
    ("equal-width", 15),
    ("equal-width", "sturges"),
    ("equal-width", "cube-root"),
    ("equal-mass", 1),
    ("equal-mass", 4),
    ("equal-mass", 15),
    ("equal-mass", "sturges"),
    ("equal-mass", "cube-root"),
    ("points-per-bin", 1),
    ("points-per-bin", 3),
    ("points-per-bin", 10),
    ("unique", None),
]
SCHEME_IDS = [f"{b}-{k}" for b, k in SCHEMES]

KINDS = ("dirichlet", "tenths", "onehot-uniform", "repeated-rows", "never-predicted")


def _make_probs(rng: np.random.Generator, n: int, n_classes: int, kind: str) -> np.ndarray:
    if kind == "dirichlet":  # continuous, alpha from spiky to flat
        alpha = float(rng.choice([0.2, 1.0, 5.0]))
        return rng.dirichlet(np.full(n_classes, alpha), size=n)
    if kind == "tenths":  # multiples of 0.1: exact zeros, 1.0, ties, scores on equal-width edges
        counts = rng.multinomial(10, rng.dirichlet(np.ones(n_classes)), size=n)
        return counts / 10.0
    if kind == "onehot-uniform":  # exact 0/1 rows, fully tied uniform rows, and continuous rows
        p = rng.dirichlet(np.ones(n_classes), size=n)
        which = rng.integers(0, 3, size=n)
        p[which == 0] = np.eye(n_classes)[rng.integers(0, n_classes, size=int((which == 0).sum()))]
        p[which == 1] = 1.0 / n_classes
        return p
    if kind == "repeated-rows":  # a few distinct rows repeated: large blocks of tied scores
        distinct = rng.dirichlet(np.ones(n_classes), size=int(rng.integers(1, 5)))
        return distinct[rng.integers(0, distinct.shape[0], size=n)]
    if kind == "never-predicted":  # the last class is (almost) never the argmax nor the label
        p = rng.dirichlet(np.ones(n_classes), size=n)
        p[:, -1] *= 0.05
        return p / p.sum(axis=1, keepdims=True)
    raise ValueError(kind)


def _make_case(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1000 + seed)
    # Sizes: the degenerate 1, 2, 3 and the exact cubes / powers of two where the rules' float
    # evaluation is most fragile (27, 64, 125, 128), then random sizes up to 200.
    fixed = [1, 2, 3, 27, 64, 125, 128]
    n = fixed[seed] if seed < len(fixed) else int(rng.integers(4, 201))
    n_classes = int(rng.integers(2, 9))
    kind = KINDS[seed % len(KINDS)]
    probs = _make_probs(rng, n, n_classes, kind)
    if kind == "never-predicted" or rng.random() < 0.3:
        labels = rng.integers(0, max(1, n_classes - 1), size=n)  # class L-1 never a label
    else:  # labels drawn from the probabilities
        labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
        labels = np.minimum(labels, n_classes - 1)
    return probs, labels


CASES = list(range(16))


@functools.lru_cache(maxsize=None)
def case(seed: int):
    probs, labels = _make_case(seed)
    return calcore.Predictions.from_probs(probs, labels), probs.tolist(), labels.tolist()


def _close(got: float, want: float) -> None:
    assert math.isfinite(got)
    assert abs(got - want) <= TOL, (got, want)


# -- binned ECEs against the brute-force references ---------------------------------------
P_ORDERS = (1, 2, np.inf)


def _per_class_stats(probs, labels, binning, bins):
    return [
        ref.bin_groups(ref.classwise_problem(probs, labels, c), binning, bins)
        for c in range(len(probs[0]))
    ]


@pytest.mark.parametrize(("binning", "bins"), SCHEMES, ids=SCHEME_IDS)
@pytest.mark.parametrize("seed", CASES)
def test_confidence_ece_mce_l2_and_top_k_confidence(seed, binning, bins):
    preds, probs, labels = case(seed)
    n, n_classes = len(labels), len(probs[0])
    stats = ref.bin_groups(ref.confidence_problem(probs, labels), binning, bins)
    for p in P_ORDERS:
        _close(
            calcore.confidence_ece(preds, bins=bins, binning=binning, p=p),
            ref.lp_error(stats, n, p),
        )
    _close(
        calcore.confidence_mce(preds, bins=bins, binning=binning), ref.lp_error(stats, n, np.inf)
    )
    # top-K-confidence: mean over ranks 1..k of the rank-r confidence ECE (rank 1 = confidence)
    for k in sorted({1, 2, n_classes}):
        _close(
            calcore.top_k_confidence_ece(preds, k=k, bins=bins, binning=binning),
            ref.top_k_confidence_ece(probs, labels, k=k, bins=bins, binning=binning),
        )
    _close(
        calcore.top_k_confidence_ece(preds, k=1, bins=bins, binning=binning),
        ref.lp_error(stats, n, 1),
    )
    want_sq = ref.debiased_squared_ece(probs, labels, bins=bins, binning=binning, view="confidence")
    _check_debiased(calcore.debiased_ece(preds, bins=bins, binning=binning), want_sq)


def _check_debiased(got: float, want_sq: float) -> None:
    # Compare squares: sqrt near 0 would magnify rounding differences of the raw sum.
    assert got >= 0.0
    assert abs(got**2 - max(want_sq, 0.0)) <= TOL, (got, want_sq)
    if want_sq < -TOL:
        assert got == 0.0


@pytest.mark.parametrize(("binning", "bins"), SCHEMES, ids=SCHEME_IDS)
@pytest.mark.parametrize("seed", CASES)
def test_top_label_ece_mce_l2_and_top_k_label(seed, binning, bins):
    preds, probs, labels = case(seed)
    n, n_classes = len(labels), len(probs[0])
    stats = ref.bin_groups(ref.top_label_problem(probs, labels), binning, bins)
    for p in P_ORDERS:
        _close(
            calcore.top_label_ece(preds, bins=bins, binning=binning, p=p), ref.lp_error(stats, n, p)
        )
    _close(calcore.top_label_mce(preds, bins=bins, binning=binning), ref.lp_error(stats, n, np.inf))
    for k in sorted({1, 2, n_classes}):
        _close(
            calcore.top_k_label_ece(preds, k=k, bins=bins, binning=binning),
            ref.top_k_label_ece(probs, labels, k=k, bins=bins, binning=binning),
        )
    _close(
        calcore.top_k_label_ece(preds, k=1, bins=bins, binning=binning), ref.lp_error(stats, n, 1)
    )
    want_sq = ref.debiased_squared_ece(probs, labels, bins=bins, binning=binning, view="top-label")
    _check_debiased(
        calcore.debiased_ece(preds, bins=bins, binning=binning, view="top-label"), want_sq
    )


@pytest.mark.parametrize(("binning", "bins"), SCHEMES, ids=SCHEME_IDS)
@pytest.mark.parametrize("seed", CASES)
def test_classwise_ece_mce_l2(seed, binning, bins):
    preds, probs, labels = case(seed)
    n, n_classes = len(labels), len(probs[0])
    per_class = _per_class_stats(probs, labels, binning, bins)
    for p in P_ORDERS:
        # CW = mean over classes of the per-class lp error (p = inf: of the per-class max gap)
        want = math.fsum(ref.lp_error(st_, n, p) for st_ in per_class) / n_classes
        _close(calcore.classwise_ece(preds, bins=bins, binning=binning, p=p), want)
        if p == np.inf:
            _close(calcore.classwise_mce(preds, bins=bins, binning=binning), want)
    want_sq = ref.debiased_squared_ece(probs, labels, bins=bins, binning=binning, view="class-wise")
    _check_debiased(
        calcore.debiased_ece(preds, bins=bins, binning=binning, view="class-wise"), want_sq
    )


def test_unique_binning_with_several_groups_by_hand():
    # Regression: "unique" bins used to be counted per group from point positions rather than
    # from tie blocks, misattributing bins to groups (wrong CW-l2 / CW-MCE) or crashing.
    # Class-wise, unique bins, rows [0.6, 0.4], [0.6, 0.4], [0.3, 0.7], labels 0, 1, 1.
    # Class 0: scores (0.6, 0.6, 0.3), outcomes (1, 0, 0): bins {0.3} gap 0.3 (w 1/3),
    # {0.6, 0.6} acc 0.5 gap 0.1 (w 2/3). l2: sqrt(0.09/3 + 0.01*2/3) = sqrt(11/300); MCE 0.3.
    # Class 1 mirrors it. CW-l2 = sqrt(11/300) = 0.19148... (the bug gave 0.19069).
    preds = calcore.Predictions.from_probs([[0.6, 0.4], [0.6, 0.4], [0.3, 0.7]], [0, 1, 1])
    assert calcore.classwise_ece(preds, binning="unique", p=2) == pytest.approx(
        math.sqrt(11 / 300), abs=1e-15
    )
    assert calcore.classwise_mce(preds, binning="unique") == pytest.approx(0.3, abs=1e-15)
    # Top-label, unique bins: rows 0-2 predict class 1 with the tied score 0.6, row 3 class 2 with
    # 0.6: bins {class 1: 0.6 x3 (2 right)} gap |2/3 - 0.6|, {class 2: 0.6 (right)} gap 0.4
    # -> TL-ECE = 3/4 * (2/3 - 0.6) + 1/4 * 0.4 = 0.15 (the bug raised ValueError in np.repeat).
    tl = calcore.Predictions.from_probs([[0.1, 0.6, 0.3]] * 3 + [[0.1, 0.3, 0.6]], [1, 1, 2, 2])
    assert calcore.top_label_ece(tl, binning="unique") == pytest.approx(0.15, abs=1e-15)
    assert calcore.top_label_mce(tl, binning="unique") == pytest.approx(0.4, abs=1e-15)


@pytest.mark.parametrize("bins", [1, 3, 15, "sturges"])
@pytest.mark.parametrize("seed", CASES)
def test_adaptive_ece(seed, bins):
    preds, probs, labels = case(seed)
    _close(calcore.adaptive_ece(preds, bins=bins), ref.adaptive_ece(probs, labels, bins=bins))


@pytest.mark.parametrize("bins", [1, 4, 15])
@pytest.mark.parametrize("seed", CASES)
def test_thresholded_adaptive_ece(seed, bins):
    preds, probs, labels = case(seed)
    n_classes = len(probs[0])
    for threshold in (0.0, 1e-3, 0.1, 1.0 / n_classes, 0.5, 0.95):
        _close(
            calcore.thresholded_adaptive_ece(preds, bins=bins, threshold=threshold),
            ref.thresholded_adaptive_ece(probs, labels, bins=bins, threshold=threshold),
        )
    # threshold 0 keeps every score: TACE == ACE
    _close(
        calcore.thresholded_adaptive_ece(preds, bins=bins, threshold=0.0),
        ref.adaptive_ece(probs, labels, bins=bins),
    )


# -- accuracy, NLL, Brier, calibration gain ------------------------------------------------
@pytest.mark.parametrize("seed", CASES)
def test_scores_from_probs(seed):
    preds, probs, labels = case(seed)
    assert calcore.accuracy(preds) == pytest.approx(ref.accuracy(probs, labels), abs=TOL)
    assert calcore.negative_log_likelihood(preds) == pytest.approx(
        ref.nll_from_probs(probs, labels), rel=TOL, abs=TOL
    )
    assert calcore.brier_score(preds) == pytest.approx(ref.brier(probs, labels), abs=TOL)


@pytest.mark.parametrize("seed", range(8))
def test_nll_from_logits(seed):
    rng = np.random.default_rng(seed)
    n, n_classes = int(rng.integers(1, 201)), int(rng.integers(2, 9))
    # large magnitudes: a naive exp would overflow, and p_y underflows to 0 for some rows
    z = rng.normal(scale=float(rng.choice([1.0, 30.0, 800.0])), size=(n, n_classes))
    y = rng.integers(0, n_classes, size=n)
    preds = calcore.Predictions.from_logits(z, y)
    want = ref.nll_from_logits(z.tolist(), y.tolist())
    assert calcore.negative_log_likelihood(preds) == pytest.approx(want, rel=TOL, abs=TOL)
    # the softmax itself, and the Brier score of it
    np.testing.assert_allclose(preds.probs, ref.softmax(z.tolist()), rtol=0, atol=1e-15)
    assert calcore.brier_score(preds) == pytest.approx(
        ref.brier(ref.softmax(z.tolist()), y), abs=TOL
    )


def test_nll_clip_is_float64_eps_by_hand():
    # Row 0 gives the label probability 0 -> floored at eps = 2**-52 -> -log(eps) = 52 ln 2.
    # Row 1 gives 0.5 -> ln 2. Mean: 53 ln 2 / 2.
    preds = calcore.Predictions.from_probs([[1.0, 0.0], [0.5, 0.5]], [1, 0])
    assert ref.FLOAT64_EPS == np.finfo(np.float64).eps
    assert calcore.negative_log_likelihood(preds) == pytest.approx(53 * math.log(2) / 2, rel=1e-15)
    assert calcore.negative_log_likelihood(preds, clip=0.0) == math.inf
    assert calcore.negative_log_likelihood(preds, clip=0.25) == pytest.approx(
        (math.log(4) + math.log(2)) / 2, rel=1e-15
    )
    # The same zero probability from logits is not clipped:
    # log_softmax([0, -1000])[1] = -1000 - log(1 + e^-1000) = -1000 in floats.
    from_logits = calcore.Predictions.from_logits([[0.0, -1000.0]], [1])
    assert calcore.negative_log_likelihood(from_logits) == pytest.approx(1000.0, rel=1e-15)


def test_accuracy_and_brier_by_hand():
    # Row 0 ties (0.5, 0.5): prediction class 0 (lowest index), label 0 -> correct.
    # Row 1 ties too, label 1 -> wrong. Row 2 [0.8, 0.2] label 0 -> correct. Accuracy 2/3.
    # Brier: row 0 (0.5^2 + 0.5^2) = 0.5, row 1 0.5, row 2 0.2^2 + 0.2^2 = 0.08 -> 1.08 / 3 = 0.36.
    preds = calcore.Predictions.from_probs([[0.5, 0.5], [0.5, 0.5], [0.8, 0.2]], [0, 1, 0])
    assert calcore.accuracy(preds) == pytest.approx(2 / 3, abs=1e-15)
    assert calcore.brier_score(preds) == pytest.approx(0.36, abs=1e-15)
    # One-hot correct rows score 0; one-hot wrong rows score 2 (the maximum).
    perfect = calcore.Predictions.from_probs([[0.0, 1.0, 0.0]], [1])
    wrong = calcore.Predictions.from_probs([[0.0, 1.0, 0.0]], [2])
    assert calcore.brier_score(perfect) == 0.0
    assert calcore.brier_score(wrong) == 2.0


def _temperature(probs: np.ndarray, t: float) -> np.ndarray:
    z = np.log(probs) / t
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(6))
def test_calibration_gain(seed):
    rng = np.random.default_rng(seed)
    n, n_classes = int(rng.integers(1, 201)), int(rng.integers(2, 9))
    before = rng.dirichlet(np.full(n_classes, 0.5), size=n) * 0.98 + 0.02 / n_classes
    y = rng.integers(0, n_classes, size=n)
    after_ts = _temperature(before, 2.0)  # injective and argmax-preserving
    pb = calcore.Predictions.from_probs(before, y)
    pa = calcore.Predictions.from_probs(after_ts, y)

    for declared in (True, False):
        gain = calcore.calibration_gain(pb, pa, injective_accuracy_preserving=declared)
        value, exact = ref.calibration_gain(before, after_ts, y, declared=declared)
        assert gain.value == pytest.approx(value, abs=TOL)
        assert gain.is_exact is exact is declared
        assert ("exact" if declared else "lower bound") in gain.note.lower()

    # A map that changes the argmax of one row (swap its top two entries) is never exact, even
    # when declared.
    changed = after_ts.copy()
    top2 = np.argsort(-after_ts[0], kind="stable")[:2]
    changed[0, top2] = after_ts[0, top2[::-1]]
    pc = calcore.Predictions.from_probs(changed, y)
    assert pc.predicted[0] != pb.predicted[0]
    gain = calcore.calibration_gain(pb, pc, injective_accuracy_preserving=True)
    value, exact = ref.calibration_gain(before, changed, y, declared=True)
    assert gain.value == pytest.approx(value, abs=TOL)
    assert gain.is_exact is exact is False
    assert "lower bound" in gain.note and "argmax" in gain.note


def test_calibration_gain_rejects_different_rows():
    a = calcore.Predictions.from_probs([[0.6, 0.4], [0.3, 0.7]], [0, 1])
    b = calcore.Predictions.from_probs([[0.6, 0.4], [0.3, 0.7]], [0, 0])
    c = calcore.Predictions.from_probs([[0.6, 0.4]], [0])
    with pytest.raises(calcore.CalcoreError, match=r"same rows before and after"):
        calcore.calibration_gain(a, b)
    with pytest.raises(calcore.CalcoreError, match=r"same rows.*\(2, 2\) and \(1, 2\)"):
        calcore.calibration_gain(a, c)


# -- exact small cases by hand --------------------------------------------------------------
def test_hand_case_4_rows_2_classes_2_bins():
    # probs              label  pred  h    correct
    # [0.9, 0.1]           0     0    0.9    1
    # [0.7, 0.3]           1     0    0.7    0
    # [0.2, 0.8]           1     1    0.8    1
    # [0.4, 0.6]           1     1    0.6    1
    # 2 equal-width bins [0, 0.5), [0.5, 1].
    # conf-ECE: all four h in bin 1; conf = (0.9+0.7+0.8+0.6)/4 = 0.75, acc = 3/4 -> 0.
    # TL-ECE: class 0 (rows 0,1): conf 0.8, acc 1/2, gap 0.3, weight 2/4;
    #         class 1 (rows 2,3): conf 0.7, acc 1,   gap 0.3, weight 2/4  -> 0.3; TL-MCE 0.3.
    # CW, class 0 scores (0.9, 0.7, 0.2, 0.4), outcomes (1, 0, 0, 0):
    #     bin 0 {0.2, 0.4}: conf 0.3, acc 0, gap 0.3; bin 1 {0.9, 0.7}: conf 0.8, acc 0.5, gap 0.3
    #     -> ECE_0 = 0.5*0.3 + 0.5*0.3 = 0.3; class 1 is the mirror image -> CW-ECE 0.3, CW-MCE 0.3.
    # l2: TL sqrt(0.5*0.09 + 0.5*0.09) = 0.3; CW the same.
    preds = calcore.Predictions.from_probs(
        [[0.9, 0.1], [0.7, 0.3], [0.2, 0.8], [0.4, 0.6]], [0, 1, 1, 1]
    )
    eps = 1e-15
    assert calcore.confidence_ece(preds, bins=2) == pytest.approx(0.0, abs=eps)
    assert calcore.top_label_ece(preds, bins=2) == pytest.approx(0.3, abs=eps)
    assert calcore.top_label_ece(preds, bins=2, p=2) == pytest.approx(0.3, abs=eps)
    assert calcore.top_label_mce(preds, bins=2) == pytest.approx(0.3, abs=eps)
    assert calcore.classwise_ece(preds, bins=2) == pytest.approx(0.3, abs=eps)
    assert calcore.classwise_ece(preds, bins=2, p=2) == pytest.approx(0.3, abs=eps)
    assert calcore.classwise_mce(preds, bins=2) == pytest.approx(0.3, abs=eps)
    assert calcore.accuracy(preds) == 0.75


def test_hand_case_4_bins_l2_and_debiased():
    # probs       label pred h   correct   4 equal-width bins: [0,.25) [.25,.5) [.5,.75) [.75,1]
    # [0.9, 0.1]    0    0  0.9    1
    # [0.8, 0.2]    1    0  0.8    0
    # [0.4, 0.6]    1    1  0.6    1
    # [0.3, 0.7]    0    1  0.7    0
    # conf bins: bin 2 {0.6 (1), 0.7 (0)}: conf 0.65, acc 0.5, gap 0.15, n 2;
    #            bin 3 {0.9 (1), 0.8 (0)}: conf 0.85, acc 0.5, gap 0.35, n 2.
    # conf-ECE = 0.5*0.15 + 0.5*0.35 = 0.25; l2 = sqrt(0.5*0.0225 + 0.5*0.1225) = sqrt(0.0725);
    # MCE 0.35. Debiased: 0.5*(0.0225 - 0.25/1) + 0.5*(0.1225 - 0.25/1) < 0 -> 0.
    # CW class 0 scores (0.9, 0.8, 0.4, 0.3), outcomes (1, 0, 0, 1): bin 1 {0.4, 0.3} conf 0.35
    # acc 0.5 gap 0.15, bin 3 {0.9, 0.8} conf 0.85 acc 0.5 gap 0.35 -> 0.25, MCE 0.35;
    # class 1 mirrors it.
    preds = calcore.Predictions.from_probs(
        [[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.3, 0.7]], [0, 1, 1, 0]
    )
    eps = 1e-15
    assert calcore.confidence_ece(preds, bins=4) == pytest.approx(0.25, abs=eps)
    assert calcore.confidence_ece(preds, bins=4, p=2) == pytest.approx(math.sqrt(0.0725), abs=eps)
    assert calcore.confidence_mce(preds, bins=4) == pytest.approx(0.35, abs=eps)
    assert calcore.debiased_ece(preds, bins=4) == 0.0
    assert calcore.classwise_ece(preds, bins=4) == pytest.approx(0.25, abs=eps)
    assert calcore.classwise_mce(preds, bins=4) == pytest.approx(0.35, abs=eps)
    # One bin (B = 1): conf 3.0/4 = 0.75, acc 0.5 -> gap 0.25 for ECE, l2 and MCE alike.
    # Debiased: 1 * (0.0625 - 0.25/3) < 0 -> 0.
    assert calcore.confidence_ece(preds, bins=1, p=2) == pytest.approx(0.25, abs=eps)
    assert calcore.debiased_ece(preds, bins=1) == 0.0


def test_hand_case_debiased_positive():
    # Four rows all predicted class 0 with h = 0.9, one correct: one bin (B = 10, bin 9),
    # conf 0.9, acc 0.25, n_b 4. Debiased ECE^2 = (0.65^2 - 0.25*0.75/3) = 0.4225 - 0.0625 = 0.36
    # -> 0.6, while the plug-in l2-ECE is 0.65.
    preds = calcore.Predictions.from_probs([[0.9, 0.1]] * 4, [0, 1, 1, 1])
    assert calcore.debiased_ece(preds, bins=10) == pytest.approx(0.6, abs=1e-15)
    assert calcore.confidence_ece(preds, bins=10, p=2) == pytest.approx(0.65, abs=1e-15)
    # A bin with one point gets no variance correction: one row, h = 0.9, wrong -> sqrt(0.81).
    one = calcore.Predictions.from_probs([[0.9, 0.1]], [1])
    assert calcore.debiased_ece(one, bins=10) == pytest.approx(0.9, abs=1e-15)


def test_hand_case_equal_mass_ties_leave_a_bin_empty():
    # Confidences (sorted) 0.6, 0.7, 0.7, 0.7, 0.9, 0.9 (m = 6), B = 3: bin k holds ranks
    # [2k, 2k+2). The block of 0.7 starts at rank 1 -> bin 0 with 0.6; bin 1 is empty; the 0.9
    # block starts at rank 4 -> bin 2.
    # Bin 0: {0.6 ok, 0.7 ok, 0.7 wrong, 0.7 wrong}: conf 2.7/4 = 0.675, acc 0.5, gap 0.175, w 4/6.
    # Bin 2: {0.9 ok, 0.9 ok}: conf 0.9, acc 1, gap 0.1, w 2/6.
    # conf-ECE = (4*0.175 + 2*0.1)/6 = 0.9/6 = 0.15; MCE 0.175.
    probs = [[0.6, 0.4], [0.7, 0.3], [0.7, 0.3], [0.3, 0.7], [0.9, 0.1], [0.1, 0.9]]
    labels = [0, 0, 1, 0, 0, 1]
    preds = calcore.Predictions.from_probs(probs, labels)
    assert calcore.confidence_ece(preds, bins=3, binning="equal-mass") == pytest.approx(
        0.15, abs=1e-15
    )
    assert calcore.confidence_mce(preds, bins=3, binning="equal-mass") == pytest.approx(
        0.175, abs=1e-15
    )
    # "unique" gives bins {0.6}, {0.7 x3}, {0.9 x2}:
    # gaps 0.4 (w 1/6), |1/3 - 0.7| (w 3/6), 0.1 (w 2/6).
    want = (0.4 + 3 * (0.7 - 1 / 3) + 2 * 0.1) / 6
    assert calcore.confidence_ece(preds, binning="unique") == pytest.approx(want, abs=1e-15)


def test_tenths_land_in_the_bin_they_start():
    # 0.3 (the double nearest 3/10, slightly below it) must fall in [0.3, 0.4) for B = 10, as the
    # edges are the rounded k/B. Rows: h = 0.3 correct, h = 0.39 wrong (L = 4).
    # One bin [0.3, 0.4): conf 0.345, acc 0.5 -> 0.155. Had 0.3 fallen in [0.2, 0.3), the bins
    # would be {0.3 ok} gap 0.7 and {0.39 wrong} gap 0.39 -> (0.7 + 0.39)/2 = 0.545.
    probs = [[0.3, 0.3, 0.2, 0.2], [0.39, 0.21, 0.2, 0.2]]
    preds = calcore.Predictions.from_probs(probs, [0, 1])
    assert calcore.confidence_ece(preds, bins=10) == pytest.approx(0.155, abs=1e-15)
    assert calcore.confidence_ece(preds, bins=10) == pytest.approx(
        ref.confidence_ece(probs, [0, 1], bins=10), abs=TOL
    )
    # 1.0 goes to the last bin, 0.0 never reaches the confidence view but does the class-wise one:
    # one-hot rows, B = 2, all correct: every class-wise bin has gap 0.
    onehot = calcore.Predictions.from_probs(np.eye(3), [0, 1, 2])
    assert calcore.classwise_ece(onehot, bins=2) == 0.0
    assert calcore.top_label_ece(onehot, bins=2) == 0.0


def test_sturges_and_cube_root_bin_counts_by_hand():
    # m = 27 points: cube-root -> exactly 3 bins (27 ** (1/3) is 3.0000000000000004 in floats),
    # sturges -> ceil(log2 27) + 1 = 6. 27 distinct confidences 0.5 + i/100; equal-mass bins of 9.
    h = 0.5 + np.arange(27) / 100
    probs = np.column_stack([h, 1 - h])
    labels = np.array([0] * 9 + [1] * 9 + [0] * 9)  # bin 1 (ranks 9..17) all wrong
    preds = calcore.Predictions.from_probs(probs, labels)
    # cube-root, 3 bins: bin 0 conf mean(0.50..0.58)=0.54 acc 1 gap 0.46; bin 1 conf 0.63 acc 0
    # gap 0.63; bin 2 conf 0.72 acc 1 gap 0.28 -> (0.46 + 0.63 + 0.28)/3 = 1.37/3.
    assert calcore.confidence_ece(preds, bins="cube-root", binning="equal-mass") == pytest.approx(
        1.37 / 3, abs=1e-14
    )
    # assign_bins agrees on the counts (3 and 6 bins)
    a = calcore.assign_bins(h, binning="equal-mass", bins="cube-root")
    b = calcore.assign_bins(h, binning="equal-mass", bins="sturges")
    assert a.n_bins_total == 3 and b.n_bins_total == 6


def test_top_label_paper_example_1_as_a_finite_sample():
    # Gupta & Ramdas (2022), Example 1: X in {a, b} with mass 1/2 each. At a the prediction is class
    # 1 (index 0) with confidence 0.6 and P(Y = c | X = a) = 0.2; at b class 2 (index 1), confidence
    # 0.6, P(Y = c | X = b) = 1.0. Finite sample: 10 rows of each; at a 2 of 10 labels are class 0
    # (the rest class 2), at b all 10 are class 1. Three classes so that [0.6, 0.2, 0.2] is valid.
    # conf-ECE: one bin holds every 0.6: conf 0.6, acc 12/20 = 0.6 -> 0.
    # TL-ECE: 0.5 |0.2 - 0.6| + 0.5 |1.0 - 0.6| = 0.4; TL-MCE 0.4.
    probs = [[0.6, 0.2, 0.2]] * 10 + [[0.2, 0.6, 0.2]] * 10
    labels = [0, 0] + [2] * 8 + [1] * 10
    preds = calcore.Predictions.from_probs(probs, labels)
    for binning, bins in [
        ("equal-width", 15),
        ("equal-width", 1),
        ("equal-mass", 5),
        ("unique", None),
    ]:
        assert calcore.confidence_ece(preds, bins=bins, binning=binning) == pytest.approx(
            0.0, abs=1e-15
        )
        assert calcore.top_label_ece(preds, bins=bins, binning=binning) == pytest.approx(
            0.4, abs=1e-15
        )
        assert calcore.top_label_mce(preds, bins=bins, binning=binning) == pytest.approx(
            0.4, abs=1e-15
        )
    assert calcore.accuracy(preds) == pytest.approx(0.6, abs=1e-15)


# -- a property: TL-ECE >= conf-ECE (Jensen / triangle inequality within each bin) -----------
@st.composite
def _predictions(draw):
    n = draw(st.integers(1, 40))
    n_classes = draw(st.integers(2, 6))
    # small integer weights: many ties, exact zeros, and exact 1.0 after normalisation
    weights = draw(
        st.lists(
            st.lists(st.integers(0, 6), min_size=n_classes, max_size=n_classes),
            min_size=n,
            max_size=n,
        )
    )
    w = np.array(weights, dtype=np.float64)
    w[w.sum(axis=1) == 0, 0] = 1.0
    labels = draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n))
    return calcore.Predictions.from_probs(w / w.sum(axis=1, keepdims=True), labels)


@settings(max_examples=80, deadline=None)
@given(preds=_predictions(), bins=st.integers(1, 20))
def test_top_label_ece_at_least_confidence_ece(preds, bins):
    assert (
        calcore.top_label_ece(preds, bins=bins) >= calcore.confidence_ece(preds, bins=bins) - 1e-12
    )
    # and per bin |sum_l w_l d_l| <= max_l |d_l|, so the same holds for the MCE
    assert (
        calcore.top_label_mce(preds, bins=bins) >= calcore.confidence_mce(preds, bins=bins) - 1e-12
    )
