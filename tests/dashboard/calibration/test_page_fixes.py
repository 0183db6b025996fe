"""calcore's Python-style hints reach the page as the page's words (AppTest): each mapped
option (:data:`dashboard.calibration.messages.PAGE_FIXES`) is triggered by an uploaded
file, the message points at the control that fixes it (or says what to change in the file
when the page has no control for it), and using that control (or uploading the fixed
file) loads the file."""

from __future__ import annotations

import hashlib
import io
import re

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from test_app import metrics_table, new_app, run_app, upload

import calcore
from dashboard.calibration.messages import PAGE_FIXES, page_message

#: What calcore writes for a Python caller and a page must never show: an option and its
#: value (``scores='logits'``, ``percent=True``, ``score_columns=[...]``), "pass", calcore's
#: functions and command-line flags.
PYTHON = re.compile(r"\w=|=\w|=\[|\b[Pp]ass\b|calcore\.|--\w")


def _key(data: bytes, what: str) -> str:
    return f"data.{hashlib.blake2b(data, digest_size=32).hexdigest()[:16]}.{what}"


def _csv(header: str, rows) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def _scores(n: int = 300, *, seed: int = 3, logits: bool = False):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet([2, 2, 2], size=n)
    labels = rng.integers(0, 3, n)
    values = np.log(probs) + 1.0 if logits else probs
    return labels, values


def _rows(labels, values, names="abc"):
    return [
        f"{names[y]}," + ",".join(f"{v:.6f}" for v in row)
        for y, row in zip(labels, values, strict=True)
    ]


def _only_error(at) -> str:
    assert not at.exception, [e.value for e in at.exception]
    (error,) = [unescape_markdown(e.value) for e in at.error]
    return error


def _page_words(error: str, option: str) -> None:
    """The error ends with the page's words for ``option`` and speaks no Python."""
    assert error.endswith(PAGE_FIXES[option]), error
    assert not PYTHON.search(error), error


def test_the_page_words_speak_no_python():
    for option, words in PAGE_FIXES.items():
        assert not PYTHON.search(words) and "'" not in words, (option, words)


def test_logits_read_as_probabilities_point_at_scores_are():
    labels, z = _scores(logits=True)
    data = _csv("label,p_a,p_b,p_c", _rows(labels, z))
    at = upload(run_app({"m": "none"}), "z.csv", data)
    error = _only_error(at)
    assert "z.csv, line 2, column 'p_" in error and "is negative" in error
    _page_words(error, "scores_logits")
    assert error.count("logits") == 2  # said once: the page's sentence names them twice
    at.radio(key=_key(data, "scores")).set_value("logits").run()
    assert_clean(at)
    assert "uncalibrated" in metrics_table(at).index


def test_percent_with_logit_columns_points_at_both_controls():
    labels, z = _scores(logits=True)
    data = _csv("label,logit_a,logit_b,logit_c", _rows(labels, z))
    at = upload(run_app({"m": "none"}), "z.csv", data)
    assert_clean(at)
    at.checkbox(key=_key(data, "percent")).check().run()
    error = _only_error(at)
    assert "z.csv: scores in percent are probabilities, but the score columns are named" in error
    _page_words(error, "percent_logits")
    at.checkbox(key=_key(data, "percent")).uncheck().run()
    assert_clean(at)


def test_one_score_column_for_labels_that_are_names_says_what_to_rename():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, 300)
    words = np.where(rng.uniform(size=300) < p, "spam", "ham")
    rows = [f"{w},{v:.6f}" for w, v in zip(words, p, strict=True)]
    at = upload(run_app({"m": "none"}), "mail.csv", _csv("label,score", rows))
    error = _only_error(at)
    assert "mail.csv: one score column, so the problem is binary" in error
    _page_words(error, "positive_class")
    # what the page says to do works: the column named after the label it is for
    at = upload(run_app({"m": "none"}), "mail2.csv", _csv("label,p_spam", rows))
    assert_clean(at)
    assert "uncalibrated" in metrics_table(at).index


def test_a_label_written_like_an_index_says_to_write_the_index():
    rng = np.random.default_rng(6)
    p = rng.uniform(0.05, 0.95, 300)
    y = (rng.uniform(size=300) < p).astype(int)
    rows = [f"{'+1' if k else 0},{v:.6f}" for k, v in zip(y, p, strict=True)]
    at = upload(run_app({"m": "none"}), "idx.csv", _csv("label,p_1", rows))
    error = _only_error(at)
    assert "label '+1' is written like the class index 1" in error
    _page_words(error, "positive_class_index")
    fixed = [r.replace("+1,", "1,") for r in rows]
    at = upload(run_app({"m": "none"}), "idx2.csv", _csv("label,p_1", fixed))
    assert_clean(at)


def test_an_archive_without_labels_says_what_to_name_the_array():
    labels, p = _scores()
    buffer = io.BytesIO()
    np.savez(buffer, probs=p, y=labels)
    at = upload(run_app({"m": "none"}), "a.npz", buffer.getvalue())
    error = _only_error(at)
    assert "a.npz: no 'labels' array" in error
    _page_words(error, "label_array")


def test_bytes_that_are_not_utf8_say_how_to_resave():
    labels, p = _scores()
    rows = _rows(labels, p)
    rows[4] = "\xe9t\xe9," + rows[4].split(",", 1)[1]
    data = _csv("label,p_a,p_b,p_c", rows).replace("\xe9".encode(), b"\xe9")
    at = upload(run_app({"m": "none"}), "latin.csv", data)
    error = _only_error(at)
    assert "latin.csv, line 6" in error and "is not valid UTF-8" in error
    _page_words(error, "encoding")


def test_a_blank_column_name_says_what_to_change_in_the_file():
    labels, p = _scores()
    rows = [f"{k},{r}" for k, r in enumerate(_rows(labels, p))]
    at = upload(run_app({"m": "none"}), "ix.csv", _csv(",label,p_a,p_b,p_c", rows))
    error = _only_error(at)
    assert "ix.csv: header (line 1) has blank column name(s) at position(s) [1]" in error
    _page_words(error, "header_names")


def test_two_weight_columns_point_at_the_weight_menu():
    labels, p = _scores()
    rows = [f"{r},1,2" for r in _rows(labels, p)]
    data = _csv("label,p_a,p_b,p_c,weight,weights", rows)
    at = upload(run_app({"m": "none"}), "w.csv", data)
    error = _only_error(at)
    assert "w.csv: several weight columns ['weight', 'weights']" in error
    _page_words(error, "weight_column")
    (warning,) = [unescape_markdown(w.value) for w in at.warning]  # in the Data panel
    assert warning == error.removeprefix("Could not load w.csv. ")
    at.selectbox(key=_key(data, "weight")).set_value("weight").run()
    assert_clean(at)
    assert not at.warning
    assert "uncalibrated" in metrics_table(at).index


def test_every_fix_of_an_error_is_reworded():
    # a probability error read by detection carries two: renormalise, or read as logits
    with pytest.raises(calcore.CalcoreError) as caught:
        calcore.load_predictions(b"label,p_a,p_b\na,0.5,0.2\nb,0.3,0.3\n", name="f.csv")
    text = page_message(caught.value)
    assert PAGE_FIXES["renormalize"] in text and text.endswith(PAGE_FIXES["scores_logits"])
    assert "=" not in text


def test_a_server_dataset_with_decimal_commas_says_what_to_change_in_its_files(
    tmp_path, monkeypatch
):
    from dashboard.calibration import server_datasets
    from dashboard.calibration.messages import DATASET_FIXES

    labels, p = _scores()
    rows = [r.replace(",", ";").replace(".", ",") for r in _rows(labels, p)]
    (tmp_path / "eu.csv").write_text("label;p_a;p_b;p_c\n" + "\n".join(rows) + "\n")
    monkeypatch.setenv("CALCORE_DATA_DIR", str(tmp_path))
    server_datasets._OPENED.clear()
    try:
        at = new_app({"data": "eu.csv", "boot": "0"})
        at.run()
    finally:
        server_datasets._OPENED.clear()
    error = _only_error(at)
    assert error.startswith("Could not open eu.csv. eu.csv: column 'p_a' (and 2 more")
    assert "decimal comma (line 2: '" in error and "no score columns" not in error
    assert error.endswith(DATASET_FIXES["decimal"]) and not PYTHON.search(error)
    # what calcore says instead is right: the option reads the file
    assert calcore.scan(tmp_path / "eu.csv", decimal=",").class_names == ("a", "b", "c")


def test_the_dataset_words_speak_no_python():
    from dashboard.calibration.messages import DATASET_FIXES

    for option, words in DATASET_FIXES.items():
        assert not PYTHON.search(words) and "'" not in words, (option, words)
