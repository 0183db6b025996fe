"""What only a browser shows: the real app served by `streamlit run`, driven by Chromium.

Screenshots land in artifacts/ (look at them when the layout changes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("playwright")

from playwright.sync_api import Page, expect

import calcore
import calcore.io

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
CHART_TRACE = ".js-plotly-plot .scatterlayer .trace"


def wait_idle(page: Page) -> None:
    """Script finished and no stale widget copies left (both are needed to avoid flakes)."""
    page.locator(IDLE).wait_for()
    expect(page.locator('[data-stale="true"]')).to_have_count(0)


def metric(page: Page, label: str):
    card = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    )
    return card.get_by_test_id("stMetricValue")


def write_csv(path: Path, n: int = 300, seed: int = 7) -> Path:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet([0.6, 0.6, 0.6], size=n)
    labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(max=2)
    names = ["cat", "dog", "rabbit"]
    rows = ["label," + ",".join(names)]
    rows += [
        f"{names[y]}," + ",".join(f"{v:.6f}" for v in p) for y, p in zip(labels, probs, strict=True)
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_default_sample_then_upload(page: Page, app_url: str, artifacts_dir: Path, tmp_path: Path):
    page.goto(app_url)
    wait_idle(page)
    expect(page.locator(CHART_TRACE).first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "e2e-default-sample.png"))

    csv = write_csv(tmp_path / "uploaded_preds.csv")
    preds = calcore.io.load_splits(csv)
    preds = preds.get("test", next(iter(preds.values())))
    expected = calcore.evaluate(preds, bins=15).as_dict()
    diagram = calcore.reliability_diagram(preds, bins=15)

    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(csv)
    expect(metric(page, "accuracy")).to_have_text(f"{expected['accuracy']:.4f}")
    wait_idle(page)
    expect(page.get_by_text("uploaded_preds.csv").first).to_be_visible()
    expect(page.locator(CHART_TRACE).first).to_be_visible()
    expect(page.locator(".js-plotly-plot .gtitle")).to_contain_text(f"{diagram.ece:.4f}")
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "e2e-uploaded-csv.png"))
