"""Calibration per slice (issue 14): metadata columns, slicing, evaluate_by, q-values, CLI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _keys import assert_same_metrics  # tests/ is on sys.path

import calcore
from calcore.cli import main
from calcore.foundation.errors import CalcoreError
from calcore.predictions.metadata import MAX_SLICE_VALUES, MISSING, metadata_column


def _binary_csv(path, rows, extra_header):
    path.write_text("label,p_click," + extra_header + "\n" + "\n".join(rows) + "\n")
    return path


# ------------------------------------------------------------------ metadata columns


def test_csv_metadata_kinds_and_missing_values(tmp_path):
    rows = [
        "1,0.8,DE,true,3,1.5,2026-11-02,u1",
        "0,0.3,FR,false,,2.5,2026-11-09T10:00:00Z,u2",
        "0,0.2,,TRUE,5,,,u3",
        "1,0.6,DE,False,3,4.0,2026-11-10,u4",
    ]
    path = _binary_csv(tmp_path / "m.csv", rows, "country,ok,visits,score,day,user")
    preds = calcore.load_predictions(path)
    md = preds.metadata
    kinds = {name: col.kind for name, col in md.items()}
    assert kinds == {
        "country": "categorical",
        "ok": "boolean",
        "visits": "integer",
        "score": "numeric",
        "day": "datetime",
        "user": "categorical",
    }
    assert md["country"].categories == ("DE", "FR")
    assert md["country"].values.tolist() == [0, 1, -1, 0]
    assert md["ok"].values.tolist() == [1, 0, 1, 0]
    # integers stay integers (int64); the missing row is marked aside
    assert md["visits"].values.dtype == np.int64
    assert md["visits"].missing().tolist() == [False, True, False, False]
    assert md["visits"].values[~md["visits"].missing()].tolist() == [3, 5, 3]
    assert (md["visits"].n_distinct, md["visits"].n_missing) == (2, 1)
    assert str(md["day"].values[1]) == "2026-11-09T10:00:00" and np.isnat(md["day"].values[2])
    assert preds.load_report.ignored_columns[:2] == ("country", "ok")


def test_unparseable_dates_and_mixed_values_are_text_never_coerced(tmp_path):
    rows = ["1,0.8,2026-11-02,1", "0,0.3,yesterday,a", "0,0.2,2026-11-03,2"]
    preds = calcore.load_predictions(_binary_csv(tmp_path / "d.csv", rows, "day,mixed"))
    assert preds.metadata["day"].kind == "categorical"
    assert preds.metadata["day"].categories == ("2026-11-02", "2026-11-03", "yesterday")
    assert preds.metadata["mixed"].categories == ("1", "2", "a")
    with pytest.raises(CalcoreError, match="is categorical, not datetime"):
        calcore.evaluate_by(preds, "day:week")


def test_id_like_column_is_counted_not_kept_and_refused_for_slicing(tmp_path):
    n = MAX_SLICE_VALUES + 1
    rows = [f"{i % 2},0.5,id{i}" for i in range(n)]
    with pytest.warns(calcore.CalcoreWarning, match="column 'user' was ignored.*id-like"):
        preds = calcore.load_predictions(_binary_csv(tmp_path / "i.csv", rows, "user"))
    col = preds.metadata["user"]
    assert (col.kind, col.values, col.n_distinct) == ("id-like", None, n)
    with pytest.raises(CalcoreError, match=r"'user' has 1,001 distinct values \(id-like\)"):
        calcore.evaluate_by(preds, "user")


def test_parquet_metadata_keeps_arrow_types(tmp_path):
    table = pa.table(
        {
            "label": [1, 0, 0, 1],
            "p_click": [0.8, 0.3, 0.2, 0.6],
            "device": pa.array(["ios", "web", None, "ios"]).dictionary_encode(),
            "new": [True, None, False, True],
            "age": pa.array([20, None, 40, 30], pa.int32()),
            "ts": pa.array([0, 86_400, None, 7 * 86_400], pa.timestamp("s", tz="UTC")),
            "day": pa.array([0, 1, 2, None], pa.date32()),
            "tags": [[1], [2], [], [3]],
        }
    )
    pq.write_table(table, tmp_path / "m.parquet")
    md = calcore.load_predictions(tmp_path / "m.parquet").metadata
    assert md["device"].kind == "categorical" and md["device"].values.tolist() == [0, 1, -1, 0]
    assert md["new"].kind == "boolean" and md["new"].values.tolist() == [1, -1, 0, 1]
    assert md["age"].kind == "integer" and md["age"].n_missing == 1
    assert str(md["ts"].values[1]) == "1970-01-02T00:00:00"
    assert md["day"].kind == "datetime" and np.isnat(md["day"].values[3])
    assert md["tags"].kind == "other" and not md["tags"].sliceable
    with pytest.raises(CalcoreError, match="type that cannot be sliced"):
        calcore.slicing_of(md, "tags")


def test_npz_arrays_of_one_value_per_row_are_metadata(tmp_path):
    np.savez(
        tmp_path / "m.npz",
        probs=np.full((6, 2), 0.5),
        labels=np.array([0, 0, 1, 1, 0, 1]),
        split=np.array(["calib", "test"] * 3),
        country=np.array(["fr", "de", "fr", "", "de", "fr"]),
        age=np.array([20, 30, 30, 40, 50, 60]),
        score=np.array([1.5, np.nan, 2.5, 3.5, 4.5, 5.5]),
        day=np.array(["2026-11-01", "NaT", "2026-11-02", "2026-11-02", "2026-11-03", "NaT"],
                     dtype="datetime64[D]"),
        image=np.zeros((6, 3)),
    )  # fmt: skip
    with pytest.warns(calcore.CalcoreWarning, match="'image' was ignored"):
        preds = calcore.load_predictions(tmp_path / "m.npz", split="test")
    md = preds.metadata
    assert sorted(md) == ["age", "country", "day", "score"]
    assert md["country"].kind == "categorical" and md["country"].n_missing == 1  # row 3: ""
    assert md["age"].kind == "integer" and md["age"].values.tolist() == [30, 40, 60]
    assert md["score"].kind == "numeric" and md["score"].n_missing == 1
    assert md["day"].kind == "datetime" and md["day"].n_missing == 2  # test rows 1, 3, 5
    warned = preds.load_report.warnings()
    assert warned == ["m.npz: column 'image' was ignored (not a probs/logits/labels/class_names/"
                      "split array)."]  # fmt: skip
    sliced = calcore.evaluate_by(preds, "country", min_slice_rows=2, n_resamples=9)
    assert sorted((s.label, s.n) for s in sliced.slices) == [("(missing)", 1), ("de", 1), ("fr", 1)]
    with pytest.raises(CalcoreError, match="slice column 'labels' is not an extra array"):
        calcore.load_predictions(tmp_path / "m.npz", slice_columns=["labels"])
    with pytest.raises(CalcoreError, match="slice column 'nope' is not an extra array"):
        calcore.load_predictions(tmp_path / "m.npz", slice_columns="nope")
    with pytest.raises(CalcoreError, match=r"slice column 'image' has shape \(6, 3\)"):
        calcore.load_predictions(tmp_path / "m.npz", slice_columns=["image"])


def test_slice_columns_are_never_scores_and_are_checked(tmp_path):
    # Without a score prefix every numeric column would be a class.
    text = "label,a,b,segment\na,0.9,0.1,1\nb,0.2,0.8,2\n"
    (tmp_path / "s.csv").write_text(text)
    with pytest.raises(CalcoreError, match="column 'segment'"):  # read as a third class
        calcore.load_predictions(tmp_path / "s.csv", scores="probs")
    preds = calcore.load_predictions(tmp_path / "s.csv", slice_columns=["segment"])
    assert preds.class_names == ("a", "b") and preds.metadata["segment"].kind == "integer"
    with pytest.raises(CalcoreError, match="slice column 'nope' is not a column"):
        calcore.load_predictions(tmp_path / "s.csv", slice_columns=["nope"])
    with pytest.raises(CalcoreError, match="'label' is the label column"):
        calcore.load_predictions(tmp_path / "s.csv", label_column="label", slice_columns="label")


def test_metadata_follows_subsets_and_splits(tmp_path):
    rows = ["1,0.8,DE,calib", "0,0.3,FR,test", "0,0.2,US,test"]
    path = _binary_csv(tmp_path / "sp.csv", rows, "country,split")
    test = calcore.load_predictions(path, split="test")
    assert test.metadata["country"].values.tolist() == [1, 2]
    assert test.subset([1]).metadata["country"].n_distinct == 1
    with pytest.raises(CalcoreError, match="has 2 values for 3 rows"):
        calcore.load_predictions(path).with_metadata({"x": ["a", "b"]})


# ------------------------------------------------------------------ slicing


def test_quantile_ranges_by_hand_and_ties_never_split():
    col = {"x": metadata_column("x", np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10.0]))}
    s = calcore.slicing_of(col, "x:q4")
    # inverted-CDF quartiles of 1..10 are 3, 5 and 8: [1, 3], (3, 5], (5, 8], (8, 10]
    assert s.labels == ("[1, 3]", "(3, 5]", "(5, 8]", "(8, 10]")
    assert s.codes.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    tied = {"x": metadata_column("x", np.array([1, 1, 1, 1, 1, 1, 2, 3.0]))}
    t = calcore.slicing_of(tied, "x:q4")
    assert t.labels == ("[1, 1]", "(1, 3]") and t.codes.tolist() == [0] * 6 + [1, 1]
    # the 25-quantiles of 1..25 are 1..24: 25 ranges of one value each. Ranks are exact
    # integers: a float rank (numpy's 25 * (7 / 25) = 7.000000000000001) rounds up to 8
    # and merges 7 into (6, 8].
    many = {"x": metadata_column("x", np.arange(1, 26.0))}
    s25 = calcore.slicing_of(many, "x:q25")
    assert s25.n_slices == 25 and s25.labels[6:8] == ("(6, 7]", "(7, 8]")


def test_periods_by_hand():
    days = np.array(
        ["2026-11-01", "2026-11-02", "2026-11-08", "2026-11-09", "NaT"], "datetime64[s]"
    )
    col = {"d": metadata_column("d", days)}
    assert calcore.slicing_of(col, "d:day").labels == (
        "2026-11-01", "2026-11-02", "2026-11-08", "2026-11-09", MISSING
    )  # fmt: skip
    # 2026-11-01 is a Sunday: its week starts on Monday 2026-10-26
    week = calcore.slicing_of(col, "d:week")
    assert week.labels == (
        "week of 2026-10-26",
        "week of 2026-11-02",
        "week of 2026-11-09",
        MISSING,
    )
    assert week.codes.tolist() == [0, 1, 1, 2, 3]
    assert calcore.slicing_of(col, "d:month").labels == ("2026-11", MISSING)
    assert calcore.slicing_of(col, "d").labels[0] == "2026-11-01"  # short span: by day


def test_a_value_spelled_missing_and_missing_values_stay_two_slices():
    col = metadata_column("src", np.array(["(missing)", "", "web", "(missing)", ""], object))
    slicing = calcore.slicing_of({"src": col}, "src")
    named = {label: slicing.rows(k).tolist() for k, label in enumerate(slicing.labels)}
    assert named == {"(missing)": [0, 3], "(no value)": [1, 4], "web": [2]}
    plain = metadata_column("src", np.array(["app", "", "web"], object))
    assert calcore.slicing_of({"src": plain}, "src").labels == ("app", "web", MISSING)


def test_crossed_slices_are_the_present_combinations():
    cols = {
        "a": metadata_column("a", ["x", "x", "y", "y", None]),
        "b": metadata_column("b", [1, 2, 1, 1, 2]),
    }
    s = calcore.slicing_of(cols, ["a", "b"])
    assert s.labels == ("x | 1", "x | 2", "y | 1", "(missing) | 2")
    assert s.codes.tolist() == [0, 1, 2, 2, 3]
    assert s.columns == ("a", "b")


def test_slicing_refusals_name_the_column_and_the_fix():
    cols = {
        "v": metadata_column("v", np.arange(2000) / 7.0),
        "c": metadata_column("c", ["a"] * 2000),
    }
    with pytest.raises(CalcoreError, match=r"'v' is numeric with 2,000 distinct.*'v:q5'"):
        calcore.slicing_of(cols, "v")
    with pytest.raises(CalcoreError, match="no metadata column 'w'.*'v', 'c'"):
        calcore.slicing_of(cols, "w")
    with pytest.raises(CalcoreError, match="quantile ranges"):
        calcore.slicing_of(cols, "c:q4")
    with pytest.raises(CalcoreError, match="use 2 to 100"):
        calcore.slicing_of(cols, "v:q1")
    with pytest.raises(CalcoreError, match="more than 3"):
        calcore.slicing_of(cols, "v:q5", max_slices=3)
    everything_missing = {"m": metadata_column("m", [None, None, ""])}
    assert calcore.slicing_of(everything_missing, "m").labels == (MISSING,)


# ------------------------------------------------------------------ evaluate_by


def _planted(n_slices, planted, n_per_slice, seed, n_classes=3):
    """Calibrated rows in every slice, over-confident ones in the ``planted`` slices."""
    parts, names = [], []
    for k in range(n_slices):
        kind = "overconfident" if k in planted else "calibrated"
        sim = calcore.dirichlet_simulator(n_classes, miscalibration=kind, strength=2.0)
        parts.append(calcore.simulate_predictions(sim, n_per_slice, seed=seed * 1000 + k).preds)
        names += [f"s{k:02d}"] * n_per_slice
    probs = np.concatenate([p.probs for p in parts])
    labels = np.concatenate([p.labels for p in parts])
    preds = calcore.Predictions.from_probs(probs, labels)
    return preds.with_metadata({"segment": np.array(names)})


def test_each_slice_equals_evaluate_of_its_rows_with_weights():
    preds = _planted(4, {1}, 150, seed=3)
    w = np.random.default_rng(4).integers(0, 3, preds.n_samples).astype(float)
    sliced = calcore.evaluate_by(
        preds, "segment", sample_weight=w, binning="equal-mass", bins=8, n_resamples=19
    )
    assert (
        sliced.overall.metrics
        == calcore.evaluate(preds, sample_weight=w, binning="equal-mass", bins=8).metrics
    )
    names = preds.metadata["segment"]
    for s in sliced.slices:
        rows = np.flatnonzero(names.values == names.categories.index(s.label))
        want = calcore.evaluate(
            preds.subset(rows), sample_weight=w[rows], binning="equal-mass", bins=8
        )
        assert s.n == rows.size and s.weight == w[rows].sum()
        assert_same_metrics(s.report, want, rel=1e-12, abs=1e-15)


def test_q_values_are_benjamini_hochberg_by_hand_and_ranking_follows_them():
    preds = _planted(6, {2, 4}, 200, seed=5)
    sliced = calcore.evaluate_by(preds, "segment", n_resamples=99)
    tested = [s for s in sliced.slices if s.tested]
    p = np.array([s.p_value for s in tested])
    m = p.size
    order = np.argsort(p, kind="stable")
    by_hand = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):  # q_(i) = min over j >= i of m p_(j) / j
        running = min(running, p[order[rank - 1]] * m / rank)
        by_hand[order[rank - 1]] = running
    np.testing.assert_allclose([s.q_value for s in tested], by_hand, rtol=1e-12)
    found = [s for s in tested if s.q_value <= 0.05]
    rest = [s for s in tested if s.q_value > 0.05]
    assert tested == found + rest  # discoveries first
    assert [s.z for s in found] == sorted((s.z for s in found), reverse=True)
    assert [s.p_value for s in rest] == sorted(s.p_value for s in rest)
    assert {s.label for s in sliced.slices[:2]} == {"s02", "s04"}
    shares = [s.share for s in sliced.slices]
    assert sum(shares) == pytest.approx(1.0)


def test_planted_slices_rank_first_and_calibrated_models_have_few_false_discoveries():
    found, false = 0, 0
    for seed in range(4):
        sliced = calcore.evaluate_by(_planted(10, {3, 7}, 300, seed), "segment", n_resamples=99)
        found += {s.label for s in sliced.slices[:2]} == {"s03", "s07"}
        false += sum(s.label not in ("s03", "s07") for s in sliced.discoveries(alpha=0.1))
    assert found == 4 and false <= 2
    # a calibrated model: 8 seeds x 10 slices, BH at 0.1 -> few discoveries by chance
    discoveries = sum(
        len(calcore.evaluate_by(_planted(10, set(), 300, 100 + s), "segment", n_resamples=99)
            .discoveries(alpha=0.1))
        for s in range(8)
    )  # fmt: skip
    assert discoveries <= 3


def test_small_and_weightless_slices_are_listed_untested():
    preds = _planted(3, set(), 100, seed=7)
    seg = preds.metadata["segment"].values.copy()
    names = np.array(["s00", "s01", "s02", "tiny"])[seg]
    names[5] = "tiny"  # a slice with one row
    preds = preds.with_metadata({"segment": names})
    w = np.ones(preds.n_samples)
    w[names == "s02"] = 0.0
    sliced = calcore.evaluate_by(preds, "segment", sample_weight=w, n_resamples=19)
    by_label = {s.label: s for s in sliced.slices}
    assert (
        by_label["tiny"].n == 1
        and not by_label["tiny"].tested
        and "1 rows" in by_label["tiny"].note
    )
    assert by_label["s02"].report is None and by_label["s02"].note == "no weight"
    assert [s.label for s in sliced.slices][-2:] == ["s02", "tiny"] or not sliced.slices[-1].tested
    assert any("not tested" in n for n in sliced.notes)
    assert by_label["tiny"].as_dict()["p_value"] is None


def test_evaluate_by_refuses_bad_options_and_streams_without_slice_columns(tmp_path):
    preds = _planted(2, set(), 50, seed=8)
    with pytest.raises(CalcoreError, match="min_slice_rows"):
        calcore.evaluate_by(preds, "segment", min_slice_rows=1)
    with pytest.raises(CalcoreError, match="rank_by"):
        calcore.evaluate_by(preds, "segment", rank_by="accuracy")
    pq.write_table(
        pa.table({"label": [0, 1], "p_x": [0.2, 0.7], "g": ["a", "b"]}), tmp_path / "s.parquet"
    )
    with pytest.raises(CalcoreError, match="reads no slice column"):
        calcore.evaluate_by(calcore.scan(tmp_path / "s.parquet"), "g")
    with pytest.raises(CalcoreError, match="expects a calcore.Predictions or a stream"):
        calcore.evaluate_by([[0.2, 0.8]], "g")


def _over_time(kinds, n_per_day, seed):
    """Binary predictions over consecutive days, day ``d`` drawn from ``kinds[d]``."""
    parts, days = [], []
    for d, kind in enumerate(kinds):
        sim = calcore.dirichlet_simulator(2, miscalibration=kind, strength=2.0)
        parts.append(calcore.simulate_predictions(sim, n_per_day, seed=seed * 100 + d).preds)
        days += [f"2026-11-{d + 1:02d}"] * n_per_day
    preds = calcore.Predictions.from_probs(
        np.concatenate([p.probs for p in parts]), np.concatenate([p.labels for p in parts])
    )
    return preds.with_metadata({"day": np.array(days)})


def test_a_change_over_time_is_flagged_with_its_evidence():
    preds = _over_time(["calibrated", "calibrated", "overconfident"], 800, seed=1)
    sliced = calcore.evaluate_by(preds, "day", n_resamples=99, rank_by="top_label_ece")
    change = sliced.change
    assert (change.first, change.last) == ("2026-11-01", "2026-11-03")
    first, last = sliced.in_order()[0], sliced.in_order()[-1]
    assert change.first_value == first.report.top_label_ece
    assert change.last_value == last.report.top_label_ece
    assert change.difference > 0 and change.p_value == pytest.approx(0.01)
    assert "rose" in change.verdict() and any(n.startswith("Over time:") for n in sliced.notes)
    assert sliced.as_dict()["change"]["p_value"] == change.p_value


def test_no_change_between_calibrated_periods_is_rejected_at_the_nominal_rate():
    rejected = 0
    for seed in range(20):
        preds = _over_time(["calibrated", "calibrated"], 300, seed=10 + seed)
        rejected += calcore.evaluate_by(preds, "day", n_resamples=39).change.p_value <= 0.05
    assert rejected <= 3  # 20 x 0.05 = 1 expected


def test_large_periods_are_compared_on_a_seeded_sample_that_says_so(monkeypatch, tmp_path):
    import calcore.evaluation.slice_results as slice_results
    from calcore.foundation.keyed_random import row_uniforms

    monkeypatch.setattr(slice_results, "PERIOD_TEST_ROWS", 120)
    preds = _over_time(["calibrated", "overconfident"], 400, seed=3)
    sliced = calcore.evaluate_by(preds, "day", n_resamples=49, rank_by="top_label_ece")
    change = sliced.change
    assert change.n_rows == (400, 400) and change.n_tested == (120, 120) and change.sampled
    assert change.first_value == sliced.in_order()[0].report.top_label_ece  # all rows
    note = next(n for n in sliced.notes if n.startswith("Over time:"))
    assert "seeded sample of 120 and 120 of the two periods' 400 and 400 rows" in note
    # the sample is the 120 rows of each day with the smallest uniforms keyed by position:
    # the test on exactly those rows, unsampled, gives the same p-value
    u = row_uniforms(np.arange(800), 0, stream=1 << 40)
    kept = np.sort(np.concatenate([d * 400 + np.argsort(u[d * 400 : d * 400 + 400])[:120]
                                   for d in range(2)]))  # fmt: skip
    monkeypatch.setattr(slice_results, "PERIOD_TEST_ROWS", 10_000)
    alone = calcore.evaluate_by(preds.subset(kept), "day", n_resamples=49).change
    assert not alone.sampled and alone.p_value == change.p_value
    # streamed in uneven batches: the same rows, the same p-value
    monkeypatch.setattr(slice_results, "PERIOD_TEST_ROWS", 120)
    pq.write_table(
        pa.table(
            {"label": preds.labels, "p_0": preds.probs[:, 0], "p_1": preds.probs[:, 1],
             "day": preds.metadata["day"].values}
        ),
        tmp_path / "t.parquet",
        row_group_size=97,
    )  # fmt: skip
    stream = calcore.scan(tmp_path / "t.parquet", slice_columns=["day"], batch_rows=61)
    streamed = calcore.evaluate_by(stream, "day:day", n_resamples=49).change
    assert streamed.n_tested == (120, 120) and streamed.p_value == change.p_value


def test_no_change_is_computed_for_other_slicings():
    preds = _planted(2, set(), 100, seed=2)
    assert calcore.evaluate_by(preds, "segment", n_resamples=19).change is None


# ------------------------------------------------------------------ command line


@pytest.fixture
def sliced_csv(tmp_path):
    preds = _planted(3, {1}, 400, seed=9, n_classes=2)
    segment = preds.metadata["segment"]
    names = [segment.categories[c] for c in segment.values]
    names = ["<b>=HYPERLINK(x)|\x1b[2J" if n == "s02" else n for n in names]  # hostile text
    rows = [
        f"{y},{float(p[1])!r},{name}"
        for p, y, name in zip(preds.probs, preds.labels, names, strict=True)
    ]
    return _binary_csv(tmp_path / "sl.csv", rows, "segment")


def test_cli_metrics_by_json_lists_every_slice_by_evidence(sliced_csv, capsys):
    assert main(["metrics", str(sliced_csv), "--by", "segment", "--json", "--resamples", "49"]) == 0
    got = json.loads(capsys.readouterr().out)
    # two classes: ranked by the ECE of class 1 unless --rank-by says otherwise
    assert got["by"] == ["segment"] and got["rank_metric"] == "positive_class_ece"
    assert [s["value"] for s in got["slices"]][0] == "s01"
    for s in got["slices"]:
        assert {"column", "value", "n", "p_value", "q_value", "share"} <= set(s)
        assert set(calcore.METRICS) <= set(s)
        assert s["column"] == "segment" and s["n"] == 400


def test_cli_metrics_by_text_table(sliced_csv, capsys):
    assert main(["metrics", str(sliced_csv), "--by", "segment", "--resamples", "49"]) == 0
    out = capsys.readouterr().out
    assert "Slices by segment, most miscalibrated first" in out
    table = out.split("most miscalibrated first", 1)[1]
    assert table.index("s01") < table.index("s00")
    assert "\x1b" not in out and "<b>=HYPERLINK(x)|\ufffd[2J" in out


def test_cli_check_by_fails_on_a_slice_and_reports_it_escaped(sliced_csv, tmp_path, capsys):
    junit, md = tmp_path / "j.xml", tmp_path / "s.md"
    args = ["check", str(sliced_csv), "--max", "top_label_ece=0.06", "--by", "segment"]
    code = main(args + ["--junit", str(junit), "--markdown", str(md), "--resamples", "19"])
    out = capsys.readouterr().out
    assert code == 1, out
    suite = ET.fromstring(junit.read_bytes())
    names = [c.get("name") for c in suite.iter("testcase")]
    assert names[0] == "top_label_ece <= 0.06" and len(names) == 4
    assert "top_label_ece <= 0.06 [segment = s01]" in names
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert "top_label_ece <= 0.06 [segment = s01]" in failed
    text = md.read_text()
    assert "<b>" not in text and "&lt;b&gt;" in text and "\\|" in text
    assert "\x1b" not in out and "\x1b" not in text
    assert main(["check", str(sliced_csv), "--max", "top_label_ece=0.9", "--by", "segment",
                 "--resamples", "19"]) == 0  # fmt: skip
    assert main(["check", str(sliced_csv), "--max", "top_label_ece=0.9", "--by", "nope"]) == 2
    assert "slice column 'nope' is not a column" in capsys.readouterr().err


def test_calibrated_outputs_keep_the_metadata_so_each_calibrator_is_evaluated_per_slice():
    preds = _planted(4, {0, 1, 2, 3}, 300, seed=12)  # over-confident everywhere
    calib, test = preds.subset(np.arange(0, 1200, 2)), preds.subset(np.arange(1, 1200, 2))
    output = calcore.make_calibrator("ts").fit(calib).transform(test)
    assert output.metadata["segment"].values.tolist() == test.metadata["segment"].values.tolist()
    before = calcore.evaluate_by(test, "segment", n_resamples=19)
    after = calcore.evaluate_by(output, "segment", n_resamples=19)
    worst = {s.label: s.report.top_label_ece for s in before.slices}
    fixed = {s.label: s.report.top_label_ece for s in after.slices}
    assert all(fixed[k] < worst[k] for k in worst)  # one global temperature fixes each slice
