"""Binning schemes for binned calibration estimates, behind one interface.

``assign_bins(scores, groups, binning=..., bins=...)`` puts every point in a
bin *within its group* (bins never mix groups: top-label bins are formed per
predicted class) and returns a flat :class:`BinAssignment`, so that groups
with different numbers of bins need no padding.

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

from calcore._errors import CalcoreError

__all__ = [
    "BINNING_SCHEMES",
    "BIN_COUNT_RULES",
    "BinningScheme",
    "BinAssignment",
    "resolve_binning",
    "equal_width_index",
    "assign_bins",
]

BINNING_SCHEMES = ("equal-width", "equal-mass", "points-per-bin", "unique")
BIN_COUNT_RULES = ("sturges", "cube-root")


@dataclass(frozen=True)
class BinningScheme:
    """A validated (scheme, bins) pair; see the module docstring."""

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


@dataclass(frozen=True, eq=False)
class BinAssignment:
    """Which bin each point falls in; bins are numbered across groups.

    Attributes
    ----------
    point_bin : ndarray of shape (m,), int64
        Flat bin id of each point.
    bin_group : ndarray of shape (n_bins_total,), int64
        Group of each flat bin.
    bin_index : ndarray of shape (n_bins_total,), int64
        Position of the bin within its group (0 = lowest scores).
    lower_edge, upper_edge : ndarray of shape (n_bins_total,), float64
        The bin's interval: the fixed edges for equal-width, else the smallest
        and largest score in the bin (NaN for an empty bin).
    scheme : BinningScheme
    """

    point_bin: np.ndarray
    bin_group: np.ndarray
    bin_index: np.ndarray
    lower_edge: np.ndarray
    upper_edge: np.ndarray
    scheme: BinningScheme

    @property
    def n_bins_total(self) -> int:
        return int(self.bin_group.shape[0])


def _group_layout(bins_per_group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    offsets = np.concatenate(([0], np.cumsum(bins_per_group)))
    total = int(offsets[-1])
    bin_group = np.repeat(np.arange(len(bins_per_group)), bins_per_group)
    bin_index = np.arange(total) - offsets[bin_group]
    return offsets, bin_group, bin_index


def _min_max_per_bin(scores, point_bin, total):
    """Smallest and largest score in each bin (NaN when empty), from one sort by (bin, score)."""
    lower = np.full(total, np.nan)
    upper = np.full(total, np.nan)
    if scores.size:
        order = np.lexsort((scores, point_bin))
        b, s = point_bin[order], scores[order]
        first = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
        last = np.r_[first[1:] - 1, b.size - 1]
        lower[b[first]] = s[first]
        upper[b[last]] = s[last]
    return lower, upper


def assign_bins(
    scores, groups=None, *, n_groups: int | None = None, binning="equal-width", bins=15
) -> BinAssignment:
    """Assign each score to a bin within its group.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        Values in [0, 1].
    groups : ndarray of shape (m,) of int, optional
        Group ids in ``0 .. n_groups - 1``; one group when omitted.
    n_groups : int, optional
        Number of groups (defaults to ``groups.max() + 1``); groups without
        points get no bins under data-dependent schemes and ``B`` empty bins
        under fixed-count ones.
    binning : str or BinningScheme
        See the module docstring.
    bins : int or str
        See the module docstring.

    Returns
    -------
    BinAssignment

    Raises
    ------
    CalcoreError
        Invalid scheme or bins.
    """
    scheme = resolve_binning(binning, bins)
    scores = np.asarray(scores, dtype=np.float64)
    if groups is None:
        groups = np.zeros(scores.shape[0], dtype=np.int64)
        n_groups = 1
    groups = np.asarray(groups, dtype=np.int64)
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if groups.size else 1
    group_sizes = np.bincount(groups, minlength=n_groups)

    if scheme.kind == "equal-width":
        bins_per_group = np.array(
            [
                0 if m == 0 and scheme.bins in BIN_COUNT_RULES else scheme.n_bins(int(m))
                for m in group_sizes
            ],
            dtype=np.int64,
        )
        offsets, bin_group, bin_index = _group_layout(bins_per_group)
        per_point = bins_per_group[groups] if n_groups > 1 else int(bins_per_group[0])
        point_bin = equal_width_index(scores, per_point) + offsets[groups]
        nb = bins_per_group[bin_group]
        return BinAssignment(
            point_bin, bin_group, bin_index, bin_index / nb, (bin_index + 1) / nb, scheme
        )

    # Rank-based schemes: sort by (group, score) once.
    order = np.lexsort((scores, groups))
    s_sorted, g_sorted = scores[order], groups[order]
    group_start = np.concatenate(([0], np.cumsum(group_sizes)))[:-1]
    new_block = np.r_[True, (s_sorted[1:] != s_sorted[:-1]) | (g_sorted[1:] != g_sorted[:-1])]
    block_first = np.maximum.accumulate(np.where(new_block, np.arange(s_sorted.size), 0))
    rank_of_block = (
        block_first - group_start[g_sorted]
    )  # rank of the block's first member within its group

    if scheme.kind == "unique":
        # Sorted by (group, score), blocks are numbered group by group: the block id is the
        # flat bin id, and a group has as many bins as blocks start in it.
        block_id = np.cumsum(new_block) - 1
        bins_per_group = np.bincount(g_sorted[new_block], minlength=n_groups)
        offsets, bin_group, bin_index = _group_layout(bins_per_group)
        sorted_bin = block_id
    else:
        bins_per_group = np.array(
            [
                scheme.n_bins(int(m)) if m > 0 or scheme.bins not in BIN_COUNT_RULES else 0
                for m in group_sizes
            ],
            dtype=np.int64,
        )
        if scheme.kind == "points-per-bin":
            bins_per_group = np.where(group_sizes > 0, bins_per_group, 0)
        offsets, bin_group, bin_index = _group_layout(bins_per_group)
        m = group_sizes[g_sorted]
        b = bins_per_group[g_sorted]
        # Bin k holds ranks [floor(k m / B), floor((k+1) m / B)); a tie block goes with its
        # first rank r: k = ceil((r + 1) B / m) - 1, in exact integer arithmetic.
        within = ((rank_of_block + 1) * b + m - 1) // m - 1
        sorted_bin = within + offsets[g_sorted]
    point_bin = np.empty_like(sorted_bin)
    point_bin[order] = sorted_bin
    total = int(bin_group.shape[0])
    lower, upper = _min_max_per_bin(scores, point_bin, total)
    return BinAssignment(point_bin, bin_group, bin_index, lower, upper, scheme)
