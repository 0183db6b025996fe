"""Every calibrator parameter has its range in its one definition (issue 33, items 6, 8, 10).

The same ``Param`` bounds are enforced by the Python constructors, the CLI's ``--method
NAME:K=V`` and ``--param K=V``, and saved JSON; out of range is refused with the range in
the message (the page's link parsing is tested in tests/dashboard/calibration/test_method_links.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _synthetic import softmax_synthetic

from calcore import CALIBRATORS, CalcoreError, make_calibrator
from calcore.calibrators import Calibrator
from calcore.cli import main, parse_method_option, parse_param
from calcore.io.export import write_predictions_csv

NUMERIC = [
    (name, p)
    for name, info in sorted(CALIBRATORS.items())
    for p in info.parameters
    if p.kind in ("int", "float")
]


def test_every_numeric_parameter_has_both_bounds():
    unbounded = [f"{name}.{p.name}" for name, p in NUMERIC if None in (p.minimum, p.maximum)]
    assert not unbounded, unbounded


@pytest.mark.parametrize(("name", "param"), NUMERIC, ids=[f"{n}.{p.name}" for n, p in NUMERIC])
def test_out_of_range_values_are_refused_with_the_range(name, param):
    step = 1 if param.kind == "int" else abs(param.maximum) * 1e-3 + 1e-9
    for value in (param.maximum + step, param.minimum - step, 10**400, float("nan")):
        with pytest.raises(CalcoreError, match=rf"{name}: parameter '{param.name}' must be") as err:
            make_calibrator(name, **{param.name: value})
        assert "range" in str(err.value) or "finite" in str(err.value)
    # both ends are allowed (where the other parameters let them be)
    for value in (param.minimum, param.maximum):
        try:
            make_calibrator(name, **{param.name: value})
        except CalcoreError as err:  # a cross-parameter rule, not the range
            assert "must be below" in str(err) or "exactly one of" in str(err), err


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("na-fir", {"max_iter": 1_000_000_000}, r"must be <= 5000; .*from 1 to 5,000"),
        ("tl-hb", {"seed": -1}, r"'seed' must be >= 0; .*from 0 to 4,294,967,295"),
        ("ts", {"min_temperature": 0.0}, r"'min_temperature' must be >= 1e-06"),
        ("ts", {"max_temperature": float("inf")}, r"must be finite; got inf"),
        ("hb", {"bins": 10**6}, r"'bins' must be <= 100000; .*from 1 to 100,000"),
        ("tkl-hb", {"k": 1000}, r"'k' must be <= 100"),
        ("projection-hb", {"bins": 100_000}, r"'bins' must be <= 500"),
        ("vs", {"max_iter": 10.5}, r"'max_iter' must be an integer; got 10.5"),
    ],
)
def test_python_constructors_refuse_with_the_range(name, params, message):
    with pytest.raises(CalcoreError, match=message):
        make_calibrator(name, **params)


def test_a_negative_seed_is_refused_before_any_fit_not_a_numpy_traceback():
    with pytest.raises(CalcoreError, match="'seed' must be >= 0"):
        make_calibrator("tl-hb", seed=-1)
    preds = softmax_synthetic(300, 3, np.random.default_rng(0))
    make_calibrator("tl-hb", seed=2**32 - 1).fit(preds)  # the largest seed works


def test_saved_json_with_a_parameter_out_of_range_is_refused_naming_it():
    preds = softmax_synthetic(300, 3, np.random.default_rng(0))
    document = json.loads(json.dumps(make_calibrator("na-fir").fit(preds).to_dict()))
    document["params"]["max_iter"] = 1_000_000_000
    with pytest.raises(CalcoreError, match=r"params.max_iter is refused: .*from 1 to 5,000"):
        Calibrator.from_dict(document)


def test_grid_resolution_beyond_the_bins_for_the_classes_says_the_allowed_k():
    preds = softmax_synthetic(300, 3, np.random.default_rng(0))
    with pytest.raises(CalcoreError, match=r"with 3 classes K must be 1 to 447"):
        make_calibrator("grid", K=1000).fit(preds)
    assert make_calibrator("grid", K=447).fit(preds).to_dict()["state"]["K"] == 447


# -- the command line --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def csv_with_split(tmp_path_factory):
    preds = softmax_synthetic(400, 3, np.random.default_rng(1))
    path = tmp_path_factory.mktemp("ranges") / "preds.csv"
    write_predictions_csv(preds, str(path))
    lines = path.read_text().splitlines()
    split = ["split"] + ["calib" if i % 2 else "test" for i in range(len(lines) - 1)]
    path.write_text("\n".join(f"{s},{line}" for s, line in zip(split, lines, strict=True)) + "\n")
    return str(path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["calibrate", "--method", "na-fir", "--param", "max_iter=1000000000"], "from 1 to 5,000"),
        (["compare", "--method", "tl-hb:seed=-1"], "from 0 to 4,294,967,295"),
        (["compare", "--method", "grid:K=1000"], "with 3 classes K must be 1 to 447"),
        (["calibrate", "--method", "hb", "--param", "bins=1e999"], "beyond the range of float64"),
        (["calibrate", "--method", "tl-hb", "--param", "seed=" + "9" * 400], "beyond 2**53"),
        (["calibrate", "--method", "ts", "--param", "x=" + "[" * 5000], "nested 5,000 deep"),
    ],
)
def test_cli_refuses_out_of_range_parameters_with_exit_2(csv_with_split, capsys, argv, message):
    assert main([argv[0], csv_with_split, *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calcore: error: ") and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cli_parameter_values_keep_their_meaning():
    assert parse_param("bins=10") == ("bins", 10)
    assert parse_param("loss=nll") == ("loss", "nll")  # not JSON: the text itself
    assert parse_param("flag=true") == ("flag", True)
    assert parse_method_option("tl-hb:bins=10,seed=1") == ("tl-hb", {"bins": 10, "seed": 1})
