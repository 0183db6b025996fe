"""Benchmark: tl-hb, cw-hb (target 2 s each) and irm (target 5 s) fit + transform on 50,000 x 1,000
softmax outputs.

Each method is fitted and applied ``REPEATS`` times; the JSON gives the best and the median
of the fit + transform wall times, the median process CPU time (all threads; on a busy
machine it shows the work done, which the wall time does not), and the load average before
and after (the machine is shared).

Run: ``.venv/bin/python benchmarks/bench_calibrators_binning.py``; prints one JSON object.
``--smoke``: 500 x 10, one repeat (checks that the script runs; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from calcore import Predictions
from calcore.calibrators import make_calibrator

N, L = 50_000, 1_000
REPEATS = 5


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="500 x 10, one repeat")
    args = parser.parse_args(argv)
    global N, L, REPEATS
    if args.smoke:
        N, L, REPEATS = 500, 10, 1
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(N, L)) * 2.0
    labels = rng.integers(0, L, size=N)
    logits[np.arange(N), labels] += 4.0
    preds = Predictions.from_logits(logits, labels)
    preds.confidence  # noqa: B018  (argmax/max computed once, as for any Predictions)
    result = {"shape": [N, L], "cpus": os.cpu_count(), "repeats": REPEATS}
    load_before = os.getloadavg()
    for name, kwargs, target in (
        ("tl-hb", {"bins": 15}, 2.0),
        ("cw-hb", {"bins": 15}, 2.0),
        ("irm", {}, 5.0),
    ):
        fits, transforms, totals, cpu = [], [], [], []
        for _ in range(REPEATS):
            cal = make_calibrator(name, **kwargs)
            c0, t0 = time.process_time(), time.perf_counter()
            cal.fit(preds)
            t1 = time.perf_counter()
            out = cal.transform(preds)
            t2, c2 = time.perf_counter(), time.process_time()
            del out  # free the 400 MB output before the next repeat
            fits.append(t1 - t0)
            transforms.append(t2 - t1)
            totals.append(t2 - t0)
            cpu.append(c2 - c0)
        result[name] = {
            "fit_s_median": round(statistics.median(fits), 3),
            "transform_s_median": round(statistics.median(transforms), 3),
            "total_s_best": round(min(totals), 3),
            "total_s_median": round(statistics.median(totals), 3),
            "process_cpu_s_median": round(statistics.median(cpu), 3),
            "target_s": target,
            "meets_target_median": statistics.median(totals) <= target,
        }
    result["load_average_1_5_15_min"] = {
        "before": [round(v, 2) for v in load_before],
        "after": [round(v, 2) for v in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
