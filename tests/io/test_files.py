"""The files a streamed source reads (issue 33, item 5): regular files only, refused by
name otherwise, before anything is opened (a FIFO would block the read forever)."""

from __future__ import annotations

import os

import pytest

import calcore
from calcore.cli import main
from calcore.io._files import source_files

CSV = "label,p_a,p_b\na,0.9,0.1\nb,0.2,0.8\n"


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "logs" / "day=1").mkdir(parents=True)
    (tmp_path / "logs" / "day=1" / "part.csv").write_text(CSV)
    os.mkfifo(tmp_path / "logs" / "day=2.csv")
    return tmp_path / "logs"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("pattern", ["", "*.csv", "**/*.csv"])
def test_a_fifo_in_a_folder_or_glob_is_refused_by_name(folder, pattern):
    source = os.path.join(folder, pattern) if pattern else str(folder)
    with pytest.raises(calcore.CalcoreError, match=r"day=2\.csv: a FIFO, not a regular file"):
        source_files(source)
    with pytest.raises(calcore.CalcoreError, match="a FIFO"):
        calcore.scan(source)


@pytest.mark.timeout(60)
def test_the_cli_exits_2_naming_the_fifo(folder, capsys):
    assert main(["metrics", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "day=2.csv: a FIFO, not a regular file" in err


def test_regular_files_and_links_to_them_are_read(folder):
    os.unlink(folder / "day=2.csv")
    os.symlink(folder / "day=1" / "part.csv", folder / "alias.csv")
    assert [os.path.relpath(p, folder) for p in source_files(folder)] == [
        "alias.csv", "day=1/part.csv",
    ]  # fmt: skip
    rows = sum(b.preds.n_samples for b in calcore.scan(str(folder)).batches())
    assert rows == 4
