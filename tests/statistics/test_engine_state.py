"""The statistics engine's contract (calcore.statistics.engine) without Spark: the state
is flat arrays with a version header, it round-trips, and folding parts of the rows in
separate "processes" (job packed, states packed) then merging equals the embedded passes."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import calcore
from calcore.predictions.slicing_batches import BatchSlicer
from calcore.statistics import CellRequest, engine, stream_statistics
from calcore.statistics.passes import merge_pass, partition_states, pass_job, stream_statistics_by


def _preds(n=3000, k=3, seed=0, weights=False):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1).clip(0, k - 1)
    preds = calcore.Predictions.from_probs(p, y)
    if weights:
        preds = preds.with_sample_weight(rng.integers(0, 4, n).astype(float))
    return preds


def _batches(preds, cuts, shop=None):
    out = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        rows = np.arange(a, b)
        part = preds.subset(rows)
        if preds.sample_weight is not None:
            part = part.with_sample_weight(preds.sample_weight[a:b])
        values = {} if shop is None else {"shop": shop[a:b]}
        out.append(
            SimpleNamespace(
                preds=part,
                position=a,
                slice_values=values,
                file="f",
                first_row=a,
                weights=part.sample_weight,
            )  # fmt: skip
        )
    return out


class _TwoProcesses:
    """An engine whose 'tasks' fold parts of the batches from packed jobs and return
    packed states, merged in the order of the parts' first positions."""

    def __init__(self, parts):
        self.parts = parts  # lists of batches
        self.jobs = 0

    def run_pass(self, lanes, phase):
        job = engine.pack(pass_job(lanes, phase))
        merged = []
        for part in reversed(self.parts):  # tasks finish in any order
            states, kinds = partition_states(engine.unpack(job), iter(part))
            wire = [(k, e, engine.unpack(engine.pack(s))) for k, e, s in states]
            merged.append((part[0].position, wire, kinds))
        merged.sort(key=lambda x: x[0])
        merge_pass(lanes, phase, [(f"position {p}", s, k) for p, s, k in merged])
        self.jobs += 1


def _requests():
    return {
        "ece": CellRequest("confidence", calcore.resolve_binning("equal-width", 10)),
        "em": CellRequest("top-label", calcore.resolve_binning("equal-mass", 8)),
        "ace": CellRequest("class-wise", calcore.resolve_binning("equal-mass", 5), 1e-3),
    }


def _close(a, b, tol=1e-12):
    a_arr = engine.statistics_arrays(a)
    b_arr = engine.statistics_arrays(b)
    assert a_arr.keys() == b_arr.keys()
    for key in a_arr:
        np.testing.assert_allclose(a_arr[key], b_arr[key], rtol=0, atol=tol, err_msg=key)


@pytest.mark.parametrize("weights", [False, True])
def test_two_processes_then_merge_equal_the_embedded_passes(weights):
    preds = _preds(weights=weights)
    batches = _batches(preds, [0, 700, 1500, 2200, 3000])
    names = preds.class_names
    options = dict(requests=_requests(), kde=("kde_ece", "kde_ece_classwise"),
                   bootstrap=(7, 3), redraws=(5, 3))  # fmt: skip
    embedded = stream_statistics(
        SimpleNamespace(class_names=names, batches=lambda: iter(batches)), **options
    )
    runner = _TwoProcesses([batches[:1], batches[1:3], batches[3:]])
    stream = SimpleNamespace(class_names=names, batches=None, engine=runner, name="two")
    split = stream_statistics(stream, **options)
    assert runner.jobs >= 3  # profile, selection(s), accumulate
    _close(embedded.statistics, split.statistics)
    _close(embedded.bootstrap, split.bootstrap)
    _close(embedded.redrawn, split.redrawn)
    for key in ("em", "ace"):  # exact edges: the same thresholds
        e, s = embedded.statistics.specs[key].edges, split.statistics.specs[key].edges
        assert np.array_equal(e.thresholds, s.thresholds)


def test_sliced_two_processes_equal_the_embedded_passes():
    preds = _preds(seed=4)
    rng = np.random.default_rng(1)
    shop = np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, preds.n_samples)]
    batches = _batches(preds, [0, 1000, 2000, 3000], shop)
    names = preds.class_names
    options = dict(requests=_requests(), kde=("kde_ece",), bootstrap=(4, 0), redraws=(3, 0))
    embedded = stream_statistics_by(
        SimpleNamespace(class_names=names, batches=lambda: iter(batches)),
        BatchSlicer("shop", ["shop"]),
        **options,
    )
    runner = _TwoProcesses([batches[:2], batches[2:]])
    stream = SimpleNamespace(class_names=names, batches=None, engine=runner, name="two")
    split = stream_statistics_by(stream, BatchSlicer("shop", ["shop"]), **options)
    assert split.slicing.labels == embedded.slicing.labels
    _close(embedded.overall.statistics, split.overall.statistics)
    for a, b in zip(embedded.slices, split.slices, strict=True):
        _close(a.statistics, b.statistics)
        _close(a.bootstrap, b.bootstrap)


def test_a_state_round_trips_through_flat_arrays_without_pickle():
    preds = _preds(n=500)
    stream = SimpleNamespace(
        class_names=preds.class_names, batches=lambda: iter(_batches(preds, [0, 500]))
    )
    out = stream_statistics(stream, requests=_requests(), kde=("kde_ece",), bootstrap=(3, 0))
    arrays = engine.statistics_arrays(out.bootstrap, "boot/")
    assert all(isinstance(v, np.ndarray) and v.dtype != object for v in arrays.values())
    data = engine.pack(arrays)
    back = engine.unpack(data)
    assert back.keys() == arrays.keys()
    again = engine.statistics_from_arrays(out.bootstrap, back, "boot/")
    _close(out.bootstrap, again, tol=0)
    assert np.array_equal(again.kde_ece("kde_ece"), out.bootstrap.kde_ece("kde_ece"))


def test_a_state_of_another_version_is_refused(monkeypatch):
    data = engine.pack({"stats/weight": np.array(1.0)})
    monkeypatch.setattr(engine, "_version", lambda: "0.0.0-other")
    with pytest.raises(engine.StateVersionError, match=r"calcore 0\.0\.0-other.*same calcore"):
        engine.unpack(data, where="a task's state")
    monkeypatch.undo()
    bumped = engine.with_header({})
    bumped["header/state_version"] = np.array(engine.STATE_VERSION + 1)
    with pytest.raises(engine.StateVersionError, match="state format"):
        engine.check_header(bumped)
    with pytest.raises(engine.StateVersionError, match="no calcore state header"):
        engine.check_header({"stats/weight": np.array(1.0)})
