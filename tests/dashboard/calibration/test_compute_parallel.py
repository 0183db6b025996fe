"""compute.in_parallel: results by name, in order; errors surface; truly parallel."""

from __future__ import annotations

import os
import threading

import pytest

import calcore
from dashboard.calibration.compute import in_parallel


def test_results_keep_the_names_and_their_order():
    calls = {name: (lambda v=v: v * 2) for name, v in (("b", 1), ("a", 2), ("c", 3))}
    out = in_parallel(calls)
    assert list(out) == ["b", "a", "c"] and out == {"b": 2, "a": 4, "c": 6}
    assert in_parallel({}) == {}


def test_the_first_failure_is_raised():
    def fail(message):
        raise calcore.CalcoreError(message)

    with pytest.raises(calcore.CalcoreError, match="first"):
        in_parallel({"ok": lambda: 1, "x": lambda: fail("first"), "y": lambda: fail("second")})


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: calls run one after another")
def test_calls_run_at_the_same_time():
    barrier = threading.Barrier(2, timeout=10)  # both must be inside at once, or this breaks
    out = in_parallel({"a": lambda: barrier.wait() >= 0, "b": lambda: barrier.wait() >= 0})
    assert out == {"a": True, "b": True}
