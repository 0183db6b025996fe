"""Decimal commas in files read from disk: the streamed reader (:func:`calcore.scan`, what
the dashboard uses for datasets on the server) says what the whole-file loader says (file,
column, first cell, option and fix) instead of "no score columns found"."""

from __future__ import annotations

import pytest

import calcore

#: A spreadsheet's export in a locale with decimal commas: ';' between the fields.
EU = "label;p_cat;p_dog\ncat;0,75;0,25\ndog;0,1;0,9\ncat;1;0\n"


def _whole_and_streamed(path):
    """The errors of the whole-file loader and of the streamed reader for ``path``."""
    errors = []
    for read in (calcore.load_predictions, calcore.scan):
        with pytest.raises(calcore.CalcoreError) as caught:
            read(path)
        errors.append(caught.value)
    return errors


def test_a_streamed_decimal_comma_file_gets_the_loaders_message(tmp_path):
    path = tmp_path / "eu.csv"
    path.write_text(EU)
    whole, streamed = _whole_and_streamed(path)
    assert str(streamed) == str(whole)
    assert str(streamed).startswith(
        "eu.csv: column 'p_cat' (and 1 more: 'p_dog') holds numbers written with a decimal "
        "comma (line 2: '0,75'), with ';' between the fields"
    )
    assert "no score columns" not in str(streamed)
    assert (streamed.option, streamed.fix) == (whole.option, whole.fix) == ("decimal", whole.fix)
    assert str(streamed).endswith(streamed.fix)


def test_a_directory_names_the_file_whose_first_rows_have_decimal_commas(tmp_path):
    data = tmp_path / "data"
    (data / "day=1").mkdir(parents=True)
    (data / "day=2").mkdir()
    (data / "day=1" / "a.csv").write_text(EU)
    (data / "day=2" / "b.csv").write_text(EU)
    with pytest.raises(calcore.CalcoreError) as caught:
        calcore.scan(data)
    message = str(caught.value)
    assert message.startswith("day=1/a.csv: column 'p_cat'") and caught.value.option == "decimal"


def test_a_streamed_semicolon_file_with_decimal_points_is_unchanged(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text(EU.replace(",", "."))
    assert calcore.scan(path).class_names == ("cat", "dog")


def test_text_with_commas_is_not_taken_for_numbers(tmp_path):
    # "1,5 kg" is text, not a number with a decimal comma: nothing to report
    path = tmp_path / "notes.csv"
    path.write_text("note;label;p_a;p_b\n1,5 kg;a;0.5;0.5\n2,5 kg;b;0.25;0.75\n")
    assert calcore.scan(path).class_names == ("a", "b")
