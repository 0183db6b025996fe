"""Files people export from spreadsheets: a workbook under any name is recognised and the
message says to save it as CSV; numbers with a decimal comma are named (file, column,
first cell) instead of "no score columns found", and converted exactly when asked."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

import calcore
import calcore.io


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


XLSX = _zip({"[Content_Types].xml": b"<Types/>", "xl/workbook.xml": b"<workbook/>"})
ODS = _zip({"mimetype": b"application/vnd.oasis.opendocument.spreadsheet", "content.xml": b""})
XLS = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1024)


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (XLSX, "an Excel workbook (.xlsx)"),
        (ODS, "an OpenDocument spreadsheet (.ods)"),
        (XLS, "an Excel 97-2003 workbook (.xls)"),
    ],
)
@pytest.mark.parametrize("name", ["preds.csv", "preds.npz", "preds.parquet", "preds.xlsx"])
def test_a_workbook_under_any_name_is_told_to_become_a_csv(data, kind, name, tmp_path):
    path = tmp_path / name
    path.write_bytes(data)
    for source in (path, io.BytesIO(data)):
        with pytest.raises(calcore.CalcoreError) as caught:
            calcore.load_predictions(source, name=name)
        message = str(caught.value)
        assert message.startswith(f"{name}: this is {kind}, not a CSV, Parquet or NPZ file.")
        assert "File > Save As > CSV UTF-8" in message and ".npz or .parquet" not in message
        assert caught.value.option == "file" and message.endswith(caught.value.fix)
    with pytest.raises(calcore.CalcoreError, match="Save it as CSV"):
        calcore.inspect_table(path)


def test_an_npz_or_a_plain_zip_is_not_taken_for_a_workbook(tmp_path):
    buffer = io.BytesIO()
    np.savez(buffer, probs=np.array([[0.9, 0.1], [0.2, 0.8]]), labels=np.array([0, 1]))
    assert calcore.load_predictions(buffer.getvalue(), name="p.npz").n_samples == 2
    with pytest.raises(calcore.CalcoreError) as caught:
        calcore.load_predictions(_zip({"notes.txt": b"x"}), name="p.csv")
    assert "workbook" not in str(caught.value)


EU = "label;p_cat;p_dog\ncat;0,75;0,25\ndog;0,1;0,9\ncat;1;0\n"
EU_UNPREFIXED = "id;label;score_cat;score_dog\n7;cat;0,75;0,25\n8;dog;,1;9,0e-1\n"


@pytest.mark.parametrize("text", [EU, EU_UNPREFIXED])
def test_decimal_commas_are_named_with_file_column_and_first_cell(text):
    data = text.encode()
    schema = calcore.inspect_table(data, name="eu.csv")
    (problem,) = schema.problems
    column = "p_cat" if text is EU else "score_cat"
    other = "p_dog" if text is EU else "score_dog"
    assert problem.startswith(
        f"eu.csv: column '{column}' (and 1 more: '{other}') holds numbers written with a "
        f"decimal comma (line 2: '0,75'), with ';' between the fields"
    )
    assert "no score columns" not in problem and problem.option == "decimal"
    with pytest.raises(calcore.CalcoreError) as caught:
        calcore.load_predictions(data, name="eu.csv")
    assert str(caught.value) == problem and caught.value.option == "decimal"


@pytest.mark.parametrize("text", [EU, EU_UNPREFIXED])
def test_the_conversion_is_exact_and_loads_as_the_decimal_point_file(text):
    converted = calcore.io.decimal_comma_to_point(text.encode(), name="eu.csv")
    assert calcore.inspect_table(converted).problems == ()
    expected = text.replace("0,75", "0.75").replace("0,25", "0.25").replace("0,1", "0.1")
    expected = expected.replace("0,9", "0.9").replace(";,1", ";.1").replace("9,0e-1", "9.0e-1")
    assert converted.decode() == expected
    got = calcore.load_predictions(converted)
    want = calcore.load_predictions(expected.encode())
    np.testing.assert_array_equal(got.probs, want.probs)
    np.testing.assert_array_equal(got.labels, want.labels)


def test_only_the_number_columns_change():
    text = 'note;label;p_a;p_b\n"1,5 kg; boxed";a;0,5;0,5\nx;1,5;0,4;0,6\n'
    converted = calcore.io.decimal_comma_to_point(text.encode()).decode()
    # the label column holds '1,5' in one row but 'a' in another: not a number column
    assert converted.splitlines()[2] == "x;1,5;0.4;0.6"
    assert converted.splitlines()[1] == '"1,5 kg; boxed";a;0.5;0.5'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("label,p_a,p_b\na,0.5,0.5\n", "separated by commas"),
        ("label;p_a;p_b\na;0.5;0.5\n", "no column holds numbers with a decimal comma"),
    ],
)
def test_the_conversion_refuses_files_it_does_not_apply_to(text, message):
    with pytest.raises(calcore.CalcoreError, match=message):
        calcore.io.decimal_comma_to_point(text.encode())


def test_a_semicolon_file_with_decimal_points_loads_as_before():
    data = b"label;p_a;p_b\na;0.5;0.5\nb;0.25;0.75\n"
    assert calcore.inspect_table(data).problems == ()
    assert calcore.load_predictions(data).n_samples == 2


@pytest.mark.parametrize(
    ("header", "option", "fix"),
    [
        ("y,label,p_a,p_b", "label_column", "Pass label_column='<name>' to choose one."),
        ("id,p_a,p_b", "label_column", "Otherwise pass label_column='<name>'."),
        ("label,p_a,logit_a", "score_columns", "Pass score_columns=[...]"),
    ],
)
def test_detection_problems_name_the_option_that_fixes_them(header, option, fix):
    n = header.count(",") + 1
    data = (header + "\n" + ",".join(["1"] + ["0.5"] * (n - 1)) + "\n").encode()
    problem = calcore.inspect_table(data).problems[0]
    assert problem.option == option and problem.fix.startswith(fix)
    assert problem.endswith(problem.fix)
    with pytest.raises(calcore.CalcoreError) as caught:
        calcore.load_predictions(data)
    assert caught.value.option == option and str(caught.value).endswith(caught.value.fix)
