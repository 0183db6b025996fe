"""calcore.foundation.threads: one worker count, and work split between threads gives what one
thread gives."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import calcore.foundation.threads as threads
from calcore.foundation.errors import CalcoreError


@pytest.mark.parametrize("threaded", [False, True])
def test_side_by_side_returns_each_result_in_order_and_raises_a_task_error(threaded, monkeypatch):
    monkeypatch.setattr(threads, "MIN_THREADED_VALUES", 0 if threaded else 10**12)
    monkeypatch.setattr(threads, "worker_count", lambda: 2)
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
    monkeypatch.setattr(threads, "MIN_THREADED_VALUES", 0)
    monkeypatch.setattr(threads, "worker_count", lambda: 3)
    parts = threads.in_threads(lambda a, b: list(range(a, b)), 10, 100)
    assert len(parts) == 3 and [r for p in parts for r in p] == list(range(10))


def test_the_worker_count_is_the_cpus_this_process_may_run_on(monkeypatch):
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 5, 7})
        monkeypatch.setattr(threads.os, "cpu_count", lambda: 64)
        assert threads.worker_count() == 3
        monkeypatch.delattr(threads.os, "sched_getaffinity")
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 6)
    assert threads.worker_count() == 6  # no affinity call (macOS, Windows): the CPU count
    monkeypatch.setattr(threads.os, "cpu_count", lambda: None)
    assert threads.worker_count() == 1


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_a_process_pinned_to_one_cpu_works_on_one_thread():
    code = (
        "import os, calcore.foundation.threads as t\n"
        "os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
        "print(t.worker_count())"
    )
    env = {k: v for k, v in os.environ.items() if k != threads.THREADS_ENV}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "1"


def test_the_environment_sets_the_worker_count(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setenv(threads.THREADS_ENV, " 5 ")
    assert threads.worker_count() == 5
    monkeypatch.setenv(threads.THREADS_ENV, "")
    assert threads.worker_count() == 2  # empty: unset
    for wrong in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv(threads.THREADS_ENV, wrong)
        with pytest.raises(CalcoreError, match=f"CALCORE_THREADS='{wrong}' is not a positive"):
            threads.worker_count()


def _recording(names: list):
    """``task(k)``: a task returning ``k`` that appends the name of the thread running it."""

    def task(k):
        def run():
            names.append(threading.current_thread().name)
            return k

        return run

    return task


def test_one_worker_runs_the_tasks_in_order_on_this_thread(monkeypatch):
    monkeypatch.setenv(threads.THREADS_ENV, "1")
    names = []
    task = _recording(names)
    assert threads.concurrently([task(1), task(2), task(3)]) == [1, 2, 3]
    monkeypatch.setattr(threads, "MIN_THREADED_VALUES", 0)
    assert threads.side_by_side([task(4), task(5)], 100) == [4, 5]
    assert threads.in_threads(lambda a, b: (a, b), 10, 100) == [(0, 10)]
    assert set(names) == {threading.current_thread().name}


def test_concurrently_runs_the_other_tasks_on_threads_and_raises_their_errors(monkeypatch):
    monkeypatch.setattr(threads, "worker_count", lambda: 2)
    here = threading.current_thread().name
    names = []
    task = _recording(names)
    assert threads.concurrently([task(1), task(2)]) == [1, 2]
    assert names[0] == here or names[1] == here
    assert len(set(names)) == 2

    def fails():
        raise ValueError("second")

    with pytest.raises(ValueError, match="second"):
        threads.concurrently([task(1), fails])


# -- one BLAS thread (threadpoolctl) ---------------------------------------------------------
def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_blas_runs_single_threaded_inside_and_is_restored_after_nested_uses():
    before = _blas_threads()
    assert before, "numpy/scipy ship a BLAS here; threadpoolctl found none"
    with threads.single_threaded_blas():
        assert set(_blas_threads()) == {1}
        with threads.single_threaded_blas():  # nested: still one thread, not restored early
            pass
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before


def test_overlapping_uses_from_two_threads_restore_the_first_limits():
    """Thread A enters, B enters, A leaves (B still inside: one thread), B leaves: the
    limits found by A are back (threadpoolctl alone would restore B's snapshot, 1)."""
    before = _blas_threads()
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with threads.single_threaded_blas():
            a_inside.set()
            b_inside.wait(10)
        a_left.set()

    def b():
        a_inside.wait(10)
        with threads.single_threaded_blas():
            b_inside.set()
            a_left.wait(10)
            seen["b after a left"] = set(_blas_threads())

    workers = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(20)
    assert seen["b after a left"] == {1}
    assert _blas_threads() == before
