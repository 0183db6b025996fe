"""Parquet row groups decoded ahead of the reader, two at a time.

A stream's batches go through three stages: decoding (pyarrow), validation (numpy, on the
read-ahead thread of :mod:`calcore.io._prefetch`) and the caller's work (accumulating
statistics, sampling). pyarrow decodes one row group's columns in parallel, but the
cheap columns (labels, split) finish long before the scores, so one row group at a time
left a core idle. Decoding whole row groups on two threads of their own, a couple of
row groups ahead, keeps both cores busy: on the 100M-row demo (100 row groups of 1M
rows), decoding its three used columns (and a light check) took 1.29 s one row group at a
time and 0.97 s two at a time (2 cores; ``benchmarks/bench_scale.py`` measures a whole pass).
How far ahead, on how many threads: :data:`calcore.foundation.tuning.ROW_GROUPS_READ_AHEAD`
and :data:`~calcore.foundation.tuning.ROW_GROUP_DECODERS`.

Row groups are yielded in file order, so batches and positions do not change. A file
whose row groups exceed a batch is read as before, batch by batch within each row group,
so that memory stays bounded by the batch size; so is every file when the worker policy
allows one thread (``CALCORE_THREADS=1``): decoding ahead would keep a second one busy.

Deliberately not ``pyarrow.dataset``'s scanner (``to_batches`` with ``batch_readahead``,
``fragment_readahead`` and page checksums), although it reads as fast: 0.107 s against
0.105 s here for 20M rows of three columns in 20 row groups (best of 3, warm cache,
pyarrow 26, 2 cores, 2026-11-28). Reading by row group lets a damaged page be reported
with its file and row group ("bad.parquet, row group 1 (rows from 10000): cannot be read
..."), where the scanner's error says only "CRC checksum verification failed for
page_ordinal 0" (tried on the same damaged file); and the decoding threads stay shared by
every session of a server, at the number the worker policy allows.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator

from calcore.foundation.threads import worker_count
from calcore.foundation.tuning import ROW_GROUP_DECODERS, ROW_GROUPS_READ_AHEAD

__all__ = ["row_group_chunks"]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _decoders() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                min(ROW_GROUP_DECODERS, worker_count()), thread_name_prefix="calcore-decode"
            )
        return _pool


def row_group_chunks(path: str, columns, batch_rows: int) -> list[tuple[str, Iterator]]:
    """``(what, batches)`` per row group of a Parquet file: ``batches`` yields Arrow
    tables or record batches of at most ``batch_rows`` rows, with ``columns`` only.

    Raises
    ------
    FileNotFoundError, OSError, pyarrow.ArrowException
        From opening the file here, or from reading a row group when its ``batches``
        are iterated (the caller names the row group).
    """
    from calcore.io._parquet import open_parquet  # pages checked against their checksums

    handle = open_parquet(path)
    n = handle.num_row_groups
    sizes = [handle.metadata.row_group(g).num_rows for g in range(n)]
    # One worker (calcore.foundation.threads.worker_count): decoded in line, on the
    # caller's thread alone (no decoding thread beside it, nor pyarrow's own threads).
    threads = worker_count() > 1
    if n < 2 or max(sizes) > batch_rows or not threads:
        read = handle.iter_batches
        return [
            (
                f"row group {g}",
                read(batch_size=batch_rows, row_groups=[g], columns=columns, use_threads=threads),
            )
            for g in range(n)
        ]
    ahead = _ReadAhead(path, list(columns), n)
    return [(f"row group {g}", ahead.tables(g)) for g in range(n)]


class _ReadAhead:
    """Row groups of one file decoded on the shared threads, up to
    ``ROW_GROUPS_READ_AHEAD`` ahead of the one asked for; each thread opens the file once
    (a ``ParquetFile`` is not shared between threads)."""

    def __init__(self, path: str, columns: list[str], n_groups: int) -> None:
        self.path, self.columns, self.n_groups = path, columns, n_groups
        self.futures: dict[int, Future] = {}
        self.local = threading.local()

    def _read(self, group: int):
        from calcore.io._parquet import open_parquet

        handle = getattr(self.local, "handle", None)
        if handle is None:
            handle = self.local.handle = open_parquet(self.path)
        return handle.read_row_group(group, columns=self.columns, use_threads=False)

    def tables(self, group: int) -> Iterator:
        """The row group's table, decoding the next ones meanwhile (generator: nothing is
        submitted until it is iterated)."""
        for g in range(group, min(group + ROW_GROUPS_READ_AHEAD + 1, self.n_groups)):
            if g not in self.futures:
                self.futures[g] = _decoders().submit(self._read, g)
        yield self.futures.pop(group).result()
