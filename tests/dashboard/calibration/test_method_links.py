"""A link's ``m=NAME:K=V;...`` is held to each parameter's declared range (issue 33, items 6,
8, 10): out of range is reported with the range and never fitted, never clamped, never a
traceback; a method the data cannot take is named with the reason, not dropped silently."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")  # the calcore-only install has no dashboard extra

from _apptest import APP, assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from streamlit.testing.v1 import AppTest

from dashboard.calibration.state import MethodChoice, parse_method


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("na-fir:max_iter=1000000000", "na-fir: parameter 'max_iter' must be <= 5000"),
        ("tl-hb:seed=-1", "parameter 'seed' must be >= 0; got -1. Its range: an integer from 0"),
        ("tl-hb:seed=abc", "parameter 'seed' must be a number; got 'abc'. Its range: an integer"),
        ("ts:min_temperature=nan", "'min_temperature' must be finite; got nan"),
        ("tl-hb:bins=" + "9" * 400, "must be an integer from 1 to 100,000 (or none); got a value"),
        ("hb:randomized=yes", "'randomized' must be true or false; got 'yes'"),
        ("ets:loss=l1", "'loss' must be one of ['mse', 'nll']; got 'l1'"),
    ],
)
def test_out_of_range_values_give_the_range(text, message):
    choice, why = parse_method(text)
    assert choice is None and message in why, why


def test_values_in_range_are_kept_exactly():
    assert parse_method("tl-hb:seed=4294967295;bins=20") == (
        MethodChoice("tl-hb", (("bins", 20), ("seed", 4294967295))),
        None,
    )
    assert parse_method("grid:K=1000") == (MethodChoice("grid", (("K", 1000),)), None)


def _run(query: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in {"boot": "0", **query}.items():
        at.query_params[key] = value
    at.run()
    assert_clean(at)
    return at


def test_a_link_out_of_range_is_reported_and_not_fitted():
    at = _run({"m": ["tl-hb:seed=-1", "na-fir:max_iter=1000000000", "ts"]})
    shown = unescape_markdown(" ".join(w.value for w in at.warning))
    assert "'seed' must be >= 0" in shown and "from 0 to 4,294,967,295" in shown
    assert "'max_iter' must be <= 5000" in shown and "from 1 to 5,000" in shown
    assert at.query_params["m"] == "ts"


def test_a_linked_method_the_data_cannot_take_is_named_with_the_reason():
    at = _run({"m": ["grid:K=1000", "ts"]})  # the default sample has 10 classes
    shown = unescape_markdown(" ".join(w.value for w in at.warning))
    assert "Not fitted: grid bins the simplex, for at most 6 classes, and the data has 10" in shown
