"""The built wheel, installed into a fresh venv, serves the app with one command (issue 34,
item 10): what a user gets from ``pip install "calibration-lens[dashboard]"`` with no checkout.

The wheel is built from a copy of the project's sources (so neither a stale ``build/`` nor
anything else of the checkout can leak in) with ``--no-build-isolation`` (the pinned
setuptools of requirements-dev.txt: no index is needed mid-test), then installed into a new
venv with ``--no-deps --no-index``. The fresh venv then reaches the dependencies (numpy,
streamlit, ...) through a ``.pth`` file naming this interpreter's site-packages: the test is
about the wheel's contents and its entry points, not pip's resolver, and CI has no network
guaranteed mid-test. A path in a ``.pth`` file is added as it is (the ``.pth`` files inside
it are not run), so the checkout's editable install there stays inert, and every command
runs with no PYTHONPATH from a temporary directory: ``calcore`` and ``dashboard`` can only
come from the wheel, which the tests check.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.e2e._health import healthy

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[1]
#: What the build reads: the project's metadata and build hook, the packages, and the
#: runtime files setup.py copies in (a new top-level input must be added here, on purpose).
BUILD_INPUTS = ["pyproject.toml", "setup.py", "MANIFEST.in", "calcore", "dashboard", "assets",
                ".streamlit"]  # fmt: skip
SERVE_TIMEOUT_S = 60


def _run(cmd, *, cwd, env, timeout=120, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail(f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def _setuptools_builds_wheels() -> None:
    version = importlib.metadata.version("setuptools")
    if tuple(int(p) for p in version.split(".")[:2]) < (70, 1):
        pytest.fail(
            f"setuptools {version} cannot build the wheel without the `wheel` package: "
            "pip install -r requirements-dev.txt (pins setuptools>=70.1)"
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel built from the sources and installed alone into a fresh venv.

    Returns a dict: ``wheel`` (its path), ``venv``, ``site`` (the venv's
    site-packages), ``bin``, ``cwd`` (an empty directory to run in) and ``env`` (this
    process's environment without PYTHONPATH).
    """
    _setuptools_builds_wheels()
    root = tmp_path_factory.mktemp("wheel")
    src, dist, venv, cwd = root / "src", root / "dist", root / "venv", root / "cwd"
    cwd.mkdir()
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "reference")
    for name in BUILD_INPUTS:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=ignore)
        else:
            shutil.copy2(source, src / name)

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    pip = [sys.executable, "-m", "pip"]
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir",
          "-w", str(dist), str(src)], cwd=cwd, env=env)  # fmt: skip
    (wheel,) = dist.glob("calibration_lens-*.whl")

    # No pip in the venv (faster); this interpreter's pip installs into it (--python).
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=cwd, env=env)
    python = venv / "bin" / "python"
    _run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", "--no-cache-dir",
          str(wheel)], cwd=cwd, env=env)  # fmt: skip
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(_run([str(python), "-c", purelib], cwd=cwd, env=env).stdout.strip())
    # Only now the dependencies: had pip seen the checkout's own calibration-lens through
    # this file, it would have tried to uninstall it first.
    deps = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    assert deps, sys.path
    (site / "zz_test_dependencies.pth").write_text("\n".join(deps) + "\n")
    return {"wheel": wheel, "venv": venv, "site": site, "bin": venv / "bin", "cwd": cwd,
            "env": env}  # fmt: skip


def test_the_wheel_holds_the_app_its_samples_and_settings_and_no_tests(installed):
    with zipfile.ZipFile(installed["wheel"]) as wheel:
        names = set(wheel.namelist())
        for name in ("dashboard/app.py", "dashboard/launch.py", "dashboard/__main__.py",
                     "calcore/__init__.py", "calcore/cli/__init__.py"):  # fmt: skip
            assert name in names
        samples = sorted(p.name for p in (REPO_ROOT / "assets").glob("*.npz"))
        assert len(samples) >= 4
        for sample in samples:  # byte for byte what the checkout opens on
            packed = wheel.read(f"dashboard/assets/{sample}")
            assert hashlib.sha256(packed).digest() == hashlib.sha256(
                (REPO_ROOT / "assets" / sample).read_bytes()
            ).digest(), sample
        assert "dashboard/assets/README.md" in names  # the samples' sources and licences
        packed_config = wheel.read("dashboard/assets/streamlit_config.toml")
        assert packed_config == (REPO_ROOT / ".streamlit" / "config.toml").read_bytes()
        assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "assets/"))]
        assert not [n for n in names if "reference" in n or n.endswith(".pyc")]

        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
    assert "calibration-lens = dashboard.launch:main" in entry_points
    assert "calcore = calcore.cli:main" in entry_points
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    streamlit = [line for line in requires if line.startswith("Requires-Dist: streamlit")]
    assert streamlit and all('extra == "dashboard"' in line for line in streamlit), requires


def test_calcore_is_the_wheels_and_imports_without_streamlit_or_plotly(installed):
    # None in sys.modules makes any import of them fail: calcore must not try.
    code = (
        "import sys\n"
        "sys.modules['streamlit'] = sys.modules['plotly'] = None\n"
        "import calcore, calcore.cli, calcore.io\n"
        "print(calcore.__file__)\n"
    )
    out = _run([str(installed["bin"] / "python"), "-c", code], cwd=installed["cwd"],
               env=installed["env"]).stdout  # fmt: skip
    assert Path(out.strip()).is_relative_to(installed["site"]), out
    cli = _run([str(installed["bin"] / "calcore"), "--help"], cwd=installed["cwd"],
               env=installed["env"])  # fmt: skip
    assert "usage: calcore" in cli.stdout


def test_help_answers_without_importing_streamlit(installed):
    script = installed["bin"] / "calibration-lens"
    proc = _run([str(script), "--help"], cwd=installed["cwd"], env=installed["env"])
    assert proc.stdout.startswith("usage: calibration-lens")
    for option in ("--data-dir", "--workspace-dir", "--host", "--port", "--demo"):
        assert option in proc.stdout
    code = (
        "import sys, runpy\n"
        "sys.argv = ['calibration-lens', '--help']\n"
        "try:\n"
        "    runpy.run_module('dashboard', run_name='__main__')\n"
        "except SystemExit as stop:\n"
        "    assert stop.code == 0, stop.code\n"
        "assert 'streamlit' not in sys.modules, 'streamlit imported for --help'\n"
        "print(sys.modules['dashboard'].__file__)\n"
    )
    out = _run([str(installed["bin"] / "python"), "-c", code], cwd=installed["cwd"],
               env=installed["env"]).stdout  # fmt: skip
    assert Path(out.strip().splitlines()[-1]).is_relative_to(installed["site"]), out


def test_the_installed_page_opens_on_its_packaged_sample(installed):
    """The installed app.py runs (AppTest, no browser) on the sample shipped in the wheel."""
    code = (
        "from streamlit.testing.v1 import AppTest\n"
        "from dashboard.calibration.samples import ASSETS_DIR, DEFAULT_SAMPLE, SAMPLES\n"
        "from dashboard.launch import APP\n"
        "print(APP); print(ASSETS_DIR)\n"
        "assert SAMPLES[DEFAULT_SAMPLE].path.is_file()\n"
        "at = AppTest.from_file(str(APP), default_timeout=120)\n"
        "at.query_params['boot'] = '0'\n"  # no intervals: the page, not the bootstrap
        "at.run()\n"
        "assert not at.exception, [e.value for e in at.exception]\n"
        "assert not at.error, [e.value for e in at.error]\n"
        "print(len(at.get('plotly_chart')))\n"
    )
    out = _run([str(installed["bin"] / "python"), "-c", code], cwd=installed["cwd"],
               env=installed["env"], timeout=180).stdout  # fmt: skip
    app, assets, charts = out.strip().splitlines()[-3:]
    assert Path(app).is_relative_to(installed["site"])
    assert Path(assets) == installed["site"] / "dashboard" / "assets"
    assert int(charts) >= 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_console_script_serves_the_app_until_stopped(installed, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "calibration-lens.log"
    cmd = [str(installed["bin"] / "calibration-lens"), "--data-dir", str(data_dir),
           "--workspace-dir", str(tmp_path / "workspace"), "--port", str(port)]  # fmt: skip
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=installed["cwd"], env=installed["env"], stdout=out,
                                stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + SERVE_TIMEOUT_S
        while not healthy(url, timeout=2):
            if proc.poll() is not None:
                pytest.fail(f"calibration-lens exited {proc.returncode}:\n{log.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"not healthy after {SERVE_TIMEOUT_S} s:\n{log.read_text()}")
            time.sleep(0.25)
        with urllib.request.urlopen(url + "/", timeout=10) as resp:
            assert resp.status == 200
            assert b'<div id="root">' in resp.read()  # Streamlit's page, served
    finally:
        proc.terminate()  # SIGTERM: Streamlit's own handler stops the server
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    text = log.read_text()
    assert proc.returncode == 0, text
    assert f"calibration-lens: {url} (datasets on the server: {data_dir.resolve()})" in text
