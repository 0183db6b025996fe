"""CSV: header sniffing, a fast typed read with pandas' C parser, and error diagnosis.

Reader choice (``benchmarks/bench_io.py`` and interleaved runs on this 2-core
machine, which was never idle while measuring: load average 2-5):
``pandas.read_csv(engine="c")`` with only the label/split columns typed as
text (every other column's type inferred) beat ``pyarrow.csv`` with explicit
float64 types on 50,000 x 1,000 (686 MB): bare readers 7.3 s vs 11.6 s at load
~5; ``load_predictions`` best 5.9 s vs 6.6 s wall and 8.4 vs 10.3 CPU-seconds
at load ~2. On 20,000 x 100 both load in 0.2-0.3 s. A per-column dtype map for
the score columns is avoided: pandas is pathologically slow with one (45 s on
the large file).

Bodies of 8 MiB or more are cut at line ends into one piece per CPU, read in
threads (the C parser releases the GIL); a cut inside a quoted value makes
its piece end inside quotes, which pandas reports, and the body is then read
in one piece. The fast path has no per-row Python and coerces nothing silently. Anything the
C parser does not turn into numbers, and every structural doubt, goes to the
slow checks that name the first offending line or cell, in the order of the
previous reader: non-UTF-8 bytes, lines with missing or extra fields, then
cells that are not numbers.

*Numbers.* A score cell is a plain decimal number (``0.5``, ``.5``, ``+5.``,
``1E-3``), ``nan``, ``inf`` or ``infinity`` (any case, optional sign), with
optional spaces or tabs around it; an empty cell is NaN (rejected by
validation, with its line). Values equal Python's ``float()`` of the text: the
C parser of pandas >= 3.1 rounds correctly (0 ulp difference from ``float()``
on 400,000 test strings including 17-25 significant digits and subnormals);
with older pandas the ``"round_trip"`` converter (CPython's) is requested.
"""

from __future__ import annotations

import csv
import io
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from calcore.foundation.errors import CalcoreError, quoted, quoted_list
from calcore.foundation.limits import CSV_FIRST_LINES_BYTES
from calcore.foundation.threads import worker_count
from calcore.foundation.tuning import CSV_MAX_PIECE_BYTES as _MAX_PIECE
from calcore.foundation.tuning import CSV_MIN_PIECE_BYTES as _MIN_PIECE
from calcore.io._columns import check_header_names
from calcore.io._source import Source, misnamed_binary

__all__ = ["CsvLayout", "scan_csv", "read_csv_columns", "record_lines"]

_BOM = b"\xef\xbb\xbf"
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_DELIMITERS = (",", ";", "\t")
_WHITESPACE = frozenset(b" \t\r\n")
_QUOTED = re.compile(r'"(?:[^"]|"")*"')
# What counts as a number in a score cell (see the module docstring).
_NUMBER = re.compile(
    r"[ \t]*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|nan|inf|infinity)[ \t]*",
    re.IGNORECASE,
)
# The same with a decimal comma (``decimal=","``): ``0,25``, ``,5``, ``1,5e-3``.
_NUMBER_COMMA = re.compile(
    r"[ \t]*[+-]?(?:(?:\d+,?\d*|,\d+)(?:[eE][+-]?\d+)?|nan|inf|infinity)[ \t]*",
    re.IGNORECASE,
)


def _pandas_at_least(major: int, minor: int) -> bool:
    found = re.match(r"(\d+)\.(\d+)", pd.__version__)
    return found is not None and (int(found[1]), int(found[2])) >= (major, minor)


# pandas >= 3.1 has one correctly rounded converter and deprecates the option;
# before, the default ("high") could be off by an ulp and "round_trip" is exact.
_PRECISION = {} if _pandas_at_least(3, 1) else {"float_precision": "round_trip"}


@dataclass(frozen=True)
class CsvLayout:
    """Where the data is and what the header says.

    Attributes
    ----------
    body_start, body_end : int
        Byte range of the data lines (after the header line, before trailing
        blank lines).
    delimiter : str
    columns : tuple of str
    preview : tuple of tuple of str
        The first data rows as text (at most ``preview_rows``).
    n_rows : int
    first_line : int
        The file line of the body's first line: 2, or further down for a piece of a
        streamed file (whose bytes are the header followed by that piece).
    ends_file : bool
        Whether the body ends where the file ends (a short last line then means a cut
        file).
    first_byte : int or None
        For a streamed piece, the file offset of the body's first byte (messages name
        bytes of the whole file); None when the bytes are the whole file.
    decimal : {".", ","}
        The decimal mark of the numbers (``","`` only when the caller asks for it:
        ``decimal=","`` of the loader).
    """

    body_start: int
    body_end: int
    delimiter: str
    columns: tuple[str, ...]
    preview: tuple[tuple[str, ...], ...]
    n_rows: int
    first_line: int = 2
    ends_file: bool = True
    first_byte: int | None = None
    decimal: str = "."

    @property
    def line_shift(self) -> int:
        """What to add to a line counted in the bytes (header on line 1) to get the file's."""
        return self.first_line - 2


def _utf8_error(
    source: str, data: bytes, exc: UnicodeDecodeError, base: int, layout=None
) -> CalcoreError:
    offset = base + exc.start
    line = data.count(b"\n", 0, offset) + 1
    shown = offset  # the byte as the file numbers it
    if isinstance(layout, CsvLayout) and offset >= layout.body_start:  # a streamed piece
        line += layout.line_shift
        if layout.first_byte is not None:
            shown = offset - layout.body_start + layout.first_byte
    where = f"line {line}"
    if layout is not None:  # name the column when the line has no quotes to miscount
        begin = data.rfind(b"\n", 0, offset) + 1
        if data.find(b'"', begin, offset) < 0:
            j = data.count(layout.delimiter.encode(), begin, offset)
            if j < len(layout.columns):
                where += f", column {quoted(layout.columns[j])}"
    fix = (
        "Re-save the file as UTF-8 (e.g. 'CSV UTF-8' in Excel, or "
        "df.to_csv(..., encoding='utf-8'))."
    )
    return CalcoreError(
        f"{source}, {where}: byte {shown} (0x{data[offset]:02x}) is not valid UTF-8. {fix}",
        option="encoding",
        fix=fix,
    )


def _decode(source: str, data: bytes, start: int, end: int, layout=None) -> str:
    """``data[start:end]`` as text; ``layout`` (delimiter, columns) lets errors name the column."""
    try:
        return data[start:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(source, data, exc, start, layout) from None


@dataclass(frozen=True)
class _Dialect:
    delimiter: str
    columns: tuple[str, ...]


def _records(source: str, text: str, delimiter: str, first_line: int):
    """Yield ``(file line where the record starts, fields)`` for the CSV records of ``text``.

    ``text`` starts on file line ``first_line``. A record may span lines (a quoted
    newline); a blank line is a record with no fields. Errors of the ``csv``
    module (an over-long field, usually from an unclosed quote) become
    :class:`CalcoreError` naming the line.
    """
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    start = first_line
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CalcoreError(
                f"{source}, line {start}: the record starting here cannot be read as CSV "
                f'({exc}). Check for an unclosed quote (") on this line; a cell must not '
                f"hold more than {csv.field_size_limit():,} characters."
            ) from None
        yield start, fields
        start = first_line + reader.line_num


def _sniff_delimiter(source: str, line: str) -> str:
    """The delimiter used most often in the header, outside quoted names (ties: comma first)."""
    unquoted = _QUOTED.sub("", line)
    counts = {d: unquoted.count(d) for d in _DELIMITERS}
    best = max(_DELIMITERS, key=lambda d: counts[d])  # ties: comma first
    if counts[best] == 0:
        raise CalcoreError(
            f"{source}: the header (line 1) {quoted(line)} has a single column. Separate "
            f"columns with commas, semicolons or tabs; a label column and one score column per "
            f"class are needed."
        )
    return best


def _size(n_bytes: int) -> str:
    """A byte count for a message: ``4 MiB (4,194,304 bytes)``."""
    return f"{n_bytes / (1 << 20):g} MiB ({n_bytes:,} bytes)"


def _check_text_encoding(source: str, data: bytes) -> None:
    """Refuse UTF-32 and UTF-16 files by their byte order mark (UTF-32 first: its
    little-endian mark FF FE 00 00 begins with UTF-16's FF FE)."""
    for encoding, marks in (("UTF-32", _UTF32_BOMS), ("UTF-16", _UTF16_BOMS)):
        if data.startswith(marks):
            raise CalcoreError(
                f"{source}, line 1: the file is {encoding} (it starts with a {encoding} byte "
                f"order mark), not UTF-8. Re-save the file as UTF-8 (e.g. 'CSV UTF-8' in Excel)."
            )


def _nul_error(source: str, line: int) -> CalcoreError:
    what = "the header" if line == 1 else "the first data line"
    return CalcoreError(
        f"{source}, line {line}: {what} holds NUL bytes, so the file is UTF-16/UTF-32 text or "
        f"binary (or zeros where data should be), not a UTF-8 CSV. Re-save the file as UTF-8 CSV."
    )


def _bare_cr_error(source: str) -> CalcoreError:
    return CalcoreError(
        f"{source}, line 1: lines end with a bare carriage return (CR, old Mac style), so "
        f"the whole file reads as one line. Re-save it with LF or CRLF line ends."
    )


def _first_line_end(source: str, data: bytes, start: int, line: int) -> int:
    """Where the line starting at byte ``start`` ends (its line feed, or the data's end).

    The header (``line`` 1) and the first data line must end within
    :data:`~calcore.foundation.limits.CSV_FIRST_LINES_BYTES` of their start: a file is never
    searched further for a line end (a sparse or NUL-filled file would be read whole).

    Raises
    ------
    CalcoreError
        The line runs past the limit: NUL bytes, bare carriage returns, or no line end.
    """
    bound = start + CSV_FIRST_LINES_BYTES
    nl = data.find(b"\n", start, bound + 1)
    if nl >= 0 or len(data) <= bound:
        return len(data) if nl < 0 else nl
    window = data[start:bound]
    if b"\x00" in window:
        raise _nul_error(source, line)
    if line == 1 and b"\r" in window:
        raise _bare_cr_error(source)
    what = "the header" if line == 1 else "the first data line"
    raise CalcoreError(
        f"{source}, line {line}: {what} has no line end within its first "
        f"{_size(CSV_FIRST_LINES_BYTES)}, the limit for the first lines of a CSV file, so the "
        f"file is not read further (a file of zeros, a damaged copy, or some 200,000 columns "
        f"or more?). Check that line 1 names the columns and that each line ends with a line "
        f"break."
    )


def _header_fields(source: str, data: bytes, start: int, line: str, delimiter: str) -> list:
    """The header's fields; raises if a quoted name runs past the header's line end."""
    # The line end appended closes the record: a field holding it opened a quote that
    # the header line does not close.
    (_, fields), *_ = _records(source, line + "\n", delimiter, 1)
    j = next((j for j, name in enumerate(fields) if "\n" in name), None)
    if j is not None:
        raise _header_line_break(source, data, start, delimiter, j)
    return fields


def _header_line_break(source: str, data: bytes, start: int, delimiter: str, j: int):
    """The message for column ``j`` (0-based) whose quoted name runs past line 1."""
    window = data[start : start + CSV_FIRST_LINES_BYTES].decode("utf-8", errors="replace")
    # strict: a quote still open at the end of the window is an error, not a field
    reader = csv.reader(io.StringIO(window, newline=""), delimiter=delimiter, strict=True)
    try:
        name = next(reader)[j]
        closes = reader.line_num
    except (csv.Error, StopIteration, IndexError):
        name, closes = "", 0
    if closes:
        return CalcoreError(
            f"{source}, line 1: the name of column {j + 1} (1-based), {quoted(name)}, contains a "
            f"line break (inside quotes; the name ends on line {closes}). Column names must be "
            f"on one line: remove the line break from the name (pandas: df.columns = "
            f"df.columns.str.replace('\\n', ' ')) and save the file again."
        )
    return CalcoreError(
        f'{source}, line 1: column {j + 1} (1-based) opens a quote (") that is never closed. '
        f"Column names must be on one line: close the quote at the end of the name, or remove it."
    )


def _header(source: str, data: bytes) -> tuple[int, str, tuple[str, ...], int]:
    """Return (start of header, delimiter, columns, start of the body)."""
    if not data:
        raise CalcoreError(f"{source}: the file is empty (0 bytes). Upload the file with the data.")
    kind = misnamed_binary(data)
    if kind:
        raise CalcoreError(
            f"{source}: this is {kind}, not a CSV file. Give it the right extension "
            f"(.npz or .parquet)."
        )
    _check_text_encoding(source, data)
    start = len(_BOM) if data.startswith(_BOM) else 0
    stop = _first_line_end(source, data, start, 1)
    if b"\x00" in data[start:stop]:
        raise _nul_error(source, 1)
    line = _decode(source, data, start, stop).rstrip("\r")
    if "\r" in line:
        raise _bare_cr_error(source)
    if not line.strip():
        raise CalcoreError(
            f"{source}: line 1 (the header) is blank. The first line must name the columns."
        )
    if re.fullmatch(r"\s*sep=.?\s*", line, re.IGNORECASE):
        raise CalcoreError(
            f"{source}, line 1: {quoted(line.strip())} is Excel's delimiter hint, not a header. "
            f"Delete the first line; the delimiter is detected from the header."
        )
    delimiter = _sniff_delimiter(source, line)
    fields = _header_fields(source, data, start, line, delimiter)
    columns = tuple(c.strip() for c in fields)
    check_header_names(columns, source=source)
    return start, delimiter, columns, stop + 1


def _preview(source: str, data: bytes, start: int, end: int, dialect: _Dialect, n: int):
    """The first ``n`` data rows as text: those whose line ends within
    ``CSV_FIRST_LINES_BYTES`` of the body's start (the first one does, as checked)."""
    window_end = min(end, start + CSV_FIRST_LINES_BYTES + 1)
    stop = start
    for _ in range(n):
        nl = data.find(b"\n", stop, window_end)
        if nl < 0:
            if window_end == end:  # the body's last line, without a line end
                stop = end
            break
        stop = nl + 1
    text = _decode(source, data, start, stop, dialect)
    return tuple(tuple(r) for _, r in _records(source, text, dialect.delimiter, 2))


def scan_csv(src: Source, *, preview_rows: int = 100) -> CsvLayout:
    """Read the header and the first rows of a CSV file, without reading all values.

    Raises
    ------
    CalcoreError
        Empty file, binary file named .csv, blank/duplicate/undelimited header,
        non-UTF-8 header or preview, header without data rows.
    """
    data = src.data
    _, delimiter, columns, body_start = _header(src.name, data)
    end = len(data)
    while end > body_start and data[end - 1] in _WHITESPACE:  # trailing blank lines only
        end -= 1
    if end <= body_start:
        raise CalcoreError(
            f"{src.name}: the file has a header (line 1) but no data rows. Add one row per "
            f"sample below the header."
        )
    _first_line_end(src.name, data, body_start, 2)  # the preview's first row, bounded
    n_rows = data.count(b"\n", body_start, end) + 1
    preview = _preview(src.name, data, body_start, end, _Dialect(delimiter, columns), preview_rows)
    return CsvLayout(body_start, end, delimiter, columns, preview, n_rows)


class _View(io.RawIOBase):
    """A read-only binary stream over a slice of the file's bytes (no copy of the slice)."""

    def __init__(self, data: bytes, start: int, stop: int):
        self._view = memoryview(data)[start:stop]
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), len(self._view) - self._pos)
        buffer[:n] = self._view[self._pos : self._pos + n]
        self._pos += n
        return n


def _read(src: Source, layout: CsvLayout, names, start: int, stop: int, **options):
    """Rows in bytes ``start:stop`` of the body as read by pandas' C parser, as one frame."""
    return pd.read_csv(
        io.BufferedReader(_View(src.data, start, stop)),
        engine="c",
        sep=layout.delimiter,
        header=None,
        names=names,
        index_col=False,
        skip_blank_lines=False,  # a blank line is a row of empty cells, as numbered
        keep_default_na=False,  # "NA", "null", ... are text, not missing
        encoding="utf-8",
        # with "," pandas' converter reads 0,25 as 0.25 exactly (the same correctly
        # rounded conversion: 0 ulp from float() of the text with a point)
        decimal=layout.decimal,
        **options,
    )


def _chunk_rows(n_columns: int) -> int:
    """Rows per chunk for which pandas' low-memory C reader uses a single internal buffer.

    That reader sizes its buffer as the largest power of two below 2**20 / columns
    rows; a read of more rows concatenates buffers and warns (``DtypeWarning``,
    through the process-wide warnings machinery) when a column's type differs
    between them. Reading chunks of at most one buffer never concatenates.
    """
    target = (1 << 20) // max(1, n_columns)
    rows = 1
    while rows * 2 < target:
        rows *= 2
    return rows


def _read_frames(src: Source, layout: CsvLayout, names, start: int, stop: int, dtype):
    """Rows in bytes ``start:stop`` as one or more frames, types inferred, without warnings.

    pandas warns through the process-wide warnings machinery in two cases, both
    avoided here so that loads in concurrent threads stay independent: a first
    line with more fields than the header (the caller checks it before reading),
    and a column whose inferred type differs between the internal buffers of a
    low-memory read (``DtypeWarning``). Up to ``_MAX_PIECE`` bytes are read
    with ``low_memory=False``, in one buffer (fast; the tokenizer's memory is
    bounded by the piece); larger ranges, only read when cutting into pieces
    failed, in chunks of one buffer each (slower for wide files). The caller
    compares the frames' column types itself.
    """
    options = dict(dtype=dtype, na_values=[""], **_PRECISION)
    if stop - start <= 2 * _MAX_PIECE:
        return [_read(src, layout, names, start, stop, low_memory=False, **options)]
    chunks = _read(src, layout, names, start, stop, chunksize=_chunk_rows(len(names)), **options)
    with chunks as reader:
        return list(reader)


def _pieces(src: Source, layout: CsvLayout) -> list[tuple[int, int]]:
    """Split the body at line ends into one piece per CPU (pieces of at least 4 MiB); bodies
    over 32 MiB per CPU into a multiple of the CPUs, pieces of at most about 32 MiB (each is
    read in one buffer)."""
    start, end = layout.body_start, layout.body_end
    cpus = worker_count()
    parts = max(1, min(cpus, (end - start) // _MIN_PIECE))
    if end - start > cpus * _MAX_PIECE:
        parts = cpus * -(-(end - start) // (cpus * _MAX_PIECE))
    cuts = [start]
    for k in range(1, parts):
        nl = src.data.find(b"\n", max(cuts[-1], start + (end - start) * k // parts), end)
        if nl < 0 or nl + 1 >= end:
            break
        cuts.append(nl + 1)
    return list(zip(cuts, [*cuts[1:], end], strict=True))


def _read_pieces(src: Source, layout: CsvLayout, names, dtype) -> list[pd.DataFrame] | None:
    """Read the body's pieces in parallel (pandas' C parser releases the GIL).

    ``None`` for a small body (one piece) or when a piece fails: a cut inside
    a quoted value (the piece then ends inside quotes, which pandas reports,
    or starts a piece with a partial line) or a real error, which the caller
    reproduces with a single read of the whole body.
    """
    pieces = _pieces(src, layout)
    if len(pieces) == 1:
        return None  # the caller's single read
    # pandas treats a piece's first line specially (extra fields are dropped with
    # a warning): pieces that do not start with a complete line are not read.
    for a, _ in pieces[1:]:
        if _first_row_fields(src, layout, a) != len(names):
            return None

    def read(piece):
        return _read_frames(src, layout, names, *piece, dtype)

    with ThreadPoolExecutor(min(len(pieces), worker_count())) as pool:
        futures = [pool.submit(read, piece) for piece in pieces]
        frames = []
        for f in futures:
            try:
                frames.extend(f.result())
            except (UnicodeDecodeError, pd.errors.ParserError, ValueError):
                return None
    return frames


def read_csv_columns(
    src: Source, layout: CsvLayout, *, floats: Sequence[str], texts: Sequence[str]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Read the ``floats`` columns into one float64 matrix and ``texts`` as str arrays.

    Returns
    -------
    scores : ndarray of shape (n_rows, len(floats)), float64, C-contiguous
        Empty cells are NaN (rejected later by validation, with their line).
    texts : dict of str to ndarray of object (str)
        Empty cells are ``""``.

    Raises
    ------
    CalcoreError
        The first non-UTF-8 byte, line with the wrong number of fields, or
        non-numeric cell, named by line (and column).
    """
    index = {c: j for j, c in enumerate(layout.columns)}
    names = [f"c{j}" for j in range(len(layout.columns))]
    dtype = {names[index[c]]: str for c in texts}
    # Every column is read (not only the used ones): pandas pads short lines
    # with NaN and drops extra fields of the first line (with a warning, or
    # silently after a trailing delimiter); the last column and the first line
    # reveal those. The first line is checked before reading, so pandas has
    # nothing to warn about: no process-wide warnings state is touched, and
    # concurrent loads in threads stay independent.
    if _first_row_fields(src, layout, layout.body_start) != len(names):
        _check_fields(src, layout)  # raises, unless the first record spans lines
    frames = _read_pieces(src, layout, names, dtype)
    if frames is None:
        try:
            frames = _read_frames(src, layout, names, layout.body_start, layout.body_end, dtype)
        except UnicodeDecodeError as exc:
            _check_utf8(src, layout)
            raise CalcoreError(f"{src.name}: could not read the CSV data: {_brief(exc)}") from None
        except (pd.errors.ParserError, ValueError) as exc:
            _check_fields(src, layout)
            raise CalcoreError(f"{src.name}: could not read the CSV data: {_brief(exc)}") from None
    if any(df[names[-1]].isna().any() for df in frames):  # empty last cell or short line?
        _check_fields(src, layout)
    if sum(len(df) for df in frames) > layout.n_rows:  # more rows than lines: bare CRs
        _check_bare_cr(src, layout)
    columns = [names[index[c]] for c in floats]
    parsed = {}
    kinds = [df.dtypes for df in frames]
    not_numbers = [c for c in columns if any(k[c].kind not in "fiu" for k in kinds)]
    if not_numbers:  # text such as "abc", "1,234", "nan" or "inf", or booleans
        _check_fields(src, layout)
        parsed = _parse_text_columns(src, layout, names, not_numbers)
    scores = _c_matrix(frames, columns, parsed)
    text = {
        c: np.concatenate([df[names[index[c]]].fillna("").to_numpy(dtype=object) for df in frames])
        for c in texts
    }
    return scores, text


def _c_matrix(frames: list[pd.DataFrame], columns: list[str], parsed: dict) -> np.ndarray:
    """Stack columns into a C-ordered float64 matrix (integer columns become float64)."""
    n = sum(len(df) for df in frames)
    out = np.empty((n, len(columns)), dtype=np.float64)
    # Row blocks of ~8 MiB: a cache-friendly transpose of the columns with few
    # Python steps; about 2x faster than DataFrame.to_numpy followed by
    # np.ascontiguousarray on 50,000 x 1,000 (2 MiB blocks: 1.5x slower).
    step = max(1, (8 << 20) // (8 * max(1, len(columns))))
    offset = 0
    for df in frames:
        arrays = [
            parsed[c][offset : offset + len(df)] if c in parsed else df[c].to_numpy()
            for c in columns
        ]
        for r in range(0, len(df), step):
            block = out[offset + r : offset + min(r + step, len(df))]
            np.stack([a[r : r + step] for a in arrays], axis=1, out=block, casting="unsafe")
        offset += len(df)
    return out


def record_lines(src: Source, layout: CsvLayout, n_records: int) -> np.ndarray | None:
    """The file line on which each of ``n_records`` records starts, or ``None`` if record i
    is simply on line ``i + layout.first_line`` (no record spans several lines).

    Only files with quoted line breaks need the mapping; it costs one pass of
    Python's ``csv`` module over the body.
    """
    if n_records == layout.n_rows:
        return None
    text = _decode(src.name, src.data, layout.body_start, layout.body_end, layout)
    starts = [line for line, _ in _records(src.name, text, layout.delimiter, layout.first_line)]
    return np.array(starts[:n_records], dtype=np.int64)


def _check_utf8(src: Source, layout: CsvLayout) -> None:
    _decode(src.name, src.data, layout.body_start, layout.body_end, layout)


def _first_row_fields(src: Source, layout: CsvLayout, start: int) -> int:
    """Fields on the line starting at byte ``start`` (a blank line counts as complete)."""
    nl = src.data.find(b"\n", start, layout.body_end)
    stop = layout.body_end if nl < 0 else nl
    line = _decode(src.name, src.data, start, stop, layout).rstrip("\r")
    if not line:
        return len(layout.columns)
    try:
        return len(next(csv.reader([line], delimiter=layout.delimiter)))
    except csv.Error:  # e.g. an over-long field: the same error, with its line number
        line_no = src.data.count(b"\n", 0, start) + 1 + layout.line_shift
        (_, fields), *_ = _records(src.name, line, layout.delimiter, line_no)
        return len(fields)


def _brief(exc: BaseException) -> str:
    """An exception's message on one line, at most 200 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


_BARE_CR = re.compile(rb"\r(?!\n)")


def _check_bare_cr(src: Source, layout: CsvLayout) -> None:
    """Raise on a carriage return that does not end a CRLF line end.

    pandas ends a row at a bare CR while lines are counted at LFs, so such a
    file would be read with rows split where an editor shows none.
    """
    found = _BARE_CR.search(src.data, layout.body_start, layout.body_end)
    if found is not None:
        line = src.data.count(b"\n", 0, found.start()) + 1 + layout.line_shift
        raise CalcoreError(
            f"{src.name}, line {line}: a carriage return (CR) that is not part of a CRLF line "
            f"end splits this line. Remove it, or re-save the file with LF or CRLF line ends."
        )


def _check_fields(src: Source, layout: CsvLayout) -> None:
    """Raise on the first line (row) whose field count differs from the header's.

    An empty line is a row of empty cells, not an error (its label is then
    reported by validation).
    """
    _check_utf8(src, layout)
    data, start, end = src.data, layout.body_start, layout.body_end
    expected = len(layout.columns)
    if data.find(b'"', start, end) < 0:  # no quoting: one field per delimiter, plus one
        _check_bare_cr(src, layout)
        delimiter = layout.delimiter.encode()
        pos, row = start, 0
        while True:
            nl = data.find(b"\n", pos, end)
            stop = end if nl < 0 else nl
            blank = stop == pos or (stop == pos + 1 and data[pos] == 0x0D)
            if not blank:
                actual = data.count(delimiter, pos, stop) + 1
                if actual != expected:
                    _raise_field_count(src.name, layout, row + layout.first_line, actual, expected)
            if nl < 0:
                return
            pos, row = nl + 1, row + 1
    text = _decode(src.name, data, start, end, layout)
    for line, fields in _records(src.name, text, layout.delimiter, layout.first_line):
        if fields and len(fields) != expected:
            _raise_field_count(src.name, layout, line, len(fields), expected)


def _raise_field_count(source: str, layout: CsvLayout, line: int, actual: int, expected: int):
    if actual < expected:
        cut = layout.ends_file and line == layout.n_rows + layout.first_line - 1
        last = " It is the last line: the file may have been cut off." if cut else ""
        names = quoted_list(layout.columns[actual:], limit=5, what="columns")
        raise CalcoreError(
            f"{source}, line {line}: {actual} field(s) but the header has {expected}: the line is "
            f"truncated or a value is missing (no value for column(s) {names}).{last} Complete "
            f"or remove the line."
        )
    raise CalcoreError(
        f"{source}, line {line}: {actual} fields but the header has {expected}. A value contains "
        f"the delimiter {layout.delimiter!r} (a thousands separator like 1,234 or a decimal "
        f"comma?). Remove the separator or quote the value."
    )


def _parse_text_columns(
    src: Source, layout: CsvLayout, names: list[str], columns: list[str]
) -> dict[str, np.ndarray]:
    """Parse columns the C parser left as text; raise on the first cell that is not a number.

    Slow path (Python per cell), taken only when some cell is not a plain
    number: an error, or ``nan``/``inf`` text (rejected later by validation).
    """
    try:
        df = _read(
            src,
            layout,
            names,
            layout.body_start,
            layout.body_end,
            usecols=columns,
            dtype=str,
            na_filter=False,
        )
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as exc:
        _check_fields(src, layout)
        raise CalcoreError(f"{src.name}: could not read the CSV data: {_brief(exc)}") from None
    values, first = {}, None
    position = {c: j for j, c in enumerate(names)}
    comma = layout.decimal == ","
    number = _NUMBER_COMMA if comma else _NUMBER
    for c in columns:
        cells = df[c].fillna("").to_numpy(dtype=object)
        ok = np.array([v == "" or number.fullmatch(v) is not None for v in cells], dtype=bool)
        if not ok.all():
            i = int(np.argmax(~ok))
            here = (i, position[c], cells[i])
            first = min(first or here, here)
        else:
            if comma:  # text to text, then Python's float(): exact
                cells = np.array([v.replace(",", ".") for v in cells], dtype=object)
            values[c] = np.array([float(v) if v else np.nan for v in cells], dtype=np.float64)
    if first is not None:
        i, j, value = first
        lines = record_lines(src, layout, len(df))
        line = i + layout.first_line if lines is None else int(lines[i])
        raise CalcoreError(
            f"{src.name}, line {line}, column {quoted(layout.columns[j])}: value {quoted(value)} "
            f"is not a number. Score and weight cells must be plain numbers with a "
            f"{layout.decimal!r} decimal {'comma' if comma else 'point'}: no thousands "
            f"separators, {'decimal points' if comma else 'decimal commas'} or text. Fix the cell."
        )
    return values
