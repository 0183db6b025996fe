"""The ``calcore`` command line.

``calcore metrics FILE [options]`` prints every calibration metric of a
predictions file as a table, or as JSON with ``--json``. Errors are one line
on stderr and exit code 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from calcore._errors import CalcoreError, CalcoreWarning
from calcore.binning import BIN_COUNT_RULES, BINNING_SCHEMES
from calcore.registry import METRICS
from calcore.report import CalibrationReport, evaluate

__all__ = ["main", "build_parser"]

EXIT_USAGE = 2


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


def _add_loading_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("reading the file")
    g.add_argument(
        "--label-col",
        metavar="NAME",
        help="label column (default: auto-detect label/y/target/true_label/class)",
    )
    g.add_argument(
        "--scores",
        choices=("auto", "probs", "logits"),
        default="auto",
        help="score columns hold probabilities or logits (default: auto, reported)",
    )
    g.add_argument(
        "--split-col",
        metavar="NAME",
        help="column saying calib/test per row (default: a 'split' column)",
    )
    g.add_argument("--split", metavar="VALUE", help="only rows of this split (calib or test)")
    g.add_argument(
        "--renormalize",
        action="store_true",
        help="rescale probability rows that do not sum to 1 (reported)",
    )
    g.add_argument(
        "--positive-class",
        metavar="NAME",
        help="binary file with one score column: the positive label",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="calcore", description="Calibration evaluation for classifiers."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser(
        "metrics",
        help="every calibration metric of a predictions file",
        description="Print accuracy, NLL, Brier and every calibration error of a predictions file.",
    )
    m.add_argument("file", help="CSV, Parquet or NPZ file of predictions")
    _add_loading_options(m)
    g = m.add_argument_group("estimation")
    g.add_argument(
        "--bins", type=_bins, default=15, help="number of bins, or sturges/cube-root (default 15)"
    )
    g.add_argument(
        "--binning",
        choices=BINNING_SCHEMES,
        default="equal-width",
        help="binning scheme (default equal-width)",
    )
    g.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        metavar="R",
        help="bootstrap resamples for 95%% intervals (default 0: none)",
    )
    g.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    m.add_argument(
        "--json", action="store_true", help="print JSON (snake_case keys) instead of a table"
    )
    return parser


def _load(args):
    from calcore.io import load_predictions  # pandas/pyarrow only when a file is read

    return load_predictions(
        args.file,
        label_column=args.label_col,
        scores=args.scores,
        split_column=args.split_col,
        split=args.split,
        renormalize=args.renormalize,
        positive_class=args.positive_class,
    )


def _format_table(report: CalibrationReport, source: str, notes: list[str]) -> str:
    lines = [
        f"{source}: {report.n} rows, {report.n_classes} classes; "
        f"bins: {report.binning}, {report.bins}",
        "",
    ]
    width = max(len(spec.label) for spec in METRICS.values())
    for key, spec in METRICS.items():
        value = report.metrics[key]
        shown = "not computed" if value is None else f"{value:.6f}"
        if key in report.intervals:
            iv = report.intervals[key]
            shown += f"   [{iv.low:.6f}, {iv.high:.6f}]"
        lines.append(f"  {spec.label:<{width}}  {shown}")
    if notes:
        lines += ["", "Notes:"] + [f"  - {n}" for n in notes]
    return "\n".join(lines)


def _metrics(args) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalcoreWarning)
        preds = _load(args)
        report = evaluate(
            preds, bins=args.bins, binning=args.binning, seed=args.seed, n_bootstrap=args.bootstrap
        )
    load_notes = list(preds.load_report.messages()) if preds.load_report is not None else []
    load_notes += [str(w.message) for w in caught if str(w.message) not in load_notes]
    notes = load_notes + list(report.notes)
    if args.json:
        out = report.as_dict()
        out["file"] = args.file
        out["notes"] = notes
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        print(_format_table(report, args.file, notes))
    return 0


def main(argv=None) -> int:
    """Entry point of the ``calcore`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse itself exits with 2 on usage errors
    try:
        if args.command == "metrics":
            return _metrics(args)
    except CalcoreError as exc:
        print(f"calcore: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # missing or unreadable file
        print(
            f"calcore: error: cannot read {getattr(exc, 'filename', None) or args.file!s}: "
            f"{exc.strerror or exc}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
