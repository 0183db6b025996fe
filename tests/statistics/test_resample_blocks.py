"""Replicates computed all at once equal the plain estimators run replicate by replicate.

The KDE-ECE replicates come from per-cell kernel moments weighted by every resample's
row counts in one sparse product, and are read at the grid by one shared window operator
(:mod:`calcore.statistics.kde_cells`); the calibration test's redrawn KDE sums keep the
all-points moments once. The references here are independent of all that: the direct
kernel estimator :func:`calcore.kde_ece` on each resample's rows (each row repeated as
often as the resample drew it), with the full sample's bandwidths.
"""

from __future__ import annotations

import numpy as np
import pytest

import calcore
from calcore.evaluation.report_statistics import report_kde_specs
from calcore.statistics import CalibrationStatistics, LabelRedraws, kde_cells
from calcore.statistics.replicates import resample_counts


def _preds(n_rows, n_classes, seed):
    sim = calcore.dirichlet_simulator(n_classes, miscalibration="overconfident")
    return calcore.simulate_predictions(sim, n_rows, seed=seed).preds


def _plain_kde_replicates(preds, counts, key):
    """Each resample's KDE-ECE by the direct estimator on its repeated rows."""
    spec = report_kde_specs(
        preds, confidence=key == "kde_ece", classwise=key == "kde_ece_classwise"
    )[key]
    out = []
    for row_counts in counts.astype(np.int64):
        rows = np.repeat(np.arange(preds.n_samples), row_counts)
        if key == "kde_ece":
            scores, hits = preds.confidence[rows], preds.predicted[rows] == preds.labels[rows]
            out.append(calcore.kde_ece(scores, hits, bandwidth=spec.layouts[0].bandwidth))
            continue
        per_class = [
            calcore.kde_ece(
                preds.probs[rows, c], preds.labels[rows] == c, bandwidth=layout.bandwidth
            )
            for c, layout in enumerate(spec.layouts)
        ]
        out.append(np.mean(per_class))
    return np.array(out)


@pytest.mark.parametrize("key", ["kde_ece", "kde_ece_classwise"])
def test_kde_replicates_equal_the_plain_estimator_on_each_resample(key):
    preds = _preds(400, 4, seed=3)
    report = calcore.evaluate(preds, n_resamples=9, seed=5, metrics=[key])
    counts = resample_counts(preds.n_samples, 9, seed=5)
    want = _plain_kde_replicates(preds, counts, key)
    assert report.intervals[key].n_resamples == 9
    np.testing.assert_allclose(report.replicates[key], want, rtol=0, atol=1e-11)
    assert np.ptp(want) > 1e-3  # the resamples differ: the check can fail


def test_every_class_wise_kde_resample_is_used_when_the_work_is_allowed():
    preds = _preds(300, 3, seed=1)
    capped = calcore.evaluate(
        preds, n_resamples=40, seed=2, kde_max_work=1, metrics=["kde_ece_classwise"]
    )
    full = calcore.evaluate(preds, n_resamples=40, seed=2, metrics=["kde_ece_classwise"])
    assert capped.intervals["kde_ece_classwise"].n_resamples == 25
    assert full.intervals["kde_ece_classwise"].n_resamples == 40
    # the first resamples are the same draws either way
    np.testing.assert_allclose(
        capped.replicates["kde_ece_classwise"][:25],
        full.replicates["kde_ece_classwise"][:25],
        rtol=0,
        atol=1e-15,
    )


@pytest.mark.parametrize("key", ["kde_ece", "kde_ece_classwise"])
def test_redrawn_kde_sums_share_the_all_points_moments(key):
    preds = _preds(500, 5, seed=4)
    specs = report_kde_specs(
        preds, confidence=key == "kde_ece", classwise=key == "kde_ece_classwise"
    )
    data = CalibrationStatistics.empty(preds.class_names, {}, specs)
    data.update(preds)
    redraws = LabelRedraws(preds.class_names, {}, specs, redraws=range(6), seed=0)
    redraws.update(preds, np.arange(preds.n_samples))
    null = redraws.statistics(data)
    for sums, observed in zip(null.kde[key], data.kde[key], strict=True):
        assert sums.shared_all is not None
        assert np.array_equal(sums.dense(observed.moments.shape[-1])[:, 0], np.broadcast_to(
            observed.moments[0], (6,) + observed.moments[0].shape))  # fmt: skip
    batched = np.atleast_2d(null.kde_ece(key).T).T  # (R,) or (R, L)
    # reference: every replicate's full moments, written out and evaluated one at a time
    one_by_one = np.array(
        [
            [
                kde_cells.kde_ece_from_sums(layout, kde_cells.KDESums(s.full_moments()[r], s.cells))
                for layout, s in zip(specs[key].layouts, null.kde[key], strict=True)
            ]
            for r in range(6)
        ]
    )
    np.testing.assert_allclose(batched.reshape(one_by_one.shape), one_by_one, rtol=0, atol=1e-13)
    assert np.ptp(one_by_one) > 1e-4
