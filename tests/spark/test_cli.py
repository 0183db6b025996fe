"""``calcore metrics|check --engine spark``: the embedded CLI's numbers, exit codes and gates.

Each command runs in this process through ``calcore.cli.main``: its
``calcore.spark.session(master="local[2]")`` is ``getOrCreate``'s, so it reuses the
test session (the same SparkContext) and does not stop it (the fixture's ``spark`` still
runs jobs afterwards). The reference is the embedded engine's run of the same command on
the same files: numbers equal to 1e-9, strings equal (but the notes, which may say
more about one engine).
"""

from __future__ import annotations

import json
import math

from calcore.cli import main

TOL = 1e-9
#: Keys whose text may differ between the engines (what each says about itself).
FREE_TEXT: set = set()


def _run(capsys, *argv) -> tuple[int, dict]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out)


def _same(emb, got, where="", skip=frozenset()):
    """``got`` equals ``emb``: the same keys and types, numbers to TOL."""
    if isinstance(emb, dict):
        assert isinstance(got, dict) and emb.keys() == got.keys(), (where, emb.keys() ^ got.keys())
        for key in emb:
            if key not in skip and key not in FREE_TEXT:
                _same(emb[key], got[key], f"{where}.{key}", skip)
    elif isinstance(emb, list):
        assert isinstance(got, list) and len(emb) == len(got), where
        for k, (a, b) in enumerate(zip(emb, got, strict=True)):
            _same(a, b, f"{where}[{k}]", skip)
    elif isinstance(emb, float) and not isinstance(emb, bool):
        assert isinstance(got, (int, float)), (where, got)
        if math.isnan(emb):
            assert math.isnan(got), where
        else:
            assert abs(emb - got) <= TOL, (where, emb, got)
    else:
        assert emb == got, (where, emb, got)


SPARK = ("--engine", "spark", "--master", "local[2]")


def test_metrics_json_equals_the_embedded_cli(spark, logs, capsys):
    """The test rows of the split column (the CLI's default), weights, bootstrap and
    calibration test: the embedded report's JSON, number for number."""
    args = ("metrics", logs, "--json", "--bootstrap", "20", "--seed", "3")
    code_emb, emb = _run(capsys, *args)
    code_got, got = _run(capsys, *args, *SPARK)
    assert code_emb == code_got == 0
    assert emb["split"] == "test" and emb["n"] < 12_000 and emb["intervals"]
    assert emb["calibration_test"]
    _same(emb, got)
    assert spark.range(3).count() == 3  # the CLI left the test session running


def test_metrics_by_json_equals_the_embedded_cli(spark, logs, capsys):
    """--by (a quantile-range column) on the calib rows: overall report, every slice's
    metrics, p-, q- and beyond-the-model values (the model's curve fitted on a sample
    drawn by Spark, applied in its tasks) and the ranking equal."""
    args = ("metrics", logs, "--json", "--by", "day:q4", "--resamples", "50", "--split", "calib")
    code_emb, emb = _run(capsys, *args)
    code_got, got = _run(capsys, *args, *SPARK)
    assert code_emb == code_got == 0
    assert any("after the model's own calibration curve" in n for n in got["notes"])
    assert any(s["z"] != 0 for s in got["slices"]) and emb["slices"]
    _same(emb, got)  # the slices in the same (ranked) order


def test_check_exit_code_and_gates_equal_the_embedded_cli(spark, logs, capsys):
    """Two gates on the upper bounds of bootstrap intervals: one passes, one fails (exit
    1), each gate's estimate, bounds and verdict equal."""
    args = ("check", logs, "--max", "top_label_ece=0.5", "--max", "conf_ece=0.01", "--on",
            "upper", "--bootstrap", "20", "--json")  # fmt: skip
    code_emb, emb = _run(capsys, *args)
    code_got, got = _run(capsys, *args, *SPARK)
    assert code_emb == code_got == 1
    assert [g["passed"] for g in emb["gates"]] == [True, False]
    _same(emb, got)
