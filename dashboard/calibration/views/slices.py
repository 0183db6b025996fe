"""View 9: calibration per slice of the metadata columns, ranked by evidence.

Every method's test predictions are evaluated per slice by ``calcore.evaluate_by`` (one
cached call per method); the page shows the table of slices by evidence, the error
against slice size beside what calibrated slices would show, every method within each
slice, the slices in order when they have one (periods, ranges), a chosen slice's
reliability diagram beside the overall one, and the top slices as small multiples. On
request each method is also fitted per slice (``calcore.fit_per_slice``; its calibrator
downloads as JSON). On a server dataset the view works on its sample, and a button
evaluates every slice on every test row, streamed (:func:`every_row`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import pandas as pd
import streamlit as st

import calcore
from calcore.calibrators.per_slice import MIN_FIT_ROWS
from calcore.predictions.slicing import parse_slice_spec
from dashboard.calibration import compute, controls, server_datasets
from dashboard.calibration.exports import calibrator_json, safe_filename, table_csv
from dashboard.calibration.views import metrics
from dashboard.calibration.views._common import chart, explain
from dashboard.figures import (
    reliability_figure,
    slice_funnel_figure,
    slice_grid_figure,
    slices_by_method_figure,
    slices_in_order_figure,
)
from dashboard.text import escape_markdown as esc

KEY_METHOD = "view.slices.method"
KEY_SLICE = "view.slices.slice"
KEY_PER_SLICE = "view.slices.per_slice"
#: How a method fitted per slice is named among the page's methods.
PER_SLICE_SUFFIX = " per slice"
#: Panels of the small multiples (the top slices by evidence).
TOP_PANELS = 8
#: Where a slice counts as miscalibrated in the table's words (q-value, i.e. the FDR).
LEVEL = 0.05


def interval_resamples(ctx) -> int:
    """The sidebar's resamples, or none while the Metrics view defers them (large data)."""
    return 0 if metrics.intervals_deferred(ctx) else ctx.settings.n_resamples


def sliced_reports(
    ctx, by: tuple[str, ...], rank_by: str, extra: dict | None = None
) -> dict[str, calcore.SlicedReport]:
    """Every output's ``calcore.evaluate_by`` (cached per output), in the page's order;
    ``extra``: more outputs, ``{label: (cache key, predictions)}``, after them."""
    s = ctx.settings
    boot = interval_resamples(ctx)
    calls = {
        label: functools.partial(compute.sliced, key, by, rank_by, s.binning, s.bins, boot, preds)
        for label, (key, preds) in _outputs(ctx, extra).items()
    }
    return compute.in_parallel(calls)


def _outputs(ctx, extra: dict | None) -> dict:
    """``{label: (cache key, predictions)}`` of the page's outputs, then ``extra``'s."""
    outputs = {label: (ctx.keys[label], preds) for label, preds in ctx.outputs.items()}
    outputs.update(extra or {})
    return outputs


def per_slice_fits(ctx, by: tuple[str, ...]) -> tuple[dict, dict, dict]:
    """Each fitted method refitted on every slice's calibration rows
    (``calcore.fit_per_slice``, cached): ``{"<method> per slice": (cache key,
    predictions)}``, the fits ``{"<method> per slice": calcore.PerSliceCalibration}``, and
    ``{method: error}`` for the methods that could not be fitted per slice. Draws nothing,
    so the report (built without the session) shares it with the view."""
    out, fits, failed = {}, {}, {}
    for label, choice in ctx.methods.items():
        key = f"{ctx.keys[label]}|per-slice={by!r}"
        try:
            fit = compute.per_slice_fit(
                key, choice.name, choice.params, by, ctx.split.calib, ctx.test,
                ctx.fitted[label].calibrator,
            )  # fmt: skip
        except calcore.CalcoreError as err:
            failed[label] = err
            continue
        out[label + PER_SLICE_SUFFIX] = (key, fit.output)
        fits[label + PER_SLICE_SUFFIX] = fit
    return out, fits, failed


def per_slice_outputs(ctx, by: tuple[str, ...]) -> tuple[dict, dict]:
    """:func:`per_slice_fits` on the page: one sentence per method on which slices kept
    the global fit, a warning per method that could not be fitted, each fit's download."""
    out, fits, failed = per_slice_fits(ctx, by)
    for label, err in failed.items():
        st.warning(f"{esc(label)} could not be fitted per slice: {esc(err)}")
    for label, fit in fits.items():
        st.caption(esc(fit.summary(label.removesuffix(PER_SLICE_SUFFIX))))
    if fits:
        for cell, (label, fit) in zip(st.columns(len(fits)), fits.items(), strict=True):
            cell.download_button(
                f"{label} (JSON)",
                data=functools.partial(calibrator_json, fit.calibrator),
                file_name=f"{safe_filename(label)}.json",
                mime="application/json",
                key=f"download.per_slice.{label}",
                help="The global fit and every slice's, with the slicing: apply it later "
                "with calcore apply calibrator.json FILE --out out.csv (FILE needs the "
                "slice columns).",
            )
    return out, fits


def _interval_text(report, key: str) -> str:
    if report is None or report.metrics.get(key) is None:
        return "—"
    value = report.metrics[key]
    iv = report.intervals.get(key)
    if iv is None or not math.isfinite(iv.low):
        return f"{value:.4f}"
    return f"{value:.4f} [{iv.low:.4f}, {iv.high:.4f}]"


def _verdict(s) -> str:
    if not s.tested:
        return f"not tested: {s.note}" if s.note else "not tested"
    if s.q_value <= LEVEL:
        return "miscalibrated"
    return "no evidence of miscalibration"


def slice_rows(sliced: calcore.SlicedReport) -> list[dict]:
    """The table's rows, most miscalibrated first (slice names are data: shown as text)."""
    key = sliced.rank_metric
    label = calcore.METRICS[key].label
    rows = []
    for rank, s in enumerate(sliced.slices, start=1):
        report = s.report
        rows.append(
            {
                "rank": rank,
                "slice": s.label,
                "rows": s.n,
                f"{label} [95% interval]": _interval_text(report, key),
                # the ranking: excess over the slice's noise and the whole model's, in
                # units of the slice's noise (calcore.evaluation.slice_ranking)
                "z": s.z,
                "excess": s.excess,
                "direction": s.direction,
                "p-value": s.p_value,
                "q-value": s.q_value,
                "share of miscalibration": s.share,
                "accuracy": math.nan if report is None else report.metrics.get("accuracy"),
                "verdict": _verdict(s),
            }
        )
    return rows


def first_sentence(text: str) -> str:
    """The first sentence of a headline (up to the first ". " that ends a sentence)."""
    head, sep, _ = text.partition(". ")
    return head + "." if sep else text


def table(sliced: calcore.SlicedReport) -> pd.DataFrame:
    return pd.DataFrame(slice_rows(sliced)).set_index("rank")


def render(ctx):
    """The view; returns the settings with the chosen slicing (for the URL)."""
    st.subheader("Calibration per slice")
    explain("slices")
    metadata = ctx.test.metadata
    streamed = ctx.split.streamed
    if streamed is not None and streamed.slice_columns and not metadata:
        # A server dataset's samples get their slice columns when a page first needs them:
        # the whole page runs again to read them (once for every session) and to give
        # them to the samples and the calibrators' outputs.
        st.rerun(scope="app")
    if not any(col.sliceable for col in metadata.values()):
        st.info(
            "This data has no metadata columns to slice by. Columns other than the label, "
            "split, weight and scores are kept for slicing (CSV and Parquet columns; NPZ "
            "arrays of one value per row), e.g. country, device or date. The bundled "
            "'Credit default' sample has sex, education, marriage, age and credit limit."
        )
        return dataclasses.replace(ctx.settings, view="slices")
    by, rank_by = controls.slice_controls(metadata, ctx.test.n_classes)
    choice = controls.slicing_choice()
    settings = dataclasses.replace(
        ctx.settings,
        view="slices",
        by=by,
        rank_by=choice["rank"],
        per_slice_fit=choice["per_slice"],
    )
    if not by:
        st.info("Choose one or two columns above to slice the test rows by.")
        return settings
    extra, fits = {}, {}
    if ctx.methods and ctx.split.calib is not None:
        per_slice = st.checkbox(
            "Also fit each calibrator per slice",
            value=bool(choice["per_slice"]),
            key=KEY_PER_SLICE,
            help="Fit every chosen method again on each slice's calibration rows (sliced "
            "like the test rows) and compare it with the global fit slice by slice. A slice "
            f"with fewer than {MIN_FIT_ROWS} calibration rows "
            "keeps the global fit.",
        )
        choice["per_slice"] = per_slice
        settings = dataclasses.replace(settings, per_slice_fit=per_slice)
        if per_slice:
            with st.spinner("Fitting every calibrator per slice…"):
                extra, fits = per_slice_outputs(ctx, by)
    with st.spinner("Evaluating every slice…"):
        reports = sliced_reports(ctx, by, rank_by, extra)
    show(ctx, reports, extra)
    every_row(ctx, by, rank_by, fits)
    return settings


KEY_EVERY_ROW = "view.slices.every_row"  # not a widget: the streamed evaluations asked for
#: Widget and figure keys of the every-row reports (beside the sample's).
EVERY_ROW = ".every_row"


def every_row(ctx, by: tuple[str, ...], rank_by: str, fits: dict) -> None:
    """A server dataset's slices on every test row, streamed, when the views use a sample.

    As in the Metrics view: with the dataset's split column every output is evaluated on
    all test rows (the calibrators, also those fitted per slice in ``fits``, were fitted
    on sampled calibration rows, disjoint from them); with another split only the
    uncalibrated predictions are. Datetime columns keep the period the sample chose;
    quantile ranges are cut on every row. The diagrams stay on the sample.
    """
    streamed = ctx.split.streamed
    if streamed is None or streamed.sliced is None:
        return
    by_column = ctx.split.mode == "column" and "test" in streamed.n_rows
    if by_column and not streamed.sampled("test"):
        return  # the slices above are already of every test row
    n_rows = streamed.n_rows["test"] if by_column else sum(streamed.n_rows.values())
    stream = streamed.sliced.with_split("test" if by_column else None)
    outputs = {
        label: (ctx.keys[label], None if label not in ctx.fitted else ctx.fitted[label].calibrator)
        for label in (ctx.outputs if by_column else [calcore.UNCALIBRATED])
    }
    if by_column:
        outputs |= {label: (f"{ctx.keys[label.removesuffix(PER_SLICE_SUFFIX)]}|per-slice={by!r}",
                            fit.calibrator) for label, fit in fits.items()}  # fmt: skip
    st.divider()
    st.markdown(f"**Slices of every {'test ' if by_column else ''}row: {n_rows:,} rows, streamed**")
    if not by_column:
        st.caption(
            "Only the uncalibrated predictions: the calibrators were fitted on rows of the "
            "sample, which are among these rows. Use the dataset's split column to evaluate "
            "them on every test row."
        )
    s = ctx.settings
    specs = _streamed_specs(ctx.test.metadata, by)
    key = f"{streamed.dataset.fingerprint}:{'test' if by_column else 'all'}"
    wanted = (key, specs, rank_by, s.binning, s.bins, tuple(k for k, _ in outputs.values()))
    asked = st.session_state.setdefault(KEY_EVERY_ROW, set())
    if wanted not in asked:
        if st.button(
            f"Evaluate every slice on every row ({len(outputs)} × {n_rows:,} rows)",
            key="view.slices.every_row_button",
            help="Streams the dataset once per output and per pass; the slices' tests redraw "
            f"{server_datasets.STREAMED_SLICE_RESAMPLES} label sets of every row (about 6 s per 8 "
            "million binary rows and output on 2 cores).",
        ):
            asked.add(wanted)
            st.rerun(scope="app")
        return
    reports = {}
    bar = st.progress(0.0)
    try:
        for i, (label, (out_key, calibrator)) in enumerate(outputs.items()):
            progress = server_datasets.RowsProgress(
                lambda text, done: bar.progress(done or 0.0, text=esc(text)),
                f"{label} ({i + 1}/{len(outputs)})",
                n_rows,
            )
            reports[label] = server_datasets.streamed_sliced(
                f"{key}|{out_key}", specs, rank_by, s.binning, s.bins, stream, calibrator,
                progress,
            )  # fmt: skip
    except calcore.CalcoreError as err:
        bar.empty()
        st.error(f"The slices of every row could not be evaluated: {esc(err)}")
        return
    bar.empty()
    st.caption(
        f"{n_rows:,} rows · point estimates (no intervals on every row) · each slice's test "
        f"redraws {server_datasets.STREAMED_SLICE_RESAMPLES} label sets (smallest p-value "
        f"{1 / (server_datasets.STREAMED_SLICE_RESAMPLES + 1):.2g}) · the reliability diagrams "
        "above are of the sample."
    )
    show(ctx, reports, fits, where=EVERY_ROW)


def _streamed_specs(metadata: dict, by: tuple[str, ...]) -> tuple[str, ...]:
    """``by`` with the period the sample chose for a datetime column named without one (a
    stream needs it named)."""
    resolved = calcore.slicing_of(metadata, list(by)).resolved
    out = []
    for spec, period in zip(by, resolved, strict=True):
        parsed = parse_slice_spec(spec) if spec not in metadata else None
        column = spec if parsed is None else parsed.column
        if metadata[column].kind == "datetime" and (parsed is None or not parsed.grouping):
            spec = f"{column}:{period}"
        out.append(spec)
    return tuple(out)


def show(
    ctx,
    reports: dict[str, calcore.SlicedReport],
    extra: dict | None = None,
    *,
    where: str = "",
) -> None:
    """The table, figures and diagrams of the sliced reports; ``extra`` as in
    :func:`sliced_reports` (the methods fitted per slice). ``where``: a suffix of the
    widgets' and figures' keys for a second set of reports on the page (every row of a
    server dataset); their diagrams are left out (they need the rows in memory)."""
    labels = list(reports)
    method = st.selectbox(
        "Slices of", labels, key=KEY_METHOD + where, help="Whose predictions the table ranks."
    )
    if not where:
        controls.slicing_choice()["method"] = method  # for the report, as the slice below
    sliced = reports[method]
    found = sliced.discoveries(alpha=LEVEL)
    tested = sum(1 for s in sliced.slices if s.tested)
    (st.warning if sliced.standouts(alpha=LEVEL) else st.info)(esc(sliced.headline(alpha=LEVEL)))
    after = [label for label in reports if label != method and label in ctx.fitted]
    if method == calcore.UNCALIBRATED and after:
        # The residual a global map leaves: a slice the model misses keeps its error after
        # recalibration, one that only shares the model's overall miscalibration loses it.
        st.markdown(
            "**After a global calibrator** (what one map for all rows leaves):\n"
            + "\n".join(
                f"- {esc(label)}: {esc(first_sentence(reports[label].headline(alpha=LEVEL)))}"
                for label in after
            )
        )
    st.caption(
        f"{len(found)} of {tested} tested slices of {esc(method)} are miscalibrated at a "
        f"{LEVEL:.0%} false discovery rate ({len(sliced.slices)} slices in all); "
        f"{len(sliced.standouts(alpha=LEVEL))} beyond the model's overall error."
    )
    frame = table(sliced)
    # The grid sizes a column by its first rows and cuts longer text ("week of 2026-0…"):
    # the slice column gets the width of its longest label (~8 px a character), and stays
    # in view when the other columns scroll.
    longest = max((len(str(v)) for v in frame["slice"]), default=8) if "slice" in frame else 8
    st.dataframe(
        frame,
        column_config={
            "slice": st.column_config.TextColumn(width=min(8 * longest + 32, 420), pinned=True),
            "z": st.column_config.NumberColumn(format="%.1f"),
            "excess": st.column_config.NumberColumn(format="%+.4f"),
            "p-value": st.column_config.NumberColumn(format="%.3g"),
            "q-value": st.column_config.NumberColumn(format="%.3g"),
            "share of miscalibration": st.column_config.NumberColumn(format="percent"),
            "accuracy": st.column_config.NumberColumn(format="%.4f"),
        },
        key="table.slices" + where,
    )
    st.download_button(
        "Slices table (CSV)",
        table_csv(frame.reset_index().to_dict("records")),
        file_name=f"slices{where.replace('.', '_')}.csv",
        mime="text/csv",
        key="download.slices" + where,
    )
    for note in sliced.notes:
        st.caption(esc(note))
    ordered = sliced.ordered and len(sliced.slices) > 1
    chart(funnel_figure(ctx, method, sliced, where), "figure.slices.funnel" + where)
    options = (sliced.columns, sliced.rank_metric, interval_resamples(ctx), tuple(reports))
    if ordered:
        chart(
            ctx.figure("slices.order" + where,
                       lambda: slices_in_order_figure(reports), *options),
            "figure.slices.order" + where,
        )  # fmt: skip
    if len(reports) > 1:
        st.caption(
            "Every calibrator is fitted on all calibration rows and evaluated within each "
            "slice: a slice that stays miscalibrated after calibration needs more than one "
            "global map (a calibrator per slice, or a feature the model lacks)."
            + (
                f" A method{PER_SLICE_SUFFIX} is the same method fitted on each slice's own "
                "calibration rows."
                if extra
                else ""
            )
        )
        chart(
            ctx.figure("slices.methods" + where,
                       lambda: slices_by_method_figure(reports), *options),
            "figure.slices.methods" + where,
        )  # fmt: skip
    if not where:
        slice_diagrams(ctx, sliced, extra)


def funnel_figure(ctx, method: str, sliced: calcore.SlicedReport, where: str = ""):
    """The error-against-size figure of ``method``'s slices (cached per settings)."""
    options = (method, sliced.columns, sliced.rank_metric, interval_resamples(ctx))
    return ctx.figure(
        "slices.funnel" + where,
        lambda: slice_funnel_figure(sliced, method=method),
        *options,
    )


def slice_diagrams(ctx, sliced: calcore.SlicedReport, extra: dict | None = None) -> None:
    """A chosen slice's confidence diagram beside the overall one, then the top slices
    (every output of the page, and the methods fitted per slice in ``extra``)."""
    choices = diagram_choices(sliced)
    if not choices:
        return
    chosen = st.selectbox(
        "Slice to look at",
        choices,
        format_func=lambda v: " | ".join(v),
        key=KEY_SLICE,
    )
    controls.slicing_choice()["slice"] = chosen  # for the report, built without the session
    figures = diagram_figures(ctx, sliced, extra, chosen)
    left, right = st.columns(2)
    for column, (name, (_, fig)) in zip((left, right), list(figures.items())[:2], strict=True):
        with column:
            chart(fig, f"figure.slices.{name}")
    if "grid" in figures:
        chart(figures["grid"][1], "figure.slices.grid")


def diagram_choices(sliced: calcore.SlicedReport) -> list[tuple[str, ...]]:
    """The slices that have a diagram (those with rows), most miscalibrated first."""
    return [x.values for x in sliced.slices if x.report is not None]


def diagram_figures(
    ctx, sliced: calcore.SlicedReport, extra: dict | None, chosen: tuple[str, ...]
) -> dict[str, tuple[str, object]]:
    """``{"overall" | "chosen" | "grid": (title, figure)}``: the confidence diagram of all
    test rows, of the slice with values ``chosen``, and of the top :data:`TOP_PANELS`
    slices as small multiples (when there are two or more), for every output and the
    methods fitted per slice in ``extra`` (cached; the view and the report share them)."""
    s = ctx.settings
    outputs = _outputs(ctx, extra)
    shown = tuple(outputs)
    by = sliced.columns
    base = ctx.keys[calcore.UNCALIBRATED]

    def diagrams_of(values):
        out = {}
        for label, (key, preds) in outputs.items():
            rows, slice_key = compute.slice_predictions(key, by, values, preds)
            out[label] = compute.confidence_diagram(slice_key, s.binning, s.bins, rows)
        return out

    def overall():
        diagrams = {
            label: compute.confidence_diagram(key, s.binning, s.bins, preds)
            for label, (key, preds) in outputs.items()
        }
        return reliability_figure(diagrams, title="All test rows", height=520)

    name = " | ".join(chosen)
    figures = {
        "overall": ("All test rows", ctx.figure("slices.overall", overall, shown)),
        "chosen": (
            f"Slice: {name}",
            ctx.figure("slices.chosen", lambda: reliability_figure(
                diagrams_of(chosen), title=f"Slice: {name}", height=520),
                by, chosen, base, shown),
        ),
    }  # fmt: skip
    top = diagram_choices(sliced)[:TOP_PANELS]
    if len(top) > 1:

        def grid():
            per_slice = [diagrams_of(v) for v in top]
            per_method = {label: [d[label] for d in per_slice] for label in outputs}
            return slice_grid_figure(per_method, slice_names=[" | ".join(v) for v in top])

        figures["grid"] = (
            f"The top {len(top)} slices by evidence",
            ctx.figure("slices.grid", grid, by, tuple(top), base, shown),
        )
    return figures
