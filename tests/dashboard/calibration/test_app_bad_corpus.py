"""Every file of the bad-input corpus, uploaded through the app (AppTest).

The corpus and its expectations live in ``tests/data/bad/MANIFEST.json`` (see
``tests/test_bad_corpus.py`` for the loader and CLI side). Here the page must show the
same outcome: an error with the message's key phrases and the row/column it names, or the
loader's warning beside the results -- never a traceback, and no figure from a file that
could not be read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from _apptest import APP, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from streamlit.testing.v1 import AppTest

from dashboard.calibration import controls

BAD = Path(__file__).resolve().parents[2] / "data" / "bad"
MANIFEST = [e for e in json.loads((BAD / "MANIFEST.json").read_text()) if not e["options"]]
MIME = {".csv": "text/csv", ".tsv": "text/tab-separated-values"}
#: What the page says instead of calcore's option hints (dashboard.calibration.messages):
#: the control on the page that fixes the problem.
PAGE_TERMS = {
    "label_column=": "Label column menu under Data",
    "percent=True": "“Scores are percentages (divide by 100)” under Data",
    "--percent": "“Scores are percentages (divide by 100)” under Data",
    "renormalize=True": "“Renormalise probability rows that do not sum to 1 (reported)”",
    "scores='logits'": "choose logits under “Scores are” under Data",
    "index=False": "the row numbers were saved as a column (the index, in pandas)",
}


def upload(entry: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["m"] = "none"
    at.query_params["boot"] = "0"
    at.run()
    at.radio(key=controls.KEY_SOURCE).set_value(controls.SOURCE_UPLOAD).run()
    path = BAD / entry["file"]
    mime = MIME.get(path.suffix, "application/octet-stream")
    at.file_uploader(key=controls.KEY_UPLOAD).upload(path.name, path.read_bytes(), mime).run()
    return at


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_corpus_file_in_the_app(entry):
    at = upload(entry)
    assert not at.exception, [e.value for e in at.exception]
    errors = [unescape_markdown(e.value) for e in at.error]
    if entry["outcome"] == "error":
        assert len(errors) == 1, errors
        message = errors[0]
        for phrase in entry["phrases"]:
            assert PAGE_TERMS.get(phrase, phrase) in message, (phrase, message)
            if phrase in PAGE_TERMS:  # the page's words, not Python's
                assert phrase not in message, (phrase, message)
        if entry["row"]:
            assert str(entry["row"]) in message, (entry["row"], message)
        if entry["column"]:  # names are quoted as Python writes them ('p_cat\nfish')
            assert repr(entry["column"]) in message, (entry["column"], message)
        assert not at.get("plotly_chart")
        assert not [t for t in at.table if "metric" in t.value.columns]
        return
    assert not errors, errors
    assert [t for t in at.table if "metric" in t.value.columns], "no metrics table"
    if entry["outcome"] == "warning":
        shown = " ".join(unescape_markdown(w.value) for w in at.warning)
        shown += " ".join(unescape_markdown(e.label) for e in at.expander)
        shown += " ".join(unescape_markdown(m.value) for m in at.markdown)
        for phrase in entry["phrases"]:
            assert phrase in shown, (phrase, shown[:500])
