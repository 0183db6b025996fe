"""Tests of calcore.foundation.binning against brute-force definitions written in this file.

* equal-width: bin k is ``k/B <= s < (k+1)/B`` with the correctly rounded Python
  float ``k/B`` as edge, found by a loop over k (never ``floor(s * B)``);
* equal-mass: bin k holds ranks ``[floor(k m/B), floor((k+1) m/B))`` and a block of
  equal scores goes to the bin of its first member, by a loop over the sorted points;
* bin-count rules from integer arithmetic (``(n-1).bit_length()`` is ``ceil(log2 n)``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calcore import CalcoreError, assign_bins, resolve_binning
from calcore.foundation.binning import BINNING_SCHEMES, BinningScheme, equal_width_index

# --------------------------------------------------------------------------- references


def ref_equal_width(s: float, n_bins: int) -> int:
    """Largest k with k/B <= s (Python's k / B is correctly rounded); 1.0 in the last bin."""
    k = 0
    for j in range(n_bins):
        if j / n_bins <= s:
            k = j
    return k


def ref_rank_bins(scores, groups, bins_per_group):
    """Equal-mass by a loop: ranks within each group, ties go to their first member's bin.

    Returns the within-group bin index of every point.
    """
    scores = list(map(float, scores))
    groups = list(map(int, groups))
    out = [None] * len(scores)
    for g in set(groups):
        idx = sorted((i for i in range(len(scores)) if groups[i] == g), key=lambda i: scores[i])
        m, n_bins = len(idx), bins_per_group[g]
        first_rank = {}
        for r, i in enumerate(idx):
            first_rank.setdefault(scores[i], r)
        for i in idx:
            r = first_rank[scores[i]]
            hits = [k for k in range(n_bins) if (k * m) // n_bins <= r < ((k + 1) * m) // n_bins]
            assert len(hits) == 1
            out[i] = hits[0]
    return np.array(out)


def within_group_index(assignment):
    return assignment.bin_index[assignment.point_bin]


def sturges(n):
    return (n - 1).bit_length() + 1  # ceil(log2 n) + 1 for n >= 1


def cube_root(n):
    c = 1
    while c**3 < n:
        c += 1
    return c


# --------------------------------------------------------------------------- equal-width


def test_plain_floor_would_be_wrong_here():
    """The premise of the edge test: floor(fl(15/22) * 22) is 14, not 15."""
    assert math.floor((15 / 22) * 22) == 14
    assert equal_width_index(np.array([15 / 22]), 22)[0] == 15


@pytest.mark.parametrize("n_bins", range(1, 61))
def test_every_representable_edge_lands_in_its_bin(n_bins):
    k = np.arange(n_bins)
    edges = np.array([j / n_bins for j in range(n_bins)])
    np.testing.assert_array_equal(equal_width_index(edges, n_bins), k)
    # the largest float below each inner edge belongs to the previous bin
    below = np.nextafter(edges[1:], -np.inf)
    np.testing.assert_array_equal(equal_width_index(below, n_bins), k[1:] - 1)
    # and through assign_bins
    a = assign_bins(edges, binning="equal-width", bins=n_bins)
    np.testing.assert_array_equal(a.point_bin, k)
    a = assign_bins(np.r_[edges, 1.0, 0.0], binning="equal-width", bins=n_bins)
    assert a.point_bin[-2] == n_bins - 1 and a.point_bin[-1] == 0


@pytest.mark.parametrize("n_bins", [97, 1000, 12345, 10**6])
def test_edges_for_larger_bin_counts(n_bins):
    k = np.unique(np.random.default_rng(n_bins).integers(1, n_bins, 5000))
    edges = k / n_bins
    np.testing.assert_array_equal(equal_width_index(edges, n_bins), k)
    np.testing.assert_array_equal(equal_width_index(np.nextafter(edges, -np.inf), n_bins), k - 1)


def test_edges_for_huge_bin_counts():
    n_bins = 10**8
    k = np.unique(np.random.default_rng(0).integers(1, n_bins, 20000))
    np.testing.assert_array_equal(equal_width_index(k / n_bins, n_bins), k)


def test_equal_width_random_scores_vs_loop():
    rng = np.random.default_rng(1)
    s = np.r_[rng.random(300), np.round(rng.random(200), 2), 0.0, 1.0, 0.5]
    for n_bins in (1, 3, 7, 10, 15, 22):
        got = assign_bins(s, binning="equal-width", bins=n_bins).point_bin
        np.testing.assert_array_equal(got, [ref_equal_width(x, n_bins) for x in s])


def test_equal_width_empty_bins_kept_and_edges():
    s = np.array([0.0, 0.05, 0.95, 1.0])
    a = assign_bins(s, binning="equal-width", bins=10)
    assert a.n_bins_total == 10
    np.testing.assert_array_equal(a.point_bin, [0, 0, 9, 9])
    np.testing.assert_array_equal(
        np.bincount(a.point_bin, minlength=10), [2, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    )
    np.testing.assert_array_equal(a.lower_edge, [k / 10 for k in range(10)])
    np.testing.assert_array_equal(a.upper_edge, [(k + 1) / 10 for k in range(10)])
    np.testing.assert_array_equal(a.bin_index, np.arange(10))
    np.testing.assert_array_equal(a.bin_group, np.zeros(10))


def test_equal_width_with_groups_and_empty_group():
    s = np.array([0.1, 0.9, 0.5, 0.3])
    g = np.array([0, 0, 2, 2])
    a = assign_bins(s, g, n_groups=3, binning="equal-width", bins=2)
    assert a.n_bins_total == 6  # the empty group 1 keeps its 2 empty bins
    np.testing.assert_array_equal(a.bin_group, [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(a.point_bin, [0, 1, 5, 4])


# --------------------------------------------------------------------------- equal-mass


@pytest.mark.parametrize(("n", "n_bins"), [(10, 3), (100, 15), (7, 7), (31, 4), (5, 8)])
def test_equal_mass_sizes_without_ties(n, n_bins):
    s = np.random.default_rng(n).permutation(n) / n  # distinct scores, shuffled
    a = assign_bins(s, binning="equal-mass", bins=n_bins)
    counts = np.bincount(a.point_bin, minlength=n_bins)
    assert a.n_bins_total == n_bins and counts.sum() == n
    assert set(counts.tolist()) <= {n // n_bins, -(-n // n_bins)}
    # exactly the ranks [floor(k n / B), floor((k+1) n / B))
    np.testing.assert_array_equal(
        counts, [((k + 1) * n) // n_bins - (k * n) // n_bins for k in range(n_bins)]
    )
    np.testing.assert_array_equal(a.point_bin, ref_rank_bins(s, np.zeros(n), {0: n_bins}))


def test_equal_mass_tie_block_goes_to_first_member_bin():
    # sorted: 0.1, 0.2, six 0.5 (ranks 2..7), 0.8, 0.9; n = 10, B = 5: ranks [0,2), [2,4), ...
    s = np.array([0.5, 0.9, 0.5, 0.1, 0.5, 0.5, 0.2, 0.5, 0.8, 0.5])
    a = assign_bins(s, binning="equal-mass", bins=5)
    expected = np.array([1, 4, 1, 0, 1, 1, 0, 1, 4, 1])  # the block starts at rank 2 -> bin 1
    np.testing.assert_array_equal(a.point_bin, expected)
    np.testing.assert_array_equal(a.point_bin, ref_rank_bins(s, np.zeros(10), {0: 5}))
    np.testing.assert_array_equal(np.bincount(a.point_bin, minlength=5), [2, 6, 0, 0, 2])
    assert a.n_bins_total == 5  # empty bins kept
    np.testing.assert_array_equal(a.lower_edge, [0.1, 0.5, np.nan, np.nan, 0.8])
    np.testing.assert_array_equal(a.upper_edge, [0.2, 0.5, np.nan, np.nan, 0.9])


def test_equal_mass_all_equal_scores_one_bin():
    a = assign_bins(np.full(9, 0.3), binning="equal-mass", bins=3)
    np.testing.assert_array_equal(a.point_bin, np.zeros(9))
    np.testing.assert_array_equal(np.bincount(a.point_bin, minlength=3), [9, 0, 0])


def test_equal_mass_with_groups_vs_loop():
    rng = np.random.default_rng(5)
    s = np.round(rng.random(200), 1)  # heavy ties
    g = rng.integers(0, 3, 200)
    a = assign_bins(s, g, n_groups=4, binning="equal-mass", bins=4)
    assert a.n_bins_total == 16  # group 3 is empty but keeps its 4 bins
    np.testing.assert_array_equal(a.bin_group, np.repeat(np.arange(4), 4))
    np.testing.assert_array_equal(a.bin_group[a.point_bin], g)
    np.testing.assert_array_equal(within_group_index(a), ref_rank_bins(s, g, {0: 4, 1: 4, 2: 4}))


def test_points_per_bin():
    rng = np.random.default_rng(6)
    s = rng.random(53)
    g = np.r_[np.zeros(40, int), np.ones(13, int)]
    a = assign_bins(s, g, n_groups=3, binning="points-per-bin", bins=10)
    # B = floor(40/10) = 4 and floor(13/10) = 1; the empty group 2 gets none
    np.testing.assert_array_equal(a.bin_group, [0, 0, 0, 0, 1])
    np.testing.assert_array_equal(within_group_index(a), ref_rank_bins(s, g, {0: 4, 1: 1}))
    np.testing.assert_array_equal(np.bincount(a.point_bin), [10, 10, 10, 10, 13])
    # fewer points than k: one bin
    a = assign_bins(rng.random(3), binning="points-per-bin", bins=10)
    assert a.n_bins_total == 1 and (a.point_bin == 0).all()
    assert BinningScheme("points-per-bin", 7).n_bins(20) == 2


def test_unique_single_group():
    s = np.array([0.7, 0.2, 0.9, 0.2, 0.7, 0.7])
    a = assign_bins(s, binning="unique")
    np.testing.assert_array_equal(a.point_bin, [1, 0, 2, 0, 1, 1])
    np.testing.assert_array_equal(a.bin_index, [0, 1, 2])
    np.testing.assert_array_equal(a.lower_edge, [0.2, 0.7, 0.9])
    np.testing.assert_array_equal(a.lower_edge, a.upper_edge)


def test_unique_one_bin_per_distinct_value_per_group():
    s = np.array([0.2, 0.7, 0.2, 0.7, 0.2, 0.9, 0.7])
    g = np.array([0, 0, 0, 1, 1, 1, 1])
    a = assign_bins(s, g, n_groups=3, binning="unique")
    # group 0: {0.2, 0.7}; group 1: {0.2, 0.7, 0.9}; group 2: none
    # (got bin_group [0, 0, 0, 1, 1]: 3 bins for group 0 and 2 for group 1)
    np.testing.assert_array_equal(a.bin_group, [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(a.bin_index, [0, 1, 0, 1, 2])
    np.testing.assert_array_equal(a.point_bin, [0, 1, 0, 3, 2, 4, 3])
    np.testing.assert_array_equal(a.lower_edge, [0.2, 0.7, 0.2, 0.7, 0.9])


def test_unique_groups_with_ties_do_not_crash():
    # top-label view of probs [.6 .4], [.6 .4], [.3 .7], [.8 .2], [.8 .2]: group 0 has values
    # {0.6, 0.8}, group 1 has {0.7}; got "ValueError: repeats may not contain negative values"
    a = assign_bins(
        np.array([0.6, 0.6, 0.7, 0.8, 0.8]), np.array([0, 0, 1, 0, 0]), binning="unique"
    )
    np.testing.assert_array_equal(a.bin_group, [0, 0, 1])
    np.testing.assert_array_equal(a.point_bin, [0, 0, 2, 1, 1])


def test_unique_random_vs_definition():
    rng = np.random.default_rng(8)
    s = rng.integers(0, 12, 300) / 11
    g = rng.integers(0, 4, 300)
    a = assign_bins(s, g, binning="unique")
    for grp in range(4):
        values = sorted(set(s[g == grp].tolist()))
        assert (a.bin_group == grp).sum() == len(values)
        for i in np.flatnonzero(g == grp):
            b = a.point_bin[i]
            assert a.bin_group[b] == grp and a.bin_index[b] == values.index(s[i])


@pytest.mark.parametrize(
    "n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 26, 27, 28, 63, 64, 65, 100, 125, 126, 1000, 1001]
)
def test_bin_count_rules(n):
    assert BinningScheme("equal-width", "sturges").n_bins(n) == sturges(n)
    assert BinningScheme("equal-mass", "cube-root").n_bins(n) == cube_root(n)
    s = np.random.default_rng(n).random(n)
    assert assign_bins(s, binning="equal-width", bins="sturges").n_bins_total == sturges(n)
    assert assign_bins(s, binning="equal-mass", bins="cube-root").n_bins_total == cube_root(n)
    assert assign_bins(s, binning="equal-mass", bins="sturges").n_bins_total == sturges(n)


def test_bin_count_rules_per_group():
    s = np.random.default_rng(2).random(36)
    g = np.r_[np.zeros(27, int), np.ones(9, int)]
    a = assign_bins(s, g, n_groups=2, binning="equal-width", bins="cube-root")
    np.testing.assert_array_equal(np.bincount(a.bin_group), [cube_root(27), cube_root(9)])  # 3, 3
    a = assign_bins(s, g, n_groups=3, binning="equal-mass", bins="sturges")
    np.testing.assert_array_equal(
        np.bincount(a.bin_group, minlength=3), [sturges(27), sturges(9), 0]
    )
    a = assign_bins(s, g, n_groups=3, binning="equal-mass", bins="cube-root")
    np.testing.assert_array_equal(np.bincount(a.bin_group, minlength=3), [3, 3, 0])


def test_rule_gives_empty_group_no_bins_for_equal_width():
    s = np.random.default_rng(2).random(36)
    g = np.r_[np.zeros(27, int), np.ones(9, int)]
    for rule in ("sturges", "cube-root"):
        a = assign_bins(s, g, n_groups=3, binning="equal-width", bins=rule)
        assert np.bincount(a.bin_group, minlength=3)[2] == 0


# --------------------------------------------------------------------------- resolve_binning


def test_resolve_binning_valid():
    assert resolve_binning("equal-width", 15) == BinningScheme("equal-width", 15)
    assert resolve_binning("equal-mass", np.int64(4)).bins == 4
    assert type(resolve_binning("equal-mass", np.int64(4)).bins) is int
    assert resolve_binning("unique", None) == BinningScheme("unique", None)
    assert resolve_binning("equal-width", "sturges").bins == "sturges"
    scheme = BinningScheme("equal-mass", 3)
    assert resolve_binning(scheme) is scheme
    assert set(BINNING_SCHEMES) == {"equal-width", "equal-mass", "points-per-bin", "unique"}


@pytest.mark.parametrize(
    ("binning", "bins", "pattern"),
    [
        ("quantile", 10, r"^binning must be one of \['equal-width', .*'unique'\]; got 'quantile'"),
        ("equal-width", 0, r"^The number of bins \(bins\) must be a positive integer; got 0\."),
        ("equal-mass", -1, r"^The number of bins \(bins\) must be a positive integer; got -1\."),
        (
            "equal-width",
            1.5,
            r"^The number of bins \(bins\) must be a positive integer; got 1\.5\.",
        ),
        (
            "equal-width",
            True,
            r"^The number of bins \(bins\) must be a positive integer; got True\.",
        ),
        (
            "equal-width",
            None,
            r"^The number of bins \(bins\) must be a positive integer; got None\.",
        ),
        ("points-per-bin", 0, r"^The points per bin \(bins\) must be a positive integer; got 0\."),
        (
            "points-per-bin",
            "sturges",
            r"^bins must be a positive integer for binning='points-per-bin'; got 'sturges'",
        ),
        (
            "equal-width",
            "scott",
            r"^bins must be a positive integer or one of \['sturges', 'cube-root'\] .*got 'scott'",
        ),
    ],
)
def test_resolve_binning_errors(binning, bins, pattern):
    with pytest.raises(CalcoreError, match=pattern):
        resolve_binning(binning, bins)
    with pytest.raises(CalcoreError, match=pattern):
        assign_bins(np.array([0.1, 0.2]), binning=binning, bins=bins)


# --------------------------------------------------------------------------- properties


score_lists = st.one_of(
    st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=80),
    st.lists(
        st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 1.0, 1 / 3, 15 / 22]),
        min_size=1,
        max_size=80,
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scores=score_lists,
    data=st.data(),
    binning=st.sampled_from(["equal-width", "equal-mass", "points-per-bin", "unique"]),
    n_bins=st.integers(1, 12),
    n_groups=st.integers(1, 3),
)
def test_properties_every_point_in_one_bin_and_bins_ordered(
    scores, data, binning, n_bins, n_groups
):
    if binning == "unique":
        n_groups = 1  # several groups: see test_unique_*
    check_properties(np.array(scores), data, binning, n_bins, n_groups)


def check_properties(s, data, binning, n_bins, n_groups):
    g = np.array(
        data.draw(st.lists(st.integers(0, n_groups - 1), min_size=len(s), max_size=len(s)))
    )
    a = assign_bins(s, g, n_groups=n_groups, binning=binning, bins=n_bins)
    # exactly one bin per point, inside its own group
    assert a.point_bin.shape == s.shape
    assert ((a.point_bin >= 0) & (a.point_bin < a.n_bins_total)).all()
    np.testing.assert_array_equal(a.bin_group[a.point_bin], g)
    assert np.bincount(a.point_bin, minlength=a.n_bins_total).sum() == s.size
    # bins numbered consecutively within each group
    for grp in range(n_groups):
        idx = a.bin_index[a.bin_group == grp]
        np.testing.assert_array_equal(idx, np.arange(idx.size))
    # bins ordered: every score of bin b <= every score of bin b' > b within a group
    for grp in range(n_groups):
        sel = g == grp
        for b in np.unique(a.point_bin[sel]):
            later = sel & (a.point_bin > b)
            if later.any():
                assert s[sel & (a.point_bin == b)].max() <= s[later].min()
    # scheme-specific definitions
    if binning == "equal-width":
        np.testing.assert_array_equal(
            within_group_index(a), [ref_equal_width(x, n_bins) for x in s]
        )
    elif binning == "unique":
        for grp in range(n_groups):
            assert (a.bin_group == grp).sum() == len(set(s[g == grp].tolist()))
            for b in np.unique(a.point_bin[g == grp]):
                assert len(set(s[a.point_bin == b].tolist())) == 1
    else:
        sizes = np.bincount(g, minlength=n_groups)
        per = {
            k: (n_bins if binning == "equal-mass" else max(1, int(sizes[k]) // n_bins))
            for k in range(n_groups)
        }
        np.testing.assert_array_equal(within_group_index(a), ref_rank_bins(s, g, per))
        # a block of ties is never split
        for value in set(s.tolist()):
            for grp in range(n_groups):
                sel = (s == value) & (g == grp)
                assert np.unique(a.point_bin[sel]).size <= 1


def test_properties_unique_several_groups():
    # the same properties on a fixed case with ties in several groups
    s = np.array([0.5, 0.5, 0.25, 0.5, 0.25, 0.25, 1.0, 0.0])
    g = np.array([0, 0, 1, 1, 1, 0, 2, 2])

    class Fixed:
        @staticmethod
        def draw(_strategy):
            return g.tolist()

    check_properties(s, Fixed, "unique", 1, 3)
