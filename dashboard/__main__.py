"""``python -m dashboard``: the ``calibration-lens`` command (see :mod:`dashboard.launch`)."""

import sys

from dashboard.launch import main

if __name__ == "__main__":
    sys.exit(main())
