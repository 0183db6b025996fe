"""Binned metrics of every replicate at once equal the plain metric on each replicate.

:func:`calcore.evaluation.report_statistics.replicate_values` evaluates each binned metric
of all replicates in one numpy expression over the (replicates x cells) sums
(``MetricSpec.from_replicate_bins``). The references are the plain metric functions
(:func:`calcore.confidence_ece` and friends) called on each replicate's row weights, one
replicate at a time (equal-width bins, which a reweighting leaves where they are), and,
for the equal-mass ACE/TACE whose bins the bootstrap keeps from the full sample, the
one-sample ``from_bins`` on each replicate's statistics.
"""

from __future__ import annotations

import numpy as np
import pytest

import calcore
from calcore.evaluation.report_statistics import (
    replicate_values,
    report_cell_specs,
    statistics_bins,
)
from calcore.metrics.registry import METRICS
from calcore.statistics import CalibrationStatistics
from calcore.statistics.replicates import resample_counts

TOL = 1e-12

# metric key -> the plain function and its options (equal-width bins: fixed by the bins)
PLAIN = {
    "conf_ece": (calcore.confidence_ece, {}),
    "conf_ece_l2": (calcore.confidence_ece, {"p": 2}),
    "conf_mce": (calcore.confidence_mce, {}),
    "top_label_ece": (calcore.top_label_ece, {}),
    "top_label_ece_l2": (calcore.top_label_ece, {"p": 2}),
    "top_label_mce": (calcore.top_label_mce, {}),
    "classwise_ece": (calcore.classwise_ece, {}),
    "classwise_ece_l2": (calcore.classwise_ece, {"p": 2}),
    "classwise_mce": (calcore.classwise_mce, {}),
    "debiased_ece": (calcore.debiased_ece, {}),
    "accuracy": (calcore.accuracy, {}),
    "nll": (calcore.negative_log_likelihood, {}),
    "brier": (calcore.brier_score, {}),
}


def _preds(n_rows, n_classes, seed):
    sim = calcore.dirichlet_simulator(n_classes, miscalibration="overconfident")
    return calcore.simulate_predictions(sim, n_rows, seed=seed).preds


def _replicates(preds, weights, *, bins, binning="equal-width"):
    specs = report_cell_specs(preds, bins=bins, binning=binning)
    boot = CalibrationStatistics.empty(preds.class_names, specs, {}, replicates=len(weights))
    boot.update(preds, weights=weights)
    return boot, replicate_values(boot)


def _weights(preds, n_resamples, seed, row_weighted):
    w = resample_counts(preds.n_samples, n_resamples, seed)
    if row_weighted:  # non-integer row weights times the counts (float counts)
        w = w * np.random.default_rng(seed + 1).uniform(0.2, 2.0, preds.n_samples)
    return w


@pytest.mark.parametrize(
    ("n_rows", "n_classes", "bins", "row_weighted"),
    [(300, 3, 10, False), (400, 10, 15, True), (60, 4, 15, False), (500, 2, 8, True)],
)
def test_vectorised_replicates_equal_the_plain_metrics(n_rows, n_classes, bins, row_weighted):
    preds = _preds(n_rows, n_classes, seed=n_classes)
    weights = _weights(preds, 7, seed=n_rows, row_weighted=row_weighted)
    _, got = _replicates(preds, weights, bins=bins)
    for key, (function, options) in PLAIN.items():
        kw = dict(options)
        if METRICS[key].takes_binning_scheme:
            kw["bins"] = bins
        want = [function(preds, sample_weight=w, **kw) for w in weights]
        np.testing.assert_allclose(got[key], want, rtol=TOL, atol=TOL, err_msg=key)


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_vectorised_replicates_equal_the_one_sample_formula(binning):
    # every binned metric, ACE and TACE included (bins kept from the full sample)
    preds = _preds(250, 5, seed=3)
    weights = _weights(preds, 6, seed=4, row_weighted=True)
    boot, got = _replicates(preds, weights, bins=6, binning=binning)
    for key, spec in METRICS.items():
        if spec.cells is None or spec.cells not in boot.specs or spec.binary_only:
            continue
        want = [
            spec.from_bins(statistics_bins(boot.replicate(r), spec.cells))
            for r in range(len(weights))
        ]
        np.testing.assert_allclose(got[key], want, rtol=TOL, atol=TOL, err_msg=key)


def test_empty_cells_and_a_replicate_without_rows_of_a_class():
    # 20 rows, 30 bins: most cells empty, and some resamples miss a class entirely
    preds = _preds(20, 3, seed=7)
    weights = _weights(preds, 25, seed=8, row_weighted=False)
    weights[0, preds.labels == 0] = 0.0  # a replicate with no row of label 0
    boot, got = _replicates(preds, weights, bins=30)
    for key, spec in METRICS.items():
        if spec.from_replicate_bins is None or spec.cells not in boot.specs:
            continue
        want = [
            spec.from_bins(statistics_bins(boot.replicate(r), spec.cells))
            for r in range(len(weights))
        ]
        np.testing.assert_allclose(got[key], want, rtol=TOL, atol=TOL, err_msg=key)


def test_replicated_kde_integral_is_bit_for_bit_the_plain_one():
    from calcore.statistics.kde_cells import _ece_integral, _replicated_integral

    rng = np.random.default_rng(0)
    grid = np.linspace(0.0, 1.0, 201)
    for shape in [(201, 30), (201, 1)]:  # one S per replicate, or one shared by all
        s_k = rng.normal(1.0, 1.0, shape)
        s_k[rng.random(shape) < 0.2] = 0.0
        s_yk = rng.normal(0.5, 1.0, (201, 30))
        for order in (1, 2, 1.5):
            want = _ece_integral(grid, s_k, s_yk, order, axis=0)
            assert np.array_equal(_replicated_integral(grid, s_k, s_yk, order), want)


def test_evaluations_of_the_same_rows_and_seed_share_their_counts():
    from calcore.evaluation import evaluator
    from calcore.statistics.replicates import double_resample_counts

    first = evaluator._shared_counts(50, 20, 3)
    assert first is evaluator._shared_counts(50, 20, 3)  # one draw for both
    assert np.array_equal(first, resample_counts(50, 20, 3)) and not first.flags.writeable
    twice = evaluator._shared_counts(50, 20, 3, double=True)
    assert np.array_equal(twice, double_resample_counts(first, 3))
    other = evaluator._shared_counts(50, 20, 4)  # another seed: its own draw
    assert np.array_equal(other, resample_counts(50, 20, 4))
    assert evaluator._shared_counts(50, 20, 3) is not first  # only the last draw is kept
    generator_seeded = evaluator._shared_counts(50, 20, np.random.SeedSequence(1))
    assert generator_seeded.shape == (20, 50)
