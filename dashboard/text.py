"""Showing untrusted text (file names, column and class names, messages quoting them).

Streamlit renders the body of ``st.error``/``st.info``/``st.caption``/``st.markdown`` as
Markdown (links, images, LaTeX, ``:red[...]`` directives). Text from a user's file must be
shown literally, so it goes through :func:`escape_markdown` first. The app never uses
``unsafe_allow_html``.
"""

from __future__ import annotations

import re

__all__ = ["escape_markdown", "defuse_autolinks", "WORD_JOINER"]

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping all
# of them (plus Streamlit's ``:`` directives and ``$`` maths) leaves nothing to interpret.
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&\"'=^%@;,/?])")


#: U+2060 WORD JOINER: invisible, joins rather than breaks words.
WORD_JOINER = "\u2060"
# GitHub-flavoured Markdown turns bare "www.", "http(s)://", "ftp://", "mailto:", "xmpp:"
# and "name@host.tld" into links even when every punctuation character is escaped (the
# escapes are resolved before autolinks are found), so user text such as
# "?upload=Session expired - log in again at https://evil.example" would show a clickable
# link in the app's own message box. A word joiner inside the keyword (and after "@")
# leaves the text as it reads but matches none of those patterns.
_AUTOLINK_STARTS = re.compile(r"(?i)(www|https?|ftp|mailto|xmpp)")


def defuse_autolinks(text: str) -> str:
    """``text`` with a word joiner inside every start of a GFM autolink (``www``, ``http``,
    ``https``, ``ftp``, ``mailto``, ``xmpp``) and after every ``@``: it reads the same,
    and no Markdown renderer finds a link in it.

    Examples
    --------
    >>> defuse_autolinks("log in at https://evil.example") == (
    ...     "log in at h" + WORD_JOINER + "ttps://evil.example")
    True
    """
    text = _AUTOLINK_STARTS.sub(lambda m: m.group(1)[0] + WORD_JOINER + m.group(1)[1:], text)
    return text.replace("@", "@" + WORD_JOINER)


def escape_markdown(text: object) -> str:
    """Return ``str(text)`` shown literally by Markdown: every Markdown-significant
    character backslash-escaped and every would-be autolink defused
    (:func:`defuse_autolinks`).

    Examples
    --------
    >>> print(escape_markdown("[a](b) *c*"))
    \\[a\\]\\(b\\) \\*c\\*
    """
    return _SPECIAL.sub(r"\\\1", defuse_autolinks(str(text)))
