"""Renamed names that keep working for one release, with a :class:`DeprecationWarning`.

calcore's own helpers for its renames (issue 36): a keyword argument
(:func:`renamed_keywords`), a result's attribute (:func:`renamed_attribute`), a function
(:func:`renamed_function`) and a module path (:func:`renamed_module`). Each warning names
the new name, and the old one goes in the next release. Moved modules, whose old path
gives the module at the new path itself, are in ``calcore._deprecated_paths`` (one table,
at the top of the package).
"""

from __future__ import annotations

import functools
import sys
import types
import warnings

__all__ = ["renamed_keywords", "renamed_attribute", "renamed_function", "renamed_module"]


def renamed_keywords(**new_of_old: str):
    """A decorator: the function takes each old keyword as its new one, for one release.

    The one place where a renamed keyword argument is mapped: a call with the old name
    runs as if the new one had been given, with a :class:`DeprecationWarning` naming
    both; a call with both raises TypeError, as Python does for a keyword given twice.

    Parameters
    ----------
    **new_of_old : str
        ``old_name="new_name"`` for each renamed keyword.

    Returns
    -------
    callable
        The decorator (the decorated function keeps its name, docstring and signature).

    Raises
    ------
    TypeError
        From the decorated function, when a keyword and its old name are both given.

    Examples
    --------
    >>> @renamed_keywords(n_bootstrap="n_resamples")
    ... def resamples(*, n_resamples=0):
    ...     return n_resamples
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     resamples(n_bootstrap=50)
    50
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    resamples(n_bootstrap=...) is deprecated: use n_resamples=... (the old name goes in ...
    >>> resamples(n_bootstrap=50, n_resamples=50)
    Traceback (most recent call last):
    ...
    TypeError: resamples() got both n_resamples and its deprecated name n_bootstrap; ...
    """

    def decorate(function):
        # A method is named with its class (``CalibrationTest.verdict``), as Python's own
        # TypeErrors name it; a function defined in a function by its name alone.
        qualified = function.__qualname__
        name = function.__name__ if "<locals>" in qualified else qualified

        @functools.wraps(function)
        def with_old_names(*args, **kwargs):
            for old, new in new_of_old.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{name}() got both {new} and its deprecated name {old}; give {new} only."
                    )
                warnings.warn(
                    f"{name}({old}=...) is deprecated: use {new}=... "
                    "(the old name goes in the next release).",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return with_old_names

    return decorate


def renamed_attribute(new: str, old: str) -> property:
    """A read-only property ``old`` that returns the attribute ``new``, with a warning.

    For the fields of result classes renamed in this release: ``report.n_bootstrap``
    still reads ``report.n_resamples`` for one release.

    Examples
    --------
    >>> class Result:
    ...     n_resamples = 200
    ...     n_bootstrap = renamed_attribute("n_resamples", "n_bootstrap")
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     Result().n_bootstrap
    200
    """

    def read(self):
        warnings.warn(
            f"{type(self).__name__}.{old} is deprecated: read .{new} "
            "(the old name goes in the next release).",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, new)

    return property(read, doc=f"Deprecated name of :attr:`{new}` (one release).")


def renamed_function(old: str, new: str, function):
    """The function ``function`` under its old public name ``old``, for one release: each
    call warns, naming ``new``, then runs ``function`` unchanged.

    Parameters
    ----------
    old, new : str
        The old and new public names, as a user imports them (``"calcore.io.stream.x"``).
    function : callable
        What the old name now calls.

    Returns
    -------
    callable

    Examples
    --------
    >>> import warnings
    >>> old_sum = renamed_function("calcore._old_sum_example", "builtins.sum", sum)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old_sum([1, 2])
    3
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    calcore._old_sum_example is deprecated: use builtins.sum (the old name goes in ...
    """

    @functools.wraps(function)
    def with_old_name(*args, **kwargs):
        warnings.warn(
            f"{old} is deprecated: use {new} (the old name goes in the next release).",
            DeprecationWarning,
            stacklevel=2,
        )
        return function(*args, **kwargs)

    with_old_name.__doc__ = f"Deprecated name of :func:`{new}` (one release)."
    return with_old_name


def renamed_module(
    old: str, module: types.ModuleType, renamed: dict | None = None
) -> types.ModuleType:
    """Keep the module path ``old`` importable as ``module``, with a warning, one release.

    No file holds the old path: it is registered in ``sys.modules``, and its names are
    read from ``module`` (``renamed`` maps an old name of a function to its new one)
    when they are used, each use with a :class:`DeprecationWarning`. Call it from the
    parent package's ``__init__`` so that the old path imports whenever the package does,
    and bind what it returns to the old module's name there: ``import a.b.c as m`` and
    ``a.b.c.name`` read the attribute ``c`` of the package ``a.b``, not ``sys.modules``,
    so a package attribute of that name that is something else (a function) would be
    given instead.

    Returns
    -------
    types.ModuleType
        The module registered at ``old`` (the one already there if ``old`` was
        registered before).

    Examples
    --------
    >>> import math, warnings
    >>> old_math = renamed_module("calcore._old_math_example", math, {"sqrt_of": "sqrt"})
    >>> old_math is sys.modules["calcore._old_math_example"]
    True
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     old_math.sqrt_of(4.0)
    2.0
    """
    renamed = dict(renamed or {})

    class RenamedModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):  # the import system's probes (__path__, ...)
                raise AttributeError(name)
            new = renamed.get(name, name)
            value = getattr(module, new)  # AttributeError for a name it never had
            warnings.warn(
                f"{old} is deprecated: import {module.__name__}"
                + (f" (its {name} is now {new})" if new != name else "")
                + " (the old path goes in the next release).",
                DeprecationWarning,
                stacklevel=2,
            )
            return value

        def __dir__(self):
            return sorted(set(dir(module)) | set(renamed))

    return sys.modules.setdefault(old, RenamedModule(old, f"Deprecated: see {module.__name__}."))
