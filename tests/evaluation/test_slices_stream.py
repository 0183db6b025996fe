"""Calibration per slice of a streamed source (issue 14): evaluate_by(scan(...)).

Every slice of a stream must get what the same rows get in memory: the same metrics (to
rounding), the same test p-values (labels redrawn by row position), the same ranking and
the same change test, whatever the batching and the file format.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calcore
from calcore.foundation.errors import CalcoreError
from calcore.metrics.registry import IN_MEMORY_METRICS

N_ROWS = 3000


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(7)
    sim = calcore.dirichlet_simulator(3, miscalibration="overconfident", strength=1.5)
    preds = calcore.simulate_predictions(sim, N_ROWS, seed=3).preds
    df = pd.DataFrame(preds.probs, columns=[f"p_{c}" for c in preds.class_names])
    df.insert(0, "label", [preds.class_names[i] for i in preds.labels])
    df["country"] = rng.choice(["fr", "de", "us", None], N_ROWS)
    day = pd.to_datetime("2026-11-02") + pd.to_timedelta(rng.integers(0, 20, N_ROWS), unit="D")
    df["day"] = day
    df["visits"] = rng.integers(0, 4, N_ROWS)
    df["w"] = rng.integers(0, 3, N_ROWS).astype(float)
    return df


@pytest.fixture(scope="module")
def files(frame, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sliced")
    frame.to_parquet(folder / "p.parquet")
    frame.to_csv(folder / "p.csv", index=False)
    names = [c[2:] for c in frame.columns if c.startswith("p_")]
    np.savez(
        folder / "p.npz",
        probs=np.ascontiguousarray(frame[[f"p_{c}" for c in names]].to_numpy()),
        labels=frame["label"].map({c: i for i, c in enumerate(names)}).to_numpy(),
        class_names=np.array(names),
        country=np.array(frame["country"].fillna(""), dtype=str),
        day=frame["day"].to_numpy().astype("datetime64[s]"),
        visits=frame["visits"].to_numpy(),
        w=frame["w"].to_numpy(),
    )
    return folder


def _same(memory, streamed, *, tol=1e-12):
    """Slices, their metrics, p-values, ranking and change agree."""
    assert [(s.label, s.n) for s in memory.in_order()] == [
        (s.label, s.n) for s in streamed.in_order()
    ]
    assert [s.label for s in memory.slices] == [s.label for s in streamed.slices]
    for a, b in zip(memory.in_order(), streamed.in_order(), strict=True):
        assert a.weight == pytest.approx(b.weight)
        for key, value in a.report.metrics.items():
            if value is None or key in IN_MEMORY_METRICS:  # a stream's are None (a note)
                assert b.report.metrics[key] is None
            else:
                assert b.report.metrics[key] == pytest.approx(value, rel=1e-12, abs=tol), (
                    a.label,
                    key,
                )
        assert a.tested == b.tested
        assert (a.view, a.direction) == (b.view, b.direction)
        assert b.observed == pytest.approx(a.observed, abs=tol)
        assert b.expected == pytest.approx(a.expected, abs=tol)
        if a.tested:
            # a redraws p-value is a count (exact); a tail fit's is a function of the
            # redrawn errors, equal to their rounding
            assert a.p_method == b.p_method
            if a.p_method == "redraws":
                assert a.p_value == b.p_value
            assert a.p_value == pytest.approx(b.p_value, rel=1e-9)
            assert a.q_value == pytest.approx(b.q_value, rel=1e-9)
            assert a.share == pytest.approx(b.share)
            assert (a.excess, a.z) == pytest.approx((b.excess, b.z), rel=1e-9, abs=1e-12)
    for key, value in memory.overall.metrics.items():
        if value is not None and key not in IN_MEMORY_METRICS:
            assert streamed.overall.metrics[key] == pytest.approx(value, rel=1e-12, abs=tol)
    assert (memory.change is None) == (streamed.change is None)
    if memory.change is not None:
        assert memory.change.p_value == streamed.change.p_value
        assert (memory.change.first, memory.change.last) == (
            streamed.change.first,
            streamed.change.last,
        )


@pytest.mark.parametrize("fmt", ["parquet", "csv", "npz"])
@pytest.mark.parametrize(
    "by, options",
    [
        ("country", {}),
        (["country", "visits"], {}),
        ("day:week", {}),
        ("country", {"binning": "equal-mass", "bins": 5}),
        ("visits", {"metrics": ["kde_ece", "top_label_ece"], "rank_by": "kde_ece"}),
    ],
    ids=["categorical", "crossed", "weeks", "equal-mass", "kde"],
)
def test_streamed_slices_equal_the_same_rows_in_memory(files, fmt, by, options):
    path = files / f"p.{fmt}"
    memory = calcore.load_predictions(path, weight_column=False)
    stream = calcore.scan(
        path, slice_columns=["country", "day", "visits"], batch_rows=701, weight_column=False
    )
    kw = dict(n_resamples=39, **options)
    _same(calcore.evaluate_by(memory, by, **kw), calcore.evaluate_by(stream, by, **kw))


@pytest.mark.parametrize("by", ["country", "day:day"])
def test_weighted_streamed_slices_equal_memory(files, by):
    memory = calcore.load_predictions(files / "p.parquet", weight_column="w")
    stream = calcore.scan(
        files / "p.parquet", slice_columns=["country", "day"], weight_column="w", batch_rows=500
    )
    streamed = calcore.evaluate_by(stream, by, n_resamples=39)
    _same(calcore.evaluate_by(memory, by, n_resamples=39), streamed)
    # a weight-0 row counts as a row of its slice but adds nothing to its sums
    assert sum(s.n for s in streamed.slices) == N_ROWS


def test_a_streamed_slice_matches_a_hand_computed_ece(files, frame):
    stream = calcore.scan(files / "p.csv", slice_columns=["country"], batch_rows=333)
    fr = next(
        s for s in calcore.evaluate_by(stream, "country", n_resamples=9).slices if s.label == "fr"
    )
    rows = frame[frame["country"] == "fr"]
    probs = rows[[c for c in frame.columns if c.startswith("p_")]].to_numpy()
    labels = rows["label"].map({c[2:]: i for i, c in enumerate(frame.columns[1:4])}).to_numpy()
    conf, hit = probs.max(axis=1), probs.argmax(axis=1) == labels
    ece = 0.0
    for b in range(15):  # bins (b/15, (b+1)/15], the first closed
        inside = (conf > b / 15) & (conf <= (b + 1) / 15) if b else conf <= 1 / 15
        if inside.any():
            ece += inside.sum() / conf.size * abs(hit[inside].mean() - conf[inside].mean())
    assert fr.n == len(rows)
    assert fr.report.metrics["conf_ece"] == pytest.approx(ece, abs=1e-12)


def test_batching_does_not_change_a_streamed_slicing(files):
    kw = dict(n_resamples=19, interval_resamples=20)
    a, b = (
        calcore.evaluate_by(
            calcore.scan(files / "p.parquet", slice_columns=["country"], batch_rows=rows),
            "country",
            **kw,
        )
        for rows in (97, 5000)
    )
    for x, y in zip(a.slices, b.slices, strict=True):
        assert (x.label, x.p_method) == (y.label, y.p_method)
        assert x.p_value == pytest.approx(y.p_value, rel=1e-9)  # a tail fit's: to rounding
        for key, interval in x.report.intervals.items():
            assert y.report.intervals[key].low == pytest.approx(interval.low, abs=1e-12)


def test_streamed_overall_equals_evaluate_of_the_stream(files):
    stream = calcore.scan(files / "p.parquet", slice_columns=["country"], batch_rows=800)
    sliced = calcore.evaluate_by(stream, "country", n_resamples=19)
    whole = calcore.evaluate(stream)
    for key, value in whole.metrics.items():
        if value is not None:
            assert sliced.overall.metrics[key] == pytest.approx(value, abs=1e-12)
    assert any("overall calibration test" in n for n in sliced.notes)


# ------------------------------------------------------------------ refusals


def _csv(path, lines):
    path.write_text("label,p_yes,col\n" + "\n".join(lines) + "\n")
    return path


def test_what_a_stream_cannot_slice_is_refused_with_the_way_out(files):
    stream = calcore.scan(files / "p.parquet", slice_columns=["visits", "day"])
    with pytest.raises(CalcoreError, match=r"q1 asks for 1 quantile ranges; use 2 to 100"):
        calcore.evaluate_by(stream, "visits:q1")
    with pytest.raises(CalcoreError, match=r"'day' is datetime: quantile ranges \(q4\) need"):
        calcore.evaluate_by(stream, "day:q4")
    with pytest.raises(CalcoreError, match=r"'day' is datetime.*'day:week'"):
        calcore.evaluate_by(stream, "day")
    with pytest.raises(CalcoreError, match=r"no metadata column 'country'.*'visits', 'day'"):
        calcore.evaluate_by(stream, "country")
    with pytest.raises(CalcoreError, match=r"reads no slice column.*slice_columns="):
        calcore.evaluate_by(calcore.scan(files / "p.parquet"), "country")
    with pytest.raises(CalcoreError, match=r"4 distinct values.*at most 2.*coarser column"):
        calcore.evaluate_by(stream, "visits", max_slices=2)
    with pytest.raises(
        CalcoreError, match=r"rows from \d+: slicing by visits x day:day gives more"
    ):
        calcore.evaluate_by(stream, ["visits", "day:day"], max_slices=50)


def test_scan_checks_the_slice_columns(files):
    with pytest.raises(CalcoreError, match=r"slice column 'nope' is not a column"):
        calcore.scan(files / "p.csv", slice_columns=["nope"])
    with pytest.raises(CalcoreError, match=r"'label' is the label column"):
        calcore.scan(files / "p.parquet", slice_columns=["label"], label_column="label")
    with pytest.raises(CalcoreError, match=r"'probs' holds the scores"):
        calcore.scan(files / "p.npz", slice_columns=["probs"])


def test_a_kind_that_changes_further_down_a_stream_names_the_rows(tmp_path):
    lines = [f"1,0.7,2026-11-0{1 + i % 5}" for i in range(40)] + ["0,0.4,tomorrow"]
    stream = calcore.scan(_csv(tmp_path / "d.csv", lines), slice_columns=["col"], batch_rows=10)
    with pytest.raises(
        CalcoreError, match=r"d.csv, column 'col', rows from 42.*as categorical.*as datetime"
    ):
        calcore.evaluate_by(stream, "col:day", n_resamples=9)


def test_text_first_read_as_categories_stays_text(tmp_path):
    # digits after letters: in memory the column is text; a stream agrees
    lines = [f"{i % 2},0.{3 + i % 5},{'ab'[i % 2]}" for i in range(20)]
    lines += [f"{i % 2},0.{3 + i % 5},{10 + i % 3}" for i in range(20)]
    path = _csv(tmp_path / "t.csv", lines)
    memory = calcore.evaluate_by(calcore.load_predictions(path), "col", n_resamples=9)
    stream = calcore.scan(path, slice_columns=["col"], batch_rows=15)
    streamed = calcore.evaluate_by(stream, "col", n_resamples=9, min_slice_rows=5)
    assert [s.label for s in streamed.in_order()] == ["10", "11", "12", "a", "b"]
    assert [s.label for s in memory.in_order()] == ["10", "11", "12", "a", "b"]


def test_missing_batches_and_a_taken_missing_name(tmp_path):
    lines = [f"{i % 2},0.6," for i in range(10)]  # a first batch with no value at all
    lines += [f"{i % 2},0.6,{'(missing)' if i % 3 else 'x'}" for i in range(10)]
    path = _csv(tmp_path / "m.csv", lines)
    stream = calcore.scan(path, slice_columns=["col"], batch_rows=10)
    streamed = calcore.evaluate_by(stream, "col", n_resamples=9, min_slice_rows=2)
    memory = calcore.evaluate_by(
        calcore.load_predictions(path), "col", n_resamples=9, min_slice_rows=2
    )
    assert (
        [(s.label, s.n) for s in streamed.in_order()]
        == [(s.label, s.n) for s in memory.in_order()]
        == [("(missing)", 6), ("x", 4), ("(no value)", 10)]
    )


def test_no_tests_ranks_by_share_in_memory_and_streamed(files):
    memory = calcore.load_predictions(files / "p.parquet", weight_column=False)
    stream = calcore.scan(files / "p.parquet", slice_columns=["country"], weight_column=False)
    for source in (memory, stream):
        sliced = calcore.evaluate_by(source, "country", n_resamples=0)
        assert not any(s.tested for s in sliced.slices)
        shares = [s.share for s in sliced.slices]
        assert shares == sorted(shares, reverse=True) and sum(shares) == pytest.approx(1.0)
        assert all(s.note == "no test (n_resamples=0)" for s in sliced.slices)
        assert any("No slice was tested (n_resamples=0)" in n for n in sliced.notes)
    with pytest.raises(CalcoreError, match=r"n_resamples must be 0 \(no tests"):
        calcore.evaluate_by(memory, "country", n_resamples=-1)


def test_the_slices_sums_stay_within_the_memory_budget(files, monkeypatch):
    stream = calcore.scan(files / "p.parquet", slice_columns=["country", "visits"])
    monkeypatch.setenv("CALCORE_MAX_DECODED_BYTES", "3000000")
    with pytest.raises(CalcoreError, match=r"slices so far keep \d+ MiB of sums.*over the 3 MiB"):
        calcore.evaluate_by(stream, ["country", "visits"], interval_resamples=50, n_resamples=9)


def test_cli_slices_a_parquet_file_by_streaming_it(files, capsys):
    import json

    from calcore.cli import main

    args = ["--by", "country", "--json", "--resamples", "19"]
    assert main(["metrics", str(files / "p.parquet"), *args]) == 0
    streamed = json.loads(capsys.readouterr().out)
    assert main(["metrics", str(files / "p.csv"), *args]) == 0  # a small CSV: loaded whole
    loaded = json.loads(capsys.readouterr().out)
    assert [(s["value"], s["n"], s["p_value"]) for s in streamed["slices"]] == [
        (s["value"], s["n"], s["p_value"]) for s in loaded["slices"]
    ]
    assert streamed["slices"][0]["top_label_ece"] == pytest.approx(
        loaded["slices"][0]["top_label_ece"], abs=1e-12
    )
    by_range = ["--by", "visits:q2", "--json", "--resamples", "19"]
    assert main(["metrics", str(files / "p.parquet"), *by_range]) == 0  # streamed
    streamed = json.loads(capsys.readouterr().out)
    assert main(["metrics", str(files / "p.csv"), *by_range]) == 0
    loaded = json.loads(capsys.readouterr().out)
    assert [(s["value"], s["n"], s["p_value"]) for s in streamed["slices"]] == [
        (s["value"], s["n"], s["p_value"]) for s in loaded["slices"]
    ]
    assert len(streamed["slices"]) == 2


def test_a_split_of_a_stream_is_sliced_like_the_same_split_in_memory(frame, tmp_path):
    df = frame.drop(columns=["w"]).assign(split=np.tile(["calib", "test", "test"], N_ROWS // 3))
    df.to_parquet(tmp_path / "s.parquet")
    memory = calcore.load_predictions(tmp_path / "s.parquet", split="test")
    stream = calcore.scan(tmp_path / "s.parquet", split="test", slice_columns=["country"])
    kw = dict(n_resamples=19)
    _same(
        calcore.evaluate_by(memory, "country", **kw), calcore.evaluate_by(stream, "country", **kw)
    )
    empty = df.assign(split="calib")
    empty.to_parquet(tmp_path / "e.parquet")
    nothing = calcore.scan(tmp_path / "e.parquet", split="test", slice_columns=["country"])
    with pytest.raises(CalcoreError, match=r"e.parquet: no rows to slice"):
        calcore.evaluate_by(nothing, "country")


def test_periods_too_large_to_hold_leave_no_change_test_and_say_so(files, monkeypatch):
    import calcore.evaluation.slices_stream as streamed

    monkeypatch.setattr(streamed, "PERIOD_CHANGE_MAX_VALUES", 100)
    stream = calcore.scan(files / "p.parquet", slice_columns=["day"])
    sliced = calcore.evaluate_by(stream, "day:week", n_resamples=19)
    assert sliced.change is None
    assert any(
        "No test of a change over time" in n and "in memory (100)" in n for n in sliced.notes
    )


@pytest.mark.parametrize("ext", ["parquet", "csv", "npz"])
def test_a_streams_sample_keeps_its_slice_columns_as_metadata(files, frame, ext):
    """The seeded sample of a stream (the dashboard's view of a server dataset) carries the
    slice columns as the loader types them: the whole file's sample equals the loaded file,
    and a smaller sample holds exactly the sampled rows' values."""
    path = files / f"p.{ext}"
    by = ["country", "day", "visits"]
    whole = calcore.load_predictions(path)
    stream = calcore.scan(path, slice_columns=by, batch_rows=701)
    everything, n_read = stream.sample(10 * N_ROWS, seed=1)
    assert n_read == N_ROWS
    for c in by:
        assert everything.metadata[c].describe() == whole.metadata[c].describe()
        np.testing.assert_array_equal(everything.metadata[c].values, whole.metadata[c].values)
    part, _ = stream.sample(400, seed=1)
    rows = np.array([np.flatnonzero((whole.probs == r).all(axis=1))[0] for r in part.probs])
    assert part.n_samples == 400 and (np.diff(rows) > 0).all()
    expected = frame["visits"].to_numpy()[rows]
    got = part.metadata["visits"]
    assert got.kind == "integer"
    np.testing.assert_array_equal(got.values, expected)


@pytest.mark.parametrize("ext", ["parquet", "csv", "npz"])
def test_one_pass_samples_each_split_as_its_own_stream_would(frame, tmp_path, ext):
    """``sample_splits`` reads the files once and gives, per split, exactly the sample of
    the split's own stream (positions counted within the split), slice values included."""
    rng = np.random.default_rng(11)
    split = rng.choice(["Calib", "test"], N_ROWS, p=[0.3, 0.7])
    with_split = frame.assign(split=split)
    path = tmp_path / f"s.{ext}"
    if ext == "parquet":
        with_split.to_parquet(path)
    elif ext == "csv":
        with_split.to_csv(path, index=False)
    else:
        names = [c[2:] for c in frame.columns if c.startswith("p_")]
        np.savez(
            path,
            probs=np.ascontiguousarray(frame[[f"p_{c}" for c in names]].to_numpy()),
            labels=frame["label"].map({c: i for i, c in enumerate(names)}).to_numpy(),
            class_names=np.array(names),
            split=split,
            visits=frame["visits"].to_numpy(),
        )
    by = ["visits"] if ext == "npz" else ["country", "visits"]
    stream = calcore.scan(path, slice_columns=by, batch_rows=353)
    both = stream.sample_splits(400, seed=4)
    for name, n_rows in (("calib", (split == "Calib").sum()), ("test", (split == "test").sum())):
        alone, n_alone = stream.with_split(name).sample(400, seed=4)
        got, n_read = both[name]
        assert n_read == n_alone == n_rows and got.n_samples == 400
        np.testing.assert_array_equal(got.probs, alone.probs)
        np.testing.assert_array_equal(got.labels, alone.labels)
        for c in by:
            assert got.metadata[c].describe() == alone.metadata[c].describe()
            np.testing.assert_array_equal(got.metadata[c].values, alone.metadata[c].values)
    frame.to_parquet(tmp_path / "no_split.parquet")
    with pytest.raises(CalcoreError, match="no split column to sample by"):
        calcore.scan(tmp_path / "no_split.parquet").sample_splits(400, seed=4)


@pytest.mark.parametrize("ext", ["parquet", "csv", "npz"])
def test_the_slice_columns_of_a_sample_can_be_read_after_it(frame, tmp_path, ext):
    """``sample_slice_columns`` reads, from the split and slice columns alone (Parquet) or
    from a full pass (CSV, NPZ), exactly the metadata the samples carry: per split, for one
    split's stream and for a stream without a split column."""
    rng = np.random.default_rng(12)
    split = rng.choice(["calib", "test"], N_ROWS, p=[0.4, 0.6])
    path = tmp_path / f"s.{ext}"
    if ext == "parquet":
        frame.assign(split=split).to_parquet(path, row_group_size=500)
        frame.to_parquet(tmp_path / "no_split.parquet", row_group_size=500)
    elif ext == "csv":
        frame.assign(split=split).to_csv(path, index=False)
        frame.to_csv(tmp_path / "no_split.csv", index=False)
    else:
        names = [c[2:] for c in frame.columns if c.startswith("p_")]
        arrays = dict(
            probs=np.ascontiguousarray(frame[[f"p_{c}" for c in names]].to_numpy()),
            labels=frame["label"].map({c: i for i, c in enumerate(names)}).to_numpy(),
            class_names=np.array(names),
            visits=frame["visits"].to_numpy(),
        )
        np.savez(path, split=split, **arrays)
        np.savez(tmp_path / "no_split.npz", **arrays)
    by = ["visits"] if ext == "npz" else ["country", "day", "visits"]

    def same(got: dict, want: dict) -> None:
        assert list(got) == by
        for c in by:
            assert got[c].describe() == want[c].describe()
            np.testing.assert_array_equal(got[c].values, want[c].values)

    stream = calcore.scan(path, slice_columns=by, batch_rows=353)
    samples = calcore.scan(path, batch_rows=1_000).sample_splits(300, seed=4)
    with_slices = stream.sample_splits(300, seed=4)
    read_later = stream.sample_slice_columns(300, seed=4, splits=True)
    assert list(read_later) == ["calib", "test"]
    for name in ("calib", "test"):
        assert samples[name][0].metadata == {}  # drawn without the slice columns ...
        same(read_later[name], with_slices[name][0].metadata)  # ... read for the same rows
        alone = stream.with_split(name)
        same(alone.sample_slice_columns(300, seed=4), alone.sample(300, seed=4)[0].metadata)
    plain = calcore.scan(tmp_path / f"no_split.{ext}", slice_columns=by, batch_rows=777)
    same(plain.sample_slice_columns(250, seed=9), plain.sample(250, seed=9)[0].metadata)
    with pytest.raises(CalcoreError, match="no split column to sample by"):
        plain.sample_slice_columns(250, seed=9, splits=True)
    with pytest.raises(CalcoreError, match="no slice columns to read"):
        calcore.scan(path).sample_slice_columns(250, seed=9)


def test_reading_a_samples_slice_columns_names_a_bad_split_value(frame, tmp_path):
    """The split column is validated when only it and the slice columns are read: the
    message names the file, the column and the row."""
    split = np.where(np.arange(N_ROWS) == 1_234, "holdout", "test")
    split[::3] = "calib"
    split[1_234] = "holdout"
    frame.assign(split=split).to_parquet(tmp_path / "bad.parquet", row_group_size=500)
    stream = calcore.scan(tmp_path / "bad.parquet", slice_columns=["country"])
    with pytest.raises(
        CalcoreError, match=r"bad\.parquet.*1234.*holdout|bad\.parquet.*holdout.*1234"
    ):
        stream.sample_slice_columns(100, seed=0, splits=True)


# ------------------------------------------------------------------ quantile ranges


@pytest.fixture(scope="module")
def ranged(tmp_path_factory):
    """Files with a signed, tied and partly missing number and an integer column."""
    rng = np.random.default_rng(11)
    n = 2400
    sim = calcore.dirichlet_simulator(2, miscalibration="overconfident", strength=1.5)
    preds = calcore.simulate_predictions(sim, n, seed=12).preds
    balance = np.round(rng.normal(0.0, 3.0, n), 1)  # negatives, zeros and many ties
    balance[rng.random(n) < 0.05] = np.nan
    df = pd.DataFrame({"label": [preds.class_names[i] for i in preds.labels]})
    for c, name in enumerate(preds.class_names):
        df[f"p_{name}"] = preds.probs[:, c]
    df["balance"] = balance
    df["age"] = rng.integers(18, 90, n)
    df["shop"] = rng.choice(["a", "b"], n)
    folder = tmp_path_factory.mktemp("ranged")
    df.to_parquet(folder / "r.parquet", row_group_size=300)
    df.to_csv(folder / "r.csv", index=False)
    return folder


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize(
    "by", ["balance:q4", "age:q7", ["balance:q3", "shop"], "balance:q100"], ids=str
)
def test_streamed_quantile_ranges_equal_the_same_rows_in_memory(ranged, fmt, by):
    path = ranged / f"r.{fmt}"
    memory = calcore.load_predictions(path)
    stream = calcore.scan(path, slice_columns=["balance", "age", "shop"], batch_rows=333)
    kw = dict(n_resamples=19, max_slices=1000)
    _same(calcore.evaluate_by(memory, by, **kw), calcore.evaluate_by(stream, by, **kw))


def test_quantile_cuts_find_the_ranks_of_a_sort_by_brute_force():
    from calcore.predictions.slicing_batches import QuantileCuts

    rng = np.random.default_rng(13)
    for trial in range(30):
        n = int(rng.integers(1, 400))
        values = np.round(rng.normal(rng.normal(0, 5), rng.uniform(0.01, 10), n), trial % 3)
        k = int(rng.integers(2, 12))
        cuts = QuantileCuts(k)
        splits = np.sort(rng.integers(0, n, 3))
        while not cuts.done:
            for part in np.split(values, splits):  # batches, some empty
                distinct, counts = np.unique(part, return_counts=True)
                cuts.observe(distinct, counts.astype(float))
            cuts.end_pass()
        ordered = np.sort(values)
        # the j/k inverted-CDF quantile is the ceil(n j / k)-th smallest value (1-based)
        picked = [ordered[-(-n * j // k) - 1] for j in range(1, k)]
        inner = sorted({v for v in picked if v < ordered[-1]})
        assert cuts.edges.tolist() == [ordered[0], *inner, ordered[-1]], trial


def test_an_empty_column_has_no_quantile_range():
    from calcore.predictions.slicing_batches import QuantileCuts

    cuts = QuantileCuts(4)
    cuts.observe(np.empty(0), np.empty(0))
    cuts.end_pass()
    assert cuts.done and cuts.edges is None


_MILLION_IDS = r"""
import re, sys, warnings
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
import calcore
path, n = sys.argv[1], 1_000_000
rng = np.random.default_rng(0)
p = rng.random(n)
users = pa.array([f"user-{i:07d}" for i in range(n)])
table = pa.table({"label": (rng.random(n) < p).astype(np.int8), "p_click": p, "user": users})
pq.write_table(table, path, row_group_size=200_000)
del users, table
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the load report's "id-like" warning
    preds = calcore.load_predictions(path)
col = preds.metadata["user"]
print(col.kind, col.values is None, col.n_distinct)
for source in (preds, calcore.scan(path, slice_columns=["user"])):
    try:
        calcore.evaluate_by(source, "user", n_resamples=19)
    except calcore.CalcoreError as err:
        print(err)
# this process's own peak (ru_maxrss can carry the parent's peak across fork + exec)
status = open("/proc/self/status").read()
print(int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) // 1024)
"""


@pytest.mark.timeout(120)
def test_a_million_distinct_values_are_refused_in_memory_and_streamed_at_bounded_memory(tmp_path):
    """An id column of 1,000,000 distinct texts: loaded, it is counted and its values
    dropped; sliced, in memory or streamed, it is refused with the column named (the stream
    names the batch it saw it in), never grown into a million slices. The child process's
    peak memory, writing the file included, stays under 1 GB (measured: about 480 MB)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _MILLION_IDS, str(tmp_path / "ids.parquet")],
        capture_output=True, text=True, check=True, timeout=110,
    ).stdout.splitlines()  # fmt: skip
    assert out[0] == "id-like True 1000000"
    assert out[1] == (
        "column 'user' has 1,000,000 distinct values (id-like), too many for slicing "
        "(at most 1,000). Slice by a coarser column."
    )
    assert out[2].startswith("ids.parquet, rows from 0: column 'user' has 200,000 distinct")
    assert "(id-like), too many for slicing" in out[2]
    assert int(out[3]) < 1024, f"peak RSS {out[3]} MB"


def test_transforms_of_a_stream_compose(files):
    """with_transform on a transformed stream applies the new map to the first one's output
    (it replaced it before, silently)."""
    stream = calcore.scan(files / "p.parquet", weight_column=False)
    memory = calcore.load_predictions(files / "p.parquet", weight_column=False)
    ts = calcore.make_calibrator("ts").fit(memory)
    iso = calcore.make_calibrator("conf-iso").fit(ts.transform(memory))
    twice = stream.with_transform(ts.transform).with_transform(iso.transform)
    got = np.concatenate([b.preds.probs for b in twice.batches()])
    np.testing.assert_allclose(got, iso.transform(ts.transform(memory)).probs, rtol=0, atol=1e-15)
