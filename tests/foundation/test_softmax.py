"""calcore.foundation.softmax: the blocked log-softmax equals scipy's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax

import calcore
from calcore.foundation import softmax as _softmax


@pytest.mark.parametrize(
    ("shape", "scale"),
    [((1, 1), 1.0), ((5, 1000), 300.0), ((70_000, 20), 50.0), ((4_097, 256), 1e-3)],
)
def test_blocked_log_softmax_is_scipys(shape, scale, monkeypatch):
    monkeypatch.setattr(_softmax, "_BLOCK_VALUES", 4096)  # many blocks, ragged last block
    z = np.random.default_rng(3).standard_normal(shape) * scale
    np.testing.assert_array_equal(_softmax.log_softmax_rows(z), log_softmax(z, axis=1))


def test_from_logits_probabilities_are_the_softmax():
    z = np.array([[0.0, 0.0], [800.0, -800.0], [1.0, 2.0]])
    preds = calcore.Predictions.from_logits(z, [0, 0, 1])
    e = np.exp(1.0)
    expected = np.array([[0.5, 0.5], [1.0, 0.0], [e / (e + e * e), e * e / (e + e * e)]])
    np.testing.assert_allclose(preds.probs, expected, rtol=1e-15, atol=0)
