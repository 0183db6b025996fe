"""CSV files read piece by piece: the loader's reader and messages on bounded memory.

A piece is a run of whole lines (cut at a line end outside quotes) that is read
like a small CSV file: the header's bytes followed by the piece, parsed by
:func:`calcore.io._csv.read_csv_columns` with the piece's first file line in its
layout, so every message names the line of the whole file (``line 73,000,002``)
and the checks are those of :func:`calcore.load_predictions`. The pieces are read
with Python's buffered file reads; nothing is held beyond one piece and the bytes
of a line that crosses its end.

pyarrow's streaming CSV reader was not used: its errors do not name the file
line, and its per-block type inference disagrees with the loader's rules on
cells such as ``1,234`` or ``nan``.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from typing import Iterator

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import CSV_FIRST_LINES_BYTES
from calcore.foundation.tuning import CSV_STREAM_MAX_PIECE_BYTES as MAX_PIECE_BYTES
from calcore.foundation.tuning import CSV_STREAM_MIN_PIECE_BYTES as MIN_PIECE_BYTES
from calcore.io._csv import CsvLayout, read_csv_columns, record_lines, scan_csv
from calcore.io._source import Source, open_source, path_format

__all__ = ["CsvHead", "csv_head", "csv_pieces", "read_piece"]

#: Bytes read to find the header and the preview rows.
HEAD_BYTES = 1 << 20
#: A quoted value may hold line breaks; one longer than this many pieces is an
#: unclosed quote rather than data.
MAX_PIECES_PER_RECORD = 4

_WHITESPACE = b" \t\r\n"


@dataclass(frozen=True)
class CsvHead:
    """A CSV file's header and first rows.

    Attributes
    ----------
    header : bytes
        The file's bytes up to the first data line (byte order mark and header line).
    layout : CsvLayout
        Columns, delimiter and preview, from the first :data:`HEAD_BYTES`.
    bytes_per_row : float
        Average bytes of the preview's lines, to size pieces and estimate rows.
    size : int
        The file's size in bytes.
    """

    header: bytes
    layout: CsvLayout
    bytes_per_row: float
    size: int

    def estimated_rows(self) -> int:
        return max(1, round((self.size - len(self.header)) / self.bytes_per_row))

    def piece_bytes(self, batch_rows: int) -> int:
        wanted = int(batch_rows * self.bytes_per_row)
        return max(MIN_PIECE_BYTES, min(MAX_PIECE_BYTES, wanted))


def csv_head(path: str, name: str) -> CsvHead:
    """Read the header and the first rows of the CSV file at ``path``.

    At most about twice :data:`~calcore.foundation.limits.CSV_FIRST_LINES_BYTES` are read, in
    blocks scanned once each: a file whose first lines do not end by then is refused
    (a sparse or NUL-filled file of gigabytes is not read whole to find a line end).

    Raises
    ------
    CalcoreError
        As :func:`calcore.io._csv.scan_csv` (empty file, a binary file named .csv, a
        bad header, a first line over the limit, no data rows).
    """
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        data, whole_lines = _read_head(f, size)
    if len(data) < size and whole_lines:  # cut after the last whole line
        data = data[: data.rfind(b"\n") + 1]
    layout = scan_csv(Source(name, data, "csv"))
    lines = data.count(b"\n", layout.body_start)
    body = len(data) - layout.body_start
    per_row = body / max(lines, 1) if lines else max(body, 1)
    return CsvHead(data[: layout.body_start], layout, max(per_row, 1.0), size)


def _zip_or_ole(path) -> bool:
    """Whether the file starts like a zip archive or an OLE2 file (a workbook, maybe)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(8)
    except OSError:
        return False
    return magic.startswith(b"PK\x03\x04") or magic == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def open_source_bounded(path_or_buffer, *, name: str | None = None) -> Source:
    """:func:`~calcore.io._source.open_source`, after checking a CSV path's first lines
    with :func:`csv_head`: a sparse or NUL-filled file of gigabytes is refused after a few
    MB instead of being read whole first (3 GB: 11 s and 3.3 GB of memory before)."""
    if isinstance(path_or_buffer, (str, os.PathLike)) and path_format(path_or_buffer) == "csv":
        if not _zip_or_ole(path_or_buffer):  # a workbook named .csv: open_source says so
            csv_head(os.fspath(path_or_buffer), name or os.path.basename(path_or_buffer))
    return open_source(path_or_buffer, name=name)


#: Bytes after which the head is read no further: a byte order mark, the header line and
#: the first data line, each at its limit, and their line ends.
_HEAD_READ_LIMIT = 3 + 2 * (CSV_FIRST_LINES_BYTES + 1)


def _read_head(f, size: int) -> tuple[bytes, bool]:
    """The file's first :data:`HEAD_BYTES` or more: until the header and a whole data line
    are in (two line ends), the file ends, or :data:`_HEAD_READ_LIMIT` bytes are read.

    Returns the bytes and whether they hold the two line ends. Each block is searched
    once and the blocks are joined once (growing one bytes object and counting its line
    ends again after each read took quadratic time on a long first line).
    """
    blocks, n_read, line_ends = [], 0, 0
    while n_read < size and (not blocks or (line_ends < 2 and n_read < _HEAD_READ_LIMIT)):
        block = f.read(HEAD_BYTES)
        if not block:
            break
        blocks.append(block)
        n_read += len(block)
        line_ends += block.count(b"\n")
    return b"".join(blocks), line_ends >= 2


_QUOTES: dict[bytes, re.Pattern] = {}


def _field_quotes(delimiter: bytes) -> re.Pattern:
    """Quotes that can open or close a quoted field: at a field's start, or before a
    delimiter or line end. A quote inside unquoted text (``5" screen``) is a literal
    character to the CSV parsers, so it must not flip the "inside quotes" state."""
    if delimiter not in _QUOTES:
        d = re.escape(delimiter)
        _QUOTES[delimiter] = re.compile(rb"(?:^|(?<=[\n" + d + rb']))"|"(?=[\r\n' + d + rb"]|$)")
    return _QUOTES[delimiter]


def _cut(data: bytes, quotes: re.Pattern) -> int:
    """The end of the last whole record of ``data`` (which starts a record): after its last
    line end outside quotes, ``-1`` if none."""
    nl = data.rfind(b"\n")
    if nl < 0 or b'"' not in data:
        return nl + 1 if nl >= 0 else -1
    positions = [m.start() for m in quotes.finditer(data)]
    while nl >= 0:
        if bisect.bisect_left(positions, nl) % 2 == 0:
            return nl + 1
        nl = data.rfind(b"\n", 0, nl)  # inside a quoted value: an earlier line end
    return -1


def _content_end(lines: bytes) -> int:
    """The end of ``lines`` (whole lines) without its trailing empty lines: a piece that
    is not the file's last must end with a line of content, because the parser reads no
    row for an empty line at the end of its input while the loader counts it as a row."""
    end = len(lines)
    while end > 0:
        start = lines.rfind(b"\n", 0, end - 1) + 1
        if lines[start : end - 1].strip(b"\r"):
            return end
        end = start
    return 0


def csv_pieces(
    path: str, name: str, head: CsvHead, piece_bytes: int
) -> Iterator[tuple[Source, CsvLayout]]:
    """The file's data as pieces of whole lines, each a small CSV ``(source, layout)``.

    Trailing blank lines of the file are dropped (as :func:`scan_csv` does); blank
    lines elsewhere stay rows, as in the loader (they start the next piece).

    Raises
    ------
    CalcoreError
        A quoted value spanning more than :data:`MAX_PIECES_PER_RECORD` pieces (an
        unclosed quote), naming the line where it starts.
    """
    header, base = head.header, head.layout
    quotes = _field_quotes(base.delimiter.encode())
    first_line, first_byte = 2, len(header)
    pending = b""  # whole lines held back until data follows them
    carry = b""  # bytes after the last whole record read
    with open(path, "rb") as f:
        f.seek(len(header))
        while chunk := f.read(piece_bytes):
            data = carry + chunk
            end = _cut(data, quotes)
            if end <= 0:
                if len(data) > MAX_PIECES_PER_RECORD * piece_bytes:
                    line = first_line + pending.count(b"\n")
                    raise CalcoreError(
                        f"{name}, line {line}: the record starting here runs over "
                        f"{len(data):,} bytes without a line end outside quotes. Check for an "
                        f'unclosed quote (").'
                    )
                carry = data
                continue
            new, carry = data[:end], data[end:]
            if new.strip(_WHITESPACE) and pending.strip(_WHITESPACE):
                k = _content_end(pending)  # data follows: yield up to the last content line
                yield _piece(name, header, base, pending[:k], first_line, first_byte, False)
                first_line += pending.count(b"\n", 0, k)
                first_byte += k
                pending = pending[k:]
            pending += new
    last = pending + carry
    if last.strip(_WHITESPACE):
        yield _piece(name, header, base, last, first_line, first_byte, True)


def _piece(name, header: bytes, base: CsvLayout, piece: bytes, first_line, first_byte, ends_file):
    data = header + piece
    start, end = len(header), len(data)
    if ends_file:
        while end > start and data[end - 1] in _WHITESPACE:
            end -= 1
    else:  # the piece ends with its last line's end
        end -= 1
        if end > start and data[end - 1] == 0x0D:
            end -= 1
    layout = CsvLayout(
        start,
        end,
        base.delimiter,
        base.columns,
        (),
        data.count(b"\n", start, end) + 1,
        first_line=first_line,
        ends_file=ends_file,
        first_byte=first_byte,
        decimal=base.decimal,
    )
    return Source(name, data, "csv"), layout


def read_piece(src: Source, layout: CsvLayout, *, floats, texts):
    """The float and text columns of a piece (as :func:`read_csv_columns`) and the file
    line of each row when a quoted line break makes rows and lines differ (else None)."""
    scores, text = read_csv_columns(src, layout, floats=floats, texts=texts)
    return scores, text, record_lines(src, layout, scores.shape[0])
