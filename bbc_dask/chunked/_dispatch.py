"""BBC, BBC-F and the BBCD dropping test on cubes larger than memory, mapped over
configuration chunks on the cluster.

A cube is split along ``config`` only — every sample and repeat of a block of
configurations in one chunk, about :data:`CHUNK_BYTES` once encoded as float64. One task
per chunk draws the bootstraps itself from spawned seeds (never a B × N matrix from the
client), scores the chunk's configurations and keeps each bootstrap's chunk winner and its
out-of-bag score; a tree reduction merges the winners (higher in-bag score, then lower
configuration index — the whole-matrix rule). Results equal the in-memory path bit for
bit, whatever the chunking and the number of workers.

Zarr-backed cubes (a ``zarr.Array``, an xarray object opened from Zarr, or a study's
store) are read by the tasks with zarr alone, chunk-aligned: the workers never import
``dask.array``/xarray/pandas (~60 MiB each) and each stored chunk is read once. Other
Dask-backed cubes go through their own graph.

The public ``bbc_dask.bbc`` and ``bbc_dask.bbc_f`` are defined here: the statistics layer's
functions for arrays in memory, dispatching a lazy cube to the chunked path (the
statistics never import Dask).
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .. import _validation as V
from .._random import as_seed_sequence
from .._signals import deferred_interrupts, wait_done
from ..exceptions import InvalidParameterError
from ..metrics import get_metric
from ..stats import _bbc as S
from ..stats._result import summarise
from ..stats._winner import select
from . import _blocks as K

__all__ = ["CHUNK_BYTES", "bbc", "bbc_f", "bbc_f_over_blocks", "bbc_over_blocks", "is_lazy",
           "lazy_bbc", "lazy_bbc_f", "lazy_dropping_test", "zarr_blocks"]

#: Target size of one configuration chunk, in float64 (its encoded size on the worker).
#: With a seed block of 64 bootstraps the peak of a task is about 2.5 × this plus
#: 64 × N × 12 bytes of counts (N samples): 70 MB at N = 50,000.
CHUNK_BYTES = 16 * 2**20

_DIMS = V.CUBE_DIMS


def _zarr_source(x):
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


def _zarr_of(x):
    """The ``zarr.Array`` behind ``x`` (see :func:`_zarr_source`), or None."""
    src = _zarr_source(x)
    return None if src is None else src[0]


def is_lazy(x):
    if _zarr_of(x) is not None:
        return True
    if type(x).__name__ == "Dataset" and "prediction" in getattr(x, "data_vars", {}):
        return is_lazy(x["prediction"])
    data = getattr(x, "data", x)
    return type(data).__module__.startswith("dask.array")


def _dims_of(x, ndim, caller):
    dims = getattr(x, "dims", None)
    if dims is None:
        names = getattr(getattr(x, "metadata", None), "dimension_names", None)
        dims = tuple(names) if names and all(names) else _DIMS[: min(4, ndim)]
        if ndim == 2:
            dims = ("sample", "config")
    return V.check_dims(dims, caller)


def _per_config_bytes(shape, dims):
    return int(np.prod([s for s, d in zip(shape, dims) if d != "config"])) * 8


def zarr_blocks(array, dims, configs=None, chunk_bytes=None, key=None):
    """ZarrBlocks over ``configs`` (positions in the view ``array[key]``; default all),
    each about ``chunk_bytes`` and aligned to the stored chunks along ``config``.
    Returns ``(blocks, offsets)``."""
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    ax = dims.index("config")
    order = [dims.index(d) for d in _DIMS if d in dims]
    expand = "repeat" not in dims
    key = tuple(slice(None) for _ in array.shape) if key is None else tuple(key)
    view = tuple(len(range(*k.indices(n))) for k, n in zip(key, array.shape))
    stored = int(array.chunks[ax])
    per = max(1, chunk_bytes // max(_per_config_bytes(view, dims), 1))
    width = max(stored, per // stored * stored)
    base = np.arange(*key[ax].indices(array.shape[ax]))  # view position -> stored index
    full = all(k == slice(None) for k in key)
    if configs is None and full:
        n_cfg = array.shape[ax]
        ranges = [slice(a, min(a + width, n_cfg)) for a in range(0, n_cfg, width)]
        offsets = [r.start for r in ranges]
        return [K.ZarrBlock(array, order, ax, r, expand) for r in ranges], offsets
    configs = base if configs is None else base[np.asarray(configs, dtype=np.int64)]
    # group the requested configurations by the stored-chunk window they fall in
    groups = np.split(configs, np.flatnonzero(np.diff(configs // width)) + 1)
    offsets = np.cumsum([0] + [g.size for g in groups[:-1]]).tolist()
    return [K.ZarrBlock(array, order, ax, g, expand, key) for g in groups if g.size], offsets


def _class_coord(x):
    coords = getattr(x, "coords", None)
    if coords is not None and "class" in getattr(x, "dims", ()) and "class" in coords:
        return np.asarray(coords["class"].values)
    return None


def _sources(predictions, metric, caller):
    """``(blocks, offsets, n_samples, n_configs, class_coord)`` of a lazy cube."""
    x = predictions
    if type(x).__name__ == "Dataset":
        if "prediction" not in x.data_vars:
            raise InvalidParameterError.of(
                "predictions", caller, "a DataArray, or a Dataset with a 'prediction' variable",
                shown=f"a Dataset of {sorted(x.data_vars)}")
        x = x["prediction"]
    src = _zarr_source(x)
    arr = None if src is None else src[0]
    ndim = len(x.shape)
    dims = _dims_of(x, ndim, caller)
    if metric.needs_class_axis != ("class" in dims):
        raise InvalidParameterError.of(
            "predictions", caller, f"a cube {'with' if metric.needs_class_axis else 'without'} "
            f"a 'class' axis (class probabilities) for the metric {metric.name!r}",
            shown=f"dims {dims}")
    coord = _class_coord(x)
    n, c = x.shape[dims.index("sample")], x.shape[dims.index("config")]
    if arr is not None:
        blocks, offsets = zarr_blocks(arr, dims, key=src[1])
        return blocks, offsets, n, c, coord
    data = getattr(x, "data", x)
    data = data.transpose([dims.index(d) for d in _DIMS if d in dims])
    if "repeat" not in dims:
        data = data[:, :, None]
    per = _per_config_bytes(data.shape, _DIMS[: data.ndim])
    width = max(1, min(c, CHUNK_BYTES // max(per, 1)))
    data = data.rechunk({0: -1, 1: width} | {i: -1 for i in range(2, data.ndim)})
    offsets = np.concatenate([[0], np.cumsum(data.chunks[1])[:-1]]).astype(int).tolist()
    return list(data.to_delayed().ravel()), offsets, n, c, coord


def _target(y, n, caller):
    y = y if isinstance(y, tuple) else np.asarray(y)
    if not isinstance(y, tuple):
        V.check_same_length("predictions", n, "y", y.shape[0] if y.ndim else 0, caller)
    return y


def _tree(items, fn):
    from dask import delayed

    while len(items) > 1:
        items = [delayed(fn, pure=True)(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def _seed(root):
    return int(root.entropy), [int(k) for k in root.spawn_key]


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
             caller="bbc"):
    m = get_metric(metric, caller=caller)
    blocks, offsets, n, _, coord = _sources(predictions, m, caller)
    return bbc_over_blocks(blocks, offsets, _target(y, n, caller), metric=m.name,
                           n_bootstraps=n_bootstraps, confidence_level=confidence_level,
                           random_state=random_state, pos_label=pos_label, class_coord=coord,
                           caller=caller)


def bbc_over_blocks(blocks, offsets, y, *, metric, n_bootstraps, confidence_level, random_state,
                    pos_label, class_coord=None, caller="bbc"):
    """BBC over configuration chunks (ZarrBlocks or Dask delayed arrays) whose
    configurations start at ``offsets``; one task per chunk, a tree merge of winners."""
    import dask
    from dask import delayed

    conf = V.check_confidence_level(confidence_level, caller)
    n_boot = V.check_int(n_bootstraps, "n_bootstraps", caller)
    seed = _seed(as_seed_sequence(random_state, caller=caller))
    y_d = delayed(y, pure=True)
    parts = [delayed(K.chunk_bbc, pure=True, nout=2)(b, y_d, metric, pos_label, int(o), seed,
                                                      n_boot, class_coord)
             for b, o in zip(blocks, offsets)]
    merged, full = dask.compute(_tree([p[0] for p in parts], K.merge_winners),
                                [p[1] for p in parts])
    full = np.concatenate(full)
    _, cfg, oob, redrawn = merged
    sel = select(full)
    return summarise(oob, cfg, selected=sel, naive=full[sel], n_redrawn=redrawn, method="bbc",
                     metric=metric, confidence_level=conf)


def lazy_bbc_f(predictions, y, folds, *, metric, n_bootstraps, confidence_level, random_state,
               pos_label, block_size=None, caller="bbc_f"):
    m = get_metric(metric, caller=caller)
    blocks, _, n, _, coord = _sources(predictions, m, caller)
    if hasattr(folds, "dims"):
        folds = folds.transpose(*[d for d in ("sample", "repeat") if d in folds.dims]).values
    return bbc_f_over_blocks(blocks, _target(y, n, caller), np.asarray(folds), metric=m.name,
                             n_bootstraps=n_bootstraps, confidence_level=confidence_level,
                             random_state=random_state, pos_label=pos_label,
                             block_size=block_size, class_coord=coord, caller=caller)


def bbc_f_over_blocks(blocks, y, folds, *, metric, n_bootstraps, confidence_level, random_state,
                      pos_label, block_size=None, class_coord=None, caller="bbc_f"):
    """BBC-F: the fold × configuration matrix built per chunk on the cluster (it is small:
    R·K rows), then bootstrapped on the client as in memory."""
    import dask
    from dask import delayed

    from ..stats._bbc import _bbc_f_matrix

    y_d = delayed(y, pure=True)
    parts = dask.compute([delayed(K.chunk_fold_matrix, pure=True)(b, y_d, folds, metric, pos_label,
                                                                   class_coord)
                          for b in blocks])[0]
    F = np.concatenate(parts, axis=1)
    return _bbc_f_matrix(F, metric, n_bootstraps, confidence_level, random_state, None,
                         block_size, caller)


def lazy_dropping_test(client, blocks, y, available, *, metric, alpha, n_bootstraps, seed,
                       pos_label=None, class_coord=None, key="bbc-dropping"):
    """The BBCD dropping test over configuration chunks on ``client``; equals
    :func:`bbc_dask.dropping_test` on the concatenated chunks bit for bit."""
    from ..stats._dropping import decide

    seed = _seed(as_seed_sequence(seed, caller="dropping_test"))
    futures = [client.submit(K.chunk_dropping, b, y, available, metric, pos_label, seed,
                             n_bootstraps, class_coord, pure=False, retries=3, key=f"{key}-{i}")
               for i, b in enumerate(blocks)]
    wait_done(futures)
    with deferred_interrupts():  # a Ctrl-C inside a gather can leave the client unusable
        parts = client.gather(futures)
    full = np.concatenate([p[0] for p in parts])
    S = np.concatenate([p[1] for p in parts], axis=1)
    return decide(full, S, alpha, max(p[2] for p in parts))


_COMMON = ("predictions", "y", "metric", "n_bootstraps", "confidence_level", "random_state",
           "pos_label")
#: ``bbc_dask.bbc`` and ``bbc_dask.bbc_f``: arrays in memory or lazy cubes.
bbc = _dispatching(S.bbc, lazy_bbc, _COMMON)
bbc_f = _dispatching(S.bbc_f, lazy_bbc_f, _COMMON + ("folds", "block_size"))
