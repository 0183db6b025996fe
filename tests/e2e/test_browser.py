"""What only a browser shows: the real app served by `streamlit run`, driven by Chromium.

Screenshots land in artifacts/ (look at them when the layout changes).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("playwright")

from playwright.sync_api import Page, expect

import calcore
import calcore.io
from calcore.evaluation import random_split
from dashboard.calibration.state import VIEWS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Cold starts on a loaded 2-core CI machine take far longer than Playwright's 5 s default.
expect.set_options(timeout=120_000)

IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
PLOT = ".js-plotly-plot"


def wait_idle(page: Page) -> None:
    """Script finished and no stale widget copies left (both are needed to avoid flakes).

    Call it after waiting for something the run produces: right after a navigation or an
    upload the app can still report "notRunning" from before the run started.
    """
    page.locator(IDLE).wait_for()
    expect(page.locator('[data-stale="true"]')).to_have_count(0)


def open_and_upload(page: Page, url: str, path: Path) -> None:
    """Open ``url`` (on its sample), switch the source to an upload and send ``path``."""
    page.goto(url)
    expect(page.locator("[data-testid='stTable']")).to_be_visible()
    wait_idle(page)
    page.get_by_text("upload a file", exact=True).click()
    wait_idle(page)
    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(path)


def write_csv(path: Path, n: int = 600, seed: int = 7) -> Path:
    """Over-confident 3-class predictions without a split column."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet([0.6, 0.6, 0.6], size=n)
    true = probs**0.5
    true /= true.sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(true, axis=1)).sum(axis=1).clip(max=2)
    names = ["cat", "dog", "rabbit"]
    rows = ["label," + ",".join(f"p_{c}" for c in names)]
    rows += [
        f"{names[y]}," + ",".join(f"{v:.6f}" for v in p) for y, p in zip(labels, probs, strict=True)
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def metrics_cell(page: Page, metric: str, column: int):
    """The metrics table's cell in the row of ``metric`` (column 0 = metric name; a row that
    errors with the same number share, "conf-ECE = TL-ECE", counts for its first)."""
    title = re.compile("^" + re.escape(metric) + "( = .*)?$")
    row = page.locator("[data-testid='stTable'] tr").filter(
        has=page.locator("td, th").get_by_text(title)
    )
    return row.locator("td, th").nth(column)


def choose(page: Page, label: str, option: str) -> None:
    """Pick ``option`` in the multiselect/selectbox whose label is ``label``."""
    box = page.get_by_test_id("stMultiSelect").filter(has_text=label)
    box.locator("input").click()
    page.keyboard.type(option)
    page.get_by_role("option").filter(has_text=option).first.click()
    page.keyboard.press("Escape")


def test_upload_two_calibrators_every_view_and_offline_report(
    page: Page, app_url: str, artifacts_dir: Path, tmp_path: Path
):
    page.goto(f"{app_url}/?m=none&boot=0")
    expect(page.locator("[data-testid='stTable']")).to_be_visible()
    wait_idle(page)
    page.screenshot(path=str(artifacts_dir / "e2e-default-sample.png"))

    # upload through the page: no split column, so a seeded 50/50 random split
    csv = write_csv(tmp_path / "uploaded_preds.csv")
    page.get_by_text("upload a file", exact=True).click()
    wait_idle(page)
    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(csv)
    expect(page.get_by_text("uploaded_preds.csv").first).to_be_visible()
    wait_idle(page)

    # two calibrators, chosen in the sidebar
    choose(page, "Fitted on the calibration rows", "ts · Temperature scaling")
    wait_idle(page)
    choose(page, "Fitted on the calibration rows", "tl-hb · Top-label histogram")
    wait_idle(page)

    preds = calcore.load_predictions(csv)
    calib, test = random_split(preds, test_fraction=0.5, seed=0)
    expected = {"uncalibrated": calcore.evaluate(test, bins=15).metrics}
    for name in ("ts", "tl-hb"):
        out = calcore.make_calibrator(name).fit(calib).transform(test)
        expected[name] = calcore.evaluate(out, bins=15).metrics
    header = page.locator("[data-testid='stTable'] thead th")
    expect(header).to_have_text(["metric", "better", "uncalibrated", "ts", "tl-hb"])
    for key, label in (("top_label_ece", "TL-ECE"), ("nll", "NLL"), ("conf_ece", "conf-ECE")):
        for column, method in enumerate(("uncalibrated", "ts", "tl-hb"), start=2):
            cell = metrics_cell(page, label, column)
            expect(cell).to_have_text(f"{expected[method][key]:.4f}")
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "e2e-metrics-two-calibrators.png"))

    # every view draws all its charts
    views = {
        "Confidence reliability": 1,
        "Top-label reliability": 2,  # the diagram and one class's chart under the table
        "Class-wise reliability": 1,
        "Validity": 2,
        "KDE-ECE vs binned ECE": 2,
        "Learning curves": 1,
        "Simplex (3 classes)": 1,
    }
    timings = {}
    for label, n_charts in views.items():
        start = time.monotonic()
        page.get_by_test_id("stRadio").get_by_text(label, exact=True).click()
        expect(page.locator(PLOT)).to_have_count(n_charts)
        wait_idle(page)
        expect(page.locator(f"{PLOT} .main-svg").first).to_be_visible()
        timings[label] = round(time.monotonic() - start, 2)
        # a view switch reruns only the view's fragment, which still updates the link
        key = {v: k for k, v in VIEWS.items()}[label]
        expect(page).to_have_url(re.compile(rf"[?&]view={re.escape(key)}(&|$)"))
        expect(page.get_by_test_id("stException")).to_have_count(0)
        expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
        slug = label.split(" ")[0].lower()
        page.screenshot(path=str(artifacts_dir / f"e2e-view-{slug}.png"))
    print("view timings (s):", timings)

    # the report: downloaded, then opened with the network off
    with page.expect_download() as info:
        page.get_by_role("button", name="Report (offline HTML)").click()
    report = tmp_path / "report.html"
    info.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "<script src=" not in text  # plotly.js is inline, nothing to fetch
    assert "uploaded_preds.csv" in text
    viewport = {"width": 1400, "height": 900}
    offline = page.context.browser.new_context(offline=True, viewport=viewport)
    try:
        view = offline.new_page()
        view.goto(report.as_uri())
        expect(view.locator(PLOT).first).to_be_visible()
        assert view.locator(PLOT).count() >= 8
        expect(view.locator("td.best").first).to_be_visible()
        view.screenshot(path=str(artifacts_dir / "e2e-report-offline.png"))
    finally:
        offline.close()


def test_bad_upload_shows_calcore_error(page: Page, app_url: str, artifacts_dir: Path, tmp_path):
    csv = write_csv(tmp_path / "bad_preds.csv", n=30)
    lines = csv.read_text().splitlines()
    lines[4] = lines[4].rsplit(",", 1)[0] + ",not-a-number"
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(calcore.CalcoreError) as excinfo:
        calcore.io.load_splits(csv)

    page.goto(f"{app_url}/?m=none&boot=0")
    expect(page.locator("[data-testid='stTable']")).to_be_visible()
    wait_idle(page)
    page.get_by_text("upload a file", exact=True).click()
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
    expect(page.locator(PLOT)).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "e2e-bad-upload.png"))


def test_simulation_lab_and_back_keeps_the_settings(page: Page, app_url: str, artifacts_dir):
    page.goto(f"{app_url}/?m=ts&boot=0&bins=11&view=confidence")
    expect(page.locator(PLOT)).to_have_count(1)
    wait_idle(page)
    page.get_by_test_id("stSidebarNav").get_by_text("Simulation lab").click()
    expect(page.locator(PLOT).first).to_be_visible()
    wait_idle(page)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "e2e-simulation-lab.png"))
    page.get_by_test_id("stSidebarNav").get_by_text("Calibration").click()
    expect(page.get_by_role("spinbutton", name="Bins", exact=True)).to_have_value("11")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Confidence reliability diagram")).to_be_visible()
    expect(page.locator(PLOT)).to_have_count(1)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_settings_survive_switching_to_an_upload(page: Page, app_url: str, tmp_path: Path):
    # Regression: widgets whose value came only from session state fell back to their first
    # option in the browser once the sidebar changed (bootstrap 200 -> 0, bins 15 -> 2).
    csv = write_csv(tmp_path / "switched.csv", n=200)
    open_and_upload(page, f"{app_url}/?m=ts&bins=13&binning=equal-mass", csv)
    expect(page.get_by_text("switched.csv").first).to_be_visible()
    wait_idle(page)
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="binning equal-mass, 13")
    expect(caption.filter(has_text="200 bootstrap resamples")).to_have_count(1)
    expect(page.locator("[data-testid='stTable']")).to_contain_text("[")
    expect(page.get_by_role("spinbutton", name="Bins", exact=True)).to_have_value("13")


def test_slices_view_from_a_link_and_a_second_column(
    page: Page, app_url: str, artifacts_dir: Path, tmp_path: Path
):
    """The Slices view opens from a link on the credit sample (metadata arrays in its NPZ):
    table, size chart, calibrators per slice, the chosen slice beside all rows, the grid."""
    page.goto(f"{app_url}/?sample=credit-default-logreg&m=platt&boot=0&view=slices&by=education")
    expect(page.locator(PLOT)).to_have_count(5)
    wait_idle(page)
    expect(page.get_by_text("tested slices", exact=False).first).to_be_visible()
    expect(page.locator(f"{PLOT} .main-svg").first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "e2e-view-slices.png"), full_page=True)

    # crossing with age: an integer column with many values starts in quartiles, and the
    # link carries both specifications
    choose(page, "Slice the test rows by", "age")
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"by=education&by=age%3Aq4"))
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.locator(PLOT)).to_have_count(5)

    # the offline report carries the slicing chosen last (in the view's fragment)
    with page.expect_download() as info:
        page.get_by_role("button", name="Report (offline HTML)").click()
    report = tmp_path / "report.html"
    info.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "Slices by education x age:q4" in text
    assert "university | [21, 28]" in text
    # and the view's diagrams: the slice chosen there beside every row, the top slices
    assert "<h3>All test rows</h3>" in text
    assert re.search(r"<h3>Slice: [^<]+ \| [^<]+</h3>", text)
    assert re.search(r"<h3>The top \d+ slices by evidence</h3>", text)


def test_a_dataset_on_the_server_opens_from_a_link_for_a_second_reviewer(
    browser, page: Page, app_url: str, artifacts_dir: Path, data_dir: Path
):
    """A server dataset named by a link: read as a seeded sample the page names, every test
    row evaluated on request; the same link in another browser context (a second reviewer)
    reopens the same dataset and numbers without any upload."""
    from conftest import E2E_DATASET, E2E_SAMPLE_ROWS

    link = f"{app_url}/?data={E2E_DATASET}&m=ts&boot=0"
    page.goto(link)
    expect(page.locator("[data-testid='stTable']")).to_be_visible()
    wait_idle(page)
    expect(page.get_by_text(f"{E2E_SAMPLE_ROWS:,} of", exact=False).first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    sampled = metrics_cell(page, "conf-ECE", 2).inner_text()

    page.get_by_role("button", name=re.compile("Evaluate every row")).click()
    expect(page.locator("[data-testid='stTable']")).to_have_count(2)
    wait_idle(page)
    test = calcore.scan(data_dir / E2E_DATASET, split="test")
    full = calcore.evaluate(test, bins=15, metrics=("conf_ece",)).conf_ece
    every_row = page.locator("[data-testid='stTable']").nth(1)
    conf_row = every_row.locator("tr").filter(has=page.get_by_text(re.compile(r"^conf-ECE( =|$)")))
    expect(conf_row.locator("td, th").nth(2)).to_have_text(f"{full:.4f}")
    page.screenshot(path=str(artifacts_dir / "e2e-server-dataset.png"), full_page=True)

    other = browser.new_context(viewport={"width": 1400, "height": 2000}).new_page()
    try:
        other.goto(link)
        expect(other.locator("[data-testid='stTable']")).to_be_visible()
        wait_idle(other)
        expect(metrics_cell(other, "conf-ECE", 2)).to_have_text(sampled)
        expect(other.get_by_test_id("stException")).to_have_count(0)
    finally:
        other.context.close()
