"""``calibration-lens``: serve the dashboard from an installed package (no checkout, no Makefile).

::

    pip install "calibration-lens[dashboard]"
    calibration-lens                              # http://127.0.0.1:8501, the bundled samples
    calibration-lens --data-dir DIR               # and the datasets of DIR (CALCORE_DATA_DIR)
    calibration-lens --data-dir DIR --demo        # write the 10M-row demo into DIR first
    calibration-lens --workspace-dir DIR          # "Keep on the server" (CALCORE_WORKSPACE_DIR)
    calibration-lens -- --server.baseUrlPath lens # any other Streamlit option after ``--``

``python -m dashboard`` is the same command. It does what ``make run`` does in a checkout:
``streamlit run`` on the package's own ``app.py`` (wherever pip put it), headless, with the
project's Streamlit settings (upload limit, theme, toolbar: ``.streamlit/config.toml``, which
a wheel carries as ``dashboard/assets/streamlit_config.toml``) passed as command-line flags,
because Streamlit only reads ``.streamlit/`` from the current directory, which is the user's.

Streamlit is imported only to serve, so ``--help`` and argument errors answer at once, and
an install without the ``[dashboard]`` extra gets a one-line hint instead of a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from pathlib import Path

__all__ = ["APP", "main", "streamlit_args", "streamlit_settings"]

_PACKAGE = Path(__file__).resolve().parent
#: The page Streamlit runs: the installed package's, never one in the current directory.
APP = _PACKAGE / "app.py"
# Where the project's Streamlit settings are: the wheel's copy first, then the checkout's.
_SETTINGS_FILES = (
    _PACKAGE / "assets" / "streamlit_config.toml",
    _PACKAGE.parent / ".streamlit" / "config.toml",
)
# The environment variables the page reads (dashboard.calibration.datadir / .workspace);
# spelled out here so that --help stays free of the page's imports.
_DATA_DIR_ENV = "CALCORE_DATA_DIR"
_WORKSPACE_DIR_ENV = "CALCORE_WORKSPACE_DIR"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="calibration-lens",
        description="Serve the calibration-lens dashboard (Streamlit). It opens on bundled "
        "samples; uploads work in the browser.",
        epilog="Streamlit options (see `streamlit run --help`) go after `--`, e.g. "
        "`calibration-lens -- --server.baseUrlPath lens`. Other settings of the page: the "
        "environment variables CALCORE_SERVER_SAMPLE_ROWS, CALCORE_WORKSPACE_DAYS and "
        "CALCORE_WORKSPACE_QUOTA_MB (see the README).",
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help=f"a folder whose datasets the sidebar lists ({_DATA_DIR_ENV}; default: that "
        "variable if set, else none)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="first write the 10M-row demo dataset clicks_10m.parquet into --data-dir "
        "(about 110 MB, a few seconds, once), as `make run` does",
    )
    parser.add_argument(
        "--workspace-dir",
        metavar="DIR",
        help=f"where 'Keep on the server' stores uploads ({_WORKSPACE_DIR_ENV}; default: "
        "that variable if set, else keeping is off)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: %(default)s; 0.0.0.0 serves other machines)",
    )
    parser.add_argument(
        "--port", type=_port, default=8501, help="port to listen on (default: %(default)s)"
    )
    return parser


def _port(text: str) -> int:
    port = int(text) if text.isdigit() else 0
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return port


def streamlit_settings(path: str | os.PathLike | None = None) -> list[tuple[str, str]]:
    """The project's Streamlit settings as ``(option, value)`` command-line pairs.

    Parameters
    ----------
    path : str or path-like, optional
        A Streamlit ``config.toml``. Default: the one shipped in the wheel
        (``dashboard/assets/streamlit_config.toml``), else the checkout's
        ``.streamlit/config.toml``; neither found gives no settings (Streamlit's defaults).

    Returns
    -------
    list of (str, str)
        ``("--section.key", value)`` in file order; booleans as ``true``/``false`` and a
        list as one pair per item, as ``streamlit run`` takes them.

    Examples
    --------
    >>> ("--server.maxUploadSize", "1024") in streamlit_settings()
    True
    """
    if path is None:
        path = next((p for p in _SETTINGS_FILES if p.is_file()), None)
        if path is None:
            return []
    with open(path, "rb") as f:
        config = tomllib.load(f)
    pairs = []
    for section, options in config.items():
        for key, value in options.items():
            for item in value if isinstance(value, list) else [value]:
                text = str(item).lower() if isinstance(item, bool) else str(item)
                pairs.append((f"--{section}.{key}", text))
    return pairs


def streamlit_args(host: str, port: int, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The arguments of ``streamlit`` that serve :data:`APP` on ``host:port``.

    Parameters
    ----------
    host, port
        Where to listen.
    extra : list of str
        Streamlit options given after ``--``; they come last, so they win (for an option
        given twice, ``streamlit run`` keeps the last).

    Returns
    -------
    list of str
        ``["run", APP, *settings, *launcher options, *extra]``: the project settings of
        :func:`streamlit_settings`, then headless serving on ``host:port`` without usage
        statistics or file watching (an installed package does not change under it).

    Examples
    --------
    >>> args = streamlit_args("127.0.0.1", 8600)
    >>> args[:2] == ["run", str(APP)] and args[args.index("--server.port") + 1]
    '8600'
    """
    serving = {
        "--server.headless": "true",  # never wait for a browser or ask for an e-mail
        "--server.address": host,
        "--server.port": str(port),
        "--browser.gatherUsageStats": "false",
        "--server.fileWatcherType": "none",
    }
    args = ["run", str(APP)]
    for option, value in streamlit_settings():
        if option not in serving:  # each option once: the launcher's value stands
            args += [option, value]
    for option, value in serving.items():
        args += [option, value]
    return [*args, *extra]


def main(argv: list[str] | None = None) -> int:
    """Serve the dashboard until interrupted; the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``); see ``calibration-lens --help``.

    Returns
    -------
    int
        0 after a clean stop; 2 for a bad argument (argparse's convention); 1 when Streamlit
        is not installed.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    # Everything after the first "--" is Streamlit's, passed through untouched.
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = _parser()
    args = parser.parse_args(own)

    if args.demo and not args.data_dir:
        parser.error("--demo writes into the data directory: give --data-dir DIR too")
    if args.data_dir and not args.demo and not Path(args.data_dir).expanduser().is_dir():
        parser.error(f"--data-dir {args.data_dir}: no such directory")
    # Before anything is written (the demo): without Streamlit nothing can be served.
    try:
        from streamlit.web import cli as streamlit_cli
    except ImportError:
        print(
            "calibration-lens: the dashboard needs Streamlit and Plotly: "
            'pip install "calibration-lens[dashboard]"',
            file=sys.stderr,
        )
        return 1
    if args.data_dir:
        data_dir = Path(args.data_dir).expanduser().resolve()
        if args.demo:
            from dashboard.demo import write_demo  # numpy + pyarrow: only when asked

            print(f"calibration-lens: demo dataset {write_demo(data_dir)}", file=sys.stderr)
        # Absolute, so that the page finds it whatever directory Streamlit's script runs in.
        os.environ[_DATA_DIR_ENV] = str(data_dir)
    if args.workspace_dir:  # created by the page on first use, like CALCORE_WORKSPACE_DIR
        os.environ[_WORKSPACE_DIR_ENV] = str(Path(args.workspace_dir).expanduser().resolve())

    served = os.environ.get(_DATA_DIR_ENV) or "none"
    print(
        f"calibration-lens: http://{args.host}:{args.port} (datasets on the server: {served})",
        file=sys.stderr,
    )
    # In this process (not a child): Ctrl+C and SIGTERM reach Streamlit's own handlers, and
    # the environment set above is the page's.
    try:
        streamlit_cli.main(args=streamlit_args(args.host, args.port, extra), prog_name="streamlit")
    except SystemExit as stop:  # click ends with sys.exit; hand its status back
        code = stop.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
