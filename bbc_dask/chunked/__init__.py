"""BBC, BBC-F and the BBCD dropping test on cubes larger than memory, on the cluster.

The layer between the statistics (NumPy, in memory) and the store: it knows both, so the
public :func:`bbc_dask.bbc` and :func:`bbc_dask.bbc_f` are defined here (:mod:`._dispatch`)
and send a Dask- or Zarr-backed cube to the chunked path; :func:`use_chunked` is the one
rule that chooses between the two.

Bootstraps are drawn on the workers from spawned seeds (never a B × N matrix from the
client), in the draw scheme of the statistics (``bbc_dask.stats``): each sample block of a
seed block of bootstraps has its own generator. The splits:

- **by sample blocks** — pointwise metrics on a Zarr- or Dask-backed cube of more than one
  sample block: one task per (sample block, group of configurations) draws that block's
  counts alone and returns the block's in-bag feature sums; a chain adds the blocks in block
  order, then the group's winners are merged in a tree; a second pass sums the winners'
  columns out of bag. A task holds one sample block of a group's chunks: its memory does not
  grow with N. While all the counts fit in ``bbc_dask.counts-bytes`` (B × N bytes) a block's
  are drawn once, kept on the cluster and shared by its task in every group and by the
  out-of-bag pass; beyond, each task draws its block's again.
- **by sample runs** — pointwise metrics on a study's cube, stored by fold: a read of some
  samples decodes the stored chunks holding their slots (~256 KiB along slots; whole folds
  in stores written before). A task reads a run of consecutive sample blocks of a group of
  stored chunks (at most ``bbc_dask.hold-bytes`` as read, a few chunks decoded at a time)
  and sums each block as above; about sqrt(cube / ``bbc_dask.hold-bytes`` × f) groups, f the
  part of a fold a stored chunk holds, balance the draws (beyond ``bbc_dask.counts-bytes``
  each group draws every block's counts) against the decoding (each run decodes the chunks
  holding its slots whole).
  A task holds at most ``bbc_dask.hold-bytes`` as read (a group narrows until one block
  fits) and ``bbc_dask.read-bytes`` of decoded stored chunks (at least one column of chunks:
  256 KiB to 512 KiB each, or 256 slots of a block, whatever N; a fold each in stores
  written before).
- **the dropping test by sample blocks** — a pointwise metric given a sample source (a
  study's store between waves): the same tasks and runs, each returning its block's
  in-bag sums per repeat with the counts masked by the samples available there; a chain
  adds them in block order and a task per group gives its configurations' scores (B, c).
- **by pairs of sample tiles** — BBC, and the dropping test given a sample source, of a
  ranking metric beyond ``bbc_dask.rank-samples``: its statistics are integer sums over
  pairs of samples, so the whole sample's follow exactly from those of every tile and every
  union of two tiles; a task holds two tiles of one group of configurations
  (:func:`_bbc_by_tiles`, :func:`_dropping_by_tiles`), at about N / ``bbc_dask.rank-tile``
  times the in-memory kernel's work.
- **by configuration blocks** — ranking metrics (they sort whole columns), BBC-F's fold
  matrix, the dropping test of a ranking metric up to ``bbc_dask.rank-samples`` (or without
  a sample source) and a study's cube with a ranking metric up to ``bbc_dask.rank-samples``:
  one task prepares (reads along samples one stored chunk at a time, encodes, sorts) every
  sample of a block of configurations once — a block of ``bbc_dask.chunk-bytes``, fewer
  configurations as N grows. The counts of a group of seed blocks are drawn once per group
  (uint8) and shared by every block's scoring task while all of them fit in
  ``bbc_dask.counts-bytes`` (B × N bytes); beyond, one task per block prepares and scores
  it, drawing them again from the plans, one seed block at a time, so that no worker
  holds B × N.

Which attempt of an undefined draw is kept is decided once per seed block, from the
counts and the target alone — over sample blocks, only once a task has reported an
undefined draw (the first pass starts from the plans of no redraw). Results equal the
in-memory path bit for bit, whatever the chunking and the number of workers.

Zarr-backed cubes (a ``zarr.Array``, an xarray object opened from Zarr, or a study's
store) are read by the tasks with zarr alone, chunk-aligned: the workers never import
``dask.array``/xarray/pandas (~60 MiB each). Other Dask-backed cubes go through their own
graph.

The modules: :mod:`._dispatch` (``bbc_dask.bbc``/``bbc_f``: memory or chunks, the one
rule), :mod:`._source` (a lazy cube and how it is cut), :mod:`._graph` (seeds,
plans, chains), :mod:`._lazy_bbc`, :mod:`._lazy_bbc_f`, :mod:`._lazy_dropping`,
:mod:`._lazy_incomplete` (the graphs), :mod:`._budgets` (what a task may hold) on the
client; the tasks the workers run — :mod:`._task_base`, :mod:`._blocks` (configuration
blocks), :mod:`._sample_sums`, :mod:`._tile_sums` — are NumPy and zarr only: importing
them loads no Dask. Zarr's block rules are :mod:`bbc_dask._zarr`'s, shared with the study's store.
"""
from .._zarr import zarr_blocks
from ._blocks import chunk_pooled, held, merge_winners
from ._dispatch import bbc, bbc_f, is_lazy, refuse_general, use_chunked
from ._lazy_bbc import bbc_over_blocks, bbc_over_table, lazy_bbc
from ._lazy_bbc_f import fold_matrix_over_blocks, lazy_bbc_f
from ._lazy_dropping import lazy_dropping_test
from ._lazy_incomplete import incomplete_over_blocks

__all__ = ["bbc", "bbc_f", "bbc_over_blocks", "bbc_over_table",
           "chunk_pooled", "fold_matrix_over_blocks", "held", "incomplete_over_blocks", "is_lazy",
           "lazy_bbc", "lazy_bbc_f", "lazy_dropping_test", "merge_winners", "refuse_general", "use_chunked", "zarr_blocks"]
