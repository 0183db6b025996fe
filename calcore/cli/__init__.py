"""The ``calcore`` command line.

* ``calcore metrics FILE``: every calibration metric of a predictions file, as
  a table or as JSON (``--json``). A Parquet file, a directory of them or a glob is
  streamed (:func:`calcore.scan`; progress on stderr when it takes more than two
  seconds; ``--bootstrap`` intervals then come from the Poisson bootstrap).
* ``calcore calibrate --method NAME ...``: fit a calibrator on calibration
  data, print before/after metrics on test data, optionally write the
  recalibrated test predictions (``--out``) and the fitted calibrator (``--save``).
* ``calcore apply calibrator.json FILE --out out.csv``: apply a saved calibrator.
* ``calcore compare FILE --method ts --method tl-hb ...``: which calibrator to ship: every
  method fitted on the calibration rows and evaluated on the same bootstrap resamples of
  the test rows, the paired verdict of :meth:`calcore.Comparison.verdict` first.
* ``calcore check FILE --max top_label_ece=0.03 [--min accuracy=0.9] [--on upper]``:
  calibration gates for CI (:mod:`calcore.cli.gates`); exit 0 when every gate holds, 1 when
  one fails; optional JUnit XML (``--junit``) and Markdown (``--markdown``) reports.
* ``--by COLUMN`` (``metrics``, ``check``; repeatable, crossed): the same per slice of a
  metadata column (:func:`calcore.evaluate_by`): discoveries at Benjamini-Hochberg
  q <= 0.05 first, slices ranked by z (error beyond the slice's noise and the whole
  model's), with observed/expected and a direction; ``check`` holds every gate in every
  slice too. A source is streamed or loaded whole as for ``metrics``; quantile ranges of
  a streamed source take passes over its slice columns first. ``metrics --by COL --after
  METHOD``: the slices of the test rows recalibrated by METHOD fitted on the calib rows.

Errors are one line on stderr and exit code 2; never a traceback.

The top layer of calcore's packages but the public map: this module is the command
(``calcore``, ``python -m calcore.cli``); :mod:`calcore.cli.gates` holds the gates of
``check`` and :mod:`calcore.cli.json_schemas` the schemas of every ``--json`` output.
"""

from __future__ import annotations

import argparse
import json
import numbers
import os
import sys
import textwrap
import time
import traceback
import warnings
from dataclasses import replace

from calcore.calibrators.per_slice import MIN_FIT_ROWS, PerSliceCalibrator
from calcore.cli import gates
from calcore.cli.json_schemas import SCHEMA_VERSION, SCHEMAS, schema_of
from calcore.evaluation.evaluator import CalibrationReport, evaluate
from calcore.evaluation.intervals import INTERVAL_METHODS
from calcore.evaluation.significance import TESTABLE_METRICS
from calcore.evaluation.slices import MIN_SLICE_ROWS, SlicedReport, evaluate_by
from calcore.foundation.binning import BIN_COUNT_RULES, BINNING_SCHEMES
from calcore.foundation.errors import CalcoreError, CalcoreWarning, EmptySplitError, quoted
from calcore.foundation.limits import SLICE_RESAMPLES
from calcore.io._output import STDOUT, check_output, write_output
from calcore.io.options import LoadOptions
from calcore.metrics.registry import METRICS
from calcore.predictions.slicing import parse_slice_spec

__all__ = ["main", "build_parser", "parse_param"]

EXIT_FAILED = 1  # calcore check: a gate failed
EXIT_USAGE = 2  # bad input or arguments
#: ``--split`` values: a split of the split column, or every row on purpose.
SPLIT_CHOICES = ("calib", "test", "all")
EXIT_INTERNAL = 3  # a bug in calcore: never read as "a gate failed" (1) nor "your input" (2)
#: ``--decimal`` values: the loaders' ``decimal=`` marks.
DECIMAL_MARKS = (".", ",")

#: calcore option -> what to do on the command line instead (the sentence of a message or
#: note that says it for Python is replaced whole, :func:`calcore.foundation.errors.reworded`).
#: Options without a flag say what to change in the file.
CLI_FIXES = {
    "label_column": "Give it with --label-col NAME.",
    "split_column": "Give it with --split-col NAME.",
    "score_columns": "Name the score columns after their classes in the file: p_<class> "
    "(or logit_<class> for logits); --scores probs or --scores logits picks one kind when "
    "the file has both.",
    "weight_column": "Give it with --weight-col NAME (for none, rename the others in the file).",
    "decimal": "Add --decimal , to read them (or save the file with '.' as the decimal point).",
    "decimal_drop": "Leave out --decimal.",
    "file": "Save it as CSV (File > Save As > CSV UTF-8) and give calcore that file.",
    "renormalize": "Fix the scores, or add --renormalize to rescale those rows (reported).",
    "percent": "divide by 100 when writing the file, or add --percent.",
    "percent_auto": "Either divide by 100 when writing the file or add --scores probs "
    "--percent; if they really are logits, add --scores logits.",
    "scores_logits": "If they are logits, add --scores logits (or name the columns logit_*).",
    "percent_logits": "Drop --percent, or give --scores probs (or auto) if the values really "
    "are percentages.",
    "positive_class": "Give the label whose probability the score column holds with "
    "--positive-class NAME.",
    "positive_class_index": "Write the class index (0 or 1, in plain digits) in the file, or "
    "give --positive-class NAME if the labels are names.",
    "label_array": "Save the true labels in the archive as an array named labels, or give its "
    "name with --label-col NAME.",
    "encoding": "Re-save the file as UTF-8 (in Excel: File > Save As > CSV UTF-8).",
    "header_names": "Give every column a name in the file; a blank first name usually means "
    "the row numbers were saved as a column (pandas: index=False in to_csv).",
    # what a load report's notes say of an option (LoadReport.messages)
    "scores_auto": "--scores auto (the default) saw",
    "scores_given": "--scores was given",
    "percent_says": "--percent says the scores are probabilities in percent",
    "percent_given": "(--percent)",
    "percent_suggested": "add --percent",
    "score_columns_given": "not a score column",
}


def cli_message(message) -> str:
    """``message`` (a :class:`CalcoreError`, a note) in the command line's terms: each of
    its Python sentences about an option replaced by :data:`CLI_FIXES`' flags."""
    from calcore.foundation.errors import reworded

    return reworded(message, CLI_FIXES)


def _bins(text: str):
    if text in BIN_COUNT_RULES:
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--bins must be a positive integer or one of {', '.join(BIN_COUNT_RULES)}; "
            f"got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--bins must be a positive integer; got {text!r}")
    return value


def _within(limit):
    """An argparse type: a whole number within a :class:`calcore.foundation.limits.CountLimit`."""

    def parse(text: str) -> int:
        try:
            return limit.check(int(text), "it")
        except (ValueError, CalcoreError):
            raise argparse.ArgumentTypeError(f"must be {limit.describe()}; got {text!r}") from None

    return parse


def _positive(unit: str):
    """An argparse type: a positive whole number of ``unit``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise argparse.ArgumentTypeError(
                f"must be a positive whole number of {unit}; got {text!r}"
            )
        return value

    return parse


def parse_param(text: str) -> tuple[str, object]:
    """``"k=v"`` -> ``(k, v)``, ``v`` read as JSON when it parses (``15``, ``true``), else text.

    Raises
    ------
    CalcoreError
        No ``=`` or an empty name; a JSON value nested too deep, an integer beyond 2**53
        or a number beyond float64 (not read as text instead).
    """
    from calcore.calibrators._saved import parse_json

    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise CalcoreError(f"--param must look like NAME=VALUE; got {text!r}.")
    try:  # bounded: nesting, integer digits and finite numbers, as in a saved calibrator
        parsed = parse_json(value, source=f"parameter {name.strip()!r}")
    except CalcoreError:
        if _looks_like_json(value):
            raise  # a number or structure beyond the limits: say so, do not read it as text
        parsed = value
    return name.strip(), parsed


def _looks_like_json(value: str) -> bool:
    """Whether a parameter value was meant as a JSON number, array or object (not text)."""
    head = value.strip()[:1]
    return bool(head) and (head in "[{-" or head.isdigit())


def _add_loading_options(p: argparse.ArgumentParser, *, with_split_value: bool = True) -> None:
    g = p.add_argument_group("reading the files")
    g.add_argument("--label-col", metavar="NAME", help="label column (default: auto-detect)")
    g.add_argument(
        "--scores",
        choices=("auto", "probs", "logits"),
        default="auto",
        help="score columns hold probabilities or logits (default: auto, reported)",
    )
    g.add_argument("--split-col", metavar="NAME", help="calib/test column (default: 'split')")
    g.add_argument(
        "--weight-col",
        metavar="NAME",
        help="row weights column (default: a column named weight, weights, sample_weight "
        "or example_weight, if any)",
    )
    if with_split_value:
        g.add_argument(
            "--split",
            choices=SPLIT_CHOICES,
            help="the rows of this split; 'all' mixes calib and test rows on purpose (default: "
            "the test rows when the file has a split column; apply: every row)",
        )
    g.add_argument(
        "--renormalize", action="store_true", help="rescale rows that do not sum to 1 (reported)"
    )
    g.add_argument(
        "--percent",
        action="store_true",
        help="the probabilities are in percent (rows sum to 100): divide them by 100",
    )
    g.add_argument(
        "--positive-class", metavar="NAME", help="binary, one score column: positive label"
    )
    g.add_argument(
        "--decimal",
        choices=DECIMAL_MARKS,
        default=".",
        help="the decimal mark of a CSV's numbers: ',' reads 0,25 as 0.25 (a CSV saved with "
        "decimal commas, its fields separated by ';' or tabs; default '.')",
    )
    g.add_argument(
        "--max-decoded-bytes",
        type=_positive("bytes"),
        metavar="N",
        help="load a CSV or NPZ file whole up to N bytes, stream a larger one "
        "(default: $CALCORE_MAX_DECODED_BYTES, else 512 MiB)",
    )


def _add_estimation_options(
    p: argparse.ArgumentParser, *, bootstrap=0, bootstrap_help="bootstrap resamples (default 0)"
) -> None:
    g = p.add_argument_group("estimation")
    g.add_argument("--bins", type=_bins, default=15, help="bins, or sturges/cube-root (default 15)")
    g.add_argument(
        "--binning", choices=BINNING_SCHEMES, default="equal-width", help="default equal-width"
    )
    g.add_argument("--bootstrap", type=int, default=bootstrap, metavar="R", help=bootstrap_help)
    g.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    g.add_argument(
        "--interval",
        choices=("auto", *INTERVAL_METHODS),
        default="auto",
        help="how intervals are read off the resamples (default auto: each metric's method "
        "from the coverage study, bias-corrected twice for the binned calibration errors)",
    )


def _add_slicing_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("slices")
    g.add_argument(
        "--by",
        action="append",
        metavar="COLUMN",
        help="evaluate per slice of a metadata column (repeatable: crossed slices); "
        "COLUMN:q4 for quantile ranges of a number, COLUMN:day/week/month for dates",
    )
    g.add_argument(
        "--rank-by",
        choices=TESTABLE_METRICS,
        default=None,
        metavar="METRIC",
        help="metric whose calibration test ranks the slices (default: positive_class_ece "
        "for two classes, top_label_ece otherwise)",
    )
    g.add_argument(
        "--resamples",
        type=_within(SLICE_RESAMPLES),
        default=200,
        metavar="R",
        help="redrawn label sets of each slice's calibration test (default 200; 0: no tests, "
        "slices ranked by their share of the miscalibration)",
    )
    g.add_argument(
        "--min-slice-rows",
        type=_positive("rows"),
        default=MIN_SLICE_ROWS,
        metavar="N",
        help=f"slices with fewer rows are listed, not tested or gated (default {MIN_SLICE_ROWS})",
    )


APPLY_DESCRIPTION = """\
Apply a saved calibrator to a predictions file: a step of a data pipeline that
loses nothing. The output holds every row of the input (--split: only that
split's rows), in the input's order, and every column, in the input's order and
unchanged, except the score columns, which hold the calibrated probabilities
under the same names. Labels, ids, dates, splits, weights and slice columns are
columns like any other: written as read.

  * Logits in: the output holds probabilities, so a logit column (logit_cat) is
    replaced by a probability column named p_<class> (p_cat): never read as logits.
  * --suffix _cal: the original score columns are kept and the calibrated ones
    (p_cat_cal, ...) added right after the last score column, in the scores' order.
  * --percent: the calibrated columns hold probabilities in [0, 1], not percent.
  * Types: Parquet and Arrow IPC keep each column's type. A CSV input's columns
    are its cells' text, written back to a CSV exactly as read (quoted only where
    needed) and as strings to Parquet/IPC (no type guessed); its scores are
    numbers. Numbers are written to CSV as their shortest exact text.
  * CSV, Parquet and Arrow IPC inputs are streamed batch by batch at bounded
    memory, whatever their size (--max-decoded-bytes only decides for NPZ).
    NPZ archives have no columns to keep: their output is a label column of
    class indices and p_<class> columns.
  * Refused, with nothing written: an --out that is the input (also through a
    symbolic or hard link) or a data file inside an input folder, an --out in a
    missing folder, a column of the input that has a calibrated column's name.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="calcore",
        description="Calibration of classifiers: metrics, calibrators, CI gates.",
        epilog=_examples(["metrics", "calibrate", "apply", "check", "compare"])
        + "\n\nEach command's --help ends with more examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    m = sub.add_parser(
        "metrics",
        help="every calibration metric of a predictions file",
        epilog=_examples(["metrics"]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    m.add_argument(
        "file",
        help="CSV, Parquet, Arrow IPC or NPZ file of predictions; or a directory or glob of them",
    )
    _add_loading_options(m)
    _add_estimation_options(m)
    m.add_argument(
        "--metric",
        action="append",
        choices=tuple(METRICS),
        metavar="KEY",
        help="compute only this metric (repeatable; default: every metric): " + ", ".join(METRICS),
    )
    _add_slicing_options(m)
    g = m.add_argument_group("slices after recalibration")
    g.add_argument(
        "--after",
        metavar="METHOD",
        help="with --by: fit METHOD (a calibrator short name, e.g. ts) on the file's calib "
        "rows and rank the slices of the recalibrated --split rows (default test): what a "
        "global map leaves, which a per-slice fit could fix",
    )
    g.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="METHOD's parameter (repeatable)",
    )
    m.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_engine_options(m, "spark: the passes over Parquet input run as Spark jobs (mapInArrow)")

    c = sub.add_parser(
        "calibrate",
        help="fit a calibrator; before/after metrics on test data",
        epilog=_examples(["calibrate"]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("file", nargs="?", help="one file with both splits (needs a split column)")
    c.add_argument("--calib", metavar="FILE", help="calibration data (with --test)")
    c.add_argument("--test", metavar="FILE", help="test data (with --calib)")
    c.add_argument("--method", required=True, help="calibrator short name, e.g. ts or tl-hb")
    c.add_argument("--param", action="append", default=[], metavar="K=V", help="repeatable")
    _add_loading_options(c, with_split_value=False)
    _add_estimation_options(c)
    c.add_argument(
        "--out", metavar="FILE", help="write the recalibrated test predictions (.csv or .parquet)"
    )
    c.add_argument(
        "--max-fit-rows",
        type=_positive("rows"),
        default=1_000_000,
        metavar="N",
        help="streamed sources: fit on a seeded uniform sample of at most N calibration rows "
        "(default 1,000,000; stated in fit_info)",
    )
    g = c.add_argument_group("per slice")
    g.add_argument(
        "--per-slice",
        action="append",
        metavar="COLUMN",
        help="fit the method again on the calibration rows of each slice of a metadata "
        "column (repeatable: crossed slices; COLUMN:q4, COLUMN:week as for --by); a slice "
        "with too few rows keeps the fit on every row, and so do values never seen",
    )
    g.add_argument(
        "--min-slice-fit-rows",
        type=_positive("rows"),
        default=MIN_FIT_ROWS,
        metavar="N",
        help=f"fewest calibration rows for a slice's own fit (default {MIN_FIT_ROWS})",
    )
    c.add_argument("--save", metavar="JSON", help="write the fitted calibrator")
    c.add_argument("--json", action="store_true", help="print JSON instead of a table")

    a = sub.add_parser(
        "apply",
        help="apply a saved calibrator to a predictions file",
        description=APPLY_DESCRIPTION,
        epilog=_examples(["apply"]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("calibrator", help="JSON written by 'calcore calibrate --save'")
    a.add_argument(
        "file",
        help="CSV, Parquet, Arrow IPC or NPZ file; or a directory or glob of them (streamed "
        "batch by batch)",
    )
    a.add_argument(
        "--out",
        metavar="FILE",
        required=True,
        help="the input's rows and columns with the scores recalibrated: .csv, .parquet/.pq "
        "or .arrow/.feather/.ipc (never the input file itself)",
    )
    a.add_argument(
        "--suffix",
        metavar="SUFFIX",
        help="keep the original score columns and add the calibrated ones, named "
        "<score column>SUFFIX (logits: p_<class>SUFFIX), after the last score column",
    )
    e = a.add_argument_group("Apache Spark (pip install \"calibration-lens[spark]\")")
    e.add_argument(
        "--engine",
        choices=("embedded", "spark"),
        default="embedded",
        help="spark: Parquet input mapped by Spark (mapInArrow), --out a new directory of "
        "Parquet part files, rows in Spark's order (default: embedded)",
    )
    where = e.add_mutually_exclusive_group()
    where.add_argument(
        "--master", metavar="URL", help="Spark master (default local[*]): local[2], yarn, ..."
    )
    where.add_argument("--remote", metavar="URL", help="a Spark Connect server: sc://host:15002")
    _add_loading_options(a)
    _add_check_parser(sub)
    _add_compare_parser(sub)
    sc = sub.add_parser(
        "schema",
        help="the JSON Schema of a command's --json output",
        description="Print the JSON Schema (draft 2020-12) of 'calcore COMMAND --json'. Every "
        "output carries schema_version; it changes when a field is removed or changes meaning.",
        epilog=_examples(["schema"]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sc.add_argument("command_name", metavar="COMMAND", choices=tuple(SCHEMAS))
    return parser


def _add_compare_parser(sub) -> None:
    v = sub.add_parser(
        "compare",
        help="which calibrator to ship: methods compared on paired resamples, with a verdict",
        epilog=_examples(["compare"]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    v.add_argument("file", nargs="?", help="one file with both splits (needs a split column)")
    v.add_argument("--calib", metavar="FILE", help="calibration data (with --test)")
    v.add_argument("--test", metavar="FILE", help="test data (with --calib)")
    v.add_argument(
        "--method",
        action="append",
        required=True,
        metavar="NAME[:K=V,...]",
        help="a calibrator to compare, with parameters after a colon (repeatable); the "
        "uncalibrated predictions are always a candidate",
    )
    v.add_argument(
        "--primary",
        choices=tuple(METRICS),
        metavar="METRIC",
        help="the calibration error to rank by (default: positive_class_ece for two "
        "classes, top_label_ece otherwise)",
    )
    v.add_argument(
        "--metric",
        action="append",
        choices=tuple(METRICS),
        metavar="KEY",
        help="also report this metric (repeatable; the primary, Brier, NLL and accuracy "
        "always are)",
    )
    _add_loading_options(v, with_split_value=False)
    _add_estimation_options(
        v, bootstrap=200, bootstrap_help="paired bootstrap resamples of the test rows (default 200)"
    )
    v.add_argument("--json", action="store_true", help="print JSON instead of a table")


def parse_method_option(text: str) -> tuple[str, dict]:
    """``"tl-hb:bins=10,seed=1"`` -> ``("tl-hb", {"bins": 10, "seed": 1})``.

    Raises
    ------
    CalcoreError
        An empty name or a parameter without ``=``.
    """
    name, _, rest = text.partition(":")
    if not name.strip():
        raise CalcoreError(f"--method must look like NAME or NAME:K=V,...; got {text!r}.")
    params = dict(parse_param(p) for p in rest.split(",") if p.strip()) if rest else {}
    return name.strip(), params


#: Each command's examples, shown at the end of its --help (and all of them, one per
#: command, at the end of ``calcore --help``). The files are the samples bundled with a
#: clone (assets/), so every line runs as written from its root; tests/cli/test_cli.py runs them.
EXAMPLES = {
    "metrics": [
        ("calcore metrics assets/cifar10_resnet110.npz", "every metric of the test rows"),
        (
            "calcore metrics assets/credit_default_logreg.npz --by sex --bootstrap 200",
            "per slice, with 95% intervals",
        ),
        (
            "calcore metrics assets/cifar10_resnet110.npz --split all --json",
            "every row, as JSON (calcore schema metrics)",
        ),
    ],
    "calibrate": [
        (
            "calcore calibrate assets/cifar10_resnet110.npz --method ts --save ts.json",
            "fit on the calib rows, compare on the test rows, save",
        ),
        (
            "calcore calibrate assets/credit_default_logreg.npz --method platt --per-slice sex",
            "one fit per slice",
        ),
    ],
    "apply": [
        (
            "calcore apply ts.json assets/cifar10_resnet110.npz --out recalibrated.csv",
            "the saved calibrator on every row",
        ),
        (
            "calcore apply ts.json assets/cifar10_resnet110.npz --split test --out test.parquet",
            "on the test rows, to Parquet",
        ),
    ],
    "check": [
        (
            "calcore check assets/cifar10_resnet110.npz --max top_label_ece=0.05",
            "exit 1 if the TL-ECE of the test rows is above 0.05",
        ),
        (
            "calcore check assets/credit_default_logreg.npz --max positive_class_ece=0.08 "
            "--on upper --junit report.xml",
            "the whole interval, a JUnit report",
        ),
    ],
    "compare": [
        (
            "calcore compare assets/cifar10_resnet110.npz --method ts --method tl-hb:bins=10",
            "which calibrator to ship",
        ),
        (
            "calcore compare assets/credit_default_logreg.npz --method platt --method hb --json",
            "the verdict as JSON",
        ),
    ],
    "schema": [("calcore schema check", "the JSON Schema of 'calcore check --json'")],
}


def _examples(commands) -> str:
    """The 'Examples' block of a help text: each command line, then what it does."""
    lines = ["Examples (from a clone's root, on its bundled samples):"]
    for command in commands:
        for line, what in EXAMPLES[command][: 1 if len(commands) > 1 else None]:
            lines += [f"  {line}", f"      {what}"]
    return "\n".join(lines)


_CHECK_EPILOG = """\
Either kind of gate works on any metric: --max suits errors (lower is better), --min
accuracy (higher is better); a --min and a --max on one metric make a band. A gate holds at
equality; a limit outside the metric's range (e.g. 3 meant as 3%) is refused. --on upper
holds the upper end of the bootstrap interval against a --max limit and the lower end
against a --min limit: stricter than the estimate. An undefined value (NaN, e.g. fewer than
2 rows) fails its gate. --junit and --markdown replace their file (not appended).

Exit codes: 0 every gate passed, 1 a gate failed, 2 bad input or arguments (no report file
is written then), 3 a bug in calcore.

"""


def _add_engine_options(parser, spark_help: str) -> None:
    """``--engine`` and where Spark runs (``--master`` or ``--remote``)."""
    e = parser.add_argument_group("Apache Spark (pip install \"calibration-lens[spark]\")")
    e.add_argument(
        "--engine",
        choices=("embedded", "spark"),
        default="embedded",
        help=f"{spark_help} (default: embedded)",
    )
    where = e.add_mutually_exclusive_group()
    where.add_argument(
        "--master", metavar="URL", help="Spark master (default local[*]): local[2], yarn, ..."
    )
    where.add_argument("--remote", metavar="URL", help="a Spark Connect server: sc://host:15002")


def _add_check_parser(sub) -> None:
    k = sub.add_parser(
        "check",
        help="calibration gates for CI: exit 1 when a metric is over (or under) its limit",
        epilog=_CHECK_EPILOG
        + textwrap.fill("Metric keys: " + ", ".join(METRICS), 88)
        + "\n\n"
        + _examples(["check"]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    k.add_argument("file", help="predictions file, directory or glob (as for 'calcore metrics')")
    g = k.add_argument_group("gates (at least one; metric keys below)")
    g.add_argument(
        "--max", action="append", metavar="METRIC=LIMIT", help="fail when METRIC > LIMIT"
    )
    g.add_argument(
        "--min", action="append", metavar="METRIC=LIMIT", help="fail when METRIC < LIMIT"
    )
    g.add_argument(
        "--on",
        choices=gates.COMPARE_ON,
        default="estimate",
        help="compare the point estimate (default) or the interval's guarded end",
    )
    _add_loading_options(k)
    _add_estimation_options(
        k,
        bootstrap=None,
        bootstrap_help=f"bootstrap resamples (default 0, {gates.UPPER_BOOTSTRAP} with --on upper)",
    )
    _add_slicing_options(k)
    out = k.add_argument_group("reports (written whether the gates pass or fail)")
    out.add_argument(
        "--junit",
        metavar="PATH",
        help="write a JUnit XML report ('-': standard output, the table then on stderr)",
    )
    out.add_argument(
        "--markdown",
        metavar="PATH",
        help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY; "
        "'-': standard output, the table then on stderr)",
    )
    out.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_engine_options(k, "spark: the passes over Parquet input run as Spark jobs (mapInArrow)")


def _load_options(args, *, slice_columns=None) -> LoadOptions:
    """How the command reads its files (``--label-col``, ``--scores``, ...), as every loader
    takes it (``options=``). The size budget (``--max-decoded-bytes``) is not a reading
    option: it is passed on its own, to the loaders that read whole files.

    Raises
    ------
    CalcoreError
        Options that contradict each other (``--percent`` with ``--scores logits``).
    """
    return LoadOptions(
        label_column=args.label_col,
        scores=args.scores,
        split_column=args.split_col,
        renormalize=args.renormalize,
        percent=args.percent,
        positive_class=args.positive_class,
        weight_column=args.weight_col,
        decimal=args.decimal,
        slice_columns=slice_columns,
    )


def _load_one(path: str, args, *, split=None, slice_columns=None):
    from calcore.io import load_predictions  # pandas/pyarrow only when a file is read

    options = _load_options(args, slice_columns=slice_columns)
    return load_predictions(
        path, split=split, options=options, max_decoded_bytes=args.max_decoded_bytes
    )


def _notes_of(preds, caught) -> list[str]:
    """The notes of loaded predictions (their load report) or of a stream (what the scan
    decided, :attr:`~calcore.PredictionStream.notes`), then the warnings caught."""
    report = getattr(preds, "load_report", None)  # a stream has none: its scan's notes
    notes = list(report.messages()) if report is not None else list(getattr(preds, "notes", ()))
    # a warning's first argument: its text, with the options it names (an Advice)
    notes += [
        (w.message.args or (str(w.message),))[0] for w in caught if str(w.message) not in notes
    ]
    return [cli_message(n) for n in notes]


def _metrics_table(report: CalibrationReport, title: str) -> list[str]:
    width = max(len(spec.label) for spec in METRICS.values())
    lines = [title, ""]
    for key, spec in METRICS.items():
        value = report.metrics[key]
        if spec.binary_only and report.n_classes != 2:
            continue  # a note says they apply to binary models
        shown = "not computed" if value is None else f"{value:.6f}"
        if key in report.intervals:
            iv = report.intervals[key]
            shown += f"   [{iv.low:.6f}, {iv.high:.6f}]"
        test = report.calibration_test
        if test is not None and key in test.p_values:
            shown += f"   {test.verdict(key)}"
        lines.append(f"  {spec.label:<{width}}  {shown}")
    return lines


def _with_notes(lines: list[str], notes: list[str]) -> str:
    if notes:
        lines = lines + ["", "Notes:"] + [f"  - {n}" for n in notes]
    return "\n".join(lines)


def _evaluate(preds, args, *, metrics=None, interval_resamples=None) -> CalibrationReport:
    """``evaluate`` with the command's settings (``metrics``: else ``--metric`` if any)."""
    return evaluate(
        preds,
        bins=args.bins,
        binning=args.binning,
        seed=args.seed,
        n_resamples=args.bootstrap if interval_resamples is None else interval_resamples,
        metrics=getattr(args, "metric", None) if metrics is None else metrics,
        interval_method=None if args.interval == "auto" else args.interval,
    )


def _streamable(path: str, budget: int | None = None) -> bool:
    """Whether a source is streamed (Poisson bootstrap intervals) rather than loaded whole.

    Streamed: a directory, a glob, a Parquet or Arrow IPC file, and a CSV or NPZ file that
    the loader would refuse for its decoded size (``budget``, else
    ``CALCORE_MAX_DECODED_BYTES``, else 512 MiB), measured as the loader measures it: an
    archive's declared sizes, a CSV's lines x columns x 8 bytes (one pass counting line
    ends). Smaller CSV and NPZ files are loaded whole, as the dashboard loads them
    (multinomial bootstrap). A file that cannot be read is left to the loader's messages.
    """
    from calcore.foundation.limits import resolve_budget

    if any(ch in path for ch in "*?[") or os.path.isdir(path):
        return True
    if path.lower().endswith((".parquet", ".pq", ".arrow", ".feather", ".ipc")):
        return True
    if not os.path.isfile(path):
        return False
    size = _decoded_size(path)
    return size is not None and size > resolve_budget(budget)


def _decoded_size(path: str) -> int | None:
    """What the loader's size check measures for a CSV or NPZ file (None if unreadable).

    Raises
    ------
    CalcoreError
        A CSV file whose header or first rows the loader refuses (read here within a
        bounded head of the file).
    """
    import zipfile

    from calcore.io._csv_stream import csv_head
    from calcore.io._source import misnamed_binary

    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                return sum(info.file_size for info in zf.infolist())
        try:
            head = csv_head(path, os.path.basename(path))
        except CalcoreError:
            with open(path, "rb") as f:
                if misnamed_binary(f.read(4)):
                    return None  # Parquet or NPZ without its extension: the loader sniffs it
            # The loader would refuse the same header or first rows, but only after reading
            # the whole file (gigabytes for a sparse file whose first line never ends).
            raise
        lines = 0
        with open(path, "rb") as f:
            while block := f.read(16 << 20):
                lines += block.count(b"\n")
        return lines * len(head.layout.columns) * 8
    except (OSError, zipfile.BadZipFile):
        return None


def _evaluated_split(args) -> str | None:
    """Settle ``args.split`` for ``metrics`` and ``check``: the split the loaders take (None:
    every row), and ``args.split_used`` for the JSON (``"test"``, ``"calib"``, ``"all"``, or
    None without a split column).

    A file with a split column is evaluated on its test rows unless ``--split`` says
    otherwise (said on stderr): calibration rows, on which a calibrator was fitted, would
    give a gate optimistic numbers, and mixing the two is a choice (``--split all``).
    """
    if args.split is not None:
        args.split_used = args.split
        return None if args.split == "all" else args.split
    column = _stream(args.file, args).roles.split  # reads the head only
    args.split_used = None if column is None else "test"
    if column is not None:
        print(
            f"calcore: {args.file}: the test rows of split column {quoted(column)} "
            "(--split calib: the calibration rows; --split all: every row)",
            file=sys.stderr,
        )
    return args.split_used


def _with_split_advice(args, exc: EmptySplitError) -> CalcoreError:
    """A defaulted test split that is empty: say which ``--split`` to give instead."""
    if getattr(args, "split_given", True):
        return exc
    column = f" {quoted(exc.column)}" if exc.column else ""
    return CalcoreError(
        f"{exc.source}: the split column{column} has no test rows, which calcore evaluates "
        "by default; give --split calib for the calibration rows or --split all for every row."
    )


def _spark_engine(args) -> bool:
    """``--engine spark`` (``--master``/``--remote`` refused without it)."""
    if getattr(args, "engine", "embedded") == "spark":
        return True
    if getattr(args, "master", None) or getattr(args, "remote", None):
        raise CalcoreError("--master and --remote choose a Spark cluster: add --engine spark.")
    return False


def _spark_stream(path: str, args, *, split=None, slice_columns=None):
    """``--engine spark``: calcore's list of the Parquet files, read by Spark, as a
    :func:`calcore.from_spark` source (its passes are Spark jobs)."""
    import calcore.spark
    from calcore.io._files import source_files
    from calcore.spark._evaluate import from_spark

    files = source_files(path)  # calcore's files, in calcore's order (positions)
    not_parquet = [f for f in files if not f.lower().endswith((".parquet", ".pq"))]
    if not_parquet:
        raise CalcoreError(
            f"{not_parquet[0]}: --engine spark reads Parquet files; evaluate CSV, Arrow IPC and "
            "NPZ files without --engine spark (the embedded engine)."
        )
    # Parquet only: no size budget, and no decimal mark (a CSV's option)
    options = replace(_load_options(args, slice_columns=slice_columns), decimal=".")
    spark = calcore.spark.session(master=args.master, remote=args.remote)
    try:
        df = spark.read.parquet(*[os.path.abspath(f) for f in files])
    except Exception as exc:
        from calcore.spark._apply import spark_error

        raise spark_error(exc, path) from None
    return from_spark(df, split=split, name=path, options=options)


def _stream(path: str, args, *, split=None, slice_columns=None):
    from calcore.io.stream import scan

    # No size budget: a stream is never refused for size.
    stream = scan(path, split=split, options=_load_options(args, slice_columns=slice_columns))
    return stream.with_progress(Progress(stream.n_rows_in_files, estimated=stream.rows_estimated))


class Progress:
    """Rows read, rows/s and the time left in the current pass, on one stderr line.

    Silent for the first two seconds (most runs finish before), then refreshed at most
    twice a second; a pass is over when a batch starts again at position 0.
    """

    def __init__(
        self, rows_per_pass: int, *, stream=None, after: float = 2.0, estimated: bool = False
    ):
        self.rows_per_pass = max(int(rows_per_pass), 1)
        self.about = "~" if estimated else ""  # CSV: rows estimated from the first lines
        self.out = sys.stderr if stream is None else stream
        self.after = after
        self.start = time.monotonic()
        self.pass_start = self.start
        self.passes = 0
        self.rows = 0
        self.last = 0.0
        self.shown = False

    def __call__(self, batch) -> None:
        now = time.monotonic()
        if batch.position == 0:
            self.passes += 1
            self.pass_start = now
        done = batch.position + batch.preds.n_samples
        self.rows += batch.preds.n_samples
        if now - self.start < self.after or now - self.last < 0.5:
            return
        self.last = now
        rate = self.rows / (now - self.start)
        pass_rate = done / max(now - self.pass_start, 1e-9)
        left = max(self.rows_per_pass - done, 0) / max(pass_rate, 1e-9)
        self.out.write(
            f"\rcalcore: pass {self.passes}: {done:,} of {self.about}{self.rows_per_pass:,} rows "
            f"({rate / 1e6:.1f}M rows/s), {left:.0f} s left in this pass   "
        )
        self.out.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.out.write("\n")
            self.out.flush()


def _report_of_file(args, **options) -> tuple[CalibrationReport, list[str]]:
    """The report of ``args.file``, streamed or loaded whole, and the notes of both steps."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalcoreWarning)
        if _spark_engine(args):
            preds = _spark_stream(args.file, args, split=args.split)
            report = _evaluate(preds, args, **options)
            notes = _notes_of(preds, caught) + list(report.notes)
        elif _streamable(args.file, args.max_decoded_bytes):
            preds = _stream(args.file, args, split=args.split)
            try:
                report = _evaluate(preds, args, **options)
            finally:
                preds.progress.close()
            notes = _notes_of(preds, caught) + list(report.notes)
        else:
            preds = _load_one(args.file, args, split=args.split)
            report = _evaluate(preds, args, **options)
            notes = _notes_of(preds, caught) + list(report.notes)
    return report, notes


#: Most calibration rows ``metrics --after`` fits on when the file is streamed (a seeded
#: uniform sample beyond it, as ``calibrate --max-fit-rows`` by default).
AFTER_MAX_FIT_ROWS = 1_000_000


def _sliced_of_file(
    args, *, metrics=None, interval_resamples=None
) -> tuple[SlicedReport, list[str], dict | None]:
    """:func:`evaluate_by` of ``args.file`` (streamed or loaded whole, as ``metrics`` does),
    the notes of both steps and, with ``--after``, the method and parameters fitted (the
    slices are then of the recalibrated rows)."""
    columns = [parse_slice_spec(spec).column for spec in args.by]
    streamed = _streamable(args.file, args.max_decoded_bytes)
    after = getattr(args, "after", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalcoreWarning)
        fit = None
        if after and _spark_engine(args):
            raise CalcoreError(
                "--after with --engine spark: recalibrated slices are not run on Spark yet; "
                "leave --after out, or use the embedded engine."
            )
        if after:
            preds, fit, fitted = _recalibrated(args, columns, streamed)
        elif _spark_engine(args):
            preds = _spark_stream(args.file, args, split=args.split, slice_columns=columns)
        elif streamed:
            preds = _stream(args.file, args, split=args.split, slice_columns=columns)
        else:
            preds = _load_one(args.file, args, split=args.split, slice_columns=columns)
        sliced = evaluate_by(
            preds,
            args.by,
            bins=args.bins,
            binning=args.binning,
            seed=args.seed,
            interval_resamples=(
                args.bootstrap if interval_resamples is None else interval_resamples
            ),
            n_resamples=args.resamples,
            metrics=getattr(args, "metric", None) if metrics is None else metrics,
            rank_by=args.rank_by,
            min_slice_rows=args.min_slice_rows,
            interval_method=None if args.interval == "auto" else args.interval,
        )
    if streamed and getattr(preds, "progress", None) is not None:  # not a Spark source
        preds.progress.close()
    notes = _notes_of(preds, caught)
    if after:
        notes.insert(0, f"Slices after recalibration: {fitted}.")
    return sliced, notes + list(sliced.overall.notes) + list(sliced.notes), fit


def _recalibrated(args, columns, streamed):
    """``--after``: the ``--split`` rows (test by default) with their slice columns,
    recalibrated by METHOD fitted on the file's calib rows; ``{"method", "params"}``; and a
    sentence saying what was fitted on what. A streamed file is fitted on a seeded sample
    of at most :data:`AFTER_MAX_FIT_ROWS` calibration rows and recalibrated batch by
    batch."""
    from calcore.calibrators import make_calibrator

    split = args.split or "test"
    if split == "calib" or args.split_used == "all":
        raise CalcoreError(
            "--after fits METHOD on the calib rows: evaluate other rows (--split test), not "
            "the rows it was fitted on."
        )
    calibrator = make_calibrator(args.after, **dict(parse_param(p) for p in args.param))
    if streamed:
        calib = _stream(args.file, args, split="calib")
        sample, n_calib = calib.sample(AFTER_MAX_FIT_ROWS, seed=args.seed)
        calib.progress.close()
        calibrator.fit(sample)
        test = _stream(args.file, args, split=split, slice_columns=columns)
        preds = test.with_transform(calibrator.transform)
        rows = f"{sample.n_samples:,} of {n_calib:,} calib rows (seeded sample)"
        if sample.n_samples == n_calib:
            rows = f"{n_calib:,} calib rows"
    else:
        from calcore.io import load_splits

        splits = load_splits(
            args.file, options=_load_options(args), max_decoded_bytes=args.max_decoded_bytes
        )
        missing = [s for s in ("calib", split) if s not in splits]
        if missing:
            raise CalcoreError(
                f"{args.file}: no {' or '.join(missing)} rows; --after needs a split column "
                "with calib rows to fit on and the --split rows to evaluate."
            )
        # a calibrator's output keeps its input's weights and metadata (slice columns)
        preds = calibrator.fit(splits["calib"]).transform(splits[split])
        rows = f"{splits['calib'].n_samples:,} calib rows"
    fit = {"method": calibrator.name, "params": calibrator.params}
    words = f"{calibrator.name} {calibrator.params} fitted on {rows}, applied to the {split} rows"
    return preds, fit, words


#: Slices shown in the text table of ``calcore metrics --by`` (JSON has every slice).
_SLICES_SHOWN = 30


def _slices_table(sliced: SlicedReport) -> list[str]:
    label = METRICS[sliced.rank_metric].label
    truth = "rate" if any(s.view == "positive" for s in sliced.slices) else "acc"
    rows = [["slice", "n", label, "z", "excess", "p", "q", f"obs/exp {truth}", "direction"]]
    for s in sliced.slices[:_SLICES_SHOWN]:
        value = None if s.report is None else s.report.metrics.get(sliced.rank_metric)
        rows.append(
            [
                gates.terminal_text(s.label),  # untrusted text: one line, no escapes
                f"{s.n:,}",
                "n/a" if value is None else f"{value:.6f}",
                f"{s.z:.1f}" if s.z == s.z else "-",
                f"{s.excess:+.4f}" if s.excess == s.excess else "-",
                (f"{s.p_value:.3g}" + ("*" if s.p_method == "tail fit" else ""))
                if s.tested
                else "-",
                f"{s.q_value:.3g}" if s.tested else "-",
                f"{s.observed:.4f}/{s.expected:.4f}" if s.expected == s.expected else "-",
                s.direction or "-",
            ]
        )
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    lines = [
        "",
        gates.terminal_text(sliced.headline()),
        "",
        f"Slices by {' x '.join(sliced.columns)}, most miscalibrated first "
        f"(calibration test of {label}, {sliced.n_resamples} redrawn label sets each; "
        "q <= 0.05 first, by z: the error beyond the slice's noise"
        + (
            " after the model's own calibration curve):"
            if any(s.beyond_q == s.beyond_q for s in sliced.slices)
            else " and the whole model's):"
        ),
        "",
    ]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    if len(sliced.slices) > _SLICES_SHOWN:
        lines.append(f"  ... {len(sliced.slices) - _SLICES_SHOWN} more (--json lists every slice)")
    if any(s.p_method == "tail fit" for s in sliced.slices):
        lines.append("  * p beyond the redraws' floor: a gamma fitted to the redrawn values")
    return lines


def _metrics(args) -> int:
    args.split_given = args.split is not None
    args.split = _evaluated_split(args)
    try:
        return _metrics_of_split(args)
    except EmptySplitError as exc:
        raise _with_split_advice(args, exc) from None


def _metrics_of_split(args) -> int:
    sliced = after = None
    if args.after and not args.by:
        raise CalcoreError("--after ranks slices after recalibration: give --by COLUMN too.")
    if args.by:
        sliced, notes, after = _sliced_of_file(args)
        report = sliced.overall
    else:
        report, notes = _report_of_file(args)
    if args.json:
        out = {"schema_version": SCHEMA_VERSION} | report.as_dict()
        out |= {"file": args.file, "split": args.split_used, "notes": notes}
        if sliced is not None:
            out |= sliced.as_dict()
        if after is not None:
            out["after"] = after
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        title = (
            f"{args.file}: {report.n} rows, {report.n_classes} classes; "
            f"bins: {report.binning}, {report.bins}"
        )
        lines = _metrics_table(report, title)
        if sliced is not None:
            lines += _slices_table(sliced)
        print(_with_notes(lines, notes))
    return 0


def _calibration_data(args):
    from calcore.io import load_splits

    if args.file and (args.calib or args.test):
        raise CalcoreError(
            "Give either one FILE with a split column, or --calib and --test; not both."
        )
    if args.file:
        splits = load_splits(
            args.file, options=_load_options(args), max_decoded_bytes=args.max_decoded_bytes
        )
        missing = [s for s in ("calib", "test") if s not in splits]
        if missing:
            raise CalcoreError(
                f"{args.file}: no {' or '.join(missing)} rows; the file needs a split column with "
                f"calib and test rows (or use --calib FILE --test FILE)."
            )
        return splits["calib"], splits["test"]
    if not (args.calib and args.test):
        raise CalcoreError(
            "Give the data: one FILE with a split column, or --calib FILE --test FILE."
        )
    return _load_one(args.calib, args), _load_one(args.test, args)


def _streamed_calibration(args, calibrator, caught):
    """Fit on a seeded sample of the calibration stream; evaluate and write the test stream."""
    from calcore.io.stream_write import write_stream

    per_slice = isinstance(calibrator, PerSliceCalibrator)
    columns = list(calibrator.columns) if per_slice else None
    if args.file:
        calib = _stream(args.file, args, split="calib", slice_columns=columns)
        test = _stream(args.file, args, split="test", slice_columns=columns)
    else:
        calib = _stream(args.calib, args, slice_columns=columns)
        test = _stream(args.test, args, slice_columns=columns)
    sample, n_calib = calib.sample(args.max_fit_rows, seed=args.seed)
    fit_warnings = _fitted(calibrator, sample)
    if sample.n_samples < n_calib:
        fitted = calibrator.fallback if per_slice else calibrator
        fitted.note_fit(
            fit_sample=f"fitted on a seeded uniform sample of {sample.n_samples:,} of the "
            f"{n_calib:,} calibration rows (seed {args.seed}; --max-fit-rows)"
        )
    calibrated = test.with_transform(calibrator.transform, with_metadata=per_slice)
    before, after = _evaluate(test, args), _evaluate(calibrated, args)
    if args.out:
        write_stream(calibrated, args.out)
    for s in (calib, test):
        s.progress.close()
    notes = _notes_of(test, caught) + list(after.notes)
    return sample, before, after, notes, fit_warnings


def _fitted(calibrator, data) -> tuple[str, ...]:
    """Fit ``calibrator`` on ``data``; the texts of the warnings the fit raised (a bound
    hit, no convergence), which ``calibrate`` shows first."""
    from calcore.evaluation.protocols import fit_warning_texts

    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always", CalcoreWarning)
        calibrator.fit(data)
    return fit_warning_texts(raised)


def _calibrate(args) -> int:
    from calcore.calibrators import make_calibrator
    from calcore.io.export import write_json, write_predictions_csv

    params = dict(parse_param(p) for p in args.param)
    # fail on bad names before loading data
    if args.per_slice:
        calibrator = PerSliceCalibrator(
            args.method, by=args.per_slice, params=params, min_rows=args.min_slice_fit_rows
        )
    else:
        calibrator = make_calibrator(args.method, **params)
    streamed = any(
        _streamable(f, args.max_decoded_bytes) for f in (args.file, args.calib, args.test) if f
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalcoreWarning)
        if streamed:
            calib, before, after, notes, fit_warnings = _streamed_calibration(
                args, calibrator, caught
            )
            test = None
        else:
            calib, test = _calibration_data(args)
            fit_warnings = _fitted(calibrator, calib)
            calibrated = calibrator.transform(test)
            before, after = _evaluate(test, args), _evaluate(calibrated, args)
    if args.out and not streamed:
        write_predictions_csv(calibrated, args.out)
    if args.save:
        write_json(calibrator.to_dict(), args.save)
    if not streamed:
        notes = _notes_of(test, caught) + list(after.notes)
    if args.json:
        out = {
            "schema_version": SCHEMA_VERSION,
            "method": calibrator.name,
            "params": calibrator.params,
            "fit_info": calibrator.fit_info,
            "warnings": list(fit_warnings),
            "before": before.as_dict(),
            "after": after.as_dict(),
            "notes": notes,
        }
        if args.per_slice:
            out |= {
                "method": args.method,
                "per_slice": {
                    "by": list(calibrator.by),
                    "min_rows": calibrator.min_rows,
                    "slices": [
                        {"value": f.label, "n_calib": f.n_calib, "own_fit": f.own}
                        | ({"note": f.note} if f.note else {})
                        for f in calibrator.fits
                    ],
                },
            }
        print(json.dumps(out, indent=2, allow_nan=False))
        return 0
    width = max(len(spec.label) for spec in METRICS.values())
    name = _calibrator_name(calibrator)
    params = ", ".join(f"{k}={_for_people(v)}" for k, v in calibrator.params.items())
    lines = [
        f"{name}" + (f" ({params})" if params else "") + f": fitted on {calib.n_samples:,} "
        f"rows, evaluated on {after.n:,} test rows; bins: {args.binning}, {args.bins}",
    ]
    if fit_warnings:
        lines += ["", "Warnings:"] + [f"  - {w}" for w in fit_warnings]
    lines += ["", "Fit:"] + _aligned(calibrator.fit_info)
    if args.per_slice:
        lines += ["", calibrator.summary()]
    lines += [
        "",
        f"  {'metric':<{width}}  {'better':<8}  {'before':>10}  {'after':>10}",
    ]
    for key, spec in METRICS.items():
        if spec.binary_only and before.n_classes != 2:
            continue  # a note says they apply to binary models
        b, a = before.metrics[key], after.metrics[key]
        fmt = lambda v: "n/a" if v is None else f"{v:.6f}"  # noqa: E731
        lines.append(f"  {spec.label:<{width}}  {spec.better:<8}  {fmt(b):>10}  {fmt(a):>10}")
    if args.out:
        lines.append(f"\nwrote {args.out}")
    if args.save:
        lines.append(f"wrote {args.save}")
    print(_with_notes(lines, notes))
    return 0


def _for_people(value, *, depth: int = 0) -> str:
    """A fit detail as a person reads it: 4 significant digits, thousands separators,
    yes/no, short lists; ``--json`` keeps full precision."""
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "none"}[value]
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        return f"{float(value):.4g}"
    if isinstance(value, (dict, list, tuple)) and not value:
        return "none"
    if isinstance(value, dict) and depth < 2:
        return ", ".join(f"{k}={_for_people(v, depth=depth + 1)}" for k, v in value.items())
    if isinstance(value, (list, tuple)) and depth < 2:
        shown = [_for_people(v, depth=depth + 1) for v in value[:6]]
        return ", ".join(shown) + (f", ... ({len(value):,} values)" if len(value) > 6 else "")
    text = str(value)
    return text if len(text) <= 200 else text[:200] + f"... ({len(text):,} characters)"


def _aligned(details: dict) -> list[str]:
    """``key: value`` lines with the values aligned."""
    width = max((len(str(k)) for k in details), default=0) + 1
    return [f"  {str(k) + ':':<{width}} {_for_people(v)}" for k, v in details.items()]


def _calibrator_name(calibrator) -> str:
    if isinstance(calibrator, PerSliceCalibrator):
        return f"{calibrator.method} per slice of {' x '.join(calibrator.by)}"
    return calibrator.name


def _apply(args) -> int:
    """``calcore apply``: the input's rows with every column, the scores recalibrated
    (NPZ archives, which have no columns to keep: a label and probability columns)."""
    from calcore.calibrators._saved import read_calibrator
    from calcore.io._files import source_files

    args.split = None if args.split == "all" else args.split  # apply's default: every row

    # bounded read, every field checked against its declaration before any use
    calibrator = read_calibrator(args.calibrator)
    if args.engine == "spark":
        return _apply_spark(args, calibrator)
    if args.master or args.remote:
        raise CalcoreError("--master and --remote choose a Spark cluster: add --engine spark.")
    if _holds_npz(source_files(args.file)):
        if args.suffix is not None:
            raise CalcoreError(
                f"{args.file}: --suffix keeps the input's columns, and an NPZ archive has "
                "none; leave --suffix out (the output then holds a label and p_ columns)."
            )
        return _apply_npz(args, calibrator)
    return _apply_keeping_columns(args, calibrator)


def _apply_spark(args, calibrator) -> int:
    """``calcore apply --engine spark``: the embedded reader decides the columns, class
    names and scores' kind from the files; Spark maps every row and writes Parquet."""
    import calcore.spark
    from calcore.io.stream import scan
    from calcore.spark._apply import apply_files, check_apply_files, plan_for_stream

    if args.split is not None:
        raise CalcoreError(
            f"--split {args.split} with --engine spark: Spark applies the calibrator to "
            "every row; leave --split out (or use the embedded engine)."
        )
    stream = scan(args.file, keep_columns=True, options=_load_options(args))  # first batch only
    check_apply_files(stream, args.out)  # before a JVM starts
    plan_for_stream(stream, calibrator, suffix=args.suffix, renormalize=args.renormalize,
                    percent=args.percent, offsets=None)  # fmt: skip  (its refusals, too)
    spark = calcore.spark.session(master=args.master, remote=args.remote)
    rows = apply_files(spark, stream, calibrator, args.out, suffix=args.suffix,
                       renormalize=args.renormalize, percent=args.percent)  # fmt: skip
    print(
        f"{_calibrator_name(calibrator)}: recalibrated {rows} rows of {args.file} -> "
        f"{args.out} (Spark; {_placement(stream, args.suffix)}; every other column as read)"
    )
    return 0


def _holds_npz(files) -> bool:
    from calcore.io._readers import file_format

    return file_format(files[0]) == "npz"


def _apply_keeping_columns(args, calibrator) -> int:
    """Stream ``args.file`` batch by batch, every column kept, to ``args.out``."""
    from calcore.io.stream import scan
    from calcore.io.stream_write import check_not_in_folder, write_applied

    check_not_in_folder(args.out, args.file)  # before the long read
    per_slice = isinstance(calibrator, PerSliceCalibrator)
    columns = list(calibrator.columns) if per_slice else None  # read for the slices
    options = _load_options(args, slice_columns=columns)
    stream = scan(args.file, split=args.split, keep_columns=True, options=options)
    stream = stream.with_progress(Progress(stream.n_rows_in_files, estimated=stream.rows_estimated))
    try:
        mapped = stream.with_transform(calibrator.transform, with_metadata=per_slice)
        rows = write_applied(mapped, args.out, suffix=args.suffix)
    finally:
        stream.progress.close()
    print(
        f"{_calibrator_name(calibrator)}: recalibrated {rows} rows of {args.file} -> {args.out}"
        f" ({_placement(stream, args.suffix)}; every other column as read)"
    )
    return 0


def _placement(stream, suffix) -> str:
    """Where ``apply`` wrote the calibrated scores, in a few words."""
    scores = stream.roles.scores
    if suffix:
        return f"originals kept, calibrated columns *{suffix} added after {scores[-1]!r}"
    # a thousand-class file's columns are not all listed: the first ones and the count
    named = ", ".join(scores)
    if len(scores) > 4:
        named = ", ".join(scores[:3]) + f", ... ({len(scores)})"
    if stream.scores_kind == "logits":
        return f"logit columns {named} replaced by calibrated probabilities p_<class>"
    return f"score columns {named} hold the calibrated probabilities"


def _apply_npz(args, calibrator) -> int:
    """``apply`` to NPZ archives: written as a label and ``p_`` columns, as before."""
    from calcore.io._files import source_files
    from calcore.io.export import write_predictions_csv
    from calcore.io.stream_write import check_not_input

    check_not_input(args.out, source_files(args.file))
    per_slice = isinstance(calibrator, PerSliceCalibrator)
    columns = list(calibrator.columns) if per_slice else None
    if _streamable(args.file, args.max_decoded_bytes):
        from calcore.io.stream_write import write_stream

        stream = _stream(args.file, args, split=args.split, slice_columns=columns)
        try:
            mapped = stream.with_transform(calibrator.transform, with_metadata=per_slice)
            rows = write_stream(mapped, args.out)
        finally:
            stream.progress.close()
        print(
            f"{_calibrator_name(calibrator)}: recalibrated {rows} rows of {args.file} -> {args.out}"
        )
        return 0
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", CalcoreWarning)
        preds = _load_one(args.file, args, split=args.split, slice_columns=columns)
    out = calibrator.transform(preds)
    if args.out.lower().endswith((".parquet", ".pq")):
        from calcore.io.stream_write import write_predictions

        write_predictions(out, args.out)
    else:
        write_predictions_csv(out, args.out)
    name = _calibrator_name(calibrator)
    print(f"{name}: recalibrated {out.n_samples} rows of {args.file} -> {args.out}")
    return 0


def _check(args) -> int:
    """``calcore check``: gates checked before any data is read, reports written, exit 0 or 1."""
    checked = gates.parse_gates(args.max, args.min)
    interval_resamples = gates.bootstrap_for(args.on, args.bootstrap)
    wanted = [k for k in METRICS if any(g.metric == k for g in checked)]
    args.split_given = args.split is not None
    args.split = _evaluated_split(args)
    try:
        if args.by:
            sliced, notes, _ = _sliced_of_file(
                args, metrics=wanted, interval_resamples=interval_resamples
            )
            result = gates.check_sliced(sliced, checked, on=args.on, file=args.file, notes=notes)
        else:
            report, notes = _report_of_file(
                args, metrics=wanted, interval_resamples=interval_resamples
            )
            result = gates.check_report(report, checked, on=args.on, file=args.file, notes=notes)
    except EmptySplitError as exc:
        raise _with_split_advice(args, exc) from None
    if args.junit:
        write_output(args.junit, gates.junit_xml(result), stdout=True, what="--junit")
    if args.markdown:
        report = gates.markdown_summary(result).encode("utf-8")
        write_output(args.markdown, report, stdout=True, what="--markdown")
    if args.json:
        out = {"schema_version": SCHEMA_VERSION} | result.as_dict() | {"split": args.split_used}
        print(json.dumps(out, indent=2, allow_nan=False))
    else:  # on stderr when a report is the standard output, which then holds it alone
        report_on_stdout = STDOUT in (args.junit, args.markdown)
        print(gates.text_summary(result), file=sys.stderr if report_on_stdout else sys.stdout)
    return 0 if result.passed else EXIT_FAILED


def _compare(args) -> int:
    """``calcore compare``: the verdict sentence, then every method's numbers."""
    from calcore.evaluation.protocols import compare
    from calcore.evaluation.verdict import primary_metrics
    from calcore.metrics.registry import default_primary

    methods = [parse_method_option(m) for m in args.method]
    if args.bootstrap < 0:
        raise CalcoreError(f"--bootstrap must be at least 0; got {args.bootstrap}.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalcoreWarning)
        calib, test = _calibration_data(args)
    primary = args.primary or default_primary(test.n_classes)
    if primary not in primary_metrics(test.n_classes):
        raise CalcoreError(
            f"--primary {primary} does not apply to {test.n_classes}-class predictions; "
            f"choose one of {primary_metrics(test.n_classes)}."
        )
    wanted = list(dict.fromkeys([primary, "brier", "nll", "accuracy", *(args.metric or [])]))
    comparison = compare(
        calib,
        test,
        [(name, params) for name, params in methods],
        bins=args.bins,
        binning=args.binning,
        n_resamples=args.bootstrap,
        seed=args.seed,
        metrics=wanted,
    )
    verdict = comparison.verdict(primary=primary)
    notes = _notes_of(test, caught)
    notes += list(dict.fromkeys(n for m in comparison.methods for n in comparison.notes[m]))
    if args.json:
        out = {"schema_version": SCHEMA_VERSION} | verdict.as_dict()
        out |= {
            "file": args.file,
            "calib_file": args.calib,
            "test_file": args.test,
            "split": "test" if args.file else None,
            "n_calib": calib.n_samples,
            "n_test": test.n_samples,
            "n_classes": test.n_classes,
            "bins": args.bins,
            "binning": args.binning,
            "seed": args.seed,
            "methods": {
                m: {
                    "params": dict(getattr(comparison.calibrators.get(m), "params", {}) or {}),
                    "fit_info": _plain_json(
                        getattr(comparison.calibrators.get(m), "fit_info", {}) or {}
                    ),
                    "metrics": {
                        k: _interval_json(comparison.values[m][k])
                        for k in wanted
                        if comparison.values[m].get(k) is not None
                    },
                }
                for m in comparison.methods
            },
            "notes": notes,
        }
        print(json.dumps(out, indent=2, allow_nan=False))
        return 0
    print(_with_notes(_verdict_table(comparison, verdict, wanted), notes))
    return 0


def _interval_json(iv) -> dict:
    def num(v):
        return float(v) if v is not None and v == v and abs(v) != float("inf") else None

    return {"estimate": num(iv.estimate), "low": num(iv.low), "high": num(iv.high)}


def _plain_json(info: dict) -> dict:
    """A fit-info dict with only JSON values (numbers, text, booleans; others as text)."""
    out = {}
    for k, v in info.items():
        if isinstance(v, bool) or v is None or isinstance(v, str):
            out[k] = v
        elif isinstance(v, (int, float)):
            out[k] = float(v) if v == v and abs(v) != float("inf") else None
        else:
            out[k] = str(v)
    return out


def _verdict_table(comparison, verdict, wanted) -> list[str]:
    primary = METRICS[verdict.primary].label
    pct = f"{100 * verdict.paired[verdict.best].confidence_level:.1f}%"
    lines = [verdict.sentence(), ""]
    head = f"  {'method':<16} {primary:>24} {'minus best [' + pct + ']':>30}"
    others = [k for k in wanted if k != verdict.primary]
    head += "".join(f" {METRICS[k].label:>10}" for k in others)
    lines.append(head)
    for m in comparison.methods:
        iv, d = comparison.values[m][verdict.primary], verdict.paired[m]
        mark = "*" if m == verdict.recommended else "=" if m in verdict.tied_with_best else " "
        row = f"{mark} {m:<16} {iv.estimate:>9.4f} [{iv.low:.4f}, {iv.high:.4f}]"
        row += f" {d.estimate:>+11.4f} [{d.low:+.4f}, {d.high:+.4f}]"
        row += "".join(
            f" {comparison.values[m][k].estimate:>10.4f}"
            if comparison.values[m].get(k) is not None
            else f" {'n/a':>10}"
            for k in others
        )
        lines.append(row)
    lines.append("  * recommended   = tied with the best (paired interval contains 0)")
    warned = [(m, w) for m in comparison.methods for w in verdict.warnings.get(m, ())]
    if warned:
        lines += ["", "Warnings:"] + [f"  - {m}: {w}" for m, w in warned]
    return lines


def _schema(args) -> int:
    """``calcore schema COMMAND``: the JSON Schema of that command's ``--json`` output."""
    print(json.dumps(schema_of(args.command_name), indent=2))
    return 0


_COMMANDS = {
    "schema": _schema,
    "metrics": _metrics,
    "calibrate": _calibrate,
    "apply": _apply,
    "check": _check,
    "compare": _compare,
}


def main(argv=None) -> int:
    """Entry point of the ``calcore`` console script; returns the exit code (``check``: 1 when
    a gate fails; every command: 2 for bad input or arguments, 3 for a bug in calcore)."""
    args = build_parser().parse_args(argv)  # argparse itself exits with 2 on usage errors
    try:
        _check_outputs(args)
        return _COMMANDS[args.command](args)
    except CalcoreError as exc:
        _error_line(cli_message(exc))
    except OSError as exc:  # missing or unreadable file
        name = getattr(exc, "filename", None) or getattr(args, "file", "")
        _error_line(f"cannot read or write {name!s}: {exc.strerror or exc}")
    except Exception as exc:  # a bug; Python's default would exit 1, read by CI as a failed gate
        if os.environ.get("CALCORE_DEBUG"):
            traceback.print_exc()
        _error_line(
            f"internal error ({type(exc).__name__}: {exc}). This is a bug in calcore, not in "
            "your input: please report it with the command line (set CALCORE_DEBUG=1 for "
            "the traceback)."
        )
        return EXIT_INTERNAL
    return EXIT_USAGE


#: Options naming a file the command writes, and whether ``-`` (standard output) may be
#: given: a report may take standard output (the command's table then goes to stderr);
#: ``--out``/``--save`` may not, beside the command's own table on standard output.
_OUTPUT_OPTIONS = {"junit": True, "markdown": True, "out": False, "save": False}


def _check_outputs(args) -> None:
    """Refuse a file option's target (a directory, a missing folder, ``-`` where standard
    output is taken) before any data is read, not after a long evaluation."""
    given = {k: getattr(args, k, None) for k in _OUTPUT_OPTIONS}
    given = {k: v for k, v in given.items() if v is not None}
    for key, path in given.items():
        check_output(path, stdout=_OUTPUT_OPTIONS[key], what="--" + key)
    on_stdout = [f"--{k}" for k, v in given.items() if v == STDOUT]
    if getattr(args, "json", False):
        on_stdout.append("--json")
    if len(on_stdout) > 1 and STDOUT in given.values():
        raise CalcoreError(
            f"{', '.join(on_stdout)}: only one of them may write to standard output; give '-' to "
            "one and a file name to the others (--json prints to standard output)."
        )


def _error_line(message: str) -> None:
    """Print ``message`` as the one line of an error on stderr (line breaks become spaces)."""
    print("calcore: error: " + " ".join(message.split("\n")).replace("\r", " "), file=sys.stderr)

