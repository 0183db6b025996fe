"""A Spark session set up for calcore, and the checks that make a bad setup say so.

Nothing here imports pyspark at module import time: ``import calcore`` and
``import calcore.spark`` work without it, and the functions that need it say how to
install it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

from calcore.foundation.errors import CalcoreError

__all__ = [
    "INSTALL_SPARK",
    "INSTALL_JAVA",
    "MIN_JAVA",
    "SparkSetupError",
    "require_pyspark",
    "find_java",
    "session",
    "check_workers",
    "quiet_log4j2_file",
]

#: What a user runs when pyspark is missing.
INSTALL_SPARK = 'pip install "calibration-lens[spark]"'
#: What a user runs (Debian, Ubuntu) when Java is missing.
INSTALL_JAVA = "apt-get install --no-install-recommends openjdk-17-jre-headless"
#: Spark 4 runs on Java 17 or 21.
MIN_JAVA = 17
#: Spark 4: mapInArrow, toArrow(), _metadata.row_index of Parquet files, Connect.
MIN_PYSPARK = (4, 0)
#: What a worker reports for a package called calcore without calcore.foundation.version.
_NO_VERSION_MODULE = "without calcore.foundation.version"

# Only errors reach the terminal, on stderr: Spark's default profile prints its WARN lines
# (native-hadoop, loopback address, "Setting default log level") on every start.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
# pyspark's JVM entry point logs as Spark's shell: without a level of its own, Spark
# prints "Setting default log level to WARN" and lets WARN lines through again
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
# a failed task reaches the driver as the job's exception, which calcore turns into one
# message: the executor's own ERROR line with the worker's whole traceback is a repeat
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
"""


class SparkSetupError(CalcoreError):
    """Spark cannot run calcore here: pyspark or Java missing, or workers that differ
    from the driver (another Python, another calcore). The message says how to fix it."""


def require_pyspark():
    """The ``pyspark`` module, or an error saying how to install it.

    Returns
    -------
    module
        ``pyspark``, version 4 or later.

    Raises
    ------
    SparkSetupError
        pyspark cannot be imported, or is older than 4.0.

    Examples
    --------
    >>> from calcore.spark import require_pyspark
    >>> require_pyspark().__version__ >= "4"  # doctest: +SKIP
    True
    """
    try:
        import pyspark
    except ImportError as exc:
        raise SparkSetupError(
            f"calcore on Spark needs pyspark 4 or later, which cannot be imported ({exc}). "
            f"Install it with: {INSTALL_SPARK}"
        ) from None
    got = tuple(int(p) for p in re.findall(r"\d+", pyspark.__version__)[:2])
    if got < MIN_PYSPARK:
        raise SparkSetupError(
            f"calcore on Spark needs pyspark 4 or later; this Python has pyspark "
            f"{pyspark.__version__}. Upgrade it with: {INSTALL_SPARK} --upgrade"
        )
    return pyspark


def find_java(environ=None) -> tuple[str, int]:
    """The ``java`` Spark would start and its major version.

    Spark's launcher takes ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set, else the
    first ``java`` on ``PATH``: so does this.

    Parameters
    ----------
    environ : mapping, optional
        The environment to look in (default: ``os.environ``).

    Returns
    -------
    (str, int)
        The executable and its major version (17, 21).

    Raises
    ------
    SparkSetupError
        No java, one that does not run, or one older than Java 17; the message says how
        to install Java 17.

    Examples
    --------
    >>> from calcore.spark import find_java
    >>> path, major = find_java()  # doctest: +SKIP
    >>> major >= 17  # doctest: +SKIP
    True
    """
    env = os.environ if environ is None else environ
    home = env.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        where = f"JAVA_HOME={home}"
        if not os.access(java, os.X_OK):
            raise SparkSetupError(
                f"Spark needs Java {MIN_JAVA} or 21, and {where} holds no bin/java. Point "
                f"JAVA_HOME at a Java installation, or unset it and install Java with: "
                f"{INSTALL_JAVA}"
            )
    else:
        java = shutil.which("java", path=env.get("PATH", os.defpath))
        where = "PATH"
        if java is None:
            raise SparkSetupError(
                f"Spark needs Java {MIN_JAVA} or 21, and there is no java on PATH (nor "
                f"JAVA_HOME). Install it with: {INSTALL_JAVA} (Debian, Ubuntu; as root)"
            )
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as exc:
        raise SparkSetupError(
            f"{java} (from {where}) does not run ({exc}). Install Java with: {INSTALL_JAVA}"
        ) from None
    text = out.stderr + out.stdout
    found = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if out.returncode != 0 or found is None:
        first = " ".join(text.split())[:200]
        raise SparkSetupError(
            f"{java} (from {where}) does not run ({first or f'exit {out.returncode}'}). "
            f"Install Java with: {INSTALL_JAVA}"
        )
    major = int(found.group(1))
    if major == 1:  # "1.8.0_392": Java 8
        major = int(found.group(2) or 0)
    if major < MIN_JAVA:
        raise SparkSetupError(
            f"Spark 4 needs Java {MIN_JAVA} or 21; {java} (from {where}) is Java {major}. "
            f"Install Java 17 with: {INSTALL_JAVA}, and set JAVA_HOME to it."
        )
    return java, major


def quiet_log4j2_file() -> str:
    """A log4j2 properties file that lets only errors through (written once per user
    into the temporary directory; Spark reads it when its JVM starts)."""
    path = os.path.join(tempfile.gettempdir(), f"calcore-spark-log4j2-{os.getuid()}.properties")
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == _LOG4J2:
                return path
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(_LOG4J2)
    os.replace(tmp, path)  # atomic: another process may read it at the same time
    return path


def _set_environment() -> None:
    # Workers must run this interpreter (with calcore, numpy, pyarrow), not whatever
    # "python3" is on PATH; a user's own choice wins.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Spark otherwise resolves the host name, warns when it maps to loopback, and may
    # bind a public interface: a local session stays on loopback.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def session(
    *,
    master: str | None = None,
    remote: str | None = None,
    app_name: str = "calcore",
    config: dict | None = None,
    ui: bool = False,
    quiet: bool = True,
    check: bool = True,
):
    """A Spark session set up to run calcore: the workers' Python, quiet logs, checked.

    Parameters
    ----------
    master : str, optional
        A classic session's master: ``"local[2]"``, ``"local[*]"`` (the default when
        neither ``master`` nor ``remote`` is given), ``"spark://host:7077"``, ``"yarn"``.
    remote : str, optional
        A Spark Connect server: ``"sc://host:15002"`` (or ``"local[2]"``, a local Connect
        server). Connect refuses start-up settings made by a client, so ``quiet``, ``ui``
        and the JVM options are left to the server.
    app_name : str
        The application's name in Spark's UI and logs.
    config : dict, optional
        More Spark settings (``{"spark.sql.shuffle.partitions": "4"}``); they win over
        calcore's.
    ui : bool
        Start Spark's web UI (off by default: tests and scripts do not need a port).
    quiet : bool
        Only errors on the terminal: ``spark.log.level=ERROR``, no progress bars, and a
        log4j2 file (:func:`quiet_log4j2_file`) through ``spark.driver.extraJavaOptions``,
        unless ``config`` sets those options itself.
    check : bool
        Run :func:`check_workers` (one tiny job) before returning.

    Returns
    -------
    pyspark.sql.SparkSession
        ``getOrCreate``'s session: an active session of this process is reused (its JVM
        settings were fixed when it started).

    Raises
    ------
    SparkSetupError
        pyspark missing (with the install command), no usable Java for a local or
        classic session (with the install command), workers that run another Python or
        another calcore (see :func:`check_workers`).
    CalcoreError
        Both ``master`` and ``remote`` given.

    Notes
    -----
    ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` are set to ``sys.executable`` and
    ``SPARK_LOCAL_IP`` to ``127.0.0.1``, each unless already set.

    Examples
    --------
    >>> import calcore.spark
    >>> spark = calcore.spark.session(master="local[2]")  # doctest: +SKIP
    >>> spark.range(3).count()  # doctest: +SKIP
    3
    """
    if master is not None and remote is not None:
        raise CalcoreError(
            f"master={master!r} and remote={remote!r}: give one (a classic session's master, "
            "or a Spark Connect server), not both."
        )
    require_pyspark()
    _set_environment()
    settings = {}
    if remote is None:
        find_java()  # before pyspark's own "Java gateway process exited" without a reason
        settings["spark.ui.enabled"] = "true" if ui else "false"
        if quiet:
            settings["spark.log.level"] = "ERROR"
            settings["spark.ui.showConsoleProgress"] = "false"
            settings["spark.driver.extraJavaOptions"] = (
                f"-Dlog4j2.configurationFile=file:{quiet_log4j2_file()}"
            )
    settings.update(config or {})
    if quiet:
        # pyspark 4.3 warns on every Arrow map that it does not "fully support" pandas 3
        # (calcore's maps use no pandas): a line per job on the terminal, not a problem
        warnings.filterwarnings(
            "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
        )
    spark = _build(master, remote, app_name, settings)
    if check:
        check_workers(spark)
    return spark


def _build(master, remote, app_name, settings):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if remote is not None:
        _require_connect(remote)
        builder = builder.remote(remote)
    else:
        builder = builder.master(master or "local[*]")
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _require_connect(remote: str) -> None:
    missing = []
    for module, package in (
        ("grpc", "grpcio"),
        ("grpc_status", "grpcio-status"),
        ("google.rpc", "googleapis-common-protos"),
        ("zstandard", "zstandard"),
    ):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise SparkSetupError(
            f"remote={remote!r}: Spark Connect needs {', '.join(missing)}, which cannot be "
            f'imported. Install them with: pip install "pyspark[connect]"'
        )


def check_workers(spark) -> dict:
    """Check that Spark's Python workers run the driver's Python and calcore version.

    One tiny ``mapInArrow`` job (a row per default partition) reports each worker's
    ``sys.version_info[:2]`` and ``calcore.__version__``. A fitted calibrator or a
    statistics state travels between driver and workers as calcore's own formats, so
    both ends must be the same calcore; and pyspark refuses workers on another Python.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        Classic or Connect.

    Returns
    -------
    dict
        ``{"python": "3.11", "calcore": "0.1.0", "executables": [...]}``: what the
        workers run.

    Raises
    ------
    SparkSetupError
        Workers on another Python minor version, without calcore (or without what it
        needs, e.g. pyarrow), or with another calcore version; the message says which
        and how to fix it (``PYSPARK_PYTHON``, installing the same calcore on them).

    Examples
    --------
    >>> import calcore.spark
    >>> spark = calcore.spark.session(master="local[2]", check=False)  # doctest: +SKIP
    >>> calcore.spark.check_workers(spark)["calcore"] == calcore.__version__  # doctest: +SKIP
    True
    """
    from calcore.foundation.version import __version__ as calcore_version
    from calcore.foundation.version import installed_at

    here = ".".join(map(str, sys.version_info[:2]))
    schema = "python string, executable string, calcore string, where string"
    # A closure is pickled by value (cloudpickle), with its imports inside: the job
    # starts even on a worker without calcore, and reports that instead of failing to
    # unpickle a function of calcore's. It reads the worker's calcore where the tasks of
    # every pass read it, calcore.foundation.version; a package called calcore without
    # that module (not this project's, or older than it) is named by its path.
    def worker_facts(batches, unknown=_NO_VERSION_MODULE):
        import sys
        from importlib.util import find_spec

        import pyarrow as pa

        try:
            from calcore.foundation.version import __version__ as version
            from calcore.foundation.version import installed_at

            where = installed_at()
        except ModuleNotFoundError as exc:
            if exc.name in ("calcore.foundation", "calcore.foundation.version"):
                version, where = unknown, find_spec("calcore").origin
            else:  # no calcore, or a calcore without what it needs (e.g. numpy)
                version, where = None, f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a calcore that fails to import: reported, not a crash
            version, where = None, f"{type(exc).__name__}: {exc}"
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict(
            {
                "python": [".".join(map(str, sys.version_info[:2]))],
                "executable": [sys.executable],
                "calcore": [version],
                "where": [where],
            }
        )

    try:
        rows = spark.range(0, 2, numPartitions=2).mapInArrow(worker_facts, schema).toArrow()
    except Exception as exc:  # pyspark's errors have no common base across classic/Connect
        raise _worker_failure(exc, here) from None
    got = rows.to_pylist()
    pythons = sorted({r["python"] for r in got})
    executables = sorted({r["executable"] for r in got})
    missing = [r for r in got if r["calcore"] is None]
    if missing:
        raise SparkSetupError(
            f"Spark's Python workers ({', '.join(executables)}) cannot import calcore "
            f"({missing[0]['where']}). Install the driver's calcore ({calcore_version}) "
            f"on every worker, or set PYSPARK_PYTHON to an interpreter that has it."
        )
    others = sorted({r["calcore"] for r in got} - {calcore_version})
    if others:
        where = sorted({r["where"] for r in got if r["calcore"] in others})
        if _NO_VERSION_MODULE in others:  # another package, or older than the version module
            others = ["of another project or release (it has no calcore.foundation.version)"]
        raise SparkSetupError(
            f"Spark's Python workers run calcore {', '.join(others)} ({where[0]}), the "
            f"driver calcore {calcore_version} ({installed_at()}): a fitted "
            f"calibrator or a statistics state is read only by the calcore that wrote it. "
            f"Install calcore {calcore_version} on the workers."
        )
    if pythons != [here]:  # pyspark refuses it first; kept for the record
        raise SparkSetupError(
            f"Spark's Python workers run Python {', '.join(pythons)}, the driver {here}: "
            f"set PYSPARK_PYTHON to a Python {here} with calcore."
        )
    return {"python": here, "calcore": calcore_version, "executables": executables}


def _worker_failure(exc: Exception, here: str) -> SparkSetupError:
    text = str(exc)
    mismatch = re.search(
        r"has different version \(?([\d., ]+)\)? than that in driver ([\d.]+)", text
    )
    if "PYTHON_VERSION_MISMATCH" in text or mismatch:
        got = mismatch.group(1).replace(", ", ".") if mismatch else "another version"
        return SparkSetupError(
            f"Spark's Python workers run Python {got}, the driver Python {here}: pyspark "
            f"runs no job across versions. Set PYSPARK_PYTHON (for the workers) to a Python "
            f"{here} with calcore installed, e.g. {sys.executable}."
        )
    missing = re.search(r"No module named '([\w.]+)'", text)
    if missing:
        return SparkSetupError(
            f"Spark's Python workers cannot import {missing.group(1)!r}: their Python "
            f"({os.environ.get('PYSPARK_PYTHON', 'python3')}) lacks what calcore needs. "
            f"Install calibration-lens (numpy, pyarrow, ...) there, or set PYSPARK_PYTHON "
            f"to {sys.executable}."
        )
    lines = [line for line in text.splitlines() if line.strip()]
    short = " ".join(lines[-1].split())[:300] if lines else type(exc).__name__
    return SparkSetupError(
        f"Spark could not run a one-row Python job, so calcore cannot run on this session: "
        f"{short}"
    )
