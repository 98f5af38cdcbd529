"""The tuning constants: sizes and times that decide how work is cut and scheduled, never
what is computed (every estimate is the same bit for bit whatever they are). In one
place, read at call time (``tuning.NAME``), so that a test or a user may set one
(``bbc_dask._tuning.IN_MEMORY_BYTES = 2**32``) and see it taken. The measurements behind
them: docs/performance.md, "Tuning constants"."""

#: Predictions (float64 bytes) an estimate of a study reads into memory when not told
#: which path to take; beyond, it goes by the chunked path (bbc_dask.chunked.use_chunked).
IN_MEMORY_BYTES = 2**30

# ---- What a task of the chunked path may hold (bbc_dask.chunked).

#: Bootstrap counts shared by configuration-block tasks (uint8: 64 × N bytes per seed
#: block): in groups of at most this size, and only while all of them fit in it.
COUNTS_BYTES = 32 * 2**20
#: Feature sums a sample-block task returns (in bag and out of bag, every bootstrap).
SUMS_BYTES = 32 * 2**20
#: Prepared features a sample-block task holds (its group of configurations, stacked):
#: beyond, the configurations are split in groups, and each group draws the block's
#: counts again unless they are shared (measured: 16 MiB groups of a 400-configuration
#: cube made the draws the larger part of the time). These tasks never load numba
#: (~140 MiB).
HOLD_BYTES = 64 * 2**20
#: Samples beyond which a ranking metric's BBC goes by pairs of sample *tiles*
#: (:func:`~._lazy_bbc._bbc_by_tiles`): up to it a configuration block's task holds
#: every sample (a seed block of counts, 64 bytes a sample, and a column or more;
#: measured: 2,000,000 samples killed 400 MB workers), beyond it a task holds two
#: tiles' samples, whatever N.
RANK_SAMPLES = 2**20
#: Samples of a tile (whole sample blocks). A pair task holds 2 x RANK_TILE samples: a
#: seed block of counts (16 MiB) and its group's sorted columns (HOLD_BYTES; measured:
#: 42 MiB at its peak for 10 columns), in a worker that holds numba's kernels (~145
#: MiB): peaks of 284 and 289 MiB at 2,000,000 x 20 x 2, below the 400 MB worker's pause
#: (2**19 paused it at 341 MiB). Larger tiles mean fewer pairs (the work is about
#: N / RANK_TILE times the in-memory kernel's) but narrower groups, each drawing its
#: tiles' counts again.
RANK_TILE = 2**17
#: Samples of a tile for BBC-F's fold matrix
#: (:func:`~._lazy_bbc_f._fold_matrix_by_tiles`): its tasks hold R·K fold-row weights
#: a sample (10 bytes at 5 folds x 2 repeats) where BBC's hold a seed block of counts
#: (64), so larger tiles fit the same worker — and the work, about (t + 1) x N sorted
#: cells per configuration, shrinks with t. Measured at 2,000,000 x 20 x 2 on 400 MB
#: workers: peaks of 291/297 MiB at 2**17 and 295/301 MiB at 2**18; 2**19 paused them
#: at 325 MiB (the union's columns, 2**20 samples). Their times:
#: benchmarks/bench_bbc_cluster.py.
RANK_FOLD_TILE = 2**18
#: Bytes a tile task holds per sample and column (float64 encoded, int32 order, bool
#: tie starts, the float32 read and the sort's temporaries).
RANK_CELL_BYTES = 24

# ---- Zarr's blocks: what a task of the chunked path reads (bbc_dask._zarr).

#: Target size of one chunk a task reads, in float64 (its encoded size on the worker).
CHUNK_BYTES = 16 * 2**20

# ---- The engine's waves and tasks (bbc_dask.engine).

#: Resubmissions of one task after its data was lost before giving up.
MAX_RESUBMITS = 5
#: Seconds between ledger writes while results arrive: one batched write, not one per task.
LEDGER_INTERVAL = 0.5
#: Ledger chunks the run's driver keeps as it last wrote them (it is their one writer), so
#: that a ledger batch writes its chunks without reading them back first.
LEDGER_CACHE_BYTES = 64 * 2**20
#: The run time a task aims at once blocks are timed: long enough that Dask's cost per
#: task (a few ms of client, scheduler and worker time, on the workers' cores when the
#: scheduler is local) is small next to the work (benchmarks/bench_cvt.py; the
#: measurements: docs/performance.md, "Tuning constants").
TARGET_TASK_SECONDS = 1.0
#: A task holds its blocks' predictions until it writes them: at most this many bytes.
TASK_PREDICTION_BYTES = 64 * 2**20
#: Tasks per worker thread kept for the end of a stage, so that the last tasks balance.
TAIL_TASKS_PER_THREAD = 3
#: The share of one core the driver may spend handling tasks: its engine thread and, with
#: a local cluster, the scheduler share one process (and one GIL). Tasks are made long
#: enough that the cluster's threads finish no more tasks a second than that allows at
#: the driver's measured CPU per task (seconds >= threads x CPU per task / share): about
#: 30 ms on 2 threads, 0.26 s on 16 (at most TARGET_TASK_SECONDS); on 64 it keeps 20 ms
#: blocks from flooding the driver (docs/performance.md, "Scale-out").
DRIVER_SHARE = 0.25
#: The driver's CPU per task assumed until :data:`DRIVER_TASKS_MEASURED` tasks have been
#: handled (measured: 3.5 ms on 2 slow cores with a local scheduler).
DRIVER_TASK_SECONDS = 0.004
DRIVER_TASKS_MEASURED = 20
#: Seconds between two questions to the scheduler about the cluster's size while a run
#: goes on (workers added or retired mid-run: cluster.adapt, an autoscaler).
CLUSTER_POLL_SECONDS = 1.0
#: The queue of fit tasks kept in flight beyond two per thread: their predicted seconds
#: per thread up to twice distributed's adaptive target duration (what an adaptive
#: cluster sizes itself by), that duration taken at most this long, and at most this
#: many tasks per thread (a million-configuration study's tiny blocks).
QUEUE_SECONDS = 30.0
QUEUE_TASKS_PER_THREAD = 50
#: Blocks whose fits take less than this are not reordered among themselves.
RANK_SECONDS = 0.01
#: Splits larger than this are not kept (they would double a worker's share of X).
SPLIT_CACHE_BYTES = 256 * 2**20

# ---- The in-memory bootstraps (bbc_dask.stats, bbc_dask.metrics).

#: Bootstraps an in-memory BBC scores at once, by their bytes (counts, weights and a few
#: (B, M) results), in whole seed blocks (``block_size`` of bbc_dask.bbc overrides it).
BOOTSTRAP_BLOCK_BYTES = 256 * 2**20
#: Bytes of counts a definedness rule sees at once: its temporaries (masks, weights) are
#: of this order, not of the seed block's (64 x N: 64 MB of uint8 at a million samples).
RULE_BYTES = 4 * 2**20
#: Weights an indicator sum holds at once (float32): its temporaries are of this size,
#: not of the counts' (64 x N bytes per seed block).
SLICE_BYTES = 4 * 2**20

# ---- The store (bbc_dask.cube).

#: Target bytes (float64, every class) of one stored prediction chunk along slots on a
#: disk (and in memory): a fold of a block beyond it is cut into equal chunks of this size
#: to twice it (the measurements: docs/performance.md, "Tuning constants"). Fixed in a
#: store when it is created.
SLOT_CHUNK_BYTES = 2**18
#: The same in an object store (an fsspec URL): every chunk is a request there.
SLOT_CHUNK_BYTES_REMOTE = 2**22
#: Fewest slots in a chunk cut along slots (a block of many configurations and classes).
SLOT_CHUNK_MIN = 256
#: Decoded stored chunks one read of some samples (``PredictionReader.read`` with
#: ``rows``) asks Zarr for at once.
READ_BYTES = 16 * 2**20
#: Bytes of predictions ``verify`` reads at once while checking checksums (a row of
#: chunks of one fold): raw chunks, checked and dropped, so a larger read than an
#: estimate's, which decodes and keeps what it reads.
VERIFY_READ_BYTES = 64 * 2**20

# ---- The holdout family (bbc_dask._resampling).

#: Tasks per worker thread that holdout repeats or bootstrap rounds are grouped into:
#: cheap fits share a task (Dask's per-task cost), and a few tasks per thread balance the
#: end. Rounds are seeded one by one, so the grouping never changes a result.
RESAMPLING_TASKS_PER_THREAD = 4
