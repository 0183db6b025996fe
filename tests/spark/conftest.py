"""One Spark session (local[2]) for every Spark test of the run.

Skipped, with the reason, only when pyspark cannot be imported and Spark is not
required. ``make test`` installs pyspark and Java and exports ``CALCORE_REQUIRE_SPARK=1``,
so that in CI a missing pyspark or Java fails these tests instead of skipping them
silently.
"""

from __future__ import annotations

import os
import time

import pytest

REQUIRED = os.environ.get("CALCORE_REQUIRE_SPARK") == "1"


def _pyspark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        return f"pyspark cannot be imported ({exc}); pip install \"calibration-lens[spark]\""
    return None


MISSING = _pyspark_missing()


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if not str(item.fspath).startswith(here):
            continue
        # pyspark 4.3 warns that it does not "fully support" pandas 3 on every Arrow map
        item.add_marker(
            pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
        )
        if MISSING and not REQUIRED and "needs_no_spark" not in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"Spark tests: {MISSING}"))


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_no_spark: runs without pyspark (tests/spark)")


JVM_STDERR: list[str] = []  # the file the session's JVM (and its workers) write stderr to


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The session's SparkSession: local[2], 4 shuffle partitions, no UI, quiet.

    The JVM is started with its stderr (which its Python workers inherit) in a file, so
    that a test can check what a user's terminal would show (:func:`jvm_stderr`).
    """
    import calcore.spark

    if MISSING:  # only reached when CALCORE_REQUIRE_SPARK=1: fail, do not skip
        pytest.fail(f"CALCORE_REQUIRE_SPARK=1 (make test) but {MISSING}")
    log = tmp_path_factory.mktemp("spark") / "jvm-stderr.txt"
    start = time.perf_counter()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = os.dup(2)
    os.dup2(fd, 2)  # the JVM inherits fd 2 when it starts, and keeps it
    try:
        session = calcore.spark.session(
            master="local[2]",
            app_name="calcore-tests",
            config={
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "2",
                # small Arrow batches: several per partition, batch boundaries tested
                "spark.sql.execution.arrow.maxRecordsPerBatch": "4096",
            },
        )
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
    JVM_STDERR.append(str(log))
    print(f"\nSpark session started in {time.perf_counter() - start:.1f} s")
    yield session
    session.stop()


@pytest.fixture
def jvm_stderr(spark) -> str:
    """Path of the file holding everything the session's JVM wrote to stderr."""
    return JVM_STDERR[0]


@pytest.fixture(scope="session")
def logs(tmp_path_factory) -> str:
    """12,000 4-class rows with integer weights, a day column and a split column (values
    in several spellings), in three files (one in a subfolder, one with a space in its
    name): shared by the evaluate and CLI tests."""
    import numpy as np
    import pyarrow as pa

    from ._data import multiclass, write_parts

    path = tmp_path_factory.mktemp("evaluate") / "logs"
    table = multiclass(12_000, 4, seed=11)
    rng = np.random.default_rng(3)
    table = table.append_column("weight", pa.array(rng.integers(0, 4, table.num_rows) * 1.0))
    spellings = ["Test", "calib", "VAL", " eval", "test"]
    table = table.append_column("split", pa.array(rng.choice(spellings, table.num_rows)))
    write_parts(
        str(path), table, [4_000, 5_000, 3_000], names=["a.parquet", "b/c.parquet", "d e.parquet"]
    )
    return str(path)
