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
from dashboard.samples import DEFAULT_SAMPLE, SAMPLES

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Cold starts on a loaded 2-core CI machine take far longer than Playwright's 5 s default.
expect.set_options(timeout=60_000)

IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
CHART_TRACE = ".js-plotly-plot .scatterlayer .trace"


def wait_idle(page: Page) -> None:
    """Script finished and no stale widget copies left (both are needed to avoid flakes).

    Call it after waiting for something the run produces: right after a navigation or an
    upload the app can still report "notRunning" from before the run started.
    """
    page.locator(IDLE).wait_for()
    expect(page.locator('[data-stale="true"]')).to_have_count(0)


def expect_chart(page: Page) -> None:
    """The reliability diagram is drawn: the diagonal and the accuracy trace."""
    expect(page.locator(".js-plotly-plot")).to_be_visible()
    expect(page.locator(CHART_TRACE)).to_have_count(2)


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
    default = calcore.io.load_splits(SAMPLES[DEFAULT_SAMPLE].path)["test"]
    page.goto(app_url)
    expect(metric(page, "accuracy")).to_have_text(f"{calcore.evaluate(default).accuracy:.4f}")
    wait_idle(page)
    expect_chart(page)
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
    expect_chart(page)
    expect(page.locator(".js-plotly-plot .gtitle")).to_contain_text(f"{diagram.ece:.4f}")
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "e2e-uploaded-csv.png"))


def test_bad_upload_shows_calcore_error(page: Page, app_url: str, artifacts_dir: Path, tmp_path):
    csv = write_csv(tmp_path / "bad_preds.csv", n=30)
    lines = csv.read_text().splitlines()
    lines[4] = lines[4].rsplit(",", 1)[0] + ",not-a-number"
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(calcore.CalcoreError) as excinfo:
        calcore.io.load_splits(csv)

    page.goto(app_url)
    expect(metric(page, "accuracy")).to_be_visible()
    wait_idle(page)
    # .streamlit/config.toml applies: uploads up to 1 GB.
    expect(page.get_by_test_id("stFileUploader")).to_contain_text("1GB per file")
    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(csv)
    error = page.get_by_test_id("stAlertContentError")
    expect(error).to_be_visible()
    wait_idle(page)
    expect(error).to_contain_text(str(excinfo.value).split(":")[0])  # names the file
    expect(error).to_contain_text("not-a-number")
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.locator(".js-plotly-plot")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "e2e-bad-upload.png"))
