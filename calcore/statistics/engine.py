"""The statistics engine's contract: the passes as phases, and the state between processes.

:mod:`calcore.statistics.passes` reads a stream as often as its bins need (a profile
pass, selection passes for exact equal-mass edges, the accumulating pass). Each pass is
one **phase**, and every phase of every lane (the rows of a slice, or all rows) has the
same four steps, whatever runs them:

=========  ===============================================================================
init       a lane starts the pass from the **plan**: what the driver decided after the
           last pass (nothing before the profile; the rank finders' searched prefixes
           before a selection pass; the final bin edges and the KDE score moments, hence
           bandwidths, before the accumulating pass): :func:`lane_plan`,
           :func:`restore_plan`;
fold       a batch of rows is added to the lane's state: :func:`fold`;
merge      the states of two sets of rows add up: :func:`lane_state` exports a lane's,
           :func:`merge_state` adds one into a lane;
finish     the driver closes the pass (``_Lane.plan``, ``end_select``, the statistics).
=========  ===============================================================================

The embedded loop (:func:`~calcore.statistics.passes.stream_statistics` and ``_by``)
calls these on one process; an engine such as Spark (:mod:`calcore.spark`) runs the
*fold* of a pass in each task over its partition
(:func:`calcore.statistics.passes.partition_states`) and *merges* the tasks' states on
the driver. There is one implementation of each phase.

Decisions
---------
* **The state is flat arrays, never a pickle.** A state is a ``dict[str, numpy.ndarray]``
  of sums (cell sums, scalar sums, label weights, replicate axes, KDE moments, rank-finder
  codes and counts) named by path (``"stats/cells/ece/weight"``), plus a header
  (:data:`STATE_VERSION`, ``calcore.__version__``). :func:`pack` writes it with
  ``numpy.savez`` (``allow_pickle=False`` to read). Caches (the rank finder's 1 MB look-up
  table, a KDE layout's cuts, a Predictions' argmax) never travel: they are rebuilt from
  the plan.
* **A state is read only by the same calcore.** :func:`unpack` refuses a state of another
  :data:`STATE_VERSION` or calcore version (the sums' meaning may differ between versions);
  executors also check their calcore against the driver's before they fold.
* **The plan travels with the task**, as flat arrays too; the driver keeps what decides
  the next pass (the wanted ranks, the finders' results).
* **Merge order.** Float sums depend, in their last bits, on the order they are added:
  a driver merges parts in the order of their first row's position, so a result does not
  depend on which task finished first.
"""

from __future__ import annotations

import io
import sys

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.exact_ranks import ExactRanks
from calcore.statistics.accumulator import CalibrationStatistics
from calcore.statistics.edges import BinEdges
from calcore.statistics.kde_cells import KDESums, ScoreMoments
from calcore.statistics.redraws import LabelRedraws

__all__ = [
    "STATE_VERSION",
    "PHASES",
    "StateVersionError",
    "fold",
    "lane_plan",
    "restore_plan",
    "lane_state",
    "merge_state",
    "statistics_arrays",
    "statistics_from_arrays",
    "redraws_arrays",
    "redraws_from_arrays",
    "with_header",
    "check_header",
    "pack",
    "unpack",
]

#: Version of the state format (the names and meaning of the arrays). Bumped whenever
#: either changes; a state of another version is refused (:func:`check_header`).
STATE_VERSION = 1

#: The passes, in the order they run (``select`` runs zero or more times).
PHASES = ("profile", "select", "accumulate")

_VERSION_KEY = "header/state_version"
_CALCORE_KEY = "header/calcore"


class StateVersionError(CalcoreError):
    """A state (or plan) made by another calcore or state-format version."""


def _version() -> str:
    # the package's version, read from the package already loaded (this module is part of
    # it): the statistics layer does not import the package's public map
    return sys.modules["calcore"].__version__


# ----------------------------------------------------------------------------- phases
def fold(phase: str, lane, preds, rows, w, buffers) -> None:
    """Add one batch of a lane's rows in ``phase`` (the embedded loop and every engine's
    tasks call this, and only this, per batch).

    Parameters
    ----------
    phase : {"profile", "select", "accumulate"}
    lane : calcore.statistics.passes._Lane
    preds : Predictions
    rows : ndarray of int64
        Each row's position in the whole source (Poisson weights and redrawn labels).
    w : ndarray or None
        Row weights.
    buffers : tuple of two WeightsBuffer
        Scratch space of the Poisson weights (accumulate only).
    """
    if phase == "profile":
        lane.profile(preds, w)
    elif phase == "select":
        if lane.wants_pass():
            lane.select(preds, w)
    elif phase == "accumulate":
        lane.accumulate(preds, rows, w, buffers)
    else:
        raise ValueError(f"unknown phase {phase!r} (one of {PHASES})")


def _moments_array(moments: list) -> np.ndarray:
    return np.array([[m.weight, m.mean, m.m2] for m in moments], dtype=np.float64).reshape(-1, 3)


def _moments_list(array) -> list:
    return [ScoreMoments(float(a), float(b), float(c)) for a, b, c in np.asarray(array)]


def lane_plan(phase: str, lane) -> dict:
    """What a task needs to fold ``phase`` for ``lane``, as flat arrays (the driver's
    decisions after the previous pass).

    ``profile``: nothing. ``select``: each rank finder's searched prefixes
    (:meth:`ExactRanks.targets`). ``accumulate``: every request's final bin edges (bins
    per group, thresholds) and the KDE problems' score moments (the bandwidths follow
    from them exactly) and whether the class-wise KDE keeps class 1 alone.
    """
    out: dict = {}
    if phase == "select":
        for i, finder in enumerate(lane.finders.values()):
            for name, value in finder.targets().items():
                out[f"finder/{i}/{name}"] = value
    elif phase == "accumulate":
        for key, edges in lane.edges.items():
            out[f"edges/{key}/bins"] = np.asarray(edges.bins_per_group, dtype=np.int64)
            if edges.thresholds is not None:
                out[f"edges/{key}/thresholds"] = np.asarray(edges.thresholds, dtype=np.float64)
        for key, moments in lane.moments.items():
            out[f"moments/{key}"] = _moments_array(moments)
        out["complementary"] = np.array(bool(lane.complementary))
    return out


def restore_plan(phase: str, lane, plan: dict) -> None:
    """Set a fresh lane (in a task) to fold ``phase`` as the driver planned it
    (:func:`lane_plan`). After ``accumulate``'s, the caller starts the lane's
    statistics (``_Lanes._start``), which reads the edges and bandwidths set here."""
    if phase == "select":
        for i, (red, finder) in enumerate(list(lane.finders.items())):
            prefix = f"finder/{i}/"
            sub = {k[len(prefix) :]: v for k, v in plan.items() if k.startswith(prefix)}
            lane.finders[red] = ExactRanks.with_targets(finder.n_groups, sub)
    elif phase == "accumulate":
        lane.layout = {}
        lane.edges = {}
        for key, req in lane.requests.items():
            thresholds = plan.get(f"edges/{key}/thresholds")
            lane.edges[key] = BinEdges(
                req.scheme,
                np.asarray(plan[f"edges/{key}/bins"], dtype=np.int64),
                None if thresholds is None else np.asarray(thresholds, dtype=np.float64),
                req.min_score,
            )
        for key in lane.moments:
            lane.moments[key] = _moments_list(plan[f"moments/{key}"])
        lane.complementary = bool(plan["complementary"])


def lane_state(phase: str, lane) -> dict:
    """A lane's state after folding ``phase`` over some rows, as flat arrays.

    ``profile``: group sizes, the rank finders' first-pass counts, the KDE score moments,
    whether every batch was complementary binary. ``select``: the finders' counts of the
    pass. ``accumulate``: the statistics, bootstrap replicates, double-bootstrap cells and
    redrawn label sums (:func:`statistics_arrays`, :func:`redraws_arrays`).
    """
    out: dict = {}
    if phase in ("profile", "select"):
        for i, finder in enumerate(lane.finders.values()):
            if phase == "select" and not finder.wants_pass():
                continue
            keys, counts = finder.pass_counts()
            out[f"finder/{i}/keys"], out[f"finder/{i}/counts"] = keys, counts
    if phase == "profile":
        for i, sizes in enumerate(lane.sizes.values()):
            out[f"sizes/{i}"] = sizes
        for key, moments in lane.moments.items():
            out[f"moments/{key}"] = _moments_array(moments)
        out["complementary"] = np.array(bool(lane.complementary))
    if phase == "accumulate":
        out.update(statistics_arrays(lane.stats, "stats/"))
        if lane.boot is not None:
            out.update(statistics_arrays(lane.boot, "boot/"))
        if lane.boot2 is not None:
            out.update(statistics_arrays(lane.boot2, "boot2/"))
        if lane.redrawn is not None:
            out.update(redraws_arrays(lane.redrawn, "redrawn/"))
    return out


def merge_state(phase: str, lane, state: dict) -> None:
    """Add a state of ``phase`` (:func:`lane_state` of other rows) into ``lane``."""
    if phase in ("profile", "select"):
        for i, finder in enumerate(lane.finders.values()):
            if f"finder/{i}/keys" in state:
                finder.add_pass_counts(state[f"finder/{i}/keys"], state[f"finder/{i}/counts"])
    if phase == "profile":
        for i, key in enumerate(lane.sizes):
            lane.sizes[key] = lane.sizes[key] + state[f"sizes/{i}"]
        for key, moments in lane.moments.items():
            other = _moments_list(state[f"moments/{key}"])
            lane.moments[key] = [a.merge(b) for a, b in zip(moments, other, strict=True)]
        lane.complementary = lane.complementary and bool(state["complementary"])
    if phase == "accumulate":
        lane.stats = lane.stats.merge(statistics_from_arrays(lane.stats, state, "stats/"))
        if lane.boot is not None:
            lane.boot = lane.boot.merge(statistics_from_arrays(lane.boot, state, "boot/"))
        if lane.boot2 is not None:
            lane.boot2 = lane.boot2.merge(statistics_from_arrays(lane.boot2, state, "boot2/"))
        if lane.redrawn is not None:
            lane.redrawn = lane.redrawn.merge(redraws_from_arrays(lane.redrawn, state, "redrawn/"))


# ------------------------------------------------------------------- state format
def statistics_arrays(stats: CalibrationStatistics, prefix: str = "") -> dict:
    """The sums of :class:`CalibrationStatistics` as flat arrays (no specs: both sides
    build them from the same plan).

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics import CellSpec, edges_for
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 1])
    >>> spec = {"conf": CellSpec("confidence", edges_for(np.empty(0), bins=2))}
    >>> stats = CalibrationStatistics.empty(preds.class_names, spec)
    >>> stats.update(preds)
    >>> arrays = statistics_arrays(stats)
    >>> arrays["cells/conf/weight"].tolist(), int(arrays["n_rows"])
    ([0.0, 2.0], 2)
    >>> again = statistics_from_arrays(stats, arrays)
    >>> again.cells["conf"].outcome.tolist() == stats.cells["conf"].outcome.tolist()
    True
    """
    out = {
        f"{prefix}n_rows": np.array(stats.n_rows, dtype=np.int64),
        f"{prefix}weight": np.asarray(stats.weight, dtype=np.float64),
        f"{prefix}correct": np.asarray(stats.correct, dtype=np.float64),
        f"{prefix}nll": np.asarray(stats.nll, dtype=np.float64),
        f"{prefix}brier": np.asarray(stats.brier, dtype=np.float64),
        f"{prefix}label_weight": np.asarray(stats.label_weight, dtype=np.float64),
        f"{prefix}n_tied_rows": np.array(stats.n_tied_rows, dtype=np.int64),
        f"{prefix}normalized": np.array(bool(stats.normalized)),
        f"{prefix}proper_scores": np.array(bool(stats.proper_scores)),
    }
    for key, cells in stats.cells.items():
        for name in ("weight", "score", "outcome", "low", "high"):
            value = getattr(cells, name)
            if value is not None:
                out[f"{prefix}cells/{key}/{name}"] = value
    for key, problems in stats.kde.items():
        for i, sums in enumerate(problems):
            at = f"{prefix}kde/{key}/{i}/"
            out[at + "moments"] = sums.moments
            if sums.cells is not None:
                out[at + "cells"] = np.asarray(sums.cells, dtype=np.int64)
            if sums.shared_all is not None:
                out[at + "shared_all"] = sums.shared_all
    return out


def statistics_from_arrays(
    template: CalibrationStatistics, arrays: dict, prefix: str = ""
) -> CalibrationStatistics:
    """:class:`CalibrationStatistics` on ``template``'s cells, KDE problems and replicates
    holding the sums of ``arrays`` (:func:`statistics_arrays`)."""
    from calcore.statistics.cells import CellSums

    def get(name):
        return arrays[prefix + name]

    def scalar_or_array(name):
        value = np.asarray(get(name), dtype=np.float64)
        return float(value) if value.ndim == 0 else value

    cells = {}
    for key in template.cells:
        at = f"{prefix}cells/{key}/"
        cells[key] = CellSums(
            np.asarray(arrays[at + "weight"]),
            np.asarray(arrays[at + "score"]),
            np.asarray(arrays[at + "outcome"]),
            arrays.get(at + "low"),
            arrays.get(at + "high"),
        )
    kde = {}
    for key, problems in template.kde.items():
        kde[key] = []
        for i in range(len(problems)):
            at = f"{prefix}kde/{key}/{i}/"
            found = arrays.get(at + "cells")
            kde[key].append(
                KDESums(
                    np.asarray(arrays[at + "moments"]),
                    None if found is None else np.asarray(found, dtype=np.intp),
                    arrays.get(at + "shared_all"),
                )
            )
    return CalibrationStatistics(
        template.class_names,
        template.specs,
        cells,
        int(get("n_rows")),
        scalar_or_array("weight"),
        scalar_or_array("correct"),
        scalar_or_array("nll"),
        scalar_or_array("brier"),
        np.asarray(get("label_weight"), dtype=np.float64),
        int(get("n_tied_rows")),
        bool(get("normalized")),
        template.kde_specs,
        kde,
        bool(get("proper_scores")),
    )


def redraws_arrays(redraws: LabelRedraws, prefix: str = "") -> dict:
    """The label-dependent sums of :class:`LabelRedraws` as flat arrays."""
    out = {
        f"{prefix}correct": redraws.correct,
        f"{prefix}label_weight": redraws.label_weight,
        f"{prefix}n_rows": np.array(redraws.n_rows, dtype=np.int64),
    }
    for key, outcome in redraws.outcome.items():
        out[f"{prefix}outcome/{key}"] = outcome
    for key, problems in redraws.positives.items():
        for i, (moments, cells) in enumerate(problems):
            out[f"{prefix}positives/{key}/{i}/moments"] = moments
            out[f"{prefix}positives/{key}/{i}/cells"] = np.asarray(cells, dtype=np.int64)
    return out


def redraws_from_arrays(template: LabelRedraws, arrays: dict, prefix: str = "") -> LabelRedraws:
    """:class:`LabelRedraws` of ``template``'s cells, redraws and seed holding the sums of
    ``arrays`` (:func:`redraws_arrays`)."""
    out = LabelRedraws(
        template.class_names,
        template.specs,
        template.kde_specs,
        redraws=template.redraws,
        seed=template.seed,
    )
    out.correct = np.asarray(arrays[prefix + "correct"], dtype=np.float64)
    out.label_weight = np.asarray(arrays[prefix + "label_weight"], dtype=np.float64)
    out.n_rows = int(arrays[prefix + "n_rows"])
    out.outcome = {k: np.asarray(arrays[f"{prefix}outcome/{k}"]) for k in template.outcome}
    out.positives = {
        k: [
            (
                np.asarray(arrays[f"{prefix}positives/{k}/{i}/moments"]),
                np.asarray(arrays[f"{prefix}positives/{k}/{i}/cells"], dtype=np.intp),
            )
            for i in range(len(problems))
        ]
        for k, problems in template.positives.items()
    }
    return out


def with_header(arrays: dict) -> dict:
    """``arrays`` with the version header (:data:`STATE_VERSION`, ``calcore.__version__``)."""
    return {
        _VERSION_KEY: np.array(STATE_VERSION, dtype=np.int64),
        _CALCORE_KEY: np.array(_version()),
        **arrays,
    }


def check_header(arrays: dict, *, where: str = "a state") -> dict:
    """``arrays`` without their header, once it is checked.

    Raises
    ------
    StateVersionError
        No header, or another state version or calcore version than this process's.
    """
    if _VERSION_KEY not in arrays or _CALCORE_KEY not in arrays:
        raise StateVersionError(
            f"{where} has no calcore state header: it was not made by calcore's engine "
            f"(state format {STATE_VERSION})."
        )
    version, made_by = int(arrays[_VERSION_KEY]), str(arrays[_CALCORE_KEY])
    if version != STATE_VERSION or made_by != _version():
        raise StateVersionError(
            f"{where} was made by calcore {made_by} (state format {version}); this is calcore "
            f"{_version()} (state format {STATE_VERSION}). Sums are merged only between the "
            f"same calcore version: install calcore {_version()} everywhere (driver and "
            "workers) and run again."
        )
    return {k: v for k, v in arrays.items() if not k.startswith("header/")}


def pack(arrays: dict) -> bytes:
    """``arrays`` with their header as the bytes of an ``.npz`` archive (no pickle).

    Examples
    --------
    >>> state = {"stats/weight": np.array(3.0), "stats/cells/ece/weight": np.arange(2.0)}
    >>> sorted(unpack(pack(state)))
    ['stats/cells/ece/weight', 'stats/weight']
    """
    buffer = io.BytesIO()
    np.savez(buffer, **with_header(arrays))
    return buffer.getvalue()


def unpack(data: bytes, *, where: str = "a state") -> dict:
    """The arrays of :func:`pack`'s bytes, header checked (:func:`check_header`).

    Raises
    ------
    StateVersionError
        Another state or calcore version.
    CalcoreError
        Bytes that are not an archive of plain arrays.
    """
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (ValueError, OSError) as exc:
        raise CalcoreError(f"{where} cannot be read as calcore state arrays: {exc}") from None
    return check_header(arrays, where=where)
