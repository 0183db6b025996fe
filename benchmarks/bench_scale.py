"""Row-scale benchmark of the statistics engine, with DuckDB measured in the same run.

Prints one JSON object. Cases (binary predictions, a deterministic generator):

* ``memory``: ``evaluate`` of N rows already in memory, all metrics and the confidence
  ECE alone, beside DuckDB's 15-bin confidence-ECE query over the same arrays;
* ``stream``: the rows written as one Parquet file: ``calcore metrics FILE --json``
  (every metric) and ``--metric conf_ece`` (the query's metric), beside the DuckDB query
  straight from the file, and beside DuckDB computing what every metric needs
  (``duckdb_every_metric.py``: its values checked against calcore's); peak RSS of each
  measured in a fresh child process;
* ``bootstrap``: 20 Poisson bootstrap replicates over a streamed 10M-row Parquet file
  (with the calibration test's 20 redrawn label sets, as the CLI runs them, and without;
  without, also with ``interval_method="normal"``, which needs no resample of each
  resample), the confidence ECE alone and every metric;
* ``csv``: a 10M-row CSV file streamed (``calcore metrics`` of a CSV over the size
  budget) beside DuckDB's ``read_csv`` query;
* ``sliced``: a Parquet file of N rows with a 50-value ``segment`` column:
  ``evaluate_by(scan(...), "segment")`` beside ``evaluate(scan(...))`` of the same
  metrics (the Slices view's six, then every metric), no tests (``n_resamples=0``), and
  DuckDB's per-segment confidence-ECE query;
* ``directory`` (only with ``--dir-rows``, e.g. 1,000,000,000: ~10 GB, not in CI):
  a directory of 50M-row Parquet files, ``calcore metrics DIR --json`` with
  ``--metric conf_ece`` (the query's metric) and with every metric, beside the same two
  DuckDB peers.

Usage: ``python benchmarks/bench_scale.py [--rows 10000000] [--stream-rows 100000000]
[--sliced-rows 100000000] [--dir-rows 0] [--only sliced]`` (files are written to a
temporary directory and removed).
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


def _write_parquet(path: str, n: int, *, first_seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    step = 10_000_000
    for start in range(0, n, step):  # write in pieces: the generator's memory stays bounded
        p, y = _data(min(step, n - start), seed=first_seed + start)
        table = pa.table({"label": y, "p_click": p})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=1_000_000)
    writer.close()


def _child_or_failure(code: str) -> dict:
    """:func:`_child`, or the seconds it ran and its error's line if it failed (the last
    line naming an error: DuckDB ends its messages with a line of advice)."""
    t = time.perf_counter()
    try:
        return _child(code)
    except RuntimeError as error:
        lines = str(error).strip().splitlines()
        named = [line for line in lines if "Error" in line]
        return {"seconds": time.perf_counter() - t, "error": (named or lines)[-1].strip()}


def _cli(source: str, *extra: str, env: dict | None = None) -> dict:
    """``calcore metrics SOURCE --json`` in a fresh interpreter: seconds, peak RSS, result."""
    args = ["metrics", source, "--json", *extra]
    return _child(
        "import contextlib, io, json, os, time\n"
        f"os.environ.update({env or {}!r})\n"
        "from calcore.cli import main\n"
        "buf = io.StringIO()\n"
        "t = time.perf_counter()\n"
        f"with contextlib.redirect_stdout(buf): code = main({args!r})\n"
        "s = time.perf_counter() - t\n"
        "r = json.loads(buf.getvalue())\n"
        "print(json.dumps({'seconds': s, 'code': code, 'conf_ece': r['conf_ece'], 'n': r['n'],"
        " 'report': {k: v for k, v in r.items() if isinstance(v, float)}}))"
    )


def _duck(src: str, query: str = QUERY) -> dict:
    """DuckDB's answer to ``query`` over ``src`` (as ``conf_ece``), timed in a fresh process."""
    return _child(
        "import time, json, duckdb\n"
        f"q = '''{query.format(src=src)}'''\n"
        "con = duckdb.connect()\n"
        "con.execute('SET enable_progress_bar = false')  # its bar would garble stdout\n"
        "t = time.perf_counter(); v = con.execute(q).fetchone()[0]\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'conf_ece': v}))"
    )


def _duck_every_metric(src: str, *, failing_ok: bool = False) -> dict:
    """DuckDB computing what every metric needs (``duckdb_every_metric.py``), timed in a
    fresh process: seconds, peak RSS and its values, to check against calcore's. With
    ``failing_ok``, a failed run (its quantiles of 1B rows can run out of memory) gives
    its seconds and error instead of stopping the benchmark."""
    here = os.path.dirname(os.path.abspath(__file__))
    run = _child if not failing_ok else _child_or_failure
    return run(
        "import json, sys, time, duckdb\n"
        f"sys.path.insert(0, {here!r})\n"
        "from duckdb_every_metric import every_metric\n"
        "con = duckdb.connect()\n"
        "con.execute('SET enable_progress_bar = false')\n"
        f"t = time.perf_counter(); v = every_metric(con, {src!r})\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'values': v}))"
    )


def _agreement(every: dict, duck: dict) -> float | None:
    """Largest difference between calcore's and DuckDB's values of the metrics both give
    (None if DuckDB gave none)."""
    if "values" not in duck:
        return None
    shared = [k for k in duck["values"] if k in every["report"] and k != "n"]
    return max(abs(every["report"][k] - duck["values"][k]) for k in shared)


def stream_case(n: int, folder: str) -> dict:
    path = os.path.join(folder, "preds.parquet")
    _write_parquet(path, n)
    every = _cli(path)
    conf = _cli(path, "--metric", "conf_ece")
    duck = _duck(f"(select p_click as p, label from {path!r})")
    duck_every = _duck_every_metric(path)
    return {
        "rows": n,
        "file_mb": round(os.path.getsize(path) / 2**20, 1),
        "calcore_metrics_all_s": round(every["seconds"], 3),
        "calcore_metrics_all_peak_rss_mb": round(every["peak_rss_mb"]),
        "calcore_metrics_conf_ece_s": round(conf["seconds"], 3),
        "calcore_metrics_conf_ece_peak_rss_mb": round(conf["peak_rss_mb"]),
        "duckdb_query_s": round(duck["seconds"], 3),
        "duckdb_peak_rss_mb": round(duck["peak_rss_mb"]),
        "duckdb_every_metric_s": round(duck_every["seconds"], 3),
        "duckdb_every_metric_peak_rss_mb": round(duck_every["peak_rss_mb"]),
        "all_ratio_to_duckdb": round(every["seconds"] / duck["seconds"], 2),
        "all_ratio_to_duckdb_every_metric": round(every["seconds"] / duck_every["seconds"], 2),
        "every_metric_largest_difference": _agreement(every, duck_every),
        "conf_ece_ratio_to_duckdb": round(conf["seconds"] / duck["seconds"], 2),
        "conf_ece": conf["conf_ece"],
        "all_metrics_conf_ece": every["conf_ece"],
        "duckdb_conf_ece": duck["conf_ece"],
    }


def bootstrap_case(n: int, folder: str) -> dict:
    path = os.path.join(folder, "boot.parquet")
    _write_parquet(path, n)
    conf = _cli(path, "--metric", "conf_ece", "--bootstrap", "20")
    every = _cli(path, "--bootstrap", "20")
    plain = _cli(path, "--metric", "conf_ece")
    # the CLI's --bootstrap also runs the calibration test (20 redrawn label sets): the
    # replicates alone, through the library
    alone, once = (
        _child(
            "import json, time, calcore\n"
            "t = time.perf_counter()\n"
            f"calcore.evaluate(calcore.scan({path!r}), metrics=['conf_ece'], n_resamples=20, "
            f"test_calibration=False, interval_method={method!r})\n"
            "print(json.dumps({'seconds': time.perf_counter() - t}))"
        )
        # the default (iterated) interval reads a resample of each resample; "normal" not
        for method in (None, "normal")
    )
    return {
        "rows": n,
        "replicates": 20,
        "conf_ece_with_replicates_s": round(conf["seconds"], 3),
        "conf_ece_replicates_without_test_s": round(alone["seconds"], 3),
        "conf_ece_replicates_without_test_normal_interval_s": round(once["seconds"], 3),
        "conf_ece_without_s": round(plain["seconds"], 3),
        "all_metrics_with_replicates_s": round(every["seconds"], 3),
        "peak_rss_mb": round(max(conf["peak_rss_mb"], every["peak_rss_mb"])),
    }


def csv_case(n: int, folder: str) -> dict:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    p, y = _data(n, seed=7)
    path = os.path.join(folder, "preds.csv")
    pacsv.write_csv(pa.table({"label": y, "p_click": p}), path)
    env = {"CALCORE_MAX_DECODED_BYTES": "1000000"}  # streamed, as a file over the budget
    conf = _cli(path, "--metric", "conf_ece", env=env)
    every = _cli(path, env=env)
    duck = _duck(f"(select p_click as p, label from read_csv({path!r}))")
    return {
        "rows": n,
        "file_mb": round(os.path.getsize(path) / 2**20, 1),
        "calcore_metrics_conf_ece_s": round(conf["seconds"], 3),
        "calcore_metrics_all_s": round(every["seconds"], 3),
        "calcore_peak_rss_mb": round(max(conf["peak_rss_mb"], every["peak_rss_mb"])),
        "duckdb_read_csv_query_s": round(duck["seconds"], 3),
        "conf_ece_ratio_to_duckdb": round(conf["seconds"] / duck["seconds"], 2),
        "conf_ece": conf["conf_ece"],
        "duckdb_conf_ece": duck["conf_ece"],
    }


SLICE_QUERY = """
select count(*) from (
  select s, sum(abs(sc - so)) / sum(c) from (
    select segment s, least(floor(conf * 15), 14) b, count(*) c, sum(conf) sc, sum(corr) so
    from (select segment, greatest(p_click, 1 - p_click) conf,
                 ((p_click >= 0.5) = (label = 1))::int corr from read_parquet({src!r}))
    group by s, b)
  group by s)
"""
SLICE_METRICS = ["accuracy", "conf_ece", "top_label_ece", "classwise_ece", "nll", "brier"]


def _write_segmented(path: str, n: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    names = pa.array([f"segment-{k:02d}" for k in range(50)])
    step = 10_000_000
    for start in range(0, n, step):
        p, y = _data(min(step, n - start), seed=start)
        codes = np.random.default_rng(start + 1).integers(0, 50, p.size).astype(np.int32)
        segment = pa.DictionaryArray.from_arrays(pa.array(codes), names)
        table = pa.table({"label": y, "p_click": p, "segment": segment})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=1_000_000)
    writer.close()


def _timed_evaluation(path: str, sliced: bool, metrics) -> dict:
    call = (
        f"calcore.evaluate_by(calcore.scan({path!r}, slice_columns=['segment']), 'segment', "
        f"metrics={metrics!r}, n_resamples=0)"
        if sliced
        else f"calcore.evaluate(calcore.scan({path!r}), metrics={metrics!r})"
    )
    return _child(
        "import json, time, calcore\n"
        f"t = time.perf_counter(); out = {call}\n"
        "s = time.perf_counter() - t\n"
        "overall = out.overall if hasattr(out, 'overall') else out\n"
        "n = len(out.slices) if hasattr(out, 'slices') else 1\n"
        "print(json.dumps({'seconds': s, 'slices': n, 'conf_ece': overall.conf_ece}))"
    )


def sliced_case(n: int, folder: str) -> dict:
    path = os.path.join(folder, "segmented.parquet")
    _write_segmented(path, n)
    out = {"rows": n, "file_mb": round(os.path.getsize(path) / 2**20, 1)}
    for name, metrics in (("slice_metrics", SLICE_METRICS), ("all_metrics", None)):
        plain = _timed_evaluation(path, False, metrics)
        sliced = _timed_evaluation(path, True, metrics)
        out[name] = {
            "unsliced_s": round(plain["seconds"], 2),
            "sliced_s": round(sliced["seconds"], 2),
            "slices": sliced["slices"],
            "ratio_sliced_to_unsliced": round(sliced["seconds"] / plain["seconds"], 2),
            "unsliced_peak_rss_mb": round(plain["peak_rss_mb"]),
            "sliced_peak_rss_mb": round(sliced["peak_rss_mb"]),
            "same_overall_conf_ece": abs(plain["conf_ece"] - sliced["conf_ece"]) < 1e-12,
        }
    duck = _duck(path, SLICE_QUERY)
    out["duckdb_per_segment_conf_ece_s"] = round(duck["seconds"], 2)
    out["slice_metrics_sliced_ratio_to_duckdb"] = round(
        out["slice_metrics"]["sliced_s"] / duck["seconds"], 2
    )
    return out


def directory_case(n: int, folder: str) -> dict:
    per_file = 50_000_000
    files = 0
    for k, start in enumerate(range(0, n, per_file)):
        sub = os.path.join(folder, f"day={k:03d}")
        os.makedirs(sub)
        rows = min(per_file, n - start)
        _write_parquet(os.path.join(sub, "part.parquet"), rows, first_seed=start)
        files += 1
    one = _cli(folder, "--metric", "conf_ece")
    print(json.dumps({"directory_calcore_conf_ece": one}), file=sys.stderr, flush=True)
    every = _cli(folder)
    print(json.dumps({"directory_calcore": every}), file=sys.stderr, flush=True)
    files_glob = folder + "/*/*.parquet"
    duck = _duck(f"(select p_click as p, label from read_parquet({files_glob!r}))")
    duck_every = _duck_every_metric(files_glob, failing_ok=True)
    failed = "error" in duck_every
    return {
        "rows": n,
        "files": files,
        "calcore_metrics_conf_ece_s": round(one["seconds"], 1),
        "calcore_metrics_conf_ece_peak_rss_mb": round(one["peak_rss_mb"]),
        "conf_ece_ratio_to_duckdb": round(one["seconds"] / duck["seconds"], 2),
        "calcore_metrics_all_s": round(every["seconds"], 1),
        "calcore_peak_rss_mb": round(every["peak_rss_mb"]),
        "duckdb_query_s": round(duck["seconds"], 2),
        "duckdb_peak_rss_mb": round(duck["peak_rss_mb"]),
        # until it failed, if it did (then no ratio)
        "duckdb_every_metric_s": round(duck_every["seconds"], 1),
        "duckdb_every_metric_error": duck_every.get("error"),
        "duckdb_every_metric_peak_rss_mb": None if failed else round(duck_every["peak_rss_mb"]),
        "all_ratio_to_duckdb_every_metric": (
            None if failed else round(every["seconds"] / duck_every["seconds"], 2)
        ),
        "every_metric_largest_difference": _agreement(every, duck_every),
        "conf_ece": every["conf_ece"],
        "duckdb_conf_ece": duck["conf_ece"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--stream-rows", type=int, default=100_000_000)
    parser.add_argument("--boot-rows", type=int, default=10_000_000)
    parser.add_argument("--csv-rows", type=int, default=10_000_000)
    parser.add_argument("--sliced-rows", type=int, default=100_000_000)
    parser.add_argument("--dir-rows", type=int, default=0, help="0: skip the directory case")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--only",
        choices=("memory", "stream", "bootstrap", "csv", "sliced", "directory"),
        action="append",
    )
    args = parser.parse_args()
    cases = {
        "memory": lambda folder: memory_case(args.rows, args.repeats),
        "stream": lambda folder: stream_case(args.stream_rows, folder),
        "bootstrap": lambda folder: bootstrap_case(args.boot_rows, folder),
        "csv": lambda folder: csv_case(args.csv_rows, folder),
        "sliced": lambda folder: sliced_case(args.sliced_rows, folder),
    }
    if args.dir_rows:
        cases["directory"] = lambda folder: directory_case(args.dir_rows, folder)
    out = {}
    for name, run in cases.items():
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            out[name] = run(folder)
        print(json.dumps({name: out[name]}), file=sys.stderr, flush=True)  # progress
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
