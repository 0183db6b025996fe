"""Each diagnostic view's sentence (calcore.diagnostics.summaries) against results built by
hand, where the right words and numbers are known by construction; and properties: a
direction is named only where the interval supports it, on the side of the gap."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import calcore


def wilson(successes: float, count: float, z: float) -> tuple[float, float]:
    """Wilson's score interval written out (Brown, Cai & DasGupta 2001, Eq. 4)."""
    p = successes / count
    centre = (p + z * z / (2 * count)) / (1 + z * z / count)
    half = z * math.sqrt(p * (1 - p) / count + z * z / (4 * count * count)) / (1 + z * z / count)
    # at 0 or all successes the ends are exactly 0 and 1 (rounding leaves 1e-17 off)
    low = 0.0 if successes == 0 else centre - half
    high = 1.0 if successes == count else centre + half
    return low, high


def z_for(n_tests: int) -> float:
    return float(norm.ppf(1 - 0.025 / n_tests))


def diagram(edges, confidence, accuracy, count, ci=None, *, group=None, view="confidence"):
    """A ReliabilityDiagram by hand; its intervals are Wilson's 95% unless given."""
    count = np.asarray(count, dtype=np.int64)
    accuracy = np.asarray(accuracy, dtype=float)
    confidence = np.asarray(confidence, dtype=float)
    if ci is None:
        bounds = [wilson(a * c, c, z_for(1)) for a, c in zip(accuracy, count, strict=True)]
        ci = (np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds]))
    n = int(count.sum())
    ece = float(np.sum(count / n * np.abs(accuracy - confidence)))
    edges = np.asarray(edges, dtype=float)
    return calcore.ReliabilityDiagram(
        view, group, confidence, accuracy, count, np.asarray(ci[0], float),
        np.asarray(ci[1], float), edges[:-1], edges[1:], ece, n, "by hand",
    )  # fmt: skip


# ------------------------------------------------------------------- confidence diagrams


def test_a_top_bin_below_the_diagonal_beyond_its_interval_is_over_confident():
    d = diagram([0.5, 0.9, 1.0], [0.7, 0.99], [0.7, 0.95], [100, 900], ([0.6, 0.935], [0.8, 0.962]))
    s = calcore.reliability_summary({"uncalibrated": d})
    assert s.severity == "warning"
    assert s.sentence == (
        "uncalibrated is over-confident where most rows are: in the 0.90–1.00 bin (90% of the "
        "test rows) accuracy is 0.950 [0.935, 0.962] against confidence 0.990."
    )


def test_the_same_bin_with_an_interval_covering_the_diagonal_is_within_noise():
    # 19 of 20 right: Wilson's interval [0.764, 0.991] reaches the confidence 0.99
    d = diagram([0.5, 0.9, 1.0], [0.7, 0.99], [0.7, 0.95], [10, 20])
    lo, hi = wilson(19, 20, z_for(1))
    assert lo < 0.99 < hi
    s = calcore.reliability_summary({"uncalibrated": d})
    assert s.severity == "success"
    assert s.sentence.startswith("uncalibrated is within noise in every bin: where most rows")
    assert f"accuracy 0.950 [{lo:.3f}, {hi:.3f}] covers confidence 0.990" in s.sentence
    assert "over-confident" not in s.sentence and "under-confident" not in s.sentence


def test_a_bin_above_the_diagonal_beyond_its_interval_is_under_confident():
    d = diagram([0.0, 0.9, 1.0], [0.5, 0.95], [0.5, 0.99], [10, 1000])
    s = calcore.reliability_summary({"m": d})
    assert "m is under-confident where most rows are" in s.sentence
    assert "accuracy is 0.990" in s.sentence and "against confidence 0.950" in s.sentence


def test_without_an_interval_no_direction_is_claimed():
    nan = [float("nan")] * 2
    d = diagram([0.5, 0.9, 1.0], [0.7, 0.99], [0.7, 0.5], [100, 900], (nan, nan))
    s = calcore.reliability_summary({"uncalibrated": d})
    assert "no interval computed" in s.sentence
    for word in ("over-confident", "under-confident", "within noise"):
        assert word not in s.sentence


def test_a_searched_bin_is_named_with_its_interval_widened_for_the_search():
    # the fullest bin sits on the diagonal; the other one is 0.2 below it on 900 rows
    d = diagram([0.0, 0.6, 1.0], [0.5, 0.9], [0.5, 0.7], [1000, 900])
    s = calcore.reliability_summary(
        {"uncalibrated": d, "ts": diagram([0.0, 1.0], [0.5], [0.5], [1900])}
    )
    lo, hi = wilson(630, 900, z_for(2))
    assert s.sentence.startswith(
        f"uncalibrated is over-confident in the 0.60–1.00 bin (47% of the test rows): accuracy "
        f"is 0.700 [{lo:.3f}, {hi:.3f}, widened for 2 bins searched] against confidence 0.900; "
        "where most rows are it is within noise."
    )
    # a method within noise everywhere: the finding has a fix
    assert s.sentence.endswith("Calibrated: ts is within noise in every bin.")
    assert s.severity == "info"


def test_a_method_that_leaves_a_gap_is_named_with_it():
    base = diagram([0.5, 0.9, 1.0], [0.7, 0.99], [0.7, 0.95], [100, 900])
    ts = diagram([0.5, 0.9, 1.0], [0.7, 0.98], [0.7, 0.95], [100, 900])
    s = calcore.reliability_summary({"uncalibrated": base, "ts": ts})
    assert (
        "ts leaves its 0.90–1.00 bin over-confident (accuracy 0.950 against 0.980, a 0.030 gap)"
        in s.sentence
    )
    assert s.severity == "warning"


def _bin_edges(draw_count: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, draw_count + 1)


@st.composite
def diagrams(draw):
    n_bins = draw(st.integers(1, 8))
    edges = _bin_edges(n_bins)
    counts = [draw(st.integers(1, 800)) for _ in range(n_bins)]
    right = [draw(st.integers(0, c)) for c in counts]
    conf = [draw(st.floats(float(edges[b]), float(edges[b + 1]))) for b in range(n_bins)]
    accuracy = [r / c for r, c in zip(right, counts, strict=True)]
    return diagram(edges, conf, accuracy, counts)


_CLAIM = re.compile(r"is (over|under)-confident (?:where most rows are: in|in) the (\d\.\d\d)–")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(diagrams())
def test_a_claimed_direction_agrees_with_the_gap_and_its_interval(d):
    s = calcore.reliability_summary({"m": d}).sentence
    claim = _CLAIM.search(s)
    if claim is None:
        ok = d.count > 0
        fullest = int(np.argmax(d.count))
        if "within noise in every bin" in s:
            # every bin's interval, widened for the search, covers the diagonal
            z = z_for(int(ok.sum()))
            for b in np.flatnonzero(ok):
                lo, hi = wilson(d.accuracy[b] * d.count[b], d.count[b], z)
                assert lo - 1e-9 <= d.confidence[b] <= hi + 1e-9
            assert d.ci_lower[fullest] <= d.confidence[fullest] <= d.ci_upper[fullest]
        return
    way, lower = claim.group(1), float(claim.group(2))
    (b,) = [b for b in range(d.count.size) if f"{d.lower_edge[b]:.2f}" == f"{lower:.2f}"]
    gap = d.accuracy[b] - d.confidence[b]
    if way == "over":
        assert gap < 0 and d.ci_upper[b] < d.confidence[b]
    else:
        assert gap > 0 and d.ci_lower[b] > d.confidence[b]


# ------------------------------------------------------------------- top-label


def _two_class_top_label(n: int, dog_right: int):
    """cat predicted at 0.9 on n rows, always right; dog predicted at 0.9 on n rows,
    right dog_right times."""
    probs = np.array([[0.9, 0.1]] * n + [[0.1, 0.9]] * n)
    labels = np.r_[np.zeros(n, int), np.ones(dog_right, int), np.zeros(n - dog_right, int)]
    preds = calcore.Predictions.from_probs(probs, labels, ("cat", "dog"))
    return calcore.top_label_reliability_diagram(preds, bins=15)


def test_top_label_names_the_class_that_carries_the_error_and_its_surest_cell():
    d = _two_class_top_label(400, 240)
    # TL-ECE = (400 x |1.0 - 0.9| + 400 x |0.6 - 0.9|) / 800 = 0.2; dog's part 0.15 = 75%
    lo, hi = wilson(240, 400, z_for(2))  # two non-empty (bin, class) cells searched
    s = calcore.top_label_summary({"uncalibrated": d})
    assert s.sentence == (
        "uncalibrated's TL-ECE of 0.200 comes mostly from predicted dog (75%); 1 of its 2 "
        "cells are over-confident and 1 under-confident beyond noise (intervals widened for "
        "the 2); the surest: when it predicts dog with confidence 0.87–0.93 (400 rows) it is "
        "right 0.600 "
        f"[{lo:.3f}, {hi:.3f}, widened for 2 cells] of the time against confidence 0.900, "
        "over-confident."
    )
    assert s.severity == "warning"


def test_top_label_cells_too_small_to_tell_are_said_to_be_noise():
    d = _two_class_top_label(10, 8)  # 8 of 10 right at 0.9: Wilson covers 0.9
    s = calcore.top_label_summary({"uncalibrated": d, "ts": d})
    assert (
        "no (class, bin) cell's interval excludes the diagonal (widened for 2 cells" in s.sentence
    )
    assert "over-confident" not in s.sentence
    assert s.severity == "success"


# ------------------------------------------------------------------- class-wise


def test_classwise_names_the_worst_class_with_its_labelled_rows():
    edges = [0.0, 0.5, 1.0]
    # cat: 0.05 x 800 + 0.5 x 200 = 140 rows labelled cat; ECE = 200 / 1000 x 0.3 = 0.06
    cat = diagram(edges, [0.05, 0.8], [0.05, 0.5], [800, 200], group="cat", view="class-wise")
    dog = diagram(edges, [0.1, 0.7], [0.1, 0.7], [900, 100], group="dog", view="class-wise")
    lo, hi = wilson(100, 200, z_for(4))  # four non-empty bins over the two panels
    s = calcore.classwise_summary({"uncalibrated": (cat, dog), "ts": (dog, dog)})
    assert s.sentence == (
        "Of the 2 classes shown, uncalibrated is worst calibrated on cat (140 test rows "
        "labelled cat): its one-vs-rest ECE is 0.060; where its probability is 0.50–1.00 "
        f"(200 rows) the class is the label 0.500 [{lo:.3f}, {hi:.3f}, widened for 4 bins] "
        "of the time against a predicted 0.800: it over-predicts cat there. "
        "On cat: ts 0.000 (within noise)."
    )
    assert s.severity == "info"


# ------------------------------------------------------------------- validity


def _validity(v, sem=0.0105, cond=None, n=20):
    eps = np.linspace(0.0, 0.2, 201)
    v = np.asarray(v, float)
    cond = v if cond is None else np.asarray(cond, float)
    return calcore.ValidityCurve(
        eps, v, np.full(201, sem), cond, np.full(201, sem), "confidence", None, n
    )


def test_validity_says_the_epsilon_of_each_method_and_whether_they_are_told_apart():
    i = np.arange(201)
    fast = np.minimum(i / 50, 1.0)  # 0.9 at index 45; +-0.021 reaches it at 44 and 47
    slow = np.minimum(i / 100, 1.0)  # 0.9 at index 90 (88 and 93)
    close = np.minimum(i / 51, 1.0)  # 0.9 at index 46 (45 and 47): overlaps fast's range
    s = calcore.validity_summary(
        {
            "ts": _validity(slow),
            "conf-hb": _validity(fast, cond=np.minimum(i / 100, 1.0)),
            "tl-hb": _validity(close),
        }  # fmt: skip
    )
    assert s.sentence == (
        "conf-hb's bins are the most valid: 90% of the test points lie within ε = 0.045 "
        "(0.044–0.047 within two standard errors over 20 resamples) of their bin's observed "
        "frequency; every bin at once is within 0.090 in 90% of the resamples. Others: tl-hb "
        "needs ε = 0.046 (0.045–0.047, not told apart from conf-hb); ts needs ε = 0.090 "
        "(0.088–0.093)."
    )


def test_validity_that_no_method_reaches_is_a_warning():
    s = calcore.validity_summary({"ts": _validity(np.full(201, 0.5))})
    assert s.severity == "warning" and s.sentence.startswith("No method's bins reach 90%")


# ------------------------------------------------------------------- KDE


def _sweep(values):
    return calcore.EceByBins(
        np.array([5, 15, 25]), np.array(values, float), None, None, "equal-width"
    )


def test_kde_agreement_and_ranking():
    s = calcore.kde_summary(
        {"uncalibrated": 0.030, "ts": 0.006},
        {"uncalibrated": _sweep([0.028, 0.031, 0.034]), "ts": _sweep([0.003, 0.003, 0.0032])},
    )
    # ts: 0.006 is 0.0028 above a range 0.0002 wide whose middle is 0.0031: disagrees
    assert s.sentence == (
        "KDE-ECE agrees with binned ECE over 5–25 bins for uncalibrated but not for ts "
        "(uncalibrated 0.030 against 0.028–0.034; ts 0.006, above 0.003); the bin count alone "
        "moves binned ECE by up to 0.006, so smaller differences are no finding (no interval "
        "computed). Both rank ts lowest, at every bin count."
    )
    assert s.severity == "info"


def test_kde_and_binned_ranking_differently_is_a_warning():
    # a's KDE-ECE is 0.020 below b's, far more than the bins move either (0.002)
    s = calcore.kde_summary(
        {"a": 0.010, "b": 0.030},
        {"a": _sweep([0.040, 0.039, 0.038]), "b": _sweep([0.030, 0.031, 0.029])},
    )
    assert s.sentence.endswith("KDE-ECE ranks a lowest; binned ECE agrees at 0 of 3 bin counts.")
    assert s.severity == "warning"


def test_methods_closer_than_the_bins_move_ece_are_not_told_apart():
    # KDE-ECEs 0.002 apart; binned ECE moves by up to 0.004 with the bin count
    s = calcore.kde_summary(
        {"a": 0.010, "b": 0.012},
        {"a": _sweep([0.012, 0.011, 0.010]), "b": _sweep([0.009, 0.012, 0.013])},
    )
    assert s.sentence.endswith(
        "Both put a and b lowest, closer together than the bins move binned ECE: not told apart."
    )
    assert s.severity == "info"


# ------------------------------------------------------------------- learning


def _learning(mean, std, reps=5, uncalibrated=0.05):
    m = np.asarray(mean, float)
    return calcore.LearningCurve(
        np.array([100, 1000]), tuple(f"m{i}" for i in range(len(m))), "top_label_ece", m,
        np.asarray(std, float), np.ones_like(m), np.zeros_like(m), reps, uncalibrated,
    )  # fmt: skip


def test_learning_says_more_rows_help_when_the_drop_exceeds_the_spread():
    # drop 0.03 against 2 x sqrt((0.004^2 + 0.004^2) / 5) = 0.0051 (no spread at full size)
    s = calcore.learning_summary(_learning([[0.06, 0.03]], [[0.004, 0.0]]), metric_label="TL-ECE")
    assert s.severity == "warning"
    assert "m0 (0.0600 → 0.0300, -50%; spread ± 0.0051)" in s.sentence
    assert s.sentence.endswith("more calibration rows would likely help.")


def test_learning_flat_within_the_spread_says_more_rows_will_not_help_much():
    # drop 0.001 against 2 x sqrt(2 x 0.002^2 / 5) = 0.0025
    s = calcore.learning_summary(_learning([[0.020, 0.019]], [[0.002, 0.0]]), metric_label="TL-ECE")
    assert s.severity == "success"
    assert (
        "no method improves from 100 to 1,000 rows by 5% or more beyond the spread over 5 "
        "subsets: more calibration rows are unlikely to help much." in s.sentence
    )


def test_learning_a_sure_but_tiny_drop_is_not_worth_more_rows():
    # 0.100 -> 0.098 is far beyond 2 x sqrt(2 x 0.0001^2 / 5) = 0.00013, but only 2%
    s = calcore.learning_summary(_learning([[0.100, 0.098]], [[0.0001, 0.0]]))
    assert s.severity == "success" and "no method improves" in s.sentence


def test_learning_names_methods_worse_than_uncalibrated():
    s = calcore.learning_summary(_learning([[0.02, 0.02], [0.07, 0.06]], [[0.01, 0], [0.01, 0]]))
    assert s.sentence.endswith("Worse than uncalibrated at full size: m1.")


@pytest.mark.parametrize(
    "summary",
    [
        lambda: calcore.reliability_summary({}),
        lambda: calcore.top_label_summary({}),
        lambda: calcore.classwise_summary({}),
        lambda: calcore.validity_summary({}),
        lambda: calcore.kde_summary({}, {}),
    ],
)
def test_nothing_to_summarise_is_an_empty_sentence(summary):
    assert summary().sentence == ""


def test_gaps_all_one_way_are_counted():
    # three bins 0.2 below the diagonal on 500 rows each: each beyond noise after widening
    d = diagram([0.0, 0.4, 0.7, 1.0], [0.3, 0.6, 0.9], [0.1, 0.4, 0.7], [500, 500, 600])
    s = calcore.reliability_summary({"m": d}).sentence
    assert s.endswith(
        "; 3 of its 3 bins are over-confident and none under-confident beyond noise "
        "(intervals widened for the 3)."
    )


def test_a_tl_ece_spread_over_many_classes_names_no_three_as_mostly():
    # eight classes, each predicted at 0.9 on 100 rows and right 60 times: equal parts
    names = tuple(f"c{k}" for k in range(8))
    probs = np.full((800, 8), 0.1 / 7)
    labels = np.empty(800, dtype=int)
    for k in range(8):
        probs[100 * k : 100 * (k + 1), k] = 0.9
        labels[100 * k : 100 * (k + 1)] = np.r_[np.full(60, k), np.full(40, (k + 1) % 8)]
    d = calcore.top_label_reliability_diagram(calcore.Predictions.from_probs(probs, labels, names))
    s = calcore.top_label_summary({"uncalibrated": d}).sentence
    assert s.startswith(
        "uncalibrated's TL-ECE of 0.300 is spread over the predicted classes (the largest "
        "part, c0's, is 12%); 8 of its 8 cells are over-confident"
    )
    assert "mostly" not in s


_CELL = re.compile(
    r"when it predicts (c\d+) with confidence (\d\.\d\d)–\d\.\d\d \([\d,]+ rows\) it is right "
    r"[\d.]+ \[[\d.]+, [\d.]+, widened for ([\d,]+) cells\] of the time against confidence "
    r"[\d.]+, (over|under)-confident"
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(2, 5),
    st.integers(30, 400),
    st.floats(0.2, 3.0),
    st.integers(0, 2**31 - 1),
)
def test_a_top_label_cell_claimed_agrees_with_its_gap_and_widened_interval(k, n, sharp, seed):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 1 / sharp), size=n)
    labels = rng.integers(0, k, size=n)
    names = tuple(f"c{j}" for j in range(k))
    d = calcore.top_label_reliability_diagram(
        calcore.Predictions.from_probs(probs, labels, names), bins=10
    )
    claim = _CELL.search(calcore.top_label_summary({"m": d}).sentence)
    if claim is None:
        return
    c = names.index(claim.group(1))
    lower = d.confidence_diagram.lower_edge
    (b,) = [b for b in range(lower.size) if f"{lower[b]:.2f}" == claim.group(2)]
    n_cells = int(claim.group(3).replace(",", ""))
    assert n_cells == int(np.count_nonzero(d.class_count > 0))
    count = d.class_count[b, c]
    acc, conf = d.class_accuracy[b, c], d.class_confidence[b, c]
    lo, hi = wilson(acc * count, count, z_for(n_cells))
    if claim.group(4) == "over":
        assert acc < conf and hi < conf
    else:
        assert acc > conf and lo > conf
