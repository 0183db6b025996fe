"""Turn ``path_or_buffer`` into bytes, a display name and a file format."""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePath

from calcore.foundation.errors import CalcoreError

__all__ = [
    "Source",
    "open_source",
    "path_format",
    "refuse_spreadsheet_file",
    "spreadsheet_kind",
    "SPREADSHEET_FIX",
]

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
#: The header of an OLE2 compound file: Excel 97-2003 workbooks (.xls), among others.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
#: What a spreadsheet's message tells to do (calcore reads no workbook: no reader of a
#: few hundred KB reads every workbook exactly, and CSV is one step away in Excel).
SPREADSHEET_FIX = "Save it as CSV (File > Save As > CSV UTF-8) and read that file."


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
        _refuse_spreadsheet(display, data)
        return Source(display, data, _format_of(path.name, data))
    data = _buffer_bytes(path_or_buffer)
    buffer_name = getattr(path_or_buffer, "name", None)
    buffer_name = PurePath(buffer_name).name if isinstance(buffer_name, str) else None
    display = name or buffer_name or "<upload>"
    _refuse_spreadsheet(display, data)
    return Source(display, data, _format_of(buffer_name or name or "", data))


def spreadsheet_kind(data: bytes) -> str | None:
    """What spreadsheet ``data`` is, by its content whatever the file's name: ``"an Excel
    workbook (.xlsx)"`` (a zip with ``xl/`` members), ``"an OpenDocument spreadsheet
    (.ods)"``, ``"an Excel 97-2003 workbook (.xls)"`` (an OLE2 file); None for anything else.

    Examples
    --------
    >>> import io, zipfile
    >>> buffer = io.BytesIO()
    >>> with zipfile.ZipFile(buffer, "w") as z:
    ...     z.writestr("xl/workbook.xml", "<workbook/>")
    >>> spreadsheet_kind(buffer.getvalue()), spreadsheet_kind(b"label,p\n")
    ('an Excel workbook (.xlsx)', None)
    """
    if data.startswith(_OLE_MAGIC):
        return "an Excel 97-2003 workbook (.xls)"
    if not data.startswith(_ZIP_MAGIC):
        return None
    return _zip_spreadsheet_kind(io.BytesIO(data))


def _zip_spreadsheet_kind(file) -> str | None:
    """What spreadsheet the zip archive ``file`` (seekable) is, or None."""
    try:  # the central directory only: cheap even for a large NPZ
        with zipfile.ZipFile(file) as archive:
            names = archive.namelist()
            if any(n.startswith("xl/") for n in names):
                return "an Excel workbook (.xlsx)"
            if "mimetype" in names and archive.getinfo("mimetype").file_size < 100:
                if b"opendocument.spreadsheet" in archive.read("mimetype"):
                    return "an OpenDocument spreadsheet (.ods)"
    except (zipfile.BadZipFile, OSError, ValueError, KeyError):
        return None  # a damaged archive: the NPZ reader says what is wrong
    return None


def refuse_spreadsheet_file(path, display: str) -> None:
    """Refuse the file at ``path`` if it is a spreadsheet, whatever its name (as
    :func:`open_source` refuses one read whole), reading its first bytes and, for a zip,
    its central directory only.

    Raises
    ------
    CalcoreError
        The file is a workbook (option ``"file"``: save it as CSV).
    """
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_OLE_MAGIC))
        if magic.startswith(_OLE_MAGIC):
            kind = "an Excel 97-2003 workbook (.xls)"
        elif magic.startswith(_ZIP_MAGIC):
            with open(path, "rb") as f:  # zipfile seeks to the central directory
                kind = _zip_spreadsheet_kind(f)
        else:
            return
    except OSError:
        return  # the reader says why
    _refuse_kind(display, kind)


def _refuse_spreadsheet(display: str, data: bytes) -> None:
    _refuse_kind(display, spreadsheet_kind(data))


def _refuse_kind(display: str, kind: str | None) -> None:
    if kind is not None:
        raise CalcoreError(
            f"{display}: this is {kind}, not a CSV, Parquet or NPZ file. {SPREADSHEET_FIX}",
            option="file",
            fix=SPREADSHEET_FIX,
        )


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
