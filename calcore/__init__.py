"""calcore: calibration evaluation for probabilistic classifiers.

Public API (stable entry points: ``Predictions``, ``load_predictions``, ``evaluate``).
"""

from calcore._errors import CalcoreError, CalcoreWarning
from calcore.predictions import Predictions

__all__ = ["CalcoreError", "CalcoreWarning", "Predictions"]
__version__ = "0.1.0"
