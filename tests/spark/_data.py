"""Prediction datasets written as directories of Parquet files for the Spark tests."""

from __future__ import annotations

import os

import numpy as np


def write_parts(folder, table, sizes, *, names=None, row_group_size=None) -> list[str]:
    """``table``'s rows cut into files of ``sizes`` rows, named so that sorted paths are
    the rows' order (subfolders and a name with a space included), plus files a scan
    skips (``_SUCCESS``, ``.hidden``). Returns the data files in calcore's order."""
    import pyarrow.parquet as pq

    assert sum(sizes) == table.num_rows
    names = names or [f"part-{k:02d}.parquet" for k in range(len(sizes))]
    paths, start = [], 0
    for name, n in zip(names, sizes, strict=True):
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(table.slice(start, n), path, row_group_size=row_group_size or max(n, 1))
        paths.append(path)
        start += n
    open(os.path.join(folder, "_SUCCESS"), "w").close()
    return sorted(paths)


def multiclass(n: int, k: int, *, seed: int, logits: bool = False):
    """An Arrow table: id, a text label, k score columns (p_* or logit_*), a weight, and
    a passenger column of another type."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    z[np.arange(n), rng.integers(0, k, n)] += 1.5
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    # labels drawn from a tempered version of the scores: over-confident, informative
    q = p**0.6
    q /= q.sum(axis=1, keepdims=True)
    drawn = (q.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1).clip(0, k - 1)
    labels = np.array([f"c{j}" for j in range(k)])[drawn]
    columns = {"id": np.arange(n, dtype=np.int64), "label": labels}
    if logits:
        columns.update({f"logit_c{j}": z[:, j] for j in range(k)})
    else:
        columns.update({f"p_c{j}": p[:, j] for j in range(k)})
    columns["day"] = pa.array(rng.integers(0, 30, n).astype(np.int32))
    return pa.table(columns)


def binary(n: int, *, seed: int):
    """An Arrow table: id, a 0/1 label and one column of P(positive)."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    p = 1.0 / (1.0 + np.exp(-rng.normal(scale=2.0, size=n)))
    y = (rng.random(n) < p**1.5).astype(np.int64)
    return pa.table({"id": np.arange(n, dtype=np.int64), "label": y, "score": p})
