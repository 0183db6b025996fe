"""Compositions: compose and irova-ts (ts, then IROvA = n-iso, whose old name irova loads)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _synthetic import calib_test_pair  # tests/ is on sys.path

from calcore import CalcoreError, Predictions, classwise_ece, top_label_ece
from calcore.calibrators import CALIBRATORS, Calibrator, make_calibrator
from calcore.calibrators.composite import Composition, compose


@pytest.fixture(scope="module")
def miscal():
    return calib_test_pair(0, 2.0)


@pytest.fixture(scope="module")
def calibrated():
    return calib_test_pair(1, 1.0)


def _by_hand(first, second, calib, test):
    first.fit(calib)
    second.fit(first.transform(calib))
    return second.transform(first.transform(test))


def _round_trip(cal):
    return Calibrator.from_dict(json.loads(json.dumps(cal.to_dict())))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("ts", "irm"),
        (("ts", {"max_temperature": 50.0}), ("n-hb", {"bins": 10})),
        ("ms", "ts"),  # the second scaling step sees the first one's logits
    ],
)
def test_compose_equals_the_two_fitted_by_hand(first, second, miscal):
    calib, test = miscal
    out = compose(first, second).fit(calib).transform(test)

    def build(part):
        return (
            make_calibrator(part)
            if isinstance(part, str)
            else make_calibrator(*part[:1], **part[1])
        )

    expected = _by_hand(build(first), build(second), calib, test)
    np.testing.assert_array_equal(out.probs, expected.probs)
    if expected.logits is None:
        assert out.logits is None
    else:
        np.testing.assert_array_equal(out.logits, expected.logits)


def test_compose_accepts_instances_and_pairs_and_normalises_the_json():
    cal = compose(make_calibrator("n-hb", bins=7), ("tl-hb", {"points_per_bin": 50}))
    assert cal.params["first"] == "n-hb"
    assert json.loads(cal.params["first_params"])["bins"] == 7
    assert cal.params["first_params"] == json.dumps(
        make_calibrator("n-hb", bins=7).params, sort_keys=True
    )  # an instance brings all its parameters, a pair only the given ones
    assert cal.params["second_params"] == '{"points_per_bin": 50}'
    same = Composition(
        first="ts", second="irm", first_params='{ "max_temperature" : 50 ,"min_temperature":0.1}'
    )
    assert same.params["first_params"] == '{"max_temperature": 50, "min_temperature": 0.1}'


def test_irova_is_n_iso(miscal):
    calib, test = miscal
    irova = make_calibrator("irova").fit(calib)
    n_iso = make_calibrator("n-iso").fit(calib)
    np.testing.assert_array_equal(irova.transform(test).probs, n_iso.transform(test).probs)
    assert irova.to_dict() == n_iso.to_dict()  # the same method, under one name
    assert "irova" not in CALIBRATORS and CALIBRATORS["n-iso"].aliases == ("irova",)
    assert not CALIBRATORS["n-iso"].accuracy_preserving and CALIBRATORS["n-iso"].normalized


def test_irova_ts_is_ts_then_n_iso(miscal):
    calib, test = miscal
    cal = make_calibrator("irova-ts", max_temperature=20.0).fit(calib)
    expected = _by_hand(
        make_calibrator("ts", max_temperature=20.0), make_calibrator("n-iso"), calib, test
    )
    np.testing.assert_array_equal(cal.transform(test).probs, expected.probs)
    assert cal.fit_info["first"]["temperature"] == pytest.approx(2.0, rel=0.1)
    assert not cal.accuracy_preserving


@pytest.mark.parametrize(
    "cal",
    [
        lambda: compose("ts", "irm"),
        lambda: compose(("ts", {"max_temperature": 50.0}), ("cw-hb", {"bins": 10})),
        lambda: compose(compose("ts", "irm"), "irova"),  # nested
        lambda: make_calibrator("irova"),
        lambda: make_calibrator("irova-ts"),
    ],
)
def test_json_round_trip_is_bit_identical(cal, miscal):
    calib, test = miscal
    fitted = cal().fit(calib)
    loaded = _round_trip(fitted)
    a, b = fitted.transform(test), loaded.transform(test)
    np.testing.assert_array_equal(a.probs, b.probs)
    assert a.normalized == b.normalized
    assert loaded.to_dict() == fitted.to_dict()


def test_flags_follow_the_parts(miscal):
    calib, test = miscal
    keeps = compose("ts", "irm")
    assert keeps.accuracy_preserving and not keeps.injective and keeps.normalized
    out = keeps.fit(calib).transform(test)
    np.testing.assert_array_equal(out.predicted, test.predicted)
    np.testing.assert_allclose(out.probs.sum(axis=1), 1.0, atol=1e-12)
    assert compose("ts", "ts").injective
    assert not compose("ts", "irova").accuracy_preserving
    unnormalised = compose("ts", ("cw-hb", {"bins": 10}))
    assert not unnormalised.normalized and not unnormalised.fit(calib).transform(test).normalized
    # The registry entry promises nothing beyond what every composition has.
    assert not CALIBRATORS["compose"].accuracy_preserving
    assert [p.name for p in CALIBRATORS["compose"].parameters] == [
        "first",
        "second",
        "first_params",
        "second_params",
    ]


def test_binary_parts_work_on_binary_data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=3000)
    y = (rng.random(3000) < 1 / (1 + np.exp(-0.5 * x))).astype(int)
    s = 1 / (1 + np.exp(-2 * x))
    preds = Predictions.from_probs(np.column_stack([1 - s, s]), y)
    out = compose("platt", "iso").fit(preds).transform(preds)
    expected = _by_hand(make_calibrator("platt"), make_calibrator("iso"), preds, preds)
    np.testing.assert_array_equal(out.probs, expected.probs)


def test_improves_miscalibrated_and_does_no_harm_on_calibrated(miscal, calibrated):
    calib, test = miscal
    ts_irm = compose("ts", "irm").fit(calib).transform(test)
    assert top_label_ece(ts_irm) < 0.25 * top_label_ece(test)
    irova_ts = make_calibrator("irova-ts").fit(calib).transform(test)
    assert classwise_ece(irova_ts) < 0.25 * classwise_ece(test)
    calib, test = calibrated
    ts_irm = compose("ts", "irm").fit(calib).transform(test)
    assert top_label_ece(ts_irm) < top_label_ece(test) + 0.01
    irova_ts = make_calibrator("irova-ts").fit(calib).transform(test)
    assert classwise_ece(irova_ts) < classwise_ece(test) + 0.005


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"first": "nope"}, r"parameter 'first' must be a calibrator name; got 'nope'"),
        ({"second": "tl-nope"}, r"parameter 'second' must be a calibrator name"),
        (
            {"first_params": "{bins: 3}"},
            r"'first_params' must be a JSON object .*got '\{bins: 3\}'",
        ),
        ({"second_params": "[1, 2]"}, r"'second_params' must be a JSON object"),
        ({"second": "n-hb", "second_params": '{"bins": 0}'}, r"parameter 'bins' must be >= 1"),
        ({"first_params": '{"temperature": 2}'}, r"ts: unknown parameter\(s\) \['temperature'\]"),
        ({"first": 3}, r"parameter 'first' must be one of"),
    ],
)
def test_construction_errors(params, message):
    with pytest.raises(CalcoreError, match=message):
        make_calibrator("compose", **params)


def test_fit_and_use_errors(miscal):
    calib, _ = miscal
    with pytest.raises(
        CalcoreError, match=r"the first calibrator 'iso' is binary and the data has 5"
    ):
        compose("iso", "irm").fit(calib)
    with pytest.raises(
        CalcoreError, match=r"the second calibrator 'platt' is binary .* 'tl-platt'"
    ):
        compose("ts", "platt").fit(calib)
    with pytest.raises(CalcoreError, match=r"compose is not fitted yet"):
        compose("ts", "irm").transform(calib)
    with pytest.raises(CalcoreError, match=r"second must be a calibrator name, a \(name, params\)"):
        compose("ts", 42)
    with pytest.raises(CalcoreError, match=r"parameters must be numbers, strings"):
        compose(("ts", {"max_temperature": np.arange(2)}), "irm")
    with pytest.raises(CalcoreError, match=r"irova-ts: unknown parameter"):
        make_calibrator("irova-ts", bins=3)
