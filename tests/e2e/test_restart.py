"""A server restart: a file kept in the workspace reopens from its link on the new server.

Two real `streamlit run` processes one after the other on the same workspace directory:
the first keeps an upload, the second (after the first has stopped) reopens it from the
link alone. Between them the SQLite index on disk is checked as another process sees it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("playwright")

from conftest import streamlit_server
from playwright.sync_api import expect
from test_browser import metrics_cell, open_and_upload, wait_idle, write_csv

pytestmark = [pytest.mark.e2e]


def test_a_kept_upload_reopens_from_its_link_after_the_server_restarts(
    browser, artifacts_dir: Path, tmp_path: Path
):
    workspace = tmp_path / "workspace"
    csv = write_csv(tmp_path / "mine.csv", n=500, seed=21)
    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        with streamlit_server(
            artifacts_dir / "streamlit-restart-1.log", CALCORE_WORKSPACE_DIR=str(workspace)
        ) as (url, _):
            open_and_upload(page, f"{url}/?m=none&boot=0", csv)
            expect(page.get_by_text("mine.csv").first).to_be_visible()
            expect(page.locator("[data-testid='stTable']")).to_be_visible()
            wait_idle(page)
            page.get_by_text("Keep on the server (the link reopens it)").click()
            expect(page.get_by_text("Kept on the server as mine.csv")).to_be_visible()
            wait_idle(page)
            query = page.url.split("?", 1)[1]
            assert "ws=" in query
            shown = metrics_cell(page, "conf-ECE", 2).inner_text()

        # the first server is gone: its index is whole and names the one kept file
        with sqlite3.connect(workspace / "index.sqlite3") as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            names = [r[0] for r in db.execute("SELECT name FROM kept").fetchall()]
        assert names == ["mine.csv"]

        with streamlit_server(
            artifacts_dir / "streamlit-restart-2.log", CALCORE_WORKSPACE_DIR=str(workspace)
        ) as (url, _):
            page.goto(f"{url}/?{query}")  # no upload: the link alone
            expect(page.get_by_text("Kept on the server as mine.csv")).to_be_visible()
            expect(page.locator("[data-testid='stTable']")).to_be_visible()
            wait_idle(page)
            expect(metrics_cell(page, "conf-ECE", 2)).to_have_text(shown)
            expect(page.get_by_test_id("stException")).to_have_count(0)
            expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
    finally:
        context.close()
