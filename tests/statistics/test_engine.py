"""The statistics engine (calcore.statistics): merge laws, weights, and streamed == in memory.

References are independent of the engine: per-bin sums written here with Python loops
over the rows, duplicated rows for integer weights, and ``calcore.evaluate`` on the
whole in-memory data (whose values the golden and brute-force suites pin down).

Reading streamed sources (files, errors, read-ahead, weight columns, samples) is tested in
tests/io/test_stream.py, writing them in tests/io/test_stream_write.py; weighted reports and metric
functions in tests/test_weights.py.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _keys import (  # tests/ is on sys.path
    assert_same_metrics,
    interval_keys,
)
from _synthetic import beta_binary as _binary
from _synthetic import dirichlet_preds as _preds
from _synthetic import write_parquet_parts as _write_parts
from hypothesis import given, settings
from hypothesis import strategies as st

import calcore
from calcore.statistics import CalibrationStatistics, CellRequest, CellSums, stream_statistics
from calcore.statistics.bin_statistics import bin_statistics
from calcore.statistics.edges import edges_for


def _report_stats(preds, pieces, bins=10, binning="equal-width"):
    """Statistics of ``preds`` accumulated over the row pieces ``pieces`` (list of index arrays)."""
    from calcore.evaluation.report_statistics import report_cell_specs

    specs = report_cell_specs(preds, bins=bins, binning=binning)
    parts = []
    for rows in pieces:
        s = CalibrationStatistics.empty(preds.class_names, specs, ranges=True)
        s.update(preds.subset(rows))
        parts.append(s)
    return parts


def _assert_same_stats(a, b, tol=1e-12):
    assert a.n_rows == b.n_rows and a.n_tied_rows == b.n_tied_rows
    for x, y in ((a.weight, b.weight), (a.correct, b.correct), (a.nll, b.nll), (a.brier, b.brier)):
        assert x == pytest.approx(y, rel=tol, abs=tol)
    np.testing.assert_allclose(a.label_weight, b.label_weight, rtol=tol)
    for key in a.cells:
        for field in ("weight", "score", "outcome"):
            np.testing.assert_allclose(
                getattr(a.cells[key], field), getattr(b.cells[key], field), rtol=tol, atol=tol
            )
        if a.cells[key].low is not None:
            np.testing.assert_array_equal(a.cells[key].low, b.cells[key].low)
            np.testing.assert_array_equal(a.cells[key].high, b.cells[key].high)


@settings(max_examples=25, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 299), max_size=6, unique=True),
    order=st.randoms(use_true_random=False),
    binning=st.sampled_from(["equal-width", "equal-mass", "points-per-bin"]),
)
def test_merging_in_any_grouping_and_order_equals_one_pass(cuts, order, binning):
    preds = _preds(300, 4, seed=3)
    bounds = [0, *sorted(cuts), 300]
    pieces = [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    whole = _report_stats(preds, [np.arange(300)], binning=binning, bins=7)[0]
    assert whole.cells["ace"].low is not None  # score ranges merge too (min and max)
    parts = _report_stats(preds, pieces, binning=binning, bins=7)
    order.shuffle(parts)
    # left fold in a random order, and a balanced tree: both equal the single pass
    folded = parts[0]
    for p in parts[1:]:
        folded = folded.merge(p)
    _assert_same_stats(folded, whole)
    while len(parts) > 1:
        parts = [
            parts[i].merge(parts[i + 1]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    _assert_same_stats(parts[0], whole)


def test_merge_is_commutative_and_associative_exactly_for_counts():
    preds = _preds(200, 3, seed=4)
    a, b, c = _report_stats(preds, [np.arange(0, 50), np.arange(50, 120), np.arange(120, 200)])
    ab_c, a_bc = a.merge(b).merge(c), a.merge(b.merge(c))
    _assert_same_stats(ab_c, a_bc)
    _assert_same_stats(a.merge(b), b.merge(a), tol=0.0)


def test_merge_refuses_other_cells():
    preds = _preds(50, 3, seed=5)
    (a,) = _report_stats(preds, [np.arange(50)], bins=5)
    (b,) = _report_stats(preds, [np.arange(50)], bins=5)
    b.specs = {"conf": b.specs["conf"]}
    with pytest.raises(ValueError, match="different classes or cells"):
        a.merge(b)


def _loop_reference(scores, outcomes, weights, n_bins):
    """Per-bin (sum w, sum w s, sum w o) with a Python loop and edges k/B as fractions."""
    out = np.zeros((n_bins, 3))
    for s, o, w in zip(scores, outcomes, weights, strict=True):
        k = min(int(s * n_bins), n_bins - 1)
        while k > 0 and s < k / n_bins:
            k -= 1
        while k + 1 < n_bins and s >= (k + 1) / n_bins:
            k += 1
        out[k] += (w, w * s, w * o)
    return out


def test_weighted_cells_against_a_loop_over_rows():
    rng = np.random.default_rng(6)
    s = np.r_[rng.random(400), np.arange(11) / 10]  # edges included
    o = (rng.random(s.size) < s).astype(float)
    w = rng.gamma(1.0, size=s.size)
    st_ = bin_statistics(s, o, bins=10, weights=w)
    ref = _loop_reference(s, o, w, 10)
    np.testing.assert_allclose(st_.count, ref[:, 0], rtol=1e-12)
    np.testing.assert_allclose(st_.mean_score, ref[:, 1] / ref[:, 0], rtol=1e-12)
    np.testing.assert_allclose(st_.mean_outcome, ref[:, 2] / ref[:, 0], rtol=1e-12)


@pytest.mark.parametrize(
    ("binning", "bins"),
    [
        ("equal-width", 8),
        ("equal-width", "sturges"),
        ("equal-mass", 6),
        ("points-per-bin", 9),
        ("unique", None),
    ],  # fmt: skip
)
def test_integer_weights_equal_repeated_rows(binning, bins):
    rng = np.random.default_rng(7)
    s = np.round(rng.random(120), 2)  # ties, so that equal-mass ties are exercised
    o = (rng.random(120) < s).astype(float)
    g = rng.integers(0, 3, 120)
    w = rng.integers(0, 4, 120)
    weighted = bin_statistics(s, o, g, n_groups=3, binning=binning, bins=bins, weights=w)
    rows = np.repeat(np.arange(120), w)
    repeated = bin_statistics(s[rows], o[rows], g[rows], n_groups=3, binning=binning, bins=bins)
    np.testing.assert_array_equal(weighted.count, repeated.count)
    np.testing.assert_array_equal(weighted.bin_group, repeated.bin_group)
    np.testing.assert_allclose(weighted.mean_score, repeated.mean_score, rtol=1e-12)
    np.testing.assert_allclose(weighted.mean_outcome, repeated.mean_outcome, rtol=1e-12)
    np.testing.assert_array_equal(weighted.lower_edge, repeated.lower_edge)
    assert weighted.n_rows == repeated.n_rows


def test_weighted_report_sums_equal_repeated_rows():
    preds = _preds(150, 3, seed=8)
    w = np.random.default_rng(9).integers(0, 3, 150)
    from calcore.evaluation.report_statistics import (
        binned_values,
        report_cell_specs,
        scoring_values,
    )

    rows = np.repeat(np.arange(150), w)
    repeated = preds.subset(rows)
    specs = report_cell_specs(repeated, bins=6, binning="equal-width")
    a = CalibrationStatistics.empty(preds.class_names, specs)
    a.update(preds, weights=w)
    b = CalibrationStatistics.empty(preds.class_names, specs)
    b.update(repeated)
    assert a.total() == b.total() == rows.size
    va = scoring_values(a) | binned_values(a)
    vb = scoring_values(b) | binned_values(b)
    for k in vb:
        assert va[k] == pytest.approx(vb[k], rel=1e-12, abs=1e-15), k


def test_cell_sums_replicate_axis_equals_one_sum_per_replicate():
    rng = np.random.default_rng(10)
    cells = rng.integers(-1, 5, size=(40, 3))
    scores = rng.random((40, 3))
    w = rng.poisson(1.0, size=(4, 40)).astype(float)
    rep = CellSums.zeros(5, replicates=4)
    rep.add(cells, scores, w)
    for r in range(4):
        one = CellSums.zeros(5)
        one.add(cells, scores, w[r])
        np.testing.assert_allclose(rep.weight[r], one.weight, rtol=1e-13)
        np.testing.assert_allclose(rep.score[r], one.score, rtol=1e-13)


def test_edges_of_equal_mass_are_order_statistics():
    s = np.array([0.1, 0.2, 0.2, 0.2, 0.5, 0.9])
    e = edges_for(s, binning="equal-mass", bins=3)
    # ranks floor(k 6 / 3) = 2, 4 -> the 2nd and 4th smallest scores
    assert e.thresholds.tolist() == [0.2, 0.2]
    # the tie block 0.2 (ranks 1-3) goes with its first member's bin: bin 0; bin 1 is empty
    assert e.cell_of(s).tolist() == [0, 0, 0, 0, 2, 2]


# --------------------------------------------------------------------------- streamed == in memory


@settings(max_examples=10, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 499), max_size=4, unique=True),
    batch_rows=st.integers(7, 600),
    hive=st.booleans(),
    binning=st.sampled_from(
        [("equal-width", 12), ("equal-mass", 9), ("points-per-bin", 40), ("equal-width", "sturges")]
    ),
)
def test_streamed_report_equals_in_memory(tmp_path_factory, cuts, batch_rows, hive, binning):
    tmp = tmp_path_factory.mktemp("parts")
    preds = _binary(500, seed=11)
    _write_parts(tmp, preds, sorted(cuts), hive=hive)
    stream = calcore.scan(tmp, batch_rows=batch_rows)
    assert stream.class_names == ("not fraud", "fraud") and stream.n_rows_in_files == 500
    got = calcore.evaluate(stream, binning=binning[0], bins=binning[1])
    memory = calcore.evaluate(
        calcore.Predictions.from_probs(preds.probs, preds.labels, ("not fraud", "fraud")),
        binning=binning[0],
        bins=binning[1],
    )
    assert got.n == 500
    assert_same_metrics(got, memory, rel=1e-10, abs=1e-14)


def test_complementary_binary_keeps_one_class_wise_kde_problem(tmp_path, monkeypatch):
    """Column 0 exactly 1 - p: the class-wise KDE-ECE is computed for class 1 alone, in
    memory and streamed, and equals the mean of both classes' KDE-ECEs computed directly
    (calcore.kde_ece, the rule-of-thumb bandwidth of each column). A column 0 one ulp off
    keeps both problems."""
    from calcore.evaluation.report_statistics import report_kde_specs

    preds = _binary(3_000, seed=40)
    reference = np.mean([calcore.kde_ece(preds.probs[:, c], preds.labels == c) for c in range(2)])
    spec = report_kde_specs(preds, confidence=False, classwise=True)["kde_ece_classwise"]
    assert spec.classes.tolist() == [1] and len(spec.layouts) == 1
    memory = calcore.evaluate(preds, metrics=["kde_ece_classwise"]).kde_ece_classwise
    assert memory == pytest.approx(reference, rel=1e-12)
    _write_parts(tmp_path, preds, [1_000])
    streamed = calcore.evaluate(calcore.scan(tmp_path), metrics=["kde_ece_classwise"])
    assert streamed.kde_ece_classwise == pytest.approx(reference, rel=1e-12)

    import calcore.statistics.points as points

    monkeypatch.setattr(points, "_CHECK_ROWS", 100)  # compared 100 rows at a time
    for row in (7, 2_950):  # in the first slice, in the last
        off = preds.probs.copy()
        off[row, 0] = np.nextafter(off[row, 0], 2.0)
        other = calcore.Predictions.from_probs(off, preds.labels)
        spec = report_kde_specs(other, confidence=False, classwise=True)["kde_ece_classwise"]
        assert spec.classes is None and len(spec.layouts) == 2
    assert points.complementary_binary(preds.probs)


def test_streamed_multiclass_with_ties_equals_in_memory(tmp_path):
    rng = np.random.default_rng(30)
    p = np.round(rng.dirichlet(np.full(4, 0.6), size=700), 2)
    p[:, 0] = 1.0 - p[:, 1:].sum(axis=1)
    p = np.clip(p, 0.0, None)
    p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(4, p=row) for row in p])
    names = ["cat", "dog", "eel", "fox"]
    columns = {"label": np.array(names)[y]} | {f"p_{c}": p[:, j] for j, c in enumerate(names)}
    pq.write_table(pa.table(columns), tmp_path / "m.parquet", row_group_size=90)
    got = calcore.evaluate(
        calcore.scan(tmp_path / "m.parquet", batch_rows=64), binning="equal-mass"
    )
    want = calcore.evaluate(calcore.Predictions.from_probs(p, y, names), binning="equal-mass")
    assert_same_metrics(got, want, rel=1e-10, abs=1e-14)


def test_stream_refuses_what_it_cannot_do_yet(tmp_path):
    _write_parts(tmp_path, _binary(60, seed=13), [30])
    stream = calcore.scan(tmp_path)
    with pytest.raises(calcore.CalcoreError, match="'unique' is not available for a streamed"):
        calcore.evaluate(stream, binning="unique")
    with pytest.raises(calcore.CalcoreError, match="n_resamples must be 0 .no intervals. or an"):
        calcore.evaluate(stream, n_resamples=1)


# --------------------------------------------------------------------------- KDE-ECE from cells


def _kde_problem(kind, n, seed):
    rng = np.random.default_rng(seed)
    s = {
        "uniform": lambda: rng.random(n),
        "confident": lambda: 1.0 - rng.beta(0.3, 8.0, n),
        "ties": lambda: np.round(rng.random(n), 1),
        "u-shaped": lambda: rng.beta(0.2, 0.2, n),
        "constant": lambda: np.full(n, 0.3),
    }[kind]()
    return s, (rng.random(n) < s**1.5).astype(float)


@pytest.mark.parametrize("kind", ["uniform", "confident", "ties", "u-shaped", "constant"])
@pytest.mark.parametrize("bandwidth", [None, 1e-3, 0.05, 0.49, 0.5, 1.0])
@pytest.mark.parametrize("order", [1, 2])
def test_kde_cells_equal_the_exact_kernel_sums(kind, bandwidth, order):
    from calcore.foundation.kernel_density import kde_bandwidth, kde_ece
    from calcore.statistics.kde_cells import KDELayout, KDESums, kde_ece_from_sums

    s, o = _kde_problem(kind, 400, seed=20)
    h = kde_bandwidth(s) if bandwidth is None else bandwidth
    layout = KDELayout.for_bandwidth(h)
    sums = KDESums.zeros(layout)
    sums.add(layout, s, o)
    want = kde_ece(s, o, bandwidth=h, order=order)
    assert kde_ece_from_sums(layout, sums, order=order) == pytest.approx(want, rel=1e-10, abs=1e-14)


def test_kde_sums_merge_weights_and_replicates():
    from calcore.foundation.kernel_density import kde_bandwidth, kde_ece
    from calcore.statistics.kde_cells import KDELayout, KDESums, kde_ece_from_sums

    s, o = _kde_problem("confident", 300, seed=21)
    w = np.random.default_rng(22).integers(0, 3, 300)
    rows = np.repeat(np.arange(300), w)
    h = kde_bandwidth(s[rows])
    layout = KDELayout.for_bandwidth(h)
    weighted = KDESums.zeros(layout)
    for a in range(0, 300, 37):  # batches, merged
        part = KDESums.zeros(layout)
        part.add(layout, s[a : a + 37], o[a : a + 37], w[a : a + 37])
        weighted = weighted.merge(part)
    want = kde_ece(s[rows], o[rows], bandwidth=h)
    assert kde_ece_from_sums(layout, weighted) == pytest.approx(want, rel=1e-10)
    reps = KDESums.zeros(layout, replicates=2)
    reps.add(layout, s, o, np.vstack([w, np.ones(300)]))
    got = kde_ece_from_sums(layout, reps)
    assert got[0] == pytest.approx(want, rel=1e-10)
    assert got[1] == pytest.approx(kde_ece(s, o, bandwidth=h), rel=1e-10)


def test_score_moments_merge_to_the_bandwidth_rule():
    from calcore.foundation.kernel_density import kde_bandwidth
    from calcore.statistics.kde_cells import ScoreMoments

    s, _ = _kde_problem("confident", 1000, seed=23)
    merged = ScoreMoments()
    for a in range(0, 1000, 333):
        merged = merged.merge(ScoreMoments.of(s[a : a + 333]))
    assert merged.bandwidth() == pytest.approx(kde_bandwidth(s), rel=1e-12)
    assert ScoreMoments.of(np.full(5, 0.2)).bandwidth() == 1e-3  # the floor


@pytest.mark.parametrize("side", ["left", "right"])
def test_sorted_cuts_equal_searchsorted_at_and_around_every_cut(side):
    from calcore.statistics.cuts import SortedCuts

    rng = np.random.default_rng(24)
    cuts = np.sort(np.r_[-np.inf, rng.random(300), np.round(rng.random(50), 2), 0.5, 0.5, 1.0])
    finite = cuts[np.isfinite(cuts)]
    values = np.r_[
        rng.random(5000), finite, np.nextafter(finite, 0.0), np.nextafter(finite, 1.0), 0.0, 1.0
    ]
    values = np.clip(values, 0.0, 1.0)
    got = SortedCuts(cuts, side=side).count(values)
    np.testing.assert_array_equal(got, np.searchsorted(cuts, values, side=side))
    # cuts on the buckets' own boundaries (16 cuts: 64 buckets, k / 64), and thirds, whose
    # products with 64 round: values on both sides of each
    for cuts in (np.arange(1, 17) / 64.0, np.arange(1, 17) / 48.0):
        values = np.r_[cuts, np.nextafter(cuts, 0.0), np.nextafter(cuts, 1.0), 0.0, 1.0]
        got = SortedCuts(cuts, side=side).count(values)
        np.testing.assert_array_equal(got, np.searchsorted(cuts, values, side=side))


def test_update_in_row_chunks_equals_one_chunk(monkeypatch):
    import calcore.statistics.accumulator as acc
    from calcore.evaluation.report_statistics import report_cell_specs, report_kde_specs

    preds = _preds(500, 4, seed=25)
    specs = report_cell_specs(preds, bins=6, binning="equal-mass")
    kdes = report_kde_specs(preds, confidence=True, classwise=True)
    whole = CalibrationStatistics.empty(preds.class_names, specs, kdes)
    whole.update(preds)
    monkeypatch.setattr(acc, "_CHUNK_VALUES", 37 * 4)
    chunked = CalibrationStatistics.empty(preds.class_names, specs, kdes)
    chunked.update(preds)
    _assert_same_stats(chunked, whole)
    for key in whole.kde:
        for a, b in zip(chunked.kde[key], whole.kde[key], strict=True):
            np.testing.assert_allclose(a.moments, b.moments, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- exact ranks on streams


@pytest.mark.parametrize(
    "kind", ["uniform", "ties", "constant", "packed", "narrow", "zeros", "subnormal-ish"]
)
@pytest.mark.parametrize("collect_limit", [1 << 20, 10])
@pytest.mark.parametrize("dense_limit", [1 << 22, 1 << 10], ids=["tables", "searches"])
def test_exact_ranks_equal_a_sort(kind, collect_limit, dense_limit, monkeypatch):
    import calcore.foundation.exact_ranks as quantiles
    from calcore.foundation.exact_ranks import ExactRanks

    # small limit: prefixes counted sparsely and found by binary search, as for many groups
    monkeypatch.setattr(quantiles, "_DENSE_LIMIT", dense_limit)
    # batches observed in chunks, dense counts added many times
    monkeypatch.setattr(quantiles, "_OBSERVE_VALUES", 100)
    monkeypatch.setattr(quantiles, "_PENDING_VALUES", 1_000)

    rng = np.random.default_rng(31)
    s = {
        "uniform": lambda: rng.random(20_000),
        "ties": lambda: np.round(rng.random(20_000), 2),
        "constant": lambda: np.full(5_000, 0.3),
        "packed": lambda: 0.9 + rng.random(20_000) * 1e-12,  # 4 passes: 48 bits shared
        # the top 16 bits shared, the next ones not: several kept prefixes under one slot
        "narrow": lambda: 0.9 + rng.random(20_000) * 1e-6,
        "zeros": lambda: np.r_[np.zeros(300), -np.zeros(10), rng.random(100)],
        "subnormal-ish": lambda: rng.random(2_000) * 1e-300,
    }[kind]()
    g = rng.integers(0, 3, s.size)
    ranks = []
    for k in range(3):
        m = int((g == k).sum())
        ranks.append(np.r_[0, (np.arange(1, 15) * m) // 15, m])
    finder = ExactRanks(ranks, collect_limit=collect_limit)
    passes = 0
    while finder.wants_pass():
        for a in range(0, s.size, 777):
            finder.observe(s[a : a + 777], g[a : a + 777])
        finder.end_pass()
        passes += 1
    assert passes <= 4
    for k in range(3):
        ordered = np.sort(s[g == k] + 0.0)
        want = np.where(ranks[k] > 0, ordered[np.maximum(ranks[k] - 1, 0)], -np.inf)
        np.testing.assert_array_equal(finder.values()[k], want)


def test_exact_ranks_of_class_wise_rows_equal_their_flattened_points(monkeypatch):
    """Rows of L scores with groups ``arange(L)[None, :]`` and row weights ``w[:, None]``
    (expanded a chunk at a time) find the values of the flattened points."""
    import calcore.foundation.exact_ranks as quantiles
    from calcore.foundation.exact_ranks import ExactRanks

    monkeypatch.setattr(quantiles, "_OBSERVE_VALUES", 70)
    rng = np.random.default_rng(32)
    probs = rng.dirichlet(np.ones(3), 2_000)
    w = rng.integers(1, 4, 2_000).astype(float)
    ranks = [np.r_[0, np.arange(1, 7) * 500] for _ in range(3)]  # of about 4,000
    found = []
    for rows in (True, False):
        finder = ExactRanks(ranks, collect_limit=50)
        while finder.wants_pass():
            for a in range(0, 2_000, 333):
                p, wa = probs[a : a + 333], w[a : a + 333]
                if rows:
                    finder.observe(p, np.arange(3)[None, :], wa[:, None])
                else:
                    finder.observe(p.reshape(-1), np.tile(np.arange(3), len(p)), np.repeat(wa, 3))
            finder.end_pass()
        found.append(finder.values())
    for a, b in zip(*found, strict=True):
        np.testing.assert_array_equal(a, b)
    ordered = np.sort(probs[:, 1])
    cum = np.cumsum(w[np.argsort(probs[:, 1], kind="stable")])
    want = ordered[np.searchsorted(cum, ranks[1][1:], side="left")]
    np.testing.assert_array_equal(found[0][1][1:], want)


@pytest.mark.parametrize(
    "kind",
    ["beta", "ties", "constant", "packed", "tiny", "bucket edges"]
    + ["minus zero", "above one", "nan"],
)
@pytest.mark.parametrize("chunk", [1 << 20, 1000])  # one chunk per pass, or many
@pytest.mark.parametrize("buckets", [1 << 12, 64])  # fine buckets, or coarse ones
def test_order_statistics_equal_a_sort(kind, chunk, buckets, monkeypatch):
    import calcore.statistics.selection as selection
    from calcore.statistics.selection import order_statistics

    monkeypatch.setattr(selection, "_MIN_VALUES", 100)  # the histogram path on small columns
    monkeypatch.setattr(selection, "_MIN_BUCKETS", buckets)
    monkeypatch.setattr(selection, "_MAX_BUCKETS", buckets)
    monkeypatch.setattr(selection, "_CHUNK", chunk)
    rng = np.random.default_rng(34)
    # values on both sides of many power-of-two boundaries of the bit patterns
    edges = (np.arange(1, 1024) / 1024.0 + 1.0) * 0.25
    v = {
        "beta": lambda: rng.beta(0.5, 3.0, 20_000),
        "ties": lambda: np.round(rng.random(20_000), 2),
        "constant": lambda: np.full(5_000, 0.3),
        "packed": lambda: 0.9 + rng.random(20_000) * 1e-12,  # a narrow range of patterns
        "tiny": lambda: np.r_[np.zeros(300), rng.random(2_000) * 1e-300, rng.random(50)],
        "bucket edges": lambda: np.r_[edges, np.nextafter(edges, 0), np.nextafter(edges, 1)],
        # -0.0's sign bit: the partition's fallback; values over 1 and NaN sort by their bits
        "minus zero": lambda: np.r_[rng.random(3_000), -np.zeros(10), np.zeros(10)],
        "above one": lambda: np.r_[rng.random(3_000), [1.0, 1.5, 7.0]],
        "nan": lambda: np.r_[rng.random(3_000), [np.nan]],
    }[kind]()
    rng.shuffle(v)
    at = np.r_[0, v.size - 1, rng.integers(0, v.size, 60), (np.arange(1, 15) * v.size) // 15]
    got = order_statistics(v, at)
    np.testing.assert_array_equal(got, np.sort(v)[at])
    # a column of a C-ordered block is read in place, through a strided view of its bits
    block = np.column_stack([rng.random(v.size), v])
    np.testing.assert_array_equal(order_statistics(block[:, 1], at), got)


def test_exact_ranks_notice_data_that_changed_between_passes():
    from calcore.foundation.exact_ranks import ExactRanks

    finder = ExactRanks([np.array([900])])
    finder.observe(np.random.default_rng(32).random(1000))
    finder.end_pass()
    finder.observe(np.random.default_rng(33).random(10))  # the source shrank
    with pytest.raises(calcore.CalcoreError, match="the data changed between two passes"):
        finder.end_pass()


# --------------------------------------------------------------------------- Poisson bootstrap


def test_poisson_weights_depend_only_on_position_and_have_poisson_moments():
    from calcore.foundation.keyed_random import poisson_weights

    w = poisson_weights(np.arange(200_000), 8, seed=3)
    assert w.shape == (8, 200_000) and (w == np.round(w)).all() and w.min() == 0
    # Poisson(1): mean 1, variance 1, P(0) = P(1) = 1/e (tolerances ~6 standard errors)
    assert abs(w.mean() - 1.0) < 6 * np.sqrt(1 / w.size)
    assert abs(w.var() - 1.0) < 6 * np.sqrt(2 / w.size)
    freq = np.bincount(w.astype(int).ravel(), minlength=3)[:2] / w.size
    assert np.all(np.abs(freq - np.exp(-1)) < 6 * np.sqrt(np.exp(-1) * (1 - np.exp(-1)) / w.size))
    # independent of batching: any slice of positions gives the same columns
    np.testing.assert_array_equal(poisson_weights(np.arange(500, 900), 8, seed=3), w[:, 500:900])
    assert not np.array_equal(poisson_weights(np.arange(100), 8, seed=4), w[:, :100])
    assert abs(np.corrcoef(w[0], w[1])[0, 1]) < 0.02  # replicates look independent


def _splitmix64(x: int) -> int:
    """SplitMix64's finaliser on Python integers (Steele, Lea & Flood 2014), mod 2**64."""
    mask = (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    return x ^ (x >> 31)


@pytest.mark.parametrize("stream", [0, 3])
def test_row_uniforms_are_splitmix64_of_seed_and_position(stream):
    """Against the hash written out on Python integers, across the in-place mixer's chunk
    boundary (32,768 rows) and for positions beyond 2**32."""
    from calcore.foundation.keyed_random import row_uniforms

    golden, mask, seed = 0x9E3779B97F4A7C15, (1 << 64) - 1, 11
    key = _splitmix64(((~seed & mask) * golden + golden) & mask)
    if stream:
        key = _splitmix64((key + stream * golden) & mask)
    positions = np.array([0, 1, 32_767, 32_768, 32_769, 70_001, 2**33 + 5], dtype=np.int64)
    everything = np.concatenate([np.arange(70_002), positions[-1:]])
    got = row_uniforms(everything, seed, stream=stream)
    for pos in positions:
        want = (_splitmix64((int(pos) * golden + key) & mask) >> 11) / 2**53
        assert got[np.flatnonzero(everything == pos)[0]] == want
    assert ((0 <= got) & (got < 1)).all()


def test_poisson_weights_are_the_splitmix64_halves_of_position_and_replicate_pair():
    """Against the hash on Python integers: replicates 2j and 2j + 1 of position i take the
    low and high 32 bits of hash((i * ceil(R/2) + j) * golden + key) as uniforms, and the
    weight is the number of Poisson(1) CDF thresholds (as 32-bit integers) at or below."""
    import math

    from calcore.foundation.keyed_random import poisson_weights

    golden, mask, seed, n_rep = 0x9E3779B97F4A7C15, (1 << 64) - 1, 21, 7
    pairs = (n_rep + 1) // 2
    key = _splitmix64(((seed & mask) * golden + golden) & mask)
    cdf = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(20)])
    thresholds = [min(round(c * 2.0**32), 2**32) for c in cdf]
    positions = np.array([0, 1, 9_361, 9_362, 40_000, 2**33 + 5], dtype=np.int64)
    everything = np.concatenate([np.arange(40_001), positions[-1:]])  # several hash chunks
    got = poisson_weights(everything, n_rep, seed)
    for pos in positions:
        column = got[:, np.flatnonzero(everything == pos)[0]]
        for r in range(n_rep):
            bits = _splitmix64(((int(pos) * pairs + r // 2) * golden + key) & mask)
            u = bits & 0xFFFFFFFF if r % 2 == 0 else bits >> 32
            assert column[r] == sum(t <= u for t in thresholds), (pos, r)
    # every weight of 600,000 (about 70 of them settled by a search, next to a threshold)
    # equals a direct search of its uniform among the thresholds
    n = 300_000
    with np.errstate(over="ignore"):
        x = np.arange(n, dtype=np.uint64) * np.uint64(golden) + np.uint64(key)
        for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
            x = (x ^ (x >> np.uint64(shift))) * np.uint64(factor)
        x ^= x >> np.uint64(31)
    uniforms = np.stack([x & np.uint64(0xFFFFFFFF), x >> np.uint64(32)])
    want = np.searchsorted(np.array(thresholds, dtype=np.uint64), uniforms, side="right")
    np.testing.assert_array_equal(poisson_weights(np.arange(n), 2, seed), want)


@pytest.mark.parametrize("bins", [5, 40])
@pytest.mark.parametrize("layout", ["poisson", "C-ordered"])  # (m, R) transposed, or (R, m)
def test_replicate_statistics_equal_weighted_statistics_one_by_one(bins, layout):
    from calcore.evaluation.report_statistics import (
        binned_values,
        report_cell_specs,
        report_kde_specs,
        scoring_values,
    )
    from calcore.foundation.keyed_random import poisson_weights

    preds = _preds(300, 3, seed=26)
    specs = report_cell_specs(preds, bins=bins, binning="equal-mass")
    kdes = report_kde_specs(preds, confidence=True, classwise=True)
    w = poisson_weights(np.arange(300), 4, seed=9)
    if layout == "C-ordered":
        w = np.ascontiguousarray(w)
    boot = CalibrationStatistics.empty(preds.class_names, specs, kdes, replicates=4)
    boot.update(preds, weights=w)
    for r in range(4):
        one = CalibrationStatistics.empty(preds.class_names, specs, kdes)
        one.update(preds, weights=w[r])
        got, want = boot.replicate(r), one
        a = scoring_values(got) | binned_values(got)
        b = scoring_values(want) | binned_values(want)
        for k in b:
            assert a[k] == pytest.approx(b[k], rel=1e-12, abs=1e-15), k
        assert got.kde_ece("kde_ece_classwise") == pytest.approx(
            want.kde_ece("kde_ece_classwise"), rel=1e-10
        )


def test_streamed_bootstrap_does_not_depend_on_batching(tmp_path):
    preds = _binary(400, seed=27)
    _write_parts(tmp_path, preds, [150, 260])
    a = calcore.evaluate(calcore.scan(tmp_path, batch_rows=31), n_resamples=12, seed=5)
    b = calcore.evaluate(calcore.scan(tmp_path, batch_rows=400), n_resamples=12, seed=5)
    c = calcore.evaluate(calcore.scan(tmp_path, batch_rows=400), n_resamples=12, seed=6)
    assert set(a.intervals) == interval_keys(a)
    for k, iv in a.intervals.items():
        assert iv.n_resamples == 12
        assert iv.low == pytest.approx(b.intervals[k].low, rel=1e-10, abs=1e-14), k
        assert iv.high == pytest.approx(b.intervals[k].high, rel=1e-10, abs=1e-14), k
        assert iv.low <= iv.high
    assert a.intervals["conf_ece"].low != c.intervals["conf_ece"].low  # the seed matters
    assert any("Poisson bootstrap, 12 replicates" in n for n in a.notes)


# ------------------------------------------------------------ asked-for sums, cuts, replicates


def test_a_stream_asked_for_neither_nll_nor_brier_skips_their_sums(tmp_path):
    preds = _binary(300, seed=31)
    _write_parts(tmp_path, preds, [120])
    stream = calcore.scan(tmp_path, batch_rows=50)
    request = {"conf": CellRequest("confidence", calcore.resolve_binning("equal-width", 15))}
    assert not stream_statistics(
        stream, requests=request, proper_scores=False
    ).statistics.proper_scores
    got = calcore.evaluate(stream, metrics=["conf_ece", "accuracy"])
    want = calcore.evaluate(preds, metrics=["conf_ece", "accuracy", "nll"])
    assert got.metrics["nll"] is None and got.metrics["brier"] is None
    for key in ("conf_ece", "accuracy"):
        assert got.metrics[key] == pytest.approx(want.metrics[key], rel=1e-12, abs=1e-15)
    assert calcore.evaluate(stream, metrics=["nll"]).nll == pytest.approx(want.nll, rel=1e-12)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("max_table", [1 << 21, 5000, 64], ids=["fine", "coarse", "one-bucket"])
def test_grouped_cuts_equal_searchsorted_per_group(side, max_table, monkeypatch):
    """Per-group cuts crowded near 0 (softmax-like), ties, -inf, 0, 1 and the smallest
    subnormal, some below 0 or above 1; values at, just below and just above every cut,
    -0.0, negative values, values over 1, inf and NaN; offsets and groups without cells
    (-1); fine and coarse buckets, values in a bucket with one cut compared with it, in a
    bucket with several searched. Reference: ``np.searchsorted`` of each value in its own
    group."""
    import calcore.statistics.cuts as cuts_module
    from calcore.statistics.cuts import GroupedCuts

    monkeypatch.setattr(cuts_module, "_MAX_TABLE", max_table)
    if max_table == 64:  # one bucket for a group's whole range: every value in it searched
        monkeypatch.setattr(cuts_module, "_MIN_BUCKETS", 3)

    rng = np.random.default_rng(26)
    for _ in range(40):
        n_groups = int(rng.integers(1, 12))
        per_group = []
        for size in rng.integers(0, 15, n_groups):
            c = np.r_[rng.random(size) ** rng.integers(1, 12), np.round(rng.random(2), 2)]
            if rng.random() < 0.3:
                c = np.r_[c, -np.inf, 0.0, 1.0, 5e-324]
            if rng.random() < 0.2:  # outside [0, 1]: negative and zero cuts, above 1
                c = np.r_[c, -0.25, -0.0, 1.5]
            per_group.append(np.sort(c))
        starts = np.r_[0, np.cumsum([c.size for c in per_group])]
        cuts = np.concatenate(per_group)
        offsets = rng.integers(-1, 50, n_groups)
        finite = cuts[np.isfinite(cuts)]
        values = np.r_[
            rng.random(300) ** rng.integers(1, 12),
            finite,
            np.nextafter(finite, -1.0),
            np.nextafter(finite, 2.0),
            0.0,
            -0.0,
            1.0,
        ]
        values = np.r_[np.clip(values, -0.0, 1.0), -0.5, -0.25, -1e-300, 1.5, 3.0, np.inf, np.nan]
        groups = rng.integers(0, n_groups, values.size)
        finder = GroupedCuts(cuts, starts, side=side, offsets=offsets)
        got = finder.count(values, groups)
        # a strided column (a class of a block) is read in place: the same counts
        block = np.column_stack([values, rng.random(values.size)])
        np.testing.assert_array_equal(finder.count(block[:, 0], groups), got)
        want = [
            np.searchsorted(per_group[g], v, side=side) + offsets[g] if offsets[g] >= 0 else -1
            for v, g in zip(values, groups, strict=True)
        ]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "case", ["spread", "crowded", "one-cell", "no-positives", "all-positive", "chunks"]
)
def test_replicated_kde_moments_equal_each_replicate_alone(case, monkeypatch):
    """The replicated moments (a point-ordered sparse product, dense products for the
    crowded cells, chunks merged on the cells they touch) against each replicate's
    weights added alone (one bincount per power)."""
    from calcore.statistics import kde_cells
    from calcore.statistics.kde_cells import KDELayout, KDESums

    rng = np.random.default_rng(30)
    n = 5000
    s = {
        "spread": lambda: rng.random(n),
        "crowded": lambda: np.where(rng.random(n) < 0.7, rng.random(n) * 1e-4, rng.random(n)),
        "one-cell": lambda: np.full(n, 0.0004),
        "no-positives": lambda: rng.random(n) ** 4,
        "all-positive": lambda: rng.random(n) ** 4,
        "chunks": lambda: np.where(rng.random(n) < 0.5, rng.random(n) * 1e-3, rng.random(n)),
    }[case]()
    o = {"no-positives": np.zeros(n), "all-positive": np.ones(n)}.get(
        case, (rng.random(n) < s).astype(float)
    )
    if case == "chunks":  # several chunks, each touching other cells
        monkeypatch.setattr(kde_cells, "_CHUNK", 700)
        monkeypatch.setattr(kde_cells, "_CROWDED_ROWS", 100)
    w = rng.integers(0, 4, (6, n)).astype(float)
    w[2] = 0.0  # an empty replicate
    w[3] = rng.random(n) * 2.5  # real weights
    layout = KDELayout.for_bandwidth(0.02)
    reps = KDESums.zeros(layout, replicates=w.shape[0])
    reps.add(layout, s, o, np.ascontiguousarray(w.T).T)
    got = reps.dense(layout.n_cells)
    for r in range(w.shape[0]):
        alone = KDESums.zeros(layout)
        alone.add(layout, s, o, w[r])
        np.testing.assert_allclose(got[r], alone.moments, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize(
    "case", ["100 classes", "one bin", "weights", "2 classes", "1000 classes", "chosen", "cut"]
)
def test_classwise_densest_cells_equal_each_replicate_alone(case, monkeypatch):
    """Replicated class-wise sums, each class's most crowded cell by a dense product
    (points._add_densest_cells) and the others sparse, against add_rows of each
    replicate's weights alone; several blocks of rows."""
    from calcore.statistics import points
    from calcore.statistics.points import RowBatch, add_rows, reduction_edges

    n, n_classes = {"2 classes": (600, 2), "1000 classes": (60, 1000)}.get(case, (600, 100))
    rng = np.random.default_rng(31)
    logits = rng.normal(size=(n, n_classes)) * 2.0
    logits[np.arange(n), rng.integers(0, n_classes, n)] += 5.0
    if case == "one bin":
        logits[:, 3] = -50.0  # class 3: every point in its lowest bin
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    preds = calcore.Predictions.from_probs(probs, rng.integers(0, n_classes, n))
    batch = RowBatch.of(preds)
    classes = np.array([1, 3, 7, 40]) if case == "chosen" else None
    edges = reduction_edges(
        batch, "class-wise", bins=15, classes=classes, min_score=1e-3 if case == "cut" else None
    )
    monkeypatch.setattr(points, "_ADD_VALUES", 64 * n_classes)  # blocks of 64 rows
    dense_blocks = []
    plain = points._add_densest_cells

    def counted(sums, edges, cells, *args):
        rest = plain(sums, edges, cells, *args)
        dense_blocks.append(rest is not cells)
        return rest

    monkeypatch.setattr(points, "_add_densest_cells", counted)
    w = rng.integers(0, 4, (5, n)).astype(float)
    w[1] = 0.0
    if case == "weights":
        w[2:] *= rng.random(n) * 3.0
    w = np.ascontiguousarray(w.T).T
    got = CellSums.zeros(edges.n_cells, replicates=5)
    add_rows(got, edges, batch, "class-wise", weights=w, classes=classes)
    for r in range(5):
        one = CellSums.zeros(edges.n_cells)
        add_rows(one, edges, batch, "class-wise", weights=w[r], classes=classes)
        for name in ("weight", "score", "outcome"):
            np.testing.assert_allclose(
                getattr(got, name)[r], getattr(one, name), rtol=1e-12, atol=1e-12, err_msg=name
            )
    assert any(dense_blocks)  # the dense path was taken


def test_rows_operator_equals_the_coo_conversion_with_duplicates():
    """The grid product's CSR (kde_cells._rows_operator: rows counted, each row's entries
    in the order given, duplicates kept) multiplies as scipy's COO conversion does."""
    import scipy.sparse as sp

    from calcore.statistics.kde_cells import _rows_operator

    rng = np.random.default_rng(40)
    shape = (50, 30)
    rows = [rng.integers(0, 50, 400), rng.integers(0, 50, (20, 7))]
    cols = [rng.integers(0, 30, 400), rng.integers(0, 3, (20, 7))]  # many duplicates
    vals = [rng.normal(size=400), rng.normal(size=(20, 7))]
    got = _rows_operator(rows, cols, vals, shape)
    flat = [np.concatenate([np.ravel(a) for a in x]) for x in (rows, cols, vals)]
    want = sp.csr_matrix((flat[2], (flat[0], flat[1])), shape=shape)
    x = rng.normal(size=(30, 5))
    np.testing.assert_allclose(got @ x, want @ x, rtol=1e-13, atol=1e-13)
    assert _rows_operator([], [], [], shape).nnz == 0
