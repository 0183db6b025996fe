"""A dataset on the server with decimal commas (AppTest): detected and offered as an upload
is (the box above it; the message points at it), read with the comma only when ticked,
under its own fingerprint; a dataset with points gets no box."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import APP, assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from streamlit.testing.v1 import AppTest

import calcore
from dashboard.calibration import server_datasets
from dashboard.calibration.datadir import DataDirectory
from dashboard.calibration.decimals import dataset_decimal_key
from dashboard.calibration.messages import DATASET_FIXES, DECIMAL_LABEL

CLASSES = ("cat", "dog", "eel")


@pytest.fixture(autouse=True)
def fresh_server_caches():
    server_datasets._OPENED.clear()
    yield
    server_datasets._OPENED.clear()


def _predictions(n: int, seed: int):
    rng = np.random.default_rng(seed)
    probs = np.round(rng.dirichlet([1, 1, 1], size=n), 6)
    probs[:, 2] = np.round(1 - probs[:, 0] - probs[:, 1], 6)
    return probs, rng.integers(0, 3, n)


def _write(path: Path, probs, labels, *, comma: bool, start: int = 0) -> None:
    """';'-separated rows with a split column (even rows 'test'), decimal commas or points."""
    lines = ["label;p_cat;p_dog;p_eel;split"]
    for i, (p, y) in enumerate(zip(probs, labels, strict=True)):
        cells = [f"{v:.6f}" for v in p]
        if comma:
            cells = [c.replace(".", ",") for c in cells]
        lines.append(";".join([CLASSES[y], *cells, "test" if (start + i) % 2 == 0 else "calib"]))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    root = tmp_path / "data"
    root.mkdir()
    monkeypatch.setenv("CALCORE_DATA_DIR", str(root))
    return root


def _run(query: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in {"boot": "0", "m": "none", **query}.items():
        at.query_params[key] = value
    at.run()
    return at


def _errors(at) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [unescape_markdown(e.value) for e in at.error]


def _conf_ece(at) -> str:
    frame = at.table[0].value
    names = frame["metric"].str.split(" = ")
    return frame.loc[names.apply(lambda parts: "conf-ECE" in parts), "uncalibrated"].iloc[0]


def _expected_conf_ece(probs, labels) -> str:
    test = np.arange(len(labels)) % 2 == 0
    preds = calcore.Predictions.from_probs(probs[test], labels[test], class_names=list(CLASSES))
    return f"{calcore.evaluate(preds, bins=15, metrics=('conf_ece',)).conf_ece:.4f}"


def test_a_decimal_comma_dataset_is_offered_the_box_and_read_only_when_ticked(data_dir):
    probs, labels = _predictions(400, seed=6)
    _write(data_dir / "eu.csv", probs, labels, comma=True)
    at = _run({"data": "eu.csv"})
    (error,) = _errors(at)
    first = f"{probs[0, 0]:.6f}".replace(".", ",")
    assert error.startswith("Could not open eu.csv. eu.csv: column 'p_cat' (and 2 more")
    assert f"(line 2: '{first}')" in error
    assert error.endswith(DATASET_FIXES["decimal"])  # points at the box
    assert DATASET_FIXES["decimal"].startswith(f"Tick “{DECIMAL_LABEL}” above")
    dataset = DataDirectory(data_dir).resolve("eu.csv")
    box = at.checkbox(key=dataset_decimal_key(dataset))
    assert box.label == DECIMAL_LABEL and box.value is False
    box.check().run()
    assert_clean(at)
    assert _conf_ece(at) == _expected_conf_ece(probs, labels)  # the numbers of the points
    assert "decimal" not in dict(at.query_params)  # a link carries no load option (documented)
    # read under its own fingerprint: never the cached result of the other reading
    n = server_datasets.sample_rows()
    assert server_datasets._OPENED.peek((dataset.read_with_decimal(",").fingerprint, n)) is not None
    assert server_datasets._OPENED.peek((dataset.fingerprint, n)) is None
    assert not any("changed on the server" in unescape_markdown(w.value) for w in at.warning)
    at.checkbox(key=dataset_decimal_key(dataset)).uncheck().run()  # back: refused again
    assert any(e.endswith(DATASET_FIXES["decimal"]) for e in _errors(at))


def test_a_folder_of_decimal_comma_files_is_offered_the_box_too(data_dir):
    probs, labels = _predictions(400, seed=7)
    (data_dir / "days").mkdir()
    _write(data_dir / "days" / "a.csv", probs[:200], labels[:200], comma=True)
    _write(data_dir / "days" / "b.csv", probs[200:], labels[200:], comma=True, start=200)
    at = _run({"data": "days"})
    assert _errors(at)
    dataset = DataDirectory(data_dir).resolve("days")
    at.checkbox(key=dataset_decimal_key(dataset)).check().run()
    assert_clean(at)
    assert _conf_ece(at) == _expected_conf_ece(probs, labels)


def test_a_dataset_with_decimal_points_gets_no_box(data_dir):
    probs, labels = _predictions(300, seed=8)
    _write(data_dir / "points.csv", probs, labels, comma=False)
    at = _run({"data": "points.csv"})
    assert_clean(at)
    assert not [c for c in at.checkbox if c.label == DECIMAL_LABEL]
    assert _conf_ece(at) == _expected_conf_ece(probs, labels)


def test_a_reading_with_decimal_commas_has_its_own_fingerprint(data_dir):
    probs, labels = _predictions(50, seed=9)
    _write(data_dir / "eu.csv", probs, labels, comma=True)
    dataset = DataDirectory(data_dir).resolve("eu.csv")
    comma = dataset.read_with_decimal(",")
    assert (comma.decimal, dataset.decimal) == (",", ".")
    assert comma.fingerprint != dataset.fingerprint
    assert (
        comma.fingerprint
        == DataDirectory(data_dir).resolve("eu.csv").read_with_decimal(",").fingerprint
    )  # stable
    assert dataset.read_with_decimal(".") is dataset
    with pytest.raises(calcore.CalcoreError, match="decimal must be"):
        dataset.read_with_decimal(";")
