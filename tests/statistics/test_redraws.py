"""Redrawn labels (calcore.statistics.redraws): each row's label drawn from its own
probabilities at a uniform keyed by its position, and the draws kept for the next test
of the same predictions."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import calcore
from calcore.evaluation.report_statistics import report_cell_specs
from calcore.foundation.keyed_random import row_uniforms
from calcore.statistics import CalibrationStatistics, LabelRedraws
from calcore.statistics.redraws import KEPT_LABELS, KeptLabels, redrawn_labels


def _preds(n_rows, n_classes, seed, *, sharp=1.0):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n_rows, n_classes)) * sharp
    return calcore.Predictions.from_logits(logits, rng.integers(0, n_classes, n_rows))


def _by_inverse_cdf(probs, positions, seed, redraws):
    """Row by row: the first class whose cumulative probability exceeds the uniform."""
    out = np.empty((len(redraws), len(probs)), dtype=np.int64)
    for j, r in enumerate(redraws):
        u = row_uniforms(positions, seed, stream=r + 1)
        for i, p in enumerate(probs):
            cumulative = np.cumsum(p)
            out[j, i] = min(int(np.searchsorted(cumulative, u[i], side="right")), len(p) - 1)
    return out


@pytest.mark.parametrize(("n_classes", "sharp"), [(2, 1.0), (5, 1.0), (40, 0.5), (300, 6.0)])
def test_labels_are_the_inverse_distribution_at_each_rows_uniform(n_classes, sharp):
    # 40 classes: counted; 300 confident classes: the predicted class's step first
    preds = _preds(60, n_classes, 1, sharp=sharp)
    positions = np.arange(100, 160)
    got = redrawn_labels(preds.probs, positions, 7, range(3, 8))
    assert np.array_equal(got, _by_inverse_cdf(preds.probs, positions, 7, range(3, 8)))


@pytest.mark.parametrize("step", [7, 60])  # many chunks on two threads, or one
def test_kept_labels_are_those_drawn_chunk_by_chunk(step):
    preds = _preds(60, 4, 2)
    kept = KeptLabels(1 << 20)
    got = kept.labels(preds, np.arange(60), 3, range(5), step)
    assert np.array_equal(got, _by_inverse_cdf(preds.probs, np.arange(60), 3, range(5)))
    assert not got.flags.writeable
    assert kept.labels(preds, np.arange(60), 3, range(5), step) is got  # drawn once


def test_another_seed_positions_redraws_or_predictions_is_another_draw():
    preds, other = _preds(50, 3, 3), _preds(50, 3, 3)
    kept = KeptLabels(1 << 20)
    first = kept.labels(preds, np.arange(50), 0, range(4), 10)
    for args in [
        (preds, np.arange(50), 1, range(4)),
        (preds, np.arange(1, 51), 0, range(4)),
        (preds, np.arange(50), 0, range(1, 5)),
        (other, np.arange(50), 0, range(4)),  # equal values, another object
    ]:
        again = kept.labels(*args, 10)
        assert again is not first
        assert np.array_equal(again, _by_inverse_cdf(args[0].probs, *args[1:]))


def test_kept_labels_stay_within_their_budget_and_go_with_their_predictions():
    many = [_preds(100, 3, s) for s in range(4)]
    kept = KeptLabels(2 * 100 * 10)  # two draws of 10 redraws x 100 rows, a byte each
    draws = [kept.labels(p, np.arange(100), 0, range(10), 50) for p in many[:2]]
    assert kept.labels(many[0], np.arange(100), 0, range(10), 50) is draws[0]  # now newest
    kept.labels(many[2], np.arange(100), 0, range(10), 50)  # drops many[1]'s, the oldest
    assert kept.labels(many[0], np.arange(100), 0, range(10), 50) is draws[0]
    assert kept.labels(many[1], np.arange(100), 0, range(10), 50) is not draws[1]
    assert sum(labels.nbytes for _, labels in kept._entries.values()) <= kept.max_bytes
    assert kept.labels(many[3], np.arange(100), 0, range(30), 50) is None  # over the budget
    del many, draws
    gc.collect()
    kept.labels(_preds(10, 3, 9), np.arange(10), 0, range(2), 5)
    assert len(kept._entries) == 1  # the dead predictions' draws are gone


def test_tests_with_kept_labels_equal_tests_that_draw_them_again(monkeypatch):
    preds = _preds(3000, 12, 4)  # several chunks at 200 redraws: two threads
    specs = report_cell_specs(preds, bins=10, binning="equal-width", keys={"conf", "top", "cw"})
    data = CalibrationStatistics.empty(preds.class_names, specs)
    data.update(preds)

    def null():
        redraws = LabelRedraws(preds.class_names, specs, {}, redraws=range(200), seed=5)
        redraws.update(preds, np.arange(preds.n_samples))
        return redraws.statistics(data)

    KEPT_LABELS.clear()
    kept_first, kept_again = null(), null()
    monkeypatch.setattr(KEPT_LABELS, "max_bytes", 0)  # nothing kept: drawn per chunk
    drawn = null()
    for key in specs:
        assert np.array_equal(kept_first.cells[key].outcome, drawn.cells[key].outcome)
        assert np.array_equal(kept_again.cells[key].outcome, drawn.cells[key].outcome)
    assert np.array_equal(kept_again.label_weight, drawn.label_weight)
