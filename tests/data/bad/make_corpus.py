"""Write the bad/hostile input corpus of ``tests/data/bad/`` and its ``MANIFEST.json``.

Run from anywhere: ``python tests/data/bad/make_corpus.py [OUT_DIR]`` (default: this
folder). The output is deterministic: no timestamps, no randomness (the NPZ archives
are written member by member with a fixed date; Parquet files depend only on the
pyarrow version). ``tests/test_bad_corpus.py`` checks that the committed files are
what this script writes.

Every case of ``CASES`` is one file plus the loader options to use with it and the
expected outcome, which is a decision recorded here, not a measurement:

``outcome``
    ``"error"``: ``calcore.load_predictions`` raises ``CalcoreError`` and
    ``calcore metrics FILE`` exits 2 with one line on stderr. ``"warning"``: the
    file loads and a ``CalcoreWarning`` is issued. ``"ok"``: it loads with no warning.
``row``
    Text the message must contain to name the row (``"line 4"`` for CSV, where the
    header is line 1; ``"row 1 (0-based)"`` for Parquet/NPZ); ``null`` when no row
    is at fault (an empty file, a header problem is ``"line 1"``).
``column``
    The column (or NPZ array) the message must name, quoted as ``'name'``; ``null``
    when no single column is at fault.
``phrases``
    Further text the message (error or warning) must contain; for errors, one of
    them says how to fix the problem.
``expect``
    For files that load: facts about the result (class names, rows, scores kind).
"""

from __future__ import annotations

import io
import json
import struct
import sys
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent

HEADER = "label,p_cat,p_dog,p_eel"
ROWS = [
    "cat,0.7,0.2,0.1",
    "dog,0.1,0.8,0.1",
    "eel,0.2,0.2,0.6",
    "cat,0.5,0.25,0.25",
    "dog,0.3,0.6,0.1",
    "eel,0.1,0.1,0.8",
]
CLASSES = ["cat", "dog", "eel"]


def csv_text(rows=ROWS, header=HEADER, newline="\n") -> bytes:
    return (newline.join([header, *rows]) + newline).encode("utf-8")


def replace_row(k: int, row: str) -> list[str]:
    """ROWS with data row ``k`` (0-based; file line ``k + 2``) replaced."""
    out = list(ROWS)
    out[k] = row
    return out


def index_rows(k: int, label: str) -> list[str]:
    """ROWS with class indices (0, 1, 2) as labels and data row ``k``'s label ``label``."""
    rows = [f"{CLASSES.index(r.split(',')[0])},{r.split(',', 1)[1]}" for r in ROWS]
    rows[k] = f"{label},{rows[k].split(',', 1)[1]}"
    return rows


CAFE_NFC, CAFE_NFD = "caf\u00e9", "cafe\u0301"  # both print as 'café'
LONG_NAME = "x" * 20_000


# -- binary formats, written deterministically ---------------------------------------------
_DATE = (2020, 1, 1, 0, 0, 0)


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    return buf.getvalue()


def npz_bytes(members: dict[str, bytes]) -> bytes:
    """A deflated zip of ``name.npy`` members with a fixed timestamp (np.savez uses 'now')."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return buf.getvalue()


def valid_npz_members() -> dict[str, bytes]:
    probs = np.array([[float(v) for v in r.split(",")[1:]] for r in ROWS])
    labels = np.array([CLASSES.index(r.split(",")[0]) for r in ROWS], dtype=np.int64)
    return {
        "probs": npy_bytes(probs),
        "labels": npy_bytes(labels),
        "class_names": npy_bytes(np.array(CLASSES, dtype=str)),
    }


def percent_rows() -> list[str]:
    """ROWS with the probabilities written in percent (every row sums to 100)."""
    return [
        ",".join([r.split(",")[0], *(f"{100 * float(v):g}" for v in r.split(",")[1:])])
        for r in ROWS
    ]


def percent_npz() -> bytes:
    members = valid_npz_members()
    probs = np.array([[float(v) for v in r.split(",")[1:]] for r in percent_rows()])
    members["probs"] = npy_bytes(probs)
    return npz_bytes(members)


def pickled_npz() -> bytes:
    members = valid_npz_members()
    # Class names as an object array: saved with a pickle inside the .npy member.
    members["class_names"] = npy_bytes(np.array(CLASSES, dtype=object))
    return npz_bytes(members)


def zip_bomb_npz(n_entries: int = 2000, kernel_bytes: int = 8 << 20) -> bytes:
    """An "overlapping" zip bomb named like an NPZ (Fifield 2019, without the quoting).

    One deflated member holds ``kernel_bytes`` of zeros behind a valid ``.npy``
    header (a float64 ``probs`` array); the central directory lists it
    ``n_entries`` times under different names, all pointing at the same local
    header. The archive is about 120 kB but declares n_entries * 8 MiB = 16 GiB.
    """
    n_rows = (kernel_bytes - 128) // 32
    header = npy_header(n_rows, 4)
    payload = header + b"\0" * (kernel_bytes - len(header))
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = comp.compress(payload) + comp.flush()
    crc = zlib.crc32(payload)
    name = b"probs.npy"
    local = (
        struct.pack(
            "<IHHHHHIIIHH",
            0x04034B50,
            20,
            0,
            8,
            0,
            0x5021,
            crc,
            len(data),
            len(payload),
            len(name),
            0,
        )
        + name
    )
    central = []
    for k in range(n_entries):
        entry = b"probs.npy" if k == 0 else f"a{k:05d}.npy".encode()
        central.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                8,
                0,
                0x5021,
                crc,
                len(data),
                len(payload),
                len(entry),
                0,
                0,
                0,
                0,
                0,
                0,  # every entry points at the one local header at offset 0
            )
            + entry
        )
    cd = b"".join(central)
    offset = len(local) + len(data)
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n_entries, n_entries, len(cd), offset, 0)
    return local + data + cd + eocd


def damaged_npz(how: str) -> bytes:
    """A valid NPZ with its first member damaged: ``"deflate"`` (bytes of the compressed
    data overwritten) or ``"encrypted"`` (the encryption flag set in both headers)."""
    data = bytearray(npz_bytes(valid_npz_members()))
    if how == "deflate":
        name_len, extra_len = struct.unpack("<HH", data[26:30])
        start = 30 + name_len + extra_len
        data[start + 10 : start + 30] = b"\xff" * 20
    else:
        data[6] |= 1  # local header flag bit 0: encrypted
        central = data.find(b"PK\x01\x02")
        data[central + 8] |= 1  # central directory flag bit 0
    return bytes(data)


def npy_header(n_rows: int, n_cols: int) -> bytes:
    """A version 1.0 .npy header for a C-ordered float64 array of that shape."""
    text = f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({n_rows}, {n_cols}), }}"
    text = text.ljust(128 - 10 - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="none", store_schema=True)
    return sink.getvalue()


def wrong_dtypes_parquet() -> bytes:
    cols = list(zip(*[r.split(",") for r in ROWS], strict=True))
    return parquet_bytes(
        pa.table(
            {
                "label": pa.array(cols[0]),
                "p_cat": pa.array([float(v) for v in cols[1]]),
                "p_dog": pa.array(list(cols[2]), type=pa.string()),  # numbers stored as text
                "p_eel": pa.array([float(v) for v in cols[3]]),
            }
        )
    )


def float_label_parquet() -> bytes:
    return parquet_bytes(
        pa.table(
            {
                "label": pa.array([0.0, 1.0, 2.5, 0.0]),
                "p_cat": pa.array([0.7, 0.1, 0.2, 0.5]),
                "p_dog": pa.array([0.2, 0.8, 0.2, 0.25]),
                "p_eel": pa.array([0.1, 0.1, 0.6, 0.25]),
            }
        )
    )


def null_score_parquet() -> bytes:
    return parquet_bytes(
        pa.table(
            {
                "label": pa.array(["cat", "dog", "eel"]),
                "p_cat": pa.array([0.7, None, 0.2]),
                "p_dog": pa.array([0.2, 0.8, 0.2]),
                "p_eel": pa.array([0.1, 0.1, 0.6]),
            }
        )
    )


def _score_columns() -> dict[str, pa.Array]:
    cols = list(zip(*[r.split(",") for r in ROWS], strict=True))
    return {
        "p_" + name: pa.array([float(v) for v in cols[1 + j]]) for j, name in enumerate(CLASSES)
    }


def categorical_parquet() -> bytes:
    """Label, split and a metadata column as pandas writes a Categorical filtered down:
    dictionary-encoded, with categories no row uses; two row groups."""
    labels = [r.split(",")[0] for r in ROWS]

    def categorical(values, categories):
        indices = pa.array([categories.index(v) for v in values], type=pa.int8())
        return pa.DictionaryArray.from_arrays(indices, pa.array(categories))

    table = pa.table(
        {
            "label": categorical(labels, [*CLASSES, "ferret"]),
            **_score_columns(),
            "split": categorical(["calib", "test"] * 3, ["calib", "holdout", "test"]),
            "region": categorical(["n", "s", "n", "s", "n", "s"], ["e", "n", "s", "w"]),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="none", row_group_size=3)
    return sink.getvalue()


def non_utf8_label_parquet() -> bytes:
    """A Parquet string label whose third value holds cp1252 bytes (not UTF-8)."""
    raw = [r.split(",")[0].encode() for r in ROWS]
    raw[2] = "eel\xe9".encode("cp1252")
    labels = pa.array(raw, type=pa.binary()).view(pa.string())  # unchecked, as a writer may
    return parquet_bytes(pa.table({"label": labels, **_score_columns()}))


def corrupt_page_parquet() -> bytes:
    """Two row groups written with page checksums, a bit of row group 1's last ``p_dog``
    value flipped: read without verification it is a slightly wrong probability."""
    labels = pa.array([r.split(",")[0] for r in ROWS])
    sink = io.BytesIO()
    pq.write_table(
        pa.table({"label": labels, **_score_columns()}),
        sink,
        compression="none",
        use_dictionary=False,
        row_group_size=3,
        write_page_checksum=True,
    )
    data = bytearray(sink.getvalue())
    chunk = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(1).column(2)
    last_value = chunk.data_page_offset + chunk.total_compressed_size - 8
    data[last_value] ^= 0x01  # the lowest mantissa bit of a little-endian float64
    return bytes(data)


def huge_shape_npz() -> bytes:
    """A valid archive whose ``probs`` header declares 2**40 x 2**40 float64 values."""
    members = valid_npz_members()
    text = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }"
    text = text.ljust(128 - 10 - 1) + "\n"
    header = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")
    members["probs"] = header + b"\0" * 16
    return npz_bytes(members)


def duplicate_member_npz() -> bytes:
    """A valid archive with a second ``labels.npy`` member (other labels) after the first."""
    members = npz_bytes(valid_npz_members())
    buf = io.BytesIO(members)
    with zipfile.ZipFile(buf, "a") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name
        info = zipfile.ZipInfo("labels.npy", date_time=_DATE)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        zf.writestr(info, npy_bytes(np.array([2, 2, 0, 1, 1, 0], dtype=np.int64)))
    return buf.getvalue()


def wide_csv(n_classes: int = 10_000) -> bytes:
    names = [f"c{j:04d}" for j in range(n_classes)]
    header = "label," + ",".join("p_" + c for c in names)
    value = "0.0001"  # 10,000 x 0.0001 sums to 1 up to rounding
    rows = [names[k] + "," + ",".join([value] * n_classes) for k in range(3)]
    return csv_text(rows, header)


# -- the cases ---------------------------------------------------------------------------------
def case(file, content, outcome, *, what, row=None, column=None, phrases=(), options=None, **kw):
    return {
        "file": file,
        "content": content,
        "what": what,
        "outcome": outcome,
        "options": options or {},
        "row": row,
        "column": column,
        "phrases": list(phrases),
        **kw,
    }


HTML_NAME = "<img src=x onerror=alert(1)>.csv"
SCRIPT = "<script>alert(1)</script>"
FORMULAS = ["=cmd|' /C calc'!A0", "+SUM(1+1)", "-2+3", "@HYPERLINK(x)"]
OK3 = {"class_names": CLASSES, "n": 6, "scores_kind": "probs"}

CASES = [
    # -- structure -----------------------------------------------------------------------------
    case("empty.csv", b"", "error", what="0 bytes", phrases=["empty", "0 bytes"]),
    case(
        "header_only.csv",
        csv_text([]),
        "error",
        what="a header and no rows",
        row="line 1",
        phrases=["no data rows", "Add one row per sample"],
    ),
    case(
        "blank_lines_only.csv",
        b"\n \n\n",
        "error",
        what="only blank lines",
        row="line 1",
        phrases=["blank", "must name the columns"],
    ),
    case(
        "single_column.csv",
        b"label\ncat\ndog\n",
        "error",
        what="a label column and nothing else",
        row="line 1",
        phrases=["single column", "one score column per class"],
    ),
    case(
        "no_label_column.csv",
        csv_text(header="truth,p_cat,p_dog,p_eel"),
        "error",
        what="no column named like a label",
        phrases=["no label column", "label_column="],
    ),
    case(
        "duplicate_columns.csv",
        csv_text(header="label,p_cat,p_cat,p_eel"),
        "error",
        what="two columns named p_cat",
        row="line 1",
        column="p_cat",
        phrases=["duplicate", "Rename"],
    ),
    case(
        "blank_column_name.csv",
        csv_text(header="label,p_cat,,p_eel"),
        "error",
        what="the third column has no name",
        row="line 1",
        phrases=["blank column name", "position(s) [3]", "Give every column a name"],
    ),
    case(
        "pandas_index_column.csv",
        csv_text([f"{k},{r}" for k, r in enumerate(ROWS)], header="," + HEADER),
        "error",
        what="written by DataFrame.to_csv with the index: blank first column name",
        row="line 1",
        phrases=["blank column name", "index=False"],
    ),
    case(
        "extra_field.csv",
        csv_text(replace_row(2, "eel,0.2,0.2,0.6,0.0")),
        "error",
        what="line 4 has 5 fields",
        row="line 4",
        phrases=["5 fields but the header has 4", "quote the value"],
    ),
    case(
        "truncated_last_line.csv",
        csv_text(ROWS[:-1]) + b"eel,0.1,0.",
        "error",
        what="the last line is cut off after 3 fields, without a newline",
        row="line 7",
        column="p_eel",
        phrases=["cut off", "Complete or remove the line"],
    ),
    case(
        "cr_only_line_ends.csv",
        csv_text(newline="\r"),
        "error",
        what="classic Mac line ends (CR only)",
        row="line 1",
        phrases=["carriage return", "LF"],
    ),
    case(
        "bare_cr_in_line.csv",
        csv_text(replace_row(1, "d\rog,0.1,0.8,0.1")),
        "error",
        what="a carriage return inside line 3 (not part of a CRLF)",
        row="line 3",
        phrases=["carriage return", "LF or CRLF"],
    ),
    case(
        "excel_sep_line.csv",
        b"sep=;\n" + csv_text().replace(b",", b";"),
        "error",
        what="Excel's 'sep=;' hint line before the header",
        row="line 1",
        phrases=["sep=", "Delete the first line"],
    ),
    # -- dialects that are fine ----------------------------------------------------------------
    case("bom.csv", b"\xef\xbb\xbf" + csv_text(), "ok", what="UTF-8 BOM", expect=OK3),
    case("crlf.csv", csv_text(newline="\r\n"), "ok", what="CRLF line ends", expect=OK3),
    case(
        "semicolon.csv",
        csv_text().replace(b",", b";"),
        "ok",
        what="semicolon delimiter",
        expect={**OK3, "delimiter": ";"},
    ),
    case(
        "tab.tsv",
        csv_text().replace(b",", b"\t"),
        "ok",
        what="tab delimiter",
        expect={**OK3, "delimiter": "\t"},
    ),
    case(
        "quoted_numbers.csv",
        csv_text([",".join(f'"{c}"' for c in r.split(",")) for r in ROWS]),
        "ok",
        what='every cell quoted ("0.7" is a number)',
        expect=OK3,
    ),
    case(
        "one_row.csv",
        csv_text(ROWS[:1]),
        "warning",
        what="a single row",
        phrases=["never occur", "'dog', 'eel'"],
        expect={"class_names": CLASSES, "n": 1, "scores_kind": "probs"},
    ),
    # -- numbers -------------------------------------------------------------------------------
    case(
        "thousands_separator.csv",
        csv_text(["cat,1,234.5,-3.0", "dog,0.5,2.0"], header="label,logit_cat,logit_dog"),
        "error",
        what="an unquoted thousands separator splits a logit into two fields",
        row="line 2",
        phrases=["4 fields but the header has 3", "thousands separator"],
    ),
    case(
        "thousands_separator_quoted.csv",
        csv_text(['cat,"1,234.5",-3.0', "dog,0.5,2.0"], header="label,logit_cat,logit_dog"),
        "error",
        what='a quoted "1,234.5"',
        row="line 2",
        column="logit_cat",
        phrases=["'1,234.5' is not a number", "no thousands separators"],
    ),
    case(
        "decimal_comma.csv",
        csv_text().replace(b",", b";").replace(b"0.25;0.25", b"0,25;0,25"),
        "error",
        what="decimal commas in a semicolon file",
        row="line 5",
        column="p_dog",
        phrases=["'0,25' is not a number", "'.' decimal point"],
    ),
    case(
        "nan_cell.csv",
        csv_text(replace_row(1, "dog,nan,0.8,0.1")),
        "error",
        what="'nan' as a score",
        row="line 3",
        column="p_cat",
        phrases=["not a finite number", "Remove or fix"],
    ),
    case(
        "inf_cell.csv",
        csv_text(replace_row(3, "cat,0.5,inf,0.25")),
        "error",
        what="'inf' as a score",
        row="line 5",
        column="p_dog",
        phrases=["not a finite number", "Remove or fix"],
    ),
    case(
        "overflow.csv",
        csv_text(replace_row(0, "cat,1e400,0.2,0.1"), header="label,logit_cat,logit_dog,logit_eel"),
        "error",
        what="a logit too large for a float (1e400 reads as inf)",
        row="line 2",
        column="logit_cat",
        phrases=["not a finite number"],
    ),
    case(
        "empty_cell.csv",
        csv_text(replace_row(4, "dog,0.3,,0.1")),
        "error",
        what="an empty score cell",
        row="line 6",
        column="p_dog",
        phrases=["empty", "Remove or fix"],
    ),
    case(
        "negative_probability.csv",
        csv_text(replace_row(1, "dog,-0.05,0.95,0.1")),
        "error",
        what="a negative value in p_ columns",
        row="line 3",
        column="p_cat",
        phrases=["is negative", "scores='logits'"],
    ),
    case(
        "probability_above_one.csv",
        csv_text(replace_row(2, "eel,0.0,0.0,1.3")),
        "error",
        what="a value of 1.3 in p_ columns",
        row="line 4",
        column="p_eel",
        phrases=["greater than 1", "scores='logits'"],
    ),
    case(
        "row_off_by_1e-3.csv",
        csv_text(replace_row(1, "dog,0.1,0.801,0.1")),
        "error",
        what="a row summing to 1.001",
        row="line 3",
        phrases=["sum to 1.001", "renormalize=True"],
    ),
    case(
        "row_off_by_1e-3.csv",
        None,
        "warning",
        options={"renormalize": True},
        what="the same file with renormalize=True",
        phrases=["1 row(s) did not sum to 1", "renormalised", "0.001"],
        expect=OK3,
    ),
    case(
        "row_off_by_5pct.csv",
        csv_text(replace_row(4, "dog,0.3,0.65,0.1")),
        "error",
        what="a row summing to 1.05",
        row="line 6",
        phrases=["sum to 1.05", "renormalize=True"],
    ),
    case(
        "row_off_by_5pct.csv",
        None,
        "warning",
        options={"renormalize": True},
        what="the same file with renormalize=True",
        phrases=["1 row(s) did not sum to 1", "0.05"],
        expect=OK3,
    ),
    case(
        "logits_declared_as_probs.csv",
        csv_text(
            [
                "cat,2.5,-1.0,0.3",
                "dog,-0.4,1.9,0.1",
                "eel,0.0,0.5,3.2",
            ]
        ),
        "error",
        what="logits under p_ headers (the prefix says probabilities)",
        row="line 2",
        column="p_dog",
        phrases=["is negative", "named 'p_*'", "logit_", "scores='logits'"],
    ),
    case(
        "logits_declared_as_probs.csv",
        None,
        "ok",
        options={"scores": "logits"},
        what="the same file read as logits on request",
        expect={"class_names": CLASSES, "n": 3, "scores_kind": "logits"},
    ),
    case(
        "logits.csv",
        csv_text(
            ["cat,2.5,-1.0,0.3", "dog,-0.4,1.9,0.1", "eel,0.0,0.5,3.2"],
            header="label,logit_cat,logit_dog,logit_eel",
        ),
        "ok",
        what="logits under logit_ headers",
        expect={"class_names": CLASSES, "n": 3, "scores_kind": "logits"},
    ),
    case(
        "percentages.csv",
        csv_text(percent_rows(), header="label,cat,dog,eel"),
        "error",
        what="probabilities in percent under unprefixed headers (rows sum to 100)",
        row="line 2",
        column="cat",
        phrases=["look like percentages", "divide by 100", "percent=True", "--percent"],
    ),
    case(
        "percentages.npz",
        percent_npz(),
        "error",
        what="an NPZ 'probs' array in percent: the name says probabilities, 70 is above 1",
        row="row 0 (0-based)",
        column="probs",
        phrases=["greater than 1", "look like percentages", "percent=True"],
    ),
    case(
        "formula_in_score_cell.csv",
        csv_text(replace_row(0, "cat,=0.5+0.2,0.2,0.1")),
        "error",
        what="a spreadsheet formula as a score",
        row="line 2",
        column="p_cat",
        phrases=["'=0.5+0.2' is not a number", "plain numbers"],
    ),
    # -- labels --------------------------------------------------------------------------------
    case(
        "label_not_a_class.csv",
        csv_text(replace_row(3, "cow,0.5,0.25,0.25")),
        "error",
        what="label 'cow' with classes cat, dog, eel",
        row="line 5",
        column="label",
        phrases=["'cow' is not a class", "'cat', 'dog', 'eel'", "Fix the label"],
    ),
    case(
        "label_index_out_of_range.csv",
        csv_text(
            [
                f"{CLASSES.index(r.split(',')[0]) if k != 2 else 3},{r.split(',', 1)[1]}"
                for k, r in enumerate(ROWS)
            ]
        ),
        "error",
        what="integer label 3 with 3 classes",
        row="line 4",
        column="label",
        phrases=["'3' is not a class", "0..2"],
    ),
    case(
        "empty_label.csv",
        csv_text(replace_row(5, ",0.1,0.1,0.8")),
        "error",
        what="a row without a label",
        row="line 7",
        column="label",
        phrases=["'' is not a class", "Fix the label"],
    ),
    case(
        "nul_byte_label.csv",
        csv_text(replace_row(1, "d\x00og,0.1,0.8,0.1")),
        "error",
        what="a NUL byte inside a label",
        row="line 3",
        column="label",
        phrases=["is not a class"],
    ),
    case(
        "multiline_quoted_note.csv",
        csv_text(
            [
                "cat,0.7,0.2,0.1,ok",
                'dog,0.1,0.8,0.1,"two\nlines"',
                "eel,0.2,0.2,0.6,ok",
                "cow,0.5,0.25,0.25,ok",
            ],
            header=HEADER + ",note",
        ),
        "error",
        what="a quoted note spanning two lines, then a bad label on file line 6",
        row="line 6",
        column="label",
        phrases=["'cow' is not a class"],
    ),
    case(
        "unknown_split.csv",
        csv_text(
            [
                r + ("," + ("calib" if k < 3 else "training" if k == 4 else "test"))
                for k, r in enumerate(ROWS)
            ],
            header=HEADER + ",split",
        ),
        "error",
        what="split value 'training'",
        row="line 6",
        column="split",
        phrases=["'training' is not known", "calib"],
    ),
    case(
        "one_class.csv",
        b"label,p_cat\ncat,0.9\ncat,0.7\ncat,0.8\n",
        "warning",
        what="one score column and one label value: binary shortcut, 'not cat' never occurs",
        phrases=["never occur", "'not cat'"],
        expect={"class_names": ["not cat", "cat"], "n": 3, "scores_kind": "probs"},
    ),
    case(
        "one_label_value.csv",
        csv_text([r for r in ROWS if r.startswith("cat")]),
        "warning",
        what="three classes but every label is cat",
        phrases=["2 class(es) never occur", "'dog', 'eel'"],
        expect={"class_names": CLASSES, "n": 2, "scores_kind": "probs"},
    ),
    case(
        "class_never_occurs.csv",
        csv_text([r + ",0.0" for r in ROWS], header=HEADER + ",p_fox"),
        "warning",
        what="a fourth class, fox, that no row has as its label",
        phrases=["1 class(es) never occur", "'fox'"],
        expect={"class_names": [*CLASSES, "fox"], "n": 6, "scores_kind": "probs"},
    ),
    case(
        "wide_10000_columns.csv",
        wide_csv(),
        "warning",
        what="10,000 classes, 3 rows",
        phrases=["9997 class(es) never occur"],
        expect={"n_classes": 10_000, "n": 3, "scores_kind": "probs"},
    ),
    # -- encodings -----------------------------------------------------------------------------
    case(
        "non_utf8.csv",
        csv_text(replace_row(2, "eel,0.2,0.2,0.6")).replace(b"eel,0.2,0.2", b"\xe9el,0.2,0.2"),
        "error",
        what="a Latin-1 byte (0xe9) in a label",
        row="line 4",
        column="label",
        phrases=["not valid UTF-8", "Re-save the file as UTF-8"],
    ),
    case(
        "utf16.csv",
        b"\xff\xfe" + csv_text().decode().encode("utf-16-le"),
        "error",
        what="UTF-16 with a BOM (Excel's 'Unicode text')",
        row="line 1",
        phrases=["UTF-16", "Re-save the file as UTF-8"],
    ),
    # -- hostile names -------------------------------------------------------------------------
    case(
        "html_class_name.csv",
        csv_text([f"{SCRIPT},0.7,0.3", "dog,0.2,0.8"], header=f"label,p_{SCRIPT},p_dog"),
        "ok",
        what="an HTML/JS payload as a class name: kept verbatim as text",
        expect={"class_names": [SCRIPT, "dog"], "n": 2, "scores_kind": "probs"},
    ),
    case(
        HTML_NAME,
        csv_text(replace_row(0, "cat,0.7,abc,0.1")),
        "error",
        what="an HTML/JS payload as the file name; the message names the file verbatim",
        row="line 2",
        column="p_dog",
        phrases=["'abc' is not a number"],
    ),
    case(
        "formula_class_names.csv",
        csv_text(
            [
                f"{FORMULAS[k % 4]},{','.join('0.7' if j == k % 4 else '0.1' for j in range(4))}"
                for k in range(8)
            ],
            header="label," + ",".join("p_" + f for f in FORMULAS),
        ),
        "ok",
        what="class names (and so labels) starting with =, +, - and @",
        expect={"class_names": FORMULAS, "n": 8, "scores_kind": "probs"},
    ),
    case(
        "formula_cells_in_other_columns.csv",
        csv_text(
            [
                r + "," + cell
                for r, cell in zip(
                    ROWS,
                    ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "=1", "ok"],
                    strict=True,
                )
            ],
            header=HEADER + ",note",
        ),
        "ok",
        what="formula cells in an extra text column: kept as text metadata, never evaluated",
        expect=OK3,
    ),
    case(
        "formula_split_value.csv",
        csv_text(
            [r + "," + ("=cmd|' /C calc'!A0" if k == 3 else "test") for k, r in enumerate(ROWS)],
            header=HEADER + ",split",
        ),
        "error",
        what="a formula as a split value",
        row="line 5",
        column="split",
        phrases=["is not known", "calib"],
    ),
    # -- other formats -------------------------------------------------------------------------
    case(
        "npz_named_csv.csv",
        npz_bytes(valid_npz_members()),
        "error",
        what="an NPZ archive with a .csv extension",
        phrases=["zip/NPZ archive, not a CSV file", ".npz"],
    ),
    case(
        "wrong_dtypes.parquet",
        wrong_dtypes_parquet(),
        "error",
        what="a Parquet score column stored as text",
        column="p_dog",
        phrases=["type string", "astype('float64')"],
    ),
    case(
        "float_labels.parquet",
        float_label_parquet(),
        "error",
        what="a float label 2.5 in Parquet",
        row="row 2 (0-based)",
        column="label",
        phrases=["value 2.5 is neither", "Fix the value"],
    ),
    case(
        "null_score.parquet",
        null_score_parquet(),
        "error",
        what="a null score in Parquet",
        row="row 1 (0-based)",
        column="p_cat",
        phrases=["not a finite number"],
    ),
    case(
        "pickled_object.npz",
        pickled_npz(),
        "error",
        what="class_names saved as a pickled object array",
        column="class_names",
        phrases=["pickled", "np.array(names, dtype=str)"],
    ),
    case(
        "zip_bomb.npz",
        zip_bomb_npz(),
        "error",
        what="2,000 zip entries overlapping one 8 MiB deflated member: 16 GiB declared",
        phrases=["declares", "max_decoded_bytes", "refusing"],
        # Streamed (the CLI, over the budget), no budget applies: the overlap is refused.
        streamed_phrases=["overlap", "zip bomb", "refusing"],
    ),
    case(
        "truncated.npz",
        npz_bytes(valid_npz_members())[:300],
        "error",
        what="an NPZ archive cut after 300 bytes",
        phrases=["not a valid .npz", "np.savez"],
    ),
    case(
        "bad_deflate.npz",
        damaged_npz("deflate"),
        "error",
        what="an NPZ whose first member's compressed data is overwritten",
        column="probs",
        phrases=["corrupt", "np.savez"],
    ),
    case(
        "encrypted.npz",
        damaged_npz("encrypted"),
        "error",
        what="an NPZ whose members claim to be encrypted",
        column="probs",
        phrases=["encrypted", "np.savez"],
    ),
    case(
        "over_budget.csv",
        csv_text(),
        "error",
        options={"max_decoded_bytes": 100},
        what="a valid file over a 100-byte decoded-size budget",
        phrases=["max_decoded_bytes", "CALCORE_MAX_DECODED_BYTES"],
    ),
    # -- issue 33: text the CSV reader, the labels and the messages must not misread ------------
    case(
        "utf32.csv",
        b"\xff\xfe\x00\x00" + csv_text().decode().encode("utf-32-le"),
        "error",
        what="UTF-32 with a BOM (its FF FE 00 00 begins like UTF-16's FF FE)",
        row="line 1",
        phrases=["the file is UTF-32", "Re-save the file as UTF-8"],
    ),
    case(
        "header_line_break.csv",
        csv_text(header='label,"p_cat\nfish",p_dog,p_eel'),
        "error",
        what="a quoted line break inside a column name of the header",
        row="line 1",
        column="p_cat\nfish",
        phrases=["column 2 (1-based)", "contains a line break", "remove the line break"],
    ),
    case(
        "nfc_nfd_columns.csv",
        csv_text(header=f"label,p_{CAFE_NFC},p_{CAFE_NFD},p_eel"),
        "error",
        what="two column names that print alike: 'café' composed (NFC) and decomposed (NFD)",
        row="line 1",
        phrases=["print alike", "U+00E9", "U+0065 U+0301", "Rename one of them"],
    ),
    case(
        "label_column_nfd.csv",
        csv_text(header=f"{CAFE_NFC},p_cat,p_dog,p_eel"),
        "error",
        options={"label_column": CAFE_NFD},
        what="label_column= written decomposed (NFD) for a column written composed (NFC)",
        column=CAFE_NFC,
        phrases=["is not a column", "prints alike", "U+00E9", "U+0065 U+0301"],
    ),
    *(
        case(
            f"label_index_{kind}.csv",
            csv_text(index_rows(1, label)),
            "error",
            what=f"the class index 1 written as {label!r}: Python's int() reads it",
            row="line 3",
            column="label",
            phrases=[f"label {shown} is not a class name", "ASCII digits 0-9 only", "Write 1"],
        )
        for kind, label, shown in [
            ("space", " 1", "' 1'"),
            ("plus", "+1", "'+1'"),
            ("leading_zero", "01", "'01'"),
            ("underscore", "0_1", "'0_1'"),
            ("arabic_indic", "\u0661", "'\u0661' (U+0661)"),
            ("full_width", "\uff11", "'\uff11' (U+FF11)"),
        ]
    ),
    case(
        "label_binary_plus_one.csv",
        csv_text(["0,0.2", "+1,0.7", "1,0.9"], header="label,p_cat"),
        "error",
        what="a binary file's label 1 written '+1' (the shortcut compares with '0' and '1')",
        row="line 3",
        column="label",
        phrases=["written like the class index 1", "ASCII digits 0-9 only"],
    ),
    case(
        "long_column_name.csv",
        csv_text(header=f"label,p_{LONG_NAME},p_dog,p_eel"),
        "error",
        what="a 20,000-character class name in a message (label 'cat' is not a class)",
        row="line 2",
        column="label",
        phrases=["label 'cat' is not a class", "… (20,000 characters)"],
    ),
    # -- Parquet and NPZ, round two (issue 33) --------------------------------------------------
    case(
        "categorical_unused_categories.parquet",
        categorical_parquet(),
        "ok",
        what="label, split and region as pandas Categoricals with unused categories "
        "('ferret', 'holdout', 'e', 'w'), two row groups",
        expect=OK3,
    ),
    case(
        "non_utf8_label.parquet",
        non_utf8_label_parquet(),
        "error",
        what="a Parquet string label holding cp1252 bytes (not UTF-8) in row 2",
        row="row 2 (0-based)",
        column="label",
        phrases=["not valid UTF-8", "real encoding"],
    ),
    case(
        "corrupt_page.parquet",
        corrupt_page_parquet(),
        "error",
        what="a page checksum that fails: one bit of row group 1's data flipped",
        row="row group 1 (rows from 3)",
        phrases=["CRC checksum", "re-export"],
    ),
    case(
        "huge_shape.npz",
        huge_shape_npz(),
        "error",
        what="an NPZ whose probs header declares shape (2**40, 2**40) over 16 bytes of data",
        column="probs",
        phrases=["(1099511627776, 1099511627776)", "member holds only", "np.savez"],
    ),
    case(
        "duplicate_member.npz",
        duplicate_member_npz(),
        "error",
        what="an NPZ with two labels.npy members (np.load would read the last)",
        phrases=["'labels.npy' (2 times)", "np.savez"],
    ),
]


def manifest() -> list[dict]:
    return [{k: v for k, v in c.items() if k != "content"} for c in CASES]


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for c in CASES:
        if c["content"] is not None:
            (out / c["file"]).write_bytes(c["content"])
    text = json.dumps(manifest(), indent=1, ensure_ascii=False) + "\n"
    (out / "MANIFEST.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
