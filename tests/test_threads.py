"""calcore.foundation.threads: work split between threads gives what one thread gives."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import calcore.foundation.threads as threads


@pytest.mark.parametrize("threaded", [False, True])
def test_side_by_side_returns_each_result_in_order_and_raises_a_task_error(threaded, monkeypatch):
    monkeypatch.setattr(threads, "_MIN_THREADED", 0 if threaded else 10**12)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    names = []

    def task(k):
        def run():
            names.append(threading.current_thread().name)
            return np.arange(k).sum()

        return run

    assert threads.side_by_side([task(3), task(5), task(7)], 100) == [3, 10, 21]
    assert (len(set(names)) > 1) == threaded  # the later tasks ran on other threads

    def fails():
        raise ValueError("task 2")

    with pytest.raises(ValueError, match="task 2"):
        threads.side_by_side([task(3), fails], 100)


def test_in_threads_covers_every_row_once(monkeypatch):
    monkeypatch.setattr(threads, "_MIN_THREADED", 0)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 3)
    parts = threads.in_threads(lambda a, b: list(range(a, b)), 10, 100)
    assert len(parts) == 3 and [r for p in parts for r in p] == list(range(10))
