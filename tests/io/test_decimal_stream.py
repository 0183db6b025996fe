"""Decimal commas in files read from disk: the streamed reader (:func:`calcore.scan`, what
the dashboard uses for datasets on the server) says what the whole-file loader says (file,
column, first cell, option and fix) instead of "no score columns found"."""

from __future__ import annotations

import numpy as np
import pytest

import calcore
import calcore.io

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


def _pair(tmp_path, n: int = 2_000):
    """The same predictions as a ';'-separated CSV with decimal points and with decimal
    commas: every digit a float has (repr), exponents, signs and integers included."""
    rng = np.random.default_rng(11)
    probs = rng.dirichlet([0.3, 0.3, 0.3], size=n)  # some tiny values: exponents in repr
    probs[::97] = [1, 0, 0]  # integers among them
    labels = rng.integers(0, 3, n)
    rows = [
        f"{'abc'[y]};" + ";".join(repr(float(v)) for v in p)
        for y, p in zip(labels, probs, strict=True)
    ]
    point = "label;p_a;p_b;p_c\n" + "\n".join(rows) + "\n"
    assert "e-" in point  # the exponent form is exercised
    comma = point.replace(".", ",")
    (tmp_path / "point").mkdir()
    (tmp_path / "comma").mkdir()
    (tmp_path / "point" / "p.csv").write_text(point)
    (tmp_path / "comma" / "p.csv").write_text(comma)
    return tmp_path / "point" / "p.csv", tmp_path / "comma" / "p.csv"


def _streamed(path, batch_rows=300, **options):
    batches = list(calcore.scan(path, batch_rows=batch_rows, **options).batches())
    return (
        np.concatenate([b.preds.probs for b in batches]),
        np.concatenate([b.preds.labels for b in batches]),
    )


def test_decimal_comma_reads_exactly_the_numbers_of_the_point_file(tmp_path):
    point, comma = _pair(tmp_path)
    want = calcore.load_predictions(point)
    got = calcore.load_predictions(comma, decimal=",")
    np.testing.assert_array_equal(got.probs, want.probs)  # exactly equal, not close
    np.testing.assert_array_equal(got.labels, want.labels)
    splits = calcore.io.load_splits(comma, decimal=",")
    np.testing.assert_array_equal(splits["all"].probs, want.probs)
    assert calcore.inspect_table(comma, decimal=",").problems == ()


@pytest.mark.parametrize("batch_rows", [300, 2], ids=["pieces_of_300_rows", "of_2_rows"])
def test_a_streamed_decimal_comma_file_reads_the_same_numbers(tmp_path, monkeypatch, batch_rows):
    import calcore.io._csv_stream as csv_stream

    monkeypatch.setattr(csv_stream, "MIN_PIECE_BYTES", 16)  # pieces of about batch_rows lines
    point, comma = _pair(tmp_path)
    want_probs, want_labels = _streamed(point)
    got_probs, got_labels = _streamed(comma, batch_rows, decimal=",")
    np.testing.assert_array_equal(got_probs, want_probs)
    np.testing.assert_array_equal(got_labels, want_labels)
    np.testing.assert_array_equal(got_probs, calcore.load_predictions(point).probs)


def test_a_directory_of_decimal_comma_files_streams_with_the_option(tmp_path):
    point, comma = _pair(tmp_path, n=400)
    (tmp_path / "comma" / "q.csv").write_bytes(comma.read_bytes())
    probs, _ = _streamed(tmp_path / "comma", decimal=",")
    once = calcore.load_predictions(point).probs
    np.testing.assert_array_equal(probs, np.concatenate([once, once]))


def test_a_decimal_point_in_a_decimal_comma_file_is_named(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text("label;p_a;p_b\na;0,5;0,5\nb;0.25;0,75\n")
    for read in (calcore.load_predictions, lambda p, **o: list(calcore.scan(p, **o).batches())):
        with pytest.raises(calcore.CalcoreError) as caught:
            read(path, decimal=",")
        message = str(caught.value)
        assert message.startswith("mixed.csv, line 3, column 'p_a': value '0.25' is not a number")
        assert "with a ',' decimal comma" in message


def test_decimal_comma_is_refused_for_comma_separated_fields(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("label,p_a,p_b\na,0.5,0.5\n")
    for read in (calcore.load_predictions, calcore.scan, calcore.inspect_table):
        with pytest.raises(calcore.CalcoreError, match="c.csv: decimal=',' was given, but the"):
            read(path, decimal=",")
    with pytest.raises(calcore.CalcoreError, match="decimal must be '.' or ','"):
        calcore.load_predictions(path, decimal=";")
