"""calcore.io CSV loading: dialects, detection rules and every error message."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

from calcore import CalcoreError, CalcoreWarning
from calcore.io import LoadReport, inspect_table, load_predictions, load_splits
from calcore.io._source import open_source

GOOD = (
    "label,p_cat,p_dog,p_eel\n"
    "cat,0.7,0.2,0.1\ndog,0.1,0.8,0.1\neel,0.2,0.2,0.6\ncat,0.5,0.25,0.25\n"
)


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


# -- dialects ----------------------------------------------------------------
@pytest.mark.parametrize(
    "transform",
    [
        lambda s: s,
        lambda s: "\ufeff" + s,  # UTF-8 BOM
        lambda s: s.replace("\n", "\r\n"),  # CRLF
        lambda s: s.replace(",", ";"),
        lambda s: s.replace(",", "\t"),
        lambda s: s.replace("0.2,", '"0.2",'),  # quoted numbers
        lambda s: s + "\n\n",  # trailing blank lines
    ],
    ids=["plain", "bom", "crlf", "semicolon", "tab", "quoted", "trailing-blank"],
)
def test_dialects_give_the_same_predictions(tmp_path, transform):
    p = load_predictions(write(tmp_path, "d.csv", transform(GOOD)))
    assert p.class_names == ("cat", "dog", "eel")
    np.testing.assert_array_equal(p.labels, [0, 1, 2, 0])
    np.testing.assert_allclose(p.probs[0], [0.7, 0.2, 0.1])
    assert p.logits is None
    assert p.load_report.delimiter in {",", ";", "\t"}


def test_integer_labels_and_name_labels_agree(tmp_path):
    by_index = GOOD.replace("\ncat,", "\n0,").replace("\ndog,", "\n1,").replace("\neel,", "\n2,")
    a = load_predictions(write(tmp_path, "a.csv", GOOD))
    b = load_predictions(write(tmp_path, "b.csv", by_index))
    np.testing.assert_array_equal(a.labels, b.labels)
    assert (a.load_report.label_kind, b.load_report.label_kind) == ("names", "indices")


def test_prefix_stripping_and_other_columns_kept_as_metadata(tmp_path):
    text = "id,label,prob_cat,prob_dog,note\n1,cat,0.9,0.1,x\n2,dog,0.3,0.7,y\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalcoreWarning)  # kept columns are not warned about
        p = load_predictions(write(tmp_path, "p.csv", text))
    r = p.load_report
    assert p.class_names == ("cat", "dog") and r.prefix == "prob_"
    assert r.ignored_columns == ("id", "note")  # not scores
    assert p.metadata["note"].categories == ("x", "y") and p.metadata["id"].kind == "integer"
    assert any(
        m == "Kept for slicing (not scores): id: integer, 2 values; note: categorical, 2 values."
        for m in r.messages()
    )


def test_no_prefix_uses_numeric_columns_and_keeps_text_and_ids_as_metadata(tmp_path):
    text = "y,image_id,cat,dog,file\ncat,7,0.9,0.1,a.png\ndog,8,0.3,0.7,b.png\n"
    p = load_predictions(write(tmp_path, "n.csv", text))
    assert p.class_names == ("cat", "dog")
    assert set(p.load_report.ignored_columns) == {"image_id", "file"}
    assert set(p.metadata) == {"image_id", "file"}


def test_buffer_bytes_and_uploaded_file_names(tmp_path):
    buf = io.BytesIO(GOOD.encode())
    buf.name = "upload.csv"
    assert load_predictions(buf).load_report.source == "upload.csv"
    assert load_predictions(GOOD.encode()).load_report.source == "<upload>"
    assert load_predictions(GOOD.encode(), name="mine").load_report.source == "mine"


# -- scores kind -------------------------------------------------------------
def test_auto_detects_logits_and_keeps_them(tmp_path):
    text = "label,logit_a,logit_b\na,2.0,-1.0\nb,0.5,3.0\n"
    p = load_predictions(write(tmp_path, "l.csv", text))
    r = p.load_report
    assert r.scores_kind == "logits" and "named 'logit_*'" in r.scores_reason
    z = np.array([[2.0, -1.0], [0.5, 3.0]])
    np.testing.assert_allclose(p.logits, z)
    np.testing.assert_allclose(p.probs, np.exp(z) / np.exp(z).sum(1, keepdims=True), atol=1e-15)


def test_auto_detects_probs_when_rows_sum_to_one(tmp_path):
    r = load_predictions(write(tmp_path, "p.csv", GOOD)).load_report
    assert r.scores_kind == "probs" and "sum to 1" in r.scores_reason


def test_auto_does_not_guess_logits_for_unnormalised_rows(tmp_path):
    text = "label,p_a,p_b\na,0.5,0.2\nb,0.4,0.6\n"
    with pytest.raises(
        CalcoreError,
        match=r"u\.csv, line 2: probabilities sum to 0\.7.*renormalize=True.*scores='logits'",
    ):
        load_predictions(write(tmp_path, "u.csv", text))


def test_logits_given_as_probs_is_an_error_naming_the_cell(tmp_path):
    text = "label,p_a,p_b\na,0.5,0.5\nb,2.5,-1\n"
    with pytest.raises(
        CalcoreError,
        match=r"lg\.csv, line 3, column 'p_b': probability -1\.0 is negative.*scores='logits'",
    ):
        load_predictions(write(tmp_path, "lg.csv", text), scores="probs")


def test_renormalize_reports_rows_and_worst_deviation(tmp_path):
    text = "label,p_a,p_b\na,0.5,0.4\nb,0.4,0.6\na,0.6,0.6\n"
    with pytest.warns(CalcoreWarning, match=r"2 row\(s\) did not sum to 1.*0\.2"):
        p = load_predictions(write(tmp_path, "r.csv", text), renormalize=True)
    assert p.load_report.renormalized_rows == 2
    assert p.load_report.max_row_deviation == pytest.approx(0.2)
    np.testing.assert_allclose(p.probs.sum(axis=1), 1.0)


# -- binary shortcut ---------------------------------------------------------
def test_binary_shortcut_with_01_labels(tmp_path):
    p = load_predictions(write(tmp_path, "b.csv", "label,p_spam\n1,0.9\n0,0.2\n"))
    assert p.class_names == ("not spam", "spam")
    np.testing.assert_allclose(p.probs, [[0.1, 0.9], [0.8, 0.2]])
    np.testing.assert_array_equal(p.labels, [1, 0])
    assert p.load_report.binary_shortcut


def test_binary_shortcut_with_string_labels_and_positive_class(tmp_path):
    text = "label,p_dog\ndog,0.9\ncat,0.2\n"
    p = load_predictions(write(tmp_path, "b.csv", text))
    assert p.class_names == ("cat", "dog")
    np.testing.assert_array_equal(p.labels, [1, 0])
    text = "label,score\nham,0.9\nspam,0.2\n"
    with pytest.raises(CalcoreError, match="positive_class"):
        load_predictions(write(tmp_path, "c.csv", text))
    p = load_predictions(write(tmp_path, "c.csv", text), positive_class="ham")
    assert p.class_names == ("spam", "ham")
    np.testing.assert_array_equal(p.labels, [1, 0])


def test_binary_logit_column(tmp_path):
    p = load_predictions(write(tmp_path, "b.csv", "label,logit_yes\n1,2.0\n0,-3.0\n"))
    np.testing.assert_allclose(p.probs[:, 1], 1 / (1 + np.exp([-2.0, 3.0])))


def test_binary_probability_out_of_range(tmp_path):
    with pytest.raises(
        CalcoreError, match=r"bb\.csv, line 3, column 'p_yes': probability 1\.5 is outside"
    ):
        load_predictions(write(tmp_path, "bb.csv", "label,p_yes\n1,0.5\n0,1.5\n"), scores="probs")


# -- splits ------------------------------------------------------------------
SPLIT = "label,Split,p_a,p_b\na,calib,0.9,0.1\nb,TEST,0.2,0.8\na,val,0.6,0.4\nb,eval,0.3,0.7\n"


@pytest.mark.filterwarnings("ignore::calcore.CalcoreWarning")
def test_split_selection_and_load_splits(tmp_path):
    path = write(tmp_path, "s.csv", SPLIT)
    calib = load_predictions(path, split="calib")
    assert calib.n_samples == 2 and calib.load_report.split_selected == "calib"
    everything = load_predictions(path)
    assert everything.n_samples == 4
    assert "all rows loaded" in " ".join(everything.load_report.messages())
    splits = load_splits(path)
    assert set(splits) == {"calib", "test"}
    assert splits["calib"].class_names == splits["test"].class_names
    np.testing.assert_array_equal(splits["test"].labels, [1, 1])


def test_load_splits_without_split_column_returns_all(tmp_path):
    assert set(load_splits(write(tmp_path, "g.csv", GOOD))) == {"all"}


@pytest.mark.filterwarnings("ignore::calcore.CalcoreWarning")
def test_split_selection_keeps_file_line_numbers_in_errors(tmp_path):
    text = SPLIT + "a,test,0.5,nan\n"
    with pytest.raises(CalcoreError, match=r"s\.csv, line 6, column 'p_b': probability value nan"):
        load_predictions(write(tmp_path, "s.csv", text), split="test")
    load_predictions(write(tmp_path, "s.csv", text), split="calib")  # the bad row is a test row


def test_unknown_split_value(tmp_path):
    text = SPLIT + "a,train,0.5,0.5\n"
    with pytest.raises(
        CalcoreError, match=r"s\.csv, line 6, column 'Split': split value 'train' is not known"
    ):
        load_predictions(write(tmp_path, "s.csv", text))


# -- structural errors -------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (b"", r"e\.csv: the file is empty \(0 bytes\)"),
        (b"label,p_a,p_b\n", r"e\.csv: the file has a header \(line 1\) but no data rows"),
        (
            b"label,p_a,p_a\na,0.5,0.5\n",
            r"e\.csv: header \(line 1\) has duplicate column name\(s\): 'p_a'",
        ),
        (b",label,p_a,p_b\n0,a,0.5,0.5\n", r"e\.csv: header \(line 1\) has blank column name"),
        (b"id,p_a,p_b\n1,0.5,0.5\n", r"e\.csv: no label column found.*label_column="),
        (
            b"label,y,p_a,p_b\na,a,0.5,0.5\n",
            r"e\.csv: label column is ambiguous: \['label', 'y'\].*label_column=",
        ),
        (b"label,p_a\nb,0.5\nc,0.5\nd,0.1\n", r"e\.csv: one score column.*'b', 'c', 'd'"),
    ],
    ids=[
        "empty",
        "header-only",
        "duplicate",
        "blank",
        "no-label",
        "ambiguous",
        "one-class-3-labels",
    ],
)
def test_structural_errors(tmp_path, content, pattern):
    with pytest.raises(CalcoreError, match=pattern):
        load_predictions(write(tmp_path, "e.csv", content))


def test_fewer_than_two_classes(tmp_path):
    text = "label,p_a,note\na,1.0,x\n"
    with pytest.raises(CalcoreError, match=r"one\.csv.*single column|one score column|2 classes"):
        load_predictions(write(tmp_path, "one.csv", "label\na\n"))
    with pytest.raises(CalcoreError, match=r"f\.csv, line 2, column 'p_a': probability"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalcoreWarning)
            load_predictions(write(tmp_path, "f.csv", text.replace("1.0", "1.5")), scores="probs")


@pytest.mark.parametrize(
    ("cell", "pattern"),
    [
        ('"1,234"', r"line 3, column 'p_b': value '1,234' is not a number"),
        ("abc", r"line 3, column 'p_b': value 'abc' is not a number"),
        ("", r"line 3, column 'p_b': probability value nan is not a finite number"),
        ("inf", r"line 3, column 'p_b': .*value inf is not a finite number"),
        ("-0.1", r"line 3, column 'p_b': probability -0\.1 is negative"),
    ],
    ids=["thousands", "text", "empty", "inf", "negative"],
)
def test_bad_cells_are_named(tmp_path, cell, pattern):
    text = f"label,p_a,p_b\na,0.5,0.5\nb,0.5,{cell}\na,0.2,0.8\n"
    with pytest.raises(CalcoreError, match=r"cells\.csv, " + pattern):
        load_predictions(write(tmp_path, "cells.csv", text), scores="probs")


def test_spaces_around_numbers_are_accepted(tmp_path):
    p = load_predictions(write(tmp_path, "sp.csv", "label,p_a,p_b\na, 0.25 ,0.75\n"))
    np.testing.assert_allclose(p.probs, [[0.25, 0.75]])


def test_decimal_comma_in_semicolon_file(tmp_path):
    text = "label;p_a;p_b\na;0.5;0.5\nb;0,25;0.75\n"
    with pytest.raises(
        CalcoreError, match=r"dc\.csv, line 3, column 'p_a': value '0,25' is not a number"
    ):
        load_predictions(write(tmp_path, "dc.csv", text))


def test_unquoted_thousands_separator_gives_extra_field(tmp_path):
    text = "label,p_a,p_b\na,0.5,0.5\nb,1,234,0.5\n"
    with pytest.raises(
        CalcoreError, match=r"x\.csv, line 3: 4 fields but the header has 3.*thousands"
    ):
        load_predictions(write(tmp_path, "x.csv", text))


def test_truncated_last_line(tmp_path):
    text = "label,p_a,p_b\na,0.5,0.5\nb,0.5"
    with pytest.raises(
        CalcoreError,
        match=r"t\.csv, line 3: 2 field\(s\) but the header has 3.*column\(s\) 'p_b'.*cut off",
    ):
        load_predictions(write(tmp_path, "t.csv", text))


def test_non_utf8_bytes_name_offset_and_line(tmp_path):
    data = b"label,p_a,p_b\na,0.5,0.5\ncaf\xe9,0.5,0.5\n"
    with pytest.raises(
        CalcoreError,
        match=r"u8\.csv, line 3, column 'label': byte 27 \(0xe9\) is not valid UTF-8.*UTF-8",
    ):
        load_predictions(
            write(tmp_path, "u8.csv", data), label_column="label", score_columns=["p_a", "p_b"]
        )
    with pytest.raises(CalcoreError, match=r"h\.csv, line 1: byte 1 \(0xff\) is not valid UTF-8"):
        load_predictions(write(tmp_path, "h.csv", b"l\xffabel,p_a\n"))


def test_label_not_a_class_lists_the_classes(tmp_path):
    text = GOOD + "fox,0.2,0.3,0.5\n"
    with pytest.raises(
        CalcoreError,
        match=r"g\.csv, line 6, column 'label': label 'fox' is not a class; "
        r"valid classes are 'cat', 'dog', 'eel'",
    ):
        load_predictions(write(tmp_path, "g.csv", text))
    with pytest.raises(
        CalcoreError, match=r"i\.csv, line 2, column 'label': label '3' is not a class"
    ):
        load_predictions(write(tmp_path, "i.csv", "label,p_a,p_b,p_c\n3,0.2,0.3,0.5\n"))


def test_absent_classes_are_reported_and_warned(tmp_path):
    text = "label,p_a,p_b,p_c\na,0.2,0.3,0.5\nb,0.2,0.3,0.5\n"
    with pytest.warns(CalcoreWarning, match=r"1 class\(es\) never occur.*'c'"):
        p = load_predictions(write(tmp_path, "a.csv", text))
    assert p.load_report.absent_classes == ("c",)


def test_report_is_frozen_and_has_messages(tmp_path):
    r = load_predictions(write(tmp_path, "g.csv", GOOD)).load_report
    assert isinstance(r, LoadReport)
    with pytest.raises(AttributeError):
        r.source = "x"
    text = " ".join(r.messages())
    assert "4 of 4 rows" in text and "prefix 'p_' stripped" in text


# -- inspect_table -----------------------------------------------------------
def test_inspect_table_reports_detection_without_raising(tmp_path):
    s = inspect_table(write(tmp_path, "s.csv", SPLIT.replace("label", "target")))
    assert s.label_column == "target" and s.split_column == "Split"
    assert s.class_columns == ("p_a", "p_b") and s.class_names == ("a", "b")
    assert s.scores_guess == "probs" and s.n_rows == 4
    assert s.preview[0] == {"target": "a", "Split": "calib", "p_a": "0.9", "p_b": "0.1"}
    amb = inspect_table(b"label,y,p_a,p_b\na,a,0.5,0.5\n", name="amb.csv")
    assert amb.label_column is None and "ambiguous" in amb.problems[0]
    logit = inspect_table(b"label,a,b\na,2.5,-1\n")
    assert logit.scores_guess == "logits"


# -- reader edge cases (pandas' C parser behind a strict front) ---------------
@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ("a,0.5,0.5,\nb,0.5,0.5,x\n", r"line 2: 4 fields but the header has 3"),  # trailing delim
        ("b,1,234,0.5\na,0.5,0.5\n", r"line 2: 4 fields but the header has 3"),  # long first line
        ("a,0.5,0.5\nb,0.5,0.5,\n", r"line 3: 4 fields but the header has 3"),
        ("a,0.5,0.5\n   \nb,0.5,0.5\n", r"line 3: 1 field\(s\) but the header has 3"),
        ('a,"0.5,0.5\nb,0.5,0.5\n', r"line 2: 2 field\(s\) but the header has 3"),
        ("a,0.5,0.5\nb,NA,0.5\n", r"line 3, column 'p_a': value 'NA' is not a number"),
        ("a,True,False\n", r"line 2, column 'p_a': value 'True' is not a number"),
        ("a,0x10,0.5\n", r"line 2, column 'p_a': value '0x10' is not a number"),
        ("a,1_0,0.5\n", r"line 2, column 'p_a': value '1_0' is not a number"),
        ("a,0.5,0.5\nb, ,0.5\n", r"line 3, column 'p_a': value ' ' is not a number"),
        ("a,0.5,abc\nc,xyz,0.5\n", r"line 2, column 'p_b': value 'abc' is not a number"),
        ("a,0.5,abc\nb,0.5\n", r"line 3: 2 field\(s\) but the header has 3.*cut off"),
        ("a,0.5,0.5\n\nb,0.5,0.5\n", r"line 3, column 'label': label '' is not a class"),
        ("NA,0.5,0.5\nb,0.5,0.5\n", r"line 2, column 'label': label 'NA' is not a class"),
    ],
)
def test_reader_edge_cases_are_named(tmp_path, body, pattern):
    with pytest.raises(CalcoreError, match=r"ed\.csv, " + pattern):
        load_predictions(write(tmp_path, "ed.csv", "label,p_a,p_b\n" + body))


@pytest.mark.filterwarnings("ignore::calcore.CalcoreWarning")
def test_missing_field_of_an_ignored_column_is_an_error(tmp_path):
    text = "label,p_a,p_b,note\na,0.5,0.5,x\nb,0.5,0.5\n"
    with pytest.raises(CalcoreError, match=r"ig\.csv, line 3: 3 field\(s\) but the header has 4"):
        load_predictions(write(tmp_path, "ig.csv", text))
    ok = load_predictions(
        write(tmp_path, "ok.csv", "label,p_a,p_b,note\na,0.5,0.5,\nb,0.5,0.5,x\n")
    )
    assert ok.n_samples == 2


@pytest.mark.parametrize("cell", ["nan", "NaN", "-nan", "inf", "-Infinity", "INF"])
def test_nan_and_inf_text_reach_validation(tmp_path, cell):
    text = f"label,logit_a,logit_b\na,0.5,0.5\nb,{cell},0.5\n"
    with pytest.raises(CalcoreError, match=r"ni\.csv, line 3, column 'logit_a': .*not a finite"):
        load_predictions(write(tmp_path, "ni.csv", text))


def test_number_forms_integers_and_exact_values(tmp_path):
    text = (
        "label,logit_a,logit_b\na,+0.5,.5\nb,5.,1E-1\na,99999999999999999999999,7\n"
        "b,0.1000000000000000055511151231257827,4.9e-324\n"
    )
    p = load_predictions(write(tmp_path, "nf.csv", text))
    np.testing.assert_array_equal(p.logits, [[0.5, 0.5], [5.0, 0.1], [1e23, 7.0], [0.1, 5e-324]])
    rng = np.random.default_rng(3)
    values = rng.standard_normal((200, 2)) * 10.0 ** rng.integers(-300, 300, (200, 2))
    rows = "\n".join(f"a,{x!r},{y!r}" for x, y in values.tolist())
    p = load_predictions(write(tmp_path, "rt.csv", "label,logit_a,logit_b\n" + rows + "\nb,0,0\n"))
    np.testing.assert_array_equal(p.logits[:-1], values)  # correctly rounded, as float()


@pytest.fixture
def pieces(monkeypatch):
    """Make calcore.io read even tiny files in several pieces (threads)."""
    import calcore.io._csv as csv_module

    monkeypatch.setattr(csv_module, "_MIN_PIECE", 64)
    monkeypatch.setattr(csv_module, "worker_count", lambda: 4)
    return csv_module


def _many_rows(n=200):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), n)
    return [f"{'abc'[i % 3]}," + ",".join(f"{v:.17g}" for v in row) for i, row in enumerate(probs)]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_reading_in_pieces_gives_the_same_predictions(tmp_path, pieces, newline):
    rows = _many_rows()
    rows[5] = '"a",' + rows[5].split(",", 1)[1]
    text = newline.join(["label,p_a,p_b,p_c", *rows]) + newline
    path = write(tmp_path, "pc.csv", text)
    src = open_source(path)
    assert len(pieces._pieces(src, pieces.scan_csv(src))) == 4
    p = load_predictions(path)
    pieces.worker_count = lambda: 1
    q = load_predictions(path)
    np.testing.assert_array_equal(p.probs, q.probs)
    np.testing.assert_array_equal(p.labels, q.labels)
    assert p.probs.flags.c_contiguous and p.n_samples == 200


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (lambda r: r.rsplit(",", 1)[0] + ",abc", r"line 152, column 'p_c': value 'abc'"),
        (lambda r: r.rsplit(",", 1)[0], r"line 152: 3 field\(s\) but the header has 4"),
        (lambda r: r + ",", r"line 152: 5 fields but the header has 4"),
        (lambda r: r + ",0.1", r"line 152: 5 fields but the header has 4"),
        (lambda r: "", r"line 152, column 'label': label '' is not a class"),
        (lambda r: "caf\xe9" + r[1:], r"line 152, column 'label': byte \d+ .*not valid UTF-8"),
    ],
)
def test_errors_in_a_later_piece_name_the_file_line(tmp_path, pieces, change, pattern):
    rows = _many_rows()
    src = open_source(write(tmp_path, "tmp.csv", "label,p_a,p_b,p_c\n" + "\n".join(rows)))
    starts = [a for a, _ in pieces._pieces(src, pieces.scan_csv(src))]
    line = src.data.count(b"\n", 0, starts[-1]) + 1  # the first line of the last piece
    assert line > 100
    rows[line - 2] = change(rows[line - 2])
    text = "label,p_a,p_b,p_c\n" + "\n".join(rows) + "\n"
    path = write(
        tmp_path,
        "lp.csv",
        text.encode("utf-8", "surrogateescape").replace(b"caf\xc3\xa9", b"caf\xe9"),
    )
    with pytest.raises(CalcoreError, match=r"lp\.csv.*" + pattern.replace("152", str(line))):
        load_predictions(path, scores="probs")


def test_quoted_newline_across_a_cut_between_pieces(tmp_path, pieces):
    rows = _many_rows()
    rows[60] = '"a\n' + "x\n" * 3000 + 'y",' + rows[60].split(",", 1)[1]  # spans the cuts
    path = write(tmp_path, "qn.csv", "label,p_a,p_b,p_c\n" + "\n".join(rows) + "\n")
    with pytest.raises(CalcoreError, match=r"qn\.csv, line 62, column 'label': label 'a\\nx"):
        load_predictions(path)


def test_delimiters_inside_quoted_header_names_do_not_decide_the_delimiter(tmp_path):
    text = 'label,"p_a;b;c","p_d;e;f"\na;b;c,0.5,0.5\n"d;e;f",0.25,0.75\n'
    p = load_predictions(write(tmp_path, "q.csv", text))
    assert p.load_report.delimiter == "," and p.class_names == ("a;b;c", "d;e;f")
    np.testing.assert_array_equal(p.labels, [0, 1])


def test_warnings_point_at_the_callers_line(tmp_path):
    path = write(tmp_path, "w.csv", "label,p_a,p_b\na,0.5,0.5\n")
    for load in (load_predictions, load_splits):
        with pytest.warns(CalcoreWarning, match="never occur") as record:
            load(path)
        assert record[0].filename == __file__
