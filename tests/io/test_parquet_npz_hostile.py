"""Parquet and NPZ inputs of issue 33 (hostile input, round two), loaded and streamed.

Dictionary (pandas Categorical) columns are judged by the values their rows hold, not by
their categories; a bad value deep in a file is named at its file row and row group;
text that is not UTF-8 and pages whose checksum fails are errors naming where; integer
metadata stays exact beyond 2**53; NPZ archives with two members of one name or a header
larger than its data are refused for what they are; a stream reports what its scan
decided, as a loaded file's report does.

The expectations come from outside the code under test: the same rows written without
dictionaries, rows and row groups placed by the test, integers written by the test.
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore
from calcore import CalcoreError
from calcore.cli import cli_message, main
from calcore.io._rows import FIRST_ROWS

N_ROWS = 5000
GROUP_ROWS = 1000
CLASSES = ["a", "b", "c"]


def _rows(seed: int = 0) -> dict:
    """Plain columns of a 3-class file: labels, scores, split and a region."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet([2.0, 2.0, 2.0], N_ROWS)
    return {
        "label": rng.choice(CLASSES, N_ROWS).tolist(),
        **{f"p_{c}": probs[:, j] for j, c in enumerate(CLASSES)},
        "split": rng.choice(["calib", "test"], N_ROWS).tolist(),
        "region": rng.choice(["north", "south"], N_ROWS).tolist(),
    }


def _categorical(values: list, categories: list) -> pa.DictionaryArray:
    """What pandas writes for a Categorical: indices into categories (some unused)."""
    indices = pa.array([categories.index(v) for v in values], type=pa.int32())
    return pa.DictionaryArray.from_arrays(indices, pa.array(categories))


def _write_pair(tmp_path, rows: dict, categories: dict) -> tuple:
    """The rows written twice, several row groups each: with ``categories`` as dictionary
    columns (unused categories included) and as plain columns."""
    plain = pa.table(rows)
    encoded = pa.table(
        {
            name: _categorical(values, categories[name]) if name in categories else values
            for name, values in rows.items()
        }
    )
    paths = tmp_path / "dictionary.parquet", tmp_path / "plain.parquet"
    pq.write_table(encoded, paths[0], row_group_size=GROUP_ROWS)
    pq.write_table(plain, paths[1], row_group_size=GROUP_ROWS)
    assert pa.types.is_dictionary(pq.read_schema(paths[0]).field("split").type)
    return paths


UNUSED = {
    "label": [*CLASSES, "z"],  # 'z' is no class, and no row has it
    "split": ["calib", "holdout", "test"],
    "region": ["east", "north", "south", "west"],
}


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", calcore.CalcoreWarning)
        return fn(*args, **kwargs)


def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(CalcoreError) as caught:
        _quiet(fn, *args, **kwargs)
    return str(caught.value)


def _streamed(path, **options):
    return calcore.evaluate(calcore.scan(path, **options), metrics=["accuracy", "conf_ece", "nll"])


# -- dictionary columns: unused categories, true rows -----------------------------------------
def test_dictionary_columns_with_unused_categories_read_as_their_plain_twins(tmp_path):
    encoded, plain = _write_pair(tmp_path, _rows(), UNUSED)
    got, want = (_quiet(calcore.load_predictions, p) for p in (encoded, plain))
    assert got.class_names == want.class_names == tuple(CLASSES)
    np.testing.assert_array_equal(got.labels, want.labels)
    np.testing.assert_array_equal(got.probs, want.probs)
    assert got.metadata["region"].categories == ("north", "south")  # no 'east', 'west'
    np.testing.assert_array_equal(got.metadata["region"].values, want.metadata["region"].values)
    for split in (None, "calib", "test"):  # every streamed pass, split selected or not
        for batch_rows in (10_000, 700):  # whole row groups, and groups cut into batches
            a = _quiet(_streamed, encoded, split=split, batch_rows=batch_rows)
            b = _quiet(_streamed, plain, split=split, batch_rows=batch_rows)
            assert a.n == b.n and a.metrics == b.metrics


def test_streamed_slices_of_a_dictionary_column_ignore_its_unused_categories(tmp_path):
    encoded, plain = _write_pair(tmp_path, _rows(), UNUSED)
    sliced = [
        _quiet(
            calcore.evaluate_by, calcore.scan(p, split="test", slice_columns=["region"]), "region"
        )
        for p in (encoded, plain)
    ]
    assert [s.values for s in sliced[0].slices] == [s.values for s in sliced[1].slices]
    assert {s.values for s in sliced[0].slices} == {("north",), ("south",)}
    samples = [
        calcore.scan(p, slice_columns=["region"]).sample_slice_columns(300, splits=True)
        for p in (encoded, plain)
    ]
    for split in ("calib", "test"):
        a, b = samples[0][split]["region"], samples[1][split]["region"]
        assert a.categories == b.categories == ("north", "south")
        np.testing.assert_array_equal(a.values, b.values)


@pytest.mark.parametrize("column, bad", [("split", "bogus"), ("label", "zz")])
@pytest.mark.parametrize("batch_rows", [10_000, 700])
def test_a_bad_value_deep_in_a_dictionary_column_is_named_at_its_file_row(
    tmp_path, column, bad, batch_rows
):
    rows = _rows()
    rows[column][3998] = bad  # row group 3 holds rows 3000 to 3999
    categories = {**UNUSED, column: [*UNUSED[column], bad]}
    encoded, plain = _write_pair(tmp_path, rows, categories)
    for path in (encoded, plain):
        messages = [
            _error(calcore.load_predictions, path),
            _error(_streamed, path, batch_rows=batch_rows),
        ]
        for message in messages:
            assert f"row 3998 (0-based) in row group 3, column {column!r}" in message, message
            assert repr(bad) in message, message
    assert messages[0] == messages[1]


# -- text that is not UTF-8 -------------------------------------------------------------------
def _non_utf8(values: list, row: int) -> pa.Array:
    """Text values with row ``row`` replaced by cp1252 bytes, stored unchecked as a string
    column (as a writer that does not validate may store them)."""
    raw = [v.encode() for v in values]
    raw[row] = "caf\u00e9".encode("cp1252")
    return pa.array(raw, type=pa.binary()).view(pa.string())


@pytest.mark.parametrize("column", ["label", "split", "region"])
@pytest.mark.parametrize("dictionary", [False, True], ids=["plain", "dictionary"])
def test_text_that_is_not_utf8_is_named_by_file_column_and_row(tmp_path, column, dictionary):
    rows = _rows()
    table = pa.table({**rows, column: _non_utf8(rows[column], 2500)})
    if dictionary:
        table = table.set_column(
            table.schema.get_field_index(column), column, table[column].dictionary_encode()
        )
    path = tmp_path / "latin.parquet"
    pq.write_table(table, path, row_group_size=GROUP_ROWS)
    slicing = ["region"] if column == "region" else None
    messages = [
        _error(calcore.load_predictions, path),
        _error(_streamed, path, slice_columns=slicing),
        _error(_streamed, path, slice_columns=slicing, batch_rows=700),
    ]
    if column == "region":  # read for slicing alone (quantile passes, samples' columns)
        stream = calcore.scan(path, split="test", slice_columns=["region"])
        messages.append(_error(lambda: list(stream.slice_batches())))
    for message in messages:
        assert message.startswith("latin.parquet, row 2500 (0-based) in row group 2"), message
        assert f"column {column!r}" in message and "not valid UTF-8" in message, message


def test_an_unused_category_that_is_not_utf8_is_no_value(tmp_path):
    rows = _rows()
    categories = {name: sorted(set(rows[name])) for name in ("label", "split", "region")}
    table = pa.table(rows)
    for name, values in categories.items():
        raw = [v.encode() for v in values] + ["caf\u00e9".encode("cp1252")]  # used by no row
        dictionary = pa.array(raw, type=pa.binary()).view(pa.string())
        indices = pa.array([values.index(v) for v in rows[name]], type=pa.int32())
        encoded = pa.DictionaryArray.from_arrays(indices, dictionary)
        table = table.set_column(table.schema.get_field_index(name), name, encoded)
    path, plain = tmp_path / "unused.parquet", tmp_path / "plain.parquet"
    pq.write_table(table, path, row_group_size=GROUP_ROWS)
    pq.write_table(pa.table(rows), plain, row_group_size=GROUP_ROWS)
    got, want = (_quiet(calcore.load_predictions, p) for p in (path, plain))
    np.testing.assert_array_equal(got.labels, want.labels)
    assert got.metadata["region"].categories == want.metadata["region"].categories
    a, b = (_quiet(_streamed, p, split="test", slice_columns=["region"]) for p in (path, plain))
    assert a.metrics == b.metrics


def test_a_class_name_that_is_not_utf8_is_refused_for_what_it_is(tmp_path, capsys):
    table = pa.table(
        {"label": ["cafQ", "b", "b"], "p_cafQ": [0.9, 0.2, 0.3], "p_b": [0.1, 0.8, 0.7]}
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, store_schema=False)  # names only in the Parquet footer
    path = tmp_path / "names.parquet"
    path.write_bytes(sink.getvalue().replace(b"p_cafQ", "p_caf\u00e9".encode("cp1252")))
    for read in (calcore.load_predictions, _streamed, calcore.inspect_table):
        message = _error(read, path)
        assert "names.parquet: a column name" in message and "not valid UTF-8" in message
    assert main(["metrics", str(path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


# -- page checksums -----------------------------------------------------------------------------
def _flip_last_value_bit(path, group: int, column: int) -> None:
    """Flip the lowest mantissa bit of a plain float64 column chunk's last value."""
    chunk = pq.ParquetFile(path).metadata.row_group(group).column(column)
    data = bytearray(path.read_bytes())
    data[chunk.data_page_offset + chunk.total_compressed_size - 8] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_page_whose_checksum_fails_is_refused_naming_the_row_group(tmp_path):
    path = tmp_path / "flipped.parquet"
    table = pa.table(_rows())
    options = dict(compression="none", use_dictionary=False, write_page_checksum=True)
    pq.write_table(table, path, row_group_size=GROUP_ROWS, **options)
    _flip_last_value_bit(path, group=2, column=2)  # p_b of row 2999
    # unverified, pyarrow reads a slightly different number: silently wrong data
    changed = pq.read_table(path)["p_b"][2999].as_py()
    assert (
        changed != table["p_b"][2999].as_py() and abs(changed - table["p_b"][2999].as_py()) < 1e-12
    )
    messages = [
        _error(calcore.load_predictions, path),
        _error(_streamed, path),
        _error(_streamed, path, batch_rows=700),
    ]
    for message in messages:
        assert message.startswith("flipped.parquet, row group 2 (rows from 2000): cannot be read")
        assert "CRC checksum" in message and "re-export" in message, message


def test_parquet_written_by_calcore_carries_page_checksums(tmp_path):
    from calcore.io.stream_write import write_predictions

    path, source = tmp_path / "out.parquet", tmp_path / "in.parquet"
    pq.write_table(pa.table(_rows()), source)
    write_predictions(_quiet(calcore.load_predictions, source), path)
    column = pq.read_schema(path).get_field_index("p_a")
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(column)
    data = bytearray(path.read_bytes())
    first_page = chunk.dictionary_page_offset or chunk.data_page_offset
    data[first_page + 400] ^= 0x01  # past the page header, inside the page's values
    path.write_bytes(bytes(data))
    message = _error(calcore.load_predictions, path)
    assert "row group 0" in message and "CRC checksum" in message, message


# -- integer metadata beyond 2**53 --------------------------------------------------------------
IDS = [2**53 + 1, 2**53 + 2]  # one float64 apart from each other's neighbours: 2**53, 2**53 + 2
UIDS = [2**64 - 2, 2**64 - 1]  # uint64 only; as float64 both are 2**64


def _with_ids(ids: list) -> dict:
    rows = {k: v[:600] for k, v in _rows().items() if k != "region"}
    rows["uid"] = [ids[k % 2] for k in range(600)]
    return rows


def _id_files(tmp_path, ids: list, arrow_type) -> list:
    rows = _with_ids(ids)
    parquet, csv, npz = tmp_path / "ids.parquet", tmp_path / "ids.csv", tmp_path / "ids.npz"
    pq.write_table(pa.table({**rows, "uid": pa.array(rows["uid"], arrow_type)}), parquet)
    header = list(rows)
    lines = [",".join(header)] + [",".join(str(rows[c][i]) for c in header) for i in range(600)]
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    np.savez(
        npz,
        probs=np.column_stack([rows[f"p_{c}"] for c in CLASSES]),
        labels=np.array([CLASSES.index(v) for v in rows["label"]]),
        class_names=np.array(CLASSES),
        uid=np.array(rows["uid"], dtype=arrow_type.to_pandas_dtype()),
    )
    return [parquet, csv, npz]


@pytest.mark.parametrize(
    "ids, arrow_type", [(IDS, pa.int64()), (UIDS, pa.uint64())], ids=["int64", "uint64"]
)
def test_integer_ids_beyond_2_53_stay_two_exact_slices(tmp_path, ids, arrow_type):
    want = {(str(ids[0]),), (str(ids[1]),)}
    for path in _id_files(tmp_path, ids, arrow_type):
        preds = _quiet(calcore.load_predictions, path, slice_columns=["uid"])
        col = preds.metadata["uid"]
        assert col.kind == "integer" and col.n_distinct == 2, path
        assert sorted(set(col.values.tolist())) == ids, path  # exact Python integers
        sliced = _quiet(calcore.evaluate_by, preds, "uid")
        assert {s.values for s in sliced.slices} == want, path
        assert [s.n for s in sliced.slices] == [300, 300]
        stream = calcore.scan(path, slice_columns=["uid"], batch_rows=250)
        streamed = _quiet(calcore.evaluate_by, stream, "uid")
        assert {s.values for s in streamed.slices} == want, path
        sample = stream.sample_slice_columns(100)["uid"]
        assert set(sample.values.tolist()) <= set(ids), path
        # quantile ranges would compare them as floats: refused, with the limit
        for source in (preds, stream):
            message = _error(calcore.evaluate_by, source, "uid:q2")
            assert "beyond 2**53" in message and "'uid'" in message, message


def test_integer_text_beyond_64_bits_stays_text_and_missing_ids_stay_missing():
    from calcore.predictions.metadata import metadata_from_text

    huge = metadata_from_text("id", np.array([str(2**70), str(2**70 + 1)], dtype=object))
    assert huge.kind == "categorical" and huge.categories == (str(2**70), str(2**70 + 1))
    ids = metadata_from_text("id", np.array([str(IDS[0]), "", str(IDS[1])], dtype=object))
    assert ids.kind == "integer" and ids.missing().tolist() == [False, True, False]
    assert ids.values[[0, 2]].tolist() == IDS
    assert ids.take(np.array([2, 1])).missing().tolist() == [False, True]
    arabic = metadata_from_text("n", np.array(["\u0663", "\u0664"], dtype=object))
    assert arabic.kind == "categorical"  # digits of another script are not read as numbers


# -- NPZ: duplicate members, headers larger than their data ------------------------------------
def _npz_members(members: list[tuple[str, np.ndarray]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name
        for name, arr in members:
            member = io.BytesIO()
            np.save(member, arr)
            zf.writestr(name + ".npy", member.getvalue())
    return buf.getvalue()


@pytest.mark.parametrize("twice", ["labels", "probs", "region"])
def test_an_npz_with_two_members_of_one_name_is_refused(tmp_path, twice):
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    members = [
        ("probs", probs),
        ("labels", np.array([0, 1, 1])),
        ("region", np.array(["n", "s", "n"])),
    ]
    members.append((twice, dict(members)[twice][::-1].copy()))
    path = tmp_path / "twice.npz"
    path.write_bytes(_npz_members(members))
    for read in (
        lambda: calcore.load_predictions(path),
        lambda: _streamed(path),
        lambda: calcore.inspect_table(path),
    ):
        message = _error(read)
        assert message.startswith("twice.npz: ") and f"'{twice}.npy' (2 times)" in message
    assert main(["metrics", str(path)]) == 2


def test_an_npy_header_larger_than_its_data_names_the_shape_and_the_limit(tmp_path, capsys):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"
    header = header.ljust(117) + "\n"
    npy = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(16)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("probs.npy", npy)
        member = io.BytesIO()
        np.save(member, np.array([0, 1]))
        zf.writestr("labels.npy", member.getvalue())
    path = tmp_path / "huge.npz"
    path.write_bytes(buf.getvalue())
    expected_bytes = f"{2**64 * 8:,} bytes"  # 2**32 x 2**32 float64: beyond int64 itself
    for message in (_error(calcore.load_predictions, path), _error(_streamed, path)):
        assert "(4294967296, 4294967296)" in message and expected_bytes in message, message
        assert "holds only 144 bytes" in message and "unpickling" not in message, message
    assert main(["metrics", str(path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


# -- what a stream decided, said once -----------------------------------------------------------
def test_a_stream_notes_what_its_scan_decided_as_a_loaded_file_does(tmp_path, capsys):
    rng = np.random.default_rng(3)
    logits = rng.normal(0.0, 3.0, (400, 3))
    rows = {
        "label": rng.choice(CLASSES, 400).tolist(),
        **{c: logits[:, j] for j, c in enumerate(CLASSES)},  # no prefix says the kind
        "note": rng.choice(["x", "y"], 400).tolist(),
    }
    path = tmp_path / "logits.parquet"
    pq.write_table(pa.table(rows), path, row_group_size=100)
    loaded = _quiet(calcore.load_predictions, path).load_report
    stream = calcore.scan(path)
    assert loaded.scores_kind == "logits"
    # the loaded file's sentence on the kind, said of the stream's first rows
    said = next(n for n in loaded.messages() if n.startswith("Scores read as logits: "))
    assert [n.replace(FIRST_ROWS, "") for n in stream.notes if n.startswith("Scores")] == [said]
    why = loaded.ignored_reasons[loaded.ignored_columns.index("note")]
    assert f"logits.parquet: column 'note' was ignored ({why})." in stream.notes
    assert main(["metrics", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("Scores read as logits: ") == 1 and out.count("'note' was ignored") == 1
    assert main(["metrics", str(path), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    # the same notes, in the command line's terms ("--scores auto (the default) saw")
    assert notes[: len(stream.notes)] == [cli_message(n) for n in stream.notes]
    assert "--scores auto (the default) saw values outside" in notes[0]
    kept = calcore.scan(path, slice_columns=["note"]).notes
    assert "Kept for slicing (not scores): 'note'." in kept and not any(
        "ignored" in n for n in kept
    )
