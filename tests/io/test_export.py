"""CSV export: formula-injection safety and an exact round trip through the loader."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calcore
from calcore.io.export import predictions_csv_text, safe_cell, write_json


@pytest.mark.parametrize(
    "text",
    [
        "=1+1",
        "+cmd",
        "-2",
        "@SUM(A1)",
        "\tx",
        "\rx",
        "\nx",
        "  =1+1",  # leading spaces: some spreadsheets trim them before parsing
        "\u00a0=1+1",
        "\uff1dcmd",  # full-width equals sign
        "\uff0b1",
        "\uff0d1",
        "\uff20SUM(A1)",
    ],
)
def test_formula_prefixes_are_neutralised(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["cat", "p_=x", "1.5", "", "'already", " cat", "a=b", "x-1"])
def test_plain_text_is_unchanged(text):
    assert safe_cell(text) == text


def test_round_trip_is_exact_with_hostile_class_names(tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet([0.3, 1.0, 2.0], size=50)
    labels = rng.integers(0, 3, 50)
    names = ['=HYPERLINK("http://evil")', "@cmd", "<script>alert(1)</script>"]
    preds = calcore.Predictions.from_probs(probs, labels, names)
    text = predictions_csv_text(preds)
    header, *rows = list(csv.reader(io.StringIO(text)))
    for row in [header, *rows]:  # no cell of the file starts a formula
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@")), cell
    assert header[0] == "label" and all(cell.startswith("p_") for cell in header[1:])
    back = calcore.load_predictions(io.BytesIO(text.encode()), name="x.csv")
    assert back.class_names == tuple(names)
    np.testing.assert_array_equal(back.probs, preds.probs)  # repr of a float64 reads back exactly
    np.testing.assert_array_equal(back.labels, labels)


def test_bad_prefix_is_refused():
    preds = calcore.Predictions.from_probs([[0.5, 0.5]], [0])
    with pytest.raises(calcore.CalcoreError, match="prefix must be non-empty"):
        predictions_csv_text(preds, prefix="=")


def test_write_json_is_strict(tmp_path):
    with pytest.raises(ValueError, match="Out of range float values"):
        write_json({"x": float("nan")}, tmp_path / "x.json")


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=20))
def test_safe_cell_output_never_starts_a_formula_and_keeps_the_text(text):
    out = safe_cell(text)
    assert out in (text, "'" + text)
    if out == text:  # unchanged cells start with nothing a spreadsheet could evaluate
        triggers = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
        assert not text.lstrip(" \u00a0\u3000").startswith(triggers)
        assert not text.startswith(triggers)
