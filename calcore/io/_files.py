"""Which files a source may read: regular files only.

Opening a FIFO blocks until a writer comes (forever, if none does), and a device such as
``/dev/zero`` never ends, so a folder or glob that holds one, under a data file's name,
must not be read: one such entry in a server's data directory hung every session
waiting for that dataset. The listing of a source (:func:`calcore.io.stream.source_files`)
refuses it, naming the file and what it is, before anything is opened.
"""

from __future__ import annotations

import os
import stat

from calcore.foundation.errors import CalcoreError

__all__ = ["NotRegularFileError", "file_kind", "check_regular"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISREG, "a regular file"),
)


class NotRegularFileError(CalcoreError):
    """A source names something other than a regular file (``path``: which; ``kind``:
    what it is), so that a caller can word the message for its own users."""

    def __init__(self, path: str, kind: str) -> None:
        self.path, self.kind = path, kind
        super().__init__(
            f"{path}: {kind}, not a regular file; calcore reads only regular files from a "
            "folder or glob (a FIFO or a device may block or never end). Remove it, or name "
            "the data files themselves."
        )


def file_kind(mode: int) -> str:
    """``"a FIFO"``, ``"a regular file"``, ... for an ``st_mode``.

    Examples
    --------
    >>> import os
    >>> file_kind(os.stat("/dev/null").st_mode)
    'a character device'
    """
    return next((kind for test, kind in _KINDS if test(mode)), "not a file")


def check_regular(path: str) -> str:
    """``path`` when it is a regular file (a symbolic link to one counts as one).

    Raises
    ------
    NotRegularFileError
        A FIFO, socket, device or directory (``os.stat`` never opens it, so this never
        blocks).
    FileNotFoundError
        ``path`` does not exist (or is a broken link).
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(path, file_kind(mode))
    return path
