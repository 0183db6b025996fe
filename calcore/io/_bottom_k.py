"""Bottom-k sampling of a stream: the ``k`` rows with the smallest per-row uniforms.

Each row's uniform comes from ``(seed, position)``
(:func:`calcore.foundation.keyed_random.row_uniforms`), and ties are broken by position, so the
rows kept depend on neither the batching nor the order the batches are offered in.
"""

from __future__ import annotations

import numpy as np

from calcore.predictions import Predictions, take

__all__ = ["BottomK", "bottom_k_cut", "n_batch_rows", "rows_at_or_below"]


class BottomK:
    """The ``k`` rows with the smallest ``(uniform, position)`` of the rows added so far.

    The first cut is placed as soon as more than ``k`` rows have been offered; rows
    above the current cut are dropped as they arrive (after a few batches nearly all
    are), and the kept rows are cut back to ``k`` whenever they reach ``2 k``: O(rows) in
    all, where cutting at every batch cost O(batches x k).
    """

    def __init__(self, k: int, seed: int, *, stream: int = 0) -> None:
        self.k, self.seed, self.stream = k, seed, stream
        self.parts: list = []  # (positions, uniforms, predictions, slice values) per batch
        self.n_read = self.n_kept = 0
        self.cut: tuple[float, int] | None = None

    def add(
        self, positions: np.ndarray, preds: Predictions | None, values: dict, *, rows=None
    ) -> None:
        """Offer the batch's ``rows`` (None: all) at stream ``positions``: only the rows
        below the cut are copied out of the batch. ``preds`` is None when only the slice
        ``values`` are sampled."""
        from calcore.foundation.keyed_random import row_uniforms

        self.n_read += positions.size
        u = row_uniforms(positions, self.seed, stream=self.stream)
        if self.cut is None and self.n_kept + positions.size > self.k:
            # Enough rows to place a cut: place it before copying rows out of the batch
            # (a first batch of 2 million rows would otherwise be copied whole).
            self.cut = bottom_k_cut(
                [(p, u_) for p, u_, _, _ in self.parts] + [(positions, u)], self.k
            )
            self._drop_above_cut()
        if self.cut is not None:
            keep = rows_at_or_below(positions, u, self.cut)
            positions, u = positions[keep], u[keep]
            rows = keep if rows is None else rows[keep]
        if positions.size == 0:
            return
        if rows is not None and rows.size < n_batch_rows(preds, values):
            preds, values = _taken(preds, values, rows)
        self.parts.append((positions, u, preds, values))
        self.n_kept += positions.size
        if self.n_kept >= 2 * self.k:
            self._cut_back()

    def rows(self) -> list:
        """The kept rows' parts, in stream order."""
        if self.n_kept > self.k:
            self._cut_back()
        return self.parts

    def _cut_back(self) -> None:
        self.cut = bottom_k_cut([(p, u) for p, u, _, _ in self.parts], self.k)
        self._drop_above_cut()

    def _drop_above_cut(self) -> None:
        self.parts = [q for q in (_rows_below(p, self.cut) for p in self.parts) if q[0].size]
        self.n_kept = sum(q[0].size for q in self.parts)


def bottom_k_cut(parts, k: int) -> tuple[float, int]:
    """The ``k``-th smallest ``(uniform, position)`` pair of ``parts`` (``(positions,
    uniforms)`` per batch): ties of uniforms are broken by position, so the rows kept do
    not depend on the batching."""
    u = np.concatenate([u for _, u in parts])
    cut = np.partition(u, k - 1)[k - 1]
    n_below = int((u < cut).sum())
    at_cut = np.sort(np.concatenate([p[u_ == cut] for p, u_ in parts]))
    return float(cut), int(at_cut[k - n_below - 1])


def rows_at_or_below(positions: np.ndarray, u: np.ndarray, cut: tuple[float, int]) -> np.ndarray:
    """The indices of the rows at or below the ``(uniform, position)`` cut."""
    u_cut, pos_cut = cut
    rows = np.flatnonzero(u <= u_cut)  # few rows once a cut is made
    tied = u[rows] == u_cut
    if tied.any():  # a uniform equal to the cut's: the position decides
        rows = rows[~tied | (positions[rows] <= pos_cut)]
    return rows


def _rows_below(part, cut: tuple[float, int]):
    """The kept rows of a part (with their slice values) at or below the cut, in order."""
    pos, u, preds, values = part
    rows = rows_at_or_below(pos, u, cut)
    if rows.size == pos.size:
        return part
    return pos[rows], u[rows], *_taken(preds, values, rows)


def n_batch_rows(preds: Predictions | None, values: dict) -> int:
    """Rows of a batch offered as predictions, or as slice values alone."""
    return preds.n_samples if preds is not None else len(next(iter(values.values())))


def _taken(preds: Predictions | None, values: dict, rows: np.ndarray):
    """The predictions (None: none kept) and slice values at ``rows``."""
    # Arrow arrays and numpy arrays both have ``take``
    values = {c: v.take(rows) for c, v in values.items()}
    return (None if preds is None else take(preds, rows)), values
