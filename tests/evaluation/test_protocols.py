"""compare / learning_curve / calibrator_validity against manual fit-transform-evaluate loops."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import calcore
from calcore.calibrators import make_calibrator
from calcore.evaluation import UNCALIBRATED, calibrator_validity, compare, learning_curve


def _overconfident(n, seed):
    """3 classes; true probabilities from a Dirichlet, predictions sharpened (power 3)."""
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet([1.0, 1.0, 1.0], size=n)
    labels = np.array([rng.choice(3, p=p) for p in truth])
    sharp = truth**3 / (truth**3).sum(axis=1, keepdims=True)
    return calcore.Predictions.from_probs(sharp, labels, ("a", "b", "c"))


@pytest.fixture(scope="module")
def splits():
    return _overconfident(1500, 1), _overconfident(1500, 2)


def test_compare_equals_manual_loop(splits):
    calib, test = splits
    result = compare(calib, test, ["tl-hb", ("cw-hb", {"bins": 5})], bins=10)
    assert result.methods == (UNCALIBRATED, "tl-hb", "cw-hb(bins=5)")
    manual = make_calibrator("tl-hb").fit(calib).transform(test)
    assert result.values["tl-hb"]["top_label_ece"].estimate == calcore.top_label_ece(
        manual, bins=10
    )
    # evaluate() and classwise_ece() sum in different orders (sorted vs row-block engine)
    assert result.values[UNCALIBRATED]["classwise_ece"].estimate == pytest.approx(
        calcore.classwise_ece(test, bins=10), abs=1e-12
    )
    brier_drop = calcore.brier_score(test) - calcore.brier_score(manual)
    assert result.values["tl-hb"]["calibration_gain"].estimate == pytest.approx(
        brier_drop, abs=1e-15
    )
    np.testing.assert_array_equal(result.calibrated["tl-hb"].probs, manual.probs)
    # the over-confident input is fixed by TL-HB on held-out data
    assert (
        result.values["tl-hb"]["top_label_ece"].estimate
        < 0.5 * result.values[UNCALIBRATED]["top_label_ece"].estimate
    )
    assert result.best("top_label_ece") != UNCALIBRATED
    rows = result.rows()
    assert {"method", "metric", "estimate", "low", "high"} == set(rows[0])
    assert len(rows) == len(result.methods) * len(result.metrics) - sum(
        v is None for m in result.methods for v in result.values[m].values()
    )


def test_compare_bootstrap_intervals_bracket_accuracy(splits):
    calib, test = splits
    result = compare(calib, test, ["tl-hb"], n_resamples=30, seed=3)
    iv = result.values["tl-hb"]["accuracy"]
    assert iv.low <= iv.estimate <= iv.high and iv.n_resamples == 30


def test_compare_errors(splits):
    calib, test = splits
    other = calcore.Predictions.from_probs(test.probs, test.labels, ("x", "y", "z"))
    with pytest.raises(calcore.CalcoreError, match="different classes"):
        compare(calib, other, ["tl-hb"])
    with pytest.raises(calcore.CalcoreError, match="must be distinct"):
        compare(calib, test, ["tl-hb", "tl-hb"])
    with pytest.raises(calcore.CalcoreError, match="Unknown calibrator 'nope'"):
        compare(calib, test, ["nope"])
    with pytest.raises(calcore.CalcoreError, match="A method is a name"):
        compare(calib, test, [3])


def test_learning_curve_matches_manual_subsets(splits):
    calib, test = splits
    lc = learning_curve(calib, test, ["tl-hb"], sizes=[200, 1000], n_repeats=2, seed=5, bins=10)
    assert lc.mean.shape == (1, 2) and lc.methods == ("tl-hb",)
    rng = np.random.default_rng(5)
    manual = {200: [], 1000: []}
    for _ in range(2):
        for size in (200, 1000):
            rows = np.sort(rng.choice(calib.n_samples, size=size, replace=False))
            out = make_calibrator("tl-hb").fit(calib.subset(rows)).transform(test)
            manual[size].append(calcore.top_label_ece(out, bins=10))
    np.testing.assert_allclose(
        lc.mean[0], [np.mean(manual[200]), np.mean(manual[1000])], rtol=0, atol=1e-15
    )
    np.testing.assert_allclose(
        lc.std[0], [np.std(manual[200], ddof=1), np.std(manual[1000], ddof=1)], atol=1e-15
    )
    assert lc.uncalibrated == calcore.top_label_ece(test, bins=10)
    with pytest.raises(calcore.CalcoreError, match="sizes must lie in 2..1500"):
        learning_curve(calib, test, ["tl-hb"], sizes=[5000])
    with pytest.raises(calcore.CalcoreError, match="Unknown metric"):
        learning_curve(calib, test, ["tl-hb"], sizes=[100], metric="nope")


def _validity_by_hand(scores, outcomes, epsilon):
    """V(eps) and the conditional indicator of Gupta & Ramdas (2021, Sec. 2.1 and 4) for a
    predictor with discrete outputs, from the definition, in exact rational arithmetic.

    The bins are the distinct values h_b of the scores; E_b is the mean outcome of the test
    rows in bin b. V(eps) is the fraction of rows i with |E_b(i) - h_b(i)| <= eps, the
    conditional indicator is 1 when max_b |E_b - h_b| <= eps: loops over rows and thresholds.
    """
    rows_of = {}
    for score, outcome in zip(scores.tolist(), outcomes.tolist(), strict=True):
        rows_of.setdefault(score, []).append(outcome)
    gap = {h: abs(Fraction(sum(os)) / len(os) - Fraction(h)) for h, os in rows_of.items()}
    validity, conditional = [], []
    for e in map(Fraction, epsilon.tolist()):
        validity.append(sum(1 for h in scores.tolist() if gap[h] <= e) / len(scores))
        conditional.append(float(max(gap.values()) <= e))
    return np.array(validity), np.array(conditional)


def test_calibrator_validity_matches_manual_resamples(splits):
    # Reference: each resample refitted by hand, its curves from the definition
    # (_validity_by_hand) on the confidence view written out (max probability; correct when
    # the first argmax is the label). Exact, but for the float mean of 3 resamples: a single
    # row counted otherwise moves V by 1/1500, far above atol.
    data, _ = splits
    curve = calibrator_validity(data, "conf-hb", n_calib=800, n_test=500, n_resamples=3, seed=9)
    rng = np.random.default_rng(9)
    eps = np.linspace(0, 0.2, 201)
    vals, conds = [], []
    for _ in range(3):
        order = rng.permutation(data.n_samples)
        calib, test = data.subset(np.sort(order[:800])), data.subset(np.sort(order[800:1300]))
        out = make_calibrator("conf-hb").fit(calib).transform(test)
        correct = (out.probs.argmax(axis=1) == out.labels).astype(float)
        a, b = _validity_by_hand(out.probs.max(axis=1), correct, eps)
        vals.append(a)
        conds.append(b)
    np.testing.assert_allclose(curve.validity, np.mean(vals, axis=0), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(curve.conditional, np.mean(conds, axis=0))
    assert 0 < curve.validity[100] < 1  # the grid's middle sees valid and invalid rows
    assert (curve.conditional <= curve.validity + 1e-12).all()
    with pytest.raises(calcore.CalcoreError, match="n_calib \\+ n_test <= 1500"):
        calibrator_validity(data, "conf-hb", n_calib=1400, n_test=200)


def test_random_split_is_seeded_disjoint_and_complete():
    from calcore.evaluation import random_split

    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(3), size=101)
    preds = calcore.Predictions.from_probs(probs, rng.integers(0, 3, size=101))
    calib, test = random_split(preds, test_fraction=0.3, seed=7)
    assert (calib.n_samples, test.n_samples) == (71, 30)
    # every row lands in exactly one split: match rows by their probability vectors
    rows = {tuple(r) for r in probs}
    got = [tuple(r) for r in calib.probs] + [tuple(r) for r in test.probs]
    assert len(got) == 101 and set(got) == rows
    again = random_split(preds, test_fraction=0.3, seed=7)
    np.testing.assert_array_equal(again[1].probs, test.probs)
    other = random_split(preds, test_fraction=0.3, seed=8)
    assert not np.array_equal(other[1].probs, test.probs)
    with pytest.raises(calcore.CalcoreError, match="test_fraction"):
        random_split(preds, test_fraction=1.0)


def test_calibrator_validity_per_class_matches_the_fixed_split_curve():
    # One resample: calibrator_validity's split is rng.permutation(n) with the seed; refit on
    # that split by hand and read the predicted class's curve with validity_curve.
    rng = np.random.default_rng(5)
    probs = rng.dirichlet([0.5, 0.5, 0.5], size=900)
    labels = np.array([rng.choice(3, p=p**0.5 / (p**0.5).sum()) for p in probs])
    data = calcore.Predictions.from_probs(probs, labels, class_names=("a", "b", "c"))
    eps = np.linspace(0, 0.2, 21)
    got = calibrator_validity(
        data, "tl-hb", n_calib=450, n_test=450, n_resamples=1, view="top-label", group=1,
        epsilon=eps, seed=3,
    )  # fmt: skip
    order = np.random.default_rng(3).permutation(900)
    calib, test = data.subset(np.sort(order[:450])), data.subset(np.sort(order[450:]))
    out = make_calibrator("tl-hb").fit(calib).transform(test)
    expected = calcore.validity_curve(
        out, view="top-label", group=1, n_resamples=1, epsilon=eps, binning="unique"
    )
    np.testing.assert_allclose(got.validity, expected.validity, rtol=0, atol=1e-15)
    np.testing.assert_allclose(got.conditional, expected.conditional, rtol=0, atol=1e-15)
    # and from the definition: the top-label bins of class 1 are the rows predicted as b,
    # binned by their top probability
    predicted_b = out.probs.argmax(axis=1) == 1
    v, c = _validity_by_hand(
        out.probs.max(axis=1)[predicted_b], (out.labels[predicted_b] == 1).astype(float), eps
    )
    np.testing.assert_allclose(got.validity, v, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got.conditional, c)
    assert got.n_resamples == 1 and got.group.endswith("[b]")
    with pytest.raises(calcore.CalcoreError, match="class index"):
        calibrator_validity(data, "tl-hb", n_calib=450, n_test=450, group=3)


def test_a_report_combined_from_metric_subsets_equals_one_evaluate(splits):
    _, test = splits
    whole = calcore.evaluate(test, n_resamples=20, seed=3, bins=10)
    free = calcore.evaluate(test, n_resamples=20, seed=3, metrics=calcore.BIN_FREE_METRICS)
    binned_keys = [k for k in calcore.METRICS if k not in calcore.BIN_FREE_METRICS]
    binned = calcore.evaluate(test, n_resamples=20, seed=3, bins=10, metrics=binned_keys)
    both = binned.combined_with(free)
    assert both.metrics == whole.metrics
    for key, iv in whole.intervals.items():
        assert (both.intervals[key].low, both.intervals[key].high) == (iv.low, iv.high), key
    with pytest.raises(calcore.CalcoreError, match="same rows, classes, seed and resamples"):
        binned.combined_with(calcore.evaluate(test, n_resamples=20, seed=4))


def test_learning_curves_combined_per_method_equal_one_joint_call(splits):
    calib, test = splits
    options = dict(sizes=[40, 200], n_repeats=2, seed=5)
    joint = learning_curve(calib, test, ["ts", "tl-hb"], **options)
    apart = [learning_curve(calib, test, [m], **options) for m in ("ts", "tl-hb")]
    both = calcore.LearningCurve.combine(apart)
    assert both.methods == joint.methods
    np.testing.assert_array_equal(both.mean, joint.mean)
    np.testing.assert_array_equal(both.accuracy_std, joint.accuracy_std)
    other = learning_curve(calib, test, ["tl-hb"], sizes=[40, 100], n_repeats=2, seed=5)
    with pytest.raises(calcore.CalcoreError, match="differ in sizes"):
        calcore.LearningCurve.combine([apart[0], other])
    with pytest.raises(calcore.CalcoreError, match="a method appears twice"):
        calcore.LearningCurve.combine([apart[0], apart[0]])


def test_comparison_from_reports_ranks_ties_and_directions(splits):
    _, test = splits
    out = make_calibrator("ts").fit(splits[0]).transform(test)
    reports = {UNCALIBRATED: calcore.evaluate(test), "ts": calcore.evaluate(out)}
    gains = {"ts": calcore.calibration_gain(test, out, injective_accuracy_preserving=True)}
    c = calcore.Comparison.from_reports(reports, gains)
    assert c.methods == (UNCALIBRATED, "ts") and c.values["ts"]["calibration_gain"].estimate > 0
    # temperature scaling keeps the argmax: accuracy ties, and both methods are best
    assert c.best_methods("accuracy") == {UNCALIBRATED, "ts"}
    assert c.best("accuracy") == UNCALIBRATED  # the first of ties
    assert c.best("calibration_gain") == "ts"  # higher is better for the gain
    assert c.best("top_label_ece") == "ts"
    assert c.notes["ts"][-1].startswith("calibration gain: exact")
    with pytest.raises(calcore.CalcoreError, match="No calibration gain for"):
        calcore.Comparison.from_reports(reports, {})
    with pytest.raises(calcore.CalcoreError, match="must start with"):
        calcore.Comparison.from_reports({"ts": reports["ts"]}, gains)
    # streamed reports come without gains: no gain for anyone, the rest unchanged
    no_gain = calcore.Comparison.from_reports(reports, None)
    assert all(no_gain.values[m]["calibration_gain"] is None for m in no_gain.methods)
    assert no_gain.best("top_label_ece") == "ts" and not no_gain.best_methods("calibration_gain")
    assert no_gain.values["ts"]["conf_ece"] == c.values["ts"]["conf_ece"]


def test_calibrator_info_says_what_a_method_applies_and_outputs():
    info = calcore.CALIBRATORS
    assert info["tl-hb"].binary_method == "hb" and info["hb"].binary_method == "hb"
    assert info["projection-hb"].binary_method is None and info["ts"].binary_method is None
    assert info["cw-platt"].binary_method == "platt"
    assert info["hb"].discrete_output and info["projection-hb"].discrete_output
    assert not info["ts"].discrete_output and not info["iso"].discrete_output
