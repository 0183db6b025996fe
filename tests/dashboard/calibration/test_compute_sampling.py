"""compute: the resampling views work on a seeded sample of large data, and say so."""

from __future__ import annotations

import numpy as np

import calcore
from dashboard.calibration import compute


def _preds(n):
    rng = np.random.default_rng(1)
    p = rng.random(n)
    return calcore.Predictions.from_probs(np.column_stack([1 - p, p]), rng.integers(0, 2, n))


def test_small_data_is_used_whole_and_nothing_is_said():
    preds = _preds(500)
    assert compute.sampled_rows(preds, limit=500) is preds
    assert compute.sample_note(500, limit=500) is None


def test_large_data_gives_a_seeded_ordered_sample_and_a_note():
    preds = _preds(1_000)
    a = compute.sampled_rows(preds, limit=300)
    b = compute.sampled_rows(preds, limit=300)
    assert a.n_samples == 300
    np.testing.assert_array_equal(a.probs, b.probs)  # same seed, same rows
    rows = [int(np.flatnonzero(preds.probs[:, 1] == v)[0]) for v in a.probs[:, 1]]
    assert rows == sorted(rows) and len(set(rows)) == 300  # rows of the data, in order
    note = compute.sample_note(1_000, limit=300)
    assert "sample of 300 of the 1,000 rows (seed 0)" in note


def test_learning_sizes_stop_at_the_sample():
    sizes = compute.learning_sizes(5_000_000)
    assert max(sizes) == compute.RESAMPLING_MAX_ROWS and min(sizes) == 100
