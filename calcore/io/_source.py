"""Turn ``path_or_buffer`` into bytes, a display name and a file format."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePath

from calcore._errors import CalcoreError

__all__ = ["Source", "open_source", "path_format"]

_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npz": "npz",
}
_ZIP_MAGIC = b"PK\x03\x04"
_PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class Source:
    """The whole file in memory.

    Attributes
    ----------
    name : str
        Name used in messages.
    data : bytes
        The file content.
    file_format : {"csv", "parquet", "npz"}
    """

    name: str
    data: bytes
    file_format: str


def open_source(path_or_buffer, *, name: str | None = None) -> Source:
    """Read ``path_or_buffer`` completely and work out its format.

    Parameters
    ----------
    path_or_buffer : str, os.PathLike, bytes or binary file-like
        A path, the file content, or an object with ``read()`` returning bytes
        (Streamlit's ``UploadedFile`` is a ``BytesIO`` with a ``name``).
    name : str, optional
        Overrides the name shown in messages.

    Returns
    -------
    Source

    Raises
    ------
    CalcoreError
        Missing file, a text-mode buffer, or an unsupported input type.

    Notes
    -----
    The format comes from the extension (``.csv``/``.tsv``/``.txt``,
    ``.parquet``/``.pq``, ``.npz``); without a known extension the content is
    sniffed: zip magic ``PK\\x03\\x04`` means NPZ, ``PAR1`` means Parquet, anything
    else is read as CSV. The whole file is read into memory because every
    reader needs random access (header sniffing, error diagnosis).
    """
    if isinstance(path_or_buffer, (str, os.PathLike)):
        path = Path(path_or_buffer)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise CalcoreError(f"File not found: {str(path)!r}. Check the path.") from None
        except IsADirectoryError:
            raise CalcoreError(f"{str(path)!r} is a directory, not a file.") from None
        display = name or path.name
        return Source(display, data, _format_of(path.name, data))
    data = _buffer_bytes(path_or_buffer)
    buffer_name = getattr(path_or_buffer, "name", None)
    buffer_name = PurePath(buffer_name).name if isinstance(buffer_name, str) else None
    display = name or buffer_name or "<upload>"
    return Source(display, data, _format_of(buffer_name or name or "", data))


def path_format(path) -> str | None:
    """The format :func:`open_source` would give the file at ``path`` (from its name, else
    its first bytes), reading at most 4 bytes; None for a missing or unreadable path."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError:
        return None  # open_source says why
    return _format_of(Path(path).name, magic)


def _buffer_bytes(obj) -> bytes:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj)
    if hasattr(obj, "getvalue"):  # BytesIO / UploadedFile: independent of the read position
        data = obj.getvalue()
    elif hasattr(obj, "read"):
        data = obj.read()
    else:
        raise CalcoreError(
            f"path_or_buffer must be a path, bytes or a binary file object, got "
            f"{type(obj).__name__}."
        )
    if isinstance(data, str):
        raise CalcoreError(
            "path_or_buffer is a text-mode file; open it in binary mode (open(path, 'rb')) "
            "or pass the path."
        )
    return bytes(data)


def _format_of(file_name: str, data: bytes) -> str:
    fmt = _EXTENSIONS.get(PurePath(file_name).suffix.lower())
    if fmt is not None:
        return fmt
    if data.startswith(_ZIP_MAGIC):
        return "npz"
    if data.startswith(_PARQUET_MAGIC):
        return "parquet"
    return "csv"


def misnamed_binary(data: bytes) -> str | None:
    """The real format of a binary file named like a CSV, if its magic says so."""
    if data.startswith(_ZIP_MAGIC):
        return "a zip/NPZ archive"
    if data.startswith(_PARQUET_MAGIC):
        return "a Parquet file"
    return None
