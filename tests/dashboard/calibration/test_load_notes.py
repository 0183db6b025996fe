"""The loader's notes and warnings in the page's terms (AppTest): what calcore's load report
says of an option (``scores='auto' saw``, ``(percent=True)``, ``label_column=``) reaches the
page as the control that sets it, and no note or warning the page shows speaks Python."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from test_app import run_app, upload
from test_page_fixes import PYTHON

import calcore
from calcore.io._load_report import NOTE_TERMS, with_terms
from dashboard.calibration.messages import DATASET_FIXES, PAGE_FIXES, page_message

_SCORES_ARE = "“Scores are” under Data"
_PERCENT = "“Scores are percentages (divide by 100)” under Data"


def _key(data: bytes, what: str) -> str:
    return f"data.{hashlib.blake2b(data, digest_size=32).hexdigest()[:16]}.{what}"


def _notes(at) -> list[str]:
    """The notes of the "What the loader detected" panel, one per line."""
    (panel,) = [e for e in at.expander if e.label.startswith("What the loader detected")]
    text = "\n".join(unescape_markdown(m.value) for m in panel.markdown)
    return [line.removeprefix("- ") for line in text.splitlines() if line.strip()]


def _shown(at) -> list[str]:
    """Every note, warning and error on the page (unescaped)."""
    return _notes(at) + [unescape_markdown(e.value) for e in (*at.warning, *at.error)]


def _speaks_no_python(at) -> None:
    for text in _shown(at):
        assert not PYTHON.search(text), text


def _logits_csv(n: int = 300, seed: int = 5) -> tuple[bytes, np.ndarray]:
    """Logits in columns named after the classes alone (no prefix says the kind)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, (n, 3))
    labels = rng.integers(0, 3, n)
    lines = ["label,cat,dog,eel"] + [
        f"{'cat dog eel'.split()[y]}," + ",".join(f"{v:.6f}" for v in row)
        for y, row in zip(labels, logits, strict=True)
    ]
    return ("\n".join(lines) + "\n").encode(), np.round(logits, 6)


def test_the_scores_note_says_detection_and_the_control_that_changes_it():
    data, logits = _logits_csv()
    at = upload(run_app({"m": "none"}), "logits.csv", data)
    assert_clean(at)
    # the first value outside [0, 1], found here independently of calcore
    i, j = np.argwhere((logits < 0) | (logits > 1))[0]
    first = f"{float(f'{logits[i, j]:.6f}')!r} at line {i + 2}, column {'cat dog eel'.split()[j]!r}"
    said = [n for n in _notes(at) if n.startswith("Scores read as")]
    assert said == [
        f"Scores read as logits: detection (change it under {_SCORES_ARE}) saw values outside "
        f"[0, 1] (first: {first})."
    ]
    _speaks_no_python(at)
    at.radio(key=_key(data, "scores")).set_value("logits").run()  # chosen: said so
    assert_clean(at)
    said = [n for n in _notes(at) if n.startswith("Scores read as")]
    assert said == [f"Scores read as logits: as chosen under {_SCORES_ARE}."]
    _speaks_no_python(at)


def test_percentages_are_suggested_and_then_noted_as_the_ticked_box():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet([2, 2], 200)
    labels = rng.integers(0, 2, 200)
    rows = [
        f"{'ab'[y]},{100 * p[0]:.2f},{100 - round(100 * p[0], 2):.2f}"
        for y, p in zip(labels, probs, strict=True)
    ]
    data = ("label,a,b\n" + "\n".join(rows) + "\n").encode()
    at = upload(run_app({"m": "none"}), "percent.csv", data)
    assert not at.exception
    # the Scores are radio's help: what detection saw, and the box that reads percentages
    help_text = at.radio(key=_key(data, "scores")).help
    assert f"percentages, to be divided by 100 (tick {_PERCENT})" in help_text, help_text
    assert not PYTHON.search(help_text)
    at.checkbox(key=_key(data, "percent")).check().run()
    assert_clean(at)
    said = [n for n in _notes(at) if n.startswith("Scores read as")]
    assert said == [
        f"Scores read as probs: {_PERCENT} is ticked; scores divided by 100 (as ticked under Data)."
    ]
    _speaks_no_python(at)


def test_the_label_column_problem_points_at_its_menu_and_the_notes_name_the_choice():
    rng = np.random.default_rng(4)
    probs = rng.dirichlet([1, 1], 200)
    labels = rng.integers(0, 2, 200)
    rows = [
        f"{'ab'[y]},{'ab'[1 - y]},{p[0]:.6f},{p[1]:.6f}" for y, p in zip(labels, probs, strict=True)
    ]
    data = ("label,target,p_a,p_b\n" + "\n".join(rows) + "\n").encode()
    at = upload(run_app({"m": "none"}), "two.csv", data)
    assert not at.exception
    shown = [unescape_markdown(e.value) for e in (*at.warning, *at.error)]
    assert shown and all(s.endswith(PAGE_FIXES["label_column"]) for s in shown), shown
    assert all(not PYTHON.search(s) for s in shown)
    at.selectbox(key=_key(data, "label")).set_value("target").run()
    assert_clean(at)
    assert not at.warning  # fixed by the menu: gone
    assert "Labels: column 'target' (class names)." in _notes(at)
    _speaks_no_python(at)
    # the choice is what is evaluated: accuracy of the 'target' labels, counted here
    loaded = calcore.load_predictions(data, label_column="target")
    assert loaded.labels.tolist() == (1 - labels).tolist()


def test_every_note_term_has_page_words_without_python():
    for option, phrase in NOTE_TERMS:
        assert option in PAGE_FIXES, option
        words = PAGE_FIXES[option]
        assert not PYTHON.search(words) and "'" not in words, (option, words)
        note = with_terms(f"x: {phrase} y.")
        assert page_message(note) == f"x: {words} y."
    assert page_message(with_terms("a: column 'p_c' was ignored (not in score_columns).")) == (
        "a: column 'p_c' was ignored (not chosen in the Score columns box under Data)."
    )
    assert DATASET_FIXES["scores_auto"] == "detection saw"


def test_a_note_without_an_option_is_shown_as_calcore_wrote_it():
    text = "No split column: all rows loaded."
    assert with_terms(text) is text and page_message(text) == text
