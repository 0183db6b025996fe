"""Small pieces shared by the views."""

from __future__ import annotations

import streamlit as st

from dashboard.calibration.explain import EXPLAIN
from dashboard.text import escape_markdown as esc

#: How each severity of a calcore.ViewSummary is shown.
_BOXES = {"success": st.success, "info": st.info, "warning": st.warning}


def answer(summary, where=None) -> None:
    """A view's answer (a ``calcore.ViewSummary``) in a box coloured by its severity;
    ``where`` is a placeholder (``st.empty()``) reserved above widgets the answer depends
    on, so the sentence still comes first. Names in it are the user's: escaped."""
    if not summary.sentence:
        return
    box = _BOXES.get(summary.severity, st.info)
    if where is not None:
        box = getattr(where, box.__name__)
    box(esc(summary.sentence))


def explain(view: str) -> None:
    """The view's 'what am I looking at' text, folded by default after the first view."""
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAIN[view])


def chart(fig, key: str) -> None:
    """A Plotly figure at full width with Plotly's own colours (theme applied in the figure)."""
    st.plotly_chart(fig, theme=None, key=key)


#: The key of the container around the view picker: its class ``st-key-view-top`` is what
#: :func:`scroll_to_view_top` scrolls to.
VIEW_TOP = "view-top"
KEY_SHOWN = "view.shown"  # the view drawn last in this session, and a counter of switches

# Streamlit has no scroll API and keeps the scroll position across reruns, so after a view
# switch the new chart started at the bottom edge of the window (issue 34). This script
# (fixed text, no user input in it) puts the view picker at the top of the window. It runs
# once, when the element mounts; the counter in it makes each switch's script new text, so
# React mounts it again rather than reusing the last one. It is sent after the view is
# drawn, so the page is tall enough by then to scroll that far.
_SCROLL_SCRIPT = """<script>/* view switch {n} */
(function () {{
  const top = window.document.querySelector(".st-key-{anchor}");
  if (!top) return;
  // below Streamlit's fixed header, not under it
  const header = window.document.querySelector('[data-testid="stHeader"]');
  const margin = header ? header.getBoundingClientRect().bottom : 0;
  top.style.scrollMarginTop = (margin + 8) + "px";
  top.scrollIntoView({{block: "start", behavior: "instant"}});
}})();
</script>"""


def scroll_to_view_top(view: str) -> None:
    """Scroll the view picker to the top of the window when ``view`` differs from the view
    drawn last in this session (not on the first draw, nor on a rerun of the same view).

    Call it after the view is drawn.
    """
    last, switches = st.session_state.get(KEY_SHOWN, (None, 0))
    if last is not None and last != view:
        switches += 1
        st.html(_SCROLL_SCRIPT.format(n=switches, anchor=VIEW_TOP), unsafe_allow_javascript=True)
    st.session_state[KEY_SHOWN] = (view, switches)
