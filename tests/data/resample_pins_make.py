"""Pinned resampling results: intervals, replicates and calibration-test values for fixed seeds.

Run from the repository root (``python tests/data/resample_pins_make.py``) to regenerate
``tests/data/resample_pins.json``. The file was written by the engine as it stood before
the blocked replicate products (issue 34, item 1), so ``tests/test_resample_pins.py``
checks that the faster engine gives the same numbers (to 1e-12) for the same seeds.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import calcore

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "resample_pins.json"

#: (name, asset, split, rows, evaluate options)
CASES = (
    ("cifar10_1500", "cifar10_resnet110.npz", "test", 1500, {"n_resamples": 120, "seed": 3}),
    ("wide100_800", "synthetic_wide100.npz", "test", 800, {"n_resamples": 60, "seed": 5}),
    ("credit_2000", "credit_default_logreg.npz", "test", 2000, {"n_resamples": 100, "seed": 7}),
    (
        "overconfident_bca_900",
        "synthetic_overconfident.npz",
        "test",
        900,
        {"n_resamples": 80, "seed": 11, "interval_method": "bca"},
    ),
)
#: Replicate indices pinned (besides the mean of all).
PICKS = (0, 1, 17, 40)


def _num(x):
    x = float(x)
    return None if not np.isfinite(x) else x


def _picks(values):
    values = np.asarray(values, dtype=np.float64)
    return {
        "mean": _num(np.nanmean(values)) if np.isfinite(values).any() else None,
        "at": [_num(values[i]) for i in PICKS if i < values.size],
        "size": int(values.size),
    }


def preds_of(asset: str, split: str, rows: int):
    return calcore.io.load_splits(ROOT / "assets" / asset)[split].subset(range(rows))


def compute(name: str) -> dict:
    _, asset, split, rows, options = next(c for c in CASES if c[0] == name)
    report = calcore.evaluate(preds_of(asset, split, rows), bins=15, **options)
    out = {
        "intervals": {
            k: [_num(v.low), _num(v.high), int(v.n_resamples)]
            for k, v in sorted(report.intervals.items())
        },
        "replicates": {k: _picks(v) for k, v in sorted(report.replicates.items())},
        "double_replicates": {k: _picks(v) for k, v in sorted(report.double_replicates.items())},
        "jackknife": {k: _picks(v) for k, v in sorted(report.jackknife.items())},
    }
    test = report.calibration_test
    if test is not None:
        out["p_values"] = {k: _num(v) for k, v in sorted(test.p_values.items())}
        out["null_values"] = {k: _picks(v) for k, v in sorted(test.null_values.items())}
    return out


def compute_compare() -> dict:
    calib = preds_of("cifar10_resnet110.npz", "calib", 1000)
    test = preds_of("cifar10_resnet110.npz", "test", 1200)
    comparison = calcore.compare(calib, test, ["ts", "tl-hb"], n_resamples=50, seed=2)
    verdict = comparison.verdict()
    return {
        "verdict": verdict.as_dict() if hasattr(verdict, "as_dict") else str(verdict),
        "replicates": {
            m: {k: _picks(v) for k, v in sorted(r.items())}
            for m, r in sorted(comparison.replicates.items())
        },
    }


def main() -> None:
    pins = {name: compute(name) for name, *_ in CASES}
    pins["compare_cifar10"] = compute_compare()
    OUT.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
