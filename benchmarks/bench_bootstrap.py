"""Time of ``calcore.evaluate`` with and without bootstrap intervals, and of the class-wise KDE-ECE.

Prints one JSON object: for the CIFAR-10 test split (10,000 x 10) and the synthetic
10,000 x 100 test split (``assets/synthetic_wide100.npz``), the best and median wall
and process-CPU times of ``--repeats`` runs of ``evaluate(preds, bins=15,
n_resamples=B)`` for B = 0 and 200 (and 200 without the calibration test, whose cost is
the ratio ``with_test_over_without``), of ``kde_ece_classwise(preds)`` alone, and
the resamples each KDE interval got. The machine may be shared: the load average before and
after is printed, and the CPU time is the steadier number under contention.

Targets (quiet machine): 10,000 x 100: evaluate <= 0.8 s, class-wise KDE-ECE <= 0.3 s,
evaluate with 200 resamples <= 2.5 s; CIFAR-10 with 200 resamples <= 1.0 s.

Scale cases (issue 34, item 1), each in a subprocess of its own so that peak memories do
not mix (``ru_maxrss`` of that process, which holds the no-resample run too):

* ``wide100_every_metric``: 10,000 x 100 (the synthetic test split), every metric and the
  calibration test with ``--n-bootstrap`` resamples, beside the same ``evaluate`` without
  resamples in the same process (target: <= 10x, <= 600 MB peak); ``_all_kde`` the same
  with the class-wise KDE-ECE on all resamples (``kde_max_work`` unbounded);
* ``compare_4_methods``: ``compare`` of ts, tl-hb, n-iso and irm fitted on the CIFAR-10
  calibration split (5,000 rows) and evaluated on the first 5,000 test rows, with and
  without resamples (target: <= 12x).

Each case reports best-of-``--repeats`` wall and CPU times of both runs and their ratio.

Usage: python benchmarks/bench_bootstrap.py [--repeats 5] [--n-bootstrap 200]
       python benchmarks/bench_bootstrap.py --scale-only [--repeats 2]
       python benchmarks/bench_bootstrap.py --case wide100_every_metric  (one case, in-process)
       python benchmarks/bench_bootstrap.py --smoke  (1,000 rows of each input, 10
       resamples, one repeat: checks that the script runs; its figures mean nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import calcore

ASSETS = Path(__file__).resolve().parents[1] / "assets"
#: Rows kept of each input (``--smoke``); None: every row.
SMOKE_ROWS = None


def _split(name: str, split: str, rows: int | None = None):
    """A split of an asset, its first ``rows`` (or :data:`SMOKE_ROWS`) rows when given."""
    preds = calcore.io.load_splits(ASSETS / name)[split]
    rows = min(r for r in (rows, SMOKE_ROWS, preds.n_samples) if r is not None)
    return preds if rows == preds.n_samples else preds.subset(range(rows))


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
            lambda b=b: calcore.evaluate(preds, bins=15, n_resamples=b, seed=0), repeats
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
            preds, bins=15, n_resamples=n_bootstrap, seed=0, test_calibration=False
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


def _ratio(slow, fast):
    return {
        clock: round(slow[clock]["best_s"] / max(fast[clock]["best_s"], 1e-9), 2)
        for clock in ("wall", "cpu")
    }


def _wide100_case(n_bootstrap, repeats, *, all_kde):
    preds = _split("synthetic_wide100.npz", "test")
    calcore.evaluate(preds, bins=15)  # warm-up (imports, caches)
    base, _ = timed(lambda: calcore.evaluate(preds, bins=15), repeats)
    extra = {"kde_max_work": 10**15} if all_kde else {}
    boot, report = timed(
        lambda: calcore.evaluate(preds, bins=15, n_resamples=n_bootstrap, seed=0, **extra),
        repeats,
    )
    return {
        "rows_x_classes": [preds.n_samples, preds.n_classes],
        "evaluate_no_resamples": base,
        f"evaluate_n_bootstrap_{n_bootstrap}_with_test": boot,
        "ratio": _ratio(boot, base),
        "kde_resamples": {
            k: report.intervals[k].n_resamples
            for k in ("kde_ece", "kde_ece_classwise")
            if k in report.intervals
        },
        "tested_metrics": sorted(report.calibration_test.p_values),
    }


def _compare_case(n_bootstrap, repeats):
    calib = _split("cifar10_resnet110.npz", "calib")
    test = _split("cifar10_resnet110.npz", "test", 5000)
    methods = ["ts", "tl-hb", "n-iso", "irm"]
    calcore.compare(calib, test, methods)  # warm-up
    base, _ = timed(lambda: calcore.compare(calib, test, methods), repeats)
    boot, _ = timed(
        lambda: calcore.compare(calib, test, methods, n_resamples=n_bootstrap, seed=0), repeats
    )
    return {
        "calib_test_classes": [calib.n_samples, test.n_samples, test.n_classes],
        "methods": methods,
        "compare_no_resamples": base,
        f"compare_n_bootstrap_{n_bootstrap}": boot,
        "ratio": _ratio(boot, base),
    }


CASES = {
    "wide100_every_metric": lambda b, r: _wide100_case(b, r, all_kde=False),
    "wide100_every_metric_all_kde": lambda b, r: _wide100_case(b, r, all_kde=True),
    "compare_4_methods": _compare_case,
}


def run_case(name, n_bootstrap, repeats) -> dict:
    """One scale case in this process, with the process's peak resident memory."""
    out = CASES[name](n_bootstrap, repeats)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out["peak_rss_mb"] = round(peak_kb / 1024, 1)
    return out


def scale_cases(n_bootstrap, repeats) -> dict:
    """Every scale case, each in a fresh subprocess (its own peak memory)."""
    out = {}
    smoke = ["--smoke"] if SMOKE_ROWS is not None else []
    for name in CASES:
        done = subprocess.run(
            [sys.executable, __file__, "--case", name, "--n-bootstrap", str(n_bootstrap),
             "--repeats", str(repeats), *smoke],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        out[name] = json.loads(done.stdout)
    return out


def main(argv=None) -> None:
    global SMOKE_ROWS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-bootstrap", type=int, default=200)
    parser.add_argument("--case", choices=sorted(CASES), help="run one scale case here")
    parser.add_argument("--scale-only", action="store_true", help="the scale cases only")
    parser.add_argument("--smoke", action="store_true", help="1,000 rows, 10 resamples, 1 run")
    args = parser.parse_args(argv)
    if args.smoke:
        SMOKE_ROWS, args.n_bootstrap, args.repeats = 1_000, 10, 1
    if args.case:
        print(json.dumps(run_case(args.case, args.n_bootstrap, args.repeats), indent=2))
        return
    result = {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    if not args.scale_only:
        inputs = {
            "cifar10_test_10000x10": _split("cifar10_resnet110.npz", "test"),
            "synthetic_wide100_test_10000x100": _split("synthetic_wide100.npz", "test"),
        }
        for name, preds in inputs.items():
            calcore.evaluate(preds, bins=15)  # warm-up (imports, caches)
            result[name] = bench(preds, args.n_bootstrap, args.repeats)
    result["scale_cases"] = scale_cases(args.n_bootstrap, args.repeats)
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
