"""The decoded-size budget of calcore.io: refused before anything is decoded, configurable."""

from __future__ import annotations

import io
import tracemalloc
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore.io._csv as csv_reader
import calcore.io._npz as npz_reader
import calcore.io._parquet as parquet_reader
from calcore import CalcoreError
from calcore.foundation.limits import BUDGET_ENV, resolve_budget
from calcore.io import DEFAULT_MAX_DECODED_BYTES, inspect_table, load_predictions


@pytest.fixture(autouse=True)
def no_env_budget(monkeypatch):
    monkeypatch.delenv(BUDGET_ENV, raising=False)


def csv_bytes(n_rows: int, n_classes: int = 4) -> bytes:
    row = "c0," + ",".join(["0.25"] * n_classes) + "\n"
    header = "label," + ",".join(f"p_c{j}" for j in range(n_classes)) + "\n"
    return (header + row * n_rows).encode()


def parquet_bytes(n_rows: int) -> bytes:
    table = pa.table(
        {
            "label": ["a"] * n_rows,
            "p_a": [0.5] * n_rows,
            "p_b": [0.5] * n_rows,
            "p_c": [0.0] * n_rows,
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def forbid(monkeypatch, module, name):
    """Make ``module.name`` fail the test if it is called (nothing may be decoded)."""

    def fail(*args, **kwargs):
        raise AssertionError(f"{name} was called although the file is over budget")

    monkeypatch.setattr(module, name, fail)


# -- resolution of the budget ------------------------------------------------------------
def test_default_and_environment_override(monkeypatch):
    assert DEFAULT_MAX_DECODED_BYTES == 512 << 20
    assert resolve_budget(None) == DEFAULT_MAX_DECODED_BYTES
    monkeypatch.setenv(BUDGET_ENV, " 12345 ")
    assert resolve_budget(None) == 12345
    assert resolve_budget(999) == 999  # the argument wins over the environment


@pytest.mark.parametrize("text", ["abc", "0", "-5", "1.5e9", "1GB"])
def test_bad_environment_value_is_a_clear_error(monkeypatch, text):
    monkeypatch.setenv(BUDGET_ENV, text)
    with pytest.raises(CalcoreError, match=f"{BUDGET_ENV}=.*not a positive whole number"):
        load_predictions(csv_bytes(3), name="x.csv")


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "100"])
def test_bad_argument_is_a_clear_error(value):
    with pytest.raises(CalcoreError, match="max_decoded_bytes must be a positive integer"):
        load_predictions(csv_bytes(3), name="x.csv", max_decoded_bytes=value)


# -- CSV -------------------------------------------------------------------------------------
def test_csv_over_budget_is_refused_before_reading(monkeypatch):
    data = csv_bytes(1000)  # 1,000 rows x 5 columns x 8 bytes = 40,000
    assert load_predictions(data, name="ok.csv", max_decoded_bytes=40_000).n_samples == 1000
    forbid(monkeypatch, csv_reader, "read_csv_columns")
    with pytest.raises(
        CalcoreError,
        match=r"big\.csv: 1,000 rows x 5 columns x 8 bytes come to 40,000 bytes once decoded, "
        r"more than the budget max_decoded_bytes=39,999; refusing.*CALCORE_MAX_DECODED_BYTES",
    ):
        load_predictions(data, name="big.csv", max_decoded_bytes=39_999)


def test_csv_budget_from_the_environment(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "1000")
    with pytest.raises(CalcoreError, match="max_decoded_bytes=1,000"):
        load_predictions(csv_bytes(100), name="env.csv")
    monkeypatch.setenv(BUDGET_ENV, "1000000")
    assert load_predictions(csv_bytes(100), name="env.csv").n_samples == 100


@pytest.mark.timeout(60)
def test_refusing_a_large_csv_allocates_almost_nothing():
    """21 MB of text, 35 MB of values: refused with little traced memory beyond the file."""
    data = csv_bytes(400_000, n_classes=10)
    tracemalloc.start()
    try:
        with pytest.raises(CalcoreError, match="refusing"):
            load_predictions(data, name="big.csv", max_decoded_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(data) > 20e6
    assert peak < 1 << 20, peak  # the file's bytes were passed in; nothing of its size is copied


# -- Parquet ---------------------------------------------------------------------------------
def test_parquet_rows_times_columns_is_checked_before_reading(monkeypatch):
    data = parquet_bytes(5000)  # 5,000 rows x 4 columns x 8 = 160,000
    assert load_predictions(data, name="ok.parquet", max_decoded_bytes=160_000).n_samples == 5000
    forbid(monkeypatch, parquet_reader, "read_parquet_columns")
    with pytest.raises(CalcoreError, match=r"5,000 rows x 4 columns x 8 bytes.*refusing"):
        load_predictions(data, name="p.parquet", max_decoded_bytes=159_999)


def test_parquet_metadata_size_is_checked_by_inspect_table():
    rng = np.random.default_rng(0)
    p = rng.dirichlet([1, 1], size=5000)  # random values: the pages are not dictionary-encoded
    table = pa.table({"label": ["a"] * 5000, "p_a": p[:, 0], "p_b": p[:, 1]})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    data = sink.getvalue()
    with pytest.raises(CalcoreError, match=r"p\.parquet: the Parquet metadata declares.*refusing"):
        inspect_table(data, name="p.parquet", max_decoded_bytes=1000)


# -- NPZ -------------------------------------------------------------------------------------
def test_npz_array_shapes_count_as_float64(monkeypatch):
    """float32 scores double in size when read; the headers say so before anything is loaded."""
    probs = np.full((2000, 50), 0.02, dtype=np.float32)  # 400,000 bytes stored, 800,000 decoded
    data = npz_bytes(probs=probs, labels=np.zeros(2000, dtype=np.int64))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        declared = sum(i.file_size for i in zf.infolist())
    assert declared < 500_000
    forbid(monkeypatch, npz_reader.np, "load")
    with pytest.raises(
        CalcoreError,
        match=r"f32\.npz: the arrays \(from their \.npy headers\) come to 816,000 bytes",
    ):
        load_predictions(data, name="f32.npz", max_decoded_bytes=500_000)


def test_npz_within_budget_loads():
    probs = np.full((200, 5), 0.2)
    data = npz_bytes(probs=probs, labels=np.arange(200) % 5)
    assert load_predictions(data, name="ok.npz", max_decoded_bytes=10_000).n_samples == 200


def test_default_budget_admits_the_issue_size():
    """50,000 rows x 1,000 classes (plus the label column) fit the default budget."""
    assert 50_000 * 1_001 * 8 <= DEFAULT_MAX_DECODED_BYTES < 1 << 30


_PEAK_SCRIPT = """
import resource, sys, warnings
warnings.simplefilter("ignore")
import calcore
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
p = calcore.load_predictions(sys.argv[1])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base * 1024, peak * 1024, p.probs.nbytes)
"""


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_peak_memory_of_a_large_csv_is_a_small_multiple_of_its_decoded_size(tmp_path):
    """20,000 x 500 (57 MiB of text, 76 MiB decoded): peak RSS growth under file + 3 x decoded."""
    import subprocess
    import sys

    n, k = 20_000, 500
    header = "label," + ",".join(f"p_c{j}" for j in range(k)) + "\n"
    row = "c0," + ",".join(["0.002"] * k) + "\n"
    path = tmp_path / "large.csv"
    path.write_text(header + row * n)
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        timeout=230,
        check=True,
    )
    base, peak, decoded = map(int, done.stdout.split())
    size = path.stat().st_size
    print(
        f"\nlarge.csv: {size / 2**20:.0f} MiB file, {decoded / 2**20:.0f} MiB decoded, "
        f"peak RSS {peak / 2**20:.0f} MiB ({(peak - base) / 2**20:.0f} MiB above the baseline)"
    )
    assert peak - base < size + 3 * decoded
