"""The command line in its own terms: ``--decimal ,`` reads a CSV with decimal commas, and
calcore's messages and notes name the flag that fixes a problem (``--label-col``,
``--decimal ,``, ``--scores``), never the Python keyword; a workbook renamed ``.csv`` is
told to be saved as CSV."""

from __future__ import annotations

import json
import re
import zipfile

import numpy as np
import pytest

import calcore
from calcore.calibrators._saved import read_calibrator
from calcore.cli import CLI_FIXES, build_parser, main
from calcore.io._load_report import NOTE_TERMS

#: One of calcore's keywords with its value, as calcore says it to a Python caller (pandas'
#: ``index=False`` is advice for whoever writes the file, and stays).
PYTHON = re.compile(
    r"\b(label_column|split_column|score_columns|weight_column|scores|percent|renormalize|"
    r"positive_class|decimal|max_decoded_bytes)=|\b[Pp]ass\b"
)
CLASSES = ("cat", "dog", "eel")


def _rows(n: int = 300, seed: int = 8):
    rng = np.random.default_rng(seed)
    probs = np.round(rng.dirichlet([1, 1, 1], size=n), 6)
    probs[:, 2] = np.round(1 - probs[:, 0] - probs[:, 1], 6)
    labels = rng.integers(0, 3, n)
    return probs, labels


def _write(path, probs, labels, *, comma: bool, split: bool = False):
    """The predictions as a ';'-separated CSV, with decimal commas or points."""
    head = "label;p_cat;p_dog;p_eel" + (";split" if split else "")
    lines = [head]
    for i, (p, y) in enumerate(zip(probs, labels, strict=True)):
        cells = [f"{v:.6f}" for v in p]
        if comma:
            cells = [c.replace(".", ",") for c in cells]
        tail = [("calib" if i % 2 else "test")] if split else []
        lines.append(";".join([CLASSES[y], *cells, *tail]))
    path.write_text("\n".join(lines) + "\n")
    return path


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("calcore: error: ") and "Traceback" not in err, err
    return err.removeprefix("calcore: error: ").strip()


def test_metrics_with_decimal_comma_reads_the_numbers_of_the_point_file(tmp_path, capsys):
    probs, labels = _rows()
    comma = _write(tmp_path / "eu.csv", probs, labels, comma=True)
    assert main(["metrics", str(comma), "--decimal", ",", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    expected = calcore.evaluate(calcore.Predictions.from_probs(probs, labels)).as_dict()
    for key in ("accuracy", "nll", "conf_ece", "top_label_ece"):
        assert got[key] == pytest.approx(expected[key], abs=1e-12), key
    assert got["accuracy"] == pytest.approx(np.mean(probs.argmax(1) == labels))  # by hand


def test_a_decimal_comma_file_without_the_flag_names_file_column_row_and_the_flag(tmp_path, capsys):
    probs, labels = _rows()
    comma = _write(tmp_path / "eu.csv", probs, labels, comma=True)
    for command in (["metrics"], ["check", "--max", "top_label_ece=0.5"]):
        assert main([*command, str(comma)]) == 2
        error = _error(capsys)
        first = f"{probs[0, 0]:.6f}".replace(".", ",")  # line 2: the first data row
        assert error.startswith("eu.csv: column 'p_cat' (and 2 more: 'p_dog', 'p_eel')")
        assert f"(line 2: '{first}')" in error
        assert error.endswith(CLI_FIXES["decimal"])
        assert "Add --decimal , to read them" in error and not PYTHON.search(error), error


def test_decimal_comma_on_a_comma_separated_file_says_to_leave_the_flag_out(tmp_path, capsys):
    path = tmp_path / "points.csv"
    path.write_text("label,p_a,p_b\na,0.9,0.1\nb,0.2,0.8\n")
    assert main(["metrics", str(path), "--decimal", ","]) == 2
    error = _error(capsys)
    assert error.startswith("points.csv: decimal=',' was given, but the fields are separated")
    assert error.endswith("Leave out --decimal.")


def test_check_and_a_streamed_folder_read_decimal_commas_with_the_flag(tmp_path, capsys):
    probs, labels = _rows(400, seed=3)
    folder = tmp_path / "days"
    folder.mkdir()
    _write(folder / "a.csv", probs[:200], labels[:200], comma=True, split=True)
    _write(folder / "b.csv", probs[200:], labels[200:], comma=True, split=True)
    test = np.arange(400) % 2 == 0  # the rows written with split 'test'
    expected = calcore.evaluate(calcore.Predictions.from_probs(probs[test], labels[test]))
    assert main(["metrics", str(folder), "--decimal", ",", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["n"] == int(test.sum()) == 200
    assert got["conf_ece"] == pytest.approx(expected.metrics["conf_ece"], abs=1e-9)
    limit = expected.metrics["top_label_ece"]
    assert (
        main(["check", str(folder), "--decimal", ",", "--max", f"top_label_ece={limit + 0.01}"])
        == 0
    )
    assert (
        main(["check", str(folder), "--decimal", ",", "--max", f"top_label_ece={limit - 0.01}"])
        == 1
    )


def test_apply_reads_decimal_commas_with_the_flag(tmp_path, capsys):
    probs, labels = _rows(200, seed=4)
    comma = _write(tmp_path / "eu.csv", probs, labels, comma=True, split=True)
    saved = tmp_path / "ts.json"
    assert (
        main(["calibrate", str(comma), "--decimal", ",", "--method", "ts", "--save", str(saved)])
        == 0
    )
    out = tmp_path / "out.csv"
    capsys.readouterr()
    assert main(["apply", str(saved), str(comma), "--decimal", ",", "--out", str(out)]) == 0
    applied = calcore.load_predictions(out)  # written with points, comma-separated
    fitted = read_calibrator(saved)
    rows = calcore.Predictions.from_probs(probs, labels, class_names=list(CLASSES))
    want = fitted.transform(rows).probs  # the file with points, calibrated in Python
    np.testing.assert_allclose(applied.probs, want, atol=1e-6)


def test_an_ambiguous_label_column_names_the_flag_not_the_keyword(tmp_path, capsys):
    path = tmp_path / "two.csv"
    path.write_text("label,target,p_a,p_b\na,b,0.9,0.1\nb,a,0.2,0.8\n")
    assert main(["metrics", str(path)]) == 2
    error = _error(capsys)
    assert error == (
        "two.csv: label column is ambiguous: ['label', 'target'] all look like labels. "
        "Give it with --label-col NAME."
    )
    assert main(["metrics", str(path), "--label-col", "target", "--json"]) == 0


def test_the_notes_say_the_scores_kind_in_flag_terms(tmp_path, capsys):
    rng = np.random.default_rng(1)
    logits = rng.normal(0, 2, (50, 2))
    path = tmp_path / "logits.csv"
    rows = [f"{'ab'[i % 2]},{a:.4f},{b:.4f}" for i, (a, b) in enumerate(logits)]
    path.write_text("label,a,b\n" + "\n".join(rows) + "\n")
    assert main(["metrics", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Scores read as logits: --scores auto (the default) saw values outside [0, 1]" in out
    assert "scores='auto'" not in out
    assert main(["metrics", str(path), "--scores", "logits"]) == 0
    assert "Scores read as logits: --scores was given." in capsys.readouterr().out


def test_a_workbook_renamed_csv_is_told_to_be_saved_as_csv(tmp_path, capsys):
    for name in ("results.csv", "results.xlsx", "results"):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("[Content_Types].xml", "<Types/>")
            z.writestr("xl/workbook.xml", "<workbook/>")
        assert main(["metrics", str(path)]) == 2
        error = _error(capsys)
        assert error == (
            f"{name}: this is an Excel workbook (.xlsx), not a CSV, Parquet or NPZ file. Save it "
            "as CSV (File > Save As > CSV UTF-8) and give calcore that file."
        )
        path.unlink()


def test_every_flag_the_cli_words_name_exists_and_no_python_is_left():
    flags = {s for action in _loading_actions() for s in action.option_strings}
    for option, words in CLI_FIXES.items():
        assert not PYTHON.search(words), (option, words)
        for flag in re.findall(r"--[a-z-]+", words):
            assert flag in flags, (option, flag)
    for option, _ in NOTE_TERMS:
        assert option in CLI_FIXES, option


def _loading_actions():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["metrics"]._actions
