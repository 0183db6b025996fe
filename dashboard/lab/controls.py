"""The Simulation lab's knobs (sidebar) and their values as one hashable tuple.

Every widget has a ``lab.*`` key, distinct from the main page's, and gets its first value
through ``value=``/``index=``/``default=`` (not session state), as the main page's controls
do. Streamlit drops the state of widgets a run does not draw, so after a visit to the other
page every knob would be back at its default: :func:`remember` keeps their values under a
plain session-state key and :func:`first` hands them back as the widgets' first values.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from dashboard.lab import compute

__all__ = [
    "KEY_ACCURACY",
    "KEY_REMEMBERED",
    "KEY_CLASSES",
    "KEY_GENERATOR",
    "KEY_LEVEL",
    "KEY_METHODS",
    "KEY_N",
    "KEY_REPEATS",
    "KEY_SEED",
    "KEY_STRENGTH",
    "KEY_VIEW",
    "N_CHOICES",
    "REPEAT_CHOICES",
    "Knobs",
    "first",
    "generator_knobs",
    "index_of",
    "remember",
]

KEY_GENERATOR = "lab.generator"
KEY_CLASSES = "lab.classes"
KEY_ACCURACY = "lab.accuracy"
KEY_STRENGTH = "lab.strength"
KEY_N = "lab.n"
KEY_SEED = "lab.seed"
KEY_VIEW = "lab.view"
KEY_REPEATS = "lab.repeats"
KEY_LEVEL = "lab.level"
KEY_METHODS = "lab.methods"

N_CHOICES = (100, 200, 500, 1000, 2000, 5000, 10000)
REPEAT_CHOICES = (10, 20, 50)
MAX_CLASSES = 10  # the class-specific truth costs ~L^2: beyond ten it is no longer interactive
DEFAULT_METHODS = ("ts", "tl-hb", "irm")


KEY_REMEMBERED = "lab.remembered"  # not a widget key: survives runs of the other page
KNOB_KEYS = (KEY_GENERATOR, KEY_CLASSES, KEY_ACCURACY, KEY_STRENGTH, KEY_N, KEY_SEED,
             KEY_VIEW, KEY_REPEATS, KEY_LEVEL, KEY_METHODS)  # fmt: skip


def first(key: str, default):
    """A widget's first value: what it had when this page last ran, else ``default``."""
    return st.session_state.get(KEY_REMEMBERED, {}).get(key, default)


def index_of(options, key: str, default) -> int:
    """``index=`` for a selectbox or radio from :func:`first`."""
    value = first(key, default)
    return list(options).index(value if value in options else default)


def remember() -> None:
    """Store every drawn knob's value for the next visit (call after drawing them)."""
    ss = st.session_state
    ss[KEY_REMEMBERED] = {k: ss[k] for k in KNOB_KEYS if k in ss}


@dataclass(frozen=True)
class Knobs:
    """The generator's knob values; Mix-n-Match's unused knobs are fixed to 2, 0, 0."""

    generator: str
    n_classes: int
    accuracy: float
    strength: float
    n: int
    seed: int

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
        index=index_of(compute.GENERATORS, KEY_GENERATOR, "overconfident"), key=KEY_GENERATOR,
    )  # fmt: skip
    mnm = compute.is_mix_n_match(generator)
    classes = st.number_input(
        "Number of classes", min_value=2, max_value=MAX_CLASSES, step=1,
        value=first(KEY_CLASSES, 10), key=KEY_CLASSES, disabled=mnm,
        help="Fixed to 2 for the Mix-n-Match problem. At most 10 so the truth stays quick.",
    )  # fmt: skip
    accuracy = st.slider(
        "Target accuracy", min_value=0.3, max_value=0.95, value=first(KEY_ACCURACY, 0.8), step=0.05,
        key=KEY_ACCURACY, disabled=mnm,
        help="Sets the Dirichlet concentration; must be above 1 / classes.",
    )  # fmt: skip
    strength = st.slider(
        "Miscalibration strength", min_value=0.0, max_value=3.0, step=0.25,
        value=first(KEY_STRENGTH, 1.0), key=KEY_STRENGTH, disabled=mnm or generator == "calibrated",
        help="0 is calibrated; over-confident means temperature 1 + strength.",
    )  # fmt: skip
    n = st.select_slider("Sample size n", options=N_CHOICES, value=first(KEY_N, 1000), key=KEY_N)
    seed = st.number_input(
        "Seed", min_value=0, max_value=1_000_000, value=first(KEY_SEED, 0), step=1, key=KEY_SEED
    )
    if mnm:
        # The same simulator whatever the disabled knobs say: one cache entry, not many.
        classes, accuracy, strength = 2, 0.0, 0.0
    elif generator == "calibrated":
        strength = 0.0
    return Knobs(
        str(generator), int(classes), round(float(accuracy), 4), round(float(strength), 4),
        int(n), int(seed),
    )  # fmt: skip
