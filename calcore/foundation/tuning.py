"""Every constant of calcore chosen by measuring speed or memory, in one place.

Each constant trades one cost against another (a block's temporaries against the calls
per block, a thread's start against the work it takes over, one method against another
from some size on), says where it is used and, where one was recorded, the measurement
that chose it (machine, what was run, the figures; the machine is the 2-core development
machine, often loaded by other jobs: "loaded" figures are CPU seconds). None of them
changes a result beyond rounding (or an iterative fit's tolerance): a block size or a
switch between two methods gives the same values, only faster or in less memory. Change
one by measuring again (``benchmarks/``).

What is not here: limits that are not tuning (validation bounds, what a URL may ask:
:mod:`calcore.foundation.limits`) and constants that change results (sample sizes of
tests, numbers of resamples, statistical thresholds: beside their functions).

This module imports nothing from calcore (every layer may read it).
"""

from __future__ import annotations

# -- threads (calcore.foundation.threads) ------------------------------------------------

#: Elements of an input from which :func:`calcore.foundation.threads.in_threads` and
#: :func:`~calcore.foundation.threads.side_by_side` split the work between threads: below it,
#: starting them costs more than they save.
MIN_THREADED_VALUES = 4_000_000
#: Threads at most of :func:`calcore.foundation.threads.in_threads` (row ranges of one array), and
#: at most :func:`calcore.foundation.threads.worker_count` (no measurement recorded beyond 2 cores).
ROW_RANGE_THREADS = 4

# -- numerical foundations ----------------------------------------------------------------

#: Values per block of :func:`calcore.foundation.softmax.log_softmax_rows` (~8 MB of float64 per
#: temporary): a block's temporaries stay in cache-friendly sizes.
SOFTMAX_BLOCK_VALUES = 1 << 20
#: (grid point, sample) pairs evaluated per chunk by the KDE estimators of
#: :mod:`calcore.foundation.kernel_density` (~8 MB per float64 temporary).
KDE_PAIR_BUDGET = 1 << 20
#: Hashes computed at a time by :func:`calcore.foundation.keyed_random.row_uniforms` and
#: :func:`~calcore.foundation.keyed_random.poisson_weights`: three uint64 arrays of this many
#: values stay in the CPU's cache between the mixer's steps.
HASH_CHUNK = 1 << 15

# -- exact order statistics (calcore.statistics.selection) --------------------------------

#: Columns shorter than this, or a single rank: ``np.partition`` directly rather than
#: the histogram's two passes.
SELECTION_MIN_VALUES = 1 << 12
#: Buckets of the selection histogram: a sixteenth of the values, within these bounds
#: (the counts of 2**16 buckets, 512 kB, stay in the L2 cache).
SELECTION_MIN_BUCKETS = 1 << 12
SELECTION_MAX_BUCKETS = 1 << 16
#: Values per chunk of a selection pass: their buckets are written into one reused buffer.
SELECTION_CHUNK = 1 << 20

# -- exact ranks over several passes (calcore.foundation.exact_ranks.ExactRanks) ----------

#: Prefixes counted in a dense table (32 MB) rather than sparsely, up to this many.
QUANTILES_DENSE_LIMIT = 1 << 22
#: Values observed at a time: their temporaries stay in cache. 100M binary rows, every
#: metric: the two selection passes took 8.6 s with whole 1M-row batches, 5.2 s so.
QUANTILES_OBSERVE_VALUES = 1 << 18
#: Codes kept before one bincount into the dense table.
QUANTILES_PENDING_VALUES = 1 << 22

# -- equal-mass cells (calcore.statistics.cuts) -------------------------------------------

#: Table entries (groups x buckets) at most of :class:`~calcore.statistics.cuts.GroupedCuts`,
#: 16 bytes each: 1 MB, which the L2 cache holds. Cells of equal-mass bins, ns a point,
#: 2**15 / 2**16 / 2**17 / 2**18 entries: 10M binary scores 3.3 / 3.3 / 4.2 / 4.6;
#: 50,000 x 1,000 softmax outputs 6.4 / 6.8 / 7.4 / 8.3.
CUTS_MAX_TABLE = 1 << 16
#: Buckets a group at least: fewer would put several cuts in most buckets.
CUTS_MIN_BUCKETS = 64
#: Values searched exactly at a time (the bisection keeps ~8 arrays of them).
CUTS_SEARCH_CHUNK = 1 << 16

# -- points into cells (calcore.statistics.points) ----------------------------------------

#: Values per block when the columns of a batch are sorted (~32 MB per temporary).
POINTS_SORT_BLOCK_VALUES = 4_000_000
#: Values per block when the class-wise points of a batch are added: the accumulator's
#: chunk (:data:`ACCUMULATOR_CHUNK_VALUES`), whose temporaries stay in cache (50,000 x
#: 1,000, ACE alone: 1.14 s in blocks of 4M values, 0.80 s so).
POINTS_ADD_VALUES = 1 << 18
#: Fewer classes than this are handled a column at a time (``points_below``,
#: ``_classwise_cells``); from it on, the whole block at once. ``points_below``, whole
#: block / a pass per column: 10M x 2, 0.153 / 0.017 s; 50,000 x 1,000, 0.042 / 0.213 s.
POINTS_NARROW_CLASSES = 8
#: Share of a block's rows from which a class's most crowded cell is summed, for replicate
#: weights, by a dense product over a mask (``_add_densest_cells``) rather than by the
#: sparse product: per row and class, the sparse product cost 0.14 us at R = 200 (1M
#: points of 10,000 x 100 in 0.14 s CPU) and the dense one 0.033 us (on one BLAS thread),
#: so the dense one pays from a share of ~0.24. Equal-width class-wise cells of 10,000 x
#: 100 (90% of the points in each class's lowest bin): 0.14 -> 0.047 s for 200
#: replicates; equal-mass cells (ACE, deciles: a share of 1 / bins) stay sparse.
POINTS_DENSE_CELL_SHARE = 0.3
#: Rows compared at a time by ``complementary_binary``.
POINTS_CHECK_ROWS = 1 << 16

# -- the accumulator (calcore.statistics.accumulator.CalibrationStatistics.update) --------

#: Probabilities per chunk of an update, without replicate weights. Many classes: 2**18
#: values (50,000 x 1,000, every metric: 2.3-3.0 s at 2**20, 1.8-1.9 s so: temporaries of
#: 8 MB, freed together, go back to the system and come back page by page); chunks keep
#: every per-row temporary in cache instead of costing a page fault per 4 kB (10M binary
#: rows: 4.0 -> 2.3 s against whole batches).
ACCUMULATOR_CHUNK_VALUES = 1 << 18
#: Probabilities per chunk with replicate weights: 10,000 x 100 with 200 resamples took
#: 3.8-5.3 s so, 8.1-9.8 s at 2**18 values (each chunk has a fixed cost per class and
#: replicate block).
ACCUMULATOR_CHUNK_VALUES_REPLICATED = 1 << 20
#: Rows per chunk at most: fewer rows per chunk suit few classes (10M binary rows:
#: 131,072 rather than 524,288 a chunk saved 4% of the CPU).
ACCUMULATOR_CHUNK_ROWS = 1 << 17
#: From this many chunks on, the second half of an update's chunks is added on a worker
#: thread (:func:`calcore.foundation.threads.concurrently`) and merged: 10M binary rows, every sum
#: of a report, 1.74 -> 1.24 s on 2 cores.
ACCUMULATOR_SPLIT_CHUNKS = 4

# -- kernel moments (calcore.statistics.kde_cells) ----------------------------------------

#: Points per chunk of ``KDESums.add``: the seven powers (3.7 MB) stay in the L3 cache.
#: 10M binary rows, every metric: 1 << 19 took 3.0 s of CPU, 1 << 16 2.6 s.
KDE_CHUNK_POINTS = 1 << 16
#: Points from which a cell's replicated moments come from a dense product over all the
#: chunk's points (``KDESums._add_replicated``; also at least 1/16 of them). CPU seconds
#: of the replicated moments at R = 200 (load average 9-14 on the 2-core machine, two
#: rounds): 30 classes of 10,000 x 100 with thresholds 128 / 512 / 2,048 / none:
#: 0.50-0.53 / 0.53-0.85 / 0.52 / 0.64-0.68; 10 classes of 5,000 x 10 (CIFAR-10): 0.19 /
#: 0.21-0.33 / 0.16-0.19 / 0.15-0.17 (the one-product-per-power code before: 1.34-1.49 s
#: for the 30).
KDE_CROWDED_ROWS = 2048
#: Share of (set, point) pairs that are positive from which ``positive_moments`` sums a
#: chunk by one sparse product with the 0/1 outcome vectors rather than by one bincount
#: per power over the positive pairs. CPU s, 200 redrawn sets (loaded 2-core machine),
#: bincounts / product: confidence of 10,000 x 100 (share 0.9) 0.064 / 0.019; 10 classes
#: of CIFAR-10 5,000 rows (0.1) 0.055 / 0.045; 10 of 100 classes (0.01) 0.062 / 0.084.
KDE_PRODUCT_OUTCOME_SHARE = 0.1

# -- the bootstrap's replicates (calcore.statistics.replicates) ---------------------------

#: KDE problems (classes) whose replicate sums are held at once by the in-memory bootstrap
#: (:func:`calcore.evaluation.evaluator.bootstrap_replicates`): a class's sums at R = 200
#: on 10,000 rows are about 5 MB (14 moments x R on its ~210 occupied cells), so a block
#: holds ~50 MB where all 100 classes held 470 MB. Each block repeats the rows' set-up
#: (argmax, labels), a few ms. Measured on 10,000 x 100, class-wise KDE-ECE alone with all
#: 200 resamples (one process each, loaded 2-core machine): blocks of 5 / 10 / 25 / 100
#: classes raised the peak RSS by 30 / 63 / 195 / 427 MB for 5.4 / 5.2 / 5.7 / 5.7 s CPU.
KDE_PROBLEMS_PER_BLOCK = 10

# -- redrawn labels (calcore.statistics.redraws) ------------------------------------------

#: Values per (redraws x rows) temporary of a ``LabelRedraws`` update (~32 MB each).
REDRAW_CHUNK_VALUES = 1 << 22
#: Bytes of redrawn labels kept for the next test of the same in-memory predictions (same
#: seed, redraws and positions), all predictions together, the least recently used
#: dropped first: the labels do not depend on the bins, so the page's change of bins or
#: binning reads them again. Drawing them cost 0.166 s of the 0.42 s a method's binned
#: errors took with their intervals and test (10,000 x 100 rows, 200 redraws, CPU, quiet
#: machine); kept, they are 2 MB a method (one byte a label up to 256 classes). 32 MiB
#: holds a page of five methods on 30,000 rows; larger draws are not kept.
REDRAWN_LABELS_KEPT_BYTES = 32 * 2**20
#: Up to this many classes the redrawn label sums come from a (redraws, rows) indicator
#: per class and matrix products; beyond, from bincounts of flat indices
#: (``LabelRedraws._add``).
REDRAW_PRODUCT_MAX_CLASSES = 8
#: Up to this many classes labels are found by comparing with every cumulative
#: probability (``redrawn_labels``); beyond, by a vectorised bisection: log2 L gathers
#: instead of L compares, but a dozen passes over the rows per halving. Measured (CPU, 50
#: redraws of 10,000 rows, best of 3, loaded 2-core machine), compares / bisection: 10
#: classes 0.005 / 0.030 s, 30: 0.012 / 0.045, 60: 0.026 / 0.064, 100: 0.063 / 0.078,
#: 150: 0.091 / 0.097, 250: 0.159 / 0.110; 1,000 classes (2,000 rows) 0.203 / 0.034; 200
#: redraws: 100 classes 0.15-0.21 / 0.28-0.30 s, 128: 0.23 / 0.33 s. It was
#: :data:`REDRAW_PRODUCT_MAX_CLASSES` (8), which sent compare's 10-class tests (5
#: evaluations of 200 redraws) to the bisection. Same labels either way (both count the
#: cumulative probabilities <= u).
REDRAW_COMPARE_MAX_CLASSES = 128
#: A row's label is its predicted class whenever its uniform falls in that class's step
#: of the cumulative probabilities (a share ``max p`` of the draws): two compares decide
#: those rows, and only the others are counted (``redrawn_labels``). Modelled cost per
#: row and redraw, in compares: ``REDRAW_HINT_ROW_COST + REDRAW_HINT_MISS_COST * (1 -
#: mean max p) * (L - 1)`` against ``L - 1`` (or the bisection's ``12 log2 L``). Measured
#: (CPU, 200 redraws, loaded 2-core machine), counting / hinted: 10,000 x 100 synthetic
#: (mean max p 0.90) 0.147 / 0.054 s; CIFAR-10 10,000 x 10 (0.97) 0.017 / 0.019; 2,000 x
#: 1,000 (0.28, 50 redraws) 0.040 / 0.195; 10,000 x 2 (0.88) 0.013 / 0.018. Same labels
#: either way.
REDRAW_HINT_ROW_COST = 10.0
REDRAW_HINT_MISS_COST = 3.0

# -- metrics and diagnostics --------------------------------------------------------------

#: Values per block of the row-wise reductions of :mod:`calcore.statistics.scoring` over
#: wide matrices (bounded temporaries).
SCORING_ROW_BLOCK_VALUES = 4_000_000
#: Replicates x rows per block of temporaries of the logistic calibration fit
#: (:mod:`calcore.metrics._logistic_fit`; about 8 arrays of this many float64s).
LOGISTIC_FIT_BLOCK_VALUES = 2_000_000
#: Rows of the warm start of the same fit (every k-th row): its estimate is within about
#: 1/sqrt(65,536) of the full fit's, where Newton then converges in 2-3 steps over every
#: row.
WARM_START_ROWS = 65_536
#: Bernoulli draws generated at once by
#: :func:`calcore.diagnostics.consistency.consistency_bands` (bounds memory: ~8 bytes each).
CONSISTENCY_DRAWS_PER_BLOCK = 2_000_000

# -- evaluation ---------------------------------------------------------------------------

#: The row counts of the last resamples drawn (and of their resamples) are kept by
#: :mod:`calcore.evaluation.evaluator` for the next ``evaluate`` of as many rows with the
#: same integer seed and resamples: ``compare`` evaluates the uncalibrated model and
#: every method on the same test rows, so all of them read the same counts. Drawing them
#: cost 15 ms (first level) and 31 ms (second) per evaluation at 5,000 rows and R = 200,
#: 21 and 46 ms at 10,000 (CPU, loaded machine): 0.18 s of a ``compare`` of 4 methods.
#: Kept only up to this many counts per level (16 MB), so a server does not hold large
#: draws between requests.
SHARED_COUNTS_VALUES = 2_000_000
#: Memory for the redrawn sums of one group of redraws of
#: :func:`calcore.evaluation.significance.calibration_test` (redraws beyond it run in
#: groups). 128 MiB: the class-wise KDE-ECE's test on 10,000 x 100 rows with 200 redraws
#: (14 moments on ~21,000 occupied cells a redraw) runs in 4 groups; with 256 MiB (2
#: groups) its peak RSS was 666 MB, over the 600 MB target of issue 34.
REDRAW_MEMORY_BYTES = 128 * 2**20

# -- calibrators --------------------------------------------------------------------------

#: Rows per block x classes of the scaling calibrators' passes
#: (:mod:`calcore.calibrators._scaling`): keeps the working set in cache.
SCALING_BLOCK_ELEMENTS = 65_536
#: Largest number of float64 DP entries kept at once by SCIR's dynamic programme
#: (:mod:`calcore.calibrators._scir`; the rest is recomputed from checkpoints).
SCIR_DP_BUDGET = 4_000_000
#: Up to this k, top-k calibration (:mod:`calcore.calibrators.topk`) finds the ranks by k
#: argmax passes, cheaper than a full row sort; beyond, by the sort.
TOPK_ITERATIVE_MAX_K = 8

# -- simulation ---------------------------------------------------------------------------

#: (Gauss-Legendre node x sample x class) entries per block of
#: :mod:`calcore.simulate._dirichlet_truth` (bounded temporaries).
DIRICHLET_NODE_CHUNK_POINTS = 2_000_000

# -- reading files (calcore.io) -----------------------------------------------------------

#: Rows per batch of a stream (:mod:`calcore.io.stream`, ``scan``'s ``batch_rows``): ~16 MB
#: per float64 score column, big enough for numpy to run at speed.
DEFAULT_BATCH_ROWS = 2_000_000
#: Score values per batch at most (128 MB of float64): wide files get shorter batches.
MAX_BATCH_VALUES = 1 << 24
#: Cells per batch at most when every column is kept (``scan(keep_columns=True)``): a CSV
#: cell kept as text is a Python string until it becomes Arrow, ~60 bytes each.
MAX_KEPT_CELLS = 1 << 21
#: A CSV body loaded whole (:mod:`calcore.io._csv`) is cut at line ends into one piece per
#: worker thread, read in threads (pandas' C parser releases the GIL), when each piece
#: gets at least this many bytes; smaller bodies are read in one piece.
CSV_MIN_PIECE_BYTES = 4 << 20
#: Bodies over this many bytes per worker thread are cut into a multiple of the worker
#: threads, pieces of at most about this size (each is read in one buffer).
CSV_MAX_PIECE_BYTES = 32 << 20
#: Smallest and largest piece of a streamed CSV file (:mod:`calcore.io._csv_stream`):
#: small ones for tests of line numbering, large ones bounded so that a wide file's
#: piece stays a few hundred MB once parsed.
CSV_STREAM_MIN_PIECE_BYTES = 1 << 16
CSV_STREAM_MAX_PIECE_BYTES = 256 << 20
#: Parquet row groups decoded ahead of the one being read (:mod:`calcore.io._row_groups`),
#: each of at most ``batch_rows`` rows, on :data:`ROW_GROUP_DECODERS` threads of their
#: own. pyarrow decodes a row group's columns in parallel, but the cheap ones (labels,
#: split) finish long before the scores, so one row group at a time left a core idle: on
#: the 100M-row demo (100 row groups of 1M rows), decoding its three used columns (and a
#: light check) took 1.29 s one row group at a time and 0.97 s two at a time (2 cores;
#: ``benchmarks/bench_scale.py`` measures a whole pass).
ROW_GROUPS_READ_AHEAD = 2
#: Decoding threads of Parquet row groups (at most
#: :func:`calcore.foundation.threads.worker_count`), shared by every stream of the process:
#: a server with several sessions streaming at once shares them rather than starting more
#: than the cores.
ROW_GROUP_DECODERS = 2

# -- calcore on Spark (calcore.spark._merge) ----------------------------------------------

#: States bounded below this many bytes merge in one level (the driver collects every
#: task's): 256 partitions' then stay under :data:`DRIVER_RESULT_BYTES`, 1,024 under
#: Spark's default ``spark.driver.maxResultSize`` (1 GiB); a pass without resamples keeps
#: kilobytes. From it on the shuffle of the states (two levels) costs little beside the
#: pass.
ONE_LEVEL_STATE_BYTES = 1 << 20
#: What the driver should receive of one pass, at most (unless one state alone is more):
#: a quarter of Spark's default ``spark.driver.maxResultSize``, since the driver holds
#: the collected Arrow table, the unpacked arrays and its own lanes' sums at once.
DRIVER_RESULT_BYTES = 256 << 20
#: Groups of the second level, at most: more tasks spread nothing further when a state
#: is small enough for that many groups.
MAX_GROUPS = 64
