"""CSV and NPZ sources streamed by ``calcore.scan``: the same rows, metrics and messages
as ``calcore.load_predictions`` of the whole file, whatever the pieces they are read in.

The references are the in-memory loader and evaluation (pinned down by the golden,
brute-force and corpus suites) and rows repeated for integer weights.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calcore
import calcore.io._csv_stream as csv_stream
from calcore.cli import main

NAMES = ("cat", "dog", "eel")


def _multiclass(n, seed):
    rng = np.random.default_rng(seed)
    p = np.round(rng.dirichlet(np.full(3, 0.7), size=n), 3)  # rounded: ties, exact text
    p[:, 0] = np.round(1.0 - p[:, 1:].sum(axis=1), 3)
    p = np.clip(p, 0.0, None)
    y = np.array([rng.choice(3, p=row / row.sum()) for row in p])
    return p, y


def _csv_text(p, y, *, split=None, weights=None, note=None, crlf=False) -> str:
    header = ["label", *(f"p_{c}" for c in NAMES)]
    header += ["split"] if split is not None else []
    header += ["weight"] if weights is not None else []
    header += ["note"] if note is not None else []
    lines = [",".join(header)]
    for i in range(len(y)):
        cells = [NAMES[y[i]], *(repr(float(v)) for v in p[i])]
        cells += [split[i]] if split is not None else []
        cells += [str(weights[i])] if weights is not None else []
        cells += [note[i]] if note is not None else []
        lines.append(",".join(cells))
    end = "\r\n" if crlf else "\n"
    return end.join(lines) + end


@pytest.fixture
def tiny_pieces(monkeypatch):
    """CSV pieces as small as the batch asks (a few rows), to cut files at many places."""
    monkeypatch.setattr(csv_stream, "MIN_PIECE_BYTES", 16)


def _assert_same_report(got, want, tol=1e-10, *, same_rows=True):
    assert got.n == want.n or not same_rows
    for k in calcore.METRICS:
        assert got.metrics[k] == pytest.approx(want.metrics[k], rel=tol, abs=1e-14), k


@settings(max_examples=8, deadline=None)
@given(
    batch_rows=st.integers(1, 400),
    crlf=st.booleans(),
    trailing=st.sampled_from(["", "\n", "\n\n  \n"]),
    binning=st.sampled_from([("equal-width", 10), ("equal-mass", 7)]),
)
def test_streamed_csv_equals_the_loaded_file(tmp_path_factory, batch_rows, crlf, trailing, binning):
    tmp = tmp_path_factory.mktemp("csv")
    p, y = _multiclass(600, seed=1)
    split = np.where(np.arange(600) % 4 == 0, "calib", "test")
    path = tmp / "m.csv"
    path.write_bytes((_csv_text(p, y, split=split, crlf=crlf) + trailing).encode())
    old = csv_stream.MIN_PIECE_BYTES
    csv_stream.MIN_PIECE_BYTES = 16  # hypothesis does not mix with function fixtures
    try:
        stream = calcore.scan(path, split="test", batch_rows=batch_rows)
        got = calcore.evaluate(stream, binning=binning[0], bins=binning[1])
    finally:
        csv_stream.MIN_PIECE_BYTES = old
    want = calcore.evaluate(
        calcore.load_predictions(path, split="test"), binning=binning[0], bins=binning[1]
    )
    assert stream.class_names == NAMES
    _assert_same_report(got, want)


def test_a_bad_cell_deep_in_a_csv_names_its_file_line(tmp_path, tiny_pieces):
    p, y = _multiclass(20_000, seed=2)
    text = _csv_text(p, y).splitlines()
    text[17_001] = "dog,0.2.5,0.5,0.3"  # data row 17,000 (0-based): file line 17,002
    (tmp_path / "big.csv").write_text("\n".join(text) + "\n")
    stream = calcore.scan(tmp_path / "big.csv", batch_rows=500)
    with pytest.raises(calcore.CalcoreError) as info:
        calcore.evaluate(stream)
    message = str(info.value)
    assert message.startswith("big.csv, line 17002, column 'p_cat': value '0.2.5' is not a number")
    with pytest.raises(calcore.CalcoreError) as loaded:
        calcore.load_predictions(tmp_path / "big.csv")
    assert str(loaded.value) == message


def test_short_and_long_lines_deep_in_a_csv_name_their_line(tmp_path, tiny_pieces):
    p, y = _multiclass(3_000, seed=3)
    lines = _csv_text(p, y).splitlines()
    short, long = list(lines), list(lines)
    short[2_501] = "eel,0.5,0.5"
    long[2_501] += ",0.1"
    for name, rows in (("short.csv", short), ("long.csv", long)):
        (tmp_path / name).write_text("\n".join(rows) + "\n")
        with pytest.raises(calcore.CalcoreError, match=rf"^{name}, line 2502: "):
            calcore.evaluate(calcore.scan(tmp_path / name, batch_rows=100))


def test_quoted_line_breaks_across_pieces_keep_file_lines(tmp_path, tiny_pieces):
    p, y = _multiclass(400, seed=4)
    note = np.array(['"two\nlines"' if i % 7 == 0 else "plain" for i in range(400)], dtype=object)
    p[390, 1] = -0.5  # 56 quoted breaks before it (rows 0, 7, ..., 385): file line 448
    (tmp_path / "q.csv").write_text(_csv_text(p, y, note=note))
    with pytest.raises(calcore.CalcoreError) as info:
        calcore.evaluate(
            calcore.scan(
                tmp_path / "q.csv", batch_rows=9, score_columns=["p_cat", "p_dog", "p_eel"]
            )
        )
    with pytest.raises(calcore.CalcoreError) as loaded:
        calcore.load_predictions(tmp_path / "q.csv", score_columns=["p_cat", "p_dog", "p_eel"])
    assert "line 448, column 'p_dog'" in str(loaded.value)
    assert str(info.value).split(" (scores=")[0] == str(loaded.value).split(" (scores=")[0]


def test_an_unclosed_quote_is_refused_with_its_line(tmp_path, tiny_pieces):
    p, y = _multiclass(300, seed=5)
    lines = _csv_text(p, y).splitlines()
    lines[120] = '"' + lines[120]  # file line 121 opens a quote that never closes
    (tmp_path / "open.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(calcore.CalcoreError, match=r"open\.csv, line 121: .*unclosed quote"):
        calcore.evaluate(calcore.scan(tmp_path / "open.csv", batch_rows=3))


def test_a_directory_of_csv_files_with_weights_equals_repeated_rows(tmp_path, tiny_pieces):
    p, y = _multiclass(900, seed=6)
    w = np.random.default_rng(6).integers(0, 4, 900)
    for k, (a, b) in enumerate(((0, 250), (250, 600), (600, 900))):
        folder = tmp_path / f"day={k}"
        folder.mkdir()
        (folder / "part.csv").write_text(_csv_text(p[a:b], y[a:b], weights=w[a:b]))
    stream = calcore.scan(tmp_path, batch_rows=64)
    assert stream.weight_column == "weight" and len(stream.files) == 3
    rows = np.repeat(np.arange(900), w)
    want = calcore.evaluate(calcore.Predictions.from_probs(p[rows], y[rows], NAMES))
    _assert_same_report(calcore.evaluate(stream), want, same_rows=False)


def test_a_bad_weight_in_a_csv_names_its_line(tmp_path, tiny_pieces):
    p, y = _multiclass(500, seed=7)
    w = np.ones(500)
    w[444] = -1.0
    (tmp_path / "w.csv").write_text(_csv_text(p, y, weights=w))
    with pytest.raises(calcore.CalcoreError, match=r"w\.csv, line 446, column 'weight'"):
        calcore.evaluate(calcore.scan(tmp_path / "w.csv", batch_rows=20))


def test_mixed_formats_and_differing_headers_are_refused(tmp_path):
    p, y = _multiclass(50, seed=8)
    (tmp_path / "a.csv").write_text(_csv_text(p, y))
    pq.write_table(pa.table({"label": y, "p_x": p[:, 0]}), tmp_path / "b.parquet")
    with pytest.raises(calcore.CalcoreError, match=r"the files mix formats \(csv, parquet\)"):
        calcore.scan(tmp_path)
    (tmp_path / "b.parquet").unlink()
    (tmp_path / "c.csv").write_text("label,p_cat,p_dog\ncat,0.5,0.5\n")
    with pytest.raises(calcore.CalcoreError, match=r"c\.csv: column 'p_eel' is missing"):
        calcore.scan(tmp_path)


def _npz(path, p, y, *, compressed, split=None, weights=None, fortran=False):
    arrays = {"probs": np.asfortranarray(p) if fortran else p, "labels": np.array(NAMES)[y]}
    arrays["class_names"] = np.array(NAMES)
    if split is not None:
        arrays["split"] = split
    if weights is not None:
        arrays["weight"] = weights
    (np.savez_compressed if compressed else np.savez)(path, **arrays)


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("batch_rows", [1, 37, 10_000])
def test_streamed_npz_equals_the_loaded_file(tmp_path, compressed, batch_rows):
    p, y = _multiclass(700, seed=9)
    split = np.where(np.arange(700) % 3 == 0, "calib", "test")
    _npz(tmp_path / "m.npz", p, y, compressed=compressed, split=split)
    stream = calcore.scan(tmp_path / "m.npz", split="calib", batch_rows=batch_rows)
    assert stream.class_names == NAMES and stream.n_rows_in_files == 700
    want = calcore.evaluate(calcore.load_predictions(tmp_path / "m.npz", split="calib"))
    _assert_same_report(calcore.evaluate(stream), want)


def test_npz_weights_equal_repeated_rows_and_bad_ones_are_named(tmp_path):
    p, y = _multiclass(300, seed=10)
    w = np.random.default_rng(10).integers(0, 3, 300).astype(np.float64)
    _npz(tmp_path / "w.npz", p, y, compressed=True, weights=w)
    stream = calcore.scan(tmp_path / "w.npz", batch_rows=50)
    assert stream.weight_column == "weight"
    rows = np.repeat(np.arange(300), w.astype(int))
    want = calcore.evaluate(calcore.Predictions.from_probs(p[rows], y[rows], NAMES))
    _assert_same_report(calcore.evaluate(stream), want, same_rows=False)
    w[211] = np.nan
    _npz(tmp_path / "w.npz", p, y, compressed=True, weights=w)
    with pytest.raises(calcore.CalcoreError, match=r"w\.npz, row 211 \(0-based\), column 'weight'"):
        calcore.evaluate(calcore.scan(tmp_path / "w.npz", batch_rows=50))


def test_npz_bad_label_deep_inside_names_its_row(tmp_path):
    p, y = _multiclass(500, seed=11)
    labels = y.astype(np.float64)
    labels[333] = 1.5
    np.savez(tmp_path / "f.npz", probs=p, labels=labels)
    with pytest.raises(calcore.CalcoreError, match=r"f\.npz, row 333 \(0-based\), array 'labels'"):
        calcore.evaluate(calcore.scan(tmp_path / "f.npz", batch_rows=64))


def test_fortran_ordered_and_truncated_npz_are_refused(tmp_path):
    p, y = _multiclass(100, seed=12)
    _npz(tmp_path / "f.npz", p, y, compressed=False, fortran=True)
    with pytest.raises(calcore.CalcoreError, match="Fortran .* order"):
        calcore.evaluate(calcore.scan(tmp_path / "f.npz"))
    _npz(tmp_path / "t.npz", p, y, compressed=False)
    data = (tmp_path / "t.npz").read_bytes()
    (tmp_path / "t.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(calcore.CalcoreError, match=r"t\.npz: "):
        calcore.evaluate(calcore.scan(tmp_path / "t.npz"))


def test_cli_streams_a_csv_over_the_size_budget(tmp_path, capsys, monkeypatch):
    p, y = _multiclass(2_000, seed=13)
    (tmp_path / "big.csv").write_text(_csv_text(p, y))
    assert main(["metrics", str(tmp_path / "big.csv"), "--json"]) == 0
    loaded = capsys.readouterr().out
    monkeypatch.setenv("CALCORE_MAX_DECODED_BYTES", "4096")  # the file is ~60 kB
    with pytest.raises(calcore.CalcoreError, match="max_decoded_bytes"):
        calcore.load_predictions(tmp_path / "big.csv")
    assert main(["metrics", str(tmp_path / "big.csv"), "--json"]) == 0
    streamed = capsys.readouterr().out
    a, b = json.loads(loaded), json.loads(streamed)
    assert a["n"] == b["n"] == 2_000
    for k in ("conf_ece", "classwise_ece", "ace", "nll", "brier", "accuracy"):
        assert b[k] == pytest.approx(a[k], rel=1e-10), k
