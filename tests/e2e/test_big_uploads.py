"""Big uploads at once: two 50,000 x 1,000 NPZ files in two browser pages, and one over budget.

Issue 6: "a file whose decoded size would exceed a configured budget is refused with a
message before it is materialised; two 50,000 x 1,000 uploads at once do not take the
server down."

* Two pages of the real app (``streamlit run``, the session's ``app_url``) upload two
  different 50,000 x 1,000 float32-logit NPZ files (uncompressed ``np.savez``, ~200 MB
  each, with a calib/test ``split`` array) at the same time. Each page must show its
  metrics table with calcore's conf-ECE of ITS file's test rows (the files are built so
  that the two values differ), without an exception or error alert.
* A third page uploads a small compressed NPZ whose ``.npy`` header declares 70,000 x 1,000
  float32 logits: within the upload limit, but decoded (float64) over the loader's budget
  (512 MiB unless ``CALCORE_MAX_DECODED_BYTES`` says otherwise). The page must show an
  ``st.error`` naming the budget, and no exception.
* Afterwards ``/_stcore/health`` answers ``ok``. The server's resident memory is sampled
  every 0.2 s during the test (``/proc/<pid>/status`` VmRSS) and its VmHWM (peak since start,
  reset at the start of the test when the kernel allows) is read at the end; both printed.

Loopback only; bounded in time (``pytest.mark.timeout``, ``asyncio.wait_for``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest

pytest.importorskip("playwright")

from _health import healthy

import calcore
import calcore.io
from calcore.foundation.limits import resolve_budget

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

ROWS, CLASSES = 50_000, 1_000
TIMEOUT_MS = 300_000
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
CHROMIUM = "/usr/bin/chromium"


# -- files ----------------------------------------------------------------------------------
def write_big_npz(path: Path, *, seed: int, scale: float, sharpness: float) -> Path:
    """50,000 x 1,000 float32 logits; labels drawn from softmax(sharpness * logits), so the
    shown probabilities are over-confident by an amount set per file (distinct conf-ECEs)."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((ROWS, CLASSES), dtype=np.float32)
    logits *= np.float32(scale)
    z = sharpness * logits.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    np.cumsum(z, axis=1, out=z)
    u = rng.random((ROWS, 1)) * z[:, -1:]
    labels = np.minimum((z < u).sum(axis=1), CLASSES - 1)
    del z
    split = np.where(rng.random(ROWS) < 0.5, "calib", "test")
    names = np.array([f"f{seed}_c{j}" for j in range(CLASSES)])
    np.savez(path, logits=logits, labels=labels, class_names=names, split=split)
    return path


def write_over_budget_npz(path: Path, rows: int) -> Path:
    """A valid, highly compressible NPZ of ``rows`` x 1,000 float32 zeros (a few hundred KB)."""
    np.savez_compressed(
        path,
        logits=np.zeros((rows, CLASSES), dtype=np.float32),
        labels=np.zeros(rows, dtype=np.int64),
    )
    return path


def expected_values(path: Path) -> tuple[str, int]:
    """calcore's conf-ECE of the file's test rows as the page shows it, and their count."""
    test = calcore.io.load_splits(path)["test"]
    return f"{calcore.evaluate(test, bins=15).metrics['conf_ece']:.4f}", test.n_samples


# -- the server process ---------------------------------------------------------------------
def server_pid(url: str) -> int:
    """The pid of the `streamlit run` process listening on ``url``'s port (from /proc)."""
    port = str(urlparse(url).port)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv]
        if "streamlit" in args and "run" in args and "--server.port" in args:
            if args[args.index("--server.port") + 1] == port:
                found.append(int(entry.name))
    assert len(found) == 1, f"streamlit processes on port {port}: {found}"
    return found[0]


def status_kib(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.M).group(1))


class RssSampler(threading.Thread):
    """Samples VmRSS of ``pid`` every ``interval`` seconds; ``peak_kib`` is the largest seen."""

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.interval, self.peak_kib = pid, interval, 0
        self.window_start_kib = self.window_peak_kib = 0  # see start_window
        self.done = threading.Event()

    def start_window(self) -> None:
        """From now on also track the peak of a window (e.g. one upload) separately."""
        self.window_start_kib = self.window_peak_kib = status_kib(self.pid, "VmRSS")

    def run(self):
        while not self.done.is_set():
            try:
                rss = status_kib(self.pid, "VmRSS")
            except (OSError, AttributeError):
                rss = 0
            self.peak_kib = max(self.peak_kib, rss)
            self.window_peak_kib = max(self.window_peak_kib, rss)
            self.done.wait(self.interval)


# -- browser sessions -----------------------------------------------------------------------
async def settle(page) -> None:
    await page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
    await page.wait_for_function(
        "() => document.querySelectorAll('[data-stale=\"true\"]').length === 0",
        timeout=TIMEOUT_MS,
    )


async def open_upload(browser, url: str):
    context = await browser.new_context(viewport={"width": 1300, "height": 1400})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(f"{url}/?m=none&boot=0")
    await page.locator("[data-testid='stTable']").wait_for()
    await settle(page)
    await page.get_by_text("upload a file", exact=True).click()
    await page.get_by_test_id("stFileUploader").wait_for()
    await settle(page)
    return context, page, errors


async def problems(page, errors: list[str]) -> list[str]:
    exceptions = await page.get_by_test_id("stException").count()
    alerts = await page.get_by_test_id("stAlertContentError").all_inner_texts()
    return errors + ([f"{exceptions} exceptions"] if exceptions else []) + alerts


async def big_session(browser, url: str, path: Path, ready, start) -> dict:
    context, page, errors = await open_upload(browser, url)
    try:
        ready.set()
        await start.wait()  # both pages ready: the uploads start together
        t0 = time.monotonic()
        uploader = page.get_by_test_id("stFileUploader").locator("input[type=file]")
        await uploader.set_input_files(path)
        await page.get_by_text(path.name).first.wait_for()
        await page.locator("[data-testid='stTable']").wait_for()
        await settle(page)
        seconds = time.monotonic() - t0
        row = page.locator("[data-testid='stTable'] tr").filter(
            has=page.locator("td").get_by_text("conf-ECE", exact=True)
        )
        seen = (await row.locator("td").nth(2).inner_text()).strip()
        caption = await page.get_by_text("test rows").first.inner_text()
        return {
            "file": path.name,
            "seen": seen,
            "seconds": seconds,
            "caption": caption,
            "problems": await problems(page, errors),
        }
    finally:
        await context.close()


async def over_budget_session(browser, url: str, path: Path) -> dict:
    context, page, errors = await open_upload(browser, url)
    try:
        t0 = time.monotonic()
        uploader = page.get_by_test_id("stFileUploader").locator("input[type=file]")
        await uploader.set_input_files(path)
        alert = page.get_by_test_id("stAlertContentError").first
        await alert.wait_for()
        await settle(page)
        return {
            "seconds": time.monotonic() - t0,
            "alert": (await alert.inner_text()).strip(),
            "exceptions": await page.get_by_test_id("stException").count(),
            "tables": await page.locator("[data-testid='stTable']").count(),
            "errors": errors,
        }
    finally:
        await context.close()


async def run_all(
    url: str, big: list[Path], over: Path, sampler: RssSampler
) -> tuple[list[dict], dict, float]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            ready = [asyncio.Event() for _ in big]
            start = asyncio.Event()
            tasks = [
                asyncio.create_task(big_session(browser, url, f, r, start))
                for f, r in zip(big, ready, strict=True)
            ]
            # the uploads start together, once both pages show the uploader (or one failed)
            barrier = asyncio.ensure_future(asyncio.gather(*(r.wait() for r in ready)))
            await asyncio.wait([barrier, *tasks], timeout=180, return_when="FIRST_COMPLETED")
            barrier.cancel()
            t0 = time.monotonic()
            start.set()
            results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=600)
            both = time.monotonic() - t0
            await asyncio.sleep(1.0)  # let the server's memory settle after the big runs
            sampler.start_window()
            over_result = await asyncio.wait_for(over_budget_session(browser, url, over), 180)
            await asyncio.sleep(0.5)
            return results, over_result, both
        finally:
            await browser.close()


def test_two_big_uploads_at_once_and_one_over_budget(
    app_url: str, artifacts_dir: Path, tmp_path: Path
):
    t0 = time.monotonic()
    big = [
        write_big_npz(tmp_path / "big_a.npz", seed=11, scale=2.0, sharpness=0.5),
        write_big_npz(tmp_path / "big_b.npz", seed=12, scale=3.0, sharpness=0.8),
    ]
    expected, n_test = {}, {}
    for path in big:
        expected[path.name], n_test[path.name] = expected_values(path)
    assert len(set(expected.values())) == 2, expected  # a page showing the other's data fails
    budget = resolve_budget(None)  # the server inherits this environment
    over_rows = budget // (CLASSES * 8) + 1_000  # float64 once decoded: just over the budget
    over = write_over_budget_npz(tmp_path / "over_budget.npz", over_rows)
    sizes = {p.name: p.stat().st_size for p in [*big, over]}
    prepared = time.monotonic() - t0

    pid = server_pid(app_url)
    try:  # "5" resets the peak resident set size (VmHWM) to the current one (Linux >= 4.0)
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        hwm_reset = True
    except OSError:
        hwm_reset = False
    rss_before = status_kib(pid, "VmRSS")
    sampler = RssSampler(pid)
    sampler.start()
    try:
        # in a thread of its own: the sync Playwright of the other e2e tests keeps an event
        # loop running in this one, and asyncio.run refuses to nest
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            results, over_result, both = pool.submit(
                asyncio.run, run_all(app_url, big, over, sampler)
            ).result()
    finally:
        sampler.done.set()
        sampler.join(timeout=5)
    is_healthy = healthy(app_url, timeout=10)  # the server may still be busy
    hwm = status_kib(pid, "VmHWM")
    rss_after = status_kib(pid, "VmRSS")
    mib = 1 / 1024
    print(
        f"\nbig uploads: files {', '.join(f'{k} {v / 2**20:.0f} MiB' for k, v in sizes.items())};"
        f" prepared (write + calcore's expected values) in {prepared:.1f} s\n"
        + "".join(
            f"  {r['file']}: table after {r['seconds']:.1f} s, conf-ECE {r['seen']} "
            f"(calcore {expected[r['file']]}); {r['caption']}\n"
            for r in results
        )
        + f"  both pages done {both:.1f} s after the uploads started\n"
        f"  over budget ({over_rows:,} x {CLASSES:,}): error after {over_result['seconds']:.1f} s:"
        f" {over_result['alert'][:160]}\n"
        f"  server RSS during the over-budget upload: {sampler.window_start_kib * mib:.0f} MiB"
        f" at its start, peak {sampler.window_peak_kib * mib:.0f} MiB\n"
        f"  server RSS before {rss_before * mib:.0f} MiB, sampled peak {sampler.peak_kib * mib:.0f}"
        f" MiB, VmHWM {hwm * mib:.0f} MiB ({'reset at start' if hwm_reset else 'since start'}),"
        f" after {rss_after * mib:.0f} MiB; health {'ok' if is_healthy else 'FAILED'}"
    )
    assert is_healthy, "the server did not answer /_stcore/health with ok after the uploads"
    for r in results:
        assert not r["problems"], r
        assert r["seen"] == expected[r["file"]], (r, expected)
        assert f"evaluated on {n_test[r['file']]:,} test rows" in r["caption"], r["caption"]
    alert = over_result["alert"]
    assert over_result["exceptions"] == 0 and not over_result["errors"], over_result
    assert over_result["tables"] == 0, over_result  # nothing was evaluated
    assert "over_budget.npz" in alert and "budget" in alert, alert
    assert f"max_decoded_bytes={budget:,}" in alert.replace("\\", ""), alert
    # refused before it was decoded: its arrays alone would add ~780 MiB (float32 + float64)
    grew = (sampler.window_peak_kib - sampler.window_start_kib) * mib
    assert grew < 300, f"server RSS grew by {grew:.0f} MiB while refusing the over-budget file"
