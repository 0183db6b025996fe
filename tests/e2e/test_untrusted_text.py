"""User text is shown as text in a real browser: no link appears from a query parameter, a
file name, a class name or a slice value (GFM auto-links bare URLs and e-mail addresses even
after every punctuation character is backslash-escaped, which only a renderer shows)."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect
from test_browser import PLOT, choose, open_and_upload, wait_idle  # tests/e2e is on sys.path

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PHISHING = "Session expired - log in again at https://evil.example/login"
NAMES = ["see www.evil.example", "mail me@evil.example", "go https://evil.example/x"]


def links_to_evil(page: Page) -> list[str]:
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    return [h for h in hrefs if urllib.parse.urlsplit(h).hostname not in ("127.0.0.1", None)]


def hostile_csv(path: Path, n: int = 600) -> Path:
    """Three classes and a segment column whose values read like links."""
    rng = np.random.default_rng(3)
    probs = rng.dirichlet([2.0, 2.0, 2.0], size=n)
    labels = [NAMES[int(rng.choice(3, p=p))] for p in probs]
    segments = ["ftp://evil.example", "xmpp:me@evil.example"]
    lines = ["label," + ",".join(f'"p_{c}"' for c in NAMES) + ",segment"]
    for i, (y, p) in enumerate(zip(labels, probs, strict=True)):
        lines.append(f'"{y}",' + ",".join(f"{v:.6f}" for v in p) + f",{segments[i % 2]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "query", [f"upload={PHISHING}", "data=see www.evil.example or me@evil.example"]
)
def test_a_query_parameter_never_becomes_a_link(page: Page, app_url: str, query: str):
    key, value = query.split("=", 1)
    page.goto(f"{app_url}/?{key}={urllib.parse.quote(value)}")
    message = page.get_by_test_id("stAlert").filter(has_text="evil")
    expect(message.first).to_be_visible()
    wait_idle(page)
    assert links_to_evil(page) == []
    # the text still reads as the user wrote it (the word joiners are invisible)
    shown = message.first.inner_text().replace("\u2060", "")
    assert "evil.example" in shown


def test_class_names_and_slice_values_that_read_like_links_stay_text(
    page: Page, app_url: str, artifacts_dir: Path, tmp_path: Path
):
    csv = hostile_csv(tmp_path / "www.evil.example.csv")
    open_and_upload(page, f"{app_url}/?m=none&boot=0", csv)
    expect(page.get_by_text("evil", exact=False).first).to_be_visible()
    expect(page.locator("[data-testid='stTable']")).to_be_visible()
    wait_idle(page)
    assert links_to_evil(page) == []
    for label, heading in (
        ("Class-wise reliability", "Class-wise reliability"),
        ("Slices", "Calibration per slice"),
    ):
        page.get_by_test_id("stRadio").get_by_text(label, exact=True).click()
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        if label == "Slices":
            wait_idle(page)
            choose(page, "Slice the test rows by", "segment")
        expect(page.locator(PLOT).first).to_be_visible()
        wait_idle(page)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        assert links_to_evil(page) == [], label
    page.screenshot(path=str(artifacts_dir / "e2e-untrusted-text.png"), full_page=True)
