"""``python -m calcore.cli``: the ``calcore`` command."""

import sys

from calcore.cli import main

sys.exit(main())
