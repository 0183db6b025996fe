"""The calibrator verdict: paired differences against a brute-force recomputation, the
decision rules (ties, no calibrator needed, simplest of the tied), warnings, refusals and
``calcore compare`` on the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import ndtri

import calcore
from calcore.cli import main
from calcore.evaluation import UNCALIBRATED, compare
from calcore.evaluation.verdict import primary_metrics
from calcore.metrics.registry import default_primary
from calcore.statistics.replicates import double_resample_counts
from tests._synthetic import calib_test_pair

GUARDS = ["top_label_ece", "brier", "nll", "accuracy"]


@pytest.fixture(scope="module")
def overconfident():
    return calib_test_pair(3, 2.0, n_calib=1500, n_test=1500, n_classes=4)


@pytest.fixture(scope="module")
def calibrated():
    return calib_test_pair(4, 1.0, n_calib=1500, n_test=1500, n_classes=4)


def _repeated(preds, counts):
    """The rows of ``preds`` each repeated ``counts`` times (a resample, materialised)."""
    rows = np.repeat(np.arange(preds.n_samples), counts.astype(np.int64))
    return preds.subset(rows)


def test_paired_difference_equals_a_brute_force_bootstrap(overconfident):
    """The verdict's paired interval, recomputed from resamples materialised row by row and
    the stand-alone metric function, with the iterated interval's formula written out."""
    calib, test = overconfident
    seed, r = 5, 40
    c = compare(calib, test, ["ts", "tl-hb"], n_resamples=r, seed=seed, metrics=GUARDS)
    v = c.verdict()
    out = {m: c.calibrated[m] for m in ("ts", "tl-hb")} | {UNCALIBRATED: test}
    # the draws of scipy.stats.bootstrap (and calcore.evaluate): row indices per resample
    idx = np.random.default_rng(seed).integers(0, test.n_samples, (r, test.n_samples))
    counts = np.stack([np.bincount(i, minlength=test.n_samples) for i in idx]).astype(float)
    twice = double_resample_counts(counts, seed)

    def tl(preds, cnt):
        return np.array([calcore.top_label_ece(_repeated(preds, k)) for k in cnt])

    for method in (UNCALIBRATED, "ts"):
        d = v.paired[method]
        ref = v.best
        assert d.reference == ref
        est = calcore.top_label_ece(out[method]) - calcore.top_label_ece(out[ref])
        assert d.estimate == pytest.approx(est, abs=1e-12)
        if method == ref:
            continue
        reps = tl(out[method], counts) - tl(out[ref], counts)
        reps2 = tl(out[method], twice) - tl(out[ref], twice)
        level = 1 - 0.05 / 2  # Bonferroni over the two methods
        half = ndtri(1 - (1 - level) / 2) * reps.std(ddof=1)
        once = 2 * est - reps.mean()
        second = 3 * est - 3 * reps.mean() + reps2.mean()
        assert d.confidence_level == pytest.approx(level)
        assert d.low == pytest.approx(min(once, second) - half, abs=1e-10)
        assert d.high == pytest.approx(max(once, second) + half, abs=1e-10)


def test_overconfident_model_gets_a_calibrator_that_keeps_accuracy(overconfident):
    calib, test = overconfident
    v = compare(calib, test, ["ts", "n-iso"], n_resamples=100, metrics=GUARDS).verdict()
    assert v.improves and v.recommended == "ts"
    assert v.improvement.high < 0  # TL-ECE lower than uncalibrated, beyond noise
    assert UNCALIBRATED not in v.tied_with_best
    assert v.sentence().startswith("Ship ts: TL-ECE ")
    assert "below uncalibrated" in v.sentence()
    # n-iso changes the argmax: said as a warning, with the size of the change
    assert any("changes accuracy" in w for w in v.warnings["n-iso"])


def test_calibrated_model_needs_no_calibrator(calibrated):
    calib, test = calibrated
    v = compare(calib, test, ["ts", "n-iso", "irm"], n_resamples=100, metrics=GUARDS).verdict()
    assert v.recommended == UNCALIBRATED and not v.improves
    assert UNCALIBRATED in v.tied_with_best
    assert v.improvement is None
    assert v.sentence().startswith("No calibrator needed")


def test_one_method_is_compared_with_uncalibrated(overconfident):
    calib, test = overconfident
    v = compare(calib, test, ["ts"], n_resamples=60, metrics=GUARDS).verdict()
    assert set(v.paired) == {UNCALIBRATED, "ts"}
    assert v.paired["ts"].confidence_level == pytest.approx(0.95)  # K = 1: no adjustment


def test_identical_methods_are_tied_and_the_first_is_recommended(overconfident):
    calib, test = overconfident
    twin = ("ts", {"max_temperature": 50.0})  # same optimum inside both bounds: same outputs
    v = compare(calib, test, [twin, "ts"], n_resamples=60, metrics=GUARDS).verdict()
    assert v.estimates["ts"] == v.estimates["ts(max_temperature=50.0)"]
    assert {"ts", "ts(max_temperature=50.0)"} <= set(v.tied_with_best)
    assert v.recommended == "ts(max_temperature=50.0)"  # equal on every rule: the first given


def test_among_tied_methods_the_simplest_family_is_recommended():
    """CIFAR-10-like: TL-HB has the lowest TL-ECE, TS is tied with it on paired intervals;
    the verdict ships the one-parameter map and says why."""
    calib, test = calib_test_pair(11, 1.6, n_calib=3000, n_test=3000, n_classes=3)
    v = compare(calib, test, ["tl-hb", "ts"], n_resamples=100, metrics=GUARDS).verdict()
    if v.best == "tl-hb" and "ts" in v.tied_with_best:
        assert v.recommended == "ts"
        assert "simplest of the tied (parametric)" in v.reason
    else:  # the data must exercise the rule: fail loudly if the fixture drifts
        pytest.fail(f"fixture no longer ties ts with the best: {v.as_dict()['paired']}")


def test_a_fit_that_hits_its_bound_is_a_warning_on_the_verdict():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(600, 3))
    labels = rng.integers(0, 3, 600)  # labels carry no signal: T runs to its upper bound
    calib = calcore.Predictions.from_logits(z[:300], labels[:300])
    test = calcore.Predictions.from_logits(z[300:], labels[300:])
    c = compare(calib, test, [("ts", {"max_temperature": 5.0})], n_resamples=30, metrics=GUARDS)
    warned = c.verdict().warnings["ts(max_temperature=5.0)"]
    assert any("upper bound" in w or "hit its bound" in w for w in warned), warned


def test_a_binning_method_with_few_rows_a_bin_is_warned(overconfident):
    calib, test = overconfident
    small = calib.subset(np.arange(300))
    v = compare(small, test, [("hb", {"bins": 15})] if calib.n_classes == 2 else ["tl-hb"],
                n_resamples=30, metrics=GUARDS).verdict()  # fmt: skip
    (name,) = [m for m in v.paired if m != UNCALIBRATED]
    # 300 rows / 15 bins / 4 predicted classes = 5 a bin
    assert any("a bin, fewer than 50" in w for w in v.warnings[name]), v.warnings


def test_without_resamples_the_verdict_says_it_cannot_tell(overconfident):
    calib, test = overconfident
    v = compare(calib, test, ["ts"], metrics=GUARDS).verdict()
    assert v.n_resamples == 0 and v.tied_with_best == (v.best,)
    assert "without resamples no difference can be told from noise" in v.sentence()


def test_without_resamples_an_uncalibrated_best_is_recommended_as_is(calibrated):
    calib, test = calibrated
    # "irm" on calibrated data: its TL-ECE estimate is above the uncalibrated one here
    v = compare(calib, test, ["irm"], metrics=GUARDS).verdict()
    assert v.best == UNCALIBRATED and v.recommended == UNCALIBRATED and not v.improves
    assert "without resamples" in v.sentence()


def test_a_primary_metric_that_does_not_apply_is_refused_with_the_list(overconfident):
    calib, test = overconfident
    c = compare(calib, test, ["ts"], metrics=GUARDS)
    with pytest.raises(calcore.CalcoreError, match="choose one of") as info:
        c.verdict(primary="accuracy")
    assert "top_label_ece" in str(info.value)
    with pytest.raises(calcore.CalcoreError, match="did not compute"):
        c.verdict(primary="classwise_ece")


def test_default_primary_and_the_metrics_that_apply():
    assert default_primary(10) == "top_label_ece"
    keys = primary_metrics(10)
    assert "top_label_ece" in keys and "accuracy" not in keys and "nll" not in keys


def test_as_dict_is_strict_json(overconfident):
    calib, test = overconfident
    v = compare(calib, test, ["ts", "tl-hb"], n_resamples=30, metrics=GUARDS).verdict()
    body = json.loads(json.dumps(v.as_dict(), allow_nan=False))
    assert body["recommended"] == v.recommended
    assert set(body["paired"]) == {UNCALIBRATED, "ts", "tl-hb"}
    assert {"difference", "low", "high"} <= set(body["paired"]["ts"])


@pytest.fixture(scope="module")
def split_csv(tmp_path_factory, overconfident):
    calib, test = overconfident
    path = tmp_path_factory.mktemp("cmp") / "preds.csv"
    rows = ["label,p_a,p_b,p_c,p_d,split"]
    for part, name in ((calib, "calib"), (test, "test")):
        for p, y in zip(part.probs, part.labels, strict=True):
            rows.append(f"{y}," + ",".join(repr(float(v)) for v in p) + f",{name}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_cli_compare_json_has_the_verdict(split_csv, capsys):
    code = main(
        ["compare", str(split_csv), "--method", "ts", "--method", "tl-hb:bins=5",
         "--bootstrap", "60", "--json"]
    )  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["recommended"] == "ts"
    assert out["primary"] == "top_label_ece"
    assert set(out["tied_with_best"]) <= {UNCALIBRATED, "ts", "tl-hb(bins=5)"}
    assert set(out["paired"]) == {UNCALIBRATED, "ts", "tl-hb(bins=5)"}
    assert out["paired"]["ts"]["low"] is not None
    assert out["n_calib"] == 1500 and out["n_test"] == 1500
    assert out["methods"]["tl-hb(bins=5)"]["params"]["bins"] == 5
    assert "warnings" in out


def test_cli_compare_table_opens_with_the_sentence(split_csv, capsys):
    assert main(["compare", str(split_csv), "--method", "ts", "--bootstrap", "40"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("Ship ts:")


def test_cli_compare_refuses_a_primary_that_does_not_apply(split_csv, capsys):
    code = main(["compare", str(split_csv), "--method", "ts", "--primary", "brier"])
    assert code == 2
    err = capsys.readouterr().err
    assert "does not apply" in err and "top_label_ece" in err


def test_the_type_one_study_runs_and_holds_its_level_on_a_small_grid():
    """benchmarks/study_verdict.py at a small size: on calibrated generators the verdict
    rarely claims an improvement; on over-confident ones it finds it."""
    import argparse
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import study_verdict

    args = argparse.Namespace(reps=8, resamples=100, methods=["ts", "tl-hb"])
    calm = study_verdict.run_cell("calibrated", 1.0, 3, 600, args)
    sharp = study_verdict.run_cell("overconfident", 1.5, 3, 600, args)
    assert calm["claims"] <= 2 / 8 and sharp["claims"] >= 6 / 8
    assert sum(calm["recommended"].values()) == 8
