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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore
from calcore import CalcoreError
from calcore._errors import quoted, quoted_list
from calcore._validation import index_label
from calcore.cli import main

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
    loads = {
        "csv": lambda: calcore.load_predictions(path),
        "csv streamed": _scan(path),
        "parquet": lambda: calcore.load_predictions(_parquet(["0", value, "2"]), name="l.pq"),
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


NFC, NFD = "caf\u00e9", "cafe\u0301"  # both print as 'café'


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
