"""Small pieces shared by the views."""

from __future__ import annotations

import streamlit as st

from dashboard.calibration.explain import EXPLAIN


def explain(view: str) -> None:
    """The view's 'what am I looking at' text, folded by default after the first view."""
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAIN[view])


def chart(fig, key: str) -> None:
    """A Plotly figure at full width with Plotly's own colours (theme applied in the figure)."""
    st.plotly_chart(fig, theme=None, key=key)
