"""The calibrator protocol: parameter validation, fit/transform checks and JSON persistence,
exercised through a tiny calibrator defined here (never registered globally)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import calcore
from calcore.calibrators import Calibrator, Param, make_calibrator
from calcore.calibrators._registry import _METHODS, _rebuild
from calcore.calibrators._state import Array, Number


class Shrink(Calibrator):
    """Mixes the probabilities with the uniform distribution by a fitted weight (test double)."""

    name = "test-shrink"
    family = "test"
    accuracy_preserving = True
    parameters = (
        Param("weight", 0.5, "float", "mixing weight", minimum=0.0, maximum=1.0),
        Param("mode", "fixed", "str", "how", choices=("fixed", "fitted")),
        Param("rounds", 1, "int", "rounds", minimum=1),
        Param("flag", False, "bool", "a flag"),
        Param("limit", None, "float", "optional", optional=True),
    )
    state_fields = {
        "weight": Number(minimum=0.0, maximum=1.0),
        "vector": Array((2,), minimum=0.0, maximum=1.0, sums_to_one=True),
    }

    def _fit(self, preds):
        w = self.params["weight"] if self.params["mode"] == "fixed" else float(preds.correct.mean())
        return {"weight": w, "vector": np.array([w, 1 - w])}, {"weight": w}

    def _transform(self, preds, state):
        w = state["weight"]
        return (1 - w) * preds.probs + w / preds.n_classes, None


@pytest.fixture()
def registered():
    _METHODS[Shrink.name] = Shrink
    _rebuild()
    yield
    del _METHODS[Shrink.name]
    _rebuild()


def _preds(seed=0, names=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    return calcore.Predictions.from_probs(
        rng.dirichlet([1, 1, 1], 40), rng.integers(0, 3, 40), names
    )


def test_defaults_and_conversion():
    c = Shrink(rounds=np.int64(3), weight=1)
    assert c.params == {"weight": 1.0, "mode": "fixed", "rounds": 3, "flag": False, "limit": None}
    assert type(c.params["rounds"]) is int and type(c.params["weight"]) is float


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nope": 1}, r"unknown parameter\(s\) \['nope'\]"),
        ({"weight": 1.5}, r"'weight' must be <= 1.0; got 1.5"),
        ({"weight": -0.1}, r"'weight' must be >= 0.0"),
        ({"weight": "x"}, r"'weight' must be a number; got 'x'"),
        ({"weight": float("nan")}, r"'weight' must be finite"),
        ({"weight": True}, r"'weight' must be a number"),
        ({"rounds": 1.5}, r"'rounds' must be an integer; got 1.5"),
        ({"rounds": 0}, r"'rounds' must be >= 1"),
        ({"mode": "other"}, r"'mode' must be one of \['fixed', 'fitted'\]; got 'other'"),
        ({"flag": 1}, r"'flag' must be true or false"),
    ],
)
def test_parameter_errors(params, message):
    with pytest.raises(calcore.CalcoreError, match=message):
        Shrink(**params)


def test_transform_mixes_as_defined_and_keeps_labels():
    preds = _preds()
    out = Shrink(weight=0.25).fit(preds).transform(preds)
    np.testing.assert_allclose(out.probs, 0.75 * preds.probs + 0.25 / 3, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(out.labels, preds.labels)
    assert out.class_names == preds.class_names and out.normalized


def test_use_before_fit_and_on_other_classes():
    with pytest.raises(calcore.CalcoreError, match="not fitted yet: call fit"):
        Shrink().transform(_preds())
    with pytest.raises(calcore.CalcoreError, match="only fitted calibrators can be saved"):
        Shrink().to_dict()
    c = Shrink().fit(_preds())
    with pytest.raises(calcore.CalcoreError, match=r"fitted on classes \['a', 'b', 'c'\]"):
        c.transform(_preds(names=("a", "c", "b")))
    with pytest.raises(calcore.CalcoreError, match="expects calcore.Predictions"):
        c.fit(np.zeros((3, 3)))


def test_json_round_trip_is_bit_identical(registered):
    preds = _preds(1)
    c = Shrink(mode="fitted").fit(preds)
    text = json.dumps(c.to_dict())
    again = Calibrator.from_dict(json.loads(text))
    assert isinstance(again, Shrink) and again.params == c.params and again.fit_info == c.fit_info
    assert again.transform(preds).probs.tobytes() == c.transform(preds).probs.tobytes()
    assert make_calibrator("test-shrink", weight=0.1).params["weight"] == 0.1
    assert "test-shrink" in calcore.calibrators.CALIBRATORS


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="other"), "^saved calibrator: Not a saved calcore calibrator"),
        (lambda d: d.update(version=99), "version is 99; this calcore reads"),
        (lambda d: d.pop("state"), r"^saved calibrator: state is missing"),
        (lambda d: d.update(method="no-such"), "method is not a calibrator: Unknown calibrator"),
        (
            lambda d: d["params"].update(weight=7),
            r"params.weight is refused: .*'weight' must be <=",
        ),
        (lambda d: d["state"].update(weight=-1), r"state.weight must be a finite number >= 0"),
        (
            lambda d: d["state"].update(vector=[[0.5, 0.5]]),
            r"state.vector must have 2 entries; got 1",
        ),
        (
            lambda d: d["state"].update(vector=[0.5, "0.5"]),
            r"state.vector\[1\] must be a number",
        ),
    ],
)
def test_from_dict_errors(registered, mutate, message):
    data = Shrink().fit(_preds()).to_dict()
    mutate(data)
    with pytest.raises(calcore.CalcoreError, match=message):
        Calibrator.from_dict(data)


def test_unknown_name():
    with pytest.raises(calcore.CalcoreError, match="Unknown calibrator 'magic'"):
        make_calibrator("magic")


def test_top_level_api_exposes_calibrators_and_evaluation():
    # The spelling: calcore.make_calibrator, calcore.CALIBRATORS, calcore.compare.
    import calcore

    for name in ("make_calibrator", "CALIBRATORS", "compare", "learning_curve"):
        assert name in calcore.__all__
    assert calcore.make_calibrator("ts").name == "ts"
    assert "tl-hb" in calcore.CALIBRATORS


def test_methods_that_take_seconds_say_so():
    # the dashboard warns before fitting these (issue 4: "slow methods say so")
    import calcore

    slow = {name for name, info in calcore.CALIBRATORS.items() if info.slow}
    assert {"dirichlet", "ms", "na-fir", "scir"} <= slow
    assert not {"ts", "tl-hb", "cw-hb", "irm"} & slow
