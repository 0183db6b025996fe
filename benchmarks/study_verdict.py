"""Verdict study: how often does the calibrator verdict claim an improvement that is not there?

Each repetition draws a calibration set and a test set from a ``calcore.simulate``
Dirichlet fake classifier, runs ``calcore.compare`` of ``--methods`` with ``--resamples``
bootstrap resamples and reads :meth:`calcore.Comparison.verdict` (primary metric: the
default, top-label ECE for several classes, the positive class's ECE for two).

- On **calibrated** generators the uncalibrated model is the truth's best; every verdict
  that recommends a calibrator is a false claim: ``claims`` is its rate (the type-I error
  of "some calibrator improves", aimed at the family-wise 5%).
- On **miscalibrated** generators (over-confident, ``strength`` 1.5 and a mild 1.15)
  ``claims`` is the power, and ``recommended`` counts which method was picked.

Every draw is seeded from the cell and the repetition, so a rerun prints the same JSON.

Usage::

    python benchmarks/study_verdict.py [--reps N] [--quick] [--out docs/replications]
"""

from __future__ import annotations

import sys
import time
import zlib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _replication as rep

import calcore


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def run_cell(kind: str, strength: float, n_classes: int, n_rows: int, args) -> dict:
    claims, recommended, seconds = 0, Counter(), 0.0
    sim = calcore.dirichlet_simulator(n_classes, miscalibration=kind, strength=strength)
    primary = calcore.evaluation.default_primary(n_classes)
    metrics = [primary, "brier", "nll", "accuracy"]
    for r in range(args.reps):
        calib = calcore.simulate_predictions(sim, n_rows, seed=_seed(kind, n_classes, r, 0)).preds
        test = calcore.simulate_predictions(sim, n_rows, seed=_seed(kind, n_classes, r, 1)).preds
        start = time.perf_counter()
        comparison = calcore.compare(
            calib, test, args.methods, n_resamples=args.resamples, seed=r, metrics=metrics
        )
        verdict = comparison.verdict()
        seconds += time.perf_counter() - start
        claims += verdict.improves
        recommended[verdict.recommended] += 1
    return {
        "kind": kind,
        "strength": strength if kind != "calibrated" else None,
        "n_classes": n_classes,
        "n_rows": n_rows,
        "primary": primary,
        "reps": args.reps,
        "claims": claims / args.reps,
        "recommended": dict(recommended.most_common()),
        "seconds_per_compare": seconds / args.reps,
    }


def markdown(cells: list[dict], settings: dict) -> str:
    lines = [
        "# Calibrator verdict: type-I error and power",
        "",
        rep.generated_by("study_verdict.py", settings)
        + f": {settings['reps']} repetitions a cell, methods {', '.join(settings['methods'])}, "
        f"{settings['resamples']} paired resamples, family-wise level 0.95 (Bonferroni over "
        "the methods). Calibration and test sets of the same size, from the same generator.",
        "",
        "`claims`: share of repetitions whose verdict recommends a calibrator. On calibrated "
        "generators that is a false claim (the type-I error; target <= 0.05-0.10); on "
        "over-confident ones it is the power (`strength` 1.5, and 1.15 for a mild case).",
        "",
        *rep.table_header(["generator", "classes", "rows", "primary", "claims", "recommended"]),
    ]
    for c in cells:
        picked = ", ".join(f"{m} {k}" for m, k in c["recommended"].items())
        lines.append(
            rep.table_row(
                [
                    c["kind"] + (f" ({c['strength']})" if c["strength"] else ""),
                    str(c["n_classes"]),
                    f"{c['n_rows']:,}",
                    c["primary"],
                    f"{c['claims']:.2f}",
                    picked,
                ]
            )
        )
    return "\n".join(lines) + "\n"


def main() -> dict:
    ap = rep.arg_parser(__doc__, "10 repetitions, 2 and 10 classes, 1,000 rows")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--methods", nargs="+", default=["ts", "tl-hb", "n-iso", "irm"])
    args = ap.parse_args()
    classes, sizes = ((2, 10), (1000,)) if args.quick else ((2, 3, 10), (1000, 5000))
    if args.quick:
        args.reps = min(args.reps, 10)
    start = time.perf_counter()
    kinds = (("calibrated", 1.0), ("overconfident", 1.5), ("overconfident", 1.15))
    cells = [
        run_cell(kind, strength, k, n, args)
        for kind, strength in kinds
        for k in classes
        for n in sizes
    ]
    settings = {
        "quick": args.quick,
        "reps": args.reps,
        "resamples": args.resamples,
        "methods": args.methods,
        "elapsed_s": time.perf_counter() - start,
    }
    return rep.write_outputs(
        args.out, "verdict", markdown(cells, settings), {"settings": settings, "cells": cells}
    )


if __name__ == "__main__":
    main()
