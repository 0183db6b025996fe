"""Public loaders: :func:`load_predictions` and :func:`load_splits`."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from calcore.foundation.errors import CalcoreError, EmptySplitError
from calcore.io._rows import build_predictions
from calcore.io.options import LoadOptions, check_split, options_from
from calcore.predictions import Predictions

__all__ = ["load_predictions", "load_splits"]


def load_predictions(
    path_or_buffer,
    *,
    label_column: str | None = None,
    scores: str = "auto",
    split_column: str | None = None,
    split: str | None = None,
    renormalize: bool = False,
    positive_class: str | None = None,
    name: str | None = None,
    score_columns: Sequence[str] | None = None,
    max_decoded_bytes: int | None = None,
    weight_column: str | None = None,
    percent: bool = False,
    slice_columns: Sequence[str] | None = None,
    decimal: str = ".",
    options: LoadOptions | None = None,
) -> Predictions:
    """Load predicted scores and true labels from a CSV, Parquet or NPZ file.

    Parameters
    ----------
    path_or_buffer : str, os.PathLike, bytes or binary file-like
        The file. Buffers (e.g. Streamlit's ``UploadedFile``) are named by their
        ``name`` attribute. The format comes from the extension (``.csv``,
        ``.tsv``, ``.txt``, ``.parquet``, ``.pq``, ``.npz``), else from the
        content (zip magic: NPZ; ``PAR1``: Parquet; else CSV).
    label_column : str, optional
        Column with the true labels. Default: the one column named ``label``,
        ``y``, ``target``, ``true_label`` or ``class`` (any case). NPZ: the
        array name (default ``labels``).
    scores : {"auto", "probs", "logits"}, default "auto"
        How to read the score columns. ``"auto"``: the prefix decides (see Notes);
        without a probability or logit prefix, logits if any value is outside
        [0, 1], else probabilities (rows that then do not sum to 1 are an error,
        not a guess). Values that look like percentages are refused rather than
        read as logits: every value in [0, 100], some above 1, and every row
        summing to 100 (within 100 times the probability tolerance); so is a
        single column (binary shortcut) with every value in [0, 100] and some
        above 1, since as logits a column without a negative value would have
        every row predict the positive class. Pass ``percent=True`` for
        percentages, ``"logits"`` for such logits. NPZ: the array name
        (``probs``/``logits``) decides
        unless given here. ``"logits"`` keeps the logits
        (:meth:`Predictions.from_logits` semantics).
    split_column : str, optional
        Column saying which rows are for calibration and which for testing.
        Default: a column named ``split`` (any case), if any. Values
        ``calib``/``calibration``/``cal``/``val``/``validation`` mean
        ``"calib"``, ``test``/``eval`` mean ``"test"`` (any case).
    split : {None, "calib", "test"}
        Load only that split; ``None`` loads every row (the report says so).
    renormalize : bool, default False
        Rescale probability rows whose sum is off by more than the tolerance
        instead of raising; the report counts them and gives the worst deviation.
    positive_class : str, optional
        With a single score column (binary shortcut): the label value whose
        probability the column holds. Default: the column's class name (with
        0/1 labels: 1).
    name : str, optional
        Name used in messages and the report. Default: the file name, the
        buffer's ``name``, or ``"<upload>"``.
    score_columns : sequence of str, optional
        The score columns, one per class, in class order (overrides detection;
        e.g. after a user edited :func:`inspect_table`'s result).
    max_decoded_bytes : int, optional
        Budget of decoded bytes: a file whose decoded values would take more is
        refused with a :class:`CalcoreError` before they are read (memory and
        zip-bomb guard). Default: the environment variable
        ``CALCORE_MAX_DECODED_BYTES`` if set, else 512 MiB
        (:data:`calcore.io.DEFAULT_MAX_DECODED_BYTES`). Estimated before
        decoding: CSV, data lines x columns x 8 bytes; Parquet, the metadata's
        uncompressed size and rows x columns read x 8 bytes; NPZ, the members'
        declared sizes and the array shapes from the ``.npy`` headers.
    weight_column : str or False, optional
        Column (NPZ: array) of row weights: frequency weights, finite and >= 0, not all
        0 (integer weights equal repeated rows). Default: the one column named
        ``weight``, ``weights``, ``sample_weight`` or ``example_weight`` (any case), if
        any; ``False``: no weights, whatever the names. The predictions carry them as
        ``sample_weight``, which every metric, diagram, report and calibrator fit uses.
    percent : bool, default False
        The scores are probabilities in percent: divide them by 100 before the usual
        checks (values in [0, 1], rows summing to 1), for CSV, Parquet and NPZ alike;
        the report says so. Probabilities only: with ``scores="auto"`` it reads
        probabilities unless the prefix (``logit_``) or NPZ array name (``logits``)
        says logits, which is an error, as is ``scores="logits"``.
    slice_columns : sequence of str, optional
        Columns kept as metadata for slicing whatever their values (never taken for
        score columns: in a file without a score prefix a numeric column would
        otherwise be a class). Every column that is not a label, split, weight or
        score column is kept anyway (CSV, Parquet; in an NPZ archive every other array
        of one number, boolean, string or datetime per row), as ``preds.metadata``
        (:class:`calcore.predictions.metadata.MetadataColumn`): its kind and number of values are
        in the load report; a text column with more than 1,000 distinct values (an id)
        is counted, not kept.
    decimal : {".", ","}, default "."
        The decimal mark of a CSV's numbers: ``","`` reads ``0,25`` as 0.25, exactly (the
        same correctly rounded conversion as ``0.25``), for a file saved by a spreadsheet
        in a locale with decimal commas (fields then separated by ``;`` or tabs: refused
        with ``,``). A cell with a decimal point is then not a number. Parquet and NPZ
        store numbers, not text: the option does not apply to them. Without it, such a
        file is refused naming its column and first cell.
    options : LoadOptions, optional
        Every option above but ``split``, ``name`` and ``max_decoded_bytes``, as one
        object (:class:`calcore.LoadOptions`), instead of keyword arguments.

    Returns
    -------
    Predictions
        With ``load_report`` set to a :class:`LoadReport`.

    Raises
    ------
    CalcoreError
        Naming the file, column and first offending row, and the fix: empty
        file, header without rows, missing or ambiguous label column, blank or
        duplicate column names, non-numeric, empty, NaN or infinite cells,
        negative probabilities, rows not summing to 1 (without
        ``renormalize``), logits given as probabilities, labels that are not
        classes, fewer than 2 classes, unknown split values, non-UTF-8 bytes,
        lines with missing or extra fields, pickled NPZ arrays, files over the
        ``max_decoded_bytes`` budget, negative, NaN or all-zero weights,
        percentages read with ``scores="auto"`` (without ``percent=True``),
        ``percent=True`` with logits.
    TypeError
        ``options`` together with a keyword argument it holds.

    Warns
    -----
    CalcoreWarning
        Renormalised rows, classes that never occur as a label, ignored columns.

    Notes
    -----
    *Score columns.* If columns start with a known prefix (``p_``, ``prob_``,
    ``proba_``, ``probs_``, ``score_``, ``logit_``, ``logits_``), the score
    columns are those with that prefix, which is stripped to give the class
    names; other columns are ignored (reported). Without a prefix, every column
    other than the label and split columns is a score column, except
    identifier columns (``id``, ``index``, ``idx``, ``sample_id``,
    ``image_id``, ``file``, ``filename``, ``path``) and columns with no number
    in their first 100 rows (both reported).

    *Labels* are class names or integer indices ``0..L-1`` into the score
    columns; names win when the class names are numbers. An index is written
    with the ASCII digits only, without sign, spaces, underscores or leading
    zeros (``2``; not ``" 2"``, ``"+2"``, ``"02"``, ``"2_0"`` or ``"٢"``, which
    are refused unless they are class names).

    *Binary shortcut.* A single score column holds P(positive class) (or its
    logit); the classes are ``[negative, positive]`` with probabilities
    ``[1 - p, p]``. Labels ``0``/``1`` give ``("not <name>", "<name>")``; two
    string labels give ``(<other label>, <positive label>)``.

    *Row numbers in messages.* CSV: file lines, header = line 1 (blank lines
    inside the data count, so numbers match an editor). Parquet/NPZ:
    ``row k (0-based)``. Rows keep their file numbers after split selection.

    *CSV dialect.* Delimiter comma, semicolon or tab (sniffed from the header),
    UTF-8 with or without BOM, LF or CRLF, standard quoting (``"0.5"`` is a
    number). Thousands separators and decimal commas are not numbers (spaces
    around a number are tolerated), unless ``decimal=","``.

    Examples
    --------
    >>> import io
    >>> p = load_predictions(io.BytesIO(b"label,p_cat,p_dog\\ncat,0.8,0.2\\ndog,0.4,0.6\\n"))
    >>> p.class_names, p.labels.tolist()
    (('cat', 'dog'), [0, 1])
    """
    from calcore.io._load import prepare_table  # pandas/pyarrow: on use

    options = options_from(options, "load_predictions", locals())  # the keyword arguments
    check_split(split)
    table, split_values, classes, kind, reason = prepare_table(
        path_or_buffer, options, name=name, max_decoded_bytes=max_decoded_bytes
    )
    rows = None
    if split is not None:
        if split_values is None:
            raise CalcoreError(
                f"{table.source}: split={split!r} was requested but there is no split column "
                f"(columns: {list(table.columns)}). Pass split_column='<name>' or split=None."
            )
        rows = np.flatnonzero(split_values == split)
        if rows.size == 0:
            raise EmptySplitError(
                f"{table.source}: no rows have split {split!r} in column {table.roles.split!r}. "
                f"Use split=None to load every row.",
                source=table.source,
                split=split,
                column=table.roles.split,
            )
    return build_predictions(
        table, classes, kind, reason, options, rows=rows, split=split, split_values=split_values
    )


def load_splits(
    path_or_buffer,
    *,
    label_column: str | None = None,
    scores: str = "auto",
    split_column: str | None = None,
    renormalize: bool = False,
    positive_class: str | None = None,
    name: str | None = None,
    score_columns: Sequence[str] | None = None,
    max_decoded_bytes: int | None = None,
    weight_column: str | None = None,
    percent: bool = False,
    decimal: str = ".",
    options: LoadOptions | None = None,
) -> dict[str, Predictions]:
    """Load a file once and return its calibration and test rows separately.

    Parameters
    ----------
    path_or_buffer, label_column, scores, split_column, renormalize, positive_class, name
        As in :func:`load_predictions`.
    score_columns, max_decoded_bytes, weight_column, percent, decimal, options
        As in :func:`load_predictions` (``options`` may also name ``slice_columns``).

    Returns
    -------
    dict of str to Predictions
        ``{"calib": ..., "test": ...}`` holding the splits that have rows; all
        share the class names (derived from the whole file) and the scores kind.
        Without a split column: ``{"all": <every row>}``.

    Raises
    ------
    CalcoreError
        As :func:`load_predictions`; each split is validated with its file line
        numbers.

    Examples
    --------
    >>> import calcore
    >>> data = (b"label,p_a,p_b,split\\na,0.9,0.1,calib\\nb,0.3,0.7,calib\\n"
    ...         b"a,0.6,0.4,test\\nb,0.2,0.8,test\\n")
    >>> splits = calcore.load_splits(data)
    >>> sorted(splits), splits["calib"].n_samples, splits["test"].class_names
    (['calib', 'test'], 2, ('a', 'b'))
    """
    from calcore.io._load import prepare_table  # pandas/pyarrow: on use

    options = options_from(options, "load_splits", locals())  # the keyword arguments
    table, split_values, classes, kind, reason = prepare_table(
        path_or_buffer, options, name=name, max_decoded_bytes=max_decoded_bytes
    )
    common = dict(split_values=split_values)
    if split_values is None:
        return {
            "all": build_predictions(
                table, classes, kind, reason, options, rows=None, split=None, **common
            )
        }
    out = {}
    for which in ("calib", "test"):
        rows = np.flatnonzero(split_values == which)
        if rows.size:
            out[which] = build_predictions(
                table, classes, kind, reason, options, rows=rows, split=which, **common
            )
    return out
