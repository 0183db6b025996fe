"""``calcore.evaluate`` (calcore.evaluation.evaluator): values equal the stand-alone registry
functions, the JSON form, the notes, and the bootstrap intervals (one per seed). The intervals
reproduced by hand from the same resamples, ``evaluate``'s among them, are in
tests/evaluation/test_bootstrap.py."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from _keys import (  # tests/ is on sys.path (rootdir conftest, no __init__.py)
    REQUIRED_KEYS,
    interval_keys,
)

import calcore


@functools.lru_cache(maxsize=None)
def _continuous():
    """Continuous probabilities (no ties), 5 classes."""
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.full(5, 0.6), size=400)
    return calcore.Predictions.from_probs(p, rng.integers(0, 5, size=400))


@functools.lru_cache(maxsize=None)
def _tenths():
    """Multiples of 0.1: tied rows, tied scores, exact zeros and ones; class 3 never a label."""
    rng = np.random.default_rng(12)
    p = rng.multinomial(10, rng.dirichlet(np.ones(4)), size=300) / 10.0
    return calcore.Predictions.from_probs(p, rng.integers(0, 3, size=300))


BINNINGS = [
    ("equal-width", 15),
    ("equal-width", 7),
    ("equal-width", "sturges"),
    ("equal-mass", 10),
    ("equal-mass", "cube-root"),
    ("points-per-bin", 20),
]


EQUIVALENCE_PARAMS = [
    (data, b, k) for data in ("continuous", "tenths") for b, k in BINNINGS + [("unique", None)]
]


@pytest.mark.parametrize(("data", "binning", "bins"), EQUIVALENCE_PARAMS)
def test_evaluate_equals_standalone_metrics(data, binning, bins):
    preds = _continuous() if data == "continuous" else _tenths()
    report = calcore.evaluate(preds, bins=bins, binning=binning)
    assert list(report.metrics) == list(calcore.METRICS)
    for key in calcore.METRICS:
        if calcore.METRICS[key].binary_only:  # these data have 5 classes: not computed
            assert report.metrics[key] is None, key
            continue
        want = calcore.compute_metric(key, preds, bins=bins, binning=binning)
        got = report.metrics[key]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15), key
        assert getattr(report, key) == got
    assert (report.n, report.n_classes, report.bins, report.binning) == (
        preds.n_samples,
        preds.n_classes,
        bins,
        binning,
    )


def test_evaluate_ace_tace_bin_counts():
    # ACE/TACE use equal-mass bins: as many as `bins` counts for equal-width/equal-mass (an
    # integer or a rule), else 15 (points-per-bin: `bins` is points per bin; unique: unused).
    preds = _continuous()
    r7 = calcore.evaluate(preds, bins=7, binning="equal-width")
    rs = calcore.evaluate(preds, bins="sturges", binning="equal-width")
    rk = calcore.evaluate(preds, bins=7, binning="points-per-bin")
    assert r7.ace == calcore.adaptive_ece(preds, bins=7)
    assert r7.tace == calcore.thresholded_adaptive_ece(preds, bins=7, threshold=1e-3)
    assert rs.ace == calcore.adaptive_ece(preds, bins="sturges")
    assert rk.ace == calcore.adaptive_ece(preds, bins=15)
    assert r7.ace != rs.ace


def test_as_dict_keys_and_json():
    report = calcore.evaluate(_continuous(), bins=10)
    d = report.as_dict()
    assert REQUIRED_KEYS <= set(d)
    assert set(calcore.METRICS) <= set(d)
    text = json.dumps(d, allow_nan=False)  # strict JSON: no NaN / Infinity
    back = json.loads(text)
    assert back["n"] == 400 and back["n_classes"] == 5 and back["bins"] == 10
    assert back["binning"] == "equal-width"
    for key, value in report.metrics.items():
        if value is None:  # the binary measures of these 5-class predictions
            assert back[key] is None and calcore.METRICS[key].binary_only, key
            continue
        assert back[key] == pytest.approx(value, rel=1e-15, abs=0)
    assert back["notes"] == list(report.notes) and len(report.notes) == 1  # binary measures


def test_as_dict_json_with_intervals():
    report = calcore.evaluate(_continuous(), bins=10, n_resamples=5, seed=1)
    back = json.loads(json.dumps(report.as_dict(), allow_nan=False))
    assert set(back["intervals"]) == interval_keys(report)
    for key, iv in back["intervals"].items():
        assert iv["low"] <= iv["high"], key
        assert iv["confidence_level"] == 0.95


def test_as_dict_json_with_numpy_integer_settings():
    # Regression: evaluate accepts numpy integers for bins and seed (resolve_binning takes
    # np.integer); as_dict used to pass them through and json.dumps raised TypeError.
    report = calcore.evaluate(_continuous(), bins=np.int64(10), seed=np.int64(3))
    back = json.loads(json.dumps(report.as_dict(), allow_nan=False))
    assert back["bins"] == 10 and back["seed"] == 3
    assert back["conf_ece"] == pytest.approx(calcore.confidence_ece(_continuous(), bins=10))


def test_as_dict_strict_json_for_a_single_row_with_bootstrap():
    # Regression: with one row there is nothing to resample, the intervals are NaN, and as_dict
    # used to keep float('nan') (invalid JSON). Missing values are None, like skipped metrics.
    one = calcore.Predictions.from_probs([[0.7, 0.3]], [1])
    report = calcore.evaluate(one, n_resamples=10)
    d = report.as_dict()
    assert report.kde_ece is None and d["kde_ece"] is None and d["kde_ece_classwise"] is None
    back = json.loads(json.dumps(d, allow_nan=False))
    assert back["intervals"]["accuracy"] == {
        "low": None,
        "high": None,
        "confidence_level": 0.95,
        "method": "percentile",
    }
    assert back["conf_ece"] == pytest.approx(0.7, abs=1e-15)  # h = 0.7, wrong: gap 0.7


def test_notes_for_tied_rows_and_absent_classes():
    # Rows 0 and 1 tie at the top (0.4, 0.4, 0.2) and (0.5, 0.5, 0); class 'bird' is never a label.
    probs = [[0.4, 0.4, 0.2], [0.5, 0.5, 0.0], [0.7, 0.2, 0.1], [0.1, 0.8, 0.1]]
    preds = calcore.Predictions.from_probs(probs, [1, 0, 0, 1], class_names=["cat", "dog", "bird"])
    report = calcore.evaluate(preds, bins=5)
    assert report.n_tied_rows == 2 and report.as_dict()["n_tied_rows"] == 2
    notes = report.notes
    assert any(
        n.startswith("2 row(s) have a tied top probability") and "lowest class index" in n
        for n in notes
    ), notes
    assert any(n == "1 class(es) never occur as a label: 'bird'." for n in notes), notes
    assert report.as_dict()["notes"] == list(notes)
    # tied rows predict the lowest index: row 0 -> cat (label dog, wrong), row 1 -> cat (right)
    assert report.accuracy == pytest.approx(3 / 4, abs=1e-15)


def test_no_notes_when_nothing_to_say():
    # binary, and the scores do not separate the outcomes (else the calibration slope is NaN
    # with a note saying why)
    preds = calcore.Predictions.from_probs([[0.7, 0.3], [0.2, 0.8], [0.4, 0.6]], [1, 1, 0])
    assert calcore.evaluate(preds).notes == ()


def test_one_note_for_the_binary_measures_of_a_multiclass_model():
    notes = calcore.evaluate(_continuous(), bins=10).notes
    assert len(notes) == 1 and "apply to binary models" in notes[0], notes
    assert "one-vs-rest is not offered" in notes[0]
    # asked for none of them: no note
    assert calcore.evaluate(_continuous(), metrics=["accuracy"]).notes == ()


def test_kde_classwise_skipped_above_the_class_limit():
    rng = np.random.default_rng(5)
    preds = calcore.Predictions.from_probs(
        rng.dirichlet(np.ones(4), size=60), rng.integers(0, 4, size=60)
    )
    skipped = calcore.evaluate(preds, kde_classwise_max_classes=3)
    assert skipped.kde_ece_classwise is None
    assert skipped.as_dict()["kde_ece_classwise"] is None
    assert any("kde_ece_classwise was not computed: 4 classes > 3" in n for n in skipped.notes), (
        skipped.notes
    )
    assert skipped.kde_ece is not None  # only the class-wise KDE is left out
    at_limit = calcore.evaluate(preds, kde_classwise_max_classes=4)
    assert at_limit.kde_ece_classwise == pytest.approx(calcore.kde_ece_classwise(preds), rel=1e-12)
    assert not any("kde_ece_classwise" in n for n in at_limit.notes)
    # the default limit is 100 classes
    wide = calcore.Predictions.from_probs(np.full((3, 101), 1 / 101), [0, 1, 2])
    assert calcore.evaluate(wide).kde_ece_classwise is None
    assert any("101 classes > 100" in n for n in calcore.evaluate(wide).notes)


# -- bootstrap --------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _boot_preds():
    rng = np.random.default_rng(21)
    p = rng.dirichlet(np.full(3, 0.8), size=150)
    return calcore.Predictions.from_probs(p, rng.integers(0, 3, size=150))


def test_evaluate_intervals_deterministic_per_seed():
    preds = _boot_preds()
    a = calcore.evaluate(preds, bins=10, n_resamples=20, seed=4)
    b = calcore.evaluate(preds, bins=10, n_resamples=20, seed=4)
    c = calcore.evaluate(preds, bins=10, n_resamples=20, seed=5)
    assert set(a.intervals) == interval_keys(a)
    assert a.intervals == b.intervals
    differs = [
        k
        for k in a.intervals
        if (a.intervals[k].low, a.intervals[k].high) != (c.intervals[k].low, c.intervals[k].high)
    ]
    assert len(differs) >= len(a.intervals) - 1, differs
    for key, iv in a.intervals.items():
        assert iv.estimate == a.metrics[key]
        assert iv.n_resamples == 20 and iv.confidence_level == 0.95


def test_a_subset_of_metrics_equals_the_full_report():
    rng = np.random.default_rng(5)
    preds = calcore.Predictions.from_logits(rng.normal(size=(400, 6)) * 2, rng.integers(0, 6, 400))
    full = calcore.evaluate(preds, bins=8, n_resamples=30, seed=3)
    bin_free = list(calcore.BIN_FREE_METRICS)
    binned = [k for k in calcore.METRICS if k not in bin_free]
    # bin-free indeed: other bins and binnings leave these values (and intervals) unchanged
    for bins, binning in ((3, "equal-width"), (20, "equal-mass"), (40, "points-per-bin")):
        other = calcore.evaluate(preds, bins=bins, binning=binning, n_resamples=30, seed=3)
        for k in bin_free:
            assert other.metrics[k] == full.metrics[k]
            assert other.intervals.get(k) == full.intervals.get(k)
    for subset in (bin_free, binned, ["kde_ece_classwise"], "nll"):
        part = calcore.evaluate(preds, bins=8, n_resamples=30, seed=3, metrics=subset)
        keys = [subset] if isinstance(subset, str) else subset
        assert list(part.metrics) == list(calcore.METRICS)  # every key, None when not asked
        for k in calcore.METRICS:
            if k in keys:
                assert part.metrics[k] == full.metrics[k]
                assert part.intervals.get(k) == full.intervals.get(k)  # the same resamples
            else:
                assert part.metrics[k] is None and k not in part.intervals
    with pytest.raises(calcore.CalcoreError, match=r"metrics must name .*\['ece'\] unknown"):
        calcore.evaluate(preds, metrics=["nll", "ece"])
    with pytest.raises(calcore.CalcoreError, match="metrics must name at least one"):
        calcore.evaluate(preds, metrics=[])
