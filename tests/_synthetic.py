"""Seeded synthetic predictions shared by the calibrator tests."""

import numpy as np

from calcore import Predictions


def softmax_synthetic(n, n_classes, rng, temperature=1.0):
    """Logits z; labels drawn from softmax(z / temperature) (1: calibrated, 2: over-confident)."""
    z = rng.normal(size=(n, n_classes)) * 2.5
    p_true = np.exp(z / temperature)
    p_true /= p_true.sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(p_true, axis=1)).sum(axis=1)
    return Predictions.from_logits(z, np.minimum(labels, n_classes - 1))
