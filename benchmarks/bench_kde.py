"""Timing and exactness of calcore.foundation.kernel_density.kde_ece; prints one JSON object.

Scores mimic a deep net's top-label confidences, s = 1 - Beta(0.5, 10) (piled up
near 1), with outcomes o ~ Bernoulli(s^2) (overconfident). Times are the best of
5 runs of ``kde_ece`` with the default (rule-of-thumb) bandwidth and automatic grid.

The ``cell_moments`` section times the per-cell kernel moments of
``calcore.statistics.kde_cells`` (what ``calcore.evaluate``, ``kde_ece_confidence`` and
``kde_ece_classwise`` use) against this exact windowed evaluation, with the largest
relative difference: one problem per sample above, and the 100 class-wise problems of
``assets/synthetic_wide100.npz`` (10,000 x 100 test split).

Run: ``.venv/bin/python benchmarks/bench_kde.py`` (``--smoke``: samples of 300 and 1,000
and 3 of the 100 classes, to check that the script runs; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

import calcore
from calcore.foundation.kernel_density import kde_bandwidth, kde_ece, kde_reliability_curve
from calcore.statistics.kde_cells import KDELayout, KDESums, kde_ece_from_sums

WIDE = Path(__file__).resolve().parents[1] / "assets" / "synthetic_wide100.npz"


def sample(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = 1.0 - rng.beta(0.5, 10.0, n)
    return s, (rng.random(n) < s**2).astype(float)


def best_of(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def direct_curve(s, o, h, grid):
    """Direct kernel sums over all points and all mirror images (no windows), in blocks."""
    points = np.concatenate([s, -s, 2.0 - s])
    labels = np.concatenate([o, o, o])
    sum_k, sum_yk = np.zeros(grid.size), np.zeros(grid.size)
    for lo in range(0, grid.size, 64):
        u = (grid[lo : lo + 64, None] - points[None, :]) / h
        k = np.where(np.abs(u) < 1.0, 35.0 / 32.0 * (1.0 - u**2) ** 3, 0.0)
        sum_k[lo : lo + 64], sum_yk[lo : lo + 64] = k.sum(axis=1), k @ labels
    with np.errstate(invalid="ignore", divide="ignore"):
        return sum_k / (s.size * h), sum_yk / sum_k


def grid_vs_direct(n: int) -> dict:
    s, o = sample(n, seed=1)
    curve = kde_reliability_curve(s, o)
    density, accuracy = direct_curve(s, o, curve.bandwidth, curve.grid)
    mask = np.isfinite(accuracy)
    gap = np.where(mask, np.abs(curve.grid - np.nan_to_num(accuracy)) * density, 0.0)
    direct_ece = np.trapezoid(gap) / np.trapezoid(density)
    return {
        "n": n,
        "grid_size": int(curve.grid.size),
        "max_abs_diff_density": float(np.max(np.abs(curve.density - density))),
        "max_abs_diff_accuracy": float(np.max(np.abs(curve.accuracy[mask] - accuracy[mask]))),
        "nan_pattern_equal": bool(np.array_equal(np.isnan(curve.accuracy), ~mask)),
        "abs_diff_ece": abs(kde_ece(s, o) - float(direct_ece)),
    }


def cells_kde_ece(s, o) -> float:
    """KDE-ECE through the statistics engine: layout, one pass of moments, evaluation."""
    layout = KDELayout.for_bandwidth(kde_bandwidth(s))
    sums = KDESums.zeros(layout)
    sums.add(layout, s, o)
    return kde_ece_from_sums(layout, sums)


def cell_moments(sizes=(10_000, 50_000), n_classes=100) -> list:
    out = []
    for n in sizes:
        s, o = sample(n)
        exact = kde_ece(s, o)
        fast = cells_kde_ece(s, o)
        out.append(
            {
                "problem": f"one binary problem, n = {n}",
                "seconds_exact_best_of_5": best_of(lambda s=s, o=o: kde_ece(s, o)),
                "seconds_cells_best_of_5": best_of(lambda s=s, o=o: cells_kde_ece(s, o)),
                "rel_diff": abs(fast - exact) / exact,
            }
        )
    preds = calcore.io.load_splits(WIDE)["test"]
    classes = range(min(n_classes, preds.n_classes))
    outcomes = preds.labels[:, None] == np.arange(preds.n_classes)[None, :]
    exact = np.array([kde_ece(preds.probs[:, c], outcomes[:, c]) for c in classes])
    fast = np.array([cells_kde_ece(preds.probs[:, c], outcomes[:, c]) for c in classes])
    out.append(
        {
            "problem": "class-wise, 10,000 x 100 (synthetic_wide100 test)"
            + ("" if len(classes) == preds.n_classes else f", {len(classes)} classes"),
            "seconds_exact_best_of_5": best_of(
                lambda: [kde_ece(preds.probs[:, c], outcomes[:, c]) for c in classes]
            ),
            "seconds_cells_best_of_5": best_of(
                lambda: [cells_kde_ece(preds.probs[:, c], outcomes[:, c]) for c in classes]
            ),
            "max_rel_diff": float(np.max(np.abs(fast - exact) / exact)),
        }
    )
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny samples, 3 classes")
    smoke = parser.parse_args(argv).smoke
    sizes, wide_n = ((300, 1_000), 1_000) if smoke else ((1_000, 10_000, 50_000), 50_000)
    timings = []
    for n in sizes:
        s, o = sample(n)
        timings.append(
            {
                "n": n,
                "bandwidth": kde_bandwidth(s),
                "kde_ece": kde_ece(s, o),
                "seconds_best_of_5": best_of(lambda s=s, o=o: kde_ece(s, o)),
            }
        )
    s = np.random.default_rng(2).random(wide_n)
    o = (np.random.default_rng(3).random(wide_n) < s).astype(float)
    timings.append(
        {
            "n": wide_n,
            "scores": "Uniform(0, 1) (wide: larger bandwidth, more pairs)",
            "bandwidth": kde_bandwidth(s),
            "kde_ece": kde_ece(s, o),
            "seconds_best_of_5": best_of(lambda: kde_ece(s, o)),
        }
    )
    report = {
        "benchmark": "calcore.kde.kde_ece",
        "scores": "1 - Beta(0.5, 10), outcomes ~ Bernoulli(s^2)",
        "numpy": np.__version__,
        "python": platform.python_version(),
        "timings": timings,
        "grid_vs_direct": [grid_vs_direct(n) for n in sizes[:2]],
        "cell_moments": cell_moments(sizes[-2:], 3) if smoke else cell_moments(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
