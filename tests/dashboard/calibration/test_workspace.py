"""The workspace of kept uploads: content stored once, unguessable ids, expiry, quota, a full
disk, a restart, a corrupted index, concurrent keeps and deletes; and the page's link."""

from __future__ import annotations

import doctest
import errno
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import APP, REPO_ROOT, assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from streamlit.testing.v1 import AppTest

import calcore
from dashboard.calibration import controls, workspace
from dashboard.calibration.state import Settings, settings_from_query, settings_to_query
from dashboard.calibration.workspace import NOT_FOUND, Workspace, workspace_from_env

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


def test_a_kept_upload_reopens_from_the_link_and_only_its_code_deletes_it(kept_dir):
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

    # the link reopens the file but cannot delete it: that takes the uploader's code
    # the code is escaped like any text (an underscore pair would otherwise be italics)
    (caption,) = [
        unescape_markdown(c.value) for c in at.caption if c.value.startswith("Delete code: ")
    ]
    code = caption.removeprefix("Delete code: ").split(".")[0]
    assert code not in (kept_dir / "ids" / f"{kept_id}.json").read_text()  # only its hash
    reviewer.button(key=controls.KEY_DELETE_KEPT).click().run()  # no code
    assert any("not this file's delete code" in unescape_markdown(e.value) for e in reviewer.error)
    assert os.listdir(kept_dir / "blobs")
    reviewer.text_input(key=controls.KEY_DELETE_CODE).set_value(code)
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


# -- issue 33: records and index rows trusted only once checked -------------------------


def _index_ids(ws: Workspace) -> set[str]:
    with sqlite3.connect(ws.index) as db:
        return {kept_id for (kept_id,) in db.execute("SELECT id FROM kept")}


def _drop_index(ws: Workspace) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{ws.index}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize(
    "change",
    [
        {"digest": "../../victim.txt"},
        {"digest": "/etc/hostname"},
        {"digest": "A" * 64},
        {"id": "f" * 32},  # not the record's own file name
        {"size": "12"},
        {"name": None},
        {"expires": True},
    ],
)
def test_the_rebuild_refuses_a_tampered_record_and_never_touches_its_path(tmp_path, change):
    root, victim = tmp_path / "ws", tmp_path / "victim.txt"
    victim.write_text("not the workspace's")
    ws = Workspace(root)
    good = ws.keep(CSV, "a.csv")
    record = json.loads((root / "ids" / f"{good.id}.json").read_text())
    forged_id = "e" * 32
    forged = root / "ids" / f"{forged_id}.json"
    forged.write_text(json.dumps(record | {"id": forged_id} | change))
    _drop_index(ws)
    again = Workspace(root)
    assert _index_ids(again) == {good.id}
    with pytest.raises(calcore.CalcoreError, match="not found"):
        again.open(forged_id)
    assert not forged.exists() and any(n.startswith(f"{forged_id}.json.damaged-")
                                       for n in os.listdir(root / "ids"))  # fmt: skip
    again.delete(forged_id)
    again.purge()
    assert victim.read_text() == "not the workspace's"
    assert again.open(good.id) == (good, CSV)


def test_a_tampered_index_row_serves_and_deletes_nothing_outside(tmp_path):
    root, victim = tmp_path / "ws", tmp_path / "victim.txt"
    victim.write_text("not the workspace's")
    ws = Workspace(root)
    row = ("d" * 32, "x.csv", "../../victim.txt", 10, time.time(), time.time() + 3600, None)
    with sqlite3.connect(ws.index) as db:
        db.execute("INSERT INTO kept VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    with pytest.raises(calcore.CalcoreError, match="not found"):
        ws.open(row[0])
    ws.delete(row[0])
    assert victim.read_text() == "not the workspace's"


# -- issue 33: what a crash leaves is swept --------------------------------------------

_HOLD_A_TEMPORARY = """
import sys, time
from pathlib import Path
from dashboard.calibration.workspace import _temporary
with _temporary(Path(sys.argv[1]), b"x" * 1_000_000):
    print("writing", flush=True)
    time.sleep(120)
"""


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.mark.timeout(60)
def test_temporaries_of_a_killed_keep_are_swept_at_start_and_live_ones_are_not(tmp_path):
    ws = Workspace(tmp_path)
    killed = subprocess.Popen(
        [sys.executable, "-c", _HOLD_A_TEMPORARY, str(tmp_path / "blobs")],
        stdout=subprocess.PIPE, cwd=REPO_ROOT,
    )  # fmt: skip
    assert killed.stdout.readline().strip() == b"writing"
    killed.send_signal(signal.SIGKILL)  # kill -9: no clean-up ran
    killed.wait(10)
    (left,) = files(tmp_path, "blobs")
    assert left.startswith(".tmp-")
    with workspace._temporary(tmp_path / "ids", b"a live keep's record") as live:
        for path in (tmp_path / "blobs" / left, Path(live)):
            _age(path, workspace.TEMPORARY_GRACE_S + 5)  # past the moment before a lock
        Workspace(tmp_path)  # a server start
        assert files(tmp_path, "blobs") == []  # 1 MB back at once, not after an hour
        assert files(tmp_path, "ids") == [os.path.basename(live)]  # its writer holds it
    assert ws.used_bytes() == 0


def test_moved_aside_files_are_kept_a_day_and_only_the_newest_damaged_index(tmp_path):
    ws = Workspace(tmp_path)
    stamp = lambda hours: time.strftime("%Y%m%dT%H%M%S", time.localtime(time.time() - hours * 3600))  # noqa: E731
    names = {
        f"index.sqlite3.damaged-{stamp(1)}": True,  # the newest damaged index, for a day
        f"index.sqlite3-wal.damaged-{stamp(1)}": True,
        f"index.sqlite3.damaged-{stamp(3)}": False,  # an older one: gone
        f"ids/{'a' * 32}.json.damaged-{stamp(2)}": True,  # a refused record, for a day
        f"ids/{'b' * 32}.json.damaged-{stamp(25)}": False,
    }
    for name in names:
        (tmp_path / name).write_text("moved aside")
    ws.sweep_damaged()
    assert {name: (tmp_path / name).exists() for name in names} == names
    assert ws.sweep_damaged(now=time.time() + 86_400) == 3  # a day later: nothing left


# -- issue 33: a full disk during a keep leaves nothing ---------------------------------


def _consistent(ws: Workspace) -> None:
    """Every record is an index row and back; the bytes are exactly the rows' contents."""
    root = ws.root
    records = {f[: -len(".json")] for f in files(root, "ids")}
    assert records == _index_ids(ws)
    with sqlite3.connect(ws.index) as db:
        digests = {d for (d,) in db.execute("SELECT DISTINCT digest FROM kept")}
    assert set(files(root, "blobs")) == digests  # no temporary or unused file either
    for kept_id in records:
        kept, data = ws.open(kept_id)
        assert len(data) == kept.size


@pytest.fixture
def tiny_disk(tmp_path):
    """A 400 kB file system of its own (tmpfs; needs root, as in CI containers)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)],
                          capture_output=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root)")
    yield mount
    subprocess.run(["umount", "--lazy", str(mount)], check=True)


def test_a_really_full_disk_refuses_keeps_with_a_message_and_leaves_nothing(tiny_disk):
    ws = Workspace(tiny_disk / "ws")
    rng = np.random.default_rng(3)
    refused = 0
    for i in range(400):  # sizes vary, so the disk fills at every step of a keep
        data = rng.bytes(int(rng.integers(1, 9000)))
        try:
            ws.keep(data, f"f{i}.csv")
        except calcore.CalcoreError as err:
            assert "nothing was stored" in str(err)
            refused += 1
        _consistent(ws)
    assert refused > 50


class _FailingConnection:
    """A SQLite connection whose statement starting with ``fail_on`` fails as a full disk."""

    def __init__(self, db, fail_on: str):
        self.db, self.fail_on = db, fail_on

    def execute(self, sql, *args):
        if sql.lstrip().upper().startswith(self.fail_on):
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)


@pytest.mark.parametrize("step", ["blob rename", "record rename", "INSERT", "COMMIT"])
def test_a_keep_failing_at_any_step_rolls_everything_back(tmp_path, monkeypatch, step):
    ws = Workspace(tmp_path)
    first = ws.keep(b"other" + CSV, "b.csv")
    if step in ("INSERT", "COMMIT"):
        connect = ws._connect
        monkeypatch.setattr(ws, "_connect", lambda: _FailingConnection(connect(), step))
    else:
        real_replace, calls = os.replace, []

        def replace(src, dst):
            calls.append(dst)
            if len(calls) == (1 if step == "blob rename" else 2):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_replace(src, dst)

        monkeypatch.setattr(workspace.os, "replace", replace)
    with pytest.raises(calcore.CalcoreError, match=r"\(.*(space|full).*\); nothing was stored"):
        ws.keep(CSV, "a.csv")
    monkeypatch.undo()
    assert _index_ids(ws) == {first.id}
    _consistent(ws)
    assert ws.keep(CSV, "a.csv").size == len(CSV)  # and the next keep works


@pytest.mark.parametrize(
    "quota_mb, size, words",
    [
        (0.0001, 150, "it holds 0 B of 100 B, and this file needs 150 B"),
        (0.0025, 2600, "it holds 0 B of 2.5 kB, and this file needs 2.6 kB"),
        (3, 3_100_000, "it holds 0 B of 3.0 MB, and this file needs 3.1 MB"),
    ],
)
def test_the_quota_message_shows_sizes_in_readable_units(tmp_path, quota_mb, size, words):
    ws = Workspace(tmp_path, quota_mb=quota_mb)
    with pytest.raises(calcore.CalcoreError) as err:
        ws.keep(b"x" * size, "big.csv")
    assert words in str(err.value)


def test_a_delete_on_a_full_disk_frees_the_room_or_says_nothing_was_deleted(tmp_path, monkeypatch):
    ws = Workspace(tmp_path)
    a, b = ws.keep(CSV, "a.csv"), ws.keep(b"other" + CSV, "b.csv")
    connect = ws._connect
    # the row's delete itself fails: nothing changed, and the page is told so
    monkeypatch.setattr(ws, "_connect", lambda: _FailingConnection(connect(), "DELETE"))
    with pytest.raises(calcore.CalcoreError, match="disk is full.*nothing was deleted"):
        ws.delete(a.id)
    # the commit fails once the files are gone (they made the room): the id is deleted
    monkeypatch.setattr(ws, "_connect", lambda: _FailingConnection(connect(), "COMMIT"))
    ws.delete(b.id)
    monkeypatch.undo()
    with pytest.raises(calcore.CalcoreError, match="not found"):
        ws.open(b.id)
    ws.purge()  # the row the failed commit left goes
    assert _index_ids(ws) == {a.id} and ws.open(a.id) == (a, CSV)
    _consistent(ws)


def test_a_delete_the_server_cannot_do_is_shown_on_the_page(kept_dir, monkeypatch):
    at = new_app({})
    at.run()
    at.radio(key=controls.KEY_SOURCE).set_value(controls.SOURCE_UPLOAD).run()
    at.file_uploader(key=controls.KEY_UPLOAD).upload("mine.csv", CSV, "text/csv").run()
    at.checkbox(key=controls.KEY_KEEP).check().run()
    assert_clean(at)

    def full(self, kept_id):
        raise calcore.CalcoreError("Could not delete the kept file (disk full); try again.")

    monkeypatch.setattr(Workspace, "delete", full)
    at.button(key=controls.KEY_DELETE_KEPT).click().run()
    assert not at.exception
    assert [unescape_markdown(e.value) for e in at.error] == [
        "Could not delete the kept file (disk full); try again."
    ]
    assert at.checkbox(key=controls.KEY_KEEP).value  # still kept: nothing changed
    assert len(os.listdir(kept_dir / "ids")) == 1


def test_only_the_delete_code_deletes_and_only_its_hash_is_stored(tmp_path):
    ws = Workspace(tmp_path / "ws")
    kept = ws.keep(b"label,p\n1,0.5\n", "mine.csv")
    assert kept.delete_code and len(kept.delete_code) >= 16
    record = (tmp_path / "ws" / "ids" / f"{kept.id}.json").read_text()
    assert kept.delete_code not in record and kept.delete_hash in record
    assert ws.lookup(kept.id).delete_code is None  # the server cannot show it again
    for wrong in ("", "x" * 16, kept.delete_code[:-1], kept.delete_hash):
        with pytest.raises(calcore.CalcoreError, match="not this file's delete code"):
            ws.delete_with_code(kept.id, wrong)
        assert ws.open(kept.id)[1] == b"label,p\n1,0.5\n"
    ws.rebuild_index()  # the record carries the hash through a rebuild
    ws.delete_with_code(kept.id, f" {kept.delete_code} ")  # spaces of a copy are forgiven
    with pytest.raises(calcore.CalcoreError, match="not found"):
        ws.open(kept.id)


def test_an_index_and_records_from_before_delete_codes_still_open(tmp_path):
    """An index without the delete_hash column is migrated; a record without a hash opens,
    and nobody can delete it from the page (it expires)."""
    import json as _json

    root = tmp_path / "ws"
    ws = Workspace(root)
    kept = ws.keep(b"label,p\n1,0.5\n", "old.csv")
    record = root / "ids" / f"{kept.id}.json"
    fields = _json.loads(record.read_text())
    del fields["delete_hash"]
    record.write_text(_json.dumps(fields))
    with sqlite3.connect(ws.index) as db:  # the old schema, six columns
        db.execute("DROP TABLE kept")
        db.execute(
            "CREATE TABLE kept (id TEXT PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL, "
            "size INTEGER NOT NULL, created REAL NOT NULL, expires REAL NOT NULL)"
        )
        db.execute(
            "INSERT INTO kept VALUES (?, ?, ?, ?, ?, ?)",
            (kept.id, kept.name, kept.digest, kept.size, kept.created, kept.expires),
        )
    again = Workspace(root)
    assert again.open(kept.id)[0].delete_hash is None
    with pytest.raises(calcore.CalcoreError, match="kept before delete codes"):
        again.delete_with_code(kept.id, kept.delete_code)
    assert again.keep(b"label,p\n0,0.5\n", "new.csv").delete_code  # new keeps work
