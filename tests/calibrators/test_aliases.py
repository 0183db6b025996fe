"""One name per method: the picker's and the CLI's lists hold each method once, and every
old name (an alias) still builds, loads from saved JSON and compares under its new name."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _synthetic import calib_test_pair  # tests/ is on sys.path

import calcore
from calcore.calibrators import Calibrator, make_calibrator, read_calibrator
from calcore.cli import main

ALIASES = sorted(calcore.CALIBRATOR_ALIASES.items())


@pytest.fixture(scope="module")
def miscal():
    return calib_test_pair(0, 2.0)


def test_aliases_are_listed_once_under_their_method():
    assert ALIASES == [("irova", "n-iso")]
    for old, new in ALIASES:
        assert old not in calcore.CALIBRATORS and new in calcore.CALIBRATORS
        assert old in calcore.CALIBRATORS[new].aliases
    listed = [a for info in calcore.CALIBRATORS.values() for a in info.aliases]
    assert sorted(listed) == sorted(calcore.CALIBRATOR_ALIASES)


def test_no_two_listed_methods_share_a_full_name():
    titles = [info.title for info in calcore.CALIBRATORS.values()]
    assert all(titles) and len(set(titles)) == len(titles)
    assert all(info.use and info.family in calcore.CALIBRATOR_FAMILIES
               for info in calcore.CALIBRATORS.values())  # fmt: skip


@pytest.mark.parametrize(("old", "new"), ALIASES)
def test_an_old_name_builds_and_saved_json_loads_as_the_method(old, new, miscal, tmp_path):
    calib, test = miscal
    built = make_calibrator(old)
    assert built.name == new
    fitted = make_calibrator(new).fit(calib)
    saved = fitted.to_dict()
    saved["method"] = old  # as written before the alias
    loaded = Calibrator.from_dict(json.loads(json.dumps(saved)))
    assert loaded.name == new
    np.testing.assert_array_equal(loaded.transform(test).probs, fitted.transform(test).probs)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(saved))
    assert read_calibrator(path).name == new


def test_a_composition_saved_with_an_old_part_name_loads(miscal):
    calib, test = miscal
    fitted = make_calibrator("irova-ts").fit(calib)
    saved = json.loads(json.dumps(fitted.to_dict()))
    assert saved["state"]["second"]["method"] == "n-iso"
    saved["state"]["second"]["method"] = "irova"  # irova-ts saved before the alias
    loaded = Calibrator.from_dict(saved)
    np.testing.assert_array_equal(loaded.transform(test).probs, fitted.transform(test).probs)
    composed = calcore.calibrators.composite.compose("ts", "irova")
    assert composed.params["second"] == "n-iso"
    saved = composed.fit(calib).to_dict()
    saved["params"]["second"] = "irova"
    assert Calibrator.from_dict(saved).params["second"] == "n-iso"


def test_the_cli_takes_an_old_name(tmp_path, capsys, miscal):
    calib, test = miscal
    path = tmp_path / "preds.csv"
    rows = ["label,split," + ",".join(f"p_{c}" for c in calib.class_names)]
    for split, preds in (("calib", calib), ("test", test)):
        for y, p in zip(preds.labels[:500], preds.probs[:500], strict=True):
            rows.append(f"{y},{split}," + ",".join(repr(float(v)) for v in p))
    path.write_text("\n".join(rows) + "\n")
    saved = tmp_path / "irova.json"
    argv = ["calibrate", str(path), "--method", "irova", "--json", "--save", str(saved)]
    assert main(argv) == 0, capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "n-iso"
    assert json.loads(saved.read_text())["method"] == "n-iso"


def test_unknown_names_still_list_only_the_methods():
    with pytest.raises(calcore.CalcoreError) as err:
        make_calibrator("nope")
    assert "'n-iso'" in str(err.value) and "'irova'" not in str(err.value)
