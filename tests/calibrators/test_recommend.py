"""The recommended default set of calibrators follows its stated rules for each data shape."""

from __future__ import annotations

import pytest

import calcore
from calcore.calibrators._registry import FEW_ROWS, ROWS_PER_CLASS_FOR_TOP_LABEL
from calcore.evaluation.verdict import MIN_ROWS_PER_BIN


@pytest.mark.parametrize(
    ("n_classes", "n_calibration", "rows_per_class", "expected"),
    [
        # two classes: Platt always; histogram binning once the rows fill its bins
        (2, 50, None, ("platt",)),
        (2, FEW_ROWS - 1, None, ("platt",)),
        (2, FEW_ROWS, None, ("platt", "hb")),
        (2, 100_000, 10, ("platt", "hb")),  # a rare class does not matter for one map
        # more classes: temperature scaling always; a map per class when every class has rows
        (3, 90, None, ("ts",)),
        # the bundled CIFAR-10 sample: 500 rows a class would leave 33 a bin, below the
        # verdict's 50 (it would warn about the method it was offered)
        (10, 5_000, None, ("ts", "conf-hb")),
        (10, 15 * 50 * 10, None, ("ts", "tl-hb")),
        (10, 5_000, ROWS_PER_CLASS_FOR_TOP_LABEL - 1, ("ts", "conf-hb")),  # one rare class
        (100, 5_000, None, ("ts", "conf-hb")),  # 50 rows per class: one map over all rows
        (100, 200, None, ("ts",)),
        (3, 3 * ROWS_PER_CLASS_FOR_TOP_LABEL, None, ("ts", "tl-hb")),
    ],
)
def test_rules(n_classes, n_calibration, rows_per_class, expected):
    r = calcore.recommend_calibrators(n_classes, n_calibration, rows_per_class)
    assert r.methods == expected
    assert list(r.reasons) == list(expected) and all(r.reasons.values())
    for name in r.methods:
        info = calcore.CALIBRATORS[name]
        assert not (n_classes > 2 and info.binary_only)  # every method applies to the data
        assert n_classes == 2 or info.accuracy_preserving  # multiclass: accuracy is kept


def test_reasons_quote_the_counts():
    r = calcore.recommend_calibrators(100, 5_000)
    assert "50 rows per class" in r.reasons["conf-hb"]
    assert "5,000 calibration rows" in r.reasons["ts"]


@pytest.mark.parametrize("args", [(1, 100), (3, -1), (3, 100, -2)])
def test_impossible_shapes_are_refused(args):
    with pytest.raises(calcore.CalcoreError, match="2 or more classes"):
        calcore.recommend_calibrators(*args)


def test_a_recommended_binning_never_draws_the_verdicts_few_rows_warning():
    # the verdict warns below MIN_ROWS_PER_BIN rows a bin (per predicted class for tl-):
    # 15 default bins, so the thresholds are 15 x 50 rows (a class)
    assert FEW_ROWS == ROWS_PER_CLASS_FOR_TOP_LABEL == 15 * MIN_ROWS_PER_BIN == 750
    for n_classes in (2, 3, 10, 100):
        for n in (749, 750, 7_499, 7_500, 75_000):
            r = calcore.recommend_calibrators(n_classes, n)
            if "hb" in r.methods or "conf-hb" in r.methods:
                assert n / 15 >= MIN_ROWS_PER_BIN
            if "tl-hb" in r.methods:
                assert n / n_classes / 15 >= MIN_ROWS_PER_BIN
