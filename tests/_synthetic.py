"""Seeded synthetic predictions (and Parquet files of them) shared by several test modules."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

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


def dirichlet_preds(n, n_classes, seed):
    """Probabilities from a Dirichlet(0.7), labels drawn from them (calibrated)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n_classes, 0.7), size=n)
    y = np.array([rng.choice(n_classes, p=row) for row in p])
    return Predictions.from_probs(p, y)


def beta_binary(n, seed):
    """A binary model: P(class 1) from a Beta(0.6, 2), under-predicting (labels at 1.2 p)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 2.0, n)
    y = (rng.random(n) < np.clip(1.2 * p, 0, 1)).astype(np.int64)
    return Predictions.from_probs(np.column_stack([1 - p, p]), y)


def write_parquet_parts(tmp_path, preds, cuts, *, hive=False, row_group_size=37):
    """Binary predictions as several Parquet files (optionally in hive folders)."""
    p1 = preds.probs[:, 1]
    bounds = [0, *cuts, preds.n_samples]
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        folder = tmp_path / (f"day=2026-11-{k + 1:02d}" if hive else "")
        folder.mkdir(parents=True, exist_ok=True)
        table = pa.table({"label": preds.labels[a:b], "p_fraud": p1[a:b]})
        pq.write_table(table, folder / f"part-{k}.parquet", row_group_size=row_group_size)
    (tmp_path / "_SUCCESS").write_text("")


def random_discrete_preds(n=400, n_classes=3, seed=0):
    """A predictor with few distinct outputs (like histogram binning), labels miscalibrated."""
    rng = np.random.default_rng(seed)
    levels = np.array([0.4, 0.55, 0.7, 0.85, 0.95])
    top = rng.choice(levels, size=n)
    cls = rng.integers(0, n_classes, n)
    p = np.tile(((1 - top) / (n_classes - 1))[:, None], (1, n_classes))
    p[np.arange(n), cls] = top
    correct = rng.random(n) < np.clip(top + rng.choice([-0.15, 0.0, 0.1], size=n), 0, 1)
    other = (cls + rng.integers(1, n_classes, n)) % n_classes
    y = np.where(correct, cls, other)
    return Predictions.from_probs(p, y)
