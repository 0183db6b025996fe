"""The page read at a glance at 1440 x 900, checked on element boxes in a real browser.

Issue 34: the results above the fold (the verdict's sentence and the metrics table's header
and first 3 rows inside the first 900 px, on every bundled sample, on server datasets read
whole or sampled, after an upload, and with the verdict's warnings, which stay one click
away), a view switch that scrolls to the view, no text cut at the edge of a chart (titles,
tick labels, legends, panel titles), whole dates on a weekly axis, no overprinted panel
titles, and one (light) theme. Every assertion reads
``getBoundingClientRect`` boxes, not pixels; screenshots land in artifacts/ for a person.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("playwright")

from playwright.sync_api import Page, expect
from test_browser import IDLE, PLOT, open_and_upload, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
WIDE100 = REPO_ROOT / "assets" / "synthetic_wide100.npz"
VIEWPORT = {"width": 1440, "height": 900}

#: Every text of every drawn Plotly chart whose box leaves the chart's own box (the SVG
#: clips it: a cut title or tick label), as [chart index, text, side].
CUT_TEXT = """() => {
  const out = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    const svg = plot.querySelector('.main-svg');
    if (!svg) return;
    const box = svg.getBoundingClientRect();
    plot.querySelectorAll('.main-svg text').forEach((t) => {
      if (!t.textContent.trim() || t.closest('.hoverlayer')) return;
      const r = t.getBoundingClientRect();
      if (r.width === 0) return;
      const sides = [];
      if (r.left < box.left - 1) sides.push('left');
      if (r.right > box.right + 1) sides.push('right');
      if (r.top < box.top - 1) sides.push('top');
      if (r.bottom > box.bottom + 1) sides.push('bottom');
      if (sides.length) out.push([i, t.textContent, sides.join('+')]);
    });
  });
  return out;
}"""

#: Pairs of texts that overprint each other inside one chart: annotations (panel titles)
#: with annotations, and x tick labels with the x tick labels of the same axis.
OVERPRINTED = """() => {
  const out = [];
  const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 &&
                            a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const pairs = (els, i) => {
    const boxes = els.filter((e) => e.textContent.trim()).map((e) =>
      [e.textContent, e.getBoundingClientRect()]);
    for (let a = 0; a < boxes.length; a++)
      for (let b = a + 1; b < boxes.length; b++)
        if (overlap(boxes[a][1], boxes[b][1])) out.push([i, boxes[a][0], boxes[b][0]]);
  };
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    pairs([...plot.querySelectorAll('.annotation-text')], i);
    plot.querySelectorAll('.xaxislayer-above').forEach((axis) =>
      pairs([...axis.querySelectorAll('.xtick text')], i));
  });
  return out;
}"""

#: Table cells (st.table) whose text is wider than the cell (cut or ellipsised).
CUT_CELLS = """() => [...document.querySelectorAll(
    '[data-testid="stTable"] td, [data-testid="stTable"] th')]
  .filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.textContent)"""


@pytest.fixture
def wide(browser, app_url) -> Page:
    """A page at the size a reviewer's laptop or a projector shows: 1440 x 900."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        yield page
    finally:
        context.close()


def settled(page: Page) -> None:
    """The run is over, the charts are drawn (Plotly draws after Streamlit's run)."""
    page.locator(IDLE).wait_for()
    wait_idle(page)
    plots = page.locator(f"{PLOT} .main-svg")
    if plots.count():
        plots.first.wait_for()
    page.wait_for_timeout(300)


def box(page: Page, selector: str) -> dict:
    return page.locator(selector).first.bounding_box()


#: The verdict's sentence (whatever it says: without resamples it does not start "Ship")
#: and the line of its warnings, in the verdict's container (``views.metrics.VERDICT_KEY``).
VERDICT = ".st-key-verdict [data-testid='stAlert']"
BEFORE_SHIPPING = ".st-key-verdict [data-testid='stExpander']"


def assert_results_above_the_fold(page: Page, where: str) -> None:
    """The verdict's sentence, then the metrics table's header and first 3 rows, all inside
    the first 900 px of the page as it opens (issue 34: read at a glance)."""
    sentence = box(page, VERDICT)
    rows = page.locator("[data-testid='stTable']").first.locator("tr")
    assert rows.count() >= 4, where
    head = [rows.nth(i).bounding_box() for i in range(4)]  # the header, then 3 rows
    assert 0 <= sentence["y"] and sentence["y"] + sentence["height"] <= head[0]["y"], where
    assert head[3]["y"] + head[3]["height"] <= VIEWPORT["height"], (where, head[3])


#: Each view's heading: the sign that the new view, not the last one, is on the page.
HEADINGS = {
    "Metrics": "Which calibrator to ship",
    "Confidence reliability": "Confidence reliability diagram",
    "Top-label reliability": "Top-label reliability diagram",
    "Class-wise reliability": "Class-wise reliability",
    "KDE-ECE vs binned ECE": "KDE-ECE beside binned ECE",
}


def pick_view(page: Page, label: str) -> None:
    page.get_by_test_id("stRadio").get_by_text(label, exact=True).click()
    expect(page.get_by_role("heading", name=HEADINGS[label]).first).to_be_visible()
    settled(page)


def assert_legible(page: Page, where: str) -> None:
    """Nothing cut at a chart's edge, no overprinted panel titles or x ticks, no cut cell."""
    expect(page.locator(PLOT).first).to_be_visible()
    assert page.evaluate(CUT_TEXT) == [], where
    assert page.evaluate(OVERPRINTED) == [], where
    assert page.evaluate(CUT_CELLS) == [], where


def test_results_open_the_page_and_a_view_switch_scrolls_to_the_view(
    wide: Page, app_url: str, artifacts_dir: Path
):
    wide.goto(f"{app_url}/?m=ts&m=tl-hb&boot=50")
    sentence = wide.get_by_text(re.compile(r"^(Ship \S+:|No calibrator needed:)"))
    expect(sentence.first).to_be_visible()
    settled(wide)
    wide.screenshot(path=str(artifacts_dir / "e2e-layout-fold.png"))
    # the verdict whole, and the metrics table starting, inside the first 900 px
    verdict = sentence.first.bounding_box()
    table = box(wide, "[data-testid='stTable']")
    assert 0 <= verdict["y"] and verdict["y"] + verdict["height"] <= VIEWPORT["height"]
    assert verdict["y"] < table["y"] < VIEWPORT["height"]
    # one theme: no theme control; the introduction first
    expect(wide.get_by_text("Figure theme")).to_have_count(0)
    expect(wide.get_by_text("Does a model's confidence match", exact=False)).to_be_visible()

    # scrolled down past the picker, a view switch brings the view's top into the window
    for label, heading in (
        ("Top-label reliability", "Top-label reliability diagram"),
        ("Class-wise reliability", "Class-wise reliability"),
    ):
        wide.evaluate("document.querySelector('[data-testid=stMain]').scrollTop = 1400")
        picker = box(wide, ".st-key-view-top")
        assert picker["y"] + picker["height"] < 0  # out of sight above
        wide.evaluate(
            "document.querySelector('[data-testid=stMain]').scrollTop = "
            "document.querySelector('.st-key-view-top').getBoundingClientRect().top + "
            "document.querySelector('[data-testid=stMain]').scrollTop - 800"
        )  # the picker at the bottom edge, as after reading a long view
        pick_view(wide, label)
        picker = box(wide, ".st-key-view-top")
        header = box(wide, "[data-testid='stHeader']")
        title = wide.get_by_role("heading", name=heading).first.bounding_box()
        assert header["y"] + header["height"] - 1 <= picker["y"] < 200, label
        assert title["y"] < 300, label  # the view's heading near the top, its chart below
        assert box(wide, PLOT)["y"] < VIEWPORT["height"], label
    wide.screenshot(path=str(artifacts_dir / "e2e-layout-after-switch.png"))


def test_nothing_cut_in_the_views_of_the_bundled_sample(wide: Page, app_url: str):
    # an old link's dark theme opens, ignored: the figures stay on the page's white
    wide.goto(f"{app_url}/?m=ts&m=tl-hb&m=irm&boot=0&theme=dark")
    expect(wide.get_by_test_id("stTable").first).to_be_visible()
    settled(wide)
    expect(wide.get_by_test_id("stException")).to_have_count(0)
    expect(wide.get_by_text("Ignored in the link", exact=False)).to_have_count(0)
    background = wide.locator(f"{PLOT} .main-svg").first.evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    assert background == "rgb(255, 255, 255)"
    assert_legible(wide, "metrics")
    for label in (
        "Confidence reliability",
        "Top-label reliability",
        "Class-wise reliability",
        "KDE-ECE vs binned ECE",
    ):
        pick_view(wide, label)
        expect(wide.get_by_test_id("stException")).to_have_count(0)
        assert_legible(wide, label)
    pick_view(wide, "Top-label reliability")
    wide.get_by_text("Show the per-class gap in each bin", exact=False).click()
    settled(wide)
    assert_legible(wide, "top-label detail")
    axis = wide.locator(f"{PLOT} .ytitle").first.text_content()
    assert "Δ_b" in axis


def test_weekly_slices_show_whole_dates_and_sizes_in_rows(
    wide: Page, app_url: str, artifacts_dir: Path
):
    from conftest import E2E_DATASET

    wide.goto(f"{app_url}/?data={E2E_DATASET}&m=none&boot=0&view=slices&by=date:week")
    expect(wide.get_by_text("by date:week", exact=False).first).to_be_visible()
    settled(wide)
    assert_legible(wide, "slices by week")
    order = wide.locator(PLOT).filter(has_text="by date:week").first
    order.scroll_into_view_if_needed()
    order.screenshot(path=str(artifacts_dir / "e2e-layout-weeks.png"))
    ticks = [t.strip() for t in order.locator(".xtick text").all_text_contents()]
    assert ticks and all(len(t) == 10 and t[4] == "-" and t[7] == "-" for t in ticks), ticks
    assert "week of" in order.locator(".xtitle").text_content()
    funnel = wide.locator(PLOT).filter(has_text="against its size").first
    sizes = [t.strip() for t in funnel.locator(".xtick text").all_text_contents()]
    # whole numbers of rows, never a bare minor-tick digit ("2 3 ... 10k 2 3")
    assert sizes and all(int(s.replace(",", "")) >= 10 for s in sizes), sizes
    assert "rows" in funnel.locator(".xtitle").text_content()


def test_a_hundred_classes_read_as_a_table_and_small_charts(
    wide: Page, app_url: str, artifacts_dir: Path
):
    open_and_upload(wide, f"{app_url}/?m=ts&boot=0", WIDE100)
    expect(wide.get_by_text(WIDE100.name).first).to_be_visible()
    expect(wide.get_by_test_id("stTable").first).to_be_visible()
    settled(wide)
    assert_results_above_the_fold(wide, "after an upload")  # the Data panel shut: it loaded
    pick_view(wide, "Top-label reliability")
    expect(wide.get_by_text("Where the error comes from", exact=False)).to_be_visible()
    # the worst cells as a sortable table, then one class's small chart
    expect(wide.locator("[data-testid='stDataFrame']:visible").first).to_be_visible()
    assert_legible(wide, "top-label, 100 classes")
    charts = wide.locator(PLOT)
    assert charts.count() == 2
    small = charts.nth(1).bounding_box()
    assert small["height"] <= 400  # small beside the table, not a wall of bubbles
    charts.nth(1).screenshot(path=str(artifacts_dir / "e2e-layout-wide100-class.png"))
    pick_view(wide, "Class-wise reliability")
    assert_legible(wide, "class-wise, 100 classes")
    titles = wide.locator(f"{PLOT} .annotation-text").all_text_contents()
    assert titles and all("labelled" in t for t in titles[:20]), titles[:3]


def test_a_verdict_with_warnings_leaves_the_table_above_the_fold(
    wide: Page, app_url: str, artifacts_dir: Path
):
    """Four calibrators on the CIFAR-10 sample: warnings for tl-hb (rows per bin) and n-iso
    (accuracy); five method columns, so the table's cells wrap (its tallest first rows).
    The warnings are one line under the sentence, and their list one click away."""
    wide.goto(f"{app_url}/?m=ts&m=tl-hb&m=irm&m=n-iso&boot=50")
    expect(wide.locator(BEFORE_SHIPPING).first).to_be_visible()
    expect(wide.get_by_test_id("stTable").first).to_be_visible()
    settled(wide)
    wide.screenshot(path=str(artifacts_dir / "e2e-layout-fold-warnings.png"))
    assert_results_above_the_fold(wide, "sample with warnings")
    line = wide.locator(BEFORE_SHIPPING).first
    label = line.locator("summary").inner_text()
    found = re.search(r"Before shipping: (\d+) warnings? \((.+)\)", label)
    assert found, label
    count, methods = int(found.group(1)), found.group(2).split(", ")
    assert count >= 2 and {"tl-hb", "n-iso"} <= set(methods), label
    # one line between the sentence and the table
    sentence, table = box(wide, VERDICT), box(wide, "[data-testid='stTable']")
    warn = line.bounding_box()
    assert sentence["y"] + sentence["height"] <= warn["y"] < table["y"]
    assert warn["height"] <= 60, warn
    # the warnings are still read: every one in the list behind the line, whose methods
    line.locator("summary").click()
    items = line.locator("li")
    expect(items).to_have_count(count)
    for i in range(count):
        expect(items.nth(i)).to_be_visible()
    said = items.all_inner_texts()
    assert {t.split(":")[0] for t in said} == set(methods), said
    assert any("calibration rows for" in t for t in said), said  # tl-hb's bins
    line.screenshot(path=str(artifacts_dir / "e2e-layout-warnings-open.png"))


def _ten_class_dataset(folder: Path) -> str:
    """A 10-class CSV with a split column, written into the served folder: read whole (fewer
    rows than the sample size), so the page says so in a line, not a box."""
    from test_answers import _ten_class_csv

    name = "ten_classes.csv"
    if not (folder / name).exists():
        _ten_class_csv(folder / (name + ".tmp"))
        (folder / (name + ".tmp")).rename(folder / name)  # whole, or not listed at all
    return name


@pytest.mark.parametrize("case", ["read whole, warnings", "sampled"])
def test_a_server_dataset_opens_on_its_results(
    wide: Page, app_url: str, data_dir: Path, artifacts_dir: Path, case: str
):
    from conftest import E2E_DATASET

    if case == "sampled":  # the demo: a sample of its rows (that box stays), binary
        wide.goto(f"{app_url}/?data={E2E_DATASET}")
    else:
        name = _ten_class_dataset(data_dir)
        wide.goto(f"{app_url}/?data={name}&m=ts&m=tl-hb&m=irm&m=n-iso&boot=50")
    expect(wide.get_by_test_id("stTable").first).to_be_visible()
    expect(wide.locator(VERDICT).first).to_be_visible()
    settled(wide)
    expect(wide.get_by_test_id("stException")).to_have_count(0)
    shot = "read-whole" if case.startswith("read whole") else case
    wide.screenshot(path=str(artifacts_dir / f"e2e-layout-server-{shot}.png"))
    assert_results_above_the_fold(wide, case)
    alerts = wide.get_by_test_id("stAlert")
    captions = wide.get_by_test_id("stCaptionContainer")
    if case == "sampled":
        expect(alerts.filter(has_text="seeded uniform sample")).to_have_count(1)
    else:
        # a plain fact: a caption line, not a box
        expect(alerts.filter(has_text="Every row of the dataset is read")).to_have_count(0)
        expect(captions.filter(has_text="Every row of the dataset is read")).to_be_visible()
        expect(wide.locator(BEFORE_SHIPPING).first).to_be_visible()
    # the loader's notes beside the data's facts, still there
    expect(wide.get_by_text(re.compile(r"^What the loader detected"))).to_be_visible()


@pytest.mark.parametrize(
    "sample",
    ["cifar10-resnet110", "credit-default-logreg", "synthetic-overconfident", "synthetic-wide100"],
)
def test_every_bundled_sample_opens_on_its_results(wide: Page, app_url: str, sample: str):
    """As a link to the sample opens it: the calibrators recommended for its shape."""
    wide.goto(f"{app_url}/?sample={sample}")
    expect(wide.get_by_test_id("stTable").first).to_be_visible()
    expect(wide.locator(VERDICT).first).to_be_visible()
    settled(wide)
    assert_results_above_the_fold(wide, sample)
