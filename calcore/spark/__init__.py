"""calcore on Apache Spark (optional: ``pip install "calibration-lens[spark]"``).

Importing this package does not import pyspark: each function imports it when called
and says how to install it when it is missing.

.. autosummary::

   session            -- a Spark session for calcore: workers' Python, quiet logs, checked
   check_workers      -- the workers run the driver's Python and calcore version
   with_row_positions -- each row's position in calcore's reading order, computed in Spark
   apply              -- a fitted calibrator applied to a DataFrame (mapInArrow, JSON shipped)

The statistics (``from_spark``, ``evaluate`` on Spark) come with the statistics engine's
phases (issue 35, items 1-2).
"""

from __future__ import annotations

from calcore.spark._apply import apply
from calcore.spark._positions import (
    KEY_HASH_SEED,
    POSITION_COLUMN,
    file_offsets,
    local_path,
    with_row_positions,
)
from calcore.spark._session import (
    INSTALL_JAVA,
    INSTALL_SPARK,
    SparkSetupError,
    check_workers,
    find_java,
    quiet_log4j2_file,
    require_pyspark,
    session,
)

__all__ = [
    "session",
    "check_workers",
    "with_row_positions",
    "apply",
    "file_offsets",
    "local_path",
    "find_java",
    "require_pyspark",
    "quiet_log4j2_file",
    "SparkSetupError",
    "INSTALL_SPARK",
    "INSTALL_JAVA",
    "POSITION_COLUMN",
    "KEY_HASH_SEED",
]
