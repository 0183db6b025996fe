"""Build hook: the dashboard's runtime files that live outside ``dashboard/`` go into the wheel.

Everything else about the package is declared in ``pyproject.toml``; this file only extends
``build_py``. The bundled samples stay in the repository's ``assets/`` (the tests, the
``calcore`` examples and ``assets/build_samples.py`` read them there), and the Streamlit
settings stay in ``.streamlit/config.toml`` (what ``streamlit run`` reads in a checkout).
A wheel has no repository around it, so the build copies them into the package:

- ``assets/*.npz`` and ``assets/README.md`` (the samples' sources and licences) to
  ``dashboard/assets/``, where :mod:`dashboard.calibration.samples` looks first;
- ``.streamlit/config.toml`` to ``dashboard/assets/streamlit_config.toml``, which the
  ``calibration-lens`` launcher (:mod:`dashboard.launch`) passes to Streamlit as flags.

``MANIFEST.in`` puts the same files into the sdist, so a wheel built from it has them too.
An editable install copies nothing: the package then runs from the checkout and finds the
files where they are.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent

#: (source relative to the project root, destination relative to the build's package root)
RUNTIME_FILES = [
    *(
        (f"assets/{p.name}", f"dashboard/assets/{p.name}")
        for p in sorted((ROOT / "assets").glob("*.npz"))
    ),
    ("assets/README.md", "dashboard/assets/README.md"),
    (".streamlit/config.toml", "dashboard/assets/streamlit_config.toml"),
]


class BuildPyWithRuntimeFiles(build_py):
    """``build_py`` that also copies :data:`RUNTIME_FILES` into the build directory."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the checkout itself is imported: the files are found in place
        if not any(dst.endswith(".npz") for _, dst in RUNTIME_FILES):
            # a source tree without the samples would build a wheel whose app cannot open
            raise RuntimeError(f"no bundled samples (assets/*.npz) under {ROOT}")
        for src, dst in RUNTIME_FILES:
            target = Path(self.build_lib) / dst
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / src, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        # Listed so that install/bdist_wheel record them (RECORD) like any package file.
        copied = (
            []
            if getattr(self, "editable_mode", False)
            else [str(Path(self.build_lib) / dst) for _, dst in RUNTIME_FILES]
        )
        return [*super().get_outputs(include_bytecode), *copied]


setup(cmdclass={"build_py": BuildPyWithRuntimeFiles})
