"""Building blocks shared by the figure modules: escaping, the diagonal, bands, layout.

User text (method labels, class names, titles) is HTML-escaped before it reaches a
figure, because Plotly renders a subset of HTML in names, titles, annotations and hover
text; and it never enters a ``hovertemplate`` (where ``%{...}`` would be interpreted),
only ``text``/``hovertext`` values that a fixed template references.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from dashboard.figures._style import method_style, rgba
from dashboard.figures._theme import INK, apply_theme, ink

__all__ = [
    "esc",
    "ordered",
    "styles_for",
    "diagonal",
    "band",
    "reliability_points",
    "bin_points",
    "error_bars",
    "finish",
    "sized_marker",
    "segments",
    "LINE_WIDTH",
    "MARKER_SIZE",
]

LINE_WIDTH = 2.5  # >= 2 px: visible from the back of a room
MARKER_SIZE = 10
ERROR_BAR_WIDTH = 2
BAND_ALPHA = 0.18


def esc(text) -> str:
    """HTML-escape user text (quotes too: names can end up in attributes)."""
    return html.escape(str(text), quote=True)


def ordered(items, what: str) -> dict:
    """A non-empty mapping as a dict in its own order; ``ValueError`` otherwise."""
    if not isinstance(items, Mapping) or not items:
        raise ValueError(f"{what} must be a non-empty mapping of method name to result.")
    return dict(items)


def styles_for(methods, palette_methods=None) -> dict[str, dict]:
    """Styles of ``methods``, taken from ``palette_methods`` (the full ordered list) if given."""
    full = list(palette_methods) if palette_methods is not None else []
    full += [m for m in methods if m not in full]
    return method_style(full)


def diagonal(*, lo: float = 0.0, hi: float = 1.0, showlegend=True) -> go.Scatter:
    """The perfect-calibration line (in the foreground colour, no hover)."""
    return go.Scatter(
        x=[lo, hi],
        y=[lo, hi],
        mode="lines",
        name="perfect calibration",
        line={"color": ink(), "dash": "dash", "width": 2},
        hoverinfo="skip",
        meta=INK,
        showlegend=showlegend,
    )


def band(x, lower, upper, *, color: str, name: str, group: str, showlegend=False) -> go.Scatter:
    """A shaded band between ``lower`` and ``upper`` over ``x`` (one closed polygon).

    Points where any of the three is NaN (empty bins) are left out, not drawn at 0.
    """
    x, lower, upper = (np.asarray(a, dtype=float) for a in (x, lower, upper))
    ok = np.isfinite(x) & np.isfinite(lower) & np.isfinite(upper)
    x, lower, upper = x[ok], lower[ok], upper[ok]
    return go.Scatter(
        x=np.r_[x, x[::-1]],
        y=np.r_[upper, lower[::-1]],
        mode="lines",
        fill="toself",
        fillcolor=rgba(color, BAND_ALPHA),
        line={"width": 0, "color": rgba(color, 0.0)},
        name=name,
        legendgroup=group,
        showlegend=showlegend,
        hoverinfo="skip",
    )


def bin_points(diagram) -> dict[str, np.ndarray]:
    """The non-empty bins of a reliability diagram as float arrays.

    Keys: ``x`` (mean score), ``y`` (frequency), ``low``/``high`` (Wilson interval), and
    ``custom`` (columns: count, ci_lower, ci_upper, lower edge, upper edge). Empty bins have
    NaN fields and are skipped, not drawn at 0.
    """
    filled = np.asarray(diagram.count) > 0
    x = np.asarray(diagram.confidence, dtype=float)[filled]
    y = np.asarray(diagram.accuracy, dtype=float)[filled]
    low = np.asarray(diagram.ci_lower, dtype=float)[filled]
    high = np.asarray(diagram.ci_upper, dtype=float)[filled]
    custom = np.column_stack(
        [
            np.asarray(diagram.count, dtype=float)[filled],
            low,
            high,
            np.asarray(diagram.lower_edge, dtype=float)[filled],
            np.asarray(diagram.upper_edge, dtype=float)[filled],
        ]
    )
    return {"x": x, "y": y, "low": low, "high": high, "custom": custom}


def error_bars(points: dict, color: str) -> dict:
    """Plotly ``error_y`` for :func:`bin_points`' Wilson intervals (NaN rows: no bar)."""
    return {
        "type": "data",
        "symmetric": False,
        "array": points["high"] - points["y"],  # Plotly wants distances from the point
        "arrayminus": points["y"] - points["low"],
        "color": color,
        "thickness": ERROR_BAR_WIDTH,
        "width": 4,
    }


def reliability_points(
    diagram,
    *,
    name: str,
    group: str,
    style: dict,
    show_intervals: bool = True,
    showlegend: bool = True,
    x_label: str = "mean confidence",
    y_label: str = "accuracy",
    mode: str = "lines+markers",
) -> go.Scatter:
    """One point per non-empty bin at ``(confidence, accuracy)`` with Wilson error bars.

    ``customdata`` columns: count, ci_lower, ci_upper, lower edge, upper edge. ``name``
    and ``group`` must already be escaped; the labels are fixed strings of this package.
    """
    points = bin_points(diagram)
    conf, acc, custom = points["x"], points["y"], points["custom"]
    error = error_bars(points, style["color"]) if show_intervals else None
    return go.Scatter(
        x=conf,
        y=acc,
        mode=mode,
        name=name,
        legendgroup=group,
        showlegend=showlegend,
        line={"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]},
        marker={"color": style["color"], "size": MARKER_SIZE, "symbol": style["symbol"]},
        error_y=error,
        customdata=custom,
        hovertemplate=(
            "bin [%{customdata[3]:.3f}, %{customdata[4]:.3f}]<br>"
            f"{x_label}: %{{x:.4f}}<br>"
            f"{y_label}: %{{y:.4f}}<br>"
            "95% Wilson interval: %{customdata[1]:.4f} to %{customdata[2]:.4f}<br>"
            "%{customdata[0]:,} rows"
        ),
    )


#: Characters per line of a title and of a subtitle before they wrap: what fits the plot
#: area of a full-width chart at 1440 px (about 880 px; 19 px and 15 px fonts average
#: about 10.5 and 8.3 px a character). Plotly never wraps a title, it cuts it at the edge.
TITLE_CHARS = 76
SUBTITLE_CHARS = 100
TITLE_LINE, SUBTITLE_LINE = 25, 20  # px per line (19 px and 15 px fonts)


def shown_length(text: str) -> int:
    """Characters ``text`` (HTML-escaped) shows: "&lt;" is one."""
    return len(html.unescape(text))


def wrap(text: str, width: int) -> list[str]:
    """``text`` (escaped, no tags) in lines of at most ``width`` shown characters, broken
    at spaces (a longer word stays whole); text with markup is left on one line."""
    if "<" in text or shown_length(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and shown_length(line) + 1 + shown_length(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def finish(
    fig: go.Figure,
    *,
    title: str | None,
    height: int,
    subtitle: str | None = None,
    legend: bool = True,
    headroom: int = 0,
) -> go.Figure:
    """Common layout: title and subtitle (already escaped), horizontal legend on top, theme.

    Title, subtitle and legend are stacked in the top margin by pixel offsets in container
    coordinates: a container-anchored legend pushes the plot area down by its own height
    however many rows it wraps to, which a paper-anchored legend under a multi-line title
    does not (they overlap). ``headroom`` adds pixels above the plot area (grids need it
    for their panel titles, which sit above the panels). A long title or subtitle wraps
    (:func:`wrap`) and the top margin grows by its extra lines, so no text is cut.
    """
    offset = 10
    layout: dict = {}
    if title:
        title_lines = wrap(title, TITLE_CHARS)
        subtitle_lines = wrap(subtitle, SUBTITLE_CHARS) if subtitle else []
        layout["title"] = {
            "text": "<br>".join(title_lines),
            "subtitle": {"text": "<br>".join(subtitle_lines)},
            "x": 0.0,
            "xref": "paper",
            "xanchor": "left",
            "yref": "container",
            # Plotly anchors a title's first line and adds further lines above it, off the
            # top of the figure: move the anchor down by the extra lines' height
            "y": 1 - (offset + TITLE_LINE * (len(title_lines) - 1)) / height,
            "yanchor": "top",
        }
        offset += 62 if subtitle else 36
        # each extra title line: its own height, and the anchor moved down by as much
        offset += 2 * TITLE_LINE * (len(title_lines) - 1)
        offset += SUBTITLE_LINE * max(len(subtitle_lines) - 1, 0)
    fig.update_layout(
        **layout,
        height=height,
        margin={"l": 78, "r": 24, "t": offset + 10 + headroom, "b": 64},
        showlegend=legend,
        legend={
            "orientation": "h",
            "yref": "container",
            "y": 1 - offset / height,
            "yanchor": "top",
            "xanchor": "left",
            "x": 0.0,
            "itemsizing": "constant",
        },
        hovermode="closest",
    )
    return apply_theme(fig)


def sized_marker(counts, *, color: str, max_px: float = 44.0, symbol: str = "circle") -> dict:
    """Marker whose area is proportional to ``counts`` (``marker.size == counts``, >= 8 px)."""
    counts = np.asarray(counts, dtype=float)
    top = float(counts.max()) if counts.size and counts.max() > 0 else 1.0
    return {
        "size": counts,
        "sizemode": "area",
        "sizeref": 2.0 * top / max_px**2,  # Plotly's recipe: the largest count gets max_px
        "sizemin": MARKER_SIZE - 2,
        "color": rgba(color, 0.6),
        "line": {"color": color, "width": 2},
        "symbol": symbol,
    }


def segments(x0, y0, x1, y1) -> tuple[list, list]:
    """Segments ``(x0, y0) -> (x1, y1)`` as one polyline broken by ``None``."""
    xs: list = []
    ys: list = []
    for a, b, c, d in zip(
        *(np.asarray(v, dtype=float).tolist() for v in (x0, y0, x1, y1)), strict=True
    ):
        xs += [a, c, None]
        ys += [b, d, None]
    return xs, ys
