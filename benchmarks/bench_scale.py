"""Row-scale benchmark of the statistics engine, with DuckDB measured in the same run.

Prints one JSON object. Cases (binary predictions, a deterministic generator):

* ``memory``: ``evaluate`` of N rows already in memory, all metrics and the confidence
  ECE alone, beside DuckDB's 15-bin confidence-ECE query over the same arrays;
* ``stream``: the same rows written as one Parquet file, ``evaluate(scan(file))``
  (what ``calcore metrics FILE`` runs), beside the DuckDB query straight from the file;
  peak RSS of each measured in a fresh child process.

Usage: ``python benchmarks/bench_scale.py [--rows 10000000] [--stream-rows 100000000]``
(the 100M-row file is ~1.2 GB, written to a temporary directory and removed).
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

QUERY = """
select sum(abs(sc - so)) / sum(c) from (
  select least(floor(conf * 15), 14) b, count(*) c, sum(conf) sc, sum(corr) so
  from (select greatest(p, 1 - p) conf, ((p >= 0.5) = (label = 1))::int corr from {src})
  group by b)
"""


def _data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 3.0, n)
    y = (rng.random(n) < np.clip(1.3 * p, 0.0, 1.0)).astype(np.int64)
    return p, y


def _best(f, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def _child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints JSON. Adds the child's peak RSS.

    The peak is the child's own VmHWM: ``ru_maxrss`` can carry the parent's peak into a
    child across fork + exec.
    """
    wrapped = code + (
        "\nimport json as _j, re as _re\n"
        "_s = open('/proc/self/status').read()\n"
        "peak = int(_re.search(r'VmHWM:\\s+(\\d+)', _s).group(1)) / 1024\n"
        "print(_j.dumps({'peak_rss_mb': peak}))"
    )
    out = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"benchmark child failed:\n{out.stderr[-2000:]}")
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    merged = {}
    for d in lines:
        merged.update(d)
    return merged


def memory_case(n: int, repeats: int) -> dict:
    import duckdb

    import calcore

    p, y = _data(n)
    preds = calcore.Predictions.from_probs(np.column_stack([1.0 - p, p]), y)
    _ = preds.confidence  # the argmax is cached on first use; time the metrics, not it
    t_all, report = _best(lambda: calcore.evaluate(preds), repeats)
    t_conf, conf = _best(lambda: calcore.evaluate(preds, metrics=["conf_ece"]), repeats)
    t_binned, _ = _best(
        lambda: calcore.evaluate(
            preds, metrics=[k for k in calcore.METRICS if k not in calcore.BIN_FREE_METRICS]
        ),
        repeats,
    )
    con = duckdb.connect()
    con.register("t", {"p": p, "label": y})
    t_duck, duck = _best(lambda: con.execute(QUERY.format(src="t")).fetchone()[0], repeats)
    return {
        "rows": n,
        "evaluate_all_s": round(t_all, 3),
        "evaluate_binned_and_scoring_s": round(t_binned, 3),
        "evaluate_conf_ece_s": round(t_conf, 3),
        "duckdb_conf_ece_s": round(t_duck, 3),
        "conf_ece_ratio_to_duckdb": round(t_conf / t_duck, 2),
        "conf_ece": conf.conf_ece,
        "duckdb_conf_ece": duck,
        "all_metrics_conf_ece": report.conf_ece,
    }


def stream_case(n: int, folder: str) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(folder, "preds.parquet")
    writer = None
    step = 10_000_000
    for start in range(0, n, step):  # write in pieces: the generator's memory stays bounded
        p, y = _data(min(step, n - start), seed=start)
        table = pa.table({"label": y, "p_click": p})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=1_000_000)
    writer.close()
    ours = _child(
        "import time, json, calcore\n"
        f"t = time.perf_counter(); r = calcore.evaluate(calcore.scan({path!r}))\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'conf_ece': r.conf_ece, "
        "'n': r.n}))"
    )
    duck = _child(
        "import time, json, duckdb\n"
        f"q = '''{QUERY.format(src=f'(select p_click as p, label from {path!r})')}'''\n"
        "t = time.perf_counter(); v = duckdb.connect().execute(q).fetchone()[0]\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'conf_ece': v}))"
    )
    return {
        "rows": n,
        "file_mb": round(os.path.getsize(path) / 2**20, 1),
        "calcore_evaluate_scan_s": round(ours["seconds"], 3),
        "calcore_peak_rss_mb": round(ours["peak_rss_mb"]),
        "duckdb_query_s": round(duck["seconds"], 3),
        "duckdb_peak_rss_mb": round(duck["peak_rss_mb"]),
        "ratio_to_duckdb": round(ours["seconds"] / duck["seconds"], 2),
        "conf_ece": ours["conf_ece"],
        "duckdb_conf_ece": duck["conf_ece"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--stream-rows", type=int, default=100_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    out = {"memory": memory_case(args.rows, args.repeats)}
    with tempfile.TemporaryDirectory() as folder:
        out["stream"] = stream_case(args.stream_rows, folder)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
