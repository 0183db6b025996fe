"""The workspace of kept uploads: content stored once, unguessable ids, expiry, quota, a full
disk, a restart, a corrupted index, concurrent keeps and deletes; and the page's link."""

from __future__ import annotations

import doctest
import errno
import io
import os
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from streamlit.testing.v1 import AppTest

import calcore
from dashboard.calibration import controls, workspace
from dashboard.calibration.state import Settings, settings_from_query, settings_to_query
from dashboard.calibration.workspace import NOT_FOUND, Workspace, workspace_from_env

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
CSV = b"label,p_a,p_b\na,0.9,0.1\nb,0.3,0.7\nb,0.6,0.4\na,0.8,0.2\n"


def files(root: Path, folder: str) -> list[str]:
    return sorted(os.listdir(root / folder))


def test_examples_run():
    failed, attempted = doctest.testmod(workspace, optionflags=doctest.ELLIPSIS)
    assert attempted and not failed


def test_same_content_is_stored_once_under_separate_ids(tmp_path):
    ws = Workspace(tmp_path)
    a, b = ws.keep(CSV, "a.csv"), ws.keep(CSV, "b.csv")
    assert a.id != b.id and len(a.id) == 32 and int(a.id, 16) >= 0
    assert a.digest == b.digest and files(tmp_path, "blobs") == [a.digest]
    assert ws.used_bytes() == len(CSV)
    ws.delete(a.id)
    assert ws.open(b.id) == (b, CSV)  # the other holder's link still works
    ws.delete(b.id)
    assert files(tmp_path, "blobs") == [] and files(tmp_path, "ids") == []


@pytest.mark.parametrize(
    "bad", ["", "0" * 32, "g" * 32, "A" * 32, "../index.sqlite3", None, "1" * 64]
)
def test_unknown_or_malformed_ids_all_say_the_same_not_found(tmp_path, bad):
    ws = Workspace(tmp_path)
    ws.keep(CSV, "a.csv")
    with pytest.raises(calcore.CalcoreError) as err:
        ws.open(bad)
    assert str(err.value) == NOT_FOUND
    ws.delete(bad)  # a no-op, not an error


def test_expired_files_are_not_found_and_deleted_from_disk(tmp_path):
    ws = Workspace(tmp_path, retention_days=0.3 / 86_400)  # 0.3 s
    kept = ws.keep(CSV, "a.csv")
    assert ws.open(kept.id)[1] == CSV
    time.sleep(0.4)
    with pytest.raises(calcore.CalcoreError, match="not found"):
        ws.open(kept.id)
    assert files(tmp_path, "blobs") == [] and files(tmp_path, "ids") == []
    later = ws.keep(b"x" + CSV, "b.csv")
    time.sleep(0.4)
    Workspace(tmp_path)  # opening the workspace purges too (a server start)
    assert files(tmp_path, "blobs") == [] and not (tmp_path / "ids" / f"{later.id}.json").exists()


def test_the_quota_refuses_with_a_message_and_stores_nothing(tmp_path):
    ws = Workspace(tmp_path, quota_mb=len(CSV) * 1.5 / 1e6)
    ws.keep(CSV, "a.csv")
    ws.keep(CSV, "again.csv")  # the same bytes take no more room
    with pytest.raises(calcore.CalcoreError, match="workspace is full.*QUOTA_MB"):
        ws.keep(CSV + b"c,0.5,0.5\n", "b.csv")
    assert len(files(tmp_path, "blobs")) == 1 and len(files(tmp_path, "ids")) == 2


def test_a_full_disk_leaves_nothing_half_written(tmp_path, monkeypatch):
    ws = Workspace(tmp_path)
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(workspace.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(calcore.CalcoreError, match="No space left on device.*nothing was stored"):
        ws.keep(CSV, "a.csv")
    monkeypatch.undo()
    assert files(tmp_path, "blobs") == [] and files(tmp_path, "ids") == []
    assert ws.used_bytes() == 0


def test_a_restart_keeps_every_id(tmp_path):
    kept = Workspace(tmp_path).keep(CSV, "a.csv")
    assert Workspace(tmp_path).open(kept.id) == (kept, CSV)


@pytest.mark.parametrize("damage", ["garbage", "missing"])
def test_a_damaged_index_is_rebuilt_from_the_records(tmp_path, damage):
    ws = Workspace(tmp_path)
    a, b = ws.keep(CSV, "a.csv"), ws.keep(b"other" + CSV, "b.csv")
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{ws.index}{suffix}")
        if path.exists():
            path.unlink()
    if damage == "garbage":
        ws.index.write_bytes(b"this is not a database" * 100)
    again = Workspace(tmp_path)
    assert again.open(a.id) == (a, CSV) and again.open(b.id)[0] == b
    if damage == "garbage":
        assert any(".damaged-" in name for name in os.listdir(tmp_path))


def test_concurrent_keeps_and_deletes_of_the_same_content_stay_consistent(tmp_path):
    ws = Workspace(tmp_path)
    ids, errors = [], []

    def keeper():
        try:
            for _ in range(5):
                ids.append(ws.keep(CSV, "a.csv").id)
        except Exception as err:
            errors.append(err)

    def deleter():
        try:
            for _ in range(10):
                for kept_id in list(ids)[:3]:
                    ws.delete(kept_id)
        except Exception as err:
            errors.append(err)

    threads = [threading.Thread(target=f) for f in (keeper, keeper, deleter, keeper, deleter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    alive = []
    for kept_id in ids:
        try:
            assert ws.open(kept_id)[1] == CSV
            alive.append(kept_id)
        except calcore.CalcoreError:
            pass
    # the bytes exist exactly when some id still uses them, and every record is an id
    assert bool(files(tmp_path, "blobs")) == bool(alive)
    assert sorted(f[:-5] for f in files(tmp_path, "ids")) == sorted(alive)


def test_settings_from_the_environment(tmp_path):
    assert workspace_from_env({}) is None
    ws = workspace_from_env({"CALCORE_WORKSPACE_DIR": str(tmp_path), "CALCORE_WORKSPACE_DAYS": "2"})
    assert ws.retention_s == 2 * 86_400 and ws.quota_bytes == 5_000_000_000
    for var, value in (("CALCORE_WORKSPACE_DAYS", "0"), ("CALCORE_WORKSPACE_QUOTA_MB", "lots")):
        with pytest.raises(calcore.CalcoreError, match=f"{var}=.*positive number"):
            workspace_from_env({"CALCORE_WORKSPACE_DIR": str(tmp_path), var: value})


def test_the_link_carries_the_id_alone():
    s = Settings(None, "secret name.csv", kept="ab" * 16)
    q = settings_to_query(s)
    assert q["ws"] == "ab" * 16 and "upload" not in q
    back = settings_from_query({"ws": ["ab" * 16]}, samples={"x"}, default_sample="x")
    assert back.kept == "ab" * 16 and back.sample is None


# -- the page ------------------------------------------------------------------------------
@pytest.fixture
def kept_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CALCORE_WORKSPACE_DIR", str(tmp_path / "ws"))
    monkeypatch.delenv("CALCORE_DATA_DIR", raising=False)
    return tmp_path / "ws"


def new_app(query: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180)
    for key, value in {"boot": "0", "m": "none", **query}.items():
        at.query_params[key] = value
    return at


def conf_ece_cell(at: AppTest) -> str:
    frame = at.table[0].value
    first = frame["metric"].str.split(" = ").str[0]  # a merged row counts for its first error
    return frame.loc[first == "conf-ECE", "uncalibrated"].iloc[0]


def test_a_kept_upload_reopens_from_the_link_and_can_be_deleted(kept_dir):
    at = new_app({})
    at.run()
    at.radio(key=controls.KEY_SOURCE).set_value(controls.SOURCE_UPLOAD).run()
    at.file_uploader(key=controls.KEY_UPLOAD).upload("mine.csv", CSV, "text/csv").run()
    assert_clean(at)
    assert "ws" not in at.query_params  # off by default
    at.checkbox(key=controls.KEY_KEEP).check().run()
    assert_clean(at)
    kept_id = at.query_params["ws"]
    kept_id = kept_id[0] if isinstance(kept_id, list) else kept_id
    assert len(kept_id) == 32
    shown = conf_ece_cell(at)

    reviewer = new_app({"ws": kept_id})  # another person, no upload
    reviewer.run()
    assert_clean(reviewer)
    assert conf_ece_cell(reviewer) == shown
    from calcore.evaluation import random_split

    preds = calcore.load_predictions(io.BytesIO(CSV), name="mine.csv")
    _, test = random_split(preds, test_fraction=0.5, seed=0)  # no split column: the default
    assert shown == f"{calcore.evaluate(test, bins=15).conf_ece:.4f}"
    assert any(
        "Kept on the server as mine.csv" in unescape_markdown(c.value) for c in reviewer.caption
    )

    reviewer.button(key=controls.KEY_DELETE_KEPT).click().run()
    assert any("Deleted mine.csv" in unescape_markdown(s.value) for s in reviewer.success)
    assert not os.listdir(kept_dir / "blobs")
    late = new_app({"ws": kept_id})
    late.run()
    assert not late.exception
    assert [unescape_markdown(e.value) for e in late.error] == [NOT_FOUND]


def test_a_wrong_id_says_not_found_and_nothing_else(kept_dir):
    at = new_app({"ws": "0123456789abcdef" * 2})
    at.run()
    assert not at.exception
    assert [unescape_markdown(e.value) for e in at.error] == [NOT_FOUND]


def test_without_a_workspace_the_box_is_absent_and_a_kept_link_says_so(monkeypatch):
    monkeypatch.delenv("CALCORE_WORKSPACE_DIR", raising=False)
    at = new_app({"ws": "ab" * 16})
    at.run()
    assert not at.exception
    assert any("keeps no files" in unescape_markdown(i.value) for i in at.info)
    at.file_uploader(key=controls.KEY_UPLOAD).upload("mine.csv", CSV, "text/csv").run()
    assert not [c for c in at.checkbox if c.key == controls.KEY_KEEP]
