"""``calcore apply`` as a step of a data pipeline: every row and column kept, the scores
recalibrated (issue 37).

A prediction table with ids beyond 2**53, a date, a split, weights and a slice column
goes in as CSV, Parquet (several row groups) or Arrow IPC (several record batches) and
comes out in each of those formats; read back with pyarrow, every column but the scores
equals the input's, rows in the same order, and the scores equal ``transform`` of the
same rows loaded with :func:`calcore.load_predictions`.
"""

from __future__ import annotations

import csv
import io
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import calcore
from calcore.cli import main
from calcore.io.stream_write import write_applied

N_ROWS = 3000
SCORES = ("p_neg", "p_pos")
FORMATS = {"csv": ".csv", "parquet": ".parquet", "arrow": ".arrow"}


def _table(n: int = N_ROWS, seed: int = 0) -> pa.Table:
    """Ids beyond 2**53 (neighbours that float64 would merge), a date, a split, weights,
    a segment (slice column), text labels and two probability columns."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.02, 0.98, n), 6)
    label = np.where(rng.uniform(size=n) < p**1.4, "pos", "neg")
    days = rng.integers(0, 90, n).astype("timedelta64[D]") + np.datetime64("2026-01-01")
    return pa.table(
        {
            "id": pa.array(2**60 + np.arange(n, dtype=np.int64) * 3 - 7, pa.int64()),
            "date": pa.array(days.astype("datetime64[D]"), pa.date32()),
            "split": np.where(np.arange(n) % 3 == 0, "calib", "test"),
            "weight": np.round(rng.uniform(0.5, 2.0, n), 3),
            "segment": rng.choice(["north", "south", "east"], n),
            "label": label,
            "p_neg": np.round(1 - p, 6),
            "p_pos": p,
        }
    )


def _write(table: pa.Table, path) -> None:
    """``table`` as CSV, Parquet (row groups of 700 rows) or IPC (record batches of 700)."""
    path = str(path)
    if path.endswith(".csv"):
        pacsv.write_csv(table, path)
    elif path.endswith(".parquet"):
        pq.write_table(table, path, row_group_size=700)
    else:
        with ipc.new_file(path, table.schema) as writer:
            writer.write_table(table, max_chunksize=700)


def _read(path, *, text: bool = False) -> pa.Table:
    """A file as pyarrow reads it (CSV: every column as text with ``text``)."""
    path = str(path)
    if path.endswith(".csv"):
        if text:
            names = pacsv.read_csv(path).column_names
            convert = pacsv.ConvertOptions(column_types={c: pa.string() for c in names})
            return pacsv.read_csv(path, convert_options=convert)
        return pacsv.read_csv(path)
    if path.endswith(".parquet"):
        return pq.read_table(path)
    with ipc.open_file(path) as reader:
        return reader.read_all()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A Platt calibrator fitted on the calib rows, saved as ``calcore calibrate --save``
    saves it."""
    folder = tmp_path_factory.mktemp("calibrator")
    source = folder / "all.parquet"
    _write(_table(), source)
    calibrator = calcore.make_calibrator("platt").fit(
        calcore.load_predictions(source, split="calib")
    )
    path = folder / "platt.json"
    path.write_text(json.dumps(calibrator.to_dict()))
    return path, calibrator


def _apply(*argv) -> int:
    return main(["apply", *map(str, argv)])


def _expected(calibrator, source, **options) -> np.ndarray:
    """``transform`` of the rows of ``source`` loaded whole (the in-memory reference; an
    IPC file, which the loader does not read, through a Parquet copy of its rows)."""
    if str(source).endswith(".arrow"):
        copy = str(source)[: -len(".arrow")] + "-copy.parquet"
        pq.write_table(_read(source), copy)
        source = copy
    return calibrator.transform(calcore.load_predictions(source, **options)).probs


@pytest.mark.parametrize("out_format", FORMATS)
@pytest.mark.parametrize("in_format", FORMATS)
def test_only_the_scores_change(saved, tmp_path, capsys, in_format, out_format):
    path, calibrator = saved
    source, out = tmp_path / f"in{FORMATS[in_format]}", tmp_path / f"out{FORMATS[out_format]}"
    table = _table()
    _write(table, source)
    assert _apply(path, source, "--out", out) == 0
    assert f"recalibrated {N_ROWS} rows" in capsys.readouterr().out
    got = _read(out, text=in_format == "csv")
    assert got.column_names == table.column_names and got.num_rows == N_ROWS
    # every other column, in order: the input's values (CSV in: its cells' text)
    want = _read(source, text=True) if in_format == "csv" else table
    for name in table.column_names:
        if name not in SCORES:
            assert got[name].equals(want[name]), name
    if in_format != "csv" and out_format != "csv":  # the types are kept too
        assert got.schema == table.schema
    # ids beyond 2**53 stay exact: the neighbours float64 would merge stay distinct
    ids = got["id"].to_pylist() if in_format != "csv" else [int(v) for v in got["id"].to_pylist()]
    assert ids == table["id"].to_pylist()
    scores = np.column_stack([np.asarray(got[s].to_pylist(), dtype=float) for s in SCORES])
    np.testing.assert_allclose(scores, _expected(calibrator, source), rtol=0, atol=1e-12)


def test_a_csv_cell_comes_back_as_it_was(saved, tmp_path, capsys):
    """Text that a type guess would change (leading zeros, NA, a comma, a quote, spaces,
    an empty cell, an id beyond 2**53) is written back to a CSV exactly."""
    path, calibrator = saved
    source = tmp_path / "odd.csv"
    rows = [
        ["id", "code", "note", "label", "p_neg", "p_pos"],
        ["9007199254740993", "007", "NA", "pos", "0.25", "0.75"],
        ["9007199254740995", "1e5", "a, b", "neg", "0.90", "0.10"],
        ["-1", "", ' say "hi" ', "pos", "0.5", "0.5"],
        ["3", "0x1F", "line\nbreak", "neg", "0.6", "0.4"],
    ]
    with open(source, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    out = tmp_path / "out.csv"
    assert _apply(path, source, "--out", out) == 0
    with open(out, newline="") as f:
        back = list(csv.reader(f))
    assert len(back) == len(rows) and back[0] == rows[0]
    for got, want in zip(back[1:], rows[1:], strict=True):
        assert got[:4] == want[:4]
    scores = np.array([[float(v) for v in row[4:]] for row in back[1:]])
    np.testing.assert_allclose(scores, _expected(calibrator, source), rtol=0, atol=1e-12)
    # quoted only where a cell needs it
    assert out.read_text().splitlines()[1].startswith("9007199254740993,007,NA,pos,")


@pytest.mark.parametrize("in_format", ["csv", "parquet"])
def test_split_writes_only_its_rows_in_order(saved, tmp_path, capsys, in_format):
    path, calibrator = saved
    source, out = tmp_path / f"in{FORMATS[in_format]}", tmp_path / "out.parquet"
    table = _table()
    _write(table, source)
    assert _apply(path, source, "--split", "test", "--out", out) == 0
    got = pq.read_table(out)
    test = table.filter(pc.equal(table["split"], "test"))
    assert got.num_rows == test.num_rows
    kept = got["id"].to_pylist()
    assert [int(v) for v in kept] == test["id"].to_pylist()
    assert set(got["split"].to_pylist()) == {"test"}
    want = _expected(calibrator, source, split="test")
    np.testing.assert_allclose(got.select(SCORES).to_pandas().to_numpy(), want, atol=1e-12)


@pytest.mark.parametrize("in_format", ["csv", "parquet", "arrow"])
def test_streamed_batches_equal_one_batch(saved, tmp_path, capsys, in_format):
    """Small batches (many per file) write the same bytes as the command's run, and the
    command writes the same whether or not the file is over --max-decoded-bytes."""
    path, calibrator = saved
    source = tmp_path / f"in{FORMATS[in_format]}"
    _write(_table(), source)
    whole, streamed, small = (tmp_path / f"{k}.csv" for k in ("whole", "streamed", "small"))
    assert _apply(path, source, "--out", whole) == 0
    assert _apply(path, source, "--out", streamed, "--max-decoded-bytes", 1) == 0
    stream = calcore.scan(source, keep_columns=True, batch_rows=97)
    assert sum(1 for _ in stream.batches()) > 3  # really in pieces
    assert write_applied(stream.with_transform(calibrator.transform), small) == N_ROWS
    assert whole.read_bytes() == streamed.read_bytes() == small.read_bytes()


def test_suffix_keeps_the_originals_and_adds_the_calibrated_after_the_last_score(
    saved, tmp_path, capsys
):
    path, calibrator = saved
    source, out = tmp_path / "in.parquet", tmp_path / "out.arrow"
    table = _table()
    _write(table, source)
    assert _apply(path, source, "--suffix", "_cal", "--out", out) == 0
    assert "originals kept" in capsys.readouterr().out
    got = _read(out)
    names = list(table.column_names)
    at = names.index("p_pos") + 1
    assert got.column_names == names[:at] + ["p_neg_cal", "p_pos_cal"] + names[at:]
    for name in table.column_names:  # the scores too: the originals, unchanged
        assert got[name].equals(table[name]), name
    calibrated = np.column_stack([got["p_neg_cal"].to_numpy(), got["p_pos_cal"].to_numpy()])
    np.testing.assert_allclose(calibrated, _expected(calibrator, source), rtol=0, atol=1e-12)


def _logits_file(tmp_path, extra: dict | None = None):
    """Three-class logits as Parquet with ``extra`` columns, and a temperature scaling
    fitted on its calib rows (before the extra columns are added), saved."""
    rng = np.random.default_rng(4)
    z = rng.normal(size=(600, 3)) * 2
    label = np.array(["cat", "dog", "eel"])[np.argmax(z + rng.gumbel(size=z.shape), axis=1)]
    columns = {"id": np.arange(600), "label": label}
    columns |= {f"logit_{c}": z[:, j] for j, c in enumerate(("cat", "dog", "eel"))}
    columns["split"] = np.where(np.arange(600) % 2 == 0, "calib", "test")
    source = tmp_path / "logits.parquet"
    pq.write_table(pa.table(columns), source)
    calibrator = calcore.make_calibrator("ts").fit(calcore.load_predictions(source, split="calib"))
    saved = tmp_path / "ts.json"
    saved.write_text(json.dumps(calibrator.to_dict()))
    if extra:
        pq.write_table(pa.table(columns | extra), source)
    return source, saved, calibrator


def test_logits_in_calibrated_probabilities_out_named_p(tmp_path, capsys):
    source, saved, calibrator = _logits_file(tmp_path)
    out = tmp_path / "out.csv"
    assert _apply(saved, source, "--out", out) == 0
    assert "replaced by calibrated probabilities" in capsys.readouterr().out
    got = _read(out)
    assert got.column_names == ["id", "label", "p_cat", "p_dog", "p_eel", "split"]
    probs = got.select(["p_cat", "p_dog", "p_eel"]).to_pandas().to_numpy()
    np.testing.assert_allclose(probs, _expected(calibrator, source), rtol=0, atol=1e-12)
    # with --suffix the logits stay and the probabilities follow them
    assert _apply(saved, source, "--suffix", "_cal", "--out", out) == 0
    names = _read(out).column_names
    assert names[2:8] == ["logit_cat", "logit_dog", "logit_eel", "p_cat_cal", "p_dog_cal",
                          "p_eel_cal"]  # fmt: skip


def test_a_per_slice_calibrator_keeps_its_slice_column(tmp_path, capsys):
    source, out, saved = tmp_path / "in.parquet", tmp_path / "out.parquet", tmp_path / "ps.json"
    table = _table()
    _write(table, source)
    argv = ["calibrate", str(source), "--method", "platt", "--per-slice", "segment",
            "--min-slice-fit-rows", "100", "--save", str(saved)]  # fmt: skip
    assert main(argv) == 0
    assert _apply(saved, source, "--out", out) == 0
    assert "per slice of segment" in capsys.readouterr().out
    got = pq.read_table(out)
    for name in table.column_names:
        if name not in SCORES:
            assert got[name].equals(table[name]), name
    from calcore.calibrators._saved import read_calibrator

    calibrator = read_calibrator(saved)
    preds = calcore.load_predictions(source, slice_columns=["segment"])
    want = calibrator.transform(preds).probs
    np.testing.assert_allclose(got.select(SCORES).to_pandas().to_numpy(), want, atol=1e-12)


def test_npz_keeps_its_label_and_probability_layout(saved, tmp_path, capsys):
    path, calibrator = saved
    table = _table(200)
    source = tmp_path / "in.npz"
    probs = np.column_stack([table["p_neg"].to_numpy(), table["p_pos"].to_numpy()])
    labels = (table["label"].to_numpy(zero_copy_only=False) == "pos").astype(np.int64)
    np.savez(source, probs=probs, labels=labels, class_names=np.array(["neg", "pos"]))
    out = tmp_path / "out.csv"
    assert _apply(path, source, "--out", out) == 0
    assert _read(out).column_names == ["label", "p_neg", "p_pos"]
    assert _apply(path, source, "--suffix", "_cal", "--out", out) == 2
    assert "NPZ archive has none" in capsys.readouterr().err


# -- bad input: one line on stderr, exit 2, nothing written -------------------------------


def _refused(capsys, argv, *words) -> str:
    assert _apply(*argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    for word in words:
        assert word in captured.err, (word, captured.err)
    return captured.err


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link", "relative path"])
def test_an_output_that_is_the_input_is_refused(saved, tmp_path, capsys, monkeypatch, how):
    path, _ = saved
    source = tmp_path / "in.csv"
    _write(_table(), source)
    before = source.read_bytes()
    out = {"same path": source, "symlink": tmp_path / "link.csv", "hard link": tmp_path / "h.csv"}
    if how == "symlink":
        out["symlink"].symlink_to(source)
    elif how == "hard link":
        os.link(source, out["hard link"])
    elif how == "relative path":
        monkeypatch.chdir(tmp_path)
        out[how] = "./in.csv"
    listed = sorted(os.listdir(tmp_path))
    _refused(capsys, [path, source, "--out", out[how]], "is the input file", "Write to another")
    assert source.read_bytes() == before and sorted(os.listdir(tmp_path)) == listed


def test_an_output_in_a_missing_folder_is_refused(saved, tmp_path, capsys):
    path, _ = saved
    source = tmp_path / "in.parquet"
    _write(_table(), source)
    out = tmp_path / "nowhere" / "out.csv"
    _refused(capsys, [path, source, "--out", out], "no such directory", "Create it first")
    assert not out.parent.exists()


def test_a_column_colliding_with_a_calibrated_one_is_refused_naming_both(saved, tmp_path, capsys):
    path, _ = saved
    source = tmp_path / "in.parquet"
    _write(_table().append_column("p_pos_cal", pa.array(np.zeros(N_ROWS))), source)
    out = tmp_path / "out.parquet"
    err = _refused(capsys, [path, source, "--suffix", "_cal", "--out", out], "--suffix _cal")
    assert "column 'p_pos_cal' would collide" in err and "'p_pos'" in err
    assert not out.exists()
    _refused(capsys, [path, source, "--suffix", "", "--out", out], "--suffix ''")
    assert not out.exists()


def test_a_column_colliding_with_the_probabilities_of_logits_is_refused(tmp_path, capsys):
    dog = {"p_dog": np.zeros(600)}
    source, saved, _ = _logits_file(tmp_path, extra=dog)
    out = tmp_path / "out.csv"
    err = _refused(capsys, [saved, source, "--scores", "logits", "--out", out], "'logit_dog'")
    assert "column 'p_dog' would collide" in err and not out.exists()


def test_a_column_csv_cannot_hold_is_refused_naming_it(saved, tmp_path, capsys):
    path, _ = saved
    table = _table(50)
    source = tmp_path / "in.parquet"
    _write(table.append_column("tags", pa.array([[1, 2]] * 50)), source)
    _refused(capsys, [path, source, "--out", tmp_path / "out.csv"], "'tags'", ".parquet")
    assert not (tmp_path / "out.csv").exists()
    assert _apply(path, source, "--out", tmp_path / "out.parquet") == 0  # kept as it is
    assert pq.read_table(tmp_path / "out.parquet")["tags"].to_pylist() == [[1, 2]] * 50


def test_files_whose_columns_differ_are_refused(saved, tmp_path, capsys):
    path, _ = saved
    folder = tmp_path / "logs"
    folder.mkdir()
    table = _table(100)
    _write(table, folder / "a.parquet")
    _write(table.drop_columns(["segment"]), folder / "b.parquet")
    argv = [path, folder, "--out", tmp_path / "out.parquet"]
    _refused(capsys, argv, "b.parquet", "has no column 'segment'")
    _write(table.select(["date", "id", *table.column_names[2:]]), folder / "b.parquet")
    _refused(capsys, argv, "b.parquet", "has column 'date' where", "(column 1)")


def test_a_categorical_column_reaches_an_ipc_file_decoded(saved, tmp_path, capsys):
    """An IPC file holds one dictionary per column: batches of other categories are
    written decoded, their values unchanged."""
    path, _ = saved
    table = _table()
    segment = pc.dictionary_encode(table["segment"])
    source = tmp_path / "in.parquet"
    _write(table.set_column(4, "segment", segment), source)
    out = tmp_path / "out.arrow"
    assert _apply(path, source, "--out", out) == 0
    assert _read(out)["segment"].to_pylist() == table["segment"].to_pylist()


def test_csv_bytes_of_a_round_trip_differ_only_in_score_cells(saved, tmp_path, capsys):
    """A CSV written without needless quotes comes back byte for byte, but its scores."""
    path, _ = saved
    table = _table(200)
    buffer = io.BytesIO()
    options = pacsv.WriteOptions(quoting_style="none", include_header=False)
    pacsv.write_csv(table, buffer, options)
    source = tmp_path / "in.csv"
    source.write_bytes((",".join(table.column_names) + "\n").encode() + buffer.getvalue())
    out = tmp_path / "out.csv"
    assert _apply(path, source, "--out", out) == 0
    for a, b in zip(source.read_text().splitlines(), out.read_text().splitlines(), strict=True):
        assert a.split(",")[:-2] == b.split(",")[:-2]


def test_an_output_inside_the_input_folder_is_refused(saved, tmp_path, capsys):
    """The next scan of the folder would read it as input; a hidden name is skipped."""
    path, _ = saved
    folder = tmp_path / "logs"
    (folder / "day=1").mkdir(parents=True)
    _write(_table(100), folder / "day=1" / "part.parquet")
    out = folder / "recalibrated.parquet"
    _refused(capsys, [path, folder, "--out", out], "inside the input folder", "a later run")
    assert sorted(os.listdir(folder)) == ["day=1"]
    assert _apply(path, folder, "--out", folder / "_recalibrated.parquet") == 0


def test_one_logit_column_becomes_the_positive_class_probability(tmp_path, capsys):
    rng = np.random.default_rng(2)
    z = rng.normal(size=400) * 2
    y = (rng.uniform(size=400) < 1 / (1 + np.exp(-z))).astype(np.int64)
    source = tmp_path / "one.parquet"
    pq.write_table(pa.table({"k": np.arange(400), "label": y, "logit_spam": z}), source)
    calibrator = calcore.make_calibrator("platt").fit(calcore.load_predictions(source))
    saved = tmp_path / "platt.json"
    saved.write_text(json.dumps(calibrator.to_dict()))
    out = tmp_path / "out.parquet"
    assert _apply(saved, source, "--out", out) == 0
    got = pq.read_table(out)
    assert got.column_names == ["k", "label", "p_spam"] and got["label"].to_pylist() == y.tolist()
    want = _expected(calibrator, source)[:, 1]
    np.testing.assert_allclose(got["p_spam"].to_numpy(), want, rtol=0, atol=1e-12)
