"""Whether a Streamlit server answers its health endpoint (shared by the e2e fixtures and tests)."""

from __future__ import annotations

import urllib.request


def healthy(url: str, *, timeout: float) -> bool:
    """True when ``{url}/_stcore/health`` answers 200 with body ``ok`` within ``timeout`` s."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout) as resp:
            return resp.status == 200 and resp.read().strip() == b"ok"
    except OSError:
        return False
