"""Calibrators fitted per slice (issue 14, item 5): calcore.fit_per_slice.

Checked against fits made by hand on each slice's rows, on planted slices that one
global map cannot fix, and for the slices that keep the global fit (too few rows, no
calibration rows, a fit that fails), which must be named, never dropped.
"""

from __future__ import annotations

import numpy as np
import pytest

import calcore
from calcore.foundation.errors import CalcoreError


def _two_shops(n: int, seed: int) -> calcore.Predictions:
    """Binary predictions over-confident in shop "a" and under-confident in shop "b":
    a single temperature cannot fix both."""
    over = calcore.dirichlet_simulator(2, miscalibration="overconfident", strength=2.5)
    under = calcore.dirichlet_simulator(2, miscalibration="underconfident", strength=2.5)
    a = calcore.simulate_predictions(over, n, seed=seed).preds
    b = calcore.simulate_predictions(under, n, seed=seed + 1).preds
    both = calcore.predictions.concat([a, b])
    return both.with_metadata({"shop": np.repeat(["a", "b"], n)})


def test_each_slice_gets_the_fit_of_its_own_rows():
    calib, test = _two_shops(3000, seed=1), _two_shops(2000, seed=11)
    out = calcore.fit_per_slice("ts", calib, test, "shop")
    assert [(s.label, s.n_calib, s.n_test, s.own) for s in out.slices] == [
        ("a", 3000, 2000, True),
        ("b", 3000, 2000, True),
    ]
    for shop in ("a", "b"):
        c_rows = np.flatnonzero(
            calib.metadata["shop"].values == calib.metadata["shop"].categories.index(shop)
        )
        t_rows = np.flatnonzero(
            test.metadata["shop"].values == test.metadata["shop"].categories.index(shop)
        )
        by_hand = (
            calcore.make_calibrator("ts").fit(calib.subset(c_rows)).transform(test.subset(t_rows))
        )
        np.testing.assert_array_equal(out.output.probs[t_rows], by_hand.probs)
    np.testing.assert_array_equal(out.output.labels, test.labels)
    assert set(out.output.metadata) == {"shop"} and out.output.logits is None
    assert out.summary() == "ts fitted per slice of shop: 2 of 2 slices have their own fit."


def test_per_slice_fits_fix_what_one_global_map_leaves():
    calib, test = _two_shops(4000, seed=2), _two_shops(4000, seed=12)
    global_fit = calcore.make_calibrator("ts").fit(calib)
    global_out = global_fit.transform(test)
    per_slice = calcore.fit_per_slice("ts", calib, test, "shop", global_calibrator=global_fit)
    kw = dict(n_resamples=0, metrics=["conf_ece"], rank_by="conf_ece")
    one_map = calcore.evaluate_by(global_out, "shop", **kw)
    own_maps = calcore.evaluate_by(per_slice.output, "shop", **kw)
    for g, s in zip(one_map.in_order(), own_maps.in_order(), strict=True):
        assert g.label == s.label
        # opposite miscalibrations: the global temperature leaves both slices off
        assert g.report.metrics["conf_ece"] > 0.03, g.label
        assert s.report.metrics["conf_ece"] < 0.5 * g.report.metrics["conf_ece"], s.label


def test_slices_that_cannot_have_their_own_fit_keep_the_global_one_and_say_why():
    calib, test = _two_shops(600, seed=3), _two_shops(600, seed=13)
    shops = np.repeat(["a", "b"], 600)
    shops[:40] = "c"  # 40 calibration rows of shop c: too few
    calib = calib.with_metadata({"shop": shops})
    tshops = np.repeat(["a", "b"], 600)
    tshops[:30] = "c"
    tshops[-20:] = "d"  # no calibration row at all
    test = test.with_metadata({"shop": tshops})
    # shop "a" in calibration: every row weighs 0, so its fit is refused
    calib = calib.with_metadata({"shop": shops}).with_sample_weight(
        np.where(shops == "a", 0.0, 1.0)
    )
    global_fit = calcore.make_calibrator("platt").fit(calib)
    global_out = global_fit.transform(test)
    out = calcore.fit_per_slice(
        "platt", calib, test, "shop", global_calibrator=global_fit, min_rows=100
    )
    by_label = {s.label: s for s in out.slices}
    assert by_label["c"].own is False and by_label["c"].n_calib == 40
    assert by_label["c"].note == "with fewer than 100 calibration rows"
    assert by_label["d"].own is False and by_label["d"].note == "without calibration rows"
    assert by_label["b"].own is True
    assert by_label["a"].own is False and by_label["a"].n_calib == 560
    assert by_label["a"].note.startswith("whose fit failed: every row of these predictions has")
    kept = np.isin(tshops, ["a", "c", "d"])
    np.testing.assert_array_equal(out.output.probs[kept], global_out.probs[kept])
    text = out.summary()
    assert "1 of 4 slices have their own fit" in text and "keep the global fit" in text
    assert "1 with fewer than 100 calibration rows" in text and "1 without calibration rows" in text


def test_calibration_rows_are_sliced_like_the_test_rows():
    rng = np.random.default_rng(5)
    sim = calcore.dirichlet_simulator(2, miscalibration="overconfident", strength=2.0)
    calib = calcore.simulate_predictions(sim, 2000, seed=6).preds
    test = calcore.simulate_predictions(sim, 1000, seed=7).preds
    # calibration ages reach beyond the test's: they join the first and last ranges
    calib = calib.with_metadata({"age": rng.integers(10, 100, 2000).astype(float)})
    test = test.with_metadata({"age": rng.integers(20, 80, 1000).astype(float)})
    out = calcore.fit_per_slice("ts", calib, test, "age:q2", min_rows=1)
    test_slicing = calcore.slicing_of(test.metadata, "age:q2")
    assert [s.values for s in out.slices] == list(test_slicing.values)
    low, cut, high = test_slicing.resolved[0]
    ages = calib.metadata["age"].values
    assert [s.n_calib for s in out.slices] == [int((ages <= cut).sum()), int((ages > cut).sum())]
    assert low >= 20 and high < 80


def test_bad_requests_are_refused_up_front():
    calib, test = _two_shops(200, seed=4), _two_shops(200, seed=14)
    with pytest.raises(CalcoreError, match="Unknown calibrator 'nope'"):
        calcore.fit_per_slice("nope", calib, test, "shop")
    with pytest.raises(CalcoreError, match="no metadata column 'country'"):
        calcore.fit_per_slice("ts", calib, test, "country")
    with pytest.raises(CalcoreError, match="min_rows must be at least 1"):
        calcore.fit_per_slice("ts", calib, test, "shop", min_rows=0)


# ------------------------------------------------------------------ the calibrator itself


def _with_income(preds: calcore.Predictions, income) -> calcore.Predictions:
    return preds.with_metadata({**preds.metadata, "income": np.asarray(income, float)})


def test_a_saved_per_slice_calibrator_maps_new_rows_by_the_slices_fixed_when_fitting():
    rng = np.random.default_rng(8)
    calib = _with_income(_two_shops(1500, seed=21), rng.uniform(10, 90, 3000))
    cal = calcore.PerSliceCalibrator("platt", by=["shop", "income:q2"], min_rows=50)
    cal.fit(calib)
    assert cal.n_own == 4 and len(cal.fits) == 4
    (cut_low, cut, cut_high) = cal.resolved[1]
    # new rows: incomes beyond the calibration's ranges, and a shop never seen
    test = _two_shops(400, seed=22)
    shops = test.metadata["shop"].values.copy()
    shop_names = np.array(test.metadata["shop"].categories, dtype=object)[shops]
    shop_names[:50] = "new"
    income = rng.uniform(0, 100, 800)
    test = _with_income(test.with_metadata({"shop": shop_names}), income)
    out = cal.transform(test)
    # by hand: each row's map from its shop and its side of the stored cut
    global_fit = calcore.make_calibrator("platt").fit(calib)
    calib_names = np.array(calib.metadata["shop"].categories, dtype=object)[
        calib.metadata["shop"].values
    ]
    calib_high = calib.metadata["income"].values > cut
    for shop in ("a", "b", "new"):
        for high in (False, True):
            rows = np.flatnonzero((shop_names == shop) & ((income > cut) == high))
            if shop == "new":
                expected = global_fit.transform(test.subset(rows)).probs
            else:
                own = np.flatnonzero((calib_names == shop) & (calib_high == high))
                fitted = calcore.make_calibrator("platt").fit(calib.subset(own))
                expected = fitted.transform(test.subset(rows)).probs
            np.testing.assert_allclose(out.probs[rows], expected, rtol=0, atol=1e-12)
    # saved as JSON and read back: bit-identical outputs, through Calibrator.from_dict
    import json

    saved = json.loads(json.dumps(cal.to_dict()))
    assert saved["method"] == "per-slice" and saved["base_method"] == "platt"
    again = calcore.Calibrator.from_dict(saved)
    assert isinstance(again, calcore.PerSliceCalibrator) and again.resolved == cal.resolved
    np.testing.assert_array_equal(again.transform(test).probs, out.probs)
    assert out.logits is None and set(out.metadata) == {"shop", "income"}


def test_a_per_slice_calibrator_streams_batches_with_their_slice_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(9)
    calib = _with_income(_two_shops(1000, seed=31), rng.uniform(0, 50, 2000))
    cal = calcore.PerSliceCalibrator("ts", by=["shop", "income:q3"]).fit(calib)
    test = _with_income(_two_shops(700, seed=32), rng.uniform(0, 50, 1400))
    names = np.array(test.metadata["shop"].categories)[test.metadata["shop"].values]
    table = {"label": test.labels, "p_0": test.probs[:, 0], "p_1": test.probs[:, 1]}
    table |= {"shop": names, "income": test.metadata["income"].values}
    pq.write_table(pa.table(table), tmp_path / "t.parquet", row_group_size=333)
    stream = calcore.scan(tmp_path / "t.parquet", slice_columns=["shop", "income"], batch_rows=97)
    mapped = stream.with_transform(cal.transform, with_metadata=True)
    streamed = np.concatenate([b.preds.probs for b in mapped.batches()])
    np.testing.assert_allclose(streamed, cal.transform(test).probs, rtol=0, atol=1e-12)
    # the sliced evaluation of the streamed output equals the in-memory one
    kw = dict(n_resamples=0, metrics=["conf_ece"], rank_by="conf_ece")
    memory = calcore.evaluate_by(cal.transform(test), "shop", **kw)
    on_stream = calcore.evaluate_by(mapped, "shop", **kw)
    for a, b in zip(memory.in_order(), on_stream.in_order(), strict=True):
        assert a.report.metrics["conf_ece"] == pytest.approx(b.report.metrics["conf_ece"])
    plain = calcore.scan(tmp_path / "t.parquet")
    with pytest.raises(CalcoreError, match="no slice columns to read"):
        plain.with_transform(cal.transform, with_metadata=True)
    with pytest.raises(CalcoreError, match="no metadata column 'shop'"):
        cal.transform(test.with_metadata({}))


def test_a_per_slice_calibrator_refuses_what_it_cannot_do():
    with pytest.raises(CalcoreError, match="Unknown calibrator"):
        calcore.PerSliceCalibrator("nope", by="shop")
    with pytest.raises(CalcoreError, match="at least one column"):
        calcore.PerSliceCalibrator("ts", by=[])
    cal = calcore.PerSliceCalibrator("ts", by="shop")
    with pytest.raises(CalcoreError, match="not fitted yet"):
        cal.to_dict()
    saved = cal.fit(_two_shops(300, seed=41)).to_dict()
    del saved["resolved"]
    with pytest.raises(CalcoreError, match="resolved is missing"):
        calcore.Calibrator.from_dict(saved)


# ------------------------------------------------------------------ command line


@pytest.fixture(scope="module")
def shop_files(tmp_path_factory):
    """One CSV and one Parquet file of both splits, with a shop column."""
    import pandas as pd

    folder = tmp_path_factory.mktemp("per_slice")
    parts = []
    for split, seed in (("calib", 51), ("test", 52)):
        p = _two_shops(800, seed=seed)
        shops = np.array(p.metadata["shop"].categories)[p.metadata["shop"].values]
        parts.append(
            pd.DataFrame(
                {"label": p.labels, "p_0": p.probs[:, 0], "p_1": p.probs[:, 1], "shop": shops,
                 "split": split}
            )
        )  # fmt: skip
    df = pd.concat(parts, ignore_index=True)
    df.to_csv(folder / "d.csv", index=False)
    df.to_parquet(folder / "d.parquet", row_group_size=500)
    return folder


def test_cli_calibrate_per_slice_saves_a_calibrator_that_apply_maps_alike(shop_files, capsys):
    import json

    import pandas as pd

    from calcore.cli import main

    saved = shop_files / "ps.json"
    csv = str(shop_files / "d.csv")
    assert main(["calibrate", csv, "--method", "ts", "--per-slice", "shop", "--save", str(saved),
                 "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "ts" and out["per_slice"]["by"] == ["shop"]
    assert [(s["value"], s["n_calib"], s["own_fit"]) for s in out["per_slice"]["slices"]] == [
        ("a", 800, True),
        ("b", 800, True),
    ]
    # the opposite miscalibrations of the two shops: per slice beats one temperature
    assert main(["calibrate", csv, "--method", "ts", "--json"]) == 0
    one_map = json.loads(capsys.readouterr().out)
    assert out["after"]["conf_ece"] < 0.6 * one_map["after"]["conf_ece"]
    # apply, loaded whole and streamed: the calibrator's own map of the test rows
    splits = calcore.load_splits(csv)
    expected = calcore.Calibrator.from_dict(json.loads(saved.read_text()))
    expected = expected.transform(splits["test"]).probs
    for source, name in ((csv, "o.csv"), (str(shop_files / "d.parquet"), "o.parquet")):
        target = shop_files / name
        assert main(["apply", str(saved), source, "--split", "test", "--out", str(target)]) == 0
        assert "ts per slice of shop: recalibrated 1600 rows" in capsys.readouterr().out
        frame = pd.read_csv(target) if name.endswith(".csv") else pd.read_parquet(target)
        np.testing.assert_allclose(frame[["p_0", "p_1"]].to_numpy(), expected, atol=1e-12)
    # streamed calibrate gives the same fits as loaded whole (fewer rows than --max-fit-rows)
    parquet = str(shop_files / "d.parquet")
    assert main(["calibrate", parquet, "--method", "ts", "--per-slice", "shop", "--json"]) == 0
    streamed = json.loads(capsys.readouterr().out)
    assert streamed["per_slice"] == out["per_slice"]
    assert streamed["after"]["conf_ece"] == pytest.approx(out["after"]["conf_ece"], abs=1e-12)


def test_cli_per_slice_errors_are_one_line_with_exit_2(shop_files, capsys):
    from calcore.cli import main

    csv = str(shop_files / "d.csv")
    assert main(["calibrate", csv, "--method", "ts", "--per-slice", "country"]) == 2
    err = capsys.readouterr().err.strip()
    assert "country" in err and len(err.splitlines()) == 1
    assert main(["calibrate", csv, "--method", "nope", "--per-slice", "shop"]) == 2
    assert "Unknown calibrator 'nope'" in capsys.readouterr().err
