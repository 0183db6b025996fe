"""The calibrator picker (full names by family, the recommended set, old names in links)
and messages in the page's terms (the control that fixes a problem; warnings that go when
it is fixed; workbooks and decimal commas)."""

from __future__ import annotations

import hashlib
import io
import zipfile

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from test_app import metrics_table, query, run_app, upload

import calcore
from dashboard.calibration import controls
from dashboard.calibration.decimals import decimal_key
from dashboard.calibration.messages import DECIMAL_LABEL


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def _texts(elements) -> list[str]:
    return [unescape_markdown(e.value) for e in elements]


# -- the picker -----------------------------------------------------------------------------
def test_methods_are_listed_by_full_name_grouped_by_family_once_each():
    at = run_app({"m": "ts"})
    box = at.multiselect(key=controls.KEY_METHODS)
    names = [o.split(" · ")[0].split(" = ")[0] for o in box.options]
    assert "ts · Temperature scaling" in box.options
    assert "tl-hb · Top-label histogram binning" in box.options
    assert "n-iso = irova · Normalised class-wise isotonic regression" in box.options
    assert "irova" not in names and len(names) == len(set(names))  # one entry per method
    families = list(calcore.CALIBRATOR_FAMILIES)
    order = [families.index(calcore.CALIBRATORS[n].family) for n in names]
    assert order == sorted(order)  # grouped: each family's methods together, in order
    guide = " ".join(_texts(at.sidebar.markdown))
    for title, _ in calcore.CALIBRATOR_FAMILIES.values():
        if title != "Simplex binning (canonical)":  # 10 classes: no simplex binning
            assert title in guide
    assert calcore.CALIBRATORS["ts"].use in guide
    # binary methods appear with the prefixes that make them work on 10 classes
    assert "| Histogram binning with a prefix |" in guide and "conf-hb ★" in guide
    assert "| Platt scaling with a prefix |" in guide and "| platt |" not in guide


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("cifar10-resnet110", ["ts", "conf-hb"]),  # 10 classes, ~500 rows each: 33 a bin
        ("credit-default-logreg", ["platt", "hb"]),  # binary, 10,000 calibration rows
        ("synthetic-wide100", ["ts", "conf-hb"]),  # 100 classes: too few rows per class
    ],
)
def test_a_link_without_methods_starts_with_the_recommended_set(sample, expected):
    at = run_app({"sample": sample})
    assert at.multiselect(key=controls.KEY_METHODS).value == expected
    assert list(metrics_table(at).index) == ["uncalibrated", *expected]
    assert query(at, "m") == expected
    caption = " ".join(_texts(at.sidebar.caption))
    assert "Recommended for" in caption
    assert "Use the recommended set" not in [b.label for b in at.button]  # it is chosen
    shape = next(c for c in _texts(at.sidebar.caption) if c.startswith("Recommended for"))
    n_classes = int(shape.split()[2])
    assert n_classes == {"cifar10-resnet110": 10, "credit-default-logreg": 2}.get(sample, 100)


def test_a_link_naming_methods_keeps_them_and_the_button_restores_the_recommendation():
    at = run_app({"sample": "credit-default-logreg", "m": ["beta"]})
    assert at.multiselect(key=controls.KEY_METHODS).value == ["beta"]
    at.button(key=controls.KEY_RECOMMENDED).click().run()
    assert_clean(at)
    assert at.multiselect(key=controls.KEY_METHODS).value == ["platt", "hb"]
    assert not [b for b in at.button if b.key == controls.KEY_RECOMMENDED]  # nothing to restore


@pytest.mark.parametrize(("old", "new"), sorted(calcore.CALIBRATOR_ALIASES.items()))
def test_an_old_method_name_in_a_link_opens_the_method(old, new):
    at = run_app({"m": [old, "ts"]})
    assert at.multiselect(key=controls.KEY_METHODS).value == [new, "ts"]
    assert not at.warning  # not "unknown calibrator"
    assert list(metrics_table(at).index) == ["uncalibrated", new, "ts"]
    assert query(at, "m") == [new, "ts"]  # the link now says the current name


# -- messages in the page's terms -----------------------------------------------------------
def _two_label_columns() -> bytes:
    rng = np.random.default_rng(4)
    probs = rng.dirichlet([2, 2, 2], size=300)
    labels = rng.integers(0, 3, 300)
    rows = ["y,label,p_a,p_b,p_c"] + [
        f"{(y + 1) % 3},{y}," + ",".join(f"{v:.6f}" for v in p)
        for y, p in zip(labels, probs, strict=True)
    ]
    return ("\n".join(rows) + "\n").encode()


def test_a_problem_points_at_its_menu_and_goes_when_the_menu_fixes_it():
    data = _two_label_columns()
    at = upload(run_app({"m": "none"}), "two.csv", data)
    assert not at.exception
    (error,) = _texts(at.error)
    (warning,) = _texts(at.warning)
    for text in (error, warning):
        assert "label column is ambiguous" in text
        assert text.endswith("Pick it in the Label column menu under Data.")
        assert "label_column" not in text and "Pass" not in text
    at.selectbox(key=f"data.{_digest(data)[:16]}.label").set_value("label").run()
    assert_clean(at)
    assert not at.warning  # computed from the current choice: gone once it is fixed
    assert "uncalibrated" in metrics_table(at).index


def test_a_workbook_named_csv_is_told_to_be_saved_as_csv():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    at = upload(run_app({"m": "none"}), "results.csv", buffer.getvalue())
    assert not at.exception
    (error,) = _texts(at.error)
    assert "results.csv: this is an Excel workbook (.xlsx)" in error
    assert error.endswith("Save it as CSV (File > Save As > CSV UTF-8) and upload that.")
    assert ".npz" not in error and ".parquet" not in error


def _decimal_comma_csv() -> tuple[bytes, bytes]:
    rng = np.random.default_rng(8)
    probs = rng.dirichlet([1, 1, 1], size=300)
    labels = rng.integers(0, 3, 300)
    rows = [",".join(f"{v:.6f}" for v in p) for p in probs]
    points = ["label;p_a;p_b;p_c"] + [
        f"{y};" + r.replace(",", ";") for y, r in zip(labels, rows, strict=True)
    ]
    point = ("\n".join(points) + "\n").encode()
    return point.replace(b".", b","), point


def test_decimal_commas_are_named_and_read_only_when_the_box_is_ticked():
    data, point = _decimal_comma_csv()
    at = upload(run_app({"m": "none"}), "eu.csv", data)
    assert not at.exception
    (error,) = _texts(at.error)
    assert "eu.csv: column 'p_a' (and 2 more: 'p_b', 'p_c')" in error
    assert "decimal comma (line 2: '" in error and "no score columns" not in error
    assert error.endswith(f"Tick “{DECIMAL_LABEL}” above the Data panel to read them as numbers.")
    box = at.checkbox(key=decimal_key(_digest(data)))
    assert box.label == DECIMAL_LABEL and box.value is False
    box.check().run()
    assert_clean(at)
    assert not at.warning
    from calcore.evaluation import random_split

    _, test = random_split(calcore.load_predictions(point), test_fraction=0.5, seed=0)
    expected = calcore.evaluate(test, bins=15).metrics["conf_ece"]
    assert metrics_table(at).loc["uncalibrated", "conf-ECE"] == f"{expected:.4f}"
    at.checkbox(key=decimal_key(_digest(data))).uncheck().run()  # back: refused again
    assert any("decimal comma" in e for e in _texts(at.error))
