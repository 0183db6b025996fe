"""The passes over a stream that build a :class:`CalibrationStatistics` at bounded memory.

In memory, the bins of every reduction come from the data at once (a sort). A stream
is read as often as its bins need:

* **one pass** when every set of cells has fixed equal-width bins and no KDE-ECE is
  asked for;
* **a profile pass** first when something depends on the whole data: group sizes
  (count rules such as ``"sturges"``, points-per-bin), score moments (the KDE
  bandwidths), and the first 16 bits of every wanted order statistic;
* **one to three selection passes** for equal-mass and points-per-bin bins
  (:class:`~calcore.statistics.quantiles.ExactRanks`; usually two). The rank-based
  requests of one reduction share one search over its points: ACE's and TACE's
  class-wise bins are the same points, TACE's ranks shifted past its score cut;
* then the pass that accumulates the statistics.

The results are those of the in-memory path on the same rows (tested). A source that
can be read only once (a pipe) cannot have data-dependent bins: :func:`stream_statistics`
refuses them rather than approximating. ``binning="unique"`` is refused on streams too:
its number of bins grows with the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore._errors import CalcoreError
from calcore.binning import BIN_COUNT_RULES, BinningScheme
from calcore.statistics.accumulator import CalibrationStatistics, CellSpec, KDESpec
from calcore.statistics.edges import BinEdges, bins_per_group
from calcore.statistics.kde_cells import KDELayout, ScoreMoments
from calcore.statistics.poisson import poisson_weights
from calcore.statistics.quantiles import ExactRanks
from calcore.statistics.redraws import LabelRedraws

__all__ = ["CellRequest", "StreamedStatistics", "stream_statistics"]


@dataclass(frozen=True)
class CellRequest:
    """A set of cells to build on a stream: a reduction, its binning, a score cut.

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics import CellRequest
    >>> CellRequest("confidence", calcore.resolve_binning("equal-width", 15)).fixed
    True
    >>> CellRequest("confidence", calcore.resolve_binning("equal-mass", 15)).fixed  # needs a pass
    False
    """

    reduction: str
    scheme: BinningScheme
    min_score: float | None = None

    @property
    def fixed(self) -> bool:
        """Bins known before reading anything (equal-width with a number of bins)."""
        return self.scheme.kind == "equal-width" and self.scheme.bins not in BIN_COUNT_RULES


@dataclass(frozen=True, eq=False)
class StreamedStatistics:
    """What the last pass over a stream accumulated.

    Attributes
    ----------
    statistics : CalibrationStatistics
        The rows' own statistics.
    bootstrap : CalibrationStatistics or None
        Poisson bootstrap replicates (leading axis ``R``), when asked for.
    redrawn : CalibrationStatistics or None
        The statistics of label sets redrawn from the predictions (leading axis ``R``),
        when asked for and every row was normalised.

    Examples
    --------
    >>> import calcore
    >>> from types import SimpleNamespace
    >>> from calcore.statistics import CellRequest, stream_statistics
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]], [0, 1, 1])
    >>> stream = SimpleNamespace(
    ...     class_names=preds.class_names,
    ...     batches=lambda: iter([SimpleNamespace(preds=preds, position=0)]),
    ... )
    >>> request = {"conf": CellRequest("confidence", calcore.resolve_binning("equal-width", 5))}
    >>> out = stream_statistics(stream, requests=request, bootstrap=(3, 0), redraws=(4, 0))
    >>> out.statistics.n_rows, out.bootstrap.n_replicates, out.redrawn.n_replicates
    (3, 3, 4)
    """

    statistics: CalibrationStatistics
    bootstrap: CalibrationStatistics | None = None
    redrawn: CalibrationStatistics | None = None


def _points(batch, reduction: str):
    """``(scores, groups)`` of a batch's points in a reduction (flattened for class-wise)."""
    if reduction == "confidence":
        return batch.confidence, None
    if reduction == "top-label":
        return batch.confidence, batch.predicted
    n, n_classes = batch.probs.shape
    return batch.probs.reshape(-1), np.tile(np.arange(n_classes), n)


def _n_groups(reduction: str, n_classes: int) -> int:
    return 1 if reduction == "confidence" else n_classes


def _batches(stream, progress):
    """``(preds, position, weights)`` of every batch (weights None without a weight column)."""
    for b in stream.batches():
        if progress is not None:
            progress(b)
        yield b.preds, b.position, getattr(b, "weights", None)


def stream_statistics(
    stream,
    *,
    requests: dict,
    kde: tuple = (),
    bootstrap: tuple[int, int] | None = None,
    redraws: tuple[int, int] | None = None,
    progress=None,
) -> "StreamedStatistics":
    """Statistics of a re-readable stream of Predictions batches.

    Parameters
    ----------
    stream : object with ``batches()`` and ``class_names``
        E.g. :class:`calcore.io.stream.PredictionStream`; ``batches()`` yields objects
        with ``preds`` (Predictions, ``sample_weight`` for weighted rows) and ``position``
        (the index of the batch's first row in the stream, the key of the Poisson
        weights), in the same order on every call.
    requests : dict of str to CellRequest
    kde : tuple of str
        KDE-ECE problems to keep: ``"kde_ece"`` (confidence) and/or
        ``"kde_ece_classwise"`` (one per class), with rule-of-thumb bandwidths.
    bootstrap : (int, int), optional
        ``(R, seed)``: also accumulate ``R`` Poisson bootstrap replicates, each row
        weighted by :func:`~calcore.statistics.poisson.poisson_weights` of its position
        (so the replicates do not depend on the batching). The bins and KDE bandwidths
        stay those of the full data.
    redraws : (int, int), optional
        ``(R, seed)``: also accumulate the statistics of ``R`` label sets redrawn from the
        predicted probabilities (:class:`~calcore.statistics.redraws.LabelRedraws`, keyed
        by row position too), for the test of calibration.
    progress : callable, optional
        Called with every batch read (all passes).

    Returns
    -------
    StreamedStatistics
        The statistics; with ``bootstrap`` their replicates (leading axis ``R``); with
        ``redraws`` the redrawn statistics (None when some rows were not normalised).

    Raises
    ------
    CalcoreError
        ``binning="unique"`` requested, or the data changed between passes.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> from types import SimpleNamespace
    >>> from calcore.statistics import CellRequest, stream_statistics
    >>> parts = [SimpleNamespace(preds=preds.subset(r), position=r[0]) for r in ([0, 1], [2, 3])]
    >>> stream = SimpleNamespace(class_names=preds.class_names, batches=lambda: iter(parts))
    >>> request = CellRequest("confidence", calcore.resolve_binning("equal-mass", 2))
    >>> stats = stream_statistics(stream, requests={"conf": request}).statistics
    >>> stats.cells["conf"].weight.tolist(), stats.cells["conf"].outcome.tolist()
    ([2.0, 2.0], [2.0, 1.0])
    """
    names = tuple(stream.class_names)
    n_classes = len(names)
    for key, req in requests.items():
        if req.scheme.kind == "unique":
            raise CalcoreError(
                f"binning='unique' is not available for a streamed source ({key}): its number "
                "of bins grows with the data. Use equal-width or equal-mass bins."
            )
    profile_needed = bool(kde) or any(not r.fixed for r in requests.values())
    sizes: dict = {}
    moments: dict = {}
    # Rank-based bins share one finder per reduction over all its points (a request with a
    # score cut, TACE's, asks for its ranks shifted by the weight below the cut); its first
    # selection pass (top 16 bits) runs with the profile.
    rank_based = {k for k, r in requests.items() if r.scheme.kind in _RANK_BASED}
    finders = {
        requests[k].reduction: ExactRanks(n_groups=_n_groups(requests[k].reduction, n_classes))
        for k in rank_based
    }
    if profile_needed:
        sizes, moments = _profile(stream, requests, kde, n_classes, finders, progress)
    edges = {}
    wanted: dict = {red: [[] for _ in range(f.n_groups)] for red, f in finders.items()}
    layout: dict = {}  # request -> (bins per group, [(group, slice of its ranks)])
    for key, req in requests.items():
        g = _n_groups(req.reduction, n_classes)
        if req.fixed:
            edges[key] = BinEdges(req.scheme, np.full(g, int(req.scheme.bins), dtype=np.int64))
            continue
        nb = bins_per_group(req.scheme, sizes[key])
        if req.scheme.kind == "equal-width":
            edges[key] = BinEdges(req.scheme, nb, None, req.min_score)
            continue
        below = sizes[_ALL, req.reduction] - sizes[key]  # weight under the score cut
        places = []
        for group, (b, m) in enumerate(zip(nb, sizes[key], strict=True)):
            # R_k = floor(k m / B), m the group's total weight (its size for unit weights);
            # R_k = 0 stays 0 (a threshold of -inf), others move past the cut.
            b, m = max(int(b), 1), int(np.floor(m + 1e-9))
            ranks = (np.arange(1, b, dtype=np.int64) * m) // b
            shifted = np.where(ranks > 0, ranks + below[group], 0.0)
            start = sum(r.size for r in wanted[req.reduction][group])
            wanted[req.reduction][group].append(shifted)
            places.append((group, slice(start, start + shifted.size)))
        layout[key] = (nb, places)
    for red, finder in finders.items():
        finder.set_ranks([np.concatenate(r) if r else np.empty(0) for r in wanted[red]])
        finder.end_pass()
    _select(stream, finders, n_classes, progress)
    for key, (nb, places) in layout.items():
        values = finders[requests[key].reduction].values()
        flat = [values[group][where] for group, where in places]
        flat = np.concatenate(flat) if flat else np.empty(0)
        edges[key] = BinEdges(requests[key].scheme, nb, flat, requests[key].min_score)
    specs = {k: CellSpec(requests[k].reduction, edges[k]) for k in requests}
    kde_specs = {}
    if "kde_ece" in kde:
        kde_specs["kde_ece"] = KDESpec("confidence", (_layout(moments["kde_ece"][0]),))
    if "kde_ece_classwise" in kde:
        kde_specs["kde_ece_classwise"] = KDESpec(
            "class-wise", tuple(_layout(m) for m in moments["kde_ece_classwise"])
        )
    stats = CalibrationStatistics.empty(names, specs, kde_specs)
    boot = redrawn = None
    if bootstrap is not None:
        n_replicates, boot_seed = bootstrap
        boot = CalibrationStatistics.empty(names, specs, kde_specs, replicates=n_replicates)
    if redraws is not None:
        n_redraws, redraw_seed = redraws
        redrawn = LabelRedraws(names, specs, kde_specs, redraws=range(n_redraws), seed=redraw_seed)
    for preds, position, w in _batches(stream, progress):
        stats.update(preds, weights=w)
        rows = position + np.arange(preds.n_samples)
        if boot is not None:
            replicate_weights = poisson_weights(rows, n_replicates, boot_seed)
            boot.update(preds, weights=replicate_weights if w is None else replicate_weights * w)
        if redrawn is not None and preds.normalized:
            redrawn.update(preds, rows, w)
    if redrawn is not None:
        # a label is drawn from a distribution: unnormalised rows leave no test
        redrawn = redrawn.statistics(stats) if stats.normalized else None
    return StreamedStatistics(stats, boot, redrawn)


def _layout(m: ScoreMoments) -> KDELayout:
    return KDELayout.for_bandwidth(m.bandwidth())


_RANK_BASED = ("equal-mass", "points-per-bin")
_ALL = "all points"  # sizes[_ALL, reduction]: every point of a reduction, per group


def _profile(stream, requests, kde, n_classes, finders, progress):
    """Group sizes of the data-dependent requests (and of all points of the reductions with
    rank-based bins) and score moments of the KDE problems; the ``finders`` count their
    first 16 bits on the way."""
    sizes = {
        k: np.zeros(_n_groups(r.reduction, n_classes)) for k, r in requests.items() if not r.fixed
    }
    for red in finders:
        sizes[_ALL, red] = np.zeros(_n_groups(red, n_classes))
    moments = {"kde_ece": [ScoreMoments()], "kde_ece_classwise": [ScoreMoments()] * n_classes}
    for preds, _, w in _batches(stream, progress):
        points = {}
        for key in sizes:
            red = key[1] if isinstance(key, tuple) else requests[key].reduction
            if red not in points:
                scores, groups = _points(preds, red)
                points[red] = (scores, groups, _point_weights(w, red, n_classes))
            scores, groups, pw = points[red]
            cut = None if isinstance(key, tuple) else requests[key].min_score
            if cut is not None:
                keep = scores >= cut
                scores = scores[keep]
                groups = None if groups is None else groups[keep]
                pw = None if pw is None else pw[keep]
            if groups is None:
                sizes[key][0] += scores.size if pw is None else pw.sum()
            else:
                sizes[key] += np.bincount(groups, weights=pw, minlength=sizes[key].size)
        for red, finder in finders.items():
            finder.observe(*points[red])
        if "kde_ece" in kde:
            step = ScoreMoments.of(preds.confidence, w)
            moments["kde_ece"][0] = moments["kde_ece"][0].merge(step)
        if "kde_ece_classwise" in kde:
            per = moments["kde_ece_classwise"]
            for c in range(n_classes):
                per[c] = per[c].merge(ScoreMoments.of(preds.probs[:, c], w))
    return sizes, moments


def _point_weights(w, reduction: str, n_classes: int):
    """Row weights repeated for each of a row's points (class-wise: one per class)."""
    if w is None or reduction != "class-wise":
        return w
    return np.repeat(w, n_classes)


def _select(stream, finders, n_classes, progress) -> None:
    """Selection passes until every wanted order statistic is exact."""
    while any(finder.wants_pass() for finder in finders.values()):
        for preds, _, w in _batches(stream, progress):
            for red, finder in finders.items():
                if finder.wants_pass():
                    scores, groups = _points(preds, red)
                    finder.observe(scores, groups, _point_weights(w, red, n_classes))
        for finder in finders.values():
            if finder.wants_pass():
                finder.end_pass()
