"""calcore.foundation.version: the one place a calcore's version is read."""

from __future__ import annotations

import tomllib
from pathlib import Path

import calcore
from calcore.foundation.version import __version__, installed_at

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_the_distributions_and_the_packages():
    with open(ROOT / "pyproject.toml", "rb") as f:
        declared = tomllib.load(f)["project"]["version"]
    assert __version__ == declared
    assert calcore.__version__ == declared


def test_installed_at_names_the_imported_package():
    assert Path(installed_at()) == Path(calcore.__file__).resolve()
