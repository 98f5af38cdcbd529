"""Zarr's one home: how a cube stored in Zarr is found behind an xarray object, and read
in blocks of configurations.

The block rules every layer shares: the chunked bootstraps cut a Zarr-backed cube with
them (:func:`zarr_blocks`), and the study's store cuts its configurations alike
(``Cube.blocks``, :func:`config_width` and :func:`config_groups`). NumPy and zarr only:
importing it loads no Dask (the workers read :class:`ZarrBlock` with zarr alone).
"""
from __future__ import annotations

import numpy as np

from . import _tuning as tuning
from . import _validation

__all__ = ["ZarrBlock", "class_coord", "config_groups", "config_width", "dims_of",
           "per_config_bytes", "zarr_blocks", "zarr_of", "zarr_source"]


_DIMS = _validation.CUBE_DIMS


def zarr_source(x):
    """``(zarr.Array, key)`` when every element of ``x`` is read unchanged from that array
    at ``key`` (a tuple of slices): a zarr.Array, or an xarray variable opened from Zarr
    with no decoding — lazily indexed (``chunks=None``, sliced or not) or Dask-backed as
    opened (not sliced: Dask's slicing is a graph layer we do not read)."""
    if type(x).__module__.startswith("zarr") and hasattr(x, "metadata") and hasattr(x, "oindex"):
        return x, tuple(slice(None) for _ in x.shape)
    data = getattr(getattr(x, "variable", None), "_data", None)
    if data is None:
        return None
    graph = getattr(data, "dask", None)
    if graph is not None:
        if len(graph.layers) != 2:
            return None
        try:
            (src,) = [layer for name, layer in graph.layers.items() if not graph.dependencies[name]]
            (obj,) = list(src.values())
        except ValueError:
            return None
    else:
        obj = data
    key = None
    while True:  # xarray's adapters: accept plain pass-through wrappers only
        name = type(obj).__name__
        if name == "ZarrArrayWrapper":
            arr = obj.get_array()
            key = key or tuple(slice(None) for _ in arr.shape)
            shape = tuple(len(range(*k.indices(n))) for k, n in zip(key, arr.shape))
            return (arr, key) if shape == tuple(data.shape) and arr.dtype == data.dtype else None
        if name == "LazilyIndexedArray":
            k = tuple(obj.key.tuple)
            if key is not None or not all(isinstance(i, slice) for i in k):
                return None  # nested or integer indexing
            key = k
        elif name not in ("ImplicitToExplicitIndexingAdapter", "CopyOnWriteArray", "MemoryCachedArray"):
            return None  # e.g. a decoding (mask/scale) wrapper: read through Dask instead
        obj = obj.array


def zarr_of(x):
    """The ``zarr.Array`` behind ``x`` (see :func:`zarr_source`), or None."""
    src = zarr_source(x)
    return None if src is None else src[0]


def dims_of(x, ndim):
    """The dimension names of the cube ``x`` (``ndim`` axes), checked: its own, the
    Zarr array's stored names, else the canonical order."""
    dims = getattr(x, "dims", None)
    if dims is None:
        names = getattr(getattr(x, "metadata", None), "dimension_names", None)
        dims = tuple(names) if names and all(names) else _DIMS[: min(4, ndim)]
        if ndim == 2:
            dims = ("sample", "config")
    return _validation.check_dims(dims)


def per_config_bytes(shape, dims):
    """Bytes of one configuration of a cube of ``shape`` as float64."""
    return int(np.prod([s for s, d in zip(shape, dims) if d != "config"])) * 8


def config_width(per_config, stored, chunk_bytes=None):
    """Configurations per task block: about ``chunk_bytes`` (``per_config`` bytes each),
    a multiple of the ``stored`` chunk width when that fits, else fewer — the block then
    reads part of each stored chunk, along samples one chunk at a time (memory bounded
    by the budget, not by the stored width, when samples are many)."""
    per = max(1, (tuning.CHUNK_BYTES if chunk_bytes is None else chunk_bytes) // max(per_config, 1))
    return per // stored * stored if per >= stored else per


def zarr_blocks(array, dims, configs=None, chunk_bytes=None, key=None):
    """ZarrBlocks over ``configs`` (positions in the view ``array[key]``; default all),
    each about ``chunk_bytes`` (see :func:`config_width`).
    Returns ``(blocks, offsets)``."""
    chunk_bytes = tuning.CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    ax = dims.index("config")
    order = [dims.index(d) for d in _DIMS if d in dims]
    expand = "repeat" not in dims
    key = tuple(slice(None) for _ in array.shape) if key is None else tuple(key)
    view = tuple(len(range(*k.indices(n))) for k, n in zip(key, array.shape))
    width = config_width(per_config_bytes(view, dims), int(array.chunks[ax]), chunk_bytes)
    base = np.arange(*key[ax].indices(array.shape[ax]))  # view position -> stored index
    full = all(k == slice(None) for k in key)
    if configs is None and full:
        n_cfg = array.shape[ax]
        ranges = [slice(a, min(a + width, n_cfg)) for a in range(0, n_cfg, width)]
        offsets = [r.start for r in ranges]
        return [ZarrBlock(array, order, ax, r, expand) for r in ranges], offsets
    configs = base if configs is None else base[np.asarray(configs, dtype=np.int64)]
    groups, offsets = config_groups(configs, width)
    return [ZarrBlock(array, order, ax, g, expand, key) for g in groups], offsets


def config_groups(configs, width):
    """``(groups, offsets)``: the configurations ``configs`` (sorted stored indices)
    grouped by the window of ``width`` stored configurations they fall in, and where
    each group starts among them."""
    groups = np.split(configs, np.flatnonzero(np.diff(configs // width)) + 1)
    groups = [g for g in groups if g.size]
    return groups, np.cumsum([0] + [g.size for g in groups[:-1]]).tolist()


def class_coord(x):
    """The values of the class coordinate of an xarray cube, or None."""
    coords = getattr(x, "coords", None)
    if coords is not None and "class" in getattr(x, "dims", ()) and "class" in coords:
        return np.asarray(coords["class"].values)
    return None


class ZarrBlock:
    """A region of a Zarr array, read on the worker with zarr alone.

    Reading here rather than through a Dask array graph keeps ``dask.array`` (which
    imports xarray and pandas, ~60 MiB) out of the workers, and reads each chunk once.
    ``order`` permutes the stored axes to (sample, config, repeat[, class]);
    ``expand`` inserts the repeat axis of a cube stored without one.
    """

    __slots__ = ("array", "config_axis", "configs", "expand", "key", "order")

    def __init__(self, array, order, config_axis, configs, expand, key=None):
        # configs: a slice, or the stored configuration indices (sorted) to read; key:
        # slices of the other axes (a view of the stored array, or a block of samples)
        self.array, self.order, self.config_axis = array, tuple(order), int(config_axis)
        self.configs = configs if isinstance(configs, slice) else np.asarray(configs, dtype=np.int64)
        self.expand = bool(expand)
        self.key = tuple(slice(None) for _ in self.order) if key is None else tuple(key)

    def __getstate__(self):
        return tuple(getattr(self, k) for k in self.__slots__)

    def __setstate__(self, state):
        for k, v in zip(self.__slots__, state):
            setattr(self, k, v)

    def _get(self, key):
        if isinstance(self.configs, slice):
            return np.asarray(self.array[tuple(key)])
        return np.asarray(self.array.oindex[tuple(key)])

    def read(self):
        key = list(self.key)
        key[self.config_axis] = self.configs
        s_ax = self.order[0]
        rows = range(*key[s_ax].indices(self.array.shape[s_ax]))
        step = int(self.array.chunks[s_ax])
        if rows.step != 1 or len(rows) <= step:
            raw = self._get(key)
        else:
            # one stored chunk along samples at a time: Zarr would decode every chunk of
            # the block at once (a block of a few configurations of a tall cube reads
            # whole chunks of many: their decoded sum, not the block, would be the peak)
            cuts = [rows.start] + list(range((rows.start // step + 1) * step, rows.stop, step))
            raw = None
            for a, b in zip(cuts, cuts[1:] + [rows.stop]):
                key[s_ax] = slice(a, b)
                piece = self._get(key)
                if raw is None:
                    shape = list(piece.shape)
                    shape[s_ax] = len(rows)
                    raw = np.empty(shape, dtype=piece.dtype)
                at = [slice(None)] * raw.ndim
                at[s_ax] = slice(a - rows.start, b - rows.start)
                raw[tuple(at)] = piece
        arr = np.transpose(raw, self.order)
        return arr[:, :, None] if self.expand else arr

