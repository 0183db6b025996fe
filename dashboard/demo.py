"""The demo dataset of ``make run``: 10 million ad clicks with segment, device and date.

``python -m dashboard.demo DIR`` writes ``DIR/clicks_10m.parquet`` unless a complete copy
is already there (a few seconds on 2 cores, about 110 MB), so the dashboard opens on data at
production scale with something to find per slice and over time:

- ``label`` is ``click`` or ``no click``, drawn from a known click probability that
  depends on the segment, the device and a per-row latent score;
- ``p_click`` is a model's prediction of it: slightly over-confident everywhere (log-odds
  slope 1.1), under-predicting the ``travel`` segment on mobile (its odds halved: about
  1.5 clicks observed per predicted click), and over-confident from 2026-10-19 on (slope
  1.5: about 0.6 clicks observed per predicted click in the last two weeks);
- ``segment`` (12 values), ``device`` (3), ``date`` (61 days from 2026-09-01) and ``split``
  (20% ``calib``, 80% ``test``).

Rows are generated in blocks of 1M, each from its own seeded generator (``SeedSequence``
spawned children), so the file is the same on every machine. It is written to a
temporary name and renamed, so an interrupted run leaves no half file behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["DEMO_FILE", "DEMO_ROWS", "write_demo"]

DEMO_ROWS = 10_000_000
DEMO_FILE = "clicks_10m.parquet"
_BLOCK = 1_000_000
_SEED = 20261101

SEGMENTS = (
    "autos", "beauty", "finance", "food", "games", "health",
    "home", "news", "sports", "tech", "travel", "video",
)  # fmt: skip
DEVICES = ("desktop", "mobile", "tablet")
FIRST_DAY = np.datetime64("2026-09-01")
N_DAYS = 61
DRIFT_FROM = np.datetime64("2026-10-19")


def _block(rng: np.random.Generator, n: int) -> dict:
    """``n`` rows of the demo: columns as numpy arrays (codes for the categorical ones)."""
    segment = rng.choice(len(SEGMENTS), n, p=_segment_shares())
    device = rng.choice(len(DEVICES), n, p=[0.45, 0.45, 0.10])
    day = rng.integers(0, N_DAYS, n)
    # true click log-odds: a base rate of ~3%, segment and device effects, a latent score
    base = np.log(0.03 / 0.97)
    seg_effect = np.linspace(-0.6, 0.6, len(SEGMENTS))[segment]
    dev_effect = np.array([0.0, 0.25, -0.15])[device]
    true_logit = base + seg_effect + dev_effect + rng.normal(0.0, 1.1, n)
    clicked = rng.random(n) < 1.0 / (1.0 + np.exp(-true_logit))
    # the model: slope 1.1 (a little over-confident) around the base rate ...
    model_logit = base + 1.1 * (true_logit - base)
    # ... missing the travel x mobile effect (predicts half the click rate there) ...
    blind = (segment == SEGMENTS.index("travel")) & (device == DEVICES.index("mobile"))
    model_logit[blind] -= np.log(2.0)
    # ... and over-confident after the drift date
    late = FIRST_DAY + day >= DRIFT_FROM
    model_logit[late] = base + 1.5 * (model_logit[late] - base)
    return {
        "label": clicked.astype(np.int8),
        "p_click": 1.0 / (1.0 + np.exp(-model_logit)),
        "segment": segment.astype(np.int8),
        "device": device.astype(np.int8),
        "date": (FIRST_DAY + day).astype("datetime64[D]"),
        "split": (rng.random(n) < 0.2).astype(np.int8),  # 1: calib
    }


def _segment_shares() -> np.ndarray:
    shares = 1.0 / np.arange(1, len(SEGMENTS) + 1) ** 0.6  # a few large segments
    return shares / shares.sum()


def _table(columns: dict):
    import pyarrow as pa

    def labels(codes, names):
        return pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(list(names)))

    return pa.table(
        {
            "label": labels(columns["label"], ("no click", "click")),
            "p_click": pa.array(columns["p_click"]),
            "segment": labels(columns["segment"], SEGMENTS),
            "device": labels(columns["device"], DEVICES),
            "date": pa.array(columns["date"]),
            "split": labels(columns["split"], ("test", "calib")),
        }
    )


def write_demo(folder, *, n_rows: int = DEMO_ROWS, name: str = DEMO_FILE) -> Path:
    """Write the demo dataset as ``folder/name`` unless it is already there; its path.

    Parameters
    ----------
    folder : str or Path
        Created if missing.
    n_rows : int, default 10,000,000
        Rows (the tests write a small one); blocks of 1M rows, so a prefix of the
        10M-row file equals the file of fewer rows only at multiples of 1M.
    name : str
        File name inside ``folder``.

    Returns
    -------
    Path
        The file. An existing file with the expected number of rows is kept as it is.
    """
    import pyarrow.parquet as pq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    if target.exists():
        try:
            if pq.ParquetFile(target).metadata.num_rows == n_rows:
                return target
        except Exception:  # any unreadable leftover is rewritten
            pass
    seeds = np.random.SeedSequence(_SEED).spawn(-(-n_rows // _BLOCK))
    fd, tmp = tempfile.mkstemp(prefix=".demo-", suffix=".parquet", dir=folder)
    os.close(fd)
    os.chmod(tmp, 0o644)  # mkstemp makes it private; the server's readers need it
    try:
        writer = None
        for i, seed in enumerate(seeds):
            n = min(_BLOCK, n_rows - i * _BLOCK)
            table = _table(_block(np.random.default_rng(seed), n))
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
            writer.write_table(table, row_group_size=_BLOCK)
        writer.close()
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dashboard.demo", description="Write the dashboard's demo dataset."
    )
    parser.add_argument("folder", help="the data directory (CALCORE_DATA_DIR)")
    parser.add_argument("--rows", type=int, default=DEMO_ROWS)
    args = parser.parse_args(argv)
    path = write_demo(args.folder, n_rows=args.rows)
    print(f"demo dataset: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
