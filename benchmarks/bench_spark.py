"""calcore on Apache Spark (local mode) beside the embedded engine, in the same run.

Prints one JSON object. For each row count (default 10M, and 100M with ``--big-rows``),
binary predictions are written as a directory of Parquet files (``--files``, 1M-row row
groups), then every case runs twice, each in a fresh interpreter:

* **embedded**: ``calcore.evaluate(calcore.scan(DIR), ...)``: seconds and peak RSS;
* **spark**: ``calcore.evaluate(calcore.from_spark(spark.read.parquet(DIR)), ...)`` on
  ``--master`` (default ``local[2]``, the same two cores): the session's start, each
  case's seconds (the first case also pays the JVM's warm-up), the jobs (one a pass),
  the bytes of the states the tasks send back (total and the largest one) and of the plan
  shipped to every task, the driver's peak RSS (Python) and the JVM's (in local mode the
  JVM is driver and executors at once);

and the largest absolute difference between the two engines' values.

Cases: ``conf_ece`` (fixed bins: one pass), ``every_metric`` (a profile pass, the
selection passes of the equal-mass bins, the accumulating pass, KDE-ECE included),
``conf_ece_boot20`` (20 Poisson bootstrap resamples and 20 redrawn label sets for the test,
keyed by each row's position: Spark computes the positions from the files' order).

Spark local mode is expected to be several times slower than the embedded engine on the
same cores (a JVM, Arrow to Python and back, a job a pass): it is there for data that
does not fit one machine and for clusters a team must use (docs/scale.md).

Usage: ``python benchmarks/bench_spark.py [--rows 10000000] [--big-rows 0] [--files 8]
[--master local[2]] [--cases conf_ece,every_metric,conf_ece_boot20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

CASES = {
    "conf_ece": "dict(metrics=['conf_ece'])",
    "every_metric": "dict()",
    "conf_ece_boot20": "dict(metrics=['conf_ece'], n_resamples=20, seed=0)",
}

_PEAK = """
def _peak_mb(pid='self'):
    import re
    text = open(f'/proc/{pid}/status').read()
    return int(re.search(r'VmHWM:\\s+(\\d+)', text).group(1)) / 1024
"""

_VALUES = """
def _values(report):
    out = {}
    for key, value in report.metrics.items():
        if isinstance(value, (int, float)):
            out[key] = float(value)
    for key, iv in (report.intervals or {}).items():
        out[key + '.low'], out[key + '.high'] = float(iv.low), float(iv.high)
    return out
"""

EMBEDDED = """
import json, time, calcore
t = time.perf_counter()
report = calcore.evaluate(calcore.scan({folder!r}), **{case})
print(json.dumps({{'seconds': time.perf_counter() - t, 'values': _values(report),
                  'peak_rss_mb': _peak_mb()}}))
"""

SPARK = """
import json, os, time, calcore, calcore.spark
t = time.perf_counter()
spark = calcore.spark.session(master={master!r})
start = time.perf_counter() - t
out = {{'session_start_s': start, 'cases': {{}}}}
for name, case in {cases!r}:
    src = calcore.from_spark(spark.read.parquet({folder!r}))
    t = time.perf_counter()
    report = calcore.evaluate(src, **eval(case))
    seconds = time.perf_counter() - t
    log = src.engine.pass_log
    out['cases'][name] = {{
        'seconds': seconds, 'jobs': len(log), 'passes': log,
        'largest_state_bytes': max((p['largest_state_bytes'] for p in log), default=0),
        'values': _values(report),
    }}
jvm = [int(p) for p in os.listdir('/proc') if p.isdigit() and
       open(f'/proc/{{p}}/stat').read().split(')')[-1].split()[1] == str(os.getpid())]
out['driver_peak_rss_mb'] = _peak_mb()
out['jvm_peak_rss_mb'] = max((_peak_mb(p) for p in jvm), default=None)
spark.stop()
print(json.dumps(out))
"""


def _data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 3.0, n)
    y = (rng.random(n) < np.clip(1.3 * p, 0.0, 1.0)).astype(np.int64)
    return p, y


def write_files(folder: str, n: int, files: int) -> None:
    """``n`` binary rows in ``files`` Parquet files (1M-row row groups), written in pieces
    so the generator's memory stays bounded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    per_file = -(-n // files)
    for f in range(files):
        rows = min(per_file, n - f * per_file)
        if rows <= 0:
            break
        writer = None
        for start in range(0, rows, 5_000_000):
            p, y = _data(min(5_000_000, rows - start), seed=f * 1_000 + start // 5_000_000)
            table = pa.table({"label": y, "p_click": p})
            writer = writer or pq.ParquetWriter(os.path.join(folder, f"part-{f:04d}.parquet"),
                                                table.schema)  # fmt: skip
            writer.write_table(table, row_group_size=1_000_000)
        writer.close()


def _run(code: str) -> dict:
    """Run ``code`` (after the helpers above) in a fresh interpreter; its last JSON line."""
    code = _PEAK + _VALUES + code
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_REPO, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"benchmark child failed:\n{out.stderr[-3000:]}")
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _largest_difference(a: dict, b: dict) -> tuple[float | None, str | None]:
    """The largest absolute difference between two runs' values, and whose it is."""
    both = [k for k in a if k in b and np.isfinite(a[k]) and np.isfinite(b[k])]
    if not both:
        return None, None
    key = max(both, key=lambda k: abs(a[k] - b[k]))
    return abs(a[key] - b[key]), key


def _largest_relative(a: dict, b: dict) -> float | None:
    both = [k for k in a if k in b and np.isfinite(a[k]) and np.isfinite(b[k])]
    return max((abs(a[k] - b[k]) / max(abs(a[k]), 1e-300) for k in both), default=None)


def rows_case(n: int, files: int, master: str, cases: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_spark_") as folder:
        t = time.perf_counter()
        write_files(folder, n, files)
        out: dict = {
            "rows": n,
            "files": files,
            "megabytes": round(
                sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)) / 2**20, 1
            ),  # fmt: skip
            "write_s": round(time.perf_counter() - t, 1),
        }
        embedded = {c: _run(EMBEDDED.format(folder=folder, case=CASES[c])) for c in cases}
        spark = _run(SPARK.format(master=master, folder=folder,
                                  cases=[(c, CASES[c]) for c in cases]))  # fmt: skip
        out["spark_session_start_s"] = round(spark["session_start_s"], 1)
        out["spark_driver_peak_rss_mb"] = round(spark["driver_peak_rss_mb"], 1)
        if spark["jvm_peak_rss_mb"] is not None:
            out["spark_jvm_peak_rss_mb"] = round(spark["jvm_peak_rss_mb"], 1)
        for c in cases:
            e, s = embedded[c], spark["cases"][c]
            out[c] = {
                "embedded_s": round(e["seconds"], 2),
                "embedded_peak_rss_mb": round(e["peak_rss_mb"], 1),
                "spark_s": round(s["seconds"], 2),
                "spark_over_embedded": round(s["seconds"] / e["seconds"], 1),
                "spark_jobs": s["jobs"],
                "largest_state_bytes": s["largest_state_bytes"],
                "passes": [{k: v for k, v in p.items()} for p in s["passes"]],
                "largest_abs_difference": _largest_difference(e["values"], s["values"])[0],
                "largest_difference_in": _largest_difference(e["values"], s["values"])[1],
                "largest_relative_difference": _largest_relative(e["values"], s["values"]),
                "values_compared": len(set(e["values"]) & set(s["values"])),
            }
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--big-rows", type=int, default=0, help="e.g. 100000000 (~840 MB)")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {sorted(CASES)}")
    result = {"master": args.master, "cpus": os.cpu_count(),
              "load_average_at_start": os.getloadavg()[0]}  # fmt: skip
    result["runs"] = [rows_case(args.rows, args.files, args.master, cases)]
    if args.big_rows:
        result["runs"].append(rows_case(args.big_rows, args.files, args.master, cases))
    result["load_average_at_end"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
