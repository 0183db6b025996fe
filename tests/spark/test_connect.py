"""``from_spark`` + ``evaluate`` through Spark Connect: a local Connect server
(``calcore.spark.session(remote="local[2]")``) gives the embedded engine's numbers.

Runs where the Spark tests must run (``CALCORE_REQUIRE_SPARK=1``: ``make test`` and so CI)
or when asked (``CALCORE_SPARK_CONNECT=1``); ``CALCORE_SPARK_CONNECT=0`` leaves it out. The
local Connect server is a second JVM beside the test session's: on an idle 2-core machine
it started in 12 s and the whole test took 24-26 s (the other Spark tests ~85 s), at load
6-11 it took 25-43 s to start. It runs in a fresh Python process, because pyspark switches
the whole process to Connect once a Connect session starts (``SPARK_CONNECT_MODE_ENABLED``),
which would turn the classic session's tests into Connect ones. Its packages (grpcio,
grpcio-status, googleapis-common-protos, zstandard: ~14 MB of wheels) are pinned in
requirements-dev.txt and are the ``spark-connect`` extra:
``pip install "calibration-lens[spark-connect]"``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ASKED = os.environ.get("CALCORE_SPARK_CONNECT")
WANTED = _ASKED == "1" or (_ASKED != "0" and os.environ.get("CALCORE_REQUIRE_SPARK") == "1")

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import calcore, calcore.spark
    from pyspark.sql import functions as F

    path = sys.argv[1]
    start = time.perf_counter()
    spark = calcore.spark.session(
        remote="local[2]", config={"spark.sql.shuffle.partitions": "4"}
    )
    started = time.perf_counter() - start
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    df = spark.read.option("recursiveFileLookup", "true").parquet(path)
    src = calcore.from_spark(df.repartition(3, F.rand(1)), split="test")
    options = dict(bins=10, n_resamples=20, seed=5)
    got = calcore.evaluate(src, **options)
    emb = calcore.evaluate(calcore.scan(path, split="test"), **options)
    spark.stop()
    diffs = [abs(v - got.metrics[k]) for k, v in emb.metrics.items() if v is not None]
    for k, i in emb.intervals.items():
        diffs += [abs(i.low - got.intervals[k].low), abs(i.high - got.intervals[k].high)]
    for k, p in emb.calibration_test.p_values.items():
        diffs.append(abs(p - got.calibration_test.p_values[k]))
    print(json.dumps({"started": started, "n": [emb.n, got.n], "worst": max(diffs),
                      "compared": len(diffs), "jobs": src.engine.jobs}))
    """
)


def _missing() -> list[str]:
    missing = []
    for module, package in (("grpc", "grpcio"), ("grpc_status", "grpcio-status"),
                            ("google.rpc", "googleapis-common-protos"),
                            ("zstandard", "zstandard")):  # fmt: skip
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    return missing


@pytest.mark.skipif(
    not WANTED, reason="Spark Connect test: CALCORE_REQUIRE_SPARK=1 or CALCORE_SPARK_CONNECT=1"
)
def test_from_spark_through_a_local_connect_server_equals_the_embedded_engine(logs):
    missing = _missing()
    if missing:
        pytest.fail(
            "the Spark Connect test runs (CALCORE_REQUIRE_SPARK=1 or CALCORE_SPARK_CONNECT=1) "
            f"but {', '.join(missing)} cannot be imported: "
            'pip install "calibration-lens[spark-connect]" (or make install).'
        )
    start = time.perf_counter()
    path = os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])  # this checkout first
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, logs],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=path),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\nSpark Connect: server started in {facts['started']:.1f} s, the whole run "
          f"{time.perf_counter() - start:.1f} s")  # fmt: skip
    assert facts["n"][0] == facts["n"][1] < 12_000 and facts["jobs"] == 3
    assert facts["compared"] > 40 and facts["worst"] <= 1e-9, facts
