"""One take, one concat, one freeze (calcore.predictions.take / concat, frozen_array).

Each property is checked against numpy indexing done by hand on the arrays (the
reference), never against take or concat themselves: take then concat of a partition
gives the original back (weights and metadata included), take of a mask equals take of
its indices, and every array of the results is read-only.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calcore
from calcore.foundation.validation import frozen_array
from calcore.predictions import concat, take

CATEGORIES = np.array(["desktop", "mobile", "tablet"], dtype=object)


def _predictions(n: int, k: int, seed: int, *, logits: bool, weighted: bool, metadata: bool):
    """Random predictions with everything a row can carry, and the raw arrays they hold."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    y = rng.integers(0, k, n)
    preds = (
        calcore.Predictions.from_logits(z, y)
        if logits
        else calcore.Predictions.from_probs(rng.dirichlet(np.ones(k), n), y)
    )
    if weighted:
        preds = preds.with_sample_weight(rng.uniform(0.5, 2.0, n))
    if metadata:
        device = CATEGORIES[rng.integers(0, 3, n)]
        device[rng.random(n) < 0.2] = None
        age = rng.integers(18, 90, n).astype(float)
        age[rng.random(n) < 0.1] = np.nan
        preds = preds.with_metadata(
            {"device": device, "age": age, "id": rng.integers(0, 2**62, n, dtype=np.int64)}
        )
    return preds


def _arrays(preds) -> dict:
    """Every per-row array of ``preds``, metadata as the values each row reads as."""
    out = {"probs": preds.probs, "labels": preds.labels}
    if preds.logits is not None:
        out["logits"] = preds.logits
    if preds.sample_weight is not None:
        out["sample_weight"] = preds.sample_weight
    for name, col in preds.metadata.items():
        if col.kind == "categorical":
            shown = np.array(list(col.categories) + [None], dtype=object)
            out["meta:" + name] = shown[col.values]  # code -1: the last, None
        else:
            out["meta:" + name] = col.values
    return out


def _assert_rows(got, want: dict) -> None:
    arrays = _arrays(got)
    assert sorted(arrays) == sorted(want)
    for key, expected in want.items():
        np.testing.assert_array_equal(arrays[key], expected, err_msg=key)


def _assert_read_only(preds) -> None:
    for key, arr in _arrays(preds).items():
        if not key.startswith("meta:"):
            assert not arr.flags.writeable, key
            with pytest.raises(ValueError):
                arr[...] = 0
    for col in preds.metadata.values():
        assert col.values is None or not col.values.flags.writeable
    with pytest.raises(TypeError, match="read-only"):
        preds.metadata["new"] = None  # the columns dict is shared by every take and concat


flags = st.fixed_dictionaries(
    {"logits": st.booleans(), "weighted": st.booleans(), "metadata": st.booleans()}
)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 60),
    k=st.integers(2, 5),
    seed=st.integers(0, 2**31),
    n_parts=st.integers(1, 4),
    flags=flags,
)
def test_take_then_concat_of_a_partition_is_the_original(n, k, seed, n_parts, flags):
    preds = _predictions(n, k, seed, **flags)
    rng = np.random.default_rng(seed + 1)
    part_of = rng.integers(0, n_parts, n)
    order = np.argsort(part_of, kind="stable")  # the rows, part after part
    parts = [np.flatnonzero(part_of == j) for j in range(n_parts)]
    parts = [rows for rows in parts if rows.size]
    joined = concat([take(preds, rows) for rows in parts])
    # the reference: numpy's own indexing of the arrays, in the partition's order
    _assert_rows(joined, {key: arr[order] for key, arr in _arrays(preds).items()})
    assert joined.class_names == preds.class_names
    assert joined.normalized == preds.normalized
    for name, col in preds.metadata.items():
        assert joined.metadata[name].kind == col.kind
        assert joined.metadata[name].n_distinct == col.n_distinct
        assert joined.metadata[name].n_missing == col.n_missing
    _assert_read_only(joined)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(2, 4), seed=st.integers(0, 2**31), flags=flags)
def test_take_of_a_mask_is_take_of_its_indices_and_numpy_indexing(n, k, seed, flags):
    preds = _predictions(n, k, seed, **flags)
    mask = np.random.default_rng(seed).random(n) < 0.5
    want = {key: arr[mask] for key, arr in _arrays(preds).items()}
    by_mask, by_index = take(preds, mask), take(preds, np.flatnonzero(mask))
    _assert_rows(by_mask, want)
    _assert_rows(by_index, want)
    _assert_read_only(by_mask)
    _assert_read_only(by_index)
    assert preds.subset(mask).n_samples == int(mask.sum())  # the public name, the same take


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    k=st.integers(2, 4),
    seed=st.integers(0, 2**31),
    bounds=st.tuples(st.integers(-45, 45), st.integers(-45, 45), st.sampled_from([1, 2, -1])),
    flags=flags,
)
def test_take_of_a_slice_is_numpy_slicing(n, k, seed, bounds, flags):
    preds = _predictions(n, k, seed, **flags)
    rows = slice(*bounds)
    got = take(preds, rows)
    _assert_rows(got, {key: arr[rows] for key, arr in _arrays(preds).items()})
    _assert_read_only(got)


def test_take_of_indices_repeats_reorders_and_counts_from_the_end():
    preds = _predictions(5, 3, 0, logits=True, weighted=True, metadata=True)
    rows = np.array([4, -1, 0, 0])
    _assert_rows(take(preds, rows), {k: a[rows] for k, a in _arrays(preds).items()})
    _assert_rows(take(preds, []), {k: a[:0] for k, a in _arrays(preds).items()})


def test_take_refuses_rows_it_cannot_read():
    preds = _predictions(5, 2, 0, logits=False, weighted=False, metadata=False)
    with pytest.raises(IndexError):
        take(preds, [5])
    with pytest.raises(IndexError):
        take(preds, np.ones(4, bool))  # a mask of the wrong length
    with pytest.raises(IndexError):
        take(preds, [0.5])


def test_take_keeps_the_load_report_and_concat_of_one_part_is_that_part():
    preds = _predictions(6, 2, 1, logits=False, weighted=False, metadata=False)
    assert concat([preds]) is preds
    assert concat(iter([take(preds, [0]), take(preds, [1])])).load_report is None


def test_concat_refuses_mixed_weights_other_classes_and_nothing():
    a = _predictions(6, 2, 1, logits=False, weighted=True, metadata=False)
    b = _predictions(4, 2, 2, logits=False, weighted=False, metadata=False)
    with pytest.raises(calcore.CalcoreError, match="^concat: some parts have row weights"):
        concat([a, b])
    c = _predictions(4, 3, 2, logits=False, weighted=False, metadata=False)
    with pytest.raises(calcore.CalcoreError, match=r"^concat: the parts have different classes"):
        concat([b, c])
    with pytest.raises(
        calcore.CalcoreError, match=r"part 0: \['0', '1'\], part 2: \['0', '1', '2'\]"
    ):
        concat([b, b, c])  # the message names the part that differs from the first
    with pytest.raises(calcore.CalcoreError, match="^concat needs at least one"):
        concat([])


def test_concat_keeps_logits_only_when_every_part_has_them():
    a = _predictions(6, 3, 1, logits=True, weighted=False, metadata=False)
    b = _predictions(4, 3, 2, logits=False, weighted=False, metadata=False)
    mixed = concat([a, b])
    assert mixed.logits is None
    np.testing.assert_array_equal(mixed.probs, np.concatenate([a.probs, b.probs]))


def test_concat_joins_categories_and_leaves_out_columns_some_part_lacks():
    base = calcore.Predictions.from_probs([[0.8, 0.2], [0.4, 0.6]], [0, 1])
    a = base.with_metadata({"device": ["mobile", None], "shop": ["x", "y"]})
    b = base.with_metadata({"device": ["tablet", "desktop"]})
    both = concat([a, b])
    assert list(both.metadata) == ["device"]  # "shop" cannot slice b's rows
    device = both.metadata["device"]
    assert device.categories == ("desktop", "mobile", "tablet")
    assert device.values.tolist() == [1, -1, 2, 0]
    assert (device.n_distinct, device.n_missing) == (3, 1)


def test_concat_keeps_exact_integers_across_int64_and_uint64_parts():
    base = calcore.Predictions.from_probs([[0.8, 0.2]], [0])
    big = 2**63 + 5
    a = base.with_metadata({"id": np.array([7], np.int64)})
    b = base.with_metadata({"id": np.array([big], np.uint64)})
    ids = concat([a, b]).metadata["id"]
    assert ids.values.dtype == np.uint64 and ids.values.tolist() == [7, big]
    c = base.with_metadata({"id": np.array([-1], np.int64)})
    assert "id" not in concat([c, b]).metadata  # no exact type holds -1 and 2**63 + 5


def test_frozen_array_copies_only_what_it_does_not_own():
    mine = np.arange(6.0).reshape(3, 2).T  # a view, not C-ordered: frozen as it is
    assert frozen_array(mine, owned=True) is mine and not mine.flags.writeable
    theirs = np.arange(4.0)
    copy = frozen_array(theirs, owned=False)
    assert copy is not theirs and theirs.flags.writeable and not copy.flags.writeable
    assert frozen_array(copy, owned=False) is copy  # read-only, owning: shared
    view = copy[::2]
    assert frozen_array(view, owned=False) is not view  # a view: its base may change
    assert frozen_array(None, owned=False) is None


def test_the_constructors_never_freeze_the_callers_arrays():
    probs, labels = np.array([[0.9, 0.1], [0.3, 0.7]]), np.array([0, 1])
    z = np.log(probs)
    calcore.Predictions.from_probs(probs, labels).with_sample_weight(np.ones(2))
    calcore.Predictions.from_logits(z, labels)
    assert probs.flags.writeable and labels.flags.writeable and z.flags.writeable
