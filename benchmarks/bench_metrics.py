"""Speed and memory of calcore's metrics on an ImageNet-sized input (50,000 x 1,000).

Prints one JSON object. Targets (issue "evaluation core"): all of ``evaluate``
except bootstrap <= 3 s; conf + top-label ECE <= 0.3 s; class-wise ECE <= 1.5 s;
KDE-ECE (confidence view, Mix-n-Match's "top-label") <= 0.3 s; peak extra
memory <= 2x the input.

Each timing is the best of ``--repeats`` runs on a *fresh* Predictions (so the
one-off argmax pass is included every time). Memory is the peak of numpy
allocations traced by ``tracemalloc`` during the call, on top of what was
already allocated (the input and the Predictions).

Usage: python benchmarks/bench_metrics.py [--n 50000] [--classes 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import tracemalloc

import numpy as np
from scipy.special import softmax

import calcore


def make_input(n: int, n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Deep-net-like float32 probabilities: peaked softmax, ~75% accuracy, over-confident."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n)
    logits = rng.standard_normal((n, n_classes), dtype=np.float32) * 2.0
    hit = rng.random(n) < 0.75
    target = np.where(hit, labels, rng.integers(0, n_classes, n))
    logits[np.arange(n), target] += 9.0
    return softmax(logits, axis=1).astype(np.float32), labels


def fresh(probs32, labels):
    return calcore.Predictions.from_probs(probs32, labels)


def timed(fn, probs32, labels, repeats):
    best, value = np.inf, None
    for _ in range(repeats):
        preds = fresh(probs32, labels)
        t0 = time.perf_counter()
        value = fn(preds)
        best = min(best, time.perf_counter() - t0)
    return best, value


def peak_extra_bytes(fn, probs32, labels) -> int:
    preds = fresh(probs32, labels)
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn(preds)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    probs32, labels = make_input(args.n, args.classes)
    t0 = time.perf_counter()
    preds = fresh(probs32, labels)
    construct_s = time.perf_counter() - t0
    cases = {
        "evaluate_no_bootstrap": lambda p: calcore.evaluate(p).metrics["top_label_ece"],
        "conf_plus_top_label_ece": lambda p: calcore.confidence_ece(p) + calcore.top_label_ece(p),
        "classwise_ece": calcore.classwise_ece,
        "kde_ece_confidence": calcore.kde_ece_confidence,
        "ace_and_tace": lambda p: calcore.adaptive_ece(p) + calcore.thresholded_adaptive_ece(p),
    }
    targets = {
        "evaluate_no_bootstrap": 3.0,
        "conf_plus_top_label_ece": 0.3,
        "classwise_ece": 1.5,
        "kde_ece_confidence": 0.3,
    }
    results = {}
    for name, fn in cases.items():
        seconds, value = timed(fn, probs32, labels, args.repeats)
        results[name] = {"seconds": round(seconds, 4), "value": float(value)}
        if name in targets:
            results[name]["target_seconds"] = targets[name]
            results[name]["meets_target"] = bool(seconds <= targets[name])
    input_bytes = probs32.nbytes
    extra = peak_extra_bytes(lambda p: calcore.evaluate(p), probs32, labels)
    print(
        json.dumps(
            {
                "benchmark": "metrics",
                "shape": [args.n, args.classes],
                "input_dtype": "float32",
                "machine": {
                    "cpus": __import__("os").cpu_count(),
                    "python": platform.python_version(),
                    "numpy": np.__version__,
                },
                "predictions_from_float32_seconds": round(construct_s, 4),
                "timings": results,
                "memory": {
                    "input_mb": round(input_bytes / 2**20, 1),
                    "predictions_float64_mb": round(preds.probs.nbytes / 2**20, 1),
                    "evaluate_peak_extra_mb": round(extra / 2**20, 1),
                    "evaluate_peak_extra_over_float32_input": round(extra / input_bytes, 2),
                    "evaluate_peak_extra_over_float64_predictions": round(
                        extra / preds.probs.nbytes, 2
                    ),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
