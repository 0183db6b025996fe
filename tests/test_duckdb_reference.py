"""calcore's streamed report against an independent implementation: the SQL of
``benchmarks/duckdb_every_metric.py`` (the peer ``bench_scale.py`` times), run by DuckDB
on the same Parquet file. Equal-width cells, exact equal-mass ACE/TACE bins from DuckDB's
``quantile_disc`` and the scoring rules must agree to rounding (the sums' orders differ)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore

PEER = Path(__file__).resolve().parent.parent / "benchmarks" / "duckdb_every_metric.py"


def _peer():
    spec = importlib.util.spec_from_file_location("duckdb_every_metric", PEER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("ties", [False, True], ids=["continuous", "rounded scores"])
def test_streamed_report_equals_duckdb_sql_of_the_same_statistics(tmp_path, ties):
    rng = np.random.default_rng(41)
    n = 30_000
    p = rng.beta(0.5, 3.0, n)
    if ties:  # many ties at the equal-mass cuts: both must keep ties in one bin
        p = np.round(p, 2)
    p[:50] = rng.random(50) * 1e-4  # below TACE's cut (1e-3) in class 1
    y = (rng.random(n) < np.clip(1.3 * p, 0.0, 1.0)).astype(np.int64)
    path = tmp_path / "preds.parquet"
    pq.write_table(pa.table({"label": y, "p_click": p}), path, row_group_size=7_000)

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute("SET threads = 1")  # one summation order, run after run
    want = _peer().every_metric(con, str(path))
    report = calcore.evaluate(calcore.scan(str(path)), n_resamples=0)
    assert want["n"] == n
    shared = ["accuracy", "nll", "brier", "conf_ece", "conf_ece_l2", "top_label_ece"]
    for key in shared + ["classwise_ece", "ace", "tace"]:
        # both sum 30,000 terms, in different orders: 1e-9 is far above their rounding
        # (seen: 1.2e-12) and far below one point in a wrong bin (ACE moves by 1.5e-7)
        assert getattr(report, key) == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
