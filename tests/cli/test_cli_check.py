"""The ``calcore check`` command: calibration gates for CI (exit codes, reports, JSON)."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import calcore
import calcore.cli.gates
from calcore import cli
from calcore.cli import main

# Four rows whose metrics are computed by hand: confidences 0.9, 0.9, 0.8, 0.8; the argmax
# is right on rows 1, 3 and 4, so accuracy = 3/4; with one bin the confidence ECE is
# |mean confidence - accuracy| = |0.85 - 0.75| = 0.1.
FOUR_ROWS = "label,p_a,p_b\na,0.9,0.1\nb,0.9,0.1\nb,0.2,0.8\nb,0.2,0.8\n"
ACCURACY = 0.75
CONF_ECE_ONE_BIN = 0.1


@pytest.fixture()
def four(tmp_path):
    path = tmp_path / "four.csv"
    path.write_text(FOUR_ROWS)
    return path


@pytest.fixture()
def noisy(tmp_path):
    """300 rows of 3-class predictions (probabilities exact to 4 decimals), and their arrays."""
    rng = np.random.default_rng(11)
    probs = np.round(rng.dirichlet([2.0, 1.0, 1.0], size=300), 4)
    probs[:, 2] = np.round(1 - probs[:, 0] - probs[:, 1], 4)
    labels = np.array([rng.choice(3, p=p / p.sum()) for p in probs])
    lines = ["label,p_a,p_b,p_c"]
    lines += [
        f"{'abc'[y]},{p[0]:.4f},{p[1]:.4f},{p[2]:.4f}" for p, y in zip(probs, labels, strict=True)
    ]
    path = tmp_path / "noisy.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, calcore.Predictions.from_probs(probs, labels)


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(argv, capsys):
    code, out, err = run([*argv, "--json"], capsys)
    return code, json.loads(out)


# ------------------------------------------------------------------------------ exit codes


def test_limits_just_above_and_below_a_hand_computed_value(four, capsys):
    both = ["--bins", "1", "--min", f"accuracy={ACCURACY}"]  # equality holds
    code, out, _ = run(
        ["check", four, *both, "--max", f"conf_ece={CONF_ECE_ONE_BIN + 1e-4}"], capsys
    )
    assert code == 0
    assert out.splitlines()[-1] == "2 of 2 gates passed"
    code, out, _ = run(
        ["check", four, *both, "--max", f"conf_ece={CONF_ECE_ONE_BIN - 1e-4}"], capsys
    )
    assert code == 1
    assert out.splitlines()[-1] == "1 of 2 gates passed"
    assert "conf_ece <= 0.0999" in out and "FAIL" in out and "PASS" in out
    code, _, _ = run(["check", four, "--min", f"accuracy={ACCURACY + 1e-4}"], capsys)
    assert code == 1


def test_a_min_and_a_max_on_one_metric_make_a_band(four, capsys):
    code, got = run_json(["check", four, "--min", "accuracy=0.7", "--max", "accuracy=0.8"], capsys)
    assert code == 0 and [g["kind"] for g in got["gates"]] == ["max", "min"]
    # either kind is allowed on any metric: the gate is the user's
    code, _, _ = run(["check", four, "--bins", "1", "--min", "conf_ece=0.09"], capsys)
    assert code == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--max", "ece_of_my_dreams=0.1"], "unknown metric 'ece_of_my_dreams'"),
        (["--max", "top_label_ece=abc"], "finite number; got 'abc'"),
        (["--max", "top_label_ece=nan"], "finite number"),
        (["--min", "accuracy=inf"], "finite number"),
        (["--max", "top_label_ece"], "METRIC=LIMIT"),
        (["--max", "top_label_ece=3"], "lies in [0, 1]"),
        (["--min", "accuracy=-0.5"], "lies in [0, 1]"),
        (["--max", "conf_ece=0.1", "--max", "conf_ece=0.2"], "given twice"),
        ([], "no gate"),
        (["--max", "conf_ece=0.1", "--on", "upper", "--bootstrap", "0"], "--on upper"),
        (["--max", "conf_ece=0.1", "--bootstrap", "1"], "n_resamples must be 0"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(four, tmp_path, capsys, argv, message):
    junit, md = tmp_path / "out.xml", tmp_path / "out.md"
    code, out, err = run(["check", four, *argv, "--junit", junit, "--markdown", md], capsys)
    assert code == 2 and out == ""
    assert err.startswith("calcore: error:") and err.count("\n") == 1
    assert message in err and "Traceback" not in err
    assert not junit.exists() and not md.exists()  # no report on exit 2


def test_unknown_metric_message_lists_the_keys(four, capsys):
    _, _, err = run(["check", four, "--max", "tl_ece=0.1"], capsys)
    assert all(key in err for key in calcore.METRICS)


def test_unreadable_or_bad_input_exit_2_and_writes_no_report(tmp_path, capsys):
    junit = tmp_path / "out.xml"
    bad = tmp_path / "bad.csv"
    bad.write_text("label,p_a,p_b\na,0.5,0.5\nb,abc,0.5\n")
    for source in (tmp_path / "nope.csv", bad):
        code, out, err = run(["check", source, "--max", "conf_ece=0.1", "--junit", junit], capsys)
        assert code == 2 and out == "" and source.name in err
        assert err.startswith("calcore: error:") and err.count("\n") == 1
    assert not junit.exists()
    # a report into a missing folder is refused before the data is read
    code, _, err = run(
        ["check", bad, "--max", "conf_ece=0.1", "--junit", tmp_path / "no/x.xml"], capsys
    )
    assert code == 2 and "no such directory" in err


def test_bad_on_value_is_a_usage_error(four, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", str(four), "--max", "conf_ece=0.1", "--on", "lower"])
    assert exc.value.code == 2


# ----------------------------------------------------------------------- estimate and upper


def test_on_upper_fails_where_the_estimate_passes(noisy, capsys):
    path, preds = noisy
    report = calcore.evaluate(preds, n_resamples=200, seed=0, metrics=["nll", "accuracy"])
    # NLL and accuracy have percentile intervals with the estimate strictly inside (a
    # calibration error's bias-corrected interval can end at its estimate).
    ece, acc = report.intervals["nll"], report.intervals["accuracy"]
    assert ece.estimate < ece.high and acc.low < acc.estimate
    max_limit = round((ece.estimate + ece.high) / 2, 6)  # estimate <= limit < high
    min_limit = round((acc.low + acc.estimate) / 2, 6)  # low < limit <= estimate
    gates = ["--max", f"nll={max_limit}", "--min", f"accuracy={min_limit}"]
    code, got = run_json(["check", path, *gates], capsys)
    assert code == 0 and got["on"] == "estimate" and got["passed"]
    assert [g["low"] for g in got["gates"]] == [None, None]  # no bootstrap by default
    code, got = run_json(["check", path, *gates, "--on", "upper"], capsys)  # 200 resamples
    assert code == 1 and got["on"] == "upper" and not got["passed"]
    tl, ac = got["gates"]
    assert tl["high"] == pytest.approx(ece.high, abs=1e-12) and tl["compared"] == tl["high"]
    assert ac["low"] == pytest.approx(acc.low, abs=1e-12) and ac["compared"] == ac["low"]
    assert not tl["passed"] and not ac["passed"] and "upper end" in tl["reason"]
    # limits outside the interval pass even on its ends
    wide = ["--max", f"nll={ece.high}", "--min", f"accuracy={acc.low}", "--on", "upper"]
    assert run(["check", path, *wide], capsys)[0] == 0


def test_undefined_values_fail_with_a_reason(tmp_path, capsys):
    one = tmp_path / "one.csv"
    one.write_text("label,p_a,p_b\na,0.9,0.1\n")
    argv = ["check", one, "--max", "conf_ece=1", "--on", "upper", "--bootstrap", "20"]
    code, got = run_json(argv, capsys)  # one row: the interval is NaN
    gate = got["gates"][0]
    assert code == 1 and not gate["passed"] and "undefined" in gate["reason"]
    assert (gate["low"], gate["high"], gate["compared"]) == (None, None, None)
    code, got = run_json(["check", one, "--max", "kde_ece=1"], capsys)  # needs 2 rows
    assert code == 1 and got["gates"][0]["estimate"] is None
    assert "not computed" in got["gates"][0]["reason"]


def test_only_the_gated_metrics_are_computed(four, monkeypatch, capsys):
    seen = []

    def spy(preds, **kw):
        seen.append(kw)
        return calcore.evaluate(preds, **kw)

    monkeypatch.setattr(cli, "evaluate", spy)
    gates = ["--max", "classwise_ece=1", "--min", "accuracy=0", "--max", "accuracy=1"]
    assert run(["check", four, *gates], capsys)[0] == 0
    assert seen[-1]["metrics"] == ["accuracy", "classwise_ece"] and seen[-1]["n_resamples"] == 0
    assert run(["check", four, *gates, "--on", "upper", "--bootstrap", "30"], capsys)[0] == 0
    assert seen[-1]["n_resamples"] == 30


def test_a_parquet_file_is_streamed(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    y = np.array([1, 0, 1, 1, 0])
    p = np.array([0.8, 0.3, 0.4, 0.9, 0.6])  # argmax right on rows 1, 2 and 4
    pq.write_table(pa.table({"label": y, "p_spam": p}), tmp_path / "p.parquet")
    code, got = run_json(["check", tmp_path / "p.parquet", "--min", "accuracy=0.6"], capsys)
    assert code == 0 and got["gates"][0]["estimate"] == pytest.approx(0.6)
    assert got["n_rows"] == 5


# -------------------------------------------------------------------------------- outputs


def test_json_schema(four, capsys):
    code, got = run_json(["check", four, "--max", "conf_ece=0.5", "--bootstrap", "20"], capsys)
    assert code == 0
    keys = {"schema_version", "file", "n_rows", "on", "passed", "gates", "notes", "split"}
    assert set(got) == keys
    assert (got["file"], got["n_rows"], got["on"], got["passed"]) == (
        str(four),
        4,
        "estimate",
        True,
    )
    (gate,) = got["gates"]
    keys = {
        "metric",
        "kind",
        "limit",
        "estimate",
        "low",
        "high",
        "compared",
        "passed",
        "reason",
        "slice",
    }
    assert set(gate) == keys
    assert (gate["metric"], gate["kind"], gate["limit"]) == ("conf_ece", "max", 0.5)
    assert gate["compared"] == gate["estimate"] and gate["low"] <= gate["high"]
    assert gate["reason"] is None


def test_text_table(four, capsys):
    argv = ["check", four, "--bins", "1", "--max", "conf_ece=0.05", "--min", "accuracy=0.5"]
    code, out, _ = run(argv, capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{four}: 4 rows, 2 classes; gates on the point estimate")
    row = next(line for line in lines if "conf_ece <= 0.05" in line)
    assert "conf-ECE" in row and "0.100000" in row and "FAIL: estimate 0.1 > 0.05" in row
    assert "PASS" in next(line for line in lines if "accuracy >= 0.5" in line)
    assert lines[-1] == "1 of 2 gates passed"


def test_reports_are_written_on_pass_and_on_fail(four, tmp_path, capsys):
    junit, md = tmp_path / "r" / "calcore.xml", tmp_path / "r" / "summary.md"
    junit.parent.mkdir()
    md.write_text("stale")
    out = ["--junit", junit, "--markdown", md]
    for limit, code in (("0.9", 0), ("0.05", 1)):
        assert run(["check", four, "--max", f"conf_ece={limit}", *out], capsys)[0] == code
        suite = ET.parse(junit).getroot()
        assert suite.get("failures") == str(code)
        assert md.read_text().startswith(f"### calcore check: {1 - code} of 1 gates passed")
    assert sorted(os.listdir(junit.parent)) == ["calcore.xml", "summary.md"]  # no temp files


def test_junit_xml(four, tmp_path, capsys):
    junit = tmp_path / "calcore.xml"
    argv = ["check", four, "--bins", "1", "--junit", junit, "--json"]
    argv += ["--max", "conf_ece=0.05", "--max", "top_label_ece=0.9", "--min", "accuracy=0.8"]
    assert main([str(a) for a in argv]) == 1
    capsys.readouterr()
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("name") == "calcore check"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "2", "0")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "conf_ece <= 0.05",
        "top_label_ece <= 0.9",
        "accuracy >= 0.8",
    ]
    assert {c.get("classname") for c in cases} == {"calcore.check"}
    failures = [c.find("failure") for c in cases]
    assert failures[1] is None
    assert failures[0].get("message") == "conf_ece <= 0.05: estimate 0.1 > 0.05"
    assert failures[2].get("message") == "accuracy >= 0.8: estimate 0.75 < 0.8"
    assert str(four) in failures[0].text
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props == {"file": str(four), "n_rows": "4", "on": "estimate"}


HOSTILE = 'a|b <script>alert(1)<\\script> *x* & "q".csv'


def test_untrusted_file_names_stay_text_in_junit_and_markdown(tmp_path, capsys):
    path = tmp_path / HOSTILE
    path.write_text(FOUR_ROWS)
    junit, md = tmp_path / "calcore.xml", tmp_path / "summary.md"
    argv = ["check", path, "--bins", "1", "--max", "conf_ece=0.05", "--min", "accuracy=0.5"]
    assert run([*argv, "--junit", junit, "--markdown", md], capsys)[0] == 1
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["file"] == str(path)
    text = md.read_text()
    assert "<script>" not in text and "&lt;script&gt;" in text and "a\\|b" in text
    assert "\\*x\\*" in text and "&amp;" in text
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 4  # header, separator, two gates
    assert [line.count("|") for line in table] == [6, 6, 6, 6]  # five cells, no interval
    (about,) = [line for line in text.splitlines() if "script" in line]
    assert about.replace("\\|", "").count("|") == 0  # the name cannot open a table cell
    assert "&lt;\\\\script&gt;" in about  # the backslash is escaped too
    assert "conf\\_ece &lt;= 0\\.05" in text  # only what can start Markdown syntax is escaped
    assert "FAIL" in table[2] and "PASS" in table[3]


def test_junit_replaces_characters_xml_cannot_carry():
    report = calcore.evaluate(
        calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8]], [0, 1]), metrics=["accuracy"]
    )
    gates = calcore.cli.gates.parse_gates(minima=["accuracy=1"])
    result = calcore.cli.gates.check_report(report, gates, file="a\x01b\x1b.csv")
    suite = ET.fromstring(calcore.cli.gates.junit_xml(result))
    assert suite.find("properties/property").get("value") == "a\ufffdb\ufffd.csv"


def test_gates_module_examples_run():
    failed, attempted = doctest.testmod(calcore.cli.gates, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failed == 0


def test_console_script_exit_code(four):
    argv = [sys.executable, "-m", "calcore.cli", "check", str(four), "--min", "accuracy=0.8"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout.rstrip().endswith("0 of 1 gates passed")
