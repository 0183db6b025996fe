"""Percentages are not logits (issue 13, item 5).

Unprefixed score columns whose values look like probabilities in percent (every value in
[0, 100], rows summing to 100) are refused by ``scores="auto"`` instead of being softmaxed
as logits; ``percent=True`` divides them by 100 before the usual checks, in the loader and
in the streamed reader alike (CSV, Parquet, NPZ).
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore
from calcore import CalcoreError
from calcore.io._rows import FIRST_ROWS
from calcore.metrics.registry import IN_MEMORY_METRICS

NAMES = ("cat", "dog", "eel")
LABELS = ["cat", "dog", "eel", "cat", "dog", "eel", "dog", "cat"]
PERCENT = np.array(
    [
        [70.0, 20.0, 10.0],
        [10.0, 80.0, 10.0],
        [20.0, 20.0, 60.0],
        [50.0, 25.0, 25.0],
        [30.0, 60.0, 10.0],
        [10.0, 10.0, 80.0],
        [12.5, 62.5, 25.0],
        [33.3, 33.3, 33.4],
    ]
)


def _csv(path, values, *, header=NAMES, labels=LABELS):
    lines = [",".join(["label", *header])]
    lines += [
        ",".join([y, *(repr(float(v)) for v in row)]) for y, row in zip(labels, values, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _parquet(path, values, *, header=NAMES):
    columns = {"label": pa.array(LABELS)}
    columns.update({c: pa.array(values[:, j]) for j, c in enumerate(header)})
    pq.write_table(pa.table(columns), path)
    return path


def _npz(path, values, *, array="probs"):
    labels = np.array([NAMES.index(y) for y in LABELS])
    np.savez(path, **{array: values}, labels=labels, class_names=np.array(NAMES))
    return path


WRITERS = {"csv": _csv, "parquet": _parquet}
FIRST = {"csv": "line 2", "parquet": "row 0 (0-based)", "npz": "row 0 (0-based)"}


def _file(tmp_path, fmt, values=PERCENT):
    if fmt == "npz":
        return _npz(tmp_path / "preds.npz", values)
    return WRITERS[fmt](tmp_path / f"preds.{fmt}", values)


def _assert_says_percent(message: str, name: str, row: str) -> None:
    assert name in message, message
    assert row in message, message
    assert "percent" in message and "percent=True" in message, message
    assert "divide by 100" in message, message


# -- refused with scores="auto" ---------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_unprefixed_percent_columns_are_refused_naming_file_column_and_row(tmp_path, fmt):
    path = _file(tmp_path, fmt)
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(path)
    message = str(err.value)
    _assert_says_percent(message, path.name, FIRST[fmt])
    assert "column 'cat'" in message and "look like percentages" in message
    assert "--scores probs --percent" in message and "scores='logits'" in message
    with pytest.raises(CalcoreError, match="look like percentages"):
        calcore.load_splits(path)


def test_score_prefix_does_not_say_probabilities_so_percentages_are_refused(tmp_path):
    path = _csv(tmp_path / "scored.csv", PERCENT, header=tuple(f"score_{c}" for c in NAMES))
    with pytest.raises(CalcoreError, match="look like percentages") as err:
        calcore.load_predictions(path)
    assert "column 'score_cat'" in str(err.value)


def test_the_first_value_above_1_is_named(tmp_path):
    values = PERCENT.copy()
    values[0] = [0.0, 0.0, 100.0]  # line 2: a value above 1 in column 'eel'
    values[1] = [1.0, 0.0, 99.0]
    path = _csv(tmp_path / "p.csv", values)
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(path)
    assert "line 2, column 'eel' holds 100.0" in str(err.value)


def test_npz_probs_array_in_percent_is_a_probability_error_that_suggests_percent(tmp_path):
    path = _file(tmp_path, "npz")
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(path)
    message = str(err.value)
    _assert_says_percent(message, path.name, "row 0 (0-based)")
    assert "array 'probs'" in message and "greater than 1" in message


def test_prefixed_probabilities_in_percent_suggest_percent(tmp_path):
    path = _csv(tmp_path / "p.csv", PERCENT, header=tuple(f"p_{c}" for c in NAMES))
    for options in ({}, {"scores": "probs"}):
        with pytest.raises(CalcoreError) as err:
            calcore.load_predictions(path, **options)
        message = str(err.value)
        assert "greater than 1" in message and "look like percentages" in message
        assert "percent=True" in message and "column 'p_cat'" in message


def test_many_classes_in_percent_each_at_most_1_are_noted(tmp_path):
    # 200 classes at 0.5 % each: no value above 1, but rows sum to 100
    values = np.full((len(LABELS), 200), 0.5)
    header = ("cat", "dog", "eel", *(f"c{j}" for j in range(197)))
    path = _csv(tmp_path / "wide.csv", values, header=header)
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(path)
    message = str(err.value)
    assert "sum to 100, not 1" in message and "look like percentages" in message
    preds = calcore.load_predictions(path, percent=True)
    np.testing.assert_allclose(preds.probs, 1 / 200)


def test_streamed_refusal_is_the_loaders_message(tmp_path):
    for fmt in ("csv", "parquet", "npz"):
        path = _file(tmp_path, fmt)
        with pytest.raises(CalcoreError) as loaded:
            calcore.load_predictions(path)
        with pytest.raises(CalcoreError) as streamed:
            calcore.scan(path, batch_rows=3)
        assert str(streamed.value).replace(FIRST_ROWS, "") == str(loaded.value), fmt


# -- percent=True ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csv", "parquet", "npz"])
def test_percent_true_loads_the_values_divided_by_100(tmp_path, fmt):
    path = _file(tmp_path, fmt)
    preds = calcore.load_predictions(path, percent=True)
    np.testing.assert_allclose(preds.probs, PERCENT / 100, rtol=0, atol=1e-15)
    assert preds.class_names == NAMES and preds.logits is None
    report = preds.load_report
    assert report.scores_kind == "probs" and report.percent
    assert any("scores divided by 100 (percent=True)" in m for m in report.messages())
    splits = calcore.load_splits(path, percent=True)
    np.testing.assert_array_equal(splits["all"].probs, preds.probs)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "npz"])
def test_percent_true_streams_as_it_loads(tmp_path, fmt):
    path = _file(tmp_path, fmt)
    want = calcore.evaluate(calcore.load_predictions(path, percent=True), bins=5)
    for batch_rows in (3, 1000):
        stream = calcore.scan(path, percent=True, batch_rows=batch_rows)
        got = calcore.evaluate(stream, bins=5)
        assert got.n == want.n
        for key, value in want.metrics.items():
            if value is None or key in IN_MEMORY_METRICS:  # binary-only, or refitted in memory
                assert got.metrics[key] is None, key
                continue
            assert got.metrics[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
        rows = np.concatenate([b.preds.probs for b in stream.batches()])
        np.testing.assert_allclose(rows, PERCENT / 100, rtol=0, atol=1e-15)


def test_percent_true_with_explicit_probs_and_prefixed_columns(tmp_path):
    path = _csv(tmp_path / "p.csv", PERCENT, header=tuple(f"p_{c}" for c in NAMES))
    for options in ({}, {"scores": "probs"}):
        preds = calcore.load_predictions(path, percent=True, **options)
        np.testing.assert_allclose(preds.probs, PERCENT / 100, rtol=0, atol=1e-15)


def test_percent_true_with_logits_is_refused(tmp_path):
    path = _file(tmp_path, "csv")
    with pytest.raises(CalcoreError, match="percent=True") as err:
        calcore.load_predictions(path, scores="logits", percent=True)
    assert "logits" in str(err.value)
    with pytest.raises(CalcoreError, match="percent=True"):
        calcore.scan(path, scores="logits", percent=True)
    named = _csv(tmp_path / "l.csv", PERCENT, header=tuple(f"logit_{c}" for c in NAMES))
    with pytest.raises(CalcoreError, match="named 'logit_\\*'"):
        calcore.load_predictions(named, percent=True)
    archive = _npz(tmp_path / "l.npz", PERCENT, array="logits")
    with pytest.raises(CalcoreError, match="array is named 'logits'"):
        calcore.load_predictions(archive, percent=True)
    with pytest.raises(CalcoreError, match="array is named 'logits'"):
        calcore.scan(archive, percent=True)


def test_percent_must_be_a_bool(tmp_path):
    with pytest.raises(CalcoreError, match="percent must be True or False"):
        calcore.load_predictions(_file(tmp_path, "csv"), percent="yes")


def test_values_out_of_range_after_division_mention_percent(tmp_path):
    values = PERCENT.copy()
    values[2] = [20.0, 20.0, 65.0]  # line 4 sums to 105
    path = _csv(tmp_path / "p.csv", values)
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(path, percent=True)
    message = str(err.value)
    assert "line 4" in message and "sum to 1.05" in message
    assert "Read as percentages, the file's values were divided by 100" in message
    values[2] = [20.0, -5.0, 85.0]
    with pytest.raises(CalcoreError, match="is negative.*Read as percentages, the file's values"):
        calcore.load_predictions(_csv(path, values), percent=True)


def test_percent_rows_off_by_rounding_can_be_renormalised(tmp_path):
    values = PERCENT.copy()
    values[7] = [33.3, 33.3, 33.3]  # 99.9: not a sum of 100, renormalised on request
    path = _csv(tmp_path / "p.csv", values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", calcore.CalcoreWarning)
        preds = calcore.load_predictions(path, percent=True, renormalize=True)
    assert preds.load_report.renormalized_rows == 1
    np.testing.assert_allclose(preds.probs[7], [1 / 3] * 3)


# -- logits stay logits --------------------------------------------------------------------
def test_real_logits_are_still_read_as_logits(tmp_path):
    logits = np.random.default_rng(0).normal(scale=3.0, size=(len(LABELS), 3))
    assert (logits < 0).any() and (np.abs(logits.sum(axis=1) - 100) > 1).all()
    preds = calcore.load_predictions(_csv(tmp_path / "z.csv", logits))
    assert preds.load_report.scores_kind == "logits"
    np.testing.assert_allclose(preds.logits, logits, rtol=1e-15)


def test_rows_summing_to_100_with_a_negative_value_are_logits(tmp_path):
    values = PERCENT.copy()
    values[3] = [105.0, -10.0, 5.0]  # sums to 100, but a percentage is never negative
    preds = calcore.load_predictions(_csv(tmp_path / "z.csv", values))
    assert preds.load_report.scores_kind == "logits"
    values[3] = [50.0, 25.0, 25.0]
    values[5] = [10.0, 10.0, 81.0]  # one row a point off 100: not percentages
    preds = calcore.load_predictions(_csv(tmp_path / "z.csv", values))
    assert preds.load_report.scores_kind == "logits"


def test_values_above_100_are_logits(tmp_path):
    values = np.array([[150.0, 0.0], [0.0, 100.0]])  # as percentages 150 is impossible
    path = _csv(tmp_path / "z.csv", values, header=("a", "b"), labels=["a", "b"])
    assert calcore.load_predictions(path).load_report.scores_kind == "logits"


# -- one score column (binary shortcut) ----------------------------------------------------
def _binary(tmp_path, values):
    lines = ["label,score_yes"] + [f"{i % 2},{v!r}" for i, v in enumerate(values)]
    path = tmp_path / "binary.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_one_column_in_0_100_with_a_value_above_1_is_refused(tmp_path):
    path = _binary(tmp_path, [0.5, 85.0, 12.0, 40.0])
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(path)
    message = str(err.value)
    _assert_says_percent(message, "binary.csv", "line 3")
    assert "column 'score_yes'" in message and "positive class" in message
    preds = calcore.load_predictions(path, percent=True)
    np.testing.assert_allclose(preds.probs[:, 1], [0.005, 0.85, 0.12, 0.4])
    logits = calcore.load_predictions(path, scores="logits")  # the user's call
    assert logits.load_report.scores_kind == "logits"


def test_one_column_with_a_negative_value_is_logits(tmp_path):
    path = _binary(tmp_path, [-0.5, 85.0, 12.0, 40.0])
    assert calcore.load_predictions(path).load_report.scores_kind == "logits"


# -- inspection ----------------------------------------------------------------------------
def test_inspect_table_does_not_guess_logits_for_percentages(tmp_path):
    schema = calcore.inspect_table(_file(tmp_path, "csv"))
    assert schema.scores_guess is None
    assert "percentages" in schema.scores_reason and "percent=True" in schema.scores_reason


def test_percent_option_is_passed_by_the_dashboard():
    # the dashboard's options are calcore's: it loads with options=LoadOptions(...)
    pytest.importorskip("streamlit")
    from dashboard.calibration import data as dashboard_data

    assert dashboard_data.LoadOptions is calcore.LoadOptions
    assert calcore.LoadOptions().percent is False
    data = io.BytesIO(("label,a,b\na,60,40\nb,25,75\n").encode())
    preds = calcore.load_predictions(data, options=calcore.LoadOptions(percent=True))
    np.testing.assert_allclose(preds.probs, [[0.6, 0.4], [0.25, 0.75]])


def test_percentages_rounded_to_two_decimals_are_refused_too(tmp_path):
    # 33.33 * 3 = 99.99: outside the float tolerance of a row sum, inside the half point.
    path = tmp_path / "rounded.csv"
    path.write_text("label,a,b,c\na,33.33,33.33,33.33\nb,10.5,80.25,9.25\n")
    with pytest.raises(calcore.CalcoreError, match="percent"):
        calcore.load_predictions(str(path))
    # Divided by 100 the first row sums to 0.9999: rescaled on request, as any probabilities.
    with pytest.raises(calcore.CalcoreError, match="renormalize=True"):
        calcore.load_predictions(str(path), percent=True)
    preds = calcore.load_predictions(str(path), percent=True, renormalize=True)
    np.testing.assert_allclose(preds.probs[0], [1 / 3] * 3)
    np.testing.assert_allclose(preds.probs[1], [0.105, 0.8025, 0.0925])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_cli_refuses_percentages_and_reads_them_with_percent(tmp_path, fmt, capsys):
    import json

    from calcore.cli import main

    path = str(_file(tmp_path, fmt))
    assert main(["metrics", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--scores probs --percent" in err, err
    assert main(["metrics", path, "--percent", "--json", "--metric", "accuracy"]) == 0
    got = json.loads(capsys.readouterr().out)
    # Accuracy by hand: the argmax of each percent row against its label.
    hand = np.mean([NAMES[int(np.argmax(r))] == y for r, y in zip(PERCENT, LABELS, strict=True)])
    assert got["accuracy"] == pytest.approx(hand)
