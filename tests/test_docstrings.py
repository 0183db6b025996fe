"""The examples in calcore's docstrings run, and every public name has one.

Each example is a doctest: it is executed and its printed output compared, so an
example that drifts from the code fails here. The public names are those of
``calcore.__all__`` (and the sub-packages' maps).
"""

from __future__ import annotations

import doctest
import inspect

import numpy as np
import pytest

import calcore
import calcore.io
import calcore.statistics

PUBLIC = {
    f"{module.__name__}.{name}": getattr(module, name)
    for module in (calcore, calcore.io, calcore.statistics)
    for name in module.__all__
    if inspect.isfunction(getattr(module, name)) or inspect.isclass(getattr(module, name))
}


def _examples(obj):
    """The doctests of an object: its own docstring and its public methods'."""
    finder = doctest.DocTestFinder(recurse=inspect.isclass(obj), exclude_empty=True)
    module = inspect.getmodule(obj)
    globs = {"np": np, "calcore": calcore, **vars(module)} if module else {"np": np}
    return [t for t in finder.find(obj, getattr(obj, "__name__", None), globs=globs) if t.examples]


WITH_EXAMPLES = {name: obj for name, obj in PUBLIC.items() if _examples(obj)}


@pytest.mark.parametrize("name", sorted(WITH_EXAMPLES))
def test_docstring_examples_run(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in _examples(WITH_EXAMPLES[name]):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_every_public_name_has_an_example():
    missing = sorted(set(PUBLIC) - set(WITH_EXAMPLES))
    assert not missing, missing


def test_the_package_map_lists_all_of_the_public_api_in_order():
    """``calcore.__doc__`` is a sectioned map (as ``scipy.stats``'s); ``__all__`` follows it."""
    import re

    listed = re.findall(r"^   (\w+)\s+-- ", calcore.__doc__, flags=re.MULTILINE)
    assert listed == list(calcore.__all__)
