"""The reference data lives in the repository: its digests hold, nothing reads a path outside
the repository, and the replications pass from a copy of the repository with nothing beside it."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# computed here, not imported from conftest: with the whole suite collected, "conftest" can
# name tests/e2e/conftest.py
REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE_DIR = REPO_ROOT / "assets" / "reference"

#: Text that would reach outside the repository for data (a folder beside the clone, a
#: machine's absolute path, an environment variable naming one).
OUTSIDE = re.compile(r"\.\./shared|/work/|SHARED_DATA|REPO(?:_ROOT)?\.parent\b|parents\[[3-9]\]")


def _tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout
    return [REPO_ROOT / p for p in out.decode().split("\0") if p]


def test_every_reference_file_matches_its_recorded_digest():
    recorded = {}
    for line in (REFERENCE_DIR / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        recorded[name] = digest
    present = {
        str(p.relative_to(REFERENCE_DIR))
        for p in REFERENCE_DIR.rglob("*")
        if p.is_file() and p.name not in ("README.md", "SHA256SUMS")
    }
    assert present == set(recorded)  # nothing unlisted, nothing missing
    for name, digest in recorded.items():
        assert hashlib.sha256((REFERENCE_DIR / name).read_bytes()).hexdigest() == digest, name


def test_nothing_in_the_repository_reads_a_path_outside_it():
    found = []
    for path in _tracked_files():
        if path.suffix not in {".py", ".md", ".toml", ".txt", ".cfg", ".yml", ".yaml", ""}:
            continue
        if path == Path(__file__) or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_the_replications_pass_from_a_copy_with_nothing_beside_it(tmp_path):
    """A copy of the tracked files in an empty folder (no shared folder beside it, no
    environment variable) runs two replications that read the CIFAR-10 logits and the
    credit table."""
    copy = tmp_path / "alone" / "calibration-lens"
    for path in _tracked_files():
        if not path.is_file():
            continue
        target = copy / path.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    env = {k: v for k, v in os.environ.items() if "SHARED" not in k}
    env["PYTHONPATH"] = str(copy)  # the copy's calcore, not the installed checkout's
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_replications.py",
            "-k",
            "toplabel_tables or hb_validity",
        ],  # fmt: skip
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
    check = subprocess.run(
        [sys.executable, "-c", "import calcore; print(calcore.__file__)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(check.stdout.strip()).is_relative_to(copy)
