"""Benchmark calcore.io.load_predictions against the bare CSV readers it was chosen from.

Uses a 20,000 x 100 CSV (written in a temporary directory) and a 50,000 x
1,000 one (``$CALCORE_BENCH_BIG_CSV``, default ``/tmp/big.csv``: reused if it
exists, since writing it takes minutes; else written there): seeded Dirichlet
probabilities plus a ``label`` column. Times, best of 3:

* ``load_predictions_s``: ``calcore.io.load_predictions``, validation included;
* ``calcore_reader_s``: its CSV reader alone (``read_csv_columns``: pandas' C
  parser on one piece of the file per CPU, in threads);
* ``bare_pandas_c_s``: one ``pandas.read_csv(engine="c")`` call with only the
  label typed as text (a dtype map over every score column is pathologically
  slow: 45 s on the large file);
* ``bare_pyarrow_csv_s``: ``pyarrow.csv.read_csv`` with explicit float64 types
  (the previous reader).

Prints one JSON object. Run: ``.venv/bin/python benchmarks/bench_io.py``
(about 3 minutes on 2 cores when the large file exists). ``--smoke``: a 2,000 x 10 file
only, never the large one (checks that the script runs; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import io
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
from calcore.io._csv import read_csv_columns, scan_csv
from calcore.io._source import open_source

SHAPES = {"small": (20_000, 100), "large": (50_000, 1_000)}
BIG = Path(os.environ.get("CALCORE_BENCH_BIG_CSV", "/tmp/big.csv"))


def write_csv(path: Path, n: int, k: int, seed: int = 0) -> None:
    """Write seeded Dirichlet probabilities (8 decimals) with pyarrow's C++ writer."""
    rng = np.random.default_rng(seed)
    probs = np.round(rng.dirichlet(np.full(k, 0.3), size=n), 8)
    columns = {"label": pa.array(rng.integers(0, k, n).astype(str))}
    columns.update({f"p_c{j}": pa.array(np.ascontiguousarray(probs[:, j])) for j in range(k)})
    options = pacsv.WriteOptions(quoting_style="none")
    pacsv.write_csv(pa.table(columns), str(path), write_options=options)


def best_of(fn, args: tuple, repeats: int = 3) -> float:
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
    data = path.read_bytes()
    return pd.read_csv(
        io.BytesIO(data), engine="c", dtype={"label": str}, keep_default_na=False, na_values=[""]
    )


def calcore_reader(path: Path, k: int):
    src = open_source(path)
    layout = scan_csv(src)
    return read_csv_columns(src, layout, floats=layout.columns[1:], texts=["label"])


def load(path: Path, k: int = 0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)  # absent classes in the large file
        return load_predictions(path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a 2,000 x 10 file only")
    shapes = {"small": (2_000, 10)} if parser.parse_args(argv).smoke else SHAPES
    out = {
        "cpus": os.cpu_count(),
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "reader_used": "pandas.read_csv(engine='c'), one piece per CPU in threads",
    }
    with tempfile.TemporaryDirectory() as tmp:
        for key, (n, k) in shapes.items():
            path = BIG if key == "large" else Path(tmp) / f"{key}.csv"
            write_s = None
            if key != "large" or not path.exists():
                start = time.perf_counter()
                write_csv(path, n, k)
                write_s = round(time.perf_counter() - start, 1)
            preds = load(path)
            assert preds.probs.shape == (n, k), preds.probs.shape
            out[key] = {
                "shape": [n, k],
                "file": str(path) if key == "large" else None,
                "file_mb": round(path.stat().st_size / 1e6, 1),
                "write_s": write_s,
                "load_predictions_s": best_of(load, (path, k)),
                "calcore_reader_s": best_of(calcore_reader, (path, k)),
                "bare_pandas_c_s": best_of(bare_pandas, (path, k)),
                "bare_pyarrow_csv_s": best_of(bare_pyarrow, (path, k)),
            }
            print(f"{key}: {out[key]}", file=sys.stderr, flush=True)
    out["load_average_at_end"] = round(os.getloadavg()[0], 2)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
