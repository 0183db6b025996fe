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
from calcore.metrics.registry import IN_MEMORY_METRICS

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
        if want.metrics[k] is None or got.metrics[k] is None:
            # not computed: the binary measures of multiclass rows (both None), or those a
            # stream leaves out because they need the rows in memory (documented, one note)
            assert want.metrics[k] is None and got.metrics[k] is None or k in IN_MEMORY_METRICS, k
            continue
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
    basis = " (They were read as probabilities"  # decided on other rows when streamed
    assert str(info.value).split(basis)[0] == str(loaded.value).split(basis)[0]


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


def test_blank_lines_and_stray_quotes_stream_as_they_load(tmp_path, tiny_pieces):
    """A blank line inside the data is a row for the loader (an error: no label); a quote
    inside unquoted text is a literal character; pieces must agree with both."""
    p, y = _multiclass(3_000, seed=14)
    lines = _csv_text(p, y).splitlines()
    blank = list(lines)
    blank[1_500] = ""  # data row 1,499: file line 1,501
    (tmp_path / "blank.csv").write_text("\n".join(blank) + "\n")
    with pytest.raises(calcore.CalcoreError) as loaded:
        calcore.load_predictions(tmp_path / "blank.csv")
    for batch_rows in (7, 100, 5_000):
        with pytest.raises(calcore.CalcoreError) as streamed:
            calcore.evaluate(calcore.scan(tmp_path / "blank.csv", batch_rows=batch_rows))
        assert str(streamed.value) == str(loaded.value)
    note = np.array(['5" screen' if i % 50 == 0 else "x" for i in range(3_000)], dtype=object)
    (tmp_path / "inch.csv").write_text(_csv_text(p, y, note=note))
    want = calcore.evaluate(calcore.load_predictions(tmp_path / "inch.csv"))
    got = calcore.evaluate(calcore.scan(tmp_path / "inch.csv", batch_rows=64))
    _assert_same_report(got, want)


def test_csv_batches_hold_at_most_batch_rows(tmp_path):
    p, y = _multiclass(2_000, seed=15)
    (tmp_path / "b.csv").write_text(_csv_text(p, y))
    sizes = [b.preds.n_samples for b in calcore.scan(tmp_path / "b.csv", batch_rows=100).batches()]
    assert max(sizes) <= 100 and sum(sizes) == 2_000


def test_split_selection_checks_only_the_selected_rows_weights(tmp_path):
    p, y = _multiclass(400, seed=16)
    split = np.where(np.arange(400) % 2 == 0, "calib", "test")
    w = np.ones(400)
    w[10] = np.nan  # a calib row
    pq.write_table(
        pa.table({"label": y, **{f"p_{c}": p[:, j] for j, c in enumerate(NAMES)},
                  "split": split, "weight": w}),
        tmp_path / "s.parquet",
    )  # fmt: skip
    got = calcore.evaluate(calcore.scan(tmp_path / "s.parquet", split="test", batch_rows=64))
    want = calcore.evaluate(calcore.load_predictions(tmp_path / "s.parquet", split="test"))
    _assert_same_report(got, want)
    with pytest.raises(
        calcore.CalcoreError, match=r"s\.parquet, row 10 \(0-based\), column 'weight'"
    ):
        calcore.evaluate(calcore.scan(tmp_path / "s.parquet", split="calib"))


def test_npz_weights_must_be_numbers_and_decimal_parquet_weights_stream(tmp_path):
    p, y = _multiclass(50, seed=17)
    np.savez(tmp_path / "b.npz", probs=p, labels=y, weight=np.ones(50, dtype=bool))
    with pytest.raises(calcore.CalcoreError, match="numeric dtype"):
        calcore.scan(tmp_path / "b.npz")
    with pytest.raises(calcore.CalcoreError, match="numeric dtype"):
        calcore.load_predictions(tmp_path / "b.npz")
    import decimal

    weights = pa.array([decimal.Decimal("1.5")] * 50, type=pa.decimal128(5, 2))
    pq.write_table(
        pa.table({"label": y, **{f"p_{c}": p[:, j] for j, c in enumerate(NAMES)},
                  "weight": weights}),
        tmp_path / "d.parquet",
    )  # fmt: skip
    got = calcore.evaluate(calcore.scan(tmp_path / "d.parquet"))
    want = calcore.evaluate(calcore.load_predictions(tmp_path / "d.parquet"))
    _assert_same_report(got, want)


def test_a_streamed_utf8_error_names_the_files_byte(tmp_path, tiny_pieces):
    p, y = _multiclass(2_000, seed=18)
    data = bytearray(_csv_text(p, y).encode())
    at = data.index(b"\n", 30_000) + 1  # the first byte of a line far down
    data[at : at + 3] = b"\xff\xfe\xfd"
    (tmp_path / "u.csv").write_bytes(bytes(data))
    with pytest.raises(calcore.CalcoreError) as loaded:
        calcore.load_predictions(tmp_path / "u.csv")
    with pytest.raises(calcore.CalcoreError) as streamed:
        calcore.evaluate(calcore.scan(tmp_path / "u.csv", batch_rows=50))
    assert f"byte {at} (0xff)" in str(loaded.value)
    assert str(streamed.value) == str(loaded.value)


def test_an_npz_member_shorter_than_its_header_is_refused(tmp_path):
    import io
    import zipfile

    p, y = _multiclass(100, seed=19)
    with zipfile.ZipFile(tmp_path / "cut.npz", "w") as zf:
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            buf, {"descr": "<f8", "fortran_order": False, "shape": (100, 3)}
        )
        buf.write(p[:60].astype("<f8").tobytes())  # the header promises 100 rows
        zf.writestr("probs.npy", buf.getvalue())
        labels = io.BytesIO()
        np.save(labels, y)
        zf.writestr("labels.npy", labels.getvalue())
    # the member sizes are checked against the headers before any row is read
    with pytest.raises(calcore.CalcoreError, match=r"cut\.npz: array 'probs' declares 2,400 bytes"):
        calcore.evaluate(calcore.scan(tmp_path / "cut.npz", batch_rows=25))


def test_with_split_selects_the_rows_scan_would_select(tmp_path):
    p, y = _multiclass(500, seed=17)
    split = np.where(np.arange(500) % 3 == 0, "calib", "test")
    pq.write_table(
        pa.table({"label": y, **{f"p_{c}": p[:, j] for j, c in enumerate(NAMES)}, "split": split}),
        tmp_path / "s.parquet",
    )
    every_row = calcore.scan(tmp_path / "s.parquet", batch_rows=64)
    for name in ("calib", "test"):
        got = calcore.evaluate(every_row.with_split(name))
        want = calcore.evaluate(calcore.load_predictions(tmp_path / "s.parquet", split=name))
        _assert_same_report(got, want)
    assert calcore.evaluate(every_row.with_split("test").with_split(None)).metrics == (
        calcore.evaluate(every_row).metrics
    )
    with pytest.raises(calcore.CalcoreError, match="split must be None, 'calib' or 'test'"):
        every_row.with_split("train")
    pq.write_table(
        pa.table({"label": y, **{f"p_{c}": p[:, j] for j, c in enumerate(NAMES)}}),
        tmp_path / "n.parquet",
    )
    with pytest.raises(calcore.CalcoreError, match="there is no split column"):
        calcore.scan(tmp_path / "n.parquet").with_split("test")
