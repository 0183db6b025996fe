"""Tests of the M2B views (calcore.predictions.reductions) against brute-force definitions.

Each reference below walks the rows in Python: the argmax is the lowest index
attaining the maximum, the k-th largest entry comes from sorting (value desc,
class index asc) pairs.
"""

from __future__ import annotations

import numpy as np
import pytest

import calcore
from calcore import CalcoreError, Predictions
from calcore.predictions.reductions import (
    binary_view,
    classwise_view,
    confidence_view,
    top_k_confidence_view,
    top_k_label_view,
    top_label_view,
)

# --------------------------------------------------------------------------- references


def ranked(row):
    """Classes of a row ordered by probability descending, ties by lower class index."""
    return sorted(range(len(row)), key=lambda j: (-row[j], j))


def ref_confidence(p, y):
    scores, outcomes, groups = [], [], []
    for row, label in zip(p.tolist(), y.tolist(), strict=True):
        top = ranked(row)[0]
        scores.append(row[top])
        outcomes.append(float(label == top))
        groups.append(top)
    return np.array(scores), np.array(outcomes), np.array(groups)


def ref_classwise(p, y, classes):
    scores, outcomes, groups = [], [], []
    for c in classes:  # class-major order: all n rows of class c, then the next class
        for row, label in zip(p.tolist(), y.tolist(), strict=True):
            scores.append(row[c])
            outcomes.append(float(label == c))
            groups.append(c)
    return np.array(scores), np.array(outcomes), np.array(groups)


def ref_top_k(p, y, k):
    scores, outcomes, classes = [], [], []
    for row, label in zip(p.tolist(), y.tolist(), strict=True):
        c = ranked(row)[k - 1]
        scores.append(row[c])
        outcomes.append(float(label == c))
        classes.append(c)
    return np.array(scores), np.array(outcomes), np.array(classes)


def make_preds(n=300, n_classes=5, seed=0, decimals=None):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n_classes, 0.7), size=n)
    if decimals is not None:  # rounding creates many ties
        p = np.round(p, decimals)
        p[:, -1] = 0.0
        p[:, -1] = np.clip(1.0 - p.sum(axis=1), 0.0, None)
        p = p / p.sum(axis=1, keepdims=True)
    y = rng.integers(0, n_classes, n)
    return Predictions.from_probs(p, y, [f"c{j}" for j in range(n_classes)])


PREDS = [
    make_preds(),
    make_preds(seed=1, decimals=1),
    make_preds(n=50, n_classes=2, seed=2, decimals=1),
]


# --------------------------------------------------------------------------- tests


def test_hand_example():
    p = np.array([[0.5, 0.3, 0.2], [0.4, 0.4, 0.2], [0.1, 0.2, 0.7]])
    y = np.array([0, 1, 1])
    preds = Predictions.from_probs(p, y, ["a", "b", "c"])
    v = confidence_view(preds)
    np.testing.assert_array_equal(v.scores, [0.5, 0.4, 0.7])
    np.testing.assert_array_equal(v.outcomes, [1.0, 0.0, 0.0])  # row 1 predicts class 0 (tie)
    np.testing.assert_array_equal(v.groups, [0, 0, 0])
    assert v.group_names == ("all",) and v.n_rows == 3 and v.n_tied_rows == 1
    t = top_label_view(preds)
    np.testing.assert_array_equal(t.groups, [0, 0, 2])
    assert t.group_names == ("a", "b", "c") and t.n_groups == 3
    s, o = t.group(0)
    np.testing.assert_array_equal(s, [0.5, 0.4])
    np.testing.assert_array_equal(o, [1.0, 0.0])
    c = classwise_view(preds)
    np.testing.assert_array_equal(c.scores, [0.5, 0.4, 0.1, 0.3, 0.4, 0.2, 0.2, 0.2, 0.7])
    np.testing.assert_array_equal(c.outcomes, [1, 0, 0, 0, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(c.groups, [0, 0, 0, 1, 1, 1, 2, 2, 2])
    second = top_k_label_view(preds, 2)
    np.testing.assert_array_equal(second.scores, [0.3, 0.4, 0.2])
    np.testing.assert_array_equal(
        second.groups, [1, 1, 1]
    )  # row 1: the tie's higher index is rank 2
    np.testing.assert_array_equal(second.outcomes, [0.0, 1.0, 1.0])


@pytest.mark.parametrize("preds", PREDS)
def test_confidence_view(preds):
    s, o, _ = ref_confidence(preds.probs, preds.labels)
    v = confidence_view(preds)
    assert v.name == "confidence"
    np.testing.assert_array_equal(v.scores, s)
    np.testing.assert_array_equal(v.outcomes, o)
    np.testing.assert_array_equal(v.groups, np.zeros(preds.n_samples))
    assert v.n_rows == preds.n_samples and v.n_groups == 1
    assert (
        v.scores.dtype == np.float64
        and v.outcomes.dtype == np.float64
        and v.groups.dtype == np.int64
    )


@pytest.mark.parametrize("preds", PREDS)
def test_top_label_view(preds):
    s, o, g = ref_confidence(preds.probs, preds.labels)
    v = top_label_view(preds)
    assert v.name == "top-label"
    np.testing.assert_array_equal(v.scores, s)
    np.testing.assert_array_equal(v.outcomes, o)
    np.testing.assert_array_equal(v.groups, g)
    assert v.group_names == preds.class_names and v.n_rows == preds.n_samples
    for cls in range(preds.n_classes):
        gs, go = v.group(cls)
        np.testing.assert_array_equal(gs, s[g == cls])
        np.testing.assert_array_equal(go, o[g == cls])
    n_tied = sum(
        sorted(r, reverse=True)[0] == sorted(r, reverse=True)[1] for r in preds.probs.tolist()
    )
    assert v.n_tied_rows == n_tied


@pytest.mark.parametrize("preds", PREDS)
def test_classwise_view_all_classes(preds):
    s, o, g = ref_classwise(preds.probs, preds.labels, range(preds.n_classes))
    v = classwise_view(preds)
    assert v.name == "class-wise" and v.n_rows == preds.n_samples
    assert v.scores.size == preds.n_samples * preds.n_classes
    np.testing.assert_array_equal(v.scores, s)
    np.testing.assert_array_equal(v.outcomes, o)
    np.testing.assert_array_equal(v.groups, g)
    assert v.group_names == preds.class_names


@pytest.mark.parametrize("classes", [[3], [4, 0], [1, 2, 3], np.array([2, 0])])
def test_classwise_view_subset(classes):
    preds = PREDS[0]
    s, o, g = ref_classwise(preds.probs, preds.labels, list(classes))
    v = classwise_view(preds, classes=classes)
    np.testing.assert_array_equal(v.scores, s)
    np.testing.assert_array_equal(v.outcomes, o)
    np.testing.assert_array_equal(v.groups, g)  # group ids stay the class indices
    assert v.group_names == preds.class_names and v.n_rows == preds.n_samples
    assert v.scores.flags.writeable  # a new array, not a view of the read-only probs
    assert not np.shares_memory(v.scores, preds.probs)


@pytest.mark.parametrize("preds", PREDS)
def test_top_k_views_every_k(preds):
    for k in range(1, preds.n_classes + 1):
        s, o, c = ref_top_k(preds.probs, preds.labels, k)
        conf = top_k_confidence_view(preds, k)
        label = top_k_label_view(preds, k)
        assert conf.name == f"top-{k}-confidence" and label.name == f"top-{k}-label"
        for v in (conf, label):
            np.testing.assert_array_equal(v.scores, s)
            np.testing.assert_array_equal(v.outcomes, o)
            assert v.n_rows == preds.n_samples
        np.testing.assert_array_equal(conf.groups, np.zeros(preds.n_samples))
        np.testing.assert_array_equal(label.groups, c)
        assert label.group_names == preds.class_names
    # every row's label is found at exactly one rank
    total = sum(top_k_confidence_view(preds, k).outcomes for k in range(1, preds.n_classes + 1))
    np.testing.assert_array_equal(total, np.ones(preds.n_samples))


def test_top_1_equals_confidence_and_top_label():
    preds = PREDS[1]
    np.testing.assert_array_equal(
        top_k_confidence_view(preds, 1).scores, confidence_view(preds).scores
    )
    np.testing.assert_array_equal(top_k_label_view(preds, 1).groups, top_label_view(preds).groups)


def test_binary_view_by_name():
    preds = PREDS[0]
    for name, ref in [
        ("confidence", confidence_view),
        ("top-label", top_label_view),
        ("class-wise", classwise_view),
    ]:
        v = binary_view(preds, name)
        assert v.name == name
        np.testing.assert_array_equal(v.scores, ref(preds).scores)
        np.testing.assert_array_equal(v.groups, ref(preds).groups)
    assert calcore.binary_view is binary_view


@pytest.mark.parametrize("name", ["toplabel", "Confidence", "", "top-2-label"])
def test_binary_view_unknown_name(name):
    with pytest.raises(
        CalcoreError,
        match=rf"^view must be one of \['class-wise', 'confidence', 'top-label'\]; got {name!r}\.$",
    ):
        binary_view(PREDS[0], name)


@pytest.mark.parametrize("k", [0, -1, 6, 100])
def test_top_k_errors(k):
    pattern = rf"^k must be between 1 and the number of classes \(5\); got {k}\.$"
    with pytest.raises(CalcoreError, match=pattern):
        top_k_confidence_view(PREDS[0], k)
    with pytest.raises(CalcoreError, match=pattern):
        top_k_label_view(PREDS[0], k)
