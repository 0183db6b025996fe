"""Where (issue 32): slices ranked by miscalibration beyond their size's noise and the
overall model's, with signed truth (observed vs expected) and p-values beyond the floor.

Every value is checked against an independent computation: the gamma tail with
method-of-moments parameters written out here, the effect from calibration tests run
on the slice's and the whole data's rows, observed and expected rates by hand.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.special import expit
from scipy.stats import gamma

import calcore
from calcore.evaluation.slice_ranking import tail_p_value
from calcore.evaluation.slice_truth import direction_of

SEGMENTS = np.array(["a", "b", "c", "d", "e", "f"])


def _planted(seed, n=20_000):
    """Binary rows: over-confident everywhere (log-odds x 1.6: TL-ECE about 0.075), and
    segment "f" (2.5% of rows) under-predicted (its log-odds lowered by 1.6: TL-ECE about
    0.27)."""
    rng = np.random.default_rng(seed)
    seg = rng.choice(6, n, p=[0.3, 0.25, 0.2, 0.125, 0.1, 0.025])
    true_logit = rng.normal(0.0, 1.5, n)
    y = (rng.random(n) < expit(true_logit)).astype(int)
    model = 1.6 * true_logit
    model[seg == 5] = true_logit[seg == 5] - 1.6
    p = expit(model)
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    return preds.with_metadata({"segment": SEGMENTS[seg]})


def _parquet(preds, path):
    seg = preds.metadata["segment"]
    table = pa.table(
        {
            "label": preds.labels,
            "p_0": preds.probs[:, 0],
            "p_1": preds.probs[:, 1],
            "segment": np.array(seg.categories)[seg.values],
        }
    )
    pq.write_table(table, path, row_group_size=4096)
    return path


# ------------------------------------------------------------------ tail p-values


def test_the_tail_p_value_is_the_moment_matched_gamma_beyond_the_floor():
    null = np.random.default_rng(0).gamma(9.0, 0.002, 199)
    observed = null.max() * 1.5
    m, v = null.mean(), null.var(ddof=1)
    by_hand = gamma.sf(observed, a=m**2 / v, scale=v / m)  # shape mean^2/var, scale var/mean
    p, how = tail_p_value(observed, null)
    assert how == "tail fit" and p == pytest.approx(by_hand, rel=1e-12) and p < 1 / 200
    # one redrawn value at or above the observed one: the Monte Carlo p-value, a count
    assert tail_p_value(null.max(), null) == (2 / 200, "redraws")
    # a fit that puts more mass beyond the observed value than the floor keeps the floor
    # (left-skewed redraws, which a gamma fits badly: near 0.5 beyond their maximum)
    assert tail_p_value(1.001, np.array([0.9] + [1.0] * 19)) == (1 / 21, "tail fit")
    assert tail_p_value(0.1, np.zeros(5)) == (1 / 6, "redraws")  # no spread: no fit


def test_two_planted_slices_at_the_floor_are_ordered_by_their_tail():
    # two slices of 1,000 calibrated-looking rows, their log-odds lowered by 1.2 and 0.8,
    # and 4,000 calibrated rows: both far beyond every redraw
    rng = np.random.default_rng(5)
    true_logit = rng.normal(0.0, 1.5, 6000)
    y = (rng.random(6000) < expit(true_logit)).astype(int)
    group = np.repeat(["strong", "weak", "rest"], [1000, 1000, 4000])
    model = true_logit - np.where(group == "strong", 1.2, np.where(group == "weak", 0.8, 0.0))
    p = expit(model)
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    sliced = calcore.evaluate_by(preds.with_metadata({"g": group}), "g", n_resamples=99)
    by = {s.label: s for s in sliced.slices}
    for s in (by["strong"], by["weak"]):  # the floor 1/100 would tie them
        null, observed = (
            s.test.null_values["positive_class_ece"],
            s.test.observed["positive_class_ece"],
        )
        assert np.count_nonzero(null >= observed) == 0
        assert s.p_method == "tail fit" and s.p_value < 1 / 100
        assert s.direction == "under-predicted"
    assert by["strong"].p_value < by["weak"].p_value
    assert [s.label for s in sliced.slices] == ["strong", "weak", "rest"]
    assert by["rest"].p_method == "redraws"
    assert any("tail" in n and "gamma" in n for n in sliced.notes)


# ------------------------------------------------------------------ the effect, z


def _folded_effect(observed, null):
    """The gap g whose folded normal mean (scipy's foldnorm, noise s set so that g = 0
    gives the redraws' mean) equals the observed error; 0 at or below that mean."""
    from scipy.optimize import brentq
    from scipy.stats import foldnorm

    s = null.mean() * np.sqrt(np.pi / 2)
    if observed <= null.mean():
        return 0.0
    return brentq(lambda g: foldnorm.mean(g / s, scale=s) - observed, 0, observed, xtol=1e-15)


def test_folded_effect_is_about_the_gap_far_above_the_noise_and_0_at_it():
    from calcore.evaluation.slice_ranking import noise_effect

    null = np.random.default_rng(0).normal(0.02, 0.004, 200)
    assert noise_effect(0.3, null)[0] == pytest.approx(0.3, abs=1e-9)
    assert noise_effect(null.mean(), null)[0] == 0.0
    for t in (0.021, 0.03, 0.05):
        assert noise_effect(t, null)[0] == pytest.approx(_folded_effect(t, null), abs=1e-12)


def test_excess_and_z_from_the_slice_and_overall_tests_computed_independently():
    preds = _planted(2, n=6000)
    # against the slice's own predictions (beyond_model=False): the raw effect and z
    sliced = calcore.evaluate_by(preds, "segment", n_resamples=49, seed=3, beyond_model=False)
    whole = calcore.calibration_test(preds, metrics=["positive_class_ece"], n_resamples=49, seed=3)
    t_all, n_all = whole.observed["positive_class_ece"], whole.null_values["positive_class_ece"]
    overall = _folded_effect(t_all, n_all)
    assert sliced.overall_effect == pytest.approx(overall, rel=1e-12)
    seg = preds.metadata["segment"]
    for s in sliced.slices:
        rows = np.flatnonzero(seg.values == seg.categories.index(s.label))
        own = calcore.calibration_test(
            preds.subset(rows),
            metrics=["positive_class_ece"],
            n_resamples=49,
            seed=3,
            positions=rows,
        )
        t, null = own.observed["positive_class_ece"], own.null_values["positive_class_ece"]
        assert s.excess == pytest.approx(_folded_effect(t, null) - overall, rel=1e-9, abs=1e-12)
        assert s.z == pytest.approx(s.excess / np.std(null, ddof=1), rel=1e-10)
    # discoveries first by z, then the other tested slices by p-value
    tested = [s for s in sliced.slices if s.tested]
    keys = [(s.q_value > 0.05, -s.z if s.q_value <= 0.05 else s.p_value) for s in tested]
    assert keys == sorted(keys)


# ------------------------------------------------------------------ signed truth


def test_observed_and_expected_by_hand_with_weights_and_direction_words():
    probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.4, 0.6]])
    labels = np.array([1, 1, 0, 1])
    w = np.array([1.0, 2.0, 1.0, 0.5])
    preds = calcore.Predictions.from_probs(probs, labels).with_metadata({"g": ["x"] * 4})
    s = calcore.evaluate_by(preds, "g", sample_weight=w, n_resamples=0).slices[0]
    assert s.observed == pytest.approx((1 + 2 + 0.5) / 4.5)
    assert s.expected == pytest.approx((0.1 + 0.4 + 0.3 + 0.3) / 4.5)
    assert s.ratio == pytest.approx(s.observed / s.expected) and s.view == "positive"
    # 3 classes: weighted accuracy against mean confidence
    probs3 = np.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    p3 = calcore.Predictions.from_probs(probs3, [0, 1, 1]).with_metadata({"g": ["x"] * 3})
    t = calcore.evaluate_by(p3, "g", n_resamples=0, min_slice_rows=2).slices[0]
    # argmax right on row 0 only; confidences 0.7, 0.5, 0.8
    assert (t.observed, t.expected) == pytest.approx((1 / 3, 2.0 / 3)) and t.view == "confidence"
    # the noise rule: 2 standard errors sqrt(e (1 - e) / n)
    se = np.sqrt(0.2 * 0.8 / 400)  # 0.02
    assert direction_of(0.2 + 2.01 * se, 0.2, 400, "positive") == "under-predicted"
    assert direction_of(0.2 - 2.01 * se, 0.2, 400, "positive") == "over-predicted"
    assert direction_of(0.2 + 1.99 * se, 0.2, 400, "positive") == ""
    assert direction_of(0.6, 0.8, 400, "confidence") == "overconfident"
    assert direction_of(0.9, 0.8, 400, "confidence") == "underconfident"
    d = s.as_dict()
    assert {"observed", "expected", "ratio", "direction", "excess", "z", "p_method"} <= set(d)


# ------------------------------------------------------------------ planted slices first


def test_a_small_planted_segment_ranks_first_in_memory_and_streamed(tmp_path):
    preds = _planted(4)
    memory = calcore.evaluate_by(preds, "segment", n_resamples=99)
    top = memory.slices[0]
    assert top.label == "f" and top.direction == "under-predicted" and top.observed > top.expected
    assert top.q_value <= 0.05 and top.z > 5
    # the rest are as miscalibrated as the whole model: no direction, small effects
    assert all(s.direction == "" for s in memory.slices[1:])
    # by raw share (the old tie-break at the floor) "f" is last: its 2.5% of the rows
    assert max(memory.slices, key=lambda s: s.share).label != "f"
    stream = calcore.scan(
        _parquet(preds, tmp_path / "p.parquet"),
        slice_columns=["segment"],
        batch_rows=3000,
        weight_column=False,
    )
    # metrics= restricted to one metric: the signed cells are still requested
    streamed = calcore.evaluate_by(stream, "segment", n_resamples=99, metrics=["conf_ece"])
    assert [s.label for s in streamed.slices] == [s.label for s in memory.slices]
    assert streamed.slices[0].direction == "under-predicted"
    assert streamed.slices[0].observed == pytest.approx(top.observed, abs=1e-12)
    assert streamed.slices[0].expected == pytest.approx(top.expected, abs=1e-12)


def test_the_demos_travel_on_mobile_ranks_first(tmp_path):
    from dashboard.demo import write_demo

    path = write_demo(tmp_path, n_rows=200_000, name="demo.parquet")
    preds = calcore.load_predictions(path, split="test", slice_columns=["segment", "device"])
    sliced = calcore.evaluate_by(preds, ["segment", "device"], n_resamples=99)
    top = sliced.slices[0]
    # the demo halves the odds of a click there: about 1.4 clicks per predicted click
    assert top.label == "travel | mobile" and top.direction == "under-predicted"
    assert 1.2 < top.ratio < 1.7


def test_a_calibrated_model_has_no_discovery_in_most_seeds():
    found = 0
    for seed in range(4):
        rng = np.random.default_rng(100 + seed)
        p = rng.beta(2, 5, 6000)
        y = (rng.random(6000) < p).astype(int)
        preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
        preds = preds.with_metadata({"segment": SEGMENTS[rng.integers(0, 6, 6000)]})
        found += bool(calcore.evaluate_by(preds, "segment", n_resamples=99).discoveries(alpha=0.05))
    assert found <= 1


# ------------------------------------------------------------------ after recalibration


@pytest.fixture
def split_file(tmp_path):
    """Over-confident everywhere, segment "f" also under-predicted; 40% calib rows."""
    preds = _planted(6, n=8000)
    seg = preds.metadata["segment"]
    split = np.where(np.random.default_rng(7).random(8000) < 0.4, "calib", "test")
    table = pa.table(
        {
            "label": preds.labels,
            "p_click": preds.probs[:, 1],
            "segment": np.array(seg.categories)[seg.values],
            "split": split,
        }
    )
    pq.write_table(table, tmp_path / "s.parquet", row_group_size=1500)
    table.to_pandas().to_csv(tmp_path / "s.csv", index=False)
    return tmp_path, preds, split


def test_a_global_calibrator_keeps_weights_and_slice_columns_and_leaves_the_slice(split_file):
    _, preds, split = split_file
    w = np.random.default_rng(8).integers(1, 3, preds.n_samples).astype(float)
    preds = preds.with_sample_weight(w)
    calib, test = (
        preds.subset(np.flatnonzero(split == "calib")),
        preds.subset(np.flatnonzero(split == "test")),
    )
    out = calcore.make_calibrator("ts").fit(calib).transform(test)
    np.testing.assert_array_equal(out.sample_weight, test.sample_weight)
    assert out.metadata["segment"].values.tolist() == test.metadata["segment"].values.tolist()
    before = calcore.evaluate_by(test, "segment", n_resamples=49)
    after = calcore.evaluate_by(out, "segment", n_resamples=49)
    # a global temperature fixes the over-confidence everywhere, not segment f's bias
    assert after.overall.top_label_ece < before.overall.top_label_ece / 2
    assert after.slices[0].label == "f" and after.slices[0].direction == "under-predicted"
    assert len(after.discoveries()) == 1


def test_cli_metrics_after_ranks_the_recalibrated_test_rows(split_file, capsys):
    import json

    from calcore.cli import main

    folder, _, _ = split_file
    got = {}
    for ext in ("csv", "parquet"):  # loaded whole, streamed
        args = ["metrics", str(folder / f"s.{ext}"), "--by", "segment", "--after", "ts"]
        assert main(args + ["--resamples", "49", "--json"]) == 0
        got[ext] = json.loads(capsys.readouterr().out)
    for out in got.values():
        assert out["after"]["method"] == "ts" and "max_temperature" in out["after"]["params"]
        assert out["notes"][0].startswith("Slices after recalibration: ts")
        assert out["slices"][0]["value"] == "f"
        assert out["slices"][0]["direction"] == "under-predicted"
        assert sum(s["n"] for s in out["slices"]) == out["n"]
    assert [s["value"] for s in got["csv"]["slices"]] == [
        s["value"] for s in got["parquet"]["slices"]
    ]
    assert got["csv"]["top_label_ece"] == pytest.approx(got["parquet"]["top_label_ece"], rel=1e-9)
    assert main(["metrics", str(folder / "s.csv"), "--by", "segment", "--resamples", "19"]) == 0
    table = capsys.readouterr().out
    assert "direction" in table and "under-predicted" in table and "obs/exp rate" in table


def test_cli_after_refusals_say_why_and_how(split_file, tmp_path, capsys):
    from calcore.cli import main

    folder, _, _ = split_file
    path = str(folder / "s.csv")
    assert main(["metrics", path, "--after", "ts"]) == 2
    assert "give --by COLUMN too" in capsys.readouterr().err
    assert main(["metrics", path, "--by", "segment", "--after", "ts", "--split", "calib"]) == 2
    assert "not the rows it was fitted on" in capsys.readouterr().err
    assert main(["metrics", path, "--by", "segment", "--after", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    (tmp_path / "nosplit.csv").write_text("label,p_click,segment\n1,0.7,a\n0,0.2,b\n")
    assert main(["metrics", str(tmp_path / "nosplit.csv"), "--by", "segment", "--after", "ts"]) == 2
    assert "--after needs a split column" in capsys.readouterr().err


def test_the_headline_names_the_planted_slice_its_direction_and_what_to_do():
    preds = _planted(2, n=6000)
    sliced = calcore.evaluate_by(preds, "segment", n_resamples=99, seed=1)
    top = sliced.slices[0]
    assert sliced.standouts() and sliced.standouts()[0] is top
    words = sliced.headline()
    # two classes: ranked by the ECE of class 1 (the default for binary models)
    assert words.startswith(f"{top.label} stands out: ECE (class 1) ")
    assert top.direction in words
    assert "noise SDs beyond the model's own calibration curve" in words
    assert "One calibrator for every row will not fix it" in words
    assert sliced.as_dict()["headline"] == words
    assert sliced.as_dict()["standouts"][0] == top.label


def test_the_headline_of_calibrated_slices_says_no_slice_is_off():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.05, 0.95, 4000)
    y = (rng.random(4000) < p).astype(int)
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y).with_metadata(
        {"part": np.repeat(["a", "b", "c", "d"], 1000)}
    )
    sliced = calcore.evaluate_by(preds, "part", n_resamples=99)
    assert not sliced.discoveries() and not sliced.standouts()
    assert sliced.headline().startswith("No slice is miscalibrated beyond noise: 4 tested")


def test_z_beyond_the_model_equals_the_slices_of_its_own_isotonic_curve():
    """beyond_model (the default): each slice's excess and z are those of the same slices
    after an isotonic map fitted on every evaluated row, computed here step by step; p and
    q stay those of "calibrated at all"."""
    preds = _planted(3, n=6000)
    sliced = calcore.evaluate_by(preds, "segment", n_resamples=49, seed=2)
    raw = calcore.evaluate_by(preds, "segment", n_resamples=49, seed=2, beyond_model=False)
    mapped = calcore.make_calibrator("iso").fit(preds).transform(preds)
    after = calcore.evaluate_by(
        mapped, "segment", n_resamples=49, seed=2, metrics=["positive_class_ece"],
        rank_by="positive_class_ece", beyond_model=False,
    )  # fmt: skip
    by_raw = {s.label: s for s in raw.slices}
    by_after = {s.label: s for s in after.slices}
    for s in sliced.slices:
        assert (s.p_value, s.q_value) == (by_raw[s.label].p_value, by_raw[s.label].q_value)
        a = by_after[s.label]
        assert (s.excess, s.z, s.beyond_q) == (a.excess, a.z, a.q_value)
    assert sliced.slices[0].label == "f" and sliced.standouts()[0].label == "f"
    assert any(
        "own calibration curve (iso fitted on 6,000 evaluated rows)" in n for n in sliced.notes
    )
    # ordinary segments share the model's over-confidence only: within noise after its curve
    ordinary = [s for s in sliced.slices if s.label != "f" and s.tested]
    assert all(s.beyond_q > 0.05 for s in ordinary)


def test_a_standout_below_the_overall_error_is_said_to_stand_out_although_lower():
    """Over-confident segments a and c and an under-confident b: b's own ECE is below the
    model's, yet it departs most from the model's curve (the other way). The headline
    must not read as if 0.05 "against" 0.07 were the problem."""
    rng = np.random.default_rng(3)
    segment = np.repeat(["a", "b", "c"], 3000)
    truth = rng.uniform(0.05, 0.95, segment.size)
    y = (rng.random(segment.size) < truth).astype(int)
    logit = np.log(truth / (1 - truth))
    score = 1 / (1 + np.exp(-np.where(segment == "b", 0.7, 2.2) * logit))
    preds = calcore.Predictions.from_probs(np.column_stack([1 - score, score]), y)
    sliced = calcore.evaluate_by(preds.with_metadata({"segment": segment}), "segment",
                                 n_resamples=99, seed=1)  # fmt: skip
    top = sliced.standouts()[0]
    value, overall = (r.metrics[sliced.rank_metric] for r in (top.report, sliced.overall))
    assert top.label == "b" and value < overall
    words = sliced.headline()
    assert words.startswith(
        f"b stands out although its ECE (class 1), {value:.3f}, is below the {overall:.3f} overall"
    )
    assert "noise SDs beyond the model's own calibration curve" in words
