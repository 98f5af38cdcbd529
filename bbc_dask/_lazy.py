"""BBC and BBC-F on Dask- or Zarr-backed cubes, mapped over configuration chunks.

The cube is (re)chunked along ``config`` only — every sample and repeat of a block of
configurations in one chunk, about ``CHUNK_BYTES`` in float64 — and one task per chunk
draws the bootstraps from spawned seeds (never a B × N matrix from the client), finds the
chunk's winner of every bootstrap and its out-of-bag score; the winners are merged by a
tree reduction. Results equal the in-memory path bit for bit. Tasks run on the active
``distributed.Client`` (or dask's default scheduler).
"""
from __future__ import annotations

import numpy as np

from . import _validation as V
from ._random import as_seed_sequence
from .metrics import get_metric
from .stats import _blocks as K
from .stats._result import summarise

__all__ = ["is_lazy", "lazy_bbc", "lazy_bbc_f", "CHUNK_BYTES"]

CHUNK_BYTES = 16 * 2**20


def is_lazy(x):
    data = getattr(x, "data", x)
    return type(data).__module__.startswith("dask.array") or type(data).__name__ == "Array" and hasattr(data, "dask")


def _as_dask(predictions, metric, caller):
    import dask.array as da

    dims_all = ("sample", "config", "repeat", "class")
    if hasattr(predictions, "dims"):
        dims = tuple(predictions.dims)
        unknown = [d for d in dims if d not in dims_all]
        if unknown or "sample" not in dims or "config" not in dims:
            raise ValueError(
                f"The 'predictions' parameter of {caller} must be a DataArray with dims "
                f"'sample', 'config' and optionally 'repeat', 'class'. Got dims {dims} instead."
            )
        arr = predictions.transpose(*[d for d in dims_all if d in dims]).data
        if "repeat" not in dims:
            arr = arr[:, :, None]
    else:
        arr = predictions
        if arr.ndim == 2:
            arr = arr[:, :, None]
    if not isinstance(arr, da.Array):
        arr = da.asarray(arr)
    if metric.needs_class_axis and arr.ndim != 4:
        raise ValueError(f"The metric {metric.name!r} needs class probabilities (a 'class' axis) in {caller}.")
    per_config = arr.shape[0] * int(np.prod(arr.shape[2:])) * 8
    c = max(1, min(arr.shape[1], CHUNK_BYTES // max(per_config, 1)))
    return arr.rechunk({0: -1, 1: c} | {i: -1 for i in range(2, arr.ndim)})


def _chunks(arr):
    offsets = np.concatenate([[0], np.cumsum(arr.chunks[1])[:-1]]).astype(int)
    return list(arr.to_delayed().ravel()), offsets


def _tree(items, fn):
    from dask import delayed

    while len(items) > 1:
        items = [delayed(fn)(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def lazy_bbc(predictions, y, *, metric, n_bootstraps, confidence_level, random_state, pos_label,
             caller="bbc"):
    import dask
    from dask import delayed

    m = get_metric(metric, caller=caller)
    conf = V.check_confidence_level(confidence_level, caller)
    n_boot = V.check_int(n_bootstraps, "n_bootstraps", caller)
    root = as_seed_sequence(random_state, caller=caller)
    seed = (int(root.entropy), [int(k) for k in root.spawn_key])
    arr = _as_dask(predictions, m, caller)
    y = np.asarray(y) if not isinstance(y, tuple) else y
    if getattr(y, "shape", (arr.shape[0],))[0] != arr.shape[0] and not isinstance(y, tuple):
        raise ValueError(
            f"'predictions' and 'y' of {caller} must have the same number of samples. Got "
            f"{arr.shape[0]} and {y.shape[0]}."
        )
    blocks, offsets = _chunks(arr)
    y_d = delayed(y, pure=True)
    winners = [delayed(K.chunk_bbc, pure=True)(b, y_d, m.name, pos_label, int(o), seed, n_boot)
               for b, o in zip(blocks, offsets)]
    fulls = [delayed(K.chunk_full_scores, pure=True)(b, y_d, m.name, pos_label) for b in blocks]
    merged, full = dask.compute(_tree(winners, K.merge_winners), fulls)
    full = np.concatenate(full)
    best, cfg, oob, redrawn = merged
    sel = int(np.argmax(full))
    return summarise(oob, cfg, selected=sel, naive=full[sel], n_redrawn=redrawn, method="bbc",
                     metric=m.name, confidence_level=conf)


def lazy_bbc_f(predictions, y, folds, *, metric, n_bootstraps, confidence_level, random_state,
               pos_label, block_size=None, caller="bbc_f"):
    import dask
    from dask import delayed

    from .stats._bbc import _bbc_f_matrix

    m = get_metric(metric, caller=caller)
    arr = _as_dask(predictions, m, caller)
    if hasattr(folds, "dims"):
        folds = folds.transpose(*[d for d in ("sample", "repeat") if d in folds.dims]).values
    folds = np.asarray(folds)
    blocks, _ = _chunks(arr)
    parts = dask.compute([delayed(K.chunk_fold_matrix, pure=True)(b, y, folds, m.name, pos_label)
                          for b in blocks])[0]
    F = np.concatenate(parts, axis=1)
    return _bbc_f_matrix(F, m.name, n_bootstraps, confidence_level, random_state, None,
                         block_size, caller)
