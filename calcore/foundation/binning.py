"""Binning schemes for binned calibration estimates, behind one interface.

This module defines the schemes; :mod:`calcore.statistics.edges` turns a scheme
and data into bins *within each group* (bins never mix groups: top-label bins are
formed per predicted class), and :func:`calcore.statistics.edges.assign_bins` says
which bin every point falls in.

Schemes (``binning``), with the meaning of ``bins`` for each:

=================  ===========================================================
``equal-width``    ``bins`` intervals ``[k/B, (k+1)/B)``; the last one is closed
                   at 1.0 and 0.0 falls in the first. Empty bins are kept (and
                   reported with count 0), never dropped.
``equal-mass``     ``bins`` bins of ``n/B`` points (+-1) by rank. A block of equal
                   scores is never split: it goes to the bin of its first
                   (lowest-rank) member, so a bin can be empty when a large
                   block of ties spans several.
``points-per-bin`` equal-mass with ``B = max(1, floor(n_g / bins))`` bins per group,
                   i.e. ``bins`` is the number of points per bin ``k``.
``unique``         one bin per distinct score value (the "unbinned" estimate for
                   predictors with discrete outputs such as histogram binning).
=================  ===========================================================

For ``equal-width`` and ``equal-mass``, ``bins`` may also be a data-dependent
rule: ``"sturges"`` (``ceil(log2 n) + 1``) or ``"cube-root"`` (``ceil(n^(1/3))``),
applied to each group's size.

References
----------
Nixon et al. (2019), "Measuring calibration in deep learning", Sec. 2.1;
Sturges (1926); Gupta & Ramdas (2021), "Distribution-free calibration
guarantees for histogram binning without sample splitting", Alg. 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import CalcoreError

__all__ = [
    "BINNING_SCHEMES",
    "BIN_COUNT_RULES",
    "BinningScheme",
    "resolve_binning",
    "equal_width_index",
]

BINNING_SCHEMES = ("equal-width", "equal-mass", "points-per-bin", "unique")
BIN_COUNT_RULES = ("sturges", "cube-root")


@dataclass(frozen=True)
class BinningScheme:
    """A validated (scheme, bins) pair; see the module docstring.

    Examples
    --------
    >>> import calcore
    >>> scheme = calcore.resolve_binning("points-per-bin", 100)
    >>> scheme.kind, scheme.n_bins(1000), scheme.describe()
    ('points-per-bin', 10, 'equal-mass, 100 points per bin')
    """

    kind: str
    bins: int | str | None

    def n_bins(self, n: int) -> int:
        """Number of bins for a group of ``n`` points (``unique`` has no fixed count: -1)."""
        if self.kind == "unique":
            return -1
        if self.kind == "points-per-bin":
            return max(1, n // int(self.bins))
        if self.bins == "sturges":
            return int(np.ceil(np.log2(max(n, 1)))) + 1
        if self.bins == "cube-root":
            return max(1, int(np.ceil(max(n, 1) ** (1 / 3) - 1e-9)))
        return int(self.bins)

    def describe(self) -> str:
        if self.kind == "unique":
            return "one bin per distinct score"
        if self.kind == "points-per-bin":
            return f"equal-mass, {self.bins} points per bin"
        return f"{self.kind}, {self.bins} bins"


def resolve_binning(binning: str = "equal-width", bins: int | str | None = 15) -> BinningScheme:
    """Validate a binning choice.

    Raises
    ------
    CalcoreError
        Unknown scheme, or a number of bins / points per bin that is not a
        positive integer (or, for equal-width and equal-mass, a rule name).

    Examples
    --------
    >>> import calcore
    >>> calcore.resolve_binning("equal-mass", 10)
    BinningScheme(kind='equal-mass', bins=10)
    >>> calcore.resolve_binning("equal-width", "sturges").n_bins(1000)  # ceil(log2 1000) + 1
    11
    """
    if isinstance(binning, BinningScheme):
        return binning
    if binning not in BINNING_SCHEMES:
        raise CalcoreError(f"binning must be one of {list(BINNING_SCHEMES)}; got {binning!r}.")
    if binning == "unique":
        return BinningScheme("unique", None)
    if isinstance(bins, str):
        if binning == "points-per-bin" or bins not in BIN_COUNT_RULES:
            rules = "" if binning == "points-per-bin" else f" or one of {list(BIN_COUNT_RULES)}"
            raise CalcoreError(
                f"bins must be a positive integer{rules} for binning={binning!r}; got {bins!r}."
            )
        return BinningScheme(binning, bins)
    if isinstance(bins, (bool, np.bool_)) or not isinstance(bins, (int, np.integer)) or bins < 1:
        what = "points per bin" if binning == "points-per-bin" else "number of bins"
        raise CalcoreError(f"The {what} (bins) must be a positive integer; got {bins!r}.")
    return BinningScheme(binning, int(bins))


def equal_width_index(scores: np.ndarray, n_bins) -> np.ndarray:
    """Equal-width bin index of each score: ``k`` such that ``k/B <= s < (k+1)/B``.

    ``n_bins`` is an int or an array broadcastable to ``scores`` (one count per
    point). Edges are the correctly rounded ``k/B``. The product ``s * B`` can
    land one ulp on the wrong side of an integer, so the few scores within
    ``max(1e-9, 8 B eps)`` of an inner edge are re-checked against the edges exactly; the rest take
    the fast ``floor(s * B)``. 1.0 goes to the last bin.
    """
    nb = np.asarray(n_bins)
    x = scores * nb
    idx = x.astype(np.intp)  # truncation == floor for x >= 0
    frac = x - idx
    # Edge 0 is exact, so tiny scores (common in softmax outputs) need no check.
    tol = max(1e-9, 8 * float(np.max(nb)) * np.finfo(np.float64).eps)  # s * B is off by <= B ulp
    near = np.flatnonzero(((frac < tol) & (idx > 0)) | (frac > 1 - tol))
    if near.size:
        flat_idx, flat_s = idx.reshape(-1), np.ravel(scores)
        b = np.broadcast_to(nb, np.shape(scores)).reshape(-1)[near] if nb.ndim else nb
        k = flat_idx[near]
        k = k - ((k / b) > flat_s[near])
        k = k + ((k + 1) / b <= flat_s[near])
        flat_idx[near] = k
    np.minimum(idx, nb - 1, out=idx)
    return idx
