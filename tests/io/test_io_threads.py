"""calcore.io is safe to call from many threads: no process-wide warnings state, own results.

The dashboard serves several sessions from one process, each loading its own upload
in its own thread. ``warnings.catch_warnings`` is not thread-safe (it swaps the
process-wide filter list), so the loader must neither use it nor let pandas emit
warnings that another session's recorder could pick up.
"""

from __future__ import annotations

import io
import sys
import threading
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore.io._csv as csv_module
from calcore import CalcoreError, CalcoreWarning
from calcore.io import load_predictions

N_THREADS = 8


def make_csv(k: int) -> tuple[str, bytes, dict]:
    """File ``k``: its own classes, row count, dialect and warnings."""
    rng = np.random.default_rng(k)
    n_classes = 2 + k % 4
    n_rows = 50 + 37 * k
    names = [f"t{k}c{j}" for j in range(n_classes)]
    probs = np.round(rng.dirichlet(np.ones(n_classes), size=n_rows), 3)
    probs[:, -1] = np.round(1 - probs[:, :-1].sum(axis=1), 3)
    probs = np.abs(probs)
    labels = rng.integers(0, n_classes - (1 if k % 2 else 0), size=n_rows)  # odd k: a class absent
    delimiter = [",", ";", "\t"][k % 3]
    header = ["label", *(f"p_{c}" for c in names)] + (["note"] if k % 3 == 0 else [])
    lines = [delimiter.join(header)]
    for y, p in zip(labels, probs, strict=True):
        cells = [names[y], *(f"{v:.3f}" for v in p)] + (["x"] if k % 3 == 0 else [])
        lines.append(delimiter.join(cells))
    options = {"renormalize": True}
    return f"thread{k}.csv", ("\n".join(lines) + "\n").encode(), options


def make_parquet() -> tuple[str, bytes, dict]:
    sink = io.BytesIO()
    table = pa.table({"label": ["a", "b", "a"], "p_a": [0.9, 0.2, 0.6], "p_b": [0.1, 0.8, 0.4]})
    pq.write_table(table, sink)
    return "thread.parquet", sink.getvalue(), {}


def make_npz() -> tuple[str, bytes, dict]:
    buf = io.BytesIO()
    z = np.random.default_rng(99).normal(size=(40, 5))
    np.savez(buf, logits=z, labels=np.arange(40) % 5)
    return "thread.npz", buf.getvalue(), {}


FILES = [make_csv(k) for k in range(N_THREADS - 2)] + [make_parquet(), make_npz()]
BAD = ("bad.csv", b"label,p_a,p_b\na,0.5,0.5\nb,abc,0.5\n", {})


def reference(name, data, options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        preds = load_predictions(data, name=name, **options)
    return preds, [str(w.message) for w in caught]


def test_files_differ_and_some_warn():
    refs = [reference(*f) for f in FILES]
    assert len({p.class_names for p, _ in refs}) == len(FILES)
    assert sum(bool(w) for _, w in refs) >= 3
    for (name, _, _), (preds, messages) in zip(FILES, refs, strict=True):
        assert messages == preds.load_report.warnings()
        assert all(name in m for m in messages)


@pytest.mark.timeout(120)
def test_concurrent_loads_get_their_own_results_and_warnings():
    refs = {f[0]: reference(*f) for f in FILES}
    jobs = [*FILES, BAD] * 3  # 27 loads, 8 threads at a time; one file is an error
    results: dict[int, object] = {}
    barrier = threading.Barrier(N_THREADS)

    def worker(slot: int):
        barrier.wait()
        for i in range(slot, len(jobs), N_THREADS):
            name, data, options = jobs[i]
            try:
                results[i] = load_predictions(io.BytesIO(data), name=name, **options)
            except CalcoreError as exc:
                results[i] = exc

    with warnings.catch_warnings(record=True) as caught:  # set once, before the threads start
        warnings.simplefilter("always")
        threads = [threading.Thread(target=worker, args=(s,)) for s in range(N_THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == len(jobs)
    expected_messages = []
    for i, (name, _, _) in enumerate(jobs):
        got = results[i]
        if name == BAD[0]:
            assert isinstance(got, CalcoreError) and "bad.csv, line 3, column 'p_a'" in str(got)
            continue
        want, messages = refs[name]
        assert got.load_report.source == name
        assert got.class_names == want.class_names
        np.testing.assert_array_equal(got.probs, want.probs)
        np.testing.assert_array_equal(got.labels, want.labels)
        assert got.load_report == want.load_report
        expected_messages += messages
    # Every warning issued is a CalcoreWarning of one of the loads, issued exactly once per load.
    assert all(issubclass(w.category, CalcoreWarning) for w in caught), [
        (w.category.__name__, str(w.message)) for w in caught
    ]
    assert sorted(str(w.message) for w in caught) == sorted(expected_messages)


def test_loading_never_touches_the_warnings_filters(monkeypatch):
    """calcore never calls catch_warnings, simplefilter, filterwarnings or resetwarnings.

    (pandas itself calls ``catch_warnings`` inside ``pandas_dtype``; that is outside
    calcore's control and only counted here when calcore is the direct caller.)
    """
    calls = []

    def recorder(name, original):
        def record(*args, **kwargs):
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.split(".")[0] == "calcore":
                calls.append(f"{caller}.{name}")
            return original(*args, **kwargs)

        return record

    monkeypatch.setattr(csv_module, "_MIN_PIECE", 64)  # many pieces read in threads
    for name in ("catch_warnings", "simplefilter", "filterwarnings", "resetwarnings"):
        monkeypatch.setattr(warnings, name, recorder(name, getattr(warnings, name)))
    try:
        for name, data, options in [*FILES, make_csv(7)]:
            load_predictions(data, name=name, **options)
        try:
            load_predictions(BAD[1], name=BAD[0])
        except CalcoreError:
            pass
    finally:
        monkeypatch.undo()
    assert calls == []


def _mixed_column_csv(n_rows: int) -> bytes:
    rows = ["a,0.5,0.5"] * n_rows
    rows[-3] = "b,abc,0.5"  # text in a numeric column, far from the first rows
    return ("label,p_a,p_b\n" + "\n".join(rows) + "\n").encode()


@pytest.mark.parametrize("pieces", [1, 4])
def test_a_late_text_cell_gives_the_error_and_no_pandas_warning(monkeypatch, pieces):
    """pandas' DtypeWarning (mixed types across its buffers) must not escape."""
    monkeypatch.setattr(csv_module, "worker_count", lambda: pieces)
    monkeypatch.setattr(csv_module, "_MIN_PIECE", 1 << 16)
    data = _mixed_column_csv(600_000)  # 6 MB, many times pandas' low-memory buffer
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the load instead
        with pytest.raises(
            CalcoreError, match=r"late\.csv, line 599999, column 'p_a': value 'abc'"
        ):
            load_predictions(data, name="late.csv")


def test_the_chunked_fallback_read_does_not_warn(monkeypatch):
    """Reads larger than a piece (after a failed cut) go through one-buffer chunks."""
    monkeypatch.setattr(csv_module, "_MAX_PIECE", 1 << 10)
    from calcore.io._source import open_source

    src = open_source(_mixed_column_csv(300_000), name="late.csv")
    layout = csv_module.scan_csv(src)
    names = ["c0", "c1", "c2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frames = csv_module._read_frames(
            src, layout, names, layout.body_start, layout.body_end, {"c0": str}
        )
    assert len(frames) > 1 and sum(len(f) for f in frames) == 300_000
    kinds = {f["c1"].dtype.kind for f in frames}
    assert "f" in kinds and kinds != {"f"}  # the chunk with 'abc' is text, the others numbers
