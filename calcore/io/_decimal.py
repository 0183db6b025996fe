"""Numbers written with a decimal comma (``0,25``): found in a CSV's first rows, read on
request, and an exact conversion of such a file to a decimal point.

calcore reads numbers with a ``.`` decimal point unless asked otherwise, so a CSV saved
by a spreadsheet in a locale with decimal commas (usually with ``;`` between fields) has
no numeric column: without this check it was told "no score columns found". Detection
names the file, the column and the first cell, for the whole-file loader and the
streamed reader alike (:func:`with_decimal_commas`); nothing is read as a number unless
asked: ``decimal=","`` of the loaders (:func:`with_decimal`; pandas' parser reads the
comma itself, exactly), or :func:`decimal_comma_to_point`, which writes the file with
points for other tools (and for the dashboard's upload, converted before it is cached).
"""

from __future__ import annotations

import csv
import io
import re

from calcore.foundation.errors import Advice, CalcoreError, advice, quoted, quoted_list

__all__ = [
    "DECIMAL_FIX",
    "decimal_comma_columns",
    "decimal_comma_file",
    "decimal_comma_problem",
    "decimal_comma_to_point",
    "check_decimal",
    "with_decimal",
    "with_decimal_commas",
]

#: A number with a decimal comma, or an integer (a column may hold both: ``1`` and ``0,5``).
_COMMA_NUMBER = re.compile(r"[+-]?(?:\d+,\d*|,\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
#: What the message tells to do, in calcore's terms (the dashboard shows its own control).
DECIMAL_FIX = "Pass decimal=',' to read them (or save the file with '.' as the decimal point)."
#: What a comma-separated file read with ``decimal=","`` is told (option ``"decimal_drop"``).
DECIMAL_DROP_FIX = "Drop decimal=','."


def decimal_comma_columns(columns, preview, *, skip=()) -> list[tuple[str, int, str]]:
    """The columns whose first rows hold numbers with a decimal comma.

    Parameters
    ----------
    columns : sequence of str
        The header.
    preview : sequence of sequence of str
        The first rows, as text.
    skip : collection of str
        Columns not to look at (the label and split columns).

    Returns
    -------
    list of (column, row, cell)
        For each such column, the first row (0-based among the data rows) with a
        decimal comma and its text. A column counts when every non-empty cell of the
        first rows is a number with a decimal comma or an integer, and one has a comma.
    """
    found = []
    for j, column in enumerate(columns):
        if column in skip:
            continue
        cells = [(i, row[j].strip()) for i, row in enumerate(preview) if j < len(row)]
        cells = [(i, v) for i, v in cells if v]
        commas = [(i, v) for i, v in cells if _COMMA_NUMBER.fullmatch(v)]
        if commas and all(_COMMA_NUMBER.fullmatch(v) or _INTEGER.fullmatch(v) for _, v in cells):
            found.append((column, *commas[0]))
    return found


def decimal_comma_file(path, *, name: str | None = None) -> list[tuple[str, int, str]]:
    """:func:`decimal_comma_columns` of the CSV file at ``path``, from its first lines only
    (a bounded head, as :func:`calcore.scan` reads it: cheap for a file of gigabytes).

    Returns
    -------
    list of (column, row, cell)
        Empty for a file whose fields are separated by commas, or without decimal commas.

    Raises
    ------
    CalcoreError
        The head is not a CSV calcore reads (as :func:`calcore.scan` would say).
    """
    import os

    from calcore.io._csv_stream import csv_head

    layout = csv_head(os.fspath(path), name or os.path.basename(path)).layout
    if layout.delimiter == ",":
        return []
    return decimal_comma_columns(layout.columns, layout.preview)


def decimal_comma_problem(source: str, found, delimiter: str) -> Advice:
    """The message for :func:`decimal_comma_columns`' findings (non-empty)."""
    column, row, cell = found[0]
    others = [c for c, _, _ in found[1:]]
    more = f" (and {len(others):,} more: {quoted_list(others, limit=5)})" if others else ""
    return advice(
        f"{source}: column {quoted(column)}{more} holds numbers written with a decimal comma "
        f"(line {row + 2}: {quoted(cell)}), with {delimiter!r} between the fields; calcore "
        f"reads numbers with a '.' decimal point only.",
        DECIMAL_FIX,
        "decimal",
    )


def check_decimal(decimal) -> str:
    """``decimal`` (the loader's option), checked: ``"."`` or ``","``."""
    if decimal not in (".", ","):
        raise CalcoreError(f"decimal must be '.' or ',', got {decimal!r}.")
    return decimal


def with_decimal(layout, decimal: str, source: str):
    """A CSV layout whose numbers are read with the decimal mark ``decimal``.

    Raises
    ------
    CalcoreError
        ``decimal=","`` for a file whose fields are separated by commas (a decimal comma
        there would split the number in two).
    """
    if decimal == ".":
        return layout
    if layout.delimiter == ",":
        raise CalcoreError(
            f"{source}: decimal=',' was given, but the fields are separated by commas, so no "
            f"number in it can have a decimal comma. {DECIMAL_DROP_FIX}",
            option="decimal_drop",
            fix=DECIMAL_DROP_FIX,
        )
    from dataclasses import replace

    return replace(layout, decimal=decimal)


def with_decimal_commas(roles, columns, preview, source: str, delimiter: str):
    """``roles`` (what :func:`calcore.io._columns.detect_roles` found) with a decimal-comma
    problem first when the first rows write numbers with a decimal comma, and without
    "no score columns found": the scores are there, written another way.

    Shared by the whole-file loader and the streamed CSV reader (:func:`calcore.scan`),
    so that both say the same (file, column, first cell, option and fix).

    Parameters
    ----------
    roles : calcore.io._columns.Roles
    columns : sequence of str
        The header.
    preview : sequence of sequence of str
        The first rows, as text.
    source : str
        The file named in the message (the one whose first rows these are).
    delimiter : str
        The field separator; with ``","`` no cell can hold a decimal comma unquoted, and
        nothing is looked for.

    Returns
    -------
    calcore.io._columns.Roles
    """
    from dataclasses import replace

    if delimiter == ",":
        return roles
    skip = {roles.label, roles.split, *roles.label_candidates} - {None}
    found = decimal_comma_columns(columns, preview, skip=skip)
    if not found:
        return roles
    rest = tuple(p for p in roles.problems if getattr(p, "option", None) != "score_columns")
    return replace(roles, problems=(decimal_comma_problem(source, found, delimiter), *rest))


def decimal_comma_to_point(data: bytes, *, name: str | None = None) -> bytes:
    """The CSV ``data`` with every decimal comma of its decimal-comma columns made a point.

    Only the cells of the columns that :func:`decimal_comma_columns` finds in the first
    100 rows change, and in them only cells that are numbers with a decimal comma
    (``0,25`` -> ``0.25``, ``-1,5e-3`` -> ``-1.5e-3``): the conversion is exact (text to
    text; the numbers are parsed once, when the result is loaded). Every other cell is
    written back unchanged (quoting may differ where the CSV rules allow); lines end
    with ``\\n``.

    Parameters
    ----------
    data : bytes
        A UTF-8 CSV file whose fields are not separated by commas.
    name : str, optional
        Name used in messages.

    Returns
    -------
    bytes
        The converted file, UTF-8 without a byte order mark.

    Raises
    ------
    CalcoreError
        Not a CSV that this applies to: fields separated by commas, no column of
        decimal-comma numbers, or not UTF-8.

    Examples
    --------
    >>> import calcore.io
    >>> data = b"label;p_a;p_b\\na;0,75;0,25\\nb;0,1;0,9\\n"
    >>> print(calcore.io.decimal_comma_to_point(data).decode(), end="")
    label;p_a;p_b
    a;0.75;0.25
    b;0.1;0.9
    >>> calcore.io.load_predictions(calcore.io.decimal_comma_to_point(data)).n_samples
    2
    """
    from calcore.io._csv import scan_csv
    from calcore.io._source import Source

    source = name or "<upload>"
    layout = scan_csv(Source(source, data, "csv"))
    if layout.delimiter == ",":
        raise CalcoreError(
            f"{source}: fields are separated by commas, so no number in it has a decimal "
            f"comma; nothing to convert."
        )
    found = decimal_comma_columns(layout.columns, layout.preview)
    if not found:
        raise CalcoreError(
            f"{source}: no column holds numbers with a decimal comma in the first "
            f"{len(layout.preview)} rows; nothing to convert."
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CalcoreError(f"{source}: the file is not UTF-8 text; save it as CSV UTF-8.") from None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=layout.delimiter)
    out = io.StringIO()
    writer = csv.writer(out, delimiter=layout.delimiter, lineterminator="\n")
    header = next(reader)
    wanted = {c for c, _, _ in found}
    positions = [j for j, c in enumerate(header) if c in wanted]
    writer.writerow(header)
    for row in reader:
        for j in positions:
            if j < len(row) and _COMMA_NUMBER.fullmatch(row[j].strip()):
                row[j] = row[j].replace(",", ".")
        writer.writerow(row)
    return out.getvalue().encode()
