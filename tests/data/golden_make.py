"""Compute the golden values of ``tests/data/golden.json`` from the bundled samples.

Run ``python tests/data/golden_make.py`` after an intended change of a metric, a
calibrator or a sample, and review the diff of ``golden.json`` before committing it.
``tests/test_golden.py`` recomputes the same values with :func:`compute` and compares
them with the committed ones within the tolerances stated in the file.

For each sample (``assets/<name>.npz``, identified by its SHA-256), on the ``test``
rows: every metric of ``calcore.METRICS`` that applies (the measures of binary models
for the binary sample only) with 15 equal-width and 15 equal-mass bins; bootstrap
intervals (50 resamples, seed 0) of four metrics; and for six
calibrators fitted on the ``calib`` rows, the fitted temperature (TS), the metrics
after calibration and a checksum of the calibrated probabilities (column sums and
the first three rows).
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np

import calcore
from calcore.calibrators import make_calibrator

REPO = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "golden.json"
SAMPLES = ("cifar10_resnet110", "credit_default_logreg", "synthetic_overconfident")
CALIBRATORS = ("ts", "vs", "tl-hb", "cw-hb", "conf-iso", "irm")
AFTER_METRICS = ("accuracy", "nll", "brier", "conf_ece", "top_label_ece", "classwise_ece")
INTERVAL_METRICS = ("accuracy", "nll", "top_label_ece", "classwise_ece")

TOLERANCE = {
    "metrics": {
        "rel": 1e-9,
        "abs": 1e-12,
        "why": "closed-form float64 sums; only the summation order may differ (BLAS, numpy)",
    },
    "optimised": {
        "rel": 1e-6,
        "abs": 1e-9,
        "why": "ts and vs are fitted by iterative optimisers whose last digits depend on BLAS "
        "and CPU; ts solves a 1-D convex problem to ~1e-10, vs stops at L-BFGS-B's tolerance",
        "calibrators": ["ts", "vs"],
    },
    "bootstrap": {
        "rel": 1e-9,
        "abs": 1e-12,
        "why": "seeded numpy.random.default_rng resamples are the same on every platform",
    },
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _floats(values) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]


def compute(name: str) -> dict:
    """The golden values of one sample (see the module docstring)."""
    path = REPO / "assets" / f"{name}.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", calcore.CalcoreWarning)
        splits = calcore.load_splits(path)
        calib, test = splits["calib"], splits["test"]
        metrics = {}
        for binning in ("equal-width", "equal-mass"):
            metrics[binning] = {
                key: float(
                    spec.function(test, bins=15, binning=binning)
                    if spec.takes_binning_scheme
                    else spec.function(test)
                )
                for key, spec in calcore.METRICS.items()
                if test.n_classes == 2 or not spec.binary_only
            }
        # Percentile bounds pin the replicates themselves (the default methods are checked
        # against scipy and the textbook formulas in tests/evaluation/test_intervals.py).
        report = calcore.evaluate(
            test, bins=15, n_resamples=50, seed=0, interval_method="percentile"
        )
        intervals = {
            key: [float(report.intervals[key].low), float(report.intervals[key].high)]
            for key in INTERVAL_METRICS
        }
        calibrated = {}
        for method in CALIBRATORS:
            calibrator = make_calibrator(method).fit(calib)
            out = calibrator.transform(test)
            entry = {
                "after": {key: float(calcore.METRICS[key].function(out)) for key in AFTER_METRICS},
                "column_sums": _floats(out.probs.sum(axis=0)),
                "first_rows": _floats(out.probs[:3]),
            }
            if method == "ts":
                entry["temperature"] = float(calibrator.fit_info["temperature"])
            calibrated[method] = entry
    return {
        "sha256": sha256(path),
        "n_test": test.n_samples,
        "n_classes": test.n_classes,
        "metrics": metrics,
        "bootstrap_intervals": intervals,
        "calibrators": calibrated,
    }


def build() -> dict:
    return {
        "about": "Golden values for tests/test_golden.py; regenerate with "
        "tests/data/golden_make.py and review the diff.",
        "tolerance": TOLERANCE,
        "samples": {name: compute(name) for name in SAMPLES},
    }


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
