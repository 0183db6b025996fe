"""Benchmark calcore.io.load_predictions against the bare CSV readers it was chosen from.

Writes (in a temporary directory) a 20,000 x 100 and a 50,000 x 1,000 CSV of
seeded Dirichlet probabilities plus a label column, then times
``load_predictions`` (best of 3, validation included) and the bare readers:
``pyarrow.csv.read_csv`` with explicit float64 types (what calcore.io uses)
and ``pandas.read_csv(engine="c")`` with a dtype map. Prints one JSON object.

Run: ``.venv/bin/python benchmarks/bench_io.py`` (about 1-2 minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from calcore import CalcoreWarning
from calcore.io import load_predictions

SHAPES = {"small": (20_000, 100), "large": (50_000, 1_000)}


def write_csv(path: Path, n: int, k: int, seed: int = 0) -> None:
    """Write seeded Dirichlet probabilities (8 decimals) with pyarrow's C++ writer."""
    rng = np.random.default_rng(seed)
    probs = np.round(rng.dirichlet(np.full(k, 0.3), size=n), 8)
    columns = {"label": pa.array(rng.integers(0, k, n).astype(str))}
    columns.update({f"p_c{j}": pa.array(np.ascontiguousarray(probs[:, j])) for j in range(k)})
    options = pacsv.WriteOptions(quoting_style="none")
    pacsv.write_csv(pa.table(columns), str(path), write_options=options)


def best_of(fn, args: tuple, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return round(min(times), 3)


def bare_pyarrow(path: Path, k: int):
    types = {f"p_c{j}": pa.float64() for j in range(k)} | {"label": pa.string()}
    return pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=16 << 20),
        convert_options=pacsv.ConvertOptions(column_types=types),
    )


def bare_pandas(path: Path, k: int):
    dtypes = {f"p_c{j}": np.float64 for j in range(k)} | {"label": str}
    return pd.read_csv(path, engine="c", dtype=dtypes)


def load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)  # absent classes in the large file
        return load_predictions(path)


def main() -> None:
    out = {"cpus": os.cpu_count(), "reader_used": "pyarrow.csv (explicit float64 column types)"}
    with tempfile.TemporaryDirectory() as tmp:
        for key, (n, k) in SHAPES.items():
            path = Path(tmp) / f"{key}.csv"
            start = time.perf_counter()
            write_csv(path, n, k)
            write_s = round(time.perf_counter() - start, 1)
            preds = load(path)
            assert preds.probs.shape == (n, k)
            big = key == "large"
            out[key] = {
                "shape": [n, k],
                "file_mb": round(path.stat().st_size / 1e6, 1),
                "write_s": write_s,
                "load_predictions_s": best_of(load, (path,), 3),
                "bare_pyarrow_csv_s": best_of(bare_pyarrow, (path, k), 3),
                # pandas' C engine is slow on the wide file: one run keeps the benchmark short.
                "bare_pandas_c_s": best_of(bare_pandas, (path, k), 1 if big else 3),
            }
            print(f"{key}: {out[key]}", file=sys.stderr, flush=True)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
