"""Shared test helpers. Kept free of Streamlit so calcore's unit tests never import it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# A bug raises in the page (dashboard/guard.py) and prints its traceback in the CLI, so the
# test that meets it fails with the traceback; the tests of the messages unset it.
os.environ["CALCORE_DEBUG"] = "1"

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS_DIR = REPO_ROOT / "assets"


#: The real model outputs the tests, replications and benchmarks read (CIFAR-10 logits, the
#: UCI credit-default table), kept in the repository: see assets/reference/README.md.
REFERENCE_DIR = ASSETS_DIR / "reference"


@pytest.fixture(scope="session")
def reference_data() -> Path:
    """Path of ``assets/reference``; fails (never skips) when a file is missing."""
    if not (REFERENCE_DIR / "SHA256SUMS").is_file():
        pytest.fail(f"reference data not found at {REFERENCE_DIR} (assets/reference/).")
    return REFERENCE_DIR


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def assets_dir() -> Path:
    return ASSETS_DIR
