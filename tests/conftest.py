"""Shared test helpers. Kept free of Streamlit so calcore's unit tests never import it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS_DIR = REPO_ROOT / "assets"


def shared_data_dir() -> Path:
    """The shared data folder: ``$CALCORE_SHARED_DATA``, else ``<repo>/../shared/data``.

    In CI the repository is cloned with ``shared/`` beside it, so the default works there.
    """
    env = os.environ.get("CALCORE_SHARED_DATA")
    return Path(env).expanduser().resolve() if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of the shared data folder; fails (never skips) when it is missing."""
    path = shared_data_dir()
    if not (path / "README.md").is_file():
        pytest.fail(
            f"shared data not found at {path}. Set CALCORE_SHARED_DATA to the folder holding "
            "cifar10/ and credit_default.csv (normally <repo>/../shared/data)."
        )
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def assets_dir() -> Path:
    return ASSETS_DIR
