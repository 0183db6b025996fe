"""Datasets on the server: the data directory given at start, listed and opened safely.

The server's operator names one directory with ``CALCORE_DATA_DIR`` (unset: no server
datasets). The sidebar lists its datasets -- each top-level Parquet, Arrow IPC, CSV or NPZ
file, and each top-level folder holding such files (one dataset, read recursively, hive
partitions included) -- and a link names one by its path inside the directory
(``?data=clicks/2026-11``). Nothing here reads data: :func:`calcore.scan` streams it.

A dataset's name comes from the URL, so it is untrusted. :meth:`DataDirectory.resolve`
accepts only a relative path of plain components (no ``..``, no hidden component, no
absolute path, no glob character, no backslash) whose real path (symlinks followed) and
whose every data file's real path lie inside the directory's real path. A symlink that
stays inside is followed; one that leads out refuses the whole dataset. So does a FIFO,
socket or device under a data file's name (its read would block every session waiting
for the dataset): the message names it, and the listing leaves the dataset out. The
checks run again on every open, so a link made before a symlink was planted does not get
through.
(A symlink swapped between the check and the read is outside what a web page can do;
the operator controls the directory.)

A dataset's *fingerprint* is a BLAKE2b digest of its files' relative paths, sizes and
modification times: it keys every cached result, and when it changes (a file replaced
while a session has the dataset open) the page says the data changed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path

import calcore
from calcore.foundation.errors import quoted
from calcore.io._files import DATA_EXTENSIONS, NotRegularFileError, source_files
from calcore.io._readers import file_format

__all__ = [
    "DATA_DIR_ENV",
    "MAX_LISTED",
    "DataDirectory",
    "ServerDataset",
    "data_directory",
]

#: The environment variable naming the data directory (unset or empty: none).
DATA_DIR_ENV = "CALCORE_DATA_DIR"
#: Datasets the sidebar lists at most (sorted by name); a link may name any other.
MAX_LISTED = 500
#: Longest dataset name a link may carry.
MAX_NAME_CHARS = 300
_FORBIDDEN = set('*?[]\\:\x00"<>|')


@dataclass(frozen=True)
class ServerDataset:
    """One dataset of the data directory.

    Attributes
    ----------
    name : str
        Its path inside the data directory, with ``/`` separators (what a link carries).
    path : Path
        Where it is (inside the directory; a file or a folder).
    files : tuple of str
        Its data files, in calcore's reading order.
    size : int
        Bytes of all its files.
    fingerprint : str
        BLAKE2b-128 (hex) of every file's relative path, size and modification time (and
        of the decimal mark, when it is not ``"."``): the key of every result cached for it.
    decimal : {".", ","}
        The decimal mark its CSV files are read with (``","``: only when the user ticked
        the page's box, :mod:`dashboard.calibration.decimals`).
    """

    name: str
    path: Path
    files: tuple[str, ...]
    size: int
    fingerprint: str
    decimal: str = "."

    def read_with_decimal(self, decimal: str) -> "ServerDataset":
        """This dataset read with the decimal mark ``decimal`` (``"."`` or ``","``): its
        fingerprint then differs, so that no result of one reading is taken for the other's.

        Examples
        --------
        >>> d = ServerDataset("eu.csv", Path("eu.csv"), ("eu.csv",), 10, "ab" * 16)
        >>> comma = d.read_with_decimal(",")
        >>> comma.decimal, comma.fingerprint != d.fingerprint, comma.read_with_decimal(",") == comma
        (',', True, True)
        """
        if decimal not in (".", ","):
            raise calcore.CalcoreError(f"decimal must be '.' or ',', got {decimal!r}.")
        if decimal == self.decimal:
            return self
        if self.decimal != ".":
            raise calcore.CalcoreError("read_with_decimal applies to a dataset as resolved.")
        key = hashlib.blake2b(f"{self.fingerprint}|decimal={decimal}".encode(), digest_size=16)
        return replace(self, decimal=decimal, fingerprint=key.hexdigest())

    def csv_files(self) -> tuple[str, ...]:
        """Its files that :func:`calcore.scan` reads as CSV."""
        return tuple(f for f in self.files if file_format(f) == "csv")

    @property
    def is_folder(self) -> bool:
        return self.path.is_dir()

    def describe(self) -> str:
        """``"clicks.parquet · 1.2 GB"`` or ``"logs/ · 24 files · 3.4 GB"``."""
        parts = [self.name + ("/" if self.is_folder else "")]
        if len(self.files) > 1:
            parts.append(f"{len(self.files):,} files")
        parts.append(human_size(self.size))
        return " · ".join(parts)


def human_size(n_bytes: int) -> str:
    """``1234567`` -> ``"1.2 MB"`` (decimal units, as file managers show)."""
    size = float(n_bytes)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


class DataDirectory:
    """The server's data directory: its datasets, listed and resolved inside it only.

    Parameters
    ----------
    root : str or Path
        An existing directory.

    Raises
    ------
    calcore.CalcoreError
        ``root`` is not a directory.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "preds.csv").write_text("label,p_a,p_b\\na,0.9,0.1\\n")
    >>> [d.name for d in DataDirectory(folder).datasets()]
    ['preds.csv']
    >>> DataDirectory(folder).resolve("../preds.csv")
    Traceback (most recent call last):
    ...
    calcore.foundation.errors.CalcoreError: '../preds.csv' is not a dataset of the server: ...
    """

    def __init__(self, root) -> None:
        path = Path(root)
        if not path.is_dir():
            raise calcore.CalcoreError(
                f"{DATA_DIR_ENV}={os.fspath(root)!r} is not a directory. Point it at a folder "
                "of Parquet, CSV or NPZ files, or unset it."
            )
        self.root = path.resolve()

    def datasets(self) -> list[ServerDataset]:
        """The top-level datasets, sorted by name, at most :data:`MAX_LISTED`.

        Entries that are hidden, ``_``-prefixed, not data, empty folders or that lead
        out of the directory are left out.
        """
        out = []
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if len(out) == MAX_LISTED:
                break
            if entry.name.startswith((".", "_")):
                continue
            if entry.is_file() and not entry.name.lower().endswith(DATA_EXTENSIONS):
                continue
            try:
                out.append(self.resolve(entry.name))
            except calcore.CalcoreError:
                continue  # not a dataset (or one that leads out): not listed
        return out

    def resolve(self, name: str) -> ServerDataset:
        """The dataset called ``name`` (a path inside the directory), checked.

        Raises
        ------
        calcore.CalcoreError
            ``name`` is not a plain relative path, does not exist, holds no data file, or
            it or one of its files leads out of the directory (a symlink). The message
            quotes the name and never the server's paths.
        """
        refused = calcore.CalcoreError(
            f"{quoted(name)} is not a dataset of the server: choose one in the sidebar "
            "under 'Dataset on the server'."
        )
        parts = _plain_parts(name)
        if parts is None:
            raise refused
        path = self.root.joinpath(*parts)
        real = Path(os.path.realpath(path))
        if not _inside(real, self.root) or not (real.is_file() or real.is_dir()):
            raise refused
        if real.is_file() and not real.name.lower().endswith(DATA_EXTENSIONS):
            raise refused
        try:
            files = source_files(str(path))
        except NotRegularFileError as err:  # a FIFO or device: its read would never end
            if not _inside(Path(os.path.realpath(err.path)), self.root):
                raise refused from None  # a link out: say nothing of what it leads to
            inner = os.path.relpath(err.path, self.root)
            raise calcore.CalcoreError(
                f"{quoted(name)} cannot be read: {quoted(inner)} in it is {err.kind}, not a "
                "regular file (reading it could wait forever). Ask the server's operator to "
                "remove it from the data directory."
            ) from None
        except calcore.CalcoreError:
            raise refused from None
        stats = []
        for f in files:
            if not _inside(Path(os.path.realpath(f)), self.root):
                raise refused
            st = os.stat(f)
            stats.append((os.path.relpath(f, self.root), st.st_size, st.st_mtime_ns))
        digest = hashlib.blake2b(repr(stats).encode(), digest_size=16).hexdigest()
        return ServerDataset("/".join(parts), path, files, sum(s for _, s, _ in stats), digest)


def data_directory(environ=None) -> DataDirectory | None:
    """The directory named by ``CALCORE_DATA_DIR`` in ``environ`` (default ``os.environ``),
    or None when it is unset or empty.

    Raises
    ------
    calcore.CalcoreError
        The variable names something that is not a directory.
    """
    value = (os.environ if environ is None else environ).get(DATA_DIR_ENV, "").strip()
    return DataDirectory(value) if value else None


def _plain_parts(name) -> list[str] | None:
    """The components of a dataset name, or None when it is not a plain relative path."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
        return None
    if name.startswith("/") or any(ch in _FORBIDDEN for ch in name):
        return None
    parts = name.strip("/").split("/")
    if any(p in ("", ".", "..") or p.startswith((".", "_")) for p in parts):
        return None
    if any(not p.isprintable() for p in parts):
        return None
    return parts


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)
