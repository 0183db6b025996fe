"""calcore.evaluate / evaluate_by of calcore.from_spark: the embedded engine's numbers.

Each pass is a mapInArrow job; the states merge by first row position, and Poisson
weights and redrawn labels are keyed by positions computed in Spark, so every metric,
interval and p-value equals the embedded engine's on the same files to <= 1e-9 (in
practice ~1e-14) whatever the partitioning: a seeded random number of partitions, and a
full shuffle.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import calcore
from calcore.statistics import engine

from ._data import binary, multiclass, write_parts

TOL = 1e-9
WORST: dict = {}  # the largest difference per statistic, printed by the last test


@pytest.fixture(scope="module")
def folder(logs):
    """The session's 12,000-row dataset (``logs`` in conftest.py, shared with the CLI's
    tests)."""
    return logs


def _note(kind, value):
    WORST[kind] = max(WORST.get(kind, 0.0), float(value))


def _same_reports(emb, got, label=""):
    for key, value in emb.metrics.items():
        if value is None:
            assert got.metrics[key] is None, key
            continue
        diff = abs(value - got.metrics[key])
        _note(f"metric {key}", diff)
        assert diff <= TOL, (label, key, value, got.metrics[key])
    assert emb.intervals.keys() == got.intervals.keys()
    for key, interval in emb.intervals.items():
        diff = max(
            abs(interval.low - got.intervals[key].low), abs(interval.high - got.intervals[key].high)
        )
        _note("interval bounds", diff)
        assert diff <= TOL, (label, key)
    if emb.calibration_test is not None:
        for key, p in emb.calibration_test.p_values.items():
            diff = abs(p - got.calibration_test.p_values[key])
            _note("calibration test p-value", diff)
            assert diff <= TOL, (label, key)
    else:
        assert got.calibration_test is None


def _read(spark, path):
    # Spark reads a folder's top level only; calcore every subfolder
    return spark.read.option("recursiveFileLookup", "true").parquet(path)


def _shuffled(df, seed):
    """A seeded random number of partitions, then a full shuffle of the rows."""
    from pyspark.sql import functions as F

    n = int(np.random.default_rng(seed).integers(2, 9))
    return df.repartition(n, F.rand(seed))


def test_fixed_bins_weights_bootstrap_and_test_match_the_embedded_engine(spark, folder):
    emb = calcore.evaluate(calcore.scan(folder), bins=10, n_resamples=20, seed=5)
    src = calcore.from_spark(_shuffled(_read(spark, folder), 1))
    assert src.class_names == ("c0", "c1", "c2", "c3") and src.weight_column == "weight"
    got = calcore.evaluate(src, bins=10, n_resamples=20, seed=5)
    assert src.engine.jobs == 3  # profile (ACE, TACE, KDE), one selection, accumulate
    _same_reports(emb, got, "fixed bins")


def test_split_positions_count_the_split_s_rows_as_the_embedded_reader(spark, folder):
    """A row's position counts the selected split's rows only (as ``scan(split=)``), so
    the bootstrap intervals and the calibration test's p-values are the embedded ones
    under a random partitioning and a full shuffle (the calib rows: test_cli.py's --by
    test, whose slices' p-values are keyed by the positions too)."""
    split = "test"
    options = dict(bins=10, n_resamples=20, seed=5)
    emb = calcore.evaluate(calcore.scan(folder, split=split), **options)
    src = calcore.from_spark(_shuffled(_read(spark, folder), 3), split=split)
    got = calcore.evaluate(src, **options)
    assert emb.n == got.n < 12_000 and emb.intervals and emb.calibration_test
    _same_reports(emb, got, f"split={split}")
    # the seeded sample of the split's rows (positions within the split, the split's count)
    ours, n = src.sample(1_000, seed=4)
    theirs, n_theirs = calcore.scan(folder, split=split).sample(1_000, seed=4)
    assert n == n_theirs == emb.n and ours.n_samples == 1_000
    np.testing.assert_array_equal(ours.probs, theirs.probs)
    np.testing.assert_array_equal(ours.labels, theirs.labels)


def test_equal_mass_bins_are_exact_whatever_the_partitioning(spark, folder):
    emb = calcore.evaluate(calcore.scan(folder, weight_column=False), binning="equal-mass", bins=12)
    df = _read(spark, folder).drop("weight")
    got = calcore.evaluate(calcore.from_spark(df.repartition(5)), binning="equal-mass", bins=12)
    _same_reports(emb, got, "equal-mass")


def test_load_options_are_one_object_as_for_scan(spark, folder):
    """from_spark takes options=LoadOptions(...) as scan does: the same source as the
    keywords, and the same refusals (both at once; a CSV's decimal mark)."""
    options = calcore.LoadOptions(weight_column=False, split_column="split")
    emb = calcore.evaluate(calcore.scan(folder, options=options, split="test"), bins=8)
    src = calcore.from_spark(_read(spark, folder), options=options, split="test")
    assert src.weight_column is None and src.class_names == ("c0", "c1", "c2", "c3")
    _same_reports(emb, calcore.evaluate(src, bins=8), "options=")
    with pytest.raises(TypeError, match="not both"):
        calcore.from_spark(_read(spark, folder), options=options, weight_column="weight")
    with pytest.raises(calcore.CalcoreError, match="decimal=','.*typed"):
        calcore.from_spark(_read(spark, folder), options=calcore.LoadOptions(decimal=","))


def test_binary_positions_and_metrics_by_file_order(spark, tmp_path):
    write_parts(str(tmp_path), binary(6_000, seed=2), [1_000, 5_000])
    emb = calcore.evaluate(calcore.scan(str(tmp_path)), n_resamples=20, seed=1)
    src = calcore.from_spark(spark.read.parquet(str(tmp_path)).repartition(3))
    _same_reports(emb, calcore.evaluate(src, n_resamples=20, seed=1), "binary")


def test_evaluate_by_slices_match_the_embedded_engine(spark, folder):
    options = dict(interval_resamples=10, n_resamples=50, beyond_model=False, seed=2)
    for by in ("day:q4",):
        emb = calcore.evaluate_by(calcore.scan(folder, slice_columns=["day"]), by=by, **options)
        src = calcore.from_spark(_shuffled(_read(spark, folder), 7), slice_columns=["day"])
        got = calcore.evaluate_by(src, by=by, **options)
        _same_reports(emb.overall, got.overall, "overall")
        mine = {s.values: s for s in got.slices}
        assert mine.keys() == {s.values for s in emb.slices}
        for s in emb.slices:
            assert (mine[s.values].n, mine[s.values].weight) == (s.n, s.weight)
            if s.report is not None:
                _same_reports(s.report, mine[s.values].report, str(s.values))
            if s.p_value is not None:
                _note("slice p-value", abs(s.p_value - mine[s.values].p_value))
                assert abs(s.p_value - mine[s.values].p_value) <= TOL
    # the bottom-k sample the model's curve is fitted on (beyond_model): the same rows
    ours, n = src.sample(2_000, seed=4)
    theirs, n_theirs = calcore.scan(folder).sample(2_000, seed=4)
    assert n == n_theirs == 12_000 and ours.n_samples == 2_000 and not ours.metadata
    np.testing.assert_array_equal(ours.probs, theirs.probs)
    np.testing.assert_array_equal(ours.labels, theirs.labels)
    np.testing.assert_array_equal(ours.sample_weight, theirs.sample_weight)
    with pytest.raises(calcore.CalcoreError, match="only a fitted calcore calibrator"):
        src.with_transform(lambda preds: preds)


def test_a_bad_value_is_named_by_file_and_row(spark, tmp_path):
    table = multiclass(3_000, 3, seed=4)
    p = table["p_c1"].to_numpy().copy()
    p[1234] = 1.5  # in the second file, its row 234
    table = table.set_column(table.column_names.index("p_c1"), "p_c1", pa.array(p))
    write_parts(str(tmp_path), table, [1_000, 2_000])
    src = calcore.from_spark(spark.read.parquet(str(tmp_path)).repartition(2), scores="probs")
    with pytest.raises(calcore.CalcoreError, match=r"part-01\.parquet.*row 234|row 234.*part-01"):
        calcore.evaluate(src, bins=5)


def test_a_file_spark_cannot_read_is_named(spark, tmp_path):
    write_parts(str(tmp_path), binary(500, seed=1), [500])
    df = spark.read.parquet(str(tmp_path))
    src = calcore.from_spark(df)
    broken = tmp_path / "part-00.parquet"
    broken.write_bytes(b"not parquet at all" * 10)
    with pytest.raises(calcore.CalcoreError) as info:
        calcore.evaluate(src, bins=5)
    text = str(info.value)
    assert str(tmp_path) in text and "Spark failed" in text and len(text) < 600


def test_a_worker_of_another_calcore_version_is_refused(spark, tmp_path, monkeypatch):
    write_parts(str(tmp_path), binary(500, seed=1), [500])
    src = calcore.from_spark(spark.read.parquet(str(tmp_path)))
    # the driver now packs its jobs as another version: the (real) workers refuse them
    monkeypatch.setattr(engine, "_version", lambda: "0.0.0-driver")
    with pytest.raises(calcore.CalcoreError, match=r"calcore 0\.0\.0-driver.*install calcore"):
        calcore.evaluate(src, bins=5)


def test_worst_differences(capsys):
    with capsys.disabled():
        print("\nSpark vs embedded, max abs difference:")
        for kind, value in sorted(WORST.items()):
            print(f"  {kind}: {value:.2e}")
    assert all(v <= TOL for v in WORST.values())
