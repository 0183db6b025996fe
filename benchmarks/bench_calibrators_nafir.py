"""Fit times of the normalization-aware isotonic calibrators; prints one JSON object.

Synthetic, seeded data like an overconfident net: logits ``z = 2.5 * log(Dirichlet(0.3))``
-ish scores ``p = softmax(z)`` and labels drawn from ``softmax(z / 2.5)``, i.e. from the
Dirichlet vector itself (so the scores are overconfident). Cases (the issue's targets):
na-fir on 5,000 x 100 (<= 30 s), scir on 5,000 x 10 (<= 10 s) and 5,000 x 100
(report; target <= 120 s, the paper needed about 2 h on ImageNet-1k). Times are single
fits (these are seconds long), with the fit information that shows convergence.

Run: ``.venv/bin/python benchmarks/bench_calibrators_nafir.py`` (``--smoke``: tiny cases,
to check that the script runs; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

import calcore
from calcore.calibrators import make_calibrator


def sample(n: int, n_classes: int, seed: int = 0) -> calcore.Predictions:
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.full(n_classes, 0.3), n)
    truth = np.maximum(truth, 1e-300)
    labels = (truth.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    labels = np.minimum(labels, n_classes - 1)
    return calcore.Predictions.from_logits(2.5 * np.log(truth), labels)


def run(method: str, n: int, n_classes: int, **params) -> dict:
    preds = sample(n, n_classes)
    calibrator = make_calibrator(method, **params)
    t0 = time.perf_counter()
    calibrator.fit(preds)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = calibrator.transform(preds)
    transform_s = time.perf_counter() - t0
    labels = preds.labels
    nll = float(-np.mean(np.log(out.probs[np.arange(n), labels])))
    info = {k: v for k, v in calibrator.fit_info.items() if k != "message"}
    return {
        "method": method,
        "n_samples": n,
        "n_classes": n_classes,
        "fit_seconds": round(fit_s, 3),
        "transform_seconds": round(transform_s, 3),
        "train_nll_before": float(-np.mean(np.log(preds.probs[np.arange(n), labels]))),
        "train_nll_after": nll,
        "fit_info": info,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="300 rows, 3 and 5 classes")
    args = parser.parse_args(argv)
    cases = [("na-fir", 5000, 100), ("scir", 5000, 10), ("scir", 5000, 100)]
    if args.smoke:  # checks that the script runs; its figures mean nothing
        cases = [("na-fir", 300, 5), ("scir", 300, 3)]
    load_before = os.getloadavg()
    results = [run(*case) for case in cases]
    load = {
        "before": [round(v, 2) for v in load_before],
        "after": [round(v, 2) for v in os.getloadavg()],
    }
    report = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "load_average_1_5_15_min": load,
        "results": results,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
