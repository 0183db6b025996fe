"""The import structure of calcore is checked, not only described.

Data flows one way (source -> predictions or batches -> statistics -> diagnostics ->
figures -> page), so a module may import only from its own layer or the layers below.
The layers, lowest first (the longest matching prefix decides a module's layer):

0. foundations on plain arrays: errors, validation, softmax, binning schemes, the KDE
   estimators, the keyed random numbers of the bootstrap, the exact ranks found over
   several passes (equal-mass bins and quantile ranges of streams) or in memory, the
   split of numpy work between threads;
1. ``Predictions``;
2. views of predictions that need nothing else: multiclass-to-binary views, per-row
   scoring terms, the bootstrap's resampling helpers, the calibrators;
3. sources: readers, streams, writers;
4. the statistics engine;
5. diagnostics: bin statistics, metric functions, reliability diagrams, consistency,
   validity, the bin sweep, simulated truths;
6. the metric registry;
7. ``evaluate`` (report);
8. protocols built on reports and calibrators (compare, learning curves);
9. the command line, the package's public map, and ``calcore.spark`` (calcore on Apache
   Spark: it checks the workers against the package's ``__version__``; pyspark is
   imported only when a function is called).

Every import counts, including those inside functions (lazy imports are for speed, not
for hiding a dependency). calcore never imports streamlit or plotly; modules do not
import another module's private (underscore) names; ``import calcore`` loads neither
pandas nor pyarrow (they load when a file is read).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "calcore"

LAYERS = {
    "calcore._errors": 0,
    "calcore._softmax": 0,
    "calcore._validation": 0,
    "calcore._limits": 0,
    "calcore.foundation": 0,
    "calcore.binning": 0,
    "calcore.kde": 0,
    "calcore.statistics.poisson": 0,
    "calcore.statistics.quantiles": 0,
    "calcore.statistics.selection": 0,
    "calcore.metadata": 0,
    "calcore.slicing": 1,
    "calcore.slicing_batches": 1,
    "calcore.predictions": 1,
    "calcore.reductions": 2,
    "calcore.metrics.scoring": 2,
    "calcore.evaluation.bootstrap": 2,
    "calcore.evaluation.intervals": 2,
    "calcore.calibrators": 2,
    "calcore.io": 3,
    "calcore.export": 3,
    "calcore.statistics": 4,
    "calcore.metrics": 5,
    "calcore.diagnostics": 5,
    "calcore.simulate": 5,
    "calcore.metrics.registry": 6,
    "calcore.evaluation.report_statistics": 7,
    "calcore.evaluation.calibration_test": 7,
    "calcore.evaluation.evaluator": 7,
    "calcore.evaluation.binary_rows": 7,
    "calcore.evaluation.slice_truth": 7,
    "calcore.evaluation.slice_ranking": 7,
    "calcore.evaluation.slices": 7,
    "calcore.evaluation.slices_stream": 7,
    "calcore.evaluation": 8,
    "calcore.spark": 9,
    "calcore.cli": 9,
    "calcore": 9,
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    name = ".".join(parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    best = max((prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")),
               key=len)  # fmt: skip
    return LAYERS[best]


def imports(path: Path):
    """``(imported module, imported names, line)`` of every import in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, tuple(a.name for a in node.names), node.lineno


def _targets(module: str, names: tuple[str, ...]) -> list[str]:
    """The calcore modules an import statement loads (``from pkg import submodule`` too)."""
    found = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES]
    if len(found) < len(names) or not names:
        found.append(module)
    return [m for m in found if m in MODULES]


def test_every_module_has_a_layer():
    for module in MODULES:
        layer(module)  # raises (max of nothing) for a module outside the table


def test_no_module_imports_a_higher_layer():
    wrong = []
    for module, path in MODULES.items():
        for imported, names, line in imports(path):
            if not imported.startswith("calcore"):
                continue
            for target in _targets(imported, names):
                if layer(target) > layer(module):
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: {module} -> {target}")
    assert not wrong, "\n".join(wrong)


def test_calcore_never_imports_streamlit_or_plotly():
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {imported}"
        for path in MODULES.values()
        for imported, _, line in imports(path)
        if imported.split(".")[0] in ("streamlit", "plotly", "dashboard")
    ]
    assert not wrong, wrong


def test_no_module_imports_private_names_of_another():
    wrong = []
    for path in MODULES.values():
        for imported, names, line in imports(path):
            if not imported.startswith("calcore"):
                continue
            for name in names:
                private = name.startswith("_") and not name.startswith("__")
                if private and f"{imported}.{name}" not in MODULES:  # a private module is fine
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: {name} from {imported}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.timeout(60)
def test_import_calcore_loads_neither_pandas_nor_pyarrow():
    code = (
        "import sys, calcore\n"
        "heavy = sorted(m for m in ('pandas', 'pyarrow', 'streamlit', 'plotly') "
        "if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_diagnostics_take_their_bin_sums_from_the_statistics_engine():
    """One implementation of binned sums (issue 11): a diagnostic bins rows through
    ``calcore.statistics`` (``CellSums``, ``replicate_sums``), never with its own
    ``np.bincount`` / ``np.add.reduceat`` / ``np.histogram`` over rows."""
    own = []
    for path in sorted((PACKAGE / "diagnostics").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in (
                "bincount",
                "reduceat",
                "histogram",
            ):
                own.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.attr}")
    assert not own, "\n".join(own)
