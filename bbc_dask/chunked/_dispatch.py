"""BBC, BBC-F and the BBCD dropping test on cubes larger than memory, on the cluster.

Bootstraps are drawn on the workers from spawned seeds (never a B × N matrix from the
client), in the draw scheme of :mod:`bbc_dask.stats._bootstrap`: each sample block of a
seed block of bootstraps has its own generator. The splits (see :mod:`._blocks`):

- **by sample blocks** — pointwise metrics on a Zarr- or Dask-backed cube of more than one
  sample block: one task per (sample block, group of configurations) draws that block's
  counts alone and returns the block's in-bag feature sums; a chain adds the blocks in
  block order, then the group's winners are merged in a tree; a second pass sums the
  winners' columns out of bag. A task holds one sample block of a group's chunks: its
  memory does not grow with N. While all the counts fit in :data:`COUNTS_BYTES` (B × N
  bytes) a block's are drawn once, kept on the cluster and shared by its task in every
  group and by the out-of-bag pass; beyond, each task draws its block's again.
- **by sample runs** — pointwise metrics on a study's cube, stored by fold: a read of
  some samples decodes the stored chunks holding their slots (~256 KiB along slots; whole
  folds in stores written before). A task reads a run of consecutive sample blocks of a
  group of stored chunks (at most :data:`HOLD_BYTES` as read, a few chunks decoded at a
  time) and sums each block as above; about sqrt(cube / HOLD_BYTES × f) groups, f the
  part of a fold a stored chunk holds, balance the draws (beyond COUNTS_BYTES each group
  draws every block's counts) against the decoding (each run decodes the chunks holding
  its slots whole).
  A task holds at most HOLD_BYTES as read (a group narrows until one block fits) and
  :data:`~bbc_dask.cube._layout.READ_BYTES` of decoded stored chunks (at least one
  column of chunks: 256 KiB to 512 KiB each, or 256 slots of a block, whatever N; a
  fold each in stores written before).
- **the dropping test by sample blocks** — a pointwise metric given a sample source (a
  study's store between waves): the same tasks and runs, each returning its block's
  in-bag sums per repeat with the counts masked by the samples available there; a chain
  adds them in block order and a task per group gives its configurations' scores (B, c).
- **by pairs of sample tiles** — BBC, and the dropping test given a sample source, of a
  ranking metric beyond :data:`RANK_SAMPLES`: its statistics are integer sums over pairs
  of samples, so the whole sample's follow exactly from those of every tile and every
  union of two tiles; a task holds two tiles of one group of configurations
  (:func:`_bbc_by_tiles`, :func:`_dropping_by_tiles`), at about N / RANK_TILE times the
  in-memory kernel's work.
- **by configuration blocks** — ranking metrics (they sort whole columns), BBC-F's fold
  matrix, the dropping test of a ranking metric up to RANK_SAMPLES (or without a sample
  source) and a study's cube with a ranking metric up to RANK_SAMPLES: one task prepares (reads
  along samples one stored chunk at a time, encodes, sorts) every sample of a block of
  configurations once — a block of :data:`~bbc_dask._zarr.CHUNK_BYTES`, fewer configurations as N
  grows. The counts of a group of seed blocks are drawn once per group (uint8) and
  shared by every block's scoring task while all of them fit in :data:`COUNTS_BYTES`
  (B × N bytes); beyond, one task per block prepares and scores it, drawing them again
  from the plans, one seed block at a time, so that no worker holds B × N.

Which attempt of an undefined draw is kept is decided once per seed block, from the
counts and the target alone — over sample blocks, only once a task has reported an
undefined draw (the first pass starts from the plans of no redraw). Results equal the
in-memory path bit for bit, whatever the chunking and the number of workers.

Zarr-backed cubes (a ``zarr.Array``, an xarray object opened from Zarr, or a study's
store: :mod:`bbc_dask._zarr`) are read by the tasks with zarr alone, chunk-aligned: the workers never import
``dask.array``/xarray/pandas (~60 MiB each). Other Dask-backed cubes go through their own
graph.

The public ``bbc_dask.bbc`` and ``bbc_dask.bbc_f`` are defined here: the statistics layer's
functions for arrays in memory, dispatching a lazy cube to the chunked path (the
statistics never import Dask).
"""
from __future__ import annotations

import contextlib
import functools
import inspect

import numpy as np

from .. import _validation as V
from .._random import as_seed_sequence
from .._signals import deferred_interrupts, wait_done
from ..exceptions import InvalidParameterError
from .. import _zarr, metrics as M
from .._zarr import class_coord, config_width, dims_of, per_config_bytes, zarr_blocks, zarr_source
from ..metrics import get_metric
from ..stats import _bbc as S
from ..stats._bootstrap import SEED_BLOCK
from ..stats._result import summarise
from ..stats._winner import select
from . import _blocks as K

__all__ = ["COUNTS_BYTES", "SUMS_BYTES", "bbc", "bbc_f", "fold_matrix_over_blocks",
           "bbc_over_blocks", "bbc_over_table", "is_lazy", "lazy_bbc", "lazy_bbc_f", "lazy_dropping_test"]

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
#: (:func:`_bbc_by_tiles`): up to it a configuration block's task holds every sample
#: (a seed block of counts, 64 bytes a sample, and a column or more; measured: 2,000,000
#: samples killed 400 MB workers), beyond it a task holds two tiles' samples, whatever N.
RANK_SAMPLES = 2**20
#: Samples of a tile (whole sample blocks). A pair task holds 2 x RANK_TILE samples: a
#: seed block of counts (16 MiB) and its group's sorted columns (HOLD_BYTES; measured:
#: 42 MiB at its peak for 10 columns), in a worker that holds numba's kernels (~145
#: MiB): peaks of 284 and 289 MiB at 2,000,000 x 20 x 2, below the 400 MB worker's pause
#: (2**19 paused it at 341 MiB). Larger tiles mean fewer pairs (the work is about
#: N / RANK_TILE times the in-memory kernel's) but narrower groups, each drawing its
#: tiles' counts again.
RANK_TILE = 2**17
#: Samples of a tile for BBC-F's fold matrix (:func:`_fold_matrix_by_tiles`): its tasks
#: hold R·K fold-row weights a sample (10 bytes at 5 folds x 2 repeats) where BBC's hold
#: a seed block of counts (64), so larger tiles fit the same worker — and the work,
#: about (t + 1) x N sorted cells per configuration, shrinks with t. Measured at
#: 2,000,000 x 20 x 2 on 400 MB workers: 2**17 132 s, peaks 291/297 MiB; 2**18 87 s,
#: 295/301 MiB; 2**19 72 s but paused at 325 MiB (the union's columns, 2**20 samples).
RANK_FOLD_TILE = 2**18
#: Bytes a tile task holds per sample and column (float64 encoded, int32 order, bool
#: tie starts, the float32 read and the sort's temporaries).
RANK_CELL_BYTES = 24

_DIMS = V.CUBE_DIMS


def is_lazy(x):
    if _zarr.zarr_of(x) is not None:
        return True
    if type(x).__name__ == "Dataset" and "prediction" in getattr(x, "data_vars", {}):
        return is_lazy(x["prediction"])
    data = getattr(x, "data", x)
    return type(data).__module__.startswith("dask.array")


class _Source:
    """A lazy cube: its size, class coordinate and how to cut it into task inputs."""

    def __init__(self, x, dims, n, c, coord, zarr=None, data=None, table=None):
        self.x, self.dims, self.n, self.c, self.coord = x, dims, n, c, coord
        # (array, key) | dask array (N, C, R[, K]) | a study's SampleTable
        self.zarr, self.data, self.table = zarr, data, table

    @classmethod
    def of_table(cls, table):
        """The source of a study cube's :class:`~bbc_dask.cube.SampleTable`."""
        return cls(table, table.dims, table.shape[0], table.shape[1], None, table=table)

    def config_parts(self):
        """Parts holding every sample of a block of configurations, and their offsets."""
        if self.zarr is not None:
            return zarr_blocks(self.zarr[0], self.dims, key=self.zarr[1])
        per = per_config_bytes(self.data.shape, _DIMS[: self.data.ndim])
        width = max(1, min(self.c, _zarr.CHUNK_BYTES // max(per, 1)))
        data = self.data.rechunk({0: -1, 1: width} | {i: -1 for i in range(2, self.data.ndim)})
        return list(data.to_delayed().ravel()), _offsets(data.chunks[1])

    def sample_grid(self, edges, per_config_out, per_config_held):
        """``(grid, offsets)``: ``grid[j][g]`` the parts of sample block ``j`` of
        configuration group ``g`` (chunk-aligned, in order), groups starting at
        ``offsets``. A group's sums take at most :data:`SUMS_BYTES` (``per_config_out``
        bytes per configuration), its prepared features :data:`HOLD_BYTES`
        (``per_config_held``)."""
        size = edges[0][1] - edges[0][0]
        if self.zarr is None:
            per = per_config_bytes((size,) + self.data.shape[1:], _DIMS[: self.data.ndim])
            width = max(1, min(self.c, _zarr.CHUNK_BYTES // max(per, 1)))
        else:
            arr, key = self.zarr
            ax, s_ax = self.dims.index("config"), self.dims.index("sample")
            view = [len(range(*k.indices(n))) for k, n in zip(key, arr.shape)]
            view[s_ax] = size
            width = config_width(per_config_bytes(view, self.dims), int(arr.chunks[ax]))
        # at most SUMS_BYTES of sums per task; and enough groups that the tasks of a
        # phase keep every worker thread busy twice over — only then, since each group
        # reads (and, beyond COUNTS_BYTES, draws) every sample block's counts again
        # (many sample blocks: one group)
        n_groups = -(-2 * _slots() // len(edges))
        span = min(SUMS_BYTES // max(per_config_out, 1), HOLD_BYTES // max(per_config_held, 1),
                   -(-self.c // n_groups))
        span = max(width, span // width * width)
        if self.zarr is None:
            # a Dask array (persisted, say): parts of `width` configurations, a group of
            # them per task as for a store — a part per task would read (or draw) the
            # counts again for every part. A task gets its parts loaded, all at once
            # (a store's are read one at a time): they too take at most HOLD_BYTES.
            data = self.data.rechunk({0: size, 1: width} | {i: -1 for i in range(2, self.data.ndim)})
            d = data.to_delayed().reshape(len(edges), -1)
            raw = size * int(np.prod(self.data.shape[2:])) * self.data.dtype.itemsize
            per_group = max(1, min(span // width, HOLD_BYTES // max(width * raw, 1)))
            span = per_group * width
            return ([[list(row[g : g + per_group]) for g in range(0, len(row), per_group)]
                     for row in d], list(range(0, self.c, span)))
        cfg = range(*key[ax].indices(arr.shape[ax]))  # view position -> stored index
        rows = range(*key[s_ax].indices(arr.shape[s_ax]))
        order = [self.dims.index(d) for d in _DIMS if d in self.dims]
        grid = []
        for lo, hi in edges:
            k = list(key)
            k[s_ax] = slice(rows[lo], rows[hi - 1] + 1, rows.step)
            row = []
            for g0 in range(0, self.c, span):
                part = []
                for a in range(g0, min(g0 + span, self.c), width):
                    sel = cfg[a : min(a + width, self.c, g0 + span)]
                    sel = slice(sel.start, sel.stop, sel.step) if sel.step == 1 else np.asarray(sel)
                    part.append(_zarr.ZarrBlock(arr, order, ax, sel, "repeat" not in self.dims, k))
                row.append(part)
            grid.append(row)
        return grid, list(range(0, self.c, span))


    def sample_runs(self, edges, per_config_out, per_config_held, n_boot=0):
        """``(runs, offsets)``: ``runs[g]`` the tasks of configuration group ``g`` (starting
        at ``offsets[g]``), in sample order, each ``(blocks, parts)``: the consecutive
        sample blocks ``blocks`` (a list of ``(j, lo, hi)``) that ``parts`` (in
        configuration order) hold. One block per task, except where a read decodes more
        than its samples (a study's cube, stored by fold): there a task reads a run of blocks;
        ``n_boot`` bootstraps (see :meth:`_table_groups`)."""
        if self.table is None:
            grid, offsets = self.sample_grid(edges, per_config_out, per_config_held)
            return [[([(j, lo, hi)], grid[j][g]) for j, (lo, hi) in enumerate(edges)]
                    for g in range(len(offsets))], offsets
        t = self.table
        groups = self._table_groups(edges, per_config_out, n_boot)
        runs = self._runs(edges, max(g.size for g in groups), len(groups), per_config_out)
        return ([[(blocks, [t.part(slice(int(g[0]), int(g[-1]) + 1), blocks[0][1], blocks[-1][2])])
                  for blocks in runs] for g in groups], [int(g[0]) for g in groups])

    def column_runs(self, edges, configs):
        """The ``(blocks, parts)`` (see :meth:`sample_runs`) of the configurations
        ``configs`` (sorted view positions), in sample order."""
        if self.table is None:
            return [([(j, lo, hi)], self.columns(lo, hi, configs)) for j, (lo, hi) in enumerate(edges)]
        configs = np.asarray(configs, dtype=np.int64)
        return [(blocks, [self.table.part(configs, blocks[0][1], blocks[-1][2])])
                for blocks in self._runs(edges, configs.size, 1)]

    @property
    def _cell_bytes(self):
        """Bytes of one sample of one configuration of a study's cube, as read (float64,
        every repeat and class)."""
        return int(np.prod(self.table.shape[2:])) * 8

    def _table_groups(self, edges, per_config_out, n_boot=0):
        """The configurations of a study's cube in groups of consecutive stored chunks
        (or parts of one). Every group draws every sample block's counts; every run of
        sample blocks decodes the stored chunks holding its slots whole: per fold a
        fraction f of the fold's (``fold_fraction``; 1 where a chunk holds a whole fold)
        beyond its own. Groups of c/g configurations in runs of :data:`HOLD_BYTES` take
        about g draws and 1 + f × cube / g / HOLD_BYTES decodings of the cube:
        g = sqrt(f × cube / HOLD_BYTES) balances the two (measured, 10^6 samples: a
        draw of every count, 256 bootstraps, and a decoding of the cube's float64 are
        seconds each); with more bootstraps (``n_boot``) a draw costs more, and g
        shrinks as sqrt(256 / n_boot) (the dropping test's 1,000: about half as many
        groups). A group is narrower still where one sample block of it as read would
        exceed HOLD_BYTES, or its sums (``per_config_out`` bytes per configuration)
        :data:`SUMS_BYTES`: many configurations of few samples."""
        t, per = self.table, self._cell_bytes
        cube = self.n * self.c * per
        draws = min(1.0, 256 / max(n_boot, 1))
        n_groups = max(1, min(self.c, round(float(np.sqrt(cube / HOLD_BYTES * draws * t.fold_fraction)))))
        cap = min(HOLD_BYTES // ((edges[0][1] - edges[0][0]) * per),
                  SUMS_BYTES // max(per_config_out, 1))
        size = max(1, min(-(-self.c // n_groups), cap))
        stored = t.configs // t.chunk_width
        pieces = [ch[i : i + size] for ch in np.split(np.arange(self.c), np.flatnonzero(np.diff(stored)) + 1)
                  for i in range(0, ch.size, size)]
        groups, cur, held = [], [], 0
        for ch in pieces:  # consecutive stored chunks (or parts), at most `size` configurations
            if cur and held + ch.size > size:
                groups.append(np.concatenate(cur))
                cur, held = [], 0
            cur.append(ch)
            held += ch.size
        return groups + [np.concatenate(cur)]

    def _runs(self, edges, width, n_groups, per_config_out=0):
        """Consecutive sample blocks in runs: as many as :data:`HOLD_BYTES` of ``width``
        configurations as read (float64), and their blocks' sums :data:`SUMS_BYTES`
        (``per_config_out`` bytes per configuration and block), allow — each run decodes
        the stored chunks holding its slots whole, so the fewer runs the less decoding —
        yet enough runs that the tasks keep every worker thread busy twice over."""
        per_row = width * self._cell_bytes
        size = edges[0][1] - edges[0][0]
        per_run = max(1, min(HOLD_BYTES // max(per_row * size, 1),
                             SUMS_BYTES // max(width * per_config_out, 1)))
        per_run = min(per_run, -(-len(edges) // -(-2 * _slots() // n_groups)))
        return [[(j, *edges[j]) for j in range(a, min(a + per_run, len(edges)))]
                for a in range(0, len(edges), per_run)]

    def tile_parts(self, lo, hi, configs):
        """The parts holding samples ``lo:hi`` of ``configs`` (sorted view positions):
        a study's cube in one read, else :meth:`columns`."""
        if self.table is not None:
            return [self.table.part(np.asarray(configs, dtype=np.int64), lo, hi)]
        return self.columns(lo, hi, configs)

    def columns(self, lo, hi, configs):
        """The parts (in order) holding samples ``lo:hi`` of the configurations
        ``configs`` (sorted view positions): read chunk-aligned, a stored chunk window at
        a time."""
        if self.zarr is None:
            data = self.data[lo:hi][:, np.asarray(configs)]
            per = per_config_bytes(data.shape, _DIMS[: data.ndim])
            width = max(1, _zarr.CHUNK_BYTES // max(per, 1))
            data = data.rechunk({0: -1, 1: width} | {i: -1 for i in range(2, data.ndim)})
            return list(data.to_delayed().ravel())
        arr, key = self.zarr
        s_ax = self.dims.index("sample")
        rows = range(*key[s_ax].indices(arr.shape[s_ax]))
        k = list(key)
        k[s_ax] = slice(rows[lo], rows[hi - 1] + 1, rows.step)
        return zarr_blocks(arr, self.dims, configs=configs, key=k)[0]


def _slots():
    """Worker threads of the current Dask client (else this machine's cores): how many
    tasks run at once."""
    import os

    try:
        from distributed import default_client

        info = default_client().scheduler_info(n_workers=-1)["workers"]
        return max(1, sum(w.get("nthreads", 1) for w in info.values()))
    except (ImportError, ValueError, TypeError, KeyError):
        return os.cpu_count() or 1


def _offsets(chunks):
    return np.concatenate([[0], np.cumsum(chunks)[:-1]]).astype(int).tolist()


def _sources(predictions, metric, caller):
    """The :class:`_Source` of a lazy cube."""
    x = predictions
    if type(x).__name__ == "Dataset":
        if "prediction" not in x.data_vars:
            raise InvalidParameterError.of(
                "predictions", caller, "a DataArray, or a Dataset with a 'prediction' variable",
                shown=f"a Dataset of {sorted(x.data_vars)}")
        x = x["prediction"]
    src = zarr_source(x)
    ndim = len(x.shape)
    dims = dims_of(x, ndim, caller)
    if metric.needs_class_axis != ("class" in dims):
        raise InvalidParameterError.of(
            "predictions", caller, f"a cube {'with' if metric.needs_class_axis else 'without'} "
            f"a 'class' axis (class probabilities) for the metric {metric.name!r}",
            shown=f"dims {dims}")
    coord = class_coord(x)
    n, c = x.shape[dims.index("sample")], x.shape[dims.index("config")]
    if src is not None:
        return _Source(x, dims, n, c, coord, zarr=src)
    data = getattr(x, "data", x)
    data = data.transpose([dims.index(d) for d in _DIMS if d in dims])
    if "repeat" not in dims:
        data = data[:, :, None]
    return _Source(x, dims, n, c, coord, data=data)


def _target(y, n, m, pos_label, caller):
    """``(y, target)``: y checked against the cube, and encoded once on the client (every
    task encodes its predictions against the whole sample's classes)."""
    y = y if isinstance(y, tuple) else np.asarray(y)
    if not isinstance(y, tuple):
        V.check_same_length("predictions", n, "y", y.shape[0] if y.ndim else 0, caller)
    return y, V.as_target(y, m, caller, pos_label=pos_label)


def _tree(items, fn):
    from dask import delayed

    while len(items) > 1:
        items = [delayed(fn, pure=True)(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def _seed(root):
    return int(root.entropy), [int(k) for k in root.spawn_key]


def _seed_groups(n_boot, n, keep):
    """Seed blocks in groups: with ``keep`` (their counts are held) at most
    :data:`COUNTS_BYTES` of uint8 counts per group."""
    n_seed = -(-n_boot // SEED_BLOCK)
    # plans alone: a task per seed block (they run in parallel); kept counts: as many seed
    # blocks as fit, in at least two groups (two workers draw at once)
    per = min(max(1, COUNTS_BYTES // (SEED_BLOCK * n)), -(-n_seed // 2)) if keep else 1
    return [list(range(a, min(a + per, n_seed))) for a in range(0, n_seed, per)]


def _no_explicit(bootstrap_indices, caller):
    if bootstrap_indices is not None:
        raise InvalidParameterError.of(
            "bootstrap_indices", caller, "None with a Dask- or Zarr-backed cube",
            shown="explicit indices", note="Bootstraps of such a cube are drawn on the workers "
            "from random_state; pass in-memory arrays to use explicit indices.")


def _dispatching(in_memory, lazy, passed):
    """The public estimator ``in_memory`` (the statistics layer: arrays in memory) that
    also takes a Dask- or Zarr-backed cube, whose chunks ``lazy`` maps over. The dispatch
    lives here, in the layer that knows both, so that the statistics never import Dask.
    Same signature and docstring as ``in_memory``."""
    sig = inspect.signature(in_memory)

    @functools.wraps(in_memory)
    def estimator(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:  # the in-memory function words the error
            return in_memory(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        if not is_lazy(a["predictions"]):
            return in_memory(*args, **kwargs)
        caller = in_memory.__name__
        _no_explicit(a["bootstrap_indices"], caller)
        return lazy(**{k: a[k] for k in passed}, caller=caller)

    return estimator


def lazy_bbc(predictions, y, *, metric, n_bootstraps, confidence_level, random_state, pos_label,
             folds=None, selection="pooled", include_incomplete=False, caller="bbc"):
    if V.check_bool(include_incomplete, "include_incomplete", caller):
        raise InvalidParameterError.of(
            "include_incomplete", caller, "False with a Dask- or Zarr-backed cube", True,
            note="BBC of an incomplete CV reads the predictions into memory: pass an array.")
    m = get_metric(metric, caller=caller)
    src = _sources(predictions, m, caller)
    y, target = _target(y, src.n, m, pos_label, caller)
    f = S.check_selection(selection, folds, src.n, _n_repeats(src), caller)
    along = _along_samples(m, src)
    if along is not None:
        res = along(src, target, m, n_bootstraps, confidence_level, random_state, caller)
    else:
        parts, offsets = src.config_parts()
        res = bbc_over_blocks(parts, offsets, y, metric=m.name, n_bootstraps=n_bootstraps,
                              confidence_level=confidence_level, random_state=random_state,
                              pos_label=pos_label, class_coord=src.coord, caller=caller)
    if selection == "pooled":
        return res
    return S.with_fold_mean_winner(res, _lazy_fold_matrix(src, y, target, f, m, pos_label, caller)[0])


def _along_samples(m, src):
    """The BBC that cuts ``src`` along samples for metric ``m`` (:func:`_bbc_pointwise`
    or :func:`_bbc_by_tiles`, each ``(src, target, m, n_bootstraps, confidence_level,
    random_state, caller)``), or None: along configurations."""
    if _by_samples(m, src):
        return _bbc_pointwise
    return _bbc_by_tiles if _by_tiles(m, src.n) else None


def _by_samples(m, src):
    """Whether BBC of metric ``m`` goes along samples: a pointwise metric of more than one
    sample block."""
    return m.kind == "pointwise" and src.n > M.SAMPLE_BLOCK


def _bbc_pointwise(src, target, m, n_bootstraps, confidence_level, random_state, caller):
    """:func:`_bbc_by_samples` over the sample blocks of ``src``, its arguments checked."""
    conf, n_boot, seed = _bbc_args(n_bootstraps, confidence_level, random_state, caller)
    sb = M.SAMPLE_BLOCK
    return _bbc_by_samples(src, M.sample_blocks(src.n, sb), target, m, seed, n_boot, conf, sb,
                           caller)


def _bbc_args(n_bootstraps, confidence_level, random_state, caller):
    conf = V.check_confidence_level(confidence_level, caller)
    n_boot = V.check_int(n_bootstraps, "n_bootstraps", caller)
    return conf, n_boot, _seed(as_seed_sequence(random_state, caller=caller))


def _plans(seed, stream, n_boot, n, sb, rule, keep, frame=None):
    """Delayed :func:`._blocks.plan_group` of every group of seed blocks."""
    from dask import delayed

    return [delayed(K.plan_group, pure=True)(seed, stream, ks, n, sb, rule, keep, frame)
            for ks in _seed_groups(n_boot, n, keep)]


def _summary(merged, fulls, attempts, n_boot, metric, conf):
    best, cfg, oob = (a[:n_boot] for a in merged)
    full = np.concatenate(fulls)
    sel = select(full)
    return summarise(oob, cfg, selected=sel, naive=full[sel],
                     n_redrawn=int(np.concatenate(attempts)[:n_boot].sum()), method="bbc",
                     metric=metric, confidence_level=conf)


def _attempts(group):
    return np.concatenate([plan.attempts for plan, _ in group])


def _replicate(persisted):
    """Copy persisted results to every worker of their distributed cluster (nothing for
    a local scheduler: they are in this process)."""
    from distributed import futures_of

    futures = futures_of(persisted)
    if futures and len(futures[0].client.scheduler_info()["workers"]) > 1:
        futures[0].client.replicate(futures)


def _keeps_counts(n_boot, n):
    """Whether every count of ``n_boot`` bootstraps of ``n`` samples (uint8, whole seed
    blocks) fits in :data:`COUNTS_BYTES`: then they are drawn once and shared."""
    return -(-n_boot // SEED_BLOCK) * SEED_BLOCK * n <= COUNTS_BYTES


def _shared_counts(keep, seed, stream, plans, n_blocks, n_boot, client=None):
    """While every block's counts fit in COUNTS_BYTES (``keep``; B x N bytes, B rounded
    up to whole seed blocks) each block's are drawn once, kept on the cluster and shared
    by the block's task of every group (and by the out-of-bag pass) — as the in-memory
    kernel draws them once; beyond (None), each task draws its block's again, so that
    no worker holds B x N. On a distributed cluster the shared counts are copied to
    every worker (at most COUNTS_BYTES each): a task's only dependency would otherwise
    tie it to the worker that drew them, and leave other workers idle."""
    if not keep:
        return None
    import dask
    from dask import delayed

    items = [delayed(K.block_batches, pure=True)(seed, stream, plans, j, n_boot)
             for j in range(n_blocks)]
    counts = dask.persist(*items) if client is None else tuple(client.persist(items))
    with deferred_interrupts():  # a blocking client call: a Ctrl-C inside could break it
        _replicate(counts)
    return counts


def _nbytes(x):
    """Bytes of the arrays in ``x`` (arrays, tuples, lists, dataclasses of them)."""
    if isinstance(x, np.ndarray):
        return x.nbytes
    if isinstance(x, (tuple, list)):
        return sum(_nbytes(v) for v in x)
    return sum(_nbytes(v) for v in vars(x).values()) if hasattr(x, "__dataclass_fields__") else 0


@contextlib.contextmanager
def _carrying(blocks_in):
    """Dask's warning of a large graph, raised by the bytes of ``blocks_in``: each sample
    block's target travels with its tasks by design (see :func:`_chain`) — ~10 bytes per
    sample, 10 MB at a million samples, in which the warning would otherwise print its
    advice to load the data with Dask, which does not apply."""
    import dask
    from dask.utils import parse_bytes

    key = "distributed.admin.large-graph-warning-threshold"
    limit = parse_bytes(dask.config.get(key, "10MB")) + _nbytes(blocks_in)
    with dask.config.set({key: limit}):
        yield


def _chain(task_runs, one, many, blocks_in, common, *args, counts=None):
    """The sums of ``task_runs`` added in block order: a task per run (``one`` for a
    block alone, ``many`` for a run, which gives a list of its blocks' sums). Each task
    gets its blocks' ``blocks_in`` (their target: ~10 bytes per sample) and the plans
    (8 × B × J bytes of totals for J sample blocks) as arguments, not as a shared
    dependency, which would draw every task to the worker that holds it."""
    from dask import delayed

    acc = None
    for blocks, parts in task_runs:
        if len(blocks) == 1:
            (j, lo, hi), = blocks
            kw = {} if counts is None else {"counts": counts[j]}
            s = delayed(one, pure=True)(parts, blocks_in[j], *common, j, hi - lo, *args, **kw)
            acc = s if acc is None else delayed(K.add_sums, pure=True)(acc, s)
        else:
            kw = {} if counts is None else {"counts": [counts[j] for j, _, _ in blocks]}
            s = delayed(many, pure=True)(parts, [blocks_in[j] for j, _, _ in blocks], *common,
                                         blocks, *args, **kw)
            acc = delayed(K.add_run, pure=True)(acc, s)
    return acc


def _bbc_by_samples(src, edges, target, m, seed, n_boot, conf, sb, caller):
    """BBC of a pointwise metric over (sample block, configuration group) tasks, in two
    passes as the in-memory kernel: every configuration in bag, then the winners alone
    out of bag."""
    import dask
    from dask import delayed

    per = _n_repeats(src)
    out = -(-n_boot // SEED_BLOCK) * SEED_BLOCK * per * 8 * 2  # in bag; concatenated
    runs, offsets = src.sample_runs(edges, out, sb * per * m.feature_bytes, n_boot)
    # The plans are first those of no redraw, drawn here; the tasks report whether each
    # draw is defined, and only if one is not are the redraws planned on the cluster (a
    # pass over every count) and the blocks summed again with them.
    subsets = [target.subset(lo, hi) for lo, hi in edges]
    common = (m.name, src.coord)
    keep = _keeps_counts(n_boot, target.n_samples)

    def in_bag(plans, counts):
        results = []
        for g, off in enumerate(offsets):
            acc = _chain(runs[g], K.block_sums, K.run_sums, subsets, common, seed, "bbc", plans,
                         n_boot, caller, counts=counts)
            results.append(delayed(K.finish_sums, pure=True, nout=3)(acc, m.name, int(off)))
        with _carrying(subsets):
            return dask.compute(_tree([r[0] for r in results], K.merge_winners),
                                [r[1] for r in results], results[0][2])

    plans = K.first_plans(seed, "bbc", n_boot, target.n_samples, sb)
    counts = _shared_counts(keep, seed, "bbc", plans, len(edges), n_boot)
    (best, cfg), fulls, parts = in_bag(plans, counts)
    attempts = [np.zeros(1, dtype=np.int64)]
    if not m.definedness(target).decide(parts).all():
        counts = None  # released before the plans' pass over every count, and the redraws
        groups = dask.compute(_plans(seed, "bbc", n_boot, target.n_samples, sb,
                                     delayed(m.definedness(target), pure=True), False))[0]
        plans = [p for g in groups for p, _ in g]
        attempts = [_attempts(g) for g in groups]
        counts = _shared_counts(keep, seed, "bbc", plans, len(edges), n_boot)
        (best, cfg), fulls, _ = in_bag(plans, counts)
    # Out of bag: the distinct winners' columns only, read again block by block (a few
    # chunks), each bootstrap's winner picked from their products.
    winners, pick = np.unique(cfg, return_inverse=True)
    acc = _chain(src.column_runs(edges, winners), K.oob_sums, K.run_oob_sums, subsets, common,
                 seed, "bbc", plans, pick, caller, counts=counts)
    with _carrying(subsets):
        oob = dask.compute(delayed(K.finish_oob, pure=True)(acc, m.name))[0]
    return _summary((best, cfg, oob), fulls, attempts, n_boot, m.name, conf)


def _tiles(n, columns=1, tile=None):
    """The tiles of ``n`` samples: lists of consecutive sample blocks ``(j, lo, hi)``,
    ``tile`` (default :data:`RANK_TILE`) samples each — fewer where two tiles of one
    configuration's ``columns`` (repeats x classes) would exceed :data:`HOLD_BYTES` —
    and at least one block."""
    edges = M.sample_blocks(n)
    size = min(RANK_TILE if tile is None else tile, HOLD_BYTES // (2 * columns * RANK_CELL_BYTES))
    q = max(1, size // M.SAMPLE_BLOCK)
    return [[(j, *edges[j]) for j in range(a, min(a + q, len(edges)))]
            for a in range(0, len(edges), q)]


def _by_tiles(m, n):
    """Whether BBC of metric ``m`` goes by pairs of sample tiles: a ranking metric of more
    than :data:`RANK_SAMPLES` samples, over more than two tiles (with two, a pair is the
    whole sample)."""
    return m.pairwise is not None and n > RANK_SAMPLES and len(_tiles(n)) > 2


class _TileLayout:
    """The tiles of a source, their jobs — ``(tiles, weight)``: each pair of tiles with
    weight 1, each tile alone with weight 2 - t (none with two tiles; one tile alone has
    weight 1) — and the width of
    a group of configurations a job holds (:data:`HOLD_BYTES` of sorted columns of two
    tiles)."""

    def __init__(self, src, target, m, tile=None):
        self.src = src
        self.n_rep = _n_repeats(src)
        self.n_sub = len(target.classes) if m.needs_class_axis else 1
        held = m.pairwise.held_columns(self.n_sub)  # sorted columns per (config, repeat)
        self.tiles = _tiles(src.n, self.n_rep * held, tile)
        t = len(self.tiles)
        self.jobs = ([((a, b), 1) for a in range(t) for b in range(a + 1, t)]
                     + ([((a,), 2 - t) for a in range(t)] if t != 2 else []))
        self.span = [(bl[0][1], bl[-1][2]) for bl in self.tiles]
        per = 2 * (self.span[0][1] - self.span[0][0]) * self.n_rep * held * RANK_CELL_BYTES
        self.width = max(1, HOLD_BYTES // per)

    def shared(self, per_tile, plans):
        """Each tile's inputs and the plans as tasks of their own, on which the jobs
        depend: as arguments they would be copied into every job of the graph (a tile's
        target into ~t x groups jobs: 1 GB of graph at 2,000,000 samples)."""
        from dask import delayed

        self.carried = list(per_tile)
        return [delayed(K.held, pure=True)(x) for x in self.carried + [plans]]

    def groups(self, configs=None):
        """``configs`` (default all) in groups of :attr:`width`."""
        configs = np.arange(self.src.c) if configs is None else configs
        return [configs[i : i + self.width] for i in range(0, configs.size, self.width)]

    def carrying(self):
        """:func:`_carrying` of the tiles' inputs: in the graph once each, by design."""
        return _carrying(self.carried)

    def summed(self, fn, configs, shared, *args, **kwargs):
        """The sum of ``fn`` (:func:`~._blocks.tile_sums`, say) over the jobs, for the
        configurations ``configs``: ``fn(tiles, per-tile inputs, *args, weight,
        **kwargs)``."""
        from dask import delayed

        parts = [self.src.tile_parts(lo, hi, configs) for lo, hi in self.span]
        return _tree([delayed(fn, pure=True)(
            [(self.tiles[a], parts[a]) for a in which], [shared[a] for a in which], *args,
            weight=weight, **kwargs) for which, weight in self.jobs], K.add_tiles)


def _bbc_by_tiles(src, target, m, n_bootstraps, confidence_level, random_state, caller):
    """BBC of a ranking metric, a task holding two tiles of samples at most.

    A ranking metric's statistics (AUC's Mann-Whitney numerator and positives x
    negatives; the concordance numerator and comparable pairs) are integer sums over
    pairs of samples, so over tiles X_1..X_t, S = sum_{a<b} S(X_a u X_b) - (t - 2)
    sum_a S(X_a): a task per pair of tiles (and per tile) and group of configurations
    sorts its samples' columns, draws its blocks' counts seed block by seed block and
    returns its sums, which add exactly, in any order, to the whole sample's — the
    in-memory scores bit for bit. The price is the pairs: about t times the in-memory
    kernel's work (t = N / RANK_TILE), each tile's counts drawn about t times per group.
    The plans (redraws) are decided first, block by block; out of bag, the distinct
    winners' columns are summed the same way."""
    import dask
    from dask import delayed

    conf, n_boot, seed = _bbc_args(n_bootstraps, confidence_level, random_state, caller)
    lay = _TileLayout(src, target, m)
    rule = delayed(m.definedness(target), pure=True)
    groups = dask.compute(_plans(seed, "bbc", n_boot, src.n, M.SAMPLE_BLOCK, rule, False))[0]
    plans = [p for g in groups for p, _ in g]
    n_rep, n_sub = lay.n_rep, lay.n_sub
    shared = lay.shared([target.subset(lo, hi) for lo, hi in lay.span], plans)

    def summed(configs, oob):
        return lay.summed(K.tile_sums, configs, shared, m.name, src.coord, seed, "bbc",
                          shared[-1], n_boot, oob=oob, caller=caller)

    results = [delayed(K.finish_tiles, pure=True, nout=2)(
        summed(g, False), m.name, int(g[0]), g.size, n_rep, n_sub) for g in lay.groups()]
    with lay.carrying():
        (best, cfg), fulls = dask.compute(_tree([r[0] for r in results], K.merge_winners),
                                          [r[1] for r in results])
    # Out of bag: the distinct winners' columns only, in groups, each bootstrap's winner
    # picked from their sums.
    winners, pick = np.unique(cfg, return_inverse=True)
    with lay.carrying():
        totals = dask.compute([summed(g, True) for g in lay.groups(winners)])[0]
    num = np.concatenate([tt["num"] for tt in totals])
    oob = K.finish_tile_oob(num, totals[0]["den"], pick, m.name, n_rep, n_sub)
    return _summary((best, cfg, oob), fulls, [_attempts(g) for g in groups], n_boot, m.name,
                    conf)


def bbc_over_table(table, blocks, offsets, y, *, metric, n_bootstraps, confidence_level,
                   random_state, pos_label, caller="bbc"):
    """BBC of a study's cube: over (sample run, group of stored chunks) tasks reading
    ``table`` (a :class:`~bbc_dask.cube.SampleTable`) for a pointwise metric of more
    than one sample block — a task's memory then does not grow with N x its group —
    else over the configuration ``blocks`` at ``offsets`` (:func:`bbc_over_blocks`)."""
    m = get_metric(metric, caller=caller)
    src = _Source.of_table(table)
    along = _along_samples(m, src)
    if along is not None:
        _, target = _target(y, src.n, m, pos_label, caller)
        return along(src, target, m, n_bootstraps, confidence_level, random_state, caller)
    return bbc_over_blocks(blocks, offsets, y, metric=m.name, n_bootstraps=n_bootstraps,
                           confidence_level=confidence_level, random_state=random_state,
                           pos_label=pos_label, caller=caller)


def bbc_over_blocks(blocks, offsets, y, *, metric, n_bootstraps, confidence_level, random_state,
                    pos_label, class_coord=None, caller="bbc"):
    """BBC over configuration blocks holding every sample (ZarrBlocks, a study's
    CubeBlocks or Dask delayed arrays) whose configurations start at ``offsets``: one
    task prepares each block once, the counts of each group of seed blocks are drawn
    once, one task scores a block against a group (or, when the counts exceed
    :data:`COUNTS_BYTES`, one task prepares a block and scores it against every plan,
    drawing its counts); a tree merges the winners."""
    import dask
    from dask import delayed

    m = get_metric(metric, caller=caller)
    conf, n_boot, seed = _bbc_args(n_bootstraps, confidence_level, random_state, caller)
    y = y if isinstance(y, tuple) else np.asarray(y)
    target = V.as_target(y, m, caller, pos_label=pos_label)
    sb, n = M.SAMPLE_BLOCK, target.n_samples
    rule = delayed(m.definedness(target), pure=True)
    # Counts drawn once and shared while every worker can hold them all (B x N bytes);
    # beyond, each block's task draws them again from the plans, one seed block at a
    # time: more draws, but a worker's memory no longer grows with B x N.
    keep = _keeps_counts(n_boot, n)
    plans = _plans(seed, "bbc", n_boot, n, sb, rule, keep)
    t_d = delayed(target, pure=True)
    if keep:
        preps = [delayed(K.prepare_block, pure=True, nout=2)(b, t_d, m.name, class_coord, sb,
                                                             caller) for b in blocks]
        per_group = [_tree([delayed(K.score_block, pure=True)(p, [pl], int(o), n_boot)
                            for p, o in zip(preps, offsets)], K.merge_winners) for pl in plans]
    else:  # one scoring per block: prepared and scored in one task
        preps = [delayed(K.prepare_and_score, pure=True, nout=2)(
            b, t_d, m.name, class_coord, sb, caller, plans, int(o), n_boot, (seed, "bbc", rule))
            for b, o in zip(blocks, offsets)]
        per_group = [_tree([p[0] for p in preps], K.merge_winners)]
    merged, fulls, attempts = dask.compute(
        per_group, [p[1] for p in preps], [delayed(_attempts, pure=True)(p) for p in plans])
    merged = tuple(np.concatenate(a) for a in zip(*merged))
    return _summary(merged, fulls, attempts, n_boot, m.name, conf)


def lazy_bbc_f(predictions, y, folds, *, metric, n_bootstraps, confidence_level, random_state,
               pos_label, block_size=None, caller="bbc_f"):
    """BBC-F of a lazy cube: its fold × configuration matrix built on the cluster
    (:func:`_lazy_fold_matrix`; small: R·K rows), then bootstrapped on the client as in
    memory."""
    m = get_metric(metric, caller=caller)
    src = _sources(predictions, m, caller)
    y, target = _target(y, src.n, m, pos_label, caller)
    f = V.as_folds(folds, src.n, _n_repeats(src), caller)
    F, rows = _lazy_fold_matrix(src, y, target, f, m, pos_label, caller)
    return S._bbc_f_matrix(F, rows, m.name, n_bootstraps, confidence_level, random_state, None,
                           block_size, caller)


def _lazy_fold_matrix(src, y, target, folds, m, pos_label, caller):
    """``(F (R·K, C), rows)`` of a lazy cube, on the cluster: a pointwise metric's summed
    over (sample block, configuration group) tasks (:func:`_fold_matrix_by_samples`), a
    ranking metric's beyond :data:`RANK_SAMPLES` by pairs of sample tiles
    (:func:`_fold_matrix_by_tiles`) — a task's memory does not grow with N — and below,
    per configuration block holding every sample (:func:`fold_matrix_over_blocks`)."""
    if m.pairwise is None or _by_tiles(m, src.n):
        return (_fold_matrix_by_samples if m.pairwise is None else _fold_matrix_by_tiles)(
            src, target, folds, m, caller)
    blocks, _ = src.config_parts()
    return fold_matrix_over_blocks(blocks, y, folds, m.name, pos_label, src.coord)


def _fold_matrix_by_samples(src, target, folds, m, caller):
    """The fold × configuration matrix (R·K, C) of a pointwise metric: per configuration
    group, each sample block's sums per fold row (:meth:`~bbc_dask.metrics._Pointwise.fold_sums`)
    added in block order along a chain of tasks — the very terms and additions of
    :func:`bbc_dask.fold_score_matrix`, so the same bits. A task holds one sample block of
    its group (:data:`HOLD_BYTES`) and R·K sums per configuration."""
    import dask
    from dask import delayed

    sb = M.SAMPLE_BLOCK
    edges = M.sample_blocks(src.n, sb)
    at, rows = S.fold_rows(folds)
    per = _n_repeats(src)
    # out: a few feature sums per fold row and configuration (one per class at most)
    n_feat = 1 if target.codes is None else max(2, len(target.classes))
    runs, _ = src.sample_runs(edges, len(rows) * 8 * n_feat, sb * per * m.feature_bytes)
    # each block's fold rows travel with its task in every group (as its target does):
    # the narrowest integers that hold them
    at = at.astype(np.int16 if len(rows) < 2**15 else np.int32)
    blocks_in = [(target.subset(lo, hi), at[lo:hi]) for lo, hi in edges]
    centers = S.fold_centers(target, at, len(rows))
    # a lazy cube's runs are one sample block each (a study's store, read in runs of
    # blocks, keeps its fold scores in the ledger: Study.bbc_f reads no predictions)
    finished = [delayed(K.finish_fold_sums, pure=True)(
        _chain(run, K.fold_block_sums, None, blocks_in, (m.name, src.coord),
               len(rows), centers, caller), m.name) for run in runs]
    with _carrying(blocks_in):
        parts = dask.compute(finished)[0]
    return S.check_fold_matrix(np.concatenate(parts, axis=1), rows, m.name, caller), rows


def _fold_matrix_by_tiles(src, target, folds, m, caller):
    """The fold × configuration matrix (R·K, C) of a ranking metric by pairs of sample
    tiles of :data:`RANK_FOLD_TILE` (see :func:`_bbc_by_tiles`): each fold row's
    statistics are the pair sums of its 0/1 weights, exact integers, so the matrix has
    the in-memory bits."""
    import dask
    from dask import delayed

    at, rows = S.fold_rows(folds)
    lay = _TileLayout(src, target, m, RANK_FOLD_TILE)
    shared = lay.shared([(target.subset(lo, hi), at[lo:hi]) for lo, hi in lay.span], None)
    row_repeat = [r for r, _ in rows]
    finished = [delayed(K.finish_tile_folds, pure=True)(
        lay.summed(K.tile_fold_sums, g, shared, m.name, src.coord, len(rows), caller=caller),
        m.name, g.size, lay.n_rep, lay.n_sub, row_repeat) for g in lay.groups()]
    with lay.carrying():
        parts = dask.compute(finished)[0]
    return S.check_fold_matrix(np.concatenate(parts, axis=1), rows, m.name, caller), rows


def fold_matrix_over_blocks(blocks, y, folds, metric, pos_label, class_coord=None):
    """``(F, rows)``: the fold × configuration matrix built per configuration block
    (holding every sample) on the cluster; ``folds`` validated (N, R)."""
    import dask
    from dask import delayed

    # y and the folds (N x R) in the graph once each, not copied into every task
    y_d, folds_d = delayed(y, pure=True), delayed(np.asarray(folds), pure=True)
    parts = dask.compute([delayed(K.chunk_fold_matrix, pure=True)(b, y_d, folds_d, metric, pos_label,
                                                                   class_coord, M.SAMPLE_BLOCK)
                          for b in blocks])[0]
    return np.concatenate(parts, axis=1), S.fold_rows(folds)[1]


def lazy_dropping_test(client, blocks, y, available, *, metric, alpha, n_bootstraps, seed,
                       pos_label=None, class_coord=None, key="bbc-dropping", source=None,
                       best=None):
    """The BBCD dropping test on ``client``; equals :func:`bbc_dask.dropping_test` on the
    concatenated blocks bit for bit.

    With ``source`` — the same configurations as a sample source: a study's
    :class:`~bbc_dask.cube.SampleTable`, or a :class:`_Source` — and a pointwise metric of
    more than one sample block, the test goes by sample blocks (:func:`_dropping_by_samples`),
    and with a ranking metric beyond :data:`RANK_SAMPLES` by pairs of sample tiles
    (:func:`_dropping_by_tiles`): a task's memory does not grow with N. Otherwise over the configuration ``blocks``
    (every sample), whose tasks ``key`` names: each block is prepared once; the counts of
    each group of seed blocks are drawn once and shared, or, beyond :data:`COUNTS_BYTES`,
    drawn again by each block's task. A repeat with no sample available at all goes
    that way too, to fail as the in-memory test does. ``best``: θo, if not the best of
    the pooled scores (see :func:`~bbc_dask.stats._dropping.decide`)."""
    from ..stats._dropping import decide, dropping_rule, frame_of

    m = get_metric(metric, caller="dropping_test")
    seed = _seed(as_seed_sequence(seed, caller="dropping_test"))
    y = y if isinstance(y, tuple) else np.asarray(y)
    target = V.as_target(y, m, "dropping_test", pos_label=pos_label)
    available = np.asarray(available, dtype=bool)
    n = target.n_samples
    if source is not None:
        from ..stats._dropping import _available

        src = source if isinstance(source, _Source) else _Source.of_table(source)
        avail = _available(available, n, _n_repeats(src), "dropping_test")
        if _by_samples(m, src) and avail.any(axis=0).all():
            return _dropping_by_samples(client, src, target, avail, m, alpha, n_bootstraps, seed,
                                        best)
        if _by_tiles(m, n) and avail.any(axis=0).all():
            return _dropping_by_tiles(client, src, target, avail, m, alpha, n_bootstraps, seed,
                                      best)
    rule = dropping_rule(m, target, available, available.shape[1] if available.ndim == 2 else 1)
    # Submitted as tasks holding their values, not scattered: the scheduler computes them
    # again if the worker holding them is lost (restarted at its memory limit, say),
    # where scattered data would be gone with it and every task needing it cancelled.
    with _carrying([y, available, rule.mask, getattr(rule.rule, "y", None)]):
        rule_f, y_f, avail_f = (client.submit(K.held, v, pure=False, key=f"{key}-{name}")
                                for name, v in (("rule", rule), ("y", y), ("available", available)))
    # As in bbc_over_blocks: the counts are shared while they fit in COUNTS_BYTES (B x N
    # bytes), else each block's task draws them again from the plans.
    keep = _keeps_counts(n_bootstraps, n)
    frame = frame_of(available)  # the draws are of the samples available in some repeat
    plans = [client.submit(K.plan_group, seed, "dropping", ks, n, M.SAMPLE_BLOCK, rule_f, keep,
                           frame, pure=False, retries=3, key=f"{key}-plan-{q}")
             for q, ks in enumerate(_seed_groups(n_bootstraps, n, keep))]
    scorers = [client.submit(K.prepare_dropping, b, y_f, avail_f, m.name, pos_label, class_coord,
                             pure=False, retries=3, key=f"{key}-prep-{i}")
               for i, b in enumerate(blocks)]
    if keep:
        scores = [[client.submit(K.score_dropping, sc, [pl], pure=False, retries=3,
                                 key=f"{key}-score-{i}-{q}") for q, pl in enumerate(plans)]
                  for i, sc in enumerate(scorers)]
    else:
        scores = [[client.submit(K.score_dropping, sc, plans, (seed, "dropping", rule_f),
                                 pure=False, retries=3, key=f"{key}-score-{i}")]
                  for i, sc in enumerate(scorers)]
    attempts = [client.submit(_attempts, pl, pure=False, key=f"{key}-attempts-{q}")
                for q, pl in enumerate(plans)]
    flat = [f for row in scores for f in row] + attempts
    wait_done(flat)
    with deferred_interrupts():  # a Ctrl-C inside a gather can leave the client unusable
        got = client.gather(scores)
        att = client.gather(attempts)
    full = np.concatenate([row[0][0] for row in got])
    S = np.concatenate([np.concatenate([s for _, s in row], axis=0) for row in got], axis=1)
    return decide(full, S[:n_bootstraps], alpha, int(np.concatenate(att)[:n_bootstraps].sum()),
                  best)


def _gathered(client, graph):
    """``graph`` (a list of delayed) computed on ``client`` — a task that raises (a read
    from object storage that failed, say) is run again up to 3 times; a lost worker's
    tasks the scheduler reschedules — waited for outside the client (a Ctrl-C then
    leaves the client usable) and gathered."""
    futures = client.compute(graph, retries=3)
    wait_done(futures)
    with deferred_interrupts():
        return client.gather(futures)


def _n_repeats(src):
    return int(np.prod([s for d, s in zip(src.dims, src.x.shape) if d == "repeat"]))


def _dropping_by_samples(client, src, target, available, m, alpha, n_boot, seed, best=None):
    """The dropping test of a pointwise metric over (sample block, configuration group)
    tasks (or runs of blocks of a study's cube, as :func:`_bbc_by_samples` reads them):
    each returns its block's in-bag feature sums per repeat, masked by the samples
    available there; a chain adds them in block order, as :class:`DroppingScorer` does,
    and each group's task turns them into its configurations' scores (B, c). The draws
    and their redraws follow :func:`_bbc_by_samples` (stream ``"dropping"``, the
    :class:`MaskedRule` streamed block by block)."""
    from dask import delayed

    from ..stats._dropping import dropping_rule, frame_of

    caller = "dropping_test"
    sb = M.SAMPLE_BLOCK
    edges = M.sample_blocks(src.n, sb)
    avail = available  # (N, R), checked
    n_rep = avail.shape[1]
    out = -(-n_boot // SEED_BLOCK) * SEED_BLOCK * n_rep * 8 * 2  # per repeat; concatenated
    runs, offsets = src.sample_runs(edges, out, sb * n_rep * m.feature_bytes, n_boot)
    blocks_in = [(target.subset(lo, hi), avail[lo:hi]) for lo, hi in edges]
    common = (m.name, src.coord)
    keep = _keeps_counts(n_boot, target.n_samples)

    def scored(plans, counts):
        with _carrying(blocks_in):
            return _gathered(client, [
                delayed(K.finish_dropping, pure=True)(
                    _chain(runs[g], K.dropping_sums, K.run_dropping_sums, blocks_in, common,
                           seed, plans, n_boot, caller, counts=counts),
                    m.name, n_rep)
                for g in range(len(offsets))])

    frame = frame_of(avail)  # the draws are of the samples available in some repeat
    plans = K.first_plans(seed, "dropping", n_boot, target.n_samples, sb, frame)
    got = scored(plans, _shared_counts(keep, seed, "dropping", plans, len(edges), n_boot, client))
    attempts = [np.zeros(1, dtype=np.int64)]
    rule = dropping_rule(m, target, avail, n_rep)
    if not rule.decide(got[0][2]).all():
        groups = _gathered(client, _plans(seed, "dropping", n_boot, target.n_samples, sb,
                                          delayed(rule, pure=True), False, frame))
        plans = [p for g in groups for p, _ in g]
        attempts = [_attempts(g) for g in groups]
        got = scored(plans, _shared_counts(keep, seed, "dropping", plans, len(edges), n_boot,
                                           client))
    return _decided(got, attempts, alpha, n_boot, best)


def _dropping_by_tiles(client, src, target, available, m, alpha, n_boot, seed, best=None):
    """The dropping test of a ranking metric by pairs of sample tiles (as
    :func:`_bbc_by_tiles`): per repeat, the pair sums of the counts masked by the samples
    available there, added over the jobs; each group's task turns them into its
    configurations' scores (B, c) as :class:`DroppingScorer` does. The plans are decided
    first, by the :class:`MaskedRule` streamed block by block."""
    from dask import delayed

    from ..stats._dropping import dropping_rule, frame_of

    lay = _TileLayout(src, target, m)
    rule = dropping_rule(m, target, available, lay.n_rep)
    groups = _gathered(client, _plans(seed, "dropping", n_boot, src.n, M.SAMPLE_BLOCK,
                                      delayed(rule, pure=True), False, frame_of(available)))
    plans = [p for g in groups for p, _ in g]
    shared = lay.shared([(target.subset(lo, hi), available[lo:hi]) for lo, hi in lay.span], plans)
    with lay.carrying():
        got = _gathered(client, [delayed(K.finish_tile_dropping, pure=True)(
            lay.summed(K.tile_dropping_sums, g, shared, m.name, src.coord, seed, shared[-1],
                       n_boot),
            m.name, g.size, lay.n_rep, lay.n_sub) for g in lay.groups()])
    return _decided(got, [_attempts(g) for g in groups], alpha, n_boot, best)


def _decided(got, attempts, alpha, n_boot, best=None):
    """The dropping decision from each configuration group's ``(full (c,), scores (B, c),
    ...)``, in order, and the plans' attempts (their redraws)."""
    from ..stats._dropping import decide

    full = np.concatenate([g[0] for g in got])
    scores = np.concatenate([g[1] for g in got], axis=1)
    return decide(full, scores, alpha, int(np.concatenate(attempts)[:n_boot].sum()), best)


_COMMON = ("predictions", "y", "metric", "n_bootstraps", "confidence_level", "random_state",
           "pos_label")
#: ``bbc_dask.bbc`` and ``bbc_dask.bbc_f``: arrays in memory or lazy cubes.
bbc = _dispatching(S.bbc, lazy_bbc, _COMMON + ("folds", "selection", "include_incomplete"))
bbc_f = _dispatching(S.bbc_f, lazy_bbc_f, _COMMON + ("folds", "block_size"))
