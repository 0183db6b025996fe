"""The ``calcore metrics`` command: output formats, settings and error handling."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import calcore
from calcore.cli import main

REQUIRED_KEYS = {
    "n",
    "n_classes",
    "accuracy",
    "nll",
    "brier",
    "conf_ece",
    "conf_mce",
    "top_label_ece",
    "top_label_mce",
    "classwise_ece",
    "kde_ece",
    "kde_ece_classwise",
    "bins",
    "binning",
}


@pytest.fixture()
def csv_file(tmp_path):
    """A 3-class CSV with a split column; probabilities rounded to 4 decimals and made exact."""
    rng = np.random.default_rng(3)
    probs = rng.dirichlet([1.0, 1.0, 1.0], size=300)
    probs = np.round(probs, 4)
    probs[:, 2] = np.round(1 - probs[:, 0] - probs[:, 1], 4)
    probs = np.clip(probs, 0, 1)
    labels = np.array([rng.choice(3, p=p / p.sum()) for p in probs])
    names = ["cat", "dog", "eel"]
    lines = ["label,p_cat,p_dog,p_eel,split"]
    for i, (p, y) in enumerate(zip(probs, labels, strict=True)):
        lines.append(
            f"{names[y]},{p[0]:.4f},{p[1]:.4f},{p[2]:.4f},{'calib' if i < 100 else 'test'}"
        )
    path = tmp_path / "preds.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, probs, labels


def test_json_has_the_documented_keys_and_matches_evaluate(csv_file, capsys):
    path, probs, labels = csv_file
    assert main(["metrics", str(path), "--split", "test", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert REQUIRED_KEYS <= set(out)
    expected = calcore.evaluate(calcore.Predictions.from_probs(probs[100:], labels[100:])).as_dict()
    assert out["n"] == 200 and out["n_classes"] == 3
    for key in (
        "accuracy",
        "nll",
        "brier",
        "conf_ece",
        "top_label_ece",
        "classwise_ece",
        "kde_ece",
    ):
        assert out[key] == pytest.approx(expected[key], abs=1e-12), key
    # an independent check of one number: accuracy from the raw arrays
    assert out["accuracy"] == pytest.approx(np.mean(probs[100:].argmax(1) == labels[100:]))


def test_settings_are_used_and_echoed(csv_file, capsys):
    path, probs, labels = csv_file
    assert main(["metrics", str(path), "--bins", "5", "--binning", "equal-mass", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["bins"], out["binning"], out["n"]) == (5, "equal-mass", 300)
    preds = calcore.Predictions.from_probs(probs, labels)
    assert out["top_label_ece"] == pytest.approx(
        calcore.top_label_ece(preds, bins=5, binning="equal-mass"), abs=1e-12
    )


def test_table_output_is_readable(csv_file, capsys):
    path, _, _ = csv_file
    assert main(["metrics", str(path), "--split", "test"]) == 0
    text = capsys.readouterr().out
    assert "200 rows, 3 classes" in text
    assert "TL-ECE" in text and "CW-ECE" in text and "KDE-ECE" in text
    assert "Notes:" in text and "'test' rows loaded" in text


def test_bootstrap_intervals_in_json(csv_file, capsys):
    path, _, _ = csv_file
    assert main(["metrics", str(path), "--bootstrap", "20", "--seed", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    acc = out["intervals"]["accuracy"]
    assert acc["low"] <= out["accuracy"] <= acc["high"]


def test_bad_cell_gives_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("label,p_a,p_b\na,0.5,0.5\nb,abc,0.5\n")
    assert main(["metrics", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert err.startswith("calcore: error:") and "\n" not in err
    assert "bad.csv" in err and "line 3" in err and "p_a" in err
    assert "Traceback" not in err


def test_missing_file_exit_2(tmp_path, capsys):
    assert main(["metrics", str(tmp_path / "nope.csv")]) == 2
    err = capsys.readouterr().err
    assert "nope.csv" in err and "Traceback" not in err


def test_bad_option_values_exit_2(csv_file, capsys):
    path, _, _ = csv_file
    with pytest.raises(SystemExit) as exc:
        main(["metrics", str(path), "--bins", "0"])
    assert exc.value.code == 2
    assert "--bins must be a positive integer" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["metrics", str(path), "--binning", "magic"])
    assert exc.value.code == 2


def test_console_entry_point_runs_as_a_process(csv_file):
    path, _, _ = csv_file
    done = subprocess.run(
        [sys.executable, "-m", "calcore.cli", "metrics", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n"] == 300
    bad = subprocess.run(
        [sys.executable, "-m", "calcore.cli", "metrics", str(path), "--split", "nonsense"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1
