"""Each row's position, computed inside Spark: the key of per-row randomness.

The embedded engine numbers rows in the order it reads them: the data files of a
directory or glob sorted by path (:func:`calcore.io.stream.source_files`), each file's
rows in order. A row's position is therefore ``offset of its file + its index in the
file``, where a file's offset is the total rows of the files before it in path order.
Spark gives both parts (``_metadata.file_path`` and, for Parquet in Spark 4,
``_metadata.row_index``), so the position is one int64 computed in the JVM, whatever
Spark does to the rows afterwards (repartition, shuffle, filter): never a partition id,
``monotonically_increasing_id`` or the order tasks finish in.
"""

from __future__ import annotations

import posixpath
from urllib.parse import unquote, urlsplit

from calcore.foundation.errors import CalcoreError, quoted

__all__ = ["POSITION_COLUMN", "KEY_HASH_SEED", "with_row_positions", "file_offsets", "local_path"]

#: The column :func:`with_row_positions` adds unless told another name.
POSITION_COLUMN = "_calcore_position"
#: Spark's ``xxhash64`` seed (fixed by Spark, shown here because the embedded engine
#: must hash a ``row_key`` the same way to draw the same per-row numbers).
KEY_HASH_SEED = 42


def local_path(uri: str) -> str:
    """A file URI as Spark writes it (``file:/x/a%20b.parquet``, ``file:///x/...``) as
    the path calcore sorts (``/x/a b.parquet``); other schemes (``s3a://bucket/k``) keep
    their scheme and host, with the path percent-decoded.

    Examples
    --------
    >>> from calcore.spark import local_path
    >>> local_path("file:/data/a%20b.parquet"), local_path("file:///data/c.parquet")
    ('/data/a b.parquet', '/data/c.parquet')
    """
    parts = urlsplit(uri)
    path = unquote(parts.path)
    if parts.scheme in ("", "file"):
        return posixpath.normpath(path) if path else path
    return f"{parts.scheme}://{parts.netloc}{path}"


def file_offsets(spark, files) -> dict[str, int]:
    """Each Parquet file's offset: the rows of the files before it in calcore's order.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    files : sequence of str
        The data files, as Spark lists them (``DataFrame.inputFiles()``).

    Returns
    -------
    dict of str to int
        ``{file path as _metadata.file_path spells it: offset}``.

    Raises
    ------
    CalcoreError
        Two files that are the same path once decoded.

    Examples
    --------
    >>> from calcore.spark import file_offsets
    >>> file_offsets(spark, df.inputFiles())  # doctest: +SKIP
    {'file:/data/part-0.parquet': 0, 'file:/data/part-1.parquet': 1000}
    """
    return _offsets(_file_counts(spark, files))


def _file_counts(spark, files, selected=None) -> dict[str, tuple[str, int]]:
    """``{decoded path: (path as _metadata.file_path spells it, rows)}``: each file's rows,
    or with ``selected`` (a boolean Column of the files' columns) its selected rows."""
    from pyspark.sql import functions as F

    files = list(files)
    if not files:
        return {}
    # Row counts from the files themselves, not from the caller's DataFrame (which may
    # be filtered): a job over the metadata column only, answered from the footers (with
    # ``selected``, a scan of the columns it reads).
    # Spark lists files as URIs (a space is "%20"); read back, a path is taken as written
    read = spark.read.parquet(*[local_path(f) for f in files])
    if selected is None:
        count = F.count(F.lit(1))
    else:
        count = F.sum(F.coalesce(selected, F.lit(False)).cast("long"))
    counts = (
        read.groupBy(F.col("_metadata.file_path").alias("path"))
        .agg(F.coalesce(count, F.lit(0)).alias("count"))
        .collect()
    )
    by_path: dict = {}
    for row in counts:
        key = local_path(row["path"])
        if key in by_path:
            raise CalcoreError(
                f"{quoted(row['path'])} and {quoted(by_path[key][0])} are the same file once "
                "decoded; give each file once."
            )
        by_path[key] = (row["path"], int(row["count"]))
    return by_path


def _offsets(by_path) -> dict[str, int]:
    offsets, total = {}, 0
    for key in sorted(by_path):  # calcore's order: the decoded paths, sorted as strings
        spelled, n = by_path[key]
        offsets[spelled] = total
        total += n
    return offsets


def with_row_positions(
    df, *, column: str = POSITION_COLUMN, row_key: str | None = None, offsets=None
):
    """``df`` with each row's position as one int64 column, computed in Spark.

    Without ``row_key`` the position is the row's index in calcore's reading order of
    the same files: the file's offset among the input files sorted by path (the rows of
    the files before it) plus ``_metadata.row_index``. It is the same for a row however
    Spark partitions, shuffles or filters ``df`` afterwards, and equals the position the
    embedded engine (:func:`calcore.scan`) gives the row when it reads the same
    directory.

    With ``row_key`` (tables without a stable file order: compacted, joined, Delta
    after OPTIMIZE) the "position" is Spark's ``xxhash64(row_key)`` (seed
    :data:`KEY_HASH_SEED`, of Spark's binary form of the value: UTF-8 bytes of a
    string, 8 bytes of a long): a 64-bit key per row that depends on the row's key
    only. It is not an index (not 0..n-1), and the embedded engine has no such key yet:
    numbers drawn from it match the embedded engine only once that engine hashes the
    same key the same way.

    The positions number the files Spark read (``df.inputFiles()``): they equal
    calcore's when both read the same files. Spark reads a directory's top level only
    (and ``key=value`` partition folders), calcore every subfolder:
    ``spark.read.option("recursiveFileLookup", "true").parquet(path)`` reads what
    calcore reads.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Read straight from Parquet files (``spark.read.parquet(path)``) when ``row_key``
        is None: ``_metadata`` exists only there (call this before joins/unions).
    column : str
        Name of the added column.
    row_key : str, optional
        A column that identifies each row (an id).
    offsets : dict, optional
        :func:`file_offsets` of ``df.inputFiles()``, when the caller has them already
        (saves the job that counts each file's rows).

    Returns
    -------
    pyspark.sql.DataFrame
        ``df`` and the int64 column ``column``.

    Raises
    ------
    CalcoreError
        ``column`` already in ``df``; ``row_key`` not a column of ``df``; a DataFrame
        without files or without ``_metadata.row_index`` (not read from Parquet: give
        ``row_key``).

    Examples
    --------
    >>> import calcore.spark
    >>> df = calcore.spark.with_row_positions(spark.read.parquet("logs/"))  # doctest: +SKIP
    >>> df.orderBy("_calcore_position").first()["_calcore_position"]  # doctest: +SKIP
    0
    """
    from pyspark.sql import functions as F

    if column in df.columns:
        raise CalcoreError(
            f"column {quoted(column)} is already in the DataFrame; give column= another name."
        )
    if row_key is not None:
        if row_key not in df.columns:
            raise CalcoreError(
                f"row_key={quoted(row_key)} is not a column of the DataFrame (columns: "
                f"{', '.join(map(quoted, df.columns[:20]))}). Name the column that "
                "identifies each row."
            )
        return df.withColumn(column, F.xxhash64(F.col(row_key)).cast("long"))
    files = df.inputFiles()
    if not files:
        raise CalcoreError(
            "this DataFrame was not read from files, so its rows have no position; give "
            "row_key= (a column that identifies each row)."
        )
    try:
        _ = df.select(F.col("_metadata.row_index"), F.col("_metadata.file_path")).schema
    except Exception as exc:  # analysis errors differ between classic and Connect
        short = " ".join(str(exc).split())[:200]
        raise CalcoreError(
            f"row positions need Parquet files read straight into the DataFrame "
            f"(_metadata.file_path and _metadata.row_index); this one has none ({short}). "
            "Call with_row_positions on spark.read.parquet(...) before joins or unions, "
            "or give row_key=."
        ) from None
    try:
        offsets = file_offsets(df.sparkSession, files) if offsets is None else offsets
    except CalcoreError:
        raise
    except Exception as exc:
        short = " ".join(str(exc).split())[:200]
        raise CalcoreError(
            f"Spark cannot count the rows of the input files ({len(files)}, the first "
            f"{local_path(files[0])}): {short}"
        ) from None
    table = F.create_map(*[F.lit(x) for item in sorted(offsets.items()) for x in item])
    position = table[F.col("_metadata.file_path")] + F.col("_metadata.row_index")
    return df.withColumn(column, position.cast("long"))


#: The column :func:`with_split_positions` adds unless told another name.
SPLIT_POSITION_COLUMN = "_calcore_split_position"


def with_split_positions(df, selected, *, column: str = SPLIT_POSITION_COLUMN, files=None):
    """``df`` with each selected row's position among the selected rows, computed in Spark.

    The embedded reader (``calcore.scan(path, split=...)``) numbers the rows of the
    selected split only: a selected row's position is the number of selected rows before
    it, in calcore's reading order (files sorted by path, rows in file order). This
    computes that number: the selected rows of the files before the row's file (one job
    over the files, collected to the driver), plus the selected rows before it in its
    own file (a running count over a window partitioned by ``_metadata.file_path`` and
    ordered by ``_metadata.row_index``).

    The window is a shuffle of ``df``'s rows by file, run again by every job over the
    result: exact whatever the partitioning, and cheap at the sizes calcore's tests and
    most evaluation sets have; on billions of rows a split column materialized as its own
    files (one split per directory) avoids it. A row that is not selected gets a
    meaningless value (the running count), never read.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Read straight from Parquet files (``_metadata`` exists only there).
    selected : pyspark.sql.Column
        True for the selected rows (null: not selected).
    column : str
        Name of the added column.
    files : sequence of str, optional
        ``df.inputFiles()``, when the caller has them.

    Returns
    -------
    pyspark.sql.DataFrame
        ``df`` and the int64 column ``column``.

    Raises
    ------
    CalcoreError
        ``column`` already in ``df``; a DataFrame not read from files.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if column in df.columns:
        raise CalcoreError(
            f"column {quoted(column)} is already in the DataFrame; give column= another name."
        )
    files = list(df.inputFiles() if files is None else files)
    if not files:
        raise CalcoreError(
            "this DataFrame was not read from files, so its rows have no position; give "
            "row_key= (a column that identifies each row)."
        )
    offsets = _offsets(_file_counts(df.sparkSession, files, selected))
    table = F.create_map(*[F.lit(x) for item in sorted(offsets.items()) for x in item])
    one = F.coalesce(selected, F.lit(False)).cast("long")
    path = F.col("_metadata.file_path")
    running = (
        Window.partitionBy(path)
        .orderBy(F.col("_metadata.row_index"))
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    before = F.sum(one).over(running) - one  # the selected rows before this one in its file
    return df.withColumn(column, (table[path] + before).cast("long"))
