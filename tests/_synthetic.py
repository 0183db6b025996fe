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


def calib_test_pair(seed, temperature, *, n_calib=4000, n_test=12000, n_classes=5):
    """A calibration and a test set drawn one after the other from one seeded generator."""
    rng = np.random.default_rng(seed)
    return (
        softmax_synthetic(n_calib, n_classes, rng, temperature),
        softmax_synthetic(n_test, n_classes, rng, temperature),
    )
