"""Figure builders of dashboard.figures: traces equal calcore's fields, escaping, the theme.

Plain pytest (no Streamlit). Results are built once per module from the bundled CIFAR-10
sample and fitted calibrators, so the module stays fast.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest
from _plotly_json import panel_runs

import calcore
from dashboard import figures
from dashboard.figures import (
    UNCALIBRATED,
    apply_theme,
    class_cells_figure,
    classwise_grid_figure,
    ece_by_bins_figure,
    kde_figure,
    learning_curve_figure,
    method_colors,
    method_style,
    reliability_figure,
    simplex_figure,
    small_multiples,
    top_label_figure,
    validity_figure,
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
def classwise(preds):
    return {m: calcore.classwise_reliability_diagrams(p, bins=BINS) for m, p in preds.items()}


@pytest.fixture(scope="module")
def validity(preds):
    return {
        m: calcore.validity_curve(p, binning="equal-width", bins=BINS, n_resamples=20)
        for m, p in preds.items()
    }


@pytest.fixture(scope="module")
def kde(preds):
    curves = {m: calcore.kde_confidence_curve(p) for m, p in preds.items()}
    return curves, {m: calcore.kde_ece_confidence(p) for m, p in preds.items()}


@pytest.fixture(scope="module")
def sweeps(preds):
    return {m: calcore.ece_by_bins(p, bins=range(5, 26, 4)) for m, p in preds.items()}


@pytest.fixture(scope="module")
def learning(splits):
    calib, test = splits["calib"], splits["test"]
    return calcore.learning_curve(calib, test, ["ts", "conf-hb"], sizes=[200, 1000], n_repeats=2)


def canonical_summary(preds3):
    from calcore.calibrators.canonical import canonical_bin_summary

    calib, test = preds3
    return canonical_bin_summary(calcore.make_calibrator("sierpinski").fit(calib), test)


@pytest.fixture(scope="module")
def three_class():
    s = calcore.io.load_splits(ASSETS_DIR / "synthetic_overconfident.npz")
    return s["calib"], s["test"]


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


def no_object_arrays(fig: go.Figure) -> None:
    """Every array in the figure is numeric or a plain list (serialisable as JSON)."""

    def walk(node):
        if isinstance(node, np.ndarray):
            assert node.dtype != object, node
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v)

    for t in fig.data:
        walk(t.to_plotly_json())
    json.loads(fig.to_json())


def panels(fig: go.Figure, name: str) -> list:
    """Traces called ``name`` in panel order (one per small-multiple panel)."""
    return [t for t in fig.data if t.name == name]


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


def test_apply_theme_one_light_theme_with_projector_fonts():
    fig = apply_theme(go.Figure(go.Scatter(x=[0, 1], y=[0, 1])))
    assert fig.layout.paper_bgcolor == "#FFFFFF" and fig.layout.plot_bgcolor == "#FFFFFF"
    assert fig.layout.font.size >= 14 and fig.layout.font.color == "#1A1A1A"


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


def test_reliability_rejects_bands_of_unknown_methods(diagrams, preds):
    band = calcore.consistency_bands(preds["ts"], n_resamples=5)
    with pytest.raises(ValueError, match="bands"):
        reliability_figure(diagrams, bands={"nope": band})


# -- top-label -------------------------------------------------------------------------------
def test_top_label_default_is_plain_one_line_per_method(top_label):
    fig = top_label_figure(top_label)
    drawn = [t for t in fig.data if t.type == "scatter" and t.name != "perfect calibration"]
    assert [t.name for t in drawn] == list(top_label)  # one line per method, nothing else
    for method, d in top_label.items():
        cd = d.confidence_diagram
        filled = cd.count > 0
        line = trace(fig, method)
        assert line.mode == "lines+markers"
        np.testing.assert_array_equal(line.x, cd.confidence[filled])
        np.testing.assert_array_equal(line.y, cd.accuracy[filled])
        assert np.all((np.asarray(line.y) >= 0) & (np.asarray(line.y) <= 1))
        np.testing.assert_array_equal(line.customdata[:, 0], cd.count[filled])
        # the count strip: rows per bin, equal to a histogram of the confidences
        np.testing.assert_array_equal(trace(fig, f"{method} (count)").y, cd.count)
        assert f"{d.top_label_ece:.4f}" in fig.layout.title.subtitle.text
    assert fig.layout.yaxis.title.text == "accuracy (share of top labels correct)"
    assert fig.layout.xaxis2.title.text == "confidence (top probability)"
    assert fig.layout.yaxis2.title.text == "test rows"
    assert trace(fig, "perfect calibration").line.color == "#1A1A1A"
    fig.to_json()


def test_top_label_count_strip_is_a_histogram_of_the_confidence(preds):
    # independent of calcore's binning: numpy's histogram of max(p) over the same edges
    test = preds["ts"]
    d = calcore.top_label_reliability_diagram(test, bins=BINS)
    bars = trace(top_label_figure({"ts": d}), "ts (count)")
    confidence = np.asarray(test.probs).max(axis=1)
    expected, _ = np.histogram(confidence, bins=np.linspace(0.0, 1.0, BINS + 1))
    np.testing.assert_array_equal(bars.y, expected)


def test_top_label_detail_draws_the_delta_construction_inside_the_axes(top_label):
    fig = top_label_figure(top_label, detail=True)
    for method, d in top_label.items():
        cd = d.confidence_diagram
        filled = cd.count > 0
        tl = trace(fig, f"{method} (conf ± Δ_b)")
        signed = d.signed_point[filled]
        np.testing.assert_array_equal(tl.x, cd.confidence[filled])
        np.testing.assert_array_equal(tl.y, np.clip(signed, 0, 1))  # never below 0
        np.testing.assert_array_equal(tl.customdata[:, 5], signed)  # the true value: hover
        np.testing.assert_array_equal(tl.customdata[:, 1], d.delta[filled])
        np.testing.assert_array_equal(trace(fig, method).y, cd.accuracy[filled])
        seg = trace(fig, f"{method} (Δ_b)")
        xs = np.array(seg.x, dtype=float).reshape(-1, 3)
        ys = np.array(seg.y, dtype=float).reshape(-1, 3)
        np.testing.assert_array_equal(xs[:, 0], cd.confidence[filled])
        np.testing.assert_array_equal(ys[:, 0], cd.confidence[filled])  # from the diagonal
        np.testing.assert_array_equal(ys[:, 1], np.clip(signed, 0, 1))
        assert np.isnan(xs[:, 2]).all()
    assert "Δ_b" in fig.layout.yaxis.title.text


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


# -- small multiples ---------------------------------------------------------------------------
def assert_panels_apart(points, runs) -> None:
    """Each panel's points are its own values shifted by one offset per panel, and no two
    panels share an offset (they do not overlap)."""
    x, y = np.asarray(points.x, dtype=float), np.asarray(points.y, dtype=float)
    offsets, start = set(), 0
    for run in runs:
        dx = x[start : start + len(run)] - run[:, 5]
        dy = y[start : start + len(run)] - run[:, 6]
        assert np.isnan(x[start + len(run)])  # the gap that ends the panel
        if len(run):
            np.testing.assert_allclose(dx, dx[0], atol=1e-12)
            np.testing.assert_allclose(dy, dy[0], atol=1e-12)
            offsets.add((round(dx[0], 6), round(dy[0], 6)))
        start += len(run) + 1
    assert len(offsets) == sum(len(r) > 0 for r in runs)


def test_classwise_grid_panels_in_order(classwise, splits):
    names = splits["test"].class_names
    fig = classwise_grid_figure(classwise, class_names=names)
    for method, ds in classwise.items():
        points = trace(fig, method)  # one trace per method across the panels
        few = trace(fig, f"{method} (few rows)")  # the faded bins, off the line
        runs, few_runs = panel_runs(points.customdata), panel_runs(few.customdata)
        assert len(runs) == len(few_runs) == len(names)
        for run, few_run, d in zip(runs, few_runs, ds, strict=True):
            enough = d.count >= small_multiples.FEW_ROWS
            some = (d.count > 0) & ~enough
            np.testing.assert_array_equal(run[:, 5], d.confidence[enough])
            np.testing.assert_array_equal(run[:, 6], d.accuracy[enough])
            np.testing.assert_array_equal(few_run[:, 5], d.confidence[some])
            np.testing.assert_array_equal(few_run[:, 0], d.count[some])
        assert points.line.color == method_colors(list(classwise))[method]
        assert few.mode == "markers" and few.marker.color.endswith(",0.3)")
        assert_panels_apart(points, runs)
    drawn = [t for t in fig.data if t.meta == "grid"]  # frames and tick labels
    assert drawn and all(t.line.color == "#D0D0D0" for t in drawn if "lines" in t.mode)
    assert [a.text for a in fig.layout.annotations][: len(names)] == list(names)
    no_object_arrays(fig)
    with pytest.raises(ValueError, match="class names"):
        classwise_grid_figure(classwise, class_names=names[:3])
    many = {m: list(ds) * 3 for m, ds in classwise.items()}
    with pytest.raises(ValueError, match="1..20"):
        classwise_grid_figure(many, class_names=list(names) * 3)


# -- validity, KDE, ECE by bins, learning curves, simplex ----------------------------------
@pytest.mark.parametrize("conditional", [False, True])
def test_validity_traces_equal_curve_fields(validity, conditional):
    eps = next(iter(validity.values())).epsilon
    bound = calcore.umd_validity_bound(eps, n_calib=5000, n_bins=BINS, conditional=conditional)
    fig = validity_figure(validity, theory=(eps, bound), conditional=conditional, title="V")
    field = "conditional" if conditional else "validity"
    for method, c in validity.items():
        mean, sem = getattr(c, field), getattr(c, f"{field}_sem")
        line = trace(fig, method)
        np.testing.assert_array_equal(line.x, c.epsilon)
        np.testing.assert_array_equal(line.y, mean)
        shade = trace(fig, f"{method} (± s.e.m.)")
        np.testing.assert_array_equal(shade.y, np.r_[mean + sem, (mean - sem)[::-1]])
        assert line.line.color == method_colors(list(validity))[method]
    np.testing.assert_array_equal(trace(fig, "theory (UMD bound)").y, bound)
    assert trace(fig, "theory (UMD bound)").line.dash == "dash"
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    no_object_arrays(fig)


def test_kde_traces_equal_curve_and_diagram_fields(kde, diagrams):
    curves, eces = kde
    fig = kde_figure(curves, diagrams, kde_ece=eces)
    for method, c in curves.items():
        np.testing.assert_array_equal(trace(fig, method).x, c.grid)
        supported = c.effective_count >= calcore.foundation.kernel_density.KDE_MIN_EFFECTIVE_ROWS
        solid = np.asarray(trace(fig, method).y, dtype=float)
        np.testing.assert_array_equal(solid[supported], c.accuracy[supported])
        assert np.isnan(solid[~supported]).all()  # no solid line on too few rows
        dotted = np.asarray(trace(fig, f"{method} (few rows)").y, dtype=float)
        np.testing.assert_array_equal(dotted[~supported], c.accuracy[~supported])
        band = np.asarray(trace(fig, f"{method} (band)").y, dtype=float)
        upper, lower = band[: c.grid.size], band[c.grid.size :][::-1]
        inside = supported & np.isfinite(c.accuracy)
        assert (lower[inside] <= c.accuracy[inside]).all()
        assert (c.accuracy[inside] <= upper[inside]).all()
        np.testing.assert_array_equal(trace(fig, f"{method} (density)").y, c.density)
        d = diagrams[method]
        np.testing.assert_array_equal(trace(fig, f"{method} (binned)").y, d.accuracy[d.count > 0])
        assert f"{method} {eces[method]:.4f}" in fig.layout.title.subtitle.text
    no_object_arrays(fig)
    with pytest.raises(ValueError, match="binned diagram"):
        kde_figure(curves, {}, kde_ece=eces)


@pytest.mark.parametrize("field", ["confidence_ece", "top_label_ece", "classwise_ece"])
def test_ece_by_bins_traces_equal_sweep_fields(sweeps, kde, field):
    _, eces = kde
    fig = ece_by_bins_figure(sweeps, kde_ece=eces, field=field)
    for method, s in sweeps.items():
        np.testing.assert_array_equal(trace(fig, method).x, s.bins)
        np.testing.assert_array_equal(trace(fig, method).y, getattr(s, field))
        flat = trace(fig, f"{method} (KDE-ECE)")
        assert list(flat.y) == [eces[method]] * 2 and list(flat.x) == [s.bins[0], s.bins[-1]]
        assert flat.line.color == trace(fig, method).line.color
    no_object_arrays(fig)
    with pytest.raises(ValueError, match="field"):
        ece_by_bins_figure(sweeps, field="ece")
    without_cw = {m: dataclasses.replace(s, classwise_ece=None) for m, s in sweeps.items()}
    with pytest.raises(ValueError, match="classwise_ece was not computed"):
        ece_by_bins_figure(without_cw, field="classwise_ece")


def test_learning_curve_traces_equal_fields(learning):
    fig = learning_curve_figure(learning)
    colors = method_colors([UNCALIBRATED, *learning.methods])
    for i, method in enumerate(learning.methods):
        np.testing.assert_array_equal(trace(fig, method).x, learning.sizes)
        np.testing.assert_array_equal(trace(fig, method).y, learning.mean[i])
        acc = trace(fig, f"{method} (accuracy)")
        np.testing.assert_array_equal(acc.y, learning.accuracy_mean[i])
        band = trace(fig, f"{method} (± sd)")
        lo, hi = learning.mean[i] - learning.std[i], learning.mean[i] + learning.std[i]
        np.testing.assert_array_equal(band.y, np.r_[hi, lo[::-1]])
        assert trace(fig, method).line.color == colors[method]
    ref = trace(fig, UNCALIBRATED)
    assert list(ref.y) == [learning.uncalibrated] * 2 and ref.line.color == colors[UNCALIBRATED]
    no_object_arrays(fig)


def test_simplex_traces_equal_summary_fields(three_class):
    summary = canonical_summary(three_class)
    names = three_class[1].class_names
    fig = simplex_figure(summary, class_names=names, methods=[UNCALIBRATED, "sierpinski"])
    tails = trace(fig, "mean prediction")
    for axis, k in zip("abc", range(3), strict=True):
        np.testing.assert_array_equal(getattr(tails, axis), summary.mean_prediction[:, k])
        seg = np.array(getattr(trace(fig, "recalibration arrows"), axis), dtype=float)
        np.testing.assert_array_equal(seg[0::3], summary.mean_prediction[:, k])
        np.testing.assert_array_equal(seg[1::3], summary.recalibrated[:, k])
    np.testing.assert_array_equal(tails.marker.size, summary.counts)
    assert len(tails.hovertext) == len(summary.bins)
    assert fig.layout.ternary.aaxis.title.text == names[0]
    assert (
        trace(fig, "recalibration arrows").line.color
        == method_colors([UNCALIBRATED, "sierpinski"])["sierpinski"]
    )
    no_object_arrays(fig)


def test_simplex_needs_three_classes(three_class, splits):
    summary = canonical_summary(three_class)
    with pytest.raises(ValueError, match="3 classes"):
        simplex_figure(summary, class_names=["a", "b"])


# -- escaping and consistency across every figure ------------------------------------------
def test_hostile_class_names_only_escaped_everywhere(hostile_preds, three_class):
    p = hostile_preds
    names = p.class_names
    tl = calcore.top_label_reliability_diagram(p, bins=BINS)
    cw = {
        h: calcore.classwise_reliability_diagrams(p, bins=BINS, classes=[0, 1, 2]) for h in HOSTILE
    }
    calib, test = three_class
    hostile3 = [
        calcore.Predictions.from_probs(x.probs, x.labels, class_names=list(HOSTILE))
        for x in (calib, test)
    ]
    summary = canonical_summary(hostile3)
    figs = [
        class_cells_figure({HOSTILE[0]: tl}, 0),
        classwise_grid_figure(cw, class_names=names[:3]),
        simplex_figure(summary, class_names=list(HOSTILE), title=HOSTILE[1]),
        top_label_figure({h: tl for h in HOSTILE}),
    ]
    for fig in figs:
        assert_escaped(fig)
        no_object_arrays(fig)
    assert ESCAPED_HTML in figs[0].layout.title.text
    assert figs[2].layout.ternary.aaxis.title.text == ESCAPED_HTML


def test_hostile_method_labels_in_curve_figures(validity, kde, diagrams, sweeps):
    curves, eces = kde
    one = next(iter(validity.values()))
    relabel = dict(zip(HOSTILE, diagrams, strict=True))  # hostile label -> real method
    figs = [
        validity_figure({h: validity[m] for h, m in relabel.items()}, title=HOSTILE[0]),
        kde_figure(
            {h: curves[m] for h, m in relabel.items()},
            {h: diagrams[m] for h, m in relabel.items()},
            kde_ece={h: eces[m] for h, m in relabel.items()},
        ),
        ece_by_bins_figure({h: sweeps[m] for h, m in relabel.items()}),
    ]
    for fig in figs:
        assert_escaped(fig)
    assert one.n_resamples == 20


def test_one_method_one_colour_in_every_figure(
    diagrams, top_label, classwise, validity, kde, sweeps, learning, splits
):
    methods = list(diagrams)
    colors = method_colors(methods)
    curves, eces = kde
    figs = [
        reliability_figure(diagrams),
        top_label_figure(top_label),
        classwise_grid_figure(classwise, class_names=splits["test"].class_names),
        validity_figure(validity),
        kde_figure(curves, diagrams, kde_ece=eces),
        ece_by_bins_figure(sweeps, kde_ece=eces),
        learning_curve_figure(learning),
        class_cells_figure(top_label, 0),
    ]
    for fig in figs:
        for t in fig.data:
            if t.name in colors:
                assert (t.line.color or t.marker.color) == colors[t.name], (t.name, fig)


def test_every_builder_themes_fonts_and_lines(diagrams, validity, learning):
    for fig in (
        reliability_figure(diagrams),
        validity_figure(validity),
        learning_curve_figure(learning),
    ):
        assert fig.layout.paper_bgcolor == "#FFFFFF" == fig.layout.plot_bgcolor
        assert fig.layout.font.size >= 14 and fig.layout.legend.orientation == "h"
        for t in fig.data:
            if t.type == "scatter" and t.mode and "lines" in t.mode and t.fill is None:
                assert t.line.width >= 2, t.name
            if t.type == "scatter" and t.mode and "markers" in t.mode:
                assert t.marker.size is None or np.min(t.marker.size) >= 8, t.name


def test_reliability_skips_empty_data_dependent_bins():
    # Discrete scores with equal-mass bins leave some bins empty: they have no score range
    # (NaN edges) and must not become bars (Plotly refuses NaN widths).
    scores = np.repeat([0.2, 0.8], 50)
    probs = np.column_stack([1 - scores, scores])
    preds = calcore.Predictions.from_probs(probs, (np.arange(100) % 3 == 0).astype(int))
    diagram = calcore.reliability_diagram(preds, bins=6, binning="equal-mass")
    assert (diagram.count == 0).any() and np.isnan(diagram.lower_edge).any()
    fig = reliability_figure({"uncalibrated": diagram})
    (bars,) = [t for t in fig.data if t.type == "bar"]
    filled = np.isfinite(diagram.lower_edge)
    np.testing.assert_array_equal(np.asarray(bars.y), diagram.count[filled])
    assert np.isfinite(np.asarray(bars.width, dtype=float)).all()
    fig.to_json()


def test_metric_intervals_figure_carries_the_intervals():
    iv = calcore.Interval
    values = {
        UNCALIBRATED: {
            "a": iv(0.2, 0.15, 0.25, 0.95, 50),
            "b": iv(0.3, math.nan, math.nan, 0.95, 0),
        },
        "<b>ts</b>": {"a": iv(0.05, 0.04, 0.07, 0.95, 50), "b": None},
    }
    fig = figures.metric_intervals_figure(values, metrics=[("a", "A"), ("b", "B & C")])
    base = trace(fig, UNCALIBRATED)
    np.testing.assert_array_equal(base.y, [0.2, 0.3])
    np.testing.assert_allclose(base.error_y.array[:1], [0.05])
    np.testing.assert_allclose(base.error_y.arrayminus[:1], [0.05])
    assert np.isnan(base.error_y.array[1])  # no interval: no bar
    ts = trace(fig, "&lt;b&gt;ts&lt;/b&gt;")
    assert ts.y[0] == 0.05 and np.isnan(ts.y[1])  # a missing metric is a gap
    assert list(fig.layout.xaxis.ticktext) == ["A", "B &amp; C"]
    assert base.x[0] < ts.x[0] < 1 and base.x[1] < ts.x[1]  # side by side within a metric
    no_object_arrays(fig)
    with pytest.raises(ValueError, match="at least one"):
        figures.metric_intervals_figure(values, metrics=[])


def test_an_interval_with_a_caveat_is_drawn_without_its_bar_and_shown_without_brackets():
    from dashboard.calibration.views import metrics as metrics_view

    iv = calcore.Interval
    sparse = iv(0.2, 0.1, 0.3, 0.95, 50, "iterated", "its cells hold 3.0 rows on average")
    values = {UNCALIBRATED: {"top_label_ece": sparse, "conf_ece": iv(0.1, 0.08, 0.12, 0.95, 50)}}
    fig = figures.metric_intervals_figure(
        values, metrics=[("conf_ece", "conf"), ("top_label_ece", "TL")]
    )
    base = trace(fig, UNCALIBRATED)
    np.testing.assert_array_equal(base.y, [0.1, 0.2])  # the estimate stays
    assert np.isfinite(base.error_y.array[0]) and np.isnan(base.error_y.array[1])
    table = metrics_view.display_table(values).set_index("metric")
    assert table.loc["TL-ECE", UNCALIBRATED] == "0.2000 †"
    assert table.loc["conf-ECE", UNCALIBRATED] == "0.1000 [0.0800, 0.1200]"
    words = metrics_view.caveat_caption(values)
    assert f"† TL-ECE of {UNCALIBRATED}: no interval shown, its cells hold 3.0 rows" in words


# -- slices ---------------------------------------------------------------------------------
def _sliced_sim():
    sim = calcore.dirichlet_simulator(2, miscalibration="overconfident", strength=2)
    preds = calcore.simulate_predictions(sim, 620, seed=0).preds
    group = np.array(["<i>big</i>"] * 400 + ["small"] * 200 + ["tiny"] * 20)
    preds = preds.with_metadata({"g": group})
    return preds, calcore.evaluate_by(
        preds, "g", n_resamples=19, interval_resamples=20, rank_by="top_label_ece"
    )


def test_slice_funnel_draws_calcore_values_and_hollow_untested_slices():
    preds, sliced = _sliced_sim()
    fig = figures.slice_funnel_figure(sliced, method="<m>")
    by_name = {t.name: t for t in fig.data}
    (untested,) = [t for n, t in by_name.items() if n.startswith("not tested")]
    tiny = next(s for s in sliced.slices if s.label == "tiny")
    assert list(untested.x) == [20] and untested.marker.color == "rgba(0,0,0,0)"
    assert untested.y[0] == tiny.report.metrics["top_label_ece"]
    tested = [t for n, t in by_name.items() if n.startswith(("miscalibrated", "no evidence"))]
    drawn = {t.text[i]: (t.y[i], t.customdata[i]) for t in tested for i in range(len(t.x))}
    big = next(s for s in sliced.slices if s.label == "<i>big</i>")
    y, (low, high, p, q) = drawn["&lt;i&gt;big&lt;/i&gt;"]
    iv = big.report.intervals["top_label_ece"]
    assert (y, low, high, p, q) == (iv.estimate, iv.low, iv.high, big.p_value, big.q_value)
    assert "&lt;m&gt;" in fig.layout.title.text and "<m>" not in fig.layout.title.text
    line = by_name["overall"]
    assert list(line.y) == [sliced.overall.metrics["top_label_ece"]] * 2


def test_slice_grid_one_panel_per_slice_names_escaped():
    preds, sliced = _sliced_sim()
    slicing = calcore.slicing_of(preds.metadata, "g")
    diagrams = [
        calcore.reliability_diagram(preds.subset(rows), view="confidence")
        for rows in slicing.row_groups()
    ]
    fig = figures.slice_grid_figure({"uncalibrated": diagrams}, slice_names=slicing.labels)
    titles = [a.text for a in fig.layout.annotations][: len(diagrams)]
    assert titles == ["&lt;i&gt;big&lt;/i&gt; · n = 400", "small · n = 200", "tiny · n = 20"]
    (trace,) = [t for t in fig.data if t.name == "uncalibrated"]
    assert len(panel_runs(trace.customdata)) == 3
    with pytest.raises(ValueError, match="one diagram per slice"):
        figures.slice_grid_figure({"uncalibrated": diagrams[:2]}, slice_names=slicing.labels)
