"""The server's data directory: what is listed, what a link may open (real symlinks), the
fingerprint, the shared cache and the demo dataset."""

from __future__ import annotations

import doctest
import os
import stat
import threading
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import calcore
from dashboard import demo
from dashboard.calibration import datadir, shared
from dashboard.calibration.datadir import DataDirectory, data_directory


def _csv(path, rows=3) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["label,p_a,p_b"] + ["a,0.9,0.1" if i % 2 else "b,0.2,0.8" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def tree(tmp_path):
    """root/ with datasets, non-data files and symlinks in and out; outside/ beside it."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    _csv(root / "a.csv")
    _csv(root / "logs" / "day=1" / "part.csv")
    _csv(root / "logs" / "day=2" / "part.csv")
    _csv(root / ".hidden.csv")
    _csv(root / "_staging" / "x.csv")
    (root / "notes.txt").write_text("not data")
    (root / "empty").mkdir()
    _csv(outside / "secret.csv")
    os.symlink(outside / "secret.csv", root / "leak.csv")  # a file symlink leading out
    os.symlink(outside, root / "leakdir")  # a folder symlink leading out
    os.symlink(root / "a.csv", root / "alias.csv")  # a symlink that stays inside
    _csv(root / "mixed" / "ok.csv")
    os.symlink(outside / "secret.csv", root / "mixed" / "stolen.csv")  # one file leads out
    return root


def test_lists_top_level_datasets_only_inside(tree):
    names = [d.name for d in DataDirectory(tree).datasets()]
    assert names == ["a.csv", "alias.csv", "logs"]
    logs = DataDirectory(tree).resolve("logs")
    assert logs.is_folder and len(logs.files) == 2
    assert logs.describe().startswith("logs/ · 2 files · ")


@pytest.mark.parametrize(
    "name",
    [
        "../outside/secret.csv", "logs/../../outside/secret.csv", "/etc/passwd",
        str("/" / __import__("pathlib").Path("etc")), "leak.csv", "leakdir", "leakdir/secret.csv",
        "mixed", ".hidden.csv", "_staging", "logs/*", "a.c?v", "a[.]csv", "..\\a.csv",
        "C:\\a.csv", "a.csv\x00", "", "notes.txt", "empty", "nope.csv", "a" * 301, "./a.csv",
        "logs//day=1", 7,
    ],
)  # fmt: skip
def test_names_that_lead_out_or_are_not_datasets_are_refused(tree, name):
    with pytest.raises(calcore.CalcoreError, match="is not a dataset of the server") as err:
        DataDirectory(tree).resolve(name)
    assert str(tree) not in str(err.value)  # the server's paths are not shown


def test_names_inside_resolve_also_below_the_top_level(tree):
    directory = DataDirectory(tree)
    assert directory.resolve("logs/day=1/part.csv").files[0].endswith("part.csv")
    assert directory.resolve("alias.csv").name == "alias.csv"
    assert directory.resolve("logs/").name == "logs"


def test_a_symlink_planted_after_listing_is_refused_on_open(tree, tmp_path):
    directory = DataDirectory(tree)
    assert directory.resolve("logs").files
    os.symlink(tmp_path / "outside" / "secret.csv", tree / "logs" / "late.csv")
    with pytest.raises(calcore.CalcoreError, match="is not a dataset"):
        directory.resolve("logs")


def test_the_fingerprint_changes_when_a_file_is_replaced(tree):
    directory = DataDirectory(tree)
    before = directory.resolve("a.csv").fingerprint
    assert directory.resolve("a.csv").fingerprint == before  # stable
    _csv(tree / "a.csv", rows=5)
    assert directory.resolve("a.csv").fingerprint != before
    folder = directory.resolve("logs").fingerprint
    _csv(tree / "logs" / "day=3" / "part.csv")
    assert directory.resolve("logs").fingerprint != folder  # a new partition counts


def test_data_directory_from_the_environment(tree, tmp_path):
    assert data_directory({}) is None
    assert data_directory({datadir.DATA_DIR_ENV: "  "}) is None
    assert data_directory({datadir.DATA_DIR_ENV: str(tree)}).root == tree.resolve()
    with pytest.raises(calcore.CalcoreError, match="is not a directory"):
        data_directory({datadir.DATA_DIR_ENV: str(tmp_path / "missing")})


def test_human_sizes():
    assert [datadir.human_size(n) for n in (0, 999, 1000, 1_234_567, 3_400_000_000)] == [
        "0 B", "999 B", "1.0 kB", "1.2 MB", "3.4 GB",
    ]  # fmt: skip


@pytest.mark.parametrize("module", [datadir, shared])
def test_module_examples_run(module):
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted and not failed


def test_shared_cache_computes_a_key_once_for_concurrent_callers():
    cache = shared.SharedCache(max_entries=4, ttl_s=60)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return object()

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(cache.get("k", slow))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


def test_shared_cache_forgets_failures_old_and_least_recent_entries():
    cache = shared.SharedCache(max_entries=2, ttl_s=0.2)

    def fail():
        raise calcore.CalcoreError("boom")

    with pytest.raises(calcore.CalcoreError):
        cache.get("x", fail)
    assert cache.get("x", lambda: 1) == 1  # a failure was not cached
    cache.get("y", lambda: 2)
    cache.get("z", lambda: 3)  # evicts x, the least recently used
    assert cache.get("x", lambda: 10) == 10
    time.sleep(0.25)
    assert cache.get("z", lambda: 30) == 30  # expired


def test_demo_is_deterministic_complete_and_has_its_planted_problems(tmp_path):
    path = demo.write_demo(tmp_path / "a", n_rows=1_200_000, name="c.parquet")
    again = demo.write_demo(tmp_path / "b", n_rows=1_200_000, name="c.parquet")
    first, second = pq.read_table(path), pq.read_table(again)
    assert first.equals(second) and first.num_rows == 1_200_000
    assert [f for f in os.listdir(tmp_path / "a")] == ["c.parquet"]  # no temporary left
    mtime = path.stat().st_mtime_ns
    assert demo.write_demo(tmp_path / "a", n_rows=1_200_000, name="c.parquet") == path
    assert path.stat().st_mtime_ns == mtime  # a complete file is kept
    frame = first.to_pandas()
    assert set(frame.columns) == {"label", "p_click", "segment", "device", "date", "split"}
    assert 0.15 < (frame["split"] == "calib").mean() < 0.25
    clicked = frame["label"] == "click"
    blind = (frame["segment"] == "travel") & (frame["device"] == "mobile")
    early = pd.to_datetime(frame["date"]) < pd.Timestamp("2026-10-19")

    def observed_over_predicted(rows):
        return clicked[rows].mean() / frame.loc[rows, "p_click"].mean()

    # the planted problems: travel x mobile under-predicted (odds halved), over-prediction
    # after the drift date, and close elsewhere (slope 1.1: slightly over-confident)
    assert observed_over_predicted(blind & early) > 1.35
    assert 0.85 < observed_over_predicted(~blind & early) < 1.0
    assert observed_over_predicted(~blind & ~early) < 0.7
    loaded = calcore.load_predictions(path, split="test")
    assert loaded.class_names == ("no click", "click")
    assert np.isclose(loaded.n_samples, 0.8 * 1_200_000, rtol=0.01)


# -- issue 33: a FIFO (or any non-regular file) never hangs a dataset -------------------


@pytest.mark.timeout(30)
def test_a_fifo_in_a_dataset_folder_refuses_the_dataset_naming_it_without_reading(tree):
    os.mkfifo(tree / "logs" / "day=3.csv")  # nobody ever writes to it: a read would hang
    with pytest.raises(calcore.CalcoreError) as err:
        DataDirectory(tree).resolve("logs")
    message = str(err.value)
    assert "'logs' cannot be read: 'logs/day=3.csv' in it is a FIFO" in message
    assert "operator" in message and str(tree) not in message  # no server path shown
    assert [d.name for d in DataDirectory(tree).datasets()] == ["a.csv", "alias.csv"]


@pytest.mark.timeout(30)
def test_devices_sockets_and_links_out_to_a_fifo_are_refused_too(tree, tmp_path):
    import socket

    (tree / "dev").mkdir()
    _csv(tree / "dev" / "ok.csv")
    try:  # a copy of /dev/zero inside the directory: a read never ends
        os.mknod(tree / "dev" / "zeros.csv", 0o666 | stat.S_IFCHR, os.stat("/dev/zero").st_rdev)
    except PermissionError:
        pass  # not root: the socket and the link below still count
    else:
        with pytest.raises(calcore.CalcoreError, match="'dev/zeros.csv' in it is a character"):
            DataDirectory(tree).resolve("dev")
    os.symlink("/dev/zero", tree / "dev" / "link.csv")  # a link out, to a device
    with pytest.raises(calcore.CalcoreError, match="is not a dataset of the server"):
        DataDirectory(tree).resolve("dev")
    (tree / "sock").mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tree / "sock" / "s.parquet"))
        with pytest.raises(calcore.CalcoreError, match="'sock/s.parquet' in it is a socket"):
            DataDirectory(tree).resolve("sock")
    os.mkfifo(tmp_path / "outside" / "pipe.csv")
    (tree / "out").mkdir()
    _csv(tree / "out" / "ok.csv")
    os.symlink(tmp_path / "outside" / "pipe.csv", tree / "out" / "pipe.csv")
    with pytest.raises(calcore.CalcoreError, match="is not a dataset of the server") as err:
        DataDirectory(tree).resolve("out")  # a link out: nothing said of its target
    assert "FIFO" not in str(err.value)


@pytest.mark.timeout(30)
def test_a_session_waits_a_bounded_time_for_another_sessions_stuck_read():
    cache = shared.SharedCache(max_entries=4, ttl_s=60, wait_s=0.5)
    stuck, release = threading.Event(), threading.Event()

    def stuck_read():
        stuck.set()
        release.wait(20)  # a read that does not end (until the test lets it)
        return "rows"

    first = threading.Thread(target=lambda: cache.get("k", stuck_read, what="'logs'"))
    first.start()
    stuck.wait(5)
    start = time.monotonic()
    with pytest.raises(calcore.CalcoreError, match="Another session is loading 'logs'; this"):
        cache.get("k", lambda: "never computed twice", what="'logs'")
    assert 0.4 < time.monotonic() - start < 5
    release.set()
    first.join(5)
    assert cache.get("k", lambda: "never computed twice") == "rows"  # the first one's result
