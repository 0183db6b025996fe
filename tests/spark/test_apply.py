"""A fitted calibrator applied on Spark writes what the embedded ``calcore apply`` writes."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pyarrow.parquet as pq
import pytest

import calcore
import calcore.spark
from calcore.cli import main

from ._data import binary, multiclass, write_parts

N = 30_000  # rows per dataset (apply is a map: the size tests batch boundaries only)


def _fitted(method: str, folder) -> str:
    """The method fitted on a 5,000-row calibration file beside ``folder``, saved."""
    preds = calcore.load_predictions(str(folder / "calib.parquet"))
    path = folder / f"{method}.json"
    path.write_text(json.dumps(calcore.make_calibrator(method).fit(preds).to_dict()))
    return str(path)


def _dataset(root, name, table, calib):
    folder = root / name
    write_parts(folder / "data", table, [N // 3, N // 3 - 1, N - 2 * (N // 3) + 1])
    pq.write_table(calib, folder / "calib.parquet")
    return folder


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("apply")
    return {
        "multiclass": _dataset(root, "multiclass", multiclass(N, 4, seed=1),
                               multiclass(5000, 4, seed=2)),  # fmt: skip
        "logits": _dataset(root, "logits", multiclass(N, 3, seed=3, logits=True),
                           multiclass(5000, 3, seed=4, logits=True)),  # fmt: skip
        "binary": _dataset(root, "binary", binary(N, seed=5), binary(5000, seed=6)),
    }


def _embedded(saved, data, out, *extra) -> "pa.Table":  # noqa: F821
    assert main(["apply", saved, str(data), "--out", str(out), *extra]) == 0
    return pq.read_table(out)


def _by_id(table):
    return table.sort_by("id")


def _assert_same(spark_table, embedded):
    """Same columns in the same order, same types, same values (bit for bit)."""
    assert spark_table.column_names == embedded.column_names
    a, b = _by_id(spark_table), _by_id(embedded)
    for name in embedded.column_names:
        x, y = a[name], b[name]
        assert x.type == y.type, (name, x.type, y.type)
        if x.type == "double":
            xs, ys = x.to_numpy(), y.to_numpy()
            assert np.array_equal(xs, ys), (name, float(np.max(np.abs(xs - ys))))
        else:
            assert x.equals(y), name


@pytest.mark.parametrize(
    ("dataset", "method", "extra"),
    [
        ("logits", "ts", []),  # logits in, p_* out
        ("multiclass", "tl-hb", []),  # a binning method (top-label histogram binning)
        ("multiclass", "cw-iso", ["--suffix", "_cal"]),  # per class, originals kept
        ("binary", "platt", []),  # one column of P(positive)
    ],
)
def test_cli_spark_writes_what_the_embedded_apply_writes(
    spark, datasets, tmp_path, dataset, method, extra
):
    folder = datasets[dataset]
    saved = _fitted(method, folder)
    embedded = _embedded(saved, folder / "data", tmp_path / "embedded.parquet", *extra)
    out = tmp_path / "spark_out"
    code = main(["apply", saved, str(folder / "data"), "--engine", "spark", "--master",
                 "local[2]", "--out", str(out), *extra])  # fmt: skip
    assert code == 0
    got = pq.read_table(out)  # Spark's part files, rows in Spark's order
    assert got.num_rows == N
    _assert_same(got, embedded)


def test_python_apply_on_random_partitions_equals_the_embedded_apply(spark, datasets, tmp_path):
    folder = datasets["multiclass"]
    saved = _fitted("cw-hb", folder)
    embedded = _embedded(saved, folder / "data", tmp_path / "embedded.parquet")
    fitted = calcore.calibrators.read_calibrator(saved)
    k = random.Random().randint(2, 11)
    df = spark.read.parquet(str(folder / "data")).repartition(k)
    got = calcore.spark.apply(df, fitted).toArrow()
    # Spark's own Arrow types for the passengers: compare values, not the exact schema
    assert got.column_names == embedded.column_names
    a, b = _by_id(got), _by_id(embedded)
    for name in embedded.column_names:
        np.testing.assert_array_equal(a[name].to_numpy(), b[name].to_numpy(), f"{name}, k={k}")


def test_a_bad_score_names_the_file_and_row(spark, tmp_path, capsys):
    folder = tmp_path / "bad"
    table = multiclass(9000, 3, seed=7)
    p = table["p_c1"].to_numpy().copy()
    p[3000 + 2017] = 1.5  # row 2017 of the second file
    table = table.set_column(table.column_names.index("p_c1"), "p_c1", [p])
    files = write_parts(folder / "data", table, [3000, 3000, 3000])
    pq.write_table(multiclass(2000, 3, seed=8), folder / "calib.parquet")
    saved = _fitted("ts", folder)
    code = main(["apply", saved, str(folder / "data"), "--engine", "spark",
                 "--out", str(tmp_path / "out")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"row 2017 (0-based) of {files[1]}" in err, err
    assert "1.5" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_refusals(spark, datasets, tmp_path, capsys):
    folder = datasets["multiclass"]
    saved = _fitted("ts", datasets["logits"])  # 3 classes; the data has 4
    fitted = calcore.calibrators.read_calibrator(saved)
    df = spark.read.parquet(str(folder / "data"))
    fewer = "hold 4 classes; the calibrator was fitted on 3"
    with pytest.raises(calcore.CalcoreError, match=fewer):
        calcore.spark.apply(df, fitted)
    good = _fitted("ts", folder)
    fitted = calcore.calibrators.read_calibrator(good)
    saved = json.loads(open(good).read())
    saved["class_names"] = ["w", "x", "y", "z"]  # the same count, other classes
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(saved))
    other = calcore.calibrators.read_calibrator(str(renamed))
    with pytest.raises(calcore.CalcoreError, match=r"fitted on classes \['w'.*'c0'"):
        calcore.spark.apply(df, other)
    assert main(["apply", str(renamed), str(folder / "data"), "--engine", "spark",
                 "--out", str(tmp_path / "o")]) == 2  # fmt: skip
    assert "fitted on classes ['w'" in capsys.readouterr().err
    out = tmp_path / "exists"
    out.mkdir()
    assert main(["apply", good, str(folder / "data"), "--engine", "spark", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["apply", good, str(folder / "data"), "--master", "local[1]",
                 "--out", str(tmp_path / "x.parquet")]) == 2  # fmt: skip
    assert "add --engine spark" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x.parquet")
