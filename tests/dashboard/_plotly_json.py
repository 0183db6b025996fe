"""Reading figures back from Plotly JSON in tests."""

from __future__ import annotations

import base64

import numpy as np


def plotly_array(value) -> np.ndarray:
    """A Plotly JSON array: a list, or a typed array ``{"dtype", "bdata"[, "shape"]}``."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            arr = arr.reshape([int(s) for s in str(value["shape"]).split(",")])
        return arr
    return np.asarray(value, dtype=float)


def trace(spec: dict, name: str) -> dict:
    """The one trace called ``name``."""
    (found,) = [t for t in spec["data"] if t.get("name") == name]
    return found


def panel_runs(customdata) -> list[np.ndarray]:
    """A small-multiples trace's ``customdata`` cut into its panels (runs of rows ended by
    an all-NaN row; see ``dashboard.figures.small_multiples``)."""
    rows = plotly_array(customdata) if isinstance(customdata, dict) else np.asarray(customdata)
    rows = np.asarray(rows, dtype=float)
    ends = np.flatnonzero(np.isnan(rows).all(axis=1))
    starts = np.r_[0, ends[:-1] + 1]
    return [rows[s:e] for s, e in zip(starts, ends, strict=True)]
