"""Tests of calcore.Predictions: validation, every error message, softmax, derived fields.

Expected values are computed here independently: a float64 softmax written out
(subtract the row max, exp, normalise), argmax ties resolved by a Python loop over
each row, the simplex tolerance restated from its documented formula.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import calcore
from calcore import CalcoreError, Predictions

# --------------------------------------------------------------------------- references


def softmax64(z):
    """Softmax in float64 from the definition: subtract the row max, exp, normalise."""
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def first_argmax_loop(p):
    """Lowest index attaining the row max, and whether the max is shared."""
    pred, tied = [], []
    for row in np.asarray(p).tolist():
        top = max(row)
        hits = [j for j, v in enumerate(row) if v == top]
        pred.append(hits[0])
        tied.append(len(hits) > 1)
    return np.array(pred), np.array(tied)


def at(row, col=None, src="probs"):
    """Regex for the start of a message locating (row, column) of ``src``."""
    return rf"^{src}, row {row} \(0-based\)" + ("" if col is None else f", column {col}") + ": "


def tolerance(n_classes, eps):
    """The documented tolerance 1e-5 sqrt(L) + L eps."""
    return 1e-5 * np.sqrt(n_classes) + n_classes * eps


GOOD_P = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.25, 0.5, 0.25]])
GOOD_Y = np.array([0, 2, 1])


# --------------------------------------------------------------------------- from_probs: happy path


def test_from_probs_basic_fields():
    preds = Predictions.from_probs(GOOD_P, GOOD_Y, ["cat", "dog", "eel"])
    assert preds.n_samples == 3 and preds.n_classes == 3
    assert preds.probs.dtype == np.float64 and preds.labels.dtype == np.int64
    np.testing.assert_array_equal(preds.probs, GOOD_P)
    np.testing.assert_array_equal(preds.labels, [0, 2, 1])
    assert preds.class_names == ("cat", "dog", "eel")
    assert preds.logits is None
    np.testing.assert_array_equal(preds.class_counts, [1, 1, 1])


def test_default_class_names_and_int_and_list_input():
    preds = Predictions.from_probs([[1, 0], [0, 1]], [True, False])
    assert preds.class_names == ("0", "1")
    assert preds.probs.dtype == np.float64
    np.testing.assert_array_equal(preds.labels, [1, 0])
    preds2 = Predictions.from_probs(GOOD_P.tolist(), [0.0, 2.0, 1.0])  # integral floats are fine
    np.testing.assert_array_equal(preds2.labels, [0, 2, 1])
    assert preds2.labels.dtype == np.int64


def test_arrays_read_only_and_caller_array_not_aliased_nor_frozen():
    p = GOOD_P.copy()
    y = GOOD_Y.copy()
    preds = Predictions.from_probs(p, y)
    for arr in (preds.probs, preds.labels, preds.predicted, preds.confidence, preds.correct):
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[0] = 0
    assert p.flags.writeable and y.flags.writeable
    assert not np.shares_memory(preds.probs, p)
    assert not np.shares_memory(preds.labels, y)
    p[0, 0] = 0.0  # mutating the caller's array leaves the predictions unchanged
    y[0] = 1
    assert preds.probs[0, 0] == 0.7 and preds.labels[0] == 0


def test_caller_array_not_aliased_when_renormalising():
    p = np.array([[0.5, 0.4], [0.6, 0.4]])  # row 0 sums to 0.9
    preds = Predictions.from_probs(p, [0, 1], renormalize=True)
    assert not np.shares_memory(preds.probs, p)
    np.testing.assert_array_equal(p, [[0.5, 0.4], [0.6, 0.4]])  # caller's data untouched
    assert p.flags.writeable


def test_logits_not_aliased_nor_frozen():
    z = np.array([[1.0, 2.0], [3.0, -1.0]])
    preds = Predictions.from_logits(z, [0, 1])
    assert z.flags.writeable
    assert not np.shares_memory(preds.logits, z)
    assert not preds.logits.flags.writeable and not preds.probs.flags.writeable
    z[0, 0] = 100.0
    assert preds.logits[0, 0] == 1.0


# --------------------------------------------------------------------------- simplex tolerance


def test_rows_within_tolerance_accepted_untouched():
    tol = tolerance(3, np.finfo(np.float64).eps)
    p = np.array([[0.5, 0.3, 0.2 + 0.9 * tol], [0.5, 0.3, 0.2 - 0.9 * tol], [0.2, 0.3, 0.5]])
    preds = Predictions.from_probs(p, [0, 1, 2])
    np.testing.assert_array_equal(preds.probs, p)  # bit-for-bit, never rescaled
    preds_r = Predictions.from_probs(p, [0, 1, 2], renormalize=True)
    np.testing.assert_array_equal(preds_r.probs, p)


def test_row_beyond_tolerance_message_names_row_and_sum():
    p = np.array([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.5, 0.3, 0.201], [0.4, 0.4, 0.4]])
    with pytest.raises(CalcoreError, match=at(2) + r"probabilities sum to 1\.001,.*2 row\(s\) are"):
        Predictions.from_probs(p, [0, 1, 2, 0])
    with pytest.raises(CalcoreError, match=at(1) + r"probabilities sum to 0\.9,.*renormalize=True"):
        Predictions.from_probs([[0.5, 0.5], [0.5, 0.4]], [0, 1])


def test_float32_tolerance_is_wider():
    # tolerance: 1e-5 sqrt(3) + 3 eps, i.e. 1.7321e-5 for float64 and 1.7678e-5 for float32 input
    tol32 = tolerance(3, np.finfo(np.float32).eps)
    tol64 = tolerance(3, np.finfo(np.float64).eps)
    p32 = np.array([[0.5, 0.25, 0.25 + 1.75e-5]], dtype=np.float32)
    dev = abs(float(p32.astype(np.float64).sum()) - 1.0)
    assert tol64 < dev < tol32
    preds = Predictions.from_probs(p32, [0])  # accepted, values kept (as float64)
    np.testing.assert_array_equal(preds.probs, p32.astype(np.float64))
    with pytest.raises(CalcoreError, match=r"row 0 \(0-based\): probabilities sum to 1\.00002"):
        Predictions.from_probs(p32.astype(np.float64), [0])


def test_renormalize_rescales_only_rows_beyond_tolerance():
    tol = tolerance(2, np.finfo(np.float64).eps)
    p = np.array([[0.5, 0.5 + 0.5 * tol], [1.0, 1.0], [0.3, 0.6], [2.0, 0.0]])
    preds = Predictions.from_probs(p, [0, 1, 1, 0], renormalize=True)
    assert preds.probs[0, 1] == 0.5 + 0.5 * tol  # within tolerance: untouched
    np.testing.assert_array_equal(preds.probs[1], [0.5, 0.5])
    np.testing.assert_allclose(preds.probs[2], [1 / 3, 2 / 3], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(preds.probs[3], [1.0, 0.0])


def test_renormalize_rejects_zero_rows():
    with pytest.raises(CalcoreError, match=at(1) + r"probabilities sum to 0.*cannot be renormal"):
        Predictions.from_probs([[0.5, 0.5], [0.0, 0.0]], [0, 1], renormalize=True)


# --------------------------------------------------------------------------- from_probs: errors


@pytest.mark.parametrize(
    ("probs", "pattern"),
    [
        (np.array([["a", "b"], ["c", "d"]]), r"^probs: probability must be numeric, got dtype <U1"),
        (np.array([[0.5, 0.5]], dtype=object), r"^probs: probability must be numeric, got dt"),
        (np.array([0.5, 0.5]), r"must be a 2-D array.*got shape \(2,\).*\[1 - p, p\]"),
        (np.zeros((0, 3)), r"^probs: probability has no rows"),
        (np.ones((4, 1)), r"has 1 class column; at least 2 classes are needed"),
    ],
)
def test_from_probs_shape_and_dtype_errors(probs, pattern):
    with pytest.raises(CalcoreError, match=pattern):
        Predictions.from_probs(probs, np.zeros(len(probs), dtype=int))


@pytest.mark.parametrize(
    ("bad", "pattern"),
    [
        (np.nan, at(1, 2) + r"probability value nan is not a finite number"),
        (np.inf, at(1, 2) + r"probability value inf is not a finite number"),
        (-0.1, at(1, 2) + r"probability -0\.1 is negative.*logits"),
        (1.5, at(1, 2) + r"probability 1\.5 is greater than 1"),
    ],
)
def test_from_probs_value_errors_name_row_and_column(bad, pattern):
    p = GOOD_P.copy()
    p[1, 2] = bad
    p[2, 0] = bad  # a later bad value: the first one (row-major) is reported
    with pytest.raises(CalcoreError, match=pattern):
        Predictions.from_probs(p, GOOD_Y)


def test_source_name_used_in_messages():
    with pytest.raises(CalcoreError, match=at(0, 1, r"val\.npz") + "probability -1"):
        Predictions.from_probs([[1.0, -1.0]], [0], source="val.npz")


# --------------------------------------------------------------------------- labels and class names


@pytest.mark.parametrize(
    ("labels", "pattern"),
    [
        ([0, 1.5, 2], at(1) + r"label 1\.5 is not an integer class index"),
        ([0, 1, np.nan], at(2) + r"label nan is not an integer class index"),
        ([0, 3, 1], at(1) + r"label 3 is not a class index; there are 3 classes.*0\.\.2"),
        ([0, 1, -1], at(2) + r"label -1 is not a class index"),
        ([0, 1], r"labels must be a 1-D array with one entry per row \(3\), got shape \(2,\)"),
        ([[0], [1], [2]], r"one entry per row \(3\), got shape \(3, 1\)"),
        (["a", "b", "c"], r"labels must be integer class indices 0\.\.2, got dtype <U1"),
    ],
)
def test_label_errors(labels, pattern):
    with pytest.raises(CalcoreError, match=pattern):
        Predictions.from_probs(GOOD_P, labels)


@pytest.mark.parametrize(
    ("names", "pattern"),
    [
        (["a", "b"], r"^probs: 2 class names given for 3 score columns"),
        (["a", "b", "c", "d"], r"4 class names given for 3 score columns"),
        (["a", "  ", "c"], r"class name 1 is blank"),
        (["a", "", "c"], r"class name 1 is blank"),
        (["a", "b", "a"], r"class name 'a' is used for classes 0 and 2"),
    ],
)
def test_class_name_errors(names, pattern):
    with pytest.raises(CalcoreError, match=pattern):
        Predictions.from_probs(GOOD_P, GOOD_Y, names)
    with pytest.raises(CalcoreError, match=pattern.replace("^probs", "^logits")):
        Predictions.from_logits(np.log(GOOD_P), GOOD_Y, names)


def test_errors_are_value_errors():
    assert issubclass(CalcoreError, ValueError)


# --------------------------------------------------------------------------- from_logits


@pytest.mark.parametrize(
    "z",
    [
        np.array([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0], [-3.0, 0.5, 0.25]]),
        np.array([[1e4, -1e4, 0.0], [-1e4, -1e4 + 1.0, -1e4 + 2.0], [1e4, 1e4 - 1.0, 1e4 - 30.0]]),
        np.array([[700.0, 710.0, 0.0], [-800.0, -790.0, -805.0], [0.0, 0.0, -1e4]]),
    ],
)
def test_from_logits_equals_independent_softmax(z):
    preds = Predictions.from_logits(z, [0, 1, 2])
    ref = softmax64(z)
    assert np.isfinite(preds.probs).all()
    np.testing.assert_allclose(preds.probs, ref, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(preds.probs.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(preds.logits, z)


def test_from_logits_extreme_values_exact():
    preds = Predictions.from_logits([[1e4, -1e4], [-1e4, 1e4], [0.0, 0.0]], [0, 1, 0])
    np.testing.assert_array_equal(preds.probs, [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    np.testing.assert_array_equal(preds.predicted, [0, 1, 0])
    assert preds.n_tied_rows == 1


def test_from_logits_float32_input_computed_in_float64():
    rng = np.random.default_rng(3)
    z32 = (rng.normal(size=(50, 7)) * 20).astype(np.float32)
    preds = Predictions.from_logits(z32, rng.integers(0, 7, 50))
    assert preds.probs.dtype == np.float64 and preds.logits.dtype == np.float64
    np.testing.assert_array_equal(preds.logits, z32.astype(np.float64))
    np.testing.assert_allclose(
        preds.probs, softmax64(z32.astype(np.float64)), rtol=1e-12, atol=1e-300
    )
    # a float32 softmax would be off by ~1e-7 relative: make sure we are much closer than that
    e32 = np.exp(z32 - z32.max(axis=1, keepdims=True))
    p32 = e32 / e32.sum(axis=1, keepdims=True)
    assert np.abs(p32 - softmax64(z32)).max() > 1e-10


@pytest.mark.parametrize(
    ("bad", "pattern"),
    [
        (np.nan, at(1, 0, "logits") + r"logit value nan is not a finite number"),
        (-np.inf, at(1, 0, "logits") + r"logit value -inf is not a finite number"),
    ],
)
def test_from_logits_non_finite(bad, pattern):
    z = np.zeros((3, 2))
    z[1, 0] = bad
    with pytest.raises(CalcoreError, match=pattern):
        Predictions.from_logits(z, [0, 1, 0])


@pytest.mark.parametrize(
    ("z", "pattern"),
    [
        (np.array([["x", "y"]]), r"^logits: logit must be numeric"),
        (np.zeros(3), r"logit must be a 2-D array.*got shape \(3,\)"),
        (np.zeros((0, 2)), r"^logits: logit has no rows"),
        (np.zeros((2, 1)), r"logit has 1 class column"),
    ],
)
def test_from_logits_shape_errors(z, pattern):
    with pytest.raises(CalcoreError, match=pattern):
        Predictions.from_logits(z, np.zeros(len(z), dtype=int))


def test_from_logits_label_errors():
    with pytest.raises(CalcoreError, match=at(0, None, "logits") + "label 2 is not a class index"):
        Predictions.from_logits(np.zeros((2, 2)), [2, 0])
    with pytest.raises(CalcoreError, match=r"one entry per row \(2\)"):
        Predictions.from_logits(np.zeros((2, 2)), [0, 0, 0])


# --------------------------------------------------------------------------- derived fields


def test_predicted_lowest_index_on_ties_and_tie_count():
    p = np.array(
        [
            [0.4, 0.4, 0.2],  # tie 0/1 -> 0
            [0.2, 0.4, 0.4],  # tie 1/2 -> 1
            [0.3, 0.3, 0.4],  # unique max 2; tie below the max is not a tie
            [1 / 3, 1 / 3, 1 / 3],  # triple tie -> 0
            [0.1, 0.6, 0.3],
            [0.45, 0.1, 0.45],  # tie 0/2 -> 0
        ]
    )
    y = np.array([1, 1, 2, 0, 0, 2])
    preds = Predictions.from_probs(p, y)
    ref_pred, ref_tied = first_argmax_loop(p)
    np.testing.assert_array_equal(ref_pred, [0, 1, 2, 0, 1, 0])
    np.testing.assert_array_equal(preds.predicted, ref_pred)
    assert preds.n_tied_rows == int(ref_tied.sum()) == 4
    np.testing.assert_array_equal(preds.confidence, p.max(axis=1))
    np.testing.assert_array_equal(preds.correct, [0.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    assert preds.correct.dtype == np.float64


def test_derived_fields_random_against_loop():
    rng = np.random.default_rng(7)
    p = np.round(rng.dirichlet(np.ones(5), size=400), 1)  # many ties after rounding
    p = p / p.sum(axis=1, keepdims=True)
    y = rng.integers(0, 5, 400)
    preds = Predictions.from_probs(p, y)
    ref_pred, ref_tied = first_argmax_loop(preds.probs)
    np.testing.assert_array_equal(preds.predicted, ref_pred)
    assert preds.n_tied_rows == int(ref_tied.sum()) > 0
    np.testing.assert_array_equal(preds.confidence, [max(r) for r in preds.probs.tolist()])
    np.testing.assert_array_equal(preds.correct, (ref_pred == y).astype(float))
    np.testing.assert_array_equal(preds.class_counts, [int((y == k).sum()) for k in range(5)])


def test_subset_index_and_mask():
    z = np.array([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0], [-1.0, 3.0]])
    preds = Predictions.from_logits(z, [1, 0, 1, 1], ["neg", "pos"])
    sub = preds.subset([3, 0])
    np.testing.assert_array_equal(sub.probs, preds.probs[[3, 0]])
    np.testing.assert_allclose(sub.probs, softmax64(z[[3, 0]]), rtol=1e-14)
    np.testing.assert_array_equal(sub.labels, [1, 1])
    np.testing.assert_array_equal(sub.logits, z[[3, 0]])
    assert sub.class_names == ("neg", "pos")
    np.testing.assert_array_equal(sub.predicted, [1, 1])
    assert not sub.probs.flags.writeable and not sub.logits.flags.writeable
    masked = preds.subset(np.array([False, True, True, False]))
    np.testing.assert_array_equal(masked.labels, [0, 1])
    assert masked.n_tied_rows == 1  # row [1, 1] of the logits
    # subset with repeats (bootstrap resamples)
    rep = preds.subset(np.array([2, 2, 2]))
    assert rep.n_samples == 3 and rep.n_tied_rows == 3
    no_logits = Predictions.from_probs(GOOD_P, GOOD_Y).subset([1])
    assert no_logits.logits is None


def test_repr_mentions_kind():
    text = repr(Predictions.from_probs(GOOD_P, GOOD_Y))
    assert re.search(r"n_samples=3, n_classes=3, from=probs", text)
    assert "from=logits" in repr(Predictions.from_logits(np.zeros((1, 2)), [0]))


def test_public_namespace():
    assert calcore.Predictions is Predictions
    assert calcore.CalcoreError is CalcoreError


# --------------------------------------------------------------------------- calibrator outputs


def _base_preds():
    return Predictions.from_probs([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]], [0, 1, 1])


def test_calibrated_owned_fresh_array_is_frozen_in_place_not_copied():
    like = _base_preds()
    probs = np.array([[0.6, 0.4], [0.3, 0.7], [0.5, 0.5]])
    logits = np.log(probs)
    out = Predictions._calibrated(probs, like, logits=logits, owned=True)
    assert out.probs is probs and out.logits is logits
    assert not probs.flags.writeable and not logits.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        probs[0, 0] = 1.0


def test_calibrated_not_owned_never_aliases_nor_freezes():
    like = _base_preds()
    for values, normalized in (
        ([[0.6, 0.4], [0.3, 0.7], [0.5, 0.5]], True),
        ([[0.6, 0.9]] * 3, False),
    ):
        probs = np.array(values)
        logits = np.log(probs)
        out = Predictions._calibrated(probs, like, logits=logits, normalized=normalized)
        assert out.probs is not probs and out.logits is not logits
        assert probs.flags.writeable and logits.flags.writeable
        probs[0, 0], logits[0, 0] = 0.0, 0.0
        assert out.probs[0, 0] == 0.6 and out.logits[0, 0] == np.log(0.6)


def test_calibrated_owned_views_are_still_copied():
    # A writeable view may be written through its base by whoever holds it: copy it.
    like = _base_preds()
    buffer = np.array([[0.6, 0.4, 9.0], [0.3, 0.7, 9.0], [0.5, 0.5, 9.0]])
    out = Predictions._calibrated(buffer[:, :2], like, owned=True)
    buffer[0, 0] = 0.1
    assert out.probs[0, 0] == 0.6 and buffer.flags.writeable


def test_calibrated_shares_read_only_arrays_that_own_their_memory():
    like = _base_preds()
    out = Predictions._calibrated(like.probs, like)  # e.g. an identity step in a composition
    assert out.probs is like.probs


def test_calibrator_transform_outputs_are_read_only():
    from calcore.calibrators import make_calibrator

    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 4)) * 3
    labels = (rng.random(400)[:, None] > np.cumsum(softmax64(z / 2), axis=1)).sum(axis=1)
    preds = Predictions.from_logits(z, np.minimum(labels, 3))
    for name in ("ts", "cw-hb", "tl-hb", "ets"):
        out = make_calibrator(name).fit(preds).transform(preds)
        assert not out.probs.flags.writeable
        assert out.logits is None or not out.logits.flags.writeable


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.nan, r"row 1 \(0-based\), column 0: probability value nan is not a finite number"),
        (np.inf, r"row 1 \(0-based\), column 0: probability value inf is not a finite number"),
        (-0.25, r"row 1 \(0-based\), column 0: probability -0.25 is outside \[0, 1\]"),
        (1.5, r"row 1 \(0-based\), column 0: probability 1.5 is outside \[0, 1\]"),
    ],
)
def test_calibrated_unnormalised_rejects_values_outside_unit_interval(bad, message):
    values = np.full((3, 2), 0.5)
    values[1, 0] = bad
    with pytest.raises(CalcoreError, match=message):
        Predictions._calibrated(values, _base_preds(), normalized=False, owned=True)


def test_calibrated_rejects_non_finite_logits():
    z = np.zeros((3, 2))
    z[2, 1] = np.nan
    with pytest.raises(CalcoreError, match="calibrated logits"):
        Predictions._calibrated(np.full((3, 2), 0.5), _base_preds(), logits=z, owned=True)
    huge = np.full((3, 2), 1e308)  # finite, though their sum overflows
    out = Predictions._calibrated(np.full((3, 2), 0.5), _base_preds(), logits=huge, owned=True)
    assert out.logits is huge


def test_binary_argmax_fast_path_matches_the_general_rule():
    p = np.array([[0.5, 0.5], [0.2, 0.8], [0.7, 0.3], [1.0, 0.0]])
    preds = calcore.Predictions.from_probs(p, [0, 1, 1, 0])
    assert preds.predicted.tolist() == [0, 1, 0, 0]  # the tie goes to the lowest index
    assert preds.confidence.tolist() == [0.5, 0.8, 0.7, 1.0]
    assert preds.n_tied_rows == 1
