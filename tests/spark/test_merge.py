"""The two-level merge of a pass's states (calcore/spark/_merge.py).

Without Spark: a local engine folds contiguous parts of a scanned stream with the tasks'
own code (:func:`calcore.statistics.passes.partition_states`), packs their states as the
tasks do and merges them in one level or in hashed groups (:func:`merge_group`, then the
driver's :func:`merge_rows`): the group merge equals the sequential merge, array by
array, and the reports equal the embedded engine's. With Spark: the two-level path
forced (random groups and partitions) on bootstrap + KDE-ECE + the calibration test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

import calcore
from calcore.spark import _merge
from calcore.spark._evaluate import SparkStream
from calcore.statistics import engine
from calcore.statistics.passes import partition_states, pass_job

from ._data import binary, multiclass, write_parts

TOL = 1e-9
METRICS = ["conf_ece", "classwise_ece", "kde_ece", "kde_ece_classwise", "brier"]
OPTIONS = dict(metrics=METRICS, n_resamples=20, seed=3)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """9,000 3-class rows with integer weights, in four files."""
    path = tmp_path_factory.mktemp("merge") / "logs"
    table = multiclass(9_000, 3, seed=21)
    rng = np.random.default_rng(8)
    table = table.append_column("weight", pa.array(rng.integers(0, 3, table.num_rows) * 1.0))
    write_parts(str(path), table, [2_000, 3_000, 1_500, 2_500])
    return str(path)


@pytest.fixture(scope="module")
def embedded(folder):
    return calcore.evaluate(calcore.scan(folder), **OPTIONS)


def _rows(states, kinds, first, part):
    """A task's output rows, as :func:`calcore.spark._evaluate.task_states` writes them."""
    import json

    out = [
        (first, part, i, json.dumps({"lane": k, "entry": e}), engine.pack(s))
        for i, (k, e, s) in enumerate(states)
    ]
    if kinds is not None:
        out.append((first, part, len(out), json.dumps({"kinds": kinds}), engine.pack({})))
    return out


def _table(rows):
    names = ["first", "part", "seq", "lane", "state"]
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


class LocalEngine:
    """The Spark engine's merge without Spark: ``parts`` contiguous parts of the stream's
    batches, folded by the tasks' code; ``groups`` 0 (one level) or the groups, hashed
    as :func:`calcore.spark._merge.two_level` does (any deterministic map will do)."""

    def __init__(self, stream, parts: int, groups: int, max_result=None):
        self.stream, self.n_parts, self.groups, self.max_result = stream, parts, groups, max_result
        self.log = []
        self.tasks = {}  # phase -> (job, the tasks' rows before any group merge)

    def slice_batches(self):
        return self.stream.slice_batches()

    def sample(self, k, seed):  # evaluate_by's beyond-model ranking: the embedded sample
        return self.stream.sample(k, seed=seed)

    def with_transform(self, saved):  # and its curve, shipped as its JSON as on Spark
        from calcore.calibrators._saved import calibrator_from_saved, parse_json

        fitted = calibrator_from_saved(parse_json(saved, source="test"), source="test")
        other = LocalEngine(
            self.stream.with_transform(fitted.transform), self.n_parts, self.groups,
            self.max_result,
        )  # fmt: skip
        return other  # its passes logged apart: the tests count the evaluation's own

    def run_pass(self, lanes, phase):
        bounds = _merge.state_bounds(lanes, phase)
        _merge.merge_groups(bounds, lanes, self.stream.name, self.max_result)
        job = engine.unpack(engine.pack(pass_job(lanes, phase)))
        batches = list(self.stream.batches())
        cuts = np.array_split(np.arange(len(batches)), self.n_parts)
        rows = []
        for part, idx in enumerate(cuts):
            if idx.size == 0:
                continue
            mine = [batches[i] for i in idx]
            states, kinds = partition_states(job, mine)
            rows += _rows(states, kinds, int(mine[0].position), part)
        self.tasks[phase] = job, rows
        groups = self.groups if phase == "accumulate" else 0
        if groups:
            by_group: dict = {}
            for row in sorted(rows, key=lambda r: r[:3]):
                by_group.setdefault(hash(row[0]) % groups, []).append(row)
            rows = []
            for g, members in sorted(by_group.items()):
                first, states, kinds = _merge.merge_group(job, members, self.stream.name)
                rows += _rows(states, kinds, first, g)
        sizes = [len(r[4]) for r in rows]
        self.log.append((phase, bounds, max(sizes, default=0)))
        _merge.merge_rows(lanes, phase, _table(rows), self.stream.name)


def _local(stream, parts, groups, **kw):
    fields = {f.name: getattr(stream, f.name) for f in dataclasses.fields(type(stream))}
    local = LocalEngine(stream, parts, groups, **kw)
    return SparkStream(**fields, engine=local), local


def _same(emb, got, tol=TOL):
    worst = 0.0
    for key, value in emb.metrics.items():
        if value is None:
            assert got.metrics[key] is None, key
            continue
        worst = max(worst, abs(value - got.metrics[key]))
    for key, interval in emb.intervals.items():
        other = got.intervals[key]
        worst = max(worst, abs(interval.low - other.low), abs(interval.high - other.high))
    assert (emb.calibration_test is None) == (got.calibration_test is None)
    if emb.calibration_test is not None:
        for key, p in emb.calibration_test.p_values.items():
            worst = max(worst, abs(p - got.calibration_test.p_values[key]))
    assert worst <= tol, worst
    return worst


# ---------------------------------------------------------------- without Spark
@pytest.mark.needs_no_spark
def test_group_merge_equals_the_sequential_merge_array_by_array(folder):
    """The accumulating pass's states of 7 parts merged in one level and in 3 groups."""
    src, local = _local(calcore.scan(folder, batch_rows=1_000), 7, 0)
    calcore.evaluate(src, **OPTIONS)
    job, rows = local.tasks["accumulate"]
    assert len({r[1] for r in rows}) == 7
    # sequential: every part's state into one lane, in position order
    first, sequential, _ = _merge.merge_group(job, rows)
    assert first == 0
    # two levels: parts {0, 3, 6}, {1, 4}, {2, 5}, then the three groups in order
    grouped = []
    for g in range(3):
        members = [r for r in rows if r[1] % 3 == g]
        f, states, kinds = _merge.merge_group(job, members)
        grouped += _rows(states, kinds, f, g)
    _, two, _ = _merge.merge_group(job, sorted(grouped, key=lambda r: r[:3]))
    (_, _, a), (_, _, b) = sequential[0], two[0]
    assert a.keys() == b.keys()
    kept = [k for k in a if k.endswith("/cells") and ("boot/kde" in k or "positives" in k)]
    assert kept  # the bootstrap's and the redraws' kept KDE cells are in the state
    for key in a:
        x, y = np.asarray(a[key]), np.asarray(b[key])
        assert x.shape == y.shape, key
        if x.dtype.kind in "iub":
            assert np.array_equal(x, y), key
        else:
            assert np.allclose(x, y, rtol=1e-12, atol=1e-12), key


@pytest.mark.needs_no_spark
@pytest.mark.parametrize("parts, groups", [(5, 2), (9, 1)])
def test_two_level_reports_equal_the_embedded_engine(folder, embedded, parts, groups):
    emb = embedded
    src, local = _local(calcore.scan(folder, batch_rows=700), parts, groups)
    _same(emb, calcore.evaluate(src, **OPTIONS))
    phase, (floor, bound), largest = local.log[-1]
    assert phase == "accumulate" and floor <= largest <= bound  # merged states too


@pytest.mark.needs_no_spark
def test_a_state_over_max_result_size_is_refused_before_the_job(folder):
    src, local = _local(calcore.scan(folder), 2, 0, max_result=100_000)
    with pytest.raises(calcore.CalcoreError) as info:
        calcore.evaluate(src, **dict(OPTIONS, n_resamples=200))
    text = str(info.value)
    assert "at least" in text and "spark.driver.maxResultSize" in text and "200 resamples" in text
    assert "interval_resamples" in text and "kde_ece" in text and "MB" in text
    assert [p for p, _, _ in local.log] == ["profile"]  # the accumulating pass never ran


@pytest.mark.needs_no_spark
def test_groups_follow_the_bound():
    lanes, mb = None, 1 << 20
    assert _merge.merge_groups(None, lanes, "s", None) == 0  # profile / select
    assert _merge.merge_groups((500, 1_000), lanes, "s", 1 << 30) == 0  # small: one level
    assert _merge.merge_groups((mb, 100 * mb), lanes, "s", 1 << 30) == 2
    assert _merge.merge_groups((mb, 300 * mb), lanes, "s", 1 << 30) == 1
    # an upper bound over maxResultSize is not refused: the kept cells are fewer in practice
    assert _merge.merge_groups((mb, 3000 * mb), lanes, "s", 1 << 30) == 1
    assert _merge.merge_groups((mb, 2 * mb), lanes, "s", None) == _merge.MAX_GROUPS
    assert _merge.merge_groups((500, 1_000), lanes, "s", None, forced=3) == 3
    assert _merge.parse_bytes("2g") == 2 << 30 and _merge.parse_bytes("0") is None


@pytest.mark.needs_no_spark
def test_sparks_max_result_size_abort_is_explained():
    from types import SimpleNamespace

    lanes = SimpleNamespace(bootstrap=(200, 0), redraws=(100, 0), kde=("kde_ece",),
                            names=("a", "b"), lanes={0: None})  # fmt: skip
    spark_says = Exception(
        "org.apache.spark.SparkException: Job aborted due to stage failure: Total size of "
        "serialized results of 3 tasks (1100.0 MiB) is bigger than spark.driver.maxResultSize "
        "(1024.0 MiB)"
    )
    err = _merge.result_size_error(spark_says, (10**8, 4 * 10**8), lanes, "logs", 2)
    text = str(err)
    assert "logs" in text and "400 MB" in text and "2 group(s)" in text
    assert "200 resamples" in text and "interval_resamples" in text and "800 MB" in text
    assert _merge.result_size_error(Exception("another"), None, lanes, "logs", 0) is None


# ---------------------------------------------------------------- with Spark
def _intervals(report):
    return {k: (v.low, v.high) for k, v in report.intervals.items()}


def test_spark_two_level_merge_equals_the_embedded_engine(spark, folder, embedded):
    """Forced groups (1-3) after a shuffle into 3-7 partitions: every metric, interval
    and p-value of the embedded engine, in one job a pass."""
    from pyspark.sql import functions as F

    rng = np.random.default_rng(2026)
    emb = embedded
    n, groups = int(rng.integers(3, 8)), int(rng.integers(1, 4))
    src = calcore.from_spark(
        spark.read.parquet(folder).repartition(n, F.rand(int(rng.integers(99))))
    )
    src.engine.merge_groups = groups
    _same(emb, calcore.evaluate(src, **OPTIONS))
    log = src.engine.pass_log
    assert [e["phase"] for e in log] == ["profile", "accumulate"]
    assert src.engine.jobs == 2  # one job a pass, the second level included
    assert log[-1]["groups"] == groups and log[-1]["states"] <= groups
    floor, bound = log[-1]["state_bounds"]
    assert floor <= log[-1]["largest_state_bytes"] <= bound


def test_spark_bound_decides_two_levels_and_runs_are_deterministic(spark, tmp_path, monkeypatch):
    """The threshold lowered: the bound alone chooses two levels and two groups; a second
    run gives the same bits."""
    write_parts(str(tmp_path), binary(20_000, seed=5), [6_000, 9_000, 5_000])
    options = dict(metrics=["conf_ece", "kde_ece", "brier"], n_resamples=20, seed=4)
    emb = calcore.evaluate(calcore.scan(str(tmp_path)), **options)
    monkeypatch.setattr(_merge, "ONE_LEVEL_STATE_BYTES", 0)  # every state "large"
    src = calcore.from_spark(spark.read.parquet(str(tmp_path)).repartition(5))
    original, seen = _merge.state_bounds, []

    def bounds_of(lanes, phase):
        got = original(lanes, phase)
        if got is not None:  # room for two of this pass's states at the driver
            monkeypatch.setattr(_merge, "DRIVER_RESULT_BYTES", 2 * got[1])
            seen.append(got)
        return got

    monkeypatch.setattr(_merge, "state_bounds", bounds_of)
    first = calcore.evaluate(src, **options)
    _same(emb, first)
    last = src.engine.pass_log[-1]
    assert last["groups"] == 2 and tuple(last["state_bounds"]) == seen[-1]
    again = calcore.evaluate(src, **options)
    assert again.metrics == first.metrics and _intervals(again) == _intervals(first)
    assert again.calibration_test.p_values == first.calibration_test.p_values


@pytest.mark.needs_no_spark
@pytest.mark.parametrize("metrics", [["conf_ece", "kde_ece"], ["conf_ece"]])
def test_two_level_slices_equal_the_embedded_engine(folder, metrics):
    """evaluate_by: slices are matched by their entry in the groups (in a first pass,
    ``["conf_ece"]`` alone, each task numbers them itself); every slice's report is the
    embedded engine's."""
    options = dict(metrics=metrics, interval_resamples=10, n_resamples=20, seed=2)
    emb = calcore.evaluate_by(calcore.scan(folder, slice_columns=["day"]), by="day:q3", **options)
    src, local = _local(calcore.scan(folder, slice_columns=["day"], batch_rows=800), 6, 3)
    got = calcore.evaluate_by(src, by="day:q3", **options)
    assert [p for p, _, _ in local.log][-1] == "accumulate"
    assert len(local.log) == (2 if "kde_ece" in metrics else 1)
    _same(emb.overall, got.overall)
    mine = {s.values: s for s in got.slices}
    assert mine.keys() == {s.values for s in emb.slices} and len(mine) == 3
    for s in emb.slices:
        assert (mine[s.values].n, mine[s.values].weight) == (s.n, s.weight)
        _same(s.report, mine[s.values].report)
        if s.p_value is not None:
            assert abs(s.p_value - mine[s.values].p_value) <= TOL
