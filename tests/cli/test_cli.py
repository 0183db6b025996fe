"""The ``calcore metrics`` command: output formats, settings and error handling."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from _keys import REQUIRED_KEYS  # tests/ is on sys.path (rootdir conftest, no __init__.py)

import calcore
from calcore.cli import main
from calcore.metrics.registry import IN_MEMORY_METRICS


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
    argv = ["metrics", str(path), "--bins", "5", "--binning", "equal-mass", "--split", "all"]
    assert main([*argv, "--json"]) == 0
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
    assert acc["method"] == "percentile" and out["intervals"]["conf_ece"]["method"] == "iterated"
    # The table gives each tested error's verdict beside its interval.
    assert main(["metrics", str(path), "--bootstrap", "20", "--seed", "4"]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.strip().startswith("TL-ECE "))
    test = out["calibration_test"]["top_label_ece"]
    assert f"(p = {test['p_value']:.2g})" in line and test["n_resamples"] == 20
    argv = ["metrics", str(path), "--bootstrap", "20", "--interval", "basic", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {iv["method"] for iv in out["intervals"].values()} == {"basic"}


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
    # a split column and no --split: the 200 test rows, said on stderr and in the JSON
    out = json.loads(done.stdout)
    assert (out["n"], out["split"]) == (200, "test")
    assert "the test rows of split column 'split'" in done.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "calcore.cli", "metrics", str(path), "--split", "nonsense"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "argument --split: invalid choice: 'nonsense' (choose from 'calib', 'test', 'all')" in (
        bad.stderr
    )


def test_calibrate_single_file_with_split_json_save_and_apply(csv_file, tmp_path, capsys):
    path, probs, labels = csv_file
    out_csv, saved = tmp_path / "calibrated.csv", tmp_path / "ts.json"
    argv = [
        "calibrate",
        str(path),
        "--method",
        "ts",
        "--json",
        "--out",
        str(out_csv),
        "--save",
        str(saved),
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "ts" and set(out) >= {"params", "before", "after", "fit_info"}
    assert REQUIRED_KEYS <= set(out["before"]) and REQUIRED_KEYS <= set(out["after"])
    # independent recomputation: fit TS on the calib rows, evaluate on the test rows
    from calcore.calibrators import make_calibrator

    calib = calcore.Predictions.from_probs(probs[:100], labels[:100], ("cat", "dog", "eel"))
    test = calcore.Predictions.from_probs(probs[100:], labels[100:], ("cat", "dog", "eel"))
    expected = make_calibrator("ts").fit(calib).transform(test)
    assert out["after"]["nll"] == pytest.approx(calcore.negative_log_likelihood(expected), rel=1e-9)
    assert out["before"]["accuracy"] == out["after"]["accuracy"]  # TS keeps the argmax
    written = calcore.load_predictions(out_csv)
    np.testing.assert_allclose(written.probs, expected.probs, rtol=0, atol=1e-15)
    # apply the saved calibrator to the test rows: same numbers as the --out file
    applied = tmp_path / "applied.csv"
    assert main(["apply", str(saved), str(path), "--split", "test", "--out", str(applied)]) == 0
    np.testing.assert_array_equal(calcore.load_predictions(applied).probs, written.probs)


def test_calibrate_with_params_and_table(csv_file, capsys):
    path, _, _ = csv_file
    assert main(["calibrate", str(path), "--method", "tl-hb", "--param", "points_per_bin=20"]) == 0
    text = capsys.readouterr().out
    assert "tl-hb" in text and "before" in text and "after" in text and "TL-ECE" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--method", "nope"], "Unknown calibrator 'nope'"),
        (["--method", "ts", "--param", "oops"], "--param must look like NAME=VALUE"),
        (["--method", "ts", "--param", "min_temperature=-1"], "'min_temperature' must be >= 1e-06"),
    ],
)
def test_calibrate_errors_exit_2(csv_file, capsys, argv, message):
    path, _, _ = csv_file
    assert main(["calibrate", str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_calibrate_needs_both_splits(tmp_path, capsys):
    path = tmp_path / "nosplit.csv"
    path.write_text("label,p_a,p_b\na,0.6,0.4\nb,0.3,0.7\n")
    assert main(["calibrate", str(path), "--method", "ts"]) == 2
    assert "no calib or test rows" in capsys.readouterr().err


def test_apply_rejects_a_non_calibrator_json(csv_file, tmp_path, capsys):
    path, _, _ = csv_file
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}')
    assert main(["apply", str(bogus), str(path), "--out", str(tmp_path / "o.csv")]) == 2
    assert "Not a saved calcore calibrator" in capsys.readouterr().err
    bogus.write_text("{not json")
    assert main(["apply", str(bogus), str(path), "--out", str(tmp_path / "o.csv")]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_a_file_over_max_decoded_bytes_is_streamed(csv_file, capsys):
    path, _, _ = csv_file
    assert main(["metrics", str(path), "--max-decoded-bytes", "100000", "--json"]) == 0
    loaded = json.loads(capsys.readouterr().out)
    assert main(["metrics", str(path), "--max-decoded-bytes", "1000", "--json"]) == 0
    streamed = json.loads(capsys.readouterr().out)
    assert streamed["n"] == loaded["n"]
    for key in ("conf_ece", "tace", "nll", "brier"):
        assert streamed[key] == pytest.approx(loaded[key], rel=1e-12)
    with pytest.raises(SystemExit) as exc:
        main(["metrics", str(path), "--max-decoded-bytes", "lots"])
    assert exc.value.code == 2


def test_error_is_one_line_even_when_the_file_name_has_a_line_break(tmp_path, capsys):
    path = tmp_path / "two\nlines.csv"
    path.write_text("label,p_a,p_b\na,0.5,0.5\nb,abc,0.5\n")
    assert main(["metrics", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "two lines.csv, line 3, column 'p_a'" in err


# --------------------------------------------------------------------------- streamed sources


@pytest.fixture()
def parquet_dir(tmp_path):
    """Binary predictions as three Parquet files in hive folders, with a split column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    p = rng.beta(0.7, 2.0, 900)
    y = (rng.random(900) < p).astype(np.int64)
    split = np.where(np.arange(900) % 4 == 0, "calib", "test")
    for k in range(3):
        folder = tmp_path / "logs" / f"day={k}"
        folder.mkdir(parents=True)
        rows = slice(300 * k, 300 * (k + 1))
        table = pa.table({"label": y[rows], "p_spam": p[rows], "split": split[rows]})
        pq.write_table(table, folder / "part.parquet", row_group_size=70)
    return tmp_path / "logs", p, y, split


@pytest.mark.parametrize("pattern", ["{d}", "{d}/*/*.parquet"])
def test_metrics_streams_a_directory_or_glob(parquet_dir, pattern, capsys):
    folder, p, y, split = parquet_dir
    path = pattern.format(d=folder)
    assert main(["metrics", path, "--split", "test", "--binning", "equal-mass", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    keep = split == "test"
    want = calcore.evaluate(
        calcore.Predictions.from_probs(np.column_stack([1 - p[keep], p[keep]]), y[keep]),
        binning="equal-mass",
    )
    assert out["n"] == keep.sum() and out["file"] == path
    for key in calcore.METRICS:
        if key in IN_MEMORY_METRICS:  # fits of the rows themselves: None on a stream, one note
            assert out[key] is None, key
            continue
        assert out[key] == pytest.approx(want.metrics[key], rel=1e-10, abs=1e-14), key
    assert sum("need the rows in memory" in n for n in out["notes"]) == 1


def test_metrics_stream_errors_are_one_line_exit_2(tmp_path, capsys):
    assert main(["metrics", str(tmp_path / "nothing" / "*.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no data files found" in err


def test_progress_line_says_rows_rate_and_time_left():
    import io

    from calcore.cli import Progress

    class Batch:
        def __init__(self, position, n):
            self.position = position
            self.preds = type("P", (), {"n_samples": n})()

    out = io.StringIO()
    progress = Progress(1000, stream=out, after=0.0)
    progress(Batch(0, 400))
    progress.last = 0.0  # allow the next refresh at once
    progress(Batch(400, 400))
    progress.close()
    text = out.getvalue()
    assert "pass 1: 800 of 1,000 rows" in text and "rows/s" in text and "s left" in text
    assert text.endswith("\n")
    quiet = io.StringIO()
    slow_start = Progress(1000, stream=quiet)  # the default: silent for two seconds
    slow_start(Batch(0, 10))
    slow_start.close()
    assert quiet.getvalue() == ""
    about = io.StringIO()
    csv_rows = Progress(1000, stream=about, after=0.0, estimated=True)  # CSV: an estimate
    csv_rows(Batch(0, 400))
    assert "400 of ~1,000 rows" in about.getvalue()


def test_apply_streams_a_directory_to_parquet_and_csv(parquet_dir, tmp_path, capsys):
    import pyarrow.parquet as pq

    folder, p, y, split = parquet_dir
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y, ("not spam", "spam"))
    cal = calcore.make_calibrator("platt").fit(preds)
    saved = tmp_path / "platt.json"
    saved.write_text(json.dumps(cal.to_dict()))
    want = cal.transform(preds)
    for out in (tmp_path / "out.parquet", tmp_path / "out.csv"):
        assert main(["apply", str(saved), str(folder), "--out", str(out)]) == 0
        assert "recalibrated 900 rows" in capsys.readouterr().out
        back = calcore.load_predictions(out)
        np.testing.assert_allclose(back.probs, want.probs, rtol=1e-15, atol=0)
        np.testing.assert_array_equal(back.labels, y)
    assert pq.ParquetFile(tmp_path / "out.parquet").metadata.num_row_groups >= 3
    leftovers = [f.name for f in tmp_path.iterdir() if f.name.endswith(".partial")]
    assert leftovers == []


def test_apply_leaves_no_partial_file_when_a_batch_is_bad(parquet_dir, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder, p, y, _ = parquet_dir
    bad = folder / "day=9"
    bad.mkdir()
    pq.write_table(
        pa.table({"label": [0, 1], "p_spam": [0.5, 1.5], "split": ["test", "test"]}),
        bad / "part.parquet",
    )
    cal = calcore.make_calibrator("platt").fit(
        calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y, ("not spam", "spam"))
    )
    saved = tmp_path / "platt.json"
    saved.write_text(json.dumps(cal.to_dict()))
    out = tmp_path / "out.parquet"
    assert main(["apply", str(saved), str(folder), "--out", str(out)]) == 2
    assert "day=9/part.parquet" in capsys.readouterr().err
    assert not out.exists() and not [f for f in tmp_path.iterdir() if ".partial" in f.name]


def test_calibrate_streams_fits_on_a_seeded_sample(parquet_dir, tmp_path, capsys):
    folder, p, y, split = parquet_dir
    out = tmp_path / "test_out.parquet"
    argv = ["calibrate", str(folder), "--method", "platt", "--max-fit-rows", "100", "--json"]
    assert main([*argv, "--out", str(out)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert "sample of 100 of the 225 calibration rows" in got["fit_info"]["fit_sample"]
    assert got["before"]["n"] == got["after"]["n"] == (split == "test").sum()
    # the same fit in memory: the sample is the same rows whatever the batching
    keep = split == "calib"
    calib = calcore.Predictions.from_probs(np.column_stack([1 - p, p])[keep], y[keep])
    stream = calcore.scan(folder, split="calib", batch_rows=17)
    sample, n = stream.sample(100, seed=0)
    assert n == keep.sum() and sample.n_samples == 100
    again, _ = calcore.scan(folder, split="calib", batch_rows=1000).sample(100, seed=0)
    np.testing.assert_array_equal(sample.probs, again.probs)
    assert set(map(tuple, sample.probs.round(12))) <= set(map(tuple, calib.probs.round(12)))
    fitted = calcore.make_calibrator("platt").fit(sample)
    assert got["params"] == fitted.to_dict()["params"]
    assert calcore.load_predictions(out).n_samples == got["after"]["n"]


def test_metric_option_computes_only_the_named_metrics(csv_file, parquet_dir, capsys):
    path, _, _ = csv_file
    for source in (str(path), str(parquet_dir[0])):
        assert main(["metrics", source, "--json"]) == 0
        every = json.loads(capsys.readouterr().out)
        assert main(["metrics", source, "--metric", "conf_ece", "--metric", "nll", "--json"]) == 0
        some = json.loads(capsys.readouterr().out)
        assert some["conf_ece"] == every["conf_ece"] and some["nll"] == every["nll"]
        assert some["classwise_ece"] is None and some["accuracy"] is None
    with pytest.raises(SystemExit) as exc:
        main(["metrics", str(path), "--metric", "ece_of_my_dreams"])
    assert exc.value.code == 2


def test_a_bug_exits_3_with_one_line_never_1_which_reads_as_a_failed_gate(
    csv_file, capsys, monkeypatch
):
    """An exception calcore did not mean to raise (here a TypeError planted in the metrics
    command) is a bug: exit 3 and one line saying so, not Python's exit 1 and a traceback
    that a CI step reads as 'a calibration gate failed'."""
    import calcore.cli as cli

    def broken(args):
        raise TypeError("unsupported operand")

    monkeypatch.setitem(cli._COMMANDS, "metrics", broken)
    monkeypatch.delenv("CALCORE_DEBUG", raising=False)
    assert main(["metrics", str(csv_file)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "internal error (TypeError: unsupported operand)" in err and "CALCORE_DEBUG=1" in err
    monkeypatch.setenv("CALCORE_DEBUG", "1")
    assert main(["metrics", str(csv_file)]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_a_file_with_a_split_column_is_evaluated_on_its_test_rows_by_default(csv_file, capsys):
    """A gate on the calibration rows of a fitted calibrator reads optimistic numbers, so
    without --split the test rows are evaluated (said on stderr and in the JSON);
    --split all mixes the two on purpose."""
    path, probs, labels = csv_file
    want = {
        "test": calcore.Predictions.from_probs(probs[100:], labels[100:]),
        "calib": calcore.Predictions.from_probs(probs[:100], labels[:100]),
        "all": calcore.Predictions.from_probs(probs, labels),
    }
    runs = [("test", []), ("test", ["--split", "test"])]
    runs += [("calib", ["--split", "calib"]), ("all", ["--split", "all"])]
    for split, args in runs:
        assert main(["metrics", str(path), "--json", *args]) == 0
        captured = capsys.readouterr()
        out = json.loads(captured.out)
        assert out["split"] == split and out["n"] == want[split].n_samples
        assert out["conf_ece"] == pytest.approx(calcore.confidence_ece(want[split]), abs=1e-12)
        said = "the test rows of split column 'split' (--split calib" in captured.err
        assert said == (args == [])
    # check: the same rows, and the split in its JSON
    assert main(["check", str(path), "--max", "conf_ece=1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["split"] == "test"


def test_a_file_without_a_split_column_is_every_row_and_says_nothing(tmp_path, capsys):
    path = tmp_path / "plain.csv"
    path.write_text("label,p0,p1\n0,0.8,0.2\n1,0.3,0.7\n1,0.4,0.6\n")
    assert main(["metrics", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["split"] is None and json.loads(captured.out)["n"] == 3
    assert "split" not in captured.err


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])  # loaded whole, and streamed
def test_a_split_column_without_test_rows_is_refused_with_the_choices(tmp_path, capsys, suffix):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {"label": [0, 1, 1], "p0": [0.8, 0.3, 0.4], "p1": [0.2, 0.7, 0.6], "split": ["calib"] * 3}
    )
    path = tmp_path / f"only_calib{suffix}"
    if suffix == ".csv":
        table.to_pandas().to_csv(path, index=False)
    else:
        pq.write_table(table, path)
    for command in (["metrics"], ["check", "--max", "conf_ece=1"]):
        assert main([command[0], str(path), *command[1:]]) == 2
        err = capsys.readouterr().err
        assert f"only_calib{suffix}: the split column 'split' has no test rows" in err
        assert "--split calib" in err and "--split all" in err and err.count("\n") == 2
    assert main(["metrics", str(path), "--split", "calib", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 3


def test_calibrate_prints_warnings_first_then_aligned_fit_details_and_a_better_column(
    csv_file, capsys
):
    path, _, _ = csv_file
    argv = ["calibrate", str(path), "--method", "ts", "--param", "max_temperature=1.0001"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ts (min_temperature=0.01, max_temperature=1): fitted on 100 rows")
    # the warning comes before the details it explains
    assert lines[2] == "Warnings:" and "hit the upper bound" in lines[3]
    fit = lines[lines.index("Fit:") + 1 : lines.index("", lines.index("Fit:"))]
    keys = [line.split(":")[0].strip() for line in fit]
    assert {"temperature", "converged", "at_bound"} <= set(keys)
    starts = {line.index(line.split(":", 1)[1].strip()) for line in fit}
    assert len(starts) == 1  # the values are aligned
    assert "  at_bound:    yes" in fit or any(line.split() == ["at_bound:", "yes"] for line in fit)
    assert not any("{" in line or "np.float64" in line for line in fit)  # no raw Python dict
    header = next(line for line in lines if line.strip().startswith("metric"))
    assert header.split()[:4] == ["metric", "better", "before", "after"]
    rows = {line.split()[0]: line.split() for line in lines if line.startswith("  ")}
    assert rows["Accuracy"][1] == "higher" and rows["NLL"][1] == "lower"


def test_calibrate_json_keeps_full_precision_and_lists_the_fit_warnings(csv_file, capsys):
    path, _, _ = csv_file
    argv = ["calibrate", str(path), "--method", "ts", "--param", "max_temperature=1.0001"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fit_info"]["temperature"] == 1.0001  # not rounded for people
    assert len(out["warnings"]) == 1 and "hit the upper bound" in out["warnings"][0]


def test_every_help_example_runs_as_written(tmp_path, monkeypatch, repo_root, capsys):
    """The examples at the end of ``calcore --help`` and each command's help are real: each
    runs from a clone's root (here a folder holding its assets) and exits as it says."""
    import shlex

    from calcore.cli import EXAMPLES, build_parser

    (tmp_path / "assets").symlink_to(repo_root / "assets")
    monkeypatch.chdir(tmp_path)
    helps = {None: build_parser().format_help()}
    subparsers = build_parser()._subparsers._group_actions[0].choices
    helps |= {name: sub.format_help() for name, sub in subparsers.items()}
    for command in ("metrics", "calibrate", "apply", "check", "compare", "schema"):
        for line, what in EXAMPLES[command]:
            assert f"  {line}\n      {what}\n" in helps[command] + "\n", line
            argv = shlex.split(line)
            assert argv[0] == "calcore"
            code = main(argv[1:])
            err = capsys.readouterr().err
            assert code in ((0, 1) if command == "check" else (0,)), (line, err)
    assert "calcore metrics assets/cifar10_resnet110.npz" in helps[None]
    assert (tmp_path / "ts.json").is_file() and (tmp_path / "recalibrated.csv").is_file()
