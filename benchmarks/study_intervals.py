"""Coverage study: how often each bootstrap interval method contains the true metric.

For every cell of a grid of simulated classifiers (``calcore.simulate``: a miscalibration
kind, a number of classes, a sample size), draw ``--reps`` independent test sets, run
``calcore.evaluate`` with ``--resamples`` bootstrap resamples (one set of replicates and
one grouped jackknife per test set), read every interval method of
:data:`calcore.evaluation.intervals.INTERVAL_METHODS` off the same replicates, and count

- coverage: the share of intervals that contain the true value
  (:func:`calcore.true_calibration_errors`),
- mean width,
- how often the interval excludes its own point estimate, and the coverage of the
  interval extended to contain it.

The metrics studied are those with a known population value: accuracy, conf-, TL- and
CW-ECE (l1), and the KDE-ECEs, whose targets are the conf- and CW-ECE. Every draw is
seeded from the cell and repetition, so a rerun prints the same JSON.

Usage::

    python benchmarks/study_intervals.py [--quick] [--reps N] [--out FILE.json]

``--quick`` is the reduced grid the test suite checks (``tests/test_interval_coverage.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np

import calcore
from calcore.evaluation.intervals import INTERVAL_METHODS, interval_bounds

#: The interval methods, and "default": each metric's method in calcore.METRICS extended
#: to contain the estimate, as calcore.evaluate reports it.
COLUMNS = (*INTERVAL_METHODS, "default")
#: Metric key -> the attribute of TrueCalibrationErrors it estimates.
TARGETS = {
    "accuracy": "accuracy",
    "conf_ece": "conf_ece",
    "top_label_ece": "top_label_ece",
    "classwise_ece": "classwise_ece",
    "kde_ece": "conf_ece",
    "kde_ece_classwise": "classwise_ece",
}
KINDS = ("calibrated", "overconfident", "underconfident", "class-specific", "mix")
#: Accuracy of the simulated classifier per number of classes (reachable by every kind).
ACCURACY = {2: 0.85, 3: 0.75, 10: 0.6, 100: 0.4}
FULL = {"kinds": KINDS, "classes": (2, 3, 10, 100), "sizes": (500, 1000, 5000, 50000)}
QUICK = {"kinds": ("overconfident", "class-specific"), "classes": (3,), "sizes": (1000,)}


def cell_seed(*parts) -> int:
    """A seed that depends on the cell and repetition only (stable across runs)."""
    return zlib.crc32("/".join(map(str, parts)).encode())


def simulator(kind: str, n_classes: int):
    return calcore.dirichlet_simulator(n_classes, miscalibration=kind, accuracy=ACCURACY[n_classes])


def run_cell(kind, n_classes, n, *, reps, resamples, level, truth) -> dict:
    """Coverage, width and exclusion of the estimate per metric and method in one cell."""
    sim = simulator(kind, n_classes)
    keys = [k for k in TARGETS if not (k == "kde_ece_classwise" and n_classes > 100)]
    hits = {k: {m: [] for m in COLUMNS} for k in keys}
    estimates = {k: [] for k in keys}
    for rep in range(reps):
        seed = cell_seed(kind, n_classes, n, rep)
        preds = calcore.simulate_predictions(sim, n, seed=seed).preds
        report = calcore.evaluate(
            preds,
            n_bootstrap=resamples,
            seed=seed,
            metrics=keys,
            interval_method="bca",
            confidence_level=level,
            test_calibration=False,
        )
        for k in keys:
            est = report.metrics[k]
            estimates[k].append(est)
            true = getattr(truth, TARGETS[k])
            for m in COLUMNS:
                low, high = interval_bounds(
                    est,
                    report.replicates[k],
                    method=calcore.METRICS[k].interval_method if m == "default" else m,
                    confidence_level=level,
                    jackknife=report.jackknife[k],
                    bounds=calcore.METRICS[k].bounds,
                    contain_estimate=m == "default",
                )
                covers_extended = min(low, est) <= true <= max(high, est)
                hits[k][m].append(
                    (low <= true <= high, high - low, not low <= est <= high, covers_extended)
                )
    out = {}
    for k in keys:
        true = getattr(truth, TARGETS[k])
        est = np.asarray(estimates[k])
        out[k] = {
            "truth": true,
            "mean_estimate": float(est.mean()),
            "bias": float(est.mean() - true),
            "methods": {
                m: {
                    "coverage": float(np.mean([h[0] for h in hits[k][m]])),
                    "mean_width": float(np.mean([h[1] for h in hits[k][m]])),
                    "excludes_estimate": float(np.mean([h[2] for h in hits[k][m]])),
                    "coverage_extended_to_estimate": float(np.mean([h[3] for h in hits[k][m]])),
                }
                for m in COLUMNS
            },
        }
    return out


def merge_results(results: list[dict]) -> dict:
    """One result from runs over parts of the grid (same settings, cells concatenated).

    Runs from before the "default" column existed get it derived: the coverage of the
    metric's default method extended to the estimate was recorded, and an interval that
    contains its estimate never excludes it; its width is then the plain method's (a
    lower bound, marked NaN here rather than guessed).
    """
    first = dict(results[0])
    for r in results:
        for cell in r["cells"]:
            cell.setdefault("reps", r["reps_per_cell"])
    first["cells"] = [c for r in results for c in r["cells"]]
    for cell in first["cells"]:
        for key, entry in cell["metrics"].items():
            if "default" not in entry["methods"]:
                plain = entry["methods"][calcore.METRICS[key].interval_method]
                entry["methods"]["default"] = {
                    "coverage": plain["coverage_extended_to_estimate"],
                    "mean_width": float("nan"),
                    "excludes_estimate": 0.0,
                    "coverage_extended_to_estimate": plain["coverage_extended_to_estimate"],
                }
    first["methods"] = list(COLUMNS)
    first["seconds"] = round(sum(r["seconds"] for r in results), 1)
    return first


def _width(value: float) -> str:
    return "n/a" if np.isnan(value) else f"{value:.4f}"


def summary_markdown(result: dict) -> str:
    """The study as Markdown: per metric and method, coverage over the miscalibrated
    cells (mean, and the worst cell with n >= 1,000), mean width, exclusion of the
    estimate; then the calibrated cells, whose true error is 0."""
    methods = result["methods"]
    lines = [
        "| metric | method | mean coverage | worst cell (n >= 1,000) | mean width | "
        "excludes estimate |",
        "|---|---|---|---|---|---|",
    ]
    mis = [c for c in result["cells"] if c["kind"] != "calibrated"]
    cal = [c for c in result["cells"] if c["kind"] == "calibrated"]
    for key in TARGETS:
        for m in methods:
            rows = [c["metrics"][key]["methods"][m] for c in mis if key in c["metrics"]]
            big = [
                c["metrics"][key]["methods"][m]["coverage"]
                for c in mis
                if key in c["metrics"] and c["n"] >= 1000
            ]
            if not rows:
                continue
            lines.append(
                f"| {key} | {m} | {np.mean([r['coverage'] for r in rows]):.2f} | "
                f"{min(big) if big else float('nan'):.2f} | "
                f"{_width(np.mean([r['mean_width'] for r in rows]))} | "
                f"{np.mean([r['excludes_estimate'] for r in rows]):.2f} |"
            )
    if cal:
        lines += [
            "",
            "Calibrated generators (true error 0): share of intervals that contain 0.",
            "",
            "| metric | " + " | ".join(methods) + " |",
            "|---|" + "---|" * len(methods),
        ]
        for key in TARGETS:
            rows = [c["metrics"][key]["methods"] for c in cal if key in c["metrics"]]
            if rows:
                cov = [np.mean([r[m]["coverage"] for r in rows]) for m in methods]
                lines.append(f"| {key} | " + " | ".join(f"{v:.2f}" for v in cov) + " |")
    lines += [
        "",
        "Per cell, the default interval's coverage (conf / TL / CW / KDE-ECE):",
        "",
        "| kind | classes | n | test sets | conf_ece | top_label_ece | classwise_ece | kde_ece |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in result["cells"]:
        cov = [
            c["metrics"][k]["methods"]["default"]["coverage"]
            for k in ("conf_ece", "top_label_ece", "classwise_ece", "kde_ece")
        ]
        lines.append(
            f"| {c['kind']} | {c['n_classes']} | {c['n']:,} | {c.get('reps', '')} | "
            + " | ".join(f"{v:.2f}" for v in cov)
            + " |"
        )
    return "\n".join(lines) + "\n"


def document(result: dict) -> str:
    """``docs/replications/intervals.md``: what was run, then :func:`summary_markdown`."""
    kinds = sorted({c["kind"] for c in result["cells"]})
    grid = sorted({(c["n_classes"], c["n"]) for c in result["cells"]})
    return (
        "# Do the bootstrap intervals cover the true calibration error?\n\n"
        "Generated by `benchmarks/study_intervals.py` (see its docstring); do not edit by hand.\n"
        f"Dirichlet fake classifiers of `calcore.simulate` ({', '.join(kinds)}), accuracy "
        f"{result['accuracy_per_classes']} by number of classes; (classes, n) cells "
        f"{', '.join(f'({k}, {n:,})' for k, n in grid)}; the test sets per cell are in the "
        f"last table; {result['resamples']} bootstrap resamples, "
        f"{result['confidence_level']:.0%} intervals. The truth is "
        "`calcore.true_calibration_errors` (quadrature); the KDE-ECEs are compared with the "
        "conf- and CW-ECE they estimate. `default` is what `calcore.evaluate` reports: each "
        "metric's `interval_method` extended to contain the estimate.\n\n"
        + summary_markdown(result)
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced grid of the tests")
    parser.add_argument("--reps", type=int, default=100, help="test sets per cell")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--kinds", nargs="*", default=None)
    parser.add_argument("--classes", nargs="*", type=int, default=None)
    parser.add_argument("--sizes", nargs="*", type=int, default=None)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument(
        "--summarize",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="merge earlier runs and print their Markdown document (with --out FILE: also "
        "write FILE.md and FILE.json) instead of running",
    )
    args = parser.parse_args(argv)
    if args.summarize:
        merged = merge_results([json.loads(p.read_text()) for p in args.summarize])
        text = document(merged)
        if args.out:
            args.out.with_suffix(".json").write_text(json.dumps(merged, indent=1) + "\n")
            args.out.with_suffix(".md").write_text(text)
        print(text, end="")
        return 0
    grid = dict(QUICK if args.quick else FULL)
    for name in ("kinds", "classes", "sizes"):
        if getattr(args, name):
            grid[name] = tuple(getattr(args, name))
    cells = []
    started = time.perf_counter()
    for kind in grid["kinds"]:
        for n_classes in grid["classes"]:
            truth = calcore.true_calibration_errors(simulator(kind, n_classes))
            for n in grid["sizes"]:
                t0 = time.perf_counter()
                metrics = run_cell(
                    kind,
                    n_classes,
                    n,
                    reps=args.reps,
                    resamples=args.resamples,
                    level=args.level,
                    truth=truth,
                )
                cells.append(
                    {"kind": kind, "n_classes": n_classes, "n": n, "reps": args.reps,
                     "metrics": metrics}
                )  # fmt: skip
                print(
                    f"{kind} L={n_classes} n={n}: {time.perf_counter() - t0:.1f} s",
                    file=sys.stderr,
                )
    result = {
        "study": "bootstrap interval coverage of the true metric",
        "confidence_level": args.level,
        "reps_per_cell": args.reps,
        "resamples": args.resamples,
        "accuracy_per_classes": {str(k): v for k, v in ACCURACY.items()},
        "methods": list(COLUMNS),
        "default_methods": {k: calcore.METRICS[k].interval_method for k in TARGETS},
        "seconds": round(time.perf_counter() - started, 1),
        "cells": cells,
    }
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
