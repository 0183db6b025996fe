"""Row positions computed in Spark equal the embedded engine's reading order."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

import calcore
import calcore.io.stream
import calcore.spark
from calcore.spark import with_row_positions

from ._data import write_parts


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """60,000 rows in 7 files of uneven sizes (one empty, several row groups each), in
    subfolders and under a name with a space; column ``i`` = the row's index in calcore's
    reading order."""
    folder = tmp_path_factory.mktemp("positions")
    sizes = [9000, 0, 20000, 1, 12000, 15000, 3999]
    names = [
        "a/part-0.parquet",
        "a/part-1.parquet",
        "a/part 2.parquet",  # "%20" in Spark's URI: decoded before sorting
        "b.parquet",
        "c/x/part-0.parquet",
        "c/x/part-1.parquet",
        "d.parquet",
    ]
    n = sum(sizes)
    rng = np.random.default_rng(3)
    table = pa.table({"i": np.arange(n, dtype=np.int64), "x": rng.random(n)})
    # the files' content follows calcore's sorted order, whatever the list order above
    order = sorted(range(len(names)), key=lambda k: str(folder / names[k]))
    write_parts(
        folder,
        table,
        [sizes[k] for k in order],
        names=[names[k] for k in order],
        row_group_size=4000,
    )
    return folder


def test_the_embedded_engine_reads_column_i_in_order(folder):
    """The premise: calcore's scan reads the files so that column i is 0..n-1."""
    import pyarrow.parquet as pq

    files = calcore.io.stream.source_files(str(folder))
    got = np.concatenate([pq.read_table(f, columns=["i"])["i"].to_numpy() for f in files])
    np.testing.assert_array_equal(got, np.arange(got.size))


def test_positions_are_the_embedded_order_whatever_spark_does(spark, folder):
    k = random.Random().randint(2, 9)
    # calcore walks subfolders; Spark does so when told (else it reads only d.parquet here)
    df = with_row_positions(spark.read.option("recursiveFileLookup", "true").parquet(str(folder)))
    # a full shuffle into k partitions, then a filter: positions do not move
    shuffled = df.repartition(k).where("x < 0.9")
    got = shuffled.select("i", calcore.spark.POSITION_COLUMN).toArrow()
    assert got.schema.field(calcore.spark.POSITION_COLUMN).type == pa.int64()
    i = got["i"].to_numpy()
    np.testing.assert_array_equal(got[calcore.spark.POSITION_COLUMN].to_numpy(), i, f"k={k}")
    every = df.repartition(k).select(calcore.spark.POSITION_COLUMN).toArrow()[0].to_numpy()
    np.testing.assert_array_equal(np.sort(every), np.arange(60_000))


def test_split_positions_count_the_selected_rows_before(spark, folder):
    """Among 7 files (one empty, one of 1 row) read in k random partitions: a selected
    row's split position is the number of selected rows before it in calcore's order."""
    from pyspark.sql import functions as F

    from calcore.spark._positions import SPLIT_POSITION_COLUMN, with_split_positions

    k = random.Random().randint(2, 9)
    df = spark.read.option("recursiveFileLookup", "true").parquet(str(folder)).repartition(k)
    got = with_split_positions(df, F.col("x") < 0.3).select("i", "x", SPLIT_POSITION_COLUMN)
    got = got.toArrow().sort_by("i")
    x = got["x"].to_numpy()
    assert got["i"].to_numpy().tolist() == list(range(60_000))
    selected = x < 0.3
    expected = np.cumsum(selected) - selected  # selected rows before each row
    np.testing.assert_array_equal(
        got[SPLIT_POSITION_COLUMN].to_numpy()[selected], expected[selected], f"k={k}"
    )


def test_row_key_positions_are_xxhash64_of_the_key(spark, folder):
    from pyspark.sql import functions as F

    df = spark.read.parquet(str(folder)).where("i % 7 = 0")
    keyed = with_row_positions(df.repartition(3), row_key="i", column="key")
    got = keyed.select("i", "key", F.xxhash64(F.col("i")).alias("h")).toArrow()
    np.testing.assert_array_equal(got["key"].to_numpy(), got["h"].to_numpy())
    assert np.unique(got["key"].to_numpy()).size == got.num_rows  # distinct keys, distinct


def test_refusals_name_the_fix(spark, folder):
    df = spark.read.parquet(str(folder))
    with pytest.raises(calcore.CalcoreError, match="already in the DataFrame"):
        with_row_positions(df, column="i")
    with pytest.raises(calcore.CalcoreError, match=r"row_key='nope' is not a column.*'i'"):
        with_row_positions(df, row_key="nope")
    with pytest.raises(calcore.CalcoreError, match="not read from files.*row_key="):
        with_row_positions(spark.range(3))


@pytest.mark.needs_no_spark
def test_local_path_decodes_spark_s_uris():
    assert calcore.spark.local_path("file:/d/a%20b.parquet") == "/d/a b.parquet"
    assert calcore.spark.local_path("file:///d/c.parquet") == "/d/c.parquet"
    assert calcore.spark.local_path("s3a://bucket/k%3D1/x.parquet") == "s3a://bucket/k=1/x.parquet"


@pytest.mark.needs_no_spark
def test_the_docstring_examples_of_calcore_spark_run():
    """Those that need no cluster run (the others are marked +SKIP: they need data)."""
    import doctest

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for name in calcore.spark.__all__:
        obj = getattr(calcore.spark, name)
        if callable(obj):
            for test in finder.find(obj, name, globs={"calcore": calcore}):
                runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted >= 2
