"""calcore.foundation.deprecation: the examples of the helpers of renamed names run.

What each rename of calcore does with them is tested in tests/test_renamed_names.py.
"""

from __future__ import annotations

import doctest
import sys

import calcore.foundation.deprecation as deprecation


def test_the_examples_run():
    try:
        result = doctest.testmod(deprecation, optionflags=doctest.ELLIPSIS)
    finally:
        sys.modules.pop("calcore._old_math_example", None)  # registered by an example
    assert result.attempted >= 10
    assert result.failed == 0
