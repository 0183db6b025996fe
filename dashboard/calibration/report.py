"""The downloadable report: one self-contained, offline HTML file.

It holds the settings, the metrics table and every figure of the page (plotly.js embedded
once, so it opens without a network). All user text -- file, class and method names -- is
HTML-escaped; the figures escape their own text (see ``dashboard.figures``).
"""

from __future__ import annotations

import datetime as _dt
import html

import plotly.io as pio

import calcore
from calcore.metrics.registry import default_primary
from dashboard.calibration.explain import interval_words
from dashboard.calibration.state import BINNING_CHOICES, SPLIT_MODES
from dashboard.calibration.views import (
    classwise,
    confidence,
    kde,
    learning,
    metrics,
    simplex,
    slices,
    top_label,
)
from dashboard.calibration.views import validity as validity_view
from dashboard.figures import slices_by_method_figure, slices_in_order_figure

__all__ = ["report_figures", "report_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.best { font-weight: bold; }
h2 { margin-top: 2.5rem; }
.meta td, .meta th { text-align: left; }
"""


def report_figures(ctx) -> list[tuple[str, object]]:
    """(title, figure) for every view; slow views with their default settings."""
    values = metrics.metric_values(ctx, n_resamples=0 if metrics.intervals_deferred(ctx) else None)
    figs = [
        ("Calibration errors", metrics.errors_figure(ctx, values)),
        ("Confidence reliability diagram", confidence.figure(ctx)),
        ("Top-label reliability diagram", top_label.figure(ctx)),
        ("Class-wise reliability", classwise.figure(ctx, classwise.default_classes(ctx))),
    ]
    kde_fig, sweep_fig = kde.figures(ctx)
    figs += [("KDE-ECE and binned ECE", kde_fig), ("Binned ECE vs number of bins", sweep_fig)]
    if ctx.methods:
        curves = validity_view.curves(ctx, view="confidence", n_resamples=20)
        from dashboard.figures import learning_curve_figure, validity_figure

        figs.append(("Validity (20 resamples)", validity_figure(curves)))
        curve = learning.curve(ctx, metric="top_label_ece", n_repeats=3)
        figs.append(("Learning curves (TL-ECE)", learning_curve_figure(curve)))
    if ctx.test.n_classes == 3 and ctx.split.calib is not None:
        figs.append(("Simplex: Sierpinski binning", simplex.figure(ctx, "sierpinski")))
    return figs


def _sliced(ctx, slicing: dict | None) -> tuple[dict, dict] | None:
    """Every output's sliced report for the page's slicing, with the methods fitted per
    slice when the view fits them, and those outputs (None: no slicing chosen).

    ``slicing`` is the Slices view's latest choice (``controls.slicing_choice()``): the
    view runs in a fragment, so it can be newer than ``ctx.settings``.
    """
    by = tuple(slicing["by"]) if slicing else ctx.settings.by
    rank = (slicing["rank"] if slicing else ctx.settings.rank_by) or default_primary(
        ctx.test.n_classes
    )
    if not by:
        return None
    per_slice = slicing["per_slice"] if slicing else ctx.settings.per_slice_fit
    extra = {}
    if per_slice and ctx.methods and ctx.split.calib is not None:
        extra, _, _ = slices.per_slice_fits(ctx, by)
    return slices.sliced_reports(ctx, by, rank, extra), extra


def _slices_html(ctx, slicing: dict | None) -> list[str]:
    """The Slices view as the page last showed it: the table of the method chosen there
    (else the first output), the funnel, the slices in order, every method per slice, the
    chosen slice's diagram beside the overall one and the top slices' small multiples."""
    try:
        found = _sliced(ctx, slicing)
    except calcore.CalcoreError as err:
        return [f"<h2>Slices</h2><p>{html.escape(str(err))}</p>"]
    if found is None:
        return []
    reports, extra = found
    slicing = slicing or {}
    method = slicing.get("method")
    method = method if method in reports else next(iter(reports))
    sliced = reports[method]
    frame = slices.table(sliced).reset_index()
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_text(v))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    figs = [slices.funnel_figure(ctx, method, sliced)]
    if sliced.ordered and len(sliced.slices) > 1:
        figs.append(slices_in_order_figure(reports))
    if len(reports) > 1:
        figs.append(slices_by_method_figure(reports))
    diagrams = []
    choices = slices.diagram_choices(sliced)
    if choices:
        chosen = slicing.get("slice")
        chosen = chosen if chosen in choices else choices[0]
        diagrams = slices.diagram_figures(ctx, sliced, extra, chosen).values()
    by = " x ".join(sliced.columns)
    return [
        f"<h2>Slices by {html.escape(by)} ({html.escape(method)})</h2>",
        f"<table><tr>{head}</tr>{body}</table>",
        *(f"<p>{html.escape(note)}</p>" for note in sliced.notes),
        *(pio.to_html(fig, include_plotlyjs=False, full_html=False, validate=False)
          for fig in figs),
        *(f"<h3>{html.escape(title)}</h3>"
          + pio.to_html(fig, include_plotlyjs=False, full_html=False, validate=False)
          for title, fig in diagrams),
    ]  # fmt: skip


def _text(value) -> str:
    if isinstance(value, float):
        return "" if value != value else f"{value:.4g}"
    return str(value)


def _settings_rows(ctx, source: str) -> list[tuple[str, str]]:
    s = ctx.settings
    methods = ", ".join(ctx.outputs) or "none"
    rows = [
        ("data", source),
        ("split", ctx.split.description),
        ("split mode", SPLIT_MODES.get(s.split_mode, s.split_mode)),
        ("methods", methods),
        ("evaluation binning", f"{BINNING_CHOICES.get(s.binning, s.binning)}, {s.bins}"),
        (
            "bootstrap resamples",
            "none (large data; not requested)"
            if metrics.intervals_deferred(ctx)
            else str(s.n_resamples),
        ),
        ("calcore version", calcore.__version__),
        ("generated", _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
    ]
    if ctx.split.warning:
        rows.append(("warning", ctx.split.warning))
    return rows


def _metrics_html(ctx) -> tuple[str, dict]:
    """The metrics table as HTML, and its values (method -> metric -> Interval)."""
    # the page's choice: no intervals on large data until someone asked for them
    table_of = metrics.comparison(ctx, n_resamples=0 if metrics.intervals_deferred(ctx) else None)
    values = table_of.values
    table = metrics.display_table(values, metrics.calibration_verdicts(table_of))
    best = metrics.best_methods(values)
    keys = {title: key for key, (title, _) in metrics.columns().items()}
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
    body = []
    for _, row in table.iterrows():
        winners = best.get(keys.get(row["metric"]), set())
        cells = []
        for col in table.columns:
            cls = ' class="best"' if col in winners else ""
            cells.append(f"<td{cls}>{html.escape(str(row[col]))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>", values


def report_html(ctx, *, source: str, slicing: dict | None = None) -> str:
    """The whole report as one HTML document (about 5 MB: plotly.js is embedded once)."""
    table, values = _metrics_html(ctx)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>calibration-lens report: {html.escape(source)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>calibration-lens report</h1><p>{html.escape(source)}</p>",
        "<h2>Settings</h2><table class='meta'>",
        *(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
            for k, v in _settings_rows(ctx, source)
        ),
        "</table>",
        "<h2>Metrics on the test rows</h2>",
        table,
        f"<p>Brackets: {html.escape(interval_words())} Bold: best per row. "
        f"{html.escape(metrics.caveat_caption(values))}</p>",
    ]
    for i, (title, fig) in enumerate(report_figures(ctx)):
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(pio.to_html(fig, include_plotlyjs=(i == 0), full_html=False, validate=False))
    parts += _slices_html(ctx, slicing)  # after the first figure, which carries plotly.js
    parts.append("</body></html>")
    return "\n".join(parts)
