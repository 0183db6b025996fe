"""Files calcore writes for a user (issue 33, item 1): what the path is, it stays.

A report or an output is renamed onto a regular (or new) file only; a device, a FIFO or a
symbolic link is written through and keeps its kind; ``-`` is standard output where a
command accepts it; a directory is refused. Each expectation below is a fact about the
file system (its kind, inode, mode, bytes) or the parsed report, not the writer's code.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import calcore
from calcore.cli import main
from calcore.io._output import open_output, write_output
from calcore.io.export import write_json, write_predictions_csv
from calcore.io.stream_write import write_predictions

# confidences 0.9, 0.9, 0.8, 0.8 with the argmax right on rows 1, 3, 4: one-bin conf-ECE 0.1
FOUR_ROWS = "label,p_a,p_b\na,0.9,0.1\nb,0.9,0.1\nb,0.2,0.8\nb,0.2,0.8\n"
GATE = ["--max", "conf_ece=0.5", "--bins", "1"]


@pytest.fixture()
def four(tmp_path):
    path = tmp_path / "four.csv"
    path.write_text(FOUR_ROWS)
    return path


def _check(four, *argv):
    return main(["check", str(four), *GATE, *map(str, argv)])


def _read_fifo(path, into: list) -> threading.Thread:
    """A reader of every byte written to the FIFO ``path`` (the writer blocks until it opens)."""

    def read():
        with open(path, "rb") as fh:
            into.append(fh.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _one_passed_gate(xml_bytes: bytes) -> None:
    suite = ET.fromstring(xml_bytes)
    assert suite.tag == "testsuite" and suite.get("tests") == "1" and suite.get("failures") == "0"


def test_dev_null_stays_a_character_device(four, tmp_path):
    before = os.stat("/dev/null")
    assert _check(four, "--junit", "/dev/null", "--markdown", "/dev/null") == 0
    write_json({"a": 1}, "/dev/null")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino and stat.S_IMODE(after.st_mode) == 0o666
    assert sorted(os.listdir(tmp_path)) == ["four.csv"]  # no temporary file anywhere near


@pytest.mark.timeout(30)
def test_a_fifo_gets_the_report_and_stays_a_fifo(four, tmp_path):
    fifo = tmp_path / "report.xml"
    os.mkfifo(fifo)
    got: list = []
    reader = _read_fifo(fifo, got)
    assert _check(four, "--junit", fifo) == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    _one_passed_gate(got[0])


@pytest.mark.timeout(30)
def test_streamed_predictions_reach_a_fifo(tmp_path):
    """``apply``'s writer (Parquet or CSV by the name) writes through a FIFO too."""
    preds = calcore.Predictions.from_probs([[0.75, 0.25], [0.5, 0.5]], [0, 1])
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    got: list = []
    reader = _read_fifo(fifo, got)
    assert write_predictions(preds, fifo) == 2
    reader.join(10)
    assert got[0].decode() == "label,p_0,p_1\n0,0.75,0.25\n1,0.5,0.5\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_stays_a_symlink_and_its_target_holds_the_report(four, tmp_path):
    target = tmp_path / "reports" / "calcore.xml"
    target.parent.mkdir()
    target.write_text("stale")
    os.chmod(target, 0o600)
    link = tmp_path / "latest.xml"
    link.symlink_to(target)
    inode = os.stat(target).st_ino
    assert _check(four, "--junit", link) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    _one_passed_gate(target.read_bytes())
    # written through: the same file (inode, mode), not a new one renamed onto it
    assert os.stat(target).st_ino == inode and stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert sorted(os.listdir(target.parent)) == ["calcore.xml"]


def test_a_dangling_symlink_creates_its_target(tmp_path):
    target, link = tmp_path / "calibrator.json", tmp_path / "link.json"
    link.symlink_to(target)
    write_json({"T": 1.5}, link)
    assert link.is_symlink() and target.read_text() == '{\n  "T": 1.5\n}\n'


def test_a_failure_through_a_symlink_leaves_no_file_that_looks_complete(tmp_path):
    target, link = tmp_path / "out.csv", tmp_path / "link.csv"
    target.write_text("label,p_a\n")
    link.symlink_to(target)
    with pytest.raises(RuntimeError), open_output(link) as fh:
        fh.write(b"label,p_0,p_1\n0,0.5,0.5\n")
        raise RuntimeError("the stream failed part-way")
    assert link.is_symlink() and target.read_bytes() == b""


def test_dash_writes_the_report_to_stdout_and_the_table_to_stderr(four):
    for option in ("--junit", "--markdown"):
        done = subprocess.run(
            [sys.executable, "-m", "calcore.cli", "check", str(four), *GATE, option, "-"],
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        if option == "--junit":
            _one_passed_gate(done.stdout)  # standard output is the report and nothing else
        else:
            assert done.stdout.decode().startswith("### calcore check: 1 of 1 gates passed")
        assert "1 of 1 gates passed" in done.stderr.decode()  # the table, on stderr


@pytest.mark.parametrize(
    "argv",
    [["--junit", "-", "--markdown", "-"], ["--junit", "-", "--json"]],
)
def test_two_outputs_on_stdout_are_refused(four, capsys, argv):
    assert _check(four, *argv) == 2
    out = capsys.readouterr()
    assert out.out == "" and "only one of them may write to standard output" in out.err


def test_dash_is_refused_where_stdout_carries_the_command_output(four, tmp_path, capsys):
    saved = tmp_path / "ts.json"
    assert main(["calibrate", "--calib", str(four), "--test", str(four), "--method", "ts",
                 "--save", str(saved)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["apply", str(saved), str(four), "--out", "-"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out: '-' (standard output) is not accepted" in err
    assert sorted(os.listdir(tmp_path)) == ["four.csv", "ts.json"]


def test_a_regular_file_is_replaced_whole_and_keeps_its_mode(four, tmp_path):
    report = tmp_path / "calcore.xml"
    report.write_text("stale")
    os.chmod(report, 0o640)
    inode = os.stat(report).st_ino
    assert _check(four, "--junit", report) == 0
    _one_passed_gate(report.read_bytes())
    assert os.stat(report).st_ino != inode  # a new file renamed onto the name (atomic)
    assert stat.S_IMODE(os.stat(report).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["calcore.xml", "four.csv"]


def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path):
    old = os.umask(0o027)
    try:
        write_output(tmp_path / "new.md", b"# report\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.md").st_mode) == 0o640


def test_a_failure_leaves_a_regular_file_as_it_was(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old")
    with pytest.raises(RuntimeError), open_output(path) as fh:
        fh.write(b"new, half")
        raise RuntimeError("the stream failed part-way")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["out.csv"]


def test_every_writer_refuses_a_directory(tmp_path, four, capsys):
    preds = calcore.Predictions.from_probs(np.array([[0.5, 0.5]]), [0])
    folder = tmp_path / "reports.csv"
    folder.mkdir()
    for write in (
        lambda: write_json({}, folder),
        lambda: write_predictions_csv(preds, folder),
        lambda: write_predictions(preds, folder),
    ):
        with pytest.raises(calcore.CalcoreError, match="it is a directory; give a file name"):
            write()
    assert _check(four, "--markdown", folder) == 2
    err = capsys.readouterr().err
    assert "--markdown" in err and "it is a directory" in err and err.count("\n") == 1
    assert os.listdir(folder) == []


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(calcore.CalcoreError, match="it is a socket"):
            write_output(path, b"x")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_replaced_file_keeps_its_owner_and_group(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root may give a file to another user")
    path = tmp_path / "summary.md"
    path.write_text("stale")
    os.chown(path, 1234, 5678)
    write_output(path, b"# new\n")
    assert (os.stat(path).st_uid, os.stat(path).st_gid) == (1234, 5678)
    assert path.read_bytes() == b"# new\n"


def test_a_writable_file_in_a_read_only_folder_is_written_through(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "summary.md"
    path.write_text("stale")
    inode = os.stat(path).st_ino
    os.chmod(folder, 0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("root writes to any folder: nothing to fall back from")
        write_output(path, b"# new\n")
    finally:
        os.chmod(folder, 0o755)
    assert path.read_bytes() == b"# new\n" and os.stat(path).st_ino == inode
