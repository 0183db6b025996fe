"""evaluate's ``progress``: counts that only grow to a right total, and the same report."""

from __future__ import annotations

import numpy as np
import pytest

import calcore


def _preds(n=600, k=4, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, k)) * 2
    labels = rng.integers(0, k, size=n)
    return calcore.Predictions.from_logits(logits, labels)


def _same(a, b) -> None:
    assert a.metrics.keys() == b.metrics.keys()
    for k, v in a.metrics.items():
        w = b.metrics[k]
        assert (v is None and w is None) or v == w or (np.isnan(v) and np.isnan(w)), k
    assert a.intervals == b.intervals
    if a.calibration_test is None:
        assert b.calibration_test is None
    else:
        assert a.calibration_test.p_values == b.calibration_test.p_values
    assert a.notes == b.notes


@pytest.mark.parametrize(
    ("options", "passes"),
    [
        ({}, 3),  # bootstrap, double bootstrap (iterated binned intervals), test
        ({"test_calibration": False}, 2),
        ({"metrics": calcore.BIN_FREE_METRICS}, 2),  # no binned errors: no double bootstrap
        ({"metrics": calcore.BIN_FREE_METRICS, "test_calibration": False}, 1),
        ({"interval_method": "percentile"}, 2),
    ],
)
def test_progress_counts_up_to_the_resamples_of_every_pass(options, passes):
    preds = _preds()
    calls = []
    with_progress = calcore.evaluate(
        preds, n_resamples=40, seed=3, progress=lambda d, t: calls.append((d, t)), **options
    )
    assert calls[0] == (0, 40 * passes)
    assert calls[-1] == (40 * passes, 40 * passes)
    assert {t for _, t in calls} == {40 * passes}
    done = [d for d, _ in calls]
    assert done == sorted(done) and len(set(done)) == len(done)  # only grows
    _same(with_progress, calcore.evaluate(preds, n_resamples=40, seed=3, **options))


def test_kde_blocks_move_the_bootstrap_pass_along():
    preds = _preds(k=40)  # class-wise KDE: several blocks of problems
    calls = []
    calcore.evaluate(
        preds, n_resamples=20, metrics=calcore.BIN_FREE_METRICS, test_calibration=False,
        progress=lambda d, t: calls.append((d, t)),
    )  # fmt: skip
    assert len(calls) > 3 and calls[-1] == (20, 20)


def test_no_progress_without_resamples():
    calls = []
    calcore.evaluate(_preds(), progress=lambda d, t: calls.append((d, t)))
    assert calls == []
