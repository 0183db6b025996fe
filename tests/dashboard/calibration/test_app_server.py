"""Datasets on the server in-process (AppTest): opened from a link, streamed into a seeded
sample the page names, every test row evaluated on request, nothing outside the directory.

Reference numbers come from calcore directly (``scan``, ``sample``, ``evaluate``), not from
the app's own helpers.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import APP, assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from _plotly_json import plotly_array
from streamlit.testing.v1 import AppTest

import calcore
from dashboard import demo
from dashboard.calibration import compute, server_datasets
from dashboard.calibration.state import Settings, settings_from_query, settings_to_query
from dashboard.calibration.views import slices

N_ROWS, N_SAMPLE = 60_000, 20_000
NAME = "clicks.parquet"


@pytest.fixture(autouse=True)
def fresh_server_caches():
    server_datasets._OPENED.clear()
    server_datasets._SLICE_COLUMNS.clear()
    server_datasets._REPORTS.clear()
    yield
    server_datasets._OPENED.clear()
    server_datasets._SLICE_COLUMNS.clear()
    server_datasets._REPORTS.clear()


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    root = tmp_path / "data"
    demo.write_demo(root, n_rows=N_ROWS, name=NAME)
    (tmp_path / "outside").mkdir()
    demo.write_demo(tmp_path / "outside", n_rows=1_000, name="secret.parquet")
    os.symlink(tmp_path / "outside" / "secret.parquet", root / "leak.parquet")
    monkeypatch.setenv("CALCORE_DATA_DIR", str(root))
    monkeypatch.setenv(server_datasets.SAMPLE_ROWS_ENV, str(N_SAMPLE))
    return root


def run(query: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180)
    for key, value in {"boot": "0", **query}.items():
        at.query_params[key] = value
    at.run()
    return at


def cell(at: AppTest, table: int, metric: str, method: str) -> str:
    """The cell of ``metric``'s row (a row that errors with the same number share,
    "conf-ECE = TL-ECE", counts for each of them)."""
    frame = at.table[table].value
    names = frame["metric"].str.split(" = ")
    return frame.loc[names.apply(lambda parts: metric in parts), method].iloc[0]


def test_a_link_opens_the_dataset_on_a_named_sample_with_calcores_numbers(data_dir):
    at = run({"data": NAME})
    assert_clean(at)
    words = " ".join(unescape_markdown(i.value) for i in at.info)
    n_test = calcore.scan(data_dir / NAME, split="test").n_rows_in_files  # all rows in file
    assert f"{N_SAMPLE:,} of " in words and "test rows" in words and "calib rows" in words
    assert at.query_params["data"] in (NAME, [NAME])
    assert at.sidebar.selectbox(key="sidebar.dataset").value == NAME
    # the views' table: calcore on the same seeded sample of the test rows
    sample, n_read = calcore.scan(data_dir / NAME, split="test").sample(N_SAMPLE, seed=0)
    assert n_read < n_test and sample.n_samples == N_SAMPLE
    expected = calcore.evaluate(sample, bins=15, metrics=("conf_ece",)).conf_ece
    assert cell(at, 0, "conf-ECE", "uncalibrated") == f"{expected:.4f}"
    n_test_rows = sum(
        b.preds.n_samples for b in calcore.scan(data_dir / NAME, split="test").batches()
    )
    assert any(f"(a seeded sample of the {n_test_rows:,})" in c.value for c in at.caption)


def test_every_test_row_is_evaluated_streamed_on_request(data_dir):
    at = run({"data": NAME, "m": "ts"})
    assert_clean(at)
    (button,) = [b for b in at.button if b.key == "view.metrics.every_row_button"]
    assert f"{N_ROWS:,}" not in button.label  # the test rows only, not every row of the file
    button.click()
    at.run()
    assert_clean(at)
    test = calcore.scan(data_dir / NAME, split="test")
    full = calcore.evaluate(test, bins=15)
    calib, _ = calcore.scan(data_dir / NAME, split="calib").sample(N_SAMPLE, seed=0)
    ts = calcore.make_calibrator("ts").fit(calib)
    recalibrated = calcore.evaluate(test.with_transform(ts.transform), bins=15)
    assert cell(at, 1, "conf-ECE", "uncalibrated") == f"{full.conf_ece:.4f}"
    assert cell(at, 1, "ACE", "uncalibrated") == f"{full.ace:.4f}"
    assert cell(at, 1, "conf-ECE", "ts") == f"{recalibrated.conf_ece:.4f}"
    # no row for what no method has on a stream (the gain, the refitted binary measures),
    # and the caption says why
    streamed_rows = set(at.table[1].value["metric"])
    assert not {"Calibration gain", "slope", "intercept"} & streamed_rows
    n_test = sum(b.preds.n_samples for b in test.batches())
    (caption,) = [c.value for c in at.caption if f"{n_test:,} rows" in c.value]
    assert "calibration gain not computed" in caption and "slope, intercept" in caption


def test_without_the_split_column_only_the_uncalibrated_rows_are_streamed(data_dir):
    at = run({"data": NAME, "split": "random"})
    assert_clean(at)
    (button,) = [b for b in at.button if b.key == "view.metrics.every_row_button"]
    assert f"1 × {N_ROWS:,} rows" in button.label
    assert any("Only the uncalibrated predictions" in c.value for c in at.caption)


@pytest.mark.parametrize("name", ["leak.parquet", "../outside/secret.parquet", "/etc/passwd"])
def test_a_link_outside_the_directory_is_refused_and_nothing_of_it_is_read(data_dir, name):
    at = run({"data": name})
    assert not at.exception
    (error,) = at.error
    assert "is not a dataset of the server" in unescape_markdown(error.value)
    box = at.sidebar.selectbox(key="sidebar.dataset")
    (listed,) = box.options  # the leak is not listed
    assert listed.startswith(f"{NAME} · ")
    # nothing is opened in its place: no other dataset's numbers under this link
    assert box.value is None and not at.table
    box.set_value(NAME).run()
    assert not at.exception and at.table


def test_without_a_data_directory_a_dataset_link_says_so(monkeypatch):
    monkeypatch.delenv("CALCORE_DATA_DIR", raising=False)
    at = run({"data": NAME})
    assert not at.exception and not at.error
    assert any("has no data directory" in unescape_markdown(i.value) for i in at.info)
    assert [o for o in at.sidebar.radio(key="sidebar.source").options] == [
        "bundled sample", "upload a file",
    ]  # fmt: skip


def test_a_file_replaced_on_the_server_is_read_again_and_the_page_says_so(data_dir):
    at = run({"data": NAME})
    assert_clean(at)
    before = cell(at, 0, "Accuracy", "uncalibrated")
    os.unlink(data_dir / NAME)
    demo.write_demo(data_dir, n_rows=30_000, name=NAME)
    at.run()
    assert_clean(at)
    assert any("changed on the server" in unescape_markdown(w.value) for w in at.warning)
    words = " ".join(unescape_markdown(i.value) for i in at.info)
    assert f"{N_SAMPLE:,} of" in words or "all" in words
    after = cell(at, 0, "Accuracy", "uncalibrated")
    sample, _ = calcore.scan(data_dir / NAME, split="test").sample(N_SAMPLE, seed=0)
    assert after == f"{calcore.evaluate(sample, metrics=('accuracy',)).accuracy:.4f}"
    assert before != after or N_ROWS == 30_000


def test_the_slices_view_works_on_the_datasets_sample(data_dir):
    at = run({"data": NAME, "view": "slices", "by": "segment"})
    assert_clean(at)
    (frame,) = [d.value for d in at.dataframe if "q-value" in d.value.columns]
    assert len(frame) == len(demo.SEGMENTS)
    assert frame["rows"].sum() == N_SAMPLE


def test_the_slices_view_evaluates_every_test_row_on_request(data_dir):
    at = run({"data": NAME, "m": "ts", "view": "slices", "by": "date"})
    assert_clean(at)
    at.checkbox(key=slices.KEY_PER_SLICE).check().run()
    assert_clean(at)
    (button,) = [b for b in at.button if b.key == "view.slices.every_row_button"]
    assert "3 × " in button.label  # uncalibrated, ts, ts per slice
    button.click()
    at.run()
    assert_clean(at)
    # calcore on every test row, streamed: the sample's period for the date, the ts fitted on
    # the calibration sample, and the per-slice fit on the same sample
    test = calcore.scan(data_dir / NAME, split="test", slice_columns=["date"])
    calib, _ = calcore.scan(data_dir / NAME, split="calib", slice_columns=["date"]).sample(
        N_SAMPLE, seed=0
    )
    test_sample, _ = test.sample(N_SAMPLE, seed=0)
    (period,) = calcore.slicing_of(test_sample.metadata, ["date"]).resolved
    specs = [f"date:{period}"]  # a stream needs the period named: the sample's
    kw = dict(
        interval_resamples=0, seed=0, n_resamples=server_datasets.STREAMED_SLICE_RESAMPLES,
        metrics=list(compute.SLICE_METRICS),
    )  # fmt: skip
    ts = calcore.make_calibrator("ts").fit(calib)
    per_slice = calcore.fit_per_slice(
        "ts", calib, test_sample, ["date"], global_calibrator=ts
    ).calibrator
    expected = {
        "uncalibrated": calcore.evaluate_by(test, specs, **kw),
        "ts": calcore.evaluate_by(test.with_transform(ts.transform), specs, **kw),
        "ts per slice": calcore.evaluate_by(
            test.with_transform(per_slice.transform, with_metadata=True), specs, **kw
        ),
    }
    frames = [d.value for d in at.dataframe if "q-value" in d.value.columns]
    assert len(frames) == 2  # the sample's slices, then every row's
    every = frames[1]
    first = expected["uncalibrated"]
    assert every["rows"].sum() == first.overall.n > N_SAMPLE
    assert list(every["slice"]) == [x.label for x in first.slices]
    np.testing.assert_array_equal(every["q-value"], [x.q_value for x in first.slices])
    methods = slices_chart(at, "figure.slices.methods" + slices.EVERY_ROW)
    for trace in methods["data"]:
        sliced = expected[trace["name"]]  # a binary dataset: ranked by the ECE of class 1
        want = {x.label: x.report.metrics[sliced.rank_metric] for x in sliced.slices}
        got = dict(zip(methods["layout"]["yaxis"]["ticktext"], plotly_array(trace["x"]),
                       strict=True))  # fmt: skip
        assert len(got) >= 10  # the figure shows the top slices
        assert got == pytest.approx({k: want[k] for k in got}, abs=1e-12), trace["name"]
    captions = " ".join(c.value for c in at.caption)
    assert "the reliability diagrams above are of the sample" in captions


def slices_chart(at: AppTest, name: str) -> dict:
    import json

    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(name)]
    assert len(found) == 1, [c.proto.id for c in at.get("plotly_chart")]
    return found[0]


def test_the_dataset_round_trips_through_the_link():
    s = Settings(None, None, dataset="logs/2026")
    query = settings_to_query(s)
    assert query["data"] == "logs/2026" and "sample" not in query and "upload" not in query
    back = settings_from_query({"data": ["logs/2026"]}, samples={"x"}, default_sample="x")
    assert back.dataset == "logs/2026" and back.sample is None and not back.dropped
    both = settings_from_query({"data": ["a"], "sample": ["x"]}, samples={"x"}, default_sample="x")
    assert both.sample == "x" and both.dataset is None  # a sample wins, as in the sidebar
    bad = settings_from_query({"data": ["a\x00b"]}, samples={"x"}, default_sample="x")
    assert bad.dataset is None and bad.sample == "x" and bad.dropped


def test_progress_is_shown_at_most_every_quarter_second_and_counts_passes(monkeypatch):
    """A pass over 100 batches redraws the progress line a few times, not 100 (each redraw
    is a page update the browser renders), and a restart at position 0 is a new pass."""
    from types import SimpleNamespace

    clock = iter(0.01 * np.arange(1, 1_000))
    monkeypatch.setattr(server_datasets.time, "perf_counter", lambda: next(clock))
    shown = []
    progress = server_datasets.RowsProgress(
        lambda text, done: shown.append((text, done)), "sampling", 10_000
    )
    batch = lambda position: SimpleNamespace(  # noqa: E731
        position=position, preds=SimpleNamespace(n_samples=100)
    )
    for position in range(0, 10_000, 100):  # 100 batches over ~1 s (0.01 s each)
        progress(batch(position))
    assert 3 <= len(shown) <= 6  # the first, then every 0.25 s
    assert shown[0][0].startswith("sampling: pass 1, 100 rows read")
    progress(batch(0))  # a second pass
    progress(batch(100))
    assert progress.passes == 2 and progress.rows == 10_200


def test_slice_columns_are_read_in_the_background_once_the_page_is_drawn(data_dir, monkeypatch):
    """The Metrics view is drawn without the metadata columns; then they are read once,
    off the page's thread, for exactly the sampled rows (the same slices as a sample drawn
    with them), so the Slices view finds them read, also for a calibrator fitted before
    they were read, and later sessions find them read."""
    reads = []
    real = calcore.PredictionStream.sample_slice_columns

    def counted(self, *args, **kwargs):  # the real read, counted with its thread
        reads.append((threading.current_thread().name, self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(calcore.PredictionStream, "sample_slice_columns", counted)
    at = run({"data": NAME, "m": "ts"})
    assert_clean(at)
    key = (_dataset(data_dir).fingerprint, N_SAMPLE)
    deadline = time.monotonic() + 120
    while server_datasets._SLICE_COLUMNS.peek(key) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server_datasets._SLICE_COLUMNS.peek(key) is not None
    # this dataset's reads (background reads of earlier tests' datasets may land here too)
    stream = server_datasets._OPENED.peek(key)[1].sliced

    def ours():
        return [name for name, read in reads if read is stream]

    assert ours() == ["calcore-slice-columns"]
    at.radio(key="main.view").set_value("slices").run()
    assert_clean(at)
    at.multiselect(key="view.slices.columns").set_value(["device"]).run()
    assert_clean(at)
    (frame,) = [d.value for d in at.dataframe if "q-value" in d.value.columns]
    with_columns = calcore.scan(data_dir / NAME, split="test", slice_columns=["device"])
    sample, _ = with_columns.sample(N_SAMPLE, seed=0)
    expected = calcore.evaluate_by(sample, ["device"], metrics=("accuracy",), interval_resamples=0)
    want = {s.label: s.n for s in expected.slices}
    assert dict(zip(frame["slice"], frame["rows"], strict=True)) == want
    assert len(want) == len(demo.DEVICES)
    at.selectbox(key=slices.KEY_METHOD).set_value("ts").run()  # fitted before: same slices
    assert_clean(at)
    (frame,) = [d.value for d in at.dataframe if "q-value" in d.value.columns]
    assert dict(zip(frame["slice"], frame["rows"], strict=True)) == want
    assert ours() == ["calcore-slice-columns"]  # the view found them read


def _dataset(data_dir):
    from dashboard.calibration.datadir import data_directory

    (found,) = [d for d in data_directory().datasets() if d.name == NAME]
    return found


@pytest.mark.timeout(120)
def test_a_link_to_a_folder_holding_a_fifo_says_which_file_and_does_not_hang(data_dir):
    folder = data_dir / "parts"
    folder.mkdir()
    (folder / "a.csv").write_text("label,p_a,p_b\na,0.9,0.1\nb,0.2,0.8\n")
    os.mkfifo(folder / "b.csv")  # nobody writes to it: opening it would wait forever
    at = run({"data": "parts"})
    assert not at.exception
    (error,) = at.error
    text = unescape_markdown(error.value)
    assert "'parts/b.csv' in it is a FIFO" in text and str(data_dir) not in text


def test_a_dataset_without_a_split_column_read_whole_says_its_rows_once(tmp_path, monkeypatch):
    """A file with no split column has one split, named "all" inside: the page says "all
    400 rows", not "all 400 all rows" (a newcomer read that as a typo)."""
    rng = np.random.default_rng(3)
    p = rng.random(400)
    y = (rng.random(400) < p).astype(int)
    (tmp_path / "plain.csv").write_text(
        "label,p_yes\n" + "".join(f"{a},{float(b)!r}\n" for a, b in zip(y, p, strict=True))
    )
    monkeypatch.setenv("CALCORE_DATA_DIR", str(tmp_path))
    at = run({"data": "plain.csv"})
    assert_clean(at)
    # a plain fact, not a box (issue 34: the results above the fold): a line of the data's
    # facts, the one caption that says which dataset, when it was read, which rows, the split
    (facts,) = [
        unescape_markdown(c.value) for c in at.caption if c.value.startswith("dataset on the")
    ]
    lines = facts.split("  \n")
    assert lines[0].startswith("dataset on the server: plain.csv")
    assert lines[1].startswith("read at ")
    assert lines[2] == "Every row of the dataset is read (all 400 rows)."
    assert "evaluated on" in lines[3]
    assert "all all" not in facts
    assert not any("Every row of the dataset" in i.value for i in at.info)


def test_a_sampled_dataset_keeps_its_box_and_the_facts_are_one_caption(data_dir):
    """Rows left out need the user's attention: the sample stays a box; the facts beside
    the loader's notes."""
    at = run({"data": NAME})
    assert_clean(at)
    assert any("seeded uniform sample" in i.value for i in at.info)
    (facts,) = [
        unescape_markdown(c.value) for c in at.caption if c.value.startswith("dataset on the")
    ]
    assert "Every row of the dataset" not in facts
    assert [line.split(" ")[0] for line in facts.split("  \n")] == ["dataset", "read", "split"]
    assert [e for e in at.expander if e.label.startswith("What the loader detected")]
