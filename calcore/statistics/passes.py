"""The passes over a stream that build a :class:`CalibrationStatistics` at bounded memory.

In memory, the bins of every reduction come from the data at once (a sort). A stream
is read as often as its bins need:

* **one pass** when every set of cells has fixed equal-width bins and no KDE-ECE is
  asked for;
* **a profile pass** first when something depends on the whole data: group sizes
  (count rules such as ``"sturges"``, points-per-bin), score moments (the KDE
  bandwidths), and the first 16 bits of every wanted order statistic;
* **one to three selection passes** for equal-mass and points-per-bin bins
  (:class:`~calcore.foundation.exact_ranks.ExactRanks`; usually two). The rank-based
  requests of one reduction share one search over its points: ACE's and TACE's
  class-wise bins are the same points, TACE's ranks shifted past its score cut;
* then the pass that accumulates the statistics.

The results are those of the in-memory path on the same rows (tested). A source that
can be read only once (a pipe) cannot have data-dependent bins: :func:`stream_statistics`
refuses them rather than approximating. ``binning="unique"`` is refused on streams too:
its number of bins grows with the data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from calcore.foundation.binning import BIN_COUNT_RULES, BinningScheme
from calcore.foundation.errors import CalcoreError
from calcore.foundation.exact_ranks import ExactRanks
from calcore.foundation.keyed_random import WeightsBuffer, poisson_weights
from calcore.predictions import take
from calcore.statistics import engine
from calcore.statistics.accumulator import CalibrationStatistics, CellSpec, KDESpec
from calcore.statistics.edges import BinEdges, bins_per_group, equal_mass_ranks
from calcore.statistics.kde_cells import KDELayout, ScoreMoments
from calcore.statistics.points import complementary_binary, points_below
from calcore.statistics.redraws import LabelRedraws

__all__ = [
    "CellRequest",
    "StreamedStatistics",
    "SlicedStatistics",
    "stream_statistics",
    "stream_statistics_by",
    "pass_job",
    "partition_states",
    "merge_pass",
]


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
    double_bootstrap : CalibrationStatistics or None
        The binned cells of ``R`` resamples of the resamples (``poisson_weights(...,
        of=...)``; no KDE or scoring sums), for the iterated bias correction, when asked
        for.

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
    double_bootstrap: CalibrationStatistics | None = None


def _points(batch, reduction: str):
    """``(scores, groups)`` of a batch's confidence or top-label points (the class-wise
    ones stay the (m, L) probabilities: :func:`_observe`, :func:`_group_sizes`)."""
    if reduction == "confidence":
        return batch.confidence, None
    return batch.confidence, batch.predicted


def _n_groups(reduction: str, n_classes: int) -> int:
    return 1 if reduction == "confidence" else n_classes


def stream_statistics(
    stream,
    *,
    requests: dict,
    kde: tuple = (),
    bootstrap: tuple[int, int] | None = None,
    redraws: tuple[int, int] | None = None,
    double_bootstrap: bool = False,
    proper_scores: bool = True,
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
        weighted by :func:`~calcore.foundation.keyed_random.poisson_weights` of its position
        (so the replicates do not depend on the batching). The bins and KDE bandwidths
        stay those of the full data.
    double_bootstrap : bool, default False
        With ``bootstrap``, also accumulate the binned cells of ``R`` resamples of
        resamples (``poisson_weights(..., of=...)``), which the iterated interval
        reads (:func:`calcore.evaluation.intervals.interval_bounds`).
    proper_scores : bool, default True
        Keep the NLL and Brier sums (a log and a square per row); False when neither is
        asked for (a third of a confidence ECE's time on a binary stream).
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
    _check_requests(requests)
    lanes = _Lanes(
        stream, requests, kde, bootstrap, redraws, progress,
        double=double_bootstrap, proper_scores=proper_scores,
    )  # fmt: skip
    lanes.run(lambda batch: ((0, batch.preds, _positions(batch), _weights(batch)),))
    return lanes.result(0)


def stream_statistics_by(
    stream,
    slicer,
    *,
    requests: dict,
    kde: tuple = (),
    bootstrap: tuple[int, int] | None = None,
    redraws: tuple[int, int] | None = None,
    redraw_keys=None,
    double_bootstrap: bool = False,
    proper_scores: bool = True,
    progress=None,
) -> "SlicedStatistics":
    """Statistics of every slice of a stream's rows, and of all of them, in the same passes.

    Each slice's statistics are those :func:`stream_statistics` gives for a stream of its
    rows alone (its own data-dependent bins and KDE bandwidths); the Poisson weights and
    redrawn labels stay keyed by each row's position in the whole stream, so a slice's
    replicates are those of the same rows in memory. A batch is put in slice order once
    (a radix sort of its slice ids) and every slice adds its contiguous rows.

    The overall statistics are the slices' merged when every request has fixed bins and
    no KDE-ECE is asked for (the cells are then the same for all); otherwise the whole
    batches are added to statistics of their own as well.

    Parameters
    ----------
    stream : object with ``batches()`` and ``class_names``
        As in :func:`stream_statistics`; its batches also have ``slice_values``, ``file``
        and ``first_row`` (:class:`calcore.io.stream.StreamBatch`).
    slicer : calcore.predictions.slicing_batches.BatchSlicer
    requests, kde, bootstrap, redraws, double_bootstrap, proper_scores, progress :
        As in :func:`stream_statistics`, for every slice and the overall statistics.
    redraw_keys : iterable of str, optional
        The requests and KDE problems whose redrawn statistics are kept (default: all):
        the test of one metric needs its own cells only.

    Returns
    -------
    SlicedStatistics

    Raises
    ------
    CalcoreError
        As :func:`stream_statistics`; also what the slicer refuses, and a slice that appears
        in a later pass only (the data changed).

    Examples
    --------
    >>> import calcore
    >>> from types import SimpleNamespace
    >>> from calcore.predictions.slicing_batches import BatchSlicer
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]], [0, 1, 1])
    >>> shop = np.array(["b", "a", "b"], dtype=object)
    >>> batch = SimpleNamespace(preds=preds, position=0, slice_values={"shop": shop},
    ...                         file="f", first_row=0, weights=None)  # fmt: skip
    >>> stream = SimpleNamespace(class_names=preds.class_names, batches=lambda: iter([batch]))
    >>> request = {"conf": CellRequest("confidence", calcore.resolve_binning("equal-width", 5))}
    >>> out = stream_statistics_by(stream, BatchSlicer("shop", ["shop"]), requests=request)
    >>> out.slicing.labels, [s.statistics.n_rows for s in out.slices], out.overall.statistics.n_rows
    (('a', 'b'), [1, 2], 3)
    """
    _check_requests(requests)
    merged = kde == () and all(r.fixed for r in requests.values())
    lanes = _Lanes(
        stream, requests, kde, bootstrap, redraws, progress, redraw_keys,
        double=double_bootstrap, proper_scores=proper_scores,
    )  # fmt: skip
    overall = None if merged else -1  # the lane of every row, when not merged
    lanes.slicer, lanes.overall = slicer, overall
    lanes.run(_slice_route(slicer, overall))
    if slicer.n_slices == 0:
        raise CalcoreError(
            f"{getattr(stream, 'name', 'the stream')}: no rows to slice (the stream, or the "
            "split read, is empty)."
        )
    slicing = slicer.slicing()
    by_place = sorted(range(slicing.n_slices), key=lambda i: slicing.place[i])
    slices = tuple(lanes.result(i) for i in by_place)
    total = lanes.result(overall) if overall is not None else lanes.merged(by_place)
    return SlicedStatistics(total, slices, slicing)


def _slice_route(slicer, overall):
    """The route of :func:`stream_statistics_by`: each slice's rows of a batch (and, when
    ``overall`` is a lane id, every row to that lane too)."""

    def parts(batch):
        preds, w, rows = batch.preds, _weights(batch), _positions(batch)
        ids = slicer.codes(batch)
        if overall is not None:
            yield overall, preds, rows, w
        # slice ids of 16 bits (MAX_SLICE_VALUES is 1,000): numpy's stable sort of them is a
        # radix sort; the batch is then copied once, in slice order
        small = ids.size == 0 or ids.max() < 1 << 16
        order = np.argsort(ids.astype(np.uint16) if small else ids, kind="stable")
        counts = np.bincount(ids)
        if counts.size == 1:
            yield 0, preds, rows, w
            return
        sorted_preds = take(preds, order)
        rows, w = rows[order], None if w is None else w[order]
        bounds = np.concatenate(([0], np.cumsum(counts)))
        for k in np.flatnonzero(counts):
            a, b = int(bounds[k]), int(bounds[k + 1])
            yield int(k), take(sorted_preds, slice(a, b)), rows[a:b], None if w is None else w[a:b]

    return parts


@dataclass(frozen=True, eq=False)
class SlicedStatistics:
    """What :func:`stream_statistics_by` accumulated.

    Attributes
    ----------
    overall : StreamedStatistics
        Of every row.
    slices : tuple of StreamedStatistics
        Of each slice, in the order of ``slicing.values``.
    slicing : calcore.predictions.slicing_batches.StreamSlicing
        The slices' columns, values (natural order), kinds.

    Examples
    --------
    >>> import calcore
    >>> from types import SimpleNamespace
    >>> from calcore.predictions.slicing_batches import BatchSlicer
    >>> preds = calcore.Predictions.from_probs([[0.8, 0.2], [0.3, 0.7]], [0, 0])
    >>> day = np.array(["2026-11-02", "2026-11-09"], dtype=object)
    >>> batch = SimpleNamespace(preds=preds, position=0, slice_values={"day": day},
    ...                         file="f", first_row=0)  # fmt: skip
    >>> stream = SimpleNamespace(class_names=preds.class_names, batches=lambda: iter([batch]))
    >>> request = {"conf": CellRequest("confidence", calcore.resolve_binning("equal-width", 2))}
    >>> out = stream_statistics_by(stream, BatchSlicer("day:week", ["day"]), requests=request)
    >>> out.slicing.labels, [float(s.statistics.correct) for s in out.slices]
    (('week of 2026-11-02', 'week of 2026-11-09'), [1.0, 0.0])
    """

    overall: StreamedStatistics
    slices: tuple
    slicing: object


def _nbytes(obj, depth: int = 0) -> int:
    """Bytes of the arrays an object holds (its fields, dicts and lists, a few levels down)."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if depth > 5:
        return 0
    if isinstance(obj, dict):
        return sum(_nbytes(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v, depth + 1) for v in obj)
    if hasattr(obj, "__dict__"):
        return sum(_nbytes(v, depth + 1) for v in vars(obj).values())
    return 0


def _check_requests(requests: dict) -> None:
    for key, req in requests.items():
        if req.scheme.kind == "unique":
            raise CalcoreError(
                f"binning='unique' is not available for a streamed source ({key}): its number "
                "of bins grows with the data. Use equal-width or equal-mass bins."
            )


def _positions(batch) -> np.ndarray:
    # an engine's batch may hold rows of non-consecutive positions: it gives each row's
    rows = getattr(batch, "positions", None)
    if rows is not None:
        return rows
    return batch.position + np.arange(batch.preds.n_samples, dtype=np.int64)


def _weights(batch):
    """A batch's row weights (None without a weight column)."""
    return getattr(batch, "weights", None)


class _Lanes:
    """The passes over a stream, dispatching each batch's rows to the lanes they belong to.

    ``route(batch)`` yields ``(lane id, preds, positions, weights)``; a lane is created for
    an id met in the first pass; an id first met in a later pass means the data changed.

    Each pass is a phase of :mod:`calcore.statistics.engine`: read here batch by batch
    (:meth:`_read`), or, when the stream has an ``engine`` (e.g. a Spark source), run by
    that engine (``engine.run_pass(lanes, phase)``: :func:`pass_job` to its tasks,
    :func:`partition_states` in each, :func:`merge_pass` on the driver).
    """

    slicer = None  # stream_statistics_by: the BatchSlicer of the lanes' ids
    overall = None  # and the id of the lane of every row (None: the slices merged)

    def __init__(
        self,
        stream,
        requests,
        kde,
        bootstrap,
        redraws,
        progress,
        redraw_keys=None,
        *,
        double=False,
        proper_scores=True,
    ):
        self.stream, self.progress = stream, progress
        self.names = tuple(stream.class_names)
        self.requests, self.kde = requests, tuple(kde)
        self.bootstrap, self.redraws, self.redraw_keys = bootstrap, redraws, redraw_keys
        self.double, self.proper_scores = double, proper_scores
        self.lanes: dict = {}
        self.passes = 0
        self.state_bytes = 0

    @property
    def _starting(self) -> dict:
        return {"double": self.double, "proper_scores": self.proper_scores}

    def _lane(self, key):
        lane = self.lanes.get(key)
        if lane is None:
            if self.passes > 0:
                raise CalcoreError(
                    f"{getattr(self.stream, 'name', 'the stream')}: a slice appeared in a later "
                    "pass over the data that was not there in the first: the data changed while "
                    "it was read. Nothing was computed; run again on data that stays put."
                )
            lane = self.lanes[key] = _Lane(self.names, self.requests, self.kde)
        return lane

    def _read(self, route, phase: str) -> None:
        """Fold one phase over the stream's batches (the embedded loop)."""
        buffers = (WeightsBuffer(), WeightsBuffer())  # the lanes take batches in turn
        for batch in self.stream.batches():
            if self.progress is not None:
                self.progress(batch)
            for key, preds, rows, w in route(batch):
                lane = self._lane(key)
                if phase == "accumulate" and lane.stats is None:
                    lane.plan()  # a lane created in this pass (one-pass statistics)
                    self._start(lane)
                engine.fold(phase, lane, preds, rows, w, buffers)

    def _pass(self, route, phase: str) -> None:
        runner = getattr(self.stream, "engine", None)
        if runner is None:
            self._read(route, phase)
        else:
            runner.run_pass(self, phase)
        self.passes += 1

    def run(self, route) -> None:
        profile = bool(self.kde) or any(not r.fixed for r in self.requests.values())
        if profile:
            self._pass(route, "profile")
            for lane in self.lanes.values():
                lane.plan()
        while any(lane.wants_pass() for lane in self.lanes.values()):
            self._pass(route, "select")
            for lane in self.lanes.values():
                lane.end_select()
        for lane in self.lanes.values():
            self._start(lane)
        self._pass(route, "accumulate")

    def _start(self, lane) -> None:
        """Start a lane's statistics, within the memory budget of all lanes' sums."""
        from calcore.foundation.limits import BUDGET_ENV, resolve_budget

        lane.start(self.bootstrap, self.redraws, self.redraw_keys, **self._starting)
        self.state_bytes += _nbytes(lane)
        budget = resolve_budget(None)
        if self.state_bytes > budget and len(self.lanes) > 1:
            raise CalcoreError(
                f"{getattr(self.stream, 'name', 'the stream')}: {len(self.lanes):,} slices so far "
                f"keep {self.state_bytes / 2**20:,.0f} MiB of sums (bootstrap replicates and "
                f"redrawn label sets included), over the {budget / 2**20:,.0f} MiB budget "
                f"(${BUDGET_ENV}). Slice by fewer values, ask for fewer metrics (a KDE-ECE keeps a "
                "kernel grid per slice) or resamples, or raise the budget."
            )

    def result(self, key) -> "StreamedStatistics":
        if key not in self.lanes:  # no rows at all
            lane = _Lane(self.names, self.requests, self.kde)
            lane.plan()
            lane.start(self.bootstrap, self.redraws, self.redraw_keys, **self._starting)
            return lane.result()
        return self.lanes[key].result()

    def merged(self, keys) -> "StreamedStatistics":
        """The statistics of the lanes ``keys`` together (their cells are the same)."""
        lanes = [self.lanes[k] for k in keys]
        first = lanes[0]
        stats, boot, redrawn, boot2 = first.stats, first.boot, first.redrawn, first.boot2
        for lane in lanes[1:]:
            stats = stats.merge(lane.stats)
            boot = None if boot is None else boot.merge(lane.boot)
            redrawn = None if redrawn is None else redrawn.merge(lane.redrawn)
            boot2 = None if boot2 is None else boot2.merge(lane.boot2)
        return _Lane.finished(stats, boot, redrawn, boot2)


class _Lane:
    """The state of the passes for one set of rows: group sizes and score moments (profile),
    order statistics (selection), then the statistics themselves."""

    def __init__(self, names, requests, kde):
        self.names, self.requests, self.kde = names, requests, kde
        self.n_classes = n_classes = len(names)
        # Rank-based bins share one finder per reduction over all its points (a request
        # with a score cut, TACE's, asks for its ranks shifted by the weight below the
        # cut); its first selection pass (top 16 bits) runs with the profile.
        self.finders = {
            r.reduction: ExactRanks(n_groups=_n_groups(r.reduction, n_classes))
            for r in requests.values()
            if r.scheme.kind in _RANK_BASED
        }
        self.sizes = {
            k: np.zeros(_n_groups(r.reduction, n_classes))
            for k, r in requests.items()
            if not r.fixed
        }
        for red in self.finders:
            self.sizes[_ALL, red] = np.zeros(_n_groups(red, n_classes))
        self.moments = {
            "kde_ece": [ScoreMoments()],
            "kde_ece_classwise": [ScoreMoments()] * n_classes,
        }
        # every batch binary with column 0 exactly 1 - column 1: the class-wise KDE keeps
        # class 1 alone, as in memory (calcore.evaluation.report_statistics.report_kde_specs)
        self.complementary = n_classes == 2
        self.layout: dict = {}  # request -> (bins per group, [(group, slice of its ranks)])
        self.edges: dict = {}
        self.stats = self.boot = self.redrawn = self.boot2 = None

    def profile(self, preds, w) -> None:
        """Group sizes of the data-dependent requests (and of all points of the reductions
        with rank-based bins) and score moments of the KDE problems; the finders count
        their first 16 bits on the way."""
        requests, n_classes = self.requests, self.n_classes
        for key in self.sizes:
            red = key[1] if isinstance(key, tuple) else requests[key].reduction
            cut = None if isinstance(key, tuple) else requests[key].min_score
            self.sizes[key] += _group_sizes(preds, red, w, cut, self.sizes[key].size)
        for red, finder in self.finders.items():
            _observe(finder, preds, red, w)
        if "kde_ece" in self.kde:
            step = ScoreMoments.of(preds.confidence, w)
            self.moments["kde_ece"][0] = self.moments["kde_ece"][0].merge(step)
        if "kde_ece_classwise" in self.kde:
            per = self.moments["kde_ece_classwise"]
            for c in range(n_classes):
                per[c] = per[c].merge(ScoreMoments.of(preds.probs[:, c], w))
            self.complementary = self.complementary and complementary_binary(preds.probs)

    def plan(self) -> None:
        """Edges of the fixed and equal-width requests; the ranks the others want."""
        wanted: dict = {red: [[] for _ in range(f.n_groups)] for red, f in self.finders.items()}
        for key, req in self.requests.items():
            g = _n_groups(req.reduction, self.n_classes)
            if req.fixed:
                self.edges[key] = BinEdges(
                    req.scheme, np.full(g, int(req.scheme.bins), dtype=np.int64)
                )
                continue
            nb = bins_per_group(req.scheme, self.sizes[key])
            if req.scheme.kind == "equal-width":
                self.edges[key] = BinEdges(req.scheme, nb, None, req.min_score)
                continue
            below = self.sizes[_ALL, req.reduction] - self.sizes[key]  # weight under the cut
            places = []
            for group, (b, m) in enumerate(zip(nb, self.sizes[key], strict=True)):
                # R_k = floor(k m / B), m the group's total weight (its size for unit
                # weights); R_k = 0 stays 0 (a threshold of -inf), others move past the cut.
                ranks = equal_mass_ranks(m, b)
                shifted = np.where(ranks > 0, ranks + below[group], 0.0)
                start = sum(r.size for r in wanted[req.reduction][group])
                wanted[req.reduction][group].append(shifted)
                places.append((group, slice(start, start + shifted.size)))
            self.layout[key] = (nb, places)
        for red, finder in self.finders.items():
            finder.set_ranks([np.concatenate(r) if r else np.empty(0) for r in wanted[red]])
            finder.end_pass()

    def wants_pass(self) -> bool:
        return any(f.wants_pass() for f in self.finders.values())

    def select(self, preds, w) -> None:
        for red, finder in self.finders.items():
            if finder.wants_pass():
                _observe(finder, preds, red, w)

    def end_select(self) -> None:
        for finder in self.finders.values():
            if finder.wants_pass():
                finder.end_pass()

    def start(
        self, bootstrap, redraws, redraw_keys=None, *, double=False, proper_scores=True
    ) -> None:
        """Empty statistics on the final cells and KDE bandwidths (``double``: also the
        double bootstrap's binned cells; ``proper_scores``: with the NLL and Brier sums)."""
        for key, (nb, places) in self.layout.items():
            req = self.requests[key]
            values = self.finders[req.reduction].values()
            flat = [values[group][where] for group, where in places]
            flat = np.concatenate(flat) if flat else np.empty(0)
            self.edges[key] = BinEdges(req.scheme, nb, flat, req.min_score)
        specs = {k: CellSpec(r.reduction, self.edges[k]) for k, r in self.requests.items()}
        kde_specs = {}
        if "kde_ece" in self.kde:
            kde_specs["kde_ece"] = KDESpec("confidence", (_layout(self.moments["kde_ece"][0]),))
        if "kde_ece_classwise" in self.kde and self.complementary:
            one = self.moments["kde_ece_classwise"][1]
            kde_specs["kde_ece_classwise"] = KDESpec("class-wise", (_layout(one),), np.array([1]))
        elif "kde_ece_classwise" in self.kde:
            kde_specs["kde_ece_classwise"] = KDESpec(
                "class-wise", tuple(_layout(m) for m in self.moments["kde_ece_classwise"])
            )
        self.stats = CalibrationStatistics.empty(
            self.names, specs, kde_specs, proper_scores=proper_scores
        )
        if bootstrap is not None:
            self.n_replicates, self.boot_seed = bootstrap
            self.boot = CalibrationStatistics.empty(
                self.names,
                specs,
                kde_specs,
                replicates=self.n_replicates,
                proper_scores=proper_scores,
            )
            if double:
                self.boot2 = CalibrationStatistics.empty(
                    self.names, specs, {}, replicates=self.n_replicates, proper_scores=False
                )
        if redraws is not None:
            n_redraws, seed = redraws
            if redraw_keys is not None:
                specs = {k: v for k, v in specs.items() if k in redraw_keys}
                kde_specs = {k: v for k, v in kde_specs.items() if k in redraw_keys}
            self.redrawn = LabelRedraws(
                self.names, specs, kde_specs, redraws=range(n_redraws), seed=seed
            )

    def accumulate(self, preds, rows, w, buffers) -> None:
        """Add a batch (``buffers``: two :class:`WeightsBuffer`, the stream's, for the
        bootstrap weights of the two levels)."""
        self.stats.update(preds, weights=w)
        if self.boot is not None:
            replicate_weights = poisson_weights(
                rows, self.n_replicates, self.boot_seed, buffer=buffers[0]
            )
            twice = None
            if self.boot2 is not None:  # a resample of each resample, drawn from the first
                twice = poisson_weights(
                    rows,
                    self.n_replicates,
                    self.boot_seed,
                    of=replicate_weights,
                    buffer=buffers[1],
                )
            for stats, weights in ((self.boot, replicate_weights), (self.boot2, twice)):
                if stats is not None:
                    if w is not None:
                        weights *= w
                    stats.update(preds, weights=weights)
        if self.redrawn is not None and preds.normalized:
            self.redrawn.update(preds, rows, w)

    def result(self) -> "StreamedStatistics":
        return self.finished(self.stats, self.boot, self.redrawn, self.boot2)

    @staticmethod
    def finished(stats, boot, redrawn, boot2=None) -> "StreamedStatistics":
        if redrawn is not None:
            # a label is drawn from a distribution: unnormalised rows leave no test
            redrawn = redrawn.statistics(stats) if stats.normalized else None
        return StreamedStatistics(stats, boot, redrawn, boot2)


def _layout(m: ScoreMoments) -> KDELayout:
    return KDELayout.for_bandwidth(m.bandwidth())


_RANK_BASED = ("equal-mass", "points-per-bin")
_ALL = "all points"  # sizes[_ALL, reduction]: every point of a reduction, per group


def _observe(finder: ExactRanks, batch, reduction: str, w) -> None:
    """A batch's points of one reduction into a rank finder; class-wise, the (m, L) scores
    with their groups and row weights broadcast (no flattened copy of either)."""
    if reduction == "class-wise":
        classes = np.arange(batch.probs.shape[1])[None, :]
        finder.observe(batch.probs, classes, None if w is None else w[:, None])
        return
    scores, groups = _points(batch, reduction)
    finder.observe(scores, groups, w)


def _group_sizes(batch, reduction: str, w, cut, n_groups: int) -> np.ndarray:
    """Weight (count, unweighted) of a batch's points in each group of a reduction, those
    scored below ``cut`` left out."""
    if reduction == "class-wise":
        probs = batch.probs
        if cut is None:
            return np.full(n_groups, float(probs.shape[0] if w is None else w.sum()))
        if w is None:
            return probs.shape[0] - points_below(probs, cut)
        return w @ (probs >= cut)
    scores, groups = _points(batch, reduction)
    if cut is not None:
        keep = scores >= cut
        scores = scores[keep]
        groups = None if groups is None else groups[keep]
        w = None if w is None else w[keep]
    if groups is None:
        return np.array([scores.size if w is None else w.sum()], dtype=np.float64)
    return np.bincount(groups, weights=w, minlength=n_groups)


# ------------------------------------------------------------------ engines' passes
def pass_job(lanes: _Lanes, phase: str) -> dict:
    """What a task needs to fold ``phase`` over its part of the rows, as flat arrays.

    The settings (classes, requests, KDE problems, resamples) and the routing (the slices'
    specs, decided kinds, quantile cuts and the slices met so far, in id order) are one
    JSON text (``"job/spec"``); each lane's plan (:func:`calcore.statistics.engine.lane_plan`)
    is arrays under ``"lane/<i>/"``. Nothing is pickled: :func:`calcore.statistics.engine.pack`
    writes it.
    """
    spec = {
        "phase": phase,
        "passes": lanes.passes,
        "names": list(lanes.names),
        "requests": [
            [key, r.reduction, r.scheme.kind, r.scheme.bins, r.min_score]
            for key, r in lanes.requests.items()
        ],
        "kde": list(lanes.kde),
        "bootstrap": None if lanes.bootstrap is None else list(lanes.bootstrap),
        "redraws": None if lanes.redraws is None else list(lanes.redraws),
        "redraw_keys": None if lanes.redraw_keys is None else sorted(lanes.redraw_keys),
        "double": bool(lanes.double),
        "proper_scores": bool(lanes.proper_scores),
        "lanes": [int(k) for k in lanes.lanes],
        "slicer": None if lanes.slicer is None else lanes.slicer.plan(),
        "overall": lanes.overall,
        "name": getattr(lanes.stream, "name", "the stream"),
    }
    out = {"job/spec": np.array(json.dumps(spec, allow_nan=False))}
    for i, lane in enumerate(lanes.lanes.values()):
        for name, value in engine.lane_plan(phase, lane).items():
            out[f"lane/{i}/{name}"] = value
    return out


def started_lane(lanes: _Lanes) -> "_Lane":
    """A lane of ``lanes``'s settings planned and started as the driver starts one before
    its first rows (what one task's state is made of, to bound its size before a job)."""
    lane = _Lane(lanes.names, lanes.requests, lanes.kde)
    lane.plan()
    lane.start(lanes.bootstrap, lanes.redraws, lanes.redraw_keys, **lanes._starting)
    return lane


def job_lanes(job: dict, batches=()) -> tuple:
    """A task's lanes for one phase of a job (:func:`pass_job`): the driver's lanes as
    planned (plan restored, accumulating statistics started), its slicer and settings.

    Returns
    -------
    lanes : _Lanes
        Over ``batches`` (none to merge states only: :func:`merge_pass` into them).
    phase : str
    slicer : BatchSlicer or None
    """
    from calcore.predictions.slicing_batches import BatchSlicer

    spec = json.loads(str(job["job/spec"]))
    phase = spec["phase"]
    requests = {
        key: CellRequest(red, BinningScheme(kind, bins), cut)
        for key, red, kind, bins, cut in spec["requests"]
    }
    names = tuple(spec["names"])
    stream = SimpleNamespace(class_names=names, batches=lambda: iter(batches), name=spec["name"])
    lanes = _Lanes(
        stream,
        requests,
        tuple(spec["kde"]),
        None if spec["bootstrap"] is None else tuple(spec["bootstrap"]),
        None if spec["redraws"] is None else tuple(spec["redraws"]),
        None,
        None if spec["redraw_keys"] is None else set(spec["redraw_keys"]),
        double=spec["double"],
        proper_scores=spec["proper_scores"],
    )
    for i, key in enumerate(spec["lanes"]):
        lane = lanes.lanes[key] = _Lane(names, requests, lanes.kde)
        prefix = f"lane/{i}/"
        plan = {k[len(prefix) :]: v for k, v in job.items() if k.startswith(prefix)}
        engine.restore_plan(phase, lane, plan)
        if phase == "accumulate":
            lanes._start(lane)
    lanes.passes = spec["passes"]
    slicer = None
    if spec["slicer"] is not None:
        slicer = BatchSlicer.from_plan(spec["slicer"])
        lanes.slicer, lanes.overall = slicer, spec["overall"]
    return lanes, phase, slicer


def lanes_states(lanes, phase: str, slicer) -> list:
    """``(lane id, slice entry or None, state arrays)`` of every lane that saw rows (or,
    before the accumulating pass, was planned), in lane order."""
    states = []
    for key, lane in lanes.lanes.items():
        if phase == "accumulate" and lane.stats.n_rows == 0:
            continue  # a planned slice without rows here: zero sums, nothing to send
        entry = None if slicer is None or key < 0 else slicer.entry(key)
        states.append((key, entry, engine.lane_state(phase, lane)))
    return states


def partition_states(job: dict, batches) -> tuple[list, list | None]:
    """Fold one phase of a job (:func:`pass_job`) over a part of the rows, in a task.

    Parameters
    ----------
    job : dict of str to ndarray
        :func:`pass_job`'s arrays (header checked by the caller).
    batches : iterable
        The part's batches in position order, each with ``preds`` (``sample_weight`` for
        weights), ``positions`` (each row's position), ``position`` (the first's),
        ``file`` and ``first_row`` (messages) and, to slice, ``slice_values``.

    Returns
    -------
    states : list of (int, tuple or None, dict)
        ``(lane id, slice entry or None, state arrays)`` of every lane that saw rows or
        was planned, in lane order.
    kinds : list or None
        The slice columns' kinds as this part decided them (None without slices).
    """
    lanes, phase, slicer = job_lanes(job, batches)
    route = _whole_route if slicer is None else _slice_route(slicer, lanes.overall)
    lanes._read(route, phase)
    return lanes_states(lanes, phase, slicer), None if slicer is None else slicer.kinds()


def _whole_route(batch):
    return ((0, batch.preds, _positions(batch), _weights(batch)),)


def merge_pass(lanes: _Lanes, phase: str, parts) -> None:
    """Merge the tasks' states of one phase into the driver's lanes.

    Parameters
    ----------
    lanes : _Lanes
    phase : str
    parts : iterable of (where, states, kinds)
        Each part's :func:`partition_states`, **in the order of the parts' first row
        positions** (float sums then add in one order, whatever the tasks' timing);
        ``where`` names the part in messages (e.g. ``"rows from position 2,000"``).

    Raises
    ------
    CalcoreError
        A slice column whose values read as another kind in a part, too many slices, or
        a slice that appears in a later pass only (the data changed).
    """
    for where, states, kinds in parts:
        origin = SimpleNamespace(file=getattr(lanes.stream, "name", "the stream"), first_row=where)
        if lanes.slicer is not None and kinds is not None:
            lanes.slicer.adopt_kinds(kinds, origin)
        for key, entry, state in states:
            if lanes.slicer is not None and key >= 0:
                key = lanes.slicer.id_of(tuple(tuple(part) for part in entry), origin)
            lane = lanes._lane(key)
            if phase == "accumulate" and lane.stats is None:  # one-pass: planned here
                lane.plan()
                lanes._start(lane)
            engine.merge_state(phase, lane, state)
