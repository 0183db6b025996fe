"""calcore.LoadOptions: one frozen set of loading options for every front door."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest

import calcore
from calcore import LoadOptions

CSV = b"id,y,p_no,p_yes,w,country\n1,no,0.8,0.2,1,fr\n2,yes,0.3,0.7,2,de\n3,no,0.6,0.4,1,fr\n"


def _buffer() -> io.BytesIO:
    buffer = io.BytesIO(CSV)
    buffer.name = "opts.csv"
    return buffer


def test_options_are_frozen_keyword_only_and_hold_tuples():
    options = LoadOptions(score_columns=["p_no", "p_yes"], slice_columns="country")
    assert options.score_columns == ("p_no", "p_yes")
    assert options.slice_columns == ("country",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.scores = "logits"
    with pytest.raises(TypeError):
        LoadOptions("y")  # keyword-only
    assert hash(options) == hash(
        LoadOptions(score_columns=("p_no", "p_yes"), slice_columns=["country"])
    )
    assert LoadOptions() == LoadOptions(slice_columns=None)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"scores": "prob"}, "scores must be 'auto', 'probs' or 'logits', got 'prob'."),
        ({"percent": 1}, "percent must be True or False, got 1."),
        ({"decimal": ";"}, "decimal must be '.' or ',', got ';'."),
        ({"percent": True, "scores": "logits"}, "logits are not percentages"),
    ],
)
def test_each_option_is_checked_when_made_with_the_loaders_message(kwargs, message):
    with pytest.raises(
        calcore.CalcoreError, match=message.replace("(", r"\(").replace(")", r"\)")
    ) as made:
        LoadOptions(**kwargs)
    with pytest.raises(calcore.CalcoreError) as loaded:
        calcore.load_predictions(_buffer(), **kwargs)
    assert str(made.value) == str(loaded.value)


def test_options_and_keywords_load_the_same_rows():
    kwargs = dict(label_column="y", weight_column="w", slice_columns=["country"], renormalize=True)
    by_keywords = calcore.load_predictions(_buffer(), **kwargs)
    by_options = calcore.load_predictions(_buffer(), options=LoadOptions(**kwargs))
    np.testing.assert_array_equal(by_keywords.probs, by_options.probs)
    np.testing.assert_array_equal(by_keywords.sample_weight, by_options.sample_weight)
    assert by_keywords.load_report == by_options.load_report
    assert list(by_options.metadata) == ["id", "country"]
    splits = calcore.load_splits(_buffer(), options=LoadOptions(label_column="y"))
    assert splits["all"].n_samples == 3
    schema = calcore.inspect_table(_buffer(), options=LoadOptions(weight_column=False))
    assert schema.weight_column is None and schema.label_column == "y"


def test_options_and_keywords_together_are_a_type_error():
    options = LoadOptions(label_column="y")
    for call in (
        lambda: calcore.load_predictions(_buffer(), options=options, percent=True),
        lambda: calcore.load_splits(_buffer(), options=options, weight_column=False),
        lambda: calcore.inspect_table(_buffer(), options=options, label_column="y"),
    ):
        with pytest.raises(TypeError, match="not both"):
            call()
    with pytest.raises(TypeError, match="must be a calcore.LoadOptions"):
        calcore.load_predictions(_buffer(), options={"label_column": "y"})
    # what is not an option stays an argument beside them
    preds = calcore.load_predictions(_buffer(), options=options, name="named.csv")
    assert preds.load_report.source == "named.csv"


def test_scan_takes_the_same_options(tmp_path):
    path = tmp_path / "opts.csv"
    path.write_bytes(CSV)
    options = LoadOptions(label_column="y", weight_column="w", slice_columns=["country"])
    stream = calcore.scan(path, options=options)
    assert stream.options == options
    assert stream.weight_column == "w" and stream.slice_columns == ("country",)
    same = calcore.scan(path, label_column="y", weight_column="w", slice_columns=["country"])
    assert same.options == options
    whole = calcore.load_predictions(path, options=options)
    sample, _ = stream.sample(10)
    np.testing.assert_array_equal(sample.probs, whole.probs)
    np.testing.assert_array_equal(sample.sample_weight, whole.sample_weight)
    with pytest.raises(TypeError, match="not both"):
        calcore.scan(path, options=options, scores="probs")
