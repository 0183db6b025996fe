"""Several reviewers at once on one dataset of the server (issue 15, item 4); prints JSON.

``--sessions`` browser sessions (separate browser contexts, so separate Streamlit sessions)
open the same link to the demo dataset at the same moment on a fresh server, then each
changes the number of bins, switches to the reliability view (of P(class 1) for a binary
model) and back to the metrics. Reported:

* per action, the seconds of every session and their median, 95th percentile (nearest
  rank: with 8 sessions, the slowest) and maximum;
* the server's peak resident memory (``VmHWM`` of its process, from ``/proc``: the peak
  over its whole life) and the CPU seconds it used;
* ``computations``: how many different "read at ... UTC in ... s" lines the sessions
  saw (1 when they shared one computation), and whether every session's metrics table
  is the same text;
* ``errors``: anything a session saw go wrong (browser exceptions, error boxes, time-outs).

The bound stated for 8 sessions on 100M rows is a peak of 3 GB; ``--max-rss-mb`` makes
the script exit 1 above it (and on any error), so CI runs it at a small scale
(``tests/e2e/test_load.py``).

``--uploads`` measures issue 34's case instead: ``--sessions`` reviewers (4 in the issue) each
open the page, switch to an upload and, all at once, upload a different 20,000 x 100 CSV
(about 31 MB, generated here); reported are each session's seconds to the file's metrics
table (first paint, estimates) and to its intervals (settled), the server's resident memory
once every page was open (before the uploads), its peak (``VmHWM``) and what it holds after.
The bound is a peak of 3 GB for 4 uploaders.

Usage::

    .venv/bin/python benchmarks/bench_reviewers.py [--rows 100000000] [--sessions 8]
        [--data-dir DIR] [--sample-rows N] [--max-rss-mb 3072]
    .venv/bin/python benchmarks/bench_reviewers.py --uploads --sessions 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from bench_dashboard import CHROMIUM, IDLE, Server, rss_mb, wide_csv

TIMEOUT_MS = 900_000
DATASET = "clicks.parquet"
LINK = f"/?data={DATASET}&m=ts&m=tl-hb"
READ_LINE = re.compile(r"read at \d\d:\d\d:\d\d UTC in [\d.]+ s")
RELIABILITY_VIEW = re.compile(r"^(Confidence reliability|Reliability \(positive class\))$")
RELIABILITY_HEADING = re.compile(r"^(Confidence reliability diagram|Reliability of P\(.+\))$")


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set size (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc status")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of the process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def settle(page) -> None:
    await page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
    await page.wait_for_function(
        "() => document.querySelectorAll('[data-stale=\"true\"]').length === 0",
        timeout=TIMEOUT_MS,
    )


async def page_errors(page) -> list[str]:
    """What the page shows going wrong: exceptions and error boxes, counted."""
    return [
        f"{n} {what} on the page"
        for what in ("stException", "stAlertContentError")
        if (n := await page.get_by_test_id(what).count())
    ]


async def timed(action) -> float:
    start = time.monotonic()
    await action()
    return time.monotonic() - start


async def reviewer(browser, url: str, start_together: asyncio.Event) -> dict:
    context = await browser.new_context(viewport={"width": 1400, "height": 1600})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    out: dict = {"errors": errors}
    table = page.locator("[data-testid='stTable']").first

    async def first_paint():
        await page.goto(url + LINK)
        await page.locator("[data-testid='stTable'] th", has_text="tl-hb").first.wait_for()

    async def bins_change():
        box = page.get_by_role("spinbutton", name="Bins", exact=True)
        await box.fill("12")
        await box.press("Enter")
        await page.get_by_text("equal-width, 12 ·").first.wait_for()
        await settle(page)

    async def view_switch():
        # the reliability view: named for the confidence, or for a binary model's P(class 1)
        await page.get_by_test_id("stRadio").get_by_text(RELIABILITY_VIEW).click()
        await page.get_by_role("heading", name=RELIABILITY_HEADING).wait_for()
        await settle(page)

    async def back_to_metrics():
        await page.get_by_test_id("stRadio").get_by_text("Metrics", exact=True).click()
        await table.wait_for()
        await settle(page)

    try:
        await start_together.wait()
        out["first_paint_s"] = await timed(first_paint)
        await settle(page)
        text = await page.locator("[data-testid='stMain']").inner_text()
        out["read_line"] = (READ_LINE.findall(text) or [None])[0]
        out["table"] = await table.inner_text()
        out["bins_change_s"] = await timed(bins_change)
        out["view_switch_s"] = await timed(view_switch)
        out["back_to_metrics_s"] = await timed(back_to_metrics)
        errors.extend(await page_errors(page))
    except Exception as exc:  # a time-out or a missing element: reported, not raised
        errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    finally:
        await context.close()
    return out


async def all_reviewers(url: str, n: int) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            go = asyncio.Event()
            tasks = [asyncio.create_task(reviewer(browser, url, go)) for _ in range(n)]
            await asyncio.sleep(0.5)  # every context created before any page asks
            go.set()
            return await asyncio.gather(*tasks)
        finally:
            await browser.close()


#: What a reviewer's upload is: ``--uploads N`` sessions each upload a file of this size.
UPLOAD_ROWS, UPLOAD_CLASSES = 20_000, 100


async def uploader(
    browser, url: str, path: Path, ready: asyncio.Event, start_together: asyncio.Event
) -> dict:
    """One reviewer: opens the page (its bundled sample), switches the source to an upload
    and, once every reviewer is there, uploads ``path``; then waits for the metrics table
    of the file with its intervals, script idle."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1600})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    out: dict = {"errors": errors, "file": path.name}
    table = page.locator("[data-testid='stTable']").first
    try:
        await page.goto(url + "/?m=ts&m=tl-hb")
        await table.wait_for()
        await settle(page)
        await page.get_by_text("upload a file", exact=True).click()
        await settle(page)
        ready.set()
        await start_together.wait()
        start = time.monotonic()
        await page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(
            path
        )
        await page.get_by_text(path.name).first.wait_for()
        await page.locator("[data-testid='stTable'] th", has_text="tl-hb").first.wait_for()
        out["upload_first_paint_s"] = time.monotonic() - start
        await page.wait_for_function(  # the intervals are in
            "() => { const t = document.querySelector(\"[data-testid='stTable']\");"
            " return t && t.innerText.includes('['); }",
            timeout=TIMEOUT_MS,
        )
        await settle(page)
        out["upload_settled_s"] = time.monotonic() - start
        text = await page.locator("[data-testid='stMain']").inner_text()
        if f"uploaded file: {path.name}" not in text:
            errors.append(f"{path.name}: the page does not name the uploaded file")
        errors.extend(await page_errors(page))
    except Exception as exc:  # a time-out or a missing element: reported, not raised
        errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    finally:
        ready.set()  # also when it failed before: the others must not wait for it
        await context.close()
    return out


async def all_uploaders(url: str, paths: list[Path], server_pid: int) -> tuple[list[dict], float]:
    """Every uploader's result, and the server's resident MiB once all had opened the page
    (before any upload)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            go = asyncio.Event()
            ready = [asyncio.Event() for _ in paths]
            tasks = [
                asyncio.create_task(uploader(browser, url, path, r, go))
                for path, r in zip(paths, ready, strict=True)
            ]
            for r in ready:  # every page open on its upload box first
                await r.wait()
            before = rss_mb(server_pid)
            go.set()
            return list(await asyncio.gather(*tasks)), before
        finally:
            await browser.close()



def run_uploads(folder: Path, sessions: int) -> dict:
    """``sessions`` reviewers upload different 20,000 x 100 CSVs at once on a fresh server."""
    paths = [wide_csv(folder, UPLOAD_ROWS, UPLOAD_CLASSES, seed=k) for k in range(sessions)]
    with Server() as server:
        results, before = asyncio.run(all_uploaders(server.url, paths, server.proc.pid))
        rss, cpu = peak_rss_mb(server.proc.pid), cpu_seconds(server.proc.pid)
        after = rss_mb(server.proc.pid)
    out = {
        "case": "uploads",
        "sessions": sessions,
        "rows": UPLOAD_ROWS,
        "classes": UPLOAD_CLASSES,
        "megabytes_each": round(paths[0].stat().st_size / 2**20, 1),
        "rss_before_uploads_mb": round(before, 1),
        "rss_after_mb": round(after, 1),
        "peak_rss_mb": round(rss, 1),
        "server_cpu_s": round(cpu, 2),
        "errors": [e for r in results for e in r["errors"]],
    }
    for key in ("upload_first_paint_s", "upload_settled_s"):
        out[key] = summary([r[key] for r in results if key in r])
    return out


def summary(values: list[float]) -> dict:
    """Median, nearest-rank 95th percentile and maximum (seconds, rounded)."""
    v = sorted(values)
    if not v:
        return {}
    rank = max(1, math.ceil(0.95 * len(v)))
    return {
        "p50": round(v[(len(v) - 1) // 2], 2),
        "p95": round(v[rank - 1], 2),
        "max": round(v[-1], 2),
        "all": [round(x, 2) for x in values],
    }


def run(folder: Path, sessions: int, sample_rows: int | None) -> dict:
    env = {"CALCORE_DATA_DIR": str(folder)}
    if sample_rows:
        env["CALCORE_SERVER_SAMPLE_ROWS"] = str(sample_rows)
    with Server(env) as server:
        results = asyncio.run(all_reviewers(server.url, sessions))
        rss, cpu = peak_rss_mb(server.proc.pid), cpu_seconds(server.proc.pid)
    out = {
        "sessions": sessions,
        "peak_rss_mb": round(rss, 1),
        "server_cpu_s": round(cpu, 2),
        "computations": len({r.get("read_line") for r in results}),
        "read_lines": sorted({str(r.get("read_line")) for r in results}),
        "same_tables": len({r.get("table") for r in results}) == 1,
        "errors": [e for r in results for e in r["errors"]],
    }
    for key in ("first_paint_s", "bins_change_s", "view_switch_s", "back_to_metrics_s"):
        out[key] = summary([r[key] for r in results if key in r])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--data-dir", type=Path, help=f"a folder already holding {DATASET}")
    parser.add_argument("--sample-rows", type=int, help="CALCORE_SERVER_SAMPLE_ROWS")
    parser.add_argument("--max-rss-mb", type=float, default=3072.0)
    parser.add_argument(
        "--uploads",
        action="store_true",
        help="the uploads case instead: --sessions reviewers each upload a different "
        "20,000 x 100 CSV at once (issue 34: peak <= 3 GB for 4)",
    )
    args = parser.parse_args()
    if args.uploads:
        with tempfile.TemporaryDirectory() as tmp:
            result = run_uploads(Path(tmp), args.sessions)
        result["max_rss_mb"] = args.max_rss_mb
        result["load_average"] = os.getloadavg()
        print(json.dumps(result, indent=2))
        ok = not result["errors"] and result["peak_rss_mb"] <= args.max_rss_mb
        return 0 if ok else 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.data_dir
        written = None
        if folder is None:
            from dashboard.demo import write_demo

            folder, start = Path(tmp), time.perf_counter()
            write_demo(folder, n_rows=args.rows, name=DATASET)
            written = round(time.perf_counter() - start, 2)
        import pyarrow.parquet as pq

        rows = pq.ParquetFile(folder / DATASET).metadata.num_rows
        result = {"rows": rows, "demo_written_s": written}
        result.update(run(folder, args.sessions, args.sample_rows))
    result["max_rss_mb"] = args.max_rss_mb
    result["load_average"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    ok = (
        not result["errors"]
        and result["computations"] == 1
        and result["same_tables"]
        and result["peak_rss_mb"] <= args.max_rss_mb
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
