"""Real-browser fixtures: the app under `streamlit run` on a free port, Debian Chromium.

Never `playwright install`: it downloads browsers and fails on these machines. The tests use
/usr/bin/chromium (Debian's package; `make test` installs it when missing) and fail, rather
than skip, without it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _health import healthy  # tests/e2e is on sys.path (no __init__.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
APP = REPO_ROOT / "dashboard" / "app.py"
ARTIFACTS = REPO_ROOT / "artifacts"
CHROMIUM = os.environ.get("CALCORE_CHROMIUM", "/usr/bin/chromium")
STARTUP_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


#: The served data directory's demo dataset: small enough to write in a moment, larger than
#: the sample the page reads of it (so the sample and the every-row table differ).
E2E_DATASET, E2E_DATASET_ROWS, E2E_SAMPLE_ROWS = "clicks.parquet", 300_000, 100_000


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    from dashboard.demo import write_demo

    folder = tmp_path_factory.mktemp("served-data")
    write_demo(folder, n_rows=E2E_DATASET_ROWS, name=E2E_DATASET)
    return folder


@contextlib.contextmanager
def streamlit_server(log_path: Path, **env_vars: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """`streamlit run dashboard/app.py` headless on 127.0.0.1 and a free port, with extra
    environment variables; yields its URL and process once healthy, stops it on exit."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        "STREAMLIT_SERVER_HEADLESS": "true",
        "PYTHONUNBUFFERED": "1",
        **env_vars,
    }
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.headless", "true",
        "--server.address", "127.0.0.1",
        "--server.port", str(port),
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        # cwd = repo root so that .streamlit/config.toml (upload limit, theme) applies.
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while not healthy(url, timeout=2):
                if proc.poll() is not None:
                    pytest.fail(f"streamlit exited with {proc.returncode}:\n{log_path.read_text()}")
                if time.monotonic() > deadline:
                    pytest.fail(f"streamlit not healthy after {STARTUP_TIMEOUT_S} s:\n"
                                f"{log_path.read_text()}")  # fmt: skip
                time.sleep(0.25)
            yield url, proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture(scope="session")
def app_url(artifacts_dir: Path, data_dir: Path) -> Iterator[str]:
    """The app with a data directory holding a small demo dataset."""
    with streamlit_server(
        artifacts_dir / "streamlit-e2e.log",
        CALCORE_DATA_DIR=str(data_dir),
        CALCORE_SERVER_SAMPLE_ROWS=str(E2E_SAMPLE_ROWS),
    ) as (url, _):
        yield url


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (`make chromium`).")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser, app_url):
    """A fresh page with a tall viewport (Streamlit scrolls inside stMain, so full-page
    screenshots only capture the viewport)."""
    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        yield page
    finally:
        context.close()
