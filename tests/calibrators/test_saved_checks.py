"""A saved calibrator is checked against its method's declared state before any use (issue 33).

Every registered method declares its state. For each one, fitted on small data: the saved
document round-trips, and every declared field, corrupted in each way that applies (wrong
type, missing, NaN, out of range, wrong shape, out of order), is refused with a
``CalcoreError`` that names the field's JSON path. The corruptions are derived from the
declaration, and the expectation (refused, naming that path) is independent of the
checking code. Then the cases a red team found (T = -1, reversed or NaN edges, a bin value
of 7.5, state for 1 of 3 classes, 2-D weights, 100k-deep nesting, a 400-digit integer, a
huge file) through ``calcore apply``: exit 2 and one line naming the field, never a
traceback and never different probabilities.
"""

from __future__ import annotations

import copy
import json
import math
import warnings

import numpy as np
import pytest
from _synthetic import softmax_synthetic

import calcore
from calcore import CALIBRATORS, CalcoreError, CalcoreWarning, Predictions
from calcore.calibrators import Calibrator, make_calibrator
from calcore.calibrators import _saved as saved_module
from calcore.calibrators._saved import load_nested
from calcore.calibrators._state import Array, Fields, Flag, Items, Number, Saved, Text
from calcore.cli import main
from calcore.io.export import write_json, write_predictions_csv


def _data(binary: bool) -> Predictions:
    rng = np.random.default_rng(5)
    return softmax_synthetic(400, 2 if binary else 3, rng, 2.0)


def _fitted(name: str) -> Calibrator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        return make_calibrator(name).fit(_data(CALIBRATORS[name].binary_only))


# -- corruptions derived from a declaration ----------------------------------------------------
def _bounds(spec, params):
    lo = params[spec.minimum] if isinstance(spec.minimum, str) else spec.minimum
    hi = params[spec.maximum] if isinstance(spec.maximum, str) else spec.maximum
    if isinstance(spec, Number) and spec.above is not None:
        lo = spec.above if lo is None else max(lo, spec.above)
    return lo, hi


def _outside(lo, hi):
    """A value outside ``[lo, hi]`` (clearly, beyond any rounding slack)."""
    return hi + 1.0 + abs(hi) if hi is not None else lo - 1.0 - abs(lo)


def _first_index(value) -> list[int]:
    """Keys to the first entry of a (nested) non-empty array."""
    keys = []
    while isinstance(value, list) and value and isinstance(value[0], list):
        keys.append(0)
        value = value[0]
    return keys + [0]


def _corruptions(spec, value, params):
    """(what, new value or a function of a copy) for one declared field."""
    yield "wrong type", ("x" if not isinstance(spec, Text) else 5)
    if isinstance(spec, Number):
        yield "NaN", math.nan
        lo, hi = _bounds(spec, params)
        if lo is not None or hi is not None:
            yield "out of range", _outside(lo, hi)
        if spec.integer or spec.dim:
            yield "not an integer", float(value) + 0.5
    if isinstance(spec, Flag):
        yield "a number", 1
    if isinstance(spec, Items):
        yield "wrong length", list(value) + [copy.deepcopy(value[0]) if value else None]
    if isinstance(spec, Array):
        yield "wrong shape (one more dimension)", [value]
        if spec.kind != "bool" and np.size(value):
            at = _first_index(value)
            lo, hi = _bounds(spec, params)
            yield "NaN entry", (at, math.nan)
            if lo is not None or hi is not None:
                yield "entry out of range", (at, _outside(lo, hi))
            if spec.kind == "int":
                yield "fractional entry", (at, 0.5)
        if spec.order and len(value) > 1 and value[0] != value[-1]:
            yield "reversed", value[::-1]


def _walk(fields: dict, state: dict, path: str, params: dict):
    """(path, keys from the state, spec) of every declared field, nested states included."""
    for name, spec in fields.items():
        here, keys = f"{path}.{name}", [name]
        yield here, keys, spec
        value = state[name]
        if isinstance(spec, Fields):
            for p, k, s in _walk(spec.fields, value, here, params):
                yield p, keys + k, s
        if isinstance(spec, Items):
            item = Fields(spec.item) if isinstance(spec.item, dict) else spec.item
            for i in [i for i, v in enumerate(value) if v is not None][:1]:  # the first entry
                for p, k, s in _walk({f"[{i}]": item}, {f"[{i}]": value[i]}, here, params):
                    yield p.replace(".[", "["), keys + [i] + k[1:], s
        if isinstance(spec, Saved):
            nested = load_nested(value, path=here)
            for p, k, s in _walk(
                nested.declared_state(), value["state"], f"{here}.state", nested.params
            ):
                yield p, keys + ["state"] + k, s


def _set(document: dict, keys: list, new) -> None:
    target = document["state"]
    for key in keys[:-1]:
        target = target[key]
    if isinstance(new, tuple):  # (index path into the array, entry)
        index, entry = new
        target = target[keys[-1]]
        for i in index[:-1]:
            target = target[i]
        target[index[-1]] = entry
    else:
        target[keys[-1]] = new


def _delete(document: dict, keys: list) -> None:
    target = document["state"]
    for key in keys[:-1]:
        target = target[key]
    del target[keys[-1]]


@pytest.mark.parametrize("name", sorted(CALIBRATORS))
def test_every_declared_field_is_refused_when_corrupted_naming_its_path(name):
    calibrator = _fitted(name)
    saved = json.loads(json.dumps(calibrator.to_dict(), allow_nan=False))
    data = _data(CALIBRATORS[name].binary_only)
    restored = Calibrator.from_dict(copy.deepcopy(saved))  # the round trip is accepted
    np.testing.assert_array_equal(restored.transform(data).probs, calibrator.transform(data).probs)
    fields = list(_walk(calibrator.declared_state(), saved["state"], "state", calibrator.params))
    assert fields, f"{name} declares no state"
    unrefused, tried = [], 0
    for path, keys, spec in fields:
        params = _nested_params(saved, keys) or calibrator.params
        cases = [("missing", None)] if not isinstance(keys[-1], int) else []
        cases += list(_corruptions(spec, _get(saved, keys), params))
        for what, new in cases:
            document = copy.deepcopy(saved)
            if what == "missing":
                _delete(document, keys)
            else:
                _set(document, keys, new)
            tried += 1
            try:
                Calibrator.from_dict(document)
            except CalcoreError as err:
                if path not in str(err):
                    unrefused.append(f"{path} ({what}): refused without the path: {err}")
                continue
            unrefused.append(f"{path} ({what}): accepted")
    assert tried >= 3 * len(fields)
    assert not unrefused, "\n".join(unrefused)


def _get(document: dict, keys: list):
    value = document["state"]
    for key in keys:
        value = value[key]
    return value


def _nested_params(document: dict, keys: list) -> dict | None:
    """Parameters of the innermost saved calibrator that holds the field (compositions)."""
    value, params = document["state"], None
    for key in keys[:-1]:
        value = value[key]
        if isinstance(value, dict) and value.get("format") == "calcore-calibrator":
            params = make_calibrator(value["method"], **value["params"]).params
    return params


def test_every_registered_method_declares_its_state():
    for name in CALIBRATORS:
        declared = make_calibrator(name).declared_state()
        assert isinstance(declared, dict) and declared, name


# -- the red team's cases, through calcore apply ---------------------------------------------
@pytest.fixture()
def files(tmp_path):
    """A 3-class prediction CSV and a function saving a (tampered) calibrator next to it."""
    preds = _data(False)
    csv = tmp_path / "preds.csv"
    write_predictions_csv(preds, str(csv))

    def save(document, text=None):
        path = tmp_path / "cal.json"
        if text is not None:
            path.write_text(text)
        else:
            write_json(document, str(path))
        return str(path)

    return str(csv), save, tmp_path


def _apply(files, document=None, text=None):
    csv, save, tmp = files
    return main(["apply", save(document, text), csv, "--out", str(tmp / "out.csv")])


def _saved(name: str, **params) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        fitted = make_calibrator(name, **params).fit(_data(False))
    return json.loads(json.dumps(fitted.to_dict()))


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calcore: error: "), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_apply_accepts_an_untouched_calibrator(files, capsys):
    assert _apply(files, _saved("ts")) == 0
    assert "recalibrated 400 rows" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "tamper", "path", "rule"),
    [
        ("ts", lambda s: s.update(temperature=-1), "state.temperature", ">= 0.01"),
        ("ts", lambda s: s.update(temperature="2"), "state.temperature", "got a text"),
        ("ts", lambda s: s.pop("temperature"), "state.temperature", "is missing"),
        ("ts", lambda s: s.update(extra=1), "state.extra", "not a field"),
        ("vs", lambda s: s.update(weights=[s["weights"]]), "state.weights", "must have 3"),
        ("ms", lambda s: s.update(weights=s["weights"][0]), "state.weights[0]", "must be an array"),
        ("tl-hb", lambda s: s.update(classes=s["classes"][:1]), "state.classes", "one per class"),
        (
            "tl-hb",
            lambda s: s["classes"][2].update(edges=s["classes"][2]["edges"][::-1]),
            "state.classes[2].edges[1]",
            "non-decreasing order",
        ),
        (
            "tl-hb",
            lambda s: s["classes"][1]["values"].__setitem__(0, 7.5),
            "state.classes[1].values[0]",
            "<= 1",
        ),
        ("cw-hb", lambda s: s["classes"][0].pop("counts"), "state.classes[0].counts", "missing"),
        ("n-iso", lambda s: s["classes"][0].update(starts=[]), "state.classes[0].starts", "empty"),
        ("ets", lambda s: s.update(weights=[0.0, 0.0, 1.0]), "state.weights", "some weight"),
        ("grid", lambda s: s.update(K=3), "state.K", "the 'K' parameter"),
    ],
)
def test_apply_refuses_a_tampered_state_naming_the_field(files, capsys, name, tamper, path, rule):
    document = _saved(name)
    tamper(document["state"])
    assert _apply(files, document) == 2
    line = _one_error_line(capsys)
    assert f"cal.json: {path} " in line and rule in line, line
    assert "row 0" not in line


def test_apply_refuses_a_composition_whose_part_was_changed(files, capsys):
    document = _saved("irova-ts")
    document["state"]["first"]["state"]["temperature"] = -1.0
    assert _apply(files, document) == 2
    assert "state.first.state.temperature must be" in _one_error_line(capsys)
    document = _saved("irova-ts")
    document["state"]["first"] = _saved("vs")  # a valid calibrator, but not the one named
    assert _apply(files, document) == 2
    assert "state.first must be the first calibrator the parameters name" in _one_error_line(capsys)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested 100,000 deep"),
        ('{"format": "calcore-calibrator", "version": ' + "9" * 400 + "}", "beyond 2**53"),
        ('{"a": 1e999}', "beyond the range of float64"),
        ('{"a": NaN}', "NaN is not a number JSON allows"),
        ('{"a": -Infinity}', "-Infinity is not a number JSON allows"),
        ("{not json", "not valid JSON"),
        ('{"hello": 1}', "Not a saved calcore calibrator"),
        ("[1, 2]", "Not a saved calcore calibrator"),
    ],
)
def test_apply_reads_json_within_bounds(files, capsys, text, message):
    assert _apply(files, text=text) == 2
    assert message in _one_error_line(capsys)


def test_temperature_written_as_infinity_is_refused(files, capsys):
    document = _saved("ts")
    text = json.dumps(document).replace(json.dumps(document["state"]["temperature"]), "Infinity")
    assert _apply(files, text=text) == 2
    assert "Infinity is not a number JSON allows" in _one_error_line(capsys)


def test_a_file_over_the_size_limit_is_refused_with_the_limit(files, capsys, monkeypatch):
    monkeypatch.setattr(saved_module, "MAX_SAVED_BYTES", 1_000)
    document = _saved("ts")
    document["fit_info"] = {"padding": "x" * 2_000}
    assert _apply(files, document) == 2
    assert "more than 1,000 bytes" in _one_error_line(capsys)


def test_nan_in_a_state_given_from_python_is_refused():
    document = _saved("tl-hb")
    document["state"]["classes"][0]["edges"][0] = float("nan")
    with pytest.raises(CalcoreError, match=r"state.classes\[0\].edges\[0\] must be finite"):
        Calibrator.from_dict(document)
    document = _saved("ts")
    document["state"]["temperature"] = float("inf")
    with pytest.raises(CalcoreError, match=r"state.temperature must be .*; got inf"):
        Calibrator.from_dict(document)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda d: d.update(class_names=["0", "1"]), r"state.classes must have 2 entries"),
        (lambda d: d.update(class_names="abc"), r"class_names must be an array of class names"),
        (lambda d: d.update(class_names=["a", "a", "b"]), r"class_names must name at least 2"),
        (lambda d: d.update(params=[1]), r"params must be an object"),
        (lambda d: d["params"].update(seed=-1), r"params.seed is refused: .*range: an integer"),
        (lambda d: d.update(fit_info=3), r"fit_info must be an object"),
        (lambda d: d.update(method=7), r"method must be a calibrator name"),
    ],
)
def test_the_top_level_fields_are_checked_too(tamper, message):
    document = _saved("tl-hb")
    tamper(document)
    with pytest.raises(CalcoreError, match=message):
        Calibrator.from_dict(document)


def test_a_binary_method_saved_for_three_classes_is_refused():
    document = json.loads(json.dumps(_fitted("hb").to_dict()))
    document["class_names"] = ["a", "b", "c"]
    with pytest.raises(CalcoreError, match=r"class_names must name 2 classes \(hb is binary\)"):
        Calibrator.from_dict(document)


# -- per-slice calibrators -----------------------------------------------------------------------
def _per_slice_document() -> dict:
    preds = _data(False)
    shop = {"shop": np.where(np.arange(preds.n_samples) % 2 == 0, "big", "small")}
    cal = calcore.PerSliceCalibrator("ts", by="shop").fit(preds.with_metadata(shop))
    return json.loads(json.dumps(cal.to_dict()))


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (
            lambda d: d["global"]["state"].update(temperature=-1),
            r"^saved calibrator: global.state.temperature must be",
        ),
        (
            lambda d: d["slices"][1]["calibrator"]["state"].update(temperature=0),
            r"slices\[1\].calibrator.state.temperature must be",
        ),
        (lambda d: d["slices"][0].update(values=[]), r"slices\[0\].values must be an array of 1"),
        (
            lambda d: d["slices"][0].update(n_calib=-3),
            r"slices\[0\].n_calib must be an integer >= 0",
        ),
        (lambda d: d.update(min_rows="x"), r"min_rows must be an integer >= 1"),
        (lambda d: d.update(resolved=[1, 2]), r"resolved must be an array of 1 entries"),
        (lambda d: d.update(resolved=["fortnight"]), r"resolved\[0\] must be null or one of"),
        (lambda d: d.update(by="shop"), r"by must be an array"),
        (lambda d: d.pop("slices"), r"slices is missing"),
        (lambda d: d.update(slices={}), r"slices must be an array"),
        (lambda d: d.update(**{"global": _saved("vs")}), r"global must be a ts calibrator"),
    ],
)
def test_a_per_slice_calibrator_is_checked_field_by_field(tamper, message):
    document = _per_slice_document()
    calcore.Calibrator.from_dict(copy.deepcopy(document))  # untouched: accepted
    tamper(document)
    with pytest.raises(CalcoreError, match=message):
        calcore.Calibrator.from_dict(document)


def test_a_per_slice_grouping_must_fit_its_specification():
    preds = _data(False)
    age = {"age": np.arange(preds.n_samples) % 50 + 0.5}
    cal = calcore.PerSliceCalibrator("ts", by="age:q4", min_rows=50).fit(preds.with_metadata(age))
    document = json.loads(json.dumps(cal.to_dict()))
    for resolved, message in [
        (["week"], r"resolved\[0\] must be an array of numbers"),
        ([[30.0, 2.0]], r"resolved\[0\]\[1\] must be at least the entry before it"),
        ([[]], r"resolved\[0\] must not be empty"),
    ]:
        document["resolved"] = resolved
        with pytest.raises(CalcoreError, match=message):
            calcore.Calibrator.from_dict(document)
