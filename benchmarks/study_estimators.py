"""How far from the truth are ECE estimators? Prints one JSON object, writes Markdown.

Part A reproduces the design of Mix-n-Match Fig. 5 and Fig. 9 (Zhang, Kailkhura, Han
2020, Sec. 5.1 and App. E): the synthetic binary problem of App. E.1 (both cases),
evaluation sizes n = 64..1024, mean absolute error of each estimator against the
quadrature ground truth ``E|z_1 - pi_1(z)|^d``:

- d = 1 (Fig. 5): KDE-ECE, 15 equal-width bins, 15 equal-mass bins, data-dependent
  (Sturges) equal-width bins;
- d = 2 (Fig. 9): KDE-ECE^2, debiased binned ECE^2 (Kumar et al. 2019) with 15
  equal-width bins and with Sturges bins.

The binary view is (score z_1, outcome 1{Y = class 0}), the view the paper's ground
truth is defined on. The number of repetitions is 1000 or as many as fit in the time
budget (``--budget`` seconds, split evenly over the cells); the JSON states it.

Part B: bias (mean estimate minus truth) of the binned conf-, TL- and CW-ECE
(equal-width) as a function of the number of bins and of n, on 10-class Dirichlet
fake classifiers with known maps (calcore.simulate).

Run: ``.venv/bin/python benchmarks/study_estimators.py [--quick] [--out DIR]``
(full run: about 6 minutes on one core; ``--quick``: a few seconds).
"""

from __future__ import annotations

import time

import numpy as np
from _replication import arg_parser, table_header, table_row, write_outputs

from calcore.foundation.kernel_density import kde_ece
from calcore.metrics.binned import (
    calibration_error_from_bins,
    classwise_ece,
    confidence_ece,
    debiased_squared_error_from_bins,
    top_label_ece,
)
from calcore.simulate import (
    dirichlet_simulator,
    mix_n_match_simulator,
    mix_n_match_true_ece,
    simulate_predictions,
    true_calibration_errors,
)
from calcore.statistics.bin_statistics import bin_statistics

D1 = {
    "KDE": lambda s, o: kde_ece(s, o, order=1),
    "EW-15": lambda s, o: calibration_error_from_bins(bin_statistics(s, o, bins=15)),
    "EM-15": lambda s, o: calibration_error_from_bins(
        bin_statistics(s, o, bins=15, binning="equal-mass")
    ),
    "Sturges": lambda s, o: calibration_error_from_bins(bin_statistics(s, o, bins="sturges")),
}
D2 = {
    "KDE": lambda s, o: kde_ece(s, o, order=2),
    "debiased EW-15": lambda s, o: debiased_squared_error_from_bins(bin_statistics(s, o, bins=15)),
    "debiased Sturges": lambda s, o: debiased_squared_error_from_bins(
        bin_statistics(s, o, bins="sturges")
    ),
}


def mix_n_match_study(sizes, max_reps, budget_s, seed=0):
    cells = [(case, n) for case in (1, 2) for n in sizes]
    per_cell = budget_s / len(cells)
    out = []
    for case, n in cells:
        sim = mix_n_match_simulator(case)
        truth = {1: mix_n_match_true_ece(sim, order=1), 2: mix_n_match_true_ece(sim, order=2)}
        errs = {("d1", k): [] for k in D1} | {("d2", k): [] for k in D2}
        start = time.perf_counter()
        rep = 0
        while rep < max_reps and (rep < 2 or time.perf_counter() - start < per_cell):
            d = simulate_predictions(sim, n, seed=seed + 100_000 * case + 1_000 * rep + n)
            s, o = d.preds.probs[:, 0], (d.preds.labels == 0).astype(np.float64)
            for k, f in D1.items():
                errs["d1", k].append(f(s, o) - truth[1])
            for k, f in D2.items():
                errs["d2", k].append(f(s, o) - truth[2])
            rep += 1
        for (d_, k), e in errs.items():
            e = np.asarray(e)
            out.append(
                {
                    "case": case,
                    "n": n,
                    "order": int(d_[1]),
                    "estimator": k,
                    "truth": truth[int(d_[1])],
                    "mean_abs_error": float(np.mean(np.abs(e))),
                    "se_mean_abs_error": float(np.std(np.abs(e), ddof=1) / np.sqrt(e.size)),
                    "bias": float(np.mean(e)),
                    "repetitions": rep,
                }
            )
    return out


GENERATORS = {
    "overconfident": dict(miscalibration="overconfident", strength=0.5),
    "underconfident": dict(miscalibration="underconfident", strength=0.5),
    "class-specific": dict(miscalibration="class-specific", strength=1.0),
    "mix": dict(miscalibration="mix", strength=1.0),
}
METRICS = {
    "conf_ece": confidence_ece,
    "top_label_ece": top_label_ece,
    "classwise_ece": classwise_ece,
}


def multiclass_bias(sizes, bins_list, reps, truth_kw, n_classes=10, seed=0):
    out = []
    for name, kw in GENERATORS.items():
        sim = dirichlet_simulator(n_classes, concentration=0.1, **kw)
        truth = true_calibration_errors(sim, **truth_kw)
        for n in sizes:
            est = {(m, b): [] for m in METRICS for b in bins_list}
            for rep in range(reps):
                preds = simulate_predictions(sim, n, seed=seed + 7919 * rep + n).preds
                for m, f in METRICS.items():
                    for b in bins_list:
                        est[m, b].append(f(preds, bins=b))
            for (m, b), v in est.items():
                v = np.asarray(v)
                out.append(
                    {
                        "generator": name,
                        "accuracy": truth.accuracy,
                        "metric": m,
                        "n": n,
                        "bins": b,
                        "truth": getattr(truth, m),
                        "truth_se": truth.standard_errors[m],
                        "bias": float(v.mean() - getattr(truth, m)),
                        "sd": float(v.std(ddof=1)),
                        "repetitions": reps,
                    }
                )
    return out


def markdown(part_a, part_b, settings) -> str:
    lines = [
        "# ECE estimators against the truth",
        "",
        "Generated by `benchmarks/study_estimators.py` "
        + ("(`--quick`)" if settings["quick"] else "(full run)")
        + f"; {settings['elapsed_s']:.0f} s. Do not edit by hand.",
        "",
        "## Mix-n-Match Fig. 5 / Fig. 9 design: mean absolute error vs n",
        "",
        "Synthetic problem of Mix-n-Match App. E.1; truth by quadrature "
        "(`calcore.simulate.mix_n_match_true_ece`). Entries: mean |estimate - truth| "
        "(x100 for d = 1, x1000 for d = 2). Repetitions per cell: "
        f"{sorted({r['repetitions'] for r in part_a})} "
        f"(at most {settings['max_reps']}, time budget {settings['budget_s']:.0f} s in total).",
        "",
    ]
    for order, scale in ((1, 100), (2, 1000)):
        ests = list(D1 if order == 1 else D2)
        for case in (1, 2):
            rows = [r for r in part_a if r["order"] == order and r["case"] == case]
            truth = rows[0]["truth"]
            lines += [
                f"**d = {order}, case {case}** (truth ECE^{order} = {truth:.5f}; x{scale})",
                "",
                *table_header(["n", *ests]),
            ]
            for n in settings["sizes"]:
                cells = {r["estimator"]: r for r in rows if r["n"] == n}
                lines.append(
                    table_row(
                        [str(n), *(f"{scale * cells[e]['mean_abs_error']:.2f}" for e in ests)]
                    )
                )
            lines.append("")
    lines += [
        "## Bias of binned estimators vs bins and n (10-class Dirichlet fake classifiers)",
        "",
        "Dirichlet(0.1) predictions, labels from the known map; bias = mean estimate - truth "
        f"(x100), {settings['reps_b']} repetitions; truth by `true_calibration_errors`.",
        "",
    ]
    bins_list = settings["bins"]
    for gen in GENERATORS:
        rows = [r for r in part_b if r["generator"] == gen]
        acc = rows[0]["accuracy"]
        truths = {m: next(r["truth"] for r in rows if r["metric"] == m) for m in METRICS}
        lines += [
            f"**{gen}** (accuracy {acc:.3f}; true conf-ECE {truths['conf_ece']:.4f}, "
            f"TL-ECE {truths['top_label_ece']:.4f}, CW-ECE {truths['classwise_ece']:.4f})",
            "",
            *table_header(["metric", "n", *(f"B={b}" for b in bins_list)]),
        ]
        for m in METRICS:
            for n in settings["sizes_b"]:
                cells = {r["bins"]: r for r in rows if r["metric"] == m and r["n"] == n}
                lines.append(
                    table_row([m, str(n), *(f"{100 * cells[b]['bias']:+.2f}" for b in bins_list)])
                )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = arg_parser(__doc__, "reduced sizes (CI)")
    ap.add_argument("--budget", type=float, default=None, help="seconds for part A")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.quick:
        settings = dict(
            sizes=[64, 256, 1024],
            max_reps=10,
            budget_s=args.budget or 600.0,  # max_reps (10) binds, not time
            sizes_b=[200, 2000],
            bins=[5, 15, 50],
            reps_b=3,
            truth=dict(n_inner=256, panels=16, n_monte_carlo=20_000),
        )
    else:
        settings = dict(
            sizes=[64, 128, 256, 512, 1024],
            max_reps=1000,
            budget_s=args.budget or 300.0,
            sizes_b=[100, 1000, 10000],
            bins=[5, 10, 15, 25, 50],
            reps_b=30,
            truth=dict(n_inner=2048, panels=64, n_monte_carlo=1_000_000),
        )
    part_a = mix_n_match_study(settings["sizes"], settings["max_reps"], settings["budget_s"])
    part_b = multiclass_bias(
        settings["sizes_b"], settings["bins"], settings["reps_b"], settings["truth"]
    )
    settings["quick"] = args.quick
    settings["elapsed_s"] = time.perf_counter() - t0
    result = {"settings": settings, "mix_n_match": part_a, "multiclass_bias": part_b}
    text = markdown(part_a, part_b, settings) + "\n"
    return write_outputs(args.out, "estimator_study", text, result)


if __name__ == "__main__":
    main()
