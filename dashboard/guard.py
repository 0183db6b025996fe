"""A bug shows as a message on the page, never as a traceback with the server's paths.

Streamlit shows an uncaught exception as ``stException``: its type, its message and the
stack with the server's file paths. Invalid input never gets there (calcore raises
:class:`calcore.CalcoreError`, which the page shows as the message it is); what is left
is a bug, which the page names as one, with a reference to find it in the server log.
``CALCORE_DEBUG=1`` lets the exception through (the test suite sets it, so that a bug
fails the test that meets it).
"""

from __future__ import annotations

import functools
import logging
import os
import secrets

import streamlit as st

__all__ = ["bugs_as_messages"]

LOG = logging.getLogger("calibration-lens")


def bugs_as_messages(render):
    """Decorate a page or fragment function: an exception it raises (not Streamlit's own
    rerun/stop signals, which are not ``Exception``) is logged with a reference and
    shown as one sentence."""

    @functools.wraps(render)
    def guarded(*args, **kwargs):
        try:
            return render(*args, **kwargs)
        except Exception as exc:
            if os.environ.get("CALCORE_DEBUG"):
                raise
            reference = secrets.token_hex(4)
            LOG.exception("internal error, reference %s", reference)
            st.error(
                f"Something went wrong on the server ({type(exc).__name__}): a bug in "
                "calibration-lens, not a problem with your data. Please report it with the "
                f"reference {reference}; the server's log has the details."
            )
            return None

    return guarded
