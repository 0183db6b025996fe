"""The class-wise reduction of the statistics engine against the generic path and definitions.

``classwise_bin_statistics`` must equal ``view_bin_statistics(classwise_view(preds))``
(the generic path: build the n*L view, bin it by group) on every non-empty bin, for
every scheme, threshold and class subset. Both are also checked against a per-class
reference written here from the definitions (edges k/B as Python floats, rank bins
``[floor(k m/B), floor((k+1) m/B))`` with ties sent to their first member's bin).
"""

from __future__ import annotations

import numpy as np
import pytest

import calcore.statistics.points as engine_module
from calcore import Predictions
from calcore.predictions.reductions import classwise_view
from calcore.statistics.bin_statistics import (
    bin_statistics,
    classwise_bin_statistics,
    view_bin_statistics,
)

# --------------------------------------------------------------------------- references


def n_bins_for(bins, m):
    if bins == "sturges":
        return (m - 1).bit_length() + 1
    if bins == "cube-root":
        c = 1
        while c**3 < m:
            c += 1
        return c
    return bins


def ref_bins_one_class(s, binning, bins):
    """Within-class bin index of each score, from the definitions."""
    m = s.size
    if binning == "unique":
        return np.unique(s, return_inverse=True)[1]
    if binning == "equal-width":
        b = n_bins_for(bins, m)
        edges = np.array([k / b for k in range(b)])
        return np.searchsorted(edges, s, side="right") - 1
    b = max(1, m // bins) if binning == "points-per-bin" else n_bins_for(bins, m)
    order = np.argsort(s, kind="stable")
    sorted_s = s[order]
    first_rank = np.searchsorted(sorted_s, s, side="left")  # rank of the first equal score
    bounds = np.array([(k * m) // b for k in range(b + 1)])
    return np.searchsorted(bounds, first_rank, side="right") - 1


def ref_classwise(preds, binning, bins, classes=None, threshold=None):
    """{(class, bin index): (count, mean score, mean outcome)} over non-empty bins."""
    out = {}
    for c in range(preds.n_classes) if classes is None else classes:
        s = preds.probs[:, c]
        o = (preds.labels == c).astype(float)
        if threshold is not None:
            keep = s >= threshold
            s, o = s[keep], o[keep]
        if s.size == 0:
            continue
        idx = ref_bins_one_class(s, binning, bins)
        for b in np.unique(idx):
            sel = idx == b
            out[(int(c), int(b))] = (int(sel.sum()), s[sel].mean(), o[sel].mean())
    return out


def as_dict(stats):
    ok = stats.count > 0
    return {
        (int(g), int(b)): (int(n), ms, mo)
        for g, b, n, ms, mo in zip(
            stats.bin_group[ok],
            stats.bin_index[ok],
            stats.count[ok],
            stats.mean_score[ok],
            stats.mean_outcome[ok],
            strict=True,
        )
    }


def edges(stats):
    ok = stats.count > 0
    return {
        (int(g), int(b)): (lo, hi)
        for g, b, lo, hi in zip(
            stats.bin_group[ok],
            stats.bin_index[ok],
            stats.lower_edge[ok],
            stats.upper_edge[ok],
            strict=True,
        )
    }


def assert_same(got, want):
    assert got.keys() == want.keys()
    for key, (n, ms, mo) in want.items():
        gn, gms, gmo = got[key]
        assert gn == n, key
        assert gms == pytest.approx(ms, rel=1e-12, abs=1e-15), key
        assert gmo == pytest.approx(mo, rel=1e-12, abs=1e-15), key


def generic(preds, binning, bins, classes=None, threshold=None):
    """The generic path: the class-wise view, optionally filtered, binned by group."""
    v = classwise_view(preds, classes=classes)
    if threshold is None:
        return view_bin_statistics(v, binning=binning, bins=bins)
    keep = v.scores >= threshold
    return bin_statistics(
        v.scores[keep],
        v.outcomes[keep],
        v.groups[keep],
        n_groups=v.n_groups,
        binning=binning,
        bins=bins,
        n_rows=v.n_rows,
    )


def check(preds, binning, bins, classes=None, threshold=None, *, reference=True):
    fast = classwise_bin_statistics(
        preds, binning=binning, bins=bins, classes=classes, threshold=threshold
    )
    slow = generic(preds, binning, bins, classes, threshold)
    assert fast.view == "class-wise" and fast.n_rows == preds.n_samples
    assert fast.group_names == preds.class_names
    assert_same(as_dict(fast), as_dict(slow))
    if reference:
        assert_same(as_dict(fast), ref_classwise(preds, binning, bins, classes, threshold))
    # edges of non-empty bins agree too
    assert edges(fast) == edges(slow)
    return fast


# --------------------------------------------------------------------------- data


def dirichlet_preds(n, n_classes, seed, decimals=None, alpha=0.5):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n_classes, alpha), size=n)
    if decimals is not None:
        p = np.round(p, decimals)
        p[:, 0] = 0.0
        p[:, 0] = np.clip(1.0 - p.sum(axis=1), 0.0, None)
        p = p / p.sum(axis=1, keepdims=True)
    y = rng.integers(0, n_classes, n)
    return Predictions.from_probs(p, y)


def edge_preds(n_bins=22):
    """Scores exactly on the edges k/B (two classes: column 0 is k/B)."""
    k = np.tile(np.arange(n_bins + 1), 3)
    p0 = k / n_bins
    p = np.column_stack([p0, 1.0 - p0])
    y = (np.arange(k.size) % 3 == 0).astype(int)
    return Predictions.from_probs(p, y)


SMOOTH = dirichlet_preds(400, 6, seed=0)
TIED = dirichlet_preds(500, 4, seed=1, decimals=1)
EDGES = edge_preds()

SCHEMES = [
    ("equal-width", 15),
    ("equal-width", 22),
    ("equal-width", "sturges"),
    ("equal-width", "cube-root"),
    ("equal-mass", 10),
    ("equal-mass", 3),
    ("equal-mass", "sturges"),
    ("equal-mass", "cube-root"),
    ("points-per-bin", 25),
    ("points-per-bin", 1000),
]


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize(("binning", "bins"), SCHEMES)
@pytest.mark.parametrize("preds", [SMOOTH, TIED, EDGES], ids=["smooth", "tied", "edges"])
def test_engine_equals_generic_and_reference(preds, binning, bins):
    fast = check(preds, binning, bins)
    assert fast.count.sum() == preds.n_samples * preds.n_classes


@pytest.mark.parametrize("preds", [SMOOTH, EDGES], ids=["smooth", "edges"])
def test_unique_single_block_equals_reference(preds, monkeypatch):
    # one row per block: the class-wise points are formed row by row
    monkeypatch.setattr(engine_module, "_BLOCK_VALUES", 1)
    fast = classwise_bin_statistics(preds, binning="unique")
    assert_same(as_dict(fast), ref_classwise(preds, "unique", None))


def test_unique_equals_reference_with_ties():
    check(TIED, "unique", None)


@pytest.mark.parametrize(
    ("binning", "bins"),
    [
        ("equal-width", 15),
        ("equal-width", 7),
        ("equal-mass", 10),
        ("equal-mass", "cube-root"),
        ("points-per-bin", 20),
    ],
)
@pytest.mark.parametrize("threshold", [0.0, 1e-3, 0.25, 0.5, 0.95])
def test_thresholds(binning, bins, threshold):
    check(SMOOTH, binning, bins, threshold=threshold)
    check(TIED, binning, bins, threshold=threshold)


def test_equal_width_rule_threshold_zero_keeps_all():
    check(SMOOTH, "equal-width", "sturges", threshold=0.0)
    check(SMOOTH, "equal-width", "cube-root", threshold=0.0)


@pytest.mark.parametrize("bins", ["sturges", "cube-root"])
def test_equal_width_rule_with_threshold(bins):
    # SMOOTH has 400 rows: sturges gives 10 bins for n = 400, but class 0 keeps only
    # ~100 scores >= 0.25, for which the rule gives 8 bins (cube-root: 8 vs 5)
    check(SMOOTH, "equal-width", bins, threshold=0.25)


def test_threshold_equal_to_a_tied_value():
    # scores exactly equal to the threshold are kept
    check(TIED, "equal-mass", 5, threshold=0.3)
    check(EDGES, "equal-width", 22, threshold=15 / 22)
    check(EDGES, "equal-mass", 4, threshold=15 / 22)


@pytest.mark.parametrize("classes", [[0], [3], [5], [4, 1], [0, 2, 5]])
@pytest.mark.parametrize(
    ("binning", "bins", "threshold"),
    [
        ("equal-width", 15, None),
        ("equal-width", 10, 0.1),
        ("equal-mass", 8, None),
        ("equal-mass", 8, 0.05),
        ("points-per-bin", 30, None),
    ],
)
def test_class_subsets(classes, binning, bins, threshold):
    fast = check(SMOOTH, binning, bins, classes=classes, threshold=threshold)
    assert set(np.unique(fast.bin_group[fast.count > 0]).tolist()) <= set(classes)


def test_single_class_block_does_not_corrupt_the_data():
    """Regression: a one-column block used to be sorted in place."""
    preds = dirichlet_preds(300, 3, seed=4)
    before = preds.probs.copy()
    for cls in range(3):
        check(preds, "equal-mass", 7, classes=[cls])
        check(preds, "equal-width", 9, classes=[cls], threshold=0.2)
    np.testing.assert_array_equal(preds.probs, before)
    # the outcome means (which look the labels' scores up in the column) stay right
    # even when the chosen column is the only block
    fast = classwise_bin_statistics(preds, binning="equal-mass", bins=5, classes=[1])
    want = ref_classwise(preds, "equal-mass", 5, classes=[1])
    assert_same(as_dict(fast), want)


def test_many_requests_share_one_sort():
    requests = [
        ("equal-width", 15, None),
        ("equal-mass", 10, None),
        ("equal-mass", 15, 1e-3),
        ("points-per-bin", 40, 0.1),
        ("equal-width", 5, 0.3),
    ]
    for preds in (SMOOTH, TIED):
        many = [
            classwise_bin_statistics(preds, binning=b, bins=k, threshold=t) for b, k, t in requests
        ]
        assert len(many) == len(requests)
        for stats, (binning, bins, threshold) in zip(many, requests, strict=True):
            single = classwise_bin_statistics(
                preds, binning=binning, bins=bins, threshold=threshold
            )
            assert_same(as_dict(stats), as_dict(single))
            assert_same(as_dict(stats), ref_classwise(preds, binning, bins, None, threshold))
    subset = [
        classwise_bin_statistics(SMOOTH, binning=b, bins=k, threshold=t, classes=[2, 4])
        for b, k, t in requests
    ]
    for stats, (binning, bins, threshold) in zip(subset, requests, strict=True):
        assert_same(as_dict(stats), ref_classwise(SMOOTH, binning, bins, [2, 4], threshold))


@pytest.mark.parametrize("block_values", [1, 7, 450, 1000])
def test_forced_multiple_blocks(block_values, monkeypatch):
    monkeypatch.setattr(engine_module, "_BLOCK_VALUES", block_values)
    for preds in (SMOOTH, TIED, EDGES):
        for binning, bins in [("equal-width", 15), ("equal-mass", 6), ("points-per-bin", 33)]:
            check(preds, binning, bins)
        check(preds, "equal-mass", 6, threshold=0.2)
        check(preds, "equal-width", 12, classes=[1, 0])
    fast = classwise_bin_statistics(SMOOTH, binning="unique")
    assert_same(as_dict(fast), ref_classwise(SMOOTH, "unique", None))


def test_equal_width_edges_reported_as_fixed():
    fast = classwise_bin_statistics(SMOOTH, binning="equal-width", bins=4)
    np.testing.assert_array_equal(fast.bin_group, np.repeat(np.arange(6), 4))
    np.testing.assert_array_equal(fast.lower_edge, np.tile([0, 0.25, 0.5, 0.75], 6))
    np.testing.assert_array_equal(fast.upper_edge, np.tile([0.25, 0.5, 0.75, 1.0], 6))
    assert fast.scheme.kind == "equal-width" and fast.scheme.bins == 4


WIDE = dirichlet_preds(300, 40, seed=7, decimals=2)  # 40 classes, many ties


@pytest.mark.parametrize(("binning", "bins"), SCHEMES)
@pytest.mark.parametrize("threshold", [None, 1e-3, 0.05])
@pytest.mark.parametrize("max_table", [1 << 23, 64], ids=["fine-buckets", "coarse-buckets"])
def test_every_class_wise_cell_path_equals_the_reference(binning, bins, threshold, max_table,
                                                        monkeypatch):  # fmt: skip
    # every class's thresholds in one bucket table (GroupedCuts); coarse buckets send most
    # scores to the exact bisection within their class: both give the reference's bins
    import calcore.statistics.cuts as cuts_module

    monkeypatch.setattr(cuts_module, "_MAX_TABLE", max_table)
    if max_table < 1 << 10:  # one bucket per class, and the exact search in small pieces
        monkeypatch.setattr(cuts_module, "_MIN_BUCKETS", 3)
        monkeypatch.setattr(cuts_module, "_SEARCH_CHUNK", 7)
    for preds in (SMOOTH, TIED, WIDE):
        check(preds, binning, bins, threshold=threshold)


# --------------------------------------------------------------- shared sorts of the columns


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_requests_sharing_one_sort_equal_each_column_binned_as_a_group(n_classes, weighted):
    """``classwise_edges`` of several requests at once (unweighted: one partition per
    column at every request's ranks; weighted or unique: one sort per column) equals
    ``edges_for`` of the flat class-wise points grouped by class, which sorts every group
    itself."""
    from calcore.foundation.binning import resolve_binning
    from calcore.statistics.edges import edges_for
    from calcore.statistics.points import RowBatch, classwise_edges

    rng = np.random.default_rng(n_classes)
    raw = np.round(rng.dirichlet(np.ones(n_classes), 3000), 2)  # many ties
    if n_classes == 2:
        probs = np.column_stack([1.0 - raw[:, 1], raw[:, 1]])
    else:
        probs = raw / raw.sum(axis=1, keepdims=True)
    preds = Predictions.from_probs(probs, rng.integers(0, n_classes, 3000))
    w = rng.integers(0, 4, 3000).astype(float) if weighted else None
    requests = [
        (resolve_binning("equal-mass", 7), None),
        (resolve_binning("equal-mass", 7), 1e-3),
        (resolve_binning("points-per-bin", 40), 0.3),
        (resolve_binning("equal-width", 10), None),
        (resolve_binning("unique", None), None),
    ]
    got = classwise_edges(RowBatch.of(preds), requests, weights=w)
    flat = preds.probs.reshape(-1)
    groups = np.tile(np.arange(n_classes), 3000)
    pw = None if w is None else np.repeat(w, n_classes)
    for (scheme, cut), edges in zip(requests, got, strict=True):
        want = edges_for(
            flat, groups, n_groups=n_classes, binning=scheme, weights=pw, min_score=cut
        )
        np.testing.assert_array_equal(edges.bins_per_group, want.bins_per_group)
        if want.thresholds is None:
            assert edges.thresholds is None
        else:
            np.testing.assert_array_equal(edges.thresholds, want.thresholds)


@pytest.mark.parametrize("threshold", [None, 0.05])
def test_bin_statistics_without_ranges_differ_only_in_the_edges(threshold):
    """``ranges=False`` (what ACE and TACE ask for) leaves the bins' score ranges NaN and
    every count, sum and mean as they are with the ranges."""
    import dataclasses

    with_ranges = classwise_bin_statistics(WIDE, binning="equal-mass", bins=6, threshold=threshold)
    without = classwise_bin_statistics(
        WIDE, binning="equal-mass", bins=6, threshold=threshold, ranges=False
    )
    assert np.isnan(without.lower_edge).all() and np.isnan(without.upper_edge).all()
    assert np.isfinite(with_ranges.lower_edge[with_ranges.count > 0]).all()
    for f in dataclasses.fields(with_ranges):
        if f.name in ("lower_edge", "upper_edge"):
            continue
        a, b = getattr(with_ranges, f.name), getattr(without, f.name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f.name)
        else:
            assert a == b, f.name
