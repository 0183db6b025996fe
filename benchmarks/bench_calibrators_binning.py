"""Benchmark: tl-hb, cw-hb (target 2 s each) and irm (target 5 s) fit + transform on 50,000 x 1,000
softmax outputs.

Run: ``.venv/bin/python benchmarks/bench_calibrators_binning.py``; prints one JSON object.
"""

from __future__ import annotations

import json
import time

import numpy as np

from calcore import Predictions
from calcore.calibrators import make_calibrator

N, L = 50_000, 1_000


def main() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(N, L)) * 2.0
    labels = rng.integers(0, L, size=N)
    logits[np.arange(N), labels] += 4.0
    preds = Predictions.from_logits(logits, labels)
    preds.confidence  # noqa: B018  (argmax/max computed once, as for any Predictions)
    result = {"shape": [N, L]}
    for name, kwargs, target in (
        ("tl-hb", {"bins": 15}, 2.0),
        ("cw-hb", {"bins": 15}, 2.0),
        ("irm", {}, 5.0),
    ):
        cal = make_calibrator(name, **kwargs)
        t0 = time.perf_counter()
        cal.fit(preds)
        t1 = time.perf_counter()
        cal.transform(preds)
        t2 = time.perf_counter()
        result[name] = {
            "fit_s": round(t1 - t0, 3),
            "transform_s": round(t2 - t1, 3),
            "total_s": round(t2 - t0, 3),
            "target_s": target,
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
