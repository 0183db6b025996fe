"""calcore.io.stream_write: a stream written to Parquet or CSV, row for row, atomically."""

from __future__ import annotations

import numpy as np
import pytest
from _synthetic import beta_binary as _binary  # tests/ is on sys.path
from _synthetic import write_parquet_parts as _write_parts

import calcore


def test_write_stream_round_trips_and_is_atomic(tmp_path):
    from calcore.io.stream_write import write_stream

    preds = _binary(300, seed=36)
    _write_parts(tmp_path, preds, [100])
    stream = calcore.scan(tmp_path, batch_rows=64)
    for name in ("out.parquet", "out.csv"):
        assert write_stream(stream, tmp_path / name) == 300
        back = calcore.load_predictions(tmp_path / name)
        np.testing.assert_array_equal(back.probs, preds.probs)
        assert back.class_names == ("not fraud", "fraud")
    with pytest.raises(calcore.CalcoreError, match=r"must end in \.parquet, \.pq or \.csv"):
        write_stream(stream, tmp_path / "out.txt")

    def boom(p):
        raise calcore.CalcoreError("bad batch")

    (tmp_path / "keep.parquet").write_bytes(b"old")
    with pytest.raises(calcore.CalcoreError, match="bad batch"):
        write_stream(stream.with_transform(boom), tmp_path / "keep.parquet")
    assert (tmp_path / "keep.parquet").read_bytes() == b"old"
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".partial")]
