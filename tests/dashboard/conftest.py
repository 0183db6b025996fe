"""The dashboard's tests, in folders that mirror its packages (``calibration/``,
``figures/``, ``lab/``); their shared helpers (``_apptest.py``, ``_plotly_json.py``) stay
here and are importable from every folder below."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
