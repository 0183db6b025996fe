"""The tampered saved-calibrator corpus (tests/data/bad_calibrators/, issue 33 item 4).

Each file is refused by ``calcore apply`` with exit 2 and one line on stderr that names the
file, the JSON path of the bad field (or what is wrong with the file as a whole) and the
rule; the library raises the same ``CalcoreError``. Never a traceback, never an output file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from calcore import CalcoreError
from calcore.calibrators._saved import read_calibrator
from calcore.cli import main

CORPUS = Path(__file__).resolve().parent / "data" / "bad_calibrators"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))


def _generator():
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_files_are_what_the_generator_writes(tmp_path):
    _generator().write(tmp_path)
    assert (tmp_path / "MANIFEST.json").read_bytes() == (CORPUS / "MANIFEST.json").read_bytes()
    on_disk = {p.name for p in CORPUS.iterdir()} - {"MANIFEST.json", "make_corpus.py"}
    assert on_disk == {c["file"] for c in MANIFEST}
    for c in MANIFEST:
        digests = [
            hashlib.sha256((d / c["file"]).read_bytes()).hexdigest() for d in (tmp_path, CORPUS)
        ]
        assert digests[0] == digests[1], c["file"]


@pytest.fixture(scope="module")
def predictions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("apply")
    gen = _generator()
    (folder / "three.csv").write_text(gen.PREDICTIONS)
    (folder / "two.csv").write_text(gen.BINARY_PREDICTIONS)
    return folder


def _expected_in(message: str, c: dict) -> None:
    assert c["file"] in message, message
    if c["path"] is not None:
        assert f": {c['path']} " in message, message
    for phrase in c["phrases"]:
        assert phrase in message, (phrase, message)


@pytest.mark.parametrize("c", MANIFEST, ids=lambda c: c["file"])
def test_apply_refuses_with_exit_2_and_one_line_naming_the_field(c, predictions, capsys):
    rows = predictions / ("two.csv" if c["binary"] else "three.csv")
    out = predictions / f"{c['file']}.out.csv"
    assert main(["apply", str(CORPUS / c["file"]), str(rows), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calcore: error: "), err
    _expected_in(lines[0], c)
    assert not out.exists()


@pytest.mark.parametrize("c", MANIFEST, ids=lambda c: c["file"])
def test_the_library_raises_the_same_clear_error(c):
    with pytest.raises(CalcoreError) as err:
        read_calibrator(CORPUS / c["file"])
    _expected_in(str(err.value), c)


def test_the_untampered_documents_apply(predictions, tmp_path, capsys):
    gen = _generator()
    for document, rows in [
        (gen.saved("ts", gen.TS, {"temperature": 2.0}), "three.csv"),
        (gen.saved("hb", gen.HB, gen.HB_STATE, gen.TWO), "two.csv"),
        (gen.saved("tl-hb", gen.HB, {"classes": [gen.HB_STATE] * 3}), "three.csv"),
    ]:
        path = tmp_path / "ok.json"
        path.write_text(json.dumps(document))
        assert (
            main(["apply", str(path), str(predictions / rows), "--out", str(tmp_path / "o.csv")])
            == 0
        )
    capsys.readouterr()
