"""The sources of the chunked path: a lazy cube (Zarr- or Dask-backed, or a study's
store) and how it is cut into task inputs — blocks of configurations, (sample block,
configuration group) grids and runs, and pairs of sample tiles."""
from __future__ import annotations

import numpy as np

from .. import _tuning as tuning
from .. import _validation, _zarr, metrics
from .._zarr import class_coord, config_width, dims_of, per_config_bytes, zarr_blocks, zarr_source
from ..exceptions import InvalidParameterError
from . import _blocks, _budgets, _tile_sums
from ._graph import _carrying, _tree
from .._doors import carried

_DIMS = _validation.CUBE_DIMS


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
        width = max(1, min(self.c, tuning.CHUNK_BYTES // max(per, 1)))
        data = self.data.rechunk({0: -1, 1: width} | {i: -1 for i in range(2, self.data.ndim)})
        return list(data.to_delayed().ravel()), _offsets(data.chunks[1])

    def sample_grid(self, edges, per_config_out, per_config_held):
        """``(grid, offsets)``: ``grid[j][g]`` the parts of sample block ``j`` of
        configuration group ``g`` (chunk-aligned, in order), groups starting at
        ``offsets``. A group's sums take at most ``bbc_dask.sums-bytes`` (``per_config_out``
        bytes per configuration), its prepared features ``bbc_dask.hold-bytes``
        (``per_config_held``)."""
        size = edges[0][1] - edges[0][0]
        if self.zarr is None:
            per = per_config_bytes((size,) + self.data.shape[1:], _DIMS[: self.data.ndim])
            width = max(1, min(self.c, tuning.CHUNK_BYTES // max(per, 1)))
        else:
            arr, key = self.zarr
            ax, s_ax = self.dims.index("config"), self.dims.index("sample")
            view = [len(range(*k.indices(n))) for k, n in zip(key, arr.shape)]
            view[s_ax] = size
            width = config_width(per_config_bytes(view, self.dims), int(arr.chunks[ax]))
        # at most bbc_dask.sums-bytes of sums per task; and enough groups that the tasks of a
        # phase keep every worker thread busy twice over — only then, since each group
        # reads (and, beyond bbc_dask.counts-bytes, draws) every sample block's counts again
        # (many sample blocks: one group)
        n_groups = -(-2 * _budgets.slots() // len(edges))
        span = min(tuning.SUMS_BYTES // max(per_config_out, 1),
                   tuning.HOLD_BYTES // max(per_config_held, 1),
                   -(-self.c // n_groups))
        span = max(width, span // width * width)
        if self.zarr is None:
            # a Dask array (persisted, say): parts of `width` configurations, a group of
            # them per task as for a store — a part per task would read (or draw) the
            # counts again for every part. A task gets its parts loaded, all at once
            # (a store's are read one at a time): they too take at most bbc_dask.hold-bytes.
            data = self.data.rechunk({0: size, 1: width} | {i: -1 for i in range(2, self.data.ndim)})
            d = data.to_delayed().reshape(len(edges), -1)
            raw = size * int(np.prod(self.data.shape[2:])) * self.data.dtype.itemsize
            per_group = max(1, min(span // width, tuning.HOLD_BYTES // max(width * raw, 1)))
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
        """The configurations of a study's cube in groups of consecutive stored chunks (or
        parts of one). Every group draws every sample block's counts; every run of sample
        blocks decodes the stored chunks holding its slots whole: per fold a fraction f of
        the fold's (``fold_fraction``; 1 where a chunk holds a whole fold) beyond its own.
        Groups of c/g configurations in runs of ``bbc_dask.hold-bytes`` take about g draws
        and 1 + f × cube / g / ``bbc_dask.hold-bytes`` decodings of the cube: g = sqrt(f ×
        cube / ``bbc_dask.hold-bytes``) balances the two (a draw of every count of 256
        bootstraps costs about as much as a decoding of the cube's float64, as measured at
        10^6 samples); with more bootstraps (``n_boot``) a draw costs more, and g shrinks as
        sqrt(256 / n_boot) (the dropping test's 1,000: about half as many groups). A group
        is narrower still where one sample block of it as read would exceed
        ``bbc_dask.hold-bytes``, or its sums (``per_config_out`` bytes per configuration)
        ``bbc_dask.sums-bytes``: many configurations of few samples."""
        t, per = self.table, self._cell_bytes
        cube = self.n * self.c * per
        draws = min(1.0, 256 / max(n_boot, 1))
        n_groups = max(1, min(self.c, round(float(np.sqrt(cube / tuning.HOLD_BYTES * draws * t.fold_fraction)))))
        cap = min(tuning.HOLD_BYTES // ((edges[0][1] - edges[0][0]) * per),
                  tuning.SUMS_BYTES // max(per_config_out, 1))
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
        """Consecutive sample blocks in runs: as many as ``bbc_dask.hold-bytes`` of ``width``
        configurations as read (float64), and their blocks' sums ``bbc_dask.sums-bytes``
        (``per_config_out`` bytes per configuration and block), allow — each run decodes
        the stored chunks holding its slots whole, so the fewer runs the less decoding —
        yet enough runs that the tasks keep every worker thread busy twice over."""
        per_row = width * self._cell_bytes
        size = edges[0][1] - edges[0][0]
        per_run = max(1, min(tuning.HOLD_BYTES // max(per_row * size, 1),
                             tuning.SUMS_BYTES // max(width * per_config_out, 1)))
        per_run = min(per_run, -(-len(edges) // -(-2 * _budgets.slots() // n_groups)))
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
            width = max(1, tuning.CHUNK_BYTES // max(per, 1))
            data = data.rechunk({0: -1, 1: width} | {i: -1 for i in range(2, data.ndim)})
            return list(data.to_delayed().ravel())
        arr, key = self.zarr
        s_ax = self.dims.index("sample")
        rows = range(*key[s_ax].indices(arr.shape[s_ax]))
        k = list(key)
        k[s_ax] = slice(rows[lo], rows[hi - 1] + 1, rows.step)
        return zarr_blocks(arr, self.dims, configs=configs, key=k)[0]


def _offsets(chunks):
    return np.concatenate([[0], np.cumsum(chunks)[:-1]]).astype(int).tolist()


def _sources(predictions, metric):
    """The :class:`_Source` of a lazy cube."""
    x = predictions
    if type(x).__name__ == "Dataset":
        if "prediction" not in x.data_vars:
            raise InvalidParameterError.of(
                "predictions", "a DataArray, or a Dataset with a 'prediction' variable",
                shown=f"a Dataset of {sorted(x.data_vars)}")
        x = x["prediction"]
    src = zarr_source(x)
    ndim = len(x.shape)
    dims = dims_of(x, ndim)
    if metric.needs_class_axis != ("class" in dims):
        raise InvalidParameterError.of(
            "predictions", f"a cube {'with' if metric.needs_class_axis else 'without'} "
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


def _target(y, n, m, pos_label):
    """``(y, target)``: y checked against the cube, and encoded once on the client (every
    task encodes its predictions against the whole sample's classes)."""
    y = y if isinstance(y, tuple) else np.asarray(y)
    if not isinstance(y, tuple):
        _validation.check_same_length("predictions", n, "y", y.shape[0] if y.ndim else 0)
    return y, _validation.as_target(y, m, pos_label=pos_label)


def _n_repeats(src):
    return int(np.prod([s for d, s in zip(src.dims, src.x.shape) if d == "repeat"]))


def _by_samples(m, src):
    """Whether BBC of metric ``m`` goes along samples: a pointwise metric of more than one
    sample block."""
    return m.kind == "pointwise" and src.n > metrics.SAMPLE_BLOCK


def _tiles(n, columns=1, tile=None):
    """The tiles of ``n`` samples: lists of consecutive sample blocks ``(j, lo, hi)``,
    ``tile`` (default ``bbc_dask.rank-tile``) samples each — fewer where two tiles of one
    configuration's ``columns`` (repeats x classes) would exceed ``bbc_dask.hold-bytes`` —
    and at least one block."""
    edges = metrics.sample_blocks(n)
    size = min(tuning.RANK_TILE if tile is None else tile,
               tuning.HOLD_BYTES // (2 * columns * tuning.RANK_CELL_BYTES))
    q = max(1, size // metrics.SAMPLE_BLOCK)
    return [[(j, *edges[j]) for j in range(a, min(a + q, len(edges)))]
            for a in range(0, len(edges), q)]


def _by_tiles(m, n):
    """Whether BBC of metric ``m`` goes by pairs of sample tiles: a ranking metric of more
    than ``bbc_dask.rank-samples`` samples, over more than two tiles (with two, a pair is the
    whole sample)."""
    return m.pairwise is not None and n > tuning.RANK_SAMPLES and len(_tiles(n)) > 2


class _TileLayout:
    """The tiles of a source, their jobs — ``(tiles, weight)``: each pair of tiles with
    weight 1, each tile alone with weight 2 - t (none with two tiles; one tile alone has
    weight 1) — and the width of
    a group of configurations a job holds (``bbc_dask.hold-bytes`` of sorted columns of two
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
        per = 2 * (self.span[0][1] - self.span[0][0]) * self.n_rep * held * tuning.RANK_CELL_BYTES
        self.width = max(1, tuning.HOLD_BYTES // per)

    def shared(self, per_tile, plans):
        """Each tile's inputs and the plans as tasks of their own, on which the jobs
        depend: as arguments they would be copied into every job of the graph (a tile's
        target into ~t x groups jobs: 1 GB of graph at 2,000,000 samples)."""
        from dask import delayed

        self.carried = list(per_tile)
        return [delayed(_blocks.held, pure=True)(x) for x in self.carried + [plans]]

    def groups(self, configs=None):
        """``configs`` (default all) in groups of :attr:`width`."""
        configs = np.arange(self.src.c) if configs is None else configs
        return [configs[i : i + self.width] for i in range(0, configs.size, self.width)]

    def carrying(self):
        """:func:`~._graph._carrying` of the tiles' inputs: in the graph once each, by design."""
        return _carrying(self.carried)

    def summed(self, fn, configs, shared, *args, **kwargs):
        """The sum of ``fn`` (:func:`~._blocks.tile_sums`, say) over the jobs, for the
        configurations ``configs``: ``fn(tiles, per-tile inputs, *args, weight,
        **kwargs)``."""
        from dask import delayed

        parts = [self.src.tile_parts(lo, hi, configs) for lo, hi in self.span]
        return _tree([delayed(carried(fn), pure=True)(
            [(self.tiles[a], parts[a]) for a in which], [shared[a] for a in which], *args,
            weight=weight, **kwargs) for which, weight in self.jobs], _tile_sums.add_tiles)
