"""The Simulation lab's knobs (sidebar) and their values as one hashable tuple.

Every widget has a ``lab.*`` key, distinct from the main page's, and gets its first value
through ``value=``/``index=`` (not session state), as the main page's controls do.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from dashboard.lab import compute

__all__ = [
    "KEY_ACCURACY",
    "KEY_CLASSES",
    "KEY_GENERATOR",
    "KEY_LEVEL",
    "KEY_METHODS",
    "KEY_N",
    "KEY_REPEATS",
    "KEY_SEED",
    "KEY_STRENGTH",
    "KEY_THEME",
    "KEY_VIEW",
    "N_CHOICES",
    "REPEAT_CHOICES",
    "Knobs",
    "generator_knobs",
]

KEY_GENERATOR = "lab.generator"
KEY_CLASSES = "lab.classes"
KEY_ACCURACY = "lab.accuracy"
KEY_STRENGTH = "lab.strength"
KEY_N = "lab.n"
KEY_SEED = "lab.seed"
KEY_THEME = "lab.theme"
KEY_VIEW = "lab.view"
KEY_REPEATS = "lab.repeats"
KEY_LEVEL = "lab.level"
KEY_METHODS = "lab.methods"

N_CHOICES = (100, 200, 500, 1000, 2000, 5000, 10000)
REPEAT_CHOICES = (10, 20, 50)
MAX_CLASSES = 10  # the class-specific truth costs ~L^2: beyond ten it is no longer interactive
DEFAULT_METHODS = ("ts", "tl-hb", "irm")


@dataclass(frozen=True)
class Knobs:
    """The generator's knob values; Mix-n-Match's unused knobs are fixed to 2, 0, 0."""

    generator: str
    n_classes: int
    accuracy: float
    strength: float
    n: int
    seed: int
    theme: str

    @property
    def model(self) -> tuple:
        """Arguments identifying the simulator (the cache key of the truth)."""
        return (self.generator, self.n_classes, self.accuracy, self.strength)

    @property
    def sample(self) -> tuple:
        """Arguments identifying the simulator and the draw."""
        return (*self.model, self.n, self.seed)


def generator_knobs() -> Knobs:
    """Sidebar knobs of the generator and the draw."""
    st.header("Fake classifier")
    generator = st.selectbox(
        "Generator", tuple(compute.GENERATORS), format_func=compute.GENERATORS.get,
        index=0, key=KEY_GENERATOR,
    )  # fmt: skip
    mnm = compute.is_mix_n_match(generator)
    classes = st.number_input(
        "Number of classes", min_value=2, max_value=MAX_CLASSES, value=10, step=1,
        key=KEY_CLASSES, disabled=mnm,
        help="Fixed to 2 for the Mix-n-Match problem. At most 10 so the truth stays quick.",
    )  # fmt: skip
    accuracy = st.slider(
        "Target accuracy", min_value=0.3, max_value=0.95, value=0.8, step=0.05,
        key=KEY_ACCURACY, disabled=mnm,
        help="Sets the Dirichlet concentration; must be above 1 / classes.",
    )  # fmt: skip
    strength = st.slider(
        "Miscalibration strength", min_value=0.0, max_value=3.0, value=1.0, step=0.25,
        key=KEY_STRENGTH, disabled=mnm or generator == "calibrated",
        help="0 is calibrated; over-confident means temperature 1 + strength.",
    )  # fmt: skip
    n = st.select_slider("Sample size n", options=N_CHOICES, value=1000, key=KEY_N)
    seed = st.number_input("Seed", min_value=0, max_value=1_000_000, value=0, step=1, key=KEY_SEED)
    theme = st.radio("Theme", ("light", "dark"), index=0, horizontal=True, key=KEY_THEME)
    if mnm:
        # The same simulator whatever the disabled knobs say: one cache entry, not many.
        classes, accuracy, strength = 2, 0.0, 0.0
    elif generator == "calibrated":
        strength = 0.0
    return Knobs(
        str(generator), int(classes), round(float(accuracy), 4), round(float(strength), 4),
        int(n), int(seed), str(theme),
    )  # fmt: skip
