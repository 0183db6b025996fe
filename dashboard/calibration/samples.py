"""The bundled sample prediction files the dashboard opens on (see ``assets/README.md``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["ASSETS_DIR", "DEFAULT_SAMPLE", "SAMPLES", "Sample"]

# An installed wheel carries the samples as package data (dashboard/assets/, copied by
# setup.py); a checkout keeps them in the repository's assets/ only.
_PACKAGED = Path(__file__).resolve().parents[1] / "assets"
ASSETS_DIR = _PACKAGED if _PACKAGED.is_dir() else Path(__file__).resolve().parents[2] / "assets"


@dataclass(frozen=True)
class Sample:
    """One bundled sample.

    Attributes
    ----------
    key : str
        Stable identifier (used in widget state and URLs).
    title : str
        What the sidebar shows.
    filename : str
        File name inside ``assets/``.
    description : str
        One sentence on where the predictions come from.
    """

    key: str
    title: str
    filename: str
    description: str

    @property
    def path(self) -> Path:
        return ASSETS_DIR / self.filename

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()


SAMPLES: dict[str, Sample] = {
    s.key: s
    for s in (
        Sample(
            "cifar10-resnet110",
            "CIFAR-10 · ResNet-110 (10 classes)",
            "cifar10_resnet110.npz",
            "Logits of a ResNet-110 trained with the Brier loss (Mukhoti et al., 2020); "
            "5,000 calibration and 10,000 test images.",
        ),
        Sample(
            "credit-default-logreg",
            "Credit default · logistic regression (binary)",
            "credit_default_logreg.npz",
            "P(default) from an L2 logistic regression fitted on 10,000 rows of the UCI credit "
            "default data; 10,000 calibration and 10,000 test rows, with sex, education, "
            "marriage, age and credit limit to slice by.",
        ),
        Sample(
            "synthetic-overconfident",
            "Synthetic · over-confident (3 classes)",
            "synthetic_overconfident.npz",
            "Dirichlet scores whose labels are drawn from a flatter distribution, so the model "
            "is over-confident by construction; 3,000 calibration and 3,000 test rows.",
        ),
        Sample(
            "synthetic-wide100",
            "Synthetic · 100 classes, CIFAR-100 sized",
            "synthetic_wide100.npz",
            "Over-confident logits (true temperature 1.8) for 100 classes; labels drawn from "
            "the calibrated softmax, so the truth is known; 5,000 calibration and 10,000 test "
            "rows.",
        ),
    )
}

DEFAULT_SAMPLE = "cifar10-resnet110"
