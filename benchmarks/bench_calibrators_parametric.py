"""Fit times of the parametric calibrators; prints one JSON object.

Data: the synthetic generator of the tests (true logits ``g ~ N(0, 1.5^2)``, labels
drawn from ``softmax(g)``, observed logits ``2.5 g``: over-confident, NLL-optimal
T about 2.5). ts/ets on 50,000 x 1,000 float32 logits (targets 3 s and 4 s);
dirichlet, vs and ms on 5,000 x 100 (the CIFAR-100 calibration size; dirichlet
target 30 s). Each fit is repeated; the JSON gives the best and the median time
(the machine is shared: the load average before and after is reported too, and
the median process CPU time, which a busy machine inflates much less than the
wall time).
Building the ``Predictions`` (float32 -> float64, softmax) is not timed. For the
affine maps the largest absolute gradient of the penalised objective at the
returned parameters shows that the fit reached the optimum.

Run: ``.venv/bin/python benchmarks/bench_calibrators_parametric.py`` (``--smoke``: 500 x 20
and 300 x 5, one fit each, to check that the script runs; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np
from scipy.special import softmax
from threadpoolctl import threadpool_info

from calcore import Predictions
from calcore.calibrators import make_calibrator
from calcore.calibrators._logistic import affine_objective

TARGETS = {"ts": 3.0, "ets": 4.0, "dirichlet": 30.0}


def synthetic(n: int, n_classes: int, *, seed: int = 0, factor: float = 2.5):
    rng = np.random.default_rng(seed)
    g = rng.normal(scale=1.5, size=(n, n_classes))
    u = rng.random(n)
    labels = np.empty(n, dtype=np.int64)
    for start in range(0, n, 5000):  # inverse-CDF sampling, in blocks
        cdf = np.cumsum(softmax(g[start : start + 5000], axis=1), axis=1)
        labels[start : start + 5000] = (u[start : start + 5000, None] > cdf).sum(axis=1)
    np.minimum(labels, n_classes - 1, out=labels)
    return Predictions.from_logits((factor * g).astype(np.float32), labels)


def max_gradient(calibrator, preds: Predictions) -> float:
    """Largest |gradient| of the penalised objective at the fitted affine map."""
    penalty = calibrator._penalty(preds.n_classes)
    x = calibrator._features(preds)
    objective = affine_objective(x, preds.labels, diagonal=calibrator.diagonal, penalty=penalty)
    state = calibrator._state
    _, gw, gb = objective(np.asarray(state["weights"]), np.asarray(state["bias"]))
    return float(max(np.abs(gw).max(), np.abs(gb).max()))


def time_fit(name: str, preds: Predictions, repeats: int, **params) -> dict:
    times, cpu = [], []
    for _ in range(repeats):
        calibrator = make_calibrator(name, **params)
        c0, t0 = time.process_time(), time.perf_counter()
        calibrator.fit(preds)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    info = calibrator.fit_info
    row = {
        "method": name,
        "shape": list(preds.probs.shape),
        "seconds_best": round(min(times), 3),
        "seconds_median": round(statistics.median(times), 3),
        "process_cpu_seconds_median": round(statistics.median(cpu), 3),
        "repeats": repeats,
        "converged": info.get("converged"),
        "iterations": info.get("iterations"),
    }
    if name in ("vs", "ms", "dirichlet"):
        row["max_abs_gradient"] = max_gradient(calibrator, preds)
    for key in ("temperature", "weights"):
        if key in info:
            row[key] = info[key]
    if name in TARGETS:
        row["target_seconds"] = TARGETS[name]
        row["meets_target_median"] = statistics.median(times) <= TARGETS[name]
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one fit each")
    args = parser.parse_args(argv)
    (n_big, l_big, r_big), (n_mid, l_mid, r_mid) = (50_000, 1_000, 5), (5_000, 100, 3)
    if args.smoke:
        (n_big, l_big, r_big), (n_mid, l_mid, r_mid) = (500, 20, 1), (300, 5, 1)
    load_before = os.getloadavg()
    big = synthetic(n_big, l_big)
    rows = [time_fit("ts", big, r_big), time_fit("ets", big, r_big)]
    del big
    mid = synthetic(n_mid, l_mid, seed=1)
    rows += [time_fit(m, mid, r_mid) for m in ("dirichlet", "vs", "ms")]
    report = {
        "benchmark": "calcore.calibrators parametric fits",
        "data": "logits 2.5 * g, g ~ N(0, 1.5^2), labels ~ softmax(g); float32 logits",
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "openblas_threads_outside_fits": [
            i["num_threads"] for i in threadpool_info() if i["internal_api"] == "openblas"
        ],
        "load_average_1_5_15_min": {
            "before": [round(v, 2) for v in load_before],
            "after": [round(v, 2) for v in os.getloadavg()],
        },
        "timings": rows,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
