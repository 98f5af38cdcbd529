"""What a task of the chunked path may hold, and how many tasks run at once.

The modules read these at call time (``_budgets.HOLD_BYTES``), so that one setting moves
every split. The size of a configuration block a task reads is
:data:`bbc_dask._zarr.CHUNK_BYTES`, shared with the study's store.
"""
from __future__ import annotations

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


def slots():
    """Worker threads of the current Dask client (else this machine's cores): how many
    tasks run at once."""
    import os

    try:
        from distributed import default_client

        info = default_client().scheduler_info(n_workers=-1)["workers"]
        return max(1, sum(w.get("nthreads", 1) for w in info.values()))
    except (ImportError, ValueError, TypeError, KeyError):
        return os.cpu_count() or 1
