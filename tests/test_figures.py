"""Figure builders of dashboard.figures: traces equal calcore's fields, escaping, themes.

Plain pytest (no Streamlit). Results are built once per module from the bundled CIFAR-10
sample and fitted calibrators, so the module stays fast.
"""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

import calcore
from dashboard import figures
from dashboard.figures import (
    UNCALIBRATED,
    apply_theme,
    method_colors,
    method_style,
    reliability_figure,
    top_label_figure,
)
from tests.conftest import ASSETS_DIR

HOSTILE = ("<img src=x onerror=alert(1)>", "%{x}", "=1+1")
RAW_HTML = "<img src=x"
ESCAPED_HTML = "&lt;img src=x onerror=alert(1)&gt;"
BINS = 15


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def splits():
    return calcore.io.load_splits(ASSETS_DIR / "cifar10_resnet110.npz")


@pytest.fixture(scope="module")
def preds(splits):
    """Test predictions per method, "uncalibrated" first (the app's order)."""
    calib, test = splits["calib"], splits["test"]
    return {
        UNCALIBRATED: test,
        "ts": calcore.make_calibrator("ts").fit(calib).transform(test),
        "conf-hb": calcore.make_calibrator("conf-hb").fit(calib).transform(test),
    }


@pytest.fixture(scope="module")
def diagrams(preds):
    return {m: calcore.reliability_diagram(p, bins=BINS) for m, p in preds.items()}


@pytest.fixture(scope="module")
def top_label(preds):
    return {m: calcore.top_label_reliability_diagram(p, bins=BINS) for m, p in preds.items()}


@pytest.fixture(scope="module")
def hostile_preds(splits):
    """The test split under hostile class names (and three hostile method labels)."""
    test = splits["test"].subset(np.arange(3000))
    names = [*HOSTILE, *(f"class {i}" for i in range(len(HOSTILE), test.n_classes))]
    return calcore.Predictions.from_probs(test.probs, test.labels, class_names=names)


# -- helpers ---------------------------------------------------------------------------------
def trace(fig: go.Figure, name: str):
    (found,) = [t for t in fig.data if t.name == name]
    return found


def strings(node):
    """Every string in a JSON document (keys and values)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def assert_escaped(fig: go.Figure, *, expect_escaped: bool = True) -> None:
    """Hostile text reaches the figure JSON only HTML-escaped, never in a template."""
    doc = json.loads(fig.to_json())
    doc["layout"].pop("template", None)  # Plotly's own defaults
    found = list(strings(doc))
    assert not [s for s in found if RAW_HTML in s]
    if expect_escaped:
        assert any(ESCAPED_HTML in s for s in found)
    templates = [t.get("hovertemplate") or "" for t in doc["data"]]
    templates += [t.get("texttemplate") or "" for t in doc["data"]]
    for t in templates:
        text = t if isinstance(t, str) else " ".join(t)
        # the builders' own templates never use a bare %{x}: one here is user text
        assert "%{x}" not in text and "=1+1" not in text and "onerror" not in text


def colors_of(fig: go.Figure, names) -> dict:
    return {n: trace(fig, n).line.color or trace(fig, n).marker.color for n in names}


# -- styles and theme ------------------------------------------------------------------------
def test_uncalibrated_is_calcores_string():
    assert UNCALIBRATED == calcore.UNCALIBRATED


def test_method_colors_okabe_ito_neutral_reference_and_stable():
    methods = [UNCALIBRATED, "ts", "hb", "iso"]
    colors = method_colors(methods)
    assert list(colors) == methods
    assert colors[UNCALIBRATED] == "#7A7A7A"
    assert [colors[m] for m in methods[1:]] == ["#0072B2", "#D55E00", "#009E73"]
    assert method_colors(list(methods)) == colors
    # "uncalibrated" takes no palette slot: the others keep their colours without it
    assert method_colors(methods[1:]) == {m: colors[m] for m in methods[1:]}
    assert len(set(colors.values())) == len(methods)


def test_method_style_cycles_beyond_seven_with_distinct_styles():
    methods = [UNCALIBRATED, *(f"m{i}" for i in range(12))]
    styles = method_style(methods)
    combos = {(s["color"], s["dash"], s["symbol"]) for s in styles.values()}
    assert len(combos) == len(methods)
    assert styles["m7"]["color"] == styles["m0"]["color"]
    assert styles["m7"]["dash"] != styles["m0"]["dash"]
    assert method_colors(methods) == {m: s["color"] for m, s in styles.items()}


def test_apply_theme_dark_and_light_backgrounds_and_fonts():
    fig = apply_theme(go.Figure(go.Scatter(x=[0, 1], y=[0, 1])), "dark")
    assert fig.layout.paper_bgcolor == "#0E1117" and fig.layout.plot_bgcolor == "#0E1117"
    assert fig.layout.font.size >= 14 and fig.layout.font.color == "#E8E8E8"
    assert apply_theme(fig, "light").layout.paper_bgcolor == "#FFFFFF"
    with pytest.raises(ValueError, match="theme"):
        apply_theme(fig, "solarized")


# -- reliability -----------------------------------------------------------------------------
def test_reliability_traces_equal_diagram_fields(diagrams, preds):
    bands = {UNCALIBRATED: calcore.consistency_bands(preds[UNCALIBRATED], n_resamples=40)}
    fig = reliability_figure(diagrams, bands=bands)
    for k, (method, d) in enumerate(diagrams.items()):
        filled = d.count > 0
        pts = trace(fig, method)
        np.testing.assert_array_equal(pts.x, d.confidence[filled])
        np.testing.assert_array_equal(pts.y, d.accuracy[filled])
        assert not np.isnan(pts.y).any()  # empty bins skipped, not drawn at 0
        np.testing.assert_array_equal(pts.customdata[:, 0], d.count[filled])
        np.testing.assert_array_equal(pts.customdata[:, 1], d.ci_lower[filled])
        np.testing.assert_array_equal(pts.customdata[:, 2], d.ci_upper[filled])
        np.testing.assert_allclose(pts.error_y.array, d.ci_upper[filled] - d.accuracy[filled])
        np.testing.assert_allclose(pts.error_y.arrayminus, d.accuracy[filled] - d.ci_lower[filled])
        bars = trace(fig, f"{method} (count)")
        np.testing.assert_array_equal(bars.y, d.count)
        np.testing.assert_array_equal(bars.x, d.lower_edge)
        width = (d.upper_edge - d.lower_edge) / len(diagrams)
        np.testing.assert_allclose(bars.offset, k * width)
        assert f"{method} {d.ece:.4f}" in fig.layout.title.subtitle.text
    b = bands[UNCALIBRATED]
    ok = ~np.isnan(b.lower)
    shade = trace(fig, f"{UNCALIBRATED} (consistency band)")
    np.testing.assert_array_equal(shade.x, np.r_[b.confidence[ok], b.confidence[ok][::-1]])
    np.testing.assert_array_equal(shade.y, np.r_[b.upper[ok], b.lower[ok][::-1]])
    assert trace(fig, "perfect calibration").x == (0.0, 1.0)
    assert fig.layout.xaxis2.title.text and fig.layout.yaxis.title.text
    assert list(fig.layout.yaxis.range) == [-0.02, 1.02]
    assert fig.layout.legend.orientation == "h"
    fig.to_json()


def test_reliability_without_intervals_and_with_title(diagrams):
    fig = reliability_figure(diagrams, show_intervals=False, title="<b>run</b> 1", height=500)
    assert all(trace(fig, m).error_y.array is None for m in diagrams)
    assert fig.layout.title.text == "&lt;b&gt;run&lt;/b&gt; 1" and fig.layout.height == 500


def test_reliability_single_diagram_keeps_the_old_call(diagrams):
    d = diagrams["ts"]
    fig = reliability_figure(d)
    np.testing.assert_array_equal(trace(fig, "accuracy").y, d.accuracy[d.count > 0])
    np.testing.assert_array_equal(trace(fig, "count").y, d.count)
    assert f"{d.ece:.4f}" in fig.layout.title.text


def test_reliability_rejects_bands_of_unknown_methods(diagrams, preds):
    band = calcore.consistency_bands(preds["ts"], n_resamples=5)
    with pytest.raises(ValueError, match="bands"):
        reliability_figure(diagrams, bands={"nope": band})


# -- top-label -------------------------------------------------------------------------------
def test_top_label_traces_equal_diagram_fields(top_label):
    fig = top_label_figure(top_label, theme="dark")
    for method, d in top_label.items():
        cd = d.confidence_diagram
        filled = cd.count > 0
        tl = trace(fig, method)
        np.testing.assert_array_equal(tl.x, cd.confidence[filled])
        np.testing.assert_array_equal(tl.y, d.signed_point[filled])
        np.testing.assert_array_equal(tl.customdata[:, 1], d.delta[filled])
        conf = trace(fig, f"{method} (confidence)")
        np.testing.assert_array_equal(conf.y, cd.accuracy[filled])
        seg = trace(fig, f"{method} (Δ_b)")
        xs = np.array(seg.x, dtype=float).reshape(-1, 3)
        ys = np.array(seg.y, dtype=float).reshape(-1, 3)
        np.testing.assert_array_equal(xs[:, 0], cd.confidence[filled])
        np.testing.assert_array_equal(ys[:, 0], cd.confidence[filled])  # from the diagonal
        np.testing.assert_array_equal(ys[:, 1], d.signed_point[filled])
        assert np.isnan(xs[:, 2]).all()
        np.testing.assert_array_equal(trace(fig, f"{method} (count)").y, cd.count)
        assert f"{d.top_label_ece:.4f}" in fig.layout.title.subtitle.text
    assert fig.layout.paper_bgcolor == "#0E1117"
    assert trace(fig, "perfect calibration").line.color == "#E8E8E8"
    fig.to_json()


def test_colours_consistent_across_figures(diagrams, top_label):
    expected = method_colors(list(diagrams))
    rel = reliability_figure(diagrams)
    tl = top_label_figure(top_label)
    for m in diagrams:
        assert trace(rel, m).line.color == expected[m] == trace(tl, m).line.color
        assert trace(rel, m).marker.symbol == method_style(list(diagrams))[m]["symbol"]


def test_hostile_method_labels_are_escaped(preds):
    d = calcore.reliability_diagram(preds["ts"], bins=BINS)
    t = calcore.top_label_reliability_diagram(preds["ts"], bins=BINS)
    for fig in (
        reliability_figure({h: d for h in HOSTILE}, title=HOSTILE[0]),
        top_label_figure({h: t for h in HOSTILE}),
    ):
        assert_escaped(fig)
        assert "=1+1" in {tr.name for tr in fig.data}


def test_figures_package_exports():
    assert set(figures.__all__) >= {
        "UNCALIBRATED",
        "apply_theme",
        "method_colors",
        "method_style",
        "reliability_figure",
        "top_label_figure",
    }
