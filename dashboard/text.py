"""Showing untrusted text (file names, column and class names, messages quoting them).

Streamlit renders the body of ``st.error``/``st.info``/``st.caption``/``st.markdown`` as
Markdown (links, images, LaTeX, ``:red[...]`` directives). Text from a user's file must be
shown literally, so it goes through :func:`escape_markdown` first. The app never uses
``unsafe_allow_html``.
"""

from __future__ import annotations

import re

__all__ = ["escape_markdown"]

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping all
# of them (plus Streamlit's ``:`` directives and ``$`` maths) leaves nothing to interpret.
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&\"'=^%@;,/?])")


def escape_markdown(text: object) -> str:
    """Return ``str(text)`` with every Markdown-significant character backslash-escaped.

    Examples
    --------
    >>> print(escape_markdown("[a](b) *c*"))
    \\[a\\]\\(b\\) \\*c\\*
    """
    return _SPECIAL.sub(r"\\\1", str(text))
