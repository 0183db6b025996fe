"""Streamed sources (calcore.scan, calcore.io.stream): files, globs, hive folders and Arrow IPC
read in batches; the errors that name the file, row group, column and row; read-ahead that
keeps the batches' order; weight columns; and the seeded uniform sample of a stream.

The statistics engine's own laws on streams (streamed == in memory, batching-free bootstrap)
are in tests/statistics/test_engine.py.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _keys import assert_same_metrics  # tests/ is on sys.path
from _synthetic import beta_binary as _binary
from _synthetic import dirichlet_preds as _preds
from _synthetic import write_parquet_parts as _write_parts

import calcore


def test_glob_and_single_file_and_split(tmp_path):
    preds = _binary(300, seed=12)
    split = np.where(np.arange(300) % 3 == 0, "calib", "test")
    pq.write_table(
        pa.table({"y": preds.labels, "p_1": preds.probs[:, 1], "split": split}),
        tmp_path / "one.parquet",
        row_group_size=50,
    )
    got = calcore.evaluate(calcore.scan(str(tmp_path / "*.parquet"), split="test"), bins=5)
    test_rows = calcore.Predictions.from_probs(
        preds.probs[split == "test"], preds.labels[split == "test"]
    )
    want = calcore.evaluate(test_rows, bins=5)
    assert got.n == 200
    assert got.top_label_ece == pytest.approx(want.top_label_ece, rel=1e-12)
    assert got.nll == pytest.approx(want.nll, rel=1e-12)


def test_bad_value_names_the_file_column_and_row(tmp_path):
    preds = _binary(200, seed=14)
    p1 = preds.probs[:, 1].copy()
    p1[173] = 1.5  # in the second file, its row 73
    pq.write_table(pa.table({"label": preds.labels[:100], "p_x": p1[:100]}), tmp_path / "a.parquet")
    pq.write_table(
        pa.table({"label": preds.labels[100:], "p_x": p1[100:]}),
        tmp_path / "b.parquet",
        row_group_size=30,
    )
    with pytest.raises(calcore.CalcoreError) as info:
        calcore.evaluate(calcore.scan(tmp_path, batch_rows=16))
    message = str(info.value)
    assert "b.parquet" in message and "row 73" in message and "'p_x'" in message


def test_type_change_between_files_is_named(tmp_path):
    preds = _binary(40, seed=15)
    pq.write_table(
        pa.table({"label": preds.labels[:20], "p_x": preds.probs[:20, 1]}), tmp_path / "a.parquet"
    )
    pq.write_table(
        pa.table({"label": preds.labels[20:].astype(str), "p_x": preds.probs[20:, 1]}),
        tmp_path / "b.parquet",
    )
    with pytest.raises(calcore.CalcoreError, match=r"b\.parquet: column 'label' has type string"):
        calcore.scan(tmp_path)


def test_damaged_row_group_is_named_and_nothing_is_reported(tmp_path):
    preds = _binary(400, seed=16)
    path = tmp_path / "d.parquet"
    pq.write_table(
        pa.table({"label": preds.labels, "p_x": preds.probs[:, 1]}),
        path,
        row_group_size=100,
        compression="snappy",
    )
    meta = pq.ParquetFile(path).metadata
    chunk = meta.row_group(2).column(1)
    start = chunk.data_page_offset
    data = bytearray(path.read_bytes())
    data[start + 10 : start + 60] = b"\xff" * 50  # damage the third row group's scores
    path.write_bytes(bytes(data))
    stream = calcore.scan(path)
    with pytest.raises(calcore.CalcoreError, match=r"d\.parquet, row group 2 \(rows from 200\)"):
        calcore.evaluate(stream)


def test_row_groups_decoded_ahead_give_the_batches_read_one_by_one(tmp_path):
    """Row groups no larger than a batch are decoded ahead on shared threads: the batches,
    their order and positions are those of reading batch by batch (row groups larger than
    a batch), also with streams abandoned half-way and several streams read at once."""
    from concurrent.futures import ThreadPoolExecutor

    preds = _binary(3_000, seed=41)
    _write_parts(tmp_path, preds, [1_100, 1_900], row_group_size=100)

    def read(batch_rows: int, stop: int | None = None):
        out = []
        for b in calcore.scan(tmp_path, batch_rows=batch_rows).batches():
            out.append((b.position, b.first_row, b.preds.probs[:, 1].copy()))
            if stop is not None and len(out) == stop:
                break
        return out

    one_by_one = read(50)  # 100-row groups are larger than a 50-row batch
    assert len(one_by_one) == 60
    ahead = read(100)
    assert len(ahead) == 30
    for (pos, first, probs), k in zip(ahead, range(0, 60, 2), strict=True):
        assert (pos, first) == one_by_one[k][:2]
        np.testing.assert_array_equal(
            probs, np.concatenate([one_by_one[k][2], one_by_one[k + 1][2]])
        )
    np.testing.assert_array_equal(np.concatenate([p for _, _, p in ahead]), preds.probs[:, 1])
    for _ in range(3):
        assert len(read(100, stop=2)) == 2  # abandoned with decoding under way
    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(lambda _: read(100), range(4)):
            np.testing.assert_array_equal(np.concatenate([p for _, _, p in got]), preds.probs[:, 1])


def test_one_worker_decodes_row_groups_in_line(tmp_path, monkeypatch):
    """CALCORE_THREADS=1: no row group is decoded on a thread of its own; the batches,
    their positions and rows are those read with decoding threads."""
    import calcore.io._row_groups as row_groups

    preds = _binary(600, seed=43)
    _write_parts(tmp_path, preds, [250], row_group_size=100)

    def read():
        stream = calcore.scan(tmp_path, batch_rows=100)
        return [(b.position, b.first_row, b.preds.probs[:, 1].copy()) for b in stream.batches()]

    monkeypatch.setenv("CALCORE_THREADS", "2")
    ahead = read()

    def no_decoding_thread():
        raise AssertionError("a row group was sent to a decoding thread")

    monkeypatch.setattr(row_groups, "_decoders", no_decoding_thread)
    monkeypatch.setenv("CALCORE_THREADS", "1")
    in_line = read()
    assert [b[:2] for b in in_line] == [b[:2] for b in ahead]
    for (_, _, got), (_, _, want) in zip(in_line, ahead, strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.concatenate([p for _, _, p in in_line]), preds.probs[:, 1])


def test_missing_path_and_empty_directory(tmp_path):
    with pytest.raises(calcore.CalcoreError, match="no such file or directory"):
        calcore.scan(tmp_path / "nope")
    with pytest.raises(calcore.CalcoreError, match="no data files found"):
        calcore.scan(tmp_path)


def test_prefetch_keeps_order_and_raises_where_it_happened():
    from calcore.io._prefetch import prefetched

    assert list(prefetched(iter(range(50)), depth=3)) == list(range(50))

    def failing():
        yield 1
        yield 2
        raise calcore.CalcoreError("bad batch 3")

    got = []
    with pytest.raises(calcore.CalcoreError, match="bad batch 3"):
        for x in prefetched(failing()):
            got.append(x)
    assert got == [1, 2]


@pytest.mark.parametrize("threads", ["1", "2"])
def test_prefetch_reads_ahead_on_a_thread_only_with_more_than_one_worker(monkeypatch, threads):
    import threading

    from calcore.io._prefetch import prefetched

    monkeypatch.setenv("CALCORE_THREADS", threads)
    produced_on = []

    def items():
        for i in range(6):
            produced_on.append(threading.current_thread())
            yield i
        raise calcore.CalcoreError("bad batch 7")

    got = []
    with pytest.raises(calcore.CalcoreError, match="bad batch 7"):
        for x in prefetched(items()):
            got.append(x)
    assert got == list(range(6))
    here = [t is threading.current_thread() for t in produced_on]
    # one worker: every item made on the caller's thread, as it is asked for; more: none
    assert all(here) if threads == "1" else not any(here)


def _weighted_parquet(tmp_path, name="w.parquet", column="Weight", weights=None):
    rng = np.random.default_rng(34)
    p = rng.beta(0.6, 2.0, 900)
    y = (rng.random(900) < p).astype(np.int64)
    w = rng.integers(0, 4, 900) if weights is None else weights
    pq.write_table(pa.table({"label": y, "p_x": p, column: w}), tmp_path / name, row_group_size=200)
    return p, y, w


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_stream_weight_column_equals_repeated_rows(tmp_path, binning):
    p, y, w = _weighted_parquet(tmp_path)
    stream = calcore.scan(tmp_path, batch_rows=111)
    assert stream.weight_column == "Weight" and stream.class_names == ("not x", "x")
    got = calcore.evaluate(stream, binning=binning)
    rows = np.repeat(np.arange(900), w)
    want = calcore.evaluate(
        calcore.Predictions.from_probs(np.column_stack([1 - p, p])[rows], y[rows]),
        binning=binning,
    )
    assert_same_metrics(got, want, rel=1e-10, abs=1e-14)


def test_stream_bad_weight_names_file_row_and_column(tmp_path):
    w = np.ones(900)
    w[517] = -2.0
    _weighted_parquet(tmp_path, column="importance", weights=w)
    stream = calcore.scan(tmp_path, weight_column="importance")
    with pytest.raises(
        calcore.CalcoreError,
        # row groups of 200 rows: row 517 is in the third
        match=r"w\.parquet, row 517 \(0-based\) in row group 2, column 'importance'",
    ):
        calcore.evaluate(stream)
    with pytest.raises(calcore.CalcoreError, match="weight_column='nope' is not a column"):
        calcore.scan(tmp_path, weight_column="nope")


def test_stream_all_zero_weights_is_an_error(tmp_path):
    _weighted_parquet(tmp_path, weights=np.zeros(900))
    with pytest.raises(calcore.CalcoreError, match="no rows with a positive weight"):
        calcore.evaluate(calcore.scan(tmp_path))


def test_stream_sample_is_uniform_and_independent_of_batching(tmp_path):
    preds = _binary(2_000, seed=35)
    _write_parts(tmp_path, preds, [700, 1300])
    a, n = calcore.scan(tmp_path, batch_rows=97).sample(500, seed=2)
    b, _ = calcore.scan(tmp_path, batch_rows=2_000).sample(500, seed=2)
    c, _ = calcore.scan(tmp_path, batch_rows=97).sample(500, seed=3)
    assert n == 2_000 and a.n_samples == 500
    np.testing.assert_array_equal(a.probs, b.probs)
    assert not np.array_equal(a.probs, c.probs)
    # rows of the source, in its order; roughly uniform over the three files
    rows = np.array([np.flatnonzero(preds.probs[:, 1] == v)[0] for v in a.probs[:, 1]])
    assert (np.diff(rows) > 0).all()
    thirds = np.bincount(np.digitize(rows, [700, 1300]), minlength=3) / 500
    np.testing.assert_allclose(thirds, [0.35, 0.3, 0.35], atol=0.07)
    whole, _ = calcore.scan(tmp_path).sample(5_000, seed=2)  # more than there is: everything
    np.testing.assert_array_equal(whole.probs, preds.probs)


def test_arrow_ipc_files_stream_like_parquet(tmp_path):
    import pyarrow.feather as feather
    import pyarrow.ipc as ipc

    preds = _binary(1_200, seed=43)
    table = pa.table({"label": preds.labels, "p_fraud": preds.probs[:, 1]})
    with ipc.new_file(tmp_path / "a.arrow", table.schema) as writer:
        for batch in table.slice(0, 800).to_batches(max_chunksize=170):
            writer.write_batch(batch)
    feather.write_feather(table.slice(800), tmp_path / "b.feather")  # lz4-compressed IPC
    (tmp_path / "README.txt").write_text("not data")  # other files are skipped
    (tmp_path / "_SUCCESS").write_text("")
    stream = calcore.scan(tmp_path, batch_rows=99)
    assert [f.rsplit("/", 1)[-1] for f in stream.files] == ["a.arrow", "b.feather"]
    assert stream.n_rows_in_files == 1_200
    got = calcore.evaluate(stream, binning="equal-mass")
    want = calcore.evaluate(
        calcore.Predictions.from_probs(preds.probs, preds.labels, ("not fraud", "fraud")),
        binning="equal-mass",
    )
    assert_same_metrics(got, want, rel=1e-10, abs=1e-14)


def test_a_file_rewritten_or_removed_after_scan_is_refused(tmp_path):
    preds = _binary(400, seed=44)
    _write_parts(tmp_path, preds, [200])
    stream = calcore.scan(tmp_path)
    target = sorted(tmp_path.rglob("part-1.parquet"))[0]
    pq.write_table(pa.table({"label": preds.labels[:5], "p_fraud": preds.probs[:5, 1]}), target)
    with pytest.raises(calcore.CalcoreError, match="the file changed since the stream was opened"):
        calcore.evaluate(stream)
    stream = calcore.scan(tmp_path)
    target.unlink()
    with pytest.raises(calcore.CalcoreError, match="disappeared while it was being read"):
        calcore.evaluate(stream)


def test_wide_files_get_shorter_batches(tmp_path, monkeypatch):
    import calcore.io.stream as stream_module

    monkeypatch.setattr(stream_module, "MAX_BATCH_VALUES", 40)
    preds = _preds(60, 4, seed=45)
    columns = {"label": preds.labels} | {f"p_{c}": preds.probs[:, c] for c in range(4)}
    pq.write_table(pa.table(columns), tmp_path / "wide.parquet")
    stream = calcore.scan(tmp_path / "wide.parquet", batch_rows=1_000)
    assert stream.batch_rows == 10  # 40 values / 4 score columns
    assert max(b.preds.n_samples for b in stream.batches()) == 10
    got = calcore.evaluate(stream)
    want = calcore.evaluate(preds)
    assert got.top_label_ece == pytest.approx(want.top_label_ece, rel=1e-12)


def test_stream_sample_is_the_bottom_k_of_the_row_uniforms(tmp_path):
    """Brute force: the sample is the rows with the k smallest (uniform, position) pairs,
    whatever the batching (batches of 97 rows make the sampler cut back many times)."""
    from calcore.foundation.keyed_random import row_uniforms

    preds = _binary(2_000, seed=37)
    _write_parts(tmp_path, preds, [900])
    u = row_uniforms(np.arange(2_000), 5)
    rows = np.sort(np.argsort(u, kind="stable")[:300])
    for batch_rows in (97, 2_000):
        got, n = calcore.scan(tmp_path, batch_rows=batch_rows).sample(300, seed=5)
        assert n == 2_000
        np.testing.assert_array_equal(got.probs, preds.probs[rows])
        np.testing.assert_array_equal(got.labels, preds.labels[rows])
