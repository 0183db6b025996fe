"""Method colours and line/marker styles shared by every figure.

A method keeps its colour in every view because each builder derives the colours from
the ordered method list of its input with :func:`method_colors`, and the app passes its
mappings in one order everywhere ("uncalibrated" first).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["UNCALIBRATED", "OKABE_ITO", "method_colors", "method_style", "rgba"]

# Same string as calcore.UNCALIBRATED (a test checks it); not imported so that this
# package needs nothing from calcore at import time.
UNCALIBRATED = "uncalibrated"

# Okabe & Ito (2008), "Color Universal Design": distinguishable under the common
# colour-vision deficiencies.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}

# "uncalibrated" is the reference, so it gets the neutral colour: a mid grey that keeps a
# ~4:1 contrast on white and does not read as the black of text and the diagonal.
NEUTRAL = "#7A7A7A"

# The seven chromatic Okabe-Ito colours in the order methods receive them: the strongest
# contrasts on white first, yellow (weak on a white projector screen) last.
METHOD_PALETTE = (
    OKABE_ITO["blue"],
    OKABE_ITO["vermillion"],
    OKABE_ITO["bluish_green"],
    OKABE_ITO["reddish_purple"],
    OKABE_ITO["orange"],
    OKABE_ITO["sky_blue"],
    OKABE_ITO["yellow"],
)

# Beyond seven methods the colours repeat; the dash changes with each pass through the
# palette and the symbol list has a length coprime with 7, so no two methods share all three.
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = (
    "square",
    "diamond",
    "triangle-up",
    "triangle-down",
    "cross",
    "x",
    "star",
    "pentagon",
)


def method_style(methods: Sequence[str]) -> dict[str, dict]:
    """Colour, dash and marker symbol per method.

    Parameters
    ----------
    methods : sequence of str
        Method names in display order; ``"uncalibrated"`` may appear anywhere.

    Returns
    -------
    dict
        ``{method: {"color": hex, "dash": plotly dash, "symbol": plotly symbol}}``.
        ``"uncalibrated"`` is grey, solid, circles; the other methods take the palette
        in the order given (the position skips ``"uncalibrated"``), so the same list
        always gives the same styles.
    """
    styles: dict[str, dict] = {}
    index = 0
    for method in methods:
        if method in styles:
            continue  # a repeated name keeps its first style
        if method == UNCALIBRATED:
            styles[method] = {"color": NEUTRAL, "dash": "solid", "symbol": "circle"}
            continue
        styles[method] = {
            "color": METHOD_PALETTE[index % len(METHOD_PALETTE)],
            "dash": DASHES[(index // len(METHOD_PALETTE)) % len(DASHES)],
            "symbol": SYMBOLS[index % len(SYMBOLS)],
        }
        index += 1
    return styles


def method_colors(methods: Sequence[str]) -> dict[str, str]:
    """Colour-blind-safe colour per method (see :func:`method_style`).

    Examples
    --------
    >>> method_colors(["uncalibrated", "ts", "hb"])
    {'uncalibrated': '#7A7A7A', 'ts': '#0072B2', 'hb': '#D55E00'}
    """
    return {m: s["color"] for m, s in method_style(methods).items()}


def rgba(color: str, alpha: float) -> str:
    """``"#RRGGBB"`` as a CSS ``rgba(...)`` string (for shaded bands)."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"
