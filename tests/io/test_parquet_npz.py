"""calcore.io Parquet and NPZ loading, the zip-bomb guard and a real-data round trip."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.special import softmax

from calcore import CalcoreError
from calcore.io import inspect_table, load_predictions, load_splits

CIFAR = Path(__file__).resolve().parents[2] / "assets" / "reference" / "cifar10"


def parquet_bytes(table: dict) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(table), sink)
    return sink.getvalue()


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


# -- Parquet -----------------------------------------------------------------
def test_parquet_round_trip_with_integer_labels(tmp_path):
    path = tmp_path / "p.parquet"
    path.write_bytes(
        parquet_bytes({"label": [0, 1, 1], "p_a": [0.9, 0.2, 0.4], "p_b": [0.1, 0.8, 0.6]})
    )
    p = load_predictions(path)
    assert p.class_names == ("a", "b")
    np.testing.assert_array_equal(p.labels, [0, 1, 1])
    assert p.load_report.file_format == "parquet"


def test_parquet_string_score_column_is_named_with_the_fix():
    data = parquet_bytes({"label": ["a", "b"], "p_a": ["0.9", "0.2"], "p_b": [0.1, 0.8]})
    with pytest.raises(
        CalcoreError, match=r"s\.parquet, column 'p_a': has type string.*astype\('float64'\)"
    ):
        load_predictions(data, name="s.parquet")


def test_parquet_null_score_names_the_row():
    data = parquet_bytes({"label": ["a", "b"], "p_a": [0.9, None], "p_b": [0.1, 0.8]})
    with pytest.raises(
        CalcoreError, match=r"n\.parquet, row 1 \(0-based\), column 'p_a': probability value nan"
    ):
        load_predictions(io.BytesIO(data), name="n.parquet")


def test_parquet_is_sniffed_without_a_name():
    data = parquet_bytes({"y": ["a", "b"], "logit_a": [2.0, -1.0], "logit_b": [0.0, 1.0]})
    p = load_predictions(io.BytesIO(data))
    assert p.load_report.file_format == "parquet" and p.load_report.scores_kind == "logits"


# -- NPZ ---------------------------------------------------------------------
def test_npz_with_names_and_split():
    data = npz_bytes(
        logits=np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.5]]),
        labels=np.array(["a", "b", "b"]),
        class_names=np.array(["a", "b"]),
        split=np.array(["calib", "test", "test"]),
    )
    splits = load_splits(io.BytesIO(data))
    assert splits["test"].n_samples == 2 and splits["calib"].class_names == ("a", "b")
    assert splits["test"].logits is not None
    assert "array is named 'logits'" in splits["test"].load_report.scores_reason


def test_npz_object_array_is_refused(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, probs=np.array([[0.5, 0.5]]), labels=np.array([{"pickled": 1}], dtype=object))
    with pytest.raises(
        CalcoreError, match=r"o\.npz: array 'labels' is an object \(pickled\) array.*refused"
    ):
        load_predictions(buf.getvalue(), name="o.npz")


def test_npz_needs_exactly_one_score_array():
    data = npz_bytes(probs=np.eye(2), logits=np.eye(2), labels=np.array([0, 1]))
    with pytest.raises(
        CalcoreError, match=r"b\.npz: the archive has both of the arrays 'probs' and 'logits'"
    ):
        load_predictions(data, name="b.npz")


def test_npz_bad_probability_names_row_and_column():
    data = npz_bytes(probs=np.array([[0.5, 0.5], [1.2, -0.2]]), labels=np.array([0, 1]))
    with pytest.raises(
        CalcoreError, match=r"v\.npz, array 'probs', row 1 \(0-based\): probabilities sum to 1\.4"
    ):
        load_predictions(
            npz_bytes(probs=np.array([[0.5, 0.5], [0.7, 0.7]]), labels=np.array([0, 1])),
            name="v.npz",
        )
    with pytest.raises(
        CalcoreError,
        match=r"v\.npz, array 'probs', row 1 \(0-based\), column 1: probability -0\.2 is negative",
    ):
        load_predictions(data, name="v.npz")


def test_zip_bomb_is_refused_before_decompressing():
    # 50 MB of zeros compress to ~50 kB; the declared size is over the budget.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        member = io.BytesIO()
        np.save(member, np.zeros(50_000_000 // 8))
        zf.writestr("probs.npy", member.getvalue())
    assert len(buf.getvalue()) < 1_000_000
    with pytest.raises(
        CalcoreError,
        match=r"z\.npz: the archive declares 50,000,128 bytes.*max_decoded_bytes=10,000,000",
    ):
        load_predictions(buf.getvalue(), name="z.npz", max_decoded_bytes=10_000_000)


def test_npy_header_larger_than_member_is_refused():
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        member, {"descr": "<f8", "fortran_order": False, "shape": (10**9, 10)}
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("probs.npy", member.getvalue())
        zf.writestr("labels.npy", member.getvalue())
    with pytest.raises(CalcoreError, match=r"c\.npz: array 'probs' declares 80,000,000,000 bytes"):
        load_predictions(buf.getvalue(), name="c.npz")


def test_inspect_npz():
    s = inspect_table(npz_bytes(probs=np.eye(3), labels=np.arange(3)), name="i.npz")
    assert s.file_format == "npz" and s.scores_guess == "probs"
    assert s.class_names == ("0", "1", "2") and s.n_rows == 3


def _npz_members(**arrays) -> io.BytesIO:
    """An NPZ written member by member, each array with its own .npy version/order."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, (arr, version, fortran) in arrays.items():
            member = io.BytesIO()
            arr = np.asfortranarray(arr) if fortran else arr
            np.lib.format.write_array(member, arr, version=version)
            zf.writestr(f"{name}.npy", member.getvalue())
    buf.seek(0)
    return buf


@pytest.mark.parametrize(("version", "fortran"), [((1, 0), False), ((2, 0), True), ((3, 0), False)])
def test_inspect_npz_reads_the_headers_and_first_rows(version, fortran):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(20_000, 4)).astype(np.float32)
    labels = np.array(["cat", "dog", "owl", "emu"])[rng.integers(0, 4, 20_000)]
    buf = _npz_members(
        logits=(logits, version, fortran), labels=(labels, version, False),
        split=(np.where(np.arange(20_000) < 10_000, "calib", "test"), version, False),
    )  # fmt: skip
    s = inspect_table(buf, name="big.npz")
    assert s.n_rows == 20_000 and s.scores_guess == "logits" and s.split_column == "split"
    assert len(s.preview) == 5
    for i, row in enumerate(s.preview):
        assert row[s.label_column] == labels[i]
        assert [float(row[c]) for c in s.class_names] == logits[i].astype(np.float64).tolist()


def test_inspect_npz_leaves_later_rows_to_loading():
    labels = np.arange(100, dtype=np.float64) % 3
    labels[60] = 1.5  # beyond the preview rows: inspecting cannot see it, loading must
    buf = npz_bytes(probs=np.full((100, 3), 1 / 3), labels=labels)
    assert inspect_table(buf, name="late.npz").n_rows == 100
    with pytest.raises(CalcoreError, match=r"late.npz, row 60 .*1.5 is not an integer"):
        load_predictions(npz_bytes(probs=np.full((100, 3), 1 / 3), labels=labels), name="late.npz")
    short = npz_bytes(probs=np.full((100, 3), 1 / 3), labels=np.zeros(99, dtype=int))
    with pytest.raises(CalcoreError, match=r"'labels' has shape \(99,\); expected \(100,\)"):
        inspect_table(short, name="short.npz")  # the full shape, from the header


# -- real data ---------------------------------------------------------------
def test_cifar_logits_csv_round_trip(tmp_path):
    logits = np.load(CIFAR / "resnet50_test_logits.npy").astype(np.float64)
    labels = np.load(CIFAR / "resnet50_test_labels.npy")
    names = [
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
    ]
    path = tmp_path / "cifar.csv"
    rows = [
        f"{names[y]}," + ",".join(repr(float(v)) for v in z)
        for y, z in zip(labels, logits, strict=True)
    ]
    path.write_text(
        "label," + ",".join(f"logit_{n}" for n in names) + "\n" + "\n".join(rows) + "\n"
    )
    p = load_predictions(path)
    assert p.class_names == tuple(names) and p.load_report.scores_kind == "logits"
    np.testing.assert_array_equal(p.labels, labels)
    np.testing.assert_array_equal(p.logits, logits)
    np.testing.assert_allclose(p.probs, softmax(logits, axis=1), rtol=0, atol=1e-12)
