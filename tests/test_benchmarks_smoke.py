"""Every benchmark (and study) that has a tiny mode runs to the end and prints its JSON.

A benchmark path can stop working unnoticed (a renamed import, a changed signature): CI
never runs them at full size. Each script runs here in a subprocess at tiny sizes
(``--smoke``, or its own size flags), and its JSON must parse and carry the keys its
readers (docs/, the issues' notes) rely on. No timing is checked: at these sizes the
figures mean nothing. The two that start an interpreter per case are marked slow.

Left out, each for a reason:

* ``bench_reviewers.py``: already run at small scale by ``tests/e2e/test_load.py``
  (eight browser sessions; needs Chromium);
* ``bench_dashboard.py``: drives the app in headless Chromium against a Streamlit server;
  with ``--repeats 1`` and every ``--skip-*`` it still uploads the 10,000 x 100 sample
  with 200 resamples and switches four views (its docstring: cold opens of 10-28 s on the
  loaded 2-core machine), over the ~20 s a smoke case may take (the e2e tests cover the
  pages);
* ``bench_spark.py``: starts a JVM and a Spark session; its smallest run (``--rows 20000
  --files 2 --cases conf_ece``) took 49 s at load average 8 on the 2-core machine, 31 s
  of it the session's start, over the ~20 s a smoke case may take (``tests/spark`` covers
  ``calcore.spark``);
* ``replicate_*.py``, ``study_estimators.py``: run in their ``--quick`` sizes by
  ``tests/test_replications.py``; ``study_intervals.py`` by
  ``tests/test_interval_coverage.py``; ``duckdb_every_metric.py`` by
  ``tests/test_duckdb_reference.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

#: script -> (arguments, keys of its JSON object that must be there)
SMOKE = {
    "bench_metrics.py": (
        "--n 1000 --classes 10 --repeats 1".split(),
        ["benchmark", "shape", "timings", "memory"],
    ),
    "bench_bootstrap.py": (
        ["--smoke"],
        ["cifar10_test_10000x10", "synthetic_wide100_test_10000x100", "scale_cases"],
    ),
    "bench_calibrators_binning.py": (["--smoke"], ["shape", "tl-hb", "cw-hb", "irm"]),
    "bench_calibrators_nafir.py": (["--smoke"], ["results"]),
    "bench_calibrators_parametric.py": (
        ["--smoke"],
        ["timings", "openblas_threads_outside_fits"],
    ),
    "bench_io.py": (["--smoke"], ["small", "reader_used", "peak_rss_mb"]),
    "bench_kde.py": (["--smoke"], ["timings", "grid_vs_direct", "cell_moments"]),
    "bench_scale.py": (
        "--rows 20000 --stream-rows 20000 --boot-rows 20000 --csv-rows 20000 "
        "--sliced-rows 20000 --repeats 1".split(),
        ["memory", "stream", "bootstrap", "csv", "sliced"],
    ),
    "study_slices.py": (
        "--reps 1 --slices 4 --planted 1 --min-rows 100 --max-rows 200 --resamples 19 "
        "--classes 2".split(),
        ["settings", "planted", "null", "seconds"],
    ),
    "study_verdict.py": (  # its Markdown goes to the test's folder, not docs/replications
        "--quick --reps 1 --resamples 19 --methods ts tl-hb --out {tmp}".split(),
        ["settings", "cells"],
    ),
}


def _run(script: str, args: list[str], tmp_path: Path) -> dict:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # their temporary files go with the test's
    root = str(BENCHMARKS.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *(a.format(tmp=tmp_path) for a in args)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout)


#: Scripts that start many interpreters (one per case, for each case's peak memory): tens
#: of seconds even at tiny sizes.
SLOW = {"bench_scale.py", "bench_bootstrap.py"}


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "script", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW else s for s in sorted(SMOKE)]
)
def test_the_benchmark_runs_at_tiny_sizes_and_prints_its_json(script, tmp_path):
    args, keys = SMOKE[script]
    out = _run(script, args, tmp_path)
    assert isinstance(out, dict)
    missing = [k for k in keys if k not in out]
    assert not missing, f"{script}: no {missing} in its JSON (keys: {sorted(out)})"


def test_every_benchmark_script_is_smoked_or_left_out_with_a_reason():
    """A new ``bench_*.py`` gets a tiny mode here, or a line in the module docstring."""
    left_out = {"bench_reviewers.py", "bench_dashboard.py", "bench_spark.py"}
    scripts = {p.name for p in BENCHMARKS.glob("bench_*.py")}
    assert scripts == {name for name in SMOKE if name.startswith("bench_")} | left_out
    assert all(name in __doc__ for name in left_out)
