"""View 3: top-label reliability; the per-class gap (Delta_b) and the worst cells on request."""

from __future__ import annotations

import streamlit as st

import calcore
from dashboard.calibration import compute
from dashboard.calibration.views._common import answer, chart, explain
from dashboard.figures import class_cells_figure, top_label_figure, worst_cells_table
from dashboard.guard import bugs_as_messages
from dashboard.text import escape_markdown as esc

KEY_DETAIL = "view.top_label.detail"
KEY_METHOD = "view.top_label.method"
KEY_CLASS = "view.top_label.class"
TABLE_ROWS = 12  # rows the table shows before it scrolls (it holds every cell, sortable)


def figure(ctx):
    s = ctx.settings
    return top_label_figure(ctx.per_output(compute.top_label_diagram, s.binning, s.bins))


def render(ctx) -> None:
    st.subheader("Top-label reliability diagram")
    s = ctx.settings
    diagrams = ctx.per_output(compute.top_label_diagram, s.binning, s.bins)
    answer(calcore.top_label_summary(diagrams))
    explain("top-label")
    detail = st.toggle(
        "Show the per-class gap in each bin (Δ_b)",
        key=KEY_DETAIL,
        help=(
            "Splits each bin by predicted class: the filled point sits Δ_b, the mean gap of "
            "the classes in the bin, away from the diagonal. Far from the open accuracy "
            "point, per-class errors cancel in the plain diagram."
        ),
    )
    fig = ctx.figure("top_label", lambda: top_label_figure(diagrams, detail=detail), detail)
    chart(fig, "figure.top_label")
    worst_cells(ctx, diagrams)


@st.fragment
@bugs_as_messages
def worst_cells(ctx, diagrams: dict) -> None:
    """The worst (class, bin) cells of one method as a sortable table, and one class's chart.

    A fragment: changing the method or the class reruns only this part of the page.
    """
    st.markdown("**Where the error comes from: predicted class × confidence bin**")
    left, right = st.columns(2)
    method = left.selectbox("Method", list(diagrams), key=KEY_METHOD)
    diagram = diagrams[method]
    table = worst_cells_table(diagram)
    if table.empty:
        st.info("No test rows to break down.")
        return
    st.caption(
        f"Every cell of {esc(method)} where a class was predicted, the largest share of "
        "its TL-ECE first (rows ÷ test rows × |accuracy − confidence|; the column sums to "
        "the TL-ECE). Click a column name to sort by it."
    )
    st.dataframe(
        table,
        hide_index=True,
        height=38 + 35 * min(TABLE_ROWS, len(table)),
        column_config={
            "rows": st.column_config.NumberColumn(format="%d"),
            **{
                c: st.column_config.NumberColumn(format="%.3f")
                for c in ("mean confidence", "accuracy", "accuracy − confidence")
            },
            "adds to TL-ECE": st.column_config.NumberColumn(format="%.4f"),
        },
        key="table.top_label.cells",
    )
    names = diagram.class_names
    classes = list(dict.fromkeys(int(c) for c in table.index))  # worst class first
    cls = right.selectbox(
        "Class in the chart below (worst first)",
        classes,
        format_func=lambda c: str(names[c]),
        key=KEY_CLASS,
    )
    methods = tuple(diagrams)
    fig = ctx.figure("top_label_class", lambda: class_cells_figure(diagrams, cls), methods, cls)
    chart(fig, "figure.top_label_class")
