"""Mix-n-Match (Zhang, Kailkhura, Han 2020) Tables 1-2 style on CIFAR-10 logits; JSON + Markdown.

For each of the four Brier-score CIFAR-10 models of the shared data (the top-label paper's
models, not the Mix-n-Match checkpoints), every method is fitted on the 5,000 validation
logits and evaluated on the 10,000 test logits:

- Table 1 style: top-label ECE^1 in % estimated with KDE (Mix-n-Match Sec. 4.1; "top-label"
  there means the confidence view, ``calcore.kde_ece_confidence``);
- Table 2 style: calibration gain Delta ECE^2 in % (Eq. 7-8, ``calcore.calibration_gain``),
  exact for the accuracy-preserving injective maps (TS, ETS), a lower bound otherwise.

Methods: TS, ETS, IRM, IROvA, IROvA-TS, DirODIR (``dirichlet``). The paper's CIFAR-10
ResNet 110 and WRN 28-10 rows are printed beside our resnet110 and wide_resnet rows: they
are different checkpoints (trained with cross-entropy by the authors), so only the
ranking is comparable.

Run: ``.venv/bin/python benchmarks/replicate_mixnmatch_table1.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import time

from _replication import (
    CIFAR10_MODELS,
    arg_parser,
    generated_by,
    load_cifar10_val_test,
    table_header,
    table_row,
    write_outputs,
)

from calcore import calibration_gain, kde_ece_confidence, make_calibrator

METHODS = {
    "TS": "ts",
    "ETS": "ets",
    "IRM": "irm",
    "IROvA": "irova",
    "IROvA-TS": "irova-ts",
    "DirODIR": "dirichlet",
}
EXACT = {"TS", "ETS"}  # injective and accuracy-preserving: the gain is exact
# Mix-n-Match Table 1 (top-label ECE^1 %) and Table 2 (Delta ECE^2 %), CIFAR-10 rows.
PAPER_ECE = {
    "ResNet 110": [4.25, 2.05, 2.05, 1.53, 1.45, 1.39, 1.82],
    "WRN 28-10": [2.53, 1.61, 1.61, 1.02, 0.994, 0.967, 1.49],
}
PAPER_GAIN = {
    "ResNet 110": [0.821, 0.821, 0.976, 1.11, 1.15, 1.13],
    "WRN 28-10": [0.403, 0.403, 0.596, 0.614, 0.617, 0.297],
}
PAPER_ROW = {"resnet110": "ResNet 110", "wide_resnet": "WRN 28-10"}


def evaluate_model(model: str) -> dict:
    val, test = load_cifar10_val_test(model)
    rows = {
        "Uncalibrated": {
            "kde_ece": kde_ece_confidence(test),
            "accuracy": float(test.correct.mean()),
        }
    }
    for label, name in METHODS.items():
        t0 = time.perf_counter()
        out = make_calibrator(name).fit(val).transform(test)
        gain = calibration_gain(test, out, injective_accuracy_preserving=label in EXACT)
        rows[label] = {
            "kde_ece": kde_ece_confidence(out),
            "gain": gain.value,
            "gain_exact": gain.is_exact,
            "accuracy": float(out.correct.mean()),
            "seconds": time.perf_counter() - t0,
        }
    return rows


def markdown(results: dict, settings: dict) -> str:
    cols = ["Uncalibrated", *METHODS]
    lines = [
        "# Mix-n-Match Tables 1-2 style on the CIFAR-10 logits",
        "",
        generated_by("replicate_mixnmatch_table1.py", settings)
        + ". Fitted on the 5,000 validation logits, "
        "evaluated on the 10,000 test logits. Our models are the top-label paper's Brier-score "
        "checkpoints, not Mix-n-Match's: rows marked 'paper' are the paper's own CIFAR-10 "
        "models with the closest architecture and are given for the ranking only.",
        "",
        "## Top-label (confidence) KDE-ECE^1, % (Table 1 style; lower is better)",
        "",
        *table_header(["model", *cols]),
    ]
    for m, rows in results.items():
        lines.append(table_row([m, *(f"{100 * rows[c]['kde_ece']:.2f}" for c in cols)]))
        if m in PAPER_ROW:
            p = PAPER_ECE[PAPER_ROW[m]]
            lines.append(table_row([f"paper {PAPER_ROW[m]}", *(f"{v:.2f}" for v in p)]))
    cols = list(METHODS)
    lines += [
        "",
        "## Calibration gain Delta ECE^2, % (Table 2 style; higher is better; * = exact)",
        "",
        *table_header(["model", *cols]),
    ]
    for m, rows in results.items():
        cells = [
            f"{100 * rows[c]['gain']:.3f}" + ("*" if rows[c]["gain_exact"] else "") for c in cols
        ]
        lines.append(table_row([m, *cells]))
        if m in PAPER_ROW:
            p = PAPER_GAIN[PAPER_ROW[m]]
            lines.append(table_row([f"paper {PAPER_ROW[m]}", *(f"{v:.3f}" for v in p)]))
    cols = ["Uncalibrated", *cols]
    lines += [
        "",
        "## Accuracy after calibration (IRM, TS, ETS keep the argmax)",
        "",
        *table_header(["model", *cols]),
    ]
    for m, rows in results.items():
        lines.append(table_row([m, *(f"{rows[c]['accuracy']:.4f}" for c in cols)]))
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> dict:
    args = arg_parser(__doc__, "one model (CI)").parse_args(argv)
    t0 = time.perf_counter()
    models = ["resnet110"] if args.quick else CIFAR10_MODELS
    results = {m: evaluate_model(m) for m in models}
    settings = {"quick": args.quick, "elapsed_s": time.perf_counter() - t0}
    out = {
        "settings": settings,
        "results": results,
        "paper_ece": PAPER_ECE,
        "paper_gain": PAPER_GAIN,
    }
    return write_outputs(args.out, "mixnmatch_table1", markdown(results, settings), out)


if __name__ == "__main__":
    main()
