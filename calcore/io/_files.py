"""Which files a source reads: its data files, and regular files only.

:func:`source_files` lists the data files of a path, directory or glob (by extension,
:data:`DATA_EXTENSIONS`), sorted, so that every row of a stream has a stable position.

Opening a FIFO blocks until a writer comes (forever, if none does), and a device such as
``/dev/zero`` never ends, so a folder or glob that holds one, under a data file's name,
must not be read: one such entry in a server's data directory hung every session
waiting for that dataset. The listing of a source (:func:`source_files`)
refuses it, naming the file and what it is, before anything is opened.
"""

from __future__ import annotations

import glob as globlib
import os
import stat

from calcore.foundation.errors import CalcoreError

__all__ = [
    "CSV_EXTENSIONS",
    "DATA_EXTENSIONS",
    "IPC_EXTENSIONS",
    "NotRegularFileError",
    "check_regular",
    "file_kind",
    "source_files",
]

IPC_EXTENSIONS = (".arrow", ".feather", ".ipc")
CSV_EXTENSIONS = (".csv", ".tsv", ".txt")
DATA_EXTENSIONS = (".parquet", ".pq", *IPC_EXTENSIONS, ".csv", ".tsv", ".npz")

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


def source_files(source) -> tuple[str, ...]:
    """The data files of a path, directory or glob, sorted (refused when there are none,
    or when one is not a regular file: a FIFO or device would block or never end)."""
    text = os.fspath(source)
    if any(ch in text for ch in "*?["):
        hits = globlib.glob(text, recursive=True)  # a FIFO too: refused below, not skipped
        found = sorted(p for p in hits if os.path.exists(p) and not os.path.isdir(p))
        found = [p for p in found if not os.path.basename(p).startswith((".", "_"))]
    elif os.path.isdir(text):
        found = _data_files(text)
    elif os.path.exists(text):
        found = [text]
    else:
        raise CalcoreError(f"{text}: no such file or directory.")
    for path in found:
        try:
            check_regular(path)
        except FileNotFoundError:  # a broken link, or removed since it was listed
            raise CalcoreError(f"{path}: no such file (a broken link?).") from None
    if not found:
        raise CalcoreError(
            f"{text}: no data files found. Give a Parquet, Arrow IPC, CSV or NPZ file, a "
            f"directory of them or a glob such as 'logs/*.parquet'."
        )
    return tuple(found)


def _data_files(folder: str) -> list[str]:
    """Every data file (Parquet, Arrow IPC, CSV, NPZ) below ``folder``, by name, sorted.

    Hidden and ``_``-prefixed files and folders (``_SUCCESS``, ``.crc``, ``_temporary``)
    are skipped, and other files are not ours to read. Listed by name rather than with
    ``pyarrow.dataset``, which opens every file to unify schemas and fails on a stray one.
    """
    out = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        out += [
            os.path.join(root, f)
            for f in names
            if f.lower().endswith(DATA_EXTENSIONS) and not f.startswith((".", "_"))
        ]
    return sorted(out)
