"""calcore.spark.session and its checks: real subprocesses and a real local[2] session."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import calcore
import calcore.spark
from calcore.spark import INSTALL_JAVA, INSTALL_SPARK, SparkSetupError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Hides pyspark from a fresh interpreter, as if it were not installed.
BLOCK_PYSPARK = textwrap.dedent(
    """
    import sys
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name == "pyspark" or name.startswith("pyspark."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, Block())
    """
)


def _python(code: str, env=None, timeout=120):
    full = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=timeout
    )


@pytest.mark.needs_no_spark
def test_import_calcore_and_calcore_spark_load_no_pyspark():
    out = _python(
        "import sys, calcore, calcore.spark, calcore.cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.needs_no_spark
def test_without_pyspark_the_messages_give_the_install_command(tmp_path):
    """In one fresh process where pyspark cannot import: session() raises the install
    command, and calcore apply --engine spark exits 2 with it in one line, writing nothing."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    saved = tmp_path / "ts.json"
    z = [[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    preds = calcore.Predictions.from_logits(z, [0, 1, 1], ["a", "b"])  # the file's classes
    saved.write_text(json.dumps(calcore.make_calibrator("ts").fit(preds).to_dict()))
    data = tmp_path / "p.parquet"
    pq.write_table(pa.table({"label": ["a", "b"], "p_a": [0.6, 0.3], "p_b": [0.4, 0.7]}), data)
    code = BLOCK_PYSPARK + (
        "import calcore.spark\n"
        "try:\n    calcore.spark.session(master='local[1]')\n"
        "except calcore.spark.SparkSetupError as err:\n    print(err)\n"
        "from calcore.cli import main\n"
        f"sys.exit(main(['apply', {str(saved)!r}, {str(data)!r}, '--engine', 'spark', "
        f"'--out', {str(tmp_path / 'out')!r}]))\n"
    )
    out = _python(code, env={"CALCORE_DEBUG": ""})
    assert INSTALL_SPARK in out.stdout and "pyspark 4 or later" in out.stdout
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert INSTALL_SPARK in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.needs_no_spark
def test_no_java_on_path_nor_java_home(tmp_path):
    with pytest.raises(SparkSetupError) as err:
        calcore.spark.find_java({"PATH": str(tmp_path)})
    assert INSTALL_JAVA in str(err.value)
    assert "no java on PATH" in str(err.value)


@pytest.mark.needs_no_spark
def test_java_home_without_java(tmp_path):
    with pytest.raises(SparkSetupError) as err:
        calcore.spark.find_java({"JAVA_HOME": str(tmp_path), "PATH": os.environ["PATH"]})
    assert f"JAVA_HOME={tmp_path} holds no bin/java" in str(err.value)
    assert INSTALL_JAVA in str(err.value)


@pytest.mark.needs_no_spark
def test_java_8_is_refused_with_its_version(tmp_path):
    (tmp_path / "bin").mkdir()
    java = tmp_path / "bin" / "java"  # prints what a Java 8 prints, on stderr
    java.write_text('#!/bin/sh\necho \'openjdk version "1.8.0_392"\' >&2\n')
    java.chmod(0o755)
    with pytest.raises(SparkSetupError) as err:
        calcore.spark.find_java({"JAVA_HOME": str(tmp_path)})
    assert "is Java 8" in str(err.value) and INSTALL_JAVA in str(err.value)


def test_session_without_java_fails_before_starting_a_jvm(tmp_path):
    """The real session() in a fresh process with JAVA_HOME an empty folder and no java
    on PATH: calcore's message, not pyspark's "Java gateway process exited"."""
    code = (
        "import calcore.spark\n"
        "try:\n    calcore.spark.session(master='local[1]')\n"
        "except calcore.spark.SparkSetupError as err:\n    print(err)\n"
    )
    out = _python(code, env={"JAVA_HOME": str(tmp_path), "PATH": os.path.dirname(sys.executable)})
    assert out.returncode == 0, out.stderr
    assert INSTALL_JAVA in out.stdout and "JAVA_HOME" in out.stdout
    assert "gateway" not in out.stdout + out.stderr


def test_the_session_sets_the_workers_python_and_loopback(spark):
    assert os.environ["PYSPARK_PYTHON"] == sys.executable or "PYSPARK_PYTHON" in os.environ
    assert os.environ["SPARK_LOCAL_IP"]
    facts = calcore.spark.check_workers(spark)
    assert facts["calcore"] == calcore.__version__
    assert facts["python"] == "%d.%d" % sys.version_info[:2]
    assert spark.conf.get("spark.ui.enabled") == "false"


def _check_with_workers_importing(spark, folder):
    """check_workers's error with ``folder`` first on the workers' PYTHONPATH (a real
    worker importing a real other package); the session's environment is restored."""
    env = spark.sparkContext.environment
    before = dict(env)
    env["PYTHONPATH"] = str(folder)  # ahead of the driver's on the workers
    env["PYTHONSAFEPATH"] = "1"  # and ahead of the working directory (this checkout)
    try:
        with pytest.raises(SparkSetupError) as err:
            calcore.spark.check_workers(spark)
    finally:
        env.clear()
        env.update(before)
    calcore.spark.check_workers(spark)  # the session is fine again
    return str(err.value)


def test_workers_with_another_calcore_version_are_named(spark, tmp_path):
    """The workers import a calcore 0.0.1 (its version where every calcore keeps it,
    calcore.foundation.version): the check names both versions."""
    fake = tmp_path / "old" / "calcore"
    (fake / "foundation").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "foundation" / "__init__.py").write_text("")
    (fake / "foundation" / "version.py").write_text(
        '__version__ = "0.0.1"\n\ndef installed_at():\n    return "/elsewhere/calcore"\n'
    )
    message = _check_with_workers_importing(spark, tmp_path / "old")
    assert "calcore 0.0.1 (/elsewhere/calcore)" in message
    assert f"driver calcore {calcore.__version__}" in message
    assert f"Install calcore {calcore.__version__} on the workers" in message


def test_workers_with_a_calcore_without_the_version_module_are_named(spark, tmp_path):
    """A calcore without calcore.foundation.version (another project's, or a release
    older than that module) is named with its path, not called missing. It is a single
    module, so that an editable install's finder cannot lend it this checkout's
    submodules."""
    fake = tmp_path / "other" / "calcore.py"
    fake.parent.mkdir(parents=True)
    fake.write_text('__version__ = "9.9"\n')
    message = _check_with_workers_importing(spark, fake.parent)
    assert "calcore of another project or release" in message
    assert str(fake) in message
    assert "cannot import calcore" not in message
    assert f"Install calcore {calcore.__version__} on the workers" in message


@pytest.mark.skipif(not os.access("/usr/bin/python3", os.X_OK), reason="no /usr/bin/python3")
def test_workers_on_a_python_without_calcore_s_needs_are_named(spark):
    """Debian's /usr/bin/python3 has neither pyarrow nor calcore: the workers' missing
    module is named with how to fix it."""
    probe = subprocess.run(["/usr/bin/python3", "-c", "import pyarrow"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("/usr/bin/python3 has pyarrow here")
    sc = spark.sparkContext
    before = sc.pythonExec
    sc.pythonExec = "/usr/bin/python3"
    try:
        with pytest.raises(SparkSetupError) as err:
            calcore.spark.check_workers(spark)
    finally:
        sc.pythonExec = before
    assert "cannot import" in str(err.value) and "PYSPARK_PYTHON" in str(err.value)


def test_the_terminal_shows_no_jvm_log_lines(spark, jvm_stderr):
    """What the session's JVM and Python workers write to stderr during a job with a
    Python map, and during a job whose task fails: nothing (no log4j WARN/INFO/ERROR
    line, no progress bar, no Python warning); the failure reaches the caller as the
    exception."""
    def failing(batches):  # nested: pickled by value (the workers cannot import tests)
        from calcore.foundation.errors import CalcoreError

        for _ in batches:
            raise CalcoreError("a bad row, on purpose")
        yield from ()

    before = os.path.getsize(jvm_stderr)
    assert spark.range(5).mapInArrow(lambda b: b, "id long").count() == 5
    with pytest.raises(Exception, match="a bad row, on purpose"):
        spark.range(5).mapInArrow(failing, "id long").count()
    with open(jvm_stderr, encoding="utf-8", errors="replace") as fh:
        fh.seek(before)
        lines = [line for line in fh.read().splitlines() if line.strip()]
    assert lines == [], lines[:5]
    with open(jvm_stderr, encoding="utf-8", errors="replace") as fh:
        started = [line for line in fh.read(before).splitlines() if "Setting" in line]
    assert started == [], started  # no "Setting default log level" at start-up either


def _pytest_without_pyspark(env) -> subprocess.Popen:
    """pytest started on one Spark test in a fresh process where pyspark cannot import
    (``communicate()`` waits for it)."""
    target = os.path.join(ROOT, "tests", "spark", "test_positions.py")
    code = BLOCK_PYSPARK + (
        "import pytest\n"
        f"sys.exit(pytest.main([{target!r} + '::test_refusals_name_the_fix', '-q', "
        "'-p', 'no:cacheprovider', '-rs']))\n"
    )
    full = dict(os.environ, PYTHONPATH=ROOT, **env)
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=full,
    )  # fmt: skip


def _finished(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=240)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.needs_no_spark
def test_ci_fails_rather_than_skips_when_spark_is_required_but_missing():
    """make test exports CALCORE_REQUIRE_SPARK=1: a missing pyspark fails the run; outside
    make test the same tests are skipped with the install command as the reason."""
    # the two runs side by side: each is mostly a fresh interpreter importing calcore
    started = [_pytest_without_pyspark({"CALCORE_REQUIRE_SPARK": v}) for v in ("1", "")]
    required, optional = [_finished(p) for p in started]
    assert required.returncode == 1, required.stdout[-2000:]
    assert "CALCORE_REQUIRE_SPARK=1 (make test) but pyspark cannot be imported" in required.stdout
    assert optional.returncode == 0, optional.stdout[-2000:]
    assert "1 skipped" in optional.stdout and INSTALL_SPARK in optional.stdout
