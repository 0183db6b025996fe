"""The import structure of calcore is checked, not only described.

Data flows one way (source -> predictions or batches -> statistics -> diagnostics ->
figures -> page), so a module may import only from its own package or the packages of
lower layers. One layer per package (folder), lowest first:

0. ``calcore.foundation`` -- on plain arrays and numbers: errors, validation, the helpers of
   renamed names (deprecation), softmax,
   limits (counts and the decoded-size budget), threads (one worker policy), the constants
   chosen by measuring (tuning), binning schemes, the kernel density estimators, keyed
   random numbers, exact ranks over several passes;
1. ``calcore.predictions`` -- ``Predictions``, their metadata columns, slices (in memory
   and over batches), multiclass-to-binary views;
2. ``calcore.calibrators`` -- the recalibration maps, saved and loaded;
3. ``calcore.io`` -- sources: readers, streams, samples, writers;
4. ``calcore.statistics`` -- mergeable sums: bin statistics, per-row scores, the engine;
5. ``calcore.metrics`` -- metric functions and the metric registry;
6. ``calcore.diagnostics`` -- reliability diagrams, consistency bands, validity, the bin
   sweep;
7. ``calcore.simulate`` -- simulated predictions with a known truth;
8. ``calcore.evaluation`` -- ``evaluate`` (report), slices, protocols built on reports and
   calibrators (compare, learning curves, validity);
9. ``calcore.spark`` -- calcore on Apache Spark (pyspark is imported only when a function
   is called);
10. ``calcore.cli`` -- the command line, its gates and the JSON schemas of its output;
11. ``calcore`` -- the package's public map (``calcore/__init__.py``), and the old paths of
    moved modules (``calcore/_deprecated_paths.py``).

Every import counts, including those inside functions (lazy imports are for speed, not
for hiding a dependency), and no import circle joins calcore modules, with no exception:
even the functions of ``calcore.spark`` that check a Spark worker's calcore read its
version from ``calcore.foundation.version``, not from the package's map. calcore never imports
streamlit or plotly; modules do not import another module's private (underscore) names;
``import calcore`` loads neither pandas nor pyarrow (they load when a file is read) nor
scipy.stats (slow to import; the slices' q-values load it). A
module that moved keeps its old path for one release (``calcore._deprecated_paths``):
nothing of calcore's, the dashboard's or the benchmarks' imports it there, and calcore's and
the dashboard's text (docstrings, comments) names the new path.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from calcore._deprecated_paths import MOVED

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "calcore"

LAYERS = {
    "calcore.foundation": 0,
    "calcore.predictions": 1,
    "calcore.calibrators": 2,
    "calcore.io": 3,
    "calcore.statistics": 4,
    "calcore.metrics": 5,
    "calcore.diagnostics": 6,
    "calcore.simulate": 7,
    "calcore.evaluation": 8,
    "calcore.spark": 9,
    "calcore.cli": 10,
    "calcore": 11,
}

#: The only modules at calcore's top level besides its packages.
TOP_LEVEL_MODULES = {"calcore", "calcore._deprecated_paths"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    name = ".".join(parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    """The layer of ``module``: that of the longest entry of :data:`LAYERS` it is in."""
    best = max((prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")),
               key=len)  # fmt: skip
    return LAYERS[best]


def imports(path: Path, module: str | None = None):
    """``(imported module, imported names, line)`` of every import in a file, at any depth
    (relative imports resolved against ``module``, the file's own module name)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ""
            if node.level:
                if module is None:  # a relative import outside calcore
                    continue
                base = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                name = f"{base}.{name}" if name else base
            yield name, tuple(a.name for a in node.names), node.lineno


def _targets(module: str, names: tuple[str, ...]) -> list[str]:
    """The calcore modules an import statement loads (``from pkg import submodule`` too;
    the package a submodule is in is loaded first, but only the package named counts)."""
    found = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES]
    if len(found) < len(names) or not names:
        found.append(module)
    return [m for m in found if m in MODULES]


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, list[str]]]:
    """``{module: {imported module: ["file:line", ...]}}`` of calcore's own imports."""
    graph: dict[str, dict[str, list[str]]] = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        for imported, names, line in imports(path, module):
            if imported != "calcore" and not imported.startswith("calcore."):
                continue
            for target in _targets(imported, names):
                if target != module:
                    where = f"{path.relative_to(ROOT)}:{line}"
                    edges.setdefault(target, []).append(where)
    return graph


def arrows_up(graph, layer_of) -> list[str]:
    """Every import of a module from a higher layer than its own, ``"file:line: a -> b"``."""
    return [
        f"{where}: {module} ({layer_of(module)}) -> {target} ({layer_of(target)})"
        for module, edges in sorted(graph.items())
        for target, wheres in sorted(edges.items())
        if layer_of(target) > layer_of(module)
        for where in wheres
    ]


def circles(graph) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one
    module (Tarjan's algorithm, iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def _described(circle: list[str], graph) -> str:
    """A circle with the imports that tie it: ``a -> b (file:line)`` for each."""
    ties = [
        f"  {a} -> {b} ({', '.join(graph[a][b])})" for a in circle for b in circle if b in graph[a]
    ]
    return " <-> ".join(circle) + "\n" + "\n".join(ties)


GRAPH = import_graph(MODULES)


def test_every_module_has_a_layer_and_every_layer_is_a_package():
    for module in MODULES:
        layer(module)  # raises (max of nothing) for a module outside the table
    for name in LAYERS:
        assert (ROOT / name.replace(".", "/") / "__init__.py").is_file(), f"{name}: no package"
    loose = {m for m in MODULES if m.count(".") == 1 and m not in LAYERS} | {"calcore"}
    assert loose == TOP_LEVEL_MODULES, (
        f"modules at calcore's top level: {sorted(loose - TOP_LEVEL_MODULES)}; "
        "put each in the package of its layer"
    )


def test_no_module_imports_a_higher_layer():
    wrong = arrows_up(GRAPH, layer)
    assert not wrong, "\n".join(wrong)


def test_no_import_circles_between_calcore_modules():
    found = circles(GRAPH)
    assert not found, "\n".join(_described(c, GRAPH) for c in found)


def test_the_checks_find_a_planted_arrow_up_and_a_planted_circle():
    """The two checks above, given a small graph with one import from a higher layer and
    one circle, report both: the layering test cannot pass by checking nothing."""
    planted = {
        "calcore.foundation.a": {"calcore.io.b": ["a.py:3"]},  # up: 0 -> 3
        "calcore.io.b": {"calcore.io.c": ["b.py:5"]},
        "calcore.io.c": {"calcore.io.d": ["c.py:7"]},
        "calcore.io.d": {"calcore.io.b": ["d.py:9"], "calcore.foundation.a": ["d.py:10"]},
    }
    assert arrows_up(planted, layer) == ["a.py:3: calcore.foundation.a (0) -> calcore.io.b (3)"]
    # b -> c -> d -> b is one circle; a -> b -> ... -> d -> a joins it
    assert circles(planted) == [sorted(planted)]
    del planted["calcore.io.d"]["calcore.foundation.a"]
    assert circles(planted) == [["calcore.io.b", "calcore.io.c", "calcore.io.d"]]
    assert "b.py:5" in _described(circles(planted)[0], planted)
    # and the real graph is read: the public map imports every layer
    assert {layer(m) for m in GRAPH["calcore"]} >= set(range(10))


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
    # nor scipy.stats: a third of `import calcore` (0.4 s), for three functions that
    # scipy.special computes alike (the slices' q-values import it when they need it)
    code = (
        "import sys, calcore\n"
        "heavy = sorted(m for m in ('pandas', 'pyarrow', 'streamlit', 'plotly', 'scipy.stats') "
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


# -- the old paths of moved modules ---------------------------------------------------


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_gives_the_module_at_its_new_path(old):
    """No file is left at an old path (it would be found instead, and git would see the
    move as a rewrite), and importing it gives the new module itself, with a warning."""
    new = MOVED[old]
    assert new in MODULES and old not in MODULES
    assert not (ROOT / (old.replace(".", "/") + ".py")).exists()
    module = importlib.import_module(new)
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert importlib.import_module(old) is module
    assert [w.category for w in caught] == [DeprecationWarning]
    assert f"{old} has moved to {new}" in str(caught[0].message)
    assert module.__spec__.name == new  # the module keeps its own spec


def test_from_calcore_import_an_old_top_level_module_still_works():
    sys.modules.pop("calcore.kde", None)
    vars(sys.modules["calcore"]).pop("kde", None)
    with pytest.warns(DeprecationWarning, match="calcore.kde has moved"):
        from calcore import kde
    assert kde.kde_ece is importlib.import_module("calcore.foundation.kernel_density").kde_ece
    with pytest.raises(AttributeError):
        importlib.import_module("calcore").no_such_module  # noqa: B018


def test_nothing_imports_a_module_at_its_old_path():
    """calcore, the dashboard and the benchmarks import the new paths (tests too, but for
    the checks of the old paths themselves, above)."""
    wrong = []
    folders = ("calcore", "dashboard", "benchmarks", "tests")
    for path in [p for folder in folders for p in (ROOT / folder).rglob("*.py")]:
        if path == Path(__file__).resolve():
            continue
        module = _module_name(path) if path.is_relative_to(PACKAGE) else None
        for imported, names, line in imports(path, module):
            loaded = {imported} | {f"{imported}.{n}" for n in names}
            for old in sorted(loaded & MOVED.keys()):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {old} (now {MOVED[old]})")
    assert not wrong, "\n".join(wrong)


#: An old path as a whole dotted name: not the tail of a longer one (``x.calcore.kde``)
#: and not the start of a longer word (``calcore.metrics.kde`` in ``calcore.metrics.kde_ece``).
#: ``calcore.kde.kde_ece`` still counts (a name in the moved module, at its old path): no
#: old path is a package that a module at a new path could be in (checked below).
_OLD_PATHS = "|".join(re.escape(old) for old in sorted(MOVED, key=len, reverse=True))
OLD_PATH_IN_TEXT = re.compile(rf"(?<![\w.])({_OLD_PATHS})(?!\w)")


def old_paths_in_text(text: str) -> list[str]:
    """The old paths of :data:`MOVED` named in ``text``, in order."""
    return OLD_PATH_IN_TEXT.findall(text)


def test_the_old_path_pattern_matches_whole_dotted_names_only():
    assert old_paths_in_text("see :data:`calcore.kde.KDE_MIN_EFFECTIVE_ROWS`.") == ["calcore.kde"]
    assert old_paths_in_text("from calcore.metrics.kde import x; calcore.io._budget") == [
        "calcore.metrics.kde",
        "calcore.io._budget",
    ]
    assert old_paths_in_text("calcore.metrics.kde_ece, calcore.slicing_batches") == [
        "calcore.slicing_batches"
    ]
    assert (
        old_paths_in_text("calcore.foundation.kernel_density, mycalcore.kde, a.calcore.kde") == []
    )
    assert not any(module.startswith(old + ".") for old in MOVED for module in MODULES)


def test_no_docstring_or_comment_names_a_module_at_its_old_path():
    """calcore's and the dashboard's text (docstrings, comments, messages) names each moved
    module at its new path; only the table of old paths names the old ones."""
    wrong = []
    for path in [p for folder in ("calcore", "dashboard") for p in (ROOT / folder).rglob("*.py")]:
        if path == PACKAGE / "_deprecated_paths.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for old in old_paths_in_text(line):
                wrong.append(f"{path.relative_to(ROOT)}:{number}: {old} (now {MOVED[old]})")
    assert not wrong, "\n".join(wrong)
