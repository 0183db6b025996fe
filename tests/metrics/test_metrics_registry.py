"""Shared invariance tests over every metric of ``calcore.METRICS`` (the scikit-learn
``metrics/tests/test_common.py`` pattern), input validation of ``Predictions`` and the option
errors of the metric functions.

A metric added to the registry is picked up by every parametrised test here automatically.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

import calcore
from calcore import METRICS

#: The metrics of any number of classes; the measures of binary models (which refuse the
#: multiclass data sets here) have their own tests in tests/metrics/test_binary_measures.py.
KEYS = [k for k, spec in METRICS.items() if not spec.binary_only]
BINARY_KEYS = {
    "oe_ratio",
    "calibration_slope",
    "calibration_intercept",
    "spiegelhalter_z",
    "spiegelhalter_p",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "positive_class_ece",
}

# Metrics of the calibration error (0 for a calibrated model); the others are scoring rules.
SCORING = {"accuracy", "nll", "brier"}
ERROR_KEYS = [k for k in KEYS if k not in SCORING]
MAX_KEYS = {k for k in KEYS if k.endswith("_mce")}


def test_registry_lists_the_documented_metrics():
    expected = {
        "accuracy",
        "nll",
        "brier",
        "conf_ece",
        "conf_ece_l2",
        "conf_mce",
        "top_label_ece",
        "top_label_ece_l2",
        "top_label_mce",
        "classwise_ece",
        "classwise_ece_l2",
        "classwise_mce",
        "ace",
        "tace",
        "debiased_ece",
        "kde_ece",
        "kde_ece_classwise",
    }
    assert set(KEYS) == expected
    assert set(METRICS) == expected | BINARY_KEYS
    assert {k for k, spec in METRICS.items() if spec.binary_only} == BINARY_KEYS
    for key, spec in METRICS.items():
        assert spec.key == key
        assert spec.bounds[0] < spec.bounds[1]
        assert spec.higher_is_better is (key == "accuracy")


def _tenths(rng, n, n_classes):
    """Probabilities in multiples of 0.1: ties within rows and between rows, exact 0 and 1."""
    counts = rng.multinomial(10, rng.dirichlet(np.ones(n_classes)), size=n)
    return counts / 10.0


@functools.lru_cache(maxsize=None)
def _datasets():
    rng = np.random.default_rng(7)
    out = {}
    p = rng.dirichlet(np.full(5, 0.7), size=300)
    out["dirichlet"] = calcore.Predictions.from_probs(p, rng.integers(0, 5, size=300))
    p = _tenths(rng, 250, 4)
    out["tenths-ties"] = calcore.Predictions.from_probs(
        p, rng.integers(0, 3, size=250)
    )  # class 3 absent
    eye = np.eye(3)
    out["onehot-wrong"] = calcore.Predictions.from_probs(eye[[0, 1, 2, 0]], [1, 2, 0, 2])
    out["onehot-right"] = calcore.Predictions.from_probs(eye[[0, 1, 2, 0]], [0, 1, 2, 0])
    out["uniform-rows"] = calcore.Predictions.from_probs(np.full((6, 4), 0.25), [0, 1, 2, 3, 0, 1])
    out["two-rows"] = calcore.Predictions.from_probs([[0.7, 0.3], [0.2, 0.8]], [0, 0])
    z = rng.normal(scale=4.0, size=(200, 6))
    out["logits"] = calcore.Predictions.from_logits(z, rng.integers(0, 6, size=200))
    return out


DATASETS = [
    "dirichlet",
    "tenths-ties",
    "onehot-wrong",
    "onehot-right",
    "uniform-rows",
    "two-rows",
    "logits",
]
BINNINGS = [
    ("equal-width", 15),
    ("equal-mass", 10),
    ("points-per-bin", 25),
    ("equal-width", "sturges"),
]


# -- invariances ----------------------------------------------------------------------------
def _permutation_params():
    out = []
    for key in KEYS:
        # the others ignore the binning
        binnings = BINNINGS if METRICS[key].takes_binning_scheme else BINNINGS[:1]
        out += [(key, b, k) for b, k in binnings]
    return out


@pytest.mark.parametrize("dataset", ["dirichlet", "tenths-ties", "logits"])
@pytest.mark.parametrize(("key", "binning", "bins"), _permutation_params())
def test_row_permutation_invariance(key, binning, bins, dataset):
    preds = _datasets()[dataset]
    perm = np.random.default_rng(3).permutation(preds.n_samples)
    shuffled = preds.subset(perm)
    assert not np.array_equal(shuffled.labels, preds.labels)  # the permutation does something
    a = calcore.compute_metric(key, preds, bins=bins, binning=binning)
    b = calcore.compute_metric(key, shuffled, bins=bins, binning=binning)
    assert b == pytest.approx(a, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("key", KEYS)
def test_values_within_bounds(key, dataset):
    preds = _datasets()[dataset]
    lo, hi = METRICS[key].bounds
    for binning, bins in BINNINGS:
        value = calcore.compute_metric(key, preds, bins=bins, binning=binning)
        assert lo <= value <= hi, (binning, bins, value)


def test_bounds_are_attained_by_hand():
    # One-hot rows that are all wrong: accuracy 0, Brier 2 (two squared errors of 1), every
    # top-label / confidence bin has conf 1 and acc 0 -> conf/TL-ECE, MCE 1;
    # NLL = -log(eps) = 52 ln 2.
    # One-hot rows that are all right: accuracy 1, Brier 0, NLL 0, every ECE 0.
    wrong, right = _datasets()["onehot-wrong"], _datasets()["onehot-right"]
    for key, value in {
        "accuracy": 0.0,
        "brier": 2.0,
        "conf_ece": 1.0,
        "top_label_ece": 1.0,
        "conf_mce": 1.0,
        "top_label_mce": 1.0,
        "classwise_mce": 1.0,
    }.items():
        assert calcore.compute_metric(key, wrong) == value, key
    assert calcore.compute_metric("nll", wrong) == pytest.approx(52 * np.log(2), rel=1e-15)
    for key in [
        "accuracy",
        "brier",
        "nll",
        "conf_ece",
        "top_label_ece",
        "classwise_ece",
        "ace",
        "tace",
    ]:
        assert calcore.compute_metric(key, right) == (1.0 if key == "accuracy" else 0.0), key


def test_kde_metrics_need_two_rows():
    one = calcore.Predictions.from_probs([[0.7, 0.3]], [1])
    for key in KEYS:
        if key.startswith("kde"):
            with pytest.raises(calcore.CalcoreError, match="at least 2 scores"):
                calcore.compute_metric(key, one)
        else:
            lo, hi = METRICS[key].bounds
            assert lo <= calcore.compute_metric(key, one) <= hi


# -- calibrated vs over-confident synthetic data -------------------------------------------
N_SYNTH, L_SYNTH = 20_000, 4
#: Upper limit on an l1/l2 ECE-type metric of perfectly calibrated data. Binned estimators are
#: biased upwards by the sampling noise of each bin's frequency: a bin with n_b points has
#: E|acc_b - conf_b| ~ sqrt(2/pi) sqrt(acc(1-acc)/n_b) <= 0.4/sqrt(n_b), so the weighted sum is
#: at most ~0.4 sqrt(B/n): 0.011 for 15 bins and 0.022 for the 60 (class, bin) pairs of TL-ECE
#: at n = 20,000; the l2 versions and KDE-ECE are of the same order. 0.04 leaves a margin.
CALIBRATED_TOL = 0.04
#: MCE-type metrics (a max over bins) are checked with equal-mass bins so that every bin has
#: ~n_l/15 >= 300 points: the max of ~60 gaps of standard deviation <= 0.5/sqrt(300) = 0.03.
CALIBRATED_MCE_TOL = 0.12


@functools.lru_cache(maxsize=None)
def _synthetic():
    rng = np.random.default_rng(2024)
    p = rng.dirichlet(np.ones(L_SYNTH), size=N_SYNTH)
    labels = np.minimum(
        (rng.random(N_SYNTH)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), L_SYNTH - 1
    )
    sharp = p**3
    sharp /= sharp.sum(axis=1, keepdims=True)  # over-confident, same argmax, same labels
    return calcore.Predictions.from_probs(p, labels), calcore.Predictions.from_probs(sharp, labels)


@functools.lru_cache(maxsize=None)
def _synthetic_values(key, binning):
    calibrated, overconfident = _synthetic()
    return (
        calcore.compute_metric(key, calibrated, bins=15, binning=binning),
        calcore.compute_metric(key, overconfident, bins=15, binning=binning),
    )


def _synthetic_params():
    out = []
    for key in ERROR_KEYS:
        if not METRICS[key].takes_binning_scheme:
            out.append((key, "equal-width"))  # the binning is not used
        elif key in MAX_KEYS:
            out.append((key, "equal-mass"))
        else:
            out += [(key, "equal-width"), (key, "equal-mass")]
    return out


@pytest.mark.parametrize(("key", "binning"), _synthetic_params())
def test_calibrated_near_zero_and_overconfident_clearly_worse(key, binning):
    good, bad = _synthetic_values(key, binning)
    tol = CALIBRATED_MCE_TOL if key in MAX_KEYS else CALIBRATED_TOL
    assert 0.0 <= good <= tol, good
    # sharpening by a power 3 moves confidences far from the frequencies (~0.1-0.35 here)
    assert bad >= max(3 * good, good + 0.08), (good, bad)


def test_scoring_rules_on_calibrated_vs_overconfident():
    calibrated, overconfident = _synthetic()
    # argmax is unchanged by the sharpening: same accuracy
    assert calcore.compute_metric("accuracy", calibrated) == calcore.compute_metric(
        "accuracy", overconfident
    )
    # proper scoring rules: reporting the true probabilities is optimal in expectation
    assert (
        calcore.compute_metric("nll", overconfident)
        > calcore.compute_metric("nll", calibrated) + 0.2
    )
    assert (
        calcore.compute_metric("brier", overconfident)
        > calcore.compute_metric("brier", calibrated) + 0.05
    )


def test_every_metric_is_covered_by_the_synthetic_check():
    assert {k for k, _ in _synthetic_params()} | SCORING == set(KEYS)


# -- bad input ------------------------------------------------------------------------------
BAD_INPUTS = [
    # (probs, labels, message pattern naming the row and column)
    (
        [[0.5, 0.5], [0.2, np.nan]],
        [0, 1],
        r"row 1 \(0-based\), column 1: probability value nan is not a finite",
    ),
    (
        [[0.5, 0.5], [0.3, np.inf]],
        [0, 1],
        r"row 1 \(0-based\), column 1: probability value inf is not a finite",
    ),
    (
        [[0.5, 0.5], [1.2, -0.2]],
        [0, 1],
        r"row 1 \(0-based\), column 1: probability -0.2 is negative",
    ),
    (
        [[0.5, 0.5], [1.5, 0.0]],
        [0, 1],
        r"row 1 \(0-based\), column 0: probability 1.5 is greater than 1",
    ),
    (
        [[0.5, 0.5], [0.5, 0.5], [0.3, 0.3]],
        [0, 1, 0],
        r"row 2 \(0-based\): probabilities sum to 0.6, not 1",
    ),
    (
        [[0.5, 0.5], [0.5, 0.5]],
        [0, 2],
        r"row 1 \(0-based\): label 2 is not a class index; there are 2 classes",
    ),
    ([[0.5, 0.5], [0.5, 0.5]], [-1, 0], r"row 0 \(0-based\): label -1 is not a class index"),
    (
        [[0.5, 0.5], [0.5, 0.5]],
        [0.0, 0.5],
        r"row 1 \(0-based\): label 0.5 is not an integer class index",
    ),
    ([0.5, 0.5], [0], r"must be a 2-D array of shape \(n_samples, n_classes\), got shape \(2,\)"),
    ([[[0.5, 0.5]]], [0], r"must be a 2-D array .* got shape \(1, 1, 2\)"),
    (
        [[0.5, 0.5], [0.5, 0.5]],
        [0, 1, 1],
        r"labels must be a 1-D array with one entry per row \(2\), got shape \(3,\)",
    ),
    ([[0.5, 0.5], [0.5, 0.5]], [[0], [1]], r"one entry per row \(2\), got shape \(2, 1\)"),
    ([[1.0], [1.0]], [0, 0], r"has 1 class column; at least 2 classes are needed"),
    (np.empty((0, 3)), [], r"has no rows"),
    ([["a", "b"]], [0], r"must be numeric"),
]


@pytest.mark.parametrize(("probs", "labels", "match"), BAD_INPUTS)
def test_from_probs_rejects_bad_input(probs, labels, match):
    with pytest.raises(calcore.CalcoreError, match=match):
        calcore.Predictions.from_probs(probs, labels)


def test_from_probs_message_uses_the_source_name():
    with pytest.raises(calcore.CalcoreError, match=r"^val\.npz, row 0 \(0-based\), column 1"):
        calcore.Predictions.from_probs([[0.5, np.nan]], [0], source="val.npz")


def test_from_logits_rejects_bad_input():
    with pytest.raises(
        calcore.CalcoreError, match=r"row 0 \(0-based\), column 2: logit value inf is not"
    ):
        calcore.Predictions.from_logits([[0.0, 1.0, np.inf]], [0])
    with pytest.raises(
        calcore.CalcoreError, match=r"row 0 \(0-based\): label 3 is not a class index"
    ):
        calcore.Predictions.from_logits([[0.0, 1.0, 2.0]], [3])
    with pytest.raises(calcore.CalcoreError, match=r"1 class column"):
        calcore.Predictions.from_logits([[0.0]], [0])


def test_from_probs_never_aliases_or_freezes_the_callers_array():
    p = np.array([[0.4, 0.6], [0.9, 0.1]])
    preds = calcore.Predictions.from_probs(p, [1, 0])
    p[0, 0] = 0.0  # the caller's array stays writable and changing it changes nothing
    assert preds.probs[0, 0] == 0.4
    with pytest.raises(ValueError):
        preds.probs[0, 0] = 0.5


# -- option errors of the metric functions ----------------------------------------------------
@pytest.fixture(scope="module")
def preds3():
    rng = np.random.default_rng(0)
    return calcore.Predictions.from_probs(
        rng.dirichlet(np.ones(3), size=40), rng.integers(0, 3, size=40)
    )


BINNED_KEYS = [k for k in KEYS if METRICS[k].takes_binning_scheme]


BAD_BINS = [
    (0, r"The number of bins \(bins\) must be a positive integer; got 0\."),
    (-3, r"The number of bins \(bins\) must be a positive integer; got -3\."),
    (2.5, r"The number of bins \(bins\) must be a positive integer; got 2\.5\."),
    (True, r"The number of bins \(bins\) must be a positive integer; got True\."),
]


def _bad_bins_params():
    # compute_metric hands ACE/TACE their bins only when it is an integer (bool included)
    return [
        (key, bins, match)
        for key in BINNED_KEYS + ["ace", "tace"]
        for bins, match in BAD_BINS
        if METRICS[key].takes_binning_scheme or isinstance(bins, int)
    ]


@pytest.mark.parametrize(("key", "bins", "match"), _bad_bins_params())
def test_bad_bins(preds3, key, bins, match):
    with pytest.raises(calcore.CalcoreError, match=match):
        calcore.compute_metric(key, preds3, bins=bins)


@pytest.mark.parametrize("key", BINNED_KEYS)
def test_bad_binning(preds3, key):
    with pytest.raises(
        calcore.CalcoreError,
        match=r"binning must be one of \['equal-width', 'equal-mass', 'points-per-bin', "
        r"'unique'\]; got 'nope'\.",
    ):
        calcore.compute_metric(key, preds3, binning="nope")
    with pytest.raises(
        calcore.CalcoreError,
        match=r"bins must be a positive integer or one of \['sturges', 'cube-root'\] "
        r"for binning='equal-width'; got 'many'\.",
    ):
        calcore.compute_metric(key, preds3, bins="many")
    with pytest.raises(
        calcore.CalcoreError,
        match=r"bins must be a positive integer for binning='points-per-bin'; got 'sturges'\.",
    ):
        calcore.compute_metric(key, preds3, bins="sturges", binning="points-per-bin")
    with pytest.raises(
        calcore.CalcoreError,
        match=r"The points per bin \(bins\) must be a positive integer; got 0\.",
    ):
        calcore.compute_metric(key, preds3, bins=0, binning="points-per-bin")


@pytest.mark.parametrize(
    "function",
    [
        calcore.confidence_ece,
        calcore.top_label_ece,
        calcore.classwise_ece,
        calcore.top_k_confidence_ece,
        calcore.top_k_label_ece,
    ],
)
@pytest.mark.parametrize("p", [0.5, 0, -1, "two", True])
def test_bad_norm_order(preds3, function, p):
    with pytest.raises(
        calcore.CalcoreError, match=rf"The norm order p must be a number >= 1 or np\.inf; got {p!r}"
    ):
        function(preds3, p=p)


@pytest.mark.parametrize("function", [calcore.top_k_confidence_ece, calcore.top_k_label_ece])
@pytest.mark.parametrize("k", [0, 4, -1, 1.5, True])
def test_bad_k(preds3, function, k):
    with pytest.raises(
        calcore.CalcoreError,
        match=rf"k must be an integer between 1 and the number of classes \(3\); got {k!r}\.",
    ):
        function(preds3, k=k)


@pytest.mark.parametrize("threshold", [1.5, 1.0, -0.1, np.nan])
def test_bad_threshold(preds3, threshold):
    with pytest.raises(calcore.CalcoreError, match=r"threshold must be in \[0, 1\); got"):
        calcore.thresholded_adaptive_ece(preds3, threshold=threshold)


@pytest.mark.parametrize("clip", [1.0, -0.1, 2])
def test_bad_nll_clip(preds3, clip):
    with pytest.raises(calcore.CalcoreError, match=rf"clip must be in \[0, 1\); got {clip!r}\."):
        calcore.negative_log_likelihood(preds3, clip=clip)


def test_bad_debiased_view(preds3):
    with pytest.raises(
        calcore.CalcoreError,
        match=r"view must be one of \['class-wise', 'confidence', 'top-label'\]; got 'nope'\.",
    ):
        calcore.debiased_ece(preds3, view="nope")


@pytest.mark.parametrize("n_resamples", [1, 0, -5, 2.0, True])
def test_bad_n_resamples(preds3, n_resamples):
    with pytest.raises(
        calcore.CalcoreError, match=rf"n_resamples must be an integer >= 2; got {n_resamples!r}\."
    ):
        calcore.bootstrap_interval(calcore.accuracy, preds3, n_resamples=n_resamples)


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.2])
def test_bad_confidence_level(preds3, level):
    with pytest.raises(
        calcore.CalcoreError, match=rf"confidence_level must be in \(0, 1\); got {level!r}\."
    ):
        calcore.bootstrap_interval(calcore.accuracy, preds3, n_resamples=10, confidence_level=level)


def test_bad_evaluate_options(preds3):
    # the message names evaluate's own argument, not an inner helper's n_resamples
    rule = r"n_resamples must be 0 \(no intervals\) or an integer from 2 to 100,000; got "
    for bad in (-1, 2.5, 1, True, 100_001):
        with pytest.raises(calcore.CalcoreError, match=rule + re.escape(repr(bad)) + r"\."):
            calcore.evaluate(preds3, n_resamples=bad)
    with pytest.raises(
        calcore.CalcoreError, match=r"The number of bins \(bins\) must be a positive integer; got 0"
    ):
        calcore.evaluate(preds3, bins=0)
    with pytest.raises(calcore.CalcoreError, match=r"binning must be one of .*; got 'nope'"):
        calcore.evaluate(preds3, binning="nope")
    with pytest.raises(
        calcore.CalcoreError,
        match=r"evaluate expects a calcore\.Predictions or a stream from calcore\.scan; got list",
    ):
        calcore.evaluate([[0.5, 0.5]])
