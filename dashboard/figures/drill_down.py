"""The top-label drill-down: a sortable table of the worst (class, bin) cells and a small
chart of one class.

The top-label diagram's bins of the confidence are split by predicted class into cells
``(b, l)``; calcore's :class:`~calcore.TopLabelReliabilityDiagram` holds each cell's rows
``n_{b,l}``, mean confidence, accuracy and gap ``|acc_{b,l} - conf_{b,l}|``. A cell adds
``n_{b,l} / n * gap_{b,l}`` to the TL-ECE (the sum over cells is ``top_label_ece``), so
ordering by it lists the cells that make the error first. With 100 classes a table reads
where overlapping bubbles could not (issue 34).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures._common import LINE_WIDTH, MARKER_SIZE, diagonal, esc, finish, ordered
from dashboard.figures._style import method_style, rgba

__all__ = ["CELL_COLUMNS", "worst_cells_table", "class_cells_figure", "FEW_ROWS"]

#: Cells with fewer rows are drawn faded: their accuracy is too noisy to read a gap from
#: (a 95% Wilson interval on 10 rows is about +-0.3 wide at accuracy 0.5).
FEW_ROWS = 20

CELL_COLUMNS = (
    "class",
    "confidence bin",
    "rows",
    "mean confidence",
    "accuracy",
    "accuracy − confidence",
    "adds to TL-ECE",
)


def worst_cells_table(diagram) -> pd.DataFrame:
    """Every non-empty (predicted class, confidence bin) cell, worst first.

    Parameters
    ----------
    diagram : calcore.TopLabelReliabilityDiagram

    Returns
    -------
    pandas.DataFrame
        One row per cell with rows, columns :data:`CELL_COLUMNS`: the class name (plain
        text: Streamlit's dataframe shows it as text, never markup), the bin as
        ``"[lo, hi]"``, rows ``n_{b,l}``, ``conf_{b,l}``, ``acc_{b,l}``, the signed gap and
        ``n_{b,l} / n * gap_{b,l}``; sorted by the last, largest first (ties: more rows
        first). Its index is the class index.
    """
    count = np.asarray(diagram.class_count)
    b_idx, l_idx = np.nonzero(count > 0)
    cd = diagram.confidence_diagram
    total = count.sum()
    conf = np.asarray(diagram.class_confidence, dtype=float)[b_idx, l_idx]
    acc = np.asarray(diagram.class_accuracy, dtype=float)[b_idx, l_idx]
    rows = count[b_idx, l_idx]
    adds = rows / total * np.asarray(diagram.class_gap, dtype=float)[b_idx, l_idx]
    lower = np.asarray(cd.lower_edge, dtype=float)[b_idx]
    upper = np.asarray(cd.upper_edge, dtype=float)[b_idx]
    bins = [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(lower, upper, strict=True)]
    table = pd.DataFrame(
        {
            "class": [str(diagram.class_names[c]) for c in l_idx],
            "confidence bin": bins,
            "rows": rows.astype(np.int64),
            "mean confidence": conf,
            "accuracy": acc,
            "accuracy − confidence": acc - conf,
            "adds to TL-ECE": adds,
        },
        index=pd.Index(l_idx.astype(np.int64), name="class index"),
    )
    order = np.lexsort((-rows, -adds))  # the last key sorts first
    return table.iloc[order]


def class_cells_figure(diagrams, cls: int, *, height: int = 380) -> go.Figure:
    """One predicted class's cells of every method: accuracy against confidence, rows below.

    Parameters
    ----------
    diagrams : Mapping[str, calcore.TopLabelReliabilityDiagram]
        Method -> diagram, in display order (every method keeps its colour).
    cls : int
        The predicted class.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Per method, over the bins where the class was predicted: ``<method>`` (escaped)
        through ``(conf_{b,cls}, acc_{b,cls})`` of the cells with at least
        :data:`FEW_ROWS` rows, ``customdata`` columns rows, lower edge, upper edge;
        ``"<method> (few rows)"``: the other cells, faded markers, no line;
        ``"<method> (rows)"``: bars of ``n_{b,cls}`` at the cells' mean confidence.
    """
    diagrams = ordered(diagrams, "diagrams")
    first = next(iter(diagrams.values()))
    n_classes = np.asarray(first.class_count).shape[1]
    if not 0 <= int(cls) < n_classes:
        raise ValueError(f"cls must be a class index in 0..{n_classes - 1}; got {cls!r}.")
    cls = int(cls)
    styles = method_style(list(diagrams))
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.72, 0.28], vertical_spacing=0.08
    )
    fig.add_trace(diagonal(showlegend=False), row=1, col=1)
    for method, d in diagrams.items():
        label, style = esc(method), styles[method]
        count = np.asarray(d.class_count)[:, cls]
        filled = count > 0
        x = np.asarray(d.class_confidence, dtype=float)[filled, cls]
        y = np.asarray(d.class_accuracy, dtype=float)[filled, cls]
        n = count[filled]
        cd = d.confidence_diagram
        custom = np.column_stack(
            [n, np.asarray(cd.lower_edge, dtype=float)[filled],
             np.asarray(cd.upper_edge, dtype=float)[filled]]
        )  # fmt: skip
        hover = (
            "bin [%{customdata[1]:.3f}, %{customdata[2]:.3f}]<br>mean confidence: %{x:.4f}"
            "<br>accuracy: %{y:.4f}<br>%{customdata[0]:,} rows"
        )
        enough = n >= FEW_ROWS
        fig.add_trace(
            go.Scatter(
                x=x[enough], y=y[enough], mode="lines+markers", name=label, legendgroup=label,
                line={"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]},
                marker={"color": style["color"], "size": MARKER_SIZE, "symbol": style["symbol"]},
                customdata=custom[enough], hovertemplate=hover,
            ),
            row=1, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(
                x=x[~enough], y=y[~enough], mode="markers", name=f"{label} (few rows)",
                # Plotly leaves an empty trace out of the legend: when every cell of the
                # method has few rows, its faded points name it there
                legendgroup=label, showlegend=not enough.any(),
                marker={"color": rgba(style["color"], 0.3), "size": MARKER_SIZE,
                        "symbol": style["symbol"]},
                customdata=custom[~enough], hovertemplate=hover,
            ),
            row=1, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Bar(
                x=x, y=n, name=f"{label} (rows)", legendgroup=label, showlegend=False,
                marker={"color": rgba(style["color"], 0.7)}, width=0.012,
                customdata=custom, hovertemplate=hover,
            ),
            row=2, col=1,
        )  # fmt: skip
    name = esc(first.class_names[cls])
    fig.update_layout(barmode="group", bargap=0.1)
    fig.update_xaxes(range=[0.0, 1.02], row=1, col=1)
    fig.update_xaxes(range=[0.0, 1.02], title_text="confidence (top probability)", row=2, col=1)
    fig.update_yaxes(range=[-0.02, 1.02], title_text="accuracy", row=1, col=1)
    fig.update_yaxes(title_text="rows", rangemode="tozero", nticks=3, row=2, col=1)
    return finish(
        fig, title=f"Predicted {name}: accuracy against confidence", height=height,
        subtitle=f"faded: bins with fewer than {FEW_ROWS} rows predicted {name}",
    )  # fmt: skip
