"""Time of ``calcore.evaluate`` with and without bootstrap intervals, and of the class-wise KDE-ECE.

Prints one JSON object: for the CIFAR-10 test split (10,000 x 10) and the synthetic
10,000 x 100 test split (``assets/synthetic_wide100.npz``), the best and median wall
and process-CPU times of ``--repeats`` runs of ``evaluate(preds, bins=15,
n_bootstrap=B)`` for B = 0 and 200 (and 200 without the calibration test, whose cost is
the ratio ``with_test_over_without``), of ``kde_ece_classwise(preds)`` alone, and
the resamples each KDE interval got. The machine may be shared: the load average before and
after is printed, and the CPU time is the steadier number under contention.

Targets (quiet machine): 10,000 x 100: evaluate <= 0.8 s, class-wise KDE-ECE <= 0.3 s,
evaluate with 200 resamples <= 2.5 s; CIFAR-10 with 200 resamples <= 1.0 s.

Usage: python benchmarks/bench_bootstrap.py [--repeats 5] [--n-bootstrap 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import calcore

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _stats(values):
    return {"best_s": round(min(values), 4), "median_s": round(statistics.median(values), 4)}


def timed(fn, repeats):
    wall, cpu, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"wall": _stats(wall), "cpu": _stats(cpu)}, out


def bench(preds, n_bootstrap, repeats):
    result = {}
    for b in (0, n_bootstrap):
        times, report = timed(
            lambda b=b: calcore.evaluate(preds, bins=15, n_bootstrap=b, seed=0), repeats
        )
        if b:
            times["kde_resamples"] = {
                k: report.intervals[k].n_resamples
                for k in ("kde_ece", "kde_ece_classwise")
                if k in report.intervals
            }
        result[f"evaluate_n_bootstrap_{b}"] = times
    # the calibration test's share: the same run without it (same seed, same resamples)
    times, _ = timed(
        lambda: calcore.evaluate(
            preds, bins=15, n_bootstrap=n_bootstrap, seed=0, test_calibration=False
        ),
        repeats,
    )
    result[f"evaluate_n_bootstrap_{n_bootstrap}_without_test"] = times
    result["with_test_over_without"] = {
        clock: round(
            result[f"evaluate_n_bootstrap_{n_bootstrap}"][clock]["median_s"]
            / times[clock]["median_s"],
            2,
        )
        for clock in ("wall", "cpu")
    }
    result["kde_ece_classwise"] = timed(lambda: calcore.kde_ece_classwise(preds), repeats)[0]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-bootstrap", type=int, default=200)
    args = parser.parse_args()
    inputs = {
        "cifar10_test_10000x10": calcore.io.load_splits(ASSETS / "cifar10_resnet110.npz")["test"],
        "synthetic_wide100_test_10000x100": calcore.io.load_splits(
            ASSETS / "synthetic_wide100.npz"
        )["test"],
    }
    result = {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    for name, preds in inputs.items():
        calcore.evaluate(preds, bins=15)  # warm-up (imports, caches)
        result[name] = bench(preds, args.n_bootstrap, args.repeats)
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
