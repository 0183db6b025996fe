"""Shared pieces of the AppTest modules (dashboard and Simulation lab).

Import ``fresh_streamlit_caches`` into a test module to make it autouse there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import streamlit as st

#: The repository (tests/dashboard/ is two levels below it), and the page's entry script.
REPO_ROOT = Path(__file__).resolve().parents[2]
APP = REPO_ROOT / "dashboard" / "app.py"


@pytest.fixture(autouse=True)
def fresh_streamlit_caches():
    """Streamlit caches outlive an AppTest instance within one process: clear around tests."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def assert_clean(at) -> None:
    """No exception and no error element on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def unescape_markdown(text: str) -> str:
    """Undo ``dashboard.text.escape_markdown`` (backslash before each special character, and
    the invisible word joiners that keep URLs and e-mail addresses from becoming links)."""
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")
