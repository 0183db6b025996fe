"""NA-FIR paper (normalization-aware isotonic regression): NLL and conf-ECE on CIFAR-10.

The paper reports, per data set, the average rank of each calibrator over its models (Table 2)
for NLL and conf-ECE (15 bins), and per-model tables for CIFAR-100 (Table 4). We run its
compared methods on the four CIFAR-10 Brier-score models of the shared data (fit on the 5,000
validation logits, evaluate on the 10,000 test logits) and compare the average ranks with the
paper's CIFAR-10 row (its CIFAR-10 models differ from ours). Also reported: accuracy, Brier
score, CW-ECE and TECE (thresholded adaptive ECE, threshold 1/L, 15 bins) as in the paper.

Run: ``.venv/bin/python benchmarks/replicate_nafir.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import time

import numpy as np
from _replication import (
    CIFAR10_MODELS,
    arg_parser,
    generated_by,
    load_cifar10_val_test,
    write_outputs,
)
from scipy.stats import rankdata

from calcore import (
    Predictions,
    brier_score,
    classwise_ece,
    confidence_ece,
    make_calibrator,
    negative_log_likelihood,
    thresholded_adaptive_ece,
)

METHODS = {
    "NA-FIR": "na-fir",
    "SCIR": "scir",
    "FIR": "fir",
    "IR OvR": "irova",
    "TS": "ts",
    "VS": "vs",
    "MS": "ms",
}
# NA-FIR paper Table 2, CIFAR10 rows: average rank (1 = best) over the paper's CIFAR-10 models.
PAPER_RANK = {
    "nll": {
        "NA-FIR": 1.2,
        "SCIR": 1.8,
        "FIR": 4.0,
        "IR OvR": 7.0,
        "TS": 5.8,
        "VS": 4.8,
        "MS": 3.5,
        "Uncalibrated": 8.0,
    },
    "conf_ece": {
        "NA-FIR": 4.8,
        "SCIR": 1.0,
        "FIR": 5.8,
        "IR OvR": 5.8,
        "TS": 2.8,
        "VS": 4.0,
        "MS": 4.0,
        "Uncalibrated": 8.0,
    },
}


def metrics(p: Predictions) -> dict:
    return {
        "accuracy": float(p.correct.mean()),
        "nll": negative_log_likelihood(p),
        "conf_ece": confidence_ece(p, bins=15),
        "cw_ece": classwise_ece(p, bins=15),
        "brier": brier_score(p),
        "tece": thresholded_adaptive_ece(p, bins=15, threshold=1.0 / p.n_classes),
    }


def evaluate_model(model: str, methods: dict) -> dict:
    val, test = load_cifar10_val_test(model)
    rows = {"Uncalibrated": metrics(test)}
    for label, name in methods.items():
        t0 = time.perf_counter()
        rows[label] = metrics(make_calibrator(name).fit(val).transform(test))
        rows[label]["seconds"] = time.perf_counter() - t0
    return rows


def average_ranks(results: dict, metric: str) -> dict:
    names = list(next(iter(results.values())))
    ranks = np.array([rankdata([results[m][n][metric] for n in names]) for m in results])
    return dict(zip(names, ranks.mean(axis=0).tolist(), strict=True))


def markdown(results: dict, ranks: dict, settings: dict) -> str:
    names = list(next(iter(results.values())))
    lines = [
        "# NA-FIR paper: NLL and conf-ECE of FIR, NA-FIR, SCIR and TS (CIFAR-10)",
        "",
        generated_by("replicate_nafir.py", settings)
        + ". Fitted on the 5,000 validation logits, evaluated "
        "on the 10,000 test logits; 15 bins (equal-width for conf-/CW-ECE, equal-mass for TECE "
        "with threshold 1/L).",
        "",
    ]
    for m, rows in results.items():
        lines += [
            f"## {m}",
            "",
            "| method | accuracy | NLL | conf-ECE % | CW-ECE % | Brier | TECE % |",
            "|---|---|---|---|---|---|---|",
        ]
        for n in names:
            r = rows[n]
            lines.append(
                f"| {n} | {r['accuracy']:.4f} | {r['nll']:.4f} | {100 * r['conf_ece']:.2f} | "
                f"{100 * r['cw_ece']:.3f} | {r['brier']:.4f} | {100 * r['tece']:.2f} |"
            )
        lines.append("")
    lines += [
        f"## Average rank over our {len(results)} model(s) vs the paper's CIFAR10 row (Table 2)",
        "",
        "| method | NLL rank (ours) | NLL rank (paper) | conf-ECE rank (ours) "
        "| conf-ECE rank (paper) |",
        "|---|---|---|---|---|",
    ]
    for n in names:
        lines.append(
            f"| {n} | {ranks['nll'][n]:.2f} | {PAPER_RANK['nll'][n]:.1f} | "
            f"{ranks['conf_ece'][n]:.2f} | {PAPER_RANK['conf_ece'][n]:.1f} |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> dict:
    args = arg_parser(__doc__, "one model, FIR/NA-FIR/SCIR/TS (CI)").parse_args(argv)
    t0 = time.perf_counter()
    models = ["resnet110"] if args.quick else CIFAR10_MODELS
    methods = {k: METHODS[k] for k in ("NA-FIR", "SCIR", "FIR", "TS")} if args.quick else METHODS
    results = {m: evaluate_model(m, methods) for m in models}
    ranks = {k: average_ranks(results, k) for k in ("nll", "conf_ece")}
    settings = {"quick": args.quick, "elapsed_s": time.perf_counter() - t0}
    text = markdown(results, ranks, settings)
    if args.quick:  # the paper's ranks are over all eight methods: no rank comparison
        text = text.split("## Average rank")[0]
    out = {
        "settings": settings,
        "results": results,
        "average_ranks": ranks,
        "paper_rank": PAPER_RANK,
    }
    return write_outputs(args.out, "nafir", text, out)


if __name__ == "__main__":
    main()
