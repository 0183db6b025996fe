"""Top-label paper (Gupta & Ramdas 2022), Tables 2-3, CIFAR-10 rows; prints JSON, writes Markdown.

Protocol (paper Sec. 4 and App. E.2): calibrators fitted on the 5,000 validation logits
of each Brier-score model, evaluated on its 10,000 test logits; 15 equal-width bins for
the continuous methods (Base, TS, VS, DS, N-HB) and unbinned estimates (one bin per
distinct output) for TL-HB and CW-HB, which also use B = 15 bins in every binary HB call.

TL-MCE is reported twice:

- ``TL-MCE (paper)``: the maximum over bins of the *effective deviation* of the top-label
  reliability diagram, ``Delta_b = sum_l (n_{b,l} / n_b) |acc_{b,l} - conf_{b,l}|``
  (paper Sec. 2.1 / Fig. 1; the bins are the 15 equal-width bins, or for TL-HB the j-th
  HB bin of every class). This reproduces the paper's Base column exactly.
- ``TL-MCE (max)``: the plain maximum of ``|acc_{b,l} - conf_{b,l}|`` over all
  (class, bin) pairs, i.e. Eq. 17 estimated bin by bin (``calcore.top_label_mce``).

Run: ``.venv/bin/python benchmarks/replicate_toplabel_tables.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import time

import numpy as np
from _replication import (
    CIFAR10_MODELS,
    arg_parser,
    generated_by,
    load_cifar10_val_test,
    table_header,
    table_row,
    write_outputs,
)

from calcore import (
    Predictions,
    classwise_ece,
    confidence_ece,
    make_calibrator,
    top_label_ece,
    top_label_mce,
)
from calcore.statistics.bin_statistics import statistics_for

LABEL = {
    "resnet50": "ResNet-50",
    "resnet110": "ResNet-110",
    "wide_resnet": "WRN-26-10",
    "densenet121": "DenseNet-121",
}
TL_METHODS = ["Base", "TS", "VS", "DS", "N-HB", "TL-HB"]
CW_METHODS = ["Base", "TS", "VS", "DS", "N-HB", "CW-HB"]
SPEC = {
    "TS": ("ts", {}),
    "VS": ("vs", {}),
    "DS": ("dirichlet", {}),
    "N-HB": ("n-hb", {"bins": 15}),
    "TL-HB": ("tl-hb", {"bins": 15}),
    "CW-HB": ("cw-hb", {"bins": 15}),
}
DISCRETE = {"TL-HB", "CW-HB"}  # evaluated unbinned (paper Remark 1)

# Paper Tables 2-3, CIFAR-10 rows, in TL_METHODS / CW_METHODS order.
PAPER_TL_ECE = {
    "resnet50": [0.025, 0.022, 0.020, 0.019, 0.018, 0.020],
    "resnet110": [0.029, 0.022, 0.021, 0.021, 0.020, 0.021],
    "wide_resnet": [0.023, 0.023, 0.019, 0.021, 0.012, 0.018],
    "densenet121": [0.027, 0.027, 0.020, 0.020, 0.019, 0.021],
}
PAPER_TL_MCE = {
    "resnet50": [0.315, 0.305, 0.773, 0.282, 0.411, 0.107],
    "resnet110": [0.275, 0.227, 0.264, 0.392, 0.195, 0.077],
    "wide_resnet": [0.771, 0.771, 0.498, 0.325, 0.140, 0.071],
    "densenet121": [0.289, 0.289, 0.734, 0.294, 0.345, 0.087],
}
PAPER_CW_ECE_X100 = {
    "resnet50": [0.46, 0.42, 0.35, 0.35, 0.50, 0.28],
    "resnet110": [0.59, 0.50, 0.42, 0.38, 0.53, 0.27],
    "wide_resnet": [0.44, 0.44, 0.35, 0.39, 0.39, 0.28],
    "densenet121": [0.46, 0.46, 0.36, 0.36, 0.48, 0.36],
}


def effective_deviation_mce(preds: Predictions, *, binning: str) -> float:
    """max_b sum_l (n_{b,l}/n_b) |acc_{b,l} - conf_{b,l}| over the top-label bins ``b``."""
    st = statistics_for(preds, "top-label", binning=binning, bins=15)
    ok = st.count > 0
    n_b = np.bincount(st.bin_index[ok], weights=st.count[ok])
    dev = np.bincount(st.bin_index[ok], weights=st.count[ok] * st.gap[ok])
    return float(np.max(dev[n_b > 0] / n_b[n_b > 0]))


def grid_temperature(val: Predictions) -> float:
    """T in {0.1, 0.2, ..., 10.0} with the lowest validation conf-ECE (15 bins), ties to the
    smallest T: the default of the focal_calibration code the paper used for TS."""
    grid = np.round(0.1 * np.arange(1, 101), 10)
    eces = [confidence_ece(Predictions.from_logits(val.logits / t, val.labels)) for t in grid]
    return float(grid[int(np.argmin(eces))])


def evaluate_model(model: str, methods: list[str]) -> dict:
    val, test = load_cifar10_val_test(model)
    out = {}
    for name in methods:
        t0 = time.perf_counter()
        info = {}
        if name == "Base":
            pred = test
        elif name == "TS":  # the paper's TS: focal_calibration's grid search (App. E.1)
            temperature = grid_temperature(val)
            pred = Predictions.from_logits(test.logits / temperature, test.labels)
            info["temperature"] = temperature
        elif name == "TS (NLL)":
            cal = make_calibrator("ts").fit(val)
            pred = cal.transform(test)
            info["temperature"] = float(cal.fit_info["temperature"])
        else:
            key, params = SPEC[name]
            cal = make_calibrator(key, **params).fit(val)
            pred = cal.transform(test)
        binning = "unique" if name in DISCRETE else "equal-width"
        row = {"cw_ece": classwise_ece(pred, binning=binning, bins=15), **info}
        if name != "CW-HB":  # TL metrics of an unnormalised class-wise output are not in the paper
            row["tl_ece"] = top_label_ece(pred, binning=binning, bins=15)
            row["tl_mce_paper"] = effective_deviation_mce(pred, binning=binning)
            row["tl_mce_max"] = top_label_mce(pred, binning=binning, bins=15)
        row["seconds"] = time.perf_counter() - t0
        out[name] = row
    return out


# Why a TL-ECE cell may differ by more than 0.003 (filled in for the cells that do).
REASONS = {
    "TS": "the TS column follows the paper's code (T on a 0.1 grid chosen by validation "
    "conf-ECE); a different T on this grid moves TL-ECE by a few thousandths.",
    "VS": "our VS is a float64 NLL fit with L-BFGS-B and no regularisation; the paper used "
    "dirichletcal's vectorscaling.py with its defaults (other optimiser and stopping rule).",
    "DS": "our DS is ODIR with lambda = mu = 1 (Kull et al. 2019's regularised variant); the paper "
    "used dirichletcal's fulldirichlet.py with default (different) regularisation.",
    "N-HB": "N-HB divides 10 separately binned class-wise HB outputs by their row sum, so its "
    "values are continuous and are re-binned into 15 equal-width bins; small differences in the "
    "HB edge rule and tie-breaking noise move points across these bins.",
    "TL-HB": "TL-HB outputs are evaluated unbinned; differences come from the HB edge rule "
    "(paper variant, randomised ties) on the 5,000 validation points.",
    "Base": "the Base column uses the same logits and estimator as the paper.",
}


def markdown(results: dict, settings: dict) -> str:
    models = list(results)
    lines = [
        "# Top-label paper, Tables 2-3 (CIFAR-10, Brier-score models)",
        "",
        generated_by("replicate_toplabel_tables.py", settings)
        + ". Cells: ours / paper. Calibrators fitted on the "
        "5,000 validation logits, evaluated on the 10,000 test logits; 15 equal-width bins, "
        "unbinned for TL-HB and CW-HB.",
        "",
    ]

    def table(title, methods, paper, key, scale, fmt):
        lines.extend([f"## {title}", "", *table_header(["model", *methods])])
        for m in models:
            cells = [
                f"{fmt.format(scale * results[m][meth][key])} / {fmt.format(paper[m][i])}"
                for i, meth in enumerate(methods)
            ]
            lines.append(table_row([LABEL[m], *cells]))
        lines.append("")

    table("TL-ECE (Table 2)", TL_METHODS, PAPER_TL_ECE, "tl_ece", 1, "{:.3f}")
    table(
        "TL-MCE, paper definition: max over bins of the effective deviation (Table 2)",
        TL_METHODS,
        PAPER_TL_MCE,
        "tl_mce_paper",
        1,
        "{:.3f}",
    )
    table(
        "TL-MCE, plain max over (class, bin) pairs, vs the paper's numbers",
        TL_METHODS,
        PAPER_TL_MCE,
        "tl_mce_max",
        1,
        "{:.3f}",
    )
    table("CW-ECE x 100 (Table 3)", CW_METHODS, PAPER_CW_ECE_X100, "cw_ece", 100, "{:.2f}")
    lines += [
        "## Temperature scaling: the paper's grid search vs the NLL-optimal temperature",
        "",
        "The paper's TS (App. E.1: the focal_calibration code) picks T in {0.1, ..., 10.0} by "
        "the validation conf-ECE; that is the TS column above. calcore's `ts` minimises the "
        "validation NLL instead. With the NLL-optimal T:",
        "",
        "| model | T (grid, ECE) | T (NLL) | TL-ECE | TL-MCE (paper def.) | CW-ECE x 100 |",
        "|---|---|---|---|---|---|",
    ]
    for m in models:
        g, r = results[m]["TS"], results[m]["TS (NLL)"]
        lines.append(
            f"| {LABEL[m]} | {g['temperature']:.1f} | {r['temperature']:.3f} | {r['tl_ece']:.3f} "
            f"| {r['tl_mce_paper']:.3f} | {100 * r['cw_ece']:.2f} |"
        )
    lines.append("")
    lines += ["## TL-ECE cells that differ from the paper by more than 0.003", ""]
    n_diff = 0
    for m in models:
        for i, meth in enumerate(TL_METHODS):
            ours, paper = results[m][meth]["tl_ece"], PAPER_TL_ECE[m][i]
            if abs(ours - paper) > 0.003:
                n_diff += 1
                extra = ""
                if meth == "TS":
                    extra = f" (T = {results[m][meth]['temperature']:.1f})"
                lines.append(
                    f"- {LABEL[m]}, {meth}: {ours:.4f} vs {paper:.3f}{extra}: {REASONS[meth]}"
                )
    if n_diff == 0:
        lines.append("- none: every TL-ECE cell is within 0.003 of the paper.")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> dict:
    args = arg_parser(__doc__, "one model (CI)").parse_args(argv)
    t0 = time.perf_counter()
    models = ["resnet50"] if args.quick else CIFAR10_MODELS
    methods = list(dict.fromkeys(TL_METHODS + CW_METHODS + ["TS (NLL)"]))
    results = {m: evaluate_model(m, methods) for m in models}
    settings = {"quick": args.quick, "elapsed_s": time.perf_counter() - t0, "bins": 15}
    out = {
        "settings": settings,
        "results": results,
        "paper": {"tl_ece": PAPER_TL_ECE, "tl_mce": PAPER_TL_MCE, "cw_ece_x100": PAPER_CW_ECE_X100},
    }
    return write_outputs(args.out, "toplabel_tables", markdown(results, settings), out)


if __name__ == "__main__":
    main()
