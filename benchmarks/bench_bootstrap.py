"""Time of ``calcore.evaluate`` with and without bootstrap intervals.

Prints one JSON object: for the CIFAR-10 test split (10,000 x 10, the bundled
asset) and a synthetic 10,000 x 100 input, the best and median of ``--repeats``
runs of ``evaluate(preds, bins=15, n_bootstrap=B)`` for B = 0 and 200, plus the
resamples each KDE interval got. Targets: <= 1.0 s (10 classes) and <= 3 s
(100 classes) with 200 resamples.

Usage: python benchmarks/bench_bootstrap.py [--repeats 3] [--n-bootstrap 200]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import calcore

sys.path.insert(0, str(Path(__file__).parent))
from bench_metrics import make_input

ASSET = Path(__file__).resolve().parents[1] / "assets" / "cifar10_resnet110.npz"


def timed(preds, n_bootstrap, repeats):
    times, report = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        report = calcore.evaluate(preds, bins=15, n_bootstrap=n_bootstrap, seed=0)
        times.append(time.perf_counter() - t0)
    out = {"best_s": round(min(times), 4), "median_s": round(statistics.median(times), 4)}
    if n_bootstrap:
        out["kde_resamples"] = {
            k: report.intervals[k].n_resamples
            for k in ("kde_ece", "kde_ece_classwise")
            if k in report.intervals
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-bootstrap", type=int, default=200)
    args = parser.parse_args()
    probs32, labels = make_input(10_000, 100)
    inputs = {
        "cifar10_test_10000x10": calcore.io.load_splits(ASSET)["test"],
        "synthetic_10000x100": calcore.Predictions.from_probs(probs32, labels),
    }
    result = {"machine": platform.machine(), "python": platform.python_version()}
    for name, preds in inputs.items():
        result[name] = {
            f"n_bootstrap_{b}": timed(preds, b, args.repeats) for b in (0, args.n_bootstrap)
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
