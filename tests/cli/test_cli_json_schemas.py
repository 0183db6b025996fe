"""Every command's --json output validates against its published schema (``calcore schema
COMMAND``), in each shape it takes: slices, --after, intervals, per-slice fits, streamed
input, binary and multiclass data. The schemas are closed, so a field added without being
documented fails here."""

from __future__ import annotations

import json

import jsonschema
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore
from calcore.cli import main
from calcore.cli.json_schemas import SCHEMA_VERSION, SCHEMAS, schema_of

CREDIT = "assets/credit_default_logreg.npz"  # binary, calib and test splits, a 'sex' column
CIFAR = "assets/cifar10_resnet110.npz"  # 10 classes, calib and test splits


@pytest.fixture(scope="module")
def streamed_parquet(tmp_path_factory, repo_root):
    """The CIFAR-10 test rows as a Parquet file (streamed by the CLI)."""
    preds = calcore.load_predictions(repo_root / CIFAR, split="test")
    columns = {"label": pa.array(preds.labels)}
    for k, name in enumerate(preds.class_names):
        columns[f"p_{name}"] = pa.array(preds.probs[:, k])
    path = tmp_path_factory.mktemp("schema") / "cifar_test.parquet"
    pq.write_table(pa.table(columns), path, row_group_size=2500)
    return path


def output_of(argv, capsys, monkeypatch, repo_root) -> dict:
    monkeypatch.chdir(repo_root)
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err  # 1: a gate failed, still a full report
    return json.loads(captured.out)


def validate(command: str, document: dict) -> None:
    jsonschema.Draft202012Validator(schema_of(command)).validate(document)
    assert document["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize("command", list(SCHEMAS))
def test_each_schema_is_a_valid_json_schema_and_what_calcore_schema_prints(command, capsys):
    jsonschema.Draft202012Validator.check_schema(schema_of(command))
    assert main(["schema", command]) == 0
    assert json.loads(capsys.readouterr().out) == schema_of(command)


RUNS = {
    "metrics": [
        ["metrics", CIFAR],
        ["metrics", CIFAR, "--bootstrap", "20", "--metric", "top_label_ece"],
        ["metrics", CREDIT, "--split", "all"],
        ["metrics", CREDIT, "--by", "sex", "--bootstrap", "10"],
        ["metrics", CREDIT, "--by", "sex", "--after", "platt", "--metric", "positive_class_ece"],
    ],
    "check": [
        ["check", CIFAR, "--max", "top_label_ece=0.05"],
        ["check", CREDIT, "--by", "sex", "--max", "positive_class_ece=0.01"],  # fails: exit 1
        ["check", CIFAR, "--max", "conf_ece=0.05", "--on", "upper", "--bootstrap", "20"],
    ],
    "compare": [
        ["compare", CREDIT, "--method", "platt", "--method", "hb", "--bootstrap", "20"],
    ],
    "calibrate": [
        ["calibrate", CIFAR, "--method", "ts"],
        ["calibrate", CREDIT, "--method", "platt", "--per-slice", "sex"],
        ["calibrate", CIFAR, "--method", "ts", "--param", "max_temperature=1.0001"],  # a warning
    ],
}


@pytest.mark.parametrize(
    "argv", [argv for runs in RUNS.values() for argv in runs], ids=lambda a: " ".join(a[:1] + a[2:])
)
def test_real_outputs_validate_against_their_schema(argv, capsys, monkeypatch, repo_root):
    validate(argv[0], output_of(argv, capsys, monkeypatch, repo_root))


def test_a_streamed_file_gives_the_same_shape(streamed_parquet, capsys, monkeypatch, repo_root):
    out = output_of(["metrics", str(streamed_parquet)], capsys, monkeypatch, repo_root)
    validate("metrics", out)
    assert out["split"] is None and out["n"] == 10_000


def test_an_undocumented_or_missing_field_fails_validation(capsys, monkeypatch, repo_root):
    """The schemas can fail: a field the code adds without documenting it, or one it drops."""
    out = output_of(["check", CIFAR, "--max", "top_label_ece=0.05"], capsys, monkeypatch, repo_root)
    with pytest.raises(jsonschema.ValidationError, match="Additional properties"):
        validate("check", out | {"surprise": 1})
    with pytest.raises(jsonschema.ValidationError, match="'passed' is a required property"):
        validate("check", {k: v for k, v in out.items() if k != "passed"})
    with pytest.raises(jsonschema.ValidationError):
        validate("check", out | {"split": "validation"})
