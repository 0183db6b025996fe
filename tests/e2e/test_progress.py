"""The intervals' progress line in a real browser: estimates first, a line naming each
method's progress under the table while the intervals compute, gone once they are in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import streamlit_server

pytest.importorskip("playwright")

pytestmark = [pytest.mark.e2e]

IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
LINE = re.compile(r"Intervals, \d+ resamples per method: .*(waiting|\d+%|done)")


def test_the_intervals_line_names_each_methods_progress(browser, artifacts_dir: Path):
    # a server of its own: the session's server may hold this sample's intervals already
    with streamlit_server(artifacts_dir / "streamlit-progress.log") as (url, _):
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        try:
            page.goto(f"{url}/?m=ts&m=tl-hb")
            line = page.get_by_test_id("stCaptionContainer").filter(has_text=LINE)
            # read the line in the same step that finds it: on a fast machine the intervals
            # may be in (and the line gone) between a wait and a later read
            text = page.wait_for_function(
                """(pattern) => {
                    const re = new RegExp(pattern);
                    for (const el of document.querySelectorAll(
                            "[data-testid='stCaptionContainer']")) {
                        if (re.test(el.innerText)) return el.innerText;
                    }
                    return null;
                }""",
                arg=LINE.pattern,
                timeout=240_000,
            ).json_value()
            for method in ("uncalibrated", "ts", "tl-hb"):
                assert method in text
            # the estimates are on the page meanwhile: the metrics table (the first table of
            # the page may be a collapsed Data panel's preview, hidden)
            table = page.locator("[data-testid='stTable']").filter(has_text="uncalibrated")
            table.first.wait_for(state="visible", timeout=30_000)
            page.locator(IDLE).wait_for(timeout=240_000)
            page.wait_for_function(
                "() => document.querySelector(\"[data-testid='stTable']\").innerText.includes('[')",
                timeout=240_000,
            )
            assert line.count() == 0  # the line is gone once the intervals are in
            caption = page.get_by_test_id("stCaptionContainer").filter(
                has_text="bootstrap resamples (95%)"
            )
            assert caption.count() == 1
        finally:
            page.close()
