"""Hostile text in CSV files (issue 33): first lines that never end, labels that Python's
``int()`` reads but a person would not call a class index, names that print alike, and
names or values long enough to flood a message.

The expectations are written out here (the line, the value, the limit in bytes, the code
points), not derived from the code under test.
"""

from __future__ import annotations

import io
import os
import time
import tracemalloc
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore
from calcore import CalcoreError
from calcore.cli import main
from calcore.foundation.errors import quoted, quoted_list
from calcore.foundation.validation import index_label
from calcore.io._csv_stream import csv_head

LIMIT_TEXT = "4 MiB (4,194,304 bytes)"  # _limits.CSV_FIRST_LINES_BYTES, written out


def _sparse(path, head: bytes, size: int) -> bool:
    """Write ``head`` and extend the file to ``size`` bytes of zeros without writing them;
    False if the file system stores the zeros (the test would write gigabytes)."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return os.stat(path).st_blocks * 512 < 1 << 20


def _bounded(call, *, seconds: float, traced_bytes: int):
    """Run ``call``; return its result or exception, after checking time and traced memory."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        try:
            result = call()
        except CalcoreError as exc:
            result = exc
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - start
    assert elapsed < seconds, f"{elapsed:.1f} s"
    assert peak < traced_bytes, f"peak {peak / 2**20:.0f} MiB traced"
    return result


def _scan(path):
    return lambda: calcore.evaluate(calcore.scan(path), metrics=["accuracy"])


def _cli(path, capsys):
    def run():
        code = main(["metrics", str(path)])
        return code, capsys.readouterr().err

    return run


# -- first lines that end far away -------------------------------------------------------------
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("head", "line"),
    [(b"label,p0", "line 1"), (b"label,p_a,p_b\n", "line 2")],
    ids=["header_never_ends", "first_row_never_ends"],
)
def test_a_sparse_3gb_csv_is_refused_in_seconds_on_little_memory(tmp_path, capsys, head, line):
    """A 3 GiB file of zeros after its first bytes (a pre-allocated or cut copy): the CLI
    and a server dataset (``scan``) refuse it after reading a few MiB, not the whole file
    (before: still reading at 120 s, 1.1 GB)."""
    path = tmp_path / "sparse.csv"
    if not _sparse(path, head, 3 << 30):
        pytest.skip("the file system does not store sparse files")
    loaders = (
        _scan(path),
        lambda: csv_head(str(path), "sparse.csv"),
        lambda: calcore.load_predictions(path),  # read whole after the head: 11 s, 3.3 GB
        lambda: calcore.inspect_table(path),
    )
    for call in loaders:
        err = _bounded(call, seconds=3, traced_bytes=48 << 20)
        assert isinstance(err, CalcoreError), err
        assert str(err).startswith(f"sparse.csv, {line}: ") and "NUL bytes" in str(err)
    code, err = _bounded(_cli(path, capsys), seconds=3, traced_bytes=48 << 20)
    assert code == 2 and err.startswith(f"calcore: error: sparse.csv, {line}: ")


def _wide_header(n_columns: int) -> bytes:
    names = b",".join(b"p_class_%07d" % k for k in range(n_columns))
    return b"label," + names + b"\n" + b"0" + b",0" * n_columns + b"\n"


@pytest.mark.timeout(60)
def test_a_10mb_header_is_refused_with_the_limit(tmp_path, capsys):
    data = _wide_header(650_000)  # 15 bytes a name: a header of about 10 MB
    assert 9 << 20 < data.index(b"\n") < 11 << 20
    path = tmp_path / "wide.csv"
    path.write_bytes(data)
    for call in (_scan(path), lambda: calcore.load_predictions(data, name="wide.csv")):
        err = _bounded(call, seconds=4, traced_bytes=64 << 20)
        assert isinstance(err, CalcoreError), err
        assert str(err).startswith("wide.csv, line 1: the header has no line end")
        assert LIMIT_TEXT in str(err)
    code, err = _bounded(_cli(path, capsys), seconds=4, traced_bytes=64 << 20)
    assert code == 2 and LIMIT_TEXT in err and err.count("\n") == 1


@pytest.mark.timeout(60)
def test_a_header_just_under_the_limit_is_read(tmp_path):
    """About 3.9 MB of header (260,000 columns) is within the limit: the streamed head and
    the loader's scan read every column name."""
    data = _wide_header(260_000)
    assert 3_800_000 < data.index(b"\n") < 4 << 20
    path = tmp_path / "wide.csv"
    path.write_bytes(data)
    head = csv_head(str(path), "wide.csv")
    assert len(head.layout.columns) == 260_001
    assert head.layout.columns[-1] == "p_class_0259999"
    schema = calcore.inspect_table(data, name="wide.csv")
    assert len(schema.class_names) == 260_000


def test_a_first_data_line_over_the_limit_is_refused_in_memory_too():
    row = b"a," + b"0.5," * (1 << 20) + b"0.5\n"  # one line of 4 MiB and more
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(b"label,p_a,p_b\n" + row, name="long.csv")
    assert str(err.value).startswith("long.csv, line 2: the first data line has no line end")
    assert LIMIT_TEXT in str(err.value)


# -- labels: only canonical class indices ------------------------------------------------------
def test_index_label_accepts_only_ascii_digits_without_sign_space_or_leading_zero():
    canonical = {"0": 0, "1": 1, "9": 9, "10": 10, "123": 123}
    others = ["01", "00", "+1", "-1", " 2", "2 ", "1_0", "\u0661", "\uff12", "1.0", "", "１0"]
    assert {t: index_label(t) for t in canonical} == canonical
    assert [index_label(t) for t in others] == [None] * len(others)


# Each value reads as a valid class index with Python's int() (3 classes: 0..2).
NON_CANONICAL = {
    "space": (" 2", "' 2'"),
    "trailing_space": ("1 ", "'1 '"),
    "plus": ("+1", "'+1'"),
    "leading_zero": ("01", "'01'"),
    "underscore": ("0_2", "'0_2'"),
    "arabic_indic": ("\u0661", "'\u0661' (U+0661)"),
    "full_width": ("\uff12", "'\uff12' (U+FF12)"),
}


def _label_file(label: str) -> bytes:
    rows = ["0,0.7,0.2,0.1", f"{label},0.1,0.8,0.1", "2,0.2,0.2,0.6"]
    return ("\n".join(["label,p_cat,p_dog,p_eel", *rows]) + "\n").encode("utf-8")


def _parquet(labels) -> bytes:
    probs = [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]
    columns = {"label": pa.array(labels, pa.string())}
    columns.update({f"p_{c}": [r[k] for r in probs] for k, c in enumerate(("cat", "dog", "eel"))})
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def _npz(labels) -> bytes:
    buf = io.BytesIO()
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    np.savez(buf, probs=probs, labels=np.array(labels, dtype=str))
    return buf.getvalue()


@pytest.mark.parametrize("kind", list(NON_CANONICAL))
def test_non_canonical_index_labels_are_refused_in_every_format(kind, tmp_path):
    value, shown = NON_CANONICAL[kind]
    path = tmp_path / "labels.csv"
    path.write_bytes(_label_file(value))
    parquet = tmp_path / "labels.parquet"
    parquet.write_bytes(_parquet(["0", value, "2"]))
    loads = {
        "csv": lambda: calcore.load_predictions(path),
        "csv streamed": _scan(path),
        "parquet": lambda: calcore.load_predictions(_parquet(["0", value, "2"]), name="l.pq"),
        "parquet streamed": _scan(parquet),
        "npz": lambda: calcore.load_predictions(_npz(["0", value, "2"]), name="l.npz"),
    }
    for fmt, load in loads.items():
        with pytest.raises(CalcoreError) as err:
            load()
        message = str(err.value)
        row = "line 3" if fmt.startswith("csv") else "row 1 (0-based)"
        assert row in message and "column 'label" in message, (fmt, message)  # NPZ: 'labels'
        assert f"label {shown} is not a class name" in message, (fmt, message)
        assert "ASCII digits 0-9 only" in message, (fmt, message)


def test_canonical_indices_load_and_exact_class_names_still_win():
    p = calcore.load_predictions(_label_file("1"))
    np.testing.assert_array_equal(p.labels, [0, 1, 2])
    assert p.load_report.label_kind == "indices"
    # class names that int() reads are names: '01' is the class named '01', not index 1
    text = b"label,p_00,p_01\n01,0.2,0.8\n00,0.9,0.1\n"
    q = calcore.load_predictions(text)
    assert q.class_names == ("00", "01")
    np.testing.assert_array_equal(q.labels, [1, 0])


def test_an_out_of_range_lookalike_index_gets_the_plain_message():
    with pytest.raises(CalcoreError, match=r"label '\+7' is not a class; valid classes"):
        calcore.load_predictions(_label_file("+7"))


# -- encodings, header line breaks, look-alike names --------------------------------------------
@pytest.mark.parametrize(
    ("encoding", "expected"),
    [("utf-32-le", "UTF-32"), ("utf-32-be", "UTF-32"), ("utf-16-le", "UTF-16")],
)
def test_utf32_is_not_reported_as_utf16(encoding, expected):
    bom = {"utf-32-le": b"\xff\xfe\x00\x00", "utf-32-be": b"\x00\x00\xfe\xff"}
    bom.setdefault(encoding, b"\xff\xfe")
    data = bom[encoding] + "label,p_a,p_b\na,0.5,0.5\n".encode(encoding)
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(data, name="u.csv")
    assert str(err.value).startswith(f"u.csv, line 1: the file is {expected} (it starts")
    assert "Re-save the file as UTF-8" in str(err.value)


def test_a_line_break_inside_a_quoted_column_name_is_named():
    data = b'label,"p_cat\nfish",p_dog\ncat,0.5,0.5\n'
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(data, name="h.csv")
    message = str(err.value)
    assert message.startswith("h.csv, line 1: the name of column 2 (1-based), 'p_cat\\nfish',")
    assert "contains a line break" in message and "ends on line 2" in message
    assert "remove the line break from the name" in message
    with pytest.raises(CalcoreError, match=r"column 2 \(1-based\) opens a quote .* never closed"):
        calcore.load_predictions(b'label,"p_cat,p_dog\ncat,0.5,0.5\n', name="h.csv")


NFC, NFD = "caf\u00e9", "cafe\u0301"  # both print as 'café'


def test_column_names_that_print_alike_are_refused_with_their_code_points():
    data = f"label,p_{NFC},p_{NFD}\n{NFC},0.5,0.5\n".encode()
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(data, name="n.csv")
    message = str(err.value)
    assert "print alike" in message
    assert f"'p_{NFC}' (U+0070 U+005F U+0063 U+0061 U+0066 U+00E9) (position 2)" in message
    assert f"'p_{NFD}' (U+0070 U+005F U+0063 U+0061 U+0066 U+0065 U+0301) (position 3)" in message


def test_a_label_column_option_that_differs_by_normalisation_shows_both():
    data = f"{NFC},p_a,p_b\na,0.5,0.5\n".encode()
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(data, name="n.csv", label_column=NFD)
    message = str(err.value)
    assert f"label_column='{NFD}' is not a column" in message
    assert f"'{NFC}' (U+0063 U+0061 U+0066 U+00E9) prints alike" in message
    assert f"'{NFD}' (U+0063 U+0061 U+0066 U+0065 U+0301)" in message


def test_a_label_that_prints_like_a_class_name_shows_both():
    data = f"label,p_{NFC},p_tea\n{NFD},0.5,0.5\n".encode()
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(data, name="n.csv")
    assert f"label '{NFD}' (U+0063 U+0061 U+0066 U+0065 U+0301) prints like the class" in str(
        err.value
    )


# -- long names and values are cut in messages ---------------------------------------------------
def test_quoted_cuts_long_text_and_lists_code_points():
    assert quoted("p_cat") == "'p_cat'"
    assert quoted("a" * 80) == "'" + "a" * 80 + "'"
    assert quoted("a" * 81) == "'" + "a" * 80 + "'… (81 characters)"
    assert quoted("x\ny") == "'x\\ny'"
    assert quoted("\u0661", code_points=True) == "'\u0661' (U+0661)"
    assert quoted("abcdefghijklm", code_points=True).endswith("U+006C …)")
    assert quoted_list(["a", "b", "c"], limit=2, what="columns") == "'a', 'b', ... (3 columns)"


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("label,p_{long},p_b\ncat,0.5,0.5\n", {}),  # a label that is no class: the classes
        ("label,p_a,p_b\n{long},0.5,0.5\n", {}),  # the label itself
        ("label,p_a,p_b\na,{long},0.5\n", {}),  # a score cell that is not a number
        ("label,p_{long},p_{long}\na,0.5,0.5\n", {}),  # duplicate names
        ("label,p_a,p_b\na,0.5,0.5\n", {"label_column": "{long}"}),  # an option
    ],
    ids=["class_name", "label", "cell", "duplicate", "option"],
)
def test_a_100kb_name_or_value_gives_a_short_message(text, options, capsys, tmp_path):
    long = "x" * 100_000
    options = {k: v.format(long=long) for k, v in options.items()}
    path = tmp_path / "long.csv"
    path.write_text(text.format(long=long), encoding="utf-8")
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(path, **options)
    message = str(err.value)
    assert len(message) < 1000, message[:2000]
    assert "… (100,0" in message  # 100,000 characters, or 100,002 with the p_ prefix
    args = ["metrics", str(path)] + (["--label-col", options["label_column"]] if options else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 2
    assert len(capsys.readouterr().err) < 1000


def test_ten_thousand_columns_are_not_all_listed():
    header = ",".join(f"c{k}" for k in range(10_000))
    data = f"{header}\n" + ",".join(["0.1"] * 10_000) + "\n"
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(data.encode(), name="w.csv", label_column="label")
    assert len(str(err.value)) < 2000
    assert "... (10,000 columns)" in str(err.value)


@pytest.mark.parametrize("value", [" 1", "+1", "01", "\u0661", "+0"])
def test_binary_labels_written_like_0_or_1_are_refused(value):
    data = f"label,p_cat\n0,0.2\n{value},0.7\n".encode()
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(data, name="b.csv")
    message = str(err.value)
    assert message.startswith("b.csv, line 3, column 'label': label ")
    assert f"is written like the class index {int(value)} but not as one" in message
    # named as the positive label, the value is a class name
    p = calcore.load_predictions(data, name="b.csv", positive_class=value)
    assert p.class_names == ("0", value)
    np.testing.assert_array_equal(p.labels, [0, 1])


def test_a_100kb_label_column_name_is_cut_in_label_messages():
    long = "y" * 100_000
    data = f"{long},p_a,p_b\nc,0.5,0.5\n".encode()
    with pytest.raises(CalcoreError) as err:
        calcore.load_predictions(data, name="l.csv", label_column=long)
    message = str(err.value)
    assert "label 'c' is not a class" in message and len(message) < 1000
    assert "… (100,000 characters)" in message
