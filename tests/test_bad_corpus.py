"""The bad/hostile input corpus (tests/data/bad/): every file errors clearly or loads as decided.

Run ``pytest -s tests/test_bad_corpus.py`` to see the peak memory of the big files.

``tests/data/bad/MANIFEST.json`` (written by ``make_corpus.py`` from its ``CASES``)
records, per file and options, the expected outcome and what the message must name.
For error files, the library raises :class:`calcore.CalcoreError` naming the file,
the column and the row and saying how to fix it, and ``calcore metrics FILE`` exits 2
with exactly that one line on stderr. Each load runs under a time limit and a
traced-memory limit.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import calcore
from calcore import CalcoreError, CalcoreWarning
from calcore.cli import main
from calcore.io._rows import FIRST_ROWS

BAD = Path(__file__).resolve().parent / "data" / "bad"
MANIFEST = json.loads((BAD / "MANIFEST.json").read_text(encoding="utf-8"))
ERRORS = [c for c in MANIFEST if c["outcome"] == "error"]
LOADS = [c for c in MANIFEST if c["outcome"] != "error"]
TRACED_LIMIT = 64 << 20  # bytes of Python/numpy allocations per load of a corpus file

_FLAGS = {
    "label_column": "--label-col",
    "scores": "--scores",
    "split_column": "--split-col",
    "split": "--split",
    "positive_class": "--positive-class",
}


def case_id(c: dict) -> str:
    options = ",".join(f"{k}={v}" for k, v in c["options"].items())
    return c["file"] + (f"[{options}]" if options else "")


def cli_args(c: dict) -> list[str]:
    """The ``calcore metrics`` arguments for a case (the budget goes through the env var)."""
    args = ["metrics", str(BAD / c["file"])]
    for key, value in c["options"].items():
        if key == "renormalize":
            args.append("--renormalize")
        elif key in _FLAGS:
            args += [_FLAGS[key], str(value)]
    if "split" not in c["options"]:
        args += ["--split", "all"]  # every row, as the loader without split= reads them
    return args


def apply_budget(c: dict, monkeypatch) -> None:
    if "max_decoded_bytes" in c["options"]:
        monkeypatch.setenv("CALCORE_MAX_DECODED_BYTES", str(c["options"]["max_decoded_bytes"]))


def traced_load(c: dict):
    """Load a case; return (predictions or the CalcoreError, warnings, peak traced bytes)."""
    tracemalloc.start()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = calcore.load_predictions(BAD / c["file"], **c["options"])
            except CalcoreError as exc:
                result = exc
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, caught, peak


def assert_names_everything(c: dict, message: str, *, streamed: bool = False) -> None:
    assert c["file"] in message, message  # the file, verbatim (also an HTML payload)
    if c["row"] is not None:
        assert c["row"] in message, message
    if c["column"] is not None:
        assert repr(c["column"]) in message, message
    phrases = c.get("streamed_phrases", c["phrases"]) if streamed else c["phrases"]
    for phrase in phrases:
        assert phrase in message, (phrase, message)


def test_manifest_covers_the_issue_and_is_consistent():
    files = {c["file"] for c in MANIFEST}
    assert len(files) >= 30
    on_disk = {p.name for p in BAD.iterdir()} - {"MANIFEST.json", "make_corpus.py"}
    assert on_disk == files
    assert sum(p.stat().st_size for p in BAD.iterdir()) < 2 << 20
    for c in MANIFEST:
        assert c["outcome"] in ("error", "warning", "ok"), c
        if c["outcome"] == "error":
            assert c["phrases"], c  # at least the fix or the rule
        else:
            assert c["expect"], c


def test_committed_files_are_what_the_generator_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("make_corpus", BAD / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write(tmp_path)
    assert (tmp_path / "MANIFEST.json").read_bytes() == (BAD / "MANIFEST.json").read_bytes()
    for c in MANIFEST:
        new, old = tmp_path / c["file"], BAD / c["file"]
        if c["file"].endswith(".parquet"):  # bytes depend on the pyarrow version
            assert pq.read_table(new).equals(pq.read_table(old)), c["file"]
        else:
            digest = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (new, old)]
            assert digest[0] == digest[1], c["file"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("c", ERRORS, ids=case_id)
def test_error_files_raise_a_clear_calcore_error(c, monkeypatch):
    monkeypatch.delenv("CALCORE_MAX_DECODED_BYTES", raising=False)
    result, caught, peak = traced_load(c)
    assert isinstance(result, CalcoreError), f"{c['file']} loaded: {result!r}"
    assert_names_everything(c, str(result))
    assert "\n" not in str(result)
    assert not caught, [str(w.message) for w in caught]  # no stray (pandas) warnings
    assert peak < TRACED_LIMIT, peak
    options = {k: v for k, v in c["options"].items() if k != "split"}
    with pytest.raises(CalcoreError) as again:
        calcore.load_splits(BAD / c["file"], **options)
    assert_names_everything(c, str(again.value))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("c", LOADS, ids=case_id)
def test_valid_files_load_with_the_decided_warnings(c, monkeypatch):
    monkeypatch.delenv("CALCORE_MAX_DECODED_BYTES", raising=False)
    result, caught, peak = traced_load(c)
    assert not isinstance(result, Exception), str(result)
    assert all(issubclass(w.category, CalcoreWarning) for w in caught), caught
    messages = [str(w.message) for w in caught]
    assert messages == result.load_report.warnings()
    if c["outcome"] == "ok":
        assert not messages
    else:
        assert messages
        text = " ".join(messages)
        assert c["file"] in text
        for phrase in c["phrases"]:
            assert phrase in text, (phrase, text)
    expect = c["expect"]
    assert result.n_samples == expect["n"]
    if "class_names" in expect:
        assert result.class_names == tuple(expect["class_names"])
    if "n_classes" in expect:
        assert result.n_classes == expect["n_classes"]
    assert result.load_report.scores_kind == expect["scores_kind"]
    if "delimiter" in expect:
        assert result.load_report.delimiter == expect["delimiter"]
    np.testing.assert_allclose(result.probs.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    assert peak < TRACED_LIMIT, peak
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        splits = calcore.load_splits(BAD / c["file"], **c["options"])
    assert sum(p.n_samples for p in splits.values()) == expect["n"]
    assert all(p.class_names == result.class_names for p in splits.values())


def test_dialects_give_identical_predictions():
    """BOM, CRLF, semicolon, tab and quoting change nothing in the values."""
    base = calcore.load_predictions(BAD / "bom.csv")
    for name in ("crlf.csv", "semicolon.csv", "tab.tsv", "quoted_numbers.csv"):
        other = calcore.load_predictions(BAD / name)
        np.testing.assert_array_equal(other.probs, base.probs)
        np.testing.assert_array_equal(other.labels, base.labels)


# The CLI streams a CSV or NPZ file over the size budget instead of refusing it.
CLI_ERRORS = [c for c in ERRORS if "max_decoded_bytes" not in c["options"]]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("c", CLI_ERRORS, ids=case_id)
def test_cli_exits_2_with_one_clear_line(c, capsys, monkeypatch):
    apply_budget(c, monkeypatch)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        code = main(cli_args(c))
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("calcore: error: ") and "Traceback" not in err
    assert_names_everything(_in_flag_terms(c), err, streamed=True)


#: The manifest's phrases that name a Python keyword, as the command line says them
#: (calcore.cli.CLI_FIXES): the option's flag.
_FLAG_PHRASES = {
    "label_column=": "--label-col",
    "renormalize=True": "--renormalize",
    "percent=True": "--percent",
    "scores='logits'": "--scores logits",
}


def _in_flag_terms(c: dict) -> dict:
    """``c`` with the phrases the command line says with a flag instead of a keyword."""
    said = {key: [_FLAG_PHRASES.get(p, p) for p in c.get(key, ())] for key in ("phrases",)}
    if "streamed_phrases" in c:
        said["streamed_phrases"] = [_FLAG_PHRASES.get(p, p) for p in c["streamed_phrases"]]
    return {**c, **said}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("c", LOADS, ids=case_id)
def test_cli_metrics_runs_on_every_loadable_file(c, capsys):
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        code = main([*cli_args(c), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["n"] == c["expect"]["n"]
    assert all(np.isfinite(v) for v in (report["accuracy"], report["nll"], report["brier"]))


def _peak_rss_script(path: Path, limit_bytes: int) -> str:
    return (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit_bytes}, {limit_bytes}))\n"
        "from calcore.cli import main\n"
        f"code = main(['metrics', {str(path)!r}, '--json'])\n"
        # VmHWM, not ru_maxrss: Linux carries the parent's (pytest's) peak into the child's
        # ru_maxrss across fork + exec, while VmHWM belongs to this process's own memory
        "peak = next(int(line.split()[1]) for line in open('/proc/self/status')"
        " if line.startswith('VmHWM:'))\n"
        "print('PEAK_KB', peak, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("name", "code"), [("zip_bomb.npz", 2), ("wide_10000_columns.csv", 0)], ids=["bomb", "wide"]
)
def test_big_files_in_a_memory_capped_process(name, code):
    """The zip bomb (16 GiB declared) and the 10,000-column file under a 2 GiB address-space cap.

    The peak resident memory is printed (``pytest -s``) for the report.
    """
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("CALCORE_MAX_DECODED_BYTES", None)
    done = subprocess.run(
        [sys.executable, "-c", _peak_rss_script(BAD / name, 2 << 30)],
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
        env=env,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    peak_kb = int(lines[-1].split()[1])
    print(f"\n{name}: exit {done.returncode}, peak RSS {peak_kb / 1024:.0f} MiB")
    assert peak_kb < 1 << 20  # 1 GiB
    if code == 2:
        assert len(lines) == 2 and lines[0].startswith("calcore: error: ")


def test_hostile_class_names_survive_calibrate_out_as_inert_csv(tmp_path, capsys):
    """Formula-prefixed class names: load -> calibrate --out -> CSV with no formula cell."""
    source = BAD / "formula_class_names.csv"
    rows = source.read_text(encoding="utf-8").splitlines()
    header, body = rows[0], rows[1:]
    # a split column so that calibrate can fit on half the rows and apply to the rest
    split_file = tmp_path / "with_split.csv"
    split_file.write_text(
        "\n".join(
            [header + ",split"]
            + [r + ("," + ("calib" if k % 2 else "test")) for k, r in enumerate(body * 4)]
        )
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "calibrated.csv"
    assert main(["calibrate", str(split_file), "--method", "ts", "--out", str(out)]) == 0, (
        capsys.readouterr().err
    )
    text = out.read_text(encoding="utf-8")
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    formula_like = [cell for cell in cells if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert formula_like == []
    back = calcore.load_predictions(out)
    original = calcore.load_predictions(source)
    assert back.class_names == original.class_names  # the names are intact behind p_
    assert back.n_samples == 16
    np.testing.assert_allclose(back.probs.sum(axis=1), 1.0, atol=1e-12)


def test_html_payload_is_kept_verbatim_in_json_output(capsys):
    """The CLI prints class and file names as data, unchanged (rendering is the viewer's job)."""
    assert main(["metrics", str(BAD / "html_class_name.csv"), "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)
    assert any("<script>alert(1)</script>" in note for note in report["notes"])


def _scan_outcome(c: dict, **scan_options):
    """``("ok", rows)`` or ``("error", message)`` of a streamed evaluation of a case."""
    options = {k: v for k, v in c["options"].items() if k != "max_decoded_bytes"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            stream = calcore.scan(BAD / c["file"], **options, **scan_options)
            return "ok", calcore.evaluate(stream, metrics=["accuracy"]).n
        except CalcoreError as exc:
            return "error", str(exc)


def _before_kind_basis(message: str) -> str:
    """A message without its closing note on why the scores were read as probabilities."""
    return message.split(" (They were read as probabilities")[0]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tiny_pieces", [False, True], ids=["one_piece", "pieces_of_2_rows"])
def test_scan_reads_the_corpus_as_load_predictions_does(tiny_pieces, monkeypatch):
    """Streaming applies the loader's checks: every corpus file that loads streams to the
    same rows, and every error is the loader's message, file lines included, also when a
    CSV is read two rows at a time (pieces cut at every second line end)."""
    import calcore.io._csv_stream as csv_stream

    if tiny_pieces:
        monkeypatch.setattr(csv_stream, "MIN_PIECE_BYTES", 16)
    differ = []
    for c in MANIFEST:
        options = {k: v for k, v in c["options"].items() if k != "max_decoded_bytes"}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = "ok", calcore.load_predictions(BAD / c["file"], **options).n_samples
        except CalcoreError as exc:
            expected = "error", str(exc)
        got = _scan_outcome(c, batch_rows=2) if tiny_pieces else _scan_outcome(c)
        got = got[0], str(got[1]).replace(FIRST_ROWS, "") if got[0] == "error" else got[1]
        if got == expected:
            continue
        if expected[0] == got[0] == "error" and "max_decoded_bytes" in expected[1]:
            continue  # the archive the loader refuses for its size, refused by streaming too
        if tiny_pieces and _before_kind_basis(got[1]) == _before_kind_basis(expected[1]):
            continue  # the scores' kind was decided on the first two rows: another basis
        differ.append((c["file"], expected, got))
    assert not differ, differ
