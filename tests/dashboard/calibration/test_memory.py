"""dashboard.calibration.memory: the byte budget over cached tables, the compute slots, and
the progress line of compute.in_parallel."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import pytest
import streamlit as st

import calcore
from dashboard.calibration import compute, memory
from dashboard.calibration.memory import CacheBudget, budgeted, nbytes


def _preds(n: int = 200, k: int = 4) -> calcore.Predictions:
    rng = np.random.default_rng(0)
    return calcore.Predictions.from_probs(rng.dirichlet(np.ones(k), n), rng.integers(0, k, n))


def test_nbytes_counts_each_array_once_and_views_by_their_base():
    preds = _preds()
    one = nbytes(preds)
    assert one >= preds.probs.nbytes + preds.labels.nbytes
    assert nbytes([preds, preds, {"again": preds}]) == one  # shared, not copied
    base = np.zeros(1000)
    assert nbytes((base[:10], base[10:])) == base.nbytes
    assert nbytes({"text": "x" * 100, "n": 3}) == 0


class _Fn:
    """A stand-in for a cached function: records which entries were cleared."""

    def __init__(self) -> None:
        self.cleared: list[tuple] = []

    def clear(self, *args) -> None:
        self.cleared.append(args)


def test_the_budget_evicts_the_least_recently_used_entries_beyond_its_bytes():
    fn = _Fn()
    budget = CacheBudget(max_bytes=100)
    budget.use(fn, ("a",), 40)
    budget.use(fn, ("b",), 40)
    budget.use(fn, ("a",), 40)  # a used again: b is now the oldest
    budget.use(fn, ("c",), 40)
    assert fn.cleared == [("b",)]
    assert budget.total == 80
    budget.use(fn, ("huge",), 500)  # larger than the budget alone: kept, the others go
    assert fn.cleared == [("b",), ("a",), ("c",)]
    assert budget.total == 500


@pytest.fixture
def small_budget(monkeypatch):
    budget = CacheBudget(max_bytes=3 * 8000)
    monkeypatch.setattr(memory, "BUDGET", budget)
    return budget


def test_a_cached_function_under_the_budget_recomputes_an_evicted_entry(small_budget):
    calls = []

    @st.cache_resource(show_spinner=False)
    def table(key: str, _source) -> np.ndarray:
        calls.append(key)
        return np.zeros(1000)  # 8,000 bytes

    for key in "abcd":
        budgeted(table, key, object())
    assert calls == list("abcd") and small_budget.total == 3 * 8000
    budgeted(table, "d", object())  # still cached
    assert calls == list("abcd")
    budgeted(table, "a", object())  # evicted by d: computed again
    assert calls == [*"abcd", "a"]
    table.clear()


def test_the_budget_does_not_keep_the_unhashed_tables_alive(small_budget):
    @st.cache_resource(show_spinner=False)
    def summary(key: str, _rows) -> int:
        return len(_rows.probs)

    rows = _preds()
    alive = weakref.ref(rows)
    assert budgeted(summary, "k", rows) == 200
    del rows
    gc.collect()
    assert alive() is None  # the ledger holds None for ``_rows``
    summary.clear()


def test_no_more_heavy_calls_at_once_than_compute_slots(monkeypatch):
    slots = 2
    monkeypatch.setattr(memory, "COMPUTE_SLOTS", threading.BoundedSemaphore(slots))
    running, most = [0], [0]
    lock = threading.Lock()

    def work() -> None:
        with memory.heavy():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == slots


def test_the_last_heavy_call_to_end_gives_freed_memory_back(monkeypatch):
    released = []
    monkeypatch.setattr(memory, "COMPUTE_SLOTS", threading.BoundedSemaphore(2))
    monkeypatch.setattr(memory, "release_freed_memory", lambda: released.append(1))
    with memory.heavy():
        with memory.heavy():
            pass
        assert released == []  # another heavy call still runs
    assert released == [1]


def test_point_estimates_take_no_slot_and_resamples_do(monkeypatch):
    gate = threading.BoundedSemaphore(1)
    monkeypatch.setattr(memory, "COMPUTE_SLOTS", gate)
    with memory.resampling(200):
        assert not gate.acquire(blocking=False)  # the one slot is held
        with memory.resampling(0):  # estimates go on while another session resamples
            pass
    assert gate.acquire(blocking=False)
    gate.release()


class _Line:
    def __init__(self) -> None:
        self.captions: list[str] = []

    def caption(self, text: str) -> None:
        self.captions.append(text)

    def empty(self) -> None:
        self.captions.append("")


def test_the_step_line_names_each_finished_part(monkeypatch):
    line = _Line()
    monkeypatch.setattr(compute.st, "empty", lambda: line)
    calls = {"uncalibrated": lambda: 1, ("calibration_gain", "ts"): lambda: 2, "ts": lambda: 3}
    drawn = []
    with compute.step_line("Intervals, 200 resamples per method"):
        out = compute.in_parallel(calls, meanwhile=lambda: drawn.append(1))
    assert out == {"uncalibrated": 1, ("calibration_gain", "ts"): 2, "ts": 3}
    assert drawn == [1]  # meanwhile ran once, in this thread
    assert line.captions[0] == "⏳ Intervals, 200 resamples per method…"
    progress = line.captions[1:-1]  # the methods, not their gains; the last one ends it
    assert progress and all("calibration_gain" not in c for c in progress)
    assert progress[-1] == "⏳ Intervals, 200 resamples per method: uncalibrated done · ts done…"
    assert line.captions[-1] == ""  # gone once the step is over
    assert compute.in_parallel({"a": lambda: 1}) == {"a": 1}  # outside a step: no line
    assert line.captions[-1] == ""
    slot = _Line()
    with compute.step_line("Intervals", into=slot):  # the caller's placeholder
        pass
    assert slot.captions == ["⏳ Intervals…", ""]


def test_the_step_line_counts_calcores_progress_of_each_methods_parts(monkeypatch):
    line = _Line()
    monkeypatch.setattr(compute.st, "empty", lambda: line)
    head = "⏳ Intervals, 200 resamples per method: "
    with compute.step_line("Intervals, 200 resamples per method") as step:
        ts, irm = compute.progress_of("ts"), compute.progress_of("irm")
        assert step.text() == head + "ts waiting · irm waiting…"
        for label in ("ts", "irm"):
            step.expect(label, ["bin-free", "binned", "kde-cw"])
        for label in ("ts", "irm"):  # an estimate alone (or cached): tells nothing
            step.finished(label, "kde-cw")
        assert step.text() == head + "ts waiting · irm waiting…"
        ts("bin-free", 320, 400)
        assert step.text() == head + "ts 40% · irm waiting…"  # binned not started: 400 too
        ts("binned", 0, 600)
        assert step.text() == head + "ts 32% · irm waiting…"  # resamples over the totals
        ts("binned", 600, 600)
        irm("bin-free", 200, 400)
        ts("bin-free", 400, 400)
        assert step.text() == head + "ts 99% · irm 25%…"  # 100% only once every part is in
        for part in ("bin-free", "binned", "kde-cw"):
            step.finished("ts", part)
        assert step.text() == head + "ts done · irm 25%…"
    assert compute.progress_of("ts") is None  # outside a step


def test_report_parts_equal_one_evaluate_and_tell_their_progress(monkeypatch):
    rng = np.random.default_rng(0)
    preds = calcore.Predictions.from_logits(
        rng.standard_normal((300, 3)) * 2, rng.integers(0, 3, 300)
    )
    told = []
    parts = compute.report_parts(
        "test-parts", "equal-width", 10, 30, preds, lambda *a: told.append(a)
    )
    assert list(parts) == list(compute.PARTS)
    rep = compute.combine({part: fn() for part, fn in parts.items()})
    one = calcore.evaluate(preds, bins=10, n_resamples=30, seed=0)
    assert rep.metrics.keys() == one.metrics.keys()
    for key, value in rep.metrics.items():
        other = one.metrics[key]
        assert value == other or (value != value and other != other), key  # NaN: both
    # every interval but the class-wise KDE-ECE's (the table shows none), as one evaluate's
    assert "kde_ece_classwise" not in rep.intervals
    assert rep.intervals == {k: v for k, v in one.intervals.items() if k != "kde_ece_classwise"}
    assert "kde_ece_classwise" not in rep.replicates and "nll" in rep.replicates
    # the calibration test: the binned errors the table tests, as one evaluate's
    tested = set(rep.calibration_test.p_values)
    assert {"conf_ece", "top_label_ece", "classwise_ece"} <= tested
    assert not tested & {"ace", "tace", "kde_ece", "kde_ece_classwise"}
    for k in tested:
        assert rep.calibration_test.p_values[k] == one.calibration_test.p_values[k]
    # the class-wise KDE-ECE's estimate takes no resamples, so tells no progress
    assert {part for part, *_ in told} == {"adaptive", "binned", "bin-free"}
    for part in ("adaptive", "binned", "bin-free"):
        done = [d for p, d, _ in told if p == part]
        totals = {t for p, _, t in told if p == part}
        assert done[0] == 0 and done == sorted(done) and done[-1] == totals.pop()


def test_a_random_split_is_copied_once_per_key_and_counted(small_budget):
    from dashboard.calibration.data import Loaded, _random_split, choose_split

    loaded = Loaded("x.csv", {"all": _preds(400)}, (), ())
    first = choose_split(loaded, mode="random", test_fraction=0.5, seed=0, digest="d")
    again = choose_split(loaded, mode="random", test_fraction=0.5, seed=0, digest="d")
    assert again.calib is first.calib and again.test is first.test  # no copy per rerun
    assert first.test.n_samples == 200
    assert small_budget.total >= first.calib.probs.nbytes + first.test.probs.nbytes
    other = choose_split(loaded, mode="random", test_fraction=0.5, seed=1, digest="d")
    assert other.key != first.key and other.test is not first.test
    _random_split.clear()


def test_the_mmap_threshold_is_fixed_unless_the_environment_says_0(monkeypatch):
    if memory._LIBC is None:
        pytest.skip("not glibc")
    monkeypatch.setenv(memory.MMAP_THRESHOLD_ENV, "0")
    assert memory.return_freed_arrays() is False
    monkeypatch.setenv(memory.MMAP_THRESHOLD_ENV, str(memory.DEFAULT_MMAP_THRESHOLD))
    assert memory.return_freed_arrays() is True


# -- the operator's settings: a bad value is a warning in the log, not silence nor a crash --
@pytest.fixture
def log(caplog):
    memory._warned.clear()  # each bad value is logged once per process
    caplog.set_level("WARNING", logger="calibration-lens")
    yield caplog
    memory._warned.clear()


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("lots", "is not a number"),
        ("1.5e6", "is not a whole number"),
        ("inf", "is not a finite number"),
        ("100", "is out of range"),
        ("-1", "is out of range"),
        (str(64 * 2**20), "is out of range"),  # glibc's mallopt refuses above 32 MiB
    ],
)
def test_a_bad_mmap_threshold_is_one_warning_naming_variable_value_range_and_default(
    log, monkeypatch, value, why
):
    monkeypatch.setenv(memory.MMAP_THRESHOLD_ENV, value)
    setting = memory.MMAP_THRESHOLD_SETTING
    assert setting.read() == memory.DEFAULT_MMAP_THRESHOLD == 1024 * 1024
    memory.return_freed_arrays()  # every script run calls it: one line in the log
    memory.return_freed_arrays()
    (record,) = log.records
    assert record.levelname == "WARNING"
    assert record.getMessage() == (
        f"CALCORE_MALLOC_MMAP_THRESHOLD={value!r} {why}: accepted a whole number, 4,096 to "
        "33,554,432 bytes, or 0 (glibc's dynamic threshold); using 1,048,576 bytes instead."
    )


@pytest.mark.parametrize("value", ["0", "4096", "1048576", str(32 * 2**20), " 65536 "])
def test_accepted_mmap_thresholds_say_nothing(log, value):
    expected = int(value)
    assert memory.MMAP_THRESHOLD_SETTING.read({memory.MMAP_THRESHOLD_ENV: value}) == expected
    assert not log.records


def test_a_bad_cache_budget_is_a_warning_and_the_default_budget(log):
    for value, why in [("1GB", "is not a number"), ("nan", "is not a finite number"),
                       ("-5", "is out of range"), ("2e6", "is out of range")]:  # fmt: skip
        env = {memory.BUDGET_ENV: value}
        assert memory._budget_bytes(env) == 1024 * 2**20
        assert log.records[-1].getMessage() == (
            f"CALCORE_CACHE_BUDGET_MB={value!r} {why}: accepted 0 to 1,048,576 MiB; using "
            "1,024 MiB instead."
        )
    assert len(log.records) == 4


def test_accepted_cache_budgets_say_nothing(log):
    assert memory._budget_bytes({memory.BUDGET_ENV: "0"}) == 0
    assert memory._budget_bytes({memory.BUDGET_ENV: "2.5"}) == int(2.5 * 2**20)
    assert memory._budget_bytes({memory.BUDGET_ENV: ""}) == 1024 * 2**20  # empty: unset
    assert memory._budget_bytes({}) == 1024 * 2**20
    assert not log.records


def test_a_long_bad_value_is_cut_in_the_log(log):
    value = "9" * 10_000
    memory.MMAP_THRESHOLD_SETTING.read({memory.MMAP_THRESHOLD_ENV: value})
    (record,) = log.records
    assert "(10,000 characters)" in record.getMessage() and len(record.getMessage()) < 300


@pytest.mark.parametrize("binning", ["equal-mass", "sturges", "points-per-bin"])
def test_every_binnings_parts_equal_one_evaluate(binning):
    # the ACE/TACE part runs under the equal-width binning of its own count: the same
    # ACE and TACE, values and intervals, as one evaluate with the binning asked for
    rng = np.random.default_rng(5)
    preds = calcore.Predictions.from_logits(
        rng.standard_normal((300, 3)) * 2, rng.integers(0, 3, 300)
    )
    bins = 40 if binning == "points-per-bin" else 10
    parts = compute.report_parts(f"test-every-{binning}", binning, bins, 20, preds)
    rep = compute.combine({part: fn() for part, fn in parts.items()})
    b, k = compute.calcore_binning(binning, bins)
    one = calcore.evaluate(preds, bins=k, binning=b, n_resamples=20, seed=0)
    assert (rep.binning, rep.bins) == (b, k)
    for key in ("ace", "tace", "conf_ece", "classwise_ece"):
        assert rep.metrics[key] == one.metrics[key], key
        assert rep.intervals[key] == one.intervals[key], key


def test_a_change_of_binning_that_keeps_the_count_reuses_ace_and_tace():
    rng = np.random.default_rng(6)
    preds = calcore.Predictions.from_logits(
        rng.standard_normal((200, 3)) * 2, rng.integers(0, 3, 200)
    )
    width = compute.report_parts("test-reuse", "equal-width", 12, 10, preds)
    mass = compute.report_parts("test-reuse", "equal-mass", 12, 10, preds)
    fewer = compute.report_parts("test-reuse", "equal-mass", 8, 10, preds)
    assert mass["adaptive"]() is width["adaptive"]()  # the cached report itself
    assert mass["binned"]() is not width["binned"]()
    assert fewer["adaptive"]() is not width["adaptive"]()
    assert fewer["adaptive"]().metrics["ace"] != width["adaptive"]().metrics["ace"]


def test_a_verdict_by_the_classwise_kde_ece_gets_its_replicates():
    rng = np.random.default_rng(1)
    preds = calcore.Predictions.from_logits(
        rng.standard_normal((300, 3)) * 2, rng.integers(0, 3, 300)
    )
    parts = compute.report_parts(
        "test-parts-cw", "equal-width", 10, 30, preds, kde_classwise_intervals=True
    )
    rep = compute.combine({part: fn() for part, fn in parts.items()})
    one = calcore.evaluate(preds, bins=10, n_resamples=30, seed=0)
    assert rep.intervals == one.intervals
    assert np.array_equal(rep.replicates["kde_ece_classwise"], one.replicates["kde_ece_classwise"])


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass", "sturges", "points-per-bin"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_the_parts_notes_are_one_evaluations(binning, n_classes):
    # notes that differ only in the metrics they list become one, and a note another one
    # extends is said once: as evaluate words them for all the metrics at once
    rng = np.random.default_rng(n_classes)
    preds = calcore.Predictions.from_logits(
        rng.standard_normal((400, n_classes)) * 2, rng.integers(0, n_classes, 400)
    )
    bins = 40 if binning == "points-per-bin" else 10
    parts = compute.report_parts(
        f"test-notes-{binning}-{n_classes}", binning, bins, 20, preds, kde_classwise_intervals=True
    )
    rep = compute.combine({part: fn() for part, fn in parts.items()})
    b, k = compute.calcore_binning(binning, bins)
    one = calcore.evaluate(preds, bins=k, binning=b, n_resamples=20, seed=0)
    assert set(rep.notes) == set(one.notes)
    assert len(rep.notes) == len(set(rep.notes))
