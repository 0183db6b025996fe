"""The "Copy link" button beside the share text puts the page's link on the clipboard.

A real browser with clipboard permissions: after a kept upload, the button sits on the
share text's row, and a click copies exactly the address bar's link, which reopens the
kept file; after a view change, the next click copies the new link (read at the click).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("playwright")

from conftest import streamlit_server
from playwright.sync_api import expect
from test_browser import open_and_upload, wait_idle, write_csv

pytestmark = [pytest.mark.e2e]


def _clipboard(page) -> str:
    return page.evaluate("navigator.clipboard.readText()")


def test_copy_link_copies_the_pages_link(browser, artifacts_dir: Path, tmp_path: Path):
    csv = write_csv(tmp_path / "shared.csv", n=400, seed=5)
    context = browser.new_context(
        viewport={"width": 1440, "height": 900}, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        with streamlit_server(
            artifacts_dir / "streamlit-copy-link.log",
            CALCORE_WORKSPACE_DIR=str(tmp_path / "workspace"),
        ) as (url, _):
            open_and_upload(page, f"{url}/?m=ts&boot=0", csv)
            expect(page.get_by_text("shared.csv").first).to_be_visible()
            expect(page.locator("[data-testid='stTable']")).to_be_visible()
            wait_idle(page)
            page.get_by_text("Keep on the server (the link reopens it)").click()
            share = page.get_by_text("Kept on the server as shared.csv")
            expect(share).to_be_visible()
            wait_idle(page)
            page.evaluate("navigator.clipboard.writeText('before')")
            button = page.get_by_test_id("copyLinkButton")
            expect(button).to_have_count(1)
            expect(button).to_have_text("Copy link")
            # beside the share text: on its row, to its right, inside the sidebar
            text_box, button_box = share.bounding_box(), button.bounding_box()
            sidebar = page.get_by_test_id("stSidebar").bounding_box()
            assert button_box["x"] >= text_box["x"] + text_box["width"] - 1
            middle = button_box["y"] + button_box["height"] / 2
            assert text_box["y"] <= middle <= text_box["y"] + text_box["height"]
            assert button_box["x"] + button_box["width"] <= sidebar["x"] + sidebar["width"]
            page.screenshot(path=str(artifacts_dir / "e2e-copy-link.png"))

            button.click()
            expect(button).to_have_text("Copied ✓")
            copied = _clipboard(page)
            assert copied == page.url and "ws=" in copied and "m=ts" in copied

            # the link is read at the click: another view, another link
            page.get_by_test_id("stRadio").filter(has_text="Top-label reliability").get_by_text(
                "Top-label reliability"
            ).click()
            wait_idle(page)
            page.wait_for_function("location.href.includes('view=top-label')")
            button.click()
            expect(button).to_have_text("Copied ✓")
            assert _clipboard(page) == page.url and "view=top-label" in page.url

            # the copied link reopens the kept file for someone else
            other = context.new_page()
            other.goto(copied)
            expect(other.get_by_text("Kept on the server as shared.csv")).to_be_visible()
            expect(other.locator("[data-testid='stTable']")).to_be_visible()
            expect(other.get_by_test_id("stAlertContentError")).to_have_count(0)
    finally:
        context.close()
