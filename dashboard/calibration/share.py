"""The "Copy link" button beside the share text: copies the page's link, as the address
bar holds it when the button is clicked (the page keeps every setting in it), to the
clipboard.

Streamlit has no clipboard element, so this is a few lines of static HTML and JavaScript
(``st.html`` runs them in the page itself, not in an iframe); nothing in them comes from
the user. The link is read in the browser at the click, so it is never stale: a view or a
setting changed after the button was drawn is in the copied link. Where the Clipboard API
is unavailable (a page served over plain http from another host than localhost), the
text is copied through a hidden field; if that fails too, the button says to copy the
address bar.
"""

from __future__ import annotations

import streamlit as st

__all__ = ["COPY_LINK_LABEL", "copy_link_button"]

COPY_LINK_LABEL = "Copy link"

_HTML = """
<style>
button.cl-copy-link {
  font: inherit; font-size: 0.875rem; line-height: 1.4; padding: 0.25rem 0.75rem;
  border-radius: 0.5rem; border: 1px solid rgba(49, 51, 63, 0.2);
  background: transparent; color: inherit; cursor: pointer; white-space: nowrap;
}
button.cl-copy-link:hover { border-color: #ff4b4b; color: #ff4b4b; }
</style>
<button type="button" class="cl-copy-link" data-testid="copyLinkButton"
  title="Copies this page's link: it reopens this data and view">Copy link</button>
<script>
(() => {
  if (window.__calibrationLensCopyLink) return;  // one listener for every button
  window.__calibrationLensCopyLink = true;
  const fallback = (text) => {
    const field = document.createElement("textarea");
    field.value = text;
    field.setAttribute("readonly", "");
    field.style.position = "fixed";
    field.style.opacity = "0";
    document.body.appendChild(field);
    field.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    field.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  };
  const say = (button, text) => {
    button.textContent = text;
    setTimeout(() => { button.textContent = "Copy link"; }, 2500);
  };
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("button.cl-copy-link");
    if (!button) return;
    const link = window.location.href;
    const copy = navigator.clipboard && window.isSecureContext
      ? navigator.clipboard.writeText(link).catch(() => fallback(link))
      : fallback(link);
    copy.then(() => say(button, "Copied ✓"),
              () => say(button, "Copy the address bar"));
  });
})();
</script>
"""


def copy_link_button() -> None:
    """Draw the button (its script registers one click listener per page)."""
    st.html(_HTML, unsafe_allow_javascript=True, width="content")
