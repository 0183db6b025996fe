"""The count-vector bootstrap of ``calcore.evaluate`` against brute-force resampling.

The replicates are the statistics engine's sums weighted by the resample counts
(:func:`calcore.evaluation.evaluator.bootstrap_replicates`). For equal-width bins they must equal
``metric(preds.subset(rows))`` on the rows each count vector describes (to ~1e-12); the
KDE replicates must equal ``kde_ece`` on the resampled rows with the full sample's
bandwidth (the stated conditioning).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from _keys import interval_keys  # tests/ is on sys.path

import calcore
from calcore.evaluation.evaluator import _point_metrics, bootstrap_replicates
from calcore.foundation.errors import CalcoreError
from calcore.foundation.kernel_density import kde_ece
from calcore.statistics.kde_cells import KDELayout, KDESums, kde_ece_from_sums
from calcore.statistics.replicates import KDE_MAX_WORK, resample_counts


def _data(n, n_classes, seed, *, ties):
    rng = np.random.default_rng(seed)
    if ties:  # multiples of 0.1: tied rows, tied scores, exact 0 and 1, empty bins
        p = rng.multinomial(10, rng.dirichlet(np.ones(n_classes)), size=n) / 10.0
    else:
        p = rng.dirichlet(np.full(n_classes, 0.5), size=n)
    return calcore.Predictions.from_probs(p, rng.integers(0, n_classes, size=n))


CASES = [(2, False), (2, True), (7, False), (7, True)]

BINNED = {
    "conf_ece": lambda p, b: calcore.confidence_ece(p, bins=b),
    "conf_ece_l2": lambda p, b: calcore.confidence_ece(p, bins=b, p=2),
    "conf_mce": lambda p, b: calcore.confidence_mce(p, bins=b),
    "top_label_ece": lambda p, b: calcore.top_label_ece(p, bins=b),
    "top_label_ece_l2": lambda p, b: calcore.top_label_ece(p, bins=b, p=2),
    "top_label_mce": lambda p, b: calcore.top_label_mce(p, bins=b),
    "classwise_ece": lambda p, b: calcore.classwise_ece(p, bins=b),
    "classwise_ece_l2": lambda p, b: calcore.classwise_ece(p, bins=b, p=2),
    "classwise_mce": lambda p, b: calcore.classwise_mce(p, bins=b),
    "debiased_ece": lambda p, b: calcore.debiased_ece(p, bins=b),
    "accuracy": lambda p, b: calcore.accuracy(p),
    "nll": lambda p, b: calcore.negative_log_likelihood(p),
    "brier": lambda p, b: calcore.brier_score(p),
}


def _rows(w):
    return np.repeat(np.arange(w.size), w.astype(np.int64))


@pytest.mark.parametrize(("n_classes", "ties"), CASES)
@pytest.mark.parametrize("bins", [4, 15])
def test_equal_width_replicates_equal_brute_force(n_classes, ties, bins):
    preds = _data(60, n_classes, 3 + n_classes, ties=ties)
    _, stats = _point_metrics(preds, bins=bins, binning="equal-width", with_kde_classwise=False)
    counts = resample_counts(preds.n_samples, 12, seed=1)
    reps, _ = bootstrap_replicates(preds, stats, counts, kde_max_work=KDE_MAX_WORK)
    for r, w in enumerate(counts):
        sub = preds.subset(_rows(w))
        for key, metric in BINNED.items():
            assert reps[key][r] == pytest.approx(metric(sub, bins), rel=1e-12, abs=1e-13), key


def test_nll_replicates_from_logits_equal_brute_force():
    rng = np.random.default_rng(4)
    preds = calcore.Predictions.from_logits(rng.normal(0, 4, (50, 3)), rng.integers(0, 3, 50))
    _, stats = _point_metrics(preds, bins=5, binning="equal-width", with_kde_classwise=False)
    counts = resample_counts(50, 5, seed=2)
    reps, _ = bootstrap_replicates(preds, stats, counts, kde_max_work=KDE_MAX_WORK)
    for r, w in enumerate(counts):
        sub = preds.subset(_rows(w))
        assert reps["nll"][r] == pytest.approx(calcore.negative_log_likelihood(sub), rel=1e-12)


@pytest.mark.parametrize(("n_classes", "ties"), CASES)
def test_data_dependent_bins_are_conditional_on_the_full_sample(n_classes, ties):
    # With all counts 1 the replicate is the full-sample metric; ACE/TACE use fixed bins.
    preds = _data(80, n_classes, 9, ties=ties)
    for binning, bins in [("equal-mass", 6), ("points-per-bin", 10), ("unique", None)]:
        metrics, stats = _point_metrics(preds, bins=bins, binning=binning, with_kde_classwise=False)
        ones = np.ones((1, preds.n_samples))
        reps, _ = bootstrap_replicates(preds, stats, ones, kde_max_work=KDE_MAX_WORK)
        for key, values in reps.items():
            assert values[0] == pytest.approx(metrics[key], rel=1e-12, abs=1e-13), (binning, key)


def test_counts_are_the_scipy_resamples():
    counts = resample_counts(30, 4, seed=7)
    idx = np.random.default_rng(7).integers(0, 30, (4, 30))
    for w, rows in zip(counts, idx, strict=True):
        np.testing.assert_array_equal(w, np.bincount(rows, minlength=30))
    assert counts.sum(axis=1).tolist() == [30.0] * 4


def _kde_bandwidths(stats):
    conf = stats.kde_specs["kde_ece"].layouts[0].bandwidth
    per_class = [lay.bandwidth for lay in stats.kde_specs["kde_ece_classwise"].layouts]
    return conf, per_class


@pytest.mark.parametrize("ties", [False, True])
def test_kde_replicates_equal_weighted_kde_with_the_full_bandwidth(ties):
    # Stated tolerance: 1e-10 relative against kde_ece on the resampled rows with the full
    # sample's bandwidth; within 15% of the subset metric (which re-derives the bandwidth).
    preds = _data(300, 4, 5, ties=ties)
    counts = resample_counts(preds.n_samples, 6, seed=3)
    _, stats = _point_metrics(preds, bins=15, binning="equal-width", with_kde_classwise=True)
    reps, _ = bootstrap_replicates(preds, stats, counts, kde_max_work=KDE_MAX_WORK)
    h_conf, h_class = _kde_bandwidths(stats)
    for r, w in enumerate(counts):
        rows = _rows(w)
        want = kde_ece(preds.confidence[rows], preds.correct[rows], bandwidth=h_conf)
        assert reps["kde_ece"][r] == pytest.approx(want, rel=1e-10)
        per_class = [
            kde_ece(
                preds.probs[rows, c],
                (preds.labels[rows] == c).astype(float),
                bandwidth=h,
            )
            for c, h in enumerate(h_class)
        ]
        assert reps["kde_ece_classwise"][r] == pytest.approx(np.mean(per_class), rel=1e-10)
        sub = preds.subset(rows)
        assert reps["kde_ece"][r] == pytest.approx(calcore.kde_ece_confidence(sub), rel=0.15)


def test_kde_classwise_point_estimate_equals_standalone():
    preds = _data(500, 3, 8, ties=False)
    metrics, _ = _point_metrics(preds, bins=15, binning="equal-width", with_kde_classwise=True)
    assert metrics["kde_ece_classwise"] == pytest.approx(
        calcore.kde_ece_classwise(preds), rel=1e-12
    )


# (n, classes, ties, seed): tiny n, 2/7/100 classes, ties and exact 0/1 (multiples of 0.1).
KDE_CASES = [
    (2, 2, False, 0),
    (3, 2, True, 1),
    (6, 7, True, 2),
    (40, 2, False, 3),
    (200, 7, True, 4),
    (200, 7, False, 5),
    (300, 100, False, 6),
    (150, 100, True, 7),
]


@pytest.mark.parametrize(("n", "n_classes", "ties", "seed"), KDE_CASES)
def test_kde_batch_point_estimates_equal_kde_ece(n, n_classes, ties, seed):
    # Stated tolerance of the moment form: 1e-10 relative to the exact windowed sums.
    preds = _data(n, n_classes, seed, ties=ties)
    want = [kde_ece(preds.probs[:, c], preds.labels == c) for c in range(n_classes)]
    assert calcore.kde_ece_classwise(preds) == pytest.approx(np.mean(want), rel=1e-10)
    conf = kde_ece(preds.confidence, preds.correct)
    assert calcore.kde_ece_confidence(preds) == pytest.approx(conf, rel=1e-10, abs=1e-15)


def test_kde_batch_constant_and_boundary_scores():
    # Constant scores (bandwidth floor 1e-3: 8001 grid points, ~500 blocks), one-hot rows
    # (every score exactly 0 or 1) and a problem without a single positive outcome.
    rng = np.random.default_rng(0)
    cols = [
        np.full(50, 0.3),
        np.repeat([0.0, 1.0], 25),
        rng.random(50),
        np.concatenate((np.zeros(45), rng.random(5))),
    ]
    outcomes = [
        rng.random(50) < 0.3,
        rng.random(50) < 0.5,
        np.zeros(50, bool),
        rng.random(50) < 0.1,
    ]
    got = []
    for s, o in zip(cols, outcomes, strict=True):
        layout = KDELayout.for_bandwidth(calcore.kde_bandwidth(s))
        sums = KDESums.zeros(layout)
        sums.add(layout, s, o)
        got.append(kde_ece_from_sums(layout, sums))
    want = [kde_ece(s, o) for s, o in zip(cols, outcomes, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize(
    "kw",
    [
        {"order": 2},
        {"bandwidth": 0.05},
        {"order": 1.5, "bandwidth": 0.3},
        {"bandwidth": 1.0},  # widest kernel: every reflected copy of every score
        {"bandwidth": 1e-4, "order": 2},  # narrowest: 80,001 grid points, ~5,000 blocks
        {"classes": [4, 1]},
    ],
)
def test_kde_classwise_options_equal_reference(kw):
    preds = _data(250, 5, 9, ties=True)
    classes = kw.get("classes", range(5))
    opts = {k: v for k, v in kw.items() if k != "classes"}
    want = np.mean([kde_ece(preds.probs[:, c], preds.labels == c, **opts) for c in classes])
    assert calcore.kde_ece_classwise(preds, **kw) == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("kw", [{"order": 0.5}, {"bandwidth": 2.0}, {"bandwidth": True}])
def test_kde_classwise_rejects_what_kde_ece_rejects(kw):
    with pytest.raises(CalcoreError, match="kde_ece"):
        calcore.kde_ece_classwise(_data(30, 3, 1, ties=False), **kw)


def test_kde_replicates_many_classes_equal_reference():
    # 100 classes on 150 rows: many problems without positives in a resample.
    preds = _data(150, 100, 10, ties=False)
    counts = resample_counts(preds.n_samples, 2, seed=4)
    _, stats = _point_metrics(preds, bins=15, binning="equal-width", with_kde_classwise=True)
    reps, used = bootstrap_replicates(preds, stats, counts, kde_max_work=KDE_MAX_WORK)
    _, h_class = _kde_bandwidths(stats)
    assert used["kde_ece_classwise"] == 2
    for r, w in enumerate(counts):
        rows = _rows(w)
        want = [
            kde_ece(preds.probs[rows, c], preds.labels[rows] == c, bandwidth=h)
            for c, h in enumerate(h_class)
        ]
        assert reps["kde_ece_classwise"][r] == pytest.approx(np.mean(want), rel=1e-10, abs=1e-15)


@functools.lru_cache(maxsize=None)
def _small():
    return _data(120, 3, 2, ties=False)


def test_evaluate_is_deterministic_and_intervals_bracket():
    a = calcore.evaluate(_small(), bins=10, n_resamples=40, seed=3)
    b = calcore.evaluate(_small(), bins=10, n_resamples=40, seed=3)
    assert a.intervals == b.intervals
    assert set(a.intervals) == interval_keys(a)
    for key, iv in a.intervals.items():
        assert iv.low <= iv.high, key
    assert any("full sample's bins" in n for n in a.notes)


def test_kde_resample_cap_is_reported():
    report = calcore.evaluate(_small(), bins=10, n_resamples=40, seed=0, kde_max_work=1)
    iv = report.intervals["kde_ece_classwise"]
    assert iv.n_resamples == 25 and np.isfinite(iv.low)
    assert report.intervals["accuracy"].n_resamples == 40
    assert any("first 25 of the 40 resamples" in n for n in report.notes)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_tiny_samples(n):
    preds = calcore.Predictions.from_probs(np.tile([[0.7, 0.3]], (n, 1)), [0] * n)
    report = calcore.evaluate(preds, n_resamples=10)
    if n == 1:
        assert all(np.isnan(iv.low) and iv.n_resamples == 0 for iv in report.intervals.values())
        assert any("fewer than 2 rows" in note for note in report.notes)
    else:
        assert set(report.intervals) == interval_keys(report)
