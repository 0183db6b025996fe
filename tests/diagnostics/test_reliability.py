"""Tests of calcore.diagnostics.reliability against brute-force per-bin loops and closed forms.

* bins: equal-width bin k is ``k/B <= h < (k+1)/B`` (Python float edges, 1.0 in the last);
* Wilson interval: ``(k + z^2/2 -+ z sqrt(k (n-k)/n + z^2/4)) / (n + z^2)`` (Wilson 1927),
  an algebraically different form from the implementation's;
* top-label diagram (Gupta & Ramdas 2022, Sec. 2.1):
  ``Delta_b = sum_l n_bl/n_b |acc_bl - conf_bl|``, the point ``conf_b + Delta_b`` if
  ``acc_b > conf_b`` else ``conf_b - Delta_b``, ``TL-ECE = sum_b n_b/n Delta_b``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import calcore
from calcore import CalcoreError, Predictions
from calcore.diagnostics.reliability import (
    classwise_reliability_diagrams,
    reliability_diagram,
    top_label_reliability_diagram,
    wilson_interval,
)

Z = norm.ppf(0.975)

# --------------------------------------------------------------------------- references


def ew_bin(s, n_bins):
    k = 0
    for j in range(n_bins):
        if j / n_bins <= s:
            k = j
    return k


def top(p, y):
    """Confidence, predicted class (lowest index on ties), correctness, by a loop."""
    h, c, o = [], [], []
    for row, label in zip(p.tolist(), y.tolist(), strict=True):
        m = max(row)
        cls = row.index(m)
        h.append(m)
        c.append(cls)
        o.append(float(cls == label))
    return h, c, o


def brute_confidence(p, y, n_bins):
    """Per bin: count, mean confidence, accuracy (NaN when empty)."""
    h, _, o = top(p, y)
    members = [[] for _ in range(n_bins)]
    for i, s in enumerate(h):
        members[ew_bin(s, n_bins)].append(i)
    count = np.array([len(m) for m in members])
    conf = np.array([np.mean([h[i] for i in m]) if m else np.nan for m in members])
    acc = np.array([np.mean([o[i] for i in m]) if m else np.nan for m in members])
    return count, conf, acc


def brute_top_label(p, y, n_bins):
    """Per (bin, class): count, conf, acc; then Delta_b, signed point and the TL-ECE."""
    h, c, o = top(p, y)
    n, n_classes = p.shape
    cnt = np.zeros((n_bins, n_classes), dtype=int)
    conf = np.full((n_bins, n_classes), np.nan)
    acc = np.full((n_bins, n_classes), np.nan)
    for b in range(n_bins):
        for cls in range(n_classes):
            idx = [i for i in range(n) if ew_bin(h[i], n_bins) == b and c[i] == cls]
            cnt[b, cls] = len(idx)
            if idx:
                conf[b, cls] = sum(h[i] for i in idx) / len(idx)
                acc[b, cls] = sum(o[i] for i in idx) / len(idx)
    count, conf_b, acc_b = brute_confidence(p, y, n_bins)
    delta = np.full(n_bins, np.nan)
    signed = np.full(n_bins, np.nan)
    tl = 0.0
    for b in range(n_bins):
        if count[b] == 0:
            continue
        delta[b] = sum(
            cnt[b, cls] / count[b] * abs(acc[b, cls] - conf[b, cls])
            for cls in range(n_classes)
            if cnt[b, cls] > 0
        )
        signed[b] = conf_b[b] + delta[b] if acc_b[b] > conf_b[b] else conf_b[b] - delta[b]
        tl += count[b] / n * delta[b]
    return cnt, conf, acc, delta, signed, tl


def wilson_closed_form(k, n, z=Z):
    if n == 0:
        return math.nan, math.nan
    root = z * math.sqrt(k * (n - k) / n + z * z / 4)
    return (k + z * z / 2 - root) / (n + z * z), (k + z * z / 2 + root) / (n + z * z)


def make_preds(n=600, n_classes=4, seed=0, decimals=None):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n_classes, 0.6), size=n)
    if decimals is not None:
        p = np.round(p, decimals)
        p[:, -1] = 0.0
        p[:, -1] = np.clip(1.0 - p.sum(axis=1), 0.0, None)
        p = p / p.sum(axis=1, keepdims=True)
    # labels drawn from a distorted version of p, so that the model is miscalibrated
    q = p**2 / (p**2).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(n_classes, p=row) for row in q])
    return Predictions.from_probs(p, y, [f"c{j}" for j in range(n_classes)])


PREDS = [make_preds(), make_preds(n=300, n_classes=3, seed=1, decimals=1)]


# --------------------------------------------------------------------------- Wilson


def test_wilson_against_closed_form():
    ks, ns, lows, highs = [], [], [], []
    for n in [1, 2, 3, 5, 10, 37, 100, 1000]:
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            if 0 <= k <= n:
                ks.append(k)
                ns.append(n)
                lo, hi = wilson_closed_form(k, n)
                lows.append(lo)
                highs.append(hi)
    got_lo, got_hi = wilson_interval(np.array(ks), np.array(ns))
    np.testing.assert_allclose(got_lo, np.clip(lows, 0, 1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got_hi, np.clip(highs, 0, 1), rtol=1e-12, atol=1e-15)
    # a known value: 3 successes in 10 -> (0.1078, 0.6032)
    lo, hi = wilson_interval(3, 10)
    assert lo == pytest.approx(0.10779127, abs=1e-8) and hi == pytest.approx(0.60322185, abs=1e-8)


def test_wilson_z_argument():
    lo, hi = wilson_interval(4, 9, z=1.0)
    want = wilson_closed_form(4, 9, z=1.0)
    assert (lo, hi) == pytest.approx(want, rel=1e-12)


def test_wilson_extremes_and_empty():
    n = np.arange(1, 200)
    lo0, hi0 = wilson_interval(np.zeros_like(n), n)
    lon, hin = wilson_interval(n, n)
    np.testing.assert_allclose(lo0, 0.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(hin, 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(hi0, [wilson_closed_form(0, m)[1] for m in n], rtol=1e-12)
    np.testing.assert_allclose(lon, [wilson_closed_form(m, m)[0] for m in n], rtol=1e-12)
    assert ((lo0 >= 0) & (hin <= 1)).all()
    lo, hi = wilson_interval(0, 0)
    assert np.isnan(lo) and np.isnan(hi)


def test_wilson_bounds_exact_at_the_extremes():
    n = np.arange(1, 200)
    lo0, _ = wilson_interval(np.zeros_like(n), n)
    _, hin = wilson_interval(n, n)
    np.testing.assert_array_equal(lo0, 0.0)
    np.testing.assert_array_equal(hin, 1.0)


# --------------------------------------------------------------------------- confidence diagram


@pytest.mark.parametrize("preds", PREDS)
@pytest.mark.parametrize("n_bins", [5, 10, 15])
def test_confidence_diagram_vs_brute_force(preds, n_bins):
    d = reliability_diagram(preds, bins=n_bins)
    count, conf, acc = brute_confidence(preds.probs, preds.labels, n_bins)
    np.testing.assert_array_equal(d.count, count)
    np.testing.assert_allclose(d.confidence, conf, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(d.accuracy, acc, rtol=1e-12, equal_nan=True)
    ok = count > 0
    lo, hi = np.array(
        [
            wilson_closed_form(round(a * c), c) if c else (np.nan, np.nan)
            for a, c in zip(acc, count, strict=True)
        ]
    ).T
    np.testing.assert_allclose(
        d.ci_lower, np.clip(lo, 0, 1), rtol=1e-10, atol=1e-15, equal_nan=True
    )
    np.testing.assert_allclose(
        d.ci_upper, np.clip(hi, 0, 1), rtol=1e-10, atol=1e-15, equal_nan=True
    )
    assert np.isnan(d.ci_lower[~ok]).all() and np.isnan(d.ci_upper[~ok]).all()
    np.testing.assert_array_equal(d.bin_edges, [k / n_bins for k in range(n_bins)] + [1.0])
    ece = sum(count[b] / preds.n_samples * abs(acc[b] - conf[b]) for b in range(n_bins) if ok[b])
    assert d.ece == pytest.approx(ece, rel=1e-12)
    assert d.ece == pytest.approx(calcore.confidence_ece(preds, bins=n_bins), rel=1e-12)
    assert d.n == preds.n_samples and d.view == "confidence" and d.group is None
    assert d.binning == f"equal-width, {n_bins} bins"


def test_confidence_diagram_equal_mass_ece():
    preds = PREDS[0]
    d = reliability_diagram(preds, bins=10, binning="equal-mass")
    assert d.count.sum() == preds.n_samples
    assert set(d.count.tolist()) <= {60}  # 600 distinct confidences, 10 bins
    assert d.ece == pytest.approx(
        calcore.confidence_ece(preds, bins=10, binning="equal-mass"), rel=1e-12
    )
    h = np.sort(preds.confidence)
    np.testing.assert_array_equal(d.lower_edge, h[::60])
    np.testing.assert_array_equal(d.upper_edge, h[59::60])


def test_reliability_diagram_rejects_other_views():
    with pytest.raises(
        CalcoreError, match=r"confidence view; got view='top-label'.*top_label_reliability_diagram"
    ):
        reliability_diagram(PREDS[0], view="top-label")


def test_hand_computed_diagram():
    # h = 0.9, 0.9, 0.6, 0.55; correct = 1, 0, 1, 1; 2 bins [0, .5), [.5, 1]
    p = np.array([[0.9, 0.1], [0.1, 0.9], [0.4, 0.6], [0.55, 0.45]])
    y = np.array([0, 0, 1, 0])
    d = reliability_diagram(Predictions.from_probs(p, y), bins=2)
    np.testing.assert_array_equal(d.count, [0, 4])
    assert np.isnan(d.confidence[0]) and np.isnan(d.accuracy[0])
    assert d.confidence[1] == pytest.approx(0.7375) and d.accuracy[1] == 0.75
    assert d.ece == pytest.approx(0.0125)


# --------------------------------------------------------------------------- top-label diagram


@pytest.mark.parametrize("preds", PREDS)
@pytest.mark.parametrize("n_bins", [4, 10, 15])
def test_top_label_diagram_vs_brute_force(preds, n_bins):
    d = top_label_reliability_diagram(preds, bins=n_bins)
    cnt, conf, acc, delta, signed, tl = brute_top_label(preds.probs, preds.labels, n_bins)
    np.testing.assert_array_equal(d.class_count, cnt)
    np.testing.assert_allclose(d.class_confidence, conf, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(d.class_accuracy, acc, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(
        d.class_gap, np.abs(acc - conf), rtol=1e-10, atol=1e-15, equal_nan=True
    )
    np.testing.assert_allclose(d.delta, delta, rtol=1e-10, atol=1e-15, equal_nan=True)
    np.testing.assert_allclose(d.signed_point, signed, rtol=1e-10, atol=1e-15, equal_nan=True)
    assert d.top_label_ece == pytest.approx(tl, rel=1e-10)
    # with equal-width bins the shared bins are the within-class bins: TL-ECE itself
    assert d.top_label_ece == pytest.approx(calcore.top_label_ece(preds, bins=n_bins), rel=1e-10)
    assert d.top_label_ece >= d.confidence_diagram.ece - 1e-12
    # the confidence diagram beside it
    count, conf_b, acc_b = brute_confidence(preds.probs, preds.labels, n_bins)
    np.testing.assert_array_equal(d.confidence_diagram.count, count)
    np.testing.assert_allclose(d.confidence_diagram.accuracy, acc_b, rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(d.class_count.sum(axis=1), count)
    assert d.class_names == preds.class_names


@pytest.mark.parametrize("preds", PREDS)
def test_per_class_diagrams(preds):
    n_bins = 10
    d = top_label_reliability_diagram(preds, bins=n_bins)
    _, c, _ = top(preds.probs, preds.labels)
    c = np.array(c)
    assert len(d.per_class) == preds.n_classes
    total = 0.0
    for cls, diag in enumerate(d.per_class):
        assert diag.group == preds.class_names[cls] and diag.view == "top-label"
        assert diag.count.sum() == (c == cls).sum()  # class ratio = count.sum() / n
        np.testing.assert_array_equal(diag.count, d.class_count[:, cls])
        np.testing.assert_allclose(
            diag.accuracy, d.class_accuracy[:, cls], rtol=1e-12, equal_nan=True
        )
        np.testing.assert_allclose(
            diag.confidence, d.class_confidence[:, cls], rtol=1e-12, equal_nan=True
        )
        assert diag.n == preds.n_samples
        total += diag.ece
    assert total == pytest.approx(calcore.top_label_ece(preds, bins=n_bins), rel=1e-10)
    assert total == pytest.approx(d.top_label_ece, rel=1e-10)


def test_per_class_diagrams_sum_for_equal_mass():
    preds = PREDS[0]
    d = top_label_reliability_diagram(preds, bins=5, binning="equal-mass")
    total = sum(diag.ece for diag in d.per_class)
    assert total == pytest.approx(
        calcore.top_label_ece(preds, bins=5, binning="equal-mass"), rel=1e-10
    )


def test_bin_breakdown():
    preds = PREDS[1]
    d = top_label_reliability_diagram(preds, bins=10)
    cnt, conf, acc, _, _, _ = brute_top_label(preds.probs, preds.labels, 10)
    for b in range(10):
        bd = d.bin_breakdown(b)
        has = np.flatnonzero(cnt[b] > 0)
        assert list(bd["class"]) == [preds.class_names[j] for j in has]
        np.testing.assert_array_equal(bd["count"], cnt[b, has])
        np.testing.assert_allclose(bd["confidence"], conf[b, has], rtol=1e-12)
        np.testing.assert_allclose(bd["accuracy"], acc[b, has], rtol=1e-12)
        np.testing.assert_allclose(
            bd["gap"], np.abs(acc[b, has] - conf[b, has]), rtol=1e-10, atol=1e-15
        )
        if cnt[b].sum():
            assert (bd["count"] / bd["count"].sum() * bd["gap"]).sum() == pytest.approx(
                d.delta[b], rel=1e-10
            )


def test_paper_example_1_finite_sample():
    """Gupta & Ramdas (2022), Example 1: confidence-calibrated, TL-ECE 0.4.

    x = a: predicts class 0 with h = 0.6, right 20% of the time;
    x = b: predicts class 1 with h = 0.6, always right. Equal halves.
    """
    pa = [0.6, 0.3, 0.1]
    pb = [0.3, 0.6, 0.1]
    p = np.array([pa] * 10 + [pb] * 10)
    y = np.array([0, 0] + [2] * 8 + [1] * 10)
    preds = Predictions.from_probs(p, y)
    d = top_label_reliability_diagram(preds, bins=10)
    b = 6  # 0.6 lies in [0.6, 0.7)
    conf = d.confidence_diagram
    assert conf.count[b] == 20 and conf.count.sum() == 20
    assert conf.confidence[b] == pytest.approx(0.6, abs=1e-12)
    assert conf.accuracy[b] == pytest.approx(
        0.6, abs=1e-12
    )  # the confidence diagram says: calibrated
    assert conf.ece == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(d.class_count[b], [10, 10, 0])
    np.testing.assert_allclose(d.class_accuracy[b, :2], [0.2, 1.0])
    np.testing.assert_allclose(d.class_gap[b, :2], [0.4, 0.4], rtol=1e-12)
    assert d.delta[b] == pytest.approx(0.4, rel=1e-12)
    assert d.top_label_ece == pytest.approx(0.4, rel=1e-12)
    assert calcore.top_label_ece(preds, bins=10) == pytest.approx(0.4, rel=1e-12)
    assert calcore.confidence_ece(preds, bins=10) == pytest.approx(0.0, abs=1e-12)
    # the drawn point is 0.4 away from the diagonal, on one side or the other
    assert abs(d.signed_point[b] - d.confidence_diagram.confidence[b]) == pytest.approx(
        0.4, rel=1e-12
    )
    assert np.isnan(d.delta[:b]).all() and np.isnan(d.signed_point[b + 1 :]).all()


def test_signed_point_sides():
    # bin [0.5, 1]: class 0 under-confident (acc 1 > conf 0.7), class 1 over-confident
    p = np.array([[0.7, 0.3]] * 4 + [[0.2, 0.8]] * 2)
    y = np.array([0, 0, 0, 0, 0, 0])
    d = top_label_reliability_diagram(Predictions.from_probs(p, y), bins=2)
    # conf_b = (4 * .7 + 2 * .8) / 6 = 0.7333, acc_b = 4/6; Delta = 4/6 * .3 + 2/6 * .8 = 0.4667
    assert d.delta[1] == pytest.approx(4 / 6 * 0.3 + 2 / 6 * 0.8)
    assert d.signed_point[1] == pytest.approx(
        (4 * 0.7 + 2 * 0.8) / 6 - d.delta[1]
    )  # acc_b < conf_b
    y2 = np.array([0, 0, 0, 0, 1, 1])
    d2 = top_label_reliability_diagram(Predictions.from_probs(p, y2), bins=2)
    # acc_b = 1 > conf_b: Delta = 4/6 * .3 + 2/6 * .2
    assert d2.signed_point[1] == pytest.approx((4 * 0.7 + 2 * 0.8) / 6 + 4 / 6 * 0.3 + 2 / 6 * 0.2)


# --------------------------------------------------------------------------- class-wise diagrams


@pytest.mark.parametrize("preds", PREDS)
@pytest.mark.parametrize(
    ("binning", "bins"), [("equal-width", 15), ("equal-width", 7), ("equal-mass", 8)]
)
def test_classwise_diagrams_mean_ece(preds, binning, bins):
    diagrams = classwise_reliability_diagrams(preds, bins=bins, binning=binning)
    assert len(diagrams) == preds.n_classes
    mean = np.mean([d.ece for d in diagrams])
    assert mean == pytest.approx(
        calcore.classwise_ece(preds, bins=bins, binning=binning), rel=1e-10
    )
    for cls, d in enumerate(diagrams):
        assert d.group == preds.class_names[cls] and d.view == "class-wise"
        assert d.count.sum() == preds.n_samples
        # brute force of one class's ECE
        s = preds.probs[:, cls]
        o = (preds.labels == cls).astype(float)
        if binning == "equal-width":
            idx = np.array([ew_bin(v, bins) for v in s])
            ece = sum(
                (idx == b).sum() / preds.n_samples * abs(o[idx == b].mean() - s[idx == b].mean())
                for b in range(bins)
                if (idx == b).any()
            )
            assert d.ece == pytest.approx(ece, rel=1e-10)


def test_classwise_diagrams_subset():
    preds = PREDS[0]
    all_d = classwise_reliability_diagrams(preds, bins=10)
    sub = classwise_reliability_diagrams(preds, bins=10, classes=[3, 1])
    assert [d.group for d in sub] == ["c3", "c1"]
    for d, cls in zip(sub, [3, 1], strict=True):
        np.testing.assert_array_equal(d.count, all_d[cls].count)
        assert d.ece == pytest.approx(all_d[cls].ece, rel=1e-12)
