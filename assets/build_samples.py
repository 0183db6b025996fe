"""Regenerate the bundled sample prediction files in ``assets/``.

Usage::

    .venv/bin/python assets/build_samples.py [--data DIR]

``DIR`` is the reference data folder (default: ``assets/reference``, see its README).
Every output is deterministic: fixed seeds, fixed row order. Each file is an
``np.savez_compressed`` archive with

- ``logits`` (float32, CIFAR-10) or ``probs`` (float64) of shape (n, n_classes),
- ``labels`` int64 of shape (n,),
- ``class_names`` unicode array of shape (n_classes,),
- ``split`` unicode array of shape (n,), values ``"calib"`` or ``"test"``.

See ``assets/README.md`` for where each sample comes from.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit

ASSETS = Path(__file__).resolve().parent
REPO = ASSETS.parent

CIFAR10_CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
)  # fmt: skip
CREDIT_LABEL = "default payment next month"
CREDIT_SEED = 20_200_430
SYNTH_SEED = 31_415
MAX_BYTES = 3 * 1024 * 1024
WIDE_SEED = 1000


def default_data_dir() -> Path:
    return REPO / "assets" / "reference"


def _split(n_calib: int, n_test: int) -> np.ndarray:
    return np.array(["calib"] * n_calib + ["test"] * n_test, dtype="<U5")


def _save(name: str, **arrays) -> Path:
    path = ASSETS / name
    np.savez_compressed(path, **arrays)
    size = path.stat().st_size
    if size >= MAX_BYTES:
        raise SystemExit(f"{path} is {size / 2**20:.1f} MB; samples must stay under 3 MB")
    n = len(arrays["labels"])
    print(f"wrote {path.relative_to(REPO)}: {n} rows, {size / 1024:.0f} KiB")
    return path


# -- (a) CIFAR-10 ResNet-110 logits ------------------------------------------------------------
def build_cifar10(data: Path) -> Path:
    d = data / "cifar10"
    val_z = np.load(d / "resnet110_val_logits.npy")
    val_y = np.load(d / "resnet110_val_labels.npy")
    test_z = np.load(d / "resnet110_test_logits.npy")
    test_y = np.load(d / "resnet110_test_labels.npy")
    return _save(
        "cifar10_resnet110.npz",
        logits=np.concatenate([val_z, test_z]).astype(np.float32),  # as published
        labels=np.concatenate([val_y, test_y]).astype(np.int64),
        class_names=np.array(CIFAR10_CLASSES),
        split=_split(len(val_y), len(test_y)),
    )


# -- (b) UCI credit default, L2 logistic regression ---------------------------------------------
def _fit_logistic(x: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """Weights (intercept first) minimising mean log-loss + alpha/2 * ||w[1:]||^2."""
    xb = np.column_stack([np.ones(len(x)), x])
    n = len(y)

    def loss_grad(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = xb @ w
        loss = np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * alpha * w[1:] @ w[1:]
        grad = xb.T @ (expit(z) - y) / n
        grad[1:] += alpha * w[1:]
        return float(loss), grad

    res = minimize(loss_grad, np.zeros(xb.shape[1]), jac=True, method="L-BFGS-B",
                   options={"maxiter": 1000, "gtol": 1e-8})  # fmt: skip
    if not res.success:
        raise RuntimeError(f"logistic regression did not converge: {res.message}")
    return res.x


def build_credit(data: Path, alpha: float = 1e-3) -> Path:
    # Line 1 is a second header (X1..X23, Y); the real header is line 2.
    df = pd.read_csv(data / "credit_default.csv", header=1)
    y = df[CREDIT_LABEL].to_numpy(np.float64)
    x = df.drop(columns=["ID", CREDIT_LABEL]).to_numpy(np.float64)
    order = np.random.default_rng(CREDIT_SEED).permutation(len(df))
    train, rest = order[:10_000], order[10_000:30_000]

    mean, std = x[train].mean(axis=0), x[train].std(axis=0)
    std[std == 0] = 1.0
    xs = (x - mean) / std
    w = _fit_logistic(xs[train], y[train], alpha)
    p = expit(w[0] + xs[rest] @ w[1:])
    people = df.iloc[rest]
    return _save(
        "credit_default_logreg.npz",
        probs=np.column_stack([1.0 - p, p]),
        labels=y[rest].astype(np.int64),
        class_names=np.array(["no default", "default"]),
        split=_split(10_000, 10_000),
        # metadata for slicing, decoded as the data set's description gives the codes
        sex=_decoded(people["SEX"], CREDIT_SEX),
        education=_decoded(people["EDUCATION"], CREDIT_EDUCATION),
        marriage=_decoded(people["MARRIAGE"], CREDIT_MARRIAGE),
        age=people["AGE"].to_numpy(np.int64),
        credit_limit=people["LIMIT_BAL"].to_numpy(np.int64),
    )


# Codes of the UCI description; codes it does not document (EDUCATION 0, 5, 6; MARRIAGE 0)
# are "unknown", a value of its own rather than a missing one.
CREDIT_SEX = {1: "male", 2: "female"}
CREDIT_EDUCATION = {1: "graduate school", 2: "university", 3: "high school", 4: "other"}
CREDIT_MARRIAGE = {1: "married", 2: "single", 3: "other"}


def _decoded(codes: pd.Series, names: dict[int, str]) -> np.ndarray:
    return np.array([names.get(int(c), "unknown") for c in codes])


# -- (c) 3-class synthetic, over-confident -----------------------------------------------------
def build_synthetic(temperature: float = 2.5) -> Path:
    """Scores p ~ Dirichlet(0.6); labels drawn from the flatter p^(1/T), T > 1.

    The true class probabilities are less extreme than the scores, so the model is
    over-confident: accuracy falls below confidence in the high-confidence bins.
    """
    rng = np.random.default_rng(SYNTH_SEED)
    n = 6_000
    probs = rng.dirichlet(np.full(3, 0.6), size=n)
    probs = np.clip(probs, 1e-6, None)
    probs /= probs.sum(axis=1, keepdims=True)
    true = probs ** (1.0 / temperature)
    true /= true.sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(true, axis=1)).sum(axis=1)
    labels = np.minimum(labels, 2).astype(np.int64)
    return _save(
        "synthetic_overconfident.npz",
        probs=probs,
        labels=labels,
        class_names=np.array(["cat", "dog", "rabbit"]),
        split=_split(3_000, 3_000),
    )


# -- (d) 100-class synthetic, CIFAR-100 sized ----------------------------------------------------
def build_wide(sharpness: float = 1.8) -> Path:
    """100 classes, 5,000 calibration + 10,000 test rows of over-confident logits.

    Each row has a latent logit vector ``z = N(0, 1)`` per class plus a margin
    ``N(6, 1.5)`` on its true class, and the label is drawn from ``softmax(z)``, so
    ``softmax(z)`` is calibrated by construction. The "model" reports ``sharpness * z``
    (over-confident for ``sharpness > 1``; temperature scaling should find T close to
    ``sharpness``). Logits are rounded to 0.05 and stored as float16 so the file stays
    small; the loader reads them as float64.
    """
    rng = np.random.default_rng(WIDE_SEED)
    n, n_classes = 15_000, 100
    anchor = rng.integers(0, n_classes, size=n)
    z = rng.standard_normal((n, n_classes))
    z[np.arange(n), anchor] += rng.normal(6.0, 1.5, size=n)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    labels = np.minimum(labels, n_classes - 1).astype(np.int64)
    logits = (np.round(sharpness * z / 0.05) * 0.05).astype(np.float16)
    return _save(
        "synthetic_wide100.npz",
        logits=logits,
        labels=labels,
        class_names=np.array([f"class_{k:02d}" for k in range(n_classes)]),
        split=_split(5_000, 10_000),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data_dir(),
                        help="shared data folder (default: %(default)s)")  # fmt: skip
    parser.add_argument("--only", choices=("cifar10", "credit", "synthetic", "wide"),
                        help="rebuild one sample only")  # fmt: skip
    args = parser.parse_args(argv)
    builders = {
        "cifar10": lambda: build_cifar10(args.data),
        "credit": lambda: build_credit(args.data),
        "synthetic": build_synthetic,
        "wide": build_wide,
    }
    for name, build in builders.items():
        if args.only in (None, name):
            build()


if __name__ == "__main__":
    main()
