"""The peer of ``calcore metrics FILE --json`` (every metric) on binary predictions: the
same statistics computed by DuckDB in SQL, for ``bench_scale.py``.

``bench_scale.py`` compares the confidence ECE with DuckDB's four-line query. That is
the fair peer of ``--metric conf_ece`` only; every metric of a report needs far more:
exact equal-mass bins per class (ACE, TACE), the KDE's bandwidths before its sums, and
sums over two points a row (class-wise). This script asks DuckDB for the same
statistics, with the same data-dependent steps between the queries that calcore makes
between its passes over the file:

1. counts, scoring rules (accuracy, NLL, Brier), the score spreads the KDE bandwidths
   come from, and each class's count at or above TACE's cut;
2. equal-width cells: confidence, top-label (predicted class, bin), class-wise;
   each step whose cells share the rows is one query (grouping sets), one scan;
3. each class's order statistics at ACE's and TACE's ranks (``quantile_disc``, exact:
   the positions calcore uses, ``floor(k m / B) - 1`` of the ``m`` scores, sorted);
4. ACE and TACE cells (a score goes to the bin of the thresholds strictly below it);
5. the KDE's per-cell sums of ``w b^k`` (k = 0..6), all points and positive ones, for
   the confidence problem and one class-wise problem (class 1: class 0 mirrors it for
   complementary columns, as in calcore). The cells are half-bandwidth slices: the
   same work per point as calcore's (a cell, seven powers, fourteen sums), not its exact
   cell layout, so no KDE-ECE is compared.

The binned metrics and the scoring rules are finished in Python from the sums (a few
hundred numbers) and printed with the seconds, so a run can check them against
calcore's report. Usage: ``python benchmarks/duckdb_every_metric.py SOURCE``, SOURCE a
Parquet file or glob with columns ``p_click`` and ``label``.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

BINS = 15
TACE_CUT = 1e-3
EPS = 2.0**-52  # calcore's NLL clip (float64 eps): -log(max(p, eps))


def _gaps(rows) -> tuple[float, float]:
    """(l1 ECE, l2 ECE) from (count, sum score, sum outcome) per cell, N = total."""
    n = np.array([r[0] for r in rows], dtype=np.float64)
    gap = np.abs(np.array([r[2] for r in rows]) - np.array([r[1] for r in rows])) / n
    total = n.sum()
    return float((n * gap).sum() / total), float(np.sqrt((n * gap**2).sum() / total))


def _sets(rows, keys: int) -> list[list]:
    """The rows of each grouping set: ``keys`` key columns, NULL where not grouped.
    A set's own key NULL (a point left out, as TACE's below its cut) is dropped."""
    out = [[] for _ in range(keys)]
    for r in rows:
        grouped = [k for k in range(keys) if r[k] is not None]
        if len(grouped) == 1:
            out[grouped[0]].append(r[keys:])
    return out


def every_metric(con, src: str) -> dict:
    rows = f"read_parquet({src!r})"
    # 1. counts, scoring rules, spreads, each class's points at or above TACE's cut
    n, acc, nll, brier, sd_conf, sd_p, above1, above0 = con.execute(
        f"""select count(*), avg(((p_click > 0.5)::int = label)::int),
        avg(-ln(greatest(case when label = 1 then p_click else 1 - p_click end, {EPS}))),
        avg(2 * (p_click - label) * (p_click - label)),
        stddev_pop(greatest(p_click, 1 - p_click)), stddev_pop(p_click),
        count(*) filter (p_click >= {TACE_CUT}), count(*) filter (1 - p_click >= {TACE_CUT})
        from {rows}"""
    ).fetchone()
    # 2. equal-width cells, one scan: confidence, top-label (predicted class, bin) and
    # each class's bins as grouping sets; each set reads its own sums
    fine = con.execute(
        f"""select b, pred, b0, b1, count(*), sum(conf), sum(correct), sum(s0), sum(o0),
        sum(p_click), sum(label) from (select *, least(floor(conf * {BINS}), {BINS - 1}) b,
        least(floor(s0 * {BINS}), {BINS - 1}) b0, least(floor(p_click * {BINS}), {BINS - 1}) b1
        from (select p_click, label, greatest(p_click, 1 - p_click) conf, 1 - p_click s0,
        1 - label o0, (p_click > 0.5)::int pred,
        ((p_click > 0.5)::int = label)::int correct from {rows}))
        group by grouping sets ((b), (pred, b), (b0), (b1))"""
    ).fetchall()
    conf = [r[4:7] for r in fine if r[0] is not None and r[1] is None]
    top = [r[4:7] for r in fine if r[1] is not None]
    cw = [_gaps([(r[4], r[7], r[8]) for r in fine if r[2] is not None])[0]]
    cw += [_gaps([(r[4], r[9], r[10]) for r in fine if r[3] is not None])[0]]
    # 3. order statistics at calcore's positions, one scan: quantile_disc(q) is the
    # value at position ceil(q m) - 1; q = (r - 1/2) / m names position r - 1 exactly

    def quantiles(m: int) -> str:
        ranks = (np.arange(1, BINS) * m) // BINS
        return "[" + ", ".join(repr((int(r) - 0.5) / m) for r in ranks) + "]"

    cuts = con.execute(
        f"""select quantile_disc(1 - p_click, {quantiles(n)}),
        quantile_disc(p_click, {quantiles(n)}),
        quantile_disc(1 - p_click, {quantiles(above0)}) filter (1 - p_click >= {TACE_CUT}),
        quantile_disc(p_click, {quantiles(above1)}) filter (p_click >= {TACE_CUT})
        from {rows}"""
    ).fetchone()

    # 4. ACE and TACE cells, one scan: a score goes to the bin of the cuts below it
    def cell(values, score: str) -> str:
        return " + ".join(f"({score} > {v!r})::int" for v in values)

    adaptive = con.execute(
        f"""select {cell(cuts[0], "s0")} a0, {cell(cuts[1], "p_click")} a1,
        case when s0 >= {TACE_CUT} then {cell(cuts[2], "s0")} end t0,
        case when p_click >= {TACE_CUT} then {cell(cuts[3], "p_click")} end t1,
        count(*), sum(s0), sum(1 - label), sum(p_click), sum(label)
        from (select p_click, label, 1 - p_click s0 from {rows})
        group by grouping sets ((a0), (a1), (t0), (t1))"""
    ).fetchall()
    a0, a1, t0, t1 = _sets(adaptive, 4)

    def mean_gap(*classes) -> float:
        gaps = [abs(r[o] - r[s]) / r[0] for cells, s, o in classes for r in cells]
        return float(np.mean(gaps))

    # 5. KDE sums: bandwidths by the rule of thumb, then per-cell sums of the powers
    kde_cells = 0
    for sd, score, outcome in (
        (sd_conf, "greatest(p_click, 1 - p_click)", "((p_click > 0.5)::int = label)"),
        (sd_p, "p_click", "(label = 1)"),
    ):
        h = max(1.06 * sd * n**-0.2, 1e-3)
        powers = ["1", "b", "b2", "b2 * b", "b2 * b2", "b2 * b2 * b", "b2 * b2 * b2"]
        sums = ", ".join(f"sum({x}), sum(o * {x})" for x in powers)
        kde_cells += len(
            con.execute(
                f"""select cell, {sums} from (select *, b * b b2 from (select cell, o,
                (s - (cell + 0.5) * {h / 2}) / {h} b from (select floor(s / {h / 2}) cell, s, o
                from (select {score} s, {outcome}::int o from {rows})))) group by cell"""
            ).fetchall()
        )
    return {
        "n": n,
        "accuracy": acc,
        "nll": nll,
        "brier": brier,
        "conf_ece": _gaps(conf)[0],
        "conf_ece_l2": _gaps(conf)[1],
        "top_label_ece": _gaps(top)[0],
        "classwise_ece": float(np.mean(cw)),
        "ace": mean_gap((a0, 1, 2), (a1, 3, 4)),
        "tace": mean_gap((t0, 1, 2), (t1, 3, 4)),
        "kde_cells": kde_cells,
    }


def main() -> None:
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # its bar would garble stdout
    t = time.perf_counter()
    values = every_metric(con, sys.argv[1])
    print(json.dumps({"seconds": time.perf_counter() - t} | values))


if __name__ == "__main__":
    main()
