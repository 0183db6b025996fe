"""The ``calibration-lens`` launcher in-process (issue 34, item 10): its options, the
environment it hands the page and the ``streamlit run`` command line it builds. The
installed wheel running it for real is ``tests/test_wheel_install.py``."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from dashboard import launch

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV = ("CALCORE_DATA_DIR", "CALCORE_WORKSPACE_DIR")


@pytest.fixture
def served(monkeypatch):
    """Streamlit's CLI replaced by a recorder; the page's variables restored afterwards."""
    for var in ENV:
        monkeypatch.delenv(var, raising=False)
    calls = []

    def fake_main(*, args, prog_name):
        calls.append(list(args))
        raise SystemExit(0)  # click's way of ending

    import streamlit.web.cli

    monkeypatch.setattr(streamlit.web.cli, "main", fake_main)
    return calls


def _pairs(args: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for option, value in zip(args[2::2], args[3::2], strict=True):
        out.setdefault(option, []).append(value)
    return out


def test_the_settings_are_the_projects_streamlit_config():
    with open(REPO_ROOT / ".streamlit" / "config.toml", "rb") as f:
        config = tomllib.load(f)
    settings = dict(launch.streamlit_settings())
    assert len(settings) == sum(len(options) for options in config.values())
    assert settings["--server.maxUploadSize"] == str(config["server"]["maxUploadSize"])
    assert settings["--theme.primaryColor"] == config["theme"]["primaryColor"]
    assert settings["--client.toolbarMode"] == "viewer"
    assert settings["--browser.gatherUsageStats"] == "false"  # TOML false, as Streamlit reads


def test_a_list_setting_repeats_its_option(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[server]\nfolderWatchList = ["a", "b"]\nport = 9000\n')
    assert launch.streamlit_settings(path) == [
        ("--server.folderWatchList", "a"),
        ("--server.folderWatchList", "b"),
        ("--server.port", "9000"),
    ]


def test_the_command_line_gives_each_option_once_and_the_extras_last():
    args = launch.streamlit_args("0.0.0.0", 8600, ["--server.baseUrlPath", "lens"])
    assert args[:2] == ["run", str(launch.APP)] and launch.APP.is_file()
    pairs = _pairs(args)
    assert all(len(values) == 1 for values in pairs.values()), pairs
    assert pairs["--server.address"] == ["0.0.0.0"] and pairs["--server.port"] == ["8600"]
    assert pairs["--server.headless"] == ["true"]
    assert pairs["--server.maxUploadSize"] == ["1024"]  # from .streamlit/config.toml
    assert args[-2:] == ["--server.baseUrlPath", "lens"]


def test_streamlit_accepts_the_command_line(monkeypatch):
    """Streamlit's own click parser takes every option (an unknown one would exit 2)."""
    pytest.importorskip("streamlit")
    import streamlit.web.cli as cli

    seen = {}
    monkeypatch.setattr(cli, "_main_run", lambda file, args, flag_options: seen.update(
        file=file, flag_options=flag_options))  # fmt: skip
    args = launch.streamlit_args("127.0.0.1", 8611, ["--server.baseUrlPath", "lens"])
    cli.main(args=args, prog_name="streamlit", standalone_mode=False)
    assert seen["file"] == str(launch.APP)
    options = {k: v for k, v in seen["flag_options"].items() if v is not None}
    assert options["server_port"] == 8611 and options["server_maxUploadSize"] == 1024
    assert options["server_headless"] is True and options["server_baseUrlPath"] == "lens"
    assert options["theme_primaryColor"] == "#0072B2"


def test_main_hands_the_page_absolute_directories_and_streamlit_the_rest(
    served, tmp_path, monkeypatch
):
    import os

    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    code = launch.main(["--data-dir", "data", "--workspace-dir", "ws", "--port", "8622",
                        "--", "--server.baseUrlPath", "lens"])  # fmt: skip
    assert code == 0
    assert os.environ["CALCORE_DATA_DIR"] == str(tmp_path / "data")
    assert os.environ["CALCORE_WORKSPACE_DIR"] == str(tmp_path / "ws")
    (args,) = served
    assert args == launch.streamlit_args("127.0.0.1", 8622, ["--server.baseUrlPath", "lens"])


def test_without_directories_the_environment_is_left_as_the_operator_set_it(
    served, monkeypatch, tmp_path
):
    import os

    monkeypatch.setenv("CALCORE_DATA_DIR", str(tmp_path))
    assert launch.main([]) == 0
    assert os.environ["CALCORE_DATA_DIR"] == str(tmp_path)
    assert "CALCORE_WORKSPACE_DIR" not in os.environ
    assert served == [launch.streamlit_args("127.0.0.1", 8501)]


def test_demo_writes_the_dataset_into_the_data_directory_first(served, tmp_path, monkeypatch):
    import dashboard.demo

    written = []
    monkeypatch.setattr(dashboard.demo, "write_demo", lambda folder: written.append(folder))
    assert launch.main(["--data-dir", str(tmp_path / "new"), "--demo"]) == 0
    assert written == [tmp_path / "new"] and len(served) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--demo"], "give --data-dir DIR too"),
        (["--data-dir", "/nonexistent/calibration-lens"], "no such directory"),
        (["--port", "0"], "not a port number"),
        (["--port", "http"], "'http' is not a port number"),
    ],
)
def test_bad_arguments_exit_2_before_streamlit_starts(served, argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        launch.main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert served == []


def test_without_streamlit_the_hint_names_the_extra_and_nothing_is_written(
    monkeypatch, capsys, tmp_path
):
    import dashboard.demo

    for var in ENV:
        monkeypatch.delenv(var, raising=False)
    written = []
    monkeypatch.setattr(dashboard.demo, "write_demo", lambda folder: written.append(folder))
    monkeypatch.setitem(sys.modules, "streamlit.web", None)  # as if not installed
    assert launch.main(["--data-dir", str(tmp_path), "--demo"]) == 1
    assert 'pip install "calibration-lens[dashboard]"' in capsys.readouterr().err
    assert written == []  # no 110 MB demo for a server that cannot start
