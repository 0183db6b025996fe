"""Writing a file the user named, without replacing what it is.

Every file calcore writes for a user (``check --junit/--markdown`` reports, ``--out``
predictions, ``--save`` calibrators, :func:`calcore.io.export.write_json` ...) goes
through :func:`open_output`, which decides by what the path is now:

* missing, or a regular file: written to a temporary file in the same folder and renamed
  onto the path once complete, so a reader never sees half a file and a failure leaves
  the old one. A replaced file keeps its permission bits (and owner, where allowed); a new
  one gets the usual mode (``0666`` less the umask, as a shell redirection would give).
  A writable file in a folder that is not (no room for a temporary file) is written through.
* a symbolic link: never replaced (it stays a link). Whatever it leads to is opened and
  written through, as ``> link`` in a shell does: the target file keeps its inode,
  owner, mode and other links. (This is also what ``/dev/stdout`` is: a link to the
  process's own output, which a rename would detach from the terminal or pipe.) A
  failure part-way empties a regular target rather than leave one that looks complete.
* a character or block device (``/dev/null``, a terminal) or a FIFO: opened and written
  through; nothing is renamed onto it.
* ``-``: standard output, where the caller accepts it (``stdout=True``); elsewhere refused.
* a directory, a socket, or a path whose folder does not exist: refused with a
  :class:`~calcore.CalcoreError` before anything is written.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import stat
import sys
from typing import BinaryIO, Iterator

from calcore.foundation.errors import CalcoreError

__all__ = ["STDOUT", "check_output", "open_output", "write_output"]

#: The path that means standard output (where accepted).
STDOUT = "-"

#: How a target is written (the result of :func:`check_output`).
REPLACE, THROUGH, TO_STDOUT = "replace", "through", "stdout"


def check_output(path, *, stdout: bool = False, what: str = "the output") -> str:
    """How ``path`` would be written: ``"replace"``, ``"through"`` or ``"stdout"``.

    Called before a long computation so that a bad target fails first.

    Parameters
    ----------
    path : str or os.PathLike
        The path the user named.
    stdout : bool, default False
        Whether ``-`` (standard output) is accepted.
    what : str, default "the output"
        What the path is for, as the user named it (e.g. ``"--junit"``), for messages.

    Raises
    ------
    CalcoreError
        ``-`` where standard output is not accepted, a directory, a socket, or a
        missing folder.

    Examples
    --------
    >>> check_output("/dev/null")
    'through'
    >>> check_output("-", stdout=True)
    'stdout'
    """
    path = os.fspath(path)
    if path == STDOUT:
        if stdout:
            return TO_STDOUT
        raise CalcoreError(
            f"{what}: '-' (standard output) is not accepted here: standard output carries "
            "the command's own output. Give a file name."
        )
    try:
        mode = os.stat(path).st_mode  # follows a symbolic link to what it leads to
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise CalcoreError(f"cannot write {path} ({what}): it is a directory; give a file name.")
    if mode is not None and stat.S_ISSOCK(mode):
        raise CalcoreError(
            f"cannot write {path} ({what}): it is a socket; give a file, a device or a FIFO."
        )
    if os.path.islink(path):
        return THROUGH  # a link stays a link: its target is written (or created) through it
    if mode is None or stat.S_ISREG(mode):
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise CalcoreError(
                f"cannot write {path} ({what}): no such directory {folder}. Create it first "
                "(calcore creates no folders), or give a path in an existing one."
            )
        if mode is not None and not os.access(folder, os.W_OK) and os.access(path, os.W_OK):
            return THROUGH  # no temporary file can go beside it, but the file may be written
        return REPLACE
    return THROUGH  # a device or a FIFO


@contextlib.contextmanager
def open_output(
    path, *, text: bool = False, stdout: bool = False, what: str = "the output"
) -> Iterator[BinaryIO]:
    """A file to write ``path`` through, by the rules of this module.

    Parameters
    ----------
    path : str or os.PathLike
        The path the user named (``-``: standard output, when ``stdout``).
    text : bool, default False
        Yield a UTF-8 text file (``\\n`` line ends, no newline translation) instead
        of a binary one.
    stdout, what
        As for :func:`check_output`.

    Yields
    ------
    file
        Written to by the caller. On a clean exit the output is complete (a temporary
        file renamed onto ``path``); on an exception a temporary file is removed and
        ``path`` is left as it was (written through: a regular target is emptied).

    Raises
    ------
    CalcoreError
        See :func:`check_output`.

    Examples
    --------
    >>> with open_output("/dev/null", text=True) as fh:
    ...     _ = fh.write("nothing kept\\n")
    """
    kind = check_output(path, stdout=stdout, what=what)
    path = os.fspath(path)
    if kind == TO_STDOUT:
        opened = _stdout()
    elif kind == THROUGH:
        opened = _through(path)
    else:
        opened = _replacing(path)
    with opened as raw:
        if not text:
            yield raw
            return
        wrapper = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        try:
            yield wrapper
            wrapper.flush()
        finally:
            wrapper.detach()  # the binary file is closed (or, stdout, kept) by its opener


def write_output(path, data: bytes, *, stdout: bool = False, what: str = "the output") -> None:
    """Write ``data`` to ``path`` by the rules of :func:`open_output`."""
    with open_output(path, stdout=stdout, what=what) as fh:
        fh.write(data)


@contextlib.contextmanager
def _stdout() -> Iterator[BinaryIO]:
    sys.stdout.flush()  # what was printed before comes first
    out = sys.stdout.buffer
    yield out
    out.flush()


@contextlib.contextmanager
def _through(path: str) -> Iterator[BinaryIO]:
    """Open ``path`` for writing as it is (a FIFO blocks here until a reader opens it)."""
    with open(path, "wb") as fh:
        try:
            yield fh
        except BaseException:
            _empty_if_regular(fh)
            raise


def _empty_if_regular(fh) -> None:
    """Truncate a half-written regular file (a link's target): an empty file cannot be
    mistaken for a complete one. A device or FIFO cannot take back what it was sent."""
    with contextlib.suppress(OSError, ValueError):
        if stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            fh.flush()
            fh.truncate(0)


@contextlib.contextmanager
def _replacing(path: str) -> Iterator[BinaryIO]:
    """A temporary file beside ``path``, renamed onto it when the block ends cleanly."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        old = os.stat(path)
    except FileNotFoundError:
        old = None
    tmp = os.path.join(folder, f".calcore-{secrets.token_hex(8)}.partial")
    # 0o666 and O_EXCL: the umask applies as for any new file (mkstemp's 0600 would hide a
    # report from the other users of a CI runner), and nothing existing is opened
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())  # complete on disk before it takes the name
        if old is not None:
            _same_owner_and_mode(tmp, old)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _same_owner_and_mode(tmp: str, old: os.stat_result) -> None:
    """Give the new file the permission bits (and, where allowed, the owner and group) of
    the file it replaces: a report a CI runner's other user could read stays readable."""
    os.chmod(tmp, stat.S_IMODE(old.st_mode))
    if hasattr(os, "chown"):
        with contextlib.suppress(PermissionError):  # only root may give a file away
            os.chown(tmp, old.st_uid, old.st_gid)
